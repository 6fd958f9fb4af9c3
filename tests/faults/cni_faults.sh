#!/usr/bin/env bash
# Fault: the CNI plugin failing, hanging and crashing mid-ADD and mid-DEL.
# A wrapper "bridge" plugin (first in --cni-bin-dir) runs the real one
# unless the seeded schedule says, for its Nth ADD or DEL:
#   fail          a CNI error (code 11) without doing anything
#   hang          4 s asleep, then the real plugin
#   crash-before  SIGSEGV before doing anything
#   crash-after   the real plugin did its work (the IP is allocated / the
#                 veth gone), then SIGSEGV before it answers
# Pods are created and deleted across the schedule; after each round the
# invariants (one IP and one veth per sandbox) and after the drain nothing
# may be left: no host-local IP leaked, no veth, no netns.
# Each of the four faults is injected into both ADD and DEL in every run
# (checked): the schedules start with them, the failures in a seeded order
# (ADD: the three failures, which the first round's three ADDs meet, then
# hang, ok, ok for their retries; DEL: each failure followed by an ok, so
# the DEL before a retried ADD is not failed twice in a row, then hang),
# then a seeded mix.
#   FAULT_ITERATIONS (rounds, default 1), FAULT_SEED.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/faults.sh"
fault_setup cni
N=${FAULT_ITERATIONS:-1}
cb=$tmp/cnibin
mkdir -p "$cb"
kinds=(fail hang crash-before crash-after)
modes=(ok ok ok ok fail hang crash-before crash-after crash-after fail)
for cmd in ADD DEL; do
        {
                first=(fail crash-before crash-after)
                while [ ${#first[@]} -gt 0 ]; do
                        j=$(rnd ${#first[@]})
                        echo "${first[$j]}"
                        [ "$cmd" = ADD ] || echo ok
                        first=("${first[@]:0:$j}" "${first[@]:$((j + 1))}")
                done
                printf '%s\n' hang ok ok
                for x in $(seq 1 $((N * 8 + 10))); do echo "${modes[$(rnd ${#modes[@]})]}"; done
        } >"$cb/sched.$cmd"
done
cat >"$cb/bridge" <<EOF
#!/bin/bash
# the fault wrapper of tests/faults/cni_faults.sh
cmd=\${CNI_COMMAND:-}
case \$cmd in ADD | DEL) ;; *) exec /usr/lib/cni/bridge ;; esac
exec 9>"$cb/lock"
flock 9
n=\$((\$(cat "$cb/count.\$cmd" 2>/dev/null || echo 0) + 1))
echo \$n >"$cb/count.\$cmd"
mode=\$(sed -n "\${n}p" "$cb/sched.\$cmd")
flock -u 9
exec 9>&-
echo "\$cmd \$n \${mode:-ok} \${CNI_CONTAINERID:-}" >>"$cb/log"
case \${mode:-ok} in
fail)
        echo '{"cniVersion":"1.0.0","code":11,"msg":"injected failure (tests/faults/cni_faults.sh)"}'
        exit 1
        ;;
hang) sleep 4; exec /usr/lib/cni/bridge ;;
crash-before) kill -SEGV \$\$ ;;
crash-after)
        /usr/lib/cni/bridge >/dev/null 2>&1
        kill -SEGV \$\$
        ;;
*) exec /usr/lib/cni/bridge ;;
esac
EOF
chmod +x "$cb/bridge"
FAULT_AGENT_FLAGS=(--cni-bin-dir "$cb:/usr/lib/cni")
fault_agent
node_ready 30
baseline
injected() { cat "$cb/log" 2>/dev/null | grep -vc " ok "; }
for i in $(seq 1 "$N"); do
        rounds=$((rounds + 1))
        lc_pod "n$i-a" svc
        lc_pod "n$i-b" job 1
        lc_pod "n$i-c" svc
        inv_what="round $i: ADD"
        converge 60 && check_invariants "round $i after ADDs, converged in ${converged_in}s"
        lc_delete "n$i-a"
        lc_delete "n$i-b"
        inv_what="round $i: DEL"
        converge 60 && check_invariants "round $i after DELs, converged in ${converged_in}s"
        echo "     round $i: $(grep -c '^ADD' "$cb/log") ADDs, $(grep -c '^DEL' "$cb/log") DELs so far, $(injected) faulty"
done
drain_all "after $N rounds"
faults=$(injected)
echo "     schedule used: $(awk '{print $1 " " $3}' "$cb/log" | sort | uniq -c | paste -sd',')"
for cmd in ADD DEL; do
        for m in "${kinds[@]}"; do
                grep -q "^$cmd [0-9]* $m " "$cb/log" || fail "$cmd was never made to $m (the schedule was not used up: fewer calls than expected)"
        done
done
kill -0 "$agent_pid" 2>/dev/null || fail "the agent died"
stop_agent 15
pass "CNI ADD/DEL failing, hanging and crashing: $faults faults injected in $N rounds; $violations invariant violations"
fault_report
