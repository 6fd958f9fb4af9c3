#!/bin/bash
# The cubelet agent against the stand-in apiserver (tests/apiserver, real
# etcd): registration, node status, Lease, the pod reflector (only this
# node's pods; changes made while the agent is cut off are reconciled, by
# watch replay and, after an etcd compaction, by a 410 relist), clear
# errors for a wrong CA and a bad token, and a clean SIGTERM.
# Exit 77 when a prerequisite is missing.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
need_root
need_tools /usr/bin/etcd /usr/bin/etcdctl /usr/bin/kubectl /usr/bin/python3 openssl
need_cubelet
H_FAIL_FAST=1
NODE=test-node
harness_init agent-apiserver
K_TIMEOUT=0

# count_log PATTERN: number of matching lines.
count_log() { grep -Ec "$1" "$tmp/agent.log" || true; }
# no_dup NAME: no watch event of pod NAME was reported twice (same event
# type and resourceVersion). The agent's own status updates add UPDATED
# events of their own, so "exactly once" only holds for ADDED and DELETED.
no_dup() {
        local d
        d=$(grep -Eo "pod default/$1 uid=[^ ]+ (ADDED|UPDATED|DELETED) phase=[^ ]+ rv=[0-9]+" \
                "$tmp/agent.log" | awk '{print $4, $6}' | sort | uniq -d)
        [ -z "$d" ] || fail "$1: events reported twice: $d"
}

mkdir -p "$root" "$tmp/cni-noplugin"
# The agent runs the pods it is given: keep its cgroups under a private
# parent and give it a CNI network config whose plugin does not exist (the
# runtime's network counts as ready, so the node is Ready, but sandboxes
# fail and are retried, which this test does not look at); -v 3 logs each
# pod event.
echo '{"cniVersion":"1.0.0","name":"it-none","plugins":[{"type":"cubelet-it-no-such-plugin"}]}' \
        >"$tmp/cni-noplugin/10-none.conflist"
agent_common=(-v 3 --cgroup-root "$cgroot" --cni-conf-dir "$tmp/cni-noplugin" --pod-logs-dir "$logs"
        --healthz-port 0)
extra_pids=()
start_standin

# The stand-in draws new bearer tokens at every start; its certificates stay,
# so the agent that lives through restarts uses node.crt (CN
# system:node:test-node) from a kubeconfig with the PEM files inlined
# (*-data), which also covers that path.
b64() { base64 -w0 "$1"; }
cat >"$tmp/node-cert.kubeconfig" <<YAML
apiVersion: v1
kind: Config
current-context: node
clusters:
- name: standin
  cluster:
    server: $(grep -m1 'server:' "$data/node.kubeconfig" | awk '{print $2}')
    certificate-authority-data: $(b64 "$data/ca.crt")
users:
- name: node
  user:
    client-certificate-data: $(b64 "$data/node.crt")
    client-key-data: $(b64 "$data/node.key")
contexts:
- name: node
  context: {cluster: standin, user: node}
YAML
spawn_agent "${agent_common[@]}" --kubeconfig "$tmp/node-cert.kubeconfig" --hostname-override test-node \
        --root-dir "$root" --node-status-update-frequency 1s \
        --node-lease-duration-seconds 4 --watch-timeout-seconds 5 \
        --node-labels example.com/role=edge --register-with-taints dedicated=test:NoSchedule \
        --max-pods 42

# ---- registration and status ----
wait_log 'node test-node registered with the apiserver at https://127.0.0.1:[0-9]+ \(created'
jp() { k get node test-node -o jsonpath="$1"; }
[ "$(jp '{.metadata.labels.kubernetes\.io/hostname}')" = test-node ] || fail "hostname label"
[ "$(jp '{.metadata.labels.kubernetes\.io/os}')" = linux ] || fail "os label"
[ -n "$(jp '{.metadata.labels.kubernetes\.io/arch}')" ] || fail "arch label"
[ "$(jp '{.metadata.labels.example\.com/role}')" = edge ] || fail "--node-labels not applied"
[ "$(jp '{.spec.taints[0].key}={.spec.taints[0].value}:{.spec.taints[0].effect}')" = "dedicated=test:NoSchedule" ] ||
        fail "--register-with-taints not applied: $(jp '{.spec.taints}')"
[ "$(jp '{.status.capacity.pods}')" = 42 ] || fail "capacity.pods is not --max-pods"
[ "$(jp '{.status.capacity.cpu}')" = "$(nproc)" ] || fail "capacity.cpu"
cap=$(jp '{.status.capacity.memory}')
alloc=$(jp '{.status.allocatable.memory}')
memtotal=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
[ "$cap" = "${memtotal}Ki" ] || fail "capacity.memory $cap, MemTotal ${memtotal}Ki"
[ "$alloc" = "$((memtotal - 102400))Ki" ] || fail "allocatable.memory $alloc is not capacity - 100Mi"
pass "registered: labels, taints, capacity $cap, allocatable $alloc"

ip=$(jp '{.status.addresses[?(@.type=="InternalIP")].address}')
[ -n "$ip" ] && [[ "$ip" != 127.* ]] && [[ "$ip" != 169.254.* ]] || fail "InternalIP '$ip'"
[ "$(jp '{.status.addresses[?(@.type=="Hostname")].address}')" = test-node ] || fail "Hostname address"
[ "$(jp '{.status.daemonEndpoints.kubeletEndpoint.Port}')" = 10250 ] || fail "daemonEndpoints"
[ "$(jp '{.status.nodeInfo.kubeletVersion}')" = v1.32.0 ] || fail "kubeletVersion"
[[ "$(jp '{.status.nodeInfo.containerRuntimeVersion}')" == cubelet://* ]] || fail "containerRuntimeVersion"
[ "$(jp '{.status.nodeInfo.kernelVersion}')" = "$(uname -r)" ] || fail "kernelVersion"
[ "$(jp '{.status.nodeInfo.bootID}')" = "$(cat /proc/sys/kernel/random/boot_id)" ] || fail "bootID"
if [ -s /etc/machine-id ]; then
        [ "$(jp '{.status.nodeInfo.machineID}')" = "$(cat /etc/machine-id)" ] || fail "machineID"
fi
[ "$(jp '{.status.nodeInfo.operatingSystem}')" = linux ] || fail "operatingSystem"
pass "addresses (InternalIP $ip), nodeInfo, daemonEndpoints"

conds=$(jp '{range .status.conditions[*]}{.type}={.status}/{.reason}/{.message};{end}')
want="MemoryPressure=False/KubeletHasSufficientMemory/kubelet has sufficient memory available;"
want+="DiskPressure=False/KubeletHasNoDiskPressure/kubelet has no disk pressure;"
want+="PIDPressure=False/KubeletHasSufficientPID/kubelet has sufficient PID available;"
want+="Ready=True/KubeletReady/kubelet is posting ready status;"
[ "$conds" = "$want" ] || fail "conditions: $conds"
ready() { jp '{.status.conditions[?(@.type=="Ready")].'"$1"'}'; }
hb1=$(ready lastHeartbeatTime)
lt1=$(ready lastTransitionTime)
sleep 2.2
hb2=$(ready lastHeartbeatTime)
[ "$hb1" != "$hb2" ] || fail "lastHeartbeatTime did not advance ($hb1)"
[ "$lt1" = "$(ready lastTransitionTime)" ] || fail "lastTransitionTime changed without a flip"
k get nodes | qgrep -E '^test-node +Ready' || fail "kubectl get nodes does not show Ready"
pass "conditions in order, Ready=True KubeletReady, heartbeat $hb1 -> $hb2"

# ---- Lease ----
lease() { k get lease -n kube-node-lease test-node -o jsonpath="$1"; }
[ "$(lease '{.spec.holderIdentity}')" = test-node ] || fail "lease holderIdentity"
[ "$(lease '{.spec.leaseDurationSeconds}')" = 4 ] || fail "lease duration"
[ "$(lease '{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].uid}')" = \
        "Node/$(jp '{.metadata.uid}')" ] || fail "lease ownerReferences"
r1=$(lease '{.spec.renewTime}')
[[ "$r1" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{6}Z$ ]] || fail "renewTime '$r1' is not a MicroTime"
sleep 1.5
r2=$(lease '{.spec.renewTime}')
[ "$r1" != "$r2" ] || fail "lease renewTime did not advance ($r1)"
pass "lease renewed: $r1 -> $r2"

# ---- pods: only this node's ----
pod() { # name node [labels]
        k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: default}
spec:
  nodeName: $2
  containers: [{name: c, image: busybox:1.36}]
YAML
}
wait_log 'pods bound to node test-node synced: 0 pod\(s\)'
pod p-mine test-node
pod p-other other-node
wait_log 'pod default/p-mine uid=[0-9a-f-]+ ADDED phase=Pending'
sleep 1
[ "$(count_log 'p-other')" = 0 ] || fail "the agent saw another node's pod"
pass "only pods bound to test-node are seen"

# ---- cut off: changes replayed by the watch ----
# SIGSTOP keeps the agent from reconnecting while the apiserver restarts
# and the changes are made.
kill -STOP "$agent_pid"
stop_standin
extra_pids=()
start_standin
pod p-replay test-node
k label pod p-replay step=two >/dev/null
k delete pod p-replay --grace-period=0 --force >/dev/null 2>&1
pod p-kept test-node
kill -CONT "$agent_pid"
wait_log 'pod default/p-replay uid=.* DELETED' 20
wait_log 'pod default/p-kept uid=.* ADDED'
sleep 1
for ev in ADDED DELETED; do
        [ "$(count_log "pod default/p-replay uid=.* $ev")" = 1 ] || fail "p-replay $ev not logged exactly once"
done
[ "$(count_log 'pod default/p-replay uid=.* UPDATED')" -ge 1 ] || fail "p-replay: the label change was not seen"
no_dup p-replay
[ "$(count_log 'pod default/p-mine uid=.* ADDED')" = 1 ] || fail "p-mine reported twice"
no_dup p-mine
pass "changes made while cut off were replayed once each"

# ---- cut off past a compaction: 410 and relist ----
kill -STOP "$agent_pid"
stop_standin
extra_pids=()
start_standin
k delete pod p-kept --grace-period=0 --force >/dev/null 2>&1
pod p-new test-node
rev=$(ETCDCTL_API=3 etcdctl --endpoints "$(cat "$data/etcd.endpoint")" endpoint status -w json |
        python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Status"]["header"]["revision"])')
ETCDCTL_API=3 etcdctl --endpoints "$(cat "$data/etcd.endpoint")" compact "$rev" >/dev/null
kill -CONT "$agent_pid"
wait_log 'pods: the watch from resourceVersion [0-9]+ expired \(410\): relisting' 20
wait_log 'pods bound to node test-node relisted'
wait_log 'pod default/p-kept uid=.* DELETED'
wait_log 'pod default/p-new uid=.* ADDED'
sleep 1
[ "$(count_log 'pod default/p-kept uid=.* DELETED')" = 1 ] || fail "p-kept DELETED not once"
[ "$(count_log 'pod default/p-new uid=.* ADDED')" = 1 ] || fail "p-new ADDED not once"
[ "$(count_log 'pod default/p-mine uid=.* ADDED')" = 1 ] || fail "p-mine ADDED again after the relist"
no_dup p-mine
no_dup p-replay
no_dup p-new
pass "410 after compaction: relisted, deleted and new pods reconciled once"

# the agent still serves: a pod created now is seen
pod p-after test-node
wait_log 'pod default/p-after uid=.* ADDED'
pass "watch healthy after the relist"

# ---- wrong CA, bad token: clear errors, retried, the agent keeps running ----
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/other-ca.key" -out "$tmp/other-ca.crt" \
        -days 1 -subj /CN=other-ca >/dev/null 2>&1
sed "s|certificate-authority: .*|certificate-authority: $tmp/other-ca.crt|" "$data/node.kubeconfig" >"$tmp/bad-ca.kubeconfig"
sed 's|token: .*|token: not-the-token|' "$data/node.kubeconfig" >"$tmp/bad-token.kubeconfig"
grep -q other-ca.crt "$tmp/bad-ca.kubeconfig" && grep -q not-the-token "$tmp/bad-token.kubeconfig" ||
        fail "cannot build the broken kubeconfigs"
for bad in bad-ca bad-token; do
        "$CUBELET" "${agent_common[@]}" --kubeconfig "$tmp/$bad.kubeconfig" --hostname-override "$bad" \
                --root-dir "$root" >"$tmp/$bad.log" 2>&1 &
        extra_pids+=($!)
        track $!
done
sleep 3
for p in "${extra_pids[@]}"; do kill -0 "$p" 2>/dev/null || fail "an agent with a broken kubeconfig exited"; done
grep -q "x509/certificate verify failed .*: check certificate-authority in $tmp/bad-ca.kubeconfig" "$tmp/bad-ca.log" ||
        { cat "$tmp/bad-ca.log"; fail "wrong CA not reported clearly"; }
grep -q "refused the credentials (401 Unauthorized): check the token/client certificate in $tmp/bad-token.kubeconfig" "$tmp/bad-token.log" ||
        { cat "$tmp/bad-token.log"; fail "bad token not reported clearly"; }
for bad in bad-ca bad-token; do
        [ "$(grep -c 'retrying in' "$tmp/$bad.log")" -ge 3 ] || fail "$bad: not retried"
        [ "$(grep -c 'retrying in 100 ms' "$tmp/$bad.log")" -le 2 ] || fail "$bad: no backoff"
done
for p in "${extra_pids[@]}"; do
        kill -TERM "$p"
        rc=0
        wait "$p" || rc=$?
        [ "$rc" = 0 ] || fail "agent with a broken kubeconfig exited $rc on SIGTERM"
done
extra_pids=()
k get node bad-ca >/dev/null 2>&1 && fail "bad-ca registered"
pass "wrong CA and bad token reported, retried with backoff, clean stop"

# ---- SIGTERM ----
kill -TERM "$agent_pid"
rc=0
wait "$agent_pid" || rc=$?
[ "$rc" = 0 ] || fail "the agent exited $rc on SIGTERM"
pid=$agent_pid
agent_pid=""
kill -0 "$pid" 2>/dev/null && fail "the agent is still running"
grep -q 'received Terminated: shutting down' "$tmp/agent.log" || fail "no shutdown line"
# A watch cut by the etcd restarts above ends with an ERROR event on every
# reflector (pods, node, services, kube-root-ca.crt): expected, not counted.
others=$(grep '^E' "$tmp/agent.log" | grep -cv 'watch restarted: the watch stream carried an ERROR: Internal error occurred: .*transport is closing' || true)
[ "$others" -le 6 ] || { grep '^E' "$tmp/agent.log"; fail "unexpected errors in the agent log"; }
pass "SIGTERM: exit 0"

# ---- restart on an existing node: 409, GET, labels reconciled ----
: >"$tmp/agent.log" # a new log: its registration line is looked for
spawn_agent "${agent_common[@]}" --kubeconfig "$tmp/node-cert.kubeconfig" --hostname-override test-node \
        --root-dir "$root" --node-labels example.com/role=core
wait_log 'node test-node registered with the apiserver at .*existing node, labels reconciled'
[ "$(jp '{.metadata.labels.example\.com/role}')" = core ] || fail "labels not reconciled on 409"
[ "$(ready lastTransitionTime)" = "$lt1" ] || fail "lastTransitionTime not kept across a restart"
kill -TERM "$agent_pid"
rc=0
wait "$agent_pid" || rc=$?
agent_pid=""
[ "$rc" = 0 ] || fail "the restarted agent exited $rc on SIGTERM"
pass "re-registration of an existing node reconciles its labels"
finish
