#!/usr/bin/env bash
# Drives the real `cubelet inspect` binary over the fixtures and the demo's
# sample node, and checks the decisions, reasons, messages, QoS classes,
# toleration verdicts and cgroup plans it prints, plus its error paths.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
need_tools jq
harness_init inspect
demo=$SOURCE_DIR/scripts/demo

# inspect POD [extra args] -> sets out and rc
inspect() {
  set +e
  out=$("$CUBELET" inspect "$@" 2>"$tmp/stderr")
  rc=$?
  set -e
  err=$(cat "$tmp/stderr")
}

# expect_eq DESCRIPTION JQ-FILTER EXPECTED  (against $out)
expect_eq() {
  local got
  got=$(jq -r "$2" <<<"$out" 2>&1) || got="<jq error: $got>"
  [ "$got" == "$3" ] || fail "$1: $2 = '$got', want '$3'"
}

on_demo_node() { inspect "$demo/$1" --node "$demo/node.yaml" --running "$demo/running.yaml"; }

# --- admission on the demo node -------------------------------------------
on_demo_node pod-batch-guaranteed.yaml
[ $rc -eq 0 ] || fail "batch: exit $rc, want 0 ($err)"
expect_eq batch .admission.admitted true
expect_eq batch .qosClass Guaranteed
expect_eq batch '.node.used.cpu' 1500m
expect_eq batch '.node.used.pods' 2
expect_eq batch '.tolerations[0].tolerated' true
expect_eq batch '.tolerations[1].tolerationSeconds' 300
expect_eq batch '.noExecute.action' evictAfter
expect_eq batch '.noExecute.afterSeconds' 300
expect_eq batch '.cgroups.pod.path' kubepods/pod0b7a8c1e-1111-4b5e-8f00-0123456789ab
expect_eq batch '.cgroups.pod.v1["cpu.shares"]' 256
expect_eq batch '.cgroups.pod.v1["cpu.cfs_quota_us"]' 25000
expect_eq batch '.cgroups.pod.v2["cpu.max"]' "25000 100000"
expect_eq batch '.cgroups.pod.v2["cpu.weight"]' 35
expect_eq batch '.cgroups.pod.v2["memory.max"]' 268435456
expect_eq batch '.cgroups.containers[0].oomScoreAdj' -997

on_demo_node pod-too-much-cpu.yaml
[ $rc -eq 1 ] || fail "too-much-cpu: exit $rc, want 1"
expect_eq cpu .admission.reason OutOfcpu
expect_eq cpu .admission.message "Node didn't have enough resource: cpu, requested: 500, used: 1500, capacity: 1900"
expect_eq cpu .admission.statusMessage "Pod was rejected: Node didn't have enough resource: cpu, requested: 500, used: 1500, capacity: 1900"
expect_eq cpu .qosClass Burstable
# Burstable: no quota on the pod unless every container has a cpu limit;
# memory limit because every container has one.
expect_eq cpu '.cgroups.pod.path' kubepods/burstable/pod0b7a8c1e-2222-4b5e-8f00-0123456789ab
expect_eq cpu '.cgroups.pod.v1["cpu.cfs_quota_us"] // "unset"' unset
expect_eq cpu '.cgroups.pod.v1["memory.limit_in_bytes"]' 536870912
# 1000 - 1000*128Mi/4Gi = 969
expect_eq cpu '.cgroups.containers[0].oomScoreAdj' 969

on_demo_node pod-untolerated.yaml
[ $rc -eq 1 ] || fail "untolerated: exit $rc"
expect_eq taint .admission.reason TaintToleration
expect_eq taint .admission.message "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"
expect_eq taint '.tolerations[0].tolerated' false
expect_eq taint '.noExecute.action' evictNow
expect_eq taint '.noExecute.untoleratedTaint' dedicated
expect_eq taint .qosClass BestEffort
expect_eq taint '.cgroups.pod.path' kubepods/besteffort/pod0b7a8c1e-3333-4b5e-8f00-0123456789ab
expect_eq taint '.cgroups.pod.v1["cpu.shares"]' 2
expect_eq taint '.cgroups.containers[0].oomScoreAdj' 1000

on_demo_node pod-needs-ssd.yaml
expect_eq affinity .admission.reason NodeAffinity
expect_eq affinity .admission.message "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"

on_demo_node pod-hostport-clash.yaml
expect_eq ports .admission.reason NodePorts
expect_eq ports .admission.message "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"

on_demo_node pod-besteffort-udp.yaml
[ $rc -eq 0 ] || fail "udp 8080 should not clash with tcp 8080 (exit $rc)"
expect_eq udp '.pod.containers[0].hostPorts[0]' 8080/UDP

on_demo_node pod-wrong-node.yaml
expect_eq nodename .admission.reason NodeName
expect_eq nodename .admission.message "Predicate NodeName failed: node(s) didn't match the requested node name"

# Without the running pods the cpu-hungry pod fits.
inspect "$demo/pod-too-much-cpu.yaml" --node "$demo/node.yaml"
[ $rc -eq 0 ] || fail "too-much-cpu on an empty node: exit $rc, want 0"

# A pod asking for exactly what is left fits; one millicore more does not.
sed 's/cpu: 500m, memory: 128Mi/cpu: 400m, memory: 128Mi/' "$demo/pod-too-much-cpu.yaml" >"$tmp/exact.yaml"
on_exact() { inspect "$tmp/exact.yaml" --node "$demo/node.yaml" --running "$demo/running.yaml"; }
on_exact
expect_eq exact .admission.admitted true
sed -i 's/cpu: 400m/cpu: 401m/' "$tmp/exact.yaml"
on_exact
expect_eq exact+1 .admission.message "Node didn't have enough resource: cpu, requested: 401, used: 1500, capacity: 1900"

# --- fixtures decode and get a verdict against this machine ------------------
for f in "$FIXTURES"/pods/*.yaml "$FIXTURES"/pods/*.json "$FIXTURES"/pod-status/pod-*.yaml; do
  inspect "$f"
  if [ $rc -eq 2 ]; then fail "$(basename "$f"): does not decode: $err"; continue; fi
  jq -e '.qosClass and (.admission.admitted|type=="boolean") and .cgroups.pod.path' <<<"$out" >/dev/null \
    || fail "$(basename "$f"): incomplete output"
done
inspect "$FIXTURES/pods/pod-guaranteed-cpu-integer-quantity.yaml"
expect_eq guaranteed-int .qosClass Guaranteed
expect_eq guaranteed-int '.requests.cpu' 1
expect_eq guaranteed-int '.requests.memory' 250000Ki # 256M, printed canonically in binary units
inspect "$FIXTURES/pods/website-pod-cpu-request-limit-decimal.yaml"
expect_eq decimal '.requests.cpu' 500m
expect_eq decimal '.cgroups.containers[0].v2["cpu.max"]' "100000 100000"
inspect "$FIXTURES/pod-status/pod-running-restarted-besteffort.yaml"
expect_eq besteffort .qosClass BestEffort
inspect "$FIXTURES/pods/daemonset-nodeaffinity-exists-tolerations-exists-privileged.yaml"
expect_eq daemonset-template '.pod.containers[0].requests.cpu' 50m

# pod-level spec.resources (PodLevelResources, 1.34+), as the minikube v1.35
# e2e-deployment pod has them: the pod's requests and its cgroup are the
# pod-level values, the container's cgroup its own limits; a second
# container without limits gets the pod-level ones for its cgroup
cat >"$tmp/podlevel.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: e2e-deployment, namespace: scraper, uid: 6a0c2f4e-3333-4b5e-8f00-0123456789ab}
spec:
  resources:
    limits: {cpu: 100m, memory: 40Mi}
    requests: {cpu: 50m, memory: 20Mi}
  containers:
  - name: compute-pi-digits
    image: perl:5.34.0
    resources:
      limits: {cpu: 80m, memory: 30Mi}
      requests: {cpu: 40m, memory: 15Mi}
  - name: helper
    image: busybox:1.36
EOF
inspect "$tmp/podlevel.yaml"
[ $rc -le 1 ] || fail "podlevel: exit $rc ($err)"
expect_eq podlevel .qosClass Burstable
expect_eq podlevel '.requests.cpu' 50m
expect_eq podlevel '.requests.memory' 20Mi
expect_eq podlevel '.cgroups.pod.path' kubepods/burstable/pod6a0c2f4e-3333-4b5e-8f00-0123456789ab
expect_eq podlevel '.cgroups.pod.v1["memory.limit_in_bytes"]' 41943040
expect_eq podlevel '.cgroups.pod.v1["cpu.cfs_quota_us"]' 10000
expect_eq podlevel '.cgroups.pod.v2["cpu.max"]' "10000 100000"
expect_eq podlevel '.cgroups.containers[0].v1["memory.limit_in_bytes"]' 31457280
expect_eq podlevel '.cgroups.containers[0].v2["cpu.max"]' "8000 100000"
expect_eq podlevel '.cgroups.containers[1].v1["memory.limit_in_bytes"]' 41943040
expect_eq podlevel '.cgroups.containers[1].v1["cpu.shares"]' 102

# --- error paths ------------------------------------------------------------
inspect "$demo/pod-broken.yaml"
[ $rc -eq 2 ] || fail "broken: exit $rc, want 2"
grep -q 'pod-broken.yaml: spec.containers\[1\].resources.limits.memory: invalid quantity "12XB"' <<<"$err" \
  || fail "broken: error does not name file, path and value: $err"

printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n spec: [\n' >"$tmp/bad.yaml"
inspect "$tmp/bad.yaml"
[ $rc -eq 2 ] || fail "bad yaml: exit $rc, want 2"
grep -qE 'bad.yaml: line [0-9]+, column [0-9]+' <<<"$err" || fail "bad yaml: no line/column: $err"

inspect "$tmp/does-not-exist.yaml"
[ $rc -eq 2 ] || fail "missing file: exit $rc, want 2"
grep -q 'does-not-exist.yaml' <<<"$err" || fail "missing file: error does not name it: $err"

head -c $((20 * 1024 * 1024)) /dev/zero | tr '\0' 'a' >"$tmp/huge.yaml"
inspect "$tmp/huge.yaml"
[ $rc -eq 2 ] || fail "huge file: exit $rc, want 2"
grep -q 'limit' <<<"$err" || fail "huge file: error does not mention the limit: $err"

inspect "$demo/pod-batch-guaranteed.yaml" --node "$demo/pod-broken.yaml"
[ $rc -eq 2 ] || fail "pod as node: exit $rc, want 2"

inspect
[ $rc -eq 2 ] || fail "no args: exit $rc, want 2"

finish
