#!/usr/bin/env bash
# The escape suite (issue 15): each attempt repeats a known container escape
# or hostile input from inside a pod run by the real `cubelet run-pod` (or
# against `cubelet image import`) and checks that it fails for the attacker.
# Every attempt is named by the CVE or pattern it repeats; docs/security.md
# lists them with their defences. The pods use hostNetwork, so no CNI
# network is made (this test needs no RESOURCE_LOCK).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
need_root
need_tools jq umoci busybox python3
need_cubelet
harness_init escapes

tried=0
refused=0
fails=0
# attempt NAME: starts an attempt; refused/escaped record its outcome.
attempt() { tried=$((tried + 1)); cur=$1; }
refused() { refused=$((refused + 1)); echo "refused: $cur${1:+ ($1)}"; }
escaped() { fails=$((fails + 1)); echo "FAIL: $cur: $*"; }

import_busybox

# run NAME: runs $tmp/NAME.yaml (hostNetwork pods, restartPolicy Never); rc,
# $tmp/NAME.jsonl (status lines), $tmp/NAME.err (events, errors).
run() {
  local name=$1
  set +e
  run_pod_cmd "$tmp/$name.yaml" "${@:2}"
  timeout 60 "${pod_argv[@]}" >"$tmp/$name.jsonl" 2>"$tmp/$name.err"
  rc=$?
  set -e
}
pod_log() { cat "$logs"/default_"$1"_*/main/0.log 2>/dev/null | sed 's/^[^ ]* std[a-z]* [FP] //'; }
# said NAME TEXT: the pod's status lines or events contain TEXT
said() { grep -qF -- "$2" "$tmp/$1.jsonl" "$tmp/$1.err"; }
# pod NAME SPEC-FRAGMENT: a pod whose one container "main" runs busybox; the
# fragment is YAML for the container (indented 4) after "image:".
pod() {
  cat >"$tmp/$1.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  restartPolicy: Never
  hostNetwork: true
${3:-}
  containers:
  - name: main
    image: busybox:1.36
$2
EOF
}

# --- item 1: the masked-path source (runc CVE-2025-31133) ------------------------------
attempt "CVE-2025-31133: a volume over /dev"
pod vol-dev "    command: [sh, -c, 'echo started']
    volumeMounts: [{name: v, mountPath: /dev}]" "  volumes: [{name: v, emptyDir: {}}]"
run vol-dev
if pod_log vol-dev | grep -q started; then escaped "the container ran with a volume on /dev"
elif said vol-dev "covers the runtime's /dev or /proc"; then refused "the start is refused"
else escaped "no refusal message: $(tail -3 "$tmp/vol-dev.err")"; fi

attempt "CVE-2025-31133: a volume in /proc"
pod vol-proc "    command: [sh, -c, 'echo started']
    volumeMounts: [{name: v, mountPath: /proc/sys}]" "  volumes: [{name: v, emptyDir: {}}]"
run vol-proc
if pod_log vol-proc | grep -q started; then escaped "the container ran with a volume on /proc/sys"
elif said vol-proc "covers the runtime's /dev or /proc"; then refused "the start is refused"
else escaped "no refusal message: $(tail -3 "$tmp/vol-proc.err")"; fi

attempt "CVE-2025-31133: a volume reaching /proc through a symlink in another volume"
mkdir -p "$tmp/linkvol"
ln -s /proc "$tmp/linkvol/p"
pod vol-link "    command: [sh, -c, 'echo started']
    volumeMounts: [{name: l, mountPath: /l}, {name: v, mountPath: /l/p/sys}]" \
  "  volumes: [{name: l, hostPath: {path: $tmp/linkvol}}, {name: v, emptyDir: {}}]"
run vol-link
if pod_log vol-link | grep -q started; then escaped "the container ran with a volume on /proc/sys"
elif said vol-link "is in /proc: refused"; then refused "the resolved target is refused"
else escaped "no refusal message: $(tail -3 "$tmp/vol-link.err")"; fi

attempt "CVE-2025-31133: /dev/null replaced by a host file before the masks"
printf 'SECRET\n' >"$tmp/victim"
pod null-swap "    command: [sh, -c, 'echo pwned > /proc/timer_list; echo pwned > /proc/keys; echo keys=\$(stat -c %t:%T /proc/keys) timer=\$(stat -c %t:%T /proc/timer_list) \$(cat /proc/timer_list /proc/keys | head -c 20)']
    volumeMounts: [{name: v, mountPath: /dev/null}]" \
  "  volumes: [{name: v, hostPath: {path: $tmp/victim, type: File}}]"
run null-swap
out=$(pod_log null-swap)
if [ "$(cat "$tmp/victim")" != SECRET ]; then escaped "the host file was written through a mask: $(cat "$tmp/victim")"
elif ! grep -qE '^keys=1:3 timer=1:3 *$' <<<"$out"; then escaped "the masks are not the null device: $out $(tail -2 "$tmp/null-swap.err")"
else refused "masks are the runtime's /dev/null"; fi

# --- item 2: host fds and dumpability in the setup window (CVE-2024-21626) -------------
attempt "CVE-2024-21626: workingDir through a leaked fd (/proc/self/fd/N)"
# every fd the monitor had open (its state dir among them) is closed
# before the setup, so no N leads to the host
ok=1
for n in 3 4 5 6 7 8 9; do
  pod wd$n "    command: [sh, -c, 'echo cwd=\$(pwd); ls /..']
    workingDir: /proc/self/fd/$n"
  run wd$n
  if pod_log wd$n | grep -q cwd=; then ok=0; escaped "started in /proc/self/fd/$n: $(pod_log wd$n | head -3)"; fi
done
[ $ok -eq 0 ] || refused "no fd 3..9 to chdir into"

attempt "CVE-2024-21626: fds the container's first process inherits"
# (ls in a child of pid 1: a command substitution would give the shell a pipe)
pod fds "    command: [sh, -c, 'ls -l /proc/1/fd; echo done']"
run fds
out=$(pod_log fds | grep -- '->' || true)
extra=$(grep -vE ' [012] -> ' <<<"$out" || true)
if [ -z "$out" ]; then escaped "no output: $(tail -3 "$tmp/fds.err")"
elif [ -n "$extra" ]; then escaped "pid 1 holds more than stdio: $extra"
else refused "pid 1 has only 0, 1, 2"; fi

# --- exec path: CVE-2024-21626 through an exec (probes and kubectl exec share it) --------
attempt "CVE-2024-21626 via exec: the workingDir swapped for /proc/self/fd/N under exec probes"
# The container's workingDir /home becomes a symlink to /proc/self/fd/N
# (N = 3..9, 1.5 s each) after the start; an exec readiness probe every
# second runs in the workingDir, as kubectl exec does, through the same
# `cubelet __exec`. A probe that lands in a host directory would record a
# cwd outside the container.
mkdir -p "$tmp/execout"
pod execwd "    command: [sh, -c, 'sleep 2; for n in 3 4 5 6 7 8 9; do rm -rf /home; ln -s /proc/self/fd/\$n /home; sleep 1.5; done; rm /home; mkdir /home; sleep 2; echo flipped']
    workingDir: /home
    readinessProbe:
      exec: {command: [sh, -c, 'echo \"cwd=\$(pwd -P) ls=\$(ls -a | head -4 | tr \"\\\\n\" ,)\" >> /out/probe.log']}
      periodSeconds: 1
    volumeMounts: [{name: o, mountPath: /out}]" "  volumes: [{name: o, hostPath: {path: $tmp/execout}}]"
run execwd
ran=$(grep -c '^cwd=' "$tmp/execout/probe.log" 2>/dev/null || true)
outside=$(grep -vE '^cwd=/home ' "$tmp/execout/probe.log" 2>/dev/null || true)
nrefused=$(grep -cE 'working directory .* is outside the container|cannot chdir to the working directory' "$tmp/execwd.err" || true)
if ! pod_log execwd | grep -q flipped; then escaped "the container did not run: $(tail -3 "$tmp/execwd.err")"
elif [ "${ran:-0}" -lt 1 ]; then escaped "no exec ran at all (no positive control): $(grep -i probe "$tmp/execwd.err" | tail -2)"
elif [ -n "$outside" ]; then escaped "an exec ran outside /home: $outside"
elif [ "${nrefused:-0}" -lt 1 ]; then escaped "no exec was refused during the swap: $(grep -i 'probe' "$tmp/execwd.err" | tail -3)"
else refused "$ran exec(s) in /home, $nrefused refused while it pointed at /proc/self/fd/N"; fi

# --- items 3 and 4: the pause process; /proc/self/exe (CVE-2019-5736) -------------------
sha_before=$(sha256sum "$CUBELET" | cut -d' ' -f1)
attempt "pause: /proc/1/root of the shared PID namespace with SYS_PTRACE"
pod pause "    command: [sh, -c, 'echo root=\$(ls -A /proc/1/root | wc -l); grep -E \"^(CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp):\" /proc/1/status; echo exe=\$(readlink /proc/1/exe); cat /proc/1/root/etc/hostname && echo READ-HOST-FILE; echo x >> /proc/1/exe && echo WROTE-EXE; echo done']
    securityContext: {capabilities: {add: [SYS_PTRACE]}}" "  shareProcessNamespace: true"
run pause
out=$(pod_log pause)
if ! grep -q '^done' <<<"$out"; then escaped "the probe did not run: $(tail -3 "$tmp/pause.err")"
elif grep -qE 'READ-HOST-FILE|WROTE-EXE' <<<"$out"; then escaped "$out"
elif ! grep -q '^root=0$' <<<"$out"; then escaped "/proc/1/root is not empty: $out"
elif ! grep -qE '^CapEff:\s+0+$' <<<"$out" || ! grep -qE '^CapBnd:\s+0+$' <<<"$out" ||
  ! grep -qE '^NoNewPrivs:\s+1$' <<<"$out" || ! grep -qE '^Seccomp:\s+2$' <<<"$out"; then
  escaped "the pause process is not confined: $out"
else refused "empty root, no caps, no_new_privs, seccomp"; fi

attempt "CVE-2019-5736: write the runtime binary through /proc/<pid>/exe"
if grep -q '^exe=/memfd:cubelet' <<<"$out" && ! grep -q WROTE-EXE <<<"$out" &&
  [ "$(sha256sum "$CUBELET" | cut -d' ' -f1)" == "$sha_before" ]; then
  refused "the runtime runs from a sealed copy ($(grep '^exe=' <<<"$out"))"
else escaped "exe: $(grep '^exe=' <<<"$out"), binary unchanged: $([ "$(sha256sum "$CUBELET" | cut -d' ' -f1)" == "$sha_before" ] && echo yes || echo NO)"; fi

attempt "CVE-2019-5736: ENTRYPOINT [/proc/self/exe]"
pod selfexe "    command: [/proc/self/exe, version]"
run selfexe
if pod_log selfexe | grep -q cubelet; then escaped "the container ran the runtime: $(pod_log selfexe)"
elif said selfexe "may not run the runtime"; then refused "the exec is refused"
else escaped "no refusal message: $(tail -3 "$tmp/selfexe.err")"; fi

# --- item 6: read-only volumes; item 9: /sys -------------------------------------------
attempt "read-only volume stays read-only (remount through the mount's fd)"
mkdir -p "$tmp/rovol"
pod rovol "    command: [sh, -c, 'touch /ro/x 2>/dev/null && echo WROTE; mount -o remount,rw /ro 2>/dev/null && echo REMOUNTED; echo done']
    volumeMounts: [{name: v, mountPath: /ro, readOnly: true}]" \
  "  volumes: [{name: v, hostPath: {path: $tmp/rovol}}]"
run rovol
out=$(pod_log rovol)
if ! grep -q done <<<"$out"; then escaped "did not run: $(tail -3 "$tmp/rovol.err")"
elif grep -qE 'WROTE|REMOUNTED' <<<"$out" || [ -e "$tmp/rovol/x" ]; then escaped "$out"
else refused "writes fail"; fi

attempt "sysfs: write the host's cgroupfs or sysfs"
pod sysfs "    command: [sh, -c, 'mkdir /sys/fs/cgroup/esc 2>/dev/null && echo MKDIR; echo 1 > /sys/kernel/mm/ksm/run 2>/dev/null && echo WROTE; grep -E \" /sys \" /proc/self/mounts; echo done']"
run sysfs
out=$(pod_log sysfs)
if ! grep -q done <<<"$out"; then escaped "did not run: $(tail -3 "$tmp/sysfs.err")"
elif grep -qE 'MKDIR|WROTE' <<<"$out" || ! grep -qE ' /sys sysfs ro,' <<<"$out"; then escaped "$out"
else refused "/sys is read-only"; fi

# --- item 15: io_uring under RuntimeDefault ---------------------------------------------
attempt "io_uring: io_uring_setup under seccomp RuntimeDefault"
mkdir -p "$tmp/bin"
if cat >"$tmp/uring.c" <<'EOF' && gcc -static -O1 -o "$tmp/bin/uring" "$tmp/uring.c" 2>/dev/null; then
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void)
{
        unsigned char params[120] = {0};
        long r = syscall(425 /* io_uring_setup */, 4, params);
        printf("io_uring_setup: %s\n", r < 0 ? strerror(errno) : "ok");
        return 0;
}
EOF
  pod uring "    command: [/t/uring]
    securityContext: {seccompProfile: {type: RuntimeDefault}}
    volumeMounts: [{name: t, mountPath: /t, readOnly: true}]" \
    "  volumes: [{name: t, hostPath: {path: $tmp/bin}}]"
  run uring
  out=$(pod_log uring)
  if grep -q 'io_uring_setup: Operation not permitted' <<<"$out"; then refused "EPERM"
  else escaped "got: $out $(tail -2 "$tmp/uring.err")"; fi
else
  echo "skipped: io_uring (no static libc to build the probe)"
  tried=$((tried - 1))
fi

# --- item 7: fields cubelet does not implement are refused, never dropped ---------------
attempt "fail open: hostUsers: false (the container would run with the host's identity)"
pod userns "    command: [sh, -c, 'echo started; cat /proc/self/uid_map']" "  hostUsers: false"
run userns
if pod_log userns | grep -q started; then escaped "the container ran without a user namespace: $(pod_log userns | tail -1)"
elif said userns "can't set \`spec.hostUsers: false\`, runtime does not support user namespaces"; then
  refused "$(grep -o '"reason":"[A-Za-z]*"' "$tmp/userns.jsonl" | head -1)"
else escaped "no refusal message: $(tail -3 "$tmp/userns.err")"; fi

attempt "fail open: mountPropagation: HostToContainer on a hostPath volume"
mkdir -p "$tmp/propvol"
pod prop "    command: [sh, -c, 'echo started']
    volumeMounts: [{name: v, mountPath: /v, mountPropagation: HostToContainer}]" \
  "  volumes: [{name: v, hostPath: {path: $tmp/propvol}}]"
run prop
if pod_log prop | grep -q started; then escaped "the container ran with a private mount instead"
elif said prop "mountPropagation: \\\"HostToContainer\\\": only None is implemented"; then refused "UnsupportedPodSpec"
else escaped "no refusal message: $(tail -3 "$tmp/prop.err") $(tail -1 "$tmp/prop.jsonl")"; fi

# --- item 14: container logs grow without bound ----------------------------------------
attempt "log flood fills the node disk (containerLogMaxSize / containerLogMaxFiles)"
# The container writes 1 KiB lines as fast as it can for 24 s and counts the
# MiB it wrote; the host samples its log directory meanwhile. The kubelet's
# rotation (1Mi, 3 files, a 3 s interval here) must keep at most 3 files,
# compress the older ones, and keep on disk what the container writes in a
# few intervals, however long it floods: at most half of what it wrote
# (without rotation: all of it).
mkdir -p "$tmp/floodbin" "$tmp/floodout"
cat >"$tmp/floodbin/flood.sh" <<'EOF'
line=$(head -c 1000 /dev/zero | tr '\0' a)
n=0
end=$(($(date +%s) + 24))
while [ "$(date +%s)" -lt "$end" ]; do
  yes "$line" | head -c 1048576
  n=$((n + 1))
  echo "$n" >/out/mib
done
EOF
pod flood "    command: [sh, /t/flood.sh]
    volumeMounts: [{name: t, mountPath: /t, readOnly: true}, {name: o, mountPath: /out}]" \
  "  volumes: [{name: t, hostPath: {path: $tmp/floodbin}}, {name: o, hostPath: {path: $tmp/floodout}}]"
(
  # the container's log directory every 0.5 s: files (not the .tmp of a
  # compression under way) and bytes
  for _ in $(seq 1 100); do
    d=$(ls -d "$logs"/default_flood_*/main 2>/dev/null | head -1 || true)
    [ -z "$d" ] || echo "$(find "$d" -type f ! -name '*.tmp' | wc -l) $(du -sb "$d" | cut -f1)"
    sleep 0.5
  done
) >"$tmp/flood.samples" &
sampler=$!
track $sampler
run flood --container-log-max-size 1Mi --container-log-max-files 3 --container-log-monitor-interval 3
kill "$sampler" 2>/dev/null || true
wait "$sampler" 2>/dev/null || true
d=$(ls -d "$logs"/default_flood_*/main 2>/dev/null | head -1)
wrote=$(cat "$tmp/floodout/mib" 2>/dev/null || echo 0)
maxfiles=$(sort -n "$tmp/flood.samples" | tail -1 | cut -d' ' -f1)
maxbytes=$(sort -k2 -n "$tmp/flood.samples" | tail -1 | cut -d' ' -f2)
nfiles=$(ls "$d" | wc -l)
ngz=$(find "$d" -name '*.gz' | wc -l)
gzok=0
for f in "$d"/*.gz; do
  [ -e "$f" ] || continue
  # (head ends zcat early: its SIGPIPE must not count under pipefail)
  first=$(zcat "$f" 2>/dev/null | head -n1 || true)
  grep -qE '^20[0-9-]+T[0-9:.]+Z stdout [FP] a+$' <<<"$first" && gzok=$((gzok + 1))
done
echo "  flood: wrote $wrote MiB (+ CRI framing) in 24 s; at most ${maxfiles:-0} files and $((${maxbytes:-0} >> 20)) MiB on disk; at the end: $(ls "$d" | paste -sd' ')"
if [ "${wrote:-0}" -lt 20 ]; then escaped "the flood wrote only ${wrote} MiB: $(tail -3 "$tmp/flood.err")"
# at any moment one more may exist: the new file of a rotation before the
# oldest goes, or the file being compressed beside its
# finished .gz until it is removed (the kubelet's compressLog does the same)
elif [ "${maxfiles:-9}" -gt 4 ] || [ "$nfiles" -gt 3 ]; then escaped "more than containerLogMaxFiles=3 files (+1 while compressing; at most ${maxfiles:-?} seen): $(ls "$d")"
elif [ "$ngz" -lt 1 ] || [ "$gzok" -ne "$ngz" ]; then escaped "older logs not gzip-compressed CRI logs ($ngz .gz, $gzok readable)"
elif [ $((maxbytes >> 20)) -ge $((wrote / 2)) ]; then escaped "the disk took $((maxbytes >> 20)) MiB of the $wrote MiB written"
else refused "at most 3 files, $((maxbytes >> 20)) MiB of $wrote MiB on disk"; fi

# --- item 5 (archive half): hostile image archives ---------------------------------------
# tar NAME KIND: an archive whose manifest.json is a FIFO, a device or a
# symlink to a host file
hostile_tar() {
  python3 - "$tmp/$1.tar" "$2" <<'EOF'
import sys, tarfile, io
path, kind = sys.argv[1], sys.argv[2]
with tarfile.open(path, "w") as t:
    ti = tarfile.TarInfo("manifest.json")
    if kind == "fifo":
        ti.type = tarfile.FIFOTYPE
    elif kind == "device":
        ti.type, ti.devmajor, ti.devminor = tarfile.CHRTYPE, 1, 5
    else:
        ti.type, ti.linkname = tarfile.SYMTYPE, "/etc/shadow"
    t.addfile(ti)
EOF
}
for kind in fifo device symlink; do
  attempt "image import: manifest.json is a $kind"
  hostile_tar "$kind" "$kind"
  set +e
  timeout 20 "$CUBELET" --root-dir "$root" image import "$tmp/$kind.tar" --name evil:1 \
    >"$tmp/import-$kind.out" 2>"$tmp/import-$kind.err"
  rc=$?
  set -e
  if [ $rc -eq 124 ]; then escaped "the import hangs"
  elif [ $rc -eq 0 ]; then escaped "the import succeeded"
  elif grep -qE 'not a regular file|not a file name|cannot open|refus|symlink|unsupported|not allowed' \
      "$tmp/import-$kind.err"; then refused "$(head -c 150 "$tmp/import-$kind.err")"
  else escaped "unexpected error: $(cat "$tmp/import-$kind.err")"; fi
done

# --- item 10 through the API: objects a compromised apiserver could serve ----------------
# The stand-in's test-only switch (tests/apiserver/README.md, "Hostile
# objects") stores pods exactly as given; the agent, bound to that node,
# must refuse each, write or remove nothing outside its directories, and
# keep its healthy pod running.
if command -v kubectl >/dev/null && [ -x /usr/bin/etcd ]; then
  NODE=it-escapes-$$
  export CUBELET_STANDIN_SERVE_HOSTILE_OBJECTS=1
  start_standin
  unset CUBELET_STANDIN_SERVE_HOSTILE_OBJECTS
  start_agent -v 2 --kubeconfig "$data/node.kubeconfig" --healthz-port 0 --node-status-update-frequency 1s
  poll 30 eval 'kubectl --kubeconfig "$data/admin.kubeconfig" get node "$NODE" >/dev/null 2>&1' ||
    die "node $NODE not registered"
  k() { kubectl --kubeconfig "$data/admin.kubeconfig" --request-timeout=20s "$@"; }
  k create -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: healthy, namespace: default}
spec:
  nodeName: $NODE
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: busybox:1.36, command: [sh, -c, 'echo up; while :; do sleep 1; done']}
EOF
  poll 60 eval '[ "$(k get pod healthy -o jsonpath={.status.phase} 2>/dev/null)" = Running ]' ||
    die "the healthy pod is not Running: $(tail -5 "$tmp/agent.log")"
  healthy_cid=$(k get pod healthy -o jsonpath='{.status.containerStatuses[0].containerID}')
  # hostile NAME JSON-SPEC-FRAGMENT [UID] [NAME-JSON]: a pod bound to the node as given
  victim=/tmp/cubelet-hostile-$$
  up=$(printf '../%.0s' $(seq 1 24))
  hostile() {
    python3 - "$1" "$2" "${3:-$(cat /proc/sys/kernel/random/uuid)}" "$NODE" "${4:-}" <<'EOF' >"$tmp/hostile.json"
import json, sys
name, spec, uid, node, rawname = sys.argv[1:6]
pod = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": name, "namespace": "default", "uid": uid,
                    "creationTimestamp": "2026-01-01T00:00:00Z"},
       "spec": dict({"nodeName": node, "hostNetwork": True, "restartPolicy": "Never"},
                    **json.loads(spec))}
if rawname:
    pod["metadata"]["name"] = json.loads(rawname)
print(json.dumps({"namespace": "default", "object": pod}))
EOF
    curl -sk -o "$tmp/hostile.out" -w '%{http_code}' --cacert "$data/ca.crt" \
      --cert "$data/admin.crt" --key "$data/admin.key" -H 'Content-Type: application/json' \
      --data-binary @"$tmp/hostile.json" "$standin_url/debug/hostile-objects"
  }
  C='"containers": [{"name": "main", "image": "busybox:1.36", "command": ["sh", "-c", "echo RAN; touch /x"]}]'
  # status of a hostile pod by name (those with a plain name)
  hstatus() { k get pod "$1" -o jsonpath='{.status.phase} {.status.reason} {.status.message}' 2>/dev/null; }
  hostile_case() { # NAME WANT-IN-MESSAGE SPEC [UID]
    local code
    code=$(hostile "$1" "$3" "${4:-}")
    [ "$code" = 201 ] || { escaped "the stand-in did not store $1: $code $(cat "$tmp/hostile.out")"; return; }
    # the agent's own word (its status PATCH may not land: the stand-in
    # validates the whole object on a status update, as it should)
    hn=$1
    if poll 20 eval 'grep -q "pod default/$hn: rejected: InvalidPod: " "$tmp/agent.log"'; then
      line=$(grep "pod default/$hn: rejected: InvalidPod: " "$tmp/agent.log" | head -1)
      if grep -qF -- "$2" <<<"$line"; then refused "$(cut -c1-160 <<<"${line#*rejected: }")"
      else escaped "refused, but the message lacks \"$2\": $line"; fi
    else escaped "not refused: '$(hstatus "$1")' $(grep "$hn" "$tmp/agent.log" | tail -2)"; fi
  }
  attempt "hostile apiserver: a pod uid of ${up}tmp/cubelet-hostile-PID"
  hostile_case evil-uid 'metadata.uid: Invalid value' "{$C, \"volumes\": [{\"name\": \"v\", \"emptyDir\": {}}]}" "${up}${victim#/}"
  attempt "hostile apiserver: a container name with '/'"
  hostile_case evil-cname 'spec.containers[0].name: Invalid value' \
    "{\"containers\": [{\"name\": \"a/${up}${victim#/}-c\", \"image\": \"busybox:1.36\"}]}"
  attempt "hostile apiserver: a volume name with '/'"
  hostile_case evil-vname 'spec.volumes[0].name: Invalid value' \
    "{$C, \"volumes\": [{\"name\": \"v/${up}${victim#/}-v\", \"emptyDir\": {}}]}"
  attempt "hostile apiserver: 300 containers (the decoder's limit is 256)"
  many=$(python3 -c 'import json; print(json.dumps({"containers": [{"name": "c%d" % i, "image": "busybox:1.36"} for i in range(300)]}))')
  nctr=$(ls "$root/containers" 2>/dev/null | wc -l)
  code=$(hostile evil-many "$many")
  poll 10 eval 'grep -q "evil-many\|300 items\|at most 256" "$tmp/agent.log"' || true
  if [ "$code" != 201 ]; then escaped "the stand-in did not store it: $code"
  elif [[ "$(hstatus evil-many)" == Running* ]]; then escaped "evil-many runs"
  elif [ "$(ls "$root/containers" 2>/dev/null | wc -l)" -gt "$nctr" ]; then
    escaped "containers were made: $(ls "$root/containers")"
  else refused "not run ($(hstatus evil-many | cut -c1-80)); $(grep -oE '[^]]*(at most|too many)[^"]{0,60}' "$tmp/agent.log" | head -1)"; fi
  attempt "hostile apiserver: a pod name with NUL (web\\u0000../x)"
  code=$(hostile evil-nul "{$C}" "" '"web\u0000../x"')
  sleep 3
  if [ "$code" != 201 ]; then escaped "the stand-in did not store it: $code $(cat "$tmp/hostile.out")"
  elif grep -q 'RAN' "$logs"/default_web*/main/0.log 2>/dev/null; then escaped "the NUL pod ran"
  else refused "not run; $(grep -ciE 'NUL|\\\\u0000' "$tmp/agent.log") agent log line(s) about it"; fi

  attempt "hostile apiserver: the node survives (no write outside, healthy pod untouched)"
  sleep 2
  leaked=$(ls -d "$victim"* "$(dirname "$root")"/x* 2>/dev/null || true)
  now_cid=$(k get pod healthy -o jsonpath='{.status.containerStatuses[0].containerID}')
  if ! kill -0 "$agent_pid" 2>/dev/null; then escaped "the agent died: $(tail -5 "$tmp/agent.log")"
  elif [ -n "$leaked" ]; then escaped "written outside the root dir: $leaked"
  elif [ "$(k get pod healthy -o jsonpath={.status.phase})" != Running ] || [ "$now_cid" != "$healthy_cid" ]; then
    escaped "the healthy pod was disturbed: $(k get pod healthy -o jsonpath='{.status.phase} {.status.containerStatuses[0].restartCount}')"
  else refused "agent alive, nothing under $victim*, healthy pod Running with the same container"; fi
  # While a pod with a NUL in its name is served, every list and watch
  # event carrying it is refused whole (cJSON would cut the name short), so
  # the node sees no other change either; once the apiserver stops serving
  # it, the node catches up.
  curl -sk -o /dev/null -X DELETE --cacert "$data/ca.crt" --cert "$data/admin.crt" \
    --key "$data/admin.key" "$standin_url/debug/hostile-objects" || true
  k delete pod healthy --wait=false >/dev/null 2>&1 || true
  # Not an escape claim (the healthy pod was untouched, checked above), so
  # not a failure: a node that does not catch up is reported (open, issue 16).
  poll 60 eval '! k get pod healthy >/dev/null 2>&1' ||
    echo "note: the healthy pod's deletion was not seen within 60 s of the hostile objects' removal"
  stop_agent
else
  echo "skipped: hostile objects through the API (needs kubectl and etcd)"
fi

sanitizer_findings "$tmp"/*.err || fails=$((fails + 1))
echo "escape attempts: $tried tried, $refused refused"
if [ $fails -gt 0 ] || [ $refused -ne $tried ]; then
  echo "$fails check(s) failed"
  exit 1
fi
echo "escapes: all attempts refused"
