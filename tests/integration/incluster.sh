#!/usr/bin/env bash
# An in-cluster client in a pod (issue 14): the node's kubectl (a static Go
# binary, hostPath-mounted read-only into a busybox pod) with no kubeconfig,
# so that it takes client-go's in-cluster config from what cubelet gives the
# pod: KUBERNETES_SERVICE_HOST/PORT (10.96.0.1:443), the kube-api-access
# token, ca.crt and namespace. The test stands in for kube-proxy: a DNAT rule
# in the pod's network namespace (which the test owns no more than the pod
# does: it goes with it) sends 10.96.0.1:443 to a TCP relay on the CNI
# bridge's gateway address, which passes it on to the stand-in on loopback.
#   1. the pod runs as user 1000 (pod securityContext.runAsUser): its token
#      file is 0600, owned by 1000 (projected.go's fsUser rule), and the
#      client can read it;
#   2. before a Role allows the pod's ServiceAccount, listing pods is
#      refused with the apiserver's 403 text; after a Role and RoleBinding,
#      the list names the pod itself.
# (The token's claims and ca.crt are checked by workloads.sh.) Exit 77 when
# not root or a tool is missing.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
need_root
need_tools jq umoci ip iptables nsenter ldd busybox kubectl openssl python3 /usr/bin/etcd
need_cni bridge host-local
kubectl_bin=$(readlink -f "$(command -v kubectl)")
ldd_out=$(ldd "$kubectl_bin" 2>&1) # exits 1 for a static binary
grep -q "not a dynamic executable" <<<"$ldd_out" ||
        skip "kubectl ($kubectl_bin) is not a static binary: it cannot run in a busybox pod"
harness_init incluster

uid_of() { pj "$1" '{.metadata.uid}'; }
plog() { cat "$logs"/default_"$1"_"$(uid_of "$1")"/main/0.log 2>/dev/null | cut -d' ' -f4-; }
has_log() { plog "$1" | qgrep -F -- "$2"; }

import_busybox
write_cni_conf
start_standin
start_agent -v 1 --kubeconfig "$data/node.kubeconfig" --healthz-port "$(free_port)" \
        --node-status-update-frequency 1s
node_ready
pass "node Ready"

k create serviceaccount reader >/dev/null || die "kubectl create serviceaccount failed"
# The client tries every 2 s and prints "try N rc=RC" and what kubectl said
# (busybox's timeout, not --request-timeout: with a flag that changes the
# client config, kubectl no longer falls back to the in-cluster config).
mkpod incluster <<EOF
  serviceAccountName: reader
  securityContext: {runAsUser: 1000}
  containers:
  - name: main
    image: busybox:1.36
    env: [{name: HOME, value: /home/u}]
    command: [sh, -c, 'id -u; ls -ln /var/run/secrets/kubernetes.io/serviceaccount/..data/token; env | grep ^KUBERNETES_SERVICE_; n=0; while :; do n=\$((n+1)); out=\$(timeout 10 /kubectl get pods -o name 2>&1); echo "try \$n rc=\$?"; echo "\$out"; sleep 2; done']
    volumeMounts:
    - {name: kubectl, mountPath: /kubectl, readOnly: true}
    - {name: home, mountPath: /home/u}
  volumes:
  - {name: kubectl, hostPath: {path: $kubectl_bin, type: File}}
  - {name: home, emptyDir: {}}
EOF
wait_running incluster 60
puid=$(uid_of incluster)

# ---- 1. the token file of a non-root pod ------------------------------------------
poll 10 has_log incluster "try 1 rc=" || die "incluster: the client did not run: $(plog incluster | head -5)"
vol=$(pj incluster '{.spec.volumes[?(@.projected)].name}')
tok=$root/pods/$puid/volumes/kubernetes.io~projected/$vol/token
got=$(stat -Lc '%a %u' "$tok")
[ "$got" = "600 1000" ] || fail "1 token file: mode/owner '$got', want '600 1000'"
plog incluster | sed -n 1p | qgrep -x 1000 || fail "1 the container does not run as 1000: $(plog incluster | head -1)"
plog incluster | sed -n 2p | qgrep '^-rw------- .* 1000 ' ||
        fail "1 the container sees the token as: $(plog incluster | sed -n 2p)"
pass "1 token file 0600 owned by 1000 (the pod's runAsUser), read by the client"

# ---- 2. kube-proxy's part: 10.96.0.1:443 -> a relay on the bridge gateway -> the stand-in
gw=$(ip -4 -o addr show dev "$bridge" | awk '{print $4}' | cut -d/ -f1 | head -1)
[ -n "$gw" ] || die "no address on $bridge"
cat >"$tmp/relay.py" <<'PYEOF'
# Test code: a TCP relay, HOST:0 -> 127.0.0.1:PORT, its port in PORTFILE.
import asyncio, os, sys
host, up_port, port_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
async def pipe(r, w):
    try:
        while data := await r.read(65536):
            w.write(data)
            await w.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        w.close()
async def handle(cr, cw):
    try:
        ur, uw = await asyncio.open_connection("127.0.0.1", up_port)
    except OSError:
        cw.close()
        return
    await asyncio.gather(pipe(cr, uw), pipe(ur, cw))
async def main():
    s = await asyncio.start_server(handle, host, 0)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(s.sockets[0].getsockname()[1]))
    os.rename(port_file + ".tmp", port_file)
    await s.serve_forever()
asyncio.run(main())
PYEOF
python3 "$tmp/relay.py" "$gw" "$standin_port" "$tmp/relay.port" 2>"$tmp/relay.log" &
track $!
poll 10 test -s "$tmp/relay.port" || die "the relay did not start: $(cat "$tmp/relay.log")"
rport=$(cat "$tmp/relay.port")
netns=$root/sandboxes/$puid/ns/net # the sandbox's pin (runtime/sandbox.c)
[ -e "$netns" ] || die "no network namespace file $netns"
# The test network's pods have only their subnet's route (the bridge plugin
# without isDefaultGateway): the route lookup comes before the nat OUTPUT
# hook, so 10.96.0.1 needs a route (a cluster's pods have a default route).
nsenter --net="$netns" ip route add 10.96.0.1/32 via "$gw" || die "cannot add a route to 10.96.0.1 in $netns"
nsenter --net="$netns" iptables -t nat -A OUTPUT -d 10.96.0.1/32 -p tcp --dport 443 \
        -j DNAT --to-destination "$gw:$rport" || die "cannot add the DNAT rule in $netns"
pass "2 DNAT 10.96.0.1:443 -> $gw:$rport (relay to the stand-in on 127.0.0.1:$standin_port) in the pod's netns"

forbidden='Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:default:reader" cannot list resource "pods" in API group "" in the namespace "default"'
if ! poll 30 has_log incluster "$forbidden"; then
        fail "2 before the Role: no 403 from the client: $(plog incluster | tail -4)"
elif has_log incluster "pod/incluster"; then
        fail "2 pods listed before any Role allowed it"
else
        pass "2 before the Role: $forbidden"
fi
k create role pod-reader --verb=get,list,watch --resource=pods >/dev/null || die "kubectl create role failed"
k create rolebinding reader-pods --role=pod-reader --serviceaccount=default:reader >/dev/null ||
        die "kubectl create rolebinding failed"
t0=$(now)
if poll 30 has_log incluster "pod/incluster"; then
        ok_try=$(plog incluster | grep -B1 -x "pod/incluster" | head -1)
        pass "2 after the Role and RoleBinding: the in-cluster kubectl lists pod/incluster (in $(since "$t0")s, $ok_try)"
else
        fail "2 after the Role: no pod list: $(plog incluster | tail -4)"
fi
finish
