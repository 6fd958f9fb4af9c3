#!/usr/bin/env bash
# Builds the initramfs of the cgroup v2 test VM: busybox-static, init.sh as
# /init, and the test binary under /test with the shared libraries and the
# dynamic loader it needs (from ldd).
# Usage: build-initramfs.sh OUTPUT.cpio.gz TEST_BINARY [--exe PATH]... [--file SRC=DEST]...
#   --exe PATH      also copies the executable PATH to /usr/local/bin with its
#                   shared libraries (cubelet, jq for the pod check)
#   --file SRC=DEST copies the file SRC to DEST in the image (the pod
#                   manifest, the OCI image, kernel modules)
set -euo pipefail

out=$1
bin=$2
shift 2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

exes=("$bin")
files=()
while [ $# -gt 0 ]; do
  case $1 in
    --exe) [ $# -ge 2 ] || { echo "build-initramfs: --exe needs a PATH" >&2; exit 2; }
           exes+=("$2"); shift 2 ;;
    --file) [ $# -ge 2 ] && [[ $2 == *=/* ]] || { echo "build-initramfs: --file needs SRC=/DEST" >&2; exit 2; }
            files+=("$2"); shift 2 ;;
    *) echo "build-initramfs: unknown argument $1" >&2; exit 2 ;;
  esac
done

for e in "${exes[@]}"; do
  [ -x "$e" ] || { echo "build-initramfs: $e is not an executable" >&2; exit 1; }
done
# The VM has no libc of its own for busybox: it must be the static one
# (ldd fails on a static executable).
busybox=
for c in /bin/busybox /usr/bin/busybox; do
  if [ -x "$c" ] && ! ldd "$c" >/dev/null 2>&1; then busybox=$c; break; fi
done
[ -n "$busybox" ] || { echo "build-initramfs: no static busybox; apt-get install busybox-static" >&2; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,proc,sys,dev,tmp,test,etc}
cp "$busybox" "$stage/bin/busybox"
cp "$here/init.sh" "$stage/init"
chmod 0755 "$stage/init"
cp "$bin" "$stage/test/"
for e in "${exes[@]:1}"; do
  cp -L "$e" "$stage/usr/local/bin/"
done

# "libx.so.1 => /lib/x86_64-linux-gnu/libx.so.1 (0x...)" and the loader line
# "/lib64/ld-linux-x86-64.so.2 (0x...)": copy each, keeping its path.
for e in "${exes[@]}"; do
  ldd "$e" | awk '/=> \//{print $3} /^[ \t]*\//{print $1}'
done | sort -u | while read -r lib; do
  mkdir -p "$stage$(dirname "$lib")"
  cp -L "$lib" "$stage$lib"
done

for f in ${files[@]+"${files[@]}"}; do
  src=${f%%=/*}
  dest=/${f#*=/}
  [ -r "$src" ] || { echo "build-initramfs: $src is not readable" >&2; exit 1; }
  mkdir -p "$stage$(dirname "$dest")"
  cp -L "$src" "$stage$dest"
done

if command -v cpio >/dev/null; then
  (cd "$stage" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 >"$out"
else
  (cd "$stage" && find . | "$busybox" cpio -o -H newc 2>/dev/null) | gzip -1 >"$out"
fi
