/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The pods bound to this node, as the kubelet handles them:
 *  - a new pod is admitted against the node and the pods already admitted
 *    (agent/k8s/admit.h); a rejected one gets phase Failed with the kubelet's
 *    reason and "Pod was rejected: ..." and a Warning event, and nothing
 *    runs; an admitted one gets a pod worker (agent/pods/podworker.h);
 *  - every status change goes to the status manager, every event to the
 *    event recorder;
 *  - deletionTimestamp set: the worker stops the containers with the
 *    effective grace period (deletionGracePeriodSeconds, never longer than
 *    before), the terminal phase is PATCHed, and once it is accepted the
 *    pod is DELETEd with gracePeriodSeconds 0 and the uid precondition;
 *  - the object gone (force delete): the worker is stopped and torn down;
 *  - NoExecute taints on the node: a pod that does not tolerate one is
 *    evicted at once, one that tolerates it for tolerationSeconds when that
 *    time has passed since the taint was first seen; removing the taint or
 *    adding the toleration cancels it. Eviction is the DisruptionTarget
 *    condition (DeletionByTaintManager) and an event, then a graceful
 *    DELETE, which the deletion path above completes.
 */

#include <stddef.h>

#include "agent/client/apiclient.h"
#include "agent/client/events.h"
#include "agent/pods/podworker.h"
#include "agent/client/reflector.h"
#include "agent/client/statusmgr.h"

struct ag_pods;
struct ag_podhist;

int ag_pods_new(const struct ag_node_env *env, struct ag_api *api, struct ag_events *events,
                struct ag_pods **ret, struct cb_error *err);
/* Frees everything; running containers are left running. */
void ag_pods_free(struct ag_pods *p);

/* From the pod reflector. */
void ag_pods_change(struct ag_pods *p, enum ag_change change, const struct ag_object *o);
/* From the node reflector: the node this agent runs (NULL when deleted).
 * Admission waits for the first one. */
void ag_pods_node(struct ag_pods *p, const struct ag_object *node);
/* The Node last given to ag_pods_node (borrowed; NULL before). */
const struct k8s_node *ag_pods_current_node(void *pods);

/* The first pod list arrived: pods this node ran before an agent restart
 * that are gone from the apiserver are stopped and cleaned up. */
void ag_pods_synced(struct ag_pods *p);

size_t ag_pods_count(const struct ag_pods *p);

/* ---- node pressure (agent/node/pressure.c) ---- */

/* A pod that runs here and may be evicted: admitted, not terminal, not
 * being deleted or evicted. Borrowed until the next loop callback. */
struct ag_pod_ref {
        const char *uid;
        const struct k8s_pod *pod; /* the spec the worker runs */
        const cJSON *status;       /* the last status computed (may be NULL) */
};

/* The active pods (malloc'd array, free() it); *ret_n entries. */
int ag_pods_active(const struct ag_pods *p, struct ag_pod_ref **ret, size_t *ret_n);
/* True when the pod is gone or its worker has torn everything down. */
bool ag_pods_cleaned_up(const struct ag_pods *p, const char *uid);
/* What the container garbage collector (agent/node/containergc.h) needs of
 * every pod the agent knows: its UID, whether it is terminated (its worker
 * is done, or it never ran), and per container the restart count of the
 * current instance (-1: none). *ret_ready: every pod source is ready (the
 * first list was handled and every listed pod went through admission): a
 * pod the agent does not know is a deleted one. Strings are copies. */
struct ag_pods_gc_container {
        char *name;
        long current;
};
struct ag_pods_gc_pod {
        char *uid;
        bool terminated;
        struct ag_pods_gc_container *c;
        size_t n;
};
int ag_pods_gc_snapshot(const struct ag_pods *p, struct ag_pods_gc_pod **ret, size_t *ret_n,
                        bool *ret_ready);
void ag_pods_gc_snapshot_free(struct ag_pods_gc_pod *v, size_t n);
/* Every runtime container id a pod worker claims (ag_pod_worker_claimed),
 * copies; the others in <root>/containers belong to no pod. -1 when out of
 * memory. Free with ag_pods_claimed_free. */
int ag_pods_claimed(const struct ag_pods *p, char ***ret, size_t *ret_n);
void ag_pods_claimed_free(char **ids, size_t n);
/* Evicts the pod as the kubelet's eviction manager does: a Warning event
 * "Evicted" with message, the containers stopped with grace_s, phase
 * Failed with reason Evicted and message, and the DisruptionTarget
 * condition (TerminationByKubelet) with the terminal phase. -1 when the
 * pod is not active. */
int ag_pods_evict_pressure(struct ag_pods *p, const char *uid, int64_t grace_s,
                           const char *message);
/* Stops the pod as the kubelet does when it decides to (the eviction
 * manager, the node shutdown manager): the containers stopped with grace_s,
 * phase Failed with reason and message, and the DisruptionTarget condition
 * (TerminationByKubelet, message) with the terminal phase; event: also a
 * Warning event with reason and message. -1 when the pod is not active. */
int ag_pods_terminate_by_kubelet(struct ag_pods *p, const char *uid, int64_t grace_s,
                                 const char *reason, const char *message, bool event);
/* The node shuts down (agent/node/shutdown.h): new pods are rejected with
 * NodeShutdown, "Pod was rejected as the node is shutting down.". */
void ag_pods_set_shutting_down(struct ag_pods *p, bool shutting_down);
/* fn(uid) whenever a pod's worker has stopped and torn everything down. */
void ag_pods_set_finished_hook(struct ag_pods *p, void (*fn)(const char *uid, void *data),
                               void *data);
/* The node conditions (K8S_PRESSURE_* mask) admission checks new pods
 * against (the eviction manager's admit handler). */
void ag_pods_set_pressure(struct ag_pods *p, unsigned conditions);

/* Static pods (agent/pods/staticpods.h) come in through ag_pods_change with
 * their defaulted object, like pods from the apiserver, and are admitted
 * the same way (but never evicted for NoExecute taints). Their manifest
 * removed (or edited into a new uid): stopped with the pod's own grace
 * period, then forgotten. */
void ag_pods_remove_static(struct ag_pods *p, const char *uid);

/* With an apiserver, static pods have mirror pods (agent/pods/mirror.h). */
struct ag_pods_static_hooks {
        /* A static pod's newest status (borrowed); without the hook it is
         * only on the local endpoint. */
        void (*status)(const char *uid, const cJSON *status, void *data);
        /* A mirror pod (annotation kubernetes.io/config.mirror) from the pod
         * reflector: never run as a pod. */
        void (*mirror)(enum ag_change change, const struct ag_object *o, void *data);
        void *data;
};
void ag_pods_set_static_hooks(struct ag_pods *p, const struct ag_pods_static_hooks *h);

/* The node's pods as a v1 PodList with the statuses this node computed
 * (the kubelet's read-only /pods), and their phase-transition timelines
 * ({"pods": [{namespace, name, uid, gone, timeline, history}]}, agent/pods/
 * podhistory.h: gone pods too, up to its bound). The caller owns them. */
cJSON *ag_pods_list_json(const struct ag_pods *p);
cJSON *ag_pods_timelines_json(const struct ag_pods *p);
/* The pods' history (agent/pods/podhistory.h): the agent sets its sink to
 * the endpoint's event stream. */
struct ag_podhist *ag_pods_history(struct ag_pods *p);

/* /stats/summary: {"node": ..., "pods": [...]} (agent/pods/stats.h). The
 * caller owns it. */
cJSON *ag_pods_stats_summary(struct ag_pods *p);

/* Observe timeline steps as cubelet_pod_step_duration_seconds{step} and
 * keep cubelet_pods{phase} current (ag_pods_update_metrics). */
struct ag_metrics;
void ag_pods_set_metrics(struct ag_pods *p, struct ag_metrics *m);
/* Every worker runs its state machine again (the runtime's network became ready). */
void ag_pods_kick(struct ag_pods *p);
/* The wall clock was set (agent/core/wallwatch.h): every worker re-arms
 * what it armed from a wall-time deadline. */
void ag_pods_wall_changed(struct ag_pods *p);
void ag_pods_update_metrics(const struct ag_pods *p);
