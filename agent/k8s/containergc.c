/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/k8s/containergc.h"

#include <stdlib.h>
#include <string.h>

static int cmp_unit(const struct k8s_gc_instance *a, const struct k8s_gc_instance *b)
{
        int c = strcmp(a->pod_uid, b->pod_uid);
        return c != 0 ? c : strcmp(a->name, b->name);
}

/* newest first: the higher attempt, then the later made */
static int cmp_newest(const struct k8s_gc_instance *a, const struct k8s_gc_instance *b)
{
        if (a->attempt != b->attempt)
                return a->attempt > b->attempt ? -1 : 1;
        if (a->created_ms != b->created_ms)
                return a->created_ms > b->created_ms ? -1 : 1;
        return 0;
}

static int cmp_unit_newest(const void *x, const void *y)
{
        const struct k8s_gc_instance *a = *(struct k8s_gc_instance *const *)x;
        const struct k8s_gc_instance *b = *(struct k8s_gc_instance *const *)y;
        int c = cmp_unit(a, b);
        return c != 0 ? c : cmp_newest(a, b);
}

static int cmp_newest_p(const void *x, const void *y)
{
        return cmp_newest(*(struct k8s_gc_instance *const *)x, *(struct k8s_gc_instance *const *)y);
}

/* Per unit (contiguous in e, newest first), the instances not yet removed
 * beyond the first keep go. */
static void keep_per_unit(struct k8s_gc_instance **e, size_t n, int keep)
{
        size_t i = 0;
        while (i < n) {
                size_t j = i, kept = 0;
                for (; j < n && cmp_unit(e[i], e[j]) == 0; j++) {
                        if (e[j]->remove)
                                continue;
                        if (kept < (size_t)keep)
                                kept++;
                        else
                                e[j]->remove = true;
                }
                i = j;
        }
}

size_t k8s_container_gc_select(struct k8s_gc_instance *v, size_t n,
                               const struct k8s_container_gc_policy *p, bool all_sources_ready,
                               bool evict_terminated, int64_t now_ms)
{
        struct k8s_gc_instance **e = calloc(n + 1, sizeof(*e));
        size_t ne = 0, removed = 0;
        for (size_t i = 0; i < n; i++) {
                v[i].remove = false;
                if (v[i].running || v[i].created_ms > now_ms - p->min_age_ms)
                        continue;
                if (e != NULL)
                        e[ne++] = &v[i];
        }
        if (e == NULL)
                return 0; /* out of memory: nothing is removed */
        qsort(e, ne, sizeof(*e), cmp_unit_newest);
        /* deleted pods (and terminated ones, for the eviction manager): all */
        if (all_sources_ready)
                for (size_t i = 0; i < ne; i++)
                        if (e[i]->pod == K8S_GC_POD_DELETED ||
                            (e[i]->pod == K8S_GC_POD_TERMINATED && evict_terminated))
                                e[i]->remove = true;
        if (p->max_per_pod_container >= 0)
                keep_per_unit(e, ne, p->max_per_pod_container);
        if (p->max_containers >= 0) {
                size_t left = 0, units = 0;
                for (size_t i = 0; i < ne; i++) {
                        if (e[i]->remove)
                                continue;
                        left++;
                        bool first = true;
                        for (size_t k = 0; k < i && first; k++)
                                first = e[k]->remove || cmp_unit(e[k], e[i]) != 0;
                        units += first;
                }
                if (left > (size_t)p->max_containers) {
                        int per = (int)((size_t)p->max_containers / units);
                        keep_per_unit(e, ne, per < 1 ? 1 : per);
                        size_t m = 0;
                        for (size_t i = 0; i < ne; i++)
                                if (!e[i]->remove)
                                        e[m++] = e[i];
                        if (m > (size_t)p->max_containers) {
                                qsort(e, m, sizeof(*e), cmp_newest_p);
                                for (size_t i = (size_t)p->max_containers; i < m; i++)
                                        e[i]->remove = true;
                        }
                }
        }
        free(e);
        for (size_t i = 0; i < n; i++)
                removed += v[i].remove;
        return removed;
}
