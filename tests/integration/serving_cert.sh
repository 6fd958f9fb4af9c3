#!/usr/bin/env bash
# The node API's serving certificate from the cluster (issue 19,
# serverTLSBootstrap / --rotate-server-certificates), against the stand-in
# (kube-controller-manager's csrapproving, which never approves
# kubelet-serving CSRs, and csrsigning with --cluster-signing-duration 90s):
#  A. pending: a csr-* CSR by system:node:NODE for kubernetes.io/kubelet-serving
#     (usages digital signature + server auth, the kubelet's for an EC key;
#     CN system:node:NODE, O system:nodes, SANs DNS:NODE and IP:NODEIP from the
#     Node's status addresses) stays Pending; meanwhile every TLS handshake of
#     the node API fails (an internal_error alert; the agent logs the kubelet's
#     "no serving certificate available for the kubelet"); no self-signed
#     kubelet.crt is made.
#  B. `kubectl certificate approve`: the signed certificate goes to
#     kubelet-server-<ts>.pem (0600, key + certificate) behind the
#     kubelet-server-current.pem link, and the node API presents it (issuer
#     the cluster CA, the SANs above, server auth): curl verifies it against
#     the cluster CA by IP. Prints the time from the approval to serving.
#  C. rotation: the 90 s certificate (390 s of life with the signer's 5 min
#     backdate) is renewed at 70-90 %: a new CSR, Pending until approved, the
#     old certificate served meanwhile; approved, the node API presents the new
#     one without a restart (same pid), and a connection opened with the
#     old one still gets its answer.
#  D. the addresses change: a restart with serverTLSBootstrap from the config
#     file and another --node-ip serves the stored certificate at once, finds
#     it lacks the new IP and asks for one that has it.
#  E. tlsCertFile, the file store's fallback, is served at once; it lacks
#     the node's CN and SANs, so a CSR asks for one that has them.
#  F. serverTLSBootstrap without --kubeconfig is refused.
# Exit 77 when not root or a tool is missing.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
need_root
need_tools jq ip kubectl openssl python3 curl /usr/bin/etcd
need_bridge
need_cubelet
NODE=serving-node-$$
harness_init serving
K_TIMEOUT=30s
add_node_ip
write_cni_conf
start_standin --cluster-signing-duration 90s
pki=$tmp/pki
port=$(free_port)
echo "tok-$$-secret,napi-tester,1" >"$tmp/tokens.csv"
agent_args=(-v 2 --healthz-port 0 --kubeconfig "$data/node.kubeconfig" --cert-dir "$pki"
        --port "$port" --authentication-token-file "$tmp/tokens.csv"
        --node-status-update-frequency 1s)
csr_col() { k get csr "$1" -o jsonpath="$2"; }
# serving_csrs: the names of the node's kubelet-serving CSRs, oldest first
serving_csrs() {
        k get csr --sort-by=.metadata.creationTimestamp \
                -o jsonpath='{range .items[*]}{.metadata.name} {.spec.signerName} {.spec.username}{"\n"}{end}' |
                awk -v u="system:node:$NODE" '$2=="kubernetes.io/kubelet-serving" && $3==u {print $1}'
}
# served IP FILE: the certificate the node API at IP presents, into FILE
served() {
        openssl s_client -connect "$1:$port" </dev/null 2>/dev/null | openssl x509 >"$2" 2>/dev/null
}
serial_of() { openssl x509 -in "$1" -noout -serial 2>/dev/null; }
# log_s PATTERN: the time of day (seconds) of the agent's first log line matching PATTERN
log_s() {
        grep -m1 -E "$1" "$tmp/agent.log" | awk '{ split($2, t, ":"); printf "%.6f", t[1] * 3600 + t[2] * 60 + t[3] }'
}

# ---- A. no certificate yet: the CSR waits, handshakes fail ----
start_agent "${agent_args[@]}" --node-ip "$nodeip" --address "$nodeip" --rotate-server-certificates
first_pid=$agent_pid
node_ready 60
poll 20 eval '[ -n "$(serving_csrs)" ]' || fail "no kubelet-serving CSR: $(k get csr 2>&1)"
csr1=$(serving_csrs | head -n1)
[[ $csr1 == csr-* ]] || fail "the serving CSR is named $csr1 (want generateName csr-)"
[ "$(csr_col "$csr1" '{.spec.usages}')" = '["digital signature","server auth"]' ] ||
        fail "$csr1: usages $(csr_col "$csr1" '{.spec.usages}') (the kubelet's for an EC key)"
csr_col "$csr1" '{.spec.request}' | base64 -d >"$tmp/req1.pem"
subj=$(openssl req -in "$tmp/req1.pem" -noout -subject -nameopt sep_comma_plus_space)
[ "$subj" = "subject=O=system:nodes, CN=system:node:$NODE" ] || fail "$csr1: $subj"
sans=$(openssl req -in "$tmp/req1.pem" -noout -text | grep -A1 'Subject Alternative Name' | tail -n1 | tr -d ' ')
[ "$sans" = "DNS:$NODE,IPAddress:$nodeip" ] || fail "$csr1: SANs $sans, want DNS:$NODE,IPAddress:$nodeip"
openssl req -in "$tmp/req1.pem" -noout -text | qgrep 'ASN1 OID: prime256v1' || fail "$csr1: not an EC P-256 key"
sleep 1.5 # the stand-in's controllers pass every 0.25 s
k get csr "$csr1" | qgrep ' Pending' || fail "$csr1 was not left Pending: $(k get csr "$csr1")"
[ -z "$(csr_col "$csr1" '{.status.conditions}')" ] || fail "$csr1: $(csr_col "$csr1" '{.status.conditions}')"
out=$(openssl s_client -connect "$nodeip:$port" </dev/null 2>&1)
! grep -q 'BEGIN CERTIFICATE\|Server certificate' <<<"$out" || fail "a certificate was served before the CSR was approved"
grep -q 'alert internal error' <<<"$out" || fail "the handshake did not end in internal_error: $(tail -3 <<<"$out")"
curl -s -k -o /dev/null "https://$nodeip:$port/healthz"
rc=$?
[ "$rc" = 35 ] || fail "curl before the approval: exit $rc, want 35 (TLS handshake failed)"
wait_log "http: TLS handshake error from $nodeip:[0-9]+: no serving certificate available for the kubelet" 5
[ ! -e "$pki/kubelet.crt" ] || fail "a self-signed kubelet.crt was made with serverTLSBootstrap"
[ ! -e "$pki/kubelet-server-current.pem" ] || fail "kubelet-server-current.pem before the approval"
pass "A: $csr1 (kubelet-serving, CN system:node:$NODE, SANs $sans) Pending; TLS handshakes fail"

# ---- B. approve: the node API serves the issued certificate ----
t_approve=$(now)
k certificate approve "$csr1" >/dev/null || fail "kubectl certificate approve $csr1 failed"
poll 20 eval 'served "$nodeip" "$tmp/s1.pem" && [ -s "$tmp/s1.pem" ]' || fail "nothing served 20 s after the approval"
approve_to_serve=$(since "$t_approve")
wait_log 'serving certificate issued: ' 5
in_agent=$(awk -v a="$(log_s "certificate signing request $csr1 is issued")" -v b="$(log_s 'serving certificate issued: ')" \
        'BEGIN { printf "%.0f", (b - a) * 1000 }')
echo "approve -> serving: ${approve_to_serve}s (in the agent: the issued CSR seen -> serving ${in_agent} ms)"
k get csr "$csr1" | qgrep 'Approved,Issued' || fail "kubectl get csr: $(k get csr "$csr1")"
csr_col "$csr1" '{.status.certificate}' | base64 -d >"$tmp/issued1.pem"
[ "$(serial_of "$tmp/s1.pem")" = "$(serial_of "$tmp/issued1.pem")" ] ||
        fail "the node API presents $(serial_of "$tmp/s1.pem"), the CSR issued $(serial_of "$tmp/issued1.pem")"
openssl verify -CAfile "$data/ca.crt" "$tmp/s1.pem" >/dev/null 2>&1 || fail "the served certificate does not verify against the cluster CA"
[ "$(openssl x509 -in "$tmp/s1.pem" -noout -issuer)" = "$(openssl x509 -in "$data/ca.crt" -noout -subject | sed 's/^subject=/issuer=/')" ] ||
        fail "issuer $(openssl x509 -in "$tmp/s1.pem" -noout -issuer)"
ssans=$(openssl x509 -in "$tmp/s1.pem" -noout -ext subjectAltName | tail -n1 | tr -d ' ')
[ "$ssans" = "DNS:$NODE,IPAddress:$nodeip" ] || fail "served SANs $ssans"
openssl x509 -in "$tmp/s1.pem" -noout -ext extendedKeyUsage | qgrep 'TLS Web Server Authentication' || fail "no server auth usage"
[ -L "$pki/kubelet-server-current.pem" ] || fail "no kubelet-server-current.pem link: $(ls -l "$pki")"
f1=$(readlink "$pki/kubelet-server-current.pem")
[[ $f1 =~ ^kubelet-server-[0-9]{4}(-[0-9]{2}){5}\.pem$ ]] || fail "the link points to $f1"
[ "$(stat -c %a "$pki/$f1")" = 600 ] || fail "$f1: mode $(stat -c %a "$pki/$f1")"
[ "$(serial_of "$pki/$f1")" = "$(serial_of "$tmp/s1.pem")" ] || fail "$f1 is not the served certificate"
openssl pkey -in "$pki/$f1" -noout 2>/dev/null || fail "$f1 has no key"
code=$(curl -s --cacert "$data/ca.crt" -o /dev/null -w '%{http_code}' -H "Authorization: Bearer tok-$$-secret" \
        "https://$nodeip:$port/healthz")
[ "$code" = 200 ] || fail "curl verifying the node API against the cluster CA: HTTP $code"
pass "B: approved; in ${approve_to_serve}s the node API serves $f1 (issuer the cluster CA, SANs $ssans), verified by curl"

# ---- C. rotation: a new CSR, approved, swapped in without a restart ----
poll 75 eval '[ "$(serving_csrs | wc -l)" -ge 2 ]' || fail "no renewal CSR within 75 s: $(k get csr 2>&1)"
csr2=$(serving_csrs | sed -n 2p)
sleep 1
k get csr "$csr2" | qgrep ' Pending' || fail "$csr2 was not left Pending: $(k get csr "$csr2")"
served "$nodeip" "$tmp/during.pem"
[ "$(serial_of "$tmp/during.pem")" = "$(serial_of "$tmp/s1.pem")" ] || fail "the old certificate is not served while $csr2 waits"
# a connection made with the old certificate, used after the swap
python3 - "$nodeip" "$port" "tok-$$-secret" "$tmp/held" >"$tmp/held.out" 2>&1 <<'PY' &
import os, socket, ssl, sys, time
ip, port, tok, flag = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
s = ctx.wrap_socket(socket.create_connection((ip, port), timeout=30))
der = s.getpeercert(binary_form=True)
open(flag + ".der", "wb").write(der)
open(flag + ".ready", "w").close()
while not os.path.exists(flag + ".go"):
    time.sleep(0.05)
s.sendall(f"GET /healthz HTTP/1.1\r\nHost: n\r\nAuthorization: Bearer {tok}\r\n\r\n".encode())
print(s.recv(4096).decode(errors="replace").split("\r\n")[0])
PY
held=$!
track "$held"
poll 10 eval '[ -e "$tmp/held.ready" ]' || fail "no TLS connection for the held client: $(cat "$tmp/held.out")"
t_approve=$(now)
k certificate approve "$csr2" >/dev/null || fail "kubectl certificate approve $csr2 failed"
poll 20 eval 'served "$nodeip" "$tmp/s2.pem" && [ "$(serial_of "$tmp/s2.pem")" != "$(serial_of "$tmp/s1.pem")" ]' ||
        fail "still the first certificate 20 s after approving $csr2"
rotate_to_serve=$(since "$t_approve")
touch "$tmp/held.go"
wait "$held"
[ "$(openssl x509 -inform der -in "$tmp/held.der" -noout -serial)" = "$(serial_of "$tmp/s1.pem")" ] ||
        fail "the held connection did not have the first certificate"
grep -q '^HTTP/1.1 200' "$tmp/held.out" || fail "the connection opened before the rotation: $(cat "$tmp/held.out")"
csr_col "$csr2" '{.status.certificate}' | base64 -d >"$tmp/issued2.pem"
[ "$(serial_of "$tmp/s2.pem")" = "$(serial_of "$tmp/issued2.pem")" ] || fail "the new served certificate is not $csr2's"
f2=$(readlink "$pki/kubelet-server-current.pem")
[ "$f2" != "$f1" ] || fail "the link still points to $f1"
[ "$agent_pid" = "$first_pid" ] && kill -0 "$agent_pid" || fail "the agent restarted"
grep -q 'serving certificate rotated: ' "$tmp/agent.log" || fail "no rotation in the log"
pass "C: rotated ($csr2 approved -> served in ${rotate_to_serve}s, $f1 -> $f2), same agent, a connection from before still answered"

# ---- D. another node IP: the stored certificate lacks it, a new CSR has it ----
stop_agent
ip2=${nodeip%.*}.8
ip addr add "$ip2/32" dev "$dummy" || die "cannot add $ip2"
n_before=$(serving_csrs | wc -l)
cat >"$tmp/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
serverTLSBootstrap: true
EOF
start_agent "${agent_args[@]}" --config "$tmp/config.yaml" --node-ip "$ip2" --address "$ip2"
wait_log 'serving certificate: loaded .*kubelet-server-current.pem' 20
poll 10 eval 'served "$ip2" "$tmp/d0.pem" && [ -s "$tmp/d0.pem" ]' || fail "the stored certificate is not served after the restart"
[ "$(serial_of "$tmp/d0.pem")" = "$(serial_of "$tmp/s2.pem")" ] || fail "after the restart another certificate is served"
poll 30 eval '[ "$(serving_csrs | wc -l)" -gt "$n_before" ]' || fail "no CSR for the new address"
wait_log "missing the requested IP address $ip2" 5
csr3=$(serving_csrs | tail -n1)
csr_col "$csr3" '{.spec.request}' | base64 -d | openssl req -noout -text | qgrep "IP Address:$ip2" ||
        fail "$csr3 does not ask for $ip2"
k certificate approve "$csr3" >/dev/null || fail "kubectl certificate approve $csr3 failed"
poll 20 eval 'served "$ip2" "$tmp/d1.pem" && openssl x509 -in "$tmp/d1.pem" -noout -ext subjectAltName | qgrep "IP Address:$ip2"' ||
        fail "the certificate for $ip2 is not served"
stop_agent
pass "D: restarted with $ip2: the stored certificate served at once, $csr3 asked for $ip2, served once approved"

# ---- E. tlsCertFile is the store's fallback: served at once, replaced by a CSR ----
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=by-hand \
        -keyout "$tmp/hand.key" -out "$tmp/hand.crt" 2>/dev/null || die "openssl req"
n_before=$(serving_csrs | wc -l)
start_agent "${agent_args[@]/$pki/$tmp/pki-f}" --node-ip "$ip2" --address "$ip2" \
        --rotate-server-certificates --tls-cert-file "$tmp/hand.crt" --tls-private-key-file "$tmp/hand.key"
poll 20 eval 'served "$ip2" "$tmp/f0.pem" && [ -s "$tmp/f0.pem" ]' || fail "tlsCertFile is not served"
[ "$(serial_of "$tmp/f0.pem")" = "$(serial_of "$tmp/hand.crt")" ] || fail "not the tlsCertFile certificate"
poll 30 eval '[ "$(serving_csrs | wc -l)" -gt "$n_before" ]' || fail "no CSR to replace tlsCertFile's (CN by-hand)"
wait_log "the certificate's CN does not match the requested CN \(system:node:$NODE\)" 5
stop_agent
[ ! -e "$tmp/pki-f/kubelet.crt" ] || fail "a self-signed kubelet.crt was made"
pass "E: tlsCertFile served until a kubelet-serving certificate replaces it (it lacks the node's CN and SANs)"

# ---- F. no apiserver, no serving certificate ----
out=$("$CUBELET" --root-dir "$tmp/root-e" --rotate-server-certificates --healthz-port 0 2>&1)
rc=$?
[ "$rc" -ne 0 ] || fail "--rotate-server-certificates without --kubeconfig started"
grep -q 'serverTLSBootstrap (--rotate-server-certificates) asks the apiserver for the serving certificate: it needs --kubeconfig' <<<"$out" ||
        fail "no clear error without --kubeconfig: $out"
pass "F: serverTLSBootstrap without --kubeconfig is refused"
finish
