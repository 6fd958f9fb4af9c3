#!/usr/bin/env bash
# Builds a small busybox image from Debian's busybox-static, with umoci.
#
#   build-busybox.sh OUTDIR
#
# Writes OUTDIR/layout (an OCI image layout, tag "1.36") and
# OUTDIR/busybox.oci.tar (the same layout as an oci-archive tarball).
# The image has two layers so that whiteouts get exercised: the first holds
# /bin/busybox, its applet symlinks, /etc/passwd, /etc/group and
# /etc/removed-later; the second deletes /etc/removed-later and adds
# /etc/image-release. Needs root (umoci unpack keeps ownership), umoci and
# busybox-static (scripts/deps.sh installs both).
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
out=$1
busybox=/bin/busybox
for tool in umoci tar; do
  command -v "$tool" >/dev/null || { echo "$0: $tool not found (apt-get install $tool)" >&2; exit 1; }
done
if ! "$busybox" --list >/dev/null 2>&1 || ! { ldd "$busybox" 2>&1 || true; } | grep -q "not a dynamic"; then
  echo "$0: $busybox missing or not static (apt-get install busybox-static)" >&2
  exit 1
fi

mkdir -p "$out"
layout=$out/layout
bundle=$(mktemp -d)
trap 'rm -rf "$bundle"' EXIT
rm -rf "$layout" "$out/busybox.oci.tar"

umoci init --layout "$layout"
umoci new --image "$layout:1.36"
umoci unpack --image "$layout:1.36" "$bundle/b"
root=$bundle/b/rootfs

# Layer 1: busybox, applet links, users.
mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/root" "$root/home" "$root/proc" \
  "$root/sys" "$root/dev"
chmod 1777 "$root/tmp"
chmod 0700 "$root/root"
install -m 0755 "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
  [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
done
cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
cat >"$root/etc/group" <<'EOF'
root:x:0:
nobody:x:65534:
EOF
echo "this file is deleted by the second layer" >"$root/etc/removed-later"
umoci repack --image "$layout:1.36" "$bundle/b"

# Layer 2: a whiteout and a new file. A repack diffs against the bundle's
# unpack, so the second layer needs a fresh bundle of the first.
umoci unpack --image "$layout:1.36" "$bundle/b2"
rm "$bundle/b2/rootfs/etc/removed-later"
echo "cubelet test busybox 1.36" >"$bundle/b2/rootfs/etc/image-release"
umoci repack --image "$layout:1.36" "$bundle/b2"

umoci config --image "$layout:1.36" \
  --config.cmd=sh \
  --config.env=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --config.workingdir=/ \
  --config.stopsignal=SIGTERM \
  --author=cubelet-tests
umoci gc --layout "$layout"

tar -C "$layout" -cf "$out/busybox.oci.tar" .
echo "$layout:1.36"
