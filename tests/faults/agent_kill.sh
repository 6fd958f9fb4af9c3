#!/usr/bin/env bash
# Fault: the agent SIGKILLed at random points of pod lifecycles, restarted,
# again. Each round creates 1-3 pods of random kinds (svc: hooks, probes,
# exec; job: Never + a random exit code; onfail: OnFailure, one failure;
# multi: init + two containers) and deletes some earlier ones, then kills
# the agent after a random 0-3 s (admission, sandbox/CNI ADD, create/start,
# probes, hooks, exits, teardown/CNI DEL happen in that window), keeps it
# down 0-2 s, restarts it and waits for convergence; the invariants
# (lib/faults.sh: check_invariants) are checked after every round, and
# after the drain nothing may be left.
#   FAULT_ITERATIONS (default 6: the CI run; the documented long run is
#   FAULT_ITERATIONS=100), FAULT_SEED.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/faults.sh"
fault_setup akill
N=${FAULT_ITERATIONS:-6}
fault_agent
node_ready 30
baseline
live=()
for i in $(seq 1 "$N"); do
        rounds=$((rounds + 1))
        # some of the live pods go (teardown, CNI DEL, preStop under the kill)
        for _ in 1 2; do
                if [ ${#live[@]} -gt 3 ] || { [ ${#live[@]} -gt 0 ] && [ "$(rnd 3)" -eq 0 ]; }; then
                        j=$(rnd ${#live[@]})
                        lc_delete "${live[$j]}"
                        live=("${live[@]:0:$j}" "${live[@]:$((j + 1))}")
                fi
        done
        n=$((1 + $(rnd 3)))
        made=""
        for x in $(seq 1 $n); do
                lc_random_pod "r$i-$x"
                live+=("r$i-$x")
                made+="r$i-$x($(cut -d' ' -f1 "$tmp/expect/r$i-$x")) "
        done
        at=$(rnd_delay 30)
        sleep "$at"
        kill_agent
        down=$(rnd_delay 20)
        echo "     round $i: created $made; SIGKILL after ${at}s: $(ls "$root/sandboxes" 2>/dev/null | wc -l) sandboxes, $(ls "$root/containers" 2>/dev/null | wc -l) containers; down ${down}s"
        sleep "$down"
        fault_agent
        inv_what="round $i"
        converge 25 && check_invariants "round $i, converged in ${converged_in}s"
        # pods that ended are deleted later like the others
done
drain_all "after $N rounds"
kill -0 "$agent_pid" 2>/dev/null || fail "the agent died"
stop_agent 15
pass "agent SIGKILLed $faults times across $N rounds of pod lifecycles; $violations invariant violations"
fault_report
