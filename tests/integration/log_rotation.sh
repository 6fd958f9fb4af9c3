#!/usr/bin/env bash
# Container log rotation (issue 15 item 14) as the kubelet's container log
# manager does it, through the agent, the stand-in apiserver and kubectl
# v1.32: a config file sets containerLogMaxSize 8Ki, containerLogMaxFiles 3,
# containerLogMonitorInterval 3s; a container writes 600 numbered lines
# over ~30 s, so its log is rotated several times. Checks:
#   - `kubectl logs -f` started before the first rotation gets every line,
#     in order, none twice, and ends when the container does;
#   - the log directory never holds more than 3 files (the .tmp of a
#     compression under way aside); the older rotated files are gzipped CRI
#     logs named <n>.log.<YYYYMMDD-hhmmss>.gz;
#   - `kubectl logs` (and --tail) read only the current file, as the
#     kubelet's ReadLogs does: the last lines, contiguous, ending at 599.
# Exit 77 when not root or a tool is missing.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
node_api_start logrot it-logrot-$$
cat >"$tmp/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerLogMaxSize: 8Ki
containerLogMaxFiles: 3
containerLogMonitorInterval: 3s
authentication: {webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
EOF
start_agent -v 2 --config "$tmp/config.yaml" --kubeconfig "$data/node.kubeconfig" \
        --healthz-port "$hport" --node-ip "$nodeip" --address "$nodeip" \
        --client-ca-file "$data/ca.crt" --node-status-update-frequency 1s
node_ready
wait_log 'Initializing container log rotate workers \(workers 1, monitor period 3000 ms, max size 8192, max files 3\)' 5
pass "0 node Ready; the log manager runs with the file's settings"

# 600 lines of ~110 bytes (about 155 with the CRI framing), 20 a second:
# ~3 KiB/s, so the 8 KiB file is rotated every few seconds.
mkpod writer Never <<'EOF'
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'sleep 2; i=0; while [ $i -lt 600 ]; do printf "line-%05d %0100d\n" $i 0; i=$((i+1)); usleep 50000; done']
EOF
wait_running writer
timeout 90 kubectl --kubeconfig "$data/admin.kubeconfig" logs -f writer >"$tmp/follow.out" 2>"$tmp/follow.err" &
follower=$!
track $follower
d=""
poll 10 eval 'd=$(ls -d "$logs"/default_writer_*/main 2>/dev/null | head -1); [ -n "$d" ]' ||
        die "no log directory for writer"
maxfiles=0
rotations=0
gz="" gzline=""
# sample the directory while the container runs (the samples are the check)
while phase_is writer Running; do
        # a file being compressed is one log while X and X.gz both exist
        # (compressLog renames X.tmp to X.gz, then removes X)
        n=$(find "$d" -type f ! -name '*.tmp' | sed 's/\.gz$//' | sort -u | wc -l)
        [ "$n" -le "$maxfiles" ] || maxfiles=$n
        r=$(ls "$d" | grep -c '^0\.log\.' || true)
        [ "$r" -le "$rotations" ] || rotations=$r
        # the first line of a gzipped rotated file, read while it exists: a
        # round whose reopen meets the container's exit renames the rotated
        # file back, and the one before may have removed the last .gz
        for f in "$d"/0.log.*.gz; do
                [ -n "$gzline" ] || [ ! -e "$f" ] || gzline=$(gzip -cd "$f" 2>/dev/null | sed -n 1p) gz=${f##*/}
        done
        sleep 0.5
done
wait "$follower"
rc=$?
[ "$rc" = 0 ] || fail "logs -f exit $rc: $(tail -3 "$tmp/follow.err")"
ls -l "$d" >"$tmp/dir.txt"
grep -E '^0\.log\.[0-9]{8}-[0-9]{6}(\.gz)?$' <(ls "$d") >/dev/null || fail "no rotated file: $(ls "$d")"
[ "$maxfiles" -le 3 ] || fail "the log directory held $maxfiles files (containerLogMaxFiles 3)"
[ "$(ls "$d" | grep -vc '\.tmp$')" -le 3 ] || fail "at the end: $(ls "$d")"
[[ "$gz" =~ ^0\.log\.[0-9]{8}-[0-9]{6}\.gz$ ]] || fail "no compressed rotated file seen while the container ran (last: $gz; now: $(ls "$d"))"
[ -z "$gz" ] || printf '%s\n' "$gzline" | qgrep -E '^20[0-9-]+T[0-9:.]+Z stdout F line-[0-9]{5} 0+$' ||
        fail "$gz is not a gzipped CRI log: '$gzline'"
# -f across the rotations: every line once, in order
seq -f 'line-%05g' 0 599 >"$tmp/want"
cut -d' ' -f1 "$tmp/follow.out" >"$tmp/got"
if cmp -s "$tmp/want" "$tmp/got"; then
        pass "1 logs -f across the rotations: 600 lines in order, none lost or twice; at most $maxfiles files; $(ls "$d" | paste -sd' ')"
else
        fail "logs -f across rotations: $(diff "$tmp/want" "$tmp/got" | head -5 | paste -sd' ') ($(wc -l <"$tmp/got") lines)"
fi
# the kubelet reads only the current file
k logs writer >"$tmp/now.out" 2>&1
first=$(head -1 "$tmp/now.out" | cut -d' ' -f1)
cur=$(wc -l <"$d/0.log")
[ "$(wc -l <"$tmp/now.out")" = "$cur" ] || fail "logs: $(wc -l <"$tmp/now.out") lines, the current file has $cur"
# (a rotation in the writer's last 50 ms leaves the current file empty)
[ "$cur" = 0 ] || [ "$(tail -1 "$tmp/now.out" | cut -d' ' -f1)" = line-00599 ] ||
        fail "logs: last line '$(tail -1 "$tmp/now.out")'"
[ "$first" != line-00000 ] || fail "logs showed the first line: the rotated files were read"
n0=${first#line-}
[ "$cur" = 0 ] || seq -f 'line-%05g' "$((10#$n0))" 599 | cmp -s - <(cut -d' ' -f1 "$tmp/now.out") ||
        fail "logs: not the contiguous tail from $first"
# --tail counts lines of the current file too: fewer than 3 there gives fewer
want3=$(seq -f 'line-%05g' "$((600 - (cur < 3 ? cur : 3)))" 599 | paste -sd,)
k logs writer --tail 3 >"$tmp/tail3.out" 2>&1
[ "$(cut -d' ' -f1 "$tmp/tail3.out" | paste -sd,)" = "$want3" ] ||
        fail "--tail 3 (current file $cur lines): '$(cut -d' ' -f1 "$tmp/tail3.out" | paste -sd,)', want '$want3'"
pass "2 logs reads the current file only ($cur lines from $first), --tail 3 right; $rotations rotated file(s) at most"
# A round that meets the container's exit between its size check and the
# reopen fails as the kubelet's does (ReopenContainerLog of a stopped
# container); after the last line that is the race, not a fault. Any other
# failure, or one while the container still ran, is.
# (klog's time of day, in seconds, of a line)
tod() { awk '{ split($2, t, ":"); printf "%.3f\n", t[1] * 3600 + t[2] * 60 + t[3] }'; }
exited=$(grep -m1 'timeline containerExited:main' "$tmp/agent.log" | tod)
# (fed by a process substitution: a fail in a piped loop's subshell
# would not count)
while read -r l; do
        case "$l" in
        *"is not running"*)
                at=$(printf '%s\n' "$l" | tod)
                [ -n "$exited" ] && awk -v a="$at" -v e="$exited" 'BEGIN { exit !(e - a >= 0 && e - a < 1) }' && continue
                ;;
        esac
        fail "agent: $l"
done < <(grep 'Failed to rotate' "$tmp/agent.log")
stop_agent
finish
