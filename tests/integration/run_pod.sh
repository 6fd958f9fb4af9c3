#!/usr/bin/env bash
# Drives the real `cubelet run-pod` with a busybox image, CNI (bridge,
# host-local, portmap) and cgroups under a private parent: phase
# transitions, exit codes and reasons, restarts with CrashLoopBackOff,
# init containers and emptyDir, admission rejection, graceful stop on
# SIGTERM, the OOM killer, a read-only root, the pod IP, CRI logs, the
# process's supplementary groups against the status's; and that
# nothing is left behind afterwards.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
need_root
need_tools jq umoci ip iptables busybox
need_cni bridge
harness_init runpod

import_busybox
write_cni_conf portmap

# run NAME [extra run-pod flags]: runs $tmp/NAME.yaml; sets rc and writes
# $tmp/NAME.jsonl (status lines) and $tmp/NAME.err (events, -v=1).
run() {
  local name=$1
  shift
  set +e
  run_pod_cmd "$tmp/$name.yaml" "$@"
  timeout 120 "${pod_argv[@]}" >"$tmp/$name.jsonl" 2>"$tmp/$name.err"
  rc=$?
  set -e
}
# The status lines (the last line of a finished run is the pod's timeline).
last() { jq -c 'select(.status)' "$tmp/$1.jsonl" | tail -n1 | jq -r "$2"; }
expect_last() {
  local got
  got=$(last "$1" "$2")
  [ "$got" == "$3" ] || fail "$1: $2 = '$got', want '$3'"
}
pod_log() { cat "$tmp"/logs/default_"$1"_*/"$2"/"${3:-0}".log; }

# --- Pending -> Running -> Succeeded ----------------------------------------
cat >"$tmp/ok.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: ok}
spec:
  restartPolicy: Never
  hostname: custom-host
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c]
    # $$$$ reaches the shell as $$ (Kubernetes expansion): the shell is PID 1.
    args: ['echo "host=$(hostname) pid=$$$$ msg=$(MSG)"; echo to-stderr >&2; echo procs=$(ls /proc | grep -c "^[0-9]"); grep -q "custom-host" /etc/hosts && echo has-pod-ip']
    env: [{name: MSG, value: hello}]
    resources: {requests: {memory: 16Mi}, limits: {memory: 64Mi}}
EOF
run ok
[ $rc -eq 0 ] || fail "ok: exit $rc, want 0 ($(tail -3 "$tmp/ok.err"))"
phases=$(jq -r 'select(.status) | .status.phase' "$tmp/ok.jsonl" | uniq | paste -sd,)
[ "$phases" == "Pending,Running,Succeeded" ] || fail "ok: phases $phases, want Pending,Running,Succeeded"
expect_last ok '.status.containerStatuses[0].state.terminated.reason' Completed
expect_last ok '.status.containerStatuses[0].state.terminated.exitCode' 0
expect_last ok '.status.containerStatuses[0].containerID | test("^cubelet://[0-9a-f]{32}$")' true
expect_last ok '.status.containerStatuses[0].imageID | test("^docker.io/library/busybox@sha256:")' true
expect_last ok '.status.qosClass' Burstable
expect_last ok ".status.podIP | startswith(\"${subnet%.0/24}.\")" true
expect_last ok '[.status.conditions[].type] | join(",")' \
  PodReadyToStartContainers,Initialized,Ready,ContainersReady,PodScheduled
expect_last ok '(.status.conditions[] | select(.type=="Ready") | .reason)' PodCompleted
log=$(pod_log ok main)
grep -qE '^[0-9T:.-]+Z stdout F host=custom-host pid=1 msg=hello$' <<<"$log" || fail "ok: log line: $log"
grep -q ' stderr F to-stderr$' <<<"$log" || fail "ok: no stderr line in the CRI log"
nprocs=$(sed -n 's/.* stdout F procs=//p' <<<"$log")
[ "${nprocs:-99}" -le 5 ] || fail "ok: sees $nprocs processes; host processes visible?"
grep -q 'stdout F has-pod-ip' <<<"$log" || fail "ok: /etc/hosts lacks the pod's hostname"
grep -q 'Started Started container main' "$tmp/ok.err" || fail "ok: no Started event"
steps=$(tail -n1 "$tmp/ok.jsonl" | jq -r '[.timeline[].step] | join(",")')
for s in workerStarted sandboxReady imageReady:main containerStarted:main phase:Running \
         containerExited:main phase:Succeeded tornDown; do
  [[ ",$steps," == *",$s,"* ]] || fail "ok: timeline lacks $s: $steps"
done
tail -n1 "$tmp/ok.jsonl" | jq -e '[.timeline[].offsetUs] | . == sort' >/dev/null ||
  fail "ok: timeline offsets are not increasing"

# --- Never + failure -> Failed, exit 1 -----------------------------------------
cat >"$tmp/fails.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: fails}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'exit 3']
EOF
run fails
[ $rc -eq 1 ] || fail "fails: exit $rc, want 1"
expect_last fails .status.phase Failed
expect_last fails '.status.containerStatuses[0].state.terminated.exitCode' 3
expect_last fails '.status.containerStatuses[0].state.terminated.reason' Error
expect_last fails '.status.qosClass' BestEffort

# --- OnFailure: init container, emptyDir, restarts with CrashLoopBackOff -------
cat >"$tmp/restarts.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: restarts}
spec:
  restartPolicy: OnFailure
  initContainers:
  - name: prep
    image: busybox:1.36
    command: [sh, -c, 'echo prepared > /work/ready']
    volumeMounts: [{name: work, mountPath: /work}]
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'cat /work/ready; n=$(ls /work | wc -l); touch /work/run$n; [ $n -ge 3 ] && exit 0; exit 7']
    volumeMounts: [{name: work, mountPath: /work}]
  volumes: [{name: work, emptyDir: {}}]
EOF
run restarts --crash-loop-backoff-base 1 --crash-loop-backoff-max 2
[ $rc -eq 0 ] || fail "restarts: exit $rc, want 0"
expect_last restarts .status.phase Succeeded
expect_last restarts '.status.containerStatuses[0].restartCount' 2
expect_last restarts '.status.containerStatuses[0].lastState.terminated.exitCode' 7
expect_last restarts '.status.initContainerStatuses[0].state.terminated.reason' Completed
grep -q '"reason":"CrashLoopBackOff","message":"back-off 1s restarting failed container=main pod=restarts_default(' \
  "$tmp/restarts.jsonl" || fail "restarts: no CrashLoopBackOff waiting state with the kubelet's message"
grep -q 'BackOff Back-off restarting failed container main in pod restarts_default(' "$tmp/restarts.err" ||
  fail "restarts: no BackOff event"
[ "$(pod_log restarts main 2 | grep -c 'stdout F prepared')" -eq 1 ] ||
  fail "restarts: the third run did not see the init container's file"

# --- cubelet logs reads the CRI files as kubectl logs shows them ------------------
cl() { "$CUBELET" logs --pod-logs-dir "$logs" "$@"; }
[ "$(cl default/restarts main)" == "prepared" ] || fail "logs: newest instance: '$(cl default/restarts main)'"
[ "$(cl default/restarts main -p)" == "prepared" ] || fail "logs --previous"
# the last line of the CRI file, whichever stream it came from (stdout and
# stderr are two pipes: their lines' order in the file is not the program's)
last=$(pod_log ok main | tail -n1 | cut -d' ' -f4-)
[ -n "$last" ] && [ "$(cl default/ok main --tail 1)" == "$last" ] || fail "logs --tail 1: '$(cl default/ok main --tail 1)', the file ends with '$last'"
cl default/ok --timestamps | sed -n 1p | qgrep -E '^20[0-9-]+T[0-9:.]+Z host=custom-host' ||
  fail "logs --timestamps"
if cl default/restarts >/dev/null 2>&1; then fail "logs without a container for a two-container pod"; fi
if cl default/nosuch >/dev/null 2>&1; then fail "logs of a pod that never ran"; fi
if cl default/fails main -p >/dev/null 2>&1; then fail "logs -p without a previous instance"; fi

# --- admission rejection ----------------------------------------------------------
cat >"$tmp/rejected.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: rejected}
spec:
  containers:
  - name: main
    image: busybox:1.36
    resources: {requests: {cpu: "100000"}}
EOF
run rejected
[ $rc -eq 1 ] || fail "rejected: exit $rc, want 1"
expect_last rejected .status.phase Failed
expect_last rejected .status.reason OutOfcpu
expect_last rejected '.status.message | startswith("Pod was rejected: Node didn'"'"'t have enough resource: cpu, requested: 100000000, used: 0, capacity: ")' true
[ -z "$(ls "$root/containers" 2>/dev/null)" ] || fail "rejected: a container was created"

# --- SIGTERM: graceful stop, the container's trap runs --------------------------------
cat >"$tmp/graceful.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: graceful}
spec:
  terminationGracePeriodSeconds: 20
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'trap "echo got-term; exit 42" TERM; echo ready; while :; do sleep 0.2; done']
    lifecycle:
      preStop:
        exec: {command: [sh, -c, 'echo prestop-ran > /proc/1/fd/1; sleep 1']}
EOF
run_pod_cmd "$tmp/graceful.yaml"
"${pod_argv[@]}" >"$tmp/graceful.jsonl" 2>"$tmp/graceful.err" &
rp=$!
track "$rp"
for _ in $(seq 100); do grep -q '"phase":"Running"' "$tmp/graceful.jsonl" && break; sleep 0.1; done
ip=$(jq -r 'select(.status.podIP) | .status.podIP' "$tmp/graceful.jsonl" | tail -1)
busybox ping -c1 -W2 "$ip" >/dev/null || fail "graceful: pod IP '$ip' does not answer ping from the host"
kill -TERM "$rp"
set +e
wait "$rp"
rc=$?
set -e
[ $rc -eq 1 ] || fail "graceful: exit $rc, want 1 (Failed after a stop)"
expect_last graceful '.status.containerStatuses[0].state.terminated.exitCode' 42
pod_log graceful main | qgrep 'stdout F got-term' || fail "graceful: the TERM trap did not run"
order=$(pod_log graceful main | sed -n 's/.* stdout F \(prestop-ran\|got-term\)$/\1/p' | paste -sd,)
[ "$order" == "prestop-ran,got-term" ] || fail "graceful: preStop hook then SIGTERM expected, log shows '$order'"
grep -q 'Killing Stopping container main' "$tmp/graceful.err" || fail "graceful: no Killing event"

# --- lifecycle hooks: postStart exec, preStop httpGet; a failing httpGet postStart ----------
cat >"$tmp/hooks.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: hooks}
spec:
  terminationGracePeriodSeconds: 10
  containers:
  - name: web
    image: busybox:1.36
    ports: [{name: http, containerPort: 8080}]
    # busybox httpd; its CGI writes each request it gets to the container log.
    command: [sh, -c]
    args:
    - |
      mkdir -p /www/cgi-bin
      printf '#!/bin/sh\necho "hook-hit $REQUEST_URI ua=$HTTP_USER_AGENT" >/proc/1/fd/1\nprintf "Content-Type: text/plain\\r\\n\\r\\nok\\n"\n' >/www/cgi-bin/h
      chmod +x /www/cgi-bin/h
      exec httpd -f -p 8080 -h /www
    lifecycle:
      postStart:
        exec: {command: [sh, -c, 'echo poststart-ran >/proc/1/fd/1']}
      preStop:
        httpGet: {path: /cgi-bin/h?prestop, port: http}
  - name: badhook
    image: busybox:1.36
    command: [sh, -c, 'trap "exit 0" TERM; while :; do sleep 0.2; done']
    lifecycle:
      postStart:
        httpGet: {path: /nothing, port: 9}
EOF
run_pod_cmd "$tmp/hooks.yaml" --crash-loop-backoff-base 30
"${pod_argv[@]}" >"$tmp/hooks.jsonl" 2>"$tmp/hooks.err" &
rp=$!
track "$rp"
# web reached Running in some status line (jq -e alone would judge only the
# last line, which a later change can make about another state)
web_running() { jq -s -e '[.[] | select(.status) | .status.containerStatuses[]? | select(.name=="web") | .state.running | select(. != null)] | length > 0' "$tmp/hooks.jsonl" >/dev/null 2>&1; }
for _ in $(seq 1200); do web_running && break; sleep 0.1; done
web_running || fail "hooks: web never Running (run-pod $(kill -0 "$rp" 2>/dev/null && echo alive || echo gone)): $(tail -n 3 "$tmp/hooks.jsonl" | cut -c1-400) $(tail -n 12 "$tmp/hooks.err")"
for _ in $(seq 600); do grep -q 'FailedPostStartHook' "$tmp/hooks.err" && break; sleep 0.1; done
grep -q 'FailedPostStartHook HTTP lifecycle hook (/nothing) for Container "badhook" in Pod "hooks_default(' "$tmp/hooks.err" ||
  fail "hooks: no FailedPostStartHook event for badhook: $(grep -i hook "$tmp/hooks.err" | head -3)"
# badhook is killed after its failed hook and restarted (restartCount moves).
for _ in $(seq 600); do
  jq -e 'select(.status) | .status.containerStatuses[] | select(.name=="badhook") | .restartCount >= 1' "$tmp/hooks.jsonl" >/dev/null 2>&1 && break
  sleep 0.1
done
jq -e 'select(.status) | .status.containerStatuses[] | select(.name=="badhook") | .restartCount >= 1' "$tmp/hooks.jsonl" >/dev/null 2>&1 ||
  fail "hooks: badhook was not restarted after its postStart hook failed"
kill -TERM "$rp"
set +e
wait "$rp"
set -e
wlog=$(pod_log hooks web)
grep -q 'stdout F poststart-ran' <<<"$wlog" || fail "hooks: the postStart exec hook did not run: $wlog"
grep -q 'stdout F hook-hit /cgi-bin/h?prestop ua=kube-lifecycle/1.32' <<<"$wlog" ||
  fail "hooks: the preStop httpGet did not reach the container: $wlog"
grep -q 'FailedPreStopHook' "$tmp/hooks.err" && fail "hooks: the preStop hook reported a failure"
echo "ok   hooks: postStart exec ran, preStop httpGet reached the container, a failing httpGet postStart killed and restarted its container"

# --- the device policy: mknod is allowed, opening a disk is not --------------------------
cat >"$tmp/devices.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: devices}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'mknod /tmp/blk b 8 0 && head -c1 /tmp/blk; head -c1 /dev/zero >/dev/null && echo zero-ok']
  - name: priv
    image: busybox:1.36
    securityContext: {privileged: true}
    command: [sh, -c, 'ls /dev | grep -c . ; mknod /tmp/blk b 8 0 && head -c1 /tmp/blk']
EOF
run devices
dlog=$(pod_log devices main)
grep -q '/tmp/blk: Operation not permitted' <<<"$dlog" || fail "devices: an unprivileged container opened a block device: $dlog"
grep -q 'stdout F zero-ok' <<<"$dlog" || fail "devices: /dev/zero not usable: $dlog"
plog=$(pod_log devices priv)
grep -q '/tmp/blk: Operation not permitted' <<<"$plog" && fail "devices: the privileged container was refused a device: $plog"
ndev=$(sed -n 's/.* stdout F \([0-9][0-9]*\)$/\1/p' <<<"$plog" | head -1)
[ "${ndev:-0}" -gt 20 ] || fail "devices: the privileged container sees only ${ndev:-0} entries in /dev (the host's devices expected)"
echo "ok   devices: unprivileged: mknod ok, open refused, /dev/zero ok; privileged: $ndev entries in /dev, no refusal"

# --- memory limit -> OOMKilled; read-only root -----------------------------------------
cat >"$tmp/oom.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: oom}
spec:
  restartPolicy: Never
  containers:
  - name: hog
    image: busybox:1.36
    command: [sh, -c, 'x=aaaaaaaaaaaaaaaa; while :; do x=$x$x; done']
    resources: {requests: {memory: 8Mi}, limits: {memory: 24Mi}}
  - name: ro
    image: busybox:1.36
    command: [sh, -c, 'touch /x 2>&1; touch /tmp/y 2>&1; exit 0']
    securityContext: {readOnlyRootFilesystem: true}
EOF
run oom
expect_last oom .status.phase Failed
expect_last oom '.status.containerStatuses[] | select(.name=="hog") | .state.terminated.reason' OOMKilled
expect_last oom '.status.containerStatuses[] | select(.name=="hog") | .state.terminated.exitCode' 137
pod_log oom ro | qgrep 'Read-only file system' || fail "oom: readOnlyRootFilesystem: touch did not get EROFS"

# Pod-level limits (spec.resources, PodLevelResources 1.34+) and no
# container limit: the requests default to the pod's limits (Guaranteed),
# and the pod-level 24Mi is what the OOM killer enforces (on the pod cgroup
# and, as the kubelet sets it, on the container's own).
cat >"$tmp/podoom.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: podoom}
spec:
  restartPolicy: Never
  resources: {limits: {memory: 24Mi, cpu: 500m}}
  containers:
  - name: hog
    image: busybox:1.36
    command: [sh, -c, 'x=aaaaaaaaaaaaaaaa; while :; do x=$x$x; done']
EOF
run podoom
expect_last podoom .status.phase Failed
expect_last podoom .status.qosClass Guaranteed
expect_last podoom '.status.containerStatuses[] | select(.name=="hog") | .state.terminated.reason' OOMKilled
expect_last podoom '.status.containerStatuses[] | select(.name=="hog") | .state.terminated.exitCode' 137
echo "ok   pod-level memory limit: a container without its own limit OOMKilled at the pod's 24Mi"

# --- probes: readiness (httpGet) drives Ready, liveness (exec) kills --------------------
cat >"$tmp/probed.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: probed}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: busybox:1.36
    command: [sh, -c, 'mkdir -p /www; echo ok > /www/index.html; busybox httpd -f -p 8080 -h /www & touch /tmp/healthy; sleep 4; rm /tmp/healthy; sleep 3600']
    readinessProbe:
      httpGet: {path: /index.html, port: 8080}
      periodSeconds: 1
    livenessProbe:
      exec: {command: [cat, /tmp/healthy]}
      periodSeconds: 1
      failureThreshold: 2
EOF
run probed
ready=$(jq -r 'select(.status) | .status.conditions[] | select(.type=="Ready") | .status' "$tmp/probed.jsonl" |
  uniq | paste -sd,)
[ "$ready" == "False,True,False" ] || fail "probed: Ready went $ready, want False,True,False"
expect_last probed .status.phase Failed
expect_last probed '.status.containerStatuses[0].state.terminated.exitCode' 137
grep -q "Unhealthy Liveness probe failed: cat: can't open '/tmp/healthy'" "$tmp/probed.err" ||
  fail "probed: no Unhealthy event with the probe's output"
grep -q 'Killing Container web failed liveness probe, will be restarted' "$tmp/probed.err" ||
  fail "probed: no Killing event for the liveness failure"

# --- shareProcessNamespace: one PID namespace, pid 1 the pod's pause process ----------------
cat >"$tmp/shared.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: shared}
spec:
  restartPolicy: Never
  shareProcessNamespace: true
  containers:
  - name: server
    image: busybox:1.36
    command: [sh, -c, 'exec sleep 7']
  - name: peek
    image: busybox:1.36
    # Sees the other container's process and signals it; is not pid 1.
    command: [sh, -c]
    args: ['for i in $(seq 50); do for d in /proc/[0-9]*; do [ "$(cat $d/comm 2>/dev/null)" = sleep ] && p=$${d#/proc/}; done; [ -n "$p" ] && break; sleep 0.1; done; echo "self=$$$$ peer=$p init=$(tr "\0" " " </proc/1/cmdline)"; echo "cgroups init=$(sed -n "s/^[0-9]*:memory://p" /proc/1/cgroup) self=$(sed -n "s/^[0-9]*:memory://p" /proc/self/cgroup)"; [ -n "$p" ] && kill -TERM "$p" && echo signalled']
EOF
run shared
[ $rc -eq 1 ] || fail "shared: exit $rc, want 1 (server ends by SIGTERM from peek: Failed)"
slog=$(pod_log shared peek)
grep -qE 'stdout F self=[0-9]+ peer=[0-9]+ init=/pause __pause 3 ?$' <<<"$slog" || fail "shared: peek saw: $slog"
self_pid=$(sed -n 's/.*self=\([0-9]*\).*/\1/p' <<<"$slog")
[ -n "$self_pid" ] && [ "$self_pid" != 1 ] || fail "shared: peek is pid ${self_pid:-?}, want not 1"
grep -q 'stdout F signalled' <<<"$slog" || fail "shared: peek could not signal the server"
# the pause process is born in the pod cgroup (runtime/pause.c), the
# container in its own cgroup below it
pcg=$(sed -n 's/.*stdout F cgroups init=\([^ ]*\) self=.*/\1/p' <<<"$slog")
scg=$(sed -n 's/.*stdout F cgroups init=[^ ]* self=\(.*\)$/\1/p' <<<"$slog")
[[ $pcg == "/$cgroot/kubepods/"*/pod* && $scg == "$pcg/"* ]] ||
  fail "shared: the pause process in memory cgroup '$pcg', peek in '$scg': want the pod cgroup under /$cgroot/kubepods, peek below it"
expect_last shared '.status.containerStatuses[] | select(.name=="server") | .state.terminated.exitCode' 143
[ -z "$(ls "$root/sandboxes" 2>/dev/null)" ] || fail "shared: sandbox left"
echo "ok   shareProcessNamespace: peek (pid $self_pid) saw and signalled server; pid 1 is the pause process"

# --- activeDeadlineSeconds: Failed with DeadlineExceeded ---------------------------------
cat >"$tmp/deadline.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: deadline}
spec:
  activeDeadlineSeconds: 2
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'trap "exit 0" TERM; while :; do sleep 0.2; done']
EOF
t0=$(date +%s)
run deadline
took=$(($(date +%s) - t0))
[ $rc -eq 1 ] || fail "deadline: exit $rc, want 1"
expect_last deadline .status.phase Failed
expect_last deadline .status.reason DeadlineExceeded
expect_last deadline .status.message "Pod was active on the node longer than the specified deadline"
[ "$took" -ge 2 ] && [ "$took" -le 15 ] || fail "deadline: took ${took}s, want about 2s"

# --- supplementary groups: the image's /etc/group memberships (Merge), Strict ----------
# A derived image whose /etc/group names the user alice (uid 1000) as a
# member of two groups (and bob of a third): as containerd, the process's
# groups are its primary gid, under Merge (the default) the image's groups
# of the user, then supplementalGroups and fsGroup; Strict leaves the
# image's out. The container's `id -G` must equal what the status reports in
# containerStatuses[].user.linux.
l=$tmp/grp-layout
cp -a "$tmp/img/layout" "$l"
umoci unpack --image "$l:1.36" "$tmp/grp-b" >/dev/null
printf 'alice:x:1000:1000::/:/bin/sh\nbob:x:1001:1001::/:/bin/sh\n' >>"$tmp/grp-b/rootfs/etc/passwd"
printf 'team:x:2345:alice\nboth:x:3456:bob,alice\nbobs:x:4567:bob\n' >>"$tmp/grp-b/rootfs/etc/group"
umoci repack --image "$l:1.36" "$tmp/grp-b" >/dev/null
umoci gc --layout "$l"
tar -C "$l" -cf "$l.tar" .
"$CUBELET" --root-dir "$root" image import "$l.tar" --name groups:1 >/dev/null || die "image import groups:1"
for policy in Merge Strict; do
  cat >"$tmp/grp-$policy.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: grp-$(echo "$policy" | tr A-Z a-z)}
spec:
  restartPolicy: Never
  securityContext: {runAsUser: 1000, runAsGroup: 1000, supplementalGroups: [5555], fsGroup: 6666, supplementalGroupsPolicy: $policy}
  containers:
  - {name: main, image: "groups:1", command: [sh, -c, 'echo "groups=\$(id -G)"']}
EOF
  run "grp-$policy"
  [ $rc -eq 0 ] || fail "groups $policy: exit $rc ($(tail -3 "$tmp/grp-$policy.err"))"
  name=grp-$(echo "$policy" | tr A-Z a-z)
  got=$(pod_log "$name" main | sed -n 's/.*groups=//p' | tr ' ' '\n' | sort -n | paste -sd,)
  status=$(last "grp-$policy" '.status.containerStatuses[0].user.linux | "\(.uid) \(.gid) \(.supplementalGroups | sort | map(tostring) | join(","))"')
  case $policy in
  Merge) want=1000,2345,3456,5555,6666 ;;
  Strict) want=1000,5555,6666 ;;
  esac
  [ "$got" = "$want" ] || fail "groups $policy: id -G '$got', want '$want'"
  [ "$status" = "1000 1000 $want" ] || fail "groups $policy: status user.linux '$status', want '1000 1000 $want'"
  echo "ok   groups $policy: id -G $got, as user.linux.supplementalGroups"
done

# --- a restart removes the old instance off the loop -----------------------------------
# The first instance leaves a large upper dir (20000 files, 32 MiB) and a
# termination message, and exits 7; the second waits for a file the test
# writes. The old instance's runtime dir and termination-message file go
# while the second runs, its id leaves worker.json once the removal is
# confirmed, and no container removal ran on the event loop (the agent
# logs one as a bug: worker_jobs.c pw_container_remove).
cat >"$tmp/bigupper.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: bigupper}
spec:
  restartPolicy: OnFailure
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c]
    args:
    - |
      if [ ! -e /work/run1 ]; then
        touch /work/run1; mkdir /big; i=0
        while [ $i -lt 20000 ]; do echo x > /big/f$i; i=$((i+1)); done
        dd if=/dev/zero of=/big/blob bs=1M count=32 2>/dev/null
        echo first-instance > /dev/termination-log; exit 7
      fi
      echo second; while [ ! -e /work/done ]; do sleep 0.1; done
    volumeMounts: [{name: work, mountPath: /work}]
  volumes: [{name: work, emptyDir: {}}]
EOF
run_pod_cmd "$tmp/bigupper.yaml" --crash-loop-backoff-base 1 --crash-loop-backoff-max 2
"${pod_argv[@]}" >"$tmp/bigupper.jsonl" 2>"$tmp/bigupper.err" &
rp=$!
track "$rp"
second() {
  jq -r 'select(.status.containerStatuses[0].restartCount == 1 and .status.containerStatuses[0].state.running)
         | .status.containerStatuses[0].lastState.terminated.containerID' "$tmp/bigupper.jsonl" 2>/dev/null | tail -1
}
for _ in $(seq 600); do [ -n "$(second)" ] && break; sleep 0.1; done
old=$(second)
old=${old#cubelet://}
[ -n "$old" ] || fail "bigupper: the second instance never ran ($(tail -3 "$tmp/bigupper.err"))"
wj=$(ls "$root"/pods/*/worker.json | head -1)
puid=$(basename "$(dirname "$wj")")
gone() {
  [ ! -e "$root/containers/$old" ] && [ ! -e "$root/pods/$puid/containers/main/$old" ] &&
    [ "$(jq -r '.containers[0].retired // [] | length' "$wj" 2>/dev/null)" == 0 ]
}
# 60 s: 20000 files and 32 MiB on ext4 beside a loaded machine's other work
for _ in $(seq 600); do gone && break; sleep 0.1; done
gone || fail "bigupper: the old instance $old is not removed while the next one runs (dir: $(ls -d "$root/containers/$old" 2>&1), worker.json retired: $(jq -c '.containers[0].retired' "$wj"))"
expect_last bigupper '.status.containerStatuses[0].state.running != null' true
touch "$root/pods/$puid/volumes/kubernetes.io~empty-dir/work/done"
set +e
wait "$rp"
rc=$?
set -e
[ $rc -eq 0 ] || fail "bigupper: exit $rc, want 0 ($(tail -3 "$tmp/bigupper.err"))"
expect_last bigupper .status.phase Succeeded
expect_last bigupper '.status.containerStatuses[0].restartCount' 1
expect_last bigupper '.status.containerStatuses[0].lastState.terminated.exitCode' 7
expect_last bigupper '.status.containerStatuses[0].lastState.terminated.message' first-instance

# --- nothing left behind ---------------------------------------------------------------
[ -z "$(ls "$root/containers" 2>/dev/null)" ] || fail "containers left: $(ls "$root/containers")"
# every run: no container removal on the event loop (pw_container_remove)
if grep -q 'removed on the event loop' "$tmp"/*.err; then
  fail "a container removal ran on the event loop: $(grep -h -m1 'removed on the event loop' "$tmp"/*.err)"
fi
[ -z "$(ls "$root/sandboxes" 2>/dev/null)" ] || fail "sandboxes left: $(ls "$root/sandboxes")"
if grep -q " $tmp" /proc/self/mountinfo; then
  fail "mounts left: $(grep " $tmp" /proc/self/mountinfo | awk '{print $5}')"
fi
left=$(find /sys/fs/cgroup/memory/"$cgroot" -name 'pod*' 2>/dev/null)
[ -z "$left" ] || fail "pod cgroups left: $left"
leases=$(ls "$tmp/ipam/$cni_name" 2>/dev/null | grep -v -e lock -e last_reserved || true)
[ -z "$leases" ] || fail "IP allocations left: $leases"
[ "$(ip -o link show master "$bridge" 2>/dev/null | wc -l)" -eq 0 ] || fail "veths left on $bridge"

finish
