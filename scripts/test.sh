#!/usr/bin/env bash
# Installs what is missing, builds cubelet twice (warnings are errors; then
# with ASan+UBSan, a gcc Debug build) and runs every test on both; compiles
# (no tests) the Release build a packager uses with gcc and with clang, so an
# -O3-only or clang-only warning fails here, not downstream. The tests: Check unit suites, the layering
# checks, the integration tests (as root), a bounded fuzz run and the
# formatting check. Exits non-zero on any failure.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
jobs=$(nproc 2>/dev/null || echo 2)
# The tests mostly wait (on pods' grace periods, kubectl, outages, probes):
# pod_lifecycle takes ~90 s both plain and under ASan, and at -j2 the CPU
# idled a third of the time. One test more than cores cut the plain run
# from 943 s to 696 s on 2 cores with no new failure (tests/README.md).
test_jobs=$((jobs + 1))
fuzz_seconds=${CUBELET_FUZZ_SECONDS:-5} # per harness, a smoke run (12 harnesses, about 1 min); long runs: scripts/fuzz.sh
failed=()

# Each step with the seconds since the start: where a slow run spent its time.
step() { printf '\n==> [%ss] %s\n' "$SECONDS" "$*"; }

step "dependencies"
bash scripts/deps.sh

step "formatting (clang-format --dry-run)"
mapfile -t sources < <(git ls-files -co --exclude-standard '*.c' '*.h' | grep -v '^build')
if ! clang-format --dry-run -Werror "${sources[@]}"; then
  failed+=("clang-format: run clang-format -i on the files above")
fi

step "hygiene gates"
if bash scripts/check-hygiene.sh; then :; else failed+=("hygiene gates"); fi

step "build (-Wall -Wextra -Werror)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"

step "compile only: Release (gcc, clang)"
# Each in its own directory, so an incremental run rebuilds only what
# changed. Compile errors are collected like test failures.
compile_only() { # dir compiler build-type
  if CC=$2 cmake -S . -B "$1" -DCMAKE_BUILD_TYPE="$3" >/dev/null &&
      cmake --build "$1" -j"$jobs" >"$1/build.log" 2>&1; then
    printf '%s: %s %s ok\n' "$1" "$2" "$3"
  else
    grep -E 'error|Error' "$1/build.log" | head -20 || true
    failed+=("compile: $3 with $2 (log in $1/build.log)")
  fi
}
compile_only build-release gcc Release
compile_only build-clang clang Release

step "tests"
# Tests known to fail, left out here (none now). faults/cni_faults is back
# since session 7: 7 seeds passed with 0 violations, ~37 s each (issue 16,
# docs/reliability.md); session 5's one failure did not recur.
known_failing=''
if ! ctest --test-dir build -j"$test_jobs" --output-on-failure -E "^($known_failing)\$"; then
  failed+=("ctest (build)")
fi

soak_cycles=${CUBELET_SOAK_CYCLES:-200} # two samples (100, 200): fewer compare nothing; the 10 k soak: scripts/soak.sh 10000
step "soak (${soak_cycles} create/delete cycles; docs/reliability.md)"
if [ "$soak_cycles" -gt 0 ]; then
  rc=0
  SOAK_OUT=build/soak bash scripts/soak.sh "$soak_cycles" >build/soak.log 2>&1 || rc=$?
  grep -E '^(SOAK|FAIL)' build/soak.log || true
  case $rc in
  0) ;;
  77) tail -1 build/soak.log ;;
  *) tail -40 build/soak.log; failed+=("soak (log in build/soak.log)") ;;
  esac
fi

step "build with ASan+UBSan"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCUBELET_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"

step "tests under ASan+UBSan"
# Not repeated here: the stand-in apiserver's own conformance test (it runs
# no C code) and the cgroup v2 VM test (a minute of emulated boot; the same
# code runs under the sanitizers on this host's cgroups in the unit suites);
# of the fault suite only agent_kill and process_kill (adoption, aborts,
# restarts and lost sandboxes, the paths the faults exercised most): the
# others (clock_jump included) would add ~5 min of mostly waiting for
# outages and clock steps to end. Nor node_api and node_api_websocket (the
# longest here, 2 min under ASan, mostly waiting on kubectl and slow
# clients; the node API's parsers run under ASan in fuzz_head, fuzz_napi
# and fuzz_spdy, its authentication and authorization in node_api_authz),
# demo (demo.sh drives the agent through kubectl, as the plain run checks)
# and api_http2 (every test here talks HTTP/2 to the stand-in, its
# default). The suite stays under 25 min (about 23 on 2 cores).
if ! ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan -j"$test_jobs" --output-on-failure \
      -E "^(integration/(apiserver_.*|cgroupv2_qemu|node_api|node_api_websocket|demo|api_http2)|faults/(apiserver_down|api_faults|cni_faults|disk_full|registry_faults|clock_jump)|$known_failing)\$"; then
  failed+=("ctest (ASan+UBSan)")
fi

step "fuzzing the decoders (${fuzz_seconds}s each, clang + libFuzzer)"
if [ "$fuzz_seconds" -gt 0 ]; then
  CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DCUBELET_FUZZ=ON \
    -DCUBELET_SANITIZE=ON >/dev/null
  cmake --build build-fuzz -j"$jobs" --target fuzz_targets
  for f in build-fuzz/tests/fuzz/fuzz_*; do
    [ -x "$f" ] || continue
    name=$(basename "$f")
    corpus=$(mktemp -d)
    # a harness's own seeds in tests/fuzz/corpus/<name without fuzz_>/, else the shared files
    seeds=tests/fuzz/corpus/${name#fuzz_}
    [ -d "$seeds" ] || seeds=tests/fuzz/corpus
    find "$seeds" -maxdepth 1 -type f -exec cp -t "$corpus"/ {} + 2>/dev/null || true
    # no -max_len here (scripts/fuzz.sh bounds fuzz_watch and fuzz_unpack):
    # libFuzzer would truncate the seeds to it, and the regress-* seeds must
    # run whole
    if ! "$f" -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=0 "$corpus" >"build-fuzz/$name.log" 2>&1; then
      tail -40 "build-fuzz/$name.log"
      failed+=("fuzz: $name (log in build-fuzz/$name.log)")
    else
      grep -E '^#[0-9]+.*DONE' "build-fuzz/$name.log" | tail -1 || true
    fi
    rm -rf "$corpus"
  done
fi

if [ ${#failed[@]} -gt 0 ]; then
  printf '\nFAILED (after %ss):\n' "$SECONDS"
  printf '  - %s\n' "${failed[@]}"
  exit 1
fi
printf '\nall tests passed (%ss)\n' "$SECONDS"
