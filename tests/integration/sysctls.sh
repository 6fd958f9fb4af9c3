#!/usr/bin/env bash
# Pod sysctls through kubectl and the stand-in (docs/security.md, Sysctls):
# safe ones (and one allowed with --allowed-unsafe-sysctls) set in the
# pod's own network and IPC namespaces, seen by its container, the node's
# values unchanged; an unsafe one rejected with the kubelet's
# SysctlForbidden text, a net.* one with hostNetwork refused at create as
# kube-apiserver refuses it; a bad
# --allowed-unsafe-sysctls stops the agent at start with the kubelet's
# message. Exit 77 when not root or a tool is missing.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
need_root
need_tools jq umoci ip iptables busybox kubectl /usr/bin/etcd
need_cni bridge host-local
harness_init sysctls

import_busybox
write_cni_conf
start_standin

# A pattern that is not namespaced: the agent does not start.
if out=$(timeout 20 "$CUBELET" --root-dir "$tmp/bad-root" --cni-conf-dir "$cni_dir" --pod-logs-dir "$logs" \
        --cgroup-root "$cgroot" --hostname-override "$NODE" --kubeconfig "$data/node.kubeconfig" \
        --allowed-unsafe-sysctls vm.swappiness 2>&1); then
        fail "the agent started with --allowed-unsafe-sysctls vm.swappiness"
else
        grep -qF 'the sysctl "vm.swappiness" are not known to be namespaced' <<<"$out" ||
                fail "bad pattern: $out"
fi
pass "--allowed-unsafe-sysctls vm.swappiness: the agent refuses to start ('the sysctl \"vm.swappiness\" are not known to be namespaced')"

start_agent -v 1 --kubeconfig "$data/node.kubeconfig" --healthz-port "$(free_port)" \
        --allowed-unsafe-sysctls 'net.core.somaxconn'
node_ready
uid_of() { pj "$1" '{.metadata.uid}'; }
plog() { cat "$logs"/default_"$1"_"$(uid_of "$1")"/main/0.log 2>/dev/null | cut -d' ' -f4-; }

host_port=$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start)
host_shm=$(cat /proc/sys/kernel/shm_rmid_forced)
host_somax=$(cat /proc/sys/net/core/somaxconn)
want_port=$((host_port == 0 ? 1 : 0))
want_shm=$((host_shm == 0 ? 1 : 0))
mkpod set <<EOF
  securityContext:
    sysctls:
    - {name: net.ipv4.ip_unprivileged_port_start, value: "$want_port"}
    - {name: kernel/shm_rmid_forced, value: "$want_shm"}
    - {name: net.core.somaxconn, value: "777"}
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'echo "port=\$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start) shm=\$(cat /proc/sys/kernel/shm_rmid_forced) somax=\$(cat /proc/sys/net/core/somaxconn)"; sleep 3600']
EOF
wait_running set 60
poll 10 eval 'plog set | qgrep "^port="' || fail "set: no output"
[ "$(plog set | head -1)" = "port=$want_port shm=$want_shm somax=777" ] ||
        fail "set: the container saw '$(plog set | head -1)', want port=$want_port shm=$want_shm somax=777"
[ "$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start)|$(cat /proc/sys/kernel/shm_rmid_forced)|$(cat /proc/sys/net/core/somaxconn)" = "$host_port|$host_shm|$host_somax" ] ||
        fail "the node's sysctls changed"
pass "safe sysctls (one with '/' separators) and an allowed unsafe one in the pod: $(plog set | head -1); the node's unchanged"

mkpod unsafe <<EOF
  securityContext:
    sysctls: [{name: net.ipv4.ip_forward, value: "1"}]
  containers:
  - {name: main, image: busybox:1.36, command: [sleep, "3600"]}
EOF
# With hostNetwork a net.* sysctl never reaches a node: kube-apiserver's
# validation refuses it (ValidateHostSysctl); the kubelet's own check of it
# (static pods) is in unit/test_sysctl.
out=$(k create -f - 2>&1 <<EOF
apiVersion: v1
kind: Pod
metadata: {name: hostnet, namespace: default}
spec:
  nodeName: $NODE
  hostNetwork: true
  securityContext:
    sysctls: [{name: net.ipv4.tcp_syncookies, value: "1"}]
  containers:
  - {name: main, image: busybox:1.36, command: [sleep, "3600"]}
EOF
) && fail "hostnet: created: $out"
grep -qF "spec.securityContext.sysctls[0].name: Invalid value: \"net.ipv4.tcp_syncookies\": may not be specified when 'hostNetwork' is true" <<<"$out" ||
        fail "hostnet: $out"
poll 20 phase_is unsafe Failed || fail "unsafe: $(pj unsafe '{.status.phase}') (want Failed)"
[ "$(pj unsafe '{.status.reason}|{.status.message}')" = 'SysctlForbidden|Pod was rejected: forbidden sysctl: "net.ipv4.ip_forward" not allowlisted' ] ||
        fail "unsafe: $(pj unsafe '{.status.reason}|{.status.message}')"
pass "rejected as the kubelet: $(pj unsafe '{.status.message}'); hostNetwork + net.* refused at create as by kube-apiserver"

k delete pods --all --grace-period=1 --wait=false >/dev/null 2>&1
poll 40 eval '[ -z "$(k get pods -o name 2>/dev/null)" ]' || fail "pods not gone"
stop_agent 10
sanitizer_findings "$tmp/agent.log" || fail "sanitizer reports in the agent log"
finish
