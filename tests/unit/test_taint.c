/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <stdlib.h>

#include "agent/k8s/taint.h"

#include "helpers.h"

#define NS  K8S_EFFECT_NO_SCHEDULE
#define NE  K8S_EFFECT_NO_EXECUTE
#define PNS K8S_EFFECT_PREFER_NO_SCHEDULE
#define ALL K8S_EFFECT_ALL

static struct k8s_toleration tol(const char *key, enum k8s_toleration_op op, const char *value,
                                 enum k8s_taint_effect effect)
{
        return (struct k8s_toleration){
            .key = (char *)key, .op = op, .value = (char *)value, .effect = effect};
}

static struct k8s_toleration tol_s(const char *key, enum k8s_toleration_op op,
                                   enum k8s_taint_effect effect, int64_t seconds)
{
        struct k8s_toleration t = tol(key, op, NULL, effect);
        t.has_toleration_seconds = true;
        t.toleration_seconds = seconds;
        return t;
}

static struct k8s_taint taint(const char *key, const char *value, enum k8s_taint_effect e)
{
        return (struct k8s_taint){.key = (char *)key, .value = (char *)value, .effect = e};
}

START_TEST(test_tolerates_table)
{
        static const struct {
                const char *name;
                struct k8s_toleration t;
                struct k8s_taint x;
                bool want;
        } t[] = {
            {"equal same", {"k", K8S_TOL_EQUAL, "v", NS, false, 0}, {"k", "v", NS, NULL}, true},
            {"equal other value",
             {"k", K8S_TOL_EQUAL, "v", NS, false, 0},
             {"k", "w", NS, NULL},
             false},
            {"equal NULL vs empty",
             {"k", K8S_TOL_EQUAL, NULL, NS, false, 0},
             {"k", "", NS, NULL},
             true},
            {"equal empty vs value",
             {"k", K8S_TOL_EQUAL, NULL, NS, false, 0},
             {"k", "v", NS, NULL},
             false},
            {"exists ignores value",
             {"k", K8S_TOL_EXISTS, NULL, NS, false, 0},
             {"k", "v", NS, NULL},
             true},
            {"exists other key",
             {"k", K8S_TOL_EXISTS, NULL, NS, false, 0},
             {"j", "v", NS, NULL},
             false},
            {"effect mismatch",
             {"k", K8S_TOL_EXISTS, NULL, NS, false, 0},
             {"k", "v", NE, NULL},
             false},
            {"empty effect matches NoExecute",
             {"k", K8S_TOL_EXISTS, NULL, ALL, false, 0},
             {"k", "v", NE, NULL},
             true},
            {"empty effect matches Prefer",
             {"k", K8S_TOL_EXISTS, NULL, ALL, false, 0},
             {"k", "v", PNS, NULL},
             true},
            {"empty key exists matches all",
             {NULL, K8S_TOL_EXISTS, NULL, ALL, false, 0},
             {"any/key", "x", NE, NULL},
             true},
            {"empty-string key exists",
             {"", K8S_TOL_EXISTS, NULL, NE, false, 0},
             {"a", "b", NE, NULL},
             true},
            {"empty key exists wrong effect",
             {NULL, K8S_TOL_EXISTS, NULL, NS, false, 0},
             {"a", "b", NE, NULL},
             false},
            {"empty key equal compares value",
             {NULL, K8S_TOL_EQUAL, "b", ALL, false, 0},
             {"a", "b", NE, NULL},
             true},
            {"gt taint bigger",
             {"k", K8S_TOL_GT, "900", NS, false, 0},
             {"k", "950", NS, NULL},
             true},
            {"gt taint equal",
             {"k", K8S_TOL_GT, "900", NS, false, 0},
             {"k", "900", NS, NULL},
             false},
            {"gt taint smaller",
             {"k", K8S_TOL_GT, "900", NS, false, 0},
             {"k", "899", NS, NULL},
             false},
            {"gt leading zero taint",
             {"k", K8S_TOL_GT, "900", NS, false, 0},
             {"k", "0950", NS, NULL},
             false},
            {"gt plus sign",
             {"k", K8S_TOL_GT, "900", NS, false, 0},
             {"k", "+950", NS, NULL},
             false},
            {"gt non-integer",
             {"k", K8S_TOL_GT, "900", NS, false, 0},
             {"k", "high", NS, NULL},
             false},
            {"gt negative", {"k", K8S_TOL_GT, "-5", NS, false, 0}, {"k", "0", NS, NULL}, true},
            {"lt", {"k", K8S_TOL_LT, "10", NS, false, 0}, {"k", "9", NS, NULL}, true},
            {"lt not", {"k", K8S_TOL_LT, "10", NS, false, 0}, {"k", "11", NS, NULL}, false},
            {"lt overflow",
             {"k", K8S_TOL_LT, "10", NS, false, 0},
             {"k", "-9223372036854775809", NS, NULL},
             false},
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
                ck_assert_msg(k8s_toleration_tolerates(&t[i].t, &t[i].x) == t[i].want, "%s",
                              t[i].name);
}
END_TEST

START_TEST(test_find_untolerated)
{
        struct k8s_taint taints[] = {taint("a", "1", NS), taint("b", "2", NE), taint("c", "", NE)};
        struct k8s_toleration tols[] = {tol("b", K8S_TOL_EQUAL, "2", NE)};
        ck_assert_ptr_eq(k8s_find_untolerated_taint(tols, 1, taints, 3, NE), &taints[2]);
        ck_assert_ptr_eq(k8s_find_untolerated_taint(tols, 1, taints, 3, ALL), &taints[0]);
        ck_assert_ptr_eq(k8s_find_untolerated_taint(tols, 1, taints, 2, NE), NULL);
        ck_assert_ptr_eq(k8s_find_toleration(tols, 1, &taints[1]), &tols[0]);
        ck_assert_ptr_eq(k8s_find_toleration(tols, 0, &taints[1]), NULL);
}
END_TEST

START_TEST(test_noexecute_verdict)
{
        struct k8s_noexecute_verdict v;
        struct k8s_taint nr = taint("node.kubernetes.io/not-ready", NULL, NE);
        struct k8s_taint un = taint("node.kubernetes.io/unreachable", NULL, NE);
        struct k8s_taint ns = taint("dedicated", "x", NS);

        /* No NoExecute taints at all (a NoSchedule one is ignored). */
        k8s_noexecute_verdict(NULL, 0, &ns, 1, &v);
        ck_assert_int_eq(v.action, K8S_NOEXEC_NO_TAINTS);

        /* Untolerated: evict now, naming the taint. */
        struct k8s_taint both[] = {ns, nr, un};
        struct k8s_toleration only_nr[] = {
            tol_s("node.kubernetes.io/not-ready", K8S_TOL_EXISTS, NE, 300)};
        k8s_noexecute_verdict(only_nr, 1, both, 3, &v);
        ck_assert_int_eq(v.action, K8S_NOEXEC_EVICT_NOW);
        ck_assert_ptr_eq(v.untolerated, &both[2]);

        /* Default tolerations: min(300, 200) over both taints. */
        struct k8s_toleration defaults[] = {
            tol_s("node.kubernetes.io/not-ready", K8S_TOL_EXISTS, NE, 300),
            tol_s("node.kubernetes.io/unreachable", K8S_TOL_EXISTS, NE, 200)};
        k8s_noexecute_verdict(defaults, 2, both, 3, &v);
        ck_assert_int_eq(v.action, K8S_NOEXEC_EVICT_AFTER);
        ck_assert_int_eq(v.seconds, 200);
        ck_assert_ptr_null(v.untolerated);

        /* No tolerationSeconds: forever. */
        struct k8s_toleration forever[] = {tol(NULL, K8S_TOL_EXISTS, NULL, ALL)};
        k8s_noexecute_verdict(forever, 1, both, 3, &v);
        ck_assert_int_eq(v.action, K8S_NOEXEC_TOLERATE_FOREVER);

        /* tolerationSeconds 0 and negative: evict now, no taint named. */
        struct k8s_toleration zero[] = {tol_s(NULL, K8S_TOL_EXISTS, NE, 0)};
        k8s_noexecute_verdict(zero, 1, both, 3, &v);
        ck_assert_int_eq(v.action, K8S_NOEXEC_EVICT_NOW);
        ck_assert_ptr_null(v.untolerated);
        struct k8s_toleration neg[] = {tol_s(NULL, K8S_TOL_EXISTS, NE, -10)};
        k8s_noexecute_verdict(neg, 1, both, 3, &v);
        ck_assert_int_eq(v.action, K8S_NOEXEC_EVICT_NOW);

        /* Only the FIRST matching toleration per taint is used: a later
         * toleration with seconds does not shorten a forever one. */
        struct k8s_toleration first_wins[] = {
            tol(NULL, K8S_TOL_EXISTS, NULL, NE),
            tol_s("node.kubernetes.io/not-ready", K8S_TOL_EXISTS, NE, 5)};
        k8s_noexecute_verdict(first_wins, 2, &nr, 1, &v);
        ck_assert_int_eq(v.action, K8S_NOEXEC_TOLERATE_FOREVER);
        struct k8s_toleration first_wins2[] = {first_wins[1], first_wins[0]};
        k8s_noexecute_verdict(first_wins2, 2, &nr, 1, &v);
        ck_assert_int_eq(v.action, K8S_NOEXEC_EVICT_AFTER);
        ck_assert_int_eq(v.seconds, 5);

        /* One taint with seconds and one forever: the minimum set value wins. */
        struct k8s_toleration mixed[] = {
            tol_s("node.kubernetes.io/not-ready", K8S_TOL_EXISTS, NE, 60),
            tol("node.kubernetes.io/unreachable", K8S_TOL_EXISTS, NULL, NE)};
        k8s_noexecute_verdict(mixed, 2, both, 3, &v);
        ck_assert_int_eq(v.action, K8S_NOEXEC_EVICT_AFTER);
        ck_assert_int_eq(v.seconds, 60);
}
END_TEST

START_TEST(test_taint_verdict)
{
        struct k8s_taint nr = taint("node.kubernetes.io/not-ready", NULL, NE);
        struct k8s_toleration tols[] = {
            tol("other", K8S_TOL_EXISTS, NULL, NE),
            tol_s("node.kubernetes.io/not-ready", K8S_TOL_EXISTS, NE, 300)};
        struct k8s_taint_verdict v;
        k8s_taint_verdict(tols, 2, &nr, &v);
        ck_assert(v.tolerated);
        ck_assert_ptr_eq(v.toleration, &tols[1]);
        ck_assert(v.has_seconds);
        ck_assert_int_eq(v.seconds, 300);
        k8s_taint_verdict(tols, 1, &nr, &v);
        ck_assert(!v.tolerated);
        ck_assert_ptr_null(v.toleration);
        ck_assert(!v.has_seconds);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("taint");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_tolerates_table);
        tcase_add_test(tc, test_find_untolerated);
        tcase_add_test(tc, test_noexecute_verdict);
        tcase_add_test(tc, test_taint_verdict);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
