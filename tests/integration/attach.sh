#!/usr/bin/env bash
# `cubelet run-pod` with containers that have stdin, stdinOnce and a
# terminal, driven with `cubelet attach`: input reaches the container and
# its answer comes back; stdinOnce ends the container's stdin when the
# first session ends (cat exits 0, Completed); a tty container gets a
# terminal of its own devpts (not the host's), TERM=xterm, and the attach
# client's terminal size, also after a resize (SIGWINCH); attaching -i to a
# container without stdin fails with the message; nothing is left behind.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
need_root
need_tools jq umoci busybox script timeout
harness_init attach
import_busybox

cat >"$tmp/pod.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: attach}
spec:
  restartPolicy: Never
  hostNetwork: true
  containers:
  - name: reader
    image: busybox:1.36
    command: [sh, -c, 'read line; echo got:$line']
    stdin: true
  - name: once
    image: busybox:1.36
    command: [cat]
    stdin: true
    stdinOnce: true
  - name: term
    image: busybox:1.36
    command: [sh, -c, 'tty; echo TERM=$TERM; ls /dev/pts | tr "\n" " "; echo; read l; stty size | sed s/^/size=/; echo bye']
    stdin: true
    tty: true
  - name: plain
    image: busybox:1.36
    command: [sleep, '3600']
EOF
run_pod_cmd "$tmp/pod.yaml"
"${pod_argv[@]}" >"$tmp/pod.jsonl" 2>"$tmp/pod.err" &
runpod=$!
track $runpod

# The status lines written completely so far (the last may be half written).
lines() { head -n "$(wc -l <"$tmp/pod.jsonl")" "$tmp/pod.jsonl"; }
# The container ids once all four run (status lines carry cubelet://<id>).
cid() { lines | jq -r ".status | objects | .containerStatuses[]? | select(.name==\"$1\") | .containerID // empty" |
          tail -n1 | sed 's|^cubelet://||'; }
running() { lines | jq -e '.status | objects | [.containerStatuses[]?.state.running] | map(select(. != null)) | length == 4' \
              >/dev/null 2>&1; }
up=0
for _ in $(seq 300); do
  if running; then
    reader=$(cid reader) once=$(cid once) term=$(cid term) plain=$(cid plain)
    [ -n "$reader" ] && [ -n "$once" ] && [ -n "$term" ] && [ -n "$plain" ] && { up=1; break; }
  fi
  kill -0 $runpod 2>/dev/null || break
  sleep 0.2
done
[ $up -eq 1 ] || { tail -5 "$tmp/pod.err"; fail "the pod's containers did not all start"; exit 1; }
att() { timeout 30 "$CUBELET" --root-dir "$root" attach "$@"; }

# --- stdin: a line in, the answer out ---------------------------------------
out=$(printf 'hello\n' | att -i "$reader") || fail "attach -i reader: exit $?"
[ "$out" == "got:hello" ] || fail "attach -i reader printed '$out', want got:hello"
grep -q ' stdout F got:hello$' "$tmp"/logs/default_attach_*/reader/0.log || fail "reader: log lacks got:hello"

# --- stdinOnce: the end of the first session is the container's EOF ------------
out=$(printf 'one\ntwo\n' | att -i "$once") || fail "attach -i once: exit $?"
[ "$out" == $'one\ntwo' ] || fail "attach -i once printed '$out'"
state=$("$CUBELET" --root-dir "$root" attach "$once" 2>&1) && fail "attach to the ended once container succeeded"
grep -q "is not running" <<<"$state" || fail "attach to an ended container: '$state'"

# --- without stdin ----------------------------------------------------------------
if msg=$(echo x | att -i "$plain" 2>&1); then fail "attach -i to a container without stdin succeeded"; fi
[ "$msg" == "cubelet attach: container $plain was created without stdin" ] ||
  fail "attach -i without stdin said '$msg'"

# --- tty: its own devpts, TERM, the client's size ----------------------------------
pid=$(jq -r .pid "$root/containers/$term/state.json")
[ "$(stat -L -c %d "/proc/$pid/fd/0")" != "$(stat -c %d /dev/pts/ptmx)" ] ||
  fail "term: the terminal is on the host's devpts"
[ "$(readlink "/proc/$pid/fd/0")" == /dev/pts/0 ] || fail "term: stdin is $(readlink "/proc/$pid/fd/0")"
# script gives attach a terminal of 33 rows x 91 columns: attach -t sends it
# at the start; then that terminal is resized (the kernel sends SIGWINCH to
# attach), and the container's terminal follows. The container's size is read
# from the host through /proc/PID/fd/0.
csize() { stty -F "/proc/$pid/fd/0" size 2>/dev/null; }
until_size() {
  for _ in $(seq 150); do [ "$(csize)" == "$1" ] && return 0; sleep 0.2; done
  return 1
}
mkfifo "$tmp/in"
timeout 60 script -qfec "stty rows 33 cols 91; exec $CUBELET --root-dir $root attach -i -t $term" \
  /dev/null <"$tmp/in" >"$tmp/term.out" &
scr=$!
exec 7>"$tmp/in"
until_size "33 91" || fail "term: size $(csize) after attach -t, want 33 91"
# timeout -> script -> attach (the shell exec'd it)
spid=$(cat "/proc/$scr/task/$scr/children" 2>/dev/null | awk '{print $1}')
apid=$(cat "/proc/$spid/task/$spid/children" 2>/dev/null | awk '{print $1}')
apts=$(readlink "/proc/${apid:-none}/fd/0" || true)
if [[ "$apts" == /dev/pts/* ]]; then
  stty -F "$apts" rows 40 cols 100
  until_size "40 100" || fail "term: size $(csize) after a SIGWINCH, want 40 100"
else
  fail "term: cannot find the terminal of attach (pid '$apid')"
fi
printf 'go\n' >&7
exec 7>&-
wait $scr || fail "attach -it term: exit $?"
tlog=$(cat "$tmp"/logs/default_attach_*/term/0.log)
grep -q ' stdout F size=40 100'$'\r''$' <<<"$tlog" || fail "term: no size=40 100 in the log: $tlog"
grep -q ' stdout F /dev/pts/0'$'\r''$' <<<"$tlog" || fail "term: tty is not /dev/pts/0: $tlog"
grep -q ' stdout F TERM=xterm'$'\r''$' <<<"$tlog" || fail "term: no TERM=xterm: $tlog"
grep -q ' stdout F 0 ptmx '$'\r''$' <<<"$tlog" || fail "term: /dev/pts holds more than its own: $tlog"
grep -q ' stderr ' <<<"$tlog" && fail "term: a terminal's output must be logged as stdout"
grep -q 'size=40 100' "$tmp/term.out" || fail "attach -it did not print the container's output: $(cat -v "$tmp/term.out")"

# --- the end: the pod stops, the sockets go with the monitors -------------------------
kill -TERM $runpod
wait $runpod || true
runpod=
# (the run's last line, its timeline, has no status object)
once_states=$(jq -c '.status | objects | .containerStatuses[]? | select(.name=="once") | .state' "$tmp/pod.jsonl")
grep -q '"terminated":{"exitCode":0,"reason":"Completed"' <<<"$once_states" ||
  fail "once: not Completed with exit code 0: $(uniq <<<"$once_states")"
left=$(find "$root/containers" -name attach 2>/dev/null)
[ -z "$left" ] || fail "attach sockets left: $left"

finish
