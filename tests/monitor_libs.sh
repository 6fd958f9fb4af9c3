#!/bin/sh
# monitor_libs.sh BINARY: fails when BINARY needs a shared library the
# container's monitor must not load (issue 17: every monitor, exec helper
# and pause process is an exec of cubelet-monitor, and each library costs
# every one of them the dynamic loader's work; libarchive alone brought 12
# more, 2.4 ms of CPU per exec). ctest runs it on cubelet-monitor (must
# pass) and on cubelet, which links all of them (must fail, so the check
# can fail).
set -eu
bin=${1:?usage: monitor_libs.sh BINARY}
needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
[ -n "$needed" ] || { echo "FAIL: no NEEDED entries read from $bin"; exit 1; }
bad=$(printf '%s\n' "$needed" | grep -E '^lib(archive|curl|crypto|ssl|yaml|systemd|microhttpd|http_parser|wslay|xml2|icu|stdc\+\+)' || true)
if [ -n "$bad" ]; then
        echo "FAIL: $bin needs $(echo $bad)"
        exit 1
fi
echo "ok: $bin needs only: $(echo $needed)"
