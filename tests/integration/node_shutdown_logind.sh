#!/usr/bin/env bash
# Graceful node shutdown (issue 19 item 6; agent/node/shutdown.c) through the
# real systemd-logind (/usr/lib/systemd/systemd-logind), not lib/fake_logind.py:
# logind runs on a private system bus (a dbus-daemon with its own config and
# socket in $tmp, DBUS_SYSTEM_BUS_ADDRESS for logind, the agent and the
# tools), inside a private mount namespace with tmpfs over /run (the host's
# bus socket, utmp and /run/systemd out of reach) and over /etc/systemd (the
# agent's drop-in and logind's configuration: the machine's own files are
# never touched). There is no service manager on that bus: lib/systemd1_standin.py
# answers the three calls logind and the agent make to systemd (Subscribe;
# KillUnit SIGHUP, the agent's reload of logind; poweroff.target's LoadState)
# and refuses StartUnit, so logind's poweroff job fails where a real systemd
# would start the shutdown: nothing can power anything off.
#  A. start: logind's default InhibitDelayMaxUSec (5 s) is below
#     shutdownGracePeriod (12 s): the agent writes 99-cubelet.conf, reloads
#     logind (KillUnit SIGHUP), and logind then reports 12 s; the agent's
#     "shutdown" "delay" inhibitor is in logind's ListInhibitors and
#     `systemd-inhibit --list`;
#  B. PowerOff on the private bus: logind delays it (PreparingForShutdown),
#     emits PrepareForShutdown(true); the node NotReady, the regular pods
#     stopped first, the critical pod after, each Failed / Terminated / the
#     kubelet's message; the agent releases its inhibitor and logind goes on
#     at once (its StartUnit of poweroff.target, refused here) — before
#     InhibitDelayMaxSec, not at its timeout;
#  C. logind's poweroff job failed, so it emits PrepareForShutdown(false): the
#     agent takes a new inhibitor (logind accepts it again), the node Ready;
#  D. a second PowerOff with no pods left: the agent releases its inhibitor at
#     once and logind goes on within 2 s; a new inhibitor after it again;
#  E. logind's own limit: a later drop-in lowers InhibitDelayMaxSec to 3 s;
#     logind goes on at 3 s while the agent still stops a pod that ignores
#     SIGTERM; the agent finishes it (NotReady meanwhile), then Ready and a
#     new inhibitor;
#  F. SIGTERM: the agent's inhibitor goes with it (logind lists none).
# Exit 77 when not root or logind, dbus-daemon or a tool is missing.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/shutdown.sh"
# where distributions install it (LOGIND=PATH to pick another)
if [ -z "${LOGIND:-}" ]; then
        for LOGIND in /usr/lib/systemd/systemd-logind /lib/systemd/systemd-logind; do
                [ ! -x "$LOGIND" ] || break
        done
fi
need_root
[ -x "$LOGIND" ] || skip "no systemd-logind on this machine ($LOGIND): the real logind is not exercised (node_shutdown.sh drives the fake)"
need_tools jq umoci ip busybox kubectl openssl dbus-daemon dbus-monitor busctl systemd-inhibit \
        /usr/bin/python3 /usr/bin/etcd
need_cni bridge host-local
/usr/bin/python3 -c 'import dbus, gi.repository.GLib' 2>/dev/null ||
        skip "python3-dbus and python3-gi are needed for the systemd1 stand-in (scripts/deps.sh)"
# Everything below runs in a private mount namespace: its tmpfs mounts end
# with it and never reach the host.
shutdown_private_ns "$@"
NODE=shutdown-logind-$$
harness_init shutdown-logind
STANDIN="$(dirname "${BASH_SOURCE[0]}")/lib/systemd1_standin.py"
journal=$tmp/systemd1.journal
llog=$tmp/logind.log

shutdown_tmpfs /run 16m cubelet-test-run
mkdir -p /run/systemd /run/user /run/dbus /run/lock
[ ! -e /run/dbus/system_bus_socket ] || die "the host's system bus is still visible"
cp /etc/systemd/logind.conf "$tmp/logind.conf.host" 2>/dev/null || : >"$tmp/logind.conf.host"
shutdown_etc_systemd
mkdir /etc/systemd/logind.conf.d
# logind's defaults (InhibitDelayMaxSec 5 s), without VTs and without acting
# on any key, lid or idleness of this machine.
cat >/etc/systemd/logind.conf <<EOC
[Login]
NAutoVTs=0
ReserveVT=0
HandlePowerKey=ignore
HandleRebootKey=ignore
HandleSuspendKey=ignore
HandleHibernateKey=ignore
HandleLidSwitch=ignore
HandleLidSwitchExternalPower=ignore
HandleLidSwitchDocked=ignore
IdleAction=ignore
EOC
DROPIN=/etc/systemd/logind.conf.d/99-cubelet.conf

# ---- the private bus, logind, the systemd1 stand-in ------------------------------
shutdown_bus org.freedesktop.login1 org.freedesktop.systemd1
export DBUS_SYSTEM_BUS_ADDRESS=$BUS
dbus-monitor --address "$BUS" "type='signal',interface='org.freedesktop.login1.Manager',member='PrepareForShutdown'" \
        >"$tmp/monitor.log" 2>&1 &
track $!
SYSTEMD_LOG_LEVEL=debug SYSTEMD_LOG_TARGET=console SYSTEMD_LOG_TIME=1 "$LOGIND" >>"$llog" 2>&1 &
logind_pid=$!
track "$logind_pid"
/usr/bin/python3 "$STANDIN" "$BUS" "$journal" --logind-pid "$logind_pid" >>"$tmp/standin.log" 2>&1 &
track $!
lbus() { busctl --address="$BUS" "$@"; }
mgr() { lbus "$1" org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager "${@:2}"; }
poll 10 eval 'mgr get-property InhibitDelayMaxUSec >/dev/null 2>&1' ||
        die "systemd-logind did not come up on the private bus: $(grep -iE 'fail|error' "$llog" | tail -5)"
poll 10 grep -q ' ready$' "$journal" || die "the systemd1 stand-in did not start: $(cat "$tmp/standin.log")"
[ "$(mgr get-property InhibitDelayMaxUSec)" = "t 5000000" ] || fail "logind's default: $(mgr get-property InhibitDelayMaxUSec)"
inhibitors() { mgr call ListInhibitors; }
# prepares: the PrepareForShutdown arguments seen on the bus, in order
prepares() { awk '/member=PrepareForShutdown/ {getline; print $2}' "$tmp/monitor.log" | paste -sd' '; }

# ---- the cluster and the agent ----------------------------------------------------
import_busybox
write_cni_conf
start_standin
shutdown_config
start_agent -v 1 --config "$tmp/config.yaml" --kubeconfig "$data/node.kubeconfig" --healthz-port 0 \
        --node-ip 10.0.0.5 --node-status-update-frequency 1s --node-lease-duration-seconds 4
node_ready
wait_log 'graceful node shutdown: holding a logind delay inhibitor' 20

# ---- A. the override and the inhibitor, as logind sees them -------------------------
grep -qx 'InhibitDelayMaxSec=12' "$DROPIN" 2>/dev/null || fail "$DROPIN: $(cat "$DROPIN" 2>&1)"
grep -Eq ' killunit systemd-logind.service all 1$' "$journal" || fail "logind was not told to reload: $(cat "$journal")"
grep -q 'Config file reloaded' "$llog" || fail "logind did not reload its configuration: $(tail -5 "$llog")"
[ "$(mgr get-property InhibitDelayMaxUSec)" = "t 12000000" ] &&
        pass "A: the drop-in honoured: logind's InhibitDelayMaxUSec 5 s -> 12 s after the agent's reload" ||
        fail "InhibitDelayMaxUSec after the reload: $(mgr get-property InhibitDelayMaxUSec)"
want_inh="\"shutdown\" \"cubelet\" \"cubelet needs time to handle node shutdown\" \"delay\" 0 $agent_pid"
[ "$(inhibitors)" = "a(ssssuu) 1 $want_inh" ] || fail "ListInhibitors: $(inhibitors)"
listed=$(systemd-inhibit --list --no-pager 2>&1)
grep -Eq "^cubelet +0 +root +$agent_pid +cubelet +shutdown .* delay$" <<<"$listed" &&
        pass "A: logind lists the agent's shutdown delay inhibitor (ListInhibitors, systemd-inhibit --list)" ||
        fail "systemd-inhibit --list: $listed"

# ---- pods: a regular one, one that ignores SIGTERM, a critical one ---------------
TERMQUIT='trap "sleep 1; exit 0" TERM; while :; do sleep 0.2; done'
IGNORE='trap "" TERM; while :; do sleep 0.2; done'
mkp reg 30 "$TERMQUIT"
mkp stubborn 30 "$IGNORE"
mkp crit 30 "$TERMQUIT" system-node-critical
for p in reg stubborn crit; do wait_running "$p" 60; done

# ---- B. PowerOff through logind ----------------------------------------------------
t0=$(date +%s)
out=$(mgr call PowerOff b false 2>&1) || fail "PowerOff: $out"
[ "$(mgr get-property PreparingForShutdown)" = "b true" ] ||
        fail "logind is not delaying the shutdown: $(mgr get-property PreparingForShutdown)"
poll 5 eval '[ "$(prepares)" = true ]' && pass "B: PowerOff: logind emitted PrepareForShutdown(true) and waits for the delay inhibitor" ||
        fail "PrepareForShutdown on the bus: '$(prepares)'"
# logind takes no new delay inhibitor while it delays (why the agent takes its
# next one only on PrepareForShutdown(false))
out=$(systemd-inhibit --what=shutdown --mode=delay --who=test --why=test true 2>&1) &&
        fail "logind took a delay inhibitor while delaying a shutdown"
grep -q 'already running' <<<"$out" || fail "a delay inhibitor during the delay: $out"
poll 5 eval '[ "$(k get node "$NODE" -o jsonpath="{.status.conditions[?(@.type==\"Ready\")].message}")" = "node is shutting down" ]' &&
        pass "B: node NotReady: node is shutting down" ||
        fail "Ready: $(k get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")]}')"
for p in reg stubborn crit; do poll 30 phase_is "$p" Failed || fail "$p: $(pj $p '{.status.phase}')"; done
MSG="Pod was terminated in response to imminent node shutdown."
for p in reg stubborn crit; do
        got=$(pj $p '{.status.reason}|{.status.message}|{.status.conditions[?(@.type=="DisruptionTarget")].reason}')
        [ "$got" = "Terminated|$MSG|TerminationByKubelet" ] || fail "$p: $got"
done
pass "B: every pod Failed, Terminated, the kubelet's message"
reg_end=$(fin reg); stub_end=$(fin stubborn); crit_kill=$(killed crit); crit_end=$(fin crit)
echo "t0 $t0; stopped: reg +$((reg_end - t0)) stubborn +$((stub_end - t0)); crit killed +$((crit_kill - t0)) ended +$((crit_end - t0))"
[ $((stub_end - t0)) -ge 7 ] && [ $((stub_end - t0)) -le 11 ] || fail "stubborn ended $((stub_end - t0)) s after PowerOff (grace 12-4 = 8 s)"
# The regular group is done when its pods ended or its 8 s are up: the
# kubelet moves on at the group timeout, the instant the stubborn pod's
# own 8 s end in its SIGKILL, so at +8 s either may come first (and the
# stamps are whole seconds). Early would be before +7 s or before reg ended.
[ "$crit_kill" -ge "$reg_end" ] && { [ "$crit_kill" -ge "$stub_end" ] || [ $((crit_kill - t0)) -ge 7 ]; } &&
        pass "B: the critical pod was stopped after the regular ones (+$((crit_kill - t0)) s, regular done +$((stub_end - t0)) s)" ||
        fail "the critical pod was stopped at +$((crit_kill - t0)) s, before the regular ones ended (+$((stub_end - t0)) s)"
# logind goes on when the agent's inhibitor is gone, not at its 12 s timeout
poll 15 eval '[ "$(jcount startunit)" -ge 1 ]' || fail "logind never went on with the poweroff: $(tail -20 "$llog")"
su=$(jt startunit); su=${su%.*}
grep -Eq "Inhibitor cubelet \(cubelet needs time to handle node shutdown\) pid=$agent_pid uid=0 mode=delay stopped" "$llog" ||
        fail "logind did not see the inhibitor released: $(grep -i inhibitor "$llog")"
! grep -q 'inhibitor timeout is reached' "$llog" || fail "logind waited for its timeout: $(grep -i 'timeout' "$llog")"
grep -q ' startunit poweroff.target replace-irreversibly refused$' "$journal" || fail "stand-in: $(cat "$journal")"
[ "$su" -ge "$crit_end" ] && [ $((su - t0)) -lt 12 ] &&
        pass "B: the inhibitor released after the last pod: logind went on at +$((su - t0)) s (InhibitDelayMaxSec 12 s), its poweroff.target job refused by the stand-in" ||
        fail "logind went on at +$((su - t0)) s; the critical pod ended at +$((crit_end - t0)) s"
grep -E 'powering down|inhibitor-delayed' "$llog" | sed 's/^/    logind: /'

# ---- C. the failed poweroff: logind's PrepareForShutdown(false) ------------------
poll 5 eval '[ "$(prepares)" = "true false" ]' || fail "PrepareForShutdown after the failed job: '$(prepares)'"
[ "$(mgr get-property PreparingForShutdown)" = "b false" ] || fail "PreparingForShutdown: $(mgr get-property PreparingForShutdown)"
k wait --for=condition=Ready "node/$NODE" --timeout=10s >/dev/null || fail "the node is not Ready after PrepareForShutdown(false)"
poll 10 eval '[ "$(inhibitors)" = "a(ssssuu) 1 $want_inh" ]' &&
        pass "C: PrepareForShutdown(false) after logind's failed job: a new inhibitor taken, the node Ready" ||
        fail "after PrepareForShutdown(false): $(inhibitors)"
[ -n "$(events_of Node "$NODE" NodeShutdown | grep -F 'Shutdown manager detected shutdown cancellation')" ] ||
        fail "no cancellation event: $(events_of Node "$NODE" NodeShutdown)"

# ---- D. again, with no pod left: the agent lets logind go on at once --------------
t1=$(date +%s.%N)
out=$(mgr call PowerOff b false 2>&1) || fail "the second PowerOff: $out"
poll 10 eval '[ "$(jcount startunit)" -ge 2 ]' || fail "logind did not go on with the second poweroff: $(tail -20 "$llog")"
took=$(awk -v a="$t1" -v b="$(jt startunit 2)" 'BEGIN { printf "%.1f", b - a }')
fle "$took" 2 && pass "D: a second PowerOff with no pods: logind went on $took s after it" ||
        fail "the second poweroff went on $took s after PowerOff"
poll 5 eval '[ "$(prepares)" = "true false true false" ]' || fail "PrepareForShutdown: '$(prepares)'"
poll 10 eval '[ "$(inhibitors)" = "a(ssssuu) 1 $want_inh" ]' || fail "no inhibitor after the second cycle: $(inhibitors)"
k wait --for=condition=Ready "node/$NODE" --timeout=10s >/dev/null || fail "the node is not Ready after the second cycle"

# ---- E. logind's own limit: a later drop-in lowers InhibitDelayMaxSec to 3 s -----
# (the agent checks it at start only, as the kubelet): logind stops waiting at
# 3 s, its job fails, PrepareForShutdown(false) comes while the agent still
# stops its pods; the agent finishes them (the node stays NotReady), then is
# Ready with a new inhibitor, as the kubelet handles the signal only after
# its shutdown processing.
mkp slow 30 "$IGNORE"
wait_running slow 60
printf '[Login]\nInhibitDelayMaxSec=3\n' >/etc/systemd/logind.conf.d/99-zz-test.conf
kill -HUP "$logind_pid"
poll 5 eval '[ "$(mgr get-property InhibitDelayMaxUSec)" = "t 3000000" ]' || fail "logind's limit: $(mgr get-property InhibitDelayMaxUSec)"
t2=$(date +%s.%N)
out=$(mgr call PowerOff b false 2>&1) || fail "the third PowerOff: $out"
poll 10 eval '[ "$(jcount startunit)" -ge 3 ]' || fail "logind did not go on at its limit: $(tail -20 "$llog")"
took=$(awk -v a="$t2" -v b="$(jt startunit 3)" 'BEGIN { printf "%.1f", b - a }')
grep -q 'inhibitor timeout is reached' "$llog" && fle 2.5 "$took" && fle "$took" 5 ||
        fail "logind went on $took s after PowerOff: $(grep -iE 'timeout|delay lock' "$llog")"
poll 5 eval '[ "$(prepares)" = "true false true false true false" ]' || fail "PrepareForShutdown: '$(prepares)'"
sleep 1
[ "$(k get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}')" = "node is shutting down" ] &&
        phase_is slow Running || fail "while the agent still stops slow: node $(k get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}'), slow $(pj slow '{.status.phase}')"
poll 15 phase_is slow Failed || fail "slow: $(pj slow '{.status.phase}')"
[ "$(pj slow '{.status.reason}|{.status.message}')" = "Terminated|$MSG" ] || fail "slow: $(pj slow '{.status.reason}|{.status.message}')"
slow_end=$(awk -v a="$t2" -v b="$(fin slow)" 'BEGIN { printf "%.0f", b - a }')
k wait --for=condition=Ready "node/$NODE" --timeout=10s >/dev/null || fail "the node is not Ready after the stopping"
poll 10 eval '[ "$(inhibitors)" = "a(ssssuu) 1 $want_inh" ]' &&
        pass "E: logind's limit (3 s) reached: it went on at $took s; the agent stopped slow anyway (+$slow_end s), then Ready with a new inhibitor" ||
        fail "after the limit: $(inhibitors)"

# ---- F. SIGTERM: the inhibitor goes with the agent --------------------------------
stop_agent
poll 5 eval '[ "$(inhibitors)" = "a(ssssuu) 0" ]' && pass "F: SIGTERM: logind lists no inhibitor once the agent is gone" ||
        fail "after SIGTERM: $(inhibitors)"
[ "$(grep -c ' startunit ' "$journal")" = "$(grep -c ' startunit poweroff.target replace-irreversibly refused$' "$journal")" ] ||
        fail "logind asked systemd for something else: $(cat "$journal")"
finish
