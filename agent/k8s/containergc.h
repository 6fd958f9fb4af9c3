/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Container garbage collection decisions, as the kubelet's runtime manager
 * makes them (k/k pkg/kubelet/kuberuntime/kuberuntime_gc.go evictContainers,
 * pkg/kubelet/container/container_gc.go). Pure: the scanning and removing is
 * agent/node/containergc.c.
 *
 * The units are (pod UID, container name). An instance is evictable when it
 * is not running (in cubelet: not the pod worker's current instance) and was
 * made at least MinAge ago. Then:
 *  - when every pod source is ready, every evictable instance of a pod that
 *    was deleted goes, and of a pod whose worker is done too when
 *    evict_terminated (DeleteAllUnusedContainers, the eviction manager's
 *    node-level reclaim);
 *  - MaxPerPodContainer >= 0: per unit, only the newest MaxPerPodContainer
 *    evictable instances are kept (newest: highest attempt, then latest
 *    made);
 *  - MaxContainers >= 0: when more evictable instances than that remain,
 *    every unit keeps MaxContainers / units (at least 1), then the oldest
 *    of all go until MaxContainers are left.
 * The kubelet's defaults: MinAge 0, MaxPerPodContainer 1, MaxContainers -1
 * (the deprecated --minimum-container-ttl-duration,
 * --maximum-dead-containers-per-container, --maximum-dead-containers).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define K8S_CONTAINER_GC_PERIOD_MS 60000 /* ContainerGCPeriod */

struct k8s_container_gc_policy {
        int64_t min_age_ms;
        int max_per_pod_container;
        int max_containers;
};

#define K8S_CONTAINER_GC_POLICY_DEFAULT                                                            \
        ((struct k8s_container_gc_policy){                                                         \
            .min_age_ms = 0, .max_per_pod_container = 1, .max_containers = -1})

enum k8s_gc_pod_state {
        K8S_GC_POD_ACTIVE,     /* its worker runs it */
        K8S_GC_POD_TERMINATED, /* its worker is done, the object still exists */
        K8S_GC_POD_DELETED,    /* the agent no longer knows it */
};

struct k8s_gc_instance {
        const char *pod_uid;
        const char *name; /* the container's */
        long attempt;     /* its restart count */
        int64_t created_ms;
        bool running; /* never evictable */
        enum k8s_gc_pod_state pod;
        bool remove; /* out */
};

/* Marks the instances to remove (sets remove; the others are cleared).
 * Returns how many. */
size_t k8s_container_gc_select(struct k8s_gc_instance *v, size_t n,
                               const struct k8s_container_gc_policy *p, bool all_sources_ready,
                               bool evict_terminated, int64_t now_ms);
