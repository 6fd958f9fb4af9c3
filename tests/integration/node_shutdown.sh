#!/usr/bin/env bash
# Graceful node shutdown (issue 19 item 6; agent/node/shutdown.c) against a
# stand-in for systemd-logind: a private dbus-daemon with lib/fake_logind.py
# owning org.freedesktop.login1 and org.freedesktop.systemd1, which the agent
# reaches through DBUS_SYSTEM_BUS_ADDRESS (libsystemd honours it): the signal
# at will, in both directions, and a bus without logind. The real
# systemd-logind (its PowerOff, its delay, its InhibitDelayMaxSec, its FIFO
# inhibitor) is node_shutdown_logind.sh's. The test runs in a private mount
# namespace with a tmpfs over /etc/systemd: the agent's drop-in never reaches
# the machine's own logind configuration.
#  A. start: logind's InhibitDelayMaxUSec (5 s, logind's default) is below
#     shutdownGracePeriod (12 s): the drop-in 99-cubelet.conf is written, logind
#     told to reload (KillUnit SIGHUP), the value read again, and a "shutdown"
#     "delay" inhibitor taken;
#  B. SIGTERM: the agent exits 0, the pods keep running (the kubelet does not
#     stop pods on SIGTERM), its inhibitor goes with it; the next agent takes
#     a new one;
#  C. PrepareForShutdown(true): the node NotReady ("node is shutting down"), a
#     NodeShutdown event, new pods rejected (NodeShutdown), the regular pods
#     stopped first (grace min(own, 12-4 s)), the critical pod (priorityClass
#     system-node-critical) after them, each Failed / Terminated / the
#     kubelet's message with DisruptionTarget; then the inhibitor released;
#  D. PrepareForShutdown(false): the node Ready again, a new inhibitor, pods
#     admitted again;
#  D2. PrepareForShutdown true, false, true while a pod still stops: the
#     node ends shutting down, no new inhibitor (the kubelet handles the two
#     signals in order after its processing); false again: Ready;
#  E. no logind: no bus at all, or a bus without login1: one clear error line,
#     the agent runs on, the node Ready.
# Exit 77 when not root or a tool is missing.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/shutdown.sh"
need_root
need_tools jq umoci ip busybox kubectl openssl dbus-daemon dbus-send /usr/bin/python3 /usr/bin/etcd
need_cni bridge host-local
/usr/bin/python3 -c 'import dbus, gi.repository.GLib' 2>/dev/null ||
        skip "python3-dbus and python3-gi are needed for the fake logind (scripts/deps.sh)"
# The rest in a private mount namespace: its tmpfs ends with it.
shutdown_private_ns "$@"
NODE=shutdown-node-$$
harness_init shutdown
FAKE="$(dirname "${BASH_SOURCE[0]}")/lib/fake_logind.py"
DROPIN_DIR=/etc/systemd/logind.conf.d
DROPIN=$DROPIN_DIR/99-cubelet.conf
journal=$tmp/logind.journal

# The agent writes logind's drop-in where the kubelet writes its own: here
# into a tmpfs over /etc/systemd that only this namespace sees.
shutdown_etc_systemd
[ ! -e "$DROPIN" ] || die "$DROPIN is the host's"

# ---- the private bus and the fake logind ------------------------------------------
shutdown_bus '*'
start_fake() {
        /usr/bin/python3 "$FAKE" "$BUS" "$journal" --conf-dir "$DROPIN_DIR" "$@" >>"$tmp/fake.log" 2>&1 &
        fake_pid=$!
        track "$fake_pid"
        poll 10 grep -q ' ready$' "$journal" || die "the fake logind did not start: $(cat "$tmp/fake.log")"
}
: >"$journal"
start_fake --delay-sec 5
emit() { dbus-send --bus="$BUS" --print-reply --dest=org.freedesktop.login1 /org/freedesktop/login1 \
        org.cubelet.FakeLogind.Emit "boolean:$1" >/dev/null || fail "Emit($1) failed"; }

# ---- the cluster and the agent ----------------------------------------------------
import_busybox
write_cni_conf
start_standin
shutdown_config
run_agent() { # BUS extra flags...
        local bus=$1
        shift
        DBUS_SYSTEM_BUS_ADDRESS=$bus start_agent -v 1 --config "$tmp/config.yaml" \
                --kubeconfig "$data/node.kubeconfig" --healthz-port 0 --node-ip 10.0.0.5 \
                --node-status-update-frequency 1s --node-lease-duration-seconds 4 "$@"
}

# the kubelet's validation of the two settings
printf 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nshutdownGracePeriod: 10s\nshutdownGracePeriodCriticalPods: 20s\n' >"$tmp/bad.yaml"
"$CUBELET" --root-dir "$root" --config "$tmp/bad.yaml" --kubeconfig /dev/null 2>"$tmp/bad.err" &&
        fail "shutdownGracePeriodCriticalPods > shutdownGracePeriod was accepted"
grep -q 'invalid configuration: shutdownGracePeriodCriticalPods 20s must be <= shutdownGracePeriod 10s' "$tmp/bad.err" ||
        fail "critical > grace: $(cat "$tmp/bad.err")"

# ---- A. start: the override and the inhibitor ---------------------------------------
run_agent "$BUS"
node_ready
poll 10 eval '[ "$(jcount inhibit)" -ge 1 ]' || fail "no inhibitor taken: $(cat "$journal")"
grep -Eq ' killunit systemd-logind.service all 1$' "$journal" || fail "logind was not told to reload: $(cat "$journal")"
grep -q ' reloaded InhibitDelayMaxUSec=12000000$' "$journal" || fail "logind did not read 12 s: $(cat "$journal")"
grep -qx 'InhibitDelayMaxSec=12' "$DROPIN" 2>/dev/null || fail "$DROPIN: $(cat "$DROPIN" 2>&1)"
grep -Eq ' inhibit 1 shutdown delay cubelet ' "$journal" && pass "A: drop-in written, logind reloaded (5 s -> 12 s), delay inhibitor taken" ||
        fail "inhibitor: $(cat "$journal")"

# ---- pods: two regular, one regular that ignores SIGTERM, one with a short
# grace period, one critical --------------------------------------------------------
TERMQUIT='trap "sleep 2; exit 0" TERM; while :; do sleep 0.2; done'
IGNORE='trap "" TERM; while :; do sleep 0.2; done'
mkp reg 30 "$TERMQUIT"
mkp stubborn 30 "$IGNORE"
mkp short 3 "$IGNORE"
mkp crit 30 "$TERMQUIT" system-node-critical
[ "$(pj crit '{.spec.priority}')" = 2000001000 ] || fail "crit: priority $(pj crit '{.spec.priority}')"
for p in reg stubborn short crit; do wait_running "$p" 60; done
started_crit=$(pj crit '{.status.containerStatuses[0].state.running.startedAt}')

# ---- B. SIGTERM leaves the pods running -----------------------------------------------
stop_agent
poll 5 eval '[ "$(jcount released)" -ge 1 ]' || fail "the inhibitor outlived the agent: $(cat "$journal")"
run_agent "$BUS"
node_ready
poll 10 eval '[ "$(jcount inhibit)" -ge 2 ]' || fail "the restarted agent took no inhibitor"
for p in reg stubborn short crit; do
        [ "$(pj $p '{.status.phase}')" = Running ] && [ "$(pj $p '{.status.containerStatuses[0].restartCount}')" = 0 ] ||
                fail "$p after SIGTERM: $(pj $p '{.status.phase} {.status.containerStatuses[0]}')"
done
[ "$(pj crit '{.status.containerStatuses[0].state.running.startedAt}')" = "$started_crit" ] &&
        pass "B: SIGTERM: exit 0, the pods kept running (same containers), the inhibitor released and taken again" ||
        fail "crit's container was restarted across SIGTERM"

# ---- C. the shutdown ---------------------------------------------------------------
t0=$(date +%s)
emit true
poll 5 eval '[ "$(k get node "$NODE" -o jsonpath="{.status.conditions[?(@.type==\"Ready\")].message}")" = "node is shutting down" ]' &&
        pass "C: node NotReady: node is shutting down" ||
        fail "Ready: $(k get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")]}')"
[ "$(k get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}')" = KubeletNotReady ] ||
        fail "Ready reason: $(k get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}')"
mkp late 30 "$TERMQUIT"
poll 10 phase_is late Failed || fail "late: $(pj late '{.status.phase}')"
[ "$(pj late '{.status.reason}|{.status.message}')" = "NodeShutdown|Pod was rejected: Pod was rejected as the node is shutting down." ] &&
        pass "C: a new pod is rejected: NodeShutdown" || fail "late: $(pj late '{.status.reason}|{.status.message}')"
for p in reg stubborn short crit; do poll 30 phase_is "$p" Failed || fail "$p: $(pj $p '{.status.phase}')"; done
MSG="Pod was terminated in response to imminent node shutdown."
for p in reg stubborn short crit; do
        got=$(pj $p '{.status.reason}|{.status.message}|{.status.conditions[?(@.type=="DisruptionTarget")].status}|{.status.conditions[?(@.type=="DisruptionTarget")].reason}|{.status.conditions[?(@.type=="DisruptionTarget")].message}')
        [ "$got" = "Terminated|$MSG|True|TerminationByKubelet|$MSG" ] || fail "$p: $got"
done
pass "C: every pod Failed, Terminated, the kubelet's message, DisruptionTarget TerminationByKubelet"
reg_end=$(fin reg); stub_end=$(fin stubborn); short_end=$(fin short); crit_kill=$(killed crit); crit_end=$(fin crit)
echo "t0 $t0; stopped: reg $reg_end stubborn $stub_end short $short_end; crit killed $crit_kill ended $crit_end"
# regular pods: grace min(30, 12-4) = 8 s; short its own 3 s
[ $((stub_end - t0)) -ge 7 ] && [ $((stub_end - t0)) -le 11 ] || fail "stubborn ended $((stub_end - t0)) s after the signal (grace 8 s)"
[ $((short_end - t0)) -ge 2 ] && [ $((short_end - t0)) -le 5 ] || fail "short ended $((short_end - t0)) s after the signal (grace 3 s)"
# critical after every regular pod
# The regular group is done when its pods ended or its 8 s are up: the
# kubelet moves on at the group timeout, the instant the stubborn pod's
# own 8 s end in its SIGKILL, so at +8 s either may come first (and the
# stamps are whole seconds). Early would be before +7 s or before reg ended.
[ "$crit_kill" -ge "$reg_end" ] && { [ "$crit_kill" -ge "$stub_end" ] || [ $((crit_kill - t0)) -ge 7 ]; } &&
        pass "C: the critical pod was stopped after the regular ones ($((crit_kill - t0)) s vs $((stub_end - t0)) s)" ||
        fail "the critical pod was stopped at +$((crit_kill - t0)) s, before the regular ones ended (+$((stub_end - t0)) s)"
poll 10 eval '[ "$(jcount released)" -ge 2 ]' || fail "the inhibitor was not released: $(cat "$journal")"
rel=$(jt released); rel=${rel%.*}
[ "$rel" -ge "$crit_end" ] && [ $((rel - t0)) -le 14 ] &&
        pass "C: inhibitor released after the last pod ($((rel - t0)) s after the signal)" ||
        fail "released at +$((rel - t0)) s, critical pod ended at +$((crit_end - t0)) s"
[ -n "$(events_of Node "$NODE" NodeShutdown | grep -F 'Normal|Shutdown manager detected shutdown event')" ] ||
        fail "no NodeShutdown event: $(events_of Node "$NODE" NodeShutdown)"

# ---- D. cancelled ------------------------------------------------------------------
emit false
k wait --for=condition=Ready "node/$NODE" --timeout=10s >/dev/null || fail "the node is not Ready after the cancellation"
poll 10 eval '[ "$(jcount inhibit)" -ge 3 ]' || fail "no new inhibitor after the cancellation"
mkp after 2 "$TERMQUIT"
wait_running after 60 && pass "D: cancelled: Ready again, a new inhibitor, pods admitted"
[ -n "$(events_of Node "$NODE" NodeShutdown | grep -F 'Shutdown manager detected shutdown cancellation')" ] ||
        fail "no cancellation event"

# ---- D2. cancelled, then announced again, while a pod still stops ---------------------
# The kubelet handles both signals after its shutdown processing, in order:
# the node ends shutting down, and the inhibitor released stays released.
ready_msg() { k get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}'; }
mkp again 6 "$IGNORE"
wait_running again 60
n_inh=$(jcount inhibit)
n_rel=$(jcount released)
emit true
poll 5 eval '[ "$(ready_msg)" = "node is shutting down" ]' || fail "D2: Ready: $(ready_msg)"
emit false
emit true
poll 15 phase_is again Failed || fail "again: $(pj again '{.status.phase}')"
poll 5 eval '[ "$(jcount released)" -gt "$n_rel" ]' || fail "D2: the inhibitor was not released: $(tail -5 "$journal")"
sleep 2
msg=$(ready_msg)
[ "$msg" = "node is shutting down" ] && [ "$(jcount inhibit)" = "$n_inh" ] &&
        pass "D2: a cancellation overtaken by a new shutdown while a pod stops: the node stays shutting down, no new inhibitor" ||
        fail "D2: after true, false, true: Ready message '$msg', $(($(jcount inhibit) - n_inh)) new inhibitor(s)"
emit false
k wait --for=condition=Ready "node/$NODE" --timeout=10s >/dev/null || fail "D2: not Ready after the last cancellation"
poll 10 eval '[ "$(jcount inhibit)" -gt "$n_inh" ]' || fail "D2: no inhibitor after the last cancellation"
mkp last 2 "$TERMQUIT"
wait_running last 60
stop_agent

# ---- E. without logind -------------------------------------------------------------
: >"$tmp/agent.log"
run_agent "unix:path=$tmp/no-such-bus"
node_ready
wait_log 'graceful node shutdown is off: cannot connect to the system bus \(unix:path=.*no-such-bus\)'
stop_agent
[ "$(grep -c 'graceful node shutdown' "$tmp/agent.log")" = 1 ] || fail "no bus: $(grep 'graceful node shutdown' "$tmp/agent.log")"
kill "$fake_pid"; wait "$fake_pid" 2>/dev/null
: >"$tmp/agent.log"
run_agent "$BUS"
node_ready
wait_log "graceful node shutdown is off: cannot read logind's InhibitDelayMaxUSec .*ServiceUnknown"
[ "$(pj last '{.status.phase}')" = Running ] || fail "last: not Running without logind: $(pj last '{.status.phase}')"
[ "$(grep -c 'graceful node shutdown' "$tmp/agent.log")" = 1 ] &&
        pass "E: no bus, or no logind on it: one error line, the agent runs on, the node Ready" ||
        fail "no logind: $(grep 'graceful node shutdown' "$tmp/agent.log")"
stop_agent

finish
