/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The node agent's configuration: every option, from the defaults, then the
 * file given with --config (shaped like the kubelet's KubeletConfiguration,
 * apiVersion kubelet.config.k8s.io/v1beta1, with the kubelet's field names
 * and units), then the command-line flags, which override the file.
 *
 * The loader is strict like the kubelet's: an unknown key, a value of the
 * wrong type or out of range stops startup with the key's path and why:
 *
 *   /etc/cubelet/config.yaml: evictionHard.memory.available: "10x":
 *   memory.available: invalid quantity "10x": ...
 *
 * Pure (no logging, no side effects), so every error path is unit tested.
 * docs/configuration.md lists every option.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "agent/k8s/eviction.h"
#include "lib/error.h"

#define AG_INSECURE_REGS_MAX 16

struct ag_config {
        const char *config_path; /* --config; NULL: none */

        /* flag-only, like the kubelet */
        char *kubeconfig;
        char *bootstrap_kubeconfig; /* --bootstrap-kubeconfig: TLS bootstrap (issue 19) */
        bool rotate_certificates;   /* rotateCertificates: default on with a bootstrap */
        bool rotate_certificates_set;
        char *hostname_override;
        char *node_ip;
        char *node_labels; /* "k=v,..." */
        int watch_timeout_s;

        /* KubeletConfiguration fields (config key -> flag) */
        char *static_pod_path;            /* staticPodPath, --pod-manifest-path; NULL: none */
        uint64_t file_check_frequency_ms; /* fileCheckFrequency, --file-check-frequency: 20s */
        int max_pods;                     /* maxPods, --max-pods: 110 */
        bool seccomp_default;             /* seccompDefault, --seccomp-default: false */
        int64_t pod_pids_limit;           /* podPidsLimit, --pod-max-pids: -1 (none) */
        uint64_t node_status_update_ms;   /* nodeStatusUpdateFrequency: 10s */
        uint64_t node_status_report_ms;   /* nodeStatusReportFrequency: 5m (or the update
                                             frequency when only that one is set) */
        int node_lease_duration_s;        /* nodeLeaseDurationSeconds: 40 */
        cJSON *register_with_taints;      /* registerWithTaints: array of taints, or NULL */
        char *cgroup_root;                /* cgroupRoot, --cgroup-root: "" */
        bool cgroup_root_set;             /* given in the file or as a flag */
        char *pod_logs_dir;               /* podLogsDir, --pod-logs-dir: /var/log/pods */
        char *healthz_bind_address;       /* healthzBindAddress: 127.0.0.1 */
        int healthz_port;                 /* healthzPort: 10248; 0 disables */
        int crash_loop_backoff_max_s;     /* crashLoopBackOff.maxContainerRestartPeriod: 300 */
        int crash_loop_backoff_initial_s; /* crashLoopBackOff.initialContainerRestartPeriod
                                             (cubelet): 10 */
        char *cluster_dns;                /* clusterDNS, --cluster-dns: "ip,ip"; NULL: none */
        char *allowed_unsafe_sysctls;     /* allowedUnsafeSysctls, --allowed-unsafe-sysctls:
                                             "pattern,pattern"; NULL: none */
        char *cluster_domain;             /* clusterDomain, --cluster-domain: NULL */
        char *resolv_conf; /* resolvConf, --resolv-conf: /etc/resolv.conf; "": none */
        char *insecure_registries[AG_INSECURE_REGS_MAX]; /* insecureRegistries (cubelet) */
        size_t n_insecure_registries;
        /* evictionHard, --eviction-hard (agent/k8s/eviction.h parses them). Giving
         * it replaces the defaults (memory.available 100Mi, nodefs.available
         * 10%, nodefs.inodesFree 5%, imagefs.available 15%), like the kubelet. */
        struct k8s_eviction_thresholds eviction_hard;
        /* evictionPressureTransitionPeriod, --eviction-pressure-transition-period: 5m */
        uint64_t eviction_pressure_transition_ms;
        /* image garbage collection (agent/node/imagegc.h), the kubelet's keys */
        int image_gc_high_threshold_percent; /* imageGCHighThresholdPercent: 85 */
        int image_gc_low_threshold_percent;  /* imageGCLowThresholdPercent: 80 */
        uint64_t image_minimum_gc_age_ms;    /* imageMinimumGCAge: 2m */
        uint64_t image_maximum_gc_age_ms;    /* imageMaximumGCAge: 0 (off) */
        uint64_t image_gc_period_ms;         /* --image-gc-period (cubelet, tests): 5m */
        /* container garbage collection (agent/node/containergc.h), the
         * kubelet's deprecated flags */
        uint64_t container_gc_min_age_ms; /* --minimum-container-ttl-duration: 0 */
        int max_dead_per_container;       /* --maximum-dead-containers-per-container: 1 */
        int max_dead_containers;          /* --maximum-dead-containers: -1 */
        uint64_t container_gc_period_ms;  /* --container-gc-period (cubelet, tests): 1m */
        /* container log rotation (agent/pods/logrotate.h), the kubelet's keys */
        int64_t container_log_max_size; /* containerLogMaxSize, --container-log-max-size:
                                           10Mi; negative: no rotation */
        int container_log_max_files;    /* containerLogMaxFiles, --container-log-max-files: 5 */
        int container_log_max_workers;  /* containerLogMaxWorkers: 1 */
        uint64_t container_log_monitor_interval_ms; /* containerLogMonitorInterval: 10s */
        /* graceful node shutdown (agent/node/shutdown.h), file only like the kubelet */
        uint64_t shutdown_grace_ms;          /* shutdownGracePeriod: 0 (off) */
        uint64_t shutdown_grace_critical_ms; /* shutdownGracePeriodCriticalPods: 0 */

        /* The node API on 10250 (agent/nodeapi/server.h), named like the
         * kubelet's flags and keys; it is served when client certificates,
         * tokens, or webhook or anonymous authentication are configured. */
        struct ag_config_napi {
                char *address;       /* address, --address: 0.0.0.0 */
                int port;            /* port, --port: 10250 */
                char *tls_cert_file; /* tlsCertFile, --tls-cert-file: NULL (self-signed) */
                char *tls_key_file;  /* tlsPrivateKeyFile, --tls-private-key-file */
                /* serverTLSBootstrap, --rotate-server-certificates: the serving
                 * certificate from a kubelet-serving CSR (agent/client/bootstrap.h) */
                bool server_tls_bootstrap;
                char *cert_dir;       /* --cert-dir: NULL (<root dir>/pki) */
                char *client_ca_file; /* authentication.x509.clientCAFile, --client-ca-file */
                char *token_file;     /* --authentication-token-file (cubelet) */
        } napi;
        /* authentication.anonymous.enabled, --anonymous-auth: false (cubelet) */
        bool anonymous;
        /* authentication.webhook.enabled, --authentication-token-webhook:
         * false from flags, true from a config file with a --kubeconfig */
        bool authn_webhook;
        uint64_t authn_webhook_ttl_ms; /* authentication.webhook.cacheTTL: 2m */
        /* authorization.mode, --authorization-mode: AlwaysAllow from flags,
         * Webhook from a config file with a --kubeconfig */
        char *authz_mode;
        uint64_t authz_allowed_ttl_ms; /* authorization.webhook.cacheAuthorizedTTL: 5m */
        uint64_t authz_denied_ttl_ms;  /* authorization.webhook.cacheUnauthorizedTTL: 30s */
        bool authz_webhook;            /* ag_config_finish: authz_mode is Webhook */
        bool authn_webhook_set, authz_mode_set;

        /* bookkeeping for the kubelet's defaulting rules */
        bool update_set, report_set;
};

/* The defaults (the kubelet's where it has the option). */
int ag_config_init(struct ag_config *c, struct cb_error *err);
void ag_config_clear(struct ag_config *c);

/* Applies a KubeletConfiguration document (YAML or JSON text). Keys the
 * document leaves out keep their value. Errors: "<path>: <why>". */
int ag_config_apply_text(struct ag_config *c, const char *text, size_t len, struct cb_error *err);
/* Reads path and applies it; errors are prefixed with the path. */
int ag_config_load_file(struct ag_config *c, const char *path, struct cb_error *err);

/* Command-line flags (argv without the program name or a command), applied
 * over whatever is in c; --config FILE is loaded first wherever it stands.
 * Returns 0, 1 when --help was asked for, -1 on a bad flag or value (err
 * names the flag). */
int ag_config_parse_flags(struct ag_config *c, int argc, char **argv, struct cb_error *err);
/* The kubelet's final defaulting (report frequency from the update
 * frequency when only that one was set) and checks across options. */
int ag_config_finish(struct ag_config *c, struct cb_error *err);

/* Every flag with its default, for --help. */
void ag_config_usage(FILE *f);
