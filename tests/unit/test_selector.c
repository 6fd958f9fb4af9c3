/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <stdlib.h>

#include "agent/k8s/selector.h"

#include "helpers.h"

static struct k8s_kv node_labels[] = {
    {"kubernetes.io/os", "linux"}, {"zone", "a"}, {"cores", "16"}, {"gen", "v3"}, {"empty", ""},
};

static struct k8s_map labels = {node_labels, sizeof(node_labels) / sizeof(node_labels[0])};

static char *v_a[] = {"a"};
static char *v_ab[] = {"b", "a"};
static char *v_b[] = {"b"};
static char *v_8[] = {"8"};
static char *v_16[] = {"16"};
static char *v_32[] = {"32"};
static char *v_x[] = {"x"};
static char *v_8_9[] = {"8", "9"};
static char *v_empty[] = {""};
static char *v_plus[] = {"+15"};

START_TEST(test_requirement_table)
{
        static const struct {
                const char *name;
                struct k8s_requirement r;
                bool want;
        } t[] = {
            {"In hit", {"zone", K8S_OP_IN, v_ab, 2}, true},
            {"In miss", {"zone", K8S_OP_IN, v_b, 1}, false},
            {"In absent key", {"rack", K8S_OP_IN, v_a, 1}, false},
            {"In no values (invalid)", {"zone", K8S_OP_IN, NULL, 0}, false},
            {"In empty value", {"empty", K8S_OP_IN, v_empty, 1}, true},
            {"NotIn hit", {"zone", K8S_OP_NOT_IN, v_a, 1}, false},
            {"NotIn miss", {"zone", K8S_OP_NOT_IN, v_b, 1}, true},
            {"NotIn absent key is true", {"rack", K8S_OP_NOT_IN, v_a, 1}, true},
            {"NotIn no values (invalid)", {"rack", K8S_OP_NOT_IN, NULL, 0}, false},
            {"Exists", {"zone", K8S_OP_EXISTS, NULL, 0}, true},
            {"Exists empty value", {"empty", K8S_OP_EXISTS, NULL, 0}, true},
            {"Exists absent", {"rack", K8S_OP_EXISTS, NULL, 0}, false},
            {"Exists with values (invalid)", {"zone", K8S_OP_EXISTS, v_a, 1}, false},
            {"DoesNotExist absent", {"rack", K8S_OP_DOES_NOT_EXIST, NULL, 0}, true},
            {"DoesNotExist present", {"zone", K8S_OP_DOES_NOT_EXIST, NULL, 0}, false},
            {"Gt true", {"cores", K8S_OP_GT, v_8, 1}, true},
            {"Gt equal", {"cores", K8S_OP_GT, v_16, 1}, false},
            {"Gt false", {"cores", K8S_OP_GT, v_32, 1}, false},
            {"Gt plus sign value", {"cores", K8S_OP_GT, v_plus, 1}, true},
            {"Gt non-integer label", {"gen", K8S_OP_GT, v_8, 1}, false},
            {"Gt non-integer value", {"cores", K8S_OP_GT, v_x, 1}, false},
            {"Gt two values (invalid)", {"cores", K8S_OP_GT, v_8_9, 2}, false},
            {"Gt absent", {"rack", K8S_OP_GT, v_8, 1}, false},
            {"Gt empty label", {"empty", K8S_OP_GT, v_8, 1}, false},
            {"Lt true", {"cores", K8S_OP_LT, v_32, 1}, true},
            {"Lt false", {"cores", K8S_OP_LT, v_8, 1}, false},
            {"Lt non-integer label", {"zone", K8S_OP_LT, v_32, 1}, false},
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
                ck_assert_msg(k8s_requirement_matches(&t[i].r, &labels) == t[i].want, "%s",
                              t[i].name);
}
END_TEST

START_TEST(test_parse_int64)
{
        static const struct {
                const char *s;
                bool ok;
                int64_t v;
        } t[] = {
            {"0", true, 0},
            {"-0", true, 0},
            {"007", true, 7},
            {"+15", true, 15},
            {"-15", true, -15},
            {"9223372036854775807", true, INT64_MAX},
            {"-9223372036854775808", true, INT64_MIN},
            {"9223372036854775808", false, 0},
            {"-9223372036854775809", false, 0},
            {"", false, 0},
            {"-", false, 0},
            {"1_000", false, 0},
            {"1e3", false, 0},
            {" 1", false, 0},
            {"0x10", false, 0},
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                int64_t v = 12345;
                ck_assert_msg(k8s_parse_int64(t[i].s, &v) == t[i].ok, "parse \"%s\"", t[i].s);
                if (t[i].ok)
                        ck_assert_msg(v == t[i].v, "parse \"%s\" value", t[i].s);
        }
        ck_assert(!k8s_parse_int64(NULL, &(int64_t){0}));
}
END_TEST

START_TEST(test_fields)
{
        struct k8s_requirement in = {"metadata.name", K8S_OP_IN, v_a, 1};
        struct k8s_requirement notin = {"metadata.name", K8S_OP_NOT_IN, v_a, 1};
        struct k8s_requirement two = {"metadata.name", K8S_OP_IN, v_ab, 2};
        struct k8s_requirement exists = {"metadata.name", K8S_OP_EXISTS, NULL, 0};
        struct k8s_requirement other = {"metadata.namespace", K8S_OP_IN, v_a, 1};
        ck_assert(k8s_field_requirement_matches(&in, "a"));
        ck_assert(!k8s_field_requirement_matches(&in, "b"));
        ck_assert(!k8s_field_requirement_matches(&notin, "a"));
        ck_assert(k8s_field_requirement_matches(&notin, "b"));
        ck_assert(!k8s_field_requirement_matches(&two, "a"));
        ck_assert(!k8s_field_requirement_matches(&exists, "a"));
        ck_assert(!k8s_field_requirement_matches(&other, "a"));
}
END_TEST

START_TEST(test_terms)
{
        struct k8s_node node = {0};
        node.meta.name = "node-1";
        node.meta.labels = labels;
        static char *v_node1[] = {"node-1"};
        struct k8s_requirement zone_a = {"zone", K8S_OP_IN, v_a, 1};
        struct k8s_requirement zone_b = {"zone", K8S_OP_IN, v_b, 1};
        struct k8s_requirement cores_gt8 = {"cores", K8S_OP_GT, v_8, 1};
        struct k8s_requirement name_is = {"metadata.name", K8S_OP_IN, v_node1, 1};
        struct k8s_requirement name_not = {"metadata.name", K8S_OP_NOT_IN, v_node1, 1};

        struct k8s_requirement and_ok[] = {zone_a, cores_gt8};
        struct k8s_requirement and_bad[] = {zone_a, zone_b};
        struct k8s_node_selector_term t_and_ok = {and_ok, 2, NULL, 0};
        struct k8s_node_selector_term t_and_bad = {and_bad, 2, NULL, 0};
        struct k8s_node_selector_term t_empty = {NULL, 0, NULL, 0};
        struct k8s_node_selector_term t_field = {NULL, 0, &name_is, 1};
        struct k8s_node_selector_term t_field_not = {NULL, 0, &name_not, 1};
        struct k8s_node_selector_term t_both = {&zone_a, 1, &name_not, 1};

        ck_assert(k8s_node_selector_term_matches(&t_and_ok, &node));
        ck_assert(!k8s_node_selector_term_matches(&t_and_bad, &node));
        ck_assert(!k8s_node_selector_term_matches(&t_empty, &node));
        ck_assert(k8s_node_selector_term_matches(&t_field, &node));
        ck_assert(!k8s_node_selector_term_matches(&t_field_not, &node));
        ck_assert(!k8s_node_selector_term_matches(&t_both, &node)); /* fields ANDed too */

        struct k8s_node_selector_term or1[] = {t_and_bad, t_empty, t_field};
        ck_assert(k8s_node_selector_terms_match(or1, 3, &node));
        struct k8s_node_selector_term or2[] = {t_and_bad, t_empty};
        ck_assert(!k8s_node_selector_terms_match(or2, 2, &node));
        ck_assert(!k8s_node_selector_terms_match(NULL, 0, &node));
}
END_TEST

START_TEST(test_pod_selector_and_affinity)
{
        struct k8s_node node = {0};
        node.meta.name = "node-1";
        node.meta.labels = labels;
        struct k8s_pod pod = {0};
        ck_assert(k8s_pod_matches_node_selector(&pod, &node)); /* nothing asked */

        struct k8s_kv sel_ok[] = {{"zone", "a"}, {"kubernetes.io/os", "linux"}};
        struct k8s_kv sel_bad[] = {{"zone", "a"}, {"disk", "ssd"}};
        struct k8s_kv sel_empty[] = {{"empty", ""}};
        pod.spec.node_selector = (struct k8s_map){sel_ok, 2};
        ck_assert(k8s_pod_matches_node_selector(&pod, &node));
        pod.spec.node_selector = (struct k8s_map){sel_bad, 2};
        ck_assert(!k8s_pod_matches_node_selector(&pod, &node));
        pod.spec.node_selector = (struct k8s_map){sel_empty, 1};
        ck_assert(k8s_pod_matches_node_selector(&pod, &node));

        /* nodeSelector AND required affinity. */
        struct k8s_requirement zone_b = {"zone", K8S_OP_IN, v_b, 1};
        struct k8s_requirement zone_a = {"zone", K8S_OP_IN, v_a, 1};
        struct k8s_node_selector_term tb = {&zone_b, 1, NULL, 0};
        struct k8s_node_selector_term ta = {&zone_a, 1, NULL, 0};
        pod.spec.node_selector = (struct k8s_map){sel_ok, 2};
        pod.spec.node_affinity.has_required = true;
        pod.spec.node_affinity.required_terms = &tb;
        pod.spec.node_affinity.n_required_terms = 1;
        ck_assert(!k8s_pod_matches_node_selector(&pod, &node));
        pod.spec.node_affinity.required_terms = &ta;
        ck_assert(k8s_pod_matches_node_selector(&pod, &node));
        pod.spec.node_selector = (struct k8s_map){sel_bad, 2};
        ck_assert(!k8s_pod_matches_node_selector(&pod, &node));
        /* Required affinity present with zero terms matches nothing. */
        pod.spec.node_selector = (struct k8s_map){0};
        pod.spec.node_affinity.n_required_terms = 0;
        ck_assert(!k8s_pod_matches_node_selector(&pod, &node));

        /* Preferred score: sum of matching weights; weight 0 skipped. */
        struct k8s_preferred_term pref[] = {{10, ta}, {5, tb}, {7, ta}, {0, ta}};
        pod.spec.node_affinity.has_required = false;
        pod.spec.node_affinity.preferred = pref;
        pod.spec.node_affinity.n_preferred = 4;
        ck_assert(k8s_pod_matches_node_selector(&pod, &node));
        ck_assert_int_eq(k8s_preferred_affinity_score(&pod, &node), 17);
        ck_assert_str_eq(k8s_selector_op_name(K8S_OP_DOES_NOT_EXIST), "DoesNotExist");
}
END_TEST

int main(void)
{
        Suite *s = suite_create("selector");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_requirement_table);
        tcase_add_test(tc, test_parse_int64);
        tcase_add_test(tc, test_fields);
        tcase_add_test(tc, test_terms);
        tcase_add_test(tc, test_pod_selector_and_affinity);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
