/* SPDX-License-Identifier: Apache-2.0 */
/* Container garbage collection decisions (agent/k8s/containergc.h), as the
 * kubelet's evictContainers: running instances and young ones kept, the
 * newest MaxPerPodContainer dead ones per (pod, container) kept, deleted
 * pods (and terminated ones for DeleteAllUnusedContainers) emptied once
 * the sources are ready, MaxContainers over the node. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/k8s/containergc.h"

#include "helpers.h"

#define NOW 1000000LL

static struct k8s_gc_instance mk(const char *uid, const char *name, long attempt, bool running,
                                 enum k8s_gc_pod_state pod)
{
        return (struct k8s_gc_instance){.pod_uid = uid,
                                        .name = name,
                                        .attempt = attempt,
                                        .created_ms = NOW - 10000 + attempt,
                                        .running = running,
                                        .pod = pod};
}

static const struct k8s_container_gc_policy defaults = {
    .min_age_ms = 0, .max_per_pod_container = 1, .max_containers = -1};

/* A crash-looping container: the running instance 5 and the newest dead
 * one (4, for --previous) stay, 0..3 go; another container of the pod and
 * another pod are their own units. */
START_TEST(test_newest_dead_kept)
{
        struct k8s_gc_instance v[] = {
            mk("a", "c", 2, false, K8S_GC_POD_ACTIVE), mk("a", "c", 5, true, K8S_GC_POD_ACTIVE),
            mk("a", "c", 0, false, K8S_GC_POD_ACTIVE), mk("a", "c", 4, false, K8S_GC_POD_ACTIVE),
            mk("a", "c", 1, false, K8S_GC_POD_ACTIVE), mk("a", "c", 3, false, K8S_GC_POD_ACTIVE),
            mk("a", "d", 0, false, K8S_GC_POD_ACTIVE), mk("b", "c", 7, false, K8S_GC_POD_ACTIVE),
            mk("b", "c", 6, false, K8S_GC_POD_ACTIVE),
        };
        size_t n = sizeof(v) / sizeof(v[0]);
        ck_assert_uint_eq(k8s_container_gc_select(v, n, &defaults, true, false, NOW), 5);
        const bool want[] = {true, false, true, false, true, true, false, false, true};
        for (size_t i = 0; i < n; i++)
                ck_assert_msg(v[i].remove == want[i], "instance %zu (%s/%s %ld): remove %d", i,
                              v[i].pod_uid, v[i].name, v[i].attempt, v[i].remove);
        /* the same attempt twice: the later made is the newer */
        struct k8s_gc_instance w[] = {mk("a", "c", 1, false, K8S_GC_POD_ACTIVE),
                                      mk("a", "c", 1, false, K8S_GC_POD_ACTIVE)};
        w[0].created_ms = NOW - 5;
        w[1].created_ms = NOW - 50;
        ck_assert_uint_eq(k8s_container_gc_select(w, 2, &defaults, true, false, NOW), 1);
        ck_assert(!w[0].remove && w[1].remove);
        /* MaxPerPodContainer -1: no limit; 0: every dead one goes */
        struct k8s_container_gc_policy p = defaults;
        p.max_per_pod_container = -1;
        ck_assert_uint_eq(k8s_container_gc_select(v, n, &p, true, false, NOW), 0);
        p.max_per_pod_container = 0;
        ck_assert_uint_eq(k8s_container_gc_select(v, n, &p, true, false, NOW), 8);
        ck_assert(!v[1].remove);
}
END_TEST

/* Deleted pods lose everything once the sources are ready; terminated pods
 * only for DeleteAllUnusedContainers (evict_terminated), else they keep
 * their newest instance. */
START_TEST(test_deleted_and_terminated)
{
        struct k8s_gc_instance v[] = {
            mk("gone", "c", 0, false, K8S_GC_POD_DELETED),
            mk("gone", "c", 1, false, K8S_GC_POD_DELETED),
            mk("done", "c", 0, false, K8S_GC_POD_TERMINATED),
            mk("done", "c", 1, false, K8S_GC_POD_TERMINATED),
            mk("live", "c", 0, false, K8S_GC_POD_ACTIVE),
            mk("live", "c", 1, true, K8S_GC_POD_ACTIVE),
        };
        size_t n = sizeof(v) / sizeof(v[0]);
        /* periodic, sources ready: the deleted pod's both, the terminated
         * pod's older one */
        ck_assert_uint_eq(k8s_container_gc_select(v, n, &defaults, true, false, NOW), 3);
        ck_assert(v[0].remove && v[1].remove && v[2].remove && !v[3].remove);
        ck_assert(!v[4].remove && !v[5].remove);
        /* all unused: the terminated pod's newest too; the live pod keeps its
         * newest dead instance */
        ck_assert_uint_eq(k8s_container_gc_select(v, n, &defaults, true, true, NOW), 4);
        ck_assert(v[3].remove && !v[4].remove && !v[5].remove);
        /* sources not ready: a pod not known is not taken for deleted */
        ck_assert_uint_eq(k8s_container_gc_select(v, n, &defaults, false, true, NOW), 2);
        ck_assert(v[0].remove && !v[1].remove && v[2].remove && !v[3].remove);
}
END_TEST

/* MinAge: an instance made less than MinAge ago is not evictable at all
 * (it does not count as the newest dead one either). */
START_TEST(test_min_age)
{
        struct k8s_gc_instance v[] = {
            mk("a", "c", 0, false, K8S_GC_POD_ACTIVE),
            mk("a", "c", 1, false, K8S_GC_POD_ACTIVE),
            mk("a", "c", 2, false, K8S_GC_POD_ACTIVE),
        };
        v[0].created_ms = NOW - 120000;
        v[1].created_ms = NOW - 90000;
        v[2].created_ms = NOW - 1000;
        struct k8s_container_gc_policy p = defaults;
        p.min_age_ms = 60000;
        ck_assert_uint_eq(k8s_container_gc_select(v, 3, &p, true, true, NOW), 1);
        ck_assert(v[0].remove && !v[1].remove && !v[2].remove);
        p.min_age_ms = 0;
        ck_assert_uint_eq(k8s_container_gc_select(v, 3, &p, true, true, NOW), 2);
        ck_assert(v[0].remove && v[1].remove && !v[2].remove);
}
END_TEST

/* MaxContainers: each unit keeps MaxContainers / units (at least one), then
 * the oldest of all go. */
START_TEST(test_max_containers)
{
        struct k8s_gc_instance v[] = {
            mk("a", "c", 0, false, K8S_GC_POD_ACTIVE), mk("a", "c", 1, false, K8S_GC_POD_ACTIVE),
            mk("a", "c", 2, false, K8S_GC_POD_ACTIVE), mk("b", "c", 0, false, K8S_GC_POD_ACTIVE),
            mk("b", "c", 1, false, K8S_GC_POD_ACTIVE), mk("c", "c", 9, false, K8S_GC_POD_ACTIVE),
        };
        size_t n = sizeof(v) / sizeof(v[0]);
        struct k8s_container_gc_policy p = {
            .min_age_ms = 0, .max_per_pod_container = -1, .max_containers = 4};
        /* 6 > 4: 4 / 3 units = 1 per unit (a2, b1, c9), 3 <= 4 */
        ck_assert_uint_eq(k8s_container_gc_select(v, n, &p, true, false, NOW), 3);
        ck_assert(v[0].remove && v[1].remove && !v[2].remove);
        ck_assert(v[3].remove && !v[4].remove && !v[5].remove);
        /* 2 in all: one per unit leaves 3, then the oldest (b1) goes */
        p.max_containers = 2;
        ck_assert_uint_eq(k8s_container_gc_select(v, n, &p, true, false, NOW), 4);
        ck_assert(!v[2].remove && v[4].remove && !v[5].remove);
        /* at or under the limit: nothing */
        p.max_containers = 6;
        ck_assert_uint_eq(k8s_container_gc_select(v, n, &p, true, false, NOW), 0);
        ck_assert_uint_eq(k8s_container_gc_select(v, 0, &p, true, false, NOW), 0);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("containergc");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_newest_dead_kept);
        tcase_add_test(tc, test_deleted_and_terminated);
        tcase_add_test(tc, test_min_age);
        tcase_add_test(tc, test_max_containers);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
