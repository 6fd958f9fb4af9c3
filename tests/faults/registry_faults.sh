#!/usr/bin/env bash
# Fault: the registry misbehaving mid-pull. Debian's docker-registry serves
# the test image; a fault proxy (lib/regproxy.py) in front of it, for each
# round's new image (the busybox base plus a 512 kB layer of its own):
#   drop    half of each blob, then the connection closed
#   digest  each blob with one byte changed (its digest does not match)
#   slow    each blob at ~64 kB/s (the pull takes ~8 s)
# drop and digest: the pod shows ErrImagePull/ImagePullBackOff and nothing
# corrupt is stored; once the proxy passes again the pull succeeds (after
# the kubelet's 10 s pull back-off: convergence within 10 s + the back-off)
# and the pod runs. slow: the pod runs once the pull is through. The
# invariants after each; nothing left after the drain.
#   FAULT_SEED; FAULT_ITERATIONS (rounds of the three, default 1).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/faults.sh"
need_tools docker-registry skopeo umoci
fault_setup registry
N=${FAULT_ITERATIONS:-1}
rport=$(free_port)
cat >"$tmp/registry.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $tmp/registry
http:
  addr: 127.0.0.1:$rport
EOF
docker-registry serve "$tmp/registry.yml" >"$tmp/registry.log" 2>&1 &
track $!
poll 10 curl -fsS "http://127.0.0.1:$rport/v2/" -o /dev/null || die "docker-registry did not start: $(tail -3 "$tmp/registry.log")"
pport=$(free_port)
echo pass >"$tmp/reg.mode"
python3 -B "$H_FAULTS/regproxy.py" --listen-port "$pport" --upstream "http://127.0.0.1:$rport" \
        --mode-file "$tmp/reg.mode" >"$tmp/regproxy.out" 2>"$tmp/regproxy.log" &
track $!
poll 10 grep -q ready "$tmp/regproxy.out" || die "the registry proxy did not start"
echo '{"default": [{"type": "insecureAcceptAnything"}]}' >"$tmp/policy.json"
layout=$tmp/img/layout
# push_image TAG: the base plus a layer of its own (512 kB of seeded bytes)
push_image() {
        mkdir -p "$tmp/extra"
        head -c 524288 /dev/urandom >"$tmp/extra/blob-$1"
        umoci insert --image "$layout:1.36" --tag "$1" "$tmp/extra/blob-$1" "/extra-$1" >/dev/null ||
                die "umoci insert failed"
        skopeo --policy "$tmp/policy.json" copy -q --dest-tls-verify=false "oci:$layout:$1" \
                "docker://127.0.0.1:$rport/busybox:$1" || die "skopeo copy failed"
}
FAULT_AGENT_FLAGS=(--insecure-registry "127.0.0.1:$pport")
fault_agent
node_ready 30
baseline
waiting_reason() { pj "$1" '{.status.containerStatuses[0].state.waiting.reason}'; }
for i in $(seq 1 "$N"); do
        for m in drop digest slow; do
                rounds=$((rounds + 1))
                tag=r$i-$m
                push_image "$tag"
                echo "$m" >"$tmp/reg.mode"
                LC_IMAGE=127.0.0.1:$pport/busybox:$tag lc_pod "g$i-$m" svc
                inv_what="round $i: $m"
                if [ "$m" != slow ]; then
                        poll 40 eval 'case "$(waiting_reason "g$i-$m")" in ErrImagePull | ImagePullBackOff) true ;; *) false ;; esac' ||
                                violation "g$i-$m: no ErrImagePull/ImagePullBackOff with the registry '$m' (waiting: $(waiting_reason "g$i-$m"), phase $(pj "g$i-$m" '{.status.phase}'))"
                        msg=$(pj "g$i-$m" '{.status.containerStatuses[0].state.waiting.message}')
                        echo "     round $i: registry '$m': $(waiting_reason "g$i-$m"): ${msg:0:160}"
                        echo pass >"$tmp/reg.mode"
                        converge 25 && check_invariants "round $i, $m, converged in ${converged_in}s after the registry healed (10 s pull back-off)"
                else
                        t0=$(now)
                        converge 60 && check_invariants "round $i, slow pull, Running after $(since "$t0")s"
                        echo pass >"$tmp/reg.mode"
                fi
                # the pulled image is the registry's: the extra file is intact
                [ "$(k exec "g$i-$m" -c main -- md5sum "/extra-$tag" 2>/dev/null | cut -d' ' -f1)" = \
                        "$(md5sum <"$tmp/extra/blob-$tag" | cut -d' ' -f1)" ] ||
                        violation "g$i-$m: /extra-$tag in the container differs from the pushed layer's file"
        done
        drain_all "round $i"
done
faults=$(grep -c '^inject' "$tmp/regproxy.log")
kill -0 "$agent_pid" 2>/dev/null || fail "the agent died"
stop_agent 15
pass "registry dropping, corrupting and slowing blobs: $faults blob answers injected; $violations invariant violations"
fault_report
