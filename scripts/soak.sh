#!/usr/bin/env bash
# The soak: scripts/soak.sh [N] runs N create/delete cycles (default 10000,
# the documented figure; the test suite runs a short one) against the real
# agent, the stand-in apiserver (etcd) and CNI, as root. A cycle creates one
# pod of a random kind (svc: Always, exec probes, postStart/preStop hooks;
# job: Never, a random exit code; onfail: OnFailure, one failure) and
# deletes the oldest of the SOAK_WINDOW (8) pods alive; every 10th cycle
# execs into a svc pod. Every SOAK_SAMPLE (100) cycles it deletes all pods,
# waits until they are gone and checks the invariants of tests/faults
# (nothing left), then samples the agent's RSS, fds and threads and the
# node's pod cgroups, network namespaces, mounts, IP allocations, veths and
# monitors into a CSV. It fails when one grows: beyond the sample at the
# end of the warm-up (SOAK_WARMUP cycles: 1000 for N >= 3000, else the
# first sample; the event correlation cache fills to its bound of 4096
# records, ~5 per pod, meanwhile), RSS by more than SOAK_RSS_KB (4096 kB)
# + 10 %, the fds that are no sockets by more than 2, sockets (the
# apiserver connection pool) by more than 12, threads by more than 2;
# cgroups, netns, mounts, IPs, veths and monitors at all (they must be back
# to 0 at each sample).
# Output: $SOAK_OUT (default build/soak): soak.csv, soak.svg (gnuplot, when
# installed), the agent log on a failure. FAULT_SEED reproduces the choices.
set -uo pipefail
N=${1:-10000}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SOURCE_DIR=${SOURCE_DIR:-$here}
CUBELET=${CUBELET:-$here/build/agent/cubelet}
out=${SOAK_OUT:-$here/build/soak}
# the harness names its temp dir after the script
. "$SOURCE_DIR/tests/faults/lib/faults.sh"
W=${SOAK_WINDOW:-8}
S=${SOAK_SAMPLE:-100}
RSS_TOL=${SOAK_RSS_KB:-4096}
WARMUP=${SOAK_WARMUP:-$([ "$N" -ge 3000 ] && echo 1000 || echo "$S")}
mkdir -p "$out" || die "cannot create $out"
fault_setup soak
fault_agent
node_ready 30
baseline
csv=$out/soak.csv
echo "cycle,seconds,rss_kb,fds,threads,pod_cgroups,netns,mounts,ips,veths,monitors,sockets" >"$csv"
socket_fds() { for f in /proc/"$agent_pid"/fd/*; do readlink "$f"; done 2>/dev/null | grep -c '^socket:'; }
netns_count() { awk -v r="$root/sandboxes" 'index($5, r "/") == 1 && $5 ~ /net$/' /proc/self/mountinfo | wc -l; }
sample() {
        local rss
        rss=$(awk '/^VmRSS/ {print $2}' "/proc/$agent_pid/status")
        echo "$1,$(($(date +%s) - T0)),$rss,$(ls "/proc/$agent_pid/fd" | wc -l),$(ls "/proc/$agent_pid/task" | wc -l),$(pod_cgroups | wc -l),$(netns_count),$(our_mounts),$(ipam_allocs | wc -l),$(our_veths | wc -l),$(our_monitors | wc -l),$(socket_fds)" >>"$csv"
}
sample 0
kinds=(svc svc job onfail)
alive=()
execd=0
for c in $(seq 1 "$N"); do
        name=s$c
        lc_pod "$name" "${kinds[$(rnd ${#kinds[@]})]}" 1 2>/dev/null
        alive+=("$name")
        if [ ${#alive[@]} -gt "$W" ]; then
                k delete pod "${alive[0]}" --wait=false >/dev/null 2>&1
                echo "deleted 0" >"$tmp/expect/${alive[0]}"
                alive=("${alive[@]:1}")
        fi
        if [ $((c % 10)) -eq 0 ]; then
                for p in "${alive[@]}"; do
                        [ "$(cut -d' ' -f1 "$tmp/expect/$p")" = svc ] || continue
                        [ "$(pj "$p" '{.status.phase}')" = Running ] || continue
                        out_=$(k exec "$p" -c main -- echo "soak-$c" 2>/dev/null)
                        [ "$out_" = "soak-$c" ] && execd=$((execd + 1))
                        break
                done
        fi
        if [ $((c % S)) -eq 0 ] || [ "$c" -eq "$N" ]; then
                rounds=$c
                drain_all "cycle $c"
                alive=()
                sample "$c"
                tail -n1 "$csv" | awk -F, '{printf "     cycle %s (%ss): rss %s kB, fds %s, threads %s, cgroups %s, netns %s, mounts %s, IPs %s, veths %s, monitors %s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11}'
                kill -0 "$agent_pid" 2>/dev/null || die "the agent died at cycle $c"
        fi
done
# growth: against the first sample after warm-up (cycle S; 0 with one sample)
verdict=$(awk -F, -v tol="$RSS_TOL" -v warm="$WARMUP" 'NR == 1 { next }
        { n++; c[n] = $1; rss[n] = $3; fd[n] = $4 - $12; so[n] = $12; th[n] = $5; left[n] = $6 + $7 + $8 + $9 + $10 + $11
          if (!b && $1 >= warm) b = n }
        END {
          if (!b) b = n
          for (i = 1; i <= n; i++) {
            if (left[i] != 0) print "cycle " c[i] ": " left[i] " cgroups/netns/mounts/IPs/veths/monitors left"
            if (i <= b) continue
            if (rss[i] > rss[b] * 1.1 + tol) print "cycle " c[i] ": RSS " rss[i] " kB, " rss[b] " at cycle " c[b]
            if (fd[i] > fd[b] + 2) print "cycle " c[i] ": " fd[i] " fds (no sockets), " fd[b] " at cycle " c[b]
            if (so[i] > so[b] + 12) print "cycle " c[i] ": " so[i] " sockets, " so[b] " at cycle " c[b]
            if (th[i] > th[b] + 2) print "cycle " c[i] ": " th[i] " threads, " th[b] " at cycle " c[b]
          }
          printf "SOAK %d cycles (against cycle %d): RSS %d -> %d kB, fds (no sockets) %d -> %d, sockets %d -> %d, threads %d -> %d\n", c[n], c[b], rss[b], rss[n], fd[b], fd[n], so[b], so[n], th[b], th[n]
        }' "$csv")
echo "$verdict" | grep -v '^SOAK' | while read -r l; do [ -z "$l" ] || echo "FAIL: $l"; done
echo "$verdict" | grep -v '^SOAK' | grep . >/dev/null && fails=$((fails + 1))
echo "$verdict" | grep '^SOAK'
echo "     execs: $execd; CSV: $csv"
if command -v gnuplot >/dev/null; then
        gnuplot <<EOF || fail "gnuplot failed"
set terminal svg size 900,420 dynamic font "sans,11"
set output "$out/soak.svg"
set datafile separator ","
set key outside right top
set xlabel "create/delete cycles"
set ylabel "agent RSS (kB)"
set y2label "count"
set ytics nomirror
set y2tics
set yrange [0:*]
set y2range [0:*]
set grid
set title "cubelet soak: $N cycles (seed $FAULT_SEED)"
plot "$csv" using 1:3 skip 1 with linespoints title "RSS kB" axes x1y1, \
     "" using 1:4 skip 1 with linespoints title "fds" axes x1y2, \
     "" using 1:5 skip 1 with linespoints title "threads" axes x1y2, \
     "" using 1:(\$6+\$7+\$8+\$9+\$10+\$11) skip 1 with linespoints title "cgroups+netns+mounts+IPs+veths+monitors left" axes x1y2
EOF
        echo "     plot: $out/soak.svg"
fi
[ "$fails" -eq 0 ] || cp "$tmp/agent.log" "$out/agent.log"
stop_agent 15
fault_report
