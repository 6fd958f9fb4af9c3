#!/usr/bin/env bash
# Container status details as the kubelet reports them (issue 14), driving
# the real binary: `cubelet run-pod` where no apiserver is needed, the
# agent against the stand-in and kubectl where one is.
#  T. termination messages: from the file at terminationMessagePath (the
#     default /dev/termination-log and a custom path, a non-root writer),
#     the 4096-byte cut, the per-pod 12 KiB budget, FallbackToLogsOnError
#     (the last 80 lines of the log on failure, nothing on success);
#  S. sidecars (init containers with restartPolicy: Always): start order,
#     a Job-like pod with a sidecar reaching Succeeded, stop order;
#  D. activeDeadlineSeconds lowered through kubectl on a running pod;
#  N. node Ready=False without a CNI config, back to True when one appears;
#     pods that need the network wait, hostNetwork pods run; the node's
#     status.features {"supplementalGroupsPolicy": true};
#  R. resources, allocatedResources, volumeMounts of container statuses
#     against a real v1.35 cluster's pods (kubectl get pod -o json);
#  M. /metrics/resource fetched with curl and a client certificate.
# Exit 77 when not root or a tool is missing.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
need_root
need_tools jq umoci ip busybox kubectl openssl python3 curl /usr/bin/etcd
need_cni bridge host-local
harness_init status
NODE=status-node-$$

import_busybox
write_cni_conf

# run NAME: runs $tmp/NAME.yaml with run-pod; rc, $tmp/NAME.jsonl, $tmp/NAME.err
run() {
        local name=$1
        shift
        run_pod_cmd "$tmp/$name.yaml" "$@"
        timeout 120 "${pod_argv[@]}" >"$tmp/$name.jsonl" 2>"$tmp/$name.err"
        rc=$?
}
last() { jq -c 'select(.status)' "$tmp/$1.jsonl" | tail -n1 | jq -r "$2"; }
expect_last() {
        local got
        got=$(last "$1" "$2")
        [ "$got" == "$3" ] || fail "$1: $2 = '$got', want '$3'"
}
# cstate NAME CONTAINER FIELD: a field of a regular container's state in the last status line
cstate() { last "$1" ".status.containerStatuses[] | select(.name == \"$2\") | $3"; }

# ---- T. termination messages -------------------------------------------------------
cat >"$tmp/tmsg.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: tmsg}
spec:
  restartPolicy: Never
  containers:
  - name: file
    image: busybox:1.36
    command: [sh, -c, 'printf "bye from file" >/dev/termination-log']
  - name: custom
    image: busybox:1.36
    terminationMessagePath: /tmp/why
    command: [sh, -c, 'echo "custom path, exit 3" >/tmp/why; exit 3']
  - name: nonroot
    image: busybox:1.36
    securityContext: {runAsUser: 1000}
    command: [sh, -c, 'echo "written by uid $(id -u)" >/dev/termination-log']
  - name: logs
    image: busybox:1.36
    terminationMessagePolicy: FallbackToLogsOnError
    command: [sh, -c, 'i=1; while [ $i -le 100 ]; do echo "line $i"; i=$((i+1)); done; echo "fatal: no config" >&2; exit 2']
  - name: logsok
    image: busybox:1.36
    terminationMessagePolicy: FallbackToLogsOnError
    command: [sh, -c, 'echo "all fine"']
  - name: logsfile
    image: busybox:1.36
    terminationMessagePolicy: FallbackToLogsOnError
    command: [sh, -c, 'echo "log line"; echo "the file wins" >/dev/termination-log; exit 1']
EOF
run tmsg
[ "$rc" -eq 1 ] || fail "tmsg: exit $rc, want 1 (Failed) ($(tail -3 "$tmp/tmsg.err"))"
expect_last tmsg .status.phase Failed
[ "$(cstate tmsg file .state.terminated.message)" = "bye from file" ] ||
        fail "tmsg/file: message '$(cstate tmsg file .state.terminated.message)'"
# jmsg NAME CONTAINER: the message as a JSON string (trailing newlines kept)
jmsg() { cstate "$1" "$2" '.state.terminated.message | @json'; }
[ "$(jmsg tmsg custom)" = '"custom path, exit 3\n"' ] || fail "tmsg/custom: message $(jmsg tmsg custom)"
[ "$(jmsg tmsg nonroot)" = '"written by uid 1000\n"' ] || fail "tmsg/nonroot: message $(jmsg tmsg nonroot)"
m=$(cstate tmsg logs '.state.terminated.message')
# the last 80 lines of the log: 22..100 and the stderr line, each with its newline
[[ "$(jmsg tmsg logs)" == *'fatal: no config\n"' ]] && [ "$(printf '%s\n' "$m" | wc -l)" = 80 ] &&
        [ "$(printf '%s\n' "$m" | head -n1)" = "line 22" ] &&
        [ "$(printf '%s\n' "$m" | tail -n1)" = "fatal: no config" ] ||
        fail "tmsg/logs: message $(jmsg tmsg logs | head -c 100)...$(jmsg tmsg logs | tail -c 40) ($(printf "%s\n" "$m" | wc -l) lines)"
[ "$(cstate tmsg logsok '.state.terminated.message // "none"')" = none ] ||
        fail "tmsg/logsok: a message on success: '$(cstate tmsg logsok .state.terminated.message)'"
[ "$(jmsg tmsg logsfile)" = '"the file wins\n"' ] || fail "tmsg/logsfile: message $(jmsg tmsg logsfile)"
pass "T1 termination messages: file, custom path, non-root writer, FallbackToLogsOnError (80 lines), none on success, the file before the logs"

# The limits: 4096 bytes per container (the end of the file), 12 KiB per pod.
cat >"$tmp/tbig.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: tbig}
spec:
  restartPolicy: Never
  containers:
  - name: big
    image: busybox:1.36
    command: [sh, -c, 'printf "HEAD"; i=0; while [ $i -lt 500 ]; do printf "0123456789" >>/dev/termination-log; i=$((i+1)); done; printf "TAIL" >>/dev/termination-log']
EOF
run tbig
m=$(cstate tbig big .state.terminated.message)
[ "${#m}" = 4096 ] && [[ "$m" == *TAIL ]] || fail "tbig: message of ${#m} bytes ending '${m: -8}', want 4096 ending TAIL"
# five containers: 12288 / 5 = 2457 bytes each (the start kept)
{
        echo 'apiVersion: v1'; echo 'kind: Pod'; echo 'metadata: {name: tfive}'
        echo 'spec:'; echo '  restartPolicy: Never'; echo '  containers:'
        for i in 1 2 3 4 5; do
                echo "  - name: c$i"
                echo '    image: busybox:1.36'
                echo "    command: [sh, -c, 'i=0; while [ \$i -lt 400 ]; do printf \"abcdefghij\" >>/dev/termination-log; i=\$((i+1)); done']"
        done
} >"$tmp/tfive.yaml"
run tfive
for i in 1 2 3 4 5; do
        m=$(cstate tfive c$i .state.terminated.message)
        [ "${#m}" = 2457 ] && [[ "$m" == abcdefghij* ]] || fail "tfive/c$i: message of ${#m} bytes, want 2457"
done
pass "T2 limits: 4096 bytes per container (the file's end), 2457 each of 5 containers (12 KiB per pod)"

# ---- S. sidecars ---------------------------------------------------------------------
# step NAME STEP: the offset (µs) of a timeline step of a finished run-pod
step() { jq -r --arg s "$2" 'select(.timeline) | .timeline[] | select(.step == $s) | .offsetUs' "$tmp/$1.jsonl" | head -n1; }
before() { # NAME STEP1 STEP2: STEP1 happened before STEP2
        local a b
        a=$(step "$1" "$2")
        b=$(step "$1" "$3")
        [ -n "$a" ] && [ -n "$b" ] && [ "$a" -lt "$b" ] || fail "$1: $2 ($a) not before $3 ($b)"
}
# The real kind pod of the fixtures (names kept, busybox for istio/base):
# a regular init container, a sidecar, one container; restartPolicy Never.
# The sidecar fails once (restarted although the pod says Never); the
# container ends, so the sidecar is stopped and the pod completes.
fx="$FIXTURES/real-cluster/pod-kind-sidecar-initcontainer-restartpolicy-always.json"
jq '{apiVersion, kind, metadata: {name: .metadata.name},
     spec: (.spec | {restartPolicy, terminationGracePeriodSeconds: 10,
       volumes: [{name: "shared", emptyDir: {}}],
       initContainers: [.initContainers[] | {name, restartPolicy, image: "busybox:1.36",
                        volumeMounts: [{name: "shared", mountPath: "/shared"}]}],
       containers: [.containers[] | {name, image: "busybox:1.36",
                    volumeMounts: [{name: "shared", mountPath: "/shared"}]}]})}' "$fx" |
        jq '.spec.initContainers[0].command = ["sh", "-c", "sleep 1; date +%s.%N >/shared/init"]
          | .spec.initContainers[1].command = ["sh", "-c", "[ -f /shared/once ] || { touch /shared/once; exit 1; }; trap \"exit 0\" TERM; while :; do sleep 0.1; done"]
          | .spec.containers[0].command = ["sh", "-c", "[ -f /shared/init ] && sleep 4 && [ -f /shared/once ]"]' \
        >"$tmp/sleepjob.yaml"
[ "$(jq -r '.spec.initContainers[1].restartPolicy' "$tmp/sleepjob.yaml")" = Always ] || fail "the fixture has no sidecar"
t0=$(now)
run sleepjob
[ "$rc" -eq 0 ] || fail "sleepjob: exit $rc, want 0 (Succeeded) after $(since "$t0")s; last: $(last sleepjob .status.phase) $(tail -3 "$tmp/sleepjob.err")"
expect_last sleepjob .status.phase Succeeded
expect_last sleepjob '.status.containerStatuses[0].state.terminated.reason' Completed
expect_last sleepjob '.status.initContainerStatuses[1].name' sidecar
sc_rc=$(last sleepjob '.status.initContainerStatuses[1].restartCount')
[ "${sc_rc:-0}" -ge 1 ] || fail "sleepjob: the sidecar was not restarted under restartPolicy Never (restartCount $sc_rc)"
[ -n "$(last sleepjob '.status.initContainerStatuses[1].state.terminated.exitCode // empty')" ] ||
        fail "sleepjob: the sidecar not terminated: $(last sleepjob '.status.initContainerStatuses[1].state')"
before sleepjob containerExited:init containerStarted:sidecar
before sleepjob containerStarted:sidecar containerStarted:sleep
# the sidecar's last exit (it was stopped) comes after the container's
sc_exit=$(jq -r 'select(.timeline) | [.timeline[] | select(.step == "containerExited:sidecar") | .offsetUs] | last' "$tmp/sleepjob.jsonl")
[ "$(step sleepjob containerExited:sleep)" -lt "$sc_exit" ] || fail "sleepjob: the sidecar stopped ($sc_exit) before sleep exited ($(step sleepjob containerExited:sleep))"
phases=$(jq -r 'select(.status) | .status.phase' "$tmp/sleepjob.jsonl" | uniq | paste -sd,)
[ "$phases" = "Pending,Running,Succeeded" ] || fail "sleepjob: phases $phases"
# reported Succeeded only with every container terminated
bad=$(jq -c 'select(.status.phase? == "Succeeded") | [.status.initContainerStatuses[], .status.containerStatuses[]] | map(select(.state.terminated == null)) | length' "$tmp/sleepjob.jsonl" | sort -u | paste -sd,)
[ "$bad" = 0 ] || fail "sleepjob: Succeeded while a container still ran ($bad not terminated)"
pass "S1 fixture pod 'sleep': init -> sidecar -> sleep, the sidecar restarted under Never ($sc_rc), stopped after sleep exited, Succeeded in $(since "$t0")s"

# A sidecar with a startup probe holds the next init container until the
# probe passes; at the end (SIGTERM to run-pod) the main container stops
# first, then the sidecars in reverse order.
cat >"$tmp/order.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: order}
spec:
  restartPolicy: Always
  terminationGracePeriodSeconds: 20
  initContainers:
  - name: proxy
    image: busybox:1.36
    restartPolicy: Always
    command: [sh, -c, 'trap "sleep 1; exit 0" TERM; sleep 2; touch /tmp/ready; while :; do sleep 0.1; done']
    startupProbe: {exec: {command: [test, -f, /tmp/ready]}, periodSeconds: 1, failureThreshold: 30}
  - name: setup
    image: busybox:1.36
    command: [sh, -c, 'true']
  - name: logger
    image: busybox:1.36
    restartPolicy: Always
    command: [sh, -c, 'trap "sleep 1; exit 0" TERM; while :; do sleep 0.1; done']
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'trap "sleep 1; exit 0" TERM; while :; do sleep 0.1; done']
EOF
run_pod_cmd "$tmp/order.yaml"
"${pod_argv[@]}" >"$tmp/order.jsonl" 2>"$tmp/order.err" &
rp=$!
track "$rp"
poll 60 eval '[ "$(jq -r "select(.status) | .status.containerStatuses[0].started" "$tmp/order.jsonl" | tail -n1)" = true ]' ||
        fail "order: main not started: $(tail -c 300 "$tmp/order.jsonl")"
t0=$(now)
kill -TERM "$rp"
poll 40 eval '! kill -0 "$rp" 2>/dev/null' || fail "order: run-pod still runs 40 s after SIGTERM"
wait "$rp" 2>/dev/null
before order startupProbeSucceeded:proxy containerStarted:setup
before order containerExited:setup containerStarted:logger
before order containerStarted:logger containerStarted:main
before order containerExited:main sidecarStop:logger
before order containerExited:logger sidecarStop:proxy
for c in proxy logger; do
        code=$(last order ".status.initContainerStatuses[] | select(.name == \"$c\") | .state.terminated.exitCode")
        [ "$code" = 0 ] || fail "order: sidecar $c exit code '$code', want 0 (stopped by its signal in turn, not killed)"
done
pass "S2 startup probe holds the next init container; stop order main -> logger -> proxy, each exiting on its own signal ($(since "$t0")s)"

# ---- N, D, M: the agent against the stand-in ---------------------------------------
start_standin
good_cni=$cni_dir
cni_dir=$tmp/cni-later # does not exist yet: the runtime's network is not ready
napi_port=$(free_port)
echo "tok-$$-secret,metrics-reader,1" >"$tmp/tokens.csv"
start_agent -v 1 --kubeconfig "$data/node.kubeconfig" --healthz-port 0 --node-ip 10.0.0.6 \
        --node-status-update-frequency 1s --address 127.0.0.1 --port "$napi_port" \
        --client-ca-file "$data/ca.crt" --authentication-token-file "$tmp/tokens.csv" --cert-dir "$tmp/pki"
ready() { k get node "$NODE" -o jsonpath='{range .status.conditions[?(@.type=="Ready")]}{.status}|{.reason}|{.message}{end}' 2>/dev/null; }
NOTREADY="False|KubeletNotReady|container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"
poll 30 eval '[ "$(ready)" = "$NOTREADY" ]' || die "node without a CNI config: Ready '$(ready)'"
# status.features as a v1.35 kubelet on a runtime with supplementalGroupsPolicy sets it
feat=$(k get node "$NODE" -o jsonpath='{.status.features}')
[ "$feat" = '{"supplementalGroupsPolicy":true}' ] || fail "node status.features '$feat'"
mkpod netpod Never <<'EOF'
  containers:
  - name: netpod
    image: busybox:1.36
    command: [sh, -c, 'trap "exit 0" TERM; while :; do sleep 0.2; done']
EOF
mkpod hostpod Never <<'EOF'
  hostNetwork: true
  containers:
  - name: hostpod
    image: busybox:1.36
    command: [sh, -c, 'trap "exit 0" TERM; while :; do sleep 0.2; done']
EOF
wait_running hostpod 60
poll 20 eval 'events_of Pod netpod NetworkNotReady | qgrep .' || fail "netpod: no NetworkNotReady event"
ev=$(events_of Pod netpod NetworkNotReady | head -n1)
[ "$ev" = "Warning|network is not ready: ${NOTREADY#False|KubeletNotReady|}" ] || fail "netpod: NetworkNotReady event '$ev'"
phase_is netpod Pending && [ -z "$(pj netpod '{.status.podIP}')" ] ||
        fail "netpod ran without the network: $(pj netpod '{.status.phase}') $(pj netpod '{.status.podIP}')"
pass "N1 no CNI config: Ready '$(ready | cut -d'|' -f1-2)', netpod Pending with NetworkNotReady, hostNetwork pod Running, status.features.supplementalGroupsPolicy true"
t0=$(now)
cp "$good_cni/10-it.conflist" "$cni_dir/10-it.conflist"
poll 20 eval '[ "$(ready)" = "True|KubeletReady|kubelet is posting ready status" ]' || fail "Ready after the config appeared: '$(ready)'"
t_ready=$(since "$t0")
wait_running netpod 60
pass "N2 a CNI config appears: Ready True ${t_ready}s later (inotify), netpod Running ($(pj netpod '{.status.podIP}')) $(since "$t0")s later"

# D. activeDeadlineSeconds set on a running pod, and lowered on another.
mkpod dlset Never <<'EOF'
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'trap "exit 0" TERM; while :; do sleep 0.2; done']
EOF
k create -f - >/dev/null <<EOF || fail "dllow: create"
apiVersion: v1
kind: Pod
metadata: {name: dllow, namespace: default}
spec:
  nodeName: $NODE
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  activeDeadlineSeconds: 3600
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'trap "exit 0" TERM; while :; do sleep 0.2; done']
EOF
wait_running dlset 60
wait_running dllow 60
t0=$(now)
k patch pod dlset -p '{"spec":{"activeDeadlineSeconds":2}}' >/dev/null || fail "dlset: patch refused"
k patch pod dllow -p '{"spec":{"activeDeadlineSeconds":3}}' >/dev/null || fail "dllow: patch refused"
for p in dlset dllow; do
        poll 30 phase_is "$p" Failed || fail "$p: not Failed after its deadline ($(pj "$p" '{.status.phase}'))"
        [ "$(pj "$p" '{.status.reason}|{.status.message}')" = "DeadlineExceeded|Pod was active on the node longer than the specified deadline" ] ||
                fail "$p: $(pj "$p" '{.status.reason}|{.status.message}')"
        [ -n "$(pj "$p" '{.status.containerStatuses[0].state.terminated.exitCode}')" ] ||
                fail "$p: Failed with its container $(pj "$p" '{.status.containerStatuses[0].state}')"
        events_of Pod "$p" DeadlineExceeded | qgrep -xF "Normal|Pod was active on the node longer than the specified deadline" ||
                fail "$p: no DeadlineExceeded event: $(events_of Pod "$p" DeadlineExceeded)"
done
pass "D activeDeadlineSeconds set (dlset) and lowered (dllow) through kubectl: Failed DeadlineExceeded with the containers terminated, $(since "$t0")s"

# R. resources, allocatedResources and volumeMounts of the container
# statuses as the v1.35 kubelet reports them: the containers of the real
# cluster's coredns (running) and e2e-container-creating (exited), with
# their resources, against those pods' statuses there; a regular init
# container (exited) gets its allocation too; no pod-level status.resources
# (InPlacePodLevelResourcesVerticalScaling is alpha).
fxl="$FIXTURES/real-cluster/podlist-v1.35-minikube-all-namespaces.yaml"
python3 -c 'import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)' "$fxl" >"$tmp/fx135.json" ||
        fail "R: cannot read $fxl"
fxpod() { jq -c --arg n "$1" '.items[] | select(.metadata.name == $n)' "$tmp/fx135.json"; }
fxpod coredns-7d764666f9-qdcxt >"$tmp/fx-coredns.json"
fxpod e2e-container-creating >"$tmp/fx-alpine.json"
res_of() { jq -c '.spec.containers[0].resources' "$1"; }
mkpod rescheck Never <<EOF
  volumes: [{name: config-volume, emptyDir: {}}]
  initContainers:
  - name: setup
    image: busybox:1.36
    command: [sh, -c, 'true']
    resources: {requests: {cpu: 50m, memory: 16Mi}}
  containers:
  - name: coredns
    image: busybox:1.36
    command: [sh, -c, 'trap "exit 0" TERM; while :; do sleep 0.2; done']
    resources: $(res_of "$tmp/fx-coredns.json")
    volumeMounts: [{name: config-volume, mountPath: /etc/coredns, readOnly: true}]
  - name: alpine
    image: busybox:1.36
    command: [sh, -c, 'true']
    resources: $(res_of "$tmp/fx-alpine.json")
EOF
wait_running rescheck 60
poll 30 eval '[ "$(pj rescheck "{.status.containerStatuses[?(@.name==\"alpine\")].state.terminated.reason}")" = Completed ]' ||
        fail "rescheck: alpine not Completed: $(pj rescheck '{.status.containerStatuses}')"
k get pod rescheck -o json >"$tmp/rescheck.json" || fail "rescheck: kubectl get -o json"
# same NAME FIXTURE FIELD: a field of container NAME equal in both statuses
# (the generated kube-api-access-xxxxx volume names aside)
same() {
        local got want f
        f=".status.containerStatuses[] | select(.name == \$n) | .$3 | walk(if type == \"object\" and (.name? | type) == \"string\" then .name |= sub(\"^kube-api-access-.*\"; \"kube-api-access\") else . end)"
        got=$(jq -cS --arg n "$1" "$f" "$tmp/rescheck.json")
        want=$(jq -cS --arg n "$1" "$f" "$2")
        [ -n "$want" ] && [ "$want" != null ] && [ "$got" = "$want" ] ||
                fail "rescheck/$1: $3 = $got, the v1.35 kubelet reported $want"
}
same coredns "$tmp/fx-coredns.json" resources
same coredns "$tmp/fx-coredns.json" allocatedResources
same coredns "$tmp/fx-coredns.json" volumeMounts
same alpine "$tmp/fx-alpine.json" resources
same alpine "$tmp/fx-alpine.json" allocatedResources
got=$(jq -cS '.status.initContainerStatuses[0] | [.resources, .allocatedResources]' "$tmp/rescheck.json")
[ "$got" = '[{"requests":{"cpu":"50m","memory":"16Mi"}},{"cpu":"50m","memory":"16Mi"}]' ] ||
        fail "rescheck/setup: [resources, allocatedResources] = $got"
got=$(jq -c '.status | [.resources, .allocatedResources]' "$tmp/rescheck.json")
[ "$got" = '[null,null]' ] || fail "rescheck: pod-level status [resources, allocatedResources] = $got, want none"
pass "R resources/allocatedResources of a running (the fixture's coredns) and an exited container (e2e-container-creating, 5m/5M) as the v1.35 kubelet reported them, volumeMounts with recursiveReadOnly Disabled, the init container's allocation, no pod-level status.resources"

# M. /metrics/resource as metrics-server scrapes it.
api="https://127.0.0.1:$napi_port"
code=$(curl -sk -o /dev/null -w '%{http_code}' "$api/metrics/resource")
[ "$code" = 401 ] || fail "/metrics/resource without credentials: HTTP $code, want 401"
scrape() { curl -sk -D "$tmp/m.h" "$@" "$api/metrics/resource"; }
poll 15 eval 'scrape --cert "$data/kubelet-client.crt" --key "$data/kubelet-client.key" >"$tmp/m.txt" &&
        grep -q "^container_cpu_usage_seconds_total{container=\"netpod\",namespace=\"default\",pod=\"netpod\"} " "$tmp/m.txt"' ||
        fail "/metrics/resource with a client certificate: $(head -c 300 "$tmp/m.txt")"
grep -qi '^content-type: text/plain; version=0.0.4; charset=utf-8' "$tmp/m.h" || fail "content type: $(grep -i content-type "$tmp/m.h")"
for re in '^node_cpu_usage_seconds_total [0-9.e+]+ [0-9]{13}$' '^node_memory_working_set_bytes [0-9.e+]+ [0-9]{13}$' \
        '^container_memory_working_set_bytes\{container="netpod",namespace="default",pod="netpod"\} [0-9.e+]+ [0-9]{13}$' \
        '^container_start_time_seconds\{container="hostpod",namespace="default",pod="hostpod"\} [0-9.e+]+$' \
        '^pod_cpu_usage_seconds_total\{namespace="default",pod="netpod"\} [0-9.e+]+ [0-9]{13}$' \
        '^pod_memory_working_set_bytes\{namespace="default",pod="hostpod"\} [0-9.e+]+ [0-9]{13}$' \
        '^resource_scrape_error 0$' '^# TYPE container_cpu_usage_seconds_total counter$'; do
        grep -Eq "$re" "$tmp/m.txt" || fail "/metrics/resource has no line /$re/"
done
# every sample line parses as the Prometheus text format
python3 - "$tmp/m.txt" <<'EOF' || fail "/metrics/resource does not parse"
import re, sys
line = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-z_]+="(\\.|[^"\\])*",?)*\})? [-+0-9.eEInfNa]+( [0-9]+)?$')
bad = [l for l in open(sys.argv[1]).read().splitlines() if l and not l.startswith('#') and not line.match(l)]
sys.exit(1 if bad else 0)
EOF
scrape -H "Authorization: Bearer tok-$$-secret" >"$tmp/m2.txt" && grep -q '^resource_scrape_error 0$' "$tmp/m2.txt" ||
        fail "/metrics/resource with a token: $(head -c 200 "$tmp/m2.txt")"
pass "M /metrics/resource: 401 without credentials, the kubelet's families with a client certificate and a token ($(grep -vc '^#' "$tmp/m.txt") samples)"
k delete pods --all --grace-period=1 --wait=false >/dev/null 2>&1
poll 40 eval '[ -z "$(k get pods -o name 2>/dev/null)" ]' || fail "pods not gone: $(k get pods --no-headers | paste -sd';')"
stop_agent
sanitizer_findings "$tmp/agent.log" || fail "sanitizer reports in the agent log"

finish
