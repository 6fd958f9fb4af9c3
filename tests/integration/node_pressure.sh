#!/usr/bin/env bash
# Node-pressure eviction as a user sees it through kubectl: the cubelet agent
# against the stand-in apiserver, busybox pods with CNI and cgroups under a
# private parent. Pressure comes from thresholds chosen for this machine,
# never from exhausting it:
#  A. memory.available<(available now - 768Mi): a BestEffort pod that takes
#     1.5Gi puts the node under MemoryPressure; it is evicted (Failed,
#     Evicted, the kubelet's message, DisruptionTarget, events) while a
#     Guaranteed pod keeps running; during the transition period a new
#     BestEffort pod is rejected and a Burstable one admitted; after it the
#     condition goes back to False and BestEffort pods run again;
#  B. restarted with nodefs.inodesFree<99% and pid.available<pid_max:
#     DiskPressure and PIDPressure, every new pod rejected, running pods
#     evicted for inodes one per cycle, but a system-node-critical pod is
#     admitted and never evicted;
#  C. restarted with the defaults: no pressure.
# Exit 77 when not root or a tool is missing. KEEP_AGENT_LOG=FILE keeps the
# agent's log.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
need_root
need_tools jq umoci ip busybox kubectl openssl python3 /usr/bin/etcd
need_cni bridge host-local
need_memcg
NODE=pressure-node-$$
harness_init pressure

# cond TYPE: "status|reason|message|lastTransitionTime" of a node condition.
cond() {
        k get node "$NODE" -o jsonpath="{range .status.conditions[?(@.type==\"$1\")]}{.status}|{.reason}|{.message}|{.lastTransitionTime}{end}" 2>/dev/null
}
cond_status_is() { [ "$(cond "$1" | cut -d'|' -f1)" = "$2" ]; }
mkpod_res() { # NAME RESOURCES(json) COMMAND [SPEC-FIELD (key: value)]
        k create -f - >/dev/null <<EOF || fail "$1: kubectl create failed"
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: default}
spec:
  nodeName: $NODE
  ${4:-}
  restartPolicy: Never
  terminationGracePeriodSeconds: 5
  containers:
  - name: $1
    image: busybox:1.36
    command: [sh, -c, '$3']
    resources: $2
EOF
}
SLEEP='trap "exit 0" TERM; while :; do sleep 0.2; done'
GUARANTEED='{requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: 100m, memory: 64Mi}}'
# The node's memory.available as the kubelet computes it (cgroup v1 root).
mem_available() {
        local cap usage inactive
        cap=$(($(awk '/^MemTotal:/{print $2}' /proc/meminfo) * 1024))
        usage=$(cat /sys/fs/cgroup/memory/memory.usage_in_bytes)
        inactive=$(awk '/^total_inactive_file /{print $2}' /sys/fs/cgroup/memory/memory.stat)
        echo $((cap - (usage - inactive)))
}

# ---- setup ---------------------------------------------------------------------
import_busybox
write_cni_conf
start_standin
run_agent() { # extra flags...
        start_agent -v 1 --kubeconfig "$data/node.kubeconfig" --healthz-port 0 --node-ip 10.0.0.5 \
                --node-status-update-frequency 1s --node-lease-duration-seconds 4 "$@"
}

# ---- A. memory pressure ------------------------------------------------------------
# The hog takes 1.5Gi; the threshold sits halfway, so the rest of this
# machine may move by 768Mi either way without changing the outcome.
HOG=1536
avail=$(mem_available)
[ "$avail" -gt $(((HOG + 512) * 1048576)) ] || skip "less than $((HOG + 512))Mi available"
threshold_mi=$(((avail - HOG * 1048576 / 2) / 1048576))
TRANSITION=30
"$CUBELET" --eviction-hard 'memory.free<1Gi' --kubeconfig /dev/null 2>"$tmp/bad" && fail "an unknown signal was accepted"
grep -q 'unsupported eviction signal "memory.free"' "$tmp/bad" || fail "bad signal: $(cat "$tmp/bad")"
run_agent --eviction-hard "memory.available<${threshold_mi}Mi" --eviction-pressure-transition-period ${TRANSITION}s
node_ready
c=$(cond MemoryPressure)
[[ "$c" == "False|KubeletHasSufficientMemory|kubelet has sufficient memory available|"* ]] ||
        fail "MemoryPressure before the hog: $c"
pass "A0 node Ready, MemoryPressure $c (threshold ${threshold_mi}Mi, available $avail)"

mkpod_res steady "$GUARANTEED" "$SLEEP"
poll 40 phase_is steady Running || die "steady: not Running"
[ "$(pj steady '{.status.qosClass}')" = Guaranteed ] || fail "steady: qosClass $(pj steady '{.status.qosClass}')"
cond_status_is MemoryPressure False || fail "MemoryPressure with only steady: $(cond MemoryPressure)"

t_hog=$(date +%s)
mkpod_res hog '{}' "dd if=/dev/zero bs=${HOG}M count=1 | sleep 3600"
poll 90 phase_is hog Failed || die "hog: not Failed 90 s after it started (phase $(pj hog '{.status.phase}'), available now $(mem_available))"
t_evicted=$(date +%s)
c=$(cond MemoryPressure)
poll 5 eval '[[ "$(cond MemoryPressure)" == "True|KubeletHasInsufficientMemory|kubelet has insufficient memory available|"* ]]' ||
        fail "MemoryPressure after the hog: $(cond MemoryPressure)"
t_true=$(cond MemoryPressure | cut -d'|' -f4)
pass "A1 hog Failed $((t_evicted - t_hog))s after it started; MemoryPressure $(cond MemoryPressure | cut -d'|' -f1-2)"

# Admission during the transition period (pressure is gone with the hog).
mkpod_res late '{}' "$SLEEP"
mkpod_res burst '{requests: {memory: 16Mi}}' "$SLEEP"
poll 20 phase_is late Failed || fail "late: a BestEffort pod was not rejected under MemoryPressure (phase $(pj late '{.status.phase}'))"
[ "$(pj late '{.status.reason}')" = Evicted ] || fail "late: reason '$(pj late '{.status.reason}')'"
[ "$(pj late '{.status.message}')" = "Pod was rejected: The node had condition: [MemoryPressure]. " ] ||
        fail "late: message '$(pj late '{.status.message}')'"
events_of Pod late Evicted | qgrep -xF "Warning|The node had condition: [MemoryPressure]. " ||
        fail "late: no Evicted event: $(events_of Pod late Evicted)"
poll 30 phase_is burst Running || fail "burst: a Burstable pod was not admitted under MemoryPressure ($(pj burst '{.status.phase}'))"
cond_status_is MemoryPressure True || fail "MemoryPressure ended before the transition period: $(cond MemoryPressure)"
pass "A2 under MemoryPressure: BestEffort late rejected (Evicted), Burstable burst Running"

# The evicted pod, as kubectl shows it.
msg=$(pj hog '{.status.message}')
[ "$(pj hog '{.status.reason}')" = Evicted ] || fail "hog: reason '$(pj hog '{.status.reason}')'"
re='^The node was low on resource: memory\. Threshold quantity: [0-9]+[KMG]?i?, available: [0-9]+[KMG]?i?\. Container hog was using [0-9.]+[KMG]?i?, request is 0, has larger consumption of memory\. $'
[[ "$msg" =~ $re ]] || fail "hog: message '$msg'"
# The threshold as the kubelet prints the quantity: canonical BinarySI.
exp_th=$(python3 -c "
v=$threshold_mi
for s in ['Mi','Gi','Ti']:
    if v % 1024: print(f'{v}{s}'); break
    v //= 1024")
[[ "$msg" == *"Threshold quantity: $exp_th, "* ]] || fail "hog: threshold in message '$msg', want $exp_th"
dt=$(pj hog '{.status.conditions[?(@.type=="DisruptionTarget")].status}|{.status.conditions[?(@.type=="DisruptionTarget")].reason}|{.status.conditions[?(@.type=="DisruptionTarget")].message}')
[ "$dt" = "True|TerminationByKubelet|$msg" ] || fail "hog: DisruptionTarget '$dt'"
events_of Pod hog Evicted | qgrep -xF "Warning|$msg" || fail "hog: no Evicted event with the message: $(events_of Pod hog Evicted)"
[ "$(pj hog '{.status.containerStatuses[0].state.terminated.exitCode}')" != "" ] ||
        fail "hog: container not terminated: $(pj hog '{.status.containerStatuses[0].state}')"
events_of Node "$NODE" NodeHasInsufficientMemory | qgrep -xF "Normal|Node $NODE status is now: NodeHasInsufficientMemory" ||
        fail "no NodeHasInsufficientMemory event: $(events_of Node "$NODE" NodeHasInsufficientMemory)"
events_of Node "$NODE" EvictionThresholdMet | qgrep -xF "Warning|Attempting to reclaim memory" ||
        fail "no EvictionThresholdMet event"
[ -z "$(find /sys/fs/cgroup/memory/"$cgroot" -type d -name "*$(pj hog '{.metadata.uid}')*" 2>/dev/null)" ] ||
        poll 10 eval '[ -z "$(find /sys/fs/cgroup/memory/"$cgroot" -type d -name "*$(pj hog "{.metadata.uid}")*")" ]' ||
        fail "hog: its cgroup is still there"
phase_is steady Running && [ "$(pj steady '{.status.containerStatuses[0].restartCount}')" = 0 ] ||
        fail "steady: $(pj steady '{.status.phase}') restarts $(pj steady '{.status.containerStatuses[0].restartCount}')"
pass "A3 hog: Evicted '$msg', DisruptionTarget TerminationByKubelet, events; steady Running"

# After the transition period without pressure: False again.
poll $((TRANSITION + 20)) cond_status_is MemoryPressure False ||
        fail "MemoryPressure still $(cond MemoryPressure) $((TRANSITION + 20)) s after the eviction"
t_back=$(date +%s)
c=$(cond MemoryPressure)
[[ "$c" == "False|KubeletHasSufficientMemory|kubelet has sufficient memory available|"* ]] || fail "MemoryPressure back: $c"
[ "$(cut -d'|' -f4 <<<"$c")" \> "$t_true" ] || fail "lastTransitionTime did not move: $t_true -> $(cut -d'|' -f4 <<<"$c")"
# The node's own transition times, not when this test happened to look: the
# period counts from the last time the threshold was met, which is at or
# after the transition to True (1 s for their second resolution).
ltt_true=$(date -d "$t_true" +%s)
ltt_back=$(date -d "$(cut -d'|' -f4 <<<"$c")" +%s)
[ $((ltt_back - ltt_true)) -ge $((TRANSITION - 1)) ] ||
        fail "MemoryPressure went back $((ltt_back - ltt_true)) s after it turned True, before the ${TRANSITION}s transition period"
events_of Node "$NODE" NodeHasSufficientMemory | qgrep -xF "Normal|Node $NODE status is now: NodeHasSufficientMemory" ||
        fail "no NodeHasSufficientMemory event"
mkpod_res after '{}' "$SLEEP"
poll 40 phase_is after Running || fail "after: a BestEffort pod did not run once the pressure was over ($(pj after '{.status.phase}') $(pj after '{.status.message}'))"
phase_is steady Running || fail "steady: $(pj steady '{.status.phase}')"
[ "$(pj hog '{.status.phase}')" = Failed ] || fail "hog: the evicted pod object is gone or changed"
pass "A4 MemoryPressure False $((ltt_back - ltt_true))s after it turned True ($((t_back - t_evicted))s after the eviction was seen); BestEffort after Running; steady Running"

# ---- B. disk and PID pressure ------------------------------------------------------
stop_agent
pidmax=$(cat /proc/sys/kernel/pid_max)
run_agent --eviction-hard "nodefs.inodesFree<99%,pid.available<$pidmax" --eviction-pressure-transition-period 10s
poll 30 eval 'cond_status_is DiskPressure True && cond_status_is PIDPressure True' ||
        fail "DiskPressure $(cond DiskPressure), PIDPressure $(cond PIDPressure)"
[[ "$(cond DiskPressure)" == "True|KubeletHasDiskPressure|kubelet has disk pressure|"* ]] || fail "DiskPressure: $(cond DiskPressure)"
[[ "$(cond PIDPressure)" == "True|KubeletHasInsufficientPID|kubelet has insufficient PID available|"* ]] ||
        fail "PIDPressure: $(cond PIDPressure)"
cond_status_is MemoryPressure False || fail "MemoryPressure: $(cond MemoryPressure)"
mkpod_res gdisk "$GUARANTEED" "$SLEEP"
poll 20 phase_is gdisk Failed || fail "gdisk: a Guaranteed pod was admitted under DiskPressure"
[ "$(pj gdisk '{.status.reason}|{.status.message}')" = "Evicted|Pod was rejected: The node had condition: [DiskPressure PIDPressure]. " ] ||
        fail "gdisk: $(pj gdisk '{.status.reason}|{.status.message}')"
# A critical pod is admitted all the same and never evicted: the stand-in's
# Priority admission (as kube-apiserver's) gives it spec.priority 2000001000
# from its class, which is what the kubelet's IsCriticalPod reads.
mkpod_res crit '{}' "$SLEEP" "priorityClassName: system-node-critical"
[ "$(pj crit '{.spec.priority}')" = 2000001000 ] || fail "crit: spec.priority '$(pj crit '{.spec.priority}')' (Priority admission)"
poll 20 phase_is crit Running || fail "crit: a critical pod was not admitted under DiskPressure: $(pj crit '{.status.phase}|{.status.reason}|{.status.message}')"
# The running pods go, one per monitoring cycle, for inodes (nodefs before pid).
poll 40 eval '[ "$(k get pods -o jsonpath="{range .items[?(@.status.reason==\"Evicted\")]}{.metadata.name}{\"\n\"}{end}" | grep -cvE "^(hog|late|gdisk)$")" -ge 1 ]' ||
        fail "no running pod evicted under DiskPressure: $(k get pods --no-headers | paste -sd';')"
first=$(k get pods -o jsonpath='{range .items[?(@.status.reason=="Evicted")]}{.metadata.name}{"\n"}{end}' | grep -vE '^(hog|late|gdisk)$' | head -n1)
msg=$(pj "$first" '{.status.message}')
re='^The node was low on resource: inodes\. Threshold quantity: [0-9]+, available: [0-9]+k?\. $'
[[ "$msg" =~ $re ]] || fail "$first: message '$msg'"
[ "$first" != crit ] || fail "crit: a critical pod was evicted: $msg"
# a few more monitoring cycles: the others go, crit stays
sleep 4
[ "$(pj crit '{.status.phase}|{.status.reason}')" = "Running|" ] || fail "crit: $(pj crit '{.status.phase}|{.status.reason}|{.status.message}')"
pass "B DiskPressure+PIDPressure: gdisk rejected, the critical pod admitted and kept; $first evicted '$msg'"

# ---- C. back to the defaults -------------------------------------------------------
stop_agent
run_agent
poll 30 eval 'cond_status_is DiskPressure False && cond_status_is PIDPressure False' ||
        fail "with the defaults: DiskPressure $(cond DiskPressure), PIDPressure $(cond PIDPressure)"
[[ "$(cond DiskPressure)" == "False|KubeletHasNoDiskPressure|kubelet has no disk pressure|"* ]] || fail "$(cond DiskPressure)"
[[ "$(cond PIDPressure)" == "False|KubeletHasSufficientPID|kubelet has sufficient PID available|"* ]] || fail "$(cond PIDPressure)"
pass "C defaults: no pressure"

k delete pods --all --grace-period=1 --wait=false >/dev/null 2>&1
poll 40 eval '[ -z "$(k get pods -o name 2>/dev/null)" ]' || fail "pods not gone: $(k get pods --no-headers | paste -sd';')"
poll 10 eval '[ -z "$(find /sys/fs/cgroup/memory/"$cgroot" -mindepth 2 -type d -name "pod*" 2>/dev/null)" ]' ||
        fail "pod cgroups left: $(find /sys/fs/cgroup/memory/"$cgroot" -mindepth 2 -type d -name 'pod*' | head -3)"
stop_agent
sanitizer_findings "$tmp/agent.log" || fail "sanitizer reports in the agent log"

finish
