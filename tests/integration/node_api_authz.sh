#!/usr/bin/env bash
# The node API (port 10250) in the kubelet's Webhook mode
# (--authentication-token-webhook --authorization-mode Webhook) against the
# stand-in apiserver, which answers TokenReviews and SubjectAccessReviews
# with a small RBAC-like rule set (tests/apiserver/README.md): the
# apiserver's kubelet client certificate (O=system:masters) and the admin
# token may do everything (kubectl logs/exec through the stand-in work);
# the stats-reader token gets /stats/summary but 403 "Forbidden (user=...,
# verb=..., resource=nodes, subresource=proxy)" elsewhere; a token-file
# user without a rule is refused too; an unknown token 401; answers are
# cached (the stand-in's review counters do not move on repeats); clients
# that go away while their review is in flight leave the agent serving; no
# token appears in the agent's log. Exit 77 when not root or a tool is
# missing.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
node_api_start napiz it-napiz-$$
start_agent -v 3 --kubeconfig "$data/node.kubeconfig" --healthz-port "$hport" --node-ip "$nodeip" \
        --node-status-update-frequency 1s --address "$nodeip" --client-ca-file "$data/ca.crt" \
        --authentication-token-file "$tmp/tokens.csv" --authentication-token-webhook --authorization-mode Webhook
node_ready
api="https://$nodeip:10250"
poll 10 eval 'curl -sk -o /dev/null "$api/healthz"' || die "nothing serves $api"
grep -q "authorization: Webhook" "$tmp/agent.log" || fail "the agent does not say it authorizes by Webhook"
pass "0 node Ready, node API on $api in Webhook mode"

apiport=$standin_port
apiurl="https://127.0.0.1:$apiport"
admin_tok=$(cat "$data/admin.token")
stats_tok=$(cat "$data/stats-reader.token")
reviews() { curl -sk -H "Authorization: Bearer $admin_tok" "$apiurl/debug/reviews"; }
review_delay() {
        curl -sk -X PUT -H "Authorization: Bearer $admin_tok" -H 'Content-Type: application/json' \
                -d "{\"delay\": $1}" "$apiurl/debug/reviews" >/dev/null
}
# code and body of a request to the node API: req OUT [curl args...] PATH
req() {
        local out=$1
        shift
        curl -sk -o "$out" -w '%{http_code}' "$@"
}
cert=(--cert "$data/kubelet-client.crt" --key "$data/kubelet-client.key")

mkpod web <<'EOF'
  containers:
  - name: c
    image: busybox:1.36
    command: [sh, -c, 'echo hello-authz; while :; do sleep 1; done']
EOF
wait_running web

# ---- 1. who may do what ---------------------------------------------------------
code=$(req "$tmp/b" "${cert[@]}" "$api/pods")
[ "$code" = 200 ] && jq -e '.kind == "PodList"' "$tmp/b" >/dev/null ||
        fail "kubelet client cert /pods: HTTP $code $(head -c 200 "$tmp/b")"
code=$(req "$tmp/b" -H "Authorization: Bearer $admin_tok" "$api/pods")
[ "$code" = 200 ] || fail "admin token (TokenReview, system:masters) /pods: HTTP $code $(head -c 200 "$tmp/b")"
code=$(req "$tmp/b" -H "Authorization: Bearer $stats_tok" "$api/stats/summary")
[ "$code" = 200 ] && jq -e '.node.nodeName' "$tmp/b" >/dev/null ||
        fail "stats-reader /stats/summary: HTTP $code $(head -c 200 "$tmp/b")"
code=$(req "$tmp/b" -H "Authorization: Bearer $stats_tok" "$api/pods")
[ "$code" = 403 ] || fail "stats-reader /pods: HTTP $code, want 403"
[ "$(cat "$tmp/b")" = "Forbidden (user=stats-reader, verb=get, resource=nodes, subresource=proxy)" ] ||
        fail "stats-reader /pods body: '$(cat "$tmp/b")'"
code=$(req "$tmp/b" -H "Authorization: Bearer $stats_tok" "$api/containerLogs/default/web/c")
[ "$code" = 403 ] && grep -qx "Forbidden (user=stats-reader, verb=get, resource=nodes, subresource=proxy)" "$tmp/b" ||
        fail "stats-reader /containerLogs: HTTP $code '$(cat "$tmp/b")'"
code=$(req "$tmp/b" -X POST -H "Authorization: Bearer $stats_tok" "$api/exec/default/web/c?command=true&stdout=1")
[ "$code" = 403 ] && grep -qx "Forbidden (user=stats-reader, verb=create, resource=nodes, subresource=proxy)" "$tmp/b" ||
        fail "stats-reader POST /exec: HTTP $code '$(cat "$tmp/b")'"
code=$(req "$tmp/b" -H "Authorization: Bearer tok-$$-secret" "$api/healthz")
[ "$code" = 403 ] && grep -qx "Forbidden (user=napi-tester, verb=get, resource=nodes, subresource=proxy)" "$tmp/b" ||
        fail "token-file user without a rule /healthz: HTTP $code '$(cat "$tmp/b")'"
code=$(req "$tmp/b" -H "Authorization: Bearer not-a-token-$$" "$api/stats/summary")
[ "$code" = 401 ] || fail "unknown token: HTTP $code, want 401"
code=$(req "$tmp/b" "$api/stats/summary")
[ "$code" = 401 ] || fail "no credentials: HTTP $code, want 401 (anonymous is off)"
pass "1 cert/admin allowed; stats-reader: stats 200, /pods /containerLogs /exec 403 with the kubelet's text; token-file user 403; unknown token 401"

# ---- 2. kubectl through the stand-in (its kubelet client certificate) -------------
out=$(k logs web 2>&1)
[ "$out" = hello-authz ] || fail "kubectl logs: '$out'"
out=$(k exec web -- sh -c 'echo from-exec' 2>&1)
[ "$out" = from-exec ] || fail "kubectl exec: '$out'"
pass "2 kubectl logs and exec through the stand-in"

# ---- 3. the caches -----------------------------------------------------------------
r0=$(reviews)
for _ in 1 2 3; do
        curl -sk -o /dev/null -H "Authorization: Bearer $stats_tok" "$api/stats/summary"
        curl -sk -o /dev/null -H "Authorization: Bearer $stats_tok" "$api/pods"
        curl -sk -o /dev/null -H "Authorization: Bearer not-a-token-$$" "$api/pods"
        curl -sk -o /dev/null "${cert[@]}" "$api/healthz"
done
r1=$(reviews)
[ "$(jq -c '[.tokenreviews, .subjectaccessreviews]' <<<"$r0")" = \
        "$(jq -c '[.tokenreviews, .subjectaccessreviews]' <<<"$r1")" ] ||
        fail "repeats asked the apiserver again: $r0 -> $r1"
# a new question is asked once
curl -sk -o /dev/null "${cert[@]}" "$api/stats/summary"
r2=$(reviews)
[ "$(jq '.subjectaccessreviews' <<<"$r2")" -eq $(($(jq '.subjectaccessreviews' <<<"$r1") + 1)) ] ||
        fail "a new question: $r1 -> $r2, want one more SubjectAccessReview"
# latency: an uncached review vs a cached one
t_new=$(curl -sk -o /dev/null -w '%{time_total}' -X DELETE "${cert[@]}" "$api/pods")
t_hit=$(curl -sk -o /dev/null -w '%{time_total}' -X DELETE "${cert[@]}" "$api/pods")
lat=$(grep -o 'Review answered in [0-9]* ms' "$tmp/agent.log" | awk '{s += $4; n++} END {if (n) printf "%d reviews, mean %.1f ms", n, s / n}')
pass "3 repeats answered by the caches ($r0 -> $r1); a new question asked once; end to end ${t_new}s with a review, ${t_hit}s cached; $lat"

# ---- 4. clients going away while their reviews are in flight -----------------------
# node API connections the agent holds (none once every client is gone)
napi_conns() { ss -Htanp '( sport = :10250 )' 2>/dev/null | grep -v LISTEN | grep -c "pid=$agent_pid,"; }
review_delay 1.5
for i in $(seq 8); do
        # the same question for the first 4 (one review joined), new ones after
        p=/pods
        [ "$i" -gt 4 ] && p="/pods?x=$i" && verb=PUT || verb=PATCH
        curl -sk -o /dev/null --max-time 0.3 -X "$verb" -H "Authorization: Bearer $stats_tok" "$api$p" &
        bg_pids+=($!)
done
# and a token nobody has asked about yet
curl -sk -o /dev/null --max-time 0.3 -H "Authorization: Bearer fresh-$$" "$api/pods" &
bg_pids+=($!)
wait "${bg_pids[@]}" 2>/dev/null
bg_pids=()
sleep 2
review_delay 0
kill -0 "$agent_pid" 2>/dev/null || die "the agent died after clients left mid-review"
code=$(req "$tmp/b" "${cert[@]}" "$api/healthz")
[ "$code" = 200 ] || fail "after clients left mid-review: /healthz HTTP $code"
code=$(req "$tmp/b" -X PATCH -H "Authorization: Bearer $stats_tok" "$api/pods")
[ "$code" = 403 ] && grep -q "verb=patch" "$tmp/b" || fail "the answer of an abandoned review: HTTP $code '$(cat "$tmp/b")'"
poll 5 eval '[ "$(napi_conns)" -eq 0 ]' || fail "$(napi_conns) node API connections left after abandoned reviews"
grep -q "SubjectAccessReview answered in 1[0-9][0-9][0-9] ms" "$tmp/agent.log" ||
        fail "no abandoned review was answered after the stand-in's 1.5 s delay"
pass "4 clients gone mid-review: agent serving, no connection left, the answer cached for the next"

# ---- 5. no token in the log ---------------------------------------------------------
for t in "$admin_tok" "$stats_tok" "not-a-token-$$" "fresh-$$" "tok-$$-secret"; do
        ! grep -qF "$t" "$tmp/agent.log" || fail "a bearer token is in the agent's log"
done
pass "5 no bearer token in the agent's log"

# ---- 6. a clean stop with a review in flight (under ASan: no leak, no report) -------
review_delay 3
curl -sk -o /dev/null --max-time 10 -X PUT "${cert[@]}" "$api/pods" &
bg_pids+=($!)
sleep 0.7
stop_agent
sanitizer_findings "$tmp/agent.log" || fail "sanitizer report in the agent log"
review_delay 0
pass "6 the agent stops cleanly with a review in flight (exit 0, no sanitizer report)"

finish
