#!/bin/sh
# no_libarchive.sh BINARY: fails when BINARY needs libarchive. Layers are
# unpacked in cubelet-unpack (runtime/unpack_helper.c), so the agent maps
# neither libarchive nor what it pulls in (libxml2, ICU, libstdc++: ~2 MB of
# RSS), and a crash in its decoders cannot take the agent down (issue 17).
# ctest runs it on cubelet (must pass) and on cubelet-unpack (must fail, so
# the check can fail).
set -eu
bin=${1:?usage: no_libarchive.sh BINARY}
needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
[ -n "$needed" ] || { echo "FAIL: no NEEDED entries read from $bin"; exit 1; }
if printf '%s\n' "$needed" | grep -q '^libarchive'; then
        echo "FAIL: $bin needs libarchive: $(echo $needed)"
        exit 1
fi
echo "ok: $bin does not need libarchive: $(echo $needed)"
