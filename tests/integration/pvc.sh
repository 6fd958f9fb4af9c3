#!/usr/bin/env bash
# persistentVolumeClaim volumes through kubectl and the stand-in (its
# PersistentVolume binder binds the claims, as kube-controller-manager's
# would; docs/volumes.md): a hostPath PV whose writes outlive the pod and
# reach a second pod, read-only through the claim source's readOnly; a
# local PV bound into the pod directory, its nodeAffinity checked; an
# unbound claim, a PV bound to another claim (the Node authorizer refuses
# it), a claimRef with another uid, a Block PV, an nfs PV: each keeps the
# pod Pending with the kubelet's FailedMount text (cubelet's own for the
# sources it does not mount); the Node authorizer gives a node the PVs of
# its pods' claims and no other. Exit 77 when not root or a tool is missing.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
need_root
need_tools jq umoci ip iptables busybox kubectl /usr/bin/etcd
need_cni bridge host-local
harness_init pvc

import_busybox
write_cni_conf
start_standin
start_agent -v 1 --kubeconfig "$data/node.kubeconfig" --healthz-port "$(free_port)"
node_ready
nk() { kubectl --kubeconfig "$data/node.kubeconfig" --request-timeout="$K_TIMEOUT" "$@"; }
uid_of() { pj "$1" '{.metadata.uid}'; }
plog() { cat "$logs"/default_"$1"_"$(uid_of "$1")"/main/0.log 2>/dev/null | cut -d' ' -f4-; }
pvc_phase() { k get pvc "$1" -o jsonpath='{.status.phase}' 2>/dev/null; }
# wait_event POD TEXT [SECONDS]: a FailedMount event of POD contains TEXT
has_event() { events_of Pod "$1" FailedMount | qgrep -F -- "$2"; }
wait_event() {
        poll "${3:-20}" has_event "$1" "$2" ||
                fail "$1: no FailedMount event with '$2'; events: $(events_of Pod "$1" FailedMount | paste -sd';'); phase $(pj "$1" '{.status.phase}')"
}
mkpv() { # NAME SPEC-LINES (indented by 2): a PV of 1Gi, ReadWriteOnce unless given
        { printf 'apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: %s}\nspec:\n' "$1"; cat; } |
                k create -f - >/dev/null || fail "PV $1: kubectl create failed"
}
mkpvc() { # NAME [SIZE] [EXTRA-SPEC-LINE]
        k create -f - >/dev/null <<EOF || fail "PVC $1: kubectl create failed"
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $1, namespace: default}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  resources: {requests: {storage: ${2:-1Gi}}}
  ${3:-}
EOF
}
claim_pod() { # POD CLAIM COMMAND [readOnly]
        mkpod "$1" <<EOF
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, '$3']
    volumeMounts: [{name: storage, mountPath: /data}]
  volumes:
  - name: storage
    persistentVolumeClaim: {claimName: $2, readOnly: ${4:-false}}
EOF
}

# ---- the stand-in: validation, the binder, the node authorizer -------------------
out=$(k create -f - 2>&1 <<EOF
apiVersion: v1
kind: PersistentVolume
metadata: {name: bad}
spec:
  accessModes: [ReadWriteOnce]
  local: {path: /mnt}
EOF
) && fail "a PV without capacity and a local PV without nodeAffinity were created"
for want in 'spec.capacity: Required value' 'spec.nodeAffinity: Required value: Local volume requires node affinity'; do
        grep -qF "$want" <<<"$out" || fail "invalid PV: no '$want' in: $out"
done
out=$(k create -f - 2>&1 <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: bad, namespace: default}
spec: {accessModes: [ReadWriteOnce]}
EOF
) && fail "a PVC without a storage request was created"
grep -qF 'spec.resources[storage]: Required value' <<<"$out" || fail "invalid PVC: $out"
pass "PV and PVC validation as kube-apiserver's ('spec.capacity: Required value', 'Local volume requires node affinity', 'spec.resources[storage]: Required value')"

hostpv=$tmp/hostpv
mkpv pv-host <<EOF
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: $hostpv, type: DirectoryOrCreate}
EOF
mkpvc data
poll 10 eval '[ "$(pvc_phase data)" = Bound ]' || fail "PVC data: $(pvc_phase data), not Bound"
[ "$(k get pvc data -o jsonpath='{.spec.volumeName}')" = pv-host ] || fail "PVC data bound to $(k get pvc data -o jsonpath='{.spec.volumeName}')"
[ "$(k get pv pv-host -o jsonpath='{.spec.claimRef.uid}')" = "$(k get pvc data -o jsonpath='{.metadata.uid}')" ] ||
        fail "pv-host's claimRef is not the claim: $(k get pv pv-host -o jsonpath='{.spec.claimRef}')"
[ "$(k get pv pv-host -o jsonpath='{.status.phase}')" = Bound ] || fail "pv-host: $(k get pv pv-host -o jsonpath='{.status.phase}')"
[ "$(k get pvc data -o jsonpath='{.metadata.annotations.pv\.kubernetes\.io/bind-completed}')" = yes ] || fail "PVC data: no bind-completed annotation"
pass "the binder: PVC data Bound to pv-host (claimRef with the claim's uid, bind-completed), as kube-controller-manager leaves them; kubectl get pv: $(k get pv pv-host --no-headers | awk '{print $2, $3, $5, $6}')"

out=$(nk get pv pv-host 2>&1) && fail "the node got pv-host before any of its pods uses the claim: $out"
grep -qF "no relationship found between node '$NODE' and this object" <<<"$out" || fail "node get pv: $out"
pass "before a pod uses the claim the node may not get its PV ($(sed 's/.*is forbidden: //' <<<"$out" | cut -c1-80)...)"

# ---- hostPath PV: writes outlive the pod ------------------------------------------
claim_pod writer data 'echo "written by $HOSTNAME" >/data/file && sync && echo done; sleep 3600'
wait_running writer 60
poll 10 eval 'plog writer | qgrep done' || fail "writer: $(plog writer)"
[ "$(cat "$hostpv/file" 2>/dev/null)" = "written by writer" ] || fail "the PV's directory has '$(cat "$hostpv/file" 2>&1)'"
nk get pv pv-host >/dev/null 2>&1 || fail "the node may not get the PV of its pod's claim: $(nk get pv pv-host 2>&1)"
pass "hostPath PV: the pod's write is in the PV's directory on the node; the node may get the PV of its pod's claim"
wuid=$(uid_of writer)
k delete pod writer --grace-period=1 >/dev/null || fail "delete writer"
poll 30 gone writer || fail "writer not gone"
poll 20 eval '[ ! -e "$root/pods/$wuid" ]' || fail "writer's pod directory is left: $(ls -R "$root/pods/$wuid" | head)"
[ "$(cat "$hostpv/file" 2>/dev/null)" = "written by writer" ] || fail "the data is gone with the pod: '$(cat "$hostpv/file" 2>&1)'"
claim_pod reader data 'cat /data/file; if touch /data/ro-probe 2>/dev/null; then echo writable; else echo readonly; fi; sleep 3600' true
wait_running reader 60
poll 10 eval 'plog reader | qgrep "able\|only"' || fail "reader: $(plog reader)"
[ "$(plog reader | head -2 | paste -sd'|')" = "written by writer|readonly" ] || fail "reader saw: $(plog reader | paste -sd'|')"
[ ! -e "$hostpv/ro-probe" ] || fail "the read-only claim was written"
pass "after the writer's deletion its data is still on the node and a second pod reads it; persistentVolumeClaim.readOnly makes the mount read-only"
k delete pod reader --grace-period=1 --wait=false >/dev/null

# ---- local PV: a bind in the pod directory, nodeAffinity -------------------------
localpv=$tmp/localpv
mkdir -p "$localpv"
mkpv pv-local <<EOF
  capacity: {storage: 2Gi}
  accessModes: [ReadWriteOnce]
  local: {path: $localpv}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [$NODE]}]
EOF
mkpvc localclaim 2Gi
poll 10 eval '[ "$(pvc_phase localclaim)" = Bound ]' || fail "localclaim: $(pvc_phase localclaim)"
claim_pod local localclaim 'echo local >/data/l && echo done; sleep 3600'
wait_running local 60
luid=$(uid_of local)
bind=$root/pods/$luid/volumes/kubernetes.io~local-volume/pv-local
grep -qF " $bind " /proc/self/mountinfo || fail "no bind mount at $bind"
poll 10 eval '[ "$(cat "$localpv/l" 2>/dev/null)" = local ]' || fail "local: the PV's directory has '$(cat "$localpv/l" 2>&1)'"
# An agent restart re-adopts the pod: the claim and PV are read again, the
# bind already there is kept (not mounted a second time).
stop_agent 10
start_agent -v 1 --kubeconfig "$data/node.kubeconfig" --healthz-port "$(free_port)"
node_ready
poll 20 eval '[ "$(grep -c " $bind " /proc/self/mountinfo)" = 1 ]' ||
        fail "after the agent's restart the local PV is mounted $(grep -c " $bind " /proc/self/mountinfo) times"
phase_is local Running || fail "local after the agent's restart: $(pj local '{.status.phase}')"
[ "$(pj local '{.status.containerStatuses[0].restartCount}')" = 0 ] || fail "local's container restarted"
pass "after an agent restart the pod keeps running and its local PV's single bind"
k delete pod local --grace-period=1 >/dev/null
poll 30 gone local || fail "local not gone"
poll 20 eval '! grep -qF " $bind " /proc/self/mountinfo' || fail "the local PV's bind is still mounted"
poll 20 eval '[ ! -e "$root/pods/$luid" ]' || fail "local's pod directory is left"
[ "$(cat "$localpv/l" 2>/dev/null)" = local ] || fail "the local PV's data is gone with the pod"
pass "local PV: bound at pods/<uid>/volumes/kubernetes.io~local-volume/pv-local, written through, unmounted at deletion, the data kept"

# The pod's fsGroup on a writable local PV: the plugin's SetVolumeOwnership
chmod 0600 "$localpv/l"
mkpod owned <<EOF
  securityContext: {fsGroup: 2000}
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'sleep 3600']
    volumeMounts: [{name: storage, mountPath: /data}]
  volumes:
  - name: storage
    persistentVolumeClaim: {claimName: localclaim}
EOF
wait_running owned 60
[ "$(stat -c '%g %a' "$localpv/l")" = "2000 660" ] || fail "fsGroup: the local PV's file is $(stat -c '%g %a' "$localpv/l"), want 2000 660"
[ "$(stat -c '%g %a' "$localpv")" = "2000 2775" ] || fail "fsGroup: the local PV's directory is $(stat -c '%g %a' "$localpv"), want 2000 2775"
k delete pod owned --grace-period=1 >/dev/null
poll 30 gone owned || fail "owned not gone"
pass "a pod with fsGroup 2000 on a writable local PV: its files group 2000 with g+rw (0600 -> 660), directories g+rwx and setgid (2775), as SetVolumeOwnership"

mkpv pv-elsewhere <<EOF
  capacity: {storage: 3Gi}
  accessModes: [ReadWriteOnce]
  local: {path: $localpv}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [another-node]}]
EOF
mkpvc elsewhere 3Gi
poll 10 eval '[ "$(pvc_phase elsewhere)" = Bound ]' || fail "elsewhere: $(pvc_phase elsewhere)"
claim_pod affinity elsewhere 'sleep 3600'
wait_event affinity 'MountVolume.NodeAffinity check failed for volume "pv-elsewhere" : no matching NodeSelectorTerms'
phase_is affinity Pending || fail "affinity: $(pj affinity '{.status.phase}')"
pass "a local PV whose nodeAffinity names another node: Pending, 'MountVolume.NodeAffinity check failed for volume \"pv-elsewhere\" : no matching NodeSelectorTerms'"

# ---- refusals with the kubelet's texts ---------------------------------------------
mkpvc lonely 5Gi
claim_pod unbound lonely 'echo started; sleep 3600'
wait_event unbound 'failed to process volumes=[storage]: error processing PVC default/lonely: PVC is not bound'
phase_is unbound Pending || fail "unbound: $(pj unbound '{.status.phase}')"
pass "an unbound claim: Pending, 'Unable to attach or mount volumes: unmounted volumes=[storage], unattached volumes=[], failed to process volumes=[storage]: error processing PVC default/lonely: PVC is not bound'"
mkpv pv-late <<EOF
  capacity: {storage: 5Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: $tmp/late, type: DirectoryOrCreate}
EOF
poll 10 eval '[ "$(pvc_phase lonely)" = Bound ]' || fail "lonely: $(pvc_phase lonely)"
wait_running unbound 30
pass "once a PV is there and the binder binds the claim, the waiting pod starts"

# A claim the user marks Bound to a PV that is another claim's: the Node
# authorizer's graph goes pv -> pvc by the PV's claimRef, so the node may
# not read it.
mkpv pv-other <<EOF
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: $tmp/other}
  claimRef: {namespace: default, name: someone-else}
EOF
mkpvc stolen 1Gi 'volumeName: pv-other'
k patch pvc stolen --subresource=status --type=merge -p '{"status":{"phase":"Bound"}}' >/dev/null || fail "patch stolen's status"
claim_pod foreign stolen 'sleep 3600'
wait_event foreign "error processing PVC default/stolen: failed to fetch PV pv-other from API server: persistentvolumes \"pv-other\" is forbidden: User \"system:node:$NODE\" cannot get resource \"persistentvolumes\" in API group \"\" at the cluster scope: no relationship found between node '$NODE' and this object"
phase_is foreign Pending || fail "foreign: $(pj foreign '{.status.phase}')"
out=$(nk get pv pv-other 2>&1) && fail "the node got pv-other: $out"
pass "a claim naming another claim's PV: the node may not get it (403 'no relationship found'), the pod stays Pending with the kubelet's 'failed to fetch PV pv-other from API server: ...'"

mkpv pv-uid <<EOF
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: $tmp/uid}
  claimRef: {namespace: default, name: wronguid, uid: 00000000-0000-0000-0000-000000000000}
EOF
mkpvc wronguid 1Gi 'volumeName: pv-uid'
k patch pvc wronguid --subresource=status --type=merge -p '{"status":{"phase":"Bound"}}' >/dev/null || fail "patch wronguid's status"
claim_pod uidpod wronguid 'sleep 3600'
wait_event uidpod "error processing PVC default/wronguid: found PV object pv-uid but its pv.Spec.ClaimRef.UID 00000000-0000-0000-0000-000000000000 does not point to claim.UID $(k get pvc wronguid -o jsonpath='{.metadata.uid}')"
pass "a PV whose claimRef has another uid: 'found PV object pv-uid but its pv.Spec.ClaimRef.UID ... does not point to claim.UID ...'"

mkpv pv-block <<EOF
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  volumeMode: Block
  hostPath: {path: $tmp/block}
EOF
mkpvc blockclaim 1Gi 'volumeMode: Block'
poll 10 eval '[ "$(pvc_phase blockclaim)" = Bound ]' || fail "blockclaim: $(pvc_phase blockclaim)"
claim_pod block blockclaim 'sleep 3600'
wait_event block 'error processing PVC default/blockclaim: volume storage has volumeMode Block, but is specified in volumeMounts'
pass "a Block PV in volumeMounts: 'volume storage has volumeMode Block, but is specified in volumeMounts'"

mkpv pv-nfs <<EOF
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteMany]
  nfs: {server: 192.0.2.1, path: /exports}
EOF
k create -f - >/dev/null <<EOF || fail "PVC nfsclaim"
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: nfsclaim, namespace: default}
spec: {accessModes: [ReadWriteMany], storageClassName: "", resources: {requests: {storage: 1Gi}}}
EOF
poll 10 eval '[ "$(pvc_phase nfsclaim)" = Bound ]' || fail "nfsclaim: $(pvc_phase nfsclaim)"
claim_pod nfs nfsclaim 'sleep 3600'
wait_event nfs 'MountVolume.SetUp failed for volume "pv-nfs" : pod default/nfs volume "storage": PV pv-nfs has a nfs source: nfs volumes are not supported by cubelet'
phase_is nfs Pending || fail "nfs: $(pj nfs '{.status.phase}')"
pass "an nfs PV: Pending, 'MountVolume.SetUp failed for volume \"pv-nfs\" : pod default/nfs volume \"storage\": PV pv-nfs has a nfs source: nfs volumes are not supported by cubelet ...'"

k delete pods --all --grace-period=1 --wait=false >/dev/null 2>&1
poll 60 eval '[ -z "$(k get pods -o name 2>/dev/null)" ]' || fail "pods not gone: $(k get pods --no-headers | paste -sd';')"
poll 20 eval '[ -z "$(ls "$root/pods" 2>/dev/null)" ]' || fail "pod directories left: $(ls "$root/pods")"
kill -0 "$agent_pid" 2>/dev/null || fail "the agent died"
stop_agent 10
sanitizer_findings "$tmp/agent.log" || fail "sanitizer reports in the agent log"
finish
