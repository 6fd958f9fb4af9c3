#!/usr/bin/env bash
# scripts/demo.sh as a test, so that it cannot rot unnoticed (issue 18
# item 4, issue 19 item 7): `demo.sh --ci` (no install, no build, this
# build's $CUBELET, no prompt) must
#  1. join its node with a bootstrap token (a node-csr-* CSR by
#     system:bootstrap:<id>, Approved,Issued; the client certificate's
#     subject), print the live page's address, show each sample pod's
#     phase change live (succeeds Completed, fails Error, crashloops
#     CrashLoopBackOff, oom OOMKilled, rejected OutOfcpu, evicted
#     DeletionByTaintManager) and end with `cubelet timeline`: each pod's
#     steps with offsets, durations and bars, the phases, the rejected pod's
#     steps too, the evicted pod's taint, deletionTimestamp and
#     DisruptionTarget; exit 0, nothing left behind;
#  2. when interrupted (SIGINT to its process group, as Ctrl-C) once the
#     pods are applied: exit 130 and leave nothing behind either (no
#     process naming its temp dir, no mount, cgroup, bridge, temp dir). The
#     page answers at the printed address while it runs.
# About 60 s. Exit 77 when not root or a tool is missing.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
need_root
need_tools jq umoci ip iptables busybox kubectl openssl python3 curl skopeo docker-registry setsid /usr/bin/etcd
need_cni bridge host-local portmap
need_cubelet
harness_init demotest
demo=$SOURCE_DIR/scripts/demo.sh

# left_behind OUT: what the demo whose output is OUT left (empty: nothing).
left_behind() {
        local line t cg br
        line=$(grep -m1 '^- CNI: bridge ' "$1")
        [[ $line =~ bridge\ ([a-z0-9]+),.*under\ ([a-z0-9-]+)\;\ files\ in\ (/tmp/cubelet-demo\.[A-Za-z0-9]+) ]] ||
                { echo "no '- CNI: bridge ...' line to find its resources by"; return; }
        br=${BASH_REMATCH[1]} cg=${BASH_REMATCH[2]} t=${BASH_REMATCH[3]}
        [ ! -e "$t" ] || echo "its temp dir $t"
        ! grep -q " $t" /proc/self/mountinfo || echo "mounts under $t: $(grep -c " $t" /proc/self/mountinfo)"
        ls -d /sys/fs/cgroup/*/"$cg" 2>/dev/null | sed 's/^/cgroup /'
        ! ip link show "$br" >/dev/null 2>&1 || echo "bridge $br"
        # (the pattern from a file: grep's own command line must not match)
        printf '%s\n' "$t" >"$tmp/pattern"
        grep -l -s -F -f "$tmp/pattern" /proc/[0-9]*/cmdline | sed 's|/proc/\([0-9]*\)/cmdline|process \1|'
}

# ---- 1. a whole run ------------------------------------------------------------
t0=$(now)
CUBELET_DEMO_CI=1 bash "$demo" </dev/null >"$tmp/out" 2>&1
rc=$?
took=$(since "$t0")
[ "$rc" -eq 0 ] || die "demo.sh --ci exited $rc after ${took}s: $(tail -40 "$tmp/out")"
[ -z "${ARTIFACT_DIR:-}" ] || cp "$tmp/out" "$ARTIFACT_DIR/demo.out"
o=$tmp/out
grep -Eq '^    node-csr-[A-Za-z0-9_-]+ .* kubernetes\.io/kube-apiserver-client-kubelet +system:bootstrap:[0-9a-f]{6} .*Approved,Issued$' "$o" ||
        fail "no bootstrap CSR by system:bootstrap:<id>, Approved,Issued: $(grep -A3 'joins as' "$o")"
grep -q 'subject=O=system:nodes, CN=system:node:demo-node' "$o" || fail "no client certificate for system:node:demo-node"
grep -Eq '^  http://127\.0\.0\.1:[0-9]+/ui\?token=[0-9a-f]{64}$' "$o" || fail "no page address"
for want in 'succeeds +Succeeded +Completed' 'fails +Failed +Error' 'crashloops +Running +CrashLoopBackOff' \
        'oom +Failed +OOMKilled' 'rejected +Failed +OutOfcpu' 'evicted +Running +DeletionByTaintManager'; do
        grep -Eq "^ +[0-9]+\.[0-9]s  $want\$" "$o" || fail "no live line /$want/"
done
pass "1 joined with a bootstrap token, page address, every pod's change live (${took}s)"

# The timelines: one block per pod between the section's header and the next.
awk '/cubelet.s phase-transition timelines/ { on = 1; next } /^.\[1mThe evicted pod with/ { on = 0 }
        on && /^default\// { split($1, a, "/"); f = dir "/tl." a[2] } on && f { print > f }' dir="$tmp" "$o"
awk '/^.\[1mThe evicted pod with/ { on = 1; next } /^As a trace for Perfetto/ { on = 0 } on' "$o" >"$tmp/evicted.hist"
# has POD STEP [COUNT]: POD's block has COUNT (default 1, "+N": at least N)
# step lines for STEP with an offset, the time since the step before and a bar.
has() {
        local n
        n=$(grep -Ec "^  $2 +[0-9.]+ms +[0-9.]+ms  \|#*$" "$tmp/tl.$1" 2>/dev/null)
        case ${3:-1} in
        +*) [ "$n" -ge "${3#+}" ] ;;
        *) [ "$n" -eq "${3:-1}" ] ;;
        esac || fail "timeline of $1: $n step line(s) $2, want ${3:-1}: $(cat "$tmp/tl.$1" 2>/dev/null)"
}
phase_line() {
        head -1 "$tmp/tl.$1" 2>/dev/null | qgrep -E "^default/$1  uid [0-9a-f-]+  phase $2( |$)" ||
                fail "timeline of $1: header '$(head -1 "$tmp/tl.$1" 2>/dev/null)', want phase $2"
        grep -Eq "^  phases: .*$2 from [0-9.]+ms" "$tmp/tl.$1" || fail "timeline of $1: no $2 in its phases line"
}
for p in succeeds fails crashloops oom evicted; do
        for s in watched admitted sandboxReady phase:Pending phase:Running statusDelivered:Running; do has "$p" "$s"; done
done
for p in succeeds fails oom evicted; do
        c=main
        [ "$p" != oom ] || c=hog
        has "$p" "imageReady:$c"
        has "$p" "containerStarted:$c"
        has "$p" "containerExited:$c"
        has "$p" tornDown
done
phase_line succeeds Succeeded && has succeeds phase:Succeeded && has succeeds statusDelivered:Succeeded
phase_line fails Failed && has fails phase:Failed
phase_line oom Failed && has oom phase:Failed
phase_line crashloops Running && has crashloops containerStarted:main +3 && has crashloops containerExited:main +2
phase_line rejected Failed
for s in watched rejected phase:Failed statusDelivered:Failed; do has rejected "$s"; done
phase_line evicted Succeeded && has evicted deleted
head -1 "$tmp/tl.evicted" | qgrep '(gone)$' || fail "evicted is not shown gone"
grep -q 'spec change of Node/demo-node' "$tmp/evicted.hist" || fail "evicted's history: no node spec change"
grep -Eq 'add +spec\.taints +\[\{"effect":"NoExecute","key":"demo/maintenance"' "$tmp/evicted.hist" ||
        fail "evicted's history: the taint is not in the node's diff"
grep -Eq 'add +metadata\.deletionTimestamp' "$tmp/evicted.hist" || fail "evicted's history: no deletionTimestamp"
grep -Eq 'add +status\.conditions\[type=DisruptionTarget\]' "$tmp/evicted.hist" ||
        fail "evicted's history: no DisruptionTarget in a status diff"
grep -Eq '^demo: done in [0-9]+s$' "$o" || fail "no 'demo: done' line"
lb=$(left_behind "$o")
[ -z "$lb" ] || fail "the demo left behind: $lb"
pass "1 timelines: six pods, their steps with durations, phases; the rejected pod's steps; the eviction's diffs; nothing left"

# ---- 2. interrupted ---------------------------------------------------------------
# Started in a session of its own with SIGINT at its default (a background
# job of this script would ignore it), then SIGINT to the whole group as a
# terminal's Ctrl-C sends it.
setsid python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' \
        env CUBELET_DEMO_CI=1 bash "$demo" </dev/null >"$tmp/out2" 2>&1 &
dpid=$!
track "$dpid"
poll 60 grep -q 'Applying the sample pods' "$tmp/out2" || fail "the second run did not get to the pods: $(tail -5 "$tmp/out2")"
page=$(grep -Eo -m1 'http://127\.0\.0\.1:[0-9]+/ui\?token=[0-9a-f]+' "$tmp/out2")
# Into a file first: with pipefail, grep -q leaving at its first match fails
# curl's next write (SIGPIPE) and so the pipeline (the CI run of session 6).
curl -fsS -m 10 -o "$tmp/page2" "$page" 2>"$tmp/page2.err" && grep -q '<table id="static"' "$tmp/page2" ||
        fail "the printed page address does not answer with the page: $(cat "$tmp/page2.err") $(head -c 300 "$tmp/page2" 2>/dev/null)"
sleep 2
kill -INT -- "-$dpid"
t1=$(now)
poll 30 eval '! kill -0 "$dpid" 2>/dev/null' || fail "the demo still runs 30 s after SIGINT"
wait "$dpid"
rc=$?
[ "$rc" -eq 130 ] || fail "interrupted demo exited $rc, want 130: $(tail -5 "$tmp/out2")"
lb=$(left_behind "$tmp/out2")
[ -z "$lb" ] || fail "the interrupted demo left behind: $lb"
pass "2 interrupted: the page answered at its address; exit $rc, cleaned up in $(since "$t1")s, nothing left"
finish
