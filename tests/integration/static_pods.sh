#!/bin/bash
# Static pods through the real binary, configured with --config
# (staticPodPath, fileCheckFrequency, healthzPort):
#  1. standalone (no kubeconfig): YAML and JSON manifests run, a dotfile and
#     a broken file do not; names, uid hash, annotations, the NoExecute
#     toleration as the kubelet gives them, on the local /pods; editing a
#     manifest replaces the pod (new uid, old containers stopped); removing
#     it stops the pod; a manifest dropped in later is picked up at once
#     (inotify, well before the rescan);
#  2. with the stand-in apiserver: a mirror pod per static pod (annotation
#     kubernetes.io/config.mirror = config.hash, owner reference to the
#     Node, the static pod's status), checked with kubectl; `kubectl delete`
#     of the mirror does not stop the static pod and the mirror comes back;
#     an edit replaces the mirror; removing the manifest deletes the mirror
#     and stops the pod.
# Exit 77 when a prerequisite is missing.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
need_root
need_tools jq curl umoci /usr/bin/etcd /usr/bin/kubectl python3 openssl busybox
H_FAIL_FAST=1
NODE=static-node
harness_init static
K_TIMEOUT=0

mkdir -p "$tmp/manifests" "$tmp/cni-empty"
import_busybox

port=$(free_port)
cat >"$tmp/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: $tmp/manifests
# long, so that prompt pick-ups prove inotify
fileCheckFrequency: 1h
healthzPort: $port
cgroupRoot: $cgroot
podLogsDir: $logs
EOF

# A long-running pod that stops at once on SIGTERM; hostNetwork: no CNI.
manifest() { # NAME MARK
        cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  labels: {app: $1}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 5
  containers:
  - name: c
    image: busybox:1.36
    imagePullPolicy: Never
    command: ["sh", "-c", "echo $2; trap 'exit 0' TERM; while true; do sleep 0.1; done"]
EOF
}
manifest web v1 >"$tmp/manifests/web.yaml"
manifest api v1 | python3 -c 'import json, sys, yaml; print(json.dumps(yaml.safe_load(sys.stdin)))' \
        >"$tmp/manifests/api.json" 2>/dev/null ||
        { manifest api v1 >"$tmp/manifests/api.json"; } # YAML in a .json file is still read
manifest hidden v1 >"$tmp/manifests/.hidden.yaml"
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: broken\n' >"$tmp/manifests/broken.yaml"

# /pods of the local endpoint needs the agent's token (<root-dir>/endpoint.token).
pods() { curl -sf -H "Authorization: Bearer $(cat "$root/endpoint.token" 2>/dev/null)" "http://127.0.0.1:$port/pods"; }
# pod_field NAME JQ: from the local /pods.
pod_field() { pods | jq -r --arg n "$1" ".items[] | select(.metadata.name == \$n) | $2"; }
running() { [ "$(pod_field "$1" .status.phase)" = Running ]; }
absent() { [ -z "$(pod_field "$1" .metadata.uid)" ]; }
cgroup_of() { find /sys/fs/cgroup/pids/"$cgroot" -type d -name "*$1*" 2>/dev/null | head -n1; }

node=$NODE
# ======================= 1. standalone =======================
# --root-dir given relative (to $tmp, the working directory here): taken
# against the working directory as the kubelet's os calls take it (it was
# accepted, then broke every sandbox, teardown and SIGTERM)
cd "$tmp"
spawn_agent -v 1 --root-dir "${root#"$tmp"/}" --cni-conf-dir "$tmp/cni-empty" --config "$tmp/config.yaml" \
        --hostname-override Static-Node
cd "$SOURCE_DIR"
poll 30 quietly running "web-$node" || fail "standalone: web-$node not Running"
poll 30 quietly running "api-$node" || fail "standalone: api-$node (JSON manifest) not Running"
grep -q "starting standalone" "$tmp/agent.log" || fail "not started standalone"
[ "$(pods | jq '.items | length')" -eq 2 ] || fail "standalone: want 2 pods: $(pods | jq -c '[.items[].metadata.name]')"
grep -q "static pod $tmp/manifests/broken.yaml: line " "$tmp/agent.log" ||
        fail "the broken manifest is not reported with its position"
uid=$(pod_field "web-$node" .metadata.uid)
[ "${#uid}" -eq 32 ] || fail "uid '$uid' is not a 128-bit hash"
[ "$(pod_field "web-$node" '.metadata.annotations["kubernetes.io/config.hash"]')" = "$uid" ] || fail "config.hash"
[ "$(pod_field "web-$node" '.metadata.annotations["kubernetes.io/config.source"]')" = file ] || fail "config.source"
pod_field "web-$node" '.metadata.annotations["kubernetes.io/config.seen"]' |
        grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{9}Z$' || fail "config.seen"
[ "$(pod_field "web-$node" .metadata.namespace)" = default ] || fail "namespace"
[ "$(pod_field "web-$node" .spec.nodeName)" = "$node" ] || fail "spec.nodeName"
tols=$(pod_field "web-$node" '.spec.tolerations | tojson')
[ "$tols" = '[{"operator":"Exists","effect":"NoExecute"}]' ] || fail "the NoExecute toleration: $tols"
pass "standalone: YAML and JSON static pods run with the kubelet's names, uid hash, annotations and toleration; dotfile and broken file skipped"

# Edit: a new uid; the old pod's containers stop and its cgroup goes.
old_cg=$(cgroup_of "$uid")
[ -n "$old_cg" ] || fail "no pod cgroup for $uid"
t0=$(date +%s%N)
manifest web v2 >"$tmp/manifests/web.yaml"
uid_changed() { local u; u=$(pod_field "web-$node" .metadata.uid) && [ -n "$u" ] && [ "$u" != "$uid" ]; }
poll 10 quietly uid_changed || fail "edit: the uid did not change"
poll 15 quietly running "web-$node" || fail "edit: the new web pod is not Running"
t1=$(date +%s%N)
uid2=$(pod_field "web-$node" .metadata.uid)
poll 15 quietly test ! -d "$old_cg" || fail "edit: the old pod's cgroup $old_cg is still there"
grep -q "changed: replacing pod uid $uid" "$tmp/agent.log" || fail "edit not logged"
grep -h v2 "$logs"/default_web-"$node"_"$uid2"/c/0.log >/dev/null || fail "the new pod does not run the new command"
pass "standalone: an edit replaces the pod (new uid $uid2, the old one stopped; Running again after $(((t1 - t0) / 1000000)) ms)"

# A manifest dropped in later: seen through inotify (the rescan is 1h).
manifest late v1 >"$tmp/manifests/.late.tmp"
mv "$tmp/manifests/.late.tmp" "$tmp/manifests/late.yaml"
poll 15 quietly running "late-$node" || fail "a new manifest was not picked up through inotify"
pass "standalone: a new manifest runs without waiting for the rescan"

# Remove: the pod stops.
cg2=$(cgroup_of "$uid2")
rm "$tmp/manifests/web.yaml"
poll 10 quietly absent "web-$node" || fail "remove: web still listed"
poll 15 quietly test ! -d "$cg2" || fail "remove: the pod's cgroup $cg2 is still there"
pass "standalone: removing the manifest stops the pod"

kill -TERM "$agent_pid"
poll 30 eval '! kill -0 "$agent_pid" 2>/dev/null' || fail "the standalone agent still runs 30 s after SIGTERM"
wait "$agent_pid" || fail "the standalone agent did not exit cleanly"
agent_pid=""
rm -f "$tmp/manifests/late.yaml" "$tmp/manifests/broken.yaml"
# Its pods keep running across the agent's stop (api); the next agent
# re-adopts the api pod (same uid: same file, node and content).
api_uid=$(grep -o "pod api-$node uid=[0-9a-f]*" "$tmp/agent.log" | head -n1 | sed 's/.*uid=//')

# ======================= 2. with the stand-in apiserver =======================
start_standin
manifest web v3 >"$tmp/manifests/web.yaml"
: >"$tmp/agent.log" # a new log for the second agent
spawn_agent -v 1 --root-dir "$root" --cni-conf-dir "$tmp/cni-empty" --config "$tmp/config.yaml" \
        --kubeconfig "$data/node.kubeconfig" --hostname-override "$node" \
        --node-status-update-frequency 1s

mirror() { k get pod "$1" -o json; }
mirror_running() { [ "$(mirror "$1" | jq -r .status.phase)" = Running ]; }
poll 40 quietly mirror_running "web-$node" || fail "the mirror pod web-$node does not show Running"
poll 20 quietly mirror_running "api-$node" || fail "the mirror pod api-$node does not show Running"
m=$(mirror "web-$node")
suid=$(pod_field "web-$node" .metadata.uid)
[ "$(jq -r '.metadata.annotations["kubernetes.io/config.mirror"]' <<<"$m")" = "$suid" ] ||
        fail "config.mirror is not the static pod's hash"
[ "$(jq -r '.metadata.annotations["kubernetes.io/config.hash"]' <<<"$m")" = "$suid" ] || fail "mirror config.hash"
[ "$(jq -r .metadata.uid <<<"$m")" != "$suid" ] || fail "the mirror has the static pod's uid"
node_uid=$(k get node "$node" -o jsonpath='{.metadata.uid}')
[ "$(jq -cS '.metadata.ownerReferences' <<<"$m")" = \
        "[{\"apiVersion\":\"v1\",\"controller\":true,\"kind\":\"Node\",\"name\":\"$node\",\"uid\":\"$node_uid\"}]" ] ||
        fail "owner reference: $(jq -c .metadata.ownerReferences <<<"$m")"
[ "$(jq -r .spec.nodeName <<<"$m")" = "$node" ] || fail "mirror spec.nodeName"
[ "$(jq -r .metadata.labels.app <<<"$m")" = web ] || fail "labels do not propagate"
[ "$(jq -r '.status.containerStatuses[0].ready' <<<"$m")" = true ] || fail "the mirror has no container status"
[ "$(pod_field "api-$node" .metadata.uid)" = "$api_uid" ] || fail "the api static pod changed uid across the restart"
grep -q "pod default/api-$node uid=$api_uid admitted" "$tmp/agent.log" || fail "api pod not re-admitted"
[ "$(jq -r '.status.containerStatuses[0].restartCount' <<<"$(mirror "api-$node")")" = 0 ] ||
        fail "the api static pod restarted across the agent restart"
pass "mirror pods: config.mirror = config.hash, Node owner reference, labels, the static pod's status (kubectl)"

# kubectl delete on the mirror: the static pod keeps running, the mirror comes back.
muid=$(jq -r .metadata.uid <<<"$m")
cid=$(pod_field "web-$node" '.status.containerStatuses[0].containerID')
k delete pod "web-$node" --wait=false >/dev/null
new_mirror() { local u; u=$(mirror "web-$node" | jq -r .metadata.uid) && [ "$u" != "$muid" ] && mirror_running "web-$node"; }
poll 30 quietly new_mirror || fail "the deleted mirror pod was not recreated"
[ "$(pod_field "web-$node" .metadata.uid)" = "$suid" ] || fail "deleting the mirror changed the static pod"
[ "$(pod_field "web-$node" '.status.containerStatuses[0].containerID')" = "$cid" ] ||
        fail "deleting the mirror restarted the static pod's container"
pass "kubectl delete of a mirror pod: the static pod keeps running (same container), the mirror is recreated"

# Edit: the static pod and its mirror are replaced.
manifest web v4 >"$tmp/manifests/web.yaml"
new_hash() {
        local h
        h=$(mirror "web-$node" | jq -r '.metadata.annotations["kubernetes.io/config.mirror"]') &&
                [ "$h" != "$suid" ] && [ "$h" = "$(pod_field "web-$node" .metadata.uid)" ] && mirror_running "web-$node"
}
poll 30 quietly new_hash || fail "edit: the mirror was not replaced with the new hash"
pass "edit with an apiserver: a new static pod and a new mirror"

# Remove: the mirror is deleted and the pod stops.
suid3=$(pod_field "web-$node" .metadata.uid)
cg3=$(cgroup_of "$suid3")
rm "$tmp/manifests/web.yaml"
poll 30 quietly gone "web-$node" || fail "remove: the mirror pod is still there"
poll 15 quietly test ! -d "$cg3" || fail "remove: the static pod's cgroup is still there"
mirror_running "api-$node" || fail "the other static pod's mirror went too"
pass "removing the manifest deletes the mirror (kubectl) and stops the pod"

# An orphaned mirror pod of this node (no static pod) is deleted.
k create -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: orphan-$node
  annotations: {kubernetes.io/config.mirror: "0123456789abcdef0123456789abcdef"}
spec:
  nodeName: $node
  containers: [{name: c, image: busybox:1.36}]
EOF
poll 20 quietly gone "orphan-$node" || fail "an orphaned mirror pod was not deleted"
grep -q "orphan-$node.*no static pod" "$tmp/agent.log" || fail "orphan deletion not logged"
! grep -q "pod default/orphan-$node uid=.* admitted" "$tmp/agent.log" || fail "a mirror pod was run as a pod"
pass "an orphaned mirror pod is deleted, never run"

rm -f "$tmp/manifests/"*
poll 30 quietly absent "api-$node" || fail "api static pod not stopped"
finish
