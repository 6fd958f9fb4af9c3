#!/usr/bin/env bash
# Fault: processes the agent relies on SIGKILLed from outside while pods run:
#   tree     every process of a container (its cgroup's cgroup.procs): the
#            exit is reported (137, Error), the container restarted once;
#   monitor  the container's monitor (state.json monitorPid): the container
#            must not live on untracked beside a new one: one process tree
#            and one monitor per container afterwards, the restart counted;
#   pause    the pause process of a pod with a shared PID namespace (the
#            sandbox's state.json pausePid): every container of the pod dies
#            with it; the pod comes back with one tree per container.
# Random pods (svc, multi, shared) and targets; the invariants after each.
#   FAULT_ITERATIONS (default 3: one of each), FAULT_SEED.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/faults.sh"
fault_setup pkill
N=${FAULT_ITERATIONS:-3}
fault_agent
node_ready 30
baseline
lc_pod p-svc svc
lc_pod p-multi multi
lc_pod p-shared shared
inv_what=start
converge 30 && check_invariants "start"
# restarts POD CONTAINER
restarts() { pj "$1" "{.status.containerStatuses[?(@.name==\"$2\")].restartCount}"; }
cid_of() { pj "$1" "{.status.containerStatuses[?(@.name==\"$2\")].containerID}" | sed 's#.*://##'; }
kinds=(tree monitor pause)
for i in $(seq 1 "$N"); do
        rounds=$((rounds + 1))
        what=${kinds[$(((i - 1) % 3))]}
        [ "$i" -le 3 ] || [ "$(rnd 4)" -ne 0 ] || what=${kinds[$(rnd 3)]}
        case $what in
        tree | monitor)
                pods=(p-svc p-multi:a p-multi:b p-shared:a p-shared:b)
                t=${pods[$(rnd ${#pods[@]})]}
                pod=${t%%:*}
                ctr=main
                [ "$pod" = "$t" ] || ctr=${t#*:}
                ;;
        pause) pod=p-shared ctr=a ;;
        esac
        before=$(restarts "$pod" "$ctr")
        cid=$(cid_of "$pod" "$ctr")
        st=$root/containers/$cid/state.json
        [ -f "$st" ] || { fail "round $i: no state.json for $pod/$ctr ($cid)"; continue; }
        case $what in
        tree)
                cg=$memcg/$(jq -r .cgroupPath "$st")
                victims=$(cat "$cg/cgroup.procs" 2>/dev/null | paste -sd' ')
                [ -n "$victims" ] || { fail "round $i: $pod/$ctr: no process in $cg"; continue; }
                kill -KILL $victims
                ;;
        monitor)
                victims=$(jq -r .monitorPid "$st")
                tr '\0' ' ' <"/proc/$victims/cmdline" | qgrep __monitor || { fail "round $i: $victims is no monitor"; continue; }
                kill -KILL "$victims"
                ;;
        pause)
                uid=$(pj p-shared '{.metadata.uid}')
                victims=$(jq -r .pausePid "$root/sandboxes/$uid/state.json")
                [ -n "$victims" ] && [ "$victims" != null ] || { fail "round $i: p-shared has no pause pid"; continue; }
                kill -KILL "$victims"
                ;;
        esac
        faults=$((faults + 1))
        echo "     round $i: SIGKILL $what of $pod/$ctr (pid $victims), restarts before $before"
        inv_what="round $i ($what $pod/$ctr)"
        # the restart is seen, then everything converges
        poll 20 eval '[ "$(restarts "$pod" "$ctr")" -gt "$before" ]' ||
                violation "$pod/$ctr: restartCount still $before 20 s after the $what was killed"
        if converge 20; then
                got=$(restarts "$pod" "$ctr")
                [ "$got" -eq $((before + 1)) ] || violation "$pod/$ctr: restartCount $before -> $got, want +1"
                last=$(pj "$pod" "{.status.containerStatuses[?(@.name==\"$ctr\")].lastState.terminated.exitCode}")
                [ "$what" = monitor ] || [ "$last" = 137 ] || violation "$pod/$ctr: lastState exit '$last', want 137 (SIGKILL)"
                check_invariants "round $i, $what killed, converged in ${converged_in}s"
        fi
done
drain_all "after $N rounds"
kill -0 "$agent_pid" 2>/dev/null || fail "the agent died"
stop_agent 15
pass "$faults processes SIGKILLed from outside (trees, monitors, pause) in $N rounds; $violations invariant violations"
fault_report
