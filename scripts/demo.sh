#!/usr/bin/env bash
# The demo: installs what is missing, builds cubelet, and asks it — with no
# cluster — what it would do with a set of sample pods on a small, tainted,
# nearly full node (scripts/demo/node.yaml, with the pods already running in
# scripts/demo/running.yaml): admission decisions with the kubelet's reasons
# and messages, QoS classes, per-taint toleration verdicts and cgroup plans.
# Once the pod lifecycle lands, this becomes the full demo on a local control
# plane.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target cubelet >/dev/null
cubelet=build/agent/cubelet
demo=scripts/demo

bold() { printf '\033[1m%s\033[0m\n' "$*"; }

bold "cubelet $($cubelet version | cut -d' ' -f2): what would node worker-1 do with these pods?"
echo
echo "Node: $(grep -c '^  - key' $demo/node.yaml) taints (dedicated=batch:NoExecute, unreachable:NoExecute," \
     "maintenance:NoSchedule), allocatable 1900m CPU / 3996Mi; already running: db-0 (1 CPU, 2Gi)," \
     "proxy-7c9f (500m, hostPort 8080/TCP); migrate-x2k has Succeeded."
echo

for pod in "$demo"/pod-*.yaml; do
  name=$(basename "$pod" .yaml)
  set +e
  out=$($cubelet inspect "$pod" --node "$demo/node.yaml" --running "$demo/running.yaml" 2>&1)
  rc=$?
  set -e
  if [ $rc -eq 2 ]; then
    printf '%-24s does not decode (exit 2): %s\n' "$name" "$out"
    continue
  fi
  echo "$out" | jq -r --arg f "$name" '
    "\($f | .[0:24] | . + (" " * (24 - length)))" +
    "\(.qosClass | . + (" " * (11 - length)))" +
    (if .admission.admitted then "admitted" else "REJECTED \(.admission.reason): Pod was rejected: \(.admission.message)" end)'
  echo "$out" | jq -r '.tolerations[] | select(.effect == "NoExecute") |
    "      taint \(.key)\(if .value then "=" + .value else "" end):\(.effect) -> " +
    (if .tolerated then (if .tolerationSeconds != null then "tolerated for \(.tolerationSeconds)s, then evicted" else "tolerated forever" end) else "not tolerated" end)'
done

echo
bold "The cgroup plan for report-gen (Guaranteed) on cgroup v1 and v2:"
$cubelet inspect "$demo/pod-batch-guaranteed.yaml" --node "$demo/node.yaml" \
  --running "$demo/running.yaml" | jq '.cgroups'
echo
bold "Try your own: $cubelet inspect POD.yaml [--node NODE.yaml] [--running PODLIST.yaml]"
