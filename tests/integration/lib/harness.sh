# The harness every integration test sources (not a test itself:
# tests/integration/*.sh are the tests). tests/README.md lists what it
# offers; in short:
#
#   . "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
#   need_root; need_tools jq kubectl ...; need_cni bridge host-local
#   harness_init NAME         temp dir $tmp ($data $root $logs), cleanup trap
#   import_busybox            the test image as busybox:1.36 in $root
#   write_cni_conf [portmap]  a bridge network in $cni_dir ($bridge, $subnet)
#   start_standin [FLAGS]     etcd + the stand-in apiserver on $data
#   start_agent FLAGS         the agent with this test's dirs, in the background
#   k ARGS                    kubectl as the admin
#   poll SECONDS CMD...       until CMD succeeds; fail/pass/die/finish
#
# Cleanup runs on every exit (a passing end, a failed check, `exit`, set -e,
# SIGINT, SIGTERM, SIGHUP) and removes all the test made: the processes it
# started (by pid: background jobs, agents, the stand-in and its etcd), the
# processes in its cgroups, its mounts (container roots, netns files), its
# cgroups under $cgroot, the bridge and veths of its CNI network, and $tmp.
# It prints the tails of the agent and stand-in logs on a failure, and fails
# a passing test that has a sanitizer finding in "$tmp"/*.log.

H_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$H_LIB/sanitizers.sh"

# What ctest passes; defaults for running a script by hand from a checkout.
SOURCE_DIR=${SOURCE_DIR:-$(cd "$H_LIB/../../.." && pwd)}
FIXTURES=${FIXTURES:-$SOURCE_DIR/tests/fixtures}
CUBELET=${CUBELET:-$SOURCE_DIR/build/agent/cubelet}

# qgrep ARGS: grep without output that reads its whole input. `... | grep -q`
# stops reading at the first match, and under `set -o pipefail` a writer
# with more to say then dies of SIGPIPE and the pipeline fails although the
# line is there (image_gc failed so once on a loaded machine, its agent log
# being longer than what the pipe held).
qgrep() { grep "$@" >/dev/null; }

# ---- skips (exit 77: ctest reports the test as skipped) ---------------------
skip() {
        echo "SKIP: $*"
        exit 77
}
need_root() { [ "$(id -u)" -eq 0 ] || skip "needs root"; }
# need_tools NAME...: each a command on PATH or an absolute path.
need_tools() {
        local t
        for t in "$@"; do command -v "$t" >/dev/null 2>&1 || skip "$t missing"; done
}
# need_cni PLUGIN...: /usr/lib/cni/PLUGIN for each.
need_cni() {
        local p
        for p in "$@"; do [ -x "/usr/lib/cni/$p" ] || skip "CNI plugins missing ($p)"; done
}
need_memcg() {
        [ -f /sys/fs/cgroup/memory/memory.usage_in_bytes ] || skip "needs the cgroup v1 memory hierarchy"
}
need_bridge() {
        ip link add "cbltest$$" type bridge 2>/dev/null || skip "cannot create a bridge interface"
        ip link del "cbltest$$"
}
need_cubelet() { [ -x "$CUBELET" ] || { echo "FAIL: cubelet binary not found ($CUBELET); set CUBELET"; exit 1; }; }

# ---- checks ------------------------------------------------------------------
# fail counts and goes on (the test ends with `finish`), or, with
# H_FAIL_FAST=1, ends the test at once. die always ends it.
fails=0
xfails=0
H_FAIL_FAST=${H_FAIL_FAST:-0}
T0=$(date +%s)
fail() {
        echo "FAIL: $*"
        fails=$((fails + 1))
        [ "$H_FAIL_FAST" -eq 0 ] || exit 1
}
die() {
        echo "FATAL: $*"
        fails=$((fails + 1))
        exit 1
}
pass() { echo "ok   [$(($(date +%s) - T0))s] $*"; }
# known_bug WHAT REPRO: a check that fails because of a reported bug in the
# agent; printed as XFAIL, does not fail the test.
known_bug() {
        echo "XFAIL (known bug): $1"
        echo "      repro: $2"
        xfails=$((xfails + 1))
}
# finish: the summary line; exit 1 if any check failed.
finish() {
        local kb=""
        [ "$xfails" -eq 0 ] || kb=", $xfails known bug(s)"
        echo "$H_NAME: $fails failure(s)$kb, $(($(date +%s) - T0))s"
        [ "$fails" -eq 0 ] || exit 1
        echo "$H_NAME: all checks passed"
}

# poll SECONDS CMD...: runs CMD every 0.2 s until it succeeds; 1 when
# SECONDS pass first (the caller says what did not happen). For kubectl
# objects prefer `k wait --for=...` (a watch, no polling).
poll() {
        local end=$(($(date +%s%N) + ${1%.*} * 1000000000))
        shift
        while :; do
                "$@" && return 0
                [ "$(date +%s%N)" -lt "$end" ] || return 1
                sleep 0.2
        done
}
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
# fle A B: A <= B (decimals)
fle() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
# quietly CMD...: CMD without its output (poll 10 quietly k get pod x).
quietly() { "$@" >/dev/null 2>&1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# ---- temp dir, tracked resources and the cleanup ------------------------------
agent_pid=""
server_pid=""
bg_pids=()
H_LINKS=()
H_HOOKS=()
H_STARTED=0

# harness_init NAME: $tmp (/tmp/cubelet-NAME.XXXXXX) with $data (the
# stand-in's), $root (the agent's --root-dir), $logs (pod logs) and $cni_dir
# named; $cgroot, the cgroup parent of this test's pods; the traps.
harness_init() {
        H_NAME=$(basename "$0" .sh)
        tmp=$(mktemp -d "/tmp/cubelet-$1.XXXXXX")
        data=$tmp/data
        root=$tmp/root
        logs=$tmp/logs
        cni_dir=$tmp/cni
        mkdir -p "$logs" "$cni_dir"
        cgroot=cubelet-it-$$
        NODE=${NODE:-it-node-$$}
        trap harness_cleanup EXIT
        trap 'exit 129' HUP
        trap 'exit 130' INT
        trap 'exit 143' TERM
}
# track PID: a background process the cleanup stops (TERM, then KILL).
track() { bg_pids+=("$@"); }
# track_link IFNAME: a network interface the cleanup deletes.
track_link() { H_LINKS+=("$@"); }
# at_cleanup CMD: run CMD in the cleanup (after the processes are gone); a
# CMD that fails fails the test.
at_cleanup() { H_HOOKS+=("$1"); }
# watch_bg FILE kubectl-args...: a background `kubectl` (a watch) into FILE.
watch_bg() {
        local f=$1
        shift
        k "$@" >"$f" 2>/dev/null &
        track $!
}

# ours PID: PID is a live child of this test's shell (not a pid reused by
# another process after ours ended).
ours() { [ "$(ps -o ppid= -p "$1" 2>/dev/null | tr -d ' ')" = "$$" ]; }
# stop_pids PID...: those that are ours: TERM, up to 5 s, KILL.
stop_pids() {
        local p c i alive mine=()
        for p in "$@"; do
                ours "$p" || continue
                mine+=("$p")
                # a function run with & is a bash subshell: its commands too
                [ "$(cat "/proc/$p/comm" 2>/dev/null)" = bash ] || continue
                for c in $(ps -o pid= --ppid "$p" 2>/dev/null); do mine+=("$c"); done
        done
        set -- "${mine[@]}"
        [ $# -gt 0 ] || return 0
        for p in "$@"; do kill -TERM "$p" 2>/dev/null; done
        for i in $(seq 50); do
                alive=0
                for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
                [ "$alive" -eq 1 ] || break
                sleep 0.1
        done
        for p in "$@"; do
                kill -KILL "$p" 2>/dev/null
                wait "$p" 2>/dev/null
        done
        return 0
}
# kill_cgroup_procs: every process in this test's cgroups (the containers a
# failed check or a stopped agent left; their monitors exit with them).
kill_cgroup_procs() {
        local h d p
        for h in /sys/fs/cgroup/*/"$cgroot"; do
                [ -d "$h" ] || continue
                find "$h" -depth -type d | while read -r d; do
                        for p in $(cat "$d/cgroup.procs" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
                done
        done
}

harness_cleanup() {
        local rc=$? h l v
        set +e
        trap '' HUP INT TERM
        stop_pids "${bg_pids[@]}"
        if [ -n "$agent_pid" ]; then
                kill -CONT "$agent_pid" 2>/dev/null
                stop_pids "$agent_pid"
        fi
        kill_cgroup_procs
        if [ -n "$server_pid" ]; then
                stop_standin_quiet || rc=$((rc == 0 ? 1 : rc))
        fi
        [ "$H_STARTED" -eq 0 ] || sleep 0.3
        grep " $tmp" /proc/self/mountinfo | awk '{print $5}' | sort -r | xargs -r -n1 umount -l 2>/dev/null
        for h in /sys/fs/cgroup/*/"$cgroot"; do
                [ -d "$h" ] && find "$h" -depth -type d -exec rmdir {} \; 2>/dev/null
        done
        for l in "${H_LINKS[@]}"; do
                # the host ends of veths still on the bridge, then the bridge
                for v in $(ip -o link show master "$l" 2>/dev/null | awk -F'[:@ ]+' '{print $2}'); do
                        ip link del "$v" 2>/dev/null
                done
                ip link del "$l" 2>/dev/null
        done
        for h in "${H_HOOKS[@]}"; do
                eval "$h" || rc=$((rc == 0 ? 1 : rc))
        done
        if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
                [ -s "$tmp/agent.log" ] && { echo "--- agent log (tail)"; tail -n 40 "$tmp/agent.log"; }
                [ -s "$tmp/server.log" ] && { echo "--- server log (tail)"; tail -n 20 "$tmp/server.log"; }
        fi
        [ -n "${KEEP_AGENT_LOG:-}" ] && [ -f "$tmp/agent.log" ] && cp "$tmp/agent.log" "$KEEP_AGENT_LOG"
        sanitizer_findings "$tmp"/*.log || { [ "$rc" -ne 0 ] || rc=1; }
        rm -rf "$tmp"
        exit "$rc"
}

# ---- the test image and the network ---------------------------------------------
# import_busybox [ROOT-DIR]: builds tests/images' busybox (once per test) and
# imports it as busybox:1.36 into ROOT-DIR (default $root).
import_busybox() {
        local r=${1:-$root}
        mkdir -p "$r"
        [ -f "$tmp/img/busybox.oci.tar" ] ||
                bash "$SOURCE_DIR/tests/images/build-busybox.sh" "$tmp/img" >/dev/null || die "build-busybox.sh failed"
        "$CUBELET" --root-dir "$r" image import "$tmp/img/busybox.oci.tar" --name busybox:1.36 >/dev/null ||
                die "image import failed"
}
# start_registry: Debian's docker-registry on a free loopback port, plain
# HTTP, storage in $tmp/registry: sets $reg (127.0.0.1:PORT).
start_registry() {
        reg=127.0.0.1:$(free_port)
        printf 'version: 0.1\nlog: {level: warn}\nstorage: {filesystem: {rootdirectory: %s}}\nhttp: {addr: %s}\n' \
                "$tmp/registry" "$reg" >"$tmp/registry.yml"
        docker-registry serve "$tmp/registry.yml" >"$tmp/registry.log" 2>&1 &
        track $!
        poll 10 curl -fs "http://$reg/v2/" -o /dev/null ||
                die "docker-registry did not start on $reg: $(tail -3 "$tmp/registry.log")"
}
# push_busybox REPO:TAG: tests/images' busybox (built once per test) pushed
# to $reg as REPO:TAG with skopeo.
push_busybox() {
        [ -d "$tmp/img/layout" ] ||
                bash "$SOURCE_DIR/tests/images/build-busybox.sh" "$tmp/img" >/dev/null || die "build-busybox.sh failed"
        echo '{"default": [{"type": "insecureAcceptAnything"}]}' >"$tmp/policy.json"
        skopeo --policy "$tmp/policy.json" copy -q --dest-tls-verify=false "oci:$tmp/img/layout:1.36" \
                "docker://$reg/$1" || die "skopeo could not push $1 to $reg"
}
# pick_subnet: $subnet, a /24 that no route on this machine covers.
pick_subnet() {
        local x
        for x in $(seq 40 250); do
                subnet=10.$x.$(($$ % 200 + 20)).0/24
                ip route | qgrep "^10\.$x\." || break
        done
}
# pick_nodeip: $nodeip, an address in a 10.x net no route covers (from the top).
pick_nodeip() {
        local x
        for x in $(seq 251 -1 40); do
                nodeip=10.$x.$(($$ % 200 + 21)).7
                ip route | qgrep "^10\.$x\." || break
        done
}
# write_cni_conf [portmap]: $cni_dir/10-it.conflist, a bridge ($bridge) with
# host-local addresses from $subnet kept in $tmp/ipam/$cni_name; with
# "portmap", the portmap plugin chained after it.
write_cni_conf() {
        local pm=""
        bridge=cbr$$
        cni_name=cubelet-it-$$
        [ -n "${subnet:-}" ] || pick_subnet
        [ "${1:-}" != portmap ] || pm=',
 {"type":"portmap","capabilities":{"portMappings":true}}'
        mkdir -p "$cni_dir"
        cat >"$cni_dir/10-it.conflist" <<EOF
{"cniVersion":"1.0.0","name":"$cni_name","plugins":[
 {"type":"bridge","bridge":"$bridge","isGateway":true,"ipMasq":false,
  "ipam":{"type":"host-local","ranges":[[{"subnet":"$subnet"}]],"dataDir":"$tmp/ipam"}}$pm]}
EOF
        track_link "$bridge"
}
# add_node_ip: an empty bridge $dummy holding $nodeip (pick_nodeip), so that
# the stand-in really dials $nodeip:10250.
add_node_ip() {
        [ -n "${nodeip:-}" ] || pick_nodeip
        dummy=cbd$$
        track_link "$dummy"
        ip link add "$dummy" type bridge && ip addr add "$nodeip/32" dev "$dummy" && ip link set "$dummy" up ||
                die "cannot set up $dummy with $nodeip"
}

# ---- the stand-in apiserver (tests/apiserver, real etcd) -------------------------
# start_standin [run.sh flags...]: starts it on $data for node $NODE (on the
# same port as before when restarted) and waits until it is ready: sets
# $server_pid, $standin_port, $standin_url. Every admission plugin is on,
# ServiceAccount admission too (cubelet mounts the kube-api-access-*
# volume, issue 14), unless CUBELET_STANDIN_DISABLE_ADMISSION_PLUGINS names
# plugins to turn off (e.g. ServiceAccount).
standin_port=""
standin_url=""
H_STANDIN_STARTS=0
start_standin() {
        local args=(--data "$data" --node-name "$NODE") i
        export CUBELET_STANDIN_DISABLE_ADMISSION_PLUGINS=${CUBELET_STANDIN_DISABLE_ADMISSION_PLUGINS-}
        [ -n "$standin_port" ] && args+=(--port "$standin_port")
        mkdir -p "$data"
        H_STARTED=1
        H_STANDIN_STARTS=$((H_STANDIN_STARTS + 1))
        "$SOURCE_DIR/tests/apiserver/run.sh" "${args[@]}" "$@" >>"$tmp/server.log" 2>&1 &
        server_pid=$!
        for i in $(seq 300); do
                if [ "$(grep -c '^ready ' "$tmp/server.log")" -ge "$H_STANDIN_STARTS" ]; then
                        standin_url=$(grep '^ready ' "$tmp/server.log" | tail -n1 | sed 's/^ready //')
                        standin_port=${standin_url##*:}
                        return 0
                fi
                kill -0 "$server_pid" 2>/dev/null ||
                        die "the stand-in exited at start (port ${standin_port:-any}): $(tail -3 "$tmp/server.log")"
                sleep 0.2
        done
        die "the stand-in did not become ready in 60 s: $(tail -3 "$tmp/server.log")"
}
# stop_standin: SIGTERM, wait; its etcd must be gone with it (a check).
stop_standin() { stop_standin_quiet || fail "etcd survived the stand-in"; }
stop_standin_quiet() {
        local etcd_pid="" i
        [ -f "$data/etcd.pid" ] && etcd_pid=$(cat "$data/etcd.pid")
        kill -TERM "$server_pid" 2>/dev/null
        wait "$server_pid" 2>/dev/null
        server_pid=""
        [ -n "$etcd_pid" ] || return 0
        for i in $(seq 50); do
                grep -qs etcd "/proc/$etcd_pid/comm" || return 0
                sleep 0.1
        done
        echo "FAIL: etcd (pid $etcd_pid) survived the stand-in"
        kill -KILL "$etcd_pid" 2>/dev/null
        return 1
}

# token_secret ID SECRET GROUPS EXPIRATION: a bootstrap token, the Secret
# `kubeadm token create` makes (kube-system/bootstrap-token-ID).
token_secret() {
        k create -f - >/dev/null <<EOF || die "cannot create the bootstrap token $1"
apiVersion: v1
kind: Secret
metadata: {name: bootstrap-token-$1, namespace: kube-system}
type: bootstrap.kubernetes.io/token
stringData:
  token-id: "$1"
  token-secret: "$2"
  usage-bootstrap-authentication: "true"
  usage-bootstrap-signing: "true"
  auth-extra-groups: "$3"
  expiration: "$4"
EOF
}
# bootstrap_kubeconfig FILE TOKEN: a kubeconfig for the stand-in with the
# bootstrap token TOKEN (the agent's --bootstrap-kubeconfig).
bootstrap_kubeconfig() {
        cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: standin
  cluster: {server: "$standin_url", certificate-authority: "$data/ca.crt"}
users:
- name: kubelet-bootstrap
  user: {token: "$2"}
contexts:
- name: bootstrap
  context: {cluster: standin, user: kubelet-bootstrap}
current-context: bootstrap
EOF
}

# node_api_start NAME NODE: the start of the node API tests (node_api*.sh):
# the skips (root, tools, CNI, cgroup v1 memory, a bridge); harness_init
# NAME for node NODE, kubectl's timeout 30 s, pods' grace 1 s; $nodeip on an
# empty bridge, the image, a bridge network, the stand-in (with its kubelet
# client certificate), a free healthz port ($hport) and a token file for the
# agent ($tmp/tokens.csv: user napi-tester, token tok-$$-secret).
node_api_start() {
        need_root
        need_tools jq umoci ip busybox kubectl openssl python3 curl /usr/bin/etcd
        need_cni bridge host-local
        [ -d /sys/fs/cgroup/memory ] || skip "needs the cgroup v1 memory hierarchy"
        need_bridge
        NODE=$2
        harness_init "$1"
        K_TIMEOUT=30s
        MKPOD_GRACE=1
        add_node_ip
        import_busybox
        write_cni_conf
        start_standin
        [ -f "$data/kubelet-client.crt" ] || die "the stand-in made no kubelet-client.crt"
        hport=$(free_port)
        echo "tok-$$-secret,napi-tester,1" >"$tmp/tokens.csv"
}

# K_TIMEOUT: kubectl's --request-timeout (0: none).
K_TIMEOUT=${K_TIMEOUT:-20s}
k() { kubectl --kubeconfig "$data/admin.kubeconfig" --request-timeout="$K_TIMEOUT" "$@"; }
pj() { k get pod "$1" -o jsonpath="$2" 2>/dev/null; }
phase_is() { [ "$(pj "$1" '{.status.phase}')" = "$2" ]; }
gone() { ! k get pod "$1" >/dev/null 2>&1; }
# wait_running POD [SECONDS]
wait_running() {
        poll "${2:-30}" phase_is "$1" Running ||
                fail "$1: not Running after ${2:-30}s (phase $(pj "$1" '{.status.phase}'))"
}
# mkpod NAME [restartPolicy] [grace] [node]: a pod bound to $NODE (or node),
# its spec's containers/volumes on stdin (indented by 2).
mkpod() {
        {
                printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: default}\nspec:\n' "$1"
                printf '  nodeName: %s\n  restartPolicy: %s\n  terminationGracePeriodSeconds: %s\n' \
                        "${4:-$NODE}" "${2:-Always}" "${3:-${MKPOD_GRACE:-2}}"
                cat
        } | k create -f - >/dev/null || fail "$1: kubectl create failed"
}
# events_of KIND NAME REASON: "type|message" lines of the events about the
# object with REASON (KIND "" for any kind).
events_of() {
        local sel="involvedObject.name=$2,reason=$3"
        [ -z "$1" ] || sel="involvedObject.kind=$1,$sel"
        k get events -A --field-selector "$sel" \
                -o jsonpath='{range .items[*]}{.type}|{.message}{"\n"}{end}' 2>/dev/null
}
# node_ready [SECONDS]: the node registers and turns Ready.
node_ready() {
        poll "${1:-30}" eval 'k get node "$NODE" >/dev/null 2>&1' || die "node $NODE not registered after ${1:-30} s"
        k wait --for=condition=Ready "node/$NODE" --timeout="${1:-30}s" >/dev/null || die "node $NODE not Ready"
}

# ---- the agent ------------------------------------------------------------------
# spawn_agent ARGS...: "$CUBELET" ARGS in the background, its output
# appended to $tmp/agent.log; sets $agent_pid.
spawn_agent() {
        H_STARTED=1
        "$CUBELET" "$@" >>"$tmp/agent.log" 2>&1 &
        agent_pid=$!
}
# start_agent ARGS...: spawn_agent with this test's --root-dir, CNI dir, pod
# logs dir, cgroup parent and node name.
start_agent() {
        spawn_agent --root-dir "$root" --cni-conf-dir "$cni_dir" --pod-logs-dir "$logs" --cgroup-root "$cgroot" \
                --hostname-override "$NODE" "$@"
}
# stop_agent [SECONDS]: SIGTERM; the agent must exit 0 within SECONDS
# (default 30; then it is killed).
stop_agent() {
        local rc=0
        kill -TERM "$agent_pid"
        poll "${1:-30}" eval '! kill -0 "$agent_pid" 2>/dev/null' ||
                { fail "the agent still runs ${1:-30} s after SIGTERM"; kill -KILL "$agent_pid"; }
        wait "$agent_pid" || rc=$?
        agent_pid=""
        [ "$rc" -eq 0 ] || fail "the agent exited $rc on SIGTERM"
}
# run_pod_cmd YAML [flags...]: sets $pod_argv to `cubelet run-pod YAML` with
# this test's --root-dir, CNI dir, pod logs dir and cgroup parent (-v 1:
# events on stderr), for `"${pod_argv[@]}" >out 2>err [&]` (in the
# background, $! is the run-pod process itself).
run_pod_cmd() {
        pod_argv=("$CUBELET" -v 1 --root-dir "$root" --cni-conf-dir "$cni_dir" run-pod "$1"
                --pod-logs-dir "$logs" --cgroup-root "$cgroot" "${@:2}")
}
# wait_log PATTERN [SECONDS]: until $tmp/agent.log has a line matching the
# extended regex PATTERN (default 15 s), else a failed check.
wait_log() {
        poll "${2:-15}" grep -Eq "$1" "$tmp/agent.log" ||
                fail "the agent log has no line matching /$1/ after ${2:-15}s"
}
# fds and processes of the agent, to check nothing leaks
agent_fds() { ls /proc/"$agent_pid"/fd 2>/dev/null | wc -l; }
agent_children() { ps -o pid= --ppid "$agent_pid" 2>/dev/null | wc -l; }
