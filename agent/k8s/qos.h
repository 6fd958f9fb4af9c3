/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Resources -> QoS class -> oom_score_adj and cgroup plan, as the kubelet
 * computes them (k/k pkg/apis/core/v1/helper/qos/qos.go ComputePodQOS,
 * pkg/kubelet/qos/policy.go, pkg/kubelet/cm/helpers_linux.go
 * ResourceConfigForPod, kuberuntime_container_linux.go
 * calculateLinuxResources; component-helpers resource PodRequests and
 * PodLimits). Pure functions, no I/O.
 *
 * Units: cpu in millicores (Quantity.MilliValue), everything else in whole
 * units (Quantity.Value: bytes, pods). Negative quantities (which API
 * validation refuses) count as 0. Sums use exact int64 arithmetic and
 * saturate at INT64_MAX, setting a `saturated` flag.
 *
 * Requests default to limits: a container with a limit but no request for
 * a resource is treated as requesting the limit. The apiserver applies this
 * defaulting to every pod it stores; doing it here too makes pods decoded
 * without that defaulting (static pod files) behave the same.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/k8s/k8s.h"
#include "cgroups/plan.h"
#include "lib/error.h"

enum k8s_qos_class {
        K8S_QOS_BEST_EFFORT,
        K8S_QOS_BURSTABLE,
        K8S_QOS_GUARANTEED,
};

/* "BestEffort", "Burstable", "Guaranteed". */
const char *k8s_qos_name(enum k8s_qos_class q);

/* ComputePodQOS: only cpu and memory count; regular and init containers.
 * BestEffort: no container has a positive cpu/memory request or limit.
 * Guaranteed: every container has positive cpu AND memory limits, and for
 * cpu and memory the pod's summed requests equal its summed limits (with
 * requests defaulted from limits, limits-only pods are Guaranteed).
 * Otherwise Burstable. status.qosClass is not consulted.
 * When spec.resources is present (even {}), it alone decides (1.34+):
 * empty -> BestEffort; cpu and memory each with request == limit, both
 * non-zero -> Guaranteed, both zero/absent -> BestEffort; otherwise
 * Burstable (pod-level requests defaulted as the apiserver does, see
 * k8s_pod_requests). */
enum k8s_qos_class k8s_pod_qos(const struct k8s_pod *pod);

/* IsPodLevelResourcesSet / IsPodLevelLimitsSet: spec.resources names cpu,
 * memory or a hugepages-* resource in requests or limits / in limits. */
bool k8s_pod_level_resources_set(const struct k8s_pod *pod);
bool k8s_pod_level_limits_set(const struct k8s_pod *pod);

/* The cgroup tier for a QoS class. */
enum cg_tier k8s_qos_tier(enum k8s_qos_class q);

/* One resource's amount in a list (milli for "cpu", value otherwise);
 * 0 when absent or negative. *present (may be NULL) tells whether it was set. */
int64_t k8s_resource_amount(const struct k8s_resource_list *l, const char *name, bool *present);
/* The container's request for a resource, defaulting to its limit. */
int64_t k8s_container_request(const struct k8s_container *c, const char *name);
int64_t k8s_container_limit(const struct k8s_container *c, const char *name);
/* The limit the container's own cgroup gets (getCPULimit/getMemoryLimit):
 * its own, or for cpu/memory with pod-level resources set, the pod-level
 * limit when it has none (0: unlimited). */
int64_t k8s_container_effective_limit(const struct k8s_pod *pod, const struct k8s_container *c,
                                      const char *name);
/* limits.<name> for the downward API (defaultPodLimitsForDownwardAPI):
 * the container's non-zero limit, else a non-zero pod-level cpu/memory
 * limit, else node_allocatable. */
int64_t k8s_container_downward_limit(const struct k8s_pod *pod, const struct k8s_container *c,
                                     const char *name, int64_t node_allocatable);
/* The container's own cgroup limits (calculateLinuxResources): cpu
 * shares, quota and period, memory limit, as the runtime is given them and
 * reports them back in its container status. pids_limit stays 0. */
void k8s_container_cgroup_limits(const struct k8s_pod *pod, const struct k8s_container *c,
                                 struct cg_limits *out);
/* An init container with restartPolicy: Always (a sidecar). */
bool k8s_container_is_sidecar(const struct k8s_container *c);

struct k8s_resource_totals {
        int64_t milli_cpu;
        int64_t memory;            /* bytes */
        int64_t ephemeral_storage; /* bytes */
        bool saturated;            /* some sum exceeded INT64_MAX and was clamped */
};

/* The pod's effective requests (PodRequests): per resource, the max of
 * (sum of regular containers + sidecars) and of each init container's
 * request (plus the sidecars started before it); a pod-level cpu/memory
 * request (spec.resources.requests, with the apiserver's defaultPodRequests:
 * when pod-level limits are set, a missing request is the containers'
 * aggregate if some container requests the resource, else the pod-level
 * limit) replaces that aggregate; plus spec.overhead.
 * Used by admission, eviction ranking and the pod cgroup. */
void k8s_pod_requests(const struct k8s_pod *pod, struct k8s_resource_totals *ret);

/* The pod's limits (PodLimits), same aggregation; with pod-level resources
 * set, a pod-level cpu/memory limit replaces the aggregate; overhead is
 * added only to limits that are set and non-zero. *cpu_declared /
 * *memory_declared (may be NULL) are true when EVERY container, init
 * containers included (an init container counting the sidecars before
 * it), has a non-zero cpu / memory limit, or the pod-level limit is
 * non-zero (ResourceConfigForPod). */
void k8s_pod_limits(const struct k8s_pod *pod, struct k8s_resource_totals *ret, bool *cpu_declared,
                    bool *memory_declared);

/* IsNodeCriticalPod: priorityClassName "system-node-critical" on a critical
 * pod (static, mirror, or priority >= 2000000000). */
bool k8s_pod_is_node_critical(const struct k8s_pod *pod);

/*
 * GetContainerOOMScoreAdjust: node-critical -> -997; Guaranteed -> -997;
 * BestEffort -> 1000; Burstable -> 1000 - 1000*memRequest/capacity
 * (integer division; a sidecar takes the lower of its own value and the one
 * for the smallest regular container request), then < 3 -> 3 and
 * 1000 -> 999. With pod-level requests set, memRequest (and the smallest
 * one) also gets (pod memory request - containers' aggregate) / number of
 * containers, init containers counted. node_memory_capacity <= 0 (unknown) gives 999 for Burstable.
 */
int k8s_oom_score_adj(const struct k8s_pod *pod, const struct k8s_container *c,
                      int64_t node_memory_capacity);

#define K8S_CGROUP_PATH_MAX 1024

struct k8s_container_cgroup {
        const struct k8s_container *container; /* points into the pod */
        bool init;                             /* from spec.initContainers */
        char path[K8S_CGROUP_PATH_MAX];        /* <pod path>/<container name> */
        struct cg_limits limits;
        int oom_score_adj;
};

struct k8s_pod_cgroup_plan {
        enum k8s_qos_class qos;
        enum cg_tier tier;
        char path[K8S_CGROUP_PATH_MAX];
        struct cg_limits limits;
        struct k8s_container_cgroup *containers; /* init containers first, then containers */
        size_t n_containers;
};

/*
 * The pod cgroup and its containers' limits.
 *
 * Pod (ResourceConfigForPod, cpuCFSQuota on, 100ms period):
 *   Guaranteed: shares(requests), quota(limits)+period, memory limit;
 *   Burstable:  shares always; quota+period only if every container has a cpu
 *               limit; memory only if every container has a memory limit;
 *   BestEffort: shares = 2 only.
 *   pids_limit = pod_pids_limit when > 0.
 * With pod-level resources set, requests and limits are the pod's
 * (k8s_pod_requests, k8s_pod_limits) and a non-zero pod-level limit counts
 * as "every container has a limit".
 * Container (calculateLinuxResources): shares from the cpu request (the
 * limit when there is no request; 2 when neither), quota+period from the cpu
 * limit, memory limit when non-zero, the limits being
 * k8s_container_effective_limit (a container without its own limit gets
 * the pod-level one); oom_score_adj as above.
 *
 * Path: cg_pod_path(cgroup_root, tier, metadata.uid); containers are
 * "<pod path>/<container name>" (the runtime may later key them by id).
 * Fails (-1, err) when the uid or a container name is missing or contains
 * '/', when a path is longer than K8S_CGROUP_PATH_MAX, or when a sum
 * overflowed int64. Free with k8s_pod_cgroup_plan_free.
 */
int k8s_pod_cgroup_plan(const struct k8s_pod *pod, int64_t node_memory_capacity,
                        int64_t pod_pids_limit, const char *cgroup_root,
                        struct k8s_pod_cgroup_plan *ret, struct cb_error *err);
void k8s_pod_cgroup_plan_free(struct k8s_pod_cgroup_plan *plan);
