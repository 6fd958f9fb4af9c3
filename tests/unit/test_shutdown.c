/* SPDX-License-Identifier: Apache-2.0 */
/* Graceful node shutdown, the pure part (agent/k8s/shutdown.h): the two
 * groups from the settings (the kubelet's migrateConfig), which group a pod
 * is in (groupByPriority over {0, 2000000000}) and its grace period. */
#include <check.h>
#include <stdlib.h>

#include "agent/k8s/shutdown.h"

#include "helpers.h"

START_TEST(test_plan)
{
        struct k8s_shutdown_plan p;
        k8s_shutdown_plan(0, 0, &p);
        ck_assert(!p.enabled);
        k8s_shutdown_plan(30000, 10000, &p);
        ck_assert(p.enabled);
        ck_assert_int_eq(p.group_s[K8S_SHUTDOWN_REGULAR], 20);
        ck_assert_int_eq(p.group_s[K8S_SHUTDOWN_CRITICAL], 10);
        ck_assert_int_eq(p.total_s, 30);
        /* no critical period: the regular pods get it all, critical 0 */
        k8s_shutdown_plan(12000, 0, &p);
        ck_assert_int_eq(p.group_s[K8S_SHUTDOWN_REGULAR], 12);
        ck_assert_int_eq(p.group_s[K8S_SHUTDOWN_CRITICAL], 0);
        /* all of it critical */
        k8s_shutdown_plan(8000, 8000, &p);
        ck_assert_int_eq(p.group_s[K8S_SHUTDOWN_REGULAR], 0);
        ck_assert_int_eq(p.group_s[K8S_SHUTDOWN_CRITICAL], 8);
        /* whole seconds, truncated like the kubelet's int64(d / time.Second) */
        k8s_shutdown_plan(10500, 2700, &p);
        ck_assert_int_eq(p.group_s[K8S_SHUTDOWN_REGULAR], 7);
        ck_assert_int_eq(p.group_s[K8S_SHUTDOWN_CRITICAL], 2);
        /* critical > grace: off (validation refuses it first) */
        k8s_shutdown_plan(5000, 6000, &p);
        ck_assert(!p.enabled);
}
END_TEST

START_TEST(test_groups)
{
        static const struct {
                bool has;
                int32_t priority;
                int group;
        } cases[] = {
            {false, 0, K8S_SHUTDOWN_REGULAR},
            {true, -10, K8S_SHUTDOWN_REGULAR},
            {true, 0, K8S_SHUTDOWN_REGULAR},
            {true, 1000000, K8S_SHUTDOWN_REGULAR},
            {true, 1999999999, K8S_SHUTDOWN_REGULAR},
            {true, 2000000000, K8S_SHUTDOWN_CRITICAL}, /* system-cluster-critical */
            {true, 2000001000, K8S_SHUTDOWN_CRITICAL}, /* system-node-critical */
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct k8s_pod pod = {0};
                pod.spec.has_priority = cases[i].has;
                pod.spec.priority = cases[i].priority;
                ck_assert_msg(k8s_shutdown_group(&pod) == cases[i].group, "priority %d",
                              (int)cases[i].priority);
        }
}
END_TEST

START_TEST(test_grace)
{
        struct k8s_pod pod = {0};
        ck_assert_int_eq(k8s_shutdown_grace(&pod, 20), 20); /* unset: the group's */
        pod.spec.has_termination_grace_period = true;
        pod.spec.termination_grace_period_seconds = 30;
        ck_assert_int_eq(k8s_shutdown_grace(&pod, 20), 20);
        pod.spec.termination_grace_period_seconds = 5;
        ck_assert_int_eq(k8s_shutdown_grace(&pod, 20), 5);
        pod.spec.termination_grace_period_seconds = 0;
        ck_assert_int_eq(k8s_shutdown_grace(&pod, 20), 0);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("shutdown");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_plan);
        tcase_add_test(tc, test_groups);
        tcase_add_test(tc, test_grace);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
