#!/usr/bin/env bash
# Benchmark: `cubelet run-pod` against `podman kube play` (its peer for
# running one pod from a manifest without a cluster), both run here, in
# the same go, alternating, on the same busybox image and a CNI bridge.
# Reports medians and ratios (cubelet / podman), never absolute verdicts:
#
#   wall   run a pod whose container prints a line and exits, to the end:
#          cubelet run-pod FILE (returns when Succeeded and torn down)
#          vs podman kube play FILE; podman wait; podman kube down FILE
#   rss    resident memory of what stays on the node per running pod:
#          cubelet's container monitor vs podman's conmon (pod + infra)
#          and the infra (pause) process
#
#   scripts/bench.sh [RUNS]     (root; default 10 runs)
#
# This machine lacks CAP_SYS_RESOURCE, so podman's OCI runtime runs through
# a wrapper that drops the rlimits podman puts in the config (raising them
# fails here); the wrapper's cost (one jq per container) is counted against
# podman and named in the output. crun refuses this machine's hybrid
# cgroups, so podman uses runc.
set -euo pipefail
runs=${1:-10}
top=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "bench.sh: run as root" >&2; exit 1; }
bash "$top/scripts/deps.sh" --bench
cmake -S "$top" -B "$top/build-rel" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$top/build-rel" -j"$(nproc)" --target cubelet >/dev/null
cubelet=$top/build-rel/agent/cubelet

tmp=$(mktemp -d /tmp/cubelet-bench.XXXXXX)
bridge=cbb$$
cgroot=cubelet-bench-$$
P=(podman --root "$tmp/podman" --runroot "$tmp/podman-run" --runtime "$tmp/runc-wrap"
   --cgroup-manager cgroupfs)
cleanup() {
  set +e
  [ -n "${sleeper_pid:-}" ] && kill -TERM "$sleeper_pid" 2>/dev/null && wait "$sleeper_pid" 2>/dev/null
  "${P[@]}" kube down "$tmp/sleep.yaml" >/dev/null 2>&1
  "${P[@]}" kube down "$tmp/once.yaml" >/dev/null 2>&1
  "${P[@]}" system reset -f >/dev/null 2>&1
  grep " $tmp" /proc/self/mountinfo | awk '{print $5}' | sort -r | xargs -r -n1 umount -l 2>/dev/null
  for h in /sys/fs/cgroup/*/"$cgroot"; do
    [ -d "$h" ] && find "$h" -depth -type d -exec rmdir {} \; 2>/dev/null
  done
  ip link del "$bridge" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

cat >"$tmp/runc-wrap" <<'EOF'
#!/bin/sh
b=""; prev=""
for a in "$@"; do
  [ "$prev" = "--bundle" ] && b=$a
  case $a in --bundle=*) b=${a#--bundle=} ;; esac
  prev=$a
done
if [ -n "$b" ] && [ -f "$b/config.json" ]; then
  jq -c 'del(.process.rlimits)' "$b/config.json" >"$b/config.json.tmp" && mv "$b/config.json.tmp" "$b/config.json"
fi
exec runc "$@"
EOF
chmod +x "$tmp/runc-wrap"
bash "$top/tests/images/build-busybox.sh" "$tmp/img" >/dev/null
"$cubelet" --root-dir "$tmp/root" image import "$tmp/img/busybox.oci.tar" --name busybox:1.36 >/dev/null
"${P[@]}" load -q -i "$tmp/img/busybox.oci.tar" >/dev/null 2>&1
"${P[@]}" tag localhost/1.36:latest docker.io/library/busybox:1.36
mkdir -p "$tmp/cni"
cat >"$tmp/cni/10-bench.conflist" <<EOF
{"cniVersion":"1.0.0","name":"cubelet-bench","plugins":[
 {"type":"bridge","bridge":"$bridge","isGateway":true,"ipMasq":false,
  "ipam":{"type":"host-local","ranges":[[{"subnet":"10.99.$(($$ % 200 + 20)).0/24"}]],"dataDir":"$tmp/ipam"}},
 {"type":"portmap","capabilities":{"portMappings":true}}]}
EOF
pod() { # NAME COMMAND...
  cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: docker.io/library/busybox:1.36
    imagePullPolicy: IfNotPresent
    command: [sh, -c, '$2']
EOF
}
pod once 'echo hello' >"$tmp/once.yaml"
pod sleep 'sleep 120' >"$tmp/sleep.yaml"
cub() { "$cubelet" --root-dir "$tmp/root" --cni-conf-dir "$tmp/cni" run-pod "$@" \
          --pod-logs-dir "$tmp/logs" --cgroup-root "$cgroot"; }
ms() { date +%s%N; }

# One warm-up run each (podman builds its pause image on first use).
cub "$tmp/once.yaml" >/dev/null 2>&1
"${P[@]}" kube play "$tmp/once.yaml" >/dev/null 2>&1
"${P[@]}" wait once-main >/dev/null 2>&1 || true
"${P[@]}" kube down "$tmp/once.yaml" >/dev/null 2>&1

c_times=() p_times=()
for i in $(seq 1 "$runs"); do
  t=$(ms)
  cub "$tmp/once.yaml" >/dev/null 2>&1 || { echo "bench.sh: cubelet run-pod failed" >&2; exit 1; }
  c_times+=($((($(ms) - t) / 1000000)))
  t=$(ms)
  "${P[@]}" kube play "$tmp/once.yaml" >/dev/null 2>&1 || { echo "bench.sh: podman kube play failed" >&2; exit 1; }
  "${P[@]}" wait once-main >/dev/null 2>&1
  "${P[@]}" kube down "$tmp/once.yaml" >/dev/null 2>&1
  p_times+=($((($(ms) - t) / 1000000)))
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
c_med=$(median "${c_times[@]}")
p_med=$(median "${p_times[@]}")

# Memory: what stays resident per running pod.
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
# PSS: shared pages (libraries) divided among the processes that map them
pss_kib() { awk '/^Pss:/ {print $2}' "/proc/$1/smaps_rollup" 2>/dev/null || echo 0; }
"$cubelet" --root-dir "$tmp/root" --cni-conf-dir "$tmp/cni" run-pod "$tmp/sleep.yaml" \
  --pod-logs-dir "$tmp/logs" --cgroup-root "$cgroot" >/dev/null 2>&1 &
sleeper_pid=$!
mon=""
for _ in $(seq 100); do
  mon=$(cat "$tmp"/root/containers/*/state.json 2>/dev/null | jq -r 'select(.status == "running") | .monitorPid' | head -1 || true)
  [ -n "$mon" ] && [ "$mon" != null ] && break
  sleep 0.1
done
[ -n "$mon" ] && [ "$mon" != null ] || { echo "bench.sh: cubelet's sleeping pod did not start" >&2; exit 1; }
sleep 1
c_rss=$(rss_kib "$mon")
c_pss=$(pss_kib "$mon")
# The agent side while the pod runs (run-pod is the agent for one pod).
c_agent=$(rss_kib "$sleeper_pid")
kill -TERM "$sleeper_pid"
wait "$sleeper_pid" 2>/dev/null || true
sleeper_pid=""

"${P[@]}" kube play "$tmp/sleep.yaml" >/dev/null 2>&1
sleep 1
p_rss=0
p_pss=0
p_what=""
for cid in $("${P[@]}" ps -q --filter pod=sleep); do
  conmon=$("${P[@]}" inspect -f '{{.State.ConmonPid}}' "$cid")
  pid=$("${P[@]}" inspect -f '{{.State.Pid}}' "$cid")
  name=$("${P[@]}" inspect -f '{{.Name}}' "$cid")
  p_rss=$((p_rss + $(rss_kib "$conmon")))
  p_pss=$((p_pss + $(pss_kib "$conmon")))
  p_what="$p_what conmon($name)=$(rss_kib "$conmon")KiB"
  if [[ "$name" == *-infra ]]; then
    p_rss=$((p_rss + $(rss_kib "$pid")))
    p_pss=$((p_pss + $(pss_kib "$pid")))
    p_what="$p_what pause=$(rss_kib "$pid")KiB"
  fi
done
"${P[@]}" kube down "$tmp/sleep.yaml" >/dev/null 2>&1

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
echo "cubelet run-pod vs podman kube play (runc), $runs runs each, alternating; $(nproc) cores"
printf '%-44s %10s %10s %8s\n' "" cubelet podman ratio
printf '%-44s %8sms %8sms %8s\n' "one pod to completion and torn down (median)" "$c_med" "$p_med" "$(ratio "$c_med" "$p_med")"
printf '%-44s %7sKiB %7sKiB %8s\n' "RSS per running pod (node side)" "$c_rss" "$p_rss" "$(ratio "$c_rss" "$p_rss")"
printf '%-44s %7sKiB %7sKiB %8s\n' "PSS per running pod (node side)" "$c_pss" "$p_pss" "$(ratio "$c_pss" "$p_pss")"
echo "  cubelet: container monitor=${c_rss}KiB (run-pod, the agent for this pod: ${c_agent}KiB)"
echo "  podman: $p_what"
echo "  (podman's OCI runtime runs through a jq wrapper that drops rlimits: this machine cannot raise them)"
