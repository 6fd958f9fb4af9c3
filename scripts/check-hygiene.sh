#!/usr/bin/env bash
# Static gates on the C sources (docs/conventions.md):
#  - every open/openat/socket/pipe/accept/inotify/epoll/timerfd/signalfd/
#    eventfd/memfd/fopen call creates its fd close-on-exec;
#  - banned functions (sprintf, strcpy, strcat, atoi, atol, gets, system, dup, tmpnam);
#  - library code (everything but agent/) never prints to stdout/stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
mapfile -t files < <(git ls-files -co --exclude-standard 'agent/*.c' 'runtime/*.c' \
  'cgroups/*.c' 'status/*.c' 'lib/*.c')
[ ${#files[@]} -gt 0 ] || exit 0

report() { echo "hygiene: $1"; status=1; }

while IFS= read -r hit; do
  report "fd without close-on-exec: $hit"
done < <(grep -nE '\b(open|openat)\s*\(' "${files[@]}" | grep -v 'O_CLOEXEC' | grep -vE '^\S+:\s*[0-9]+:\s*(/\*|\*)' || true)
while IFS= read -r hit; do
  report "fd without close-on-exec: $hit"
done < <(grep -nE '\b(socket|accept4|inotify_init1|epoll_create1|timerfd_create|signalfd|eventfd|memfd_create)\s*\(' "${files[@]}" \
  | grep -vE 'CLOEXEC' || true)
while IFS= read -r hit; do
  report "use pipe2(..., O_CLOEXEC) / accept4(..., SOCK_CLOEXEC) / inotify_init1(IN_CLOEXEC): $hit"
done < <(grep -nE '\b(pipe|accept|inotify_init|epoll_create)\s*\(' "${files[@]}" || true)
while IFS= read -r hit; do
  report "fopen without \"e\" (O_CLOEXEC) mode: $hit"
done < <(grep -nE '\bfopen\s*\([^,]+,\s*"[^"e]*"' "${files[@]}" || true)
while IFS= read -r hit; do
  report "banned function: $hit"
done < <(grep -nE '\b(sprintf|vsprintf|strcpy|strcat|atoi|atol|gets|system|tmpnam)\s*\(' "${files[@]}" || true)
while IFS= read -r hit; do
  report "library code prints (return an error instead): $hit"
done < <(grep -nE '\b(printf|puts|perror)\s*\(|\bf?printf\s*\(\s*(stderr|stdout)' \
  runtime/*.c cgroups/*.c status/*.c lib/*.c 2>/dev/null || true)
exit $status
