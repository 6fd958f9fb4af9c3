#!/bin/bash
# The agent talks HTTP/2 to the apiserver, as to a real kube-apiserver:
# the stand-in negotiates h2 by ALPN (h2 preferred, http/1.1 offered) and
# records each connection (--test-connections, GET /debug/connections).
# Checks: every connection of the node is h2; at start and after it the
# agent keeps one connection, its watches and writes multiplexed on it;
# a GOAWAY (POST /debug/goaway, the connection closed 1 s later) and a
# restart of the stand-in (Go's graceful shutdown: GOAWAY, then close) are
# survived: a new connection, the Lease renewed, a pod created after each
# gets its status (rejected: NodeAffinity); with
# --http2-max-streams-per-connection 2 the server's limit holds on every
# connection and the agent still works (the number of connections libcurl
# opens then is printed; docs/apiserver-http2.md); with
# --disable-http2-serving the agent falls back to HTTP/1.1.
# Exit 77 when a prerequisite is missing.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
need_root
need_tools /usr/bin/etcd /usr/bin/kubectl /usr/bin/python3 jq curl
/usr/bin/python3 -c 'import h2' 2>/dev/null || skip "python3-h2 missing (scripts/deps.sh)"
need_cubelet
NODE=h2-node
harness_init api-http2
K_TIMEOUT=0
USER_NODE="system:node:$NODE"

mkdir -p "$root" "$tmp/cni-noplugin"
echo '{"cniVersion":"1.0.0","name":"it-none","plugins":[{"type":"cubelet-it-no-such-plugin"}]}' \
        >"$tmp/cni-noplugin/10-none.conflist"
export CUBELET_STANDIN_TEST_CONNECTIONS=1
start_standin

# The node's client certificate (node.crt stays across restarts; the
# bearer tokens do too, but this mirrors agent_apiserver.sh).
b64() { base64 -w0 "$1"; }
cat >"$tmp/node.kubeconfig" <<YAML
apiVersion: v1
kind: Config
current-context: node
clusters:
- name: standin
  cluster:
    server: $standin_url
    certificate-authority-data: $(b64 "$data/ca.crt")
users:
- name: node
  user:
    client-certificate-data: $(b64 "$data/node.crt")
    client-key-data: $(b64 "$data/node.key")
contexts:
- name: node
  context: {cluster: standin, user: node}
YAML

# admin curl over HTTP/1.1 (its own connections stay out of the node's)
acurl() {
        curl -sS --http1.1 --cacert "$data/ca.crt" --cert "$data/admin.crt" --key "$data/admin.key" "$@"
}
# conns JQ-FILTER: the node's connection records, filtered
conns() {
        acurl "$standin_url/debug/connections" |
                jq -c --arg u "$USER_NODE" "[.connections[] | select(.users | index(\$u))] | $1"
}
open_conns() { conns '[.[] | select(.closed == null)] | length'; }
all_conns() { conns 'length'; }
lease_renew() { k get lease -n kube-node-lease "$NODE" -o jsonpath='{.spec.renewTime}' 2>/dev/null; }
# rejected_pod NAME: a pod this node cannot run (nodeSelector); the agent
# must see it on its watch and write its status (up to 60 s: after a
# restart the pod watch may be in its relist backoff).
rejected_pod() {
        k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: default}
spec:
  nodeName: $NODE
  nodeSelector: {example.com/nowhere: "true"}
  containers:
  - {name: main, image: busybox:1.36}
EOF
        local t0
        t0=$(now)
        k wait --for=jsonpath='{.status.reason}'=NodeAffinity "pod/$1" --timeout=60s >/dev/null ||
                { fail "$1: status not written (reason '$(pj "$1" '{.status.reason}')')"; return 1; }
        echo "  $1: status NodeAffinity after $(since "$t0") s"
}
# lease_advances: the Lease is renewed after this point
lease_advances() {
        local before
        before=$(lease_renew)
        poll 20 eval '[ "$(lease_renew)" != "$before" ]' || fail "the Lease was not renewed after $1"
}

t_start=$(now)
spawn_agent -v 2 --kubeconfig "$tmp/node.kubeconfig" --hostname-override "$NODE" --root-dir "$root" \
        --cgroup-root "$cgroot" --cni-conf-dir "$tmp/cni-noplugin" --pod-logs-dir "$logs" \
        --healthz-port 0 --node-status-update-frequency 2s --node-lease-duration-seconds 4
node_ready 30
echo "  node Ready after $(since "$t_start") s"
rejected_pod before-goaway

# ---- negotiated h2, one connection ----
sleep 3 # the start's requests are done; the watches and the Lease go on
n=$(all_conns)
echo "  connections of the node since its start: $n (open: $(open_conns)); $(conns 'map({alpn, requests, maxActive})')"
[ "$(conns 'map(select(.alpn != "h2")) | length')" = 0 ] ||
        fail "a node connection is not HTTP/2: $(conns 'map({id, alpn})')"
[ "$n" = 1 ] || fail "the agent opened $n connections at start (want 1: CURLOPT_PIPEWAIT)"
watches=$(conns '[.[] | select(.closed == null) | .active] | add // 0')
echo "  streams open on the node's connection: $watches"
[ "$watches" -ge 2 ] || fail "want the watches multiplexed on the connection, $watches streams open"
pass "h2 negotiated by ALPN, one connection, $watches streams on it"

# ---- GOAWAY on the node's connection, closed 1 s later ----
old=$(conns '[.[] | select(.closed == null) | .id] | first')
t0=$(now)
[ "$(acurl -X POST -H 'Content-Type: application/json' \
        -d "{\"user\":\"$USER_NODE\",\"graceSeconds\":1}" "$standin_url/debug/goaway" | jq .connections)" -ge 1 ] ||
        fail "POST /debug/goaway told no connection"
poll 10 eval '[ "$(conns "[.[] | select(.id == $old and .closed != null)] | length")" = 1 ]' ||
        fail "connection $old still open after GOAWAY + 1 s"
poll 20 eval '[ "$(open_conns)" -ge 1 ]' || fail "no new connection after GOAWAY"
lease_advances GOAWAY
rejected_pod after-goaway
echo "  recovered from GOAWAY in $(since "$t0") s"
sleep 2
[ "$(open_conns)" = 1 ] || fail "after GOAWAY: $(open_conns) open connections, want 1: $(conns 'map({id, closed, active})')"
pass "GOAWAY survived: new connection, Lease renewed, pod status written"

# ---- restart of the stand-in: GOAWAY at its graceful shutdown ----
t0=$(now)
stop_standin
start_standin
poll 30 eval '[ "$(open_conns)" -ge 1 ]' || fail "the agent did not reconnect after the restart"
lease_advances "the restart"
rejected_pod after-restart
echo "  recovered from the restart in $(since "$t0") s"
sleep 2
[ "$(open_conns)" = 1 ] || fail "after the restart: $(open_conns) open connections, want 1"
[ "$(conns 'map(select(.alpn != "h2")) | length')" = 0 ] || fail "a connection after the restart is not h2"
pass "stand-in restart survived over h2"

# ---- a server limit of 2 streams per connection ----
stop_standin
start_standin --http2-max-streams-per-connection 2
poll 30 eval '[ "$(open_conns)" -ge 1 ]' || fail "no connection with max streams 2"
lease_advances "the restart with 2 streams"
rejected_pod max-streams-2
sleep 3
over=$(conns 'map(select(.maxActive > 2)) | length')
[ "$over" = 0 ] || fail "a connection had more than 2 streams: $(conns 'map({id, maxActive})')"
echo "  max 2 streams: $(open_conns) open connections, $(all_conns) made; $(conns 'map(select(.closed == null) | {id, active, maxActive})')"
pass "SETTINGS_MAX_CONCURRENT_STREAMS 2 honoured"

# ---- HTTP/2 off: the agent falls back to HTTP/1.1 ----
stop_standin
start_standin --disable-http2-serving
poll 30 eval '[ "$(open_conns)" -ge 1 ]' || fail "no connection with HTTP/2 off"
lease_advances "the restart without h2"
rejected_pod no-h2
[ "$(conns 'map(select(.closed == null and .alpn != "http/1.1")) | length')" = 0 ] ||
        fail "with --disable-http2-serving a connection is not http/1.1: $(conns 'map({id, alpn})')"
echo "  HTTP/1.1: $(open_conns) open connections"
pass "--disable-http2-serving: HTTP/1.1"

stop_agent
finish
