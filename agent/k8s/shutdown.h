/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Graceful node shutdown, the pure part (the kubelet's pkg/kubelet/
 * nodeshutdown: migrateConfig, groupByPriority, processShutdownEvent's
 * grace override). agent/node/shutdown.c does the D-Bus and the timing.
 *
 * shutdownGracePeriod and shutdownGracePeriodCriticalPods become two
 * groups, stopped one after the other: the regular pods (priority below
 * 2000000000, scheduling.SystemCriticalPriority) with shutdownGracePeriod -
 * shutdownGracePeriodCriticalPods, then the critical pods (priority at
 * least that: the system-cluster-critical and system-node-critical
 * classes) with shutdownGracePeriodCriticalPods. A pod's own
 * terminationGracePeriodSeconds is used when it is shorter.
 */

#include <stdbool.h>
#include <stdint.h>

#include "agent/k8s/k8s.h"

#define K8S_SHUTDOWN_REASON  "Terminated"
#define K8S_SHUTDOWN_MESSAGE "Pod was terminated in response to imminent node shutdown."
/* Admission while the node shuts down (the manager's Admit). */
#define K8S_SHUTDOWN_REJECT_REASON  "NodeShutdown"
#define K8S_SHUTDOWN_REJECT_MESSAGE "Pod was rejected as the node is shutting down."
/* The node's Ready condition (ShutdownStatus, folded into ReadyCondition). */
#define K8S_SHUTDOWN_NOT_READY       "node is shutting down"
#define K8S_SYSTEM_CRITICAL_PRIORITY 2000000000

enum { K8S_SHUTDOWN_REGULAR = 0, K8S_SHUTDOWN_CRITICAL = 1, K8S_SHUTDOWN_GROUPS = 2 };

struct k8s_shutdown_plan {
        bool enabled;                         /* shutdownGracePeriod > 0 */
        int64_t group_s[K8S_SHUTDOWN_GROUPS]; /* each group's time, in seconds */
        int64_t total_s;                      /* the inhibit delay wanted */
};

/* From the two settings in milliseconds (validated by the configuration:
 * critical <= grace). Whole seconds, as the kubelet truncates them. */
void k8s_shutdown_plan(uint64_t grace_ms, uint64_t critical_ms, struct k8s_shutdown_plan *ret);
/* Which group the pod is stopped in (spec.priority, 0 when unset). */
int k8s_shutdown_group(const struct k8s_pod *pod);
/* The grace period the pod is stopped with in a group of group_s seconds. */
int64_t k8s_shutdown_grace(const struct k8s_pod *pod, int64_t group_s);
