/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * One state machine per admitted pod, driven by the agent's event loop:
 * pod cgroup and sandbox (namespaces, CNI), then init containers in order,
 * then the regular containers; images pulled under the pull policy with
 * the kubelet's waiting reasons and pull backoff; restarts under the
 * restartPolicy with CrashLoopBackOff; activeDeadlineSeconds; graceful
 * termination (stop signal, grace timer, SIGKILL to the cgroup) and
 * teardown. Every status change is computed with agent/pods/statusgen.h and
 * handed to a callback together with the events the kubelet would record.
 *
 * Admission is the caller's job (it needs every pod on the node); a worker
 * only ever sees admitted pods.
 *
 * The worker is four files: podworker.c (the state machine, probes,
 * restarts, termination), worker_state.c (worker.json and re-adoption after
 * an agent restart), worker_jobs.c (image pulls, the sandbox and container
 * starts, run off the loop on the offload queues; the container's config
 * comes from ag_container_config_build) and worker_hooks.c (postStart and
 * preStop hooks, stopping a container). worker_internal.h is theirs alone.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "agent/k8s/k8s.h"
#include "agent/core/loop.h"
#include "lib/error.h"

/* What every worker on the node shares. Strings are borrowed. */
struct ag_offload;
struct k8s_sysctl_allowlist;

/* Sandboxes made at once (CNI ADDs in parallel, as the CRI runtimes do).
 * The jobs mostly wait on child processes (CNI plugins, iptables), so
 * more threads than cores. */
#define AG_SANDBOX_THREADS 6
/* Container create+start at once: their own queue, so that a burst's first
 * containers never wait behind the other pods' sandboxes. */
#define AG_START_THREADS 6
/* httpGet lifecycle hooks in flight at once. */
#define AG_HOOK_THREADS 4

struct ag_api;

struct ag_node_env {
        struct ag_loop *loop;
        const char *root_dir;      /* --root-dir */
        const char *pod_logs_dir;  /* CRI logs: <dir>/<ns>_<name>_<uid>/<container>/<n>.log */
        const char *monitor_path;  /* the cubelet binary */
        const char *unpack_helper; /* cubelet-unpack: image pulls unpack with it */
        const char *cni_conf_dir, *cni_bin_dir;
        const char *cgroup_root; /* "" = kubepods at the hierarchy roots */
        const char *node_name;
        const char *const *host_ips;
        size_t n_host_ips;
        int64_t node_memory_capacity;
        int64_t alloc_milli_cpu, alloc_memory, alloc_ephemeral;
        int64_t pod_pids_limit; /* 0 = none */
        bool seccomp_default;   /* --seccomp-default: Unset means RuntimeDefault */
        const char *const *insecure_registries;
        size_t n_insecure_registries;
        /* DNS (agent/k8s/dns.h): --cluster-dns, --cluster-domain, and
         * --resolv-conf (NULL: the sandbox copies the node's /etc/resolv.conf
         * as before, for run-pod; "": none) */
        const char *const *cluster_dns;
        size_t n_cluster_dns;
        const char *cluster_domain;
        const char *resolv_conf;
        int64_t backoff_base, backoff_cap;           /* seconds; crash-loop */
        int64_t pull_backoff_base, pull_backoff_cap; /* seconds; image pulls */
        struct ag_offload *pulls;     /* image pulls, one at a time (agent/core/offload.h) */
        struct ag_offload *sandboxes; /* sandbox creation, volume setup */
        struct ag_offload *starts;    /* container create+start (NULL: sandboxes) */
        struct ag_offload *hooks;     /* httpGet lifecycle hooks */
        struct ag_curl *probe_http;   /* httpGet probes (ag_probe_http_new) */
        struct ag_objmgr *objects;    /* ConfigMaps/Secrets of the pods (NULL: no apiserver) */
        struct ag_services *services; /* the Services (agent/pods/services.h; NULL: no apiserver) */
        struct ag_tokenmgr *tokens;   /* service-account tokens (NULL: no apiserver) */
        struct ag_api *api;           /* the PVC and PV GETs (NULL: no apiserver) */
        /* The Node as last seen (a PV's nodeAffinity); NULL or NULL answer: not known */
        const struct k8s_node *(*node)(void *node_data);
        void *node_data;
        /* The runtime's network is ready (a CNI config exists); NULL:
         * always. Pods that need the pod network wait while it is false. */
        const bool *network_ready;
        /* The sysctls pods may set (agent/k8s/sysctl.h); NULL: the safe ones */
        const struct k8s_sysctl_allowlist *sysctls;
};

/* The Ready condition's message while the runtime's network is not ready
 * (containerd's CNI status through the CRI, setters.go ReadyCondition),
 * and the pod event's (kubelet.go syncPod). */
#define AG_NETWORK_NOT_READY_MESSAGE                                                               \
        "container runtime network not ready: NetworkReady=false "                                 \
        "reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not "       \
        "initialized"
#define AG_NETWORK_NOT_READY_EVENT "network is not ready: " AG_NETWORK_NOT_READY_MESSAGE

struct ag_pod_worker;
struct ag_objmgr;

/* Runs the worker's state machine again soon (e.g. the network became ready). */
void ag_pod_worker_kick(struct ag_pod_worker *w);
/* The wall clock was set: activeDeadlineSeconds and the volumes' token
 * refreshes are evaluated again from the new now. */
void ag_pod_worker_wall_changed(struct ag_pod_worker *w);
struct ag_tokenmgr;
struct ag_services;

struct ag_pod_worker_ops {
        /* The pod's status changed (newest wins); status is borrowed. */
        void (*status)(struct ag_pod_worker *w, const cJSON *status, void *data);
        /* An event as the kubelet records it: type "Normal"/"Warning",
         * field_path "spec.containers{name}" or NULL for the pod. */
        void (*event)(struct ag_pod_worker *w, const char *type, const char *reason,
                      const char *message, const char *field_path, void *data);
        /* Terminal (Succeeded/Failed) or terminated, and everything torn
         * down: containers, sandbox, network, cgroups. */
        void (*done)(struct ag_pod_worker *w, void *data);
        /* A step of the pod's timeline, offset_us after the first (may be NULL). */
        void (*timeline)(struct ag_pod_worker *w, const char *step, uint64_t offset_us, void *data);
};

/* The phase-transition timeline: named steps with microsecond monotonic
 * stamps (workerStarted/adopted, sandboxReady, imageReady:<c>,
 * containerStarted:<c>, phase:<Phase>, containerExited:<c>, tornDown, and
 * what the caller adds: watched, admitted, statusDelivered:<Phase>,
 * deleted). Kept in worker.json, so it survives an agent restart. */
#define AG_TIMELINE_MAX 128
void ag_pod_worker_mark(struct ag_pod_worker *w, const char *step, const char *container);
/* A step stamped earlier (mono_us CLOCK_MONOTONIC, wall_us CLOCK_REALTIME,
 * in microseconds), put in time order: `watched`, when the watch event
 * that brought the pod reached the agent; the sandbox's own steps, stamped
 * on a queue's thread. mono_us 0: nothing marked; wall_us 0: derived from
 * mono_us and the two clocks now. */
void ag_pod_worker_mark_at(struct ag_pod_worker *w, const char *step, uint64_t mono_us,
                           int64_t wall_us);
/* [{"step", "offsetUs", "time"}]; the caller owns it. */
cJSON *ag_pod_worker_timeline_json(const struct ag_pod_worker *w);

/* Starts a worker for an admitted pod; takes the caller's reference to
 * pod (k8s_pod_ref: the pod is shared with the store, never copied). The
 * first steps run from the loop, not inside this call. */
int ag_pod_worker_new(const struct ag_node_env *env, struct k8s_pod *pod,
                      const struct ag_pod_worker_ops *ops, void *data, struct ag_pod_worker **ret,
                      struct cb_error *err);

/* Stops the pod gracefully: the stop signal to every running container,
 * then SIGKILL after grace_seconds (at least 2 per container, as the
 * kubelet does). reason/message become the pod's when given (e.g.
 * "Evicted"); phase ends Failed unless every container already succeeded. */
void ag_pod_worker_terminate(struct ag_pod_worker *w, int64_t grace_seconds, const char *reason,
                             const char *message);

/* The newest API object (metadata and status only are used; the spec the
 * worker runs stays the first one). Takes the caller's reference. */
void ag_pod_worker_update(struct ag_pod_worker *w, struct k8s_pod *pod);

const struct k8s_pod *ag_pod_worker_pod(const struct ag_pod_worker *w);
/* The last status computed (borrowed; NULL before the first). */
const cJSON *ag_pod_worker_status(const struct ag_pod_worker *w);
/* The pod's entry of /stats/summary (agent/pods/stats.h). */
struct ag_stats;
cJSON *ag_pod_worker_stats_json(const struct ag_pod_worker *w, struct ag_stats *st);
/* True when the runtime container id is one of this pod's: a current
 * instance, a start in flight, a retired one whose removal is not confirmed
 * or one its teardown removes. */
bool ag_pod_worker_owns(const struct ag_pod_worker *w, const char *container_id);
/* Calls fn with every runtime container id the worker claims: current
 * instances, a start in flight, retired ones not confirmed removed, and
 * those its teardown is removing. */
void ag_pod_worker_claimed(const struct ag_pod_worker *w, void (*fn)(const char *id, void *data),
                           void *data);
/* The container garbage collector's view: how many containers (init ones,
 * then regular ones) the worker has, and the name of the i-th with the
 * restart count of its current instance (its log is <count>.log; the
 * instance running, dead in a back-off, or about to start). */
size_t ag_pod_worker_n_containers(const struct ag_pod_worker *w);
const char *ag_pod_worker_container(const struct ag_pod_worker *w, size_t i, long *ret_current);

/* Frees the worker. Call it after done(), or at agent shutdown (then the
 * containers keep running; nothing is torn down). */
void ag_pod_worker_free(struct ag_pod_worker *w);
