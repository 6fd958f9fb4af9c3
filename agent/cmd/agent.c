/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/cmd/agent.h"
#include "agent/cmd/cli.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "agent/client/apiclient.h"
#include "agent/cmd/config.h"
#include "agent/client/bootstrap.h"
#include "agent/core/wallwatch.h"
#include "agent/core/crashpoint.h"
#include "agent/core/heap.h"
#include "agent/client/kubeconfig.h"
#include "agent/client/objmanager.h"
#include "agent/client/tokenmgr.h"
#include "agent/core/log.h"
#include "agent/k8s/sysctl.h"
#include "agent/core/loop.h"
#include "agent/node/nodeinfo.h"
#include "agent/core/endpoint.h"
#include "agent/pods/podhistory.h"
#include "agent/client/events.h"
#include "agent/nodeapi/server.h"
#include "agent/core/metrics.h"
#include "agent/pods/mirror.h"
#include "agent/pods/logrotate.h"
#include "agent/node/netready.h"
#include "agent/node/nodestatus.h"
#include "agent/pods/pods.h"
#include "agent/pods/prober.h"
#include "agent/core/curl.h"
#include "agent/node/containergc.h"
#include "agent/node/imagegc.h"
#include "agent/node/pressure.h"
#include "agent/client/reflector.h"
#include "agent/node/selfcgroup.h"
#include "agent/node/shutdown.h"
#include "agent/k8s/shutdown.h"
#include "agent/pods/services.h"
#include "agent/pods/staticpods.h"
#include "runtime/sandbox.h"
#include "status/podstatus.h"
#include "agent/core/offload.h"
#include "lib/cleanup.h"
#include "lib/file.h"

#include <systemd/sd-daemon.h>

struct agent {
        struct ag_loop *loop;
        struct ag_api *api;
        struct ag_certmgr *certmgr; /* rotateCertificates */
        struct ag_certmgr *srvcert; /* serverTLSBootstrap: the node API's certificate */
        struct ag_nodestatus *ns;
        struct ag_reflector *pods, *node, *services;
        struct ag_events *events;
        struct ag_pods *pod_mgr;
        struct ag_pressure *pressure;
        struct ag_imagegc *imagegc;
        struct ag_containergc *containergc;
        struct ag_netready *netready;   /* the runtime's network: a CNI config in --cni-conf-dir */
        struct ag_wallwatch *wallwatch; /* the wall clock set (or its test offset changed) */
        struct ag_shutdown *shutdown;   /* graceful node shutdown (shutdownGracePeriod) */
        bool shutting_down;
        char ready_msg[1024]; /* the Ready condition's message when False */
        struct ag_metrics *metrics;
        struct ag_endpoint *endpoint;
        struct ag_napi *napi;
        struct ag_static_pods *static_pods;
        struct ag_mirror *mirror; /* with an apiserver */
        bool standalone;          /* no kubeconfig: static pods only */
        bool static_scanned;      /* the first scan of staticPodPath is done */
        struct ag_node_env env;
        struct ag_logrotate *logrotate; /* container log rotation */
        const char *host_ips[1];
        char dns_buf[512];                   /* --cluster-dns, split at the commas */
        struct k8s_sysctl_allowlist sysctls; /* safe + --allowed-unsafe-sysctls */
        const char *cluster_dns[16];
        char resolv_conf[PATH_MAX]; /* --resolv-conf as used */
        char exe[PATH_MAX];
        char unpacker[PATH_MAX]; /* cubelet-unpack beside the binary */
        const char *node_name;
        char cert_dir[4096]; /* --cert-dir, or <root dir>/pki */
        const char *root_dir, *cni_conf_dir, *cni_bin_dir;
        char cgroup_parent[512]; /* the delegated subtree on v2 under systemd, else "" */
        bool pods_synced;
        bool registered, ready_sent;
        struct ag_timer *notify; /* STATUS= and WATCHDOG=1 for systemd */
        uint64_t watchdog_us;
        uint64_t decodes_reported, received_reported; /* src_metrics */
        struct ag_api_stats api_reported;
        int signal;
};

/* True when text names only loopback nameservers (a local stub resolver). */
static bool only_loopback_servers(const char *text)
{
        _cleanup_free_ char *kept = NULL;
        size_t servers = 0;
        if (rt_sandbox_resolv_without_loopback(text, &kept, &servers) < 0)
                return false;
        return servers == 0 && strstr(text, "nameserver") != NULL;
}

/* --cluster-dns split into a->cluster_dns; --resolv-conf into
 * a->resolv_conf. The default /etc/resolv.conf naming only systemd-resolved's
 * stub (127.0.0.53, unreachable from a pod) is replaced by the upstream list
 * resolved keeps, as kubeadm configures the kubelet on such hosts. */
static size_t dns_settings(struct agent *a, const struct ag_config *fl)
{
        size_t n = 0;
        snprintf(a->dns_buf, sizeof(a->dns_buf), "%s", fl->cluster_dns ? fl->cluster_dns : "");
        char *save = NULL;
        for (char *t = strtok_r(a->dns_buf, ",", &save); t && n < CB_ARRAY_SIZE(a->cluster_dns);
             t = strtok_r(NULL, ",", &save))
                a->cluster_dns[n++] = t;
        snprintf(a->resolv_conf, sizeof(a->resolv_conf), "%s",
                 fl->resolv_conf ? fl->resolv_conf : "");
        static const char upstream[] = "/run/systemd/resolve/resolv.conf";
        _cleanup_free_ char *text = NULL;
        struct cb_error e;
        if (strcmp(a->resolv_conf, "/etc/resolv.conf") == 0 &&
            cb_read_file(a->resolv_conf, 1u << 20, &text, NULL, &e) == 0 &&
            only_loopback_servers(text) && access(upstream, R_OK) == 0) {
                log_info("/etc/resolv.conf names only a loopback resolver; pods with dnsPolicy "
                         "Default use %s (set --resolv-conf to choose)",
                         upstream);
                snprintf(a->resolv_conf, sizeof(a->resolv_conf), "%s", upstream);
        }
        if (fl->cluster_dns == NULL || fl->cluster_dns[0] == '\0')
                log_warning("no --cluster-dns: pods with dnsPolicy ClusterFirst fall back to "
                            "Default (MissingClusterDNS events)");
        return n;
}

static void agent_usage(FILE *f)
{
        fprintf(
            f, "Usage: cubelet [GLOBAL FLAGS] [--config FILE] [--kubeconfig FILE] [AGENT FLAGS]\n\n"
               "Runs the node agent. With a kubeconfig: registers this machine as a Node, keeps "
               "its status\nand Lease fresh, and runs the pods bound to it and the static pods. "
               "Without one\n(standalone): runs the static pods only.\n\n");
        ag_config_usage(f);
}

/* ---- callbacks ---- */

static void on_signal(struct ag_loop *loop, int signo, void *data)
{
        struct agent *a = data;
        a->signal = signo;
        log_info("received %s: shutting down", strsignal(signo));
        ag_loop_quit(loop);
}

static void on_service(enum ag_change change, const struct ag_object *o, void *data)
{
        struct agent *a = data;
        struct cb_error err = {0};
        log_v(3, "service %s/%s %s", o->namespace_ ? o->namespace_ : "", o->name ? o->name : "",
              change == AG_DELETED ? "deleted" : "changed");
        if (ag_services_set(a->env.services, o->uid, change == AG_DELETED ? NULL : o->json, &err) <
            0)
                log_warning("service %s/%s: %s", o->namespace_ ? o->namespace_ : "",
                            o->name ? o->name : "", err.msg);
}

static void on_services_synced(size_t n, void *data)
{
        struct agent *a = data;
        if (!ag_services_synced(a->env.services))
                log_v(1, "services synced: %zu", n);
        ag_services_mark_synced(a->env.services);
}

static void on_pod(enum ag_change change, const struct ag_object *o, void *data)
{
        struct agent *a = data;
        static const char *const names[] = {"ADDED", "UPDATED", "DELETED"};
        const char *phase = o->pod != NULL && o->pod->status.phase ? o->pod->status.phase : "";
        log_v(3, "pod %s/%s uid=%s %s phase=%s rv=%s%s", o->namespace_ ? o->namespace_ : "",
              o->name ? o->name : "", o->uid, names[change], phase[0] ? phase : "(none)",
              o->resource_version ? o->resource_version : "",
              o->pod != NULL && o->pod->meta.deletion_timestamp ? " terminating" : "");
        ag_pods_change(a->pod_mgr, change, o);
}

/* systemd (Type=notify): READY=1 once the node is registered and the
 * first pod list is synced; STATUS= with the pod count; WATCHDOG=1 from the
 * event loop itself, so a stuck loop is restarted. No-ops outside systemd. */
static void notify_systemd(struct agent *a)
{
        char status[256];
        snprintf(status, sizeof(status), "STATUS=node %s: %zu pod(s)%s", a->node_name,
                 ag_pods_count(a->pod_mgr), a->registered ? "" : " (registering)");
        if (!a->ready_sent && a->registered && a->pods_synced) {
                sd_notifyf(0, "READY=1\n%s", status);
                a->ready_sent = true;
        } else {
                sd_notify(0, status);
        }
}

static void on_notify_timer(struct ag_timer *t, void *data)
{
        struct agent *a = data;
        notify_systemd(a);
        if (a->watchdog_us > 0)
                sd_notify(0, "WATCHDOG=1");
        /* Twice per watchdog period, else every 10 s for STATUS=. */
        uint64_t ms = a->watchdog_us > 0 ? a->watchdog_us / 2000 : 10000;
        ag_timer_arm(t, ms > 0 ? ms : 1);
}

static void on_registered(const char *uid, void *data)
{
        struct agent *a = data;
        a->registered = true;
        if (a->mirror != NULL)
                ag_mirror_node_uid(a->mirror, uid);
        notify_systemd(a);
}

static void on_node_addresses(const cJSON *addresses, void *data)
{
        struct agent *a = data;
        ag_certmgr_set_addresses(a->srvcert, addresses);
}

static int on_serving_cert(const char *cert_pem, const char *key_pem, void *data,
                           struct cb_error *err)
{
        struct agent *a = data;
        return ag_napi_set_serving_cert(a->napi, cert_pem, key_pem, err);
}

static void on_pods_synced(size_t n, void *data)
{
        struct agent *a = data;
        if (!a->pods_synced)
                log_info("pods bound to node %s synced: %zu pod(s)", a->node_name, n);
        else
                log_info("pods bound to node %s relisted: %zu pod(s)", a->node_name, n);
        a->pods_synced = true;
        ag_pods_synced(a->pod_mgr);
        if (a->mirror != NULL)
                ag_mirror_synced(a->mirror);
        notify_systemd(a);
}

static void on_node(enum ag_change change, const struct ag_object *o, void *data)
{
        struct agent *a = data;
        log_v(2, "node %s %s (resourceVersion %s)", o->name ? o->name : "?",
              change == AG_DELETED ? "deleted" : "seen",
              o->resource_version ? o->resource_version : "?");
        ag_nodestatus_observe(a->ns, change == AG_DELETED ? NULL : o->json);
        if (change != AG_DELETED && a->mirror != NULL && o->uid != NULL && o->uid[0] != '\0')
                ag_mirror_node_uid(a->mirror, o->uid);
        ag_pods_node(a->pod_mgr, change == AG_DELETED ? NULL : o);
}

/* ---- the local endpoint (127.0.0.1:10248 by default) ---- */

static cJSON *src_pods(void *data)
{
        struct agent *a = data;
        return ag_pods_list_json(a->pod_mgr);
}

static cJSON *src_timelines(void *data)
{
        struct agent *a = data;
        return ag_pods_timelines_json(a->pod_mgr);
}

/* Each change of a pod's history, to the endpoint's event stream (the
 * live page, `cubelet timeline -w`). */
static void history_sink(const char *event, const cJSON *data, void *ctx)
{
        struct agent *a = ctx;
        if (a->endpoint == NULL || ag_endpoint_stream_clients(a->endpoint) == 0)
                return;
        _cleanup_free_ char *text = cJSON_PrintUnformatted(data);
        if (text != NULL)
                ag_endpoint_publish(a->endpoint, event, text);
}

/* Counters kept elsewhere, added to the registry's at each scrape. */
static void add_counter(struct agent *a, const char *name, const char *help, uint64_t now,
                        uint64_t *reported)
{
        if (now > *reported)
                ag_metrics_counter_add(a->metrics, name, help, NULL, (double)(now - *reported),
                                       NULL);
        *reported = now;
}

static char *src_metrics(void *data)
{
        struct agent *a = data;
        ag_pods_update_metrics(a->pod_mgr);
        /* A pod is decoded once per object received (the two move together). */
        add_counter(a, "cubelet_pod_decodes_total", "Pod objects decoded by the agent.",
                    k8s_pod_decodes(), &a->decodes_reported);
        if (a->pods != NULL)
                add_counter(a, "cubelet_pod_objects_received_total",
                            "Pod objects received from the apiserver (watch events and list "
                            "items).",
                            ag_reflector_received(a->pods), &a->received_reported);
        if (a->api != NULL) {
                /* The API client's requests by verb and the time they spent
                 * on the client-side rate limiters, per bucket. */
                struct ag_api_stats now;
                ag_api_get_stats(a->api, &now);
                for (int v = 0; v < AG_VERB_N; v++) {
                        const char *labels[] = {"verb", ag_api_verb_name(v), NULL};
                        ag_metrics_counter_add(
                            a->metrics, "cubelet_api_requests_total",
                            "Requests the agent sent to the apiserver.", labels,
                            (double)(now.requests[v] - a->api_reported.requests[v]), NULL);
                }
                for (int c = 0; c < AG_API_CLASS_N; c++) {
                        const char *labels[] = {"bucket", ag_api_class_name(c), NULL};
                        ag_metrics_counter_add(
                            a->metrics, "cubelet_api_rate_limiter_wait_seconds_total",
                            "Time requests waited on the client-side rate limiter.", labels,
                            now.wait_seconds[c] - a->api_reported.wait_seconds[c], NULL);
                }
                ag_metrics_counter_add(
                    a->metrics, "cubelet_api_inflight_wait_seconds_total",
                    "Time requests waited for one of the client's places in flight "
                    "(AG_API_INFLIGHT_MAX), after their rate limiter.",
                    NULL, now.inflight_wait_seconds - a->api_reported.inflight_wait_seconds, NULL);
                a->api_reported = now;
        }
        /* the heap: what the pods hold, what a burst left free (heap.h) */
        struct ag_heap_stats hs;
        ag_heap_get_stats(&hs);
        const char *help = "Bytes of the agent's heap: in use (mmapped blocks included), free "
                           "in malloc's arenas, in mmapped blocks.";
        ag_metrics_gauge_set(a->metrics, "cubelet_heap_bytes", help,
                             (const char *const[]){"state", "in_use", NULL}, (double)hs.in_use,
                             NULL);
        ag_metrics_gauge_set(a->metrics, "cubelet_heap_bytes", help,
                             (const char *const[]){"state", "free", NULL}, (double)hs.free, NULL);
        ag_metrics_gauge_set(a->metrics, "cubelet_heap_bytes", help,
                             (const char *const[]){"state", "mmapped", NULL}, (double)hs.mmapped,
                             NULL);
        return ag_metrics_render(a->metrics);
}

static cJSON *src_summary(void *data)
{
        struct agent *a = data;
        return ag_pods_stats_summary(a->pod_mgr);
}

static bool src_healthy(void *data, char *why, size_t size)
{
        struct agent *a = data;
        /* Answering at all means the loop runs; the node must be registered. */
        if (!a->registered && !a->standalone) {
                snprintf(why, size, "node %s is not registered yet", a->node_name);
                return false;
        }
        return true;
}

/* ---- the node API (port 10250) ---- */

static int start_node_api(struct agent *a, const struct ag_config *fl,
                          const struct ag_node_config *nc, struct cb_error *err)
{
        const struct ag_config_napi *f = &fl->napi;
        /* Webhook authentication turns the API on only when asked for (a
         * flag or the key): a config file's default does not open a port
         * the setup never configured. */
        if (f->client_ca_file == NULL && f->token_file == NULL &&
            !(fl->authn_webhook && fl->authn_webhook_set) && !fl->anonymous) {
                log_info("node API (port %d) off: no --client-ca-file, "
                         "--authentication-token-file, --authentication-token-webhook or "
                         "--anonymous-auth",
                         f->port);
                if (f->server_tls_bootstrap)
                        log_warning("serverTLSBootstrap: the node API is off, so no serving "
                                    "certificate is requested");
                return 0;
        }
        char cert_dir[4096];
        snprintf(cert_dir, sizeof(cert_dir), "%s/pki", a->root_dir);
        struct ag_napi_config cfg = {
            .address = f->address,
            .port = f->port,
            .tls_cert_file = f->tls_cert_file,
            .tls_key_file = f->tls_key_file,
            .cert_dir = f->cert_dir != NULL ? f->cert_dir : cert_dir,
            .node_ip = nc->facts.node_ip,
            .hostname = nc->facts.hostname,
            .client_ca_file = f->client_ca_file,
            .token_file = f->token_file,
            .api = a->api,
            .node_name = a->node_name,
            .anonymous = fl->anonymous,
            .authn_webhook = fl->authn_webhook,
            .authn_ttl_ms = fl->authn_webhook_ttl_ms,
            .authz_webhook = fl->authz_webhook,
            .authz_allowed_ttl_ms = fl->authz_allowed_ttl_ms,
            .authz_denied_ttl_ms = fl->authz_denied_ttl_ms,
            .root_dir = a->root_dir,
            .pod_logs_dir = fl->pod_logs_dir,
            .monitor_path = a->exe,
            .pods = src_pods,
            .summary = src_summary,
            .healthy = src_healthy,
            .data = a,
        };
        cfg.serving_cert_managed = f->server_tls_bootstrap;
        if (ag_napi_start(a->loop, &cfg, &a->napi, err) < 0)
                return -1;
        log_info("node API: serving HTTPS on %s:%d (authentication: %s%s%s%s; authorization: "
                 "%s; certificate: %s)",
                 f->address, ag_napi_port(a->napi), f->client_ca_file ? "x509 " : "",
                 f->token_file ? "token-file " : "", fl->authn_webhook ? "webhook " : "",
                 fl->anonymous ? "anonymous" : "", fl->authz_mode,
                 f->server_tls_bootstrap ? "serverTLSBootstrap"
                 : f->tls_cert_file      ? f->tls_cert_file
                                         : "self-signed");
        if (f->server_tls_bootstrap) {
                /* The kubelet's NewKubeletServerCertificateManager: its
                 * template follows the addresses the status updates return. */
                struct ag_certmgr_config cc = {.kind = AG_CERT_SERVING,
                                               .cert_dir = a->cert_dir,
                                               .node_name = a->node_name,
                                               .tls_cert_file = f->tls_cert_file,
                                               .tls_key_file = f->tls_key_file,
                                               .on_serving = on_serving_cert,
                                               .data = a};
                if (ag_certmgr_new(a->loop, a->api, &cc, &a->srvcert, err) < 0)
                        return -1;
        }
        return 0;
}

/* ---- static pods (agent/pods/staticpods.h) ---- */

static void static_pod_change(struct agent *a, enum ag_change change, const cJSON *pod)
{
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(pod, "metadata");
        const cJSON *uid = cJSON_GetObjectItemCaseSensitive(meta, "uid");
        const cJSON *ns = cJSON_GetObjectItemCaseSensitive(meta, "namespace");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(meta, "name");
        if (!cJSON_IsString(uid) || !cJSON_IsString(ns) || !cJSON_IsString(name))
                return; /* defaulted by staticpods.c: never */
        struct ag_object o = {.uid = uid->valuestring,
                              .namespace_ = ns->valuestring,
                              .name = name->valuestring,
                              .json = (cJSON *)pod};
        ag_pods_change(a->pod_mgr, change, &o);
}

static void on_static_add(const cJSON *pod, const char *path, void *data)
{
        struct agent *a = data;
        (void)path;
        if (a->mirror != NULL)
                ag_mirror_static_add(a->mirror, pod);
        static_pod_change(a, AG_ADDED, pod);
}

static void on_static_update(const cJSON *pod, const char *path, void *data)
{
        struct agent *a = data;
        (void)path;
        if (a->mirror != NULL)
                ag_mirror_static_add(a->mirror, pod);
        static_pod_change(a, AG_UPDATED, pod);
}

static void on_static_remove(const char *uid, void *data)
{
        struct agent *a = data;
        ag_pods_remove_static(a->pod_mgr, uid);
        if (a->mirror != NULL)
                ag_mirror_static_remove(a->mirror, uid);
}

/* With an apiserver: a static pod's status goes to its mirror pod, and
 * mirror pods from the pod watch go to the mirror manager. */
static void on_static_status(const char *uid, const cJSON *status, void *data)
{
        struct agent *a = data;
        ag_mirror_status(a->mirror, uid, status);
}

static void on_mirror_pod(enum ag_change change, const struct ag_object *o, void *data)
{
        struct agent *a = data;
        ag_mirror_observe(a->mirror, change, o);
}

static void on_static_scanned(size_t n, void *data)
{
        struct agent *a = data;
        if (a->static_scanned)
                return;
        a->static_scanned = true;
        log_info("static pods: %zu pod(s) in the first scan", n);
        if (a->standalone) {
                /* Standalone, the static pods are all the pods there are. */
                a->pods_synced = true;
                ag_pods_synced(a->pod_mgr);
                notify_systemd(a);
        }
}

/* Standalone, admission checks the pods against this node as it would
 * register it (capacity, allocatable, labels, taints). */
static int standalone_node(struct agent *a, const struct ag_config *fl,
                           const struct ag_node_config *nc, struct cb_error *err)
{
        _cleanup_cjson_ cJSON *node = ag_node_json(&nc->facts, a->node_name, nc->max_pods);
        if (node == NULL)
                return cb_error_set(err, ENOMEM, "node object");
        if (fl->register_with_taints != NULL)
                cJSON_AddItemToObject(cJSON_AddObjectToObject(node, "spec"), "taints",
                                      cJSON_Duplicate(fl->register_with_taints, true));
        struct ag_object o = {.name = (char *)a->node_name, .json = node};
        ag_pods_node(a->pod_mgr, &o);
        return 0;
}

/* A fresh token for the local endpoint's /pods and /timelines, readable by
 * root alone (written atomically: tmp, fsync, rename). */
static int endpoint_token(const char *root_dir, char token[65], struct cb_error *err)
{
        unsigned char r[32];
        if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
                return cb_error_set(err, errno, "the local endpoint's token: getrandom");
        for (size_t i = 0; i < sizeof(r); i++)
                snprintf(token + 2 * i, 3, "%02x", r[i]);
        char path[4200];
        snprintf(path, sizeof(path), "%s/endpoint.token", root_dir);
        if (cb_mkdir_p(root_dir, 0700, 0700, err) < 0 ||
            cb_write_file_atomic(path, token, 64, 0600, err) < 0)
                return cb_error_prefix(err, "the local endpoint's token");
        return 0;
}

/* Where `cubelet timeline` finds the endpoint: <root-dir>/endpoint.address,
 * its base URL, removed when the agent stops. */
static int endpoint_address(const char *root_dir, const char *address, int port,
                            struct cb_error *err)
{
        char path[4200], url[128];
        snprintf(path, sizeof(path), "%s/endpoint.address", root_dir);
        int n =
            snprintf(url, sizeof(url), strchr(address, ':') ? "http://[%s]:%d\n" : "http://%s:%d\n",
                     address, port);
        if (cb_write_file_atomic(path, url, (size_t)n, 0644, err) < 0)
                return cb_error_prefix(err, "the local endpoint's address");
        return 0;
}

/* ---- setup ---- */

static int make_node_config(const struct ag_config *fl, const struct cb_global_opts *opts,
                            struct ag_node_config *nc, struct cb_error *err)
{
        if (ag_node_facts_read(opts->root_dir, &nc->facts, err) < 0)
                return -1;
        if (fl->hostname_override != NULL) {
                if (fl->hostname_override[0] == '\0' ||
                    strlen(fl->hostname_override) >= sizeof(nc->facts.hostname))
                        return cb_error_set(err, 0, "--hostname-override: invalid name \"%s\"",
                                            fl->hostname_override);
                snprintf(nc->facts.hostname, sizeof(nc->facts.hostname), "%s",
                         fl->hostname_override);
                for (char *p = nc->facts.hostname; *p; p++)
                        if (*p >= 'A' && *p <= 'Z')
                                *p = (char)(*p - 'A' + 'a');
        }
        if (fl->node_ip != NULL) {
                if (!ag_node_ip_valid(fl->node_ip))
                        return cb_error_set(err, 0,
                                            "--node-ip: \"%s\" is not a usable IP address (not "
                                            "loopback, link-local, multicast or unspecified)",
                                            fl->node_ip);
                snprintf(nc->facts.node_ip, sizeof(nc->facts.node_ip), "%s", fl->node_ip);
        } else if (nc->facts.node_ip[0] == '\0') {
                return cb_error_set(err, 0,
                                    "cannot find this node's IP address (no usable IPv4 "
                                    "on the default-route interface): pass --node-ip");
        }
        nc->node_name = nc->facts.hostname;
        /* Allocatable leaves out the hard eviction thresholds. */
        int64_t em = 0, ee = 0;
        k8s_eviction_reservation(&fl->eviction_hard, nc->facts.memory_bytes,
                                 nc->facts.ephemeral_bytes, &em, &ee);
        nc->facts.has_eviction_reservation = true;
        nc->facts.eviction_memory = em;
        nc->facts.eviction_ephemeral = ee;
        nc->max_pods = fl->max_pods;
        nc->update_ms = fl->node_status_update_ms;
        nc->report_ms = fl->node_status_report_ms;
        nc->lease_duration_s = fl->node_lease_duration_s;
        nc->taints = fl->register_with_taints; /* borrowed */
        if (ag_parse_node_labels(fl->node_labels, &nc->extra_labels, err) < 0)
                return -1;
        return 0;
}

static void network_changed(struct agent *a);
static void on_network(bool ready, void *data);
static void on_shutting_down(bool on, void *data);

/* The wall clock was set: what is armed from a wall-time deadline is armed
 * again (token refreshes, activeDeadlineSeconds, certificate rotation);
 * back-offs, probes and leases run on the monotonic clock and stay. */
static void on_wall_changed(void *data)
{
        struct agent *a = data;
        if (a->pod_mgr != NULL)
                ag_pods_wall_changed(a->pod_mgr);
        if (a->certmgr != NULL)
                ag_certmgr_wall_changed(a->certmgr);
        if (a->srvcert != NULL)
                ag_certmgr_wall_changed(a->srvcert);
}

static int start_agent(struct agent *a, const struct ag_config *fl, struct ag_node_config *nc,
                       const struct ag_kubeconfig *kc, struct cb_error *err)
{
        /* the heap's arenas capped before the offload threads start */
        if (ag_loop_new(&a->loop, err) < 0 || ag_heap_init(a->loop, err) < 0 ||
            ag_wallwatch_new(a->loop, on_wall_changed, a, &a->wallwatch, err) < 0)
                return -1;
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        if (ag_loop_add_signals(a->loop, &mask, on_signal, a, err) < 0)
                return -1;
        if (!a->standalone && ag_api_new(a->loop, kc, NULL, &a->api, err) < 0)
                return -1;
        if (!a->standalone && fl->rotate_certificates) {
                struct ag_certmgr_config cc = {
                    .cert_dir = a->cert_dir, .node_name = a->node_name, .kc = kc};
                if (ag_certmgr_new(a->loop, a->api, &cc, &a->certmgr, err) < 0)
                        return -1;
        }
        /* Under systemd with Delegate=yes on cgroup v2 the agent may only
         * manage its own subtree, which must stay an inner node: move the
         * agent into <own>/supervisor and put kubepods beside it. */
        if (!fl->cgroup_root_set && getenv("INVOCATION_ID") != NULL) {
                struct cb_error cerr = {0};
                if (ag_move_self_to_leaf("supervisor", a->cgroup_parent, sizeof(a->cgroup_parent),
                                         &cerr) < 0)
                        log_warning("cannot move into a leaf cgroup (pods go under the hierarchy "
                                    "root): %s",
                                    cerr.msg);
                else if (a->cgroup_parent[0] != '\0')
                        log_info("cgroup v2 delegation: the agent runs in %s/supervisor, pods go "
                                 "under %s/kubepods",
                                 a->cgroup_parent, a->cgroup_parent);
        }
        nc->data = a;
        nc->on_registered = on_registered;
        nc->on_addresses = on_node_addresses; /* the serving certificate's template */
        if (!a->standalone && ag_nodestatus_new(a->loop, a->api, nc, &a->ns, err) < 0)
                return -1;
        if (sd_watchdog_enabled(0, &a->watchdog_us) <= 0)
                a->watchdog_us = 0;
        a->notify = ag_timer_new(a->loop, on_notify_timer, a, err);
        if (a->notify == NULL)
                return -1;
        ag_timer_arm(a->notify, 1000);
        /* What every pod worker shares: this node as the runtime sees it. */
        ssize_t n = readlink("/proc/self/exe", a->exe, sizeof(a->exe) - 1);
        if (n <= 0)
                return cb_error_set(err, errno, "cannot resolve /proc/self/exe");
        a->exe[n] = '\0';
        struct cb_error uerr;
        if (ag_unpack_helper(a->unpacker, sizeof(a->unpacker), &uerr) < 0)
                log_warning("%s; image pulls will fail until it is there", uerr.msg);
        ag_monitor_path(a->exe, sizeof(a->exe));
        a->host_ips[0] = nc->facts.node_ip;
        size_t n_dns = dns_settings(a, fl);
        if (k8s_sysctl_allowlist_parse(&a->sysctls, fl->allowed_unsafe_sysctls, err) < 0)
                return cb_error_prefix(err, "--allowed-unsafe-sysctls");
        int64_t mem = nc->facts.memory_bytes;
        a->env = (struct ag_node_env){
            .loop = a->loop,
            .root_dir = a->root_dir,
            .pod_logs_dir = fl->pod_logs_dir,
            .monitor_path = a->exe,
            .unpack_helper = a->unpacker,
            .cni_conf_dir = a->cni_conf_dir,
            .cni_bin_dir = a->cni_bin_dir,
            .cgroup_root = a->cgroup_parent[0] ? a->cgroup_parent : fl->cgroup_root,
            .node_name = a->node_name,
            .host_ips = a->host_ips,
            .n_host_ips = 1,
            .node_memory_capacity = mem,
            .alloc_milli_cpu = (int64_t)nc->facts.cpus * 1000,
            .alloc_memory = mem > nc->facts.eviction_memory ? mem - nc->facts.eviction_memory : 0,
            .alloc_ephemeral = nc->facts.ephemeral_bytes > nc->facts.eviction_ephemeral
                                   ? nc->facts.ephemeral_bytes - nc->facts.eviction_ephemeral
                                   : 0,
            .pod_pids_limit = fl->pod_pids_limit > 0 ? fl->pod_pids_limit : 0,
            .insecure_registries = (const char *const *)fl->insecure_registries,
            .n_insecure_registries = fl->n_insecure_registries,
            .cluster_dns = a->cluster_dns,
            .n_cluster_dns = n_dns,
            .cluster_domain = fl->cluster_domain,
            .resolv_conf = a->resolv_conf,
            .seccomp_default = fl->seccomp_default,
            .backoff_base = fl->crash_loop_backoff_initial_s,
            .backoff_cap = fl->crash_loop_backoff_max_s,
            .pull_backoff_base = 10,
            .pull_backoff_cap = 300,
            .sysctls = &a->sysctls,
        };
        if (ag_offload_new(a->loop, "image pulls", 1, &a->env.pulls, err) < 0 ||
            ag_offload_new(a->loop, "sandboxes", AG_SANDBOX_THREADS, &a->env.sandboxes, err) < 0 ||
            ag_offload_new(a->loop, "container starts", AG_START_THREADS, &a->env.starts, err) <
                0 ||
            ag_offload_new(a->loop, "hooks", AG_HOOK_THREADS, &a->env.hooks, err) < 0 ||
            ag_probe_http_new(a->loop, &a->env.probe_http, err) < 0)
                return -1;
        struct ag_logrotate_policy lp = {.max_size = fl->container_log_max_size,
                                         .max_files = fl->container_log_max_files,
                                         .max_workers = fl->container_log_max_workers,
                                         .interval_ms = fl->container_log_monitor_interval_ms};
        if (ag_logrotate_new(a->loop, a->root_dir, &lp, &a->logrotate, err) < 0)
                return -1;
        /* The pods' ConfigMaps, Secrets and service-account tokens. */
        if (!a->standalone && (ag_objmgr_new(a->loop, a->api, NULL, &a->env.objects, err) < 0 ||
                               ag_tokenmgr_new(a->loop, a->api, NULL, &a->env.tokens, err) < 0))
                return -1;
        if (ag_netready_new(a->loop, a->cni_conf_dir, on_network, a, &a->netready, err) < 0)
                return -1;
        a->env.network_ready = ag_netready_flag(a->netready);
        if (!a->standalone && (a->env.services = ag_services_new()) == NULL)
                return cb_error_set(err, ENOMEM, "services");
        if (!a->standalone)
                a->env.api = a->api; /* persistentVolumeClaim volumes: the PVC and PV GETs */
        if ((!a->standalone && ag_events_new(a->loop, a->api, a->node_name, &a->events, err) < 0) ||
            ag_pods_new(&a->env, a->api, a->events, &a->pod_mgr, err) < 0)
                return -1;
        a->env.node = ag_pods_current_node; /* a PV's nodeAffinity against the Node */
        a->env.node_data = a->pod_mgr;
        network_changed(a);
        a->metrics = ag_metrics_new();
        if (a->metrics == NULL)
                return cb_error_set(err, ENOMEM, "metrics");
        ag_pods_set_metrics(a->pod_mgr, a->metrics);
        struct ag_pressure_config pc = {
            .thresholds = fl->eviction_hard,
            .transition_ms = fl->eviction_pressure_transition_ms,
            .interval_ms = K8S_EVICTION_MONITORING_MS,
            .root_dir = a->root_dir,
            .pod_logs_dir = fl->pod_logs_dir,
            .cgroup_root = a->env.cgroup_root,
            .memory_capacity = mem,
            .node_name = a->node_name,
        };
        if (ag_pressure_new(a->loop, &pc, a->ns, a->pod_mgr, a->events, &a->pressure, err) < 0)
                return -1;
        struct ag_imagegc_config gc = {
            .policy = {fl->image_gc_high_threshold_percent, fl->image_gc_low_threshold_percent,
                       (int64_t)fl->image_minimum_gc_age_ms, (int64_t)fl->image_maximum_gc_age_ms},
            .period_ms = fl->image_gc_period_ms,
            .root_dir = a->root_dir,
            .node_name = a->node_name};
        if (ag_imagegc_new(a->loop, &gc, a->pod_mgr, a->events, a->metrics, &a->imagegc, err) < 0)
                return -1;
        ag_pressure_set_imagegc(a->pressure, a->imagegc);
        ag_imagegc_start(a->imagegc);
        struct ag_containergc_config cgc = {
            .policy = {.min_age_ms = (int64_t)fl->container_gc_min_age_ms,
                       .max_per_pod_container = fl->max_dead_per_container,
                       .max_containers = fl->max_dead_containers},
            .period_ms = fl->container_gc_period_ms,
            .pod_logs_dir = fl->pod_logs_dir,
            .node_name = a->node_name,
            .root_dir = a->root_dir};
        if (ag_containergc_new(a->loop, &cgc, a->pod_mgr, a->events, &a->containergc, err) < 0)
                return -1;
        ag_pressure_set_containergc(a->pressure, a->containergc);
        ag_containergc_start(a->containergc);
        struct ag_shutdown_config sc = {
            .grace_ms = fl->shutdown_grace_ms,
            .critical_ms = fl->shutdown_grace_critical_ms,
            .node_name = a->node_name,
            .logind_conf_dir = AG_LOGIND_CONF_DIR,
            .pods = a->pod_mgr,
            .events = a->events,
            .shutting_down = on_shutting_down,
            .data = a,
        };
        if (ag_shutdown_new(a->loop, &sc, &a->shutdown, err) < 0)
                return -1;
        if (fl->healthz_port > 0) {
                char token[65];
                if (endpoint_token(a->root_dir, token, err) < 0)
                        return -1;
                struct ag_endpoint_sources src = {src_pods, src_timelines, src_metrics, src_healthy,
                                                  a,        token};
                if (ag_endpoint_start(a->loop, fl->healthz_bind_address, fl->healthz_port, &src,
                                      &a->endpoint, err) < 0)
                        return cb_error_prefix(err, "--healthz-bind-address/--healthz-port");
                ag_podhist_set_sink(ag_pods_history(a->pod_mgr), history_sink, a);
                if (endpoint_address(a->root_dir, fl->healthz_bind_address,
                                     ag_endpoint_port(a->endpoint), err) < 0)
                        return -1;
                log_info("serving /healthz /metrics on %s:%d, and /pods /timelines /ui with the "
                         "token in %s/endpoint.token (the page: http://%s:%d/ui?token=...)",
                         fl->healthz_bind_address, ag_endpoint_port(a->endpoint), a->root_dir,
                         fl->healthz_bind_address, ag_endpoint_port(a->endpoint));
        }
        if (start_node_api(a, fl, nc, err) < 0)
                return -1;
        if (!a->standalone) {
                /* Mirror pods: also to delete this node's orphaned ones. */
                if (ag_mirror_new(a->loop, a->api, a->node_name, &a->mirror, err) < 0)
                        return -1;
                struct ag_pods_static_hooks hooks = {on_static_status, on_mirror_pod, a};
                ag_pods_set_static_hooks(a->pod_mgr, &hooks);
        }
        /* Static pods first: their records exist before the first pod list
         * arrives, so the sweep of left-over pods does not take them for
         * pods deleted while the agent was away. */
        if (fl->static_pod_path != NULL) {
                struct ag_static_pods_ops sops = {on_static_add, on_static_update, on_static_remove,
                                                  on_static_scanned};
                if (ag_static_pods_new(a->loop, fl->static_pod_path, a->node_name,
                                       fl->file_check_frequency_ms, &sops, a, &a->static_pods,
                                       err) < 0)
                        return -1;
                log_info("static pods from %s (inotify, rescan every %llus)", fl->static_pod_path,
                         (unsigned long long)(fl->file_check_frequency_ms / 1000));
        }
        if (a->standalone) {
                if (standalone_node(a, fl, nc, err) < 0)
                        return -1;
                a->registered = true; /* nothing to register with */
                if (a->static_pods != NULL)
                        ag_static_pods_start(a->static_pods);
                /* Admission under pressure; static pods are critical and
                 * never evicted, and there is no Node to show conditions on. */
                ag_pressure_start(a->pressure);
                return 0;
        }
        if (a->static_pods != NULL)
                ag_static_pods_start(a->static_pods);
        char pod_sel[512], node_sel[512];
        snprintf(pod_sel, sizeof(pod_sel), "spec.nodeName=%s", a->node_name);
        snprintf(node_sel, sizeof(node_sel), "metadata.name=%s", a->node_name);
        struct ag_reflector_config pods = {
            .what = "pods",
            .path = "/api/v1/pods",
            .field_selector = pod_sel,
            .kind = AG_KIND_POD,
            .watch_timeout_s = fl->watch_timeout_s,
            .on_change = on_pod,
            .on_synced = on_pods_synced,
            .data = a,
        };
        struct ag_reflector_config node = {
            .what = "node",
            .path = "/api/v1/nodes",
            .field_selector = node_sel,
            .kind = AG_KIND_NODE,
            .watch_timeout_s = fl->watch_timeout_s,
            .on_change = on_node,
            .data = a,
        };
        /* The kubelet's Service informer: the docker-link variables. */
        struct ag_reflector_config services = {
            .what = "services",
            .path = "/api/v1/services",
            .field_selector = "spec.clusterIP!=None",
            .kind = AG_KIND_RAW,
            .watch_timeout_s = fl->watch_timeout_s,
            .on_change = on_service,
            .on_synced = on_services_synced,
            .data = a,
        };
        if (ag_reflector_new(a->loop, a->api, &pods, &a->pods, err) < 0 ||
            ag_reflector_new(a->loop, a->api, &node, &a->node, err) < 0 ||
            ag_reflector_new(a->loop, a->api, &services, &a->services, err) < 0)
                return -1;
        ag_nodestatus_start(a->ns);
        ag_pressure_start(a->pressure);
        ag_reflector_start(a->services);
        ag_reflector_start(a->node);
        ag_reflector_start(a->pods);
        return 0;
}

/* The node's Ready condition: False (KubeletNotReady) while the runtime's
 * network is not ready or the node shuts down, with their messages
 * aggregated as the kubelet's ReadyCondition does ("[a, b]" for two). */
static void update_ready(struct agent *a)
{
        const char *why[2];
        size_t n = 0;
        if (!ag_netready_ready(a->netready))
                why[n++] = AG_NETWORK_NOT_READY_MESSAGE;
        if (a->shutting_down)
                why[n++] = K8S_SHUTDOWN_NOT_READY;
        if (n == 2)
                snprintf(a->ready_msg, sizeof(a->ready_msg), "[%s, %s]", why[0], why[1]);
        else if (n == 1)
                snprintf(a->ready_msg, sizeof(a->ready_msg), "%s", why[0]);
        if (a->ns != NULL)
                ag_nodestatus_set_ready(a->ns, n > 0 ? a->ready_msg : NULL);
}

/* The node's Ready condition and the waiting pods follow the runtime's
 * network (ReadyCondition: runtime or network errors make it False). */
static void network_changed(struct agent *a)
{
        bool ready = ag_netready_ready(a->netready);
        update_ready(a);
        if (ready && a->pod_mgr != NULL)
                ag_pods_kick(a->pod_mgr);
}

static void on_shutting_down(bool on, void *data)
{
        struct agent *a = data;
        a->shutting_down = on;
        update_ready(a); /* sent at once (the kubelet's syncNodeStatus) */
}

static void on_network(bool ready, void *data)
{
        struct agent *a = data;
        log_info("container runtime network %s (%s)", ready ? "ready" : "not ready",
                 a->cni_conf_dir);
        network_changed(a);
}

static void stop_agent(struct agent *a)
{
        struct cb_error err = {0};
        /* Reflectors and the status loop cancel their requests and timers
         * before the client and the loop go. */
        ag_static_pods_free(a->static_pods);
        ag_mirror_free(a->mirror);
        ag_reflector_free(a->pods);
        ag_reflector_free(a->node);
        ag_reflector_free(a->services);
        ag_certmgr_free(a->certmgr);
        a->certmgr = NULL;
        ag_certmgr_free(a->srvcert); /* before the node API it hands certificates to */
        a->srvcert = NULL;
        if (a->notify)
                ag_timer_free(a->notify);
        sd_notify(0, "STOPPING=1");
        if (a->pod_mgr != NULL)
                ag_podhist_set_sink(ag_pods_history(a->pod_mgr), NULL, NULL);
        if (a->endpoint != NULL) {
                char path[4200];
                snprintf(path, sizeof(path), "%s/endpoint.address", a->root_dir);
                unlink(path);
        }
        ag_endpoint_free(a->endpoint);
        a->endpoint = NULL;
        /* Before the eviction manager they reclaim for; the container
         * collector first: a reclaim it finishes while it is freed goes on
         * to the image collector, which then cancels it. */
        ag_containergc_free(a->containergc);
        ag_imagegc_free(a->imagegc);
        ag_pressure_free(a->pressure);
        /* The inhibitor goes with the agent (logind no longer waits for it);
         * the pods keep running, as the kubelet leaves them on SIGTERM. */
        ag_shutdown_free(a->shutdown);
        a->shutdown = NULL;
        ag_napi_free(a->napi);
        ag_pods_free(a->pod_mgr);
        /* After the workers, which let go of their objects and tokens. */
        ag_objmgr_free(a->env.objects);
        ag_tokenmgr_free(a->env.tokens);
        ag_services_free(a->env.services);
        /* After the workers: jobs still running finish, and their results
         * are dropped (the next agent finds and redoes a half-made sandbox). */
        ag_offload_free(a->env.pulls);
        ag_offload_free(a->env.sandboxes);
        ag_offload_free(a->env.starts);
        ag_offload_free(a->env.hooks);
        ag_logrotate_free(a->logrotate);
        ag_curl_free(a->env.probe_http); /* after the probers */
        ag_metrics_free(a->metrics);
        /* The private bind mount of <root>/sandboxes goes once no pod
         * sandbox is left (containers outlive the agent otherwise). */
        if (a->root_dir != NULL && rt_sandbox_release_root(a->root_dir, &err) < 0)
                log_warning("%s", err.msg);
        ag_events_free(a->events);
        ag_nodestatus_free(a->ns);
        ag_netready_free(a->netready);
        ag_wallwatch_free(a->wallwatch);
        ag_api_free(a->api);
        ag_heap_fini();
        ag_loop_free(a->loop);
}

/* The options from the defaults, --config and the flags. 0 ok, 1 help
 * printed, -1 error (printed: startup stops with the key or flag and why). */
static int load_config(int argc, char **argv, struct ag_config *cfg)
{
        struct cb_error err = {0};
        int r = ag_config_init(cfg, &err);
        if (r == 0)
                r = ag_config_parse_flags(cfg, argc, argv, &err);
        if (r == 1) {
                agent_usage(stdout);
                return 1;
        }
        if (r < 0) {
                fprintf(stderr, "cubelet: %s\n", err.msg);
                return -1;
        }
        if (ag_config_finish(cfg, &err) < 0) {
                fprintf(stderr, "cubelet: %s\n", err.msg);
                return -1;
        }
        if (cfg->kubeconfig == NULL && cfg->static_pod_path == NULL) {
                fprintf(stderr, "cubelet: nothing to run: give --kubeconfig (join a cluster), "
                                "--pod-manifest-path / staticPodPath (static pods), or a command; "
                                "see cubelet --help\n");
                return -1;
        }
        return 0;
}

int ag_run_agent(int argc, char **argv, const struct cb_global_opts *opts)
{
        struct ag_config fl;
        int r = load_config(argc, argv, &fl);
        if (r != 0) {
                ag_config_clear(&fl);
                return r > 0 ? 0 : 2;
        }
        struct cb_error err = {0};
        struct ag_node_config nc = {0};
        struct ag_kubeconfig kc = {0};
        struct agent a = {0};
        int ret = 1;
        /* A write to a closed connection must be an error, not a death. */
        signal(SIGPIPE, SIG_IGN);
        a.standalone = fl.kubeconfig == NULL;
        if (fl.napi.cert_dir != NULL)
                snprintf(a.cert_dir, sizeof(a.cert_dir), "%s", fl.napi.cert_dir);
        else
                snprintf(a.cert_dir, sizeof(a.cert_dir), "%s/pki", opts->root_dir);
        ag_crashpoint_init();
        if (make_node_config(&fl, opts, &nc, &err) < 0 || ag_testclock_init(&err) < 0) {
                log_error("%s", err.msg);
                goto out;
        }
        /* TLS bootstrap: a bounded step (its own loop, at most an hour, the
         * kubelet's wait) before the agent's loop exists. */
        if (fl.bootstrap_kubeconfig != NULL) {
                uint64_t t0 = ag_now_ms();
                struct ag_bootstrap_config bc = {.kubeconfig = fl.kubeconfig,
                                                 .bootstrap_kubeconfig = fl.bootstrap_kubeconfig,
                                                 .cert_dir = a.cert_dir,
                                                 .node_name = nc.node_name};
                if (ag_bootstrap_client_cert(&bc, &err) < 0) {
                        log_error("TLS bootstrap failed: %s", err.msg);
                        goto out;
                }
                log_v(1, "TLS bootstrap step took %llu ms", (unsigned long long)(ag_now_ms() - t0));
        }
        if (!a.standalone && ag_kubeconfig_load(fl.kubeconfig, NULL, &kc, &err) < 0) {
                log_error("%s", err.msg);
                goto out;
        }
        if (kc.insecure_skip_tls_verify)
                log_warning("%s: insecure-skip-tls-verify is set: the apiserver's certificate is "
                            "NOT verified; set certificate-authority instead",
                            kc.path);
        a.node_name = nc.node_name;
        a.root_dir = opts->root_dir;
        a.cni_conf_dir = opts->cni_conf_dir;
        a.cni_bin_dir = opts->cni_bin_dir;
        if (a.standalone)
                log_info("cubelet v%s starting standalone (no kubeconfig): node %s, static pods "
                         "only, root dir %s%s%s",
                         CUBELET_VERSION, a.node_name, opts->root_dir,
                         fl.config_path ? ", config " : "", fl.config_path ? fl.config_path : "");
        else
                log_info(
                    "cubelet v%s starting: node %s, apiserver %s (context %s), root dir %s%s%s",
                    CUBELET_VERSION, a.node_name, kc.server, kc.context, opts->root_dir,
                    fl.config_path ? ", config " : "", fl.config_path ? fl.config_path : "");
        if (start_agent(&a, &fl, &nc, &kc, &err) < 0) {
                log_error("cannot start the agent: %s", err.msg);
                goto out;
        }
        if (ag_loop_run(a.loop, &err) < 0) {
                log_error("the event loop failed: %s", err.msg);
                goto out;
        }
        ret = 0;
        log_info("stopped");
out:
        stop_agent(&a);
        cJSON_Delete(nc.extra_labels);
        ag_kubeconfig_clear(&kc);
        ag_config_clear(&fl);
        return ret;
}
