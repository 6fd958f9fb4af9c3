#!/usr/bin/env bash
# Builds the initramfs of the cgroup v2 test VM: busybox-static, init.sh as
# /init, and the test binary under /test with the shared libraries and the
# dynamic loader it needs (from ldd).
# Usage: build-initramfs.sh OUTPUT.cpio.gz TEST_BINARY
set -euo pipefail

out=$1
bin=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

[ -x "$bin" ] || { echo "build-initramfs: $bin is not an executable" >&2; exit 1; }
# The VM has no libc of its own for busybox: it must be the static one
# (ldd fails on a static executable).
busybox=
for c in /bin/busybox /usr/bin/busybox; do
  if [ -x "$c" ] && ! ldd "$c" >/dev/null 2>&1; then busybox=$c; break; fi
done
[ -n "$busybox" ] || { echo "build-initramfs: no static busybox; apt-get install busybox-static" >&2; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,test,etc}
cp "$busybox" "$stage/bin/busybox"
cp "$here/init.sh" "$stage/init"
chmod 0755 "$stage/init"
cp "$bin" "$stage/test/"

# "libx.so.1 => /lib/x86_64-linux-gnu/libx.so.1 (0x...)" and the loader line
# "/lib64/ld-linux-x86-64.so.2 (0x...)": copy each, keeping its path.
ldd "$bin" | awk '/=> \//{print $3} /^[ \t]*\//{print $1}' | sort -u | while read -r lib; do
  mkdir -p "$stage$(dirname "$lib")"
  cp -L "$lib" "$stage$lib"
done

if command -v cpio >/dev/null; then
  (cd "$stage" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 >"$out"
else
  (cd "$stage" && find . | "$busybox" cpio -o -H newc 2>/dev/null) | gzip -1 >"$out"
fi
