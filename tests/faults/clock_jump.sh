#!/usr/bin/env bash
# Fault: the agent's wall clock jumps (issue 16, item 7), through its test
# hook (CUBELET_TEST_WALL_OFFSET_FILE, docs/reliability.md): the node's clock
# set back by 1-6 hours, then forward past the 24 h token limit, then back to
# the host's time, while pods run: svc (hooks, exec readiness period 1 s,
# liveness period 2 s), multi, onfail and onfail2 (OnFailure: one and two
# exits 7; the second restart waits a back-off of 1 s) made just before the
# jump so that back-off spans it, jobs; every pod has its kube-api-access token (3607 s, ServiceAccount
# admission). The stand-in's clock stays the host's: only the node's moves.
# After each jump:
#   - status converges, no pod stuck, restart counts right, no spurious
#     restart (the invariants of lib/faults.sh: check_invariants);
#   - back-offs run on CLOCK_BOOTTIME: onfail2 restarts after its 1 s
#     back-off whatever the wall clock did (on the wall clock a jump back of
#     hours kept it waiting hours: not converged);
#   - probes run on CLOCK_MONOTONIC: the readiness probe notices a removed
#     /d/hook within 6 s and its return within 6 s;
#   - tokens: a jump back refreshes none; a jump forward past 24 h refreshes
#     every pod's token (the kubelet's rule: older than 24 h) and, as every new
#     token looks old on the fast node clock, asks again at most once a
#     minute (no storm); the new token works against the stand-in;
#   - no lease storm: the lease is renewed at its monotonic interval
#     (--node-lease-duration-seconds 4: every second) whatever the jump.
# Nothing left after the drain.
#   FAULT_ITERATIONS (rounds, default 1: about 60 s), FAULT_SEED.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/faults.sh"
fault_setup clock
N=${FAULT_ITERATIONS:-1}
offset_file=$tmp/wall-offset
echo 0 >"$offset_file"
export CUBELET_TEST_WALL_OFFSET_FILE=$offset_file
fault_agent
node_ready 30
baseline
grep -q "test hook CUBELET_TEST_WALL_OFFSET_FILE is set" "$tmp/agent.log" ||
        fail "the agent does not warn that its test clock hook is on"

# jump SECONDS: the agent's wall clock SECONDS off the host's (the file
# replaced by rename, which its inotify watch sees).
jump() {
        echo "$1" >"$offset_file.tmp" && mv "$offset_file.tmp" "$offset_file"
        faults=$((faults + 1))
        wait_log "wall clock is now offset by $1 s" 10
}
uid_of() { pj "$1" '{.metadata.uid}'; }
token_of() { cat "$root"/pods/"$(uid_of "$1")"/volumes/kubernetes.io~projected/kube-api-access-*/token 2>/dev/null; }
# token_reqs: the agent's TokenRequests answered so far (its -v 2 line)
token_reqs() { grep -c 'serviceaccount default/default: token for pod default/' "$tmp/agent.log"; }
lease_updates() { timeout "$1" kubectl --kubeconfig "$data/admin.kubeconfig" -n kube-node-lease get lease "$NODE" --watch-only -o name 2>/dev/null | wc -l; }
api_code() { curl -sS -m 15 -o /dev/null -w '%{http_code}' --cacert "$data/ca.crt" -H "Authorization: Bearer $1" "$standin_url/api"; }
ready_is() { [ "$(pj "$1" '{.status.conditions[?(@.type=="Ready")].status}')" = "$2" ]; }
# probe_check POD WHAT: /d/hook removed: NotReady within 6 s; back: Ready within 6 s.
probe_check() {
        rm -f "$tmp/hp/$1/hook"
        poll 6 ready_is "$1" False || violation "$2: $1 still Ready 6 s after its readiness probe began to fail"
        echo hook >"$tmp/hp/$1/hook"
        poll 6 ready_is "$1" True || violation "$2: $1 not Ready 6 s after its readiness probe passed again"
}
# lease_check WHAT: the lease renewals in 5 s, at most 3 times the expected 5.
lease_check() {
        local n
        n=$(lease_updates 5)
        [ "$n" -ge 2 ] && [ "$n" -le 15 ] || violation "$1: $n lease updates in 5 s (want about 5: no storm, no stall)"
        echo "     $1: $n lease updates in 5 s"
}

for i in $(seq 1 "$N"); do
        rounds=$((rounds + 1))
        inv_what="round $i: start"
        lc_pod "c$i-svc" svc
        lc_pod "c$i-multi" multi
        lc_pod "c$i-job" job 3
        poll 30 eval '[ "$(pj "c$i-svc" "{.status.phase}")" = Running ] && ready_is "c$i-svc" True' ||
                violation "c$i-svc not Ready before the jump"
        svc_tok=$(token_of "c$i-svc")
        [ -n "$svc_tok" ] || violation "c$i-svc: no kube-api-access token"
        # ---- back by hours, with back-offs in flight ----
        lc_pod "c$i-onf1" onfail 1
        lc_pod "c$i-onf2" onfail2 1
        back=$((-(1 + $(rnd 6)) * 3600))
        # the jump between onfail2's first restart (at once) and the end of
        # its second back-off
        poll 20 eval '[ "$(pj "c$i-onf2" "{.status.containerStatuses[0].restartCount}")" = 1 ]' ||
                violation "c$i-onf2: no first restart"
        at=$(rnd_delay 8)
        sleep "$at"
        r0=$(token_reqs)
        jump "$back"
        echo "     round $i: the agent's clock back $((-back / 3600)) h, ${at} s after onfail2's first restart"
        inv_what="round $i: back $((-back / 3600)) h"
        converge 25 && check_invariants "round $i: back $((-back / 3600)) h, converged in ${converged_in}s"
        probe_check "c$i-svc" "round $i: back"
        lease_check "round $i: back"
        [ "$(token_of "c$i-svc")" = "$svc_tok" ] || violation "round $i: the token changed on a jump back"
        [ "$(token_reqs)" -eq "$r0" ] || violation "round $i: $(($(token_reqs) - r0)) token requests after a jump back"
        # ---- forward past the 24 h token limit ----
        fwd=$(((25 + $(rnd 3)) * 3600))
        r0=$(token_reqs)
        jump "$fwd"
        inv_what="round $i: forward $((fwd / 3600)) h"
        poll 10 eval '[ "$(token_of "c$i-svc")" != "$svc_tok" ]' ||
                violation "round $i: the token was not refreshed 10 s after the clock went $((fwd / 3600)) h forward"
        converge 25 && check_invariants "round $i: forward $((fwd / 3600)) h, converged in ${converged_in}s"
        probe_check "c$i-svc" "round $i: forward"
        lease_check "round $i: forward"
        npods=$(find "$root/pods" -mindepth 1 -maxdepth 1 -type d | wc -l)
        got=$(($(token_reqs) - r0))
        # one per pod that holds a token, twice for one caught in a second sync
        [ "$got" -ge 1 ] && [ "$got" -le $((2 * npods)) ] ||
                violation "round $i: $got token requests for $npods pods after the jump forward (a storm?)"
        new_tok=$(token_of "c$i-svc")
        [ "$(api_code "$new_tok")" = 200 ] || violation "round $i: the refreshed token is refused: $(api_code "$new_tok")"
        echo "     round $i: forward $((fwd / 3600)) h: $got token requests for $npods pods; the new token works"
        # ---- back to the host's time ----
        jump 0
        inv_what="round $i: back to 0"
        converge 25 && check_invariants "round $i: back to the host's time, converged in ${converged_in}s"
        lease_check "round $i: back to 0"
        # the older pods go before the next round
        for p in "c$i-svc" "c$i-multi" "c$i-job" "c$i-onf1" "c$i-onf2"; do
                [ "$(rnd 2)" -eq 0 ] && lc_delete "$p"
        done
done
drain_all "after $N rounds"
kill -0 "$agent_pid" 2>/dev/null || fail "the agent died"
stop_agent 15
pass "the agent's wall clock jumped $faults times across $N round(s); $violations invariant violations"
fault_report
