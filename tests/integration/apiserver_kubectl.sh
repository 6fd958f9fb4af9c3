#!/bin/bash
# kubectl v1.32 against the stand-in apiserver of tests/apiserver (real etcd
# behind it): the requests kubectl, a kubelet and a user make must behave as
# on a real kube-apiserver. Exit 77 when a prerequisite is missing.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
need_root
need_tools /usr/bin/etcd /usr/bin/etcdctl /usr/bin/kubectl /usr/bin/python3 curl openssl
H_FAIL_FAST=1
NODE=node-a
harness_init apiserver-kubectl
# The stand-in as a real cluster runs it: every admission plugin on (the
# ServiceAccount checks below need the kube-api-access volume).
export CUBELET_STANDIN_DISABLE_ADMISSION_PLUGINS=
K_TIMEOUT=30s

step() { echo "== [$SECONDS s] $*"; }
# expect_grep PATTERN TEXT WHAT
expect_grep() { grep -qE -- "$1" <<<"$2" || fail "$3: no /$1/ in: $2"; }

step "unit checks of the server's pure modules"
/usr/bin/python3 -B "$SOURCE_DIR/tests/apiserver/selftest.py" 2>"$tmp/selftest.out" ||
        fail "selftest: $(cat "$tmp/selftest.out")"

start_standin --bind
url=$standin_url
etcd_ep=$(cat "$data/etcd.endpoint")
node_token=$(cat "$data/node.token")
admin_token=$(cat "$data/admin.token")

# Admin requests by client certificate; kubelet requests by node token.
acurl() { curl -sS -m 30 --cacert "$data/ca.crt" --cert "$data/admin.crt" --key "$data/admin.key" "$@"; }
ncurl() { curl -sS -m 30 --cacert "$data/ca.crt" -H "Authorization: Bearer $node_token" "$@"; }
# json FIELD-EXPRESSION: evaluate a Python expression on stdin's JSON as `o`
json() { /usr/bin/python3 -c "import json,sys; o=json.load(sys.stdin); print($1)"; }
pod_uid() { k get pod "$1" -o jsonpath='{.metadata.uid}'; }

step "authentication"
out=$(curl -sS --cacert "$data/ca.crt" -H "Authorization: Bearer wrong" -w '\n%{http_code}' \
        "$url/api/v1/namespaces/default/pods")
expect_grep '"reason":"Unauthorized"' "$out" "bad token"
expect_grep '^401$' "$(tail -n1 <<<"$out")" "bad token code"
out=$(curl -sS --cacert "$data/ca.crt" -o /dev/null -w '%{http_code}' "$url/api/v1/nodes")
[ "$out" = 401 ] || fail "no credentials answered $out"
# Early answers (401, 404, 405, 413) must not leave the request body on a
# keep-alive connection: the next request on it must parse and be answered.
w='%{http_code} %{num_connects}\n'
out=$(curl -sS --cacert "$data/ca.crt" -H 'Authorization: Bearer wrong' -d '{"kind":"Node"}' \
        -o /dev/null -w "$w" "$url/api/v1/nodes" \
        --next --cacert "$data/ca.crt" -H 'Authorization: Bearer wrong' -d '{"kind":"Node"}' \
        -o /dev/null -w "$w" "$url/api/v1/nodes" \
        --next --cacert "$data/ca.crt" -H "Authorization: Bearer $admin_token" -X POST \
        -H 'Content-Type: application/json' -d '{"metadata":{"name":"x"}}' \
        -o /dev/null -w "$w" "$url/api/v1/no/such/path" \
        --next --cacert "$data/ca.crt" -H "Authorization: Bearer $admin_token" -X PUT \
        -H 'Content-Type: application/json' -d '{"target":{"name":"n"}}' \
        -o /dev/null -w "$w" "$url/api/v1/namespaces/default/pods/x/binding" \
        --next --cacert "$data/ca.crt" -H "Authorization: Bearer $admin_token" \
        -o /dev/null -w "$w" "$url/api/v1/namespaces/default")
[ "$out" = $'401 1\n401 0\n404 0\n405 0\n200 0' ] ||
        fail "early errors broke the keep-alive connection (code, new connections): $out"
head -c $((3 * 1024 * 1024 + 1)) /dev/zero | tr '\0' ' ' >"$tmp/big.json"
for expect in "Expect: 100-continue" "Expect:"; do
        out=$(curl -sS --cacert "$data/ca.crt" -H "Authorization: Bearer $admin_token" \
                -H 'Content-Type: application/json' -H "$expect" --data-binary @"$tmp/big.json" \
                -w '\n%{http_code}\n' "$url/api/v1/namespaces/default/configmaps" \
                --next --cacert "$data/ca.crt" -H "Authorization: Bearer $admin_token" \
                -o /dev/null -w '%{http_code}' "$url/api/v1/namespaces/default")
        expect_grep '"message":"Request entity too large: limit is 3145728","reason":"RequestEntityTooLarge","code":413' \
                "$out" "too large body ($expect)"
        [ "$(tail -n2 <<<"$out" | tr '\n' ' ')" = "413 200 " ] || fail "after a 413 ($expect): $out"
done
out=$(printf '{"metadata":{"name":"chunked"},"data":{"a":"b"}}' |
        curl -sS --cacert "$data/ca.crt" -H "Authorization: Bearer $admin_token" \
                -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' \
                --data-binary @- -o /dev/null -w "$w" "$url/api/v1/namespaces/default/configmaps" \
                --next --cacert "$data/ca.crt" -H "Authorization: Bearer $admin_token" \
                -o /dev/null -w "$w" "$url/api/v1/namespaces/default/configmaps/chunked")
[ "$out" = $'201 1\n200 0' ] || fail "chunked request body: $out"
out=$(kubectl --server "$url" --certificate-authority "$data/ca.crt" --token wrong get pods 2>&1) &&
        fail "kubectl with a bad token succeeded"
expect_grep 'error: You must be logged in to the server' "$out" "kubectl bad token"
# The node token authenticates as system:node:node-a, which the Node
# authorizer does not let read namespaces.
out=$(kubectl --kubeconfig "$data/node.kubeconfig" get ns default -o name 2>&1) &&
        fail "node token read a namespace: $out"
[ "$out" = 'Error from server (Forbidden): namespaces "default" is forbidden: User "system:node:node-a" cannot get resource "namespaces" in API group "" at the cluster scope' ] ||
        fail "node token: $out"
out=$(k version -o json | json 'o["serverVersion"]["gitVersion"]')
expect_grep '^v1\.32\.' "$out" "server version"
out=$(k get ns)
for ns in default kube-system kube-node-lease kube-public; do
        expect_grep "^$ns +Active" "$out" "namespace $ns"
done

# kubectl's typed clients (create namespace/configmap/secret) send protobuf.
[ "$(k create namespace team)" = "namespace/team created" ] || fail "create namespace"
k -n team create configmap settings --from-literal=mode=fast >/dev/null
k -n team create secret generic creds --from-literal=user=admin >/dev/null
out=$(k -n team get configmap settings -o jsonpath='{.data.mode}')
[ "$out" = fast ] || fail "configmap data: $out"
out=$(k -n team get secret creds -o jsonpath='{.data.user}')
[ "$out" = "$(printf admin | base64)" ] || fail "secret data: $out"
expect_grep '^settings +1 +[0-9]+s$' "$(k -n team get configmaps)" "configmap table"
expect_grep '^team +Active ' "$(k get ns)" "new namespace"

step "nodes: create, kubelet status patch, table"
k create -f - <<EOF >/dev/null
apiVersion: v1
kind: Node
metadata:
  name: node-a
  labels: {kubernetes.io/hostname: node-a, node-role.kubernetes.io/worker: ""}
EOF
out=$(k get nodes)
expect_grep '^node-a +Unknown +worker ' "$out" "node without conditions"
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
ncurl -o /dev/null -f -X PATCH -H 'Content-Type: application/strategic-merge-patch+json' \
        "$url/api/v1/nodes/node-a/status" --data-binary @- <<EOF || fail "node status patch"
{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady",
 "message":"kubelet is posting ready status","lastHeartbeatTime":"$now","lastTransitionTime":"$now"}],
 "addresses":[{"type":"InternalIP","address":"10.0.0.5"},{"type":"Hostname","address":"node-a"}],
 "nodeInfo":{"kubeletVersion":"v1.32.0-cubelet","osImage":"Debian GNU/Linux 12 (bookworm)",
 "kernelVersion":"6.1.0","containerRuntimeVersion":"cubelet://0.1"}}}
EOF
out=$(k get nodes -o wide)
expect_grep '^NAME +STATUS +ROLES +AGE +VERSION +INTERNAL-IP +EXTERNAL-IP +OS-IMAGE +KERNEL-VERSION +CONTAINER-RUNTIME$' \
        "$(head -n1 <<<"$out")" "node wide header"
expect_grep '^node-a +Ready +worker +[0-9]+s +v1\.32\.0-cubelet +10\.0\.0\.5 +<none> +Debian GNU/Linux 12 \(bookworm\) +6\.1\.0 +cubelet://0\.1$' \
        "$out" "node wide row"

step "pods: create, apply twice, get"
cat >"$tmp/web.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  nodeName: node-a
  containers:
  - name: nginx
    image: nginx:1.25
    ports: [{containerPort: 80}]
    resources: {limits: {cpu: 100m, memory: 64Mi}}
EOF
out=$(k apply -f "$tmp/web.yaml")
[ "$out" = "pod/web created" ] || fail "first apply: $out"
sed -i 's/app: web}/app: web, tier: front}/; s/nginx:1.25/nginx:1.26/' "$tmp/web.yaml"
out=$(k apply -f "$tmp/web.yaml")
[ "$out" = "pod/web configured" ] || fail "second apply: $out"
out=$(k apply -f "$tmp/web.yaml")
[ "$out" = "pod/web unchanged" ] || fail "third apply: $out"
out=$(k get pod web -o json)
[ "$(json 'o["spec"]["containers"][0]["image"]' <<<"$out")" = nginx:1.26 ] || fail "image not patched"
[ "$(json 'o["metadata"]["labels"]["tier"]' <<<"$out")" = front ] || fail "label not patched"
[ "$(json 'o["status"]["qosClass"]' <<<"$out")" = Guaranteed ] || fail "qosClass"
[ "$(json 'o["spec"]["containers"][0]["resources"]["requests"]["memory"]' <<<"$out")" = 64Mi ] ||
        fail "requests not defaulted from limits"
[ "$(json 'len(o["spec"]["tolerations"])' <<<"$out")" = 2 ] || fail "default tolerations"
[ "$(json '[c["type"] for c in o["status"]["conditions"]]' <<<"$out")" = "['PodScheduled']" ] ||
        fail "PodScheduled condition"
out=$(k get pod web -o yaml)
expect_grep '^  uid: [0-9a-f-]{36}$' "$out" "uid in yaml"
expect_grep '^  terminationGracePeriodSeconds: 30$' "$out" "grace default"
expect_grep '^    imagePullPolicy: IfNotPresent$' "$out" "pull policy default"
out=$(k get pods -o wide)
expect_grep '^NAME +READY +STATUS +RESTARTS +AGE +IP +NODE +NOMINATED NODE +READINESS GATES$' \
        "$(head -n1 <<<"$out")" "pod wide header"
expect_grep '^web +0/1 +Pending +0 +[0-9]+s +<none> +node-a +<none> +<none>$' "$out" "pod wide row"

step "validation"
cat >"$tmp/bad.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: Bad_Name}
spec:
  restartPolicy: Sometimes
  containers: [{name: a, image: x}, {name: a}]
EOF
out=$(k create -f "$tmp/bad.yaml" 2>&1) && fail "invalid pod accepted"
expect_grep 'The Pod "Bad_Name" is invalid' "$out" "invalid pod"
expect_grep 'metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain' "$out" "name"
expect_grep 'spec.containers\[1\].name: Duplicate value: "a"' "$out" "duplicate"
expect_grep 'spec.containers\[1\].image: Required value' "$out" "image"
expect_grep 'spec.restartPolicy: Unsupported value: "Sometimes"' "$out" "restartPolicy"

step "watch (kubectl get -w) sees a kubelet status patch and a label"
k get pod web -w -o json --output-watch-events >"$tmp/watch.out" 2>&1 &
track $!
for _ in $(seq 50); do grep -q '"ADDED"' "$tmp/watch.out" && break; sleep 0.1; done
uid=$(pod_uid web)
ncurl -o /dev/null -f -X PATCH -H 'Content-Type: application/strategic-merge-patch+json' \
        "$url/api/v1/namespaces/default/pods/web/status" --data-binary @- <<EOF || fail "status patch"
{"metadata":{"uid":"$uid"},"status":{"phase":"Running","podIP":"10.88.0.7","podIPs":[{"ip":"10.88.0.7"}],
 "conditions":[{"type":"Ready","status":"True"},{"type":"ContainersReady","status":"True"}],
 "containerStatuses":[{"name":"nginx","ready":true,"restartCount":2,"image":"nginx:1.26","imageID":"",
  "state":{"running":{"startedAt":"$now"}},
  "lastState":{"terminated":{"exitCode":1,"reason":"Error","finishedAt":"$now"}}}]}}
EOF
k label pod web env=test >/dev/null
for _ in $(seq 50); do grep -q '"env":"test"' "$tmp/watch.out" && break; sleep 0.1; done
expect_grep '^\{"type":"MODIFIED".*"env":"test"' "$(cat "$tmp/watch.out")" "watch MODIFIED with the label"
out=$(k get pod web -o wide)
expect_grep '^web +1/1 +Running +2 \([0-9]+s ago\) +[0-9]+s +10\.88\.0\.7 +node-a ' "$out" "running row"
[ "$(json 'o["status"]["conditions"][0]["type"]' <<<"$(k get pod web -o json)")" = PodScheduled ] ||
        fail "conditions merge by type lost PodScheduled"
code=$(ncurl -o "$tmp/uid.out" -w '%{http_code}' -X PATCH \
        -H 'Content-Type: application/strategic-merge-patch+json' \
        "$url/api/v1/namespaces/default/pods/web/status" \
        --data '{"metadata":{"uid":"00000000-0000-0000-0000-000000000000"},"status":{"phase":"Failed"}}')
[ "$code" = 409 ] || fail "status patch with another uid answered $code"
expect_grep "Precondition failed: UID in precondition: 00000000-0000-0000-0000-000000000000, UID in object meta: $uid" \
        "$(cat "$tmp/uid.out")" "uid precondition message"

step "events and describe"
acurl -o /dev/null -f -X POST -H 'Content-Type: application/json' \
        "$url/api/v1/namespaces/default/events" --data-binary @- <<EOF || fail "event create"
{"metadata":{"name":"web.1","namespace":"default"},
 "involvedObject":{"kind":"Pod","namespace":"default","name":"web","uid":"$uid","apiVersion":"v1"},
 "reason":"Pulled","message":"Container image \"nginx:1.26\" already present on machine",
 "type":"Normal","source":{"component":"kubelet","host":"node-a"},
 "firstTimestamp":"$now","lastTimestamp":"$now","count":1}
EOF
out=$(k describe pod web)
expect_grep '^Status: +Running' "$out" "describe status"
expect_grep 'Normal +Pulled +[0-9]+s +kubelet +Container image "nginx:1.26" already present' "$out" \
        "describe events"
out=$(k get events)
expect_grep '^LAST SEEN +TYPE +REASON +OBJECT +MESSAGE$' "$(head -n1 <<<"$out")" "events header"
expect_grep 'Normal +Pulled +pod/web +Container image' "$out" "events row"
# The kubelet's event recorder aggregates a repeat by a strategic merge patch
# of count and lastTimestamp; describe then prints "AGE (xN over FIRST)".
first=$(date -u -d '-5 min' +%Y-%m-%dT%H:%M:%SZ)
ncurl -o /dev/null -f -X POST -H 'Content-Type: application/json' \
        "$url/api/v1/namespaces/default/events" --data-binary @- <<EOF || fail "event create"
{"metadata":{"name":"web.2","namespace":"default"},
 "involvedObject":{"kind":"Pod","namespace":"default","name":"web","uid":"$uid","apiVersion":"v1"},
 "reason":"BackOff","message":"Back-off restarting failed container nginx in pod web_default($uid)",
 "type":"Warning","source":{"component":"kubelet","host":"node-a"},
 "firstTimestamp":"$first","lastTimestamp":"$first","count":1}
EOF
last=$(date -u -d '-20 sec' +%Y-%m-%dT%H:%M:%SZ)
out=$(ncurl -f -X PATCH -H 'Content-Type: application/strategic-merge-patch+json' \
        "$url/api/v1/namespaces/default/events/web.2" \
        --data "{\"count\":2,\"lastTimestamp\":\"$last\",\"message\":\"Back-off restarting failed container nginx in pod web_default($uid)\"}") ||
        fail "event patch"
[ "$(json 'o["count"], o["firstTimestamp"], o["lastTimestamp"]' <<<"$out")" = "2 $first $last" ] ||
        fail "event patch result: $out"
out=$(k describe pod web)
expect_grep 'Warning +BackOff +2[0-9]s \(x2 over 5m[0-9]*s?\) +kubelet +Back-off restarting failed container nginx' \
        "$out" "describe aggregated event"
expect_grep 'Normal +Pulled +[0-9]+s +kubelet +Container image' "$out" "describe single event"
out=$(k get events -o wide --field-selector reason=BackOff)
expect_grep '^2[0-9]s +Warning +BackOff +pod/web +kubelet, node-a +Back-off restarting .* 5m[0-9]*s? +2 +web\.2$' \
        "$out" "aggregated event row"

step "leases"
ncurl -o /dev/null -f -X POST -H 'Content-Type: application/json' \
        "$url/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases" \
        --data '{"metadata":{"name":"node-a"},"spec":{"holderIdentity":"node-a","leaseDurationSeconds":40}}' ||
        fail "lease create"
out=$(k get leases -n kube-node-lease)
expect_grep '^node-a +node-a +[0-9]+s$' "$out" "lease row"

step "taints, cordon, --bind binder"
k taint nodes node-a dedicated=test:NoExecute >/dev/null
[ "$(k get node node-a -o jsonpath='{.spec.taints[0].key}={.spec.taints[0].value}:{.spec.taints[0].effect}')" = \
        "dedicated=test:NoExecute" ] || fail "taint not added"
cat >"$tmp/pending.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: pending}
spec:
  containers: [{name: c, image: busybox}]
EOF
k create -f "$tmp/pending.yaml" >/dev/null
sleep 1.5
[ -z "$(k get pod pending -o jsonpath='{.spec.nodeName}')" ] ||
        fail "pod bound to a node whose NoExecute taint it does not tolerate"
k cordon node-a >/dev/null
expect_grep '^node-a +Ready,SchedulingDisabled ' "$(k get nodes)" "cordoned"
k taint nodes node-a dedicated=test:NoExecute- >/dev/null
[ -z "$(k get node node-a -o jsonpath='{.spec.taints}')" ] || fail "taint not removed"
sleep 1.5
[ -z "$(k get pod pending -o jsonpath='{.spec.nodeName}')" ] || fail "pod bound to a cordoned node"
k uncordon node-a >/dev/null
expect_grep '^node-a +Ready +worker ' "$(k get nodes)" "uncordoned"
for _ in $(seq 50); do
        [ "$(k get pod pending -o jsonpath='{.spec.nodeName}')" = node-a ] && break
        sleep 0.1
done
[ "$(k get pod pending -o jsonpath='{.spec.nodeName}')" = node-a ] || fail "binder did not bind"
expect_grep 'True' "$(k get pod pending -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].status}')" \
        "binder PodScheduled"

step "graceful deletion"
out=$(k delete pod pending --wait=false)
[ "$out" = 'pod "pending" deleted' ] || fail "delete: $out"
ts=$(k get pod pending -o jsonpath='{.metadata.deletionTimestamp} {.metadata.deletionGracePeriodSeconds}')
expect_grep '^[0-9T:-]+Z 30$' "$ts" "deletionTimestamp and grace"
expect_grep '^pending +0/1 +Terminating ' "$(k get pods)" "Terminating row"
k delete pod pending --wait=false --grace-period=100 >/dev/null
[ "$(k get pod pending -o jsonpath='{.metadata.deletionGracePeriodSeconds}')" = 30 ] ||
        fail "a second delete lengthened the grace period"
code=$(ncurl -o "$tmp/del.out" -w '%{http_code}' -X DELETE -H 'Content-Type: application/json' \
        "$url/api/v1/namespaces/default/pods/pending" \
        --data '{"gracePeriodSeconds":0,"preconditions":{"uid":"not-the-uid"}}')
[ "$code" = 409 ] || fail "delete with wrong uid answered $code"
expect_grep 'Precondition failed: UID in precondition: not-the-uid, UID in object meta: ' \
        "$(cat "$tmp/del.out")" "delete precondition"
puid=$(pod_uid pending)
ncurl -o /dev/null -f -X DELETE -H 'Content-Type: application/json' \
        "$url/api/v1/namespaces/default/pods/pending" \
        --data "{\"gracePeriodSeconds\":0,\"preconditions\":{\"uid\":\"$puid\"}}" || fail "kubelet delete"
k get pod pending >/dev/null 2>&1 && fail "pod still present after the grace-0 delete"
sed 's/name: pending}/name: forced}/; s/^spec:/spec:\n  nodeName: node-a/' "$tmp/pending.yaml" |
        k create -f - >/dev/null
out=$(k delete pod forced --grace-period=0 --force 2>&1)
expect_grep 'pod "forced" force deleted' "$out" "force delete"
out=$(k get pod forced 2>&1) && fail "force-deleted pod still there"
expect_grep 'Error from server \(NotFound\): pods "forced" not found' "$out" "NotFound"

step "the kubelet's deletion flow: graceful delete, terminal status, final delete"
# secs_to TS: seconds from now to the RFC 3339 time TS
secs_to() { /usr/bin/python3 -c 'import sys,datetime as d; print(round((d.datetime.fromisoformat(sys.argv[1].replace("Z","+00:00"))-d.datetime.now(d.timezone.utc)).total_seconds()))' "$1"; }
for p in kd ev; do
        sed "s/name: pending}/name: $p}/; s/^spec:/spec:\n  nodeName: node-a\n  terminationGracePeriodSeconds: 45/" \
                "$tmp/pending.yaml" | k create -f - >/dev/null
        ncurl -o /dev/null -f -X PATCH -H 'Content-Type: application/strategic-merge-patch+json' \
                "$url/api/v1/namespaces/default/pods/$p/status" \
                --data "{\"metadata\":{\"uid\":\"$(pod_uid $p)\"},\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"c\",\"ready\":false,\"restartCount\":4,\"image\":\"busybox\",\"imageID\":\"\",\"state\":{\"waiting\":{\"reason\":\"CrashLoopBackOff\"}}}]}}" ||
                fail "$p: status patch"
done
expect_grep '^kd +0/1 +CrashLoopBackOff +4 ' "$(k get pods)" "CrashLoopBackOff row"
kuid=$(pod_uid kd)
rv=$(k get pod kd -o jsonpath='{.metadata.resourceVersion}')
ncurl -N "$url/api/v1/namespaces/default/pods?watch=true&fieldSelector=metadata.name%3Dkd&resourceVersion=$rv&timeoutSeconds=30" \
        >"$tmp/kd.watch" 2>/dev/null &
track $!
# (a) DELETE without a body: deletionTimestamp = now + terminationGracePeriodSeconds, kept.
out=$(ncurl -f -X DELETE "$url/api/v1/namespaces/default/pods/kd") || fail "(a) delete"
[ "$(json 'o["kind"], o["metadata"]["deletionGracePeriodSeconds"]' <<<"$out")" = "Pod 45" ] ||
        fail "(a) delete answer: $out"
d=$(secs_to "$(json 'o["metadata"]["deletionTimestamp"]' <<<"$out")")
[ "$d" -ge 43 ] && [ "$d" -le 46 ] || fail "(a) deletionTimestamp is now+$d s, not now+45 s"
expect_grep '^kd +0/1 +Terminating +4 ' "$(k get pods)" "(a) Terminating row"
# (b) the kubelet reports the terminal phase while deletionTimestamp is set.
cat >"$tmp/terminal.json" <<EOF
{"metadata":{"uid":"$kuid"},"status":{"\$setElementOrder/conditions":[{"type":"PodScheduled"},{"type":"Ready"}],
 "conditions":[{"type":"Ready","status":"False","reason":"PodCompleted"}],"phase":"Failed",
 "containerStatuses":[{"name":"c","ready":false,"restartCount":4,"image":"busybox","imageID":"",
 "state":{"terminated":{"exitCode":137,"reason":"Error","startedAt":"$now","finishedAt":"$now"}}}]}}
EOF
out=$(ncurl -f -X PATCH -H 'Content-Type: application/strategic-merge-patch+json' \
        "$url/api/v1/namespaces/default/pods/kd/status" --data-binary @"$tmp/terminal.json") ||
        fail "(b) terminal status patch"
[ "$(json 'o["status"]["phase"], o["metadata"]["deletionGracePeriodSeconds"], len(o["status"]["conditions"])' <<<"$out")" = "Failed 45 2" ] ||
        fail "(b) status patch answer: $out"
expect_grep '^kd +0/1 +Error +4 ' "$(k get pods)" "(b) a terminal pod being deleted shows its reason"
# (e) a status patch for another incarnation of the pod (uid differs): 409.
code=$(ncurl -o "$tmp/uid.out" -w '%{http_code}' -X PATCH \
        -H 'Content-Type: application/strategic-merge-patch+json' \
        "$url/api/v1/namespaces/default/pods/kd/status" \
        --data '{"metadata":{"uid":"11111111-1111-1111-1111-111111111111"},"status":{"phase":"Succeeded"}}')
[ "$code" = 409 ] || fail "(e) status patch with another uid answered $code"
expect_grep "\"message\":\"Operation cannot be fulfilled on pods \\\\\"kd\\\\\": Precondition failed: UID in precondition: 11111111-1111-1111-1111-111111111111, UID in object meta: $kuid\",\"reason\":\"Conflict\",.*\"code\":409" \
        "$(cat "$tmp/uid.out")" "(e) uid precondition on status"
# (c) the final delete: grace 0 with the uid precondition removes it.
out=$(ncurl -f -X DELETE -H 'Content-Type: application/json' "$url/api/v1/namespaces/default/pods/kd" \
        --data "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"gracePeriodSeconds\":0,\"preconditions\":{\"uid\":\"$kuid\"}}") ||
        fail "(c) final delete"
[ "$(json 'o["metadata"]["uid"], o["metadata"]["deletionGracePeriodSeconds"]' <<<"$out")" = "$kuid 0" ] ||
        fail "(c) final delete answer: $out"
out=$(k get pod kd 2>&1) && fail "(c) pod still there after the final delete"
expect_grep 'pods "kd" not found' "$out" "(c) NotFound"
for _ in $(seq 50); do grep -q '"DELETED"' "$tmp/kd.watch" && break; sleep 0.1; done
out=$(/usr/bin/python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(" ".join("%s:%s:%s" % (e["type"], e["object"]["status"]["phase"],
                             e["object"]["metadata"].get("deletionGracePeriodSeconds", "-"))
               for e in ev))' "$tmp/kd.watch")
[ "$out" = $'MODIFIED:Running:45 MODIFIED:Failed:45 MODIFIED:Failed:0 DELETED:Failed:0' ] ||
        fail "(a-c) watch events: $out"
# (f) a status patch for a pod that does not exist (any more): 404.
for p in kd x; do
        code=$(ncurl -o "$tmp/nf.out" -w '%{http_code}' -X PATCH \
                -H 'Content-Type: application/strategic-merge-patch+json' \
                "$url/api/v1/namespaces/default/pods/$p/status" --data "{\"metadata\":{\"uid\":\"$kuid\"},\"status\":{\"phase\":\"Failed\"}}")
        [ "$code" = 404 ] || fail "(f) status patch of missing pod $p answered $code"
        expect_grep "^\\{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":\\{\\},\"status\":\"Failure\",\"message\":\"pods \\\\\"$p\\\\\" not found\",\"reason\":\"NotFound\",\"details\":\\{\"name\":\"$p\",\"kind\":\"pods\"\\},\"code\":404\\}$" \
                "$(cat "$tmp/nf.out")" "(f) NotFound Status for $p"
done
# (d) eviction: DisruptionTarget, then the graceful delete with the eviction's DeleteOptions.
euid=$(pod_uid ev)
evict() { ncurl -o "$tmp/ev.out" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
        "$url/api/v1/namespaces/default/pods/ev/eviction" \
        --data "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"ev\",\"namespace\":\"default\"},\"deleteOptions\":$1}"; }
code=$(evict '{"preconditions":{"uid":"not-the-uid"}}')
[ "$code" = 409 ] || fail "(d) eviction with another uid answered $code"
expect_grep 'Precondition failed: UID in precondition: not-the-uid' "$(cat "$tmp/ev.out")" "(d) eviction uid"
[ -z "$(k get pod ev -o jsonpath='{.metadata.deletionTimestamp}{.status.conditions[?(@.type=="DisruptionTarget")].type}')" ] ||
        fail "(d) a refused eviction changed the pod"
code=$(evict "{\"gracePeriodSeconds\":7,\"preconditions\":{\"uid\":\"$euid\"}}")
[ "$code" = 201 ] || fail "(d) eviction answered $code: $(cat "$tmp/ev.out")"
[ "$(cat "$tmp/ev.out")" = '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}' ] ||
        fail "(d) eviction answer: $(cat "$tmp/ev.out")"
out=$(k get pod ev -o json)
[ "$(json 'o["metadata"]["deletionGracePeriodSeconds"]' <<<"$out")" = 7 ] || fail "(d) eviction grace: $out"
d=$(secs_to "$(json 'o["metadata"]["deletionTimestamp"]' <<<"$out")")
[ "$d" -ge 5 ] && [ "$d" -le 8 ] || fail "(d) deletionTimestamp is now+$d s, not now+7 s"
[ "$(json '[(c["reason"], c["message"]) for c in o["status"]["conditions"] if c["type"] == "DisruptionTarget" and c["status"] == "True"]' <<<"$out")" = \
        "[('EvictionByEvictionAPI', 'Eviction API: evicting')]" ] || fail "(d) DisruptionTarget condition: $out"
[ "$(evict '{"gracePeriodSeconds":30}')" = 201 ] || fail "(d) second eviction"
[ "$(k get pod ev -o jsonpath='{.metadata.deletionGracePeriodSeconds}')" = 7 ] ||
        fail "(d) a second eviction lengthened the grace period"
ncurl -o /dev/null -f -X DELETE -H 'Content-Type: application/json' "$url/api/v1/namespaces/default/pods/ev" \
        --data "{\"gracePeriodSeconds\":0,\"preconditions\":{\"uid\":\"$euid\"}}" || fail "(d) final delete"
k get pod ev >/dev/null 2>&1 && fail "(d) evicted pod still there after the final delete"
# A pod the kubelet rejected at admission shows its reason; terminal pods go at once.
sed 's/name: pending}/name: rejected}/; s/^spec:/spec:\n  nodeName: node-a/' "$tmp/pending.yaml" |
        k create -f - >/dev/null
ncurl -o /dev/null -f -X PATCH -H 'Content-Type: application/strategic-merge-patch+json' \
        "$url/api/v1/namespaces/default/pods/rejected/status" \
        --data "{\"metadata\":{\"uid\":\"$(pod_uid rejected)\"},\"status\":{\"phase\":\"Failed\",\"reason\":\"OutOfcpu\",\"message\":\"Pod was rejected: Node didn't have enough resource: cpu, requested: 4000, used: 0, capacity: 2000\"}}" ||
        fail "rejection status patch"
expect_grep '^rejected +0/1 +OutOfcpu +0 ' "$(k get pods)" "OutOfcpu row"
[ "$(k delete pod rejected --wait=false)" = 'pod "rejected" deleted' ] || fail "delete rejected"
k get pod rejected >/dev/null 2>&1 && fail "a terminal pod was not deleted at once"

step "409 on a stale update"
k get pod web -o json >"$tmp/web.json"
# Two writers start from the same read; the first one's update wins.
json 'json.dumps(dict(o, metadata=dict(o["metadata"], labels=dict(o["metadata"]["labels"], writer="one"))))' \
        <"$tmp/web.json" >"$tmp/web1.json"
acurl -o /dev/null -f -X PUT -H 'Content-Type: application/json' \
        "$url/api/v1/namespaces/default/pods/web" --data-binary @"$tmp/web1.json" || fail "first PUT"
code=$(acurl -o "$tmp/put.out" -w '%{http_code}' -X PUT -H 'Content-Type: application/json' \
        "$url/api/v1/namespaces/default/pods/web" --data-binary @"$tmp/web.json")
[ "$code" = 409 ] || fail "stale PUT answered $code"
expect_grep 'Operation cannot be fulfilled on pods \\"web\\": the object has been modified; please apply your changes to the latest version and try again' \
        "$(cat "$tmp/put.out")" "conflict message"

step "drain: evictions completed by the test acting as the kubelet"
sed 's/name: pending}/name: worker}/; s/^spec:/spec:\n  nodeName: node-a/' "$tmp/pending.yaml" |
        k create -f - >/dev/null
k drain node-a --ignore-daemonsets --delete-emptydir-data --force --timeout=20s \
        >"$tmp/drain.out" 2>&1 &
drain_pid=$!
track "$drain_pid"
# The kubelet's part: finish every pod the evictions marked for deletion.
for _ in $(seq 150); do
        kill -0 "$drain_pid" 2>/dev/null || break
        acurl -f "$url/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a" |
                json '"\n".join(p["metadata"]["name"]+" "+p["metadata"]["uid"] for p in o["items"] if p["metadata"].get("deletionTimestamp"))' |
                while read -r name puid; do
                        [ -n "$name" ] || continue
                        ncurl -o /dev/null -X DELETE -H 'Content-Type: application/json' \
                                "$url/api/v1/namespaces/default/pods/$name" \
                                --data "{\"gracePeriodSeconds\":0,\"preconditions\":{\"uid\":\"$puid\"}}"
                done
        sleep 0.2
done
wait "$drain_pid" || fail "drain failed: $(cat "$tmp/drain.out")"
out=$(cat "$tmp/drain.out")
expect_grep 'node/node-a cordoned' "$out" "drain cordon"
expect_grep 'evicting pod default/web' "$out" "drain evicts web"
expect_grep 'evicting pod default/worker' "$out" "drain evicts worker"
expect_grep 'pod/web evicted' "$out" "web evicted"
expect_grep 'node/node-a drained' "$out" "drained"
[ -z "$(k get pods -o name)" ] || fail "pods left after drain: $(k get pods -o name)"

step "objects are in etcd"
k create -f "$tmp/pending.yaml" >/dev/null
keys=$(ETCDCTL_API=3 etcdctl --endpoints "$etcd_ep" get --prefix /registry/ --keys-only)
expect_grep '^/registry/pods/default/pending$' "$keys" "pod key"
expect_grep '^/registry/minions/node-a$' "$keys" "node key"
expect_grep '^/registry/leases/kube-node-lease/node-a$' "$keys" "lease key"
val=$(ETCDCTL_API=3 etcdctl --endpoints "$etcd_ep" get /registry/pods/default/pending --print-value-only)
[ "$(json 'o["metadata"]["uid"]' <<<"$val")" = "$(pod_uid pending)" ] || fail "etcd value differs"

step "410 Expired after an etcd compaction"
old_rv=$(acurl -f "$url/api/v1/namespaces/default/pods" | json 'o["metadata"]["resourceVersion"]')
page=$(acurl -f "$url/api/v1/namespaces?limit=1" | json 'o["metadata"]["continue"]')
for i in 1 2 3; do k label pod pending --overwrite round=$i >/dev/null; done
rev=$(ETCDCTL_API=3 etcdctl --endpoints "$etcd_ep" endpoint status -w json | json 'o[0]["Status"]["header"]["revision"]')
ETCDCTL_API=3 etcdctl --endpoints "$etcd_ep" compact "$rev" >/dev/null
out=$(acurl -f -m 10 "$url/api/v1/namespaces/default/pods?watch=true&resourceVersion=$old_rv")
expect_grep "^\{\"type\":\"ERROR\",\"object\":\{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":\{\},\"status\":\"Failure\",\"message\":\"too old resource version: $old_rv \($((rev - 1))\)\",\"reason\":\"Expired\",\"code\":410\}\}$" \
        "$out" "in-stream 410"
code=$(acurl -o "$tmp/cont.out" -w '%{http_code}' "$url/api/v1/namespaces?limit=1&continue=$page")
[ "$code" = 410 ] || fail "stale continue answered $code"
expect_grep '"reason":"Expired","code":410' "$(cat "$tmp/cont.out")" "continue 410"
# A current resourceVersion still watches fine, with bookmarks.
cur=$(acurl -f "$url/api/v1/namespaces/default/pods" | json 'o["metadata"]["resourceVersion"]')
out=$(acurl -m 10 "$url/api/v1/namespaces/default/pods?watch=true&allowWatchBookmarks=true&timeoutSeconds=6&resourceVersion=$cur")
expect_grep '^\{"type":"BOOKMARK","object":\{"kind":"Pod","apiVersion":"v1","metadata":\{"resourceVersion":"[0-9]+"\}\}\}$' \
        "$out" "bookmark"

step "namespace deletion empties the namespace"
out=$(k delete namespace team --timeout=20s)
[ "$out" = 'namespace "team" deleted' ] || fail "namespace delete: $out"
k get namespace team >/dev/null 2>&1 && fail "namespace team still exists"
keys=$(ETCDCTL_API=3 etcdctl --endpoints "$etcd_ep" get --prefix /registry/ --keys-only)
grep -q '/team' <<<"$keys" && fail "team objects left in etcd: $(grep /team <<<"$keys")"
out=$(k delete namespace default 2>&1) && fail "deleting default succeeded"
expect_grep 'namespaces "default" is forbidden: this namespace may not be deleted' "$out" "default"

step "ServiceAccounts: the kube-api-access volume, kubectl create token, auth can-i as a node"
k create namespace sa-it >/dev/null
k -n sa-it create secret generic s-ref --from-literal=k=v >/dev/null
k -n sa-it create secret generic s-other --from-literal=k=v >/dev/null
# a plain pod manifest, as a Deployment's template would make it
cat >"$tmp/sa-pod.json" <<'EOF2'
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"app": "web"}},
 "spec": {"nodeName": "node-a",
  "initContainers": [{"name": "init", "image": "busybox:1.36", "command": ["true"]}],
  "containers": [{"name": "app", "image": "nginx:1.27",
                  "env": [{"name": "S", "valueFrom": {"secretKeyRef": {"name": "s-ref", "key": "k"}}}]},
                 {"name": "side", "image": "busybox:1.36"}]}}
EOF2
k -n sa-it apply -f "$tmp/sa-pod.json" >/dev/null
k -n sa-it get pod web -o json >"$tmp/sa-pod.out"
/usr/bin/python3 - "$tmp/sa-pod.out" "$FIXTURES/real-cluster" <<'EOF2' || fail "kube-api-access volume differs from the real pods'"
import json, re, sys
pod = json.load(open(sys.argv[1]))
fx = sys.argv[2]
reals = [json.load(open(fx + "/pod-kind-sidecar-initcontainer-restartpolicy-always.json"))]
reals += json.load(open(fx + "/podlist-minikube-kotsadm-pending-initcontainers-secretkeyref.json"))["items"]
def shape(p):
    spec = p["spec"]
    vols = [v for v in spec["volumes"] if v["name"].startswith("kube-api-access-")]
    assert len(vols) == 1, vols
    name = vols[0]["name"]
    assert re.fullmatch(r"kube-api-access-[a-z0-9]{5}", name), name
    mounts = [[m for m in c.get("volumeMounts", []) if m["name"] == name]
              for c in spec.get("initContainers", []) + spec["containers"]]
    assert all(len(m) == 1 for m in mounts), mounts
    return (json.dumps(dict(vols[0], name="N"), sort_keys=True),
            {json.dumps(dict(m[0], name="N"), sort_keys=True) for m in mounts},
            spec["serviceAccountName"], spec["serviceAccount"])
got = shape(pod)
for r in reals:
    want = shape(r)
    assert got[0] == want[0], (got[0], want[0])
    assert got[1] == want[1], (got[1], want[1])
assert got[2:] == ("default", "default"), got
EOF2
# kubectl create token prints a JWT whose claims are the real ones
sa_uid=$(k -n sa-it get sa default -o jsonpath='{.metadata.uid}')
pod_uid=$(k -n sa-it get pod web -o jsonpath='{.metadata.uid}')
node_uid=$(k get node node-a -o jsonpath='{.metadata.uid}')
tok=$(k -n sa-it create token default)
tok_bound=$(k -n sa-it create token default --bound-object-kind Pod --bound-object-name web --duration 1h0m7s)
/usr/bin/python3 - "$tok" "$tok_bound" "$sa_uid" "$pod_uid" "$node_uid" <<'EOF2' || fail "token claims"
import base64, json, sys, time
def claims(t):
    h, p, s = t.split(".")
    dec = lambda x: json.loads(base64.urlsafe_b64decode(x + "=" * (-len(x) % 4)))
    assert dec(h)["alg"] == "RS256", dec(h)
    return dec(p)
tok, bound, sa_uid, pod_uid, node_uid = sys.argv[1:]
c = claims(tok)
iss = "https://kubernetes.default.svc.cluster.local"
assert c["iss"] == iss and c["aud"] == [iss], c
assert c["sub"] == "system:serviceaccount:sa-it:default", c
assert c["exp"] - c["iat"] == 3600 and c["nbf"] == c["iat"] and abs(c["iat"] - time.time()) < 60, c
assert c["kubernetes.io"] == {"namespace": "sa-it", "serviceaccount": {"name": "default", "uid": sa_uid}}, c
assert len(c["jti"]) == 36, c
b = claims(bound)["kubernetes.io"]
assert b["pod"] == {"name": "web", "uid": pod_uid}, b
assert b["node"] == {"name": "node-a", "uid": node_uid}, b
assert b["warnafter"] - claims(bound)["iat"] == 3607, b
assert claims(bound)["exp"] - claims(bound)["iat"] == 365 * 24 * 3600, b
EOF2
review() { acurl -X POST -H 'Content-Type: application/json' \
        -d "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenReview\",\"spec\":{\"token\":\"$1\"}}" \
        "$url/apis/authentication.k8s.io/v1/tokenreviews"; }
out=$(review "$tok_bound" | json 'o["status"]["authenticated"], o["status"]["user"]["username"], o["status"]["user"]["groups"]')
[ "$out" = "True system:serviceaccount:sa-it:default ['system:serviceaccounts', 'system:serviceaccounts:sa-it', 'system:authenticated']" ] ||
        fail "TokenReview of a bound token: $out"
out=$(kubectl --server "$url" --certificate-authority "$data/ca.crt" --token "$tok" -n sa-it get pods 2>&1) &&
        fail "a fresh ServiceAccount listed pods"
[ "$out" = 'Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:sa-it:default" cannot list resource "pods" in API group "" in the namespace "sa-it"' ] ||
        fail "ServiceAccount list pods: $out"
k -n sa-it create role pod-lister --verb=list --resource=pods >/dev/null
k -n sa-it create rolebinding pod-lister --role=pod-lister --serviceaccount=sa-it:default >/dev/null
out=$(kubectl --server "$url" --certificate-authority "$data/ca.crt" --token "$tok" -n sa-it get pods -o name)
[ "$out" = pod/web ] || fail "ServiceAccount granted list pods: $out"
# kubectl auth can-i as the node: a Secret its pod references, and one it does not
out=$(k auth can-i get secret/s-ref -n sa-it --as system:node:node-a --as-group system:nodes)
[ "$out" = yes ] || fail "can-i referenced secret: $out"
out=$(k auth can-i get secret/s-other -n sa-it --as system:node:node-a --as-group system:nodes) &&
        fail "can-i unreferenced secret said yes"
[ "$out" = "no - no relationship found between node 'node-a' and this object" ] ||
        fail "can-i unreferenced secret: $out"
# without the group system:nodes the user is no node to the Node authorizer
# (nodeidentifier), and RBAC binds nothing to system:node:* on a fresh cluster
out=$(k auth can-i get secret/s-ref -n sa-it --as system:node:node-a) && fail "can-i without system:nodes said yes"
[ "$out" = no ] || fail "can-i without system:nodes: $out"
out=$(kubectl --kubeconfig "$data/node.kubeconfig" -n sa-it get secret s-other 2>&1) && fail "node read s-other"
[ "$out" = "Error from server (Forbidden): secrets \"s-other\" is forbidden: User \"system:node:node-a\" cannot get resource \"secrets\" in API group \"\" in the namespace \"sa-it\": no relationship found between node 'node-a' and this object" ] ||
        fail "node get unreferenced secret: $out"
[ "$(kubectl --kubeconfig "$data/node.kubeconfig" -n sa-it get secret s-ref -o name)" = secret/s-ref ] ||
        fail "node get referenced secret"
# the pod goes: its token stops authenticating
k -n sa-it delete pod web --grace-period=0 --force >/dev/null 2>&1
out=$(review "$tok_bound" | json 'o["status"]')
[ "$out" = "{'user': {}, 'error': '[invalid bearer token, service account token has been invalidated]'}" ] ||
        fail "TokenReview after the pod's deletion: $out"
# kubectl create service (protobuf): a ClusterIP from the service CIDR
k -n sa-it create service clusterip web --tcp=80:8080 >/dev/null
out=$(k -n sa-it get svc web -o jsonpath='{.spec.clusterIP} {.spec.ports[0].targetPort} {.spec.selector.app}')
/usr/bin/python3 -c 'import ipaddress, sys; ip, tp, app = sys.argv[1].split(); assert ipaddress.ip_address(ip) in ipaddress.ip_network("10.96.0.0/12") and tp == "8080" and app == "web"' "$out" ||
        fail "kubectl create service: $out"
# the kubernetes Service
out=$(k get svc kubernetes -o jsonpath='{.spec.clusterIP} {.spec.ports[0].port} {.spec.ports[0].targetPort}')
[ "$out" = "10.96.0.1 443 ${url##*:}" ] || fail "kubernetes Service: $out"

step "stop: no process left behind"
stop_standin # and its etcd must be gone

step "restart on the same --data and --port: credentials handed out stay valid"
cp "$data/node.kubeconfig" "$tmp/node.kubeconfig.old"
cp "$data/ca.crt" "$tmp/ca.crt.old"
start_standin # on the same port
[ "$standin_url" = "$url" ] || fail "restart: $(tail -3 "$tmp/server.log")"
cmp -s "$data/node.kubeconfig" "$tmp/node.kubeconfig.old" || fail "node.kubeconfig rewritten differently"
cmp -s "$data/ca.crt" "$tmp/ca.crt.old" || fail "CA regenerated on restart"
[ "$(cat "$data/node.token")" = "$node_token" ] || fail "node token changed on restart"
out=$(kubectl --kubeconfig "$tmp/node.kubeconfig.old" get node node-a -o name 2>&1) || true
[ "$out" = node/node-a ] || fail "old node.kubeconfig after a restart: $out"
out=$(review "$tok" | json 'o["status"]["authenticated"]')
[ "$out" = True ] || fail "a token issued before the restart: $out (the signing key must persist)"
[ "$(ncurl -o /dev/null -w '%{http_code}' "$url/api/v1/nodes/node-a")" = 200 ] ||
        fail "old node token after a restart"
[ "$(k get ns default -o name)" = namespace/default ] || fail "admin certificate after a restart"
stop_standin # and its etcd must be gone
finish
