#!/usr/bin/env bash
# The demo: installs what is missing, builds cubelet, then
#  1. asks `cubelet inspect` — with no cluster — what a small, tainted,
#     nearly full node would do with sample pods (admission decisions, QoS
#     classes, toleration verdicts, cgroup plans);
#  2. (as root) starts a local control plane (the stand-in apiserver on a
#     real etcd), a loopback image registry holding a busybox image, a CNI
#     bridge, and cubelet as node "demo-node"; applies sample pods with
#     kubectl — one that succeeds, one that fails, one that crash-loops,
#     one that exceeds its memory limit, one rejected by admission and one
#     evicted by a NoExecute taint the script adds — and prints each pod's
#     phase transitions live, with the time since it was created.
# Everything is cleaned up on exit or Ctrl-C.
set -euo pipefail
# cubelet mounts no projected volumes yet (issue 14), so the stand-in's
# ServiceAccount admission (the kube-api-access-* volume) stays off here;
# Node authorization and NodeRestriction stay on.
export CUBELET_STANDIN_DISABLE_ADMISSION_PLUGINS=${CUBELET_STANDIN_DISABLE_ADMISSION_PLUGINS-ServiceAccount}

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target cubelet >/dev/null
cubelet=$top/build/agent/cubelet
demo=scripts/demo

bold() { printf '\n\033[1m%s\033[0m\n' "$*"; }

# ---- 1. inspect ----------------------------------------------------------------
bold "Part 1: what would node worker-1 do with these pods? (cubelet inspect, no cluster)"
echo "worker-1: taints dedicated=batch:NoExecute, unreachable:NoExecute, maintenance:NoSchedule;"
echo "allocatable 1900m CPU / 3996Mi; running db-0 (1 CPU, 2Gi), proxy-7c9f (500m, hostPort 8080/TCP)."
echo
for pod in "$demo"/pod-*.yaml; do
  name=$(basename "$pod" .yaml)
  set +e
  out=$("$cubelet" inspect "$pod" --node "$demo/node.yaml" --running "$demo/running.yaml" 2>&1)
  rc=$?
  set -e
  if [ $rc -eq 2 ]; then
    printf '%-24s does not decode: %s\n' "$name" "${out#cubelet inspect: }"
    continue
  fi
  jq -r --arg f "$name" '
    "\($f | . + (" " * (24 - length)))" + "\(.qosClass | . + (" " * (11 - length)))" +
    (if .admission.admitted then "admitted" else "REJECTED \(.admission.reason): \(.admission.statusMessage)" end)' <<<"$out"
done
echo
echo "The cgroup plan of report-gen (Guaranteed):"
"$cubelet" inspect "$demo/pod-batch-guaranteed.yaml" --node "$demo/node.yaml" \
  --running "$demo/running.yaml" | jq -c '.cgroups.pod | {path, v1, v2}'

if [ "$(id -u)" -ne 0 ]; then
  bold "Part 2 needs root (namespaces, cgroups, CNI): run scripts/demo.sh as root to see pods run."
  exit 0
fi

# ---- 2. a live node --------------------------------------------------------------
bold "Part 2: a live node on a local control plane"
tmp=$(mktemp -d /tmp/cubelet-demo.XXXXXX)
node=demo-node
cgroot=cubelet-demo
bridge=cbdemo0
pids=()
cleanup() {
  set +e
  echo
  echo "cleaning up..."
  if [ -n "${KUBECONFIG:-}" ] && [ -n "${cubelet_pid:-}" ] && kill -0 "$cubelet_pid" 2>/dev/null; then
    kubectl delete pods --all --grace-period=1 --wait=true --timeout=30s >/dev/null 2>&1
  fi
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  for h in /sys/fs/cgroup/*/"$cgroot"; do
    [ -d "$h" ] || continue
    find "$h" -depth -type d | while read -r d; do
      for p in $(cat "$d/cgroup.procs" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    done
  done
  sleep 0.3
  grep " $tmp" /proc/self/mountinfo | awk '{print $5}' | sort -r | xargs -r -n1 umount -l 2>/dev/null
  for h in /sys/fs/cgroup/*/"$cgroot"; do [ -d "$h" ] && find "$h" -depth -type d -exec rmdir {} \; 2>/dev/null; done
  ip link del "$bridge" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "- control plane: stand-in apiserver on a real etcd"
tests/apiserver/run.sh --data "$tmp/api" --node-name "$node" >"$tmp/apiserver.log" 2>&1 &
pids+=($!)
for _ in $(seq 150); do grep -q '^ready' "$tmp/apiserver.log" && break; sleep 0.2; done
grep -q '^ready' "$tmp/apiserver.log" || { cat "$tmp/apiserver.log"; exit 1; }
export KUBECONFIG=$tmp/api/admin.kubeconfig

echo "- image registry on loopback with a busybox image built from Debian's busybox-static"
bash tests/images/build-busybox.sh "$tmp/img" >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
reg=127.0.0.1:$port
printf 'version: 0.1\nlog: {level: error}\nstorage: {filesystem: {rootdirectory: %s}}\nhttp: {addr: %s}\n' \
  "$tmp/registry" "$reg" >"$tmp/registry.yml"
docker-registry serve "$tmp/registry.yml" >"$tmp/registry.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -fsS "http://$reg/v2/" >/dev/null 2>&1 && break; sleep 0.1; done
echo '{"default": [{"type": "insecureAcceptAnything"}]}' >"$tmp/policy.json"
skopeo --policy "$tmp/policy.json" copy -q --dest-tls-verify=false "oci:$tmp/img/layout:1.36" \
  "docker://$reg/busybox:1.36"

echo "- CNI: bridge $bridge, 10.99.0.0/24, portmap"
mkdir -p "$tmp/cni"
cat >"$tmp/cni/10-demo.conflist" <<EOF
{"cniVersion":"1.0.0","name":"cubelet-demo","plugins":[
 {"type":"bridge","bridge":"$bridge","isGateway":true,"ipMasq":false,
  "ipam":{"type":"host-local","ranges":[[{"subnet":"10.99.0.0/24"}]],"dataDir":"$tmp/ipam"}},
 {"type":"portmap","capabilities":{"portMappings":true}}]}
EOF

hport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
echo "- cubelet as node $node (crash-loop backoff shortened to 2s..8s for the demo; endpoint 127.0.0.1:$hport)"
"$cubelet" -v 1 --root-dir "$tmp/root" --cni-conf-dir "$tmp/cni" --kubeconfig "$tmp/api/node.kubeconfig" \
  --hostname-override "$node" --node-ip 10.99.0.1 --pod-logs-dir "$tmp/logs" --cgroup-root "$cgroot" \
  --insecure-registry "$reg" --crash-loop-backoff-base 2 --crash-loop-backoff-max 8 \
  --node-status-update-frequency 2s --healthz-port "$hport" >"$tmp/cubelet.log" 2>&1 &
cubelet_pid=$!
pids+=("$cubelet_pid")
kubectl wait --for=condition=Ready "node/$node" --timeout=30s >/dev/null
kubectl get nodes -o wide
token=$(cat "$tmp/root/endpoint.token")
echo
echo "The live timeline page (every pod a row, pushed as it happens; open it in a browser on this machine):"
echo "  http://127.0.0.1:$hport/ui?token=$token"
echo "In a terminal: $cubelet --root-dir $tmp/root timeline -w"

bold "Applying the sample pods; phase transitions as they happen (seconds since creation):"
sed "s|IMAGE|$reg/busybox:1.36|" "$demo/pods-live.yaml" | kubectl apply -f - >/dev/null
start=$(date +%s%3N)
declare -A seen
# One line per change of a pod's phase or STATUS column.
kubectl get pods --watch --output-watch-events -o json 2>/dev/null | jq --unbuffered -r '
  .object as $p | $p.status as $s |
  ([$s.containerStatuses[]?.state | (.waiting.reason // .terminated.reason // empty)] | first) as $why |
  "\($p.metadata.name) \($s.phase // "-") \($s.reason // $why // "-") \($p.metadata.creationTimestamp)"' |
  while read -r name phase why _; do
    # (a bash loop, not awk: Debian's mawk reads its input in blocks)
    [ "${seen[$name]:-}" == "$phase $why" ] && continue
    seen[$name]="$phase $why"
    ms=$(($(date +%s%3N) - start))
    printf '  %4d.%ds  %-11s %-10s %s\n' $((ms / 1000)) $((ms % 1000 / 100)) "$name" "$phase" "${why/#-/}"
  done &
watch_pid=$!
pids+=("$watch_pid")

kubectl wait --for=jsonpath='{.status.phase}'=Running pod/evicted --timeout=60s >/dev/null
sleep 2
bold "Tainting $node with demo/maintenance:NoExecute (evicted tolerates it for 5s)"
kubectl taint nodes "$node" demo/maintenance=true:NoExecute >/dev/null
for _ in $(seq 60); do kubectl get pod evicted >/dev/null 2>&1 || break; sleep 0.5; done
sleep 8
kill "$watch_pid" 2>/dev/null || true

bold "kubectl get pods -o wide"
kubectl get pods -o wide
bold "Events (kubectl get events)"
kubectl get events --sort-by=.lastTimestamp | tail -25
bold "cubelet's phase-transition timelines (cubelet timeline; the page: http://127.0.0.1:$hport/ui?token=$token)"
# Each step's offset from the pod's worker start, the time since the step
# before with a bar, and the phases; then the evicted pod with its history:
# each status PATCH as a diff, the taint and the deletionTimestamp.
"$cubelet" --root-dir "$tmp/root" timeline --history=false
bold "The evicted pod with what each status change changed (cubelet timeline evicted)"
"$cubelet" --root-dir "$tmp/root" timeline evicted
echo "As a trace for Perfetto (ui.perfetto.dev) or chrome://tracing: $cubelet --root-dir $tmp/root timeline -o trace >pods.trace.json"
echo
echo "Step latency histograms: curl http://127.0.0.1:$hport/metrics | grep cubelet_pod_step"
bold "The crash-looping pod, as kubectl describe shows it"
kubectl describe pod crashloops | sed -n '/^Status:/p;/State:/,/Restart Count:/p;/^Events:/,$p' | head -30
echo
echo "cubelet's log: $tmp/cubelet.log (removed on exit); press Enter to clean up"
[ -t 0 ] && read -r _ || true
