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
# cubelet mounts no projected volumes yet (issue 14), so the stand-in's
# ServiceAccount admission (the kube-api-access-* volume) stays off here;
# Node authorization and NodeRestriction stay on.
export CUBELET_STANDIN_DISABLE_ADMISSION_PLUGINS=${CUBELET_STANDIN_DISABLE_ADMISSION_PLUGINS-ServiceAccount}
: "${CUBELET:?path of the cubelet binary}" "${SOURCE_DIR:?}"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
for t in jq umoci ip busybox kubectl openssl python3 curl /usr/bin/etcd; do
        command -v "$t" >/dev/null || { echo "SKIP: $t missing"; exit 77; }
done
[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] || { echo "SKIP: CNI plugins missing"; exit 77; }
[ -d /sys/fs/cgroup/memory ] || { echo "SKIP: needs the cgroup v1 memory hierarchy"; exit 77; }
ip link add cbltest$$ type bridge 2>/dev/null || { echo "SKIP: cannot create a bridge interface"; exit 77; }
ip link del cbltest$$

tmp=$(mktemp -d /tmp/cubelet-napiz.XXXXXX)
data=$tmp/data
root=$tmp/root
logs=$tmp/logs
cgroot=cubelet-it-$$
bridge=cbn$$
dummy=cbd$$
NODE=it-napiz-$$
for x in $(seq 40 250); do
        subnet=10.$x.$(($$ % 200 + 20)).0/24
        ip route | grep -q "^10\.$x\." || break
done
for x in $(seq 251 -1 40); do
        nodeip=10.$x.$(($$ % 200 + 21)).7
        ip route | grep -q "^10\.$x\." || break
done
server_pid=""
agent_pid=""
bg_pids=()
T0=$(date +%s)

cleanup() {
        local rc=$? p h
        set +e
        for p in "${bg_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
        if [ -n "$agent_pid" ]; then
                kill -TERM "$agent_pid" 2>/dev/null
                for _ in $(seq 50); do kill -0 "$agent_pid" 2>/dev/null || break; sleep 0.1; done
                kill -KILL "$agent_pid" 2>/dev/null
                wait "$agent_pid" 2>/dev/null
        fi
        for h in /sys/fs/cgroup/*/"$cgroot"; do
                [ -d "$h" ] || continue
                find "$h" -depth -type d | while read -r d; do
                        for p in $(cat "$d/cgroup.procs" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
                done
        done
        if [ -n "$server_pid" ]; then
                kill -TERM "$server_pid" 2>/dev/null
                wait "$server_pid" 2>/dev/null
        fi
        sleep 0.3
        grep " $tmp" /proc/self/mountinfo | awk '{print $5}' | sort -r | xargs -r -n1 umount -l 2>/dev/null
        for h in /sys/fs/cgroup/*/"$cgroot"; do
                [ -d "$h" ] && find "$h" -depth -type d -exec rmdir {} \; 2>/dev/null
        done
        ip link del "$bridge" 2>/dev/null
        ip link del "$dummy" 2>/dev/null
        if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ -f "$tmp/agent.log" ]; then
                echo "--- agent log (tail)"
                tail -n 40 "$tmp/agent.log"
                echo "--- server log (tail)"
                tail -n 20 "$tmp/server.log"
        fi
        rm -rf "$tmp"
        exit "$rc"
}
trap cleanup EXIT

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
pass() { echo "ok   [$(($(date +%s) - T0))s] $*"; }
die() { echo "FATAL: $*"; fails=$((fails + 1)); exit 1; }
k() { kubectl --kubeconfig "$data/admin.kubeconfig" --request-timeout=30s "$@"; }
poll() {
        local end=$(($(date +%s%N) + ${1%.*} * 1000000000))
        shift
        while :; do
                "$@" && return 0
                [ "$(date +%s%N)" -lt "$end" ] || return 1
                sleep 0.2
        done
}
pj() { k get pod "$1" -o jsonpath="$2" 2>/dev/null; }
phase_is() { [ "$(pj "$1" '{.status.phase}')" = "$2" ]; }
mkpod() {
        {
                printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: default}\nspec:\n' "$1"
                printf '  nodeName: %s\n  restartPolicy: %s\n  terminationGracePeriodSeconds: 1\n' \
                        "${3:-$NODE}" "${2:-Always}"
                cat
        } | k create -f - >/dev/null || fail "$1: kubectl create failed"
}
wait_running() { poll "${2:-30}" phase_is "$1" Running || fail "$1: not Running after ${2:-30}s"; }
# fds and processes of the agent, to check nothing leaks
agent_fds() { ls /proc/"$agent_pid"/fd 2>/dev/null | wc -l; }
agent_children() { ps -o pid= --ppid "$agent_pid" 2>/dev/null | wc -l; }

# ---- setup -------------------------------------------------------------------
mkdir -p "$data" "$root" "$logs" "$tmp/cni"
ip link add "$dummy" type bridge && ip addr add "$nodeip/32" dev "$dummy" && ip link set "$dummy" up ||
        die "cannot set up $dummy with $nodeip"
bash "$SOURCE_DIR/tests/images/build-busybox.sh" "$tmp/img" >/dev/null || die "build-busybox.sh failed"
"$CUBELET" --root-dir "$root" image import "$tmp/img/busybox.oci.tar" --name busybox:1.36 >/dev/null ||
        die "image import failed"
cat >"$tmp/cni/10-it.conflist" <<EOF
{"cniVersion":"1.0.0","name":"cubelet-napiz-$$","plugins":[
 {"type":"bridge","bridge":"$bridge","isGateway":true,"ipMasq":false,
  "ipam":{"type":"host-local","ranges":[[{"subnet":"$subnet"}]],"dataDir":"$tmp/ipam"}}]}
EOF
"$SOURCE_DIR/tests/apiserver/run.sh" --data "$data" --node-name "$NODE" >>"$tmp/server.log" 2>&1 &
server_pid=$!
poll 30 grep -q '^ready ' "$tmp/server.log" || die "the stand-in did not become ready"
[ -f "$data/kubelet-client.crt" ] || die "the stand-in made no kubelet-client.crt"
hport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
echo "tok-$$-secret,napi-tester,1" >"$tmp/tokens.csv"
start_agent() {
        "$CUBELET" -v 3 --root-dir "$root" --cni-conf-dir "$tmp/cni" --kubeconfig "$data/node.kubeconfig" \
                --healthz-port "$hport" --hostname-override "$NODE" --node-ip "$nodeip" \
                --pod-logs-dir "$logs" --cgroup-root "$cgroot" --node-status-update-frequency 1s \
                --address "$nodeip" --client-ca-file "$data/ca.crt" \
                --authentication-token-file "$tmp/tokens.csv" \
                --authentication-token-webhook --authorization-mode Webhook >>"$tmp/agent.log" 2>&1 &
        agent_pid=$!
}
start_agent
poll 30 eval 'k get node "$NODE" >/dev/null 2>&1' || die "node $NODE not registered after 30 s"
k wait --for=condition=Ready "node/$NODE" --timeout=30s >/dev/null || die "node $NODE not Ready"
api="https://$nodeip:10250"
poll 10 eval 'curl -sk -o /dev/null "$api/healthz"' || die "nothing serves $api"
grep -q "authorization: Webhook" "$tmp/agent.log" || fail "the agent does not say it authorizes by Webhook"
pass "0 node Ready, node API on $api in Webhook mode"

apiport=$(grep '^ready ' "$tmp/server.log" | tail -n1 | sed 's/.*://')
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
kill -TERM "$agent_pid"
wait "$agent_pid"
rc=$?
agent_pid=""
[ "$rc" -eq 0 ] || fail "the agent exited $rc"
! grep -qE "AddressSanitizer|LeakSanitizer|runtime error" "$tmp/agent.log" ||
        fail "sanitizer report: $(grep -E -m3 "AddressSanitizer|LeakSanitizer|runtime error" "$tmp/agent.log")"
review_delay 0
pass "6 the agent stops cleanly with a review in flight (exit 0, no sanitizer report)"

echo "--- $fails failure(s)"
[ "$fails" -eq 0 ]
