#!/usr/bin/env bash
# The agent's memory with N pods running, two builds side by side: each
# round starts the stand-in and one agent (BIN_A, then BIN_B), creates N
# one-container pods at once, and 5 s after all are Running reads the
# agent's RSS and its [heap] mapping. Rounds alternate A and B, so a drift
# of the machine falls on both. With --heaptrack the agents run under
# heaptrack instead, and its peak-consumer report of each side is kept
# (where the heap goes, by call site: docs/benchmarks.md, session 23).
#
#   scripts/bench_heap.sh [--heaptrack] [--pods N] [--rounds R] BIN_A BIN_B
#
# Root; the same packages as the integration tests (+ heaptrack with
# --heaptrack). Prints one line per agent run and the ranges at the end.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
pods=110 rounds=3 ht=0
while [ $# -gt 2 ]; do
  case $1 in
    --heaptrack) ht=1 ;;
    --pods) pods=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    *) echo "bench_heap.sh: unknown argument $1 (see the head of $0)" >&2; exit 2 ;;
  esac
  shift
done
[ $# -eq 2 ] || { echo "usage: $0 [--heaptrack] [--pods N] [--rounds R] BIN_A BIN_B" >&2; exit 2; }
bin_a=$(realpath "$1") bin_b=$(realpath "$2")
[ "$(id -u)" -eq 0 ] || { echo "bench_heap.sh: run as root" >&2; exit 1; }
[ "$ht" -eq 0 ] || command -v heaptrack >/dev/null || apt-get install -y -q heaptrack >/dev/null

export SOURCE_DIR=$top FIXTURES=$top/tests/fixtures CUBELET=$bin_a
. "$top/tests/integration/lib/harness.sh"
need_tools jq umoci ip busybox kubectl python3
need_cni bridge host-local portmap
harness_init heapbench
results=$tmp/results
mkdir -p "$results"
import_busybox "$tmp/rootA"
CUBELET=$bin_b import_busybox "$tmp/rootB"
write_cni_conf portmap
for i in $(seq 1 "$pods"); do
  printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: p%s, namespace: default}\nspec:\n' "$i"
  printf '  terminationGracePeriodSeconds: 1\n  containers:\n'
  printf '  - {name: main, image: docker.io/library/busybox:1.36, imagePullPolicy: IfNotPresent, command: [sleep, "3600"]}\n---\n'
done >"$tmp/pods.yaml"

# one SIDE ROUND: one agent of SIDE with $pods pods, its figures appended
# to $results/SIDE
one() {
  local side=$1 round=$2 bin apid r=$tmp/root$1 node
  [ "$side" = A ] && bin=$bin_a || bin=$bin_b
  node=heap-$(echo "$side" | tr AB ab)-$round-$$ # lower case: the name the agent registers
  NODE=$node
  data=$tmp/data-$side-$round
  start_standin
  local wrap=()
  [ "$ht" -eq 0 ] || wrap=(heaptrack -o "$tmp/heaptrack-$side-$round")
  H_STARTED=1
  "${wrap[@]}" "$bin" --root-dir "$r" --cni-conf-dir "$cni_dir" --pod-logs-dir "$logs" --cgroup-root "$cgroot" \
    --hostname-override "$node" --kubeconfig "$data/node.kubeconfig" --healthz-port "$(free_port)" \
    --max-pods $((pods + 10)) >>"$tmp/agent-$side-$round.log" 2>&1 &
  local wpid=$!
  track "$wpid"
  poll 60 eval 'k get node "$node" >/dev/null 2>&1' || die "side $side: node not registered: $(tail -5 "$tmp/agent-$side-$round.log")"
  node_ready 30
  apid=$(pgrep -f "^$bin --root-dir $r" | head -1)
  [ -n "$apid" ] || die "side $side: no agent process"
  sed "s/^spec:$/spec:\n  nodeName: $node/" "$tmp/pods.yaml" | k create -f - >/dev/null || die "side $side: create failed"
  poll 600 eval '[ "$(k get pods --no-headers 2>/dev/null | grep -c " Running ")" -ge '"$pods"' ]' ||
    die "side $side: not all Running: $(k get pods --no-headers | awk '{print $3}' | sort | uniq -c | paste -sd' ')"
  sleep 5
  local rss heap
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$apid/status")
  heap=$(awk '/\[heap\]/ {f = 1; next} /^[0-9a-f]+-/ {f = 0} f && /^Rss:/ {n += $2} END {print n + 0}' "/proc/$apid/smaps")
  echo "$rss $heap" >>"$results/$side"
  echo "bench_heap: $side round $round: $pods pods Running, agent RSS $rss KiB, [heap] $heap KiB"
  # the agent tears its pods down (sandboxes, IPs, cgroups) before it
  # stops, so the next round starts on an empty node
  k delete pods --all --wait=false >/dev/null
  poll 300 eval '[ -z "$(k get pods --no-headers 2>/dev/null)" ]' || die "side $side: pods left after the deletes"
  kill -TERM "$apid"
  poll 60 eval '! kill -0 '"$apid"' 2>/dev/null' || die "side $side: the agent did not stop"
  wait "$wpid" 2>/dev/null || true
  stop_standin_quiet || die "side $side: etcd survived the stand-in"
}
for round in $(seq 1 "$rounds"); do
  one A "$round"
  one B "$round"
done
range() { awk -v c="$2" '{v = $c / 1024; if (NR == 1 || v < lo) lo = v; if (NR == 1 || v > hi) hi = v} END {printf "%.1f-%.1f MiB", lo, hi}' "$1"; }
echo "bench_heap: A $bin_a: RSS $(range "$results/A" 1), [heap] $(range "$results/A" 2)"
echo "bench_heap: B $bin_b: RSS $(range "$results/B" 1), [heap] $(range "$results/B" 2)"
if [ "$ht" -eq 1 ]; then
  for f in "$tmp"/heaptrack-*.zst "$tmp"/heaptrack-*.gz; do
    [ -e "$f" ] || continue
    heaptrack_print -f "$f" --print-peaks 1 --print-allocators 0 --print-leaks 0 --print-temporary 0 -n 15 -s 4 \
      >"/tmp/$(basename "${f%.*}").txt" 2>/dev/null || true
    echo "bench_heap: $(grep -m1 'peak heap memory' "/tmp/$(basename "${f%.*}").txt" 2>/dev/null) ($f; report in /tmp/$(basename "${f%.*}").txt)"
  done
fi
