# What every fault scenario (tests/faults/*.sh) sources, after
# tests/integration/lib/harness.sh: the seed, the pods of a lifecycle, the
# wait for convergence and the invariants (check_invariants), checked after
# every fault.
#
#   . "$(dirname "${BASH_SOURCE[0]}")/lib/faults.sh"
#   fault_setup NAME            skips, harness_init, image, network, stand-in
#   fault_agent                 the agent (again after a kill), node Ready
#   lc_pod NAME KIND            a pod of a kind (svc job onfail multi), its expectation
#   converge SECONDS            every pod in its final state, deleted ones gone
#   check_invariants WHAT       the invariants; a violation is a failed check
#   fault_report                the summary line: runs, faults, violations, seed
#
# FAULT_SEED=<n> reproduces a run's choices (the pods, the kill points, the
# fault schedule): it is printed first. FAULT_ITERATIONS sets the number of
# rounds (the scenario's default is the bounded CI run).
H_FAULTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$H_FAULTS/../../integration/lib/harness.sh"

FAULT_SEED=${FAULT_SEED:-$(($(date +%s%N) / 1000 % 1000000))}
faults=0     # faults injected
violations=0 # invariant violations (each also a failed check)
rounds=0
converge_max=0
# rnd N: 0..N-1 from the seeded generator. Not bash's RANDOM: bash 5.1+
# reseeds it in every subshell, and the choices are made in $(rnd N), so a
# seed repeated nothing. The state lives in a file (fault_setup: $tmp/rng)
# that each call, subshell or not, reads and advances (an LCG, glibc's
# constants, the high bits used).
FAULT_RNG=
rnd() {
        local s
        read -r s <"$FAULT_RNG" || s=$FAULT_SEED
        s=$(((s * 1103515245 + 12345) % 2147483648))
        echo "$s" >"$FAULT_RNG"
        echo $(((s >> 12) % $1))
}
# rnd_delay MAX-TENTHS: a delay in seconds, 0.0 .. MAX/10.
rnd_delay() { local t; t=$(rnd $(($1 + 1))); printf '%d.%d' $((t / 10)) $((t % 10)); }
violation() {
        violations=$((violations + 1))
        fail "invariant ($inv_what, seed $FAULT_SEED): $*"
        # the agent's lines about the pod named first ("NAME: ..."), once
        # per pod, so a violation seen once (under load, in CI) explains
        # itself: the harness prints only the log's tail
        local pod=${1%%:*}
        case $pod in *[!a-z0-9-]* | "") return 0 ;; esac
        [ -f "$tmp/agent.log" ] || return 0
        case " ${H_VIOLATION_DUMPED-} " in *" $pod "*) return 0 ;; esac
        H_VIOLATION_DUMPED="${H_VIOLATION_DUMPED-} $pod"
        echo "--- agent log for pod $pod (its last 60 lines, timeline marks aside)"
        grep -F "pod default/$pod" "$tmp/agent.log" | grep -v 'timeline ' | tail -60 | cut -c1-400
}

fault_setup() {
        need_root
        need_tools jq umoci ip busybox kubectl openssl python3 curl /usr/bin/etcd
        need_cni bridge host-local
        [ -d /sys/fs/cgroup/memory ] || skip "needs the cgroup v1 memory hierarchy"
        need_bridge
        need_cubelet
        NODE=flt-$$
        harness_init "flt-$1"
        FAULT_RNG=$tmp/rng
        echo "$FAULT_SEED" >"$FAULT_RNG"
        echo "FAULT_SEED=$FAULT_SEED (FAULT_SEED=$FAULT_SEED bash $0 repeats this run's choices)"
        K_TIMEOUT=15s
        mkdir -p "$tmp/expect"
        add_node_ip
        import_busybox
        write_cni_conf
        start_standin
        hport=$(free_port)
        echo "tok-$$-secret,flt-tester,1" >"$tmp/tokens.csv"
        agent_starts=0
}

# fault_agent [FLAGS]: the agent (first start or after a kill), the node Ready.
FAULT_AGENT_FLAGS=()
fault_agent() {
        agent_starts=$((agent_starts + 1))
        start_agent -v 2 --kubeconfig "${FAULT_KUBECONFIG:-$data/node.kubeconfig}" --healthz-port "$hport" \
                --node-ip "$nodeip" --address "$nodeip" --client-ca-file "$data/ca.crt" --cert-dir "$tmp/pki" \
                --authentication-token-file "$tmp/tokens.csv" --crash-loop-backoff-base 1 \
                --crash-loop-backoff-max 2 --node-status-update-frequency 1s --node-lease-duration-seconds 4 \
                "${FAULT_AGENT_FLAGS[@]}" "$@"
}
# kill_agent: SIGKILL, reaped.
kill_agent() {
        kill -KILL "$agent_pid" 2>/dev/null
        wait "$agent_pid" 2>/dev/null
        agent_pid=""
        faults=$((faults + 1))
}

# ---- the pods of a lifecycle -----------------------------------------------------
# Every container appends a line to /d/starts-<name> (a hostPath dir of the
# pod, $tmp/hp/<pod>, kept after the pod ends) when it starts, so the host
# counts the times each one really started:
# restartCount must be that count - 1 (none lost, none doubled).
# lc_pod NAME KIND [D]: KIND is
#   svc     Always; postStart exec hook, exec readiness + liveness probes,
#           preStop hook; runs until deleted; exec'd into after convergence
#   job     Never; exits with a random code after D s (Succeeded/Failed)
#   onfail  OnFailure; exits 7 once, then 0: restartCount 1, lastState 7
#   onfail2 OnFailure; exits 7 twice, then 0: restartCount 2, lastState 7
#           (the second restart waits out a back-off: the first is at once)
#   multi   Always; an init container and two containers
#   shared  Always; two containers in a shared PID namespace (a pause process)
# The expectation goes to $tmp/expect/NAME ("KIND CODE"). LC_IMAGE: the
# image (default busybox:1.36, imported).
lc_pod() {
        local name=$1 kind=$2 d=${3:-$((1 + $(rnd 2)))} code=0 policy=Always body
        local start='echo s >> /d/starts-$CN; ' img=${LC_IMAGE:-busybox:1.36}
        case $kind in
        svc)
                body="  containers:
  - name: main
    image: $img
    env: [{name: CN, value: main}]
    command: [sh, -c, '$start trap \"exit 0\" TERM; while :; do sleep 1; done']
    lifecycle:
      postStart: {exec: {command: [sh, -c, 'echo hook > /d/hook']}}
      preStop: {exec: {command: [sh, -c, 'echo pre >> /d/prestop']}}
    readinessProbe: {exec: {command: [test, -e, /d/hook]}, periodSeconds: 1}
    livenessProbe: {exec: {command: ['true']}, periodSeconds: 2}
    volumeMounts: [{name: d, mountPath: /d}]"
                ;;
        job)
                policy=Never
                code=$(rnd 4)
                body="  containers:
  - name: main
    image: $img
    env: [{name: CN, value: main}]
    command: [sh, -c, '$start sleep $d; exit $code']
    volumeMounts: [{name: d, mountPath: /d}]"
                ;;
        onfail | onfail2)
                # exits 7 on its first (onfail) or first two (onfail2) runs:
                # each run leaves a mark in the pod's emptyDir
                policy=OnFailure
                code=7
                local fails=1
                [ "$kind" = onfail ] || fails=2
                body="  containers:
  - name: main
    image: $img
    env: [{name: CN, value: main}]
    command: [sh, -c, '$start n=\$(ls /d | grep -c ^run); touch /d/run\$n; sleep $d; [ \$n -ge $fails ] || exit 7']
    volumeMounts: [{name: d, mountPath: /d}]"
                ;;
        multi)
                body="  initContainers:
  - name: init
    image: $img
    env: [{name: CN, value: init}]
    command: [sh, -c, '$start exit 0']
    volumeMounts: [{name: d, mountPath: /d}]
  containers:
  - name: a
    image: $img
    env: [{name: CN, value: a}]
    command: [sh, -c, '$start trap \"exit 0\" TERM; while :; do sleep 1; done']
    volumeMounts: [{name: d, mountPath: /d}]
  - name: b
    image: $img
    env: [{name: CN, value: b}]
    command: [sh, -c, '$start exec sleep 100000']
    volumeMounts: [{name: d, mountPath: /d}]"
                ;;
        shared)
                # a shared PID namespace: the pod has a pause process
                body="  shareProcessNamespace: true
  containers:
  - name: a
    image: $img
    env: [{name: CN, value: a}]
    command: [sh, -c, '$start trap \"exit 0\" TERM; while :; do sleep 1; done']
    volumeMounts: [{name: d, mountPath: /d}]
  - name: b
    image: $img
    env: [{name: CN, value: b}]
    command: [sh, -c, '$start trap \"exit 0\" TERM; while :; do sleep 1; done']
    volumeMounts: [{name: d, mountPath: /d}]"
                ;;
        *) die "lc_pod: unknown kind $kind" ;;
        esac
        echo "$kind $code" >"$tmp/expect/$name"
        mkdir -p "$tmp/hp/$name"
        printf '%s\n  volumes: [{name: d, hostPath: {path: %s, type: Directory}}]\n' "$body" "$tmp/hp/$name" |
                MKPOD_GRACE=2 mkpod "$name" "$policy"
}
LC_KINDS=(svc job onfail multi)
lc_random_pod() { lc_pod "$1" "${LC_KINDS[$(rnd ${#LC_KINDS[@]})]}"; }
# lc_delete NAME: a graceful delete, not waited for; the pod must be gone
# once converged.
lc_delete() {
        k delete pod "$1" --wait=false >/dev/null 2>&1
        echo "deleted 0" >"$tmp/expect/$1"
}

# ---- convergence ------------------------------------------------------------------
pods_json() { k get pods -o json 2>/dev/null; }
# final_state: prints the pods not in their expected final state (nothing
# when converged). Reads $tmp/pods.json.
final_state() {
        local f name kind code
        for f in "$tmp"/expect/*; do
                [ -e "$f" ] || continue
                name=${f##*/}
                read -r kind code <"$f"
                jq -r --arg n "$name" --arg kind "$kind" --argjson code "$code" '
                  [.items[] | select(.metadata.name == $n)] as $p
                  | if $kind == "deleted" then (if ($p | length) == 0 then empty else "\($n): not gone (\($p[0].status.phase), deleting=\($p[0].metadata.deletionTimestamp != null))" end)
                    elif ($p | length) == 0 then "\($n): missing"
                    else $p[0] as $p
                    | ($p.status.containerStatuses // []) as $cs
                    | if $p.metadata.deletionTimestamp != null then "\($n): Terminating"
                      elif $kind == "svc" or $kind == "multi" or $kind == "shared" then
                        (if $p.status.phase == "Running" and ([$p.status.conditions[]? | select(.type == "Ready" and .status == "True")] | length) == 1 then empty
                         else "\($n): \($p.status.phase), not Ready" end)
                      elif $kind == "job" then
                        (if $p.status.phase == (if $code == 0 then "Succeeded" else "Failed" end) and ($cs[0].state.terminated != null) then empty
                         else "\($n): \($p.status.phase), want \(if $code == 0 then "Succeeded" else "Failed" end)" end)
                      else (if $p.status.phase == "Succeeded" and ($cs[0].state.terminated != null) then empty else "\($n): \($p.status.phase), want Succeeded" end)
                      end
                    end' "$tmp/pods.json"
        done
}
not_final() {
        pods_json >"$tmp/pods.json.new" || return 1
        mv "$tmp/pods.json.new" "$tmp/pods.json"
        [ -z "$(final_state)" ]
}
# converge SECONDS: waits until every pod is in its final state; a violation
# when SECONDS pass first. Sets $converged_in (seconds).
# Converged means the whole status, not the phases alone: once the phases
# are final, what is left of the bound is given to the invariants (restart
# counts, container ids: a status the agent could not deliver during the
# outage is retried within the kubelet's 10 s syncPeriod).
invariants_hold() ( violation() { exit 1; }; check_invariants "${inv_what:-converge}" ) >/dev/null 2>&1
converge() {
        local t0 left
        t0=$(now)
        if poll "$1" not_final; then
                left=$(awk -v b="$1" -v s="$(since "$t0")" 'BEGIN { l = int(b - s); print l < 1 ? 1 : l }')
                poll "$left" invariants_hold || true
                converged_in=$(since "$t0")
                fle "$converged_in" "$converge_max" || converge_max=$converged_in
                return 0
        fi
        converged_in=$(since "$t0")
        inv_what=${inv_what:-converge} violation "not converged ${1}s after recovery: $(final_state | head -5 | paste -sd';')"
        return 1
}

# ---- the invariants --------------------------------------------------------------------
memcg=/sys/fs/cgroup/memory
# our_monitors: pids of the `cubelet __monitor` processes writing into this
# test's pod logs.
our_monitors() {
        local p
        for p in $(pgrep -f -- '__monitor' 2>/dev/null); do
                [ -r "/proc/$p/cmdline" ] || continue
                tr '\0' ' ' <"/proc/$p/cmdline" | qgrep '__monitor' || continue
                ls -l "/proc/$p/fd" 2>/dev/null | qgrep -- "-> $logs/" && echo "$p"
        done
}
ipam_allocs() { ls "$tmp/ipam/$cni_name" 2>/dev/null | grep -v -e lock -e last_reserved; }
our_veths() { ip -o link show master "$bridge" 2>/dev/null | awk -F'[:@ ]+' '{print $2}'; }
# our_mounts: mounts under $tmp but the runtime's own $root/sandboxes bind
# and the pin of its pin space (both made once, with the first sandbox).
our_mounts() { awk -v t="$tmp" -v sb="$root/sandboxes" 'index($5, t) == 1 && $5 != sb && $5 != sb "/.pins-mntns"' /proc/self/mountinfo | wc -l; }
pod_cgroups() { find "$memcg/$cgroot" -type d -name 'pod*' 2>/dev/null | grep -v '/pod[^/]*/.'; }

# check_invariants WHAT: after convergence (pods.json fresh):
#  - each pod has exactly its containers: every running container has a
#    state.json saying running, its process alive in its own cgroup, exactly
#    one monitor; the pod's cgroup has one child with processes per running
#    container and no process outside them;
#  - every exit reported with its code and reason (jobs: their code,
#    Completed/Error; onfail: lastState 7/Error, then 0/Completed);
#  - restart counts right: restartCount = the times the container started - 1;
#  - nothing leaked: one sandbox, one IP, one veth per pod that has a
#    network (non-terminal), no cgroup/sandbox/container of a pod that is
#    gone, monitors = running containers, the agent's fds and threads within
#    FD_SLACK of the idle baseline scaled by the pods.
check_invariants() {
        inv_what=$1
        local v0=$violations f name kind code uid pcg n_run n_cg stray
        pods_json >"$tmp/pods.json" || { violation "cannot list pods"; return; }
        local -A running_ids=()
        local live_uids=" " net_pods=0 total_running=0
        for f in "$tmp"/expect/*; do
                [ -e "$f" ] || continue
                name=${f##*/}
                read -r kind code <"$f"
                [ "$kind" != deleted ] || continue
                uid=$(jq -r --arg n "$name" '.items[] | select(.metadata.name == $n) | .metadata.uid' "$tmp/pods.json")
                [ -n "$uid" ] || { violation "$name: missing"; continue; }
                live_uids+="$uid "
                local phase
                phase=$(jq -r --arg n "$name" '.items[] | select(.metadata.name == $n) | .status.phase' "$tmp/pods.json")
                case $phase in Running | Pending) net_pods=$((net_pods + 1)) ;; esac
                local vol=$tmp/hp/$name
                # per container: restart count vs starts, running or terminated as expected
                local line cname rc cid state ecode reason lcode starts
                while IFS='|' read -r cname rc cid state ecode reason lcode; do
                        [ -n "$cname" ] || continue
                        starts=$(wc -l <"$vol/starts-$cname" 2>/dev/null || echo 0)
                        if [ "$state" = waiting ] && [ "$starts" -eq "$rc" ]; then :; # between a crash and its restart
                        elif [ "$starts" -ne $((rc + 1)) ]; then
                                violation "$name/$cname: restartCount $rc but started $starts time(s)"
                        fi
                        cid=${cid#*://}
                        if [ "$state" = running ]; then
                                running_ids[$cid]=$name/$cname
                                total_running=$((total_running + 1))
                                local st=$root/containers/$cid/state.json pid mon cgp
                                [ -f "$st" ] || { violation "$name/$cname: running but no state.json for $cid"; continue; }
                                pid=$(jq -r .pid "$st")
                                mon=$(jq -r .monitorPid "$st")
                                cgp=$(jq -r .cgroupPath "$st")
                                kill -0 "$pid" 2>/dev/null || violation "$name/$cname: running but its process $pid is gone"
                                tr '\0' ' ' <"/proc/$mon/cmdline" 2>/dev/null | qgrep __monitor ||
                                        violation "$name/$cname: running but its monitor $mon is gone"
                                grep -qs "$cgp\$" "/proc/$pid/cgroup" ||
                                        violation "$name/$cname: process $pid not in its cgroup $cgp"
                        fi
                        case $kind in
                        job)
                                local want=Completed
                                [ "$code" -eq 0 ] || want=Error
                                [ "$cname/$state/$ecode/$reason/$rc" = "main/terminated/$code/$want/0" ] ||
                                        violation "$name: $cname $state exit $ecode ($reason), restarts $rc; want terminated exit $code ($want), 0 restarts"
                                ;;
                        onfail | onfail2)
                                local n=1
                                [ "$kind" = onfail ] || n=2
                                [ "$state/$ecode/$reason/$rc/$lcode" = "terminated/0/Completed/$n/7" ] ||
                                        violation "$name: $state exit $ecode ($reason), restarts $rc, last exit $lcode; want terminated 0 (Completed), $n restart(s), last exit 7"
                                ;;
                        multi)
                                if [ "$cname" = init ]; then
                                        [ "$state/$ecode/$reason" = terminated/0/Completed ] ||
                                                violation "$name: init $state exit $ecode ($reason), want terminated 0 (Completed)"
                                fi
                                ;;
                        esac
                done < <(jq -r --arg n "$name" '.items[] | select(.metadata.name == $n)
                          | ((.status.initContainerStatuses // []) + (.status.containerStatuses // []))[]
                          | [.name, .restartCount, (.containerID // ""), (.state | keys[0]),
                             (.state.terminated.exitCode // ""), (.state.terminated.reason // ""),
                             (.lastState.terminated.exitCode // "")] | join("|")' "$tmp/pods.json")
                # the pod's cgroup: one child per running container, no stray process
                pcg=$(find "$memcg/$cgroot" -type d -name "pod$uid" 2>/dev/null | head -1)
                n_run=$(jq -r --arg n "$name" '[.items[] | select(.metadata.name == $n)
                          | ((.status.initContainerStatuses // []) + (.status.containerStatuses // []))[]
                          | select(.state.running != null)] | length' "$tmp/pods.json")
                if [ -n "$pcg" ]; then
                        # the cgroup of an exited container may stay (empty) until the pod goes
                        n_cg=0
                        for d in $(find "$pcg" -mindepth 1 -maxdepth 1 -type d); do
                                [ -z "$(cat "$d/cgroup.procs" 2>/dev/null)" ] || n_cg=$((n_cg + 1))
                        done
                        [ "$n_cg" -eq "$n_run" ] || violation "$name: $n_cg container cgroups with processes for $n_run running containers"
                        # the pause process (a shared PID namespace) lives in the pod's cgroup
                        local pause
                        pause=$(jq -r '.pausePid // 0' "$root/sandboxes/$uid/state.json" 2>/dev/null)
                        stray=$(grep -vcx "${pause:-0}" "$pcg/cgroup.procs" 2>/dev/null)
                        [ "$stray" -eq 0 ] || violation "$name: $stray process(es) in the pod cgroup outside any container's"
                elif [ "$n_run" -gt 0 ]; then
                        violation "$name: $n_run running container(s) but no pod cgroup"
                fi
                # exec once into each svc pod (exec works after the fault, the
                # postStart hook ran)
                if [ "$kind" = svc ] && [ "$phase" = Running ] && [ ! -e "$tmp/execd/$name" ]; then
                        mkdir -p "$tmp/execd" && : >"$tmp/execd/$name"
                        local out
                        # stdout alone: kubectl's own stderr warnings (its
                        # WebSocket client's "Unknown stream id 1, discarding
                        # message", seen once under load) are not the node's
                        out=$(k exec "$name" -c main -- cat /d/hook 2>"$tmp/exec.err")
                        [ "$out" = hook ] || violation "$name: exec 'cat /d/hook' gave '$out' (stderr: $(head -c 300 "$tmp/exec.err")), want hook (postStart ran, exec works)"
                fi
        done
        # monitors: exactly one per running container, none other
        local mons n_mon
        mons=$(our_monitors)
        n_mon=$(echo -n "$mons" | grep -c .)
        [ "$n_mon" -eq "$total_running" ] || violation "$n_mon monitors for $total_running running containers"
        # every runtime container that runs belongs to a running container status
        local d s
        for d in "$root"/containers/*/; do
                [ -f "$d/state.json" ] || continue
                s=${d%/}
                s=${s##*/}
                [ -f "$d/exit.json" ] && continue
                if [ -z "${running_ids[$s]:-}" ]; then
                        local p
                        p=$(jq -r .pid "$d/state.json" 2>/dev/null)
                        kill -0 "$p" 2>/dev/null && violation "runtime container $s runs (pid $p) but no pod status claims it"
                fi
        done
        # nothing of a gone pod: cgroups, sandboxes
        for d in $(pod_cgroups); do
                s=${d##*/pod}
                [[ $live_uids == *" $s "* ]] || violation "cgroup of a gone pod left: $d"
        done
        for d in "$root"/sandboxes/*; do
                [ -e "$d" ] || continue
                s=${d##*/}
                [[ $live_uids == *" $s "* ]] || violation "sandbox of a gone pod left: $s"
        done
        # the network: one IP and one veth per pod with a network (Running pods;
        # terminal pods may have been torn down)
        local n_ip n_veth n_sb
        n_ip=$(ipam_allocs | wc -l)
        n_veth=$(our_veths | wc -l)
        n_sb=$(ls "$root/sandboxes" 2>/dev/null | wc -l)
        [ "$n_ip" -eq "$n_sb" ] || violation "$n_ip IP allocations for $n_sb sandboxes"
        [ "$n_veth" -eq "$n_sb" ] || violation "$n_veth veths for $n_sb sandboxes"
        [ "$n_sb" -ge "$net_pods" ] || violation "$n_sb sandboxes for $net_pods running pods"
        agent_resources
        [ "$violations" -eq "$v0" ] && echo "     invariants hold ($1): $(jq '.items | length' "$tmp/pods.json") pods, $total_running running containers, $n_mon monitors, $n_sb sandboxes, $n_ip IPs, fds $a_fds, threads $a_thr"
}
# agent_resources: $a_fds, $a_thr of the agent; a violation when they exceed
# the idle baseline + 20 per pod + FD_SLACK.
FD_SLACK=${FD_SLACK:-12}
agent_resources() {
        a_fds=$(ls "/proc/$agent_pid/fd" 2>/dev/null | wc -l)
        a_thr=$(ls "/proc/$agent_pid/task" 2>/dev/null | wc -l)
        [ -n "${base_fds:-}" ] || return 0
        local npods lim
        npods=$(jq '.items | length' "$tmp/pods.json")
        lim=$((base_fds + 20 * npods + FD_SLACK))
        [ "$a_fds" -le "$lim" ] || violation "agent fds $a_fds > $lim (idle $base_fds, $npods pods)"
        [ "$a_thr" -le $((base_thr + 4)) ] || violation "agent threads $a_thr > idle $base_thr + 4"
}
# fd_kinds: what the agent's fds are, counted ("12 anon_inode:[timerfd]").
fd_kinds() {
        local f
        for f in /proc/"$agent_pid"/fd/*; do readlink "$f"; done 2>/dev/null | sed 's/:\[[0-9]*\]$//' | sort | uniq -c
}
# baseline: the idle agent's fds and threads (no pods yet).
baseline() {
        sleep 1
        fd_kinds >"$tmp/fds.idle"
        base_fds=$(awk '{n += $1} END {print n + 0}' "$tmp/fds.idle") # the same snapshot
        base_thr=$(ls "/proc/$agent_pid/task" | wc -l)
        base_mounts=$(our_mounts)
        echo "     idle agent: $base_fds fds, $base_thr threads; $base_mounts mounts under $tmp"
}

# drain_all: deletes every pod, waits until gone, then nothing may be left:
# pod cgroups, sandboxes, runtime containers, IPs, veths, netns/container
# mounts, monitors; the agent back to its idle fds/threads (+FD_SLACK).
drain_all() {
        inv_what="drain $1"
        local f
        k delete pods --all --wait=false >/dev/null 2>&1
        for f in "$tmp"/expect/*; do echo "deleted 0" >"$f"; done
        converge 60
        left() {
                pod_cgroups
                ls "$root/sandboxes" "$root/containers" 2>/dev/null | grep -v -e '^$' -e ':$'
                ipam_allocs
                our_veths
                our_monitors
        }
        poll 15 eval '[ -z "$(left)" ]' || violation "left after all pods are gone: $(left | head -5 | paste -sd' ')"
        [ "$(our_mounts)" -le "$base_mounts" ] || violation "$(our_mounts) mounts under $tmp, idle $base_mounts: $(grep " $tmp" /proc/self/mountinfo | awk '{print $5}' | head -3 | paste -sd' ')"
        sleep 1
        a_thr=$(ls "/proc/$agent_pid/task" 2>/dev/null | wc -l)
        # sockets: the apiserver connection pool (curl) grows and shrinks
        # after apiserver restarts; the rest must be back to idle (+1: the
        # sealed copy of the binary the runtime makes at the first start).
        # One snapshot gives the count and the kinds (a count and a listing
        # taken apart once counted 3 over idle while the listing a moment
        # later showed only the copy: fds held for a moment in between),
        # and a leak is an excess that stays 5 s.
        local socks others base_socks snap
        base_socks=$(awk '$2 == "socket" {print $1}' "$tmp/fds.idle")
        fds_back() {
                snap=$(fd_kinds)
                a_fds=$(awk '{n += $1} END {print n + 0}' <<<"$snap")
                socks=$(awk '$2 == "socket" {print $1}' <<<"$snap")
                others=$((a_fds - ${socks:-0}))
                [ "$others" -le $((base_fds - ${base_socks:-0} + 2)) ] && [ "${socks:-0}" -le $((${base_socks:-0} + 12)) ]
        }
        if ! poll 5 fds_back; then
                violation "agent fds $a_fds after the drain, idle $base_fds: $(diff "$tmp/fds.idle" - <<<"$snap" | grep '^[<>]' | paste -sd' ')"
                ss -anp 2>/dev/null | grep "pid=$agent_pid," | awk '{print "     " $1, $2, $5, $6}' | sort | uniq -c | head -20
        fi
        [ "$a_thr" -le $((base_thr + 2)) ] || violation "agent threads $a_thr after the drain, idle $base_thr"
        rm -f "$tmp"/expect/*
        echo "     drained ($1): nothing left; agent fds $a_fds, threads $a_thr"
}

# fault_report: the figures (scenario, rounds, faults, violations, seed) and finish.
fault_report() {
        echo "FAULTS $H_NAME: rounds=$rounds faults=$faults violations=$violations seed=$FAULT_SEED slowest_convergence=${converge_max}s"
        [ -z "${FAULT_RESULTS:-}" ] || echo "$H_NAME $rounds $faults $violations $FAULT_SEED $converge_max" >>"$FAULT_RESULTS"
        finish
}
