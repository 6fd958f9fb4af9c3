#!/usr/bin/env bash
# Joining a cluster the way operators do (issue 19): the agent gets only a
# bootstrap kubeconfig (a kubeadm-style bootstrap token), no node
# certificate. Against the stand-in (kube-apiserver's bootstrap-token
# authenticator, kubeadm's RBAC, kube-controller-manager's csrapproving and
# csrsigning with --cluster-signing-duration 90s):
#  A. join: a node-csr-* CSR by system:bootstrap:<id>, auto-approved
#     (AutoApproved, nodeclient), issued; kubelet-client-current.pem links
#     to a kubelet-client-<ts>.pem (0600, key + certificate for
#     CN=system:node:NODE, O=system:nodes, client auth, EC P-256); the
#     kubeconfig is written; the Node registers (only system:node:NODE may)
#     and turns Ready; a pod runs. Prints the time from start to Ready.
#  B. rotation: a 90 s certificate lives 390 s (notBefore is backdated 5 min,
#     as the real signer does), so its 70-90 % deadline comes within a minute:
#     a csr-* CSR by system:node:NODE, approved by the selfnodeclient check,
#     the link moves to a new file, the running pod keeps running and a pod
#     created afterwards runs (the pod watch kept flowing: no relist).
#  C. a restart with the valid kubeconfig skips the bootstrap.
#  D. a token whose group may create CSRs but not have them auto-approved:
#     the CSR waits, `kubectl certificate deny` denies it, the agent stops
#     with an error naming the CSR, the reason (KubectlDeny) and message.
#  E. an expired bootstrap token: a clear 401 error, no crash.
# Exit 77 when not root or a tool is missing.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
need_root
need_tools jq umoci ip busybox kubectl openssl python3 /usr/bin/etcd
need_cni bridge host-local
need_cubelet
NODE=bootstrap-node-$$
harness_init bootstrap
K_TIMEOUT=30s
MKPOD_GRACE=1
import_busybox
write_cni_conf
start_standin --cluster-signing-duration 90s

in_1h=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
TOKEN=ab12cd.0123456789abcdef
token_secret ab12cd 0123456789abcdef system:bootstrappers:kubeadm:default-node-token "$in_1h"
bootstrap_kubeconfig "$tmp/bootstrap.kubeconfig" "$TOKEN"
pki=$tmp/pki
kcfg=$tmp/kubelet/kubelet.kubeconfig
csr_col() { k get csr "$1" -o jsonpath="$2"; }

# ---- A. join from the token alone ----
t0=$(now)
start_agent -v 2 --healthz-port 0 --bootstrap-kubeconfig "$tmp/bootstrap.kubeconfig" \
        --kubeconfig "$kcfg" --cert-dir "$pki"
node_ready 60
ready_s=$(since "$t0")
echo "joined: node $NODE Ready ${ready_s}s after the agent started"
bcsr=$(k get csr -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | grep '^node-csr-' | head -n1)
[ -n "$bcsr" ] || fail "no node-csr-* CSR: $(k get csr 2>&1)"
[ "$(csr_col "$bcsr" '{.spec.username}')" = system:bootstrap:ab12cd ] ||
        fail "$bcsr: requestor $(csr_col "$bcsr" '{.spec.username}'), want system:bootstrap:ab12cd"
[ "$(csr_col "$bcsr" '{.spec.signerName}')" = kubernetes.io/kube-apiserver-client-kubelet ] ||
        fail "$bcsr: signer $(csr_col "$bcsr" '{.spec.signerName}')"
[ "$(csr_col "$bcsr" '{.spec.usages}')" = '["digital signature","client auth"]' ] ||
        fail "$bcsr: usages $(csr_col "$bcsr" '{.spec.usages}') (the kubelet's for an EC key)"
[ "$(csr_col "$bcsr" '{.status.conditions[0].type}/{.status.conditions[0].reason}')" = Approved/AutoApproved ] ||
        fail "$bcsr: not auto-approved: $(csr_col "$bcsr" '{.status.conditions}')"
[ "$(csr_col "$bcsr" '{.status.conditions[0].message}')" = "Auto approving kubelet client certificate after SubjectAccessReview." ] ||
        fail "$bcsr: approval message $(csr_col "$bcsr" '{.status.conditions[0].message}')"
k get csr "$bcsr" | qgrep 'Approved,Issued' || fail "kubectl get csr: $(k get csr "$bcsr")"
[ -L "$pki/kubelet-client-current.pem" ] || fail "no kubelet-client-current.pem symlink in $pki: $(ls -l "$pki")"
first=$(readlink "$pki/kubelet-client-current.pem")
[[ $first =~ ^kubelet-client-[0-9]{4}(-[0-9]{2}){5}\.pem$ ]] || fail "the link points to $first"
[ "$(stat -c %a "$pki/$first")" = 600 ] || fail "$first: mode $(stat -c %a "$pki/$first")"
openssl pkey -in "$pki/$first" -noout -text 2>/dev/null | qgrep 'NIST CURVE: P-256' ||
        fail "$first: the key is not EC P-256"
subj=$(openssl x509 -in "$pki/$first" -noout -subject -nameopt sep_comma_plus_space)
[ "$subj" = "subject=O=system:nodes, CN=system:node:$NODE" ] || fail "$first: $subj"
openssl x509 -in "$pki/$first" -noout -ext extendedKeyUsage | qgrep 'TLS Web Client Authentication' ||
        fail "$first: no client auth usage"
[ ! -e "$pki/kubelet-client.key.tmp" ] || fail "kubelet-client.key.tmp left behind"
grep -q "client-certificate: \"$pki/kubelet-client-current.pem\"" "$kcfg" ||
        fail "the kubeconfig does not name the current link: $(cat "$kcfg")"
grep -q 'current-context: default-context' "$kcfg" || fail "kubeconfig layout: $(cat "$kcfg")"
mkpod web <<EOF
  containers:
  - name: web
    image: busybox:1.36
    command: [sh, -c, 'trap "exit 0" TERM; while :; do sleep 0.2; done']
EOF
wait_running web 60
pass "A: joined from a bootstrap token (Ready in ${ready_s}s), CSR $bcsr auto-approved, pod running"

# ---- B. rotation ----
wait_log 'client certificate rotated: ' 90
rcsr=$(k get csr -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | grep '^csr-' | head -n1)
[ -n "$rcsr" ] || fail "no csr-* renewal CSR: $(k get csr 2>&1)"
[ "$(csr_col "$rcsr" '{.spec.username}')" = "system:node:$NODE" ] ||
        fail "$rcsr: requestor $(csr_col "$rcsr" '{.spec.username}'), want the node itself"
[ "$(csr_col "$rcsr" '{.status.conditions[0].message}')" = "Auto approving self kubelet client certificate after SubjectAccessReview." ] ||
        fail "$rcsr: not approved by selfnodeclient: $(csr_col "$rcsr" '{.status.conditions}')"
now_link=$(readlink "$pki/kubelet-client-current.pem")
[ "$now_link" != "$first" ] || fail "the link still points to $first after the rotation"
phase_is web Running || fail "web: $(pj web '{.status.phase}') after the rotation"
mkpod after <<EOF
  containers:
  - name: after
    image: busybox:1.36
    command: [sh, -c, 'trap "exit 0" TERM; while :; do sleep 0.2; done']
EOF
wait_running after 60
relists=$(grep -c 'expired (410): relisting' "$tmp/agent.log" || true)
[ "$relists" -eq 0 ] || fail "$relists relist(s) after the rotation"
k get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' | qgrep True ||
        fail "the node is not Ready after the rotation"
pass "B: rotated ($rcsr, $first -> $now_link), pods kept running, a new pod came through the watch"

# ---- C. restart: the kubeconfig is valid, no new bootstrap ----
stop_agent
n_boot=$(k get csr -o name | grep -c 'node-csr-' || true)
start_agent -v 2 --healthz-port 0 --bootstrap-kubeconfig "$tmp/bootstrap.kubeconfig" \
        --kubeconfig "$kcfg" --cert-dir "$pki"
wait_log 'exists and is valid, skipping bootstrap' 20
node_ready 30
[ "$(k get csr -o name | grep -c 'node-csr-' || true)" = "$n_boot" ] || fail "the restart bootstrapped again"
stop_agent
pass "C: a restart with a valid kubeconfig skips the bootstrap"

# ---- D. a CSR an administrator denies ----
k create clusterrolebinding it-manual-bootstrap --clusterrole=system:node-bootstrapper \
        --group=system:bootstrappers:it-manual >/dev/null || die "cannot bind system:node-bootstrapper"
token_secret ef34gh fedcba9876543210 system:bootstrappers:it-manual "$in_1h"
bootstrap_kubeconfig "$tmp/manual.kubeconfig" ef34gh.fedcba9876543210
"$CUBELET" -v 2 --root-dir "$tmp/root-denied" --cni-conf-dir "$cni_dir" --pod-logs-dir "$logs" \
        --cgroup-root "$cgroot" --hostname-override "denied-$NODE" --healthz-port 0 \
        --bootstrap-kubeconfig "$tmp/manual.kubeconfig" --kubeconfig "$tmp/denied/kubeconfig" \
        --cert-dir "$tmp/denied/pki" >"$tmp/denied.log" 2>&1 &
dpid=$!
track "$dpid"
get_pending() { k get csr -o jsonpath='{range .items[*]}{.metadata.name} {.spec.username}{"\n"}{end}' | awk '$2=="system:bootstrap:ef34gh"{print $1}'; }
poll 20 eval '[ -n "$(get_pending)" ]' || fail "no CSR from the it-manual token: $(tail -3 "$tmp/denied.log")"
dcsr=$(get_pending)
sleep 1
k get csr "$dcsr" | qgrep Pending || fail "$dcsr was not left Pending: $(k get csr "$dcsr")"
k certificate deny "$dcsr" >/dev/null || fail "kubectl certificate deny $dcsr failed"
poll 20 eval '! kill -0 "$dpid" 2>/dev/null' || fail "the agent still runs after $dcsr was denied"
wait "$dpid"
rc=$?
[ "$rc" -ne 0 ] || fail "the agent exited 0 after a denied CSR"
grep -q "certificate signing request $dcsr is denied, reason: KubectlDeny, message: This CSR was denied by kubectl certificate deny." "$tmp/denied.log" ||
        fail "no clear error for the denied CSR: $(grep -i denied "$tmp/denied.log" | tail -2)"
pass "D: a denied CSR ends the bootstrap with the CSR's name, reason and message (exit $rc)"

# ---- E. an expired bootstrap token ----
token_secret ij56kl 1111222233334444 system:bootstrappers:kubeadm:default-node-token \
        "$(date -u -d '-1 hour' +%Y-%m-%dT%H:%M:%SZ)"
bootstrap_kubeconfig "$tmp/expired.kubeconfig" ij56kl.1111222233334444
timeout 30 "$CUBELET" -v 2 --root-dir "$tmp/root-expired" --cni-conf-dir "$cni_dir" \
        --pod-logs-dir "$logs" --cgroup-root "$cgroot" --hostname-override "expired-$NODE" \
        --healthz-port 0 --bootstrap-kubeconfig "$tmp/expired.kubeconfig" \
        --kubeconfig "$tmp/expired/kubeconfig" --cert-dir "$tmp/expired/pki" >"$tmp/expired.log" 2>&1
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "expired token: exit $rc: $(tail -3 "$tmp/expired.log")"
grep -q 'cannot create certificate signing request: the apiserver at .* refused the credentials (401 Unauthorized)' \
        "$tmp/expired.log" || fail "no clear error for an expired token: $(tail -3 "$tmp/expired.log")"
[ ! -e "$tmp/expired/kubeconfig" ] || fail "a kubeconfig was written for an expired token"
pass "E: an expired bootstrap token is refused with a clear error"
finish
