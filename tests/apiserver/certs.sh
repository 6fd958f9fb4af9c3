#!/bin/bash
# Generate the PKI of the stand-in apiserver with the openssl CLI:
#   ca.crt/ca.key          self-signed CA
#   server.crt/server.key  serving cert for 127.0.0.1, localhost and, as
#                          kube-apiserver's, the kubernetes Service (10.96.0.1,
#                          the first IP of the default service range, and
#                          kubernetes.default.svc[.cluster.local]) for
#                          in-cluster clients (tests/integration/incluster.sh)
#   admin.crt/admin.key    client cert CN=kubernetes-admin, O=system:masters
#   node.crt/node.key      client cert CN=system:node:NODE, O=system:nodes
#   kubelet-client.crt/.key  the apiserver's client cert towards kubelets
#                          (CN=kube-apiserver-kubelet-client, O=system:masters),
#                          which a node's API trusts through ca.crt
# Usage: certs.sh DIR NODE_NAME
# Existing files are kept, so a restart on the same DIR keeps every credential
# handed out: the CA is made only when ca.crt or ca.key is missing, a leaf only
# when its certificate or key is missing or expires within a day, the CA was
# remade, or its subject differs (node.crt of another --node-name).
set -euo pipefail
dir=$1
node=$2
mkdir -p "$dir"
cd "$dir"

new_ca=0
if [ ! -f ca.crt ] || [ ! -f ca.key ] || ! openssl x509 -in ca.crt -noout -checkend 86400 >/dev/null; then
        openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -keyout ca.key -out ca.crt \
                -subj "/CN=cubelet-test-apiserver-ca" \
                -addext "basicConstraints=critical,CA:TRUE" \
                -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
        new_ca=1
fi

# sign NAME SUBJECT EXTFILE-CONTENT
sign() {
        local name=$1 subj=$2 ext=$3
        if [ "$new_ca" = 0 ] && [ -f "$name.crt" ] && [ -f "$name.key" ] &&
                openssl x509 -in "$name.crt" -noout -checkend 86400 >/dev/null; then
                # printed as "subject=O=a, CN=b"
                [ "$(openssl x509 -in "$name.crt" -noout -subject -nameopt sep_comma_plus_space 2>/dev/null)" \
                        = "subject=$(sed 's|^/||; s|/|, |g' <<<"$subj")" ] && return 0
        fi
        openssl req -newkey rsa:2048 -nodes -keyout "$name.key" -out "$name.csr" \
                -subj "$subj" 2>/dev/null
        printf '%s\n' "$ext" >"$name.ext"
        openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial \
                -days 365 -out "$name.crt" -extfile "$name.ext" 2>/dev/null
        rm -f "$name.csr" "$name.ext"
}

sign server "/CN=kube-apiserver" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.96.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
sign admin "/O=system:masters/CN=kubernetes-admin" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
sign node "/O=system:nodes/CN=system:node:$node" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
sign kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
chmod 600 ./*.key
rm -f ca.srl
