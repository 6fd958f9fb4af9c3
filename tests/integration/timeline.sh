#!/usr/bin/env bash
# The phase-transition timeline as a user sees it: the cubelet agent
# against the stand-in apiserver, busybox pods with CNI and cgroups under a
# private parent.
#  1. the endpoint's address file; `cubelet timeline -w -o json` follows
#     the agent's event stream from the start;
#  2. the live page (/ui) in Debian's headless chromium, driven over the
#     DevTools protocol (tests/integration/lib/cdp.py): a pod created now
#     shows up with its Running step within a second of that step, and its
#     status diff when selected; the screenshot is kept in
#     $ARTIFACT_DIR/timeline/ (default: the current directory). Skipped,
#     with a message, where chromium is absent (the rest still runs);
#  3. a pod with a known sequence: it starts, its container exits and is
#     restarted, then a NoExecute taint evicts it; `cubelet timeline POD`
#     shows each step with offsets and bars, the phases, the taint and the
#     deletionTimestamp as spec changes and the restart in a status diff;
#     -o json and -o trace (Perfetto's format) carry the same; the -w
#     stream saw every step;
#  4. the agent stopped: `cubelet timeline` reads the state dir.
# Exit 77 when not root or a tool is missing.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
need_root
need_tools jq umoci ip iptables busybox kubectl openssl python3 curl /usr/bin/etcd
need_cni bridge host-local portmap
[ -d /sys/fs/cgroup/memory ] || skip "needs the cgroup v1 memory hierarchy"
harness_init timeline
K_TIMEOUT=30s
art=${ARTIFACT_DIR:-$PWD}/timeline
mkdir -p "$art"

import_busybox
write_cni_conf portmap
start_standin
hport=$(free_port)
start_agent -v 2 --kubeconfig "$data/node.kubeconfig" --healthz-port "$hport" --node-ip 10.0.0.5 \
        --crash-loop-backoff-base 1 --crash-loop-backoff-max 2 --node-status-update-frequency 1s
node_ready
tl() { "$CUBELET" --root-dir "$root" timeline "$@"; }

# ---- 1. where the agent serves, the follower ----------------------------------------
poll 10 test -s "$root/endpoint.address" || fail "no $root/endpoint.address"
[ "$(cat "$root/endpoint.address")" = "http://127.0.0.1:$hport" ] ||
        fail "endpoint.address: '$(cat "$root/endpoint.address")', want http://127.0.0.1:$hport"
tok=$(cat "$root/endpoint.token")
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$hport/ui")
[ "$code" = 401 ] || fail "/ui without the token answered $code, want 401"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$hport/timelines?watch=true")
[ "$code" = 401 ] || fail "/timelines?watch=true without the token answered $code, want 401"
curl -fsS -o "$tmp/page.html" "http://127.0.0.1:$hport/ui?token=$tok" || fail "/ui with the token failed"
grep -q '<table id="static"' "$tmp/page.html" || fail "/ui has no server-rendered table"
if grep -Eq 'https?://' "$tmp/page.html"; then fail "/ui refers to an external resource"; fi
page_bytes=$(($(wc -c <"$tmp/page.html") + $(curl -fsS "http://127.0.0.1:$hport/ui/timeline.js" | wc -c) +
        $(curl -fsS "http://127.0.0.1:$hport/ui/timeline.css" | wc -c)))
tl -w -o json >"$tmp/follow.jsonl" 2>"$tmp/follow.err" &
follow_pid=$!
track "$follow_pid"
poll 10 eval 'grep -q "\"event\":\"snapshot\"" "$tmp/follow.jsonl"' || fail "timeline -w: no snapshot: $(cat "$tmp/follow.err")"
pass "1 endpoint.address, /ui and the stream need the token, page $page_bytes bytes (HTML+JS+CSS), -w follows"

# ---- 2. the page in headless chromium --------------------------------------------------
mkweb() {
        mkpod web Always 2 <<'EOF2'
  tolerations: [{key: tl, operator: Exists}]
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'trap "exit 0" TERM; while :; do sleep 0.2; done']
EOF2
        wait_running web
}
chromium_bin=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium_bin" ]; then
        echo "skip 2 the page in a browser: chromium is not installed (scripts/deps.sh installs it)"
        mkweb
else
        cport=$(free_port)
        "$chromium_bin" --headless=new --no-sandbox --disable-gpu --no-first-run --no-default-browser-check \
                --disable-background-networking --disable-component-update --disable-sync \
                --disable-default-apps --disable-extensions --metrics-recording-only \
                --user-data-dir="$tmp/chromium" --window-size=1400,900 \
                --remote-debugging-address=127.0.0.1 --remote-debugging-port="$cport" \
                "http://127.0.0.1:$hport/ui?token=$tok" >"$tmp/chromium.out" 2>&1 &
        chromium_pid=$!
        track "$chromium_pid"
        cdp() { python3 "$SOURCE_DIR/tests/integration/lib/cdp.py" "$cport" "$@"; }
        poll 30 eval 'curl -fs "http://127.0.0.1:$cport/json/list" | qgrep "\"type\": \"page\""' ||
                fail "chromium: no page target: $(tail -3 "$tmp/chromium.out")"
        cdp wait 'document.body.dataset.stream === "open" && window.cubeletTimeline.events > 0' 20 ||
                fail "the page did not connect to the event stream"
        mkweb
        cdp wait '(document.querySelector(".row[data-name=\"default/web\"]") || {dataset: {}}).dataset.phase === "Running"' 10 ||
                fail "the page shows no Running row for web: $(cdp eval 'document.getElementById("rows").innerText')"
        lag=$(cdp eval 'window.cubeletTimeline.lags["default/web"]["phase:Running"]')
        fle "$lag" 1000 || fail "the page showed web's Running step ${lag} ms after it, want < 1000"
        cdp eval 'document.querySelector(".row[data-name=\"default/web\"]").click(), true' >/dev/null
        cdp wait 'document.getElementById("detail").innerText.includes("status.phase")' 10 ||
                fail "web's detail shows no status diff: $(cdp eval 'document.getElementById("detail").innerText' | head -c 600)"
        detail=$(cdp eval 'document.getElementById("detail").innerText')
        grep -q 'Running' <<<"$detail" || fail "web's detail does not show Running: $detail"
        grep -q 'status acknowledged' <<<"$detail" || fail "web's detail has no acknowledged status: $detail"
        cdp screenshot "$art/page.png" || fail "no screenshot"
        [ -s "$art/page.png" ] || fail "empty screenshot"
        pass "2 page: web's Running step shown ${lag} ms after it, its status diff; screenshot $art/page.png"
fi

# ---- 3. a pod with a known sequence: start, exit, restart, NoExecute eviction -----------
mkpod seq Always 2 <<'EOF2'
  volumes: [{name: d, emptyDir: {}}]
  containers:
  - name: main
    image: busybox:1.36
    volumeMounts: [{name: d, mountPath: /data}]
    command: [sh, -c, 'if [ -f /data/once ]; then trap "exit 0" TERM; while :; do sleep 0.2; done; fi; touch /data/once; sleep 0.5; exit 3']
EOF2
poll 30 eval '[ "$(pj seq "{.status.containerStatuses[0].restartCount}")" = 1 ] && phase_is seq Running &&
        [ -n "$(pj seq "{.status.containerStatuses[0].state.running}")" ]' ||
        fail "seq: not restarted once and running: $(pj seq '{.status}')"
k taint nodes "$NODE" tl=evict:NoExecute >/dev/null || fail "kubectl taint failed"
k wait --for=delete pod/seq --timeout=30s >/dev/null 2>&1 || fail "seq: not evicted 30 s after the taint"
k taint nodes "$NODE" tl=evict:NoExecute- >/dev/null || fail "kubectl taint (remove) failed"
# The worker's last steps (tornDown) come after the pod is gone.
poll 10 eval 'tl -o json seq | jq -e ".pods[0].gone" >/dev/null' || fail "seq: not marked gone in the timeline"

tl seq >"$tmp/seq.txt" 2>"$tmp/seq.err" || fail "timeline seq failed: $(cat "$tmp/seq.err")"
head -1 "$tmp/seq.txt" | qgrep -E '^default/seq  uid [0-9a-f-]+  phase [A-Za-z]+  \(gone\)$' ||
        fail "timeline seq: first line '$(head -1 "$tmp/seq.txt")'"
for s in workerStarted admitted sandboxReady imageReady:main containerStarted:main containerExited:main \
        phase:Pending phase:Running deleted; do
        grep -Eq "^  $s +[0-9.]+ms +[0-9.]+ms  \|#*$" "$tmp/seq.txt" || fail "timeline seq: no step line for $s: $(cat "$tmp/seq.txt")"
done
[ "$(grep -Ec '^  containerStarted:main ' "$tmp/seq.txt")" = 2 ] || fail "timeline seq: want 2 containerStarted:main (a restart)"
[ "$(grep -Ec '^  containerExited:main ' "$tmp/seq.txt")" = 2 ] || fail "timeline seq: want 2 containerExited:main (the exit and the eviction)"
grep -Eq '^  phases: Pending from [0-9.]+ms for [0-9.]+ms, Running from' "$tmp/seq.txt" || fail "timeline seq: no phases line"
grep -q "spec change of Node/$NODE" "$tmp/seq.txt" || fail "timeline seq: the taint is not a spec change"
grep -Eq 'add +spec.taints' "$tmp/seq.txt" || fail "timeline seq: the taint's diff is missing"
grep -Eq 'add +metadata.deletionTimestamp' "$tmp/seq.txt" || fail "timeline seq: the deletionTimestamp is not a spec change"
grep -Eq 'change status.containerStatuses\[name=main\].restartCount  0 -> 1' "$tmp/seq.txt" ||
        fail "timeline seq: the restart is not in a status diff: $(grep -A3 'status sent' "$tmp/seq.txt" | head -40)"
grep -Eq 'add +status.conditions\[type=DisruptionTarget\]' "$tmp/seq.txt" ||
        fail "timeline seq: the eviction's DisruptionTarget condition is not in a status diff"
grep -q 'status acknowledged (200)' "$tmp/seq.txt" || fail "timeline seq: no acknowledged status"

tl -o json seq >"$tmp/seq.json" || fail "timeline -o json failed"
jq -e '.pods | length == 1' "$tmp/seq.json" >/dev/null || fail "-o json: not one pod"
jq -e '[.pods[0].timeline[].offsetUs] | . == sort' "$tmp/seq.json" >/dev/null || fail "-o json: offsets not in order"
jq -e '[.pods[0].history[] | select(.kind == "status")] | length >= 3' "$tmp/seq.json" >/dev/null || fail "-o json: fewer than 3 statuses"
n_steps=$(jq '.pods[0].timeline | length' "$tmp/seq.json")

tl -o trace seq >"$tmp/seq.trace" || fail "timeline -o trace failed"
jq -e '.traceEvents | length > 0' "$tmp/seq.trace" >/dev/null || fail "-o trace: no events"
jq -e '[.traceEvents[] | select(.ph == "M" and .name == "process_name") | .args.name] == ["default/seq"]' "$tmp/seq.trace" >/dev/null ||
        fail "-o trace: the process is not default/seq"
jq -e '[.traceEvents[] | select(.ph == "X" and .name == "running" and .tid == 2) | .args.restart] == [0, 1]' "$tmp/seq.trace" >/dev/null ||
        fail "-o trace: want two runs of main (restart 0, 1): $(jq -c '[.traceEvents[] | select(.ph == "X")]' "$tmp/seq.trace")"
jq -e --slurpfile j "$tmp/seq.json" '[.traceEvents[] | select(.ph == "i" and .cat == "step") | .name] | sort == ([$j[0].pods[0].timeline[].step] | sort)' "$tmp/seq.trace" >/dev/null ||
        fail "-o trace: the instants are not the steps"
jq -e '[.traceEvents[] | select(.ph != "M")] | group_by([.pid, .tid]) | all(map(.ts) | . == sort)' "$tmp/seq.trace" >/dev/null ||
        fail "-o trace: timestamps go backwards on a track"
curl -fsS -H "Authorization: Bearer $tok" "http://127.0.0.1:$hport/timelines?format=trace" | jq -e '.traceEvents | length > 0' >/dev/null ||
        fail "/timelines?format=trace is not a trace"

# The follower saw every step of seq as it happened, and the spec changes.
uid=$(jq -r '.pods[0].uid' "$tmp/seq.json")
# (the stream is pushed, not read back: the last steps may reach the
# follower's file a moment after the snapshot of seq.json was taken)
followed() { jq -r --arg u "$uid" 'select(.event == "step" and .data.uid == $u) | .data.step' "$tmp/follow.jsonl" | paste -sd,; }
want=$(jq -r '.pods[0].timeline[].step' "$tmp/seq.json" | paste -sd,)
poll 5 eval '[ "$(followed)" = "$want" ]' ||
        fail "timeline -w saw steps '$(followed)', want '$want' (follower $(kill -0 "$follow_pid" 2>/dev/null && echo alive || echo gone), $(wc -l <"$tmp/follow.jsonl") lines, its stderr: '$(tail -3 "$tmp/follow.err" | paste -sd' ')', its last event: $(tail -1 "$tmp/follow.jsonl" | cut -c1-200))"
jq -se --arg u "$uid" 'any(.[]; .event == "entry" and .data.uid == $u and .data.entry.kind == "spec" and
        any(.data.entry.diff[]; .path == "metadata.deletionTimestamp"))' "$tmp/follow.jsonl" >/dev/null || fail "timeline -w saw no deletionTimestamp change"
cp "$tmp/follow.jsonl" "$tmp/seq.txt" "$tmp/seq.json" "$tmp/seq.trace" "$art/"
pass "3 seq: $n_steps steps (restart, eviction) in text, -o json, -o trace and -w; taint, deletionTimestamp, restartCount and DisruptionTarget diffs"

# ---- 4. the agent down: the state dir ----------------------------------------------------
stop_agent
tl -o json web >"$tmp/off.json" 2>"$tmp/off.err" || fail "timeline (agent down) failed: $(cat "$tmp/off.err")"
grep -q 'reading the state dir' "$tmp/off.err" || fail "timeline (agent down): does not say it reads the state dir: $(cat "$tmp/off.err")"
jq -e '.pods[0].timeline | map(.step) | index("phase:Running")' "$tmp/off.json" >/dev/null ||
        fail "timeline (agent down): web has no phase:Running step: $(cat "$tmp/off.json")"
[ ! -e "$root/endpoint.address" ] || fail "endpoint.address left after the agent stopped"
pass "4 agent down: timeline reads web's steps from the state dir"
finish
