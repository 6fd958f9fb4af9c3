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
. "$H_LIB/escape_attempts.sh"

# The mount and exec attempts (tests/integration/lib/escape_attempts.sh,
# also run in the cgroup v2 VM by cgroupv2_qemu.sh).
esc_tars=$tmp/tars
escape_make_tars "$esc_tars"
escape_run "$escape_mount_exec"
escape_run "$escape_host_only"

# --- item 5 (user lookup half): the image's /etc/passwd and /etc/group ------------------
# An image whose /etc/group is a FIFO (an open without O_NONBLOCK would
# block until a writer comes) and whose /etc/passwd is a symlink to the
# host's /etc/shadow, with USER evil:evil (evil:1) and 0:evil (evil:2):
# cubelet reads them, off the loop, resolved in the image's merged layers,
# regular files only. The starts must be refused at once with the reason
# and a message that names the file, no reader may wait on the FIFO, the
# host's shadow must reach no status, event or container, and a container
# of the same image given numeric ids runs as them (it reads no name: a
# process in it that looks one up, busybox id, would block on the FIFO in
# the container, as it would under runc; that is the image's own process).
attempt "image user lookup: /etc/group a FIFO, /etc/passwd a symlink to the host's /etc/shadow"
evil_image() { # TAG USER
  local l=$tmp/evil-$1
  rm -rf "$l" "$tmp/evil-b"
  cp -a "$tmp/img/layout" "$l"
  umoci unpack --image "$l:1.36" "$tmp/evil-b" >/dev/null
  rm -f "$tmp/evil-b/rootfs/etc/group" "$tmp/evil-b/rootfs/etc/passwd"
  mkfifo "$tmp/evil-b/rootfs/etc/group"
  ln -s /etc/shadow "$tmp/evil-b/rootfs/etc/passwd"
  umoci repack --image "$l:1.36" "$tmp/evil-b" >/dev/null
  umoci config --image "$l:1.36" --config.user "$2" >/dev/null
  umoci gc --layout "$l"
  tar -C "$l" -cf "$l.tar" .
  "$CUBELET" --root-dir "$root" image import "$l.tar" --name "evil:$1" >/dev/null
}
if evil_image 1 evil:evil && evil_image 2 0:evil; then
  {
    pod_head evilusers
    printf '  - name: byname\n    image: evil:1\n    command: [sh, -c, "cat /etc/passwd; echo started"]\n'
    printf '  - name: group\n    image: evil:2\n    command: [sh, -c, "cat /etc/passwd; echo started"]\n'
    printf '  - name: numeric\n    image: evil:1\n    command: [sh, -c, "grep -E \\"^[UG]id:\\" /proc/self/status | tr -s \\"\\\\t\\" \\" \\"; cat /etc/passwd 2>&1; echo done"]\n'
    printf '    securityContext: {runAsUser: 1000, runAsGroup: 1000}\n'
  } >"$tmp/evilusers.yaml"
  run_pod_cmd "$tmp/evilusers.yaml"
  t0=$(date +%s.%N)
  "${pod_argv[@]}" >"$tmp/evilusers.jsonl" 2>"$tmp/evilusers.err" &
  evil_pid=$!
  track $evil_pid
  # both refusals in the status (a CreateContainerConfigError is retried,
  # as the kubelet does: the pod stays Pending, so run-pod is stopped here)
  wstate() { tail -n 20 "$tmp/evilusers.jsonl" 2>/dev/null | jq -r --arg c "$1" \
    'select(.status) | .status.containerStatuses[]? | select(.name == $c) | .state.waiting | select(.reason) | "\(.reason): \(.message)"' 2>/dev/null | tail -1; }
  poll 20 eval '[ -n "$(wstate byname)" ] && [ -n "$(wstate group)" ] && grep -q done "$logs"/default_evilusers_*/numeric/0.log 2>/dev/null' || true
  took=$(since "$t0")
  # read before the stop below: the statuses of the shutdown come after
  by=$(wstate byname)
  gr=$(wstate group)
  # no one waits to read a FIFO of the image (a writer's non-blocking open
  # fails with ENXIO unless a reader has it open)
  readers=$(find "$root" -type p -print0 2>/dev/null | python3 -c '
import os, sys
n = 0
for p in sys.stdin.read().split("\0"):
    if not p:
        continue
    try:
        os.close(os.open(p, os.O_WRONLY | os.O_NONBLOCK)); n += 1
    except OSError:
        pass
print(n)')
  kill -TERM "$evil_pid" 2>/dev/null || true
  stopped=no
  poll 15 eval '! kill -0 $evil_pid 2>/dev/null' && stopped=yes
  wait "$evil_pid" 2>/dev/null || true
  num=$(pod_log evilusers numeric)
  shadow_leak=no
  # any password hash or account line of the host's shadow file
  while IFS=: read -r user hash _; do
    [ -n "$user" ] || continue
    for f in "$tmp/evilusers.jsonl" "$tmp/evilusers.err" "$logs"/default_evilusers_*/*/0.log; do
      [ -f "$f" ] || continue
      if { [ ${#hash} -gt 2 ] && grep -qF -- "$hash" "$f"; } || qgrep -F -- "$user:$hash:" "$f"; then shadow_leak=yes; fi
    done
  done </etc/shadow
  if pod_log evilusers byname | qgrep started || pod_log evilusers group | qgrep started; then
    escaped "a container ran with the image's user: $(pod_log evilusers byname) $(pod_log evilusers group)"
  elif [ $shadow_leak = yes ]; then escaped "the host's /etc/shadow reached the pod's output or status"
  elif noreason=$(jq -r 'select(.status) | .status.containerStatuses[]? | select(.state.waiting != null and .state.waiting.reason == null) | .name' "$tmp/evilusers.jsonl" 2>/dev/null | sort -u | paste -sd,) && [ -n "$noreason" ]; then
    # the kubelet never sends one; a retry that reads the image's files off
    # the loop keeps the last attempt's reason meanwhile
    escaped "a status with a waiting state without a reason for $noreason"
  elif [ "$by" != "CreateContainerConfigError: unable to find user evil: no matching entries in passwd file" ]; then
    escaped "by name: '$by' $(tail -3 "$tmp/evilusers.err")"
  elif [ "$gr" != "CreateContainerConfigError: unable to find group evil: /etc/group in image docker.io/library/evil:2 is a FIFO, not a regular file; make /etc/group a regular file in the image, or set a numeric runAsGroup" ]; then
    escaped "group: '$gr' $(tail -3 "$tmp/evilusers.err")"
  elif ! grep -q '^Uid: 1000 1000 1000 1000$' <<<"$num" || ! grep -q '^Gid: 1000 1000 1000 1000$' <<<"$num" || ! grep -q '^done$' <<<"$num"; then
    escaped "the numeric-id container: $num $(tail -3 "$tmp/evilusers.err")"
  elif ! fle "$took" 10; then escaped "the refusals took ${took}s"
  elif [ "$readers" != 0 ]; then escaped "$readers FIFO(s) of the image have a reader waiting"
  elif [ $stopped != yes ]; then escaped "run-pod did not stop on SIGTERM within 15 s"
  else refused "refused in ${took}s: '${gr#*: }'; numeric ids ran as 1000:1000 with $(grep -c . <<<"$num") line(s) of output, no FIFO reader, no shadow content"; fi
else
  escaped "could not build the hostile images"
fi

# --- item 15: io_uring and what RuntimeDefault blocks; --seccomp-default ---------------
# A static probe (built here; busybox has no io_uring tool) tries
# io_uring_setup, unshare(CLONE_NEWUSER) and keyctl (the session keyring):
# under RuntimeDefault, and with no seccompProfile on a run started with
# --seccomp-default, each must fail with EPERM; with no profile and no flag
# the container is Unconfined, as under the kubelet (the positive control:
# the same probe gets through there).
mkdir -p "$tmp/bin"
if cat >"$tmp/uring.c" <<'EOF' && gcc -static -O1 -o "$tmp/bin/uring" "$tmp/uring.c" 2>/dev/null; then
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
static void say(const char *what, long r)
{
        printf("%s: %s\n", what, r < 0 ? strerror(errno) : "ok");
}
int main(void)
{
        unsigned char params[120] = {0};
        say("io_uring_setup", syscall(425 /* io_uring_setup */, 4, params));
        say("keyctl", syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3 /* session */, 1));
        say("unshare", syscall(SYS_unshare, 0x10000000 /* CLONE_NEWUSER */));
        return 0;
}
EOF
  probe_pod() { # NAME [SECCOMP-TYPE]
    local sc=""
    [ -z "${2:-}" ] || sc="
    securityContext: {seccompProfile: {type: $2}}"
    pod "$1" "    command: [/t/uring]$sc
    volumeMounts: [{name: t, mountPath: /t, readOnly: true}]" \
      "  volumes: [{name: t, hostPath: {path: $tmp/bin}}]"
  }
  all_eperm() { [ "$(grep -c ': Operation not permitted$' <<<"$1")" = 3 ]; }
  attempt "io_uring: io_uring_setup (and unshare, keyctl) under seccomp RuntimeDefault"
  probe_pod uring RuntimeDefault
  run uring
  out=$(pod_log uring || true)
  if all_eperm "$out"; then refused "EPERM for all three"
  else escaped "got: $out $(tail -2 "$tmp/uring.err")"; fi
  attempt "seccomp-default: no seccompProfile on a run with --seccomp-default (io_uring_setup, unshare, keyctl)"
  probe_pod usd
  run usd --seccomp-default
  out=$(pod_log usd || true)
  probe_pod unconf
  run unconf
  ctl=$(pod_log unconf || true)
  if ! all_eperm "$out"; then escaped "with --seccomp-default: $out $(tail -2 "$tmp/usd.err")"
  elif ! grep -q '^io_uring_setup: ok$' <<<"$ctl" || ! grep -q '^keyctl: ok$' <<<"$ctl"; then
    escaped "the positive control (no profile, no flag: Unconfined) did not get through: $ctl"
  else refused "EPERM for all three; without the flag (Unconfined): $(tr '\n' ' ' <<<"$ctl")"; fi
else
  echo "skipped: io_uring and --seccomp-default (no static libc to build the probe)"
fi

# --- item 7: fields cubelet does not implement are refused, never dropped ---------------
attempt "fail open: hostUsers: false (the container would run with the host's identity)"
pod userns "    command: [sh, -c, 'echo started; cat /proc/self/uid_map']" "  hostUsers: false"
run userns
if pod_log userns | qgrep started; then escaped "the container ran without a user namespace: $(pod_log userns | tail -1)"
elif said userns "can't set \`spec.hostUsers: false\`, runtime does not support user namespaces"; then
  refused "$(grep -o '"reason":"[A-Za-z]*"' "$tmp/userns.jsonl" | head -1)"
else escaped "no refusal message: $(tail -3 "$tmp/userns.err")"; fi


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
  hport=$(free_port)
  nport=$(free_port)
  echo "tok-$$-secret,esc-tester,1" >"$tmp/tokens.csv"
  start_agent -v 2 --kubeconfig "$data/node.kubeconfig" --healthz-port "$hport" --address 127.0.0.1 --port "$nport" --authentication-token-file "$tmp/tokens.csv" --node-status-update-frequency 1s
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
  # --- item 12: the node API against a hostile client (here on loopback) -----------------
  # (the slowloris half is node_api.sh "4b": 300 idle connections, the Lease)
  attempt "node API: a TLS 1.1 handshake and a request without credentials"
  tls11=0
  echo | timeout 10 openssl s_client -tls1_1 -cipher 'DEFAULT:@SECLEVEL=0' -connect "127.0.0.1:$nport" >"$tmp/tls11.out" 2>&1 || tls11=$?
  tls12=0
  echo | timeout 10 openssl s_client -tls1_2 -connect "127.0.0.1:$nport" >"$tmp/tls12.out" 2>&1 || tls12=$?
  anon=$(curl -sk -o /dev/null -w '%{http_code}' "https://127.0.0.1:$nport/pods" || true)
  authd=$(curl -sk -o /dev/null -w '%{http_code}' -H "Authorization: Bearer tok-$$-secret" "https://127.0.0.1:$nport/pods" || true)
  # (s_client exits 0 even when the handshake fails: the cipher line says)
  if grep -qE 'Cipher is [^(]' "$tmp/tls11.out"; then escaped "a TLS 1.1 session was made: $(grep -m2 -E 'Protocol|Cipher' "$tmp/tls11.out")"
  elif [ $tls12 -ne 0 ] || ! grep -qE 'Cipher is [^(]' "$tmp/tls12.out"; then escaped "the positive control (TLS 1.2) failed: $(tail -2 "$tmp/tls12.out")"
  elif [ "$anon" != 401 ]; then escaped "an anonymous request got $anon"
  elif [ "$authd" != 200 ]; then escaped "the positive control (the token) got $authd"
  else refused "TLS 1.1 refused (TLS 1.2 served), anonymous 401 (the token 200)"; fi

  # Bodies the node API never asked for: a POST with a Content-Length of
  # 1 GiB, or chunked, streaming up to 64 MiB to /exec, /run, /portForward
  # and a path that does not exist, twice at once, while the Lease must be
  # renewed. Each gets one answer and is closed (every response closes its
  # connection; at most AG_NAPI_DISCARD_MAX, 256 KiB, more is read and
  # dropped), so a connection takes far less than 64 MiB; the agent's peak
  # RSS stays within 64 MiB of before. The kubelet (Go net/http) answers
  # such requests too and closes a connection with more than 256 KiB of
  # unread body.
  attempt "node API: request bodies streamed to /exec, /run, /portForward and an unknown path (Content-Length 1 GiB, chunked; 64 MiB each)"
  lease_rt() { kubectl --kubeconfig "$data/admin.kubeconfig" -n kube-node-lease get lease "$NODE" -o jsonpath='{.spec.renewTime}' 2>/dev/null; }
  st_kib() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/status"; }
  rt0=$(lease_rt)
  echo 5 >"/proc/$agent_pid/clear_refs" # VmHWM from here
  frss0=$(st_kib "$agent_pid" VmRSS)
  fpaths="/exec/default/healthy/main?command=id&output=1 /run/default/healthy/main?cmd=id /portForward/default/healthy /no/such/path"
  # shellcheck disable=SC2086
  python3 "$H_LIB/bodyflood.py" "$nport" "tok-$$-secret" flood $fpaths >"$tmp/flood1.out" 2>&1 &
  f1=$!
  # shellcheck disable=SC2086
  python3 "$H_LIB/bodyflood.py" "$nport" "tok-$$-secret" flood $fpaths >"$tmp/flood2.out" 2>&1 &
  f2=$!
  track $f1 $f2
  renewed=no
  poll 30 eval '[ "$(lease_rt)" != "$rt0" ]' && renewed=yes
  wait $f1 $f2 || true
  fhwm=$(st_kib "$agent_pid" VmHWM)
  frss1=$(st_kib "$agent_pid" VmRSS)
  sed 's/^/  flood: /' "$tmp/flood1.out"
  nlines=$(cat "$tmp/flood1.out" "$tmp/flood2.out" | grep -c ' sent=' || true)
  maxsent=$(cat "$tmp/flood1.out" "$tmp/flood2.out" | grep -o 'sent=[0-9]*' | cut -d= -f2 | sort -n | tail -1)
  # (an answer may be lost to the reset of a close with unread bytes; a
  # connection closed before its answer is as good)
  bad=$(cat "$tmp/flood1.out" "$tmp/flood2.out" | grep ' sent=' | grep -vE ' responses=[01] .* closed=yes$' || true)
  echo "  flood: at most $((${maxsent:-0} >> 10)) KiB sent on one connection; agent RSS ${frss0} -> ${frss1} KiB, peak ${fhwm} KiB"
  if [ "$nlines" != 16 ]; then escaped "the flood client ran $nlines of 16 requests: $(tail -3 "$tmp/flood1.out" "$tmp/flood2.out")"
  elif [ -n "$bad" ]; then escaped "more than one answer, or not closed: $bad"
  elif [ "${maxsent:-0}" -ge $((64 << 20)) ]; then escaped "a connection took the whole 64 MiB"
  elif [ $((fhwm - frss0)) -gt 65536 ]; then escaped "peak RSS ${fhwm} KiB, ${frss0} KiB before"
  elif [ $renewed != yes ]; then escaped "the Lease was not renewed during the flood (renewTime $rt0)"
  elif ! kill -0 "$agent_pid" 2>/dev/null; then escaped "the agent died: $(tail -5 "$tmp/agent.log")"
  else refused "16 requests: at most one answer each ($(cat "$tmp/flood1.out" "$tmp/flood2.out" | grep -c ' responses=1 ') answered), closed after at most $((maxsent >> 10)) KiB; RSS ${frss0} -> ${frss1} KiB (peak +$(((fhwm - frss0) >> 10)) MiB); Lease renewed"; fi
  attempt "node API: a request hidden in a body (Content-Length, chunked, CL.TE, under an unauthenticated request, pipelined)"
  python3 "$H_LIB/bodyflood.py" "$nport" "tok-$$-secret" smuggle >"$tmp/smuggle.out" 2>&1 || true
  sed 's/^/  smuggle: /' "$tmp/smuggle.out"
  if [ "$(grep -c ' responses=1 .* closed=yes$' "$tmp/smuggle.out")" != 5 ]; then
    escaped "a hidden request was answered, or a connection stayed open: $(grep -v ' responses=1 .* closed=yes$' "$tmp/smuggle.out")"
  elif ! grep -q '^/pods-anon+CL .* status=HTTP/1.1 401' "$tmp/smuggle.out"; then
    # (the hidden request's Authorization was merged into the outer head)
    escaped "the unauthenticated outer request was not 401: $(grep pods-anon "$tmp/smuggle.out")"
  elif ! grep -q '^/healthz+pipelined .* status=HTTP/1.1 200' "$tmp/smuggle.out"; then
    # (the pipelined request's path was appended to /healthz)
    escaped "the outer GET /healthz was not answered as itself: $(grep pipelined "$tmp/smuggle.out")"
  else refused "5 connections, one answer each (the outer request's), then closed"; fi

  # --- item 13: the local endpoint from a hostNetwork pod ---------------------------------
  # A hostNetwork pod is on the node's loopback: without the token (it
  # cannot read <root-dir>/endpoint.token) /pods, /timelines and /ui must
  # answer 401; /healthz and /metrics, the open paths, answer.
  attempt "local endpoint: /pods, /timelines, /ui from a hostNetwork pod on loopback without the token"
  k create -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: ep, namespace: default}
spec:
  nodeName: $NODE
  hostNetwork: true
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'for p in pods timelines ui "ui?token=x" healthz metrics; do echo "\$p: \$(printf "GET /\$p HTTP/1.0\r\n\r\n" | nc -w 5 127.0.0.1 $hport | head -1)"; done; printf "GET /pods HTTP/1.0\r\nAuthorization: Bearer x\r\n\r\n" | nc -w 5 127.0.0.1 $hport | head -1 | sed "s/^/nc: /"; echo done']
EOF
  poll 60 eval 'grep -q done "$logs"/default_ep_*/main/0.log 2>/dev/null' || true
  ep=$(pod_log ep)
  echo "$ep" | sed 's/^/  ep: /'
  want401='^(pods|timelines|ui|ui\?token=x): HTTP/1\.[01] 401 '
  if [ "$(grep -cE "$want401" <<<"$ep")" != 4 ] || ! grep -qE '^nc: HTTP/1\.[01] 401 ' <<<"$ep"; then
    escaped "a guarded path answered without the token: $ep"
  elif ! grep -qE '^healthz: HTTP/1\.[01] 200 ' <<<"$ep" || ! grep -qE '^metrics: HTTP/1\.[01] 200 ' <<<"$ep"; then
    escaped "the open paths (the positive control) did not answer 200: $ep"
  else refused "401 for /pods, /timelines, /ui (a wrong token too); /healthz and /metrics 200"; fi

  # hostile NAME JSON-SPEC-FRAGMENT [UID] [NAME-JSON]: a pod bound to the node as given
  victim=/tmp/cubelet-hostile-$$
  up=$(printf '../%.0s' $(seq 1 24))
  hostile() {
    python3 - "$1" "$2" "${3:-$(cat /proc/sys/kernel/random/uuid)}" "$NODE" "${4:-}" <<'EOF' >"$tmp/hostile.json"
import json, os, sys
name, spec, uid, node, rawname = sys.argv[1:6]
pod = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": name, "namespace": "default", "uid": uid,
                    "creationTimestamp": "2026-01-01T00:00:00Z"},
       "spec": dict({"nodeName": node, "hostNetwork": True, "restartPolicy": "Never"},
                    **json.loads(spec))}
if rawname:
    pod["metadata"]["name"] = json.loads(rawname)
# HFILL: the stand-in grows the object past a request body's 3 MiB
print(json.dumps({"namespace": "default", "object": pod,
                  "fill": json.loads(os.environ.get("HFILL") or "[]")}))
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
  nulmsg='web\u0000../x (uid '
  poll 20 eval 'grep -qF "$nulmsg" "$tmp/agent.log"' || true
  if [ "$code" != 201 ]; then escaped "the stand-in did not store it: $code $(cat "$tmp/hostile.out")"
  elif grep -q 'RAN' "$logs"/default_web*/main/0.log 2>/dev/null; then escaped "the NUL pod ran"
  elif ! grep -F "$nulmsg" "$tmp/agent.log" | qgrep -F 'metadata.name: a NUL character (\u0000) in a string; the object is refused'; then
    escaped "no refusal of the pod alone logged: $(grep -iE 'NUL|u0000' "$tmp/agent.log" | tail -2)"
  else refused "not run; refused alone: $(grep -F "$nulmsg" "$tmp/agent.log" | head -1 | cut -c1-200)"; fi

  # --- item 11: hostile sizes through the API ---------------------------------------------
  # kube-apiserver never lets these through (a request body is at most
  # 3 MiB, an object in etcd 1.5 MiB, a pod's env and names are validated):
  # the stand-in's fill grows them in place. The agent must refuse each,
  # alone, naming the pod, the field and the limit; its peak RSS (VmHWM)
  # must stay within 96 MiB of its RSS before them (384 MiB under ASan).
  echo 5 >"/proc/$agent_pid/clear_refs"
  rss0=$(st_kib "$agent_pid" VmRSS)
  hwm0=$(st_kib "$agent_pid" VmHWM)
  big_case() { # NAME WANT-IN-LOG SPEC FILL
    local code
    code=$(HFILL=$4 hostile "$1" "$3")
    [ "$code" = 201 ] || { escaped "the stand-in did not store $1: $code $(head -c 300 "$tmp/hostile.out")"; return; }
    hn=$1
    if poll 30 eval 'grep "default/${hn}[ :]" "$tmp/agent.log" | qgrep "refused"'; then
      line=$(grep "default/${hn}[ :]" "$tmp/agent.log" | grep -m1 "refused" | cut -c1-400)
      if ! grep -qF -- "$2" <<<"$line"; then escaped "refused, but the message lacks \"$2\": $line"
      elif ls "$logs"/default_"$hn"_* >/dev/null 2>&1; then escaped "$hn got a log directory: something ran"
      else refused "$(cut -c1-260 <<<"${line#*cubelet] }")"; fi
    else escaped "not refused: '$(hstatus "$1")' $(grep "$hn" "$tmp/agent.log" | tail -2 | cut -c1-300)"; fi
  }
  attempt "hostile apiserver: 100000 containers (4.6 MB; kube-apiserver's body limit is 3 MiB)"
  big_case evil-100k 'spec.containers: 100000 items exceed the limit of 256' '{"containers": []}' \
    '[{"path": "spec.containers", "count": 100000, "item": {"name": "c{i}", "image": "busybox:1.36"}}]'
  attempt "hostile apiserver: a 10 MiB env (40 values of 256 KiB)"
  big_case evil-env 'bytes exceed the limit of 8388608 bytes for one object' "{$C}" \
    '[{"path": "spec.containers.0.env", "count": 40, "item": {"name": "E{i}", "value": "{x*262144}"}}]'
  attempt "hostile apiserver: 10000 volumes"
  big_case evil-vols 'spec.volumes: 10000 items exceed the limit of 4096' "{$C}" \
    '[{"path": "spec.volumes", "count": 10000, "item": {"name": "v{i}", "emptyDir": {}}}]'
  attempt "hostile apiserver: an env value with NUL (\\u0000)"
  big_case evil-envnul 'spec.containers[0].env[0].value: a NUL character' \
    '{"containers": [{"name": "main", "image": "busybox:1.36", "command": ["sh", "-c", "echo RAN"], "env": [{"name": "A", "value": "x\u0000y"}]}]}' '[]'
  attempt "hostile apiserver: the agent's memory stays bounded through the hostile sizes"
  # (ASan's quarantine and shadow memory hold far more of what was freed)
  # (the quarantine keeps what was freed: under ASan "kept" is the bound)
  bound=98304
  kept=32768
  grep -qa __asan_init "$CUBELET" && bound=393216 && kept=$bound
  # (what it keeps once the refusals are done: a relist under way may
  # still hold the list for a moment)
  poll 15 eval '[ $(($(st_kib "$agent_pid" VmRSS) - rss0)) -le "$kept" ]' || true
  rss1=$(st_kib "$agent_pid" VmRSS)
  hwm1=$(st_kib "$agent_pid" VmHWM)
  echo "  agent RSS: ${rss0} KiB before, ${rss1} KiB after, peak ${hwm1} KiB (peak before ${hwm0} KiB; bound +${bound} KiB)"
  if [ -z "$rss1" ]; then escaped "the agent died: $(tail -5 "$tmp/agent.log")"
  elif [ $((hwm1 - rss0)) -gt "$bound" ]; then escaped "peak RSS ${hwm1} KiB, ${rss0} KiB before: more than +${bound} KiB"
  elif [ $((rss1 - rss0)) -gt "$kept" ]; then escaped "RSS ${rss1} KiB after, ${rss0} KiB before: kept more than ${kept} KiB"
  else refused "RSS ${rss0} -> ${rss1} KiB, peak ${hwm1} KiB (+$(((hwm1 - rss0) / 1024)) MiB of the ${bound} KiB bound)"; fi

  attempt "hostile apiserver: the node survives (no write outside, healthy pod untouched)"
  sleep 2
  leaked=$(ls -d "$victim"* "$(dirname "$root")"/x* 2>/dev/null || true)
  now_cid=$(k get pod healthy -o jsonpath='{.status.containerStatuses[0].containerID}')
  if ! kill -0 "$agent_pid" 2>/dev/null; then escaped "the agent died: $(tail -5 "$tmp/agent.log")"
  elif [ -n "$leaked" ]; then escaped "written outside the root dir: $leaked"
  elif [ "$(k get pod healthy -o jsonpath={.status.phase})" != Running ] || [ "$now_cid" != "$healthy_cid" ]; then
    escaped "the healthy pod was disturbed: $(k get pod healthy -o jsonpath='{.status.phase} {.status.containerStatuses[0].restartCount}')"
  else refused "agent alive, nothing under $victim*, healthy pod Running with the same container"; fi
  # A pod with a NUL in its name is refused alone (agent/client/reflector.c,
  # object_new): while the apiserver still serves it, in every list and
  # the watch, the node goes on with its other pods, as the kubelet would.
  attempt "hostile apiserver: a pod with NUL does not blind the node (the healthy pod's deletion seen while it is served)"
  k delete pod healthy --wait=false >/dev/null 2>&1 || true
  if poll 60 eval '! k get pod healthy >/dev/null 2>&1'; then
    refused "deleted normally; $(grep -cF "$nulmsg" "$tmp/agent.log") line(s) refusing the NUL pod alone"
  else escaped "the healthy pod's deletion was not carried out within 60 s: $(grep -iE 'NUL|list|watch' "$tmp/agent.log" | tail -3)"; fi
  curl -sk -o /dev/null -X DELETE --cacert "$data/ca.crt" --cert "$data/admin.crt" \
    --key "$data/admin.key" "$standin_url/debug/hostile-objects" || true
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
