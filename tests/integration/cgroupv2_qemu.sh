#!/usr/bin/env bash
# The cgroup manager on cgroup v2 (unified), for real: boots Debian's kernel
# under qemu (software emulation, no KVM needed) with an initramfs holding
# busybox and tests/unit/test_cgroups_live; its init (tests/vm/init.sh)
# mounts cgroup2 at /sys/fs/cgroup, runs the tests and prints
# "CUBELET-VM-RESULT rc=N" on the serial console, which is checked here.
# Env: CUBELET (<build>/agent/cubelet, to find <build>/tests), SOURCE_DIR.
# Exit 77 when qemu or a kernel is missing and cannot be installed.
# CUBELET_VM_KERNEL overrides the kernel image; CUBELET_VM_CONSOLE=FILE keeps
# the serial console log.
set -euo pipefail

SOURCE_DIR=${SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
: "${CUBELET:?set CUBELET to <build>/agent/cubelet}"
build=$(dirname "$(dirname "$CUBELET")")
test_bin=$build/tests/test_cgroups_live
timeout_s=${CUBELET_VM_TIMEOUT:-240}

[ -x "$test_bin" ] || { echo "cgroupv2_qemu: $test_bin not built" >&2; exit 1; }

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

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
console=$tmp/console.log

"$SOURCE_DIR/tests/vm/build-initramfs.sh" "$tmp/initramfs.cpio.gz" "$test_bin"

start=$(date +%s.%N)
rc=0
timeout --kill-after=10 "$timeout_s" "$qemu" \
  -accel tcg -m 512 -smp 1 -nographic -no-reboot -nic none \
  -kernel "$kernel" -initrd "$tmp/initramfs.cpio.gz" \
  -append "console=ttyS0 panic=-1 quiet" \
  </dev/null >"$console" 2>&1 || rc=$?
end=$(date +%s.%N)
[ -n "${CUBELET_VM_CONSOLE:-}" ] && cp "$console" "$CUBELET_VM_CONSOLE"

# The VM's own view: test output and markers (drop the terminal escapes).
tr -d '\r' <"$console" | sed -e 's/\x1b\[[0-9;?]*[a-zA-Z]//g; s/\x1bc//g' \
  | grep -E 'CUBELET-VM-|test_cgroups_live|Checks:|:[FE]:|Kernel panic' || true

if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  echo "cgroupv2_qemu: FAIL: the VM did not finish within ${timeout_s}s; console:" >&2
  tail -n 40 "$console" >&2
  exit 1
fi
result=$(tr -d '\r' <"$console" | sed -n 's/.*CUBELET-VM-RESULT rc=\([0-9]*\).*/\1/p' | tail -n 1)
echo "cgroupv2_qemu: VM wall time $(awk "BEGIN{printf \"%.1f\", $end - $start}")s (qemu exit $rc)"
if [ -z "$result" ]; then
  echo "cgroupv2_qemu: FAIL: no CUBELET-VM-RESULT marker on the console; last lines:" >&2
  tail -n 40 "$console" >&2
  exit 1
fi
if grep -q 'CUBELET-VM-LEFTOVER' "$console"; then
  echo "cgroupv2_qemu: FAIL: the tests left cgroups behind in the VM" >&2
  exit 1
fi
if [ "$result" -ne 0 ]; then
  echo "cgroupv2_qemu: FAIL: test_cgroups_live exited $result on cgroup v2" >&2
  exit 1
fi
echo "cgroupv2_qemu: PASS: test_cgroups_live passed on cgroup v2 (unified)"
