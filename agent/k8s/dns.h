/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A pod's /etc/resolv.conf as the kubelet forms it (k/k
 * pkg/kubelet/network/dns/dns.go, GetPodDNS) and containerd writes it
 * (search, then nameserver lines, then options):
 *  - the node's resolver file (--resolv-conf) parsed as the kubelet does:
 *    nameservers accumulate, the last search line wins (trailing dots
 *    dropped, "." skipped), options merge by name;
 *  - dnsPolicy None: nothing but the pod's dnsConfig; ClusterFirst (not
 *    hostNetwork) and ClusterFirstWithHostNet: the cluster DNS servers,
 *    search <ns>.svc.<domain> svc.<domain> <domain> then the node's
 *    searches, options ndots:5; Default (and ClusterFirst on hostNetwork):
 *    the node's file (--resolv-conf "" : nameserver 127.0.0.1, search .);
 *    ClusterFirst without cluster DNS servers falls back to Default with
 *    the kubelet's MissingClusterDNS warning;
 *  - dnsConfig appended (duplicates dropped, options by name, the pod's
 *    value wins), then the limits: 3 nameservers, 32 search paths, none
 *    over 253 characters, 2048 characters in all, each cut with the
 *    kubelet's DNSConfigForming warning.
 * Go's maps make the kubelet's option order random; cubelet keeps the
 * order in which each option name first appears.
 * Pure: no I/O; the caller reads the node's file.
 */

#include <stddef.h>

#include "agent/k8s/k8s.h"
#include "lib/arena.h"
#include "lib/error.h"

#define K8S_DNS_MAX_NAMESERVERS   3
#define K8S_DNS_MAX_SEARCHES      32
#define K8S_DNS_MAX_SEARCH_CHARS  2048
#define K8S_DNS_MAX_SEARCH_DOMAIN 253
#define K8S_DNS_MAX_WARNINGS      4

struct k8s_dns_node {
        const char *const *cluster_dns; /* --cluster-dns */
        size_t n_cluster_dns;
        const char *cluster_domain; /* --cluster-domain; NULL or "": none */
        /* the content of --resolv-conf; NULL when --resolv-conf is "" */
        const char *host_resolv;
        const char *const *node_ips; /* for --resolv-conf "" (127.0.0.1 or ::1 each) */
        size_t n_node_ips;
};

struct k8s_dns_warning {
        const char *reason; /* "MissingClusterDNS", "DNSConfigForming" */
        char *message;
};

struct k8s_pod_dns {
        char **servers, **searches, **options;
        size_t n_servers, n_searches, n_options;
        /* the file: "search ...\nnameserver ...\noptions ...\n"; "" when all
         * three are empty (the runtime then copies the node's file, as
         * containerd does) */
        char *resolv_conf;
        struct k8s_dns_warning warnings[K8S_DNS_MAX_WARNINGS];
        size_t n_warnings;
};

/* Parses resolv.conf text as the kubelet's parseResolvConf. -1 with the
 * kubelet's message for a nameserver line without an address. */
int k8s_parse_resolv_conf(struct cb_arena *a, const char *text, struct k8s_pod_dns *ret,
                          struct cb_error *err);

/* The pod's DNS settings. -1 (err) only when the node's file does not
 * parse ("Encountered error while parsing resolv conf file. Error: ..."),
 * which fails the sandbox as in the kubelet. */
int k8s_pod_dns(struct cb_arena *a, const struct k8s_pod *pod, const struct k8s_dns_node *node,
                struct k8s_pod_dns *ret, struct cb_error *err);

/* The pod's names as the kubelet gives them (GeneratePodHostNameAndDomain,
 * GetNodenameForKernel, hostsEntriesFromHostAliases). */
struct k8s_pod_names {
        char *hostname;    /* spec.hostname or the pod name, cut to 63 characters
                            * without a trailing '-' or '.' */
        char *domain;      /* "<subdomain>.<ns>.svc.<cluster domain>" or "" */
        char *uts;         /* the kernel's hostname: hostname, or hostname.domain
                            * with setHostnameAsFQDN */
        char *alias_lines; /* spec.hostAliases as the hosts file's block
                            * ("\n# Entries added by HostAliases.\n" then
                            * "IP\tname\tname\n" each), "" when none */
};

/* -1 with the kubelet's message when setHostnameAsFQDN asks for an FQDN
 * over 64 characters (the pod's sandbox then fails, as in the kubelet). */
int k8s_pod_names(struct cb_arena *a, const struct k8s_pod *pod, const char *cluster_domain,
                  struct k8s_pod_names *ret, struct cb_error *err);
