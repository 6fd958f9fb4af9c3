#!/usr/bin/env bash
# The demo: installs what is missing, builds cubelet, then
#  1. asks `cubelet inspect` — with no cluster — what a small, tainted,
#     nearly full node would do with sample pods (admission decisions, QoS
#     classes, toleration verdicts, cgroup plans);
#  2. (as root) starts a local control plane (the stand-in apiserver on a
#     real etcd), a loopback image registry holding a busybox image and a
#     CNI bridge; joins cubelet as node "demo-node" the way operators do
#     (a bootstrap token, a CertificateSigningRequest auto-approved and
#     signed, docs/install.md section 2); prints the address of the live
#     timeline page; applies sample pods with kubectl — one that succeeds,
#     one that fails, one that crash-loops, one that exceeds its memory
#     limit, one rejected by admission and one evicted by a NoExecute taint
#     the script adds — and prints each pod's phase changes live; at the
#     end, `cubelet timeline`: each pod's steps with how long each took.
# About 40 s once built (10 s of deps.sh and cmake finding nothing to do,
# 25 s for parts 1 and 2, 2 s of cleanup).
#
#   scripts/demo.sh          interactive: deps.sh, build, then waits for Enter
#                            before cleaning up (when stdin is a terminal)
#   scripts/demo.sh --ci     (or CUBELET_DEMO_CI=1) for tests: installs and
#                            builds nothing, runs $CUBELET (default
#                            build/agent/cubelet), never waits; exit 0 only
#                            when every pod did what it shows
#
# Part 2 uses tests/integration/lib/harness.sh, so everything it starts is
# removed on exit, a failure and Ctrl-C alike: processes by pid (the agent,
# the stand-in and its etcd, the registry, the watch), the processes in its
# cgroups, its mounts, its cgroups, the bridge and its veths, its temp dir.
set -euo pipefail
ci=${CUBELET_DEMO_CI:-0}
case ${1:-} in
--ci) ci=1 ;;
"") ;;
*)
  echo "usage: $0 [--ci]" >&2
  exit 2
  ;;
esac
# cubelet mounts no projected volumes yet (issue 14), so the stand-in's
# ServiceAccount admission (the kube-api-access-* volume) stays off here;
# Node authorization and NodeRestriction stay on.
export CUBELET_STANDIN_DISABLE_ADMISSION_PLUGINS=${CUBELET_STANDIN_DISABLE_ADMISSION_PLUGINS-ServiceAccount}

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
if [ "$ci" != 1 ]; then
  bash scripts/deps.sh
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build -j"$(nproc)" --target cubelet cubelet-monitor >/dev/null
  CUBELET=$top/build/agent/cubelet
fi
export CUBELET=${CUBELET:-$top/build/agent/cubelet} SOURCE_DIR=$top
[ -x "$CUBELET" ] || { echo "demo: no cubelet binary at $CUBELET (build it, or set CUBELET)" >&2; exit 1; }
cubelet=$CUBELET
demo=scripts/demo
t_start=$(date +%s)

bold() { printf '\n\033[1m%s\033[0m\n' "$*"; }

# ---- 1. inspect ----------------------------------------------------------------
bold "Part 1: what would node worker-1 do with these pods? (cubelet inspect, no cluster)"
echo "worker-1: taints dedicated=batch:NoExecute, unreachable:NoExecute, maintenance:NoSchedule;"
echo "allocatable 1900m CPU / 3996Mi; running db-0 (1 CPU, 2Gi), proxy-7c9f (500m, hostPort 8080/TCP)."
echo
for pod in "$demo"/pod-*.yaml; do
  name=$(basename "$pod" .yaml)
  rc=0
  out=$("$cubelet" inspect "$pod" --node "$demo/node.yaml" --running "$demo/running.yaml" 2>&1) || rc=$?
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
. "$top/tests/integration/lib/harness.sh"
need_tools jq umoci ip iptables busybox kubectl openssl python3 curl skopeo docker-registry /usr/bin/etcd
need_cni bridge host-local portmap
NODE=demo-node # the sample pods name it (scripts/demo/pods-live.yaml)
harness_init demo
cgroot=cubelet-demo-$$
K_TIMEOUT=30s
bold "Part 2: a live node on a local control plane"
echo "- control plane: the stand-in apiserver on a real etcd (tests/apiserver)"
start_standin
export KUBECONFIG=$data/admin.kubeconfig

start_registry
echo "- image registry $reg (docker-registry) with a busybox image built from Debian's busybox-static"
push_busybox busybox:1.36

write_cni_conf portmap
gw=${subnet%.0/24}.1
echo "- CNI: bridge $bridge, $subnet, portmap; pods in cgroups under $cgroot; files in $tmp"

# The join, as `kubeadm token create` and docs/install.md: a token whose
# group kubeadm binds to CSR creation and auto-approval.
token_id=$(openssl rand -hex 3)
token=$token_id.$(openssl rand -hex 8)
token_secret "$token_id" "${token#*.}" system:bootstrappers:kubeadm:default-node-token \
  "$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)"
bootstrap_kubeconfig "$tmp/bootstrap-kubeconfig" "$token"
hport=$(free_port)
echo "- cubelet joins as node $NODE with the bootstrap token $token_id.<secret> (--bootstrap-kubeconfig);"
echo "  crash-loop back-off shortened to 2s..8s for the demo; local endpoint 127.0.0.1:$hport"
t_join=$(now)
start_agent -v 1 --bootstrap-kubeconfig "$tmp/bootstrap-kubeconfig" --kubeconfig "$tmp/kubelet/kubeconfig" \
  --cert-dir "$tmp/pki" --node-ip "$gw" --insecure-registry "$reg" \
  --crash-loop-backoff-base 2 --crash-loop-backoff-max 8 --node-status-update-frequency 2s \
  --healthz-port "$hport"
node_ready 60
echo "  joined: Ready $(since "$t_join")s after start; its client certificate came through this CSR:"
k get csr | sed 's/^/    /'
echo "  $(openssl x509 -in "$tmp/pki/kubelet-client-current.pem" -noout -subject -nameopt sep_comma_plus_space)," \
  "signed by the cluster CA, in $tmp/pki/kubelet-client-current.pem"
k get nodes -o wide
poll 10 test -s "$root/endpoint.token" || die "the agent wrote no $root/endpoint.token"
page="http://127.0.0.1:$hport/ui?token=$(cat "$root/endpoint.token")"
echo
echo "The live timeline page (every pod a row, pushed as it happens; open it in a browser on this machine):"
echo "  $page"
echo "In a terminal: $cubelet --root-dir $root timeline -w"
echo "kubectl: export KUBECONFIG=$KUBECONFIG"

bold "Applying the sample pods; their phase changes as they happen (seconds since applied):"
# One line per change of a pod's phase or reason: the pod's reason, else
# its container's (waiting or terminated), else a DisruptionTarget's.
watch_phases() {
  local start=$1 name phase why ms
  declare -A seen
  k get pods --watch --output-watch-events -o json 2>/dev/null | jq --unbuffered -r '
    .object as $p | $p.status as $s |
    ([$s.containerStatuses[]?.state | (.waiting.reason // .terminated.reason // empty)] | first) as $why |
    ([$s.conditions[]? | select(.type == "DisruptionTarget") | .reason] | first) as $dt |
    "\($p.metadata.name) \($s.phase // "-") \($s.reason // $why // $dt // "-")"' |
    while read -r name phase why; do
      # (a bash loop, not awk: Debian's mawk reads its input in blocks)
      [ "${seen[$name]:-}" != "$phase $why" ] || continue
      seen[$name]="$phase $why"
      ms=$(($(date +%s%3N) - start))
      printf '  %4d.%ds  %-11s %-10s %s\n' $((ms / 1000)) $((ms % 1000 / 100)) "$name" "$phase" "${why/#-/}"
    done
}
sed "s|IMAGE|$reg/busybox:1.36|" "$demo/pods-live.yaml" | k apply -f - >/dev/null
watch_phases "$(date +%s%3N)" &
watch_pid=$!
track "$watch_pid"

# What each pod is there to show, before the taint (which would evict
# every pod that does not tolerate it and is not done yet).
waitfor() { k wait --for=jsonpath="{.status.phase}=$2" "pod/$1" --timeout=60s >/dev/null || die "$1: not $2 in 60 s"; }
waitfor succeeds Succeeded
waitfor fails Failed
waitfor oom Failed
waitfor rejected Failed
waitfor evicted Running
restarts() { [ "$(pj crashloops '{.status.containerStatuses[0].restartCount}')" -ge 2 ] 2>/dev/null; }
poll 60 restarts || die "crashloops: not restarted twice in 60 s"
bold "Tainting $NODE with demo/maintenance:NoExecute (evicted tolerates it for 5s, crashloops for ever)"
k taint nodes "$NODE" demo/maintenance=true:NoExecute >/dev/null
k wait --for=delete pod/evicted --timeout=60s >/dev/null || die "evicted: not evicted 60 s after the taint"
# The worker's last steps (tornDown) come after the pod is gone.
poll 10 eval '"$cubelet" --root-dir "$root" timeline -o json evicted 2>/dev/null | jq -e ".pods[0].gone" >/dev/null' ||
  die "evicted: not marked gone in the timeline"
sleep 1 # the watch's last lines
stop_pids "$watch_pid" || true # (not under set -e: it reaps what it killed)

bold "kubectl get pods -o wide"
k get pods -o wide
bold "Events (kubectl get events)"
k get events --sort-by=.lastTimestamp | tail -25
bold "cubelet's phase-transition timelines (cubelet timeline; the page: $page)"
# Each step's offset from the pod's first, the time since the step before
# with a bar (the time that step took), and the phases with how long each
# lasted; then the evicted pod with its history: each status PATCH as a
# diff, the taint and the deletionTimestamp.
"$cubelet" --root-dir "$root" timeline --history=false
bold "The evicted pod with what each status change changed (cubelet timeline evicted)"
"$cubelet" --root-dir "$root" timeline evicted
echo "As a trace for Perfetto (ui.perfetto.dev) or chrome://tracing: $cubelet --root-dir $root timeline -o trace >pods.trace.json"
echo
echo "Step latency histograms: curl -s http://127.0.0.1:$hport/metrics | grep cubelet_pod_step"
bold "The crash-looping pod, as kubectl describe shows it"
k describe pod crashloops | sed -n '/^Status:/p;/State:/,/Restart Count:/p;/^Events:/,$p' | head -30
echo
echo "demo: done in $(($(date +%s) - t_start))s"
if [ "$ci" != 1 ] && [ -t 0 ]; then
  echo "cubelet's log: $tmp/agent.log (removed on exit); press Enter to clean up"
  read -r _ || true
fi
