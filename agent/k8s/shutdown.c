/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/k8s/shutdown.h"

void k8s_shutdown_plan(uint64_t grace_ms, uint64_t critical_ms, struct k8s_shutdown_plan *ret)
{
        *ret = (struct k8s_shutdown_plan){0};
        /* migrateConfig: nothing without a grace period, or with a critical
         * period longer than it (validation refuses that already). */
        if (grace_ms == 0 || critical_ms > grace_ms)
                return;
        uint64_t regular_ms = grace_ms - critical_ms;
        ret->enabled = true;
        ret->group_s[K8S_SHUTDOWN_REGULAR] = (int64_t)(regular_ms / 1000);
        ret->group_s[K8S_SHUTDOWN_CRITICAL] = (int64_t)((grace_ms - regular_ms) / 1000);
        ret->total_s = ret->group_s[K8S_SHUTDOWN_REGULAR] + ret->group_s[K8S_SHUTDOWN_CRITICAL];
}

int k8s_shutdown_group(const struct k8s_pod *pod)
{
        /* groupByPriority over {0, SystemCriticalPriority}: a priority equal
         * to a group's bound is in that group, one between two bounds in the
         * lower, one outside them in the nearest. */
        int32_t priority = pod->spec.has_priority ? pod->spec.priority : 0;
        return priority >= K8S_SYSTEM_CRITICAL_PRIORITY ? K8S_SHUTDOWN_CRITICAL
                                                        : K8S_SHUTDOWN_REGULAR;
}

int64_t k8s_shutdown_grace(const struct k8s_pod *pod, int64_t group_s)
{
        if (pod->spec.has_termination_grace_period &&
            pod->spec.termination_grace_period_seconds <= group_s)
                return pod->spec.termination_grace_period_seconds;
        return group_s;
}
