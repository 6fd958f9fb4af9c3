#!/usr/bin/env bash
# Cluster DNS and service links (issue 14) through kubectl against the
# stand-in: the /etc/resolv.conf of pods for each dnsPolicy with
# --cluster-dns/--cluster-domain, byte for byte what the kubelet (and
# containerd) give; KUBERNETES_SERVICE_HOST and a created Service's
# docker-link variables inside a pod, absent with enableServiceLinks: false
# (except the kubernetes Service's); the MissingClusterDNS fallback of an
# agent without --cluster-dns. Exit 77 when not root or a tool is missing.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
need_root
need_tools jq umoci ip iptables busybox kubectl openssl python3 /usr/bin/etcd
need_cni bridge host-local
harness_init dns-env-pull

uid_of() { pj "$1" '{.metadata.uid}'; }
pod_log() { cat "$logs"/default_"$1"_"$(uid_of "$1")"/"${2:-main}"/0.log 2>/dev/null | cut -d' ' -f4-; }
has_log() { pod_log "$1" | qgrep -xF -- "$2"; }
events() { events_of "" "$1" "$2"; }
printed() { pod_log "$1" | qgrep -x END; }

import_busybox
write_cni_conf
start_standin
# The node's resolver file the Default policy starts from.
cat >"$tmp/node-resolv.conf" <<'R'
# the node's resolver
nameserver 192.0.2.53
search corp.example lab.example.
options edns0 timeout:2
R
agent_flags=(-v 1 --kubeconfig "$data/node.kubeconfig" --node-ip 10.0.0.5 --resolv-conf "$tmp/node-resolv.conf"
        --node-status-update-frequency 1s --node-lease-duration-seconds 4)
start_agent "${agent_flags[@]}" --healthz-port "$(free_port)" --cluster-dns 10.96.0.10 --cluster-domain cluster.local
node_ready
pass "node Ready"

# ---- 1. DNS: each policy -----------------------------------------------------------
# dns_pod NAME SPEC-LINES [SHELL]: a pod that prints its resolv.conf (or
# runs SHELL), then END
dns_pod() {
        mkpod "$1" <<EOF
$2
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, '${3:-cat /etc/resolv.conf}; echo END; sleep 3600']
EOF
}
resolv_of() { pod_log "$1" | sed '/^END$/,$d'; }
dns_pod cf ""
dns_pod cfhn "  hostNetwork: true
  dnsPolicy: ClusterFirstWithHostNet"
dns_pod cfh "  hostNetwork: true"
dns_pod def "  dnsPolicy: Default"
dns_pod none "  dnsPolicy: None
  dnsConfig:
    nameservers: [1.1.1.1]
    searches: [a.example]
    options: [{name: ndots, value: '2'}, {name: edns0}]"
dns_pod merged "  dnsConfig:
    nameservers: [9.9.9.9, 10.96.0.10]
    searches: [extra.example]
    options: [{name: ndots, value: '3'}, {name: single-request-reopen}]"
for p in cf cfhn cfh def none merged; do
        wait_running $p 60
        poll 10 printed $p || fail "$p: no output"
done
want_cf='search default.svc.cluster.local svc.cluster.local cluster.local corp.example lab.example
nameserver 10.96.0.10
options ndots:5'
want_def='search corp.example lab.example
nameserver 192.0.2.53
options edns0 timeout:2'
check_resolv() { # POD WANT
        local got
        got=$(resolv_of "$1")
        if [ "$got" = "$2" ]; then
                pass "1 $1: $(printf '%s' "$got" | paste -sd'|')"
        else
                fail "$1: resolv.conf
$got
want
$2"
        fi
}
check_resolv cf "$want_cf"
check_resolv cfhn "$want_cf"
check_resolv cfh "$want_def"
check_resolv def "$want_def"
check_resolv none 'search a.example
nameserver 1.1.1.1
options ndots:2 edns0'
check_resolv merged 'search default.svc.cluster.local svc.cluster.local cluster.local corp.example lab.example extra.example
nameserver 10.96.0.10
nameserver 9.9.9.9
options ndots:3 single-request-reopen'
# Byte for byte what a real pod of namespace default sees (containerd's
# file), from a node without searches of its own.
printf 'nameserver 192.0.2.53\n' >"$tmp/node-resolv.conf"
dns_pod real ""
wait_running real 60
poll 10 printed real || fail "real: no output"
fx="$FIXTURES/real-cluster/resolv.conf-containerd-default-ns"
if cmp -s "$root/sandboxes/$(uid_of real)/resolv.conf" "$fx" && [ "$(resolv_of real)" = "$(cat "$fx")" ]; then
        pass "1 a ClusterFirst pod's resolv.conf is byte for byte the real pod's (resolv.conf-containerd-default-ns)"
else
        fail "real: $(od -c "$root/sandboxes/$(uid_of real)/resolv.conf" | head -8)"
fi
k delete pod cf cfhn cfh def none merged real --wait=false >/dev/null

# /etc/hosts and the hostname as the kubelet writes them: hostname and
# subdomain give the FQDN line, hostAliases their block (also on the host
# network, after the node's file), setHostnameAsFQDN the kernel's hostname.
show_hosts='cat /etc/hosts; echo "uts=$(hostname)"'
dns_pod names "  hostname: db-0
  subdomain: db
  setHostnameAsFQDN: true
  hostAliases:
  - {ip: 10.1.2.3, hostnames: [foo.local, bar.local]}
  - {ip: 10.1.2.4, hostnames: [baz]}" "$show_hosts"
dns_pod hnames "  hostNetwork: true
  hostAliases:
  - {ip: 10.1.2.5, hostnames: [qux]}" "$show_hosts"
wait_running names 60
wait_running hnames 60
poll 10 printed names || fail "names: no output"
poll 10 printed hnames || fail "hnames: no output"
ip=$(pj names '{.status.podIP}')
want_hosts="# Kubernetes-managed hosts file.
127.0.0.1	localhost
::1	localhost ip6-localhost ip6-loopback
fe00::0	ip6-localnet
fe00::0	ip6-mcastprefix
fe00::1	ip6-allnodes
fe00::2	ip6-allrouters
$ip	db-0.db.default.svc.cluster.local	db-0

# Entries added by HostAliases.
10.1.2.3	foo.local	bar.local
10.1.2.4	baz
uts=db-0.db.default.svc.cluster.local"
got=$(pod_log names | sed '/^END$/,$d')
[ "$got" = "$want_hosts" ] || fail "names: /etc/hosts and hostname
$got
want
$want_hosts"
got=$(pod_log hnames | sed '/^END$/,$d')
want_h="# Kubernetes-managed hosts file (host network).
$(cat /etc/hosts)

# Entries added by HostAliases.
10.1.2.5	qux
uts=$(hostname)"
[ "$got" = "$want_h" ] || fail "hnames: /etc/hosts
$got
want
$want_h"
pass "1 /etc/hosts: the FQDN line from hostname+subdomain, the HostAliases block (pod and host network), setHostnameAsFQDN's kernel hostname"
k delete pod names hnames --wait=false >/dev/null

# ---- 2. service links ----------------------------------------------------------------
k create service clusterip web --tcp=8080:80 >/dev/null || fail "create service web"
k create -f - >/dev/null <<'EOF' || fail "create service dns-udp"
apiVersion: v1
kind: Service
metadata: {name: dns-udp, namespace: default}
spec:
  ports:
  - {name: dns, port: 53, protocol: UDP}
  - {name: metrics, port: 9153, protocol: TCP}
EOF
web_ip=$(k get service web -o jsonpath='{.spec.clusterIP}')
udp_ip=$(k get service dns-udp -o jsonpath='{.spec.clusterIP}')
kube_ip=$(k get service kubernetes -o jsonpath='{.spec.clusterIP}')
kube_port=$(k get service kubernetes -o jsonpath='{.spec.ports[0].port}')
[ -n "$web_ip" ] && [ -n "$udp_ip" ] && [ -n "$kube_ip" ] || fail "ClusterIPs: web '$web_ip' dns-udp '$udp_ip' kubernetes '$kube_ip'"
env_pod() { # NAME SPEC-LINES
        mkpod "$1" <<EOF
$2
  containers:
  - name: main
    image: busybox:1.36
    env:
    - {name: API, value: 'https://\$(KUBERNETES_SERVICE_HOST):\$(KUBERNETES_SERVICE_PORT)'}
    - {name: WEB_SERVICE_PORT, value: mine}
    command: [sh, -c, 'env | sort; echo END; sleep 3600']
EOF
}
env_pod links ""
env_pod nolinks "  enableServiceLinks: false"
for p in links nolinks; do
        wait_running $p 60
        poll 10 printed $p || fail "$p: no output"
done
for kv in "KUBERNETES_SERVICE_HOST=$kube_ip" "KUBERNETES_SERVICE_PORT=$kube_port" \
        "KUBERNETES_SERVICE_PORT_HTTPS=$kube_port" "KUBERNETES_PORT=tcp://$kube_ip:$kube_port" \
        "KUBERNETES_PORT_${kube_port}_TCP_ADDR=$kube_ip" "API=https://$kube_ip:$kube_port"; do
        has_log links "$kv" || fail "links: no $kv"
        has_log nolinks "$kv" || fail "nolinks: no $kv"
done
pass "2 KUBERNETES_SERVICE_HOST=$kube_ip and the rest in both pods; \$(VAR) sees them"
for kv in "WEB_SERVICE_HOST=$web_ip" "WEB_SERVICE_PORT=mine" "WEB_SERVICE_PORT_8080_80=8080" \
        "WEB_PORT=tcp://$web_ip:8080" "WEB_PORT_8080_TCP=tcp://$web_ip:8080" "WEB_PORT_8080_TCP_PROTO=tcp" \
        "WEB_PORT_8080_TCP_PORT=8080" "WEB_PORT_8080_TCP_ADDR=$web_ip" \
        "DNS_UDP_SERVICE_HOST=$udp_ip" "DNS_UDP_SERVICE_PORT=53" "DNS_UDP_SERVICE_PORT_DNS=53" \
        "DNS_UDP_SERVICE_PORT_METRICS=9153" "DNS_UDP_PORT=udp://$udp_ip:53" \
        "DNS_UDP_PORT_53_UDP=udp://$udp_ip:53" "DNS_UDP_PORT_53_UDP_PROTO=udp" \
        "DNS_UDP_PORT_9153_TCP_ADDR=$udp_ip"; do
        has_log links "$kv" || fail "links: no $kv ($(pod_log links | grep -E '^(WEB|DNS_UDP)' | paste -sd' '))"
done
pass "2 web and dns-udp variables in the pod (the container's WEB_SERVICE_PORT wins)"
# (WEB_SERVICE_PORT=mine is the container's own)
if pod_log nolinks | grep -v '^WEB_SERVICE_PORT=mine$' | qgrep -E '^(WEB|DNS_UDP)_'; then
        fail "nolinks: service variables with enableServiceLinks false: $(pod_log nolinks | grep -E '^(WEB|DNS_UDP)_' | paste -sd' ')"
else
        pass "2 enableServiceLinks: false: only the kubernetes Service's variables"
fi
k delete pod links nolinks --wait=false >/dev/null

# ---- 3. no --cluster-dns: ClusterFirst falls back to Default ---------------------------
stop_agent
start_agent "${agent_flags[@]}" --healthz-port "$(free_port)"
dns_pod fallback ""
wait_running fallback 60
poll 10 printed fallback || fail "fallback: no output"
[ "$(resolv_of fallback)" = "nameserver 192.0.2.53" ] || fail "fallback: resolv.conf $(resolv_of fallback)"
missing='kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.'
if poll 10 eval 'events fallback MissingClusterDNS | qgrep -F "$missing"'; then
        pass "3 no --cluster-dns: the node's file and the MissingClusterDNS warning"
else
        fail "fallback: events $(events fallback MissingClusterDNS)"
fi
finish
