#!/bin/sh
# tls_size.sh BINARY MAX: fails when BINARY's thread-local storage (its
# PT_TLS segment's memory size) is over MAX bytes. Every thread the agent
# starts (21 when idle) gets and zeroes a copy: a 64 KiB thread-local copy
# buffer and a 32 KiB attach message made 96 KiB of it, 2 MB of the idle
# agent's RSS (issue 17). ctest runs it on cubelet and cubelet-monitor with
# 4096 (must pass) and on cubelet with 16 (must fail, so the check can fail).
set -eu
bin=${1:?usage: tls_size.sh BINARY MAX}
max=${2:?usage: tls_size.sh BINARY MAX}
# readelf -lW: "TLS Offset VirtAddr PhysAddr FileSiz MemSiz Flg Align"
size=$(readelf -lW "$bin" | awk '$1 == "TLS" { print $6 }')
if [ -z "$size" ]; then
        echo "ok: $bin has no thread-local storage"
        exit 0
fi
bytes=$(printf '%d' "$size")
if [ "$bytes" -gt "$max" ]; then
        echo "FAIL: $bin has $bytes bytes of thread-local storage (at most $max): keep large buffers off _Thread_local"
        exit 1
fi
echo "ok: $bin has $bytes bytes of thread-local storage (at most $max)"
