#!/usr/bin/env bash
# The cgroup manager on cgroup v2 (unified), for real: boots Debian's kernel
# under qemu (software emulation, no KVM needed) with an initramfs holding
# busybox and tests/unit/test_cgroups_live; its init (tests/vm/init.sh)
# mounts cgroup2 at /sys/fs/cgroup, runs the tests and prints
# "CUBELET-VM-RESULT rc=N" on the serial console, which is checked here.
# In the same boot it then runs a real pod (tests/vm/pod-limits.yaml) with
# `cubelet run-pod` on a tmpfs root (the initramfs also holds cubelet, jq,
# the busybox OCI image, overlay.ko and the expected cgroup values from
# `cubelet inspect`) and prints "CUBELET-POD-RESULT: PASS|FAIL ...".
# Then, on the same root, the mount and exec attempts of the escape suite
# (tests/integration/lib/escape_attempts.sh, shared with escapes.sh) run as
# pods on cgroup v2, each printing "CUBELET-ESCAPE: <name> REFUSED|ESCAPED":
# every attempt of the list must be there, refused.
# Env: CUBELET (<build>/agent/cubelet, to find <build>/tests), SOURCE_DIR.
# Exit 77 when qemu, a kernel, jq, umoci, python3 or busybox-static is missing and
# cannot be installed.
# CUBELET_VM_KERNEL overrides the kernel image; CUBELET_VM_CONSOLE=FILE keeps
# the serial console log.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
: "${CUBELET:?set CUBELET to <build>/agent/cubelet}"
build=$(dirname "$(dirname "$CUBELET")")
test_bin=$build/tests/test_cgroups_live
timeout_s=${CUBELET_VM_TIMEOUT:-480}

[ -x "$test_bin" ] || { echo "cgroupv2_qemu: $test_bin not built" >&2; exit 1; }
[ -x "$CUBELET" ] || { echo "cgroupv2_qemu: $CUBELET not built" >&2; exit 1; }
for t in jq umoci python3; do
  command -v $t >/dev/null || { echo "cgroupv2_qemu: $t missing (scripts/deps.sh installs it); skipped" >&2; exit 77; }
done

find_kernel() {
  if [ -n "${CUBELET_VM_KERNEL:-}" ]; then echo "$CUBELET_VM_KERNEL"; return; fi
  find /boot -maxdepth 1 -name "vmlinuz-*-amd64" 2>/dev/null | sort -V | tail -n 1
}

qemu=$(command -v qemu-system-x86_64 || true)
kernel=$(find_kernel)
if [ -z "$qemu" ] || [ -z "$kernel" ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "cgroupv2_qemu: installing qemu-system-x86 and linux-image-amd64" >&2
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends \
        qemu-system-x86 linux-image-amd64; } >/dev/null 2>&1 || true
    qemu=$(command -v qemu-system-x86_64 || true)
    kernel=$(find_kernel)
  fi
fi
if [ -z "$qemu" ] || [ -z "$kernel" ] || [ ! -r "$kernel" ]; then
  echo "cgroupv2_qemu: qemu-system-x86_64 or a kernel in /boot is missing (scripts/deps.sh installs them); skipped" >&2
  exit 77
fi

harness_init cgroupv2-qemu
console=$tmp/console.log

# The pod: its manifest, uid, the plan's v2 cgroup values ("NAME FILE VALUE",
# NAME a container or "pod"), the busybox image and the overlay module of the
# VM's kernel.
pod_yaml=$SOURCE_DIR/tests/vm/pod-limits.yaml
kver=$(basename "$kernel" | sed 's/^vmlinuz-//')
overlay_ko=/lib/modules/$kver/kernel/fs/overlayfs/overlay.ko
[ -r "$overlay_ko" ] || { echo "cgroupv2_qemu: $overlay_ko missing (the VM kernel's overlay module)" >&2; exit 1; }
[ -z "$(modinfo -F depends "$overlay_ko" 2>/dev/null)" ] ||
  { echo "cgroupv2_qemu: overlay.ko depends on other modules now; add them" >&2; exit 1; }
"$CUBELET" inspect "$pod_yaml" >"$tmp/plan.json"
uid=$(sed -n 's/^  uid: *//p' "$pod_yaml")
[ -n "$uid" ] || { echo "cgroupv2_qemu: $pod_yaml sets no metadata.uid" >&2; exit 1; }
echo "$uid" >"$tmp/uid"
jq -r '(.cgroups.pod.v2 | to_entries[] | "pod \(.key) \(.value)"),
       (.cgroups.containers[] | .name as $n | .v2 | to_entries[] | "\($n) \(.key) \(.value)")' \
  "$tmp/plan.json" >"$tmp/expect.txt"
grep -qx 'hog memory.max 33554432' "$tmp/expect.txt" ||
  { echo "cgroupv2_qemu: the plan has no memory.max 33554432 for hog:" >&2; cat "$tmp/expect.txt" >&2; exit 1; }
bash "$SOURCE_DIR/tests/images/build-busybox.sh" "$tmp/image" >/dev/null
# The escape attempts: their names (what the console must report) and the
# hostile image archives they import.
escape_lib=$SOURCE_DIR/tests/integration/lib/escape_attempts.sh
. "$escape_lib"
escape_names "$escape_mount_exec" >"$tmp/escapes.expected"
escape_make_tars "$tmp/tars"

"$SOURCE_DIR/tests/vm/build-initramfs.sh" "$tmp/initramfs.cpio.gz" "$test_bin" \
  --exe "$CUBELET" --exe "$(dirname "$CUBELET")/cubelet-unpack" --exe "$(command -v jq)" \
  --file "$pod_yaml=/pod/pod.yaml" --file "$tmp/uid=/pod/uid" \
  --file "$tmp/expect.txt=/pod/expect.txt" --file "$tmp/image/busybox.oci.tar=/pod/busybox.oci.tar" \
  --file "$overlay_ko=/lib/modules/overlay.ko" --file "$escape_lib=/escapes/attempts.sh" \
  --file "$tmp/tars/fifo.tar=/escapes/tars/fifo.tar" --file "$tmp/tars/device.tar=/escapes/tars/device.tar" \
  --file "$tmp/tars/symlink.tar=/escapes/tars/symlink.tar"
echo "cgroupv2_qemu: initramfs $(du -h "$tmp/initramfs.cpio.gz" | cut -f1); expected cgroup values:"
sed 's/^/  /' "$tmp/expect.txt"

start=$(date +%s.%N)
rc=0
timeout --kill-after=10 "$timeout_s" "$qemu" \
  -accel tcg -m 1024 -smp 1 -nographic -no-reboot -nic none \
  -kernel "$kernel" -initrd "$tmp/initramfs.cpio.gz" \
  -append "console=ttyS0 panic=-1 quiet" \
  </dev/null >"$console" 2>&1 || rc=$?
end=$(date +%s.%N)
[ -n "${CUBELET_VM_CONSOLE:-}" ] && cp "$console" "$CUBELET_VM_CONSOLE"

# The VM's own view: test output and markers (drop the terminal escapes).
tr -d '\r' <"$console" | sed -e 's/\x1b\[[0-9;?]*[a-zA-Z]//g; s/\x1bc//g' \
  | grep -E 'CUBELET-|test_cgroups_live|Checks:|:[FE]:|Kernel panic' || true

if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  echo "cgroupv2_qemu: FAIL: the VM did not finish within ${timeout_s}s; console:" >&2
  tail -n 40 "$console" >&2
  exit 1
fi
result=$(tr -d '\r' <"$console" | sed -n 's/.*CUBELET-VM-RESULT rc=\([0-9]*\).*/\1/p' | tail -n 1)
echo "cgroupv2_qemu: VM wall time $(awk "BEGIN{printf \"%.1f\", $end - $start}")s (qemu exit $rc)"
# Where the time went, from the VM's uptime markers.
tr -d '\r' <"$console" | awk '
  /CUBELET-VM-BOOTED/ { for (i = 1; i <= NF; i++) if ($i ~ /^uptime=/) boot = substr($i, 8) }
  /CUBELET-VM-RESULT/ { for (i = 1; i <= NF; i++) if ($i ~ /^test_seconds=/) tests = substr($i, 14) }
  /CUBELET-POD-STAGE tmpfs root ready/ { for (i = 1; i <= NF; i++) if ($i ~ /^uptime=/) root = substr($i, 8) }
  /CUBELET-POD-TIMES/ { times = $0; sub(/.*CUBELET-POD-TIMES /, "", times) }
  /CUBELET-ESCAPES-DONE/ { for (i = 1; i <= NF; i++) if ($i ~ /^seconds=/) esc = substr($i, 9) }
  END { printf "cgroupv2_qemu: times: boot %s, cgroup tests %ss, tmpfs root ready at %s, pod %s, escape attempts %ss\n",
        boot, tests, root, times, esc }'
if [ -z "$result" ]; then
  echo "cgroupv2_qemu: FAIL: no CUBELET-VM-RESULT marker on the console; last lines:" >&2
  tail -n 40 "$console" >&2
  exit 1
fi
if grep -q 'CUBELET-VM-LEFTOVER' "$console"; then
  echo "cgroupv2_qemu: FAIL: the tests or the pods left cgroups behind in the VM: $(grep -a 'CUBELET-VM-LEFTOVER' "$console" | head -3)" >&2
  exit 1
fi
if [ "$result" -ne 0 ]; then
  echo "cgroupv2_qemu: FAIL: test_cgroups_live exited $result on cgroup v2" >&2
  exit 1
fi
echo "cgroupv2_qemu: test_cgroups_live passed on cgroup v2 (unified)"
pod=$(tr -d '\r' <"$console" | sed -n 's/.*\(CUBELET-POD-RESULT: .*\)/\1/p' | tail -n 1)
if [ -z "$pod" ]; then
  echo "cgroupv2_qemu: FAIL: no CUBELET-POD-RESULT marker on the console; last lines:" >&2
  tail -n 40 "$console" >&2
  exit 1
fi
if [ "$pod" != "CUBELET-POD-RESULT: PASS" ]; then
  echo "cgroupv2_qemu: FAIL: the pod in the VM: ${pod#CUBELET-POD-RESULT: }" >&2
  exit 1
fi
# The escape attempts: each expected one reported, and refused.
tr -d '\r' <"$console" | sed -e 's/\x1b\[[0-9;?]*[a-zA-Z]//g' | sed -n 's/.*\(CUBELET-ESCAPE: .*\)/\1/p' >"$tmp/escapes.seen"
tried=0
refused=0
missing=
while IFS= read -r name; do
  tried=$((tried + 1))
  if grep -Fxq "CUBELET-ESCAPE: $name REFUSED" "$tmp/escapes.seen" &&
    ! grep -Fxq "CUBELET-ESCAPE: $name ESCAPED" "$tmp/escapes.seen"; then
    refused=$((refused + 1))
  else
    missing="$missing
  $name: $(grep -F "CUBELET-ESCAPE: $name " "$tmp/escapes.seen" | sed 's/.* //' | paste -sd, || true)"
  fi
done <"$tmp/escapes.expected"
escaped_any=$(grep -E ' ESCAPED$' "$tmp/escapes.seen" || true)
echo "cgroupv2_qemu: escape attempts on cgroup v2: $tried tried, $refused refused"
if [ "$refused" -ne "$tried" ] || [ "$tried" -eq 0 ] || [ -n "$escaped_any" ]; then
  echo "cgroupv2_qemu: FAIL: escape attempts not refused or not reported (none: no marker):$missing" >&2
  [ -z "$escaped_any" ] || echo "$escaped_any" >&2
  exit 1
fi
echo "cgroupv2_qemu: PASS: test_cgroups_live, the pod (OOMKilled hog, cgroup v2 limits as planned) and $refused escape attempts refused, on cgroup v2"
