#!/usr/bin/env bash
# Fault: the disk full under the agent's --root-dir and pod logs (a 64 MB
# tmpfs holding both). With pods running (one writing its log all the
# time), a filler file takes every free byte for FAULT_WINDOW s (default
# 6) while pods are created, a job exits and one is deleted: state files,
# logs and the atomic writers fail (no crash, no torn file), and once the
# space returns the pods converge within 10 s (+ the 10 s sandbox retry of a
# pod whose sandbox failed meanwhile), the logging container still
# logs, and nothing is left after the drain.
#   FAULT_ITERATIONS (rounds, default 1), FAULT_WINDOW, FAULT_SEED.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/faults.sh"
fault_setup diskfull
N=${FAULT_ITERATIONS:-1}
WIN=${FAULT_WINDOW:-6}
# $root and $logs on one small tmpfs (the harness unmounts it at the end)
mkdir -p "$tmp/small"
mount -t tmpfs -o size=64m,mode=0755 tmpfs "$tmp/small" || skip "cannot mount a tmpfs"
root=$tmp/small/root
logs=$tmp/small/logs
mkdir -p "$root" "$logs"
import_busybox
# Only the memory signal: with the default nodefs thresholds a full root dir
# is DiskPressure and the kubelet's eviction (tested by
# integration/node_pressure), not the write failures looked at here.
FAULT_AGENT_FLAGS=(--eviction-hard 'memory.available<1Mi')
fault_agent
node_ready 30
baseline
# the tmpfs itself is a mount under $tmp the idle count already has
lc_pod chatty svc
mkpod_chatty() {
        mkdir -p "$tmp/hp/talker"
        echo "svc 0" >"$tmp/expect/talker"
        mkpod talker Always <<EOF
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'echo s >> /d/starts-main; echo hook > /d/hook; trap "exit 0" TERM; i=0; while :; do i=\$((i+1)); echo "line \$i"; sleep 0.05; done']
    readinessProbe: {exec: {command: [test, -e, /d/hook]}, periodSeconds: 1}
    volumeMounts: [{name: d, mountPath: /d}]
  volumes: [{name: d, hostPath: {path: $tmp/hp/talker, type: Directory}}]
EOF
}
mkpod_chatty
inv_what=start
converge 30 && check_invariants start
talker_log() { ls "$logs"/default_talker_*/main/0.log 2>/dev/null | head -1; }
for i in $(seq 1 "$N"); do
        rounds=$((rounds + 1))
        lc_pod "d$i-job" job 3
        lc_pod "d$i-old" svc
        inv_what="round $i: before"
        converge 30
        # fill it: every free byte
        dd if=/dev/zero of="$tmp/small/filler" bs=1M 2>/dev/null
        sync
        free=$(df --output=avail -k "$tmp/small" | tail -1 | tr -d ' ')
        [ "$free" -le 64 ] || fail "round $i: $free kB still free after the filler"
        faults=$((faults + 1))
        lc_pod "d$i-new" svc
        lc_pod "d$i-onf" onfail 1
        lc_delete "d$i-old"
        sleep "$WIN"
        kill -0 "$agent_pid" 2>/dev/null || { violation "the agent died with the disk full"; break; }
        size_full=$(stat -c %s "$(talker_log)" 2>/dev/null || echo 0)
        rm -f "$tmp/small/filler"
        echo "     round $i: disk full for ${WIN}s ($free kB free): d$i-new, d$i-onf created, d$i-old deleted, d$i-job exiting"
        inv_what="round $i"
        # a sandbox that failed meanwhile is retried after SANDBOX_RETRY_MS (10 s)
        converge 20 && check_invariants "round $i, converged in ${converged_in}s after space returned"
        # the logging container logs again
        poll 10 eval '[ "$(stat -c %s "$(talker_log)" 2>/dev/null || echo 0)" -gt "$size_full" ]' ||
                violation "talker: its log does not grow after space returned"
        # no torn state file
        for f in "$root"/pods/*/worker.json "$root"/containers/*/state.json; do
                [ -e "$f" ] || continue
                jq -e . "$f" >/dev/null 2>&1 || violation "$f is not valid JSON after the disk was full"
        done
done
grep -E '^[EW].*(No space|ENOSPC)' "$tmp/agent.log" | head -3
drain_all "after $N rounds"
kill -0 "$agent_pid" 2>/dev/null || fail "the agent died"
stop_agent 15
pass "root dir and logs on a full disk: $faults faults in $N rounds; $violations invariant violations"
fault_report
