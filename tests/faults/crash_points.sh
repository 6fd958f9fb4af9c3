#!/usr/bin/env bash
# Fault: the agent killed at a crash point (CUBELET_TEST_CRASH_AT,
# agent/core/crashpoint.h): a window too short to hit with a kill from
# outside, hit every time. Restarted, the invariants (lib/faults.sh) must
# hold. Deterministic: no seeded choices.
#   restart-old-removed   an OnFailure container exited 7 and its instance
#                         was removed for the restart (off the loop, the
#                         next start queued beside it): the exit must survive the kill
#                         (lastState 7, restartCount 1), not become a lost
#                         container (137 ContainerStatusUnknown; seen once
#                         by agent_kill under ASan).
#   pod-cgroup-made       the sandbox job made the pod cgroup; the worker
#                         does not know it yet (cgroupCreated reaches
#                         worker.json at its next save). The pod deleted
#                         while the agent is down: the restarted agent's
#                         teardown must remove that cgroup all the same
#                         (it skipped it, and nothing else swept it).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/faults.sh"
fault_setup crashpt
# killed_at POINT POD: waits for the agent (started with the point) to
# kill itself there, after POD was created; sets $uid (POD's).
killed_at() {
        poll 40 eval '! kill -0 "$agent_pid" 2>/dev/null' ||
                die "the agent did not reach the crash point $1 within 40 s"
        wait "$agent_pid" 2>/dev/null
        agent_pid=""
        faults=$((faults + 1))
        grep -q "crash point \"$1\" reached" "$tmp/agent.log" ||
                die "the agent died, but not at its crash point $1: $(tail -3 "$tmp/agent.log")"
        uid=$(k get pod "$2" -o jsonpath='{.metadata.uid}')
}
# after_restart POINT WHAT: the agent again (no crash point), converged,
# the invariants, then every pod drained.
after_restart() {
        fault_agent
        inv_what=$1
        converge 25 && check_invariants "$2, converged in ${converged_in}s"
        drain_all "after the crash point $1"
        kill -0 "$agent_pid" 2>/dev/null || fail "the agent died"
        stop_agent 15
}

CUBELET_TEST_CRASH_AT=restart-old-removed fault_agent
node_ready 30
grep -q 'test hook CUBELET_TEST_CRASH_AT is set' "$tmp/agent.log" ||
        fail "the agent did not warn that the crash-point hook is set"
baseline

rounds=1
lc_pod cp1 onfail 1
killed_at restart-old-removed cp1
echo "     killed at restart-old-removed: worker.json says $(jq -c '[.containers[] | {id, restartCount, term: .term.exitCode, lastState: .lastState.exitCode}]' "$root/pods/$uid/worker.json" 2>/dev/null); $(ls "$root/containers" 2>/dev/null | wc -l) runtime containers"
after_restart restart-old-removed restart-old-removed

CUBELET_TEST_CRASH_AT=pod-cgroup-made fault_agent
node_ready 30
rounds=2
lc_pod cp2 svc
killed_at pod-cgroup-made cp2
cgs=" $(pod_cgroups | tr '\n' ' ')"
[[ $cgs == *"/pod$uid "* ]] ||
        die "killed at pod-cgroup-made, but the pod cgroup of $uid is not there: the crash point is not where it says"
echo "     killed at pod-cgroup-made: the pod cgroup is there; worker.json says cgroupCreated=$(jq -r .cgroupCreated "$root/pods/$uid/worker.json" 2>/dev/null)"
lc_delete cp2
after_restart pod-cgroup-made "pod-cgroup-made, the pod deleted while the agent was down"
pass "agent killed at the crash points restart-old-removed and pod-cgroup-made; $violations invariant violations"
fault_report
