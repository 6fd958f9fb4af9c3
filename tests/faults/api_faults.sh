#!/usr/bin/env bash
# Fault: the apiserver answering 500 / 429 / not at all. A fault proxy
# (lib/faultproxy.py, the stand-in's own serving certificate) sits between
# the agent and the stand-in; kubectl talks to the stand-in directly. For
# FAULT_WINDOW s (default 5) each, with pods created and jobs exiting
# meanwhile:
#   500 0.7    70 % of the agent's requests answered 500 InternalError
#   429 0.7    70 % answered 429 TooManyRequests, Retry-After: 1
#   stall      every request accepted and never answered; streams stop
# then the proxy passes again: status converges within 10 s, exits reported
# with their codes, restarts counted, the invariants hold.
#   FAULT_ITERATIONS (rounds of the three, default 1), FAULT_WINDOW, FAULT_SEED.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/faults.sh"
fault_setup apifault
N=${FAULT_ITERATIONS:-1}
WIN=${FAULT_WINDOW:-5}
pport=$(free_port)
echo pass >"$tmp/proxy.mode"
python3 -B "$H_FAULTS/faultproxy.py" --listen-port "$pport" --upstream "$standin_url" \
        --cert "$data/server.crt" --key "$data/server.key" --ca "$data/ca.crt" \
        --mode-file "$tmp/proxy.mode" --seed "$FAULT_SEED" >"$tmp/proxy.out" 2>"$tmp/proxy.log" &
track $!
poll 10 grep -q ready "$tmp/proxy.out" || die "the fault proxy did not start: $(tail -3 "$tmp/proxy.log")"
sed "s#server: .*#server: https://127.0.0.1:$pport#" "$data/node.kubeconfig" >"$tmp/proxy.kubeconfig"
grep -q "127.0.0.1:$pport" "$tmp/proxy.kubeconfig" || die "cannot point a kubeconfig at the proxy"
FAULT_KUBECONFIG=$tmp/proxy.kubeconfig
fault_agent
node_ready 30
baseline
injected() { grep -c '^inject' "$tmp/proxy.log"; }
for i in $(seq 1 "$N"); do
        for m in "500 0.7" "429 0.7" stall; do
                rounds=$((rounds + 1))
                tag=${m%% *}
                lc_pod "a$i-$tag-svc" svc
                lc_pod "a$i-$tag-job" job 3
                poll 30 eval '[ "$(pj "a$i-$tag-job" "{.status.phase}")" = Running ]' ||
                        fail "a$i-$tag-job: not Running before the fault"
                before=$(injected)
                echo "$m" >"$tmp/proxy.mode"
                # made during the fault: the agent must still see and run them
                lc_pod "a$i-$tag-new" svc
                lc_pod "a$i-$tag-onf" onfail 1
                sleep "$WIN"
                echo pass >"$tmp/proxy.mode"
                echo "     round $i: apiserver '$m' for ${WIN}s: $(($(injected) - before)) answers injected"
                inv_what="round $i: $tag"
                converge 10 && check_invariants "round $i, $tag, converged in ${converged_in}s after the fault"
        done
        drain_all "round $i"
done
faults=$(injected)
kill -0 "$agent_pid" 2>/dev/null || fail "the agent died"
stop_agent 15
pass "apiserver answering 500/429/stalling through the fault proxy: $faults answers injected; $violations invariant violations"
fault_report
