#!/usr/bin/env bash
# The pod lifecycle as a user sees it through kubectl: the cubelet agent
# against the stand-in apiserver (tests/apiserver, real etcd), busybox pods
# with CNI (bridge, host-local, portmap) and cgroups under a private parent.
# Every check reads what kubectl shows (get -o wide/json, -w, events), never
# the agent's log: node Ready; Pending -> Running -> Succeeded; Failed;
# OnFailure restarts; CrashLoopBackOff; image errors; each admission
# rejection; NoExecute eviction (at once, after tolerationSeconds, cancelled);
# graceful, SIGKILL-after-grace and force deletes; drain; an apiserver outage;
# 110 pods at once (the default maxPods). Exit 77 when not root or a tool is missing.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
need_root
need_tools jq umoci ip iptables busybox kubectl openssl python3 /usr/bin/etcd
need_cni bridge host-local portmap
[ -d /sys/fs/cgroup/memory ] || skip "needs the cgroup v1 memory hierarchy"
harness_init podlife

# The STATUS and RESTARTS columns of `kubectl get pod -o wide`.
col() { k get pod "$1" -o wide --no-headers 2>/dev/null | awk -v c="$2" '{print $c}'; }
status_is() { [ "$(col "$1" 3)" = "$2" ]; }
# events NAME REASON: "type|message" lines of the pod's events with REASON.
events() { events_of "" "$1" "$2"; }
has_event() { events "$1" "$2" | qgrep -F -- "$3"; }
# sleeper NAME: a running pod that exits on SIGTERM at once.
sleeper() {
        mkpod "$1" Always "${2:-5}" <<'EOF'
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'trap "echo bye; exit 0" TERM; echo up; while :; do sleep 0.2; done']
EOF
}
pod_log() { cat "$logs"/default_"$1"_"$2"/"$3"/"${4:-0}".log 2>/dev/null; }
# clear_pods: deletes every pod and waits until they are gone.
# The pod pullfail (section 6, it lives from section 2 on) is kept unless
# "all" is given.
clear_pods() {
        local sel=(--field-selector "metadata.name!=pullfail")
        [ "${1:-}" = all ] && sel=(--all)
        k delete pods "${sel[@]}" --grace-period=1 --wait=false >/dev/null 2>&1
        poll 40 eval '[ -z "$(k get pods "${sel[@]}" -o name 2>/dev/null)" ]' ||
                fail "pods not gone 40 s after delete: $(k get pods --no-headers 2>&1 | paste -sd';')"
}
# pod_cgroup_procs UID: processes left in the pod's cgroups.
pod_cgroup_procs() {
        find /sys/fs/cgroup/memory/"$cgroot" -type d -name "*$1*" 2>/dev/null |
                while read -r d; do find "$d" -name cgroup.procs -exec cat {} +; done
}

# ---- setup -------------------------------------------------------------------
import_busybox
write_cni_conf portmap
start_standin
hport=$(free_port)
run_agent() {
        start_agent -v 1 --kubeconfig "$data/node.kubeconfig" --healthz-port "$hport" --node-ip 10.0.0.5 \
                --crash-loop-backoff-base 1 --crash-loop-backoff-max 2 --node-status-update-frequency 1s \
                --node-lease-duration-seconds 4
}
run_agent

# ---- 1. the node registers Ready -------------------------------------------------
node_ready
line=$(k get nodes -o wide --no-headers | grep "^$NODE ")
read -r n_name n_status _ _ _ n_ip _ <<<"$line"
[ "$n_status" = Ready ] && [ "$n_ip" = 10.0.0.5 ] || fail "get nodes -o wide: '$line'"
pass "1 node $n_name $n_status INTERNAL-IP $n_ip"

# The image pull back-off takes a while: the pod of section 6 starts now and
# is checked after section 7. It tolerates every taint (sections 7 and 8).
watch_bg "$tmp/pull.reasons" get pods -w --field-selector metadata.name=pullfail \
        -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}{"\n"}'
sleep 0.5
t_pullfail=$(now)
mkpod pullfail Always <<'EOF'
  tolerations: [{operator: Exists}]
  containers:
  - name: main
    image: 127.0.0.1:1/x:1
EOF

# ---- 2. Pending -> Running -> Succeeded --------------------------------------------
watch_bg "$tmp/ok.phases" get pods -w --field-selector metadata.name=ok -o jsonpath='{.status.phase}{"\n"}'
sleep 0.5 # the watch is established before the pod exists
mkpod ok Never <<'EOF'
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'echo hello; sleep 2; exit 0']
EOF
k wait --for=jsonpath='{.status.phase}'=Succeeded pod/ok --timeout=40s >/dev/null || fail "ok: not Succeeded"
sleep 0.5
phases=$(grep -v '^$' "$tmp/ok.phases" | uniq | paste -sd,)
[ "$phases" = Pending,Running,Succeeded ] || fail "ok: watched phases '$phases', want Pending,Running,Succeeded"
[ "$(col ok 3)" = Completed ] || fail "ok: STATUS '$(col ok 3)', want Completed"
[ "$(pj ok '{.status.containerStatuses[0].state.terminated.reason}/{.status.containerStatuses[0].state.terminated.exitCode}')" = Completed/0 ] ||
        fail "ok: terminated $(pj ok '{.status.containerStatuses[0].state}')"
ok_ip=$(pj ok '{.status.podIP}')
[[ "$ok_ip" == "${subnet%.0/24}".* ]] || fail "ok: podIP '$ok_ip' not in $subnet"
[ "$(col ok 6)" = "$ok_ip" ] || fail "ok: get -o wide IP column '$(col ok 6)'"
[ "$(pj ok '{.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].reason}')" = False/PodCompleted ] ||
        fail "ok: Ready condition $(pj ok '{.status.conditions[?(@.type=="Ready")]}')"
has_event ok Started "Started container main" || fail "ok: no Started event"
pass "2 ok: phases $phases, STATUS Completed, podIP $ok_ip, Ready False/PodCompleted"

# ---- 3. Never + exit 3 -> Failed ------------------------------------------------------
mkpod fails Never <<'EOF'
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'exit 3']
EOF
k wait --for=jsonpath='{.status.phase}'=Failed pod/fails --timeout=30s >/dev/null || fail "fails: not Failed"
[ "$(col fails 3)" = Error ] || fail "fails: STATUS '$(col fails 3)', want Error"
[ "$(pj fails '{.status.containerStatuses[0].state.terminated.exitCode}/{.status.containerStatuses[0].state.terminated.reason}')" = 3/Error ] ||
        fail "fails: terminated $(pj fails '{.status.containerStatuses[0].state}')"
pass "3 fails: phase Failed, STATUS Error, exitCode 3"

# ---- 4. OnFailure: two failures then success -------------------------------------
mkpod onfail OnFailure <<'EOF'
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'n=$(ls /work | wc -l); touch /work/run$n; [ $n -ge 2 ] && exit 0; exit 7']
    volumeMounts: [{name: work, mountPath: /work}]
  volumes: [{name: work, emptyDir: {}}]
EOF
k wait --for=jsonpath='{.status.phase}'=Succeeded pod/onfail --timeout=40s >/dev/null ||
        fail "onfail: not Succeeded (status $(col onfail 3))"
[ "$(pj onfail '{.status.containerStatuses[0].restartCount}')" = 2 ] ||
        fail "onfail: restartCount '$(pj onfail '{.status.containerStatuses[0].restartCount}')', want 2"
[ "$(pj onfail '{.status.containerStatuses[0].lastState.terminated.exitCode}')" = 7 ] || fail "onfail: lastState exit code"
[ "$(col onfail 3)/$(col onfail 4)" = Completed/2 ] || fail "onfail: STATUS/RESTARTS $(col onfail 3)/$(col onfail 4)"
pass "4 onfail: Succeeded with restartCount 2"

# ---- 5. Always + crash -> CrashLoopBackOff ------------------------------------------
mkpod crash Always <<'EOF'
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'exit 1']
EOF
crash_uid=$(pj crash '{.metadata.uid}')
poll 30 status_is crash CrashLoopBackOff || fail "crash: STATUS never CrashLoopBackOff (last $(col crash 3))"
r1=$(pj crash '{.status.containerStatuses[0].restartCount}')
poll 20 eval '[ "$(pj crash "{.status.containerStatuses[0].restartCount}")" -gt "${r1:-0}" ]' ||
        fail "crash: restartCount stuck at $r1"
r2=$(col crash 4)
want="Back-off restarting failed container main in pod crash_default($crash_uid)"
poll 10 eval 'events crash BackOff | qgrep -xF "Warning|$want"' ||
        fail "crash: no Warning BackOff event '$want' (have: $(events crash BackOff | head -2 | paste -sd';'))"
# describe: the waiting state comes and goes with each restart.
desc=""
poll 10 eval 'desc=$(k describe pod crash 2>&1); grep -Eq "^ +Reason: +CrashLoopBackOff$" <<<"$desc"' ||
        fail "crash: describe never shows 'Reason: CrashLoopBackOff'"
grep -Eq '^ +Restart Count: +[1-9]' <<<"$desc" || fail "crash: describe shows no restart count"
grep -Eq '^ +Exit Code: +1$' <<<"$desc" || fail "crash: describe shows no last exit code 1"
grep -Eq "Warning +BackOff .*$(sed 's/[()]/./g' <<<"$want")" <<<"$desc" ||
        fail "crash: describe lists no BackOff event: $(grep -A8 '^Events:' <<<"$desc" | tail -4)"
pass "5 crash: CrashLoopBackOff, RESTARTS $r1 -> $r2, Warning BackOff event"

# ---- 6. image errors ---------------------------------------------------------------
mkpod neverpull Always <<'EOF'
  containers:
  - name: main
    image: nosuch:1.0
    imagePullPolicy: Never
EOF
mkpod badname Always <<'EOF'
  containers:
  - name: main
    image: "Upper/Case:1"
EOF
poll 20 status_is neverpull ErrImageNeverPull || fail "neverpull: STATUS '$(col neverpull 3)'"
msg=$(pj neverpull '{.status.containerStatuses[0].state.waiting.message}')
[ "$msg" = 'Container image "nosuch:1.0" is not present with pull policy of Never' ] ||
        fail "neverpull: waiting message '$msg'"
poll 20 status_is badname InvalidImageName || fail "badname: STATUS '$(col badname 3)'"
pass "6 ErrImageNeverPull with the kubelet's message, InvalidImageName"
clear_pods

# ---- 7. admission rejections ---------------------------------------------------------
hp=$((20000 + $$ % 20000))
mkpod hostport1 Always <<EOF
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'trap "exit 0" TERM; while :; do sleep 0.2; done']
    ports: [{containerPort: 8080, hostPort: $hp}]
EOF
wait_running hostport1
mkpod hostport2 Always <<EOF
  containers:
  - name: main
    image: busybox:1.36
    ports: [{containerPort: 8081, hostPort: $hp}]
EOF
mkpod bigcpu Always <<'EOF'
  containers:
  - name: main
    image: busybox:1.36
    resources: {requests: {cpu: "100000"}}
EOF
mkpod bigmem Always <<'EOF'
  containers:
  - name: main
    image: busybox:1.36
    resources: {requests: {memory: 100Ti}}
EOF
mkpod selector Always <<'EOF'
  nodeSelector: {example.com/nowhere: "true"}
  containers:
  - name: main
    image: busybox:1.36
EOF
# check_rejected NAME REASON MESSAGE-PREFIX
check_rejected() {
        local name=$1 reason=$2 want=$3 j got
        k wait --for=jsonpath='{.status.phase}'=Failed "pod/$name" --timeout=20s >/dev/null ||
                { fail "$name: not Failed (status $(col "$name" 3))"; return; }
        j=$(k get pod "$name" -o json)
        got=$(jq -r .status.reason <<<"$j")
        [ "$got" = "$reason" ] || fail "$name: status.reason '$got', want $reason"
        [ "$(col "$name" 3)" = "$reason" ] || fail "$name: STATUS '$(col "$name" 3)', want $reason"
        got=$(jq -r .status.message <<<"$j")
        [[ "$got" == "Pod was rejected: $want"* ]] || fail "$name: status.message '$got', want 'Pod was rejected: $want...'"
        got=$(jq -c '[.status.containerStatuses[]? | select(.state.running or .state.terminated or .containerID)]' <<<"$j")
        [ "$got" = "[]" ] || fail "$name: a container was started: $got"
        poll 10 eval 'k get events --field-selector "involvedObject.name=$name" -o json >"$tmp/ev.json" &&
                jq -e --arg r "$reason" "any(.items[]; .type == \"Warning\" and .reason == \$r)" "$tmp/ev.json" >/dev/null' ||
                fail "$name: no Warning $reason event"
        got=$(jq -r '[.items[] | select(.reason == "Started" or .reason == "Created") | .message] | join(";")' "$tmp/ev.json")
        [ -z "$got" ] || fail "$name: container events: $got"
        [ -z "$(ls -d "$logs"/default_"$name"_* 2>/dev/null)" ] || fail "$name: a container log exists"
}
check_rejected bigcpu OutOfcpu "Node didn't have enough resource: cpu, requested: 100000000, used: "
check_rejected bigmem OutOfmemory "Node didn't have enough resource: memory, requested: 109951162777600, used: "
check_rejected selector NodeAffinity "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
check_rejected hostport2 NodePorts "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
phase_is hostport1 Running || fail "hostport1: no longer Running"
clear_pods
k taint nodes "$NODE" it-reject=yes:NoExecute >/dev/null || fail "kubectl taint failed"
poll 10 eval '[ -n "$(k get node "$NODE" -o jsonpath="{.spec.taints[?(@.key==\"it-reject\")]}")" ]'
sleep 1.5 # the agent sees the taint (node watch) before the pod arrives
mkpod tainted Always <<'EOF'
  containers:
  - name: main
    image: busybox:1.36
EOF
check_rejected tainted TaintToleration "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"
k taint nodes "$NODE" it-reject=yes:NoExecute- >/dev/null || fail "kubectl taint (remove) failed"
pass "7 rejected: OutOfcpu OutOfmemory NodeAffinity NodePorts TaintToleration"
clear_pods

# ---- 6 (cont.). unreachable registry: ErrImagePull, then ImagePullBackOff ----
# The kubelet shows ImagePullBackOff at a sync inside the doubled back-off
# window (its pod worker resyncs ~10 s after a failed sync): within ~30 s.
poll $((45 - $(since "$t_pullfail" | cut -d. -f1))) eval 'grep -q ImagePullBackOff "$tmp/pull.reasons"'
seq_reasons=$(grep -v '^$' "$tmp/pull.reasons" | uniq | paste -sd,)
t_pf=$(since "$t_pullfail")
if [[ "$seq_reasons" == *ErrImagePull,ImagePullBackOff* ]]; then
        pass "6 pullfail: waiting reasons $seq_reasons (${t_pf}s)"
else
        fail "pullfail: waiting reasons '$seq_reasons' after ${t_pf}s, want ErrImagePull then ImagePullBackOff"
fi
clear_pods all

# ---- 8. NoExecute eviction ---------------------------------------------------------
# (a) no toleration: evicted at once, DisruptionTarget, graceful stop.
sleeper victim 5
wait_running victim
watch_bg "$tmp/victim.json" get pod victim -w -o json
sleep 0.5
t=$(now)
k taint nodes "$NODE" k=v:NoExecute >/dev/null || fail "kubectl taint failed"
poll 10 eval '[ -n "$(pj victim "{.metadata.deletionTimestamp}")" ] || gone victim' ||
        fail "victim: not marked for deletion 10 s after the taint"
t_mark=$(since "$t")
k wait --for=delete pod/victim --timeout=30s >/dev/null 2>&1 || fail "victim: not gone 30 s after the taint"
t_gone=$(since "$t")
sleep 0.5
vj=$(jq -s '.' "$tmp/victim.json" 2>/dev/null) || vj='[]'
dt=$(jq -r '[.[].status.conditions[]? | select(.type=="DisruptionTarget")][0] | "\(.status)/\(.reason)/\(.message)"' <<<"$vj")
[ "$dt" = "True/DeletionByTaintManager/Taint manager: deleting due to NoExecute taint" ] ||
        fail "victim: DisruptionTarget condition '$dt'"
[ "$(jq -r '[.[] | select(.metadata.deletionTimestamp)][0].metadata.deletionGracePeriodSeconds' <<<"$vj")" = 5 ] ||
        fail "victim: not a graceful delete with the pod's grace (5)"
[ "$(jq -r '[.[].status.containerStatuses[]?.state.terminated.exitCode | select(. != null)][0]' <<<"$vj")" = 0 ] ||
        fail "victim: container did not stop gracefully (TERM trap exit 0): $(jq -c '[.[].status.containerStatuses[]?.state]' <<<"$vj")"
fle "$t_mark" 3 || fail "victim: marked for deletion after ${t_mark}s, want at once"
# its timeline: the eviction began (evicting), then the stop (terminating)
vtl=$(curl -fsS -H "Authorization: Bearer $(cat "$root/endpoint.token")" "http://127.0.0.1:$hport/timelines" |
        jq -c '[.pods[] | select(.name == "victim")][-1] | [.timeline[].step]') || vtl='[]'
jq -e 'index("evicting") != null and index("terminating") != null and index("evicting") < index("terminating")' \
        <<<"$vtl" >/dev/null || fail "victim: timeline lacks evicting before terminating: $vtl"
k taint nodes "$NODE" k=v:NoExecute- >/dev/null || fail "kubectl taint (remove) failed"
pass "8a victim: marked after ${t_mark}s, gone after ${t_gone}s, DisruptionTarget DeletionByTaintManager"

# (c) tolerationSeconds 30, taint removed after 2 s: not evicted.
tol() { # NAME SECONDS
        mkpod "$1" Always 2 <<EOF
  tolerations: [{key: k, operator: Equal, value: v, effect: NoExecute, tolerationSeconds: $2}]
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'trap "exit 0" TERM; while :; do sleep 0.2; done']
EOF
}
tol tol30 30
tol tol3 3
wait_running tol30
wait_running tol3
k taint nodes "$NODE" k=v:NoExecute >/dev/null || fail "kubectl taint failed"
sleep 2
k taint nodes "$NODE" k=v:NoExecute- >/dev/null || fail "kubectl taint (remove) failed"
sleep 5
[ "$(pj tol30 '{.status.phase}/{.metadata.deletionTimestamp}')" = Running/ ] ||
        fail "tol30: evicted although the taint was removed after 2 s: $(pj tol30 '{.status.phase}/{.metadata.deletionTimestamp}')"
[ "$(pj tol3 '{.status.phase}/{.metadata.deletionTimestamp}')" = Running/ ] ||
        fail "tol3: evicted although the taint was removed after 2 s"
pass "8c tol30 (and tol3) still Running 5 s after the taint was removed at 2 s"
# (b) tolerationSeconds 3: survives ~3 s, then evicted.
t=$(now)
k taint nodes "$NODE" k=v:NoExecute >/dev/null || fail "kubectl taint failed"
poll 15 eval '[ -n "$(pj tol3 "{.metadata.deletionTimestamp}")" ] || gone tol3' || fail "tol3: not evicted 15 s after the taint"
t_mark=$(since "$t")
fle 2.5 "$t_mark" && fle "$t_mark" 8 || fail "tol3: marked for deletion after ${t_mark}s, want ~3 s"
k wait --for=delete pod/tol3 --timeout=20s >/dev/null 2>&1 || fail "tol3: not gone"
t_gone=$(since "$t")
[ -z "$(pj tol30 '{.metadata.deletionTimestamp}')" ] || fail "tol30: evicted before 30 s"
k taint nodes "$NODE" k=v:NoExecute- >/dev/null || fail "kubectl taint (remove) failed"
pass "8b tol3: marked after ${t_mark}s, gone after ${t_gone}s"
clear_pods

# ---- 9. graceful delete ------------------------------------------------------------
sleeper trapper 10
mkpod stubborn Always 2 <<'EOF'
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'trap "" TERM; echo up; sleep 3600']
EOF
wait_running trapper
wait_running stubborn
trapper_uid=$(pj trapper '{.metadata.uid}')
poll 10 eval 'pod_log trapper "$trapper_uid" main | qgrep "stdout F up"' || fail "trapper: no 'up' log line"
t=$(now)
k delete pod trapper --timeout=30s >/dev/null 2>&1 || fail "trapper: kubectl delete failed"
t_del=$(since "$t")
gone trapper || fail "trapper: still there after kubectl delete returned"
fle "$t_del" 5 || fail "trapper: kubectl delete took ${t_del}s (the TERM trap exits at once)"
pod_log trapper "$trapper_uid" main | qgrep 'stdout F bye$' ||
        fail "trapper: no 'bye' in $logs/default_trapper_$trapper_uid/main/0.log: $(pod_log trapper "$trapper_uid" main | tail -2)"
t=$(now)
k delete pod stubborn --timeout=30s >/dev/null 2>&1 || fail "stubborn: kubectl delete failed"
t_del2=$(since "$t")
gone stubborn || fail "stubborn: still there"
fle 1.8 "$t_del2" && fle "$t_del2" 6 || fail "stubborn: delete took ${t_del2}s, want ~2 s (SIGKILL after the grace)"
pass "9 trapper deleted in ${t_del}s with 'bye' logged; stubborn (ignores TERM, grace 2) in ${t_del2}s"

# ---- 10. force delete ----------------------------------------------------------------
sleeper forced 30
wait_running forced
forced_uid=$(pj forced '{.metadata.uid}')
[ -n "$(pod_cgroup_procs "$forced_uid")" ] || fail "forced: no process found in the pod's cgroup (uid $forced_uid)"
t=$(now)
k delete pod forced --grace-period=0 --force >/dev/null 2>&1 || fail "forced: kubectl delete failed"
gone forced || fail "forced: still in the API after a force delete"
t_del=$(since "$t")
poll 10 eval '[ -z "$(pod_cgroup_procs "$forced_uid")" ]' ||
        fail "forced: processes left in the pod cgroup 10 s later: $(pod_cgroup_procs "$forced_uid" | paste -sd' ')"
t_stop=$(since "$t")
pass "10 forced: gone from the API in ${t_del}s, no process in its cgroup after ${t_stop}s"

# ---- 11. drain -------------------------------------------------------------------------
sleeper drain1
mkpod drain2 Always 5 <<'EOF'
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'trap "exit 0" TERM; while :; do sleep 0.2; done']
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  volumes: [{name: scratch, emptyDir: {}}]
EOF
wait_running drain1
wait_running drain2
t=$(now)
k drain "$NODE" --ignore-daemonsets --delete-emptydir-data --force --timeout=60s >"$tmp/drain.out" 2>&1 ||
        fail "drain failed: $(tail -3 "$tmp/drain.out")"
t_drain=$(since "$t")
gone drain1 && gone drain2 || fail "drain: pods still there: $(k get pods --no-headers | paste -sd';')"
grep -q 'evicted' "$tmp/drain.out" || fail "drain: no eviction reported: $(cat "$tmp/drain.out")"
[ "$(k get node "$NODE" --no-headers | awk '{print $2}')" = Ready,SchedulingDisabled ] ||
        fail "drain: node STATUS '$(k get node "$NODE" --no-headers | awk '{print $2}')'"
k uncordon "$NODE" >/dev/null || fail "uncordon failed"
[ "$(k get node "$NODE" --no-headers | awk '{print $2}')" = Ready ] || fail "uncordon: node not Ready"
pass "11 drain: both pods evicted and gone in ${t_drain}s, Ready,SchedulingDisabled, uncordoned"

# ---- 12. apiserver restarted while a pod exits --------------------------------------
mkpod outage Never <<'EOF'
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'echo started; sleep 3; echo done; exit 0']
EOF
wait_running outage
outage_uid=$(pj outage '{.metadata.uid}')
started=$(pj outage '{.status.containerStatuses[0].state.running.startedAt}')
token_before=$(cat "$data/node.token")
stop_standin
poll 10 eval 'pod_log outage "$outage_uid" main | qgrep "stdout F done"' || fail "outage: the container did not finish"
sleep 1 # the exit is noticed while the stand-in is down
start_standin
[ "$(cat "$data/node.token")" = "$token_before" ] ||
        fail "stand-in: node.token changed across the restart: $data/node.kubeconfig is stale for the agent"
k wait --for=jsonpath='{.status.phase}'=Succeeded pod/outage --timeout=40s >/dev/null ||
        fail "outage: not Succeeded 40 s after the restart (phase $(pj outage '{.status.phase}'))"
got=$(pj outage '{.status.containerStatuses[0].restartCount}/{.status.containerStatuses[0].state.terminated.reason}/{.status.containerStatuses[0].state.terminated.startedAt}')
[ "$got" = "0/Completed/$started" ] || fail "outage: restartCount/reason/startedAt '$got', want 0/Completed/$started"
[ ! -e "$logs/default_outage_$outage_uid/main/1.log" ] || fail "outage: the container was restarted (1.log exists)"
k wait --for=condition=Ready "node/$NODE" --timeout=20s >/dev/null || fail "node not Ready after the restart"
pass "12 outage: Succeeded after the apiserver came back, not restarted, node Ready"
clear_pods

# ---- 13. 110 pods at once (maxPods) ----------------------------------------------------------------
many=110
for i in $(seq 1 $many); do
        cat <<EOF
---
apiVersion: v1
kind: Pod
metadata: {name: many-$i, namespace: default, labels: {batch: many}}
spec:
  nodeName: $NODE
  terminationGracePeriodSeconds: 3
  containers: [{name: main, image: busybox:1.36, command: [sleep, "3600"]}]
EOF
done >"$tmp/many.yaml"
count_phase() { k get pods -l batch=many -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' 2>/dev/null | grep -c "^$1$"; }
t=$(now)
k create -f "$tmp/many.yaml" >/dev/null || fail "many: kubectl create failed"
poll 180 eval '[ "$(count_phase Running)" -eq $many ]' || fail "many: only $(count_phase Running)/$many Running after 180 s"
t_run=$(since "$t")
# The local endpoint: health, the node's pods, metrics and timelines.
# /pods and /timelines need the agent's token; /healthz and /metrics are open.
ep() { curl -fsS -H "Authorization: Bearer $(cat "$root/endpoint.token")" "http://127.0.0.1:$hport/$1"; }
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$hport/pods")
[ "$code" = 401 ] || fail "endpoint: /pods without the token answered $code, want 401 (anyone on loopback, a hostNetwork pod too, would read every pod's env)"
[ "$(stat -c %a "$root/endpoint.token")" = 600 ] || fail "endpoint: endpoint.token is mode $(stat -c %a "$root/endpoint.token"), want 600"
[ "$(ep healthz)" == "ok" ] || fail "endpoint: /healthz did not answer ok"
n_ep=$(ep pods | jq '[.items[] | select(.metadata.labels.batch == "many" and .status.phase == "Running")] | length')
[ "$n_ep" == $many ] || fail "endpoint: /pods shows $n_ep of the $many pods Running"
metrics=$(ep metrics)
grep -q "^cubelet_pods{phase=\"Running\"} $many\$" <<<"$metrics" ||
        fail "endpoint: /metrics lacks cubelet_pods{phase=\"Running\"} $many"
started=$(sed -n 's/^cubelet_pod_step_duration_seconds_count{step="containerStarted"} //p' <<<"$metrics")
[ "${started:-0}" -ge $many ] || fail "endpoint: containerStarted observed ${started:-0} times, want >= $many"
p_sum=$(sed -n 's/^cubelet_pod_step_duration_seconds_sum{step="containerStarted"} //p' <<<"$metrics")
ep timelines | jq -e '.pods[] | select(.name == "many-1") | [.timeline[].step] |
        index("containerStarted:main") and index("phase:Running")' >/dev/null ||
        fail "endpoint: /timelines lacks many-1's steps"
if curl -fsS "http://127.0.0.1:$hport/nosuch" >/dev/null 2>&1; then fail "endpoint: /nosuch answered"; fi
# A pod is decoded once per object received (issue 12): five more
# MODIFIED events of many-1 move both counters alike, and every pod object
# this agent received (events and list items) was decoded exactly once.
counter() { ep metrics | sed -n "s/^$1 //p"; }
r0=$(counter cubelet_pod_objects_received_total)
for i in 1 2 3 4 5; do k annotate --overwrite pod many-1 "decode-check=$i" >/dev/null || fail "decode: annotate"; done
poll 30 eval '[ "$(ep pods | jq -r ".items[] | select(.metadata.name == \"many-1\") | .metadata.annotations[\"decode-check\"]")" = 5 ]' ||
        fail "decode: the fifth annotation never reached the agent"
# both from one scrape: events keep arriving between two
m=$(ep metrics)
received=$(sed -n 's/^cubelet_pod_objects_received_total //p' <<<"$m")
decoded=$(sed -n 's/^cubelet_pod_decodes_total //p' <<<"$m")
[ $((received - r0)) -ge 5 ] || fail "decode: $((received - r0)) pod objects received for 5 annotations"
[ "$decoded" = "$received" ] || fail "decode: $decoded pod decodes for $received pod objects received, want one each"
pass "decode once: $received pod objects received, $decoded decoded"
pass "endpoint: /healthz, /pods ($many Running), /metrics (mean worker start -> container started $(awk -v s="$p_sum" -v n="$started" 'BEGIN { printf "%.3f", s / n }')s over $started), /timelines"
t=$(now)
k delete pods -l batch=many --wait=false >/dev/null || fail "many: kubectl delete failed"
poll 180 eval '[ -z "$(k get pods -l batch=many -o name 2>/dev/null)" ]' ||
        fail "many: $(k get pods -l batch=many -o name | wc -l) pods left 180 s after delete"
t_gone=$(since "$t")
pass "13 $many pods Running in ${t_run}s, all gone ${t_gone}s after delete (grace 3)"

# ---- 14. the agent SIGKILLed and restarted: re-adoption -----------------------------------
# A running container keeps running (same containerID, no restart); one that
# exits while the agent is down has its exit reported; a pod deleted while
# the agent is down is stopped after the restart.
cat >"$tmp/adopt.yaml" <<EOF
---
apiVersion: v1
kind: Pod
metadata: {name: adopt, namespace: default}
spec:
  nodeName: $NODE
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  containers:
  - {name: long, image: busybox:1.36, command: [sh, -c, 'trap "exit 0" TERM; while :; do sleep 0.2; done']}
  - {name: quick, image: busybox:1.36, command: [sh, -c, 'sleep 3; exit 5']}
---
apiVersion: v1
kind: Pod
metadata: {name: orphan, namespace: default}
spec:
  nodeName: $NODE
  terminationGracePeriodSeconds: 2
  containers:
  - {name: main, image: busybox:1.36, command: [sh, -c, 'trap "exit 0" TERM; while :; do sleep 0.2; done']}
---
apiVersion: v1
kind: Pod
metadata: {name: stray, namespace: default}
spec:
  nodeName: $NODE
  terminationGracePeriodSeconds: 2
  containers:
  - {name: main, image: busybox:1.36, command: [sh, -c, 'trap "exit 0" TERM; while :; do sleep 0.2; done']}
EOF
k create -f "$tmp/adopt.yaml" >/dev/null || fail "adopt: kubectl create failed"
k wait --for=jsonpath='{.status.phase}'=Running pod/adopt pod/orphan pod/stray --timeout=60s >/dev/null ||
        fail "adopt: pods not Running"
cid() { k get pod adopt -o jsonpath="{.status.containerStatuses[?(@.name==\"$1\")].containerID}"; }
long_before=$(cid long)
orphan_uid=$(k get pod orphan -o jsonpath='{.metadata.uid}')
kill -KILL "$agent_pid"
wait "$agent_pid" 2>/dev/null || true
k delete pod orphan --grace-period=0 --force >/dev/null 2>&1 || true
# stray: its running container is erased from its worker.json (a container
# made and never recorded, or by an older agent): the restart's sweep must
# stop it and remove it, off the loop, while its pod gets a new one.
stray_uid=$(k get pod stray -o jsonpath='{.metadata.uid}')
stray_cid=$(k get pod stray -o jsonpath='{.status.containerStatuses[0].containerID}')
stray_cid=${stray_cid#cubelet://}
stray_pid=$(jq -r .pid "$root/containers/$stray_cid/state.json" 2>/dev/null || true)
wj=$root/pods/$stray_uid/worker.json
{ [ -n "$stray_cid" ] && [ "${stray_pid:-0}" -gt 0 ] && kill -0 "$stray_pid" &&
        jq -c 'del(.containers[0].id, .containers[0].pendingId)' "$wj" >"$wj.new" && mv "$wj.new" "$wj"; } ||
        fail "stray: cannot prepare the unrecorded container (cid '$stray_cid', pid '$stray_pid')"
sleep 4 # quick exits (after 3 s) while the agent is down
run_agent
poll 30 eval '[ "$(k get pod adopt -o jsonpath="{.status.containerStatuses[?(@.name==\"quick\")].state.terminated.exitCode}")" == 5 ]' ||
        fail "adopt: quick's exit 5 (while the agent was down) was not reported"
[ "$(cid long)" == "$long_before" ] || fail "adopt: long was replaced ($long_before -> $(cid long))"
[ "$(k get pod adopt -o jsonpath='{.status.containerStatuses[?(@.name=="long")].restartCount}')" == 0 ] ||
        fail "adopt: long was restarted"
[ "$(k get pod adopt -o jsonpath='{.status.containerStatuses[?(@.name=="long")].ready}')" == true ] ||
        fail "adopt: long not ready after the restart"
poll 20 eval '[ -z "$(find /sys/fs/cgroup/memory/"$cgroot" -type d -name "pod$orphan_uid" 2>/dev/null)" ]' ||
        fail "adopt: the pod deleted while the agent was down was not cleaned up"
poll 20 eval '! kill -0 "$stray_pid" 2>/dev/null && [ ! -e "$root/containers/$stray_cid" ]' ||
        fail "stray: the unrecorded container $stray_cid (pid $stray_pid) was not stopped and removed"
grep -q "container $stray_cid runs but belongs to no pod: stopping it" "$tmp/agent.log" ||
        fail "stray: no log of the unrecorded container's stop"
grep -q "removed container $stray_cid, which belonged to no pod" "$tmp/agent.log" ||
        fail "stray: no log of the unrecorded container's removal"
stray_now() {
        local c
        c=$(k get pod stray -o jsonpath='{.status.containerStatuses[0].containerID}')
        [ -n "$c" ] && [ "$c" != "cubelet://$stray_cid" ] && [ -e "$root/containers/${c#cubelet://}" ]
}
poll 20 stray_now || fail "stray: no new container after the unrecorded one was removed"
pass "14 agent SIGKILLed: running container adopted (same ID, 0 restarts), exit during the outage reported, deleted pod cleaned up, an unrecorded running container stopped and removed"
k delete pod adopt stray --wait=true --timeout=30s >/dev/null 2>&1 || fail "adopt: delete"

# ---- 15. the agent SIGKILLed while it starts pods ----------------------------------------
# Killed as soon as the first sandbox exists, while the other pods are being
# pulled, networked or started: after the restart every pod runs exactly one
# container (none lost, none doubled), with one IP and one veth each.
n15=12
for i in $(seq 1 $n15); do
        cat <<EOF
---
apiVersion: v1
kind: Pod
metadata: {name: mid-$i, namespace: default, labels: {batch: mid}}
spec:
  nodeName: $NODE
  terminationGracePeriodSeconds: 2
  containers: [{name: main, image: busybox:1.36, command: [sleep, "3600"]}]
EOF
done >"$tmp/mid.yaml"
k create -f "$tmp/mid.yaml" >/dev/null || fail "mid: kubectl create failed"
poll 30 eval '[ -n "$(ls "$root/sandboxes" 2>/dev/null)" ]' || fail "mid: no sandbox was ever made"
kill -KILL "$agent_pid"
wait "$agent_pid" 2>/dev/null || true
at_kill="$(ls "$root/sandboxes" 2>/dev/null | wc -l) sandboxes, $(ls "$root/containers" 2>/dev/null | wc -l) containers"
run_agent
mid_running() { k get pods -l batch=mid -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' 2>/dev/null | grep -c '^Running$'; }
poll 90 eval '[ "$(mid_running)" -eq $n15 ]' || fail "mid: only $(mid_running)/$n15 Running 90 s after the restart"
restarts=$(k get pods -l batch=mid -o jsonpath='{range .items[*]}{.status.containerStatuses[0].restartCount}{"\n"}{end}' | sort -u | paste -sd,)
[ "$restarts" == 0 ] || fail "mid: restart counts $restarts, want all 0"
for uid in $(k get pods -l batch=mid -o jsonpath='{.items[*].metadata.uid}'); do
        pod_cg=$(find /sys/fs/cgroup/memory/"$cgroot" -type d -name "pod$uid" 2>/dev/null | head -1)
        [ -n "$pod_cg" ] || { fail "mid: pod $uid has no cgroup"; continue; }
        n_ctr=$(find "$pod_cg" -mindepth 1 -maxdepth 1 -type d | wc -l)
        n_proc=0 # the workload's processes ("sleep 3600") anywhere in the pod's cgroups
        for pid in $(find "$pod_cg" -name cgroup.procs -exec cat {} +); do
                [ "$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" == "sleep 3600 " ] && n_proc=$((n_proc + 1))
        done
        [ "$n_ctr" -eq 1 ] && [ "$n_proc" -eq 1 ] ||
                fail "mid: pod $uid has $n_ctr container cgroups and $n_proc workload processes, want 1 and 1"
done
# Every pod on the node (the mid-* ones and any other) has one of each.
n_node=$(k get pods -A --field-selector "spec.nodeName=$NODE" -o name | wc -l)
mid_ips=$(ls "$tmp/ipam/$cni_name" 2>/dev/null | grep -c -v -e lock -e last_reserved)
mid_veths=$(ip -o link show master "$bridge" 2>/dev/null | wc -l)
[ "$mid_ips" -eq "$n_node" ] && [ "$mid_veths" -eq "$n_node" ] ||
        fail "mid: $mid_ips IP allocations and $mid_veths veths for $n_node pods"
[ "$(ls "$root/sandboxes" | wc -l)" -eq "$n_node" ] || fail "mid: $(ls "$root/sandboxes" | wc -l) sandboxes for $n_node pods"
pass "15 agent SIGKILLed mid-start (at the kill: $at_kill): all $n15 Running, 1 container, 1 IP, 1 veth each, 0 restarts"
k delete pods -l batch=mid --wait=true --timeout=60s >/dev/null 2>&1 || fail "mid: delete"

# ---- nothing left behind ----------------------------------------------------------------
clear_pods
poll 15 eval '[ -z "$(find /sys/fs/cgroup/memory/"$cgroot" -type d -name "pod*" 2>/dev/null)" ]' ||
        fail "pod cgroups left: $(find /sys/fs/cgroup/memory/"$cgroot" -type d -name 'pod*' | head -3)"
left_behind() {
        ls "$root/sandboxes" "$root/containers" 2>/dev/null | grep -v -e '^$' -e ':$'
        ls "$tmp/ipam/$cni_name" 2>/dev/null | grep -v -e lock -e last_reserved
        ip -o link show master "$bridge" 2>/dev/null
}
poll 10 eval '[ -z "$(left_behind)" ]' || fail "left behind after all pods are gone: $(left_behind | head -5 | paste -sd' ')"
kill -0 "$agent_pid" 2>/dev/null || fail "the agent died"
# A clean stop; under -DCUBELET_SANITIZE=ON also no sanitizer report.
stop_agent 10
sanitizer_findings "$tmp/agent.log" || fail "sanitizer reports in the agent log"
# Restarts (sections 4, 5) and teardowns removed containers, none on the
# event loop (the agent logs one as a bug: worker_jobs.c pw_container_remove).
if grep -q 'removed on the event loop' "$tmp/agent.log"; then
        fail "a container removal ran on the event loop: $(grep -m1 'removed on the event loop' "$tmp/agent.log")"
fi

finish
