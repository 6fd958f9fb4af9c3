#!/usr/bin/env bash
# Long fuzzing runs: scripts/fuzz.sh HOURS (fractions allowed, e.g. 0.5).
# Builds the libFuzzer harnesses (clang, ASan + UBSan) in build-fuzz, then
# runs every build-fuzz/tests/fuzz/fuzz_* in turn for an equal share of
# HOURS. Corpora are kept (and grow) under build-fuzz/corpus/<name>,
# seeded from tests/fuzz/corpus/<name> (else the shared files there);
# crashes go to build-fuzz/artifacts/. Prints per harness: executions,
# coverage (libFuzzer's cov: edges), and findings (crash/leak/timeout
# artifacts). Exits non-zero when any harness found something.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
hours=${1:?usage: scripts/fuzz.sh HOURS}
jobs=$(nproc 2>/dev/null || echo 2)

CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DCUBELET_FUZZ=ON \
  -DCUBELET_SANITIZE=ON >/dev/null
cmake --build build-fuzz -j"$jobs" --target fuzz_targets >/dev/null

mapfile -t harnesses < <(find build-fuzz/tests/fuzz -maxdepth 1 -type f -name 'fuzz_*' -perm -u+x | sort)
[ ${#harnesses[@]} -gt 0 ] || { echo "no harnesses built" >&2; exit 1; }
each=$(awk -v h="$hours" -v n="${#harnesses[@]}" 'BEGIN { s = int(h * 3600 / n); print (s < 1 ? 1 : s) }')
mkdir -p build-fuzz/corpus build-fuzz/artifacts
printf 'fuzzing %d harnesses, %ss each\n' "${#harnesses[@]}" "$each"

summary=()
found=0
for f in "${harnesses[@]}"; do
  name=$(basename "$f")
  short=${name#fuzz_}
  corpus=build-fuzz/corpus/$short
  mkdir -p "$corpus"
  seeds=tests/fuzz/corpus/$short
  [ -d "$seeds" ] || seeds=tests/fuzz/corpus
  find "$seeds" -maxdepth 1 -type f -exec cp -n -t "$corpus"/ {} + 2>/dev/null || true
  # A per-harness input bound where the seeds would make every input slow:
  # fuzz_watch's regress seed is a 51 KB stream (the small seeds are 0.1-4
  # KB: 8 KB fits several events), fuzz_unpack's tars are 10 KB of which at
  # most 6 KB is entries. Everything else: libFuzzer's default (the
  # largest seed).
  case $short in
  watch | unpack) max_len=(-max_len=8192) ;;
  *) max_len=() ;;
  esac
  log=build-fuzz/$name.long.log
  before=$(find build-fuzz/artifacts -name "$short-*" | wc -l)
  rc=0
  "$f" "${max_len[@]}" -max_total_time="$each" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="build-fuzz/artifacts/$short-" "$corpus" >"$log" 2>&1 || rc=$?
  after=$(find build-fuzz/artifacts -name "$short-*" | wc -l)
  execs=$(awk '/stat::number_of_executed_units/ { print $2 }' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  new=$((after - before))
  if [ "$rc" -ne 0 ] || [ "$new" -gt 0 ]; then found=1; fi
  summary+=("$(printf '%-18s executions %12s  coverage %6s  findings %d%s' "$name" "${execs:-?}" \
    "${cov:-?}" "$new" "$([ "$rc" -ne 0 ] && echo " (exit $rc, log $log)")")")
done
printf '\n'
printf '%s\n' "${summary[@]}"
exit "$found"
