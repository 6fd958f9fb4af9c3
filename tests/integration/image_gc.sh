#!/usr/bin/env bash
# Image garbage collection as an operator sees it: the agent against the
# stand-in with its --root-dir on a 64 MiB tmpfs, the busybox test image and
# four variants of it (a 6 MiB random layer each, so every one has its own
# digest), imported oldest first, and a pod running busybox:1.36 (the
# oldest image of all).
#  A. thresholds set so that about two variants must go: gc-1 and gc-2 are
#     removed, in that order, gc-3 and gc-4 stay, busybox:1.36 (in use)
#     stays; cubelet_image_garbage_collected_total{reason="space"} counts 2;
#  B. a low threshold no removal can reach: the unused variants go, the
#     image in use stays, FreeDiskSpaceFailed (the kubelet's message) on
#     the Node, and ImageGCFailed from the second failing run on;
#  C. disk-pressure eviction (imagefs.available) with the collector's
#     thresholds out of reach: the eviction manager reclaims an unused image
#     first and evicts no pod.
# Exit 77 when not root or a tool is missing.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
need_root
need_tools jq umoci ip busybox kubectl openssl python3 curl /usr/bin/etcd
need_cni bridge host-local
NODE=imagegc-node-$$
harness_init imagegc

mkdir -p "$root"
mount -t tmpfs -o size=64m cubelet-imagegc "$root" || skip "cannot mount a tmpfs"
# df of the image filesystem: capacity and available bytes
fs() { df -B1 --output="$1" "$root" | tail -n1 | tr -d ' '; }
images() { "$CUBELET" --root-dir "$root" image ls 2>/dev/null; }
has_image() { images | grep -q "$1"; }

# ---- the images -------------------------------------------------------------------
import_busybox
# variant N: the busybox layout with one more layer of 6 MiB of random bytes
variant() {
        local n=$1 l=$tmp/v$1
        cp -a "$tmp/img/layout" "$l" || die "copy of the layout"
        umoci unpack --image "$l:1.36" "$tmp/b$n" >/dev/null || die "umoci unpack"
        head -c $((6 << 20)) /dev/urandom >"$tmp/b$n/rootfs/fill-$n"
        umoci repack --image "$l:1.36" "$tmp/b$n" >/dev/null || die "umoci repack"
        umoci gc --layout "$l"
        tar -C "$l" -cf "$tmp/v$n.tar" . || die "tar"
        rm -rf "$tmp/b$n" "$l"
        "$CUBELET" --root-dir "$root" image import "$tmp/v$n.tar" --name "gc-$n:1" >/dev/null ||
                die "import of gc-$n failed"
}
for n in 1 2 3 4; do variant $n; done
[ "$(images | grep -c 'gc-[1-4]')" -eq 4 ] || die "the variants were not all imported: $(images)"

write_cni_conf
start_standin
run_agent() {
        start_agent -v 1 --kubeconfig "$data/node.kubeconfig" --node-ip 10.0.0.5 \
                --node-status-update-frequency 1s --healthz-port 0 \
                --minimum-image-ttl-duration 1s --image-gc-period 2s "$@"
}

# The pod first, with the collector off (100%): its container then holds
# busybox:1.36 when the collector runs.
run_agent --image-gc-high-threshold 100 --image-gc-low-threshold 99
node_ready
mkpod user <<'EOP'
  containers:
  - {name: c, image: busybox:1.36, command: [sh, -c, 'trap "exit 0" TERM; while :; do sleep 1; done']}
EOP
wait_running user 60
grep -q "image garbage collection: high threshold" "$tmp/agent.log" &&
        fail "the collector ran with imageGCHighThresholdPercent 100"
stop_agent

# ---- A. down to the low threshold, least recently used first ----------------------------
cap=$(fs size)
avail=$(fs avail)
usage=$((100 - avail * 100 / cap))
size1=$(jq -r '.images[] | select(.ref | test("/gc-1:1$")) | .size' "$root/images/index.json")
[ "${size1:-0}" -gt $((6 << 20)) ] || die "gc-1 has size '$size1'"
# free about 1.5 variants: the low threshold that leaves avail + 1.5*size
low=$((100 - (avail + size1 * 3 / 2) * 100 / cap))
high=$((usage - 1))
[ "$low" -gt 0 ] && [ "$high" -gt "$low" ] || die "tmpfs usage $usage% too low for the test"
echo "tmpfs: $cap bytes, $avail available ($usage%); variant size $size1; thresholds $high/$low"
t0=$(now)
run_agent --image-gc-high-threshold "$high" --image-gc-low-threshold "$low"
poll 30 eval '! has_image gc-2' || fail "gc-2 still there after 30 s: $(images)"
echo "removed in $(since "$t0") s"
has_image gc-1 && fail "gc-1 (the oldest unused) was not removed"
has_image gc-3 || fail "gc-3 was removed: more than needed to reach ${low}%"
has_image gc-4 || fail "gc-4 was removed"
has_image busybox:1.36 || fail "busybox:1.36, in use by a container, was removed"
r1=$(grep -n 'removed image .*gc-1:1' "$tmp/agent.log" | head -n1 | cut -d: -f1)
r2=$(grep -n 'removed image .*gc-2:1' "$tmp/agent.log" | head -n1 | cut -d: -f1)
[ -n "$r1" ] && [ -n "$r2" ] && [ "$r1" -lt "$r2" ] || fail "gc-1 did not go before gc-2 (lines $r1, $r2)"
phase_is user Running || fail "the pod stopped"
[ -z "$(events_of Node "$NODE" FreeDiskSpaceFailed)" ] || fail "FreeDiskSpaceFailed although enough was freed"
sleep 3 # another run or two: nothing more goes
has_image gc-3 || fail "gc-3 went in a later run"
pass "A: gc-1 then gc-2 removed, gc-3, gc-4 and the image in use kept"
stop_agent

# ---- B. a threshold out of reach: the kubelet's events ------------------------------------
run_agent --image-gc-high-threshold 2 --image-gc-low-threshold 1
poll 30 eval '[ -n "$(events_of Node "$NODE" ImageGCFailed)" ]' || fail "no ImageGCFailed event"
ev=$(events_of Node "$NODE" FreeDiskSpaceFailed | head -n1)
echo "$ev" | grep -Eq '^Warning\|Failed to garbage collect required amount of images\. Attempted to free [0-9]+ bytes, but only found [0-9]+ bytes eligible to free\.$' ||
        fail "FreeDiskSpaceFailed: '$ev'"
ig=$(events_of Node "$NODE" ImageGCFailed | head -n1)
echo "$ig" | grep -Eq '^Warning\|Failed to garbage collect required amount of images\.' || fail "ImageGCFailed: '$ig'"
grep -q "image garbage collection failed once" "$tmp/agent.log" || fail "the first failure was not logged as once"
has_image gc-3 && fail "gc-3 kept although usage is over the threshold"
has_image gc-4 && fail "gc-4 kept although usage is over the threshold"
has_image busybox:1.36 || fail "the image in use was removed"
phase_is user Running || fail "the pod stopped"
pass "B: FreeDiskSpaceFailed and ImageGCFailed on the Node, the image in use kept"
stop_agent

# ---- C. disk pressure reclaims images before it evicts pods ---------------------------------
before=$(fs avail)
variant 5
after=$(fs avail)
# met with gc-5 stored, no longer once it is gone; gc-5 older than the
# minimum age (1 s) before the first eviction cycle
th=$(((before + after) / 2))
sleep 1.5
run_agent --image-gc-high-threshold 100 --image-gc-low-threshold 99 --eviction-hard "imagefs.available<${th}"
poll 40 eval '! has_image gc-5' || fail "disk pressure did not reclaim gc-5: $(images)"
wait_log "able to reduce ephemeral-storage pressure without evicting pods" 20
sleep 2
phase_is user Running || fail "the pod was evicted although the images were enough: $(pj user '{.status.reason}')"
[ -z "$(events_of Pod user Evicted)" ] || fail "an Evicted event for the pod"
has_image busybox:1.36 || fail "the image in use was removed under pressure"
pass "C: disk pressure reclaimed the unused image, no pod evicted"
stop_agent
finish
