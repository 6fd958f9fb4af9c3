/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/cmd/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agent/k8s/duration.h"
#include "agent/k8s/containergc.h"
#include "agent/k8s/imagegc.h"
#include "agent/k8s/k8s.h"
#include "agent/nodeapi/server.h"
#include "agent/pods/logrotate.h"
#include "agent/node/nodestatus.h"
#include "agent/k8s/quantity.h"
#include "agent/k8s/sysctl.h"
#include "lib/cleanup.h"
#include "lib/file.h"
#include "status/podstatus.h"

#define CONFIG_API_VERSION "kubelet.config.k8s.io/v1beta1"
#define CONFIG_KIND        "KubeletConfiguration"

/* ---- option table ---- */

enum opt_kind {
        OPT_STR,      /* a string (owned char *) */
        OPT_PATH,     /* a string that must not be empty */
        OPT_INT,      /* int in [min, max] */
        OPT_INT64,    /* int64_t in [min, max] */
        OPT_DUR_MS,   /* a duration, uint64_t ms, in [min, max] ms */
        OPT_DUR_S,    /* a duration, int seconds, in [min, max] s (whole seconds) */
        OPT_TAINTS,   /* registerWithTaints */
        OPT_EVICTION, /* evictionHard */
        OPT_REGS,     /* insecureRegistries */
        OPT_BOOL,     /* true/false; the flag alone means true */
        OPT_IPS,      /* clusterDNS: a list of IPs in the file, "ip,ip" as a flag (char *) */
        OPT_SYSCTLS,  /* allowedUnsafeSysctls: a list in the file, "a,b*" as a flag (char *) */
        OPT_QUANTITY, /* a resource.Quantity ("10Mi") as int64_t bytes in [min, max] */
};

struct opt {
        const char *key;  /* config key path ("crashLoopBackOff.maxContainerRestartPeriod"); NULL:
                             flag only */
        const char *flag; /* "--max-pods"; NULL: file only */
        enum opt_kind kind;
        size_t offset;
        int64_t min, max;
        const char *arg, *def, *help;
};

#define OFF(f) offsetof(struct ag_config, f)

static const struct opt opts[] = {
    {NULL, "--kubeconfig", OPT_PATH, OFF(kubeconfig), 0, 0, "FILE", "none (standalone)",
     "credentials and address of the apiserver; without it cubelet runs standalone: static "
     "pods only"},
    {NULL, "--bootstrap-kubeconfig", OPT_PATH, OFF(bootstrap_kubeconfig), 0, 0, "FILE", "none",
     "a kubeconfig with a bootstrap token: when --kubeconfig is missing or its client "
     "certificate expired, request one with a CertificateSigningRequest, store it in --cert-dir "
     "and write --kubeconfig"},
    {"rotateCertificates", "--rotate-certificates", OPT_BOOL, OFF(rotate_certificates), 0, 0,
     "[=BOOL]", "true with --bootstrap-kubeconfig, else false",
     "renew the client certificate at 70-90% of its lifetime with a new CSR"},
    {NULL, "--hostname-override", OPT_STR, OFF(hostname_override), 0, 0, "NAME",
     "the host name, lower case", "node name"},
    {NULL, "--node-ip", OPT_STR, OFF(node_ip), 0, 0, "IP", "the default-route interface's IPv4",
     "the node's InternalIP"},
    {NULL, "--node-labels", OPT_STR, OFF(node_labels), 0, 0, "k=v,...", "none",
     "labels added at registration"},
    {"registerWithTaints", "--register-with-taints", OPT_TAINTS, OFF(register_with_taints), 0, 0,
     "k=v:Effect,...", "none", "taints set at registration"},
    {"staticPodPath", "--pod-manifest-path", OPT_PATH, OFF(static_pod_path), 0, 0, "DIR", "none",
     "directory of static pod manifests (YAML or JSON, one pod per file)"},
    {"fileCheckFrequency", "--file-check-frequency", OPT_DUR_MS, OFF(file_check_frequency_ms), 1000,
     3600000, "DUR", "20s",
     "rescan of the static pod directory (changes are also seen at "
     "once through inotify)"},
    {"maxPods", "--max-pods", OPT_INT, OFF(max_pods), 1, 10000, "N", "110", "pod capacity"},
    {"seccompDefault", "--seccomp-default", OPT_BOOL, OFF(seccomp_default), 0, 0, "[=BOOL]",
     "false", "containers without a seccomp profile run with RuntimeDefault instead of Unconfined"},
    {"podPidsLimit", "--pod-max-pids", OPT_INT64, OFF(pod_pids_limit), -1, 4194304, "N",
     "-1 (none)", "most processes in one pod (pids.max of its cgroup)"},
    {"nodeStatusUpdateFrequency", "--node-status-update-frequency", OPT_DUR_MS,
     OFF(node_status_update_ms), 1000, 3600000, "DUR", "10s", "node status computation interval"},
    {"nodeStatusReportFrequency", "--node-status-report-frequency", OPT_DUR_MS,
     OFF(node_status_report_ms), 1000, 86400000, "DUR", "5m",
     "node status report interval when nothing changed (the update frequency when only that "
     "one is set, like the kubelet)"},
    {"nodeLeaseDurationSeconds", "--node-lease-duration-seconds", OPT_INT,
     OFF(node_lease_duration_s), 1, 3600, "N", "40", "Lease duration; renewed every N/4 s"},
    {NULL, "--watch-timeout-seconds", OPT_INT, OFF(watch_timeout_s), 0, 86400, "N",
     "random 300-600", "watch timeout (for tests)"},
    {"podLogsDir", "--pod-logs-dir", OPT_PATH, OFF(pod_logs_dir), 0, 0, "DIR", "/var/log/pods",
     "container logs"},
    {"cgroupRoot", "--cgroup-root", OPT_STR, OFF(cgroup_root), 0, 0, "PATH",
     "the hierarchy root; under systemd on cgroup v2 the service's delegated cgroup",
     "parent of kubepods"},
    {"insecureRegistries", "--insecure-registry", OPT_REGS, OFF(insecure_registries), 0, 0,
     "HOST:PORT", "none", "registry reached over plain HTTP (cubelet; flag repeatable)"},
    {"clusterDNS", "--cluster-dns", OPT_IPS, OFF(cluster_dns), 0, 0, "IP,...", "none",
     "DNS server(s) of pods with dnsPolicy ClusterFirst (without it they fall back to Default)"},
    {"allowedUnsafeSysctls", "--allowed-unsafe-sysctls", OPT_SYSCTLS, OFF(allowed_unsafe_sysctls),
     0, 0, "PATTERN,...", "none",
     "unsafe sysctls (or prefixes ending in *) pods may set beyond the safe ones; each must be "
     "namespaced (net.*, kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*)"},
    {"clusterDomain", "--cluster-domain", OPT_STR, OFF(cluster_domain), 0, 0, "DOMAIN", "none",
     "the cluster's DNS domain (e.g. cluster.local): pods search <ns>.svc.DOMAIN svc.DOMAIN "
     "DOMAIN"},
    {"resolvConf", "--resolv-conf", OPT_STR, OFF(resolv_conf), 0, 0, "FILE", "/etc/resolv.conf",
     "the resolver file pods with dnsPolicy Default start from (\"\": none, 127.0.0.1)"},
    /* image garbage collection (agent/node/imagegc.h) */
    {"imageGCHighThresholdPercent", "--image-gc-high-threshold", OPT_INT,
     OFF(image_gc_high_threshold_percent), INT32_MIN, INT32_MAX, "PERCENT", "85",
     "image filesystem usage at which unused images are collected (100 with no "
     "imageMaximumGCAge: never)"},
    {"imageGCLowThresholdPercent", "--image-gc-low-threshold", OPT_INT,
     OFF(image_gc_low_threshold_percent), INT32_MIN, INT32_MAX, "PERCENT", "80",
     "the usage image garbage collection frees down to"},
    {"imageMinimumGCAge", "--minimum-image-ttl-duration", OPT_DUR_MS, OFF(image_minimum_gc_age_ms),
     0, INT64_MAX / 2, "DUR", "2m", "an unused image this young is not collected"},
    {"imageMaximumGCAge", NULL, OPT_DUR_MS, OFF(image_maximum_gc_age_ms), 0, INT64_MAX / 2, "DUR",
     "0s (off)", "an image unused this long is collected whatever the disk usage"},
    {NULL, "--image-gc-period", OPT_DUR_MS, OFF(image_gc_period_ms), 1000, 86400000, "DUR", "5m",
     "how often images are collected (cubelet, for tests; the kubelet's ImageGCPeriod)"},
    /* container garbage collection (agent/node/containergc.h): the kubelet's
     * deprecated flags, no configuration file keys */
    {NULL, "--minimum-container-ttl-duration", OPT_DUR_MS, OFF(container_gc_min_age_ms), 0,
     INT64_MAX / 2, "DUR", "0s", "a dead container this young is not collected"},
    {NULL, "--maximum-dead-containers-per-container", OPT_INT, OFF(max_dead_per_container),
     INT32_MIN, INT32_MAX, "N", "1", "dead instances kept per container (negative: no limit)"},
    {NULL, "--maximum-dead-containers", OPT_INT, OFF(max_dead_containers), INT32_MIN, INT32_MAX,
     "N", "-1", "dead instances kept on the node in all (negative: no limit)"},
    {NULL, "--container-gc-period", OPT_DUR_MS, OFF(container_gc_period_ms), 1000, 86400000, "DUR",
     "1m",
     "how often dead containers are collected (cubelet, for tests; the kubelet's "
     "ContainerGCPeriod)"},
    /* container log rotation (agent/pods/logrotate.h) */
    {"containerLogMaxSize", "--container-log-max-size", OPT_QUANTITY, OFF(container_log_max_size),
     INT64_MIN, INT64_MAX, "QUANTITY", "10Mi",
     "a container's log file is rotated once it is this big (negative: never)"},
    {"containerLogMaxFiles", "--container-log-max-files", OPT_INT, OFF(container_log_max_files), 2,
     1000, "N", "5", "most log files of one container, the current one included"},
    {"containerLogMaxWorkers", NULL, OPT_INT, OFF(container_log_max_workers), 1, 16, "N", "1",
     "threads rotating logs (the kubelet has no flag)"},
    {"containerLogMonitorInterval", NULL, OPT_DUR_MS, OFF(container_log_monitor_interval_ms), 3000,
     86400000, "DUR", "10s", "how often log sizes are checked (the kubelet has no flag)"},
    /* graceful node shutdown (agent/node/shutdown.h): the kubelet has no flags */
    {"shutdownGracePeriod", NULL, OPT_DUR_MS, OFF(shutdown_grace_ms), 0, 86400000, "DUR", "0s",
     "how long a node shutdown is delayed (a logind delay inhibitor) to stop the pods; 0: off"},
    {"shutdownGracePeriodCriticalPods", NULL, OPT_DUR_MS, OFF(shutdown_grace_critical_ms), 0,
     86400000, "DUR", "0s",
     "the part of shutdownGracePeriod kept for critical pods (priority >= 2000000000), stopped "
     "after the others"},
    {"crashLoopBackOff.initialContainerRestartPeriod", "--crash-loop-backoff-base", OPT_DUR_S,
     OFF(crash_loop_backoff_initial_s), 1, 300, "N", "10",
     "first container restart delay in seconds (cubelet; in the file a duration)"},
    {"crashLoopBackOff.maxContainerRestartPeriod", "--crash-loop-backoff-max", OPT_DUR_S,
     OFF(crash_loop_backoff_max_s), 1, 300, "N", "300",
     "container restart delay cap in seconds (in the file a duration, 1s..300s)"},
    {"evictionHard", "--eviction-hard", OPT_EVICTION, OFF(eviction_hard), 0, 0, "SIG<VAL,...",
     "memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,"
     "imagefs.available<15%",
     "hard eviction thresholds; giving any replaces all the defaults"},
    {"evictionPressureTransitionPeriod", "--eviction-pressure-transition-period", OPT_DUR_MS,
     OFF(eviction_pressure_transition_ms), 1000, 86400000, "DUR", "5m",
     "how long a pressure condition stays after its threshold was last met"},
    {"healthzBindAddress", "--healthz-bind-address", OPT_STR, OFF(healthz_bind_address), 0, 0, "IP",
     "127.0.0.1", "address of the local endpoint (loopback only)"},
    {"healthzPort", "--healthz-port", OPT_INT, OFF(healthz_port), 0, 65535, "N", "10248",
     "local endpoint /healthz /metrics /pods /timelines; 0 disables"},
    /* the node API (10250; docs/node-api.md) */
    {"port", "--port", OPT_INT, OFF(napi.port), 1, 65535, "N", "10250", "node API port (HTTPS)"},
    {"address", "--address", OPT_STR, OFF(napi.address), 0, 0, "IP", "0.0.0.0", "node API address"},
    {"tlsCertFile", "--tls-cert-file", OPT_PATH, OFF(napi.tls_cert_file), 0, 0, "FILE",
     "self-signed, made in --cert-dir", "node API serving certificate"},
    {"tlsPrivateKeyFile", "--tls-private-key-file", OPT_PATH, OFF(napi.tls_key_file), 0, 0, "FILE",
     "none", "the serving certificate's key"},
    {"serverTLSBootstrap", "--rotate-server-certificates", OPT_BOOL, OFF(napi.server_tls_bootstrap),
     0, 0, "[=BOOL]", "false",
     "request the node API's serving certificate with a kubernetes.io/kubelet-serving CSR "
     "(the node's addresses as SANs; an administrator or an approver must approve it) and "
     "renew it at 70-90% of its lifetime; TLS handshakes fail until it is issued"},
    {NULL, "--cert-dir", OPT_PATH, OFF(napi.cert_dir), 0, 0, "DIR", "ROOT/pki",
     "where a self-signed serving certificate, the bootstrapped client certificates "
     "(kubelet-client-*.pem) and the requested serving certificates (kubelet-server-*.pem) "
     "are kept"},
    {"authentication.x509.clientCAFile", "--client-ca-file", OPT_PATH, OFF(napi.client_ca_file), 0,
     0, "FILE", "none", "CA of accepted client certificates (the apiserver's kubelet client)"},
    {NULL, "--authentication-token-file", OPT_PATH, OFF(napi.token_file), 0, 0, "FILE", "none",
     "bearer tokens accepted: token,user,uid lines (cubelet; the node API runs when this, a "
     "client CA, or webhook or anonymous authentication is set)"},
    {"authentication.anonymous.enabled", "--anonymous-auth", OPT_BOOL, OFF(anonymous), 0, 0,
     "[=BOOL]", "false (the kubelet: true)",
     "serve requests without credentials as system:anonymous"},
    {"authentication.webhook.enabled", "--authentication-token-webhook", OPT_BOOL,
     OFF(authn_webhook), 0, 0, "[=BOOL]",
     "false; true from a config file when --kubeconfig is given",
     "bearer tokens not in the token file are checked by a TokenReview"},
    {"authentication.webhook.cacheTTL", "--authentication-token-webhook-cache-ttl", OPT_DUR_MS,
     OFF(authn_webhook_ttl_ms), 0, 86400000, "DUR", "2m", "how long TokenReview answers are kept"},
    {"authorization.mode", "--authorization-mode", OPT_STR, OFF(authz_mode), 0, 0,
     "AlwaysAllow|Webhook", "AlwaysAllow; Webhook from a config file when --kubeconfig is given",
     "Webhook: every request is checked by a SubjectAccessReview"},
    {"authorization.webhook.cacheAuthorizedTTL", "--authorization-webhook-cache-authorized-ttl",
     OPT_DUR_MS, OFF(authz_allowed_ttl_ms), 0, 86400000, "DUR", "5m",
     "how long allowed SubjectAccessReview answers are kept"},
    {"authorization.webhook.cacheUnauthorizedTTL", "--authorization-webhook-cache-unauthorized-ttl",
     OPT_DUR_MS, OFF(authz_denied_ttl_ms), 0, 86400000, "DUR", "30s",
     "how long denied SubjectAccessReview answers are kept"},
};

/* Keys of the document that are not options. */
static const char *const meta_keys[] = {"apiVersion", "kind"};

/* ---- small parsers ---- */

static void *field(struct ag_config *c, const struct opt *o)
{
        return (char *)c + o->offset;
}

static int set_str(char **slot, const char *v, struct cb_error *err)
{
        char *s = strdup(v);
        if (s == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        free(*slot);
        *slot = s;
        return 0;
}

static int parse_int64(const char *v, int64_t min, int64_t max, int64_t *ret, struct cb_error *err)
{
        char *end;
        errno = 0;
        long long n = strtoll(v, &end, 10);
        if (*v == '\0' || *end != '\0' || errno != 0 || n < min || n > max)
                return cb_error_set(err, 0, "want an integer between %lld and %lld", (long long)min,
                                    (long long)max);
        *ret = n;
        return 0;
}

static void fmt_ms(uint64_t ms, char *buf, size_t size)
{
        if (ms % 3600000 == 0 && ms > 0)
                snprintf(buf, size, "%lluh", (unsigned long long)(ms / 3600000));
        else if (ms % 60000 == 0 && ms > 0)
                snprintf(buf, size, "%llum", (unsigned long long)(ms / 60000));
        else if (ms % 1000 == 0)
                snprintf(buf, size, "%llus", (unsigned long long)(ms / 1000));
        else
                snprintf(buf, size, "%llums", (unsigned long long)ms);
}

static int parse_dur(const char *v, uint64_t min, uint64_t max, uint64_t *ret, struct cb_error *err)
{
        uint64_t ms;
        if (k8s_parse_duration_ms(v, &ms, err) < 0) {
                /* k8s_parse_duration_ms names the text; keep only the why. */
                return cb_error_set(err, 0, "want a duration like 10s, 1m30s or 500ms");
        }
        if (ms < min || ms > max) {
                char a[32], b[32];
                fmt_ms(min, a, sizeof(a));
                fmt_ms(max, b, sizeof(b));
                return cb_error_set(err, 0, "want a duration between %s and %s", a, b);
        }
        *ret = ms;
        return 0;
}

/* Drops a leading "<prefix>" from a message (a parser naming its own
 * option; the caller names the source). */
static void strip_prefix(struct cb_error *err, const char *prefix)
{
        size_t n = strlen(prefix);
        if (strncmp(err->msg, prefix, n) == 0)
                memmove(err->msg, err->msg + n, strlen(err->msg) - n + 1);
}

/* "key=value:Effect" (or "key:Effect") items into the taints array. */
static int taints_from_string(const char *s, cJSON **ret, struct cb_error *err)
{
        if (ag_parse_taints(s, ret, err) < 0) {
                strip_prefix(err, "--register-with-taints: ");
                return -1;
        }
        return 0;
}

static void regs_clear(struct ag_config *c)
{
        for (size_t i = 0; i < c->n_insecure_registries; i++) {
                free(c->insecure_registries[i]);
                c->insecure_registries[i] = NULL;
        }
        c->n_insecure_registries = 0;
}

/* "ip,ip": each an IPv4 or IPv6 address (the kubelet's clusterDNS). */
static int set_ips(char **slot, const char *v, struct cb_error *err)
{
        _cleanup_free_ char *copy = strdup(v);
        if (copy == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        char *save = NULL;
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                unsigned char buf[sizeof(struct in6_addr)];
                if (inet_pton(AF_INET, t, buf) != 1 && inet_pton(AF_INET6, t, buf) != 1)
                        return cb_error_set(err, 0, "\"%s\" is not an IP address", t);
        }
        return set_str(slot, v, err);
}

/* "a,b*": each a sysctl pattern the kubelet's NewAllowlist takes. */
static int set_sysctls(char **slot, const char *v, struct cb_error *err)
{
        _cleanup_free_ struct k8s_sysctl_allowlist *w = malloc(sizeof(*w));
        if (w == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        if (k8s_sysctl_allowlist_parse(w, v, err) < 0)
                return -1;
        return set_str(slot, v, err);
}

/* ---- applying a value (from the file or a flag) ---- */

/* What a value from the file is, for messages. */
static void describe(const cJSON *v, char *buf, size_t size)
{
        if (v == NULL || cJSON_IsNull(v))
                snprintf(buf, size, "null");
        else if (cJSON_IsBool(v))
                snprintf(buf, size, "%s", cJSON_IsTrue(v) ? "true" : "false");
        else if (cJSON_IsNumber(v) && v->valuestring != NULL)
                snprintf(buf, size, "%.64s", v->valuestring);
        else if (cJSON_IsNumber(v))
                snprintf(buf, size, "%.17g", v->valuedouble);
        else if (cJSON_IsString(v))
                snprintf(buf, size, "\"%.64s%s\"", v->valuestring,
                         strlen(v->valuestring) > 64 ? "..." : "");
        else if (cJSON_IsArray(v))
                snprintf(buf, size, "a list");
        else
                snprintf(buf, size, "a mapping");
}

/* Sets a scalar option from text. On error err holds only the why. */
static int apply_scalar(struct ag_config *c, const struct opt *o, const char *v,
                        struct cb_error *err)
{
        void *f = field(c, o);
        switch (o->kind) {
        case OPT_PATH:
                if (v[0] == '\0')
                        return cb_error_set(err, 0, "must not be empty");
                /* fallthrough */
        case OPT_STR:
                return set_str(f, v, err);
        case OPT_INT: {
                int64_t n;
                if (parse_int64(v, o->min, o->max, &n, err) < 0)
                        return -1;
                *(int *)f = (int)n;
                return 0;
        }
        case OPT_INT64:
                return parse_int64(v, o->min, o->max, f, err);
        case OPT_DUR_MS:
                return parse_dur(v, (uint64_t)o->min, (uint64_t)o->max, f, err);
        case OPT_DUR_S: {
                uint64_t ms;
                if (parse_dur(v, (uint64_t)o->min * 1000, (uint64_t)o->max * 1000, &ms, err) < 0)
                        return -1;
                if (ms % 1000 != 0)
                        return cb_error_set(err, 0, "want whole seconds");
                *(int *)f = (int)(ms / 1000);
                return 0;
        }
        case OPT_BOOL:
                if (strcmp(v, "true") == 0)
                        *(bool *)f = true;
                else if (strcmp(v, "false") == 0)
                        *(bool *)f = false;
                else
                        return cb_error_set(err, 0, "want true or false");
                return 0;
        case OPT_IPS:
                return set_ips(f, v, err);
        case OPT_SYSCTLS:
                return set_sysctls(f, v, err);
        case OPT_QUANTITY: {
                struct k8s_quantity q;
                if (k8s_quantity_parse(v, &q, err) < 0)
                        return -1;
                if (q.value < o->min || q.value > o->max)
                        return cb_error_set(err, 0, "out of range");
                *(int64_t *)f = q.value;
                return 0;
        }
        case OPT_TAINTS:
        case OPT_EVICTION:
        case OPT_REGS:
                break;
        }
        return cb_error_set(err, 0, "internal: not a scalar option");
}

static void after_set(struct ag_config *c, const struct opt *o)
{
        if (o->offset == OFF(node_status_update_ms))
                c->update_set = true;
        else if (o->offset == OFF(node_status_report_ms))
                c->report_set = true;
        else if (o->offset == OFF(cgroup_root))
                c->cgroup_root_set = true;
        else if (o->offset == OFF(authn_webhook))
                c->authn_webhook_set = true;
        else if (o->offset == OFF(authz_mode))
                c->authz_mode_set = true;
        else if (o->offset == OFF(rotate_certificates))
                c->rotate_certificates_set = true;
}

/* ---- the file ---- */

static bool is_integer_text(const cJSON *v)
{
        if (!cJSON_IsNumber(v))
                return false;
        if (v->valuestring == NULL)
                return v->valuedouble == floor(v->valuedouble) && fabs(v->valuedouble) < 9e15;
        const char *p = v->valuestring;
        if (*p == '-' || *p == '+')
                p++;
        if (*p == '\0')
                return false;
        for (; *p; p++)
                if (*p < '0' || *p > '9')
                        return false;
        return true;
}

static int file_scalar(struct ag_config *c, const struct opt *o, const cJSON *v,
                       struct cb_error *err)
{
        char got[96];
        describe(v, got, sizeof(got));
        char text[64];
        const char *s;
        switch (o->kind) {
        case OPT_INT:
        case OPT_INT64:
                if (!is_integer_text(v))
                        return cb_error_set(err, 0, "%s: want an integer, got %s", o->key, got);
                if (v->valuestring != NULL)
                        s = v->valuestring;
                else {
                        snprintf(text, sizeof(text), "%.0f", v->valuedouble);
                        s = text;
                }
                break;
        case OPT_BOOL:
                if (!cJSON_IsBool(v))
                        return cb_error_set(err, 0, "%s: want true or false, got %s", o->key, got);
                s = cJSON_IsTrue(v) ? "true" : "false";
                break;
        default:
                if (!cJSON_IsString(v))
                        return cb_error_set(err, 0, "%s: want a string, got %s", o->key, got);
                s = v->valuestring;
                break;
        }
        if (apply_scalar(c, o, s, err) < 0)
                return cb_error_prefix(err, "%s: %s", o->key, got);
        after_set(c, o);
        return 0;
}

static bool has_duplicate(const cJSON *map, const cJSON *item)
{
        for (const cJSON *e = map->child; e != item; e = e->next)
                if (strcmp(e->string, item->string) == 0)
                        return true;
        return false;
}

static int file_eviction(struct ag_config *c, const struct opt *o, const cJSON *v,
                         struct cb_error *err)
{
        char got[96];
        describe(v, got, sizeof(got));
        if (!cJSON_IsObject(v))
                return cb_error_set(err, 0, "%s: want a mapping of signal to threshold, got %s",
                                    o->key, got);
        /* Giving evictionHard replaces every default, like the kubelet
         * (a signal left out is not watched). */
        k8s_eviction_clear(&c->eviction_hard);
        const cJSON *e;
        cJSON_ArrayForEach(e, v)
        {
                describe(e, got, sizeof(got));
                if (has_duplicate(v, e))
                        return cb_error_set(err, 0, "%s.%s: duplicate key", o->key, e->string);
                if (!cJSON_IsString(e))
                        return cb_error_set(err, 0,
                                            "%s.%s: want a string like \"100Mi\" or "
                                            "\"10%%\", got %s",
                                            o->key, e->string, got);
                if (k8s_eviction_threshold_set(&c->eviction_hard, e->string, e->valuestring, err) <
                    0) {
                        strip_prefix(err, "evictionHard: ");
                        return cb_error_prefix(err, "%s.%s: %s", o->key, e->string, got);
                }
        }
        return 0;
}

static int file_taints(struct ag_config *c, const struct opt *o, const cJSON *v,
                       struct cb_error *err)
{
        char got[96];
        describe(v, got, sizeof(got));
        if (!cJSON_IsArray(v))
                return cb_error_set(err, 0, "%s: want a list of taints, got %s", o->key, got);
        _cleanup_cjson_ cJSON *all = cJSON_CreateArray();
        if (all == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        size_t i = 0;
        const cJSON *t;
        cJSON_ArrayForEach(t, v)
        {
                if (!cJSON_IsObject(t)) {
                        describe(t, got, sizeof(got));
                        return cb_error_set(err, 0,
                                            "%s[%zu]: want a taint {key, value, effect}, "
                                            "got %s",
                                            o->key, i, got);
                }
                const char *parts[3] = {"", "", ""};
                static const char *const names[] = {"key", "value", "effect"};
                const cJSON *kv;
                cJSON_ArrayForEach(kv, t)
                {
                        size_t k = 0;
                        while (k < 3 && strcmp(kv->string, names[k]) != 0)
                                k++;
                        if (k == 3 && strcmp(kv->string, "timeAdded") == 0)
                                continue; /* set by the apiserver; ignored like the kubelet */
                        if (k == 3)
                                return cb_error_set(err, 0,
                                                    "%s[%zu].%s: unknown field (want key, value, "
                                                    "effect)",
                                                    o->key, i, kv->string);
                        if (has_duplicate(t, kv))
                                return cb_error_set(err, 0, "%s[%zu].%s: duplicate key", o->key, i,
                                                    kv->string);
                        if (!cJSON_IsString(kv)) {
                                describe(kv, got, sizeof(got));
                                return cb_error_set(err, 0, "%s[%zu].%s: want a string, got %s",
                                                    o->key, i, kv->string, got);
                        }
                        parts[k] = kv->valuestring;
                }
                if (parts[0][0] == '\0')
                        return cb_error_set(err, 0, "%s[%zu].key: required", o->key, i);
                if (parts[2][0] == '\0')
                        return cb_error_set(err, 0,
                                            "%s[%zu].effect: required (NoSchedule, "
                                            "PreferNoSchedule or NoExecute)",
                                            o->key, i);
                if (strpbrk(parts[0], "=:,") || strpbrk(parts[1], "=:,") ||
                    strpbrk(parts[2], "=:,"))
                        return cb_error_set(err, 0,
                                            "%s[%zu]: invalid taint (\"=\", \":\" and "
                                            "\",\" are not allowed in key, value or "
                                            "effect)",
                                            o->key, i);
                char spec[1024];
                int n = snprintf(spec, sizeof(spec), "%s%s%s:%s", parts[0], parts[1][0] ? "=" : "",
                                 parts[1], parts[2]);
                if (n < 0 || (size_t)n >= sizeof(spec))
                        return cb_error_set(err, 0, "%s[%zu]: taint too long", o->key, i);
                cJSON *one = NULL;
                if (taints_from_string(spec, &one, err) < 0)
                        return cb_error_prefix(err, "%s[%zu]", o->key, i);
                cJSON *item = cJSON_DetachItemFromArray(one, 0);
                cJSON_Delete(one);
                if (item != NULL)
                        cJSON_AddItemToArray(all, item);
                i++;
        }
        cJSON_Delete(c->register_with_taints);
        c->register_with_taints = steal_pointer(&all);
        return 0;
}

static int file_regs(struct ag_config *c, const struct opt *o, const cJSON *v, struct cb_error *err)
{
        char got[96];
        describe(v, got, sizeof(got));
        if (!cJSON_IsArray(v))
                return cb_error_set(err, 0, "%s: want a list of HOST:PORT strings, got %s", o->key,
                                    got);
        regs_clear(c);
        size_t i = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, v)
        {
                describe(e, got, sizeof(got));
                if (!cJSON_IsString(e) || e->valuestring[0] == '\0' ||
                    strpbrk(e->valuestring, "/ \t") != NULL)
                        return cb_error_set(err, 0,
                                            "%s[%zu]: want a registry HOST or HOST:PORT, "
                                            "got %s",
                                            o->key, i, got);
                if (c->n_insecure_registries == AG_INSECURE_REGS_MAX)
                        return cb_error_set(err, 0, "%s: at most %d registries", o->key,
                                            AG_INSECURE_REGS_MAX);
                char *s = strdup(e->valuestring);
                if (s == NULL)
                        return cb_error_set(err, ENOMEM, "out of memory");
                c->insecure_registries[c->n_insecure_registries++] = s;
                i++;
        }
        return 0;
}

/* A list of strings in the file, joined with ',' for the flag's setter. */
static int file_list(struct ag_config *c, const struct opt *o, const cJSON *v, const char *what,
                     const char *whats, int (*set)(char **, const char *, struct cb_error *),
                     struct cb_error *err)
{
        char got[96];
        describe(v, got, sizeof(got));
        if (!cJSON_IsArray(v))
                return cb_error_set(err, 0, "%s: want a list of %s, got %s", o->key, whats, got);
        _cleanup_free_ char *all = strdup("");
        size_t i = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, v)
        {
                describe(e, got, sizeof(got));
                if (!cJSON_IsString(e) || e->valuestring[0] == '\0' || strchr(e->valuestring, ','))
                        return cb_error_set(err, 0, "%s[%zu]: want an %s, got %s", o->key, i, what,
                                            got);
                char *n = NULL;
                if (all == NULL || asprintf(&n, "%s%s%s", all, i ? "," : "", e->valuestring) < 0)
                        return cb_error_set(err, ENOMEM, "out of memory");
                free(all);
                all = n;
                i++;
        }
        if (set(field(c, o), all, err) < 0)
                return cb_error_prefix(err, "%s", o->key);
        return 0;
}

static int file_option(struct ag_config *c, const struct opt *o, const cJSON *v,
                       struct cb_error *err)
{
        switch (o->kind) {
        case OPT_IPS:
                return file_list(c, o, v, "IP address", "IP addresses", set_ips, err);
        case OPT_SYSCTLS:
                return file_list(c, o, v, "unsafe sysctl pattern", "unsafe sysctl patterns",
                                 set_sysctls, err);
        case OPT_TAINTS:
                return file_taints(c, o, v, err);
        case OPT_EVICTION:
                return file_eviction(c, o, v, err);
        case OPT_REGS:
                return file_regs(c, o, v, err);
        default:
                return file_scalar(c, o, v, err);
        }
}

/* A mapping at prefix ("" or "crashLoopBackOff."): every key must be an
 * option or a mapping holding options. */
static int apply_mapping(struct ag_config *c, const cJSON *map, const char *prefix,
                         struct cb_error *err)
{
        const cJSON *e;
        cJSON_ArrayForEach(e, map)
        {
                char path[256];
                snprintf(path, sizeof(path), "%s%s", prefix, e->string);
                if (has_duplicate(map, e))
                        return cb_error_set(err, 0, "%s: duplicate key", path);
                bool meta = false;
                for (size_t i = 0; prefix[0] == '\0' && i < CB_ARRAY_SIZE(meta_keys); i++)
                        meta = meta || strcmp(e->string, meta_keys[i]) == 0;
                if (meta)
                        continue;
                const struct opt *o = NULL;
                bool is_parent = false;
                size_t plen = strlen(path);
                for (size_t i = 0; i < CB_ARRAY_SIZE(opts); i++) {
                        if (opts[i].key == NULL)
                                continue;
                        if (strcmp(opts[i].key, path) == 0)
                                o = &opts[i];
                        else if (strncmp(opts[i].key, path, plen) == 0 && opts[i].key[plen] == '.')
                                is_parent = true;
                }
                if (o != NULL && cJSON_IsNull(e))
                        continue; /* "key:" with no value leaves the option as it is */
                if (o != NULL) {
                        if (file_option(c, o, e, err) < 0)
                                return -1;
                        continue;
                }
                if (is_parent) {
                        if (cJSON_IsNull(e))
                                continue;
                        if (!cJSON_IsObject(e)) {
                                char got[96];
                                describe(e, got, sizeof(got));
                                return cb_error_set(err, 0, "%s: want a mapping, got %s", path,
                                                    got);
                        }
                        char sub[260];
                        snprintf(sub, sizeof(sub), "%s.", path);
                        if (apply_mapping(c, e, sub, err) < 0)
                                return -1;
                        continue;
                }
                return cb_error_set(err, 0,
                                    "%s: unknown field (cubelet supports a subset of "
                                    "KubeletConfiguration; see docs/configuration.md)",
                                    path);
        }
        return 0;
}

int ag_config_apply_text(struct ag_config *c, const char *text, size_t len, struct cb_error *err)
{
        _cleanup_cjson_ cJSON *doc = NULL;
        if (k8s_parse_text(text, len, &doc, err) < 0)
                return -1;
        if (!cJSON_IsObject(doc))
                return cb_error_set(err, 0,
                                    "want a KubeletConfiguration mapping (apiVersion: "
                                    "%s, kind: %s)",
                                    CONFIG_API_VERSION, CONFIG_KIND);
        const cJSON *av = cJSON_GetObjectItemCaseSensitive(doc, "apiVersion");
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(doc, "kind");
        char got[96];
        if (!cJSON_IsString(av) || strcmp(av->valuestring, CONFIG_API_VERSION) != 0) {
                describe(av, got, sizeof(got));
                return cb_error_set(err, 0, "apiVersion: %s: want %s", av ? got : "missing",
                                    CONFIG_API_VERSION);
        }
        if (!cJSON_IsString(kind) || strcmp(kind->valuestring, CONFIG_KIND) != 0) {
                describe(kind, got, sizeof(got));
                return cb_error_set(err, 0, "kind: %s: want %s", kind ? got : "missing",
                                    CONFIG_KIND);
        }
        return apply_mapping(c, doc, "", err);
}

int ag_config_load_file(struct ag_config *c, const char *path, struct cb_error *err)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        if (cb_read_file(path, K8S_MAX_DOC_BYTES, &text, &len, err) < 0)
                return -1;
        if (ag_config_apply_text(c, text, len, err) < 0)
                return cb_error_prefix(err, "%s", path);
        c->config_path = path;
        return 0;
}

/* ---- flags ---- */

static int flag_option(struct ag_config *c, const struct opt *o, const char *v,
                       bool *regs_from_flag, struct cb_error *err)
{
        switch (o->kind) {
        case OPT_TAINTS: {
                cJSON *t = NULL;
                if (taints_from_string(v, &t, err) < 0)
                        return cb_error_prefix(err, "%s", o->flag);
                cJSON_Delete(c->register_with_taints);
                c->register_with_taints = t;
                return 0;
        }
        case OPT_EVICTION: {
                /* "memory.available<100Mi,nodefs.available<10%" */
                if (k8s_eviction_parse_hard(v, &c->eviction_hard, err) < 0) {
                        strip_prefix(err, "--eviction-hard: ");
                        strip_prefix(err, "evictionHard: ");
                        return cb_error_prefix(err, "%s", o->flag);
                }
                return 0;
        }
        case OPT_REGS:
                if (!*regs_from_flag) {
                        /* Flags replace the file's list. */
                        regs_clear(c);
                        *regs_from_flag = true;
                }
                if (v[0] == '\0' || strpbrk(v, "/ \t") != NULL)
                        return cb_error_set(err, 0, "%s: \"%s\": want a registry HOST or HOST:PORT",
                                            o->flag, v);
                if (c->n_insecure_registries == AG_INSECURE_REGS_MAX)
                        return cb_error_set(err, 0, "%s: at most %d registries", o->flag,
                                            AG_INSECURE_REGS_MAX);
                return set_str(&c->insecure_registries[c->n_insecure_registries++], v, err);
        default:
                if (o->kind == OPT_DUR_S) {
                        /* The flags take whole seconds (as they always did). */
                        int64_t n;
                        if (parse_int64(v, o->min, o->max, &n, err) < 0)
                                return cb_error_prefix(err, "%s: \"%s\"", o->flag, v);
                        *(int *)field(c, o) = (int)n;
                        return 0;
                }
                if (apply_scalar(c, o, v, err) < 0)
                        return cb_error_prefix(err, "%s: \"%s\"", o->flag, v);
                after_set(c, o);
                return 0;
        }
}

/* "--flag value" or "--flag=value": the value, NULL when arg is not flag. */
static const char *match_flag(int argc, char **argv, int *i, const char *flag, bool *missing)
{
        size_t len = strlen(flag);
        const char *a = argv[*i];
        if (strncmp(a, flag, len) != 0)
                return NULL;
        if (a[len] == '=')
                return a + len + 1;
        if (a[len] != '\0')
                return NULL;
        if (*i + 1 >= argc) {
                *missing = true;
                return NULL;
        }
        (*i)++;
        return argv[*i];
}

int ag_config_parse_flags(struct ag_config *c, int argc, char **argv, struct cb_error *err)
{
        /* --config first: the flags override the file wherever they stand. */
        for (int i = 0; i < argc; i++) {
                bool missing = false;
                const char *v = match_flag(argc, argv, &i, "--config", &missing);
                if (missing)
                        return cb_error_set(err, 0, "--config needs a value");
                if (v != NULL) {
                        if (c->config_path != NULL)
                                return cb_error_set(err, 0, "--config given twice");
                        if (v[0] == '\0')
                                return cb_error_set(err, 0, "--config: must not be empty");
                        if (ag_config_load_file(c, v, err) < 0)
                                return -1;
                }
        }
        bool regs_from_flag = false;
        for (int i = 0; i < argc; i++) {
                if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
                        return 1;
                bool missing = false;
                if (match_flag(argc, argv, &i, "--config", &missing) != NULL)
                        continue;
                const char *v = NULL;
                const struct opt *o = NULL;
                for (size_t k = 0; k < CB_ARRAY_SIZE(opts) && v == NULL; k++) {
                        /* a boolean flag alone means true; a value only with '=' */
                        size_t fl = opts[k].flag != NULL ? strlen(opts[k].flag) : 0;
                        if (opts[k].kind != OPT_BOOL || fl == 0 ||
                            strncmp(argv[i], opts[k].flag, fl) != 0 ||
                            (argv[i][fl] != '\0' && argv[i][fl] != '='))
                                continue;
                        v = argv[i][fl] == '=' ? argv[i] + fl + 1 : "true";
                        o = &opts[k];
                }
                for (size_t k = 0; k < CB_ARRAY_SIZE(opts) && v == NULL && !missing; k++) {
                        if (opts[k].flag == NULL || opts[k].kind == OPT_BOOL)
                                continue;
                        v = match_flag(argc, argv, &i, opts[k].flag, &missing);
                        o = &opts[k];
                }
                if (missing)
                        return cb_error_set(err, 0, "%s needs a value", argv[i]);
                if (v == NULL)
                        return cb_error_set(
                            err, 0, "unknown flag or command \"%s\"; see cubelet --help", argv[i]);
                if (flag_option(c, o, v, &regs_from_flag, err) < 0)
                        return -1;
        }
        return 0;
}

int ag_config_finish(struct ag_config *c, struct cb_error *err)
{
        if (c->crash_loop_backoff_initial_s > c->crash_loop_backoff_max_s)
                return cb_error_set(err, 0,
                                    "crashLoopBackOff.initialContainerRestartPeriod (%ds, "
                                    "--crash-loop-backoff-base) must not exceed "
                                    "crashLoopBackOff.maxContainerRestartPeriod (%ds, "
                                    "--crash-loop-backoff-max)",
                                    c->crash_loop_backoff_initial_s, c->crash_loop_backoff_max_s);
        /* The kubelet's validation of the graceful shutdown periods. */
        char g[32], cr[32];
        fmt_ms(c->shutdown_grace_ms, g, sizeof(g));
        fmt_ms(c->shutdown_grace_critical_ms, cr, sizeof(cr));
        if (c->shutdown_grace_critical_ms > c->shutdown_grace_ms)
                return cb_error_set(err, 0,
                                    "invalid configuration: shutdownGracePeriodCriticalPods %s "
                                    "must be <= shutdownGracePeriod %s",
                                    cr, g);
        if (c->shutdown_grace_ms > 0 && c->shutdown_grace_ms < 1000)
                return cb_error_set(err, 0,
                                    "invalid configuration: shutdownGracePeriod %s must be "
                                    "either zero or otherwise >= 1 sec",
                                    g);
        if (c->shutdown_grace_critical_ms > 0 && c->shutdown_grace_critical_ms < 1000)
                return cb_error_set(err, 0,
                                    "invalid configuration: shutdownGracePeriodCriticalPods %s "
                                    "must be either zero or otherwise >= 1 sec",
                                    cr);
        /* The kubelet: an explicit update frequency without a report
         * frequency makes both the same. */
        if (c->update_set && !c->report_set)
                c->node_status_report_ms = c->node_status_update_ms;
        /* The kubelet's KubeletConfiguration file defaults (webhook
         * authentication, Webhook authorization) over its flag defaults
         * (off, AlwaysAllow) -- only with an apiserver to ask. */
        bool file_defaults = c->config_path != NULL && c->kubeconfig != NULL;
        if (!c->authn_webhook_set)
                c->authn_webhook = file_defaults;
        if (!c->authz_mode_set &&
            set_str(&c->authz_mode, file_defaults ? "Webhook" : "AlwaysAllow", err) < 0)
                return -1;
        if (strcmp(c->authz_mode, "Webhook") == 0)
                c->authz_webhook = true;
        else if (strcmp(c->authz_mode, "AlwaysAllow") == 0)
                c->authz_webhook = false;
        else
                return cb_error_set(err, 0,
                                    "authorization.mode (--authorization-mode): \"%s\": want "
                                    "AlwaysAllow or Webhook",
                                    c->authz_mode);
        struct k8s_imagegc_policy gp = {
            .high_threshold_percent = c->image_gc_high_threshold_percent,
            .low_threshold_percent = c->image_gc_low_threshold_percent,
            .min_age_ms = (int64_t)c->image_minimum_gc_age_ms,
            .max_age_ms = (int64_t)c->image_maximum_gc_age_ms,
        };
        if (k8s_imagegc_validate(&gp, err) < 0)
                return -1;
        if (c->bootstrap_kubeconfig != NULL && c->kubeconfig == NULL)
                return cb_error_set(err, 0,
                                    "--bootstrap-kubeconfig needs --kubeconfig: the file the "
                                    "bootstrap writes and the agent then uses");
        if (!c->rotate_certificates_set)
                c->rotate_certificates = c->bootstrap_kubeconfig != NULL;
        if (c->napi.server_tls_bootstrap && c->kubeconfig == NULL)
                return cb_error_set(err, 0,
                                    "serverTLSBootstrap (--rotate-server-certificates) asks the "
                                    "apiserver for the serving certificate: it needs "
                                    "--kubeconfig");
        if ((c->authn_webhook || c->authz_webhook) && c->kubeconfig == NULL)
                return cb_error_set(err, 0,
                                    "authentication.webhook.enabled "
                                    "(--authentication-token-webhook) and authorization.mode "
                                    "Webhook ask the apiserver: they need --kubeconfig");
        return 0;
}

int ag_config_init(struct ag_config *c, struct cb_error *err)
{
        *c = (struct ag_config){
            .file_check_frequency_ms = 20000,
            .max_pods = 110,
            .pod_pids_limit = -1,
            .node_status_update_ms = AG_NODE_STATUS_UPDATE_MS,
            .node_status_report_ms = AG_NODE_STATUS_REPORT_MS,
            .node_lease_duration_s = AG_NODE_LEASE_DURATION_S,
            .healthz_port = 10248,
            .crash_loop_backoff_initial_s = ST_BACKOFF_BASE_DEFAULT,
            .crash_loop_backoff_max_s = ST_BACKOFF_CAP_DEFAULT,
            .eviction_pressure_transition_ms = K8S_EVICTION_TRANSITION_MS,
            .image_gc_high_threshold_percent = K8S_IMAGE_GC_HIGH_DEFAULT,
            .image_gc_low_threshold_percent = K8S_IMAGE_GC_LOW_DEFAULT,
            .image_minimum_gc_age_ms = K8S_IMAGE_GC_MIN_AGE_MS,
            .image_gc_period_ms = K8S_IMAGE_GC_PERIOD_MS,
            .max_dead_per_container = 1,
            .max_dead_containers = -1,
            .container_gc_period_ms = K8S_CONTAINER_GC_PERIOD_MS,
            .authn_webhook_ttl_ms = 120000,
            .authz_allowed_ttl_ms = 300000,
            .authz_denied_ttl_ms = 30000,
            .napi.port = AG_NAPI_DEFAULT_PORT,
            .container_log_max_size = AG_LOGROTATE_DEFAULT_MAX_SIZE,
            .container_log_max_files = AG_LOGROTATE_DEFAULT_MAX_FILES,
            .container_log_max_workers = AG_LOGROTATE_DEFAULT_WORKERS,
            .container_log_monitor_interval_ms = AG_LOGROTATE_DEFAULT_INTERVAL_MS,
        };
        if (set_str(&c->pod_logs_dir, "/var/log/pods", err) < 0 ||
            set_str(&c->napi.address, "0.0.0.0", err) < 0 ||
            set_str(&c->cgroup_root, "", err) < 0 ||
            set_str(&c->healthz_bind_address, "127.0.0.1", err) < 0 ||
            set_str(&c->resolv_conf, "/etc/resolv.conf", err) < 0)
                return -1;
        k8s_eviction_defaults(&c->eviction_hard);
        return 0;
}

void ag_config_clear(struct ag_config *c)
{
        for (size_t i = 0; i < CB_ARRAY_SIZE(opts); i++) {
                const struct opt *o = &opts[i];
                if (o->kind == OPT_STR || o->kind == OPT_PATH || o->kind == OPT_IPS ||
                    o->kind == OPT_SYSCTLS) {
                        char **s = field(c, o);
                        free(*s);
                        *s = NULL;
                }
        }
        regs_clear(c);
        cJSON_Delete(c->register_with_taints);
        c->register_with_taints = NULL;
}

void ag_config_usage(FILE *f)
{
        fprintf(f, "Agent flags (after --config FILE, a KubeletConfiguration; flags override it;\n"
                   "the config key is in brackets; docs/configuration.md has the details):\n"
                   "  --config FILE\n"
                   "        KubeletConfiguration file (" CONFIG_API_VERSION "); default none\n");
        for (size_t i = 0; i < CB_ARRAY_SIZE(opts); i++) {
                const struct opt *o = &opts[i];
                if (o->flag == NULL)
                        continue;
                fprintf(f, "  %s %s%s%s%s\n        %s; default %s\n", o->flag, o->arg,
                        o->key ? "  [" : "", o->key ? o->key : "", o->key ? "]" : "", o->help,
                        o->def);
        }
}
