/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cubelet run-pod FILE: runs one pod from a manifest on this machine
 * without an apiserver, the way `podman kube play` does: admission against
 * this node, images, sandbox, containers and restartPolicy, through the
 * same pod worker the agent uses. Prints one JSON line per status change
 * ({"time", "pod", "status"}) on stdout, and at the end the pod's timeline
 * ({"pod", "timeline": [{"step", "offsetUs", "time"}]}), and the kubelet's events on stderr
 * at -v=1. Exits 0 when the pod Succeeded, 1 when it Failed (or was
 * rejected); SIGINT/SIGTERM stop it gracefully (terminationGracePeriodSeconds)
 * and clean everything up; a second signal stops it with grace 0.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "agent/k8s/admit.h"
#include "agent/k8s/sysctl.h"
#include "agent/k8s/validate.h"
#include "agent/cmd/cli.h"
#include "agent/k8s/k8s.h"
#include "agent/core/log.h"
#include "agent/core/loop.h"
#include "agent/node/nodeinfo.h"
#include "agent/core/offload.h"
#include "agent/k8s/quantity.h"
#include "agent/pods/logrotate.h"
#include "agent/pods/podworker.h"
#include "agent/pods/prober.h"
#include "agent/core/curl.h"
#include "agent/pods/statusgen.h"
#include "lib/cleanup.h"
#include "runtime/sandbox.h"
#include "status/podstatus.h"

#define MAX_INSECURE 16

struct runpod {
        struct ag_loop *loop;
        struct ag_pod_worker *worker;
        const char *pod_ref;
        int signals;
        int64_t grace;
        enum st_phase final;
};

static void print_status(const char *pod_ref, const cJSON *status)
{
        struct timeval tv;
        gettimeofday(&tv, NULL);
        struct tm tm;
        gmtime_r(&tv.tv_sec, &tm);
        char ts[64];
        snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)tv.tv_usec);
        cJSON *line = cJSON_CreateObject();
        cJSON_AddStringToObject(line, "time", ts);
        cJSON_AddStringToObject(line, "pod", pod_ref);
        cJSON_AddItemReferenceToObject(line, "status", (cJSON *)status);
        char *text = cJSON_PrintUnformatted(line);
        if (text != NULL) {
                printf("%s\n", text);
                fflush(stdout);
        }
        free(text);
        cJSON_Delete(line);
}

static void on_status(struct ag_pod_worker *w, const cJSON *status, void *data)
{
        struct runpod *rp = data;
        (void)w;
        print_status(rp->pod_ref, status);
        const cJSON *phase = cJSON_GetObjectItemCaseSensitive(status, "phase");
        if (cJSON_IsString(phase))
                rp->final = st_phase_from_name(phase->valuestring);
}

static void on_event(struct ag_pod_worker *w, const char *type, const char *reason,
                     const char *message, const char *field_path, void *data)
{
        struct runpod *rp = data;
        (void)w;
        if (strcmp(type, "Warning") == 0)
                log_warning("pod %s%s%s: %s %s", rp->pod_ref, field_path ? " " : "",
                            field_path ? field_path : "", reason, message);
        else
                log_v(1, "pod %s%s%s: %s %s", rp->pod_ref, field_path ? " " : "",
                      field_path ? field_path : "", reason, message);
}

static void on_timeline(struct ag_pod_worker *w, const char *step, uint64_t offset_us, void *data)
{
        struct runpod *rp = data;
        (void)w;
        log_v(2, "pod %s: timeline %s +%.3fms", rp->pod_ref, step, (double)offset_us / 1000.0);
}

static void on_done(struct ag_pod_worker *w, void *data)
{
        struct runpod *rp = data;
        (void)w;
        ag_loop_quit(rp->loop);
}

static void on_signal(struct ag_loop *loop, int signo, void *data)
{
        struct runpod *rp = data;
        (void)loop;
        rp->signals++;
        log_info("pod %s: %s received, stopping the pod (grace %llds)", rp->pod_ref,
                 strsignal(signo), rp->signals > 1 ? 0LL : (long long)rp->grace);
        ag_pod_worker_terminate(rp->worker, rp->signals > 1 ? 0 : rp->grace, NULL, NULL);
}

static int load_pod(const char *path, struct k8s_pod **ret, struct cb_error *err)
{
        _cleanup_cjson_ cJSON *doc = NULL;
        if (k8s_parse_file(path, &doc, err) < 0)
                return -1;
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(doc, "kind");
        if (cJSON_IsString(kind) && strcmp(kind->valuestring, "Pod") != 0)
                return cb_error_set(err, 0, "%s: kind is %s; run-pod runs a Pod", path,
                                    kind->valuestring);
        cJSON *meta = cJSON_GetObjectItemCaseSensitive(doc, "metadata");
        if (!cJSON_IsObject(meta))
                return cb_error_set(err, 0, "%s: metadata: required", path);
        /* What the apiserver would default: a uid and the namespace. */
        if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(meta, "uid"))) {
                unsigned char r[16];
                if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
                        return cb_error_set(err, errno, "getrandom");
                r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
                r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
                char uid[40];
                snprintf(uid, sizeof(uid),
                         "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                         r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11],
                         r[12], r[13], r[14], r[15]);
                cJSON_DeleteItemFromObjectCaseSensitive(meta, "uid");
                cJSON_AddStringToObject(meta, "uid", uid);
        }
        if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(meta, "namespace")))
                cJSON_AddStringToObject(meta, "namespace", "default");
        if (k8s_pod_from_json(doc, ret, err) < 0)
                return cb_error_prefix(err, "%s", path);
        if ((*ret)->meta.name == NULL || (*ret)->spec.n_containers == 0) {
                k8s_pod_free(*ret);
                return cb_error_set(err, 0, "%s: a pod needs metadata.name and spec.containers",
                                    path);
        }
        return 0;
}

/* -1 (after saying why) for a value that is not 0..86400 seconds. */
static int parse_seconds(const char *flag, const char *v, int64_t *ret)
{
        char *end;
        long long s = strtoll(v, &end, 10);
        if (*v == '\0' || *end != '\0' || s < 0 || s > 86400) {
                fprintf(stderr, "cubelet run-pod: %s: invalid value \"%s\" (want seconds)\n", flag,
                        v);
                return -1;
        }
        *ret = s;
        return 0;
}

struct runpod_flags {
        const char *file;
        const char *logs_dir, *cgroup_root;
        const char *insecure[MAX_INSECURE];
        size_t n_insecure;
        int64_t backoff_base, backoff_cap;
        struct ag_logrotate_policy logs;
        bool seccomp_default; /* --seccomp-default: Unset seccomp is RuntimeDefault */
};

/* --container-log-max-size: a quantity (10Mi), negative: no rotation */
static int parse_size(const char *flag, const char *v, int64_t *ret)
{
        struct k8s_quantity q;
        struct cb_error err = {0};
        if (k8s_quantity_parse(v, &q, &err) < 0) {
                fprintf(stderr, "cubelet run-pod: %s: %s\n", flag, err.msg);
                return -1;
        }
        *ret = q.value;
        return 0;
}

/* -1 (after the usage line or the reason) on a flag it does not know, a bad
 * value or a missing file. */
static int parse_flags(int argc, char **argv, struct runpod_flags *f)
{
        *f = (struct runpod_flags){.logs_dir = "/var/log/pods",
                                   .cgroup_root = "",
                                   .backoff_base = ST_BACKOFF_BASE_DEFAULT,
                                   .backoff_cap = ST_BACKOFF_CAP_DEFAULT,
                                   .logs = {.max_size = AG_LOGROTATE_DEFAULT_MAX_SIZE,
                                            .max_files = AG_LOGROTATE_DEFAULT_MAX_FILES,
                                            .max_workers = AG_LOGROTATE_DEFAULT_WORKERS,
                                            .interval_ms = AG_LOGROTATE_DEFAULT_INTERVAL_MS}};
        for (int i = 1; i < argc; i++) {
                const char *a = argv[i];
                const char *v = i + 1 < argc ? argv[i + 1] : NULL;
                if (strcmp(a, "--pod-logs-dir") == 0 && v) {
                        f->logs_dir = v;
                        i++;
                } else if (strcmp(a, "--cgroup-root") == 0 && v) {
                        f->cgroup_root = v;
                        i++;
                } else if (strcmp(a, "--insecure-registry") == 0 && v &&
                           f->n_insecure < MAX_INSECURE) {
                        f->insecure[f->n_insecure++] = v;
                        i++;
                } else if (strcmp(a, "--crash-loop-backoff-base") == 0 && v) {
                        if (parse_seconds(a, v, &f->backoff_base) < 0)
                                return -1;
                        i++;
                } else if (strcmp(a, "--crash-loop-backoff-max") == 0 && v) {
                        if (parse_seconds(a, v, &f->backoff_cap) < 0)
                                return -1;
                        i++;
                } else if (strcmp(a, "--container-log-max-size") == 0 && v) {
                        if (parse_size(a, v, &f->logs.max_size) < 0)
                                return -1;
                        i++;
                } else if (strcmp(a, "--container-log-max-files") == 0 && v) {
                        int64_t n;
                        if (parse_seconds(a, v, &n) < 0 || n < 2 || n > 1000) {
                                fprintf(stderr, "cubelet run-pod: %s: want 2..1000\n", a);
                                return -1;
                        }
                        f->logs.max_files = (int)n;
                        i++;
                } else if (strcmp(a, "--container-log-monitor-interval") == 0 && v) {
                        int64_t n;
                        if (parse_seconds(a, v, &n) < 0 || n < 3) {
                                fprintf(stderr, "cubelet run-pod: %s: want 3 seconds or more\n", a);
                                return -1;
                        }
                        f->logs.interval_ms = (uint64_t)n * 1000;
                        i++;
                } else if (strcmp(a, "--seccomp-default") == 0) {
                        f->seccomp_default = true;
                } else if (a[0] != '-' && f->file == NULL) {
                        f->file = a;
                } else {
                        fprintf(stderr,
                                "usage: cubelet run-pod FILE [--pod-logs-dir DIR] [--cgroup-root "
                                "PATH] [--insecure-registry HOST:PORT]... "
                                "[--crash-loop-backoff-base S] [--crash-loop-backoff-max S] "
                                "[--container-log-max-size Q] [--container-log-max-files N] "
                                "[--container-log-monitor-interval S] [--seccomp-default]\n");
                        return -1;
                }
        }
        if (f->file == NULL) {
                fprintf(stderr, "usage: cubelet run-pod FILE [flags]; see cubelet --help\n");
                return -1;
        }
        return 0;
}

int cmd_run_pod(int argc, char **argv, const struct cb_global_opts *opts)
{
        struct runpod_flags fl;
        if (parse_flags(argc, argv, &fl) < 0)
                return 2;
        const char *file = fl.file, *logs_dir = fl.logs_dir, *cgroup_root = fl.cgroup_root;
        struct cb_error err = {0};
        struct k8s_pod *pod = NULL;
        if (load_pod(file, &pod, &err) < 0) {
                fprintf(stderr, "cubelet run-pod: %s\n", err.msg);
                return 2;
        }
        /* This machine as the node. */
        struct ag_node_facts facts;
        struct k8s_node *node = NULL;
        _cleanup_cjson_ cJSON *node_json = NULL;
        if (ag_node_facts_read(opts->root_dir, &facts, &err) < 0 ||
            (node_json = ag_node_json(&facts, facts.hostname, 110)) == NULL ||
            k8s_node_from_json(node_json, &node, &err) < 0) {
                fprintf(stderr, "cubelet run-pod: reading this node: %s\n", err.msg);
                k8s_pod_free(pod);
                return 2;
        }
        char pod_ref[512];
        snprintf(pod_ref, sizeof(pod_ref), "%s/%s", pod->meta.namespace_, pod->meta.name);

        struct k8s_admit_result adm;
        struct cb_error verr = {0};
        const char *why = NULL;
        if (k8s_pod_validate_paths(pod, &verr) < 0) {
                adm = (struct k8s_admit_result){.admitted = false, .reason = "InvalidPod"};
                snprintf(adm.message, sizeof(adm.message), "%.*s", (int)sizeof(adm.message) - 1,
                         verr.msg);
        } else if (k8s_pod_validate_supported(pod, &why, &verr) < 0) {
                adm = (struct k8s_admit_result){.admitted = false};
                snprintf(adm.reason, sizeof(adm.reason), "%s", why);
                snprintf(adm.message, sizeof(adm.message), "%.*s", (int)sizeof(adm.message) - 1,
                         verr.msg);
        } else {
                k8s_sysctl_admit(NULL, pod, &adm); /* run-pod allows the safe sysctls */
                if (adm.admitted)
                        k8s_admit(pod, node, NULL, 0, &adm);
        }
        if (!adm.admitted) {
                char msg[600];
                snprintf(msg, sizeof(msg), "Pod was rejected: %s", adm.message);
                log_warning("pod %s: %s %s", pod_ref, adm.reason, adm.message);
                struct ag_pod_obs obs = {.rejected = true,
                                         .reason = adm.reason,
                                         .message = msg,
                                         .start_time = (int64_t)time(NULL)};
                cJSON *st = ag_pod_status_json(pod, &obs, (int64_t)time(NULL));
                if (st != NULL)
                        print_status(pod_ref, st);
                cJSON_Delete(st);
                k8s_node_free(node);
                k8s_pod_free(pod);
                return 1;
        }

        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n <= 0) {
                fprintf(stderr, "cubelet run-pod: cannot resolve /proc/self/exe: %s\n",
                        strerror(errno));
                k8s_node_free(node);
                k8s_pod_free(pod);
                return 1;
        }
        exe[n] = '\0';
        /* a missing unpacker fails only a pull that needs it, with this */
        char unpacker[PATH_MAX];
        struct cb_error uerr;
        if (ag_unpack_helper(unpacker, sizeof(unpacker), &uerr) < 0)
                fprintf(stderr, "cubelet run-pod: warning: %s; image pulls will fail\n", uerr.msg);
        ag_monitor_path(exe, sizeof(exe));
        struct k8s_node_allocatable alloc;
        k8s_node_allocatable(node, &alloc);
        const struct k8s_quantity *memcap = k8s_resource_get(&node->capacity, "memory");
        struct ag_node_env env = {
            .root_dir = opts->root_dir,
            .pod_logs_dir = logs_dir,
            .monitor_path = exe,
            .unpack_helper = unpacker,
            .cni_conf_dir = opts->cni_conf_dir,
            .cni_bin_dir = opts->cni_bin_dir,
            .cgroup_root = cgroup_root,
            .node_name = facts.hostname,
            .node_memory_capacity = memcap ? memcap->value : 0,
            .alloc_milli_cpu = alloc.res.milli_cpu,
            .alloc_memory = alloc.res.memory,
            .alloc_ephemeral = alloc.res.ephemeral_storage,
            .insecure_registries = fl.insecure,
            .n_insecure_registries = fl.n_insecure,
            .backoff_base = fl.backoff_base,
            .backoff_cap = fl.backoff_cap,
            .pull_backoff_base = 10,
            .pull_backoff_cap = 300,
            .seccomp_default = fl.seccomp_default,
        };
        struct runpod rp = {.pod_ref = pod_ref, .final = ST_PHASE_PENDING};
        rp.grace = pod->spec.has_termination_grace_period
                       ? pod->spec.termination_grace_period_seconds
                       : 30;
        static const struct ag_pod_worker_ops ops = {on_status, on_event, on_done, on_timeline};
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        int status = 1;
        struct ag_logrotate *logrotate = NULL;
        if (ag_loop_new(&rp.loop, &err) < 0)
                goto fail;
        env.loop = rp.loop;
        if (ag_offload_new(rp.loop, "image pulls", 1, &env.pulls, &err) < 0 ||
            ag_offload_new(rp.loop, "sandboxes", 1, &env.sandboxes, &err) < 0 ||
            ag_offload_new(rp.loop, "container starts", 2, &env.starts, &err) < 0 ||
            ag_offload_new(rp.loop, "hooks", 2, &env.hooks, &err) < 0 ||
            ag_probe_http_new(rp.loop, &env.probe_http, &err) < 0)
                goto fail;
        if (ag_loop_add_signals(rp.loop, &mask, on_signal, &rp, &err) < 0)
                goto fail;
        if (ag_logrotate_new(rp.loop, opts->root_dir, &fl.logs, &logrotate, &err) < 0)
                goto fail;
        if (ag_pod_worker_new(&env, steal_pointer(&pod), &ops, &rp, &rp.worker, &err) < 0)
                goto fail;
        log_v(1, "pod %s: admitted; running it", pod_ref);
        if (ag_loop_run(rp.loop, &err) < 0)
                goto fail;
        status = rp.final == ST_PHASE_SUCCEEDED ? 0 : 1;
        /* The last line: when each step happened (for studying transitions). */
        cJSON *line = cJSON_CreateObject();
        cJSON_AddStringToObject(line, "pod", pod_ref);
        cJSON_AddItemToObject(line, "timeline", ag_pod_worker_timeline_json(rp.worker));
        char *text = cJSON_PrintUnformatted(line);
        if (text != NULL)
                printf("%s\n", text);
        free(text);
        cJSON_Delete(line);
        goto out;
fail:
        fprintf(stderr, "cubelet run-pod: %s: %s\n", pod_ref, err.msg);
out:
        ag_pod_worker_free(rp.worker);
        ag_offload_free(env.pulls);
        ag_offload_free(env.sandboxes);
        ag_offload_free(env.starts);
        ag_offload_free(env.hooks);
        ag_logrotate_free(logrotate);
        ag_curl_free(env.probe_http);
        if (rt_sandbox_release_root(opts->root_dir, &err) < 0)
                log_warning("%s", err.msg);
        if (rp.loop)
                ag_loop_free(rp.loop);
        k8s_pod_free(pod);
        k8s_node_free(node);
        return status;
}
