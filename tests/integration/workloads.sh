#!/usr/bin/env bash
# The pods a real cluster sends (issue 14), through kubectl against the
# stand-in with ServiceAccount admission on: the kube-api-access-* volume
# (the token's JWT names the pod, namespace, ca.crt is the stand-in's CA,
# read-only, on tmpfs); ConfigMap and Secret edits reaching the files; an
# optional ConfigMap deleted emptying its volume; a required one missing
# keeping the pod ContainerCreating with the kubelet's FailedMount text;
# env from configMapKeyRef/secretKeyRef/envFrom and the kubelet's errors;
# subPath (and an escape through a symlink swapped in by another container
# refused); emptyDir medium Memory kept across a container restart; a
# hostPath type mismatch as the volume manager's FailedMount, and a failed
# sync retried by the pod worker's jittered backoff or at once on an
# update of the pod (real
# pods from real clusters: real_pods.sh). Exit 77 when not root or a tool
# is missing.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
need_root
need_tools jq umoci ip iptables busybox kubectl openssl python3 md5sum /usr/bin/etcd
need_cni bridge host-local
harness_init workloads
# Everything a real cluster does is on: ServiceAccount admission (every
# pod gets kube-api-access-*), Node authorization and NodeRestriction.
export CUBELET_STANDIN_DISABLE_ADMISSION_PLUGINS=${CUBELET_STANDIN_DISABLE_ADMISSION_PLUGINS-}

col() { k get pod "$1" -o wide --no-headers 2>/dev/null | awk -v c="$2" '{print $c}'; }
events() { events_of "" "$1" "$2"; }
has_event() { events "$1" "$2" | qgrep -F -- "$3"; }
pod_log() { cat "$logs"/default_"$1"_"$2"/"$3"/"${4:-0}".log 2>/dev/null; }

import_busybox
write_cni_conf
start_standin
start_agent -v 1 --kubeconfig "$data/node.kubeconfig" --healthz-port "$(free_port)" --node-ip 10.0.0.5 \
        --crash-loop-backoff-base 1 --crash-loop-backoff-max 2 --node-status-update-frequency 1s \
        --node-lease-duration-seconds 4

uid_of() { pj "$1" '{.metadata.uid}'; }
# plog POD [CONTAINER] [RESTART]: the container's log lines (CRI prefix cut).
plog() { pod_log "$1" "$(uid_of "$1")" "${2:-main}" "${3:-0}" | cut -d' ' -f4-; }
has_log() { plog "$1" "${3:-main}" | qgrep -F -- "$2"; }
waiting_is() { [ "$(pj "$1" '{.status.containerStatuses[0].state.waiting.reason}')" = "$2" ]; }

node_ready
pass "node Ready"

# ---- 1. a plain pod: the kube-api-access volume ---------------------------------------
SA=/var/run/secrets/kubernetes.io/serviceaccount
mkpod plain <<EOF
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'echo "ns=\$(cat $SA/namespace)"; md5sum $SA/token $SA/ca.crt; ls -la $SA; touch $SA/x 2>/dev/null || echo "ro=yes"; grep " $SA " /proc/self/mountinfo; sleep 3600']
EOF
wait_running plain 60
vol=$(pj plain '{.spec.volumes[0].name}')
case "$vol" in kube-api-access-?????) pass "1 admission added $vol" ;; *) fail "plain: volume '$vol'" ;; esac
poll 10 has_log plain "ro=yes" || fail "plain: log: $(plog plain | head -20)"
has_log plain "ns=default" || fail "plain: namespace file: $(plog plain | head -3)"
puid=$(uid_of plain)
vdir=$root/pods/$puid/volumes/kubernetes.io~projected/$vol
host_tok=$(md5sum <"$vdir/token" | cut -d' ' -f1)
ca_md5=$(md5sum <"$data/ca.crt" | cut -d' ' -f1)
has_log plain "$host_tok  $SA/token" || fail "plain: the container's token differs from the volume's"
has_log plain "$ca_md5  $SA/ca.crt" || fail "plain: ca.crt is not the stand-in's CA"
claims=$(python3 -c 'import sys,json,base64; p=open(sys.argv[1]).read().split(".")[1]; p+="="*(-len(p)%4); print(base64.urlsafe_b64decode(p).decode())' "$vdir/token")
[ "$(jq -r '.["kubernetes.io"].pod.name' <<<"$claims")" = plain ] &&
        [ "$(jq -r '.["kubernetes.io"].pod.uid' <<<"$claims")" = "$puid" ] &&
        [ "$(jq -r '.sub' <<<"$claims")" = system:serviceaccount:default:default ] ||
        fail "plain: token claims $claims"
exp=$(jq -r .exp <<<"$claims")
iat=$(jq -r .iat <<<"$claims")
pass "1 token bound to pod plain/$puid (sub $(jq -r .sub <<<"$claims"), exp-iat $((exp - iat))s), namespace, ca.crt = the stand-in's CA"
# the layout of the atomic writer, the modes, tmpfs, read-only
[ "$(readlink "$vdir/token")" = ..data/token ] && [[ "$(readlink "$vdir/..data")" == ..20* ]] ||
        fail "plain: layout $(ls -la "$vdir" | paste -sd' ')"
[ "$(stat -Lc %a "$vdir/token")" = 644 ] || fail "plain: token mode $(stat -Lc %a "$vdir/token")"
grep -q " $vdir .* - tmpfs " /proc/self/mountinfo || fail "plain: the projected volume is not on tmpfs"
has_log plain " $SA ro," || fail "plain: not mounted read-only: $(plog plain | grep " $SA ")"
pass "1 ..data -> $(readlink "$vdir/..data"), token -> ..data/token mode 644, tmpfs, read-only in the container"
k create token default --duration=10m >/dev/null 2>&1 || true

# ---- 2. ConfigMap and Secret edits reach the files; an optional one deleted -----------
k create configmap app-cfg --from-literal=mode=one --from-literal=1bad=x >/dev/null || fail "create configmap"
k create secret generic app-sec --from-literal=pass=p1 >/dev/null || fail "create secret"
k create configmap opt-cfg --from-literal=k=here >/dev/null || fail "create opt-cfg"
echo '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "imm-cfg"}, "immutable": true, "data": {"k": "fixed"}}' |
        k apply -f - >/dev/null || fail "create imm-cfg"
mkpod files <<'EOF'
  securityContext: {fsGroup: 1234}
  volumes:
  - {name: cfg, configMap: {name: app-cfg, items: [{key: mode, path: sub/mode, mode: 0600}]}}
  - {name: sec, secret: {secretName: app-sec, defaultMode: 0400}}
  - {name: opt, configMap: {name: opt-cfg, optional: true}}
  - {name: imm, configMap: {name: imm-cfg, optional: true}}
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'last=; while :; do s="cfg=$(cat /cfg/sub/mode) sec=$(cat /sec/pass) opt=$(cat /opt/k 2>/dev/null || echo none) imm=$(cat /imm/k 2>/dev/null || echo none)"; [ "$s" = "$last" ] || echo "$s"; last=$s; sleep 0.2; done']
    volumeMounts:
    - {name: cfg, mountPath: /cfg}
    - {name: sec, mountPath: /sec}
    - {name: opt, mountPath: /opt}
    - {name: imm, mountPath: /imm}
EOF
wait_running files 60
poll 10 has_log files "cfg=one sec=p1 opt=here" || fail "files: $(plog files | tail -3)"
fuid=$(uid_of files)
fcfg=$root/pods/$fuid/volumes/kubernetes.io~configmap/cfg
[ "$(stat -Lc %a:%g "$fcfg/sub/mode")" = 640:1234 ] || fail "files: item mode/fsGroup $(stat -Lc %a:%g "$fcfg/sub/mode")"
[ "$(stat -Lc %a "$root/pods/$fuid/volumes/kubernetes.io~secret/sec/pass")" = 440 ] || fail "files: secret mode"
grep -q " $root/pods/$fuid/volumes/kubernetes.io~secret/sec .* - tmpfs " /proc/self/mountinfo || fail "files: the secret is not on tmpfs"
grep -q " $fcfg .* - tmpfs " /proc/self/mountinfo && fail "files: the configMap is on tmpfs (the kubelet keeps it on disk)"
t=$(now)
k patch configmap app-cfg --type merge -p '{"data":{"mode":"two"}}' >/dev/null
poll 30 has_log files "cfg=two sec=p1" || fail "files: the ConfigMap edit did not arrive: $(plog files | tail -2)"
d_cm=$(since "$t")
t=$(now)
k patch secret app-sec --type merge -p '{"stringData":{"pass":"p2"}}' >/dev/null # write-only stringData, as users patch
poll 30 has_log files "cfg=two sec=p2" || fail "files: the Secret edit did not arrive: $(plog files | tail -2)"
d_sec=$(since "$t")
has_log files "imm=fixed" || fail "files: the immutable ConfigMap: $(plog files | tail -2)"
out=$(k patch configmap imm-cfg --type merge -p '{"data":{"k":"changed"}}' 2>&1) &&
        fail "files: an immutable ConfigMap was changed"
case "$out" in *'data: Forbidden: field is immutable when `immutable` is set'*) ;; *) fail "files: immutable patch: $out" ;; esac
t=$(now)
# Both optional; the kubelet stops watching an immutable object once read,
# so only the mutable one's deletion reaches the files.
k delete configmap opt-cfg imm-cfg >/dev/null
poll 30 has_log files "opt=none" || fail "files: the optional ConfigMap's deletion did not empty it"
d_opt=$(since "$t")
sleep 2
last=$(plog files | tail -1)
case "$last" in *"opt=none imm=fixed"*) ;; *) fail "files: after deleting the immutable ConfigMap: '$last' (it is no longer watched: its files stay)" ;; esac
pass "2 ConfigMap edit in ${d_cm}s, Secret edit in ${d_sec}s, optional ConfigMap deleted -> empty in ${d_opt}s, an immutable one unwatched (files kept, edits refused); item mode 0600+fsGroup -> 640 gid 1234, secret 0400+fsGroup -> 440 on tmpfs"
w=$(k get --raw "/api/v1/namespaces/default/configmaps?fieldSelector=metadata.name%3Dapp-cfg" | jq -r '.items|length')
[ "$w" = 1 ] || fail "the admin cannot list app-cfg"

# ---- 3. a required ConfigMap missing: ContainerCreating, FailedMount, then it runs ---------
mkpod needs <<'EOF'
  volumes:
  - {name: cfg, configMap: {name: later}}
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'cat /cfg/k; echo; sleep 3600']
    volumeMounts: [{name: cfg, mountPath: /cfg}]
EOF
want='MountVolume.SetUp failed for volume "cfg" : configmap "later" not found'
poll 30 has_event needs FailedMount "$want" || fail "needs: no FailedMount '$want': $(events needs FailedMount | head -2)"
sleep 2
[ "$(col needs 3)" = ContainerCreating ] && waiting_is needs ContainerCreating && phase_is needs Pending ||
        fail "needs: STATUS $(col needs 3), $(pj needs '{.status.containerStatuses}')"
n1=$(k get events --field-selector involvedObject.name=needs,reason=FailedMount -o jsonpath='{.items[0].count}')
k create configmap later --from-literal=k=arrived >/dev/null
wait_running needs 30
poll 10 has_log needs arrived || fail "needs: $(plog needs)"
pass "3 missing ConfigMap: ContainerCreating with '$want' (count $n1, retried with backoff), Running once it exists"

# ---- 4. env from ConfigMaps and Secrets ----------------------------------------------
mkpod envpod Never <<'EOF'
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'env | sort']
    envFrom:
    - configMapRef: {name: app-cfg}
    - {prefix: S_, secretRef: {name: app-sec}}
    - configMapRef: {name: nope, optional: true}
    env:
    - {name: MODE_KEY, valueFrom: {configMapKeyRef: {name: app-cfg, key: mode}}}
    - {name: PASS, valueFrom: {secretKeyRef: {name: app-sec, key: pass}}}
    - {name: OPT, valueFrom: {configMapKeyRef: {name: app-cfg, key: nokey, optional: true}}}
EOF
k wait --for=jsonpath='{.status.phase}'=Succeeded pod/envpod --timeout=60s >/dev/null || fail "envpod: not Succeeded ($(col envpod 3))"
for kv in mode=two MODE_KEY=two S_pass=p2 PASS=p2; do has_log envpod "$kv" || fail "envpod: no $kv in $(plog envpod | paste -sd' ')"; done
has_log envpod "OPT=" && fail "envpod: OPT set"
has_event envpod InvalidEnvironmentVariableNames "Keys [1bad] from the EnvFrom configMap default/app-cfg were skipped since they are considered invalid environment variable names." ||
        fail "envpod: no InvalidEnvironmentVariableNames event: $(events envpod InvalidEnvironmentVariableNames)"
mkpod envbad <<'EOF'
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'sleep 3600']
    env:
    - {name: X, valueFrom: {configMapKeyRef: {name: app-cfg, key: nokey}}}
EOF
poll 30 waiting_is envbad CreateContainerConfigError || fail "envbad: $(pj envbad '{.status.containerStatuses}')"
m=$(pj envbad '{.status.containerStatuses[0].state.waiting.message}')
[ "$m" = "couldn't find key nokey in ConfigMap default/app-cfg" ] || fail "envbad: message '$m'"
mkpod envnocm <<'EOF'
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'sleep 3600']
    envFrom: [{secretRef: {name: absent}}]
EOF
poll 30 waiting_is envnocm CreateContainerConfigError || fail "envnocm: $(pj envnocm '{.status.containerStatuses}')"
m2=$(pj envnocm '{.status.containerStatuses[0].state.waiting.message}')
[ "$m2" = 'secret "absent" not found' ] || fail "envnocm: message '$m2'"
k create secret generic absent --from-literal=a=b >/dev/null
wait_running envnocm 40
pass "4 env: envFrom (prefix, optional, invalid key event), configMapKeyRef, secretKeyRef; CreateContainerConfigError '$m' / '$m2', retried until the Secret exists"

# ---- 5. emptyDir medium Memory survives a container restart ---------------------------------
mkpod mem OnFailure <<'EOF'
  volumes: [{name: m, emptyDir: {medium: Memory, sizeLimit: 16Mi}}]
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'grep " /m " /proc/self/mountinfo; if [ -f /m/seen ]; then echo kept; exit 0; fi; echo first >/m/seen; echo wrote; exit 1']
    volumeMounts: [{name: m, mountPath: /m}]
EOF
k wait --for=jsonpath='{.status.phase}'=Succeeded pod/mem --timeout=60s >/dev/null || fail "mem: not Succeeded ($(col mem 3))"
plog mem main 1 | qgrep kept || fail "mem: the restarted container did not find the file: $(plog mem main 1)"
[ "$(pj mem '{.status.containerStatuses[0].restartCount}')" = 1 ] || fail "mem: restartCount"
plog mem main 0 | grep " /m " | qgrep "size=16384k" || fail "mem: tmpfs size: $(plog mem main 0 | head -2)"
pass "5 emptyDir Memory (sizeLimit 16Mi = tmpfs size=16384k) kept across a restart"

# ---- 6. subPath, and an escape through a swapped symlink ---------------------------------
mkpod subp <<'EOF'
  volumes:
  - {name: cfg, configMap: {name: app-cfg}}
  - {name: shared, emptyDir: {}}
  initContainers:
  - name: prep
    image: busybox:1.36
    command: [sh, -c, 'mkdir -p /s/dir && echo inside >/s/dir/f && ln -s /etc /s/evil && ln -s ../../../../../../ /s/up']
    volumeMounts: [{name: shared, mountPath: /s}]
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'cat /one; echo; cat /f; cat /x/f; sleep 3600']
    env: [{name: SUB, value: dir}]
    volumeMounts:
    - {name: cfg, mountPath: /one, subPath: mode}
    - {name: shared, mountPath: /f, subPath: dir/f}
    - {name: shared, mountPath: /x, subPathExpr: $(SUB)}
EOF
wait_running subp 60
poll 10 has_log subp inside || fail "subp: $(plog subp)"
has_log subp two || fail "subp: configMap subPath: $(plog subp)"
pass "6 subPath into a configMap key and an emptyDir file, subPathExpr"
mkpod escape <<'EOF'
  volumes: [{name: shared, emptyDir: {}}]
  initContainers:
  - name: prep
    image: busybox:1.36
    command: [sh, -c, 'ln -s /etc /s/evil']
    volumeMounts: [{name: shared, mountPath: /s}]
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'cat /leak/shadow; sleep 3600']
    volumeMounts: [{name: shared, mountPath: /leak, subPath: evil}]
EOF
poll 40 waiting_is escape CreateContainerConfigError || fail "escape: $(pj escape '{.status.containerStatuses}')"
m3=$(pj escape '{.status.containerStatuses[0].state.waiting.message}')
case "$m3" in *"failed to prepare subPath for volumeMount \"shared\" of container \"main\""*) ;; *) fail "escape: message '$m3'" ;; esac
phase_is escape Pending || fail "escape: phase $(pj escape '{.status.phase}')"
pass "6 a subPath through a symlink planted by another container refused: '$m3'"

# A container swaps a symlink between a directory inside the volume and
# one leading out of it, while the other container (restarting every
# second) mounts it as its subPath: each start either gets the directory
# inside (its marker file) or is refused, never the host's root. When a
# start finds no /s/dir at all (between ln's unlink and symlink) the agent
# makes the missing subPath directory, as the kubelet does, and the
# swapper's next `ln -sfn` then puts its links inside it: the victim sees
# that directory of the volume (INSIDE-DIR: empty, or the link "real").
# One listing decides (ls -l: the entry and its type at once): the swapper
# replaces that link all the time, so two looks (is /m/real a link? what
# does /m hold?) raced and called the directory OUTSIDE (ASan run, load 20).
mkpod swap Always <<'EOF'
  volumes: [{name: shared, emptyDir: {}}]
  initContainers:
  - name: prep
    image: busybox:1.36
    command: [sh, -c, 'mkdir -p /s/real && touch /s/real/marker && ln -s real /s/dir']
    volumeMounts: [{name: shared, mountPath: /s}]
  containers:
  - name: swapper
    image: busybox:1.36
    command: [sh, -c, 'while :; do ln -sfn real /s/dir; ln -sfn ../../../../../../../../.. /s/dir; done']
    volumeMounts: [{name: shared, mountPath: /s}]
  - name: victim
    image: busybox:1.36
    command: [sh, -c, 'l=$(ls -l /m | grep -v "^total"); if [ -f /m/marker ]; then echo INSIDE; elif ! printf "%s\n" "$l" | grep -v "^l.* real -> " | qgrep .; then echo "INSIDE-DIR $(printf "%s\n" "$l" | sed -n "s/.* real -> /real -> /p" | paste -sd,)"; else echo "OUTSIDE $(printf "%s\n" "$l" | head -5 | paste -sd,)"; fi; sleep 0.3; exit 1']
    volumeMounts: [{name: shared, mountPath: /m, subPath: dir}]
EOF
sleep 25
vuid=$(uid_of swap)
inside=$(cat "$logs"/default_swap_"$vuid"/victim/*.log 2>/dev/null | grep -c INSIDE)  # and INSIDE-DIR
outside=$(cat "$logs"/default_swap_"$vuid"/victim/*.log 2>/dev/null | grep OUTSIDE | head -3)
refused=$(k get events --field-selector involvedObject.name=swap,reason=Failed -o jsonpath='{range .items[*]}{.count}|{.message}{"\n"}{end}' |
        grep 'failed to prepare subPath for volumeMount "shared" of container "victim"' | cut -d'|' -f1 | head -1)
[ -z "$outside" ] || fail "swap: the victim saw outside the volume: $outside"
[ "$inside" -gt 0 ] || [ -n "$refused" ] || fail "swap: the victim never started nor was refused"
pass "6 subPath under a symlink swap by another container: $inside start(s) inside, ${refused:-0} refused, none outside"
k delete pod swap --grace-period=1 --wait=false >/dev/null

# ---- 7. what appears later on the host, with no event on the pod ------------------------
# A hostPath of type Directory that does not exist is the volume manager's
# mount failure (pkg/volume/hostpath checkType): FailedMount with the
# plugin's text, the pod Pending/ContainerCreating (not
# CreateContainerConfigError), the mount retried with its backoff (0.5 s
# doubling) until the directory is made on the host.
hp=$tmp/hp-late
mkpod hostdir <<EOF
  volumes: [{name: late, hostPath: {path: $hp, type: Directory}}]
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'ls -d /late && sleep 3600']
    volumeMounts: [{name: late, mountPath: /late}]
EOF
want_hp="MountVolume.SetUp failed for volume \"late\" : hostPath type check failed: $hp is not a directory"
poll 20 has_event hostdir FailedMount "$want_hp" || fail "hostdir: no FailedMount '$want_hp': $(events hostdir FailedMount | head -3)"
waiting_is hostdir ContainerCreating && phase_is hostdir Pending ||
        fail "hostdir: $(pj hostdir '{.status.phase} {.status.containerStatuses[0].state}')"
events hostdir Failed | qgrep . && fail "hostdir: a container error: $(events hostdir Failed | head -2)"
sleep 2
waiting_is hostdir ContainerCreating || fail "hostdir: $(pj hostdir '{.status.containerStatuses[0].state}')"
t=$(now)
mkdir -p "$hp"
poll 20 phase_is hostdir Running || fail "hostdir: not Running 20 s after the directory was made: $(pj hostdir '{.status.phase} {.status.containerStatuses[0].state}')"
d_hp=$(since "$t")
fle "$d_hp" 16 || fail "hostdir: Running ${d_hp}s after the directory was made"
n_hp=$(k get events --field-selector involvedObject.name=hostdir,reason=FailedMount -o jsonpath='{.items[0].count}')
pass "7 hostPath Directory missing: '$want_hp' (x$n_hp), Pending/ContainerCreating; Running ${d_hp}s after mkdir on the host"

# A hostPath with no type at a path that does not exist: the kubelet checks
# nothing and containerd's CRI makes the missing source a directory (0755)
# when it builds the mounts, so the pod runs.
hu=$tmp/hp-untyped/a/b
mkpod hostunset <<EOF
  volumes: [{name: u, hostPath: {path: $hu}}]
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'ls -d /u && sleep 3600']
    volumeMounts: [{name: u, mountPath: /u}]
EOF
poll 20 phase_is hostunset Running || fail "hostunset: not Running: $(pj hostunset '{.status.phase} {.status.containerStatuses[0].state}')"
[ "$(stat -c %F:%a "$hu" 2>/dev/null)" = directory:755 ] || fail "hostunset: $hu is '$(stat -c %F:%a "$hu" 2>&1)', want a directory 755"
pass "7 hostPath with no type at a missing path: made a directory 0755 as containerd does; Running"
k delete pod hostunset --grace-period=0 --force --wait=false >/dev/null 2>&1

# A start refused off the loop (a subPath through a host symlink that
# leads out of the volume) is a failed sync: the pod worker syncs again
# after jitter(10 s, 0.5) (pod_workers.go completeWork), nothing else
# nudging it (the watch echo of the refusal's own status PATCH is no update
# to sync on: the kubelet's pod config makes it a RECONCILE).
# subpath_refused POD [COMMAND]: the pod, its hostPath at $tmp/sp-POD with
# the symlink, CreateContainerConfigError.
subpath_refused() {
        local sp=$tmp/sp-$1
        mkdir -p "$sp" && ln -s /etc "$sp/sub"
        mkpod "$1" <<EOF
  volumes: [{name: h, hostPath: {path: $sp, type: Directory}}]
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, '${2:-ls /in; sleep 3600}']
    volumeMounts: [{name: h, mountPath: /in, subPath: sub}]
EOF
        poll 30 waiting_is "$1" CreateContainerConfigError || fail "$1: $(pj "$1" '{.status.containerStatuses[0].state}')"
}
# subpath_fixed POD LO HI NUDGE...: the refused pod; the host fixes the path
# 0.5 s after the refusal, NUDGE runs 1 s later (`:`: nothing); the pod
# Running LO to HI s after the refusal (sub_d: the seconds; sub_nfail: the
# failed syncs before the fix).
subpath_fixed() {
        local pod=$1 lo=$2 hi=$3 t
        shift 3
        subpath_refused "$pod"
        t=$(now)
        sleep 0.5
        sub_nfail=$(grep -c "pod default/$pod: sync failed, retried in" "$tmp/agent.log" || true)
        rm "$tmp/sp-$pod/sub" && mkdir "$tmp/sp-$pod/sub" && touch "$tmp/sp-$pod/sub/inside"
        sleep 1
        "$@" >/dev/null || fail "$pod: $*"
        poll $((${hi%.*} + 8)) phase_is "$pod" Running ||
                fail "$pod: not Running $((${hi%.*} + 8)) s after the nudge: $(pj "$pod" '{.status.containerStatuses[0].state}')"
        sub_d=$(since "$t")
        fle "$lo" "$sub_d" && fle "$sub_d" "$hi" || fail "$pod: Running ${sub_d}s after the refusal, not within $lo-$hi s"
}

# Nothing nudging it: the retry after the backoff (10-15 s after the
# failed sync) starts it.
subpath_fixed subretry 8.5 17 :
delays=$(grep -o 'pod default/subretry: sync failed, retried in [0-9.]*s' "$tmp/agent.log" | awk '{print $NF}' | paste -sd' ')
[ "$sub_nfail" -eq 1 ] ||
        fail "subretry: $sub_nfail failed syncs in the 0.5 s after the refusal, want 1 (retried before its backoff: the watch echo of its own status; retries armed: ${delays:-none})"
pass "7 a subPath refused off the loop, fixed on the host: Running ${sub_d}s after the refusal, $sub_nfail failed sync before the fix (retries armed: ${delays:-none})"

# An update of the pod 1 s after the fix: the sync runs at once (UpdatePod
# does not wait for the backoff): within 2.5 s of the update.
subpath_fixed subkick 0 4 k annotate pod subkick poke=1
pass "7 an update of the pod during the backoff syncs it at once: Running ${sub_d}s after the refusal, 1.5 s after which it was updated"
k delete pod hostdir subretry subkick --grace-period=1 --wait=false >/dev/null

# Deleted while it waits for its retry: the timer goes with the worker.
subpath_refused subgone 'sleep 3600'
k delete pod subgone --grace-period=1 --wait=false >/dev/null
poll 20 gone subgone || fail "subgone: not gone 20 s after its deletion during the backoff"
sleep 16 # past every retry it had armed
kill -0 "$agent_pid" 2>/dev/null || fail "the agent died after a pod was deleted during its retry wait"
pass "7 a pod deleted during its retry wait is gone, the agent fine past its retry"

# ---- 8. an agent restart: the volumes are taken up again, edits still arrive ------------
stop_agent 10
k patch configmap app-cfg --type merge -p '{"data":{"mode":"three"}}' >/dev/null
start_agent -v 1 --kubeconfig "$data/node.kubeconfig" --healthz-port "$(free_port)" --node-ip 10.0.0.5 \
        --crash-loop-backoff-base 1 --crash-loop-backoff-max 2 --node-status-update-frequency 1s \
        --node-lease-duration-seconds 4
poll 30 has_log files "cfg=three sec=p2" || fail "files: the edit made while the agent was down did not arrive: $(plog files | tail -2)"
[ "$(pj files '{.status.containerStatuses[0].restartCount}')" = 0 ] || fail "files: restarted by the agent restart"
phase_is plain Running || fail "plain: $(pj plain '{.status.phase}') after the agent restart"
pass "8 after an agent restart the edit made meanwhile reached the files, no container restarted"

# ---- the end ------------------------------------------------------------------------
k delete pods --all --grace-period=1 --wait=false >/dev/null 2>&1
poll 60 eval '[ -z "$(k get pods -A -o name 2>/dev/null)" ]' || fail "pods not gone: $(k get pods -A --no-headers | paste -sd';')"
poll 20 eval '[ -z "$(ls "$root/pods" 2>/dev/null)" ]' || fail "pod directories left: $(ls "$root/pods")"
grep -q " $root/pods/" /proc/self/mountinfo && fail "mounts left: $(grep " $root/pods/" /proc/self/mountinfo | head -3)"
grep -E 'eyJ[A-Za-z0-9_-]{20,}' "$tmp/agent.log" >/dev/null && fail "a token in the agent log"
kill -0 "$agent_pid" 2>/dev/null || fail "the agent died"
stop_agent 10
sanitizer_findings "$tmp/agent.log" || fail "sanitizer reports in the agent log"
finish
