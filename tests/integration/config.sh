#!/usr/bin/env bash
# The real binary's configuration handling: --config loads a
# KubeletConfiguration, an unknown key or a bad value (in the file or a
# flag) stops startup with exit 2 and the key's path and why on stderr,
# before anything else happens (no state directory created, no port bound),
# and --help lists every flag with its default.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
harness_init config

head='apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration'

# run [args...] -> rc, err (stderr), out (stdout); a private --root-dir
# that must stay absent: a config error stops cubelet before it touches it.
run() {
        set +e
        out=$(timeout 20 "$CUBELET" --root-dir "$tmp/root" "$@" 2>"$tmp/stderr")
        rc=$?
        set -e
        err=$(cat "$tmp/stderr")
}

# expect_error DESCRIPTION CONFIG-BODY WANT [extra flags]
expect_error() {
        local what=$1 body=$2 want=$3
        shift 3
        printf '%s\n%s\n' "$head" "$body" >"$tmp/config.yaml"
        run --config "$tmp/config.yaml" --kubeconfig "$tmp/none" "$@"
        [ "$rc" -eq 2 ] || fail "$what: exit $rc, want 2 (stderr: $err)"
        grep -qF -- "$want" <<<"$err" || fail "$what: stderr '$err' lacks '$want'"
        [ ! -e "$tmp/root" ] || fail "$what: the state directory was created"
}

expect_error "bad threshold" 'evictionHard:
  memory.available: "10x"' \
        "cubelet: $tmp/config.yaml: evictionHard.memory.available: \"10x\": memory.available: invalid quantity \"10x\""
expect_error "unknown key" 'maxPods: 10
nodeStatusUpdateFrequncy: 10s' "$tmp/config.yaml: nodeStatusUpdateFrequncy: unknown field"
expect_error "unknown nested key" 'crashLoopBackOff:
  maxRestartPeriod: 10s' "crashLoopBackOff.maxRestartPeriod: unknown field"
expect_error "wrong type" 'maxPods: lots' 'maxPods: want an integer, got "lots"'
expect_error "out of range" 'healthzPort: 70000' \
        'healthzPort: 70000: want an integer between 0 and 65535'
expect_error "bad duration" 'nodeStatusReportFrequency: soon' \
        'nodeStatusReportFrequency: "soon": want a duration'
expect_error "cap out of range" 'crashLoopBackOff:
  maxContainerRestartPeriod: 6m' \
        'crashLoopBackOff.maxContainerRestartPeriod: "6m": want a duration between 1s and 5m'
expect_error "bad taint" 'registerWithTaints:
- key: a
  effect: Always' 'registerWithTaints[0]: invalid effect "Always"'
expect_error "YAML syntax" 'maxPods: [1' "$tmp/config.yaml: line "
expect_error "a key twice" 'kind: Pod' 'kind: duplicate key'
# A valid file, a bad flag: the flag is named.
expect_error "bad flag over a good file" 'maxPods: 10' '--max-pods: "0": want an integer' \
        --max-pods 0
expect_error "flag against the file" 'crashLoopBackOff:
  maxContainerRestartPeriod: 20s' \
        'crashLoopBackOff.initialContainerRestartPeriod (30s, --crash-loop-backoff-base) must not exceed crashLoopBackOff.maxContainerRestartPeriod (20s' \
        --crash-loop-backoff-base 30

run --config "$tmp/missing.yaml" --kubeconfig "$tmp/none"
[ "$rc" -eq 2 ] && grep -qF "$tmp/missing.yaml" <<<"$err" || fail "missing file: rc $rc, '$err'"

# The installed default (everything commented) and the same file with every
# documented default uncommented both load; --help exits 0 after loading.
run --config "$SOURCE_DIR/systemd/config.yaml" --help
[ "$rc" -eq 0 ] || fail "systemd/config.yaml: exit $rc: $err"
sed -E 's/^#([a-zA-Z]|  |- )/\1/' "$SOURCE_DIR/systemd/config.yaml" >"$tmp/all.yaml"
grep -q '^evictionHard:' "$tmp/all.yaml" || fail "uncommenting the default config failed"
run --config "$tmp/all.yaml" --help
[ "$rc" -eq 0 ] || fail "config.yaml with its defaults uncommented: exit $rc: $err"

# --help (top level and the agent's) lists every flag with its default.
for h in "--help" "--kubeconfig x --help"; do
        # shellcheck disable=SC2086
        run $h
        [ "$rc" -eq 0 ] || fail "cubelet $h: exit $rc"
        for f in --config --kubeconfig --pod-manifest-path --max-pods --eviction-hard \
                --node-status-update-frequency --node-status-report-frequency \
                --node-lease-duration-seconds --register-with-taints --cgroup-root \
                --crash-loop-backoff-max --insecure-registry --healthz-bind-address \
                --healthz-port --pod-logs-dir --eviction-pressure-transition-period --port \
                --client-ca-file; do
                grep -q -- "^  $f " <<<"$out" || fail "cubelet $h does not list $f"
        done
        # The option table's flags (up to the node API's own block) each
        # have their default ("--config FILE" says it in its own words).
        n_flags=$(sed -n '/^Agent flags/,/^  --port /p' <<<"$out" | grep -c '^  --')
        n_defaults=$(grep -c '; default ' <<<"$out")
        [ "$n_defaults" -ge $((n_flags - 2)) ] ||
                fail "cubelet $h: $n_flags flags but $n_defaults defaults"
done

# Without a kubeconfig and without static pods there is nothing to run.
run --max-pods 5
[ "$rc" -eq 2 ] || fail "no kubeconfig, no static pods: exit $rc"

finish
