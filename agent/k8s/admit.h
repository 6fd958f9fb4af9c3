/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Node-side admission: the kubelet's predicate admit handler
 * (k/k pkg/kubelet/lifecycle/predicate.go, scheduler AdmissionCheck).
 * Pure function over the pod, the node and the pods already admitted.
 *
 * Order (the first failure wins):
 *  1. OS: pod label kubernetes.io/os present and not "linux" ->
 *     PodOSSelectorNodeLabelDoesNotMatch; spec.os.name set and not "linux"
 *     -> PodOSNotSupported. (A kubernetes.io/os nodeSelector is checked by
 *     NodeAffinity against the node's labels.)
 *  2. NodeResourcesFit, in the scheduler's order: pods, cpu, memory,
 *     ephemeral-storage (cpu/memory/storage only when the pod requests a
 *     positive amount) -> OutOfpods / OutOfcpu / OutOfmemory /
 *     OutOfephemeral-storage, "Node didn't have enough resource: <res>,
 *     requested: <n>, used: <n>, capacity: <n>" (cpu in millicores, bytes
 *     otherwise; capacity is the allocatable). Exactly the allocatable fits.
 *  3. NodeAffinity (nodeSelector + required node affinity).
 *  4. NodeName (spec.nodeName set and different from the node's name).
 *  5. NodePorts (hostPort clashes).
 *  6. TaintToleration: an untolerated NoExecute taint; static pods exempt.
 * A NULL node gives InvalidNodeInfo "Kubelet cannot get node info.".
 *
 * Extended resources are not accounted (only cpu, memory,
 * ephemeral-storage and pods).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/k8s/k8s.h"
#include "agent/k8s/qos.h"

struct k8s_admit_result {
        bool admitted;
        char reason[64]; /* e.g. "OutOfcpu", "NodeAffinity"; "" when admitted */
        /* e.g. "Predicate NodeAffinity failed: node(s) didn't match Pod's node
         * affinity/selector". This is the event message; the pod status
         * message is "Pod was rejected: " + message, which the CALLER adds. */
        char message[512];
};

/* What the admitted pods use: sums of their effective requests (with
 * overhead) and their count. Pods that are terminal (status.phase Succeeded
 * or Failed) and the pod with the same uid as `self` (may be NULL) are
 * skipped. */
struct k8s_node_usage {
        struct k8s_resource_totals requested;
        int64_t pods;
};

void k8s_node_usage(const struct k8s_pod *self, struct k8s_pod *const *admitted, size_t n_admitted,
                    struct k8s_node_usage *ret);

/* The node's allocatable in admission units (cpu milli, bytes, pods); the
 * capacity list is used when allocatable is empty. */
struct k8s_node_allocatable {
        struct k8s_resource_totals res;
        int64_t pods;
};

void k8s_node_allocatable(const struct k8s_node *node, struct k8s_node_allocatable *ret);

/*
 * hostPort conflict (HostPortInfo.CheckConflict): same protocol (empty is
 * TCP) and port, and overlapping hostIP: empty or "0.0.0.0" overlaps every
 * address, otherwise the strings must be equal. Ports with hostPort <= 0
 * never clash. The ports considered are those of the regular containers
 * and of sidecar init containers.
 */
bool k8s_host_ports_conflict(const struct k8s_container_port *a,
                             const struct k8s_container_port *b);

/*
 * Fills res. Returns 0, or -1 when pod or res is NULL (nothing evaluated).
 * Within one pod, two ports that clash also fail NodePorts (the API
 * refuses such pods; static pod files may contain them).
 */
int k8s_admit(const struct k8s_pod *pod, const struct k8s_node *node,
              struct k8s_pod *const *admitted, size_t n_admitted, struct k8s_admit_result *res);
