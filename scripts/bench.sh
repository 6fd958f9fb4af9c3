#!/usr/bin/env bash
# The benchmark of issue 17: cubelet beside its peers, in one go, on the
# same image, CNI conflist and seccomp setting, alternating run by run.
# It reports distributions (p50/p90/p99, min-max) and ratios cubelet/peer
# with their spread, never a verdict; no test asserts a time.
#
#   scripts/bench.sh [--quick] [--runs N] [--noisy] [--only FIGS]
#                    [--cubelet BIN] [--ab BIN_A BIN_B] [--no-peers] [--creates M]
#
#   --quick      a smoke run: 3 repetitions, bursts of 5 pods
#   --runs N     repetitions of each per-pod figure (default 30)
#   --noisy      report even when other work runs on the machine (the
#                report then says so in its first line)
#   --only FIGS  figures to run, e.g. 1,2,6 (default all: 1,2,3,4,5,6,7,8)
#   --cubelet B  this cubelet binary (default: builds build-rel/)
#   --ab A B     two cubelet binaries, alternating, for before/after
#                comparisons: ratios B/A as well as each against the peers
#   --no-peers   only cubelet (with --ab: only A and B)
#   --creates M  figure 3's creates: slowstart (default: the ReplicaSet
#                controller's batches of 1, 2, 4, ... concurrent, and its
#                deletes all at once) or sequential (one POST after the other)
#
# Peers: `podman kube play` (runc) and containerd (Debian's 1.6, runc
# through the runc v2 shim) driven by `ctr run --rm`; containerd runs
# privately under the temp dir (own root, state and socket) and is stopped
# at the end. Figures (issue 17 numbering):
#   1  one pod to completion and torn down, with CNI and without (host
#      network), RuntimeDefault seccomp everywhere
#   2  through the stand-in apiserver: created -> Running seen by a watch,
#      per pod, with cubelet's own timeline (watched -> admitted ->
#      sandboxReady -> containerStarted -> phase:Running -> statusDelivered)
#   3  bursts of 30 and 110 pods: first Running, per pod, all Running, all
#      gone after delete (grace 1 s), and the agent's steps of each deletion
#   4  one pod's created -> Running while the largest burst runs, against the
#      same starts just before that burst (paired: one run, one build)
#   5  container exit (the agent's containerExited stamp) -> the terminal
#      status stored at the apiserver (seen by a watch); a NoExecute taint
#      (the Node PATCH) -> the container stopped (terminating) -> gone
#   6  memory and CPU: agent RSS/PSS idle and at the burst's peak, agent
#      CPU-seconds for a burst; per pod on the node (monitor + pause vs
#      conmon + infra, vs containerd-shim)
#   7  counts per pod (run-pod, strace -f): processes, execs, fsyncs (and
#      how many on the event loop thread), mounts
#   8  placing a new process in a cgroup (scripts/bench_cgplace.c): fork +
#      cgroup.procs write (v1 and v2) vs clone3(CLONE_INTO_CGROUP) (v2),
#      after a quiet spell and back to back
# Root, Debian packages only (scripts/deps.sh --bench installs them).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
runs=30 quick=0 noisy=0 only=1,2,3,4,5,6,7,8 peers=1 bin_a="" bin_b="" creates=slowstart
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 runs=3 ;;
    --runs) runs=$2; shift ;;
    --noisy) noisy=1 ;;
    --only) only=$2; shift ;;
    --cubelet) bin_a=$2; shift ;;
    --ab) bin_a=$2 bin_b=$3; shift 2 ;;
    --no-peers) peers=0 ;;
    --creates) creates=$2; shift ;;
    *) echo "bench.sh: unknown argument $1 (see the head of $0)" >&2; exit 2 ;;
  esac
  shift
done
want() { [[ ",$only," == *",$1,"* ]]; }
[ "$(id -u)" -eq 0 ] || { echo "bench.sh: run as root" >&2; exit 1; }
bash "$top/scripts/deps.sh" --bench
if [ -z "$bin_a" ]; then
  cmake -S "$top" -B "$top/build-rel" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$top/build-rel" -j"$(nproc)" --target cubelet >/dev/null
  bin_a=$top/build-rel/agent/cubelet
fi
sides=(A)
[ -z "$bin_b" ] || sides+=(B)
declare -A BIN=([A]=$bin_a [B]=$bin_b)
export CUBELET=$bin_a SOURCE_DIR=$top

# ---- the machine, and whether other work runs on it ----------------------------
# busy_cores SECONDS: CPU in use (all processes) over SECONDS, in cores.
busy_cores() {
  local a b
  a=$(awk '/^cpu / {print $2+$3+$4+$7+$8, $5+$6}' /proc/stat)
  sleep "$1"
  b=$(awk '/^cpu / {print $2+$3+$4+$7+$8, $5+$6}' /proc/stat)
  awk -v a="$a" -v b="$b" -v n="$(nproc)" 'BEGIN { split(a, x); split(b, y);
    busy = y[1] - x[1]; idle = y[2] - x[2]; printf "%.2f", (busy + idle > 0 ? n * busy / (busy + idle) : 0) }'
}
machine="$(nproc) cores ($(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)), kernel $(uname -r), $(
  [ -f /sys/fs/cgroup/cgroup.controllers ] && echo "cgroup v2" ||
  { [ -d /sys/fs/cgroup/unified ] && echo "cgroup v1 hybrid (v2 at /sys/fs/cgroup/unified)" || echo "cgroup v1"; })"
load_before="loadavg $(cut -d' ' -f1-3 /proc/loadavg), busy $(busy_cores 3) cores over 3 s"
busy_limit=0.30
busy0=$(echo "$load_before" | awk '{for (i = 1; i <= NF; i++) if ($i == "busy") print $(i + 1)}')
if [ "$noisy" -eq 0 ] && awk -v a="$busy0" -v l="$busy_limit" 'BEGIN { exit !(a > l) }'; then
  echo "bench.sh: other work runs on this machine ($load_before; limit $busy_limit cores): not starting; --noisy runs and reports anyway" >&2
  exit 3
fi

. "$top/tests/integration/lib/harness.sh"
need_tools jq umoci ip busybox kubectl python3 podman runc ctr containerd strace /usr/bin/etcd
need_cni bridge host-local portmap
NODE=bench-a-$$
harness_init bench
out=$tmp/results
mkdir -p "$out"

# ---- the image in every store, one CNI conflist --------------------------------
import_busybox
[ -z "$bin_b" ] || "${BIN[B]}" --root-dir "$tmp/rootB" image import "$tmp/img/busybox.oci.tar" --name busybox:1.36 >/dev/null
write_cni_conf portmap
IMAGE=docker.io/library/busybox:1.36
seccomp_pod() { # NAME COMMAND [hostNetwork]
  cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  restartPolicy: Never
  hostNetwork: ${3:-false}
  terminationGracePeriodSeconds: 1
  securityContext: {seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: main
    image: $IMAGE
    imagePullPolicy: IfNotPresent
    command: [sh, -c, '$2']
EOF
}
seccomp_pod once 'echo hello' >"$tmp/once-cni.yaml"
seccomp_pod once 'echo hello' true >"$tmp/once-host.yaml"
seccomp_pod sleep 'sleep 3600' >"$tmp/sleep.yaml"
rootdir() { [ "$1" = A ] && echo "$root" || echo "$tmp/rootB"; }
# each agent its own pod logs and cgroups: with one directory B's container
# GC took A's pods' log directories for deleted pods' and removed them (a
# 110-pod burst of A then had a pod fail, "cannot open the container log")
logsdir() { [ "$1" = A ] && echo "$logs" || echo "$tmp/logsB"; }
cgrootof() { [ "$1" = A ] && echo "$cgroot" || echo "$cgroot/b"; }
cub_run() { # SIDE YAML
  "${BIN[$1]}" --root-dir "$(rootdir "$1")" --cni-conf-dir "$cni_dir" run-pod "$2" \
    --pod-logs-dir "$logs" --cgroup-root "$cgroot" >/dev/null 2>&1
}

if [ "$peers" -eq 1 ]; then
  # podman: runc through a wrapper that drops the rlimits podman writes
  # (this machine cannot raise them: no CAP_SYS_RESOURCE); one jq per
  # container, counted against podman. The same conflist, through podman's
  # CNI backend.
  P=(podman --root "$tmp/podman" --runroot "$tmp/podman-run" --runtime "$tmp/runc-wrap"
     --cgroup-manager cgroupfs --network-backend cni --network-config-dir "$cni_dir")
  cat >"$tmp/runc-wrap" <<'EOF'
#!/bin/sh
b=""; x=""; prev=""
for a in "$@"; do
  [ "$prev" = "--bundle" ] && b=$a
  [ "$prev" = "--process" ] && x=$a
  case $a in --bundle=*) b=${a#--bundle=} ;; --process=*) x=${a#--process=} ;; esac
  prev=$a
done
if [ -n "$b" ] && [ -f "$b/config.json" ]; then
  jq -c 'del(.process.rlimits)' "$b/config.json" >"$b/config.json.tmp" && mv "$b/config.json.tmp" "$b/config.json"
fi
# podman exec: runc exec --process FILE, with the same rlimits
if [ -n "$x" ] && [ -f "$x" ]; then
  jq -c 'del(.rlimits)' "$x" >"$x.tmp" && mv "$x.tmp" "$x"
fi
exec runc "$@"
EOF
  chmod +x "$tmp/runc-wrap"
  at_cleanup '"${P[@]}" pod rm -fa >/dev/null 2>&1; "${P[@]}" system reset -f >/dev/null 2>&1; true'
  "${P[@]}" load -q -i "$tmp/img/busybox.oci.tar" >/dev/null 2>&1
  "${P[@]}" tag localhost/1.36:latest "$IMAGE"
  net=$(jq -r .name "$cni_dir/10-it.conflist")
  pod_play() { # YAML
    local extra=()
    grep -q 'hostNetwork: true' "$1" || extra=(--network "$net")
    "${P[@]}" kube play "${extra[@]}" "$1" >/dev/null 2>&1 &&
      "${P[@]}" wait once-main >/dev/null 2>&1 &&
      "${P[@]}" kube down "$1" >/dev/null 2>&1
  }

  # containerd, private: its own root, state, sockets; runc's state too.
  ctrd=$tmp/ctrd
  mkdir -p "$ctrd"
  cat >"$ctrd/config.toml" <<EOF
version = 2
root = "$ctrd/root"
state = "$ctrd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$ctrd/ctrd.sock"
[ttrpc]
  address = "$ctrd/ctrd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$ctrd/opt"
EOF
  containerd --config "$ctrd/config.toml" >"$tmp/containerd.log" 2>&1 &
  ctrd_pid=$!
  track "$ctrd_pid"
  CNS=cubelet-bench-$$
  C=(ctr --address "$ctrd/ctrd.sock" --namespace "$CNS")
  at_cleanup 'rm -rf "/run/containerd/runc/$CNS"; true'
  poll 20 quietly "${C[@]}" version || die "the private containerd did not start: $(tail -3 "$tmp/containerd.log")"
  "${C[@]}" images import --base-name docker.io/library/busybox "$tmp/img/busybox.oci.tar" >/dev/null
  "${C[@]}" images ls -q | grep -x "$IMAGE" >/dev/null || "${C[@]}" images tag "$("${C[@]}" images ls -q | head -1)" "$IMAGE" >/dev/null
  # ctr's CNI (client side, go-cni) reads /etc/cni/net.d and /opt/cni/bin:
  # in a private mount namespace those are this run's conflist and
  # Debian's plugins.
  cat >"$tmp/ctr-cni.sh" <<EOF
#!/bin/sh
mount --bind "$cni_dir" /etc/cni/net.d && mount -t tmpfs none /opt && mkdir -p /opt/cni/bin &&
  mount --bind /usr/lib/cni /opt/cni/bin && exec "\$@"
EOF
  ctr_n=0
  ctr_run() { # YAML
    ctr_n=$((ctr_n + 1))
    local netflag=(--net-host) pre=()
    grep -q 'hostNetwork: true' "$1" || { netflag=(--cni); pre=(unshare -m --propagation private sh "$tmp/ctr-cni.sh"); }
    "${pre[@]}" "${C[@]}" run --rm --seccomp "${netflag[@]}" --cgroup "/$cgroot/ctr-$ctr_n" \
      "$IMAGE" "once-$ctr_n" sh -c 'echo hello' >/dev/null 2>&1
  }
fi

# ---- statistics ---------------------------------------------------------------
# stats.py FILE... : one sample per line (ms); writes p50 p90 p99 min max n
cat >"$tmp/stats.py" <<'EOF'
import sys, json
def pct(v, p):
    v = sorted(v)
    if not v: return float("nan")
    k = (len(v) - 1) * p / 100.0
    f = int(k); c = min(f + 1, len(v) - 1)
    return v[f] + (v[c] - v[f]) * (k - f)
def load(f):
    return [float(x) for x in open(f).read().split()]
mode = sys.argv[1]
if mode == "dist":
    v = load(sys.argv[2])
    print("p50 %.1f  p90 %.1f  p99 %.1f  min-max %.1f-%.1f  (n=%d)" % (
        pct(v, 50), pct(v, 90), pct(v, 99), min(v), max(v), len(v)))
elif mode == "p50p90":
    v = load(sys.argv[2])
    print("p50 %.1f  p90 %.1f" % (pct(v, 50), pct(v, 90)))
elif mode == "median":
    print("%.3f" % pct(load(sys.argv[2]), 50))
elif mode == "ratio":  # paired runs: median of a / median of b, spread p10-p90 of a_i/b_i
    a, b = load(sys.argv[2]), load(sys.argv[3])
    r = [x / y for x, y in zip(a, b) if y > 0]
    print("%.3f (runs %.3f-%.3f)" % (pct(a, 50) / pct(b, 50), pct(r, 10), pct(r, 90)))
EOF
dist() { python3 "$tmp/stats.py" dist "$1"; }
# step_delta JSONL NODE FROM TO: per pod of NODE ("": every pod), the agent's
# step TO minus its step FROM, ms; "created" is the POST, "observed" the
# Running seen by the watch
step_delta() {
  jq -r --arg n "$2" --arg a "$3" --arg b "$4" 'select($n == "" or .node == $n) |
    (.timeline + {created: 0, observed: .running_ms}) as $t |
    if ($t[$a] != null and $t[$b] != null) then $t[$b] - $t[$a] else empty end' "$1"
}
ratio() { python3 "$tmp/stats.py" ratio "$1" "$2"; }
ms_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f\n", (b - a) * 1000 }'; }
report=$tmp/report.txt
say() { echo "$*" >>"$report"; }
# a figure that fails still shows what the others measured
die() {
  [ -s "$report" ] && { echo "--- the report up to the failure:"; cat "$report"; }
  echo "FATAL: $*"
  exit 1
}
progress() { echo "bench.sh: $*" >&2; }

# ---- figure 1: one pod to completion ---------------------------------------------
fig1() {
  local v s t i order contenders=()
  for s in "${sides[@]}"; do contenders+=("cubelet$s"); done
  [ "$peers" -eq 0 ] || contenders+=(podman ctr)
  for v in cni host; do # warm-up: podman builds its pause image on first use
    for s in "${contenders[@]}"; do one "$s" "$tmp/once-$v.yaml" || die "figure 1: $s ($v) failed"; done
  done
  for i in $(seq 1 "$runs"); do
    for v in cni host; do
      # rotate the order run by run, so none always runs first
      order=("${contenders[@]:$((i % ${#contenders[@]}))}" "${contenders[@]:0:$((i % ${#contenders[@]}))}")
      for s in "${order[@]}"; do
        t=$EPOCHREALTIME
        one "$s" "$tmp/once-$v.yaml" || die "figure 1: $s ($v) failed in run $i"
        ms_since "$t" >>"$out/f1-$v-$s"
      done
    done
  done
  say ""
  say "1. one pod (echo hello) to completion and torn down, RuntimeDefault seccomp, $runs runs each, alternating"
  for v in cni host; do
    say "   $([ $v = cni ] && echo "with CNI (bridge + host-local + portmap)" || echo "without CNI (host network)")"
    for s in "${contenders[@]}"; do say "     $(printf '%-9s' "$s") $(dist "$out/f1-$v-$s")"; done
    for s in "${sides[@]}"; do
      [ "$peers" -eq 0 ] || say "     ratio cubelet$s/podman $(ratio "$out/f1-$v-cubelet$s" "$out/f1-$v-podman")   cubelet$s/ctr $(ratio "$out/f1-$v-cubelet$s" "$out/f1-$v-ctr")"
    done
    [ -z "$bin_b" ] || say "     ratio B/A $(ratio "$out/f1-$v-cubeletB" "$out/f1-$v-cubeletA")"
  done
}
one() { # CONTENDER YAML
  case $1 in
    cubeletA) cub_run A "$2" ;;
    cubeletB) cub_run B "$2" ;;
    podman) pod_play "$2" ;;
    ctr) ctr_run "$2" ;;
  esac
}

# ---- figures 2, 3, 6: through the stand-in -------------------------------------------
agents_up=0
# One stand-in (with its etcd) per side: it serves one node identity.
datadir() { [ "$1" = A ] && echo "$data" || echo "$tmp/dataB"; }
nodename() { echo "bench-$(echo "$1" | tr AB ab)-$$"; }
start_agents() {
  [ "$agents_up" -eq 1 ] && return 0
  agents_up=1
  local s port d
  NODE=$(nodename A)
  # The stand-ins' etcd on tmpfs: its WAL fsyncs were ~30 % of a POST
  # (p50 5.9 -> 4.1 ms); the harness unmounts everything under $tmp.
  mkdir -p "$data/etcd" "$tmp/dataB/etcd"
  mount -t tmpfs -o size=512m,mode=0700 bench-etcd "$data/etcd"
  [ -z "$bin_b" ] || mount -t tmpfs -o size=512m,mode=0700 bench-etcd "$tmp/dataB/etcd"
  start_standin
  if [ -n "$bin_b" ]; then
    "$top/tests/apiserver/run.sh" --data "$tmp/dataB" --node-name "$(nodename B)" >>"$tmp/serverB.log" 2>&1 &
    track "$!"
    poll 60 grep -qs '^ready ' "$tmp/serverB.log" || die "the second stand-in did not start: $(tail -3 "$tmp/serverB.log")"
  fi
  datas="" nodes="" endpoints="" tokens="" napis=""
  # --max-pods 120: figure 4 runs one pod beside the burst's 110, which the
  # default capacity (110, the kubelet's) refuses (OutOfpods)
  # the node API on a port of its own per side, as the apiserver reaches it
  # (its kubelet-client certificate, under the cluster CA): figure 5's execs
  for s in "${sides[@]}"; do
    d=$(datadir "$s")
    port=$(free_port)
    eval "napi_$s=127.0.0.1:$(free_port)"
    "${BIN[$s]}" --root-dir "$(rootdir "$s")" --cni-conf-dir "$cni_dir" --pod-logs-dir "$(logsdir "$s")" \
      --cgroup-root "$(cgrootof "$s")" --hostname-override "$(nodename "$s")" --kubeconfig "$d/node.kubeconfig" \
      --healthz-port "$port" --max-pods 120 --address 127.0.0.1 --port "$(eval echo "\${napi_$s#*:}")" \
      --client-ca-file "$d/ca.crt" >>"$tmp/agent-$s.log" 2>&1 &
    eval "agent_pid_$s=$!"
    eval "endpoint_$s=http://127.0.0.1:$port"
    track "$!"
    poll 60 eval 'kubectl --kubeconfig "$d/admin.kubeconfig" wait --for=condition=Ready "node/$(nodename "$s")" --timeout=5s >/dev/null 2>&1' ||
      die "node $(nodename "$s") not Ready: $(tail -5 "$tmp/agent-$s.log")"
    datas+=${datas:+,}$d
    nodes+=${nodes:+,}$(nodename "$s")
    endpoints+=${endpoints:+,}http://127.0.0.1:$port
    tokens+=${tokens:+,}$(rootdir "$s")/endpoint.token
    napis+=${napis:+,}$(eval echo "\$napi_$s")
  done
}
client() { python3 "$top/scripts/bench_client.py" "$@"; }
fig2() {
  start_agents
  client perpod --data "$datas" --node "$nodes" --endpoint "$endpoints" --token-file "$tokens" --count "$runs" \
    >"$out/f2.jsonl" || die "figure 2: bench_client.py failed"
  say ""
  say "2. through the stand-in: pod created (POST sent) -> Running seen by a watch, one pod at a time, $runs each"
  local s node
  for s in "${sides[@]}"; do
    node=$(nodename "$s")
    jq -r --arg n "$node" 'select(.node == $n) | .running_ms' "$out/f2.jsonl" >"$out/f2-$s-running"
    say "   cubelet$s created -> Running observed: $(dist "$out/f2-$s-running")"
    # the breakdown, each step's stamp minus the previous (ms)
    local pair a b
    for pair in 'created>watched' 'watched>admitted' 'admitted>volumesReady' 'volumesReady>sandboxNamespaces' \
                'sandboxNamespaces>sandboxNetwork' 'sandboxNetwork>sandboxReady' 'admitted>sandboxReady' \
                'sandboxReady>containerStarted:main' 'containerStarted:main>phase:Running' \
                'phase:Running>statusDelivered:Running' 'statusDelivered:Running>observed' \
                'watched>containerStarted:main'; do
      a=${pair%%>*} b=${pair#*>}
      step_delta "$out/f2.jsonl" "$node" "$a" "$b" >"$out/f2-$s-$a-$b"
      [ -s "$out/f2-$s-$a-$b" ] && say "     $(printf '%-44s' "$a:$b") $(dist "$out/f2-$s-$a-$b")"
    done
    jq -r --arg n "$node" 'select(.node == $n) | .post_ms' "$out/f2.jsonl" >"$out/f2-$s-post"
    say "     $(printf '%-44s' "the POST itself (stand-in)") $(dist "$out/f2-$s-post")"
  done
  [ -z "$bin_b" ] || say "   ratio B/A created -> Running $(ratio "$out/f2-B-running" "$out/f2-A-running")"
  say "   (created:watched, the POST's answer and statusDelivered:Running:observed are the stand-in's share)"
}
fig5() {
  start_agents
  client exits --data "$datas" --node "$nodes" --endpoint "$endpoints" --token-file "$tokens" --count "$runs" \
    >"$out/f5.jsonl" || die "figure 5: bench_client.py exits failed"
  say ""
  say "5. container exit (the agent's containerExited) -> terminal status (Succeeded) stored, seen by a watch, $runs each"
  local s
  for s in "${sides[@]}"; do
    jq -r --arg n "$(nodename "$s")" 'select(.node == $n and .exit_to_stored_ms != null) | .exit_to_stored_ms' "$out/f5.jsonl" >"$out/f5-$s"
    jq -r --arg n "$(nodename "$s")" 'select(.node == $n and .exit_to_delivered_ms != null) | .exit_to_delivered_ms' "$out/f5.jsonl" >"$out/f5-$s-ack"
    [ -s "$out/f5-$s" ] && say "   cubelet$s exit -> stored (watch): $(dist "$out/f5-$s")"
    [ -s "$out/f5-$s-ack" ] && say "   cubelet$s exit -> PATCH acknowledged: $(dist "$out/f5-$s-ack")"
  done
  [ -z "$bin_b" ] || { [ -s "$out/f5-A" ] && [ -s "$out/f5-B" ] && say "   ratio B/A $(ratio "$out/f5-B" "$out/f5-A")"; }
  # a NoExecute taint the pod does not tolerate -> its container stopped:
  # the agent's own eviction (DisruptionTarget, a graceful DELETE, its watch
  # event), then SIGTERM, which the container handles at once
  client taints --data "$datas" --node "$nodes" --endpoint "$endpoints" --token-file "$tokens" --count "$runs" \
    >"$out/f5t.jsonl" || die "figure 5: bench_client.py taints failed"
  say "   a NoExecute taint (the Node PATCH sent) -> the agent's steps, ms, $runs each:"
  local step f
  for s in "${sides[@]}"; do
    for step in evicting terminating containerExited:main tornDown; do
      f="$out/f5t-$s-${step//:/_}"
      jq -r --arg n "$(nodename "$s")" --arg s "$step" 'select(.node == $n) | .timeline[$s] // empty' \
        "$out/f5t.jsonl" >"$f"
      [ -s "$f" ] && say "   cubelet$s taint -> $(printf '%-22s' "$step") $(dist "$f")"
    done
    jq -r --arg n "$(nodename "$s")" 'select(.node == $n) | .gone_ms' "$out/f5t.jsonl" >"$out/f5t-$s-gone"
    say "   cubelet$s taint -> $(printf '%-22s' "gone (DELETED seen)") $(dist "$out/f5t-$s-gone")"
  done
  [ -z "$bin_b" ] || { [ -s "$out/f5t-A-terminating" ] && [ -s "$out/f5t-B-terminating" ] &&
    say "   ratio B/A taint -> terminating $(ratio "$out/f5t-B-terminating" "$out/f5t-A-terminating")"; }
  fig5_exec
}
# exec round trips node-side, no kubectl, no apiserver in the path: the
# request the apiserver makes to the node (SPDY/3.1, remotecommand v5, the
# kubelet-client certificate) of `echo ok` in a running container, timed
# from the dial to every stream closed. Peers: containerd's `ctr task exec`
# and `podman exec` into a running container (CLIs: a process start each,
# where the kubelet's path is a CRI Exec and containerd's streaming server)
fig5_exec() {
  client execs --data "$datas" --node "$nodes" --endpoint "$endpoints" --token-file "$tokens" --count "$runs" \
    --node-api "$napis" >"$out/f5x.jsonl" || die "figure 5: bench_client.py execs failed"
  say "   exec of \`echo ok\` in a running container, node-side (SPDY, as the apiserver), ms from the dial, $runs each:"
  local s k
  for s in "${sides[@]}"; do
    for k in tls upgraded streams done; do
      jq -r --arg n "$(nodename "$s")" --arg k "${k}_ms" 'select(.node == $n) | .[$k]' "$out/f5x.jsonl" >"$out/f5x-$s-$k"
      say "   cubelet$s exec $(printf '%-9s' "$k") $(dist "$out/f5x-$s-$k")"
    done
  done
  [ -z "$bin_b" ] || say "   ratio B/A exec done $(ratio "$out/f5x-B-done" "$out/f5x-A-done")"
  [ "$peers" -eq 1 ] || return 0
  local i t
  "${C[@]}" run -d --seccomp --net-host --cgroup "/$cgroot/ctr-exec" "$IMAGE" execpeer sleep 3600 >/dev/null ||
    die "figure 5: ctr run -d failed"
  "${P[@]}" run -d --name execpeer --network none "$IMAGE" sleep 3600 >/dev/null 2>"$tmp/podman-exec.err" ||
    die "figure 5: podman run -d failed: $(tail -3 "$tmp/podman-exec.err")"
  : >"$out/f5x-ctr"
  : >"$out/f5x-podman"
  for ((i = 0; i < runs; i++)); do
    t=$EPOCHREALTIME
    [ "$("${C[@]}" task exec --exec-id "x$i" execpeer echo ok)" = ok ] || die "figure 5: ctr task exec failed"
    ms_since "$t" >>"$out/f5x-ctr"
    t=$EPOCHREALTIME
    [ "$("${P[@]}" exec execpeer echo ok 2>"$tmp/podman-exec.err")" = ok ] ||
      die "figure 5: podman exec failed: $(tail -3 "$tmp/podman-exec.err")"
    ms_since "$t" >>"$out/f5x-podman"
  done
  "${C[@]}" task kill -s KILL execpeer >/dev/null 2>&1
  poll 10 eval '! "${C[@]}" task ls -q | grep -x execpeer >/dev/null' || true
  "${C[@]}" container rm execpeer >/dev/null 2>&1 || true
  "${P[@]}" rm -f -t 0 execpeer >/dev/null 2>&1 || true
  say "   ctr task exec    $(dist "$out/f5x-ctr")"
  say "   podman exec      $(dist "$out/f5x-podman")"
  for s in "${sides[@]}"; do
    say "   ratio cubelet$s/ctr $(ratio "$out/f5x-$s-done" "$out/f5x-ctr")   cubelet$s/podman $(ratio "$out/f5x-$s-done" "$out/f5x-podman")"
  done
}
agent_mem() { # PID: "RSS KiB, PSS KiB"
  echo "RSS $(awk '/^VmRSS:/ {print $2}' "/proc/$1/status") KiB, PSS $(awk '/^Pss:/ {print $2}' "/proc/$1/smaps_rollup") KiB"
}
cpu_s() { awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$1/stat"; }
# f4_perpod SIDE PREFIX: figure 4's one-pod starts on SIDE's node, into
# PREFIX.jsonl and their created -> Running into PREFIX-running
f4_perpod() {
  client perpod --data "$(datadir "$1")" --node "$(nodename "$1")" --endpoint "$(eval echo "\$endpoint_$1")" \
    --token-file "$(rootdir "$1")/endpoint.token" --count "$runs" >"$2.jsonl" ||
    die "figure 4: bench_client.py perpod failed"
  jq -r '.running_ms' "$2.jsonl" >"$2-running"
}
fig3() {
  start_agents
  local sizes=(30 110) n s rep pid c0
  [ "$quick" -eq 0 ] || sizes=(5)
  say ""
  say "3./6. bursts: pods created at once ($([ "$creates" = sequential ] && echo "sequential POSTs, then sequential DELETEs" ||
    echo "the ReplicaSet controller's slow-start batches 1, 2, 4, ... concurrent, then every DELETE at once")), all Running, all deleted (grace 1 s)"
  for s in "${sides[@]}"; do
    pid=$(eval echo "\$agent_pid_$s")
    say "   cubelet$s agent idle: $(agent_mem "$pid"), CPU $(busy_of "$pid" 10) s over 10 s idle"
  done
  for n in "${sizes[@]}"; do
    # and for the largest, a third round whose containers exit on SIGTERM:
    # the others' `sleep` is pid 1 and ignores it, so their deletion waits
    # for the kubelet's minimum grace of 2 s before the SIGKILL
    for rep in 1 2 $([ "$n" = "${sizes[-1]}" ] && [ "$quick" -eq 0 ] && echo 3); do
      local cmd="sleep 3600" label="round $rep"
      [ "$rep" != 3 ] || { cmd="trap 'exit 0' TERM; sleep 3600 & wait"; label="round 3, containers that exit on SIGTERM"; }
      for s in "${sides[@]}"; do
        pid=$(eval echo "\$agent_pid_$s")
        c0=$(cpu_s "$pid")
        api_metrics "$s" >"$tmp/m0"
        if want 4 && [ "$rep" = 1 ] && [ "$n" = "${sizes[-1]}" ]; then
          # figure 4's pair: the same one-pod starts just before the burst,
          # on this node with none of the burst's pods (the same run, build
          # and stand-in state), so the ratio at 110 / at 0 is paired
          f4_perpod "$s" "$out/f4-$s-0"
        fi
        rm -f "$tmp/hold"
        client burst --data "$(datadir "$s")" --node "$(nodename "$s")" --endpoint "$(eval echo "\$endpoint_$s")" \
          --token-file "$(rootdir "$s")/endpoint.token" --count "$n" --hold-file "$tmp/hold" \
          --creates "$creates" --command "$cmd" >"$out/f3-$s-$n-$rep.jsonl" &
        local cpid=$!
        poll 600 test -e "$tmp/hold" || die "figure 3: the burst of $n did not come up"
        local mem mon
        api_metrics "$s" >"$tmp/mh"
        mem="$(agent_mem "$pid")$(agent_heap "$s")"
        mon=$(pod_overhead "$(rootdir "$s")")
        # and once the burst's work has settled (an agent gives the heap's
        # free pages back 2 s after its queues went idle)
        sleep 3
        mem+="; 3 s later: $(agent_mem "$pid")$(agent_heap "$s")"
        # BENCH_PEAK_HOOK=CMD: CMD AGENT_PID N ROUND SIDE runs at each burst's
        # peak (all Running), e.g. to read the agent's heap with gdb
        [ -z "${BENCH_PEAK_HOOK:-}" ] || $BENCH_PEAK_HOOK "$pid" "$n" "$rep" "$s" || true
        if want 4 && [ "$rep" = 1 ] && [ "$n" = "${sizes[-1]}" ]; then
          # figure 4: one pod at a time while the burst's pods run
          f4_perpod "$s" "$out/f4-$s"
          f4_n=$n
        fi
        rm -f "$tmp/hold"
        wait "$cpid" || die "figure 3: bench_client.py burst failed"
        jq -r 'select(.summary) | "first Running \(.first_running_ms|floor) ms, all Running \(.all_running_ms|floor) ms (creates took \(.create_ms|floor) ms), all gone \(.all_gone_ms|floor) ms after the deletes (the DELETEs took \(.delete_ms // 0|floor) ms)"' \
          "$out/f3-$s-$n-$rep.jsonl" >"$tmp/line"
        jq -r 'select((.summary or .delete) | not) | .running_ms' "$out/f3-$s-$n-$rep.jsonl" >"$out/f3-$s-$n-$rep-per"
        say "   cubelet$s $n pods ($label): $(cat "$tmp/line")"
        say "     per pod created -> Running: $(dist "$out/f3-$s-$n-$rep-per")"
        start_steps "$out/f3-$s-$n-$rep.jsonl" "$out/f3-$s-$n-$rep-start"
        delete_steps "$out/f3-$s-$n-$rep.jsonl" "$out/f3-$s-$n-$rep-del"
        say "     agent at $n pods: $mem; agent CPU for the burst $(awk -v a="$c0" -v b="$(cpu_s "$pid")" 'BEGIN {printf "%.2f", b - a}') s; after the deletes: $(agent_mem "$pid")$(agent_heap "$s"), 3 s later: $(sleep 3; agent_mem "$pid")$(agent_heap "$s")"
        say "     per pod on the node: $mon"
        api_metrics "$s" >"$tmp/m1"
        say "     API requests by verb, and seconds waited on the client-side rate limiter: $(api_delta "$tmp/m0" "$tmp/m1")"
        say "       of which from all Running to all gone (the deletion): $(api_delta "$tmp/mh" "$tmp/m1")"
      done
    done
  done
}
# start_steps JSONL PREFIX: each step of the agent's timeline from the
# pod's POST (ms), in the order of their medians, and the first-created
# pod's own steps: where the first pod of a burst waits
start_steps() {
  local step f
  say "     per pod from its POST sent (ms), the agent's steps to Running:"
  for step in $(jq -r 'select((.summary or .delete) | not) | .timeline | keys[]' "$1" | sort -u |
    grep -E '^(watched|admitted|volumesReady|sandboxNamespaces|sandboxNetwork|sandboxReady|imageReady|containerStarted|phase:Running|statusDelivered:Running)'); do
    f="$2-$(echo "$step" | tr ':/' '__')"
    jq -r --arg s "$step" 'select((.summary or .delete) | not) | .timeline[$s] // empty' "$1" >"$f"
    [ -s "$f" ] && echo "$(python3 "$tmp/stats.py" median "$f") $(printf '%-30s' "$step") $(dist "$f")"
  done | sort -n | cut -d' ' -f2- | while read -r line; do say "       $line"; done
  say "       the first pod created: $(jq -sr '[.[] | select((.summary or .delete) | not)] | min_by(.created_ms) |
    "Running seen \(.running_ms | floor) ms; " + ([.timeline | to_entries[] | select(.value < 60000)] | sort_by(.value) |
    map("\(.key) \(.value | floor)") | join(", "))' "$1")"
}
# delete_steps JSONL PREFIX: each step of the agent's timeline after the
# pod's DELETE was sent (ms from it; the agent keeps the last 64 pods gone),
# in the order of their medians, and the DELETED seen by the watch
delete_steps() {
  local step f
  jq -r 'select(.delete) | .gone_ms' "$1" >"$2-gone"
  [ -s "$2-gone" ] || return 0
  say "     per pod from its DELETE sent (ms), the agent's steps:"
  for step in $(jq -r 'select(.delete) | .timeline | keys[]' "$1" | sort -u); do
    f="$2-$(echo "$step" | tr ':/' '__')"
    jq -r --arg s "$step" 'select(.delete) | .timeline[$s] // empty' "$1" >"$f"
    [ -s "$f" ] && echo "$(python3 "$tmp/stats.py" median "$f") $(printf '%-30s' "$step") $(dist "$f")"
  done | sort -n | cut -d' ' -f2- | while read -r line; do say "       $line"; done
  say "       $(printf '%-30s' "gone (DELETED watched)") $(dist "$2-gone")"
}
# agent_heap SIDE: ", heap in use/free KiB" from the agent's metrics (none
# for an agent without cubelet_heap_bytes)
agent_heap() {
  curl -s "$(eval echo "\$endpoint_$1")/metrics" | awk '/^cubelet_heap_bytes\{state="in_use"\}/ {u = $2}
    /^cubelet_heap_bytes\{state="free"\}/ {f = $2} END {if (u != "") printf ", heap in use %d KiB, free %d KiB", u / 1024, f / 1024}'
}
# api_metrics SIDE: the agent's API client counters (lines "name{label} value")
api_metrics() {
  curl -s "$(eval echo "\$endpoint_$1")/metrics" | grep -E '^cubelet_api_(requests|rate_limiter_wait_seconds)_total' || true
}
api_delta() { # BEFORE AFTER
  awk 'NR == FNR { a[$1] = $2; next } { d = $2 - a[$1]; if (d > 0) {
         n = $1; sub(/^cubelet_api_requests_total\{verb="/, "", n); sub(/^cubelet_api_rate_limiter_wait_seconds_total\{bucket="/, "wait:", n);
         sub(/"\}$/, "", n); printf "%s%s=%s", (c++ ? ", " : ""), n, (n ~ /^wait:/ ? sprintf("%.3f", d) : d) } }
       END { if (!c) printf "(no counters: an agent without cubelet_api_* metrics)" }' "$1" "$2"
}
busy_of() { # PID SECONDS: CPU-seconds PID used in SECONDS
  local a
  a=$(cpu_s "$1")
  sleep "$2"
  awk -v a="$a" -v b="$(cpu_s "$1")" 'BEGIN {printf "%.2f", b - a}'
}
# pod_overhead ROOT: mean PSS/RSS of the monitors and pause processes now running
pod_overhead() {
  local f pid mp=0 mr=0 nm=0 pp=0 pr=0 np=0
  for f in "$1"/containers/*/state.json; do
    pid=$(jq -r 'select(.status == "running") | .monitorPid // empty' "$f" 2>/dev/null) || continue
    [ -n "$pid" ] && [ -r "/proc/$pid/smaps_rollup" ] || continue
    mp=$((mp + $(awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup"))); mr=$((mr + $(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status"))); nm=$((nm + 1))
  done
  for f in "$1"/sandboxes/*/state.json; do
    pid=$(jq -r '.pausePid // empty' "$f" 2>/dev/null) || continue
    [ -n "$pid" ] && [ -r "/proc/$pid/smaps_rollup" ] || continue
    pp=$((pp + $(awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup"))); pr=$((pr + $(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status"))); np=$((np + 1))
  done
  [ "$nm" -gt 0 ] || { echo "no running monitor found"; return; }
  echo "monitor PSS $((mp / nm)) KiB (RSS $((mr / nm))) x$nm$([ "$np" -gt 0 ] && echo ", pause PSS $((pp / np)) KiB (RSS $((pr / np))) x$np" || echo ", no pause process")"
}

fig4() {
  [ -n "${f4_n:-}" ] || return 0
  say ""
  say "4. one pod created -> Running observed with $f4_n pods already running, against the same just before the burst, $runs each"
  local s
  for s in "${sides[@]}"; do
    say "   cubelet$s at 0 (just before the burst): $(dist "$out/f4-$s-0-running")"
    say "   cubelet$s at $f4_n: $(dist "$out/f4-$s-running")"
    say "     ratio at $f4_n / at 0 (medians, paired: the same run, one after the other) $(python3 "$tmp/stats.py" ratio "$out/f4-$s-running" "$out/f4-$s-0-running" | sed 's/ (runs.*//')"
    # the steps that grew: each of the agent's steps at 110 against at 0
    local pair a b
    for pair in 'watched>admitted' 'admitted>sandboxNamespaces' 'sandboxNamespaces>sandboxNetwork' \
                'sandboxNetwork>sandboxReady' 'sandboxReady>containerStarted:main' \
                'containerStarted:main>statusDelivered:Running'; do
      a=${pair%%>*} b=${pair#*>}
      step_delta "$out/f4-$s-0.jsonl" "" "$a" "$b" >"$out/f4-$s-0-$a-$b"
      step_delta "$out/f4-$s.jsonl" "" "$a" "$b" >"$out/f4-$s-$f4_n-$a-$b"
      [ -s "$out/f4-$s-0-$a-$b" ] && [ -s "$out/f4-$s-$f4_n-$a-$b" ] &&
        say "     $(printf '%-44s' "$a:$b") at 0: $(python3 "$tmp/stats.py" p50p90 "$out/f4-$s-0-$a-$b"); at $f4_n: $(python3 "$tmp/stats.py" p50p90 "$out/f4-$s-$f4_n-$a-$b")"
    done
  done
  return 0
}
fig6_peers() {
  [ "$peers" -eq 1 ] || return 0
  say ""
  say "6. per running pod on the node, peers (one sleeping pod each)"
  "${P[@]}" kube play --network "$net" "$tmp/sleep.yaml" >/dev/null 2>&1 || die "podman kube play sleep failed"
  sleep 1
  local cid conmon pid name pss=0 what=""
  for cid in $("${P[@]}" ps -q --filter pod=sleep); do
    conmon=$("${P[@]}" inspect -f '{{.State.ConmonPid}}' "$cid")
    pid=$("${P[@]}" inspect -f '{{.State.Pid}}' "$cid")
    name=$("${P[@]}" inspect -f '{{.Name}}' "$cid")
    pss=$((pss + $(awk '/^Pss:/ {print $2}' "/proc/$conmon/smaps_rollup")))
    what+=" conmon($name) PSS $(awk '/^Pss:/ {print $2}' "/proc/$conmon/smaps_rollup")"
    if [[ "$name" == *-infra ]]; then
      pss=$((pss + $(awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup")))
      what+=" pause PSS $(awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup")"
    fi
  done
  "${P[@]}" kube down "$tmp/sleep.yaml" >/dev/null 2>&1
  say "   podman: $pss KiB per pod ($what KiB)"
  "${C[@]}" run -d --seccomp --net-host --cgroup "/$cgroot/ctr-sleep" "$IMAGE" sleeper sleep 3600 >/dev/null
  sleep 1
  local shim
  shim=$(pgrep -f -n -- "-namespace $CNS -id sleeper" || true)
  [ -n "$shim" ] && say "   containerd: shim PSS $(awk '/^Pss:/ {print $2}' "/proc/$shim/smaps_rollup") KiB (RSS $(awk '/^VmRSS:/ {print $2}' "/proc/$shim/status") KiB) per pod (no pause: ctr runs no sandbox); containerd itself $(agent_mem "$ctrd_pid")"
  "${C[@]}" task kill -s KILL sleeper >/dev/null 2>&1
  poll 10 eval '! "${C[@]}" task ls -q | grep -x sleeper >/dev/null' || true
  "${C[@]}" container rm sleeper >/dev/null 2>&1 || true
  # cubelet's pod, run-pod as the agent
  "${BIN[A]}" --root-dir "$root" --cni-conf-dir "$cni_dir" run-pod "$tmp/sleep.yaml" \
    --pod-logs-dir "$logs" --cgroup-root "$cgroot" >/dev/null 2>&1 &
  local rp=$!
  poll 20 eval '[ "$(pod_overhead "$root")" != "no running monitor found" ]' || die "cubelet's sleeping pod did not start"
  sleep 1
  say "   cubelet: $(pod_overhead "$root") per pod"
  kill -TERM "$rp"
  wait "$rp" 2>/dev/null || true
}

# ---- figure 7: counts per pod ----------------------------------------------------------
fig7() {
  local s v f
  say ""
  say "7. counts for one run-pod of once.yaml (strace -f, every process of the pod's start and teardown)"
  for s in "${sides[@]}"; do
    for v in cni host; do
      f=$tmp/strace-$s-$v
      strace -f -qq -o "$f" -e trace=fsync,fdatasync,syncfs,execve,clone,clone3,fork,vfork,mount,umount2 \
        "${BIN[$s]}" --root-dir "$(rootdir "$s")" --cni-conf-dir "$cni_dir" run-pod "$tmp/once-$v.yaml" \
        --pod-logs-dir "$logs" --cgroup-root "$cgroot" >/dev/null 2>&1 || true
      local main
      main=$(awk '/execve\(/ {print $1; exit}' "$f")
      say "   cubelet$s ($v): $(awk -v m="$main" '
        $2 ~ /^(clone|clone3|fork|vfork)\(/ && $0 !~ /CLONE_THREAD/ && $NF !~ /^-/ {p++}
        $2 ~ /^(clone|clone3)\(/ && $0 ~ /CLONE_THREAD/ {t++}
        ($2 ~ /^execve\(/ || $0 ~ /<... execve resumed>/) && $0 ~ /= 0$/ {e++}
        $2 ~ /^(fsync|fdatasync|syncfs)\(/ {s++; if ($1 == m) sm++}
        $2 ~ /^mount\(/ {mo++}
        $2 ~ /^umount2\(/ {um++}
        END {printf "%d processes forked, %d threads, %d execs, %d fsyncs (%d on the event loop thread), %d mounts, %d umounts", p, t, e, s, sm, mo, um}' "$f")"
    done
  done
}

# ---- figure 8: placing a process in a cgroup -----------------------------------------
# A write to cgroup.procs takes the kernel's cgroup_threadgroup_rwsem for
# writing, which after a quiet spell waits for an RCU grace period; clone3
# with CLONE_INTO_CGROUP (cgroup2 only) does not (docs/child-setup-order.md).
fig8() {
  local prog=$tmp/bench_cgplace d v2="" n=$((runs < 20 ? 20 : runs)) kind gap
  ${CC:-cc} -O2 -std=gnu17 -o "$prog" "$top/scripts/bench_cgplace.c" || die "cannot build bench_cgplace"
  say ""
  say "8. placing a new process in a cgroup (fork + cgroup.procs write; v1: fork + the child's \"0\" to tasks, as the container init; v2: clone3 CLONE_INTO_CGROUP), ms, $n each"
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then v2=/sys/fs/cgroup/$cgroot-place
  elif [ -d /sys/fs/cgroup/unified ]; then v2=/sys/fs/cgroup/unified/$cgroot-place; fi
  local dirs=()
  [ -d /sys/fs/cgroup/cpu ] && [ ! -f /sys/fs/cgroup/cgroup.controllers ] && dirs+=("v1:/sys/fs/cgroup/cpu/$cgroot-place")
  [ -n "$v2" ] && dirs+=("v2:$v2")
  for d in "${dirs[@]}"; do
    mkdir -p "${d#*:}" || die "cannot make ${d#*:}"
  done
  for gap in 200 0; do
    for d in "${dirs[@]}"; do
      for kind in write self clone; do
        [ "$kind" = clone ] && [ "${d%%:*}" = v1 ] && continue
        [ "$kind" = self ] && [ "${d%%:*}" = v2 ] && continue
        "$prog" "$kind" "${d#*:}" "$gap" "$n" >"$out/place-${d%%:*}-$kind-$gap" ||
          { rmdir "${dirs[@]#*:}" 2>/dev/null; die "bench_cgplace $kind ${d#*:} failed"; }
        say "   $(printf '%-3s %-26s %-22s' "${d%%:*}" "$(case $kind in write) echo "fork + cgroup.procs" ;; self) echo "fork + the child's tasks" ;; *) echo "clone3 CLONE_INTO_CGROUP" ;; esac)" "$([ "$gap" = 0 ] && echo "back to back" || echo "${gap} ms apart")") $(dist "$out/place-${d%%:*}-$kind-$gap")"
      done
    done
  done
  for d in "${dirs[@]}"; do rmdir "${d#*:}" 2>/dev/null || true; done
}

# ---- the run ------------------------------------------------------------------------
say "bench.sh $(git -C "$top" describe --always --dirty 2>/dev/null), $(date -u +%Y-%m-%dT%H:%MZ); cubelet A: $bin_a${bin_b:+; B: $bin_b}"
say "machine: $machine"
want 1 && { progress "figure 1"; fig1; }
want 2 && { progress "figure 2"; fig2; }
want 5 && { progress "figure 5"; fig5; }
{ want 3 || want 4 || want 6; } && { progress "figures 3, 4 and 6"; fig3; }
want 4 && fig4
want 6 && { progress "figure 6, peers"; fig6_peers; }
want 7 && { progress "figure 7"; fig7; }
want 8 && { progress "figure 8"; fig8; }
stop_pids "${bg_pids[@]}" || true
bg_pids=()
agent_pid=""
load_after="loadavg $(cut -d' ' -f1-3 /proc/loadavg), busy $(busy_cores 3) cores over 3 s"
busy1=$(echo "$load_after" | awk '{for (i = 1; i <= NF; i++) if ($i == "busy") print $(i + 1)}')
verdict=quiet
if awk -v a="$busy0" -v b="$busy1" -v l="$busy_limit" 'BEGIN { exit !(a > l || b > l) }'; then
  verdict=noisy
fi
{
  echo "load before: $load_before; after: $load_after (other work: $verdict; limit $busy_limit cores busy)"
  cat "$report"
} >"$tmp/final"
if [ "$verdict" = noisy ] && [ "$noisy" -eq 0 ]; then
  echo "bench.sh: other work ran on this machine (before: $load_before; after: $load_after): not reporting; --noisy reports anyway" >&2
  exit 3
fi
[ "$verdict" = quiet ] || echo "NOISY: other work ran beside this benchmark; ratios of alternated runs only"
cat "$tmp/final"
if [ -n "${BENCH_KEEP:-}" ]; then cp "$tmp/final" "$BENCH_KEEP"; cp -r "$out" "$BENCH_KEEP.d"; fi
