/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/core/metrics.h"

#include "helpers.h"

#define L(...) ((const char *const[]){__VA_ARGS__, NULL})

START_TEST(test_counter_and_gauge_rendering)
{
        struct ag_metrics *m = ag_metrics_new();
        struct cb_error err = {0};
        ck_assert_ptr_nonnull(m);
        /* Inserted out of order: the output is sorted by name, then by the
         * label values. */
        ck_assert_int_eq(ag_metrics_gauge_set(m, "cubelet_pods", "Pods on the node by phase.",
                                              L("phase", "Running"), 3, &err),
                         0);
        ck_assert_int_eq(ag_metrics_gauge_set(m, "cubelet_pods", "ignored later help",
                                              L("phase", "Pending"), 1, &err),
                         0);
        ck_assert_int_eq(
            ag_metrics_gauge_set(m, "cubelet_pods", NULL, L("phase", "Running"), 2, &err), 0);
        ck_assert_int_eq(ag_metrics_counter_add(m, "cubelet_api_requests_total", "API requests.",
                                                L("verb", "GET", "code", "200"), 1, &err),
                         0);
        ck_assert_int_eq(ag_metrics_counter_add(m, "cubelet_api_requests_total", NULL,
                                                L("verb", "GET", "code", "200"), 2.5, &err),
                         0);
        ck_assert_int_eq(ag_metrics_counter_add(m, "cubelet_api_requests_total", NULL,
                                                L("verb", "DELETE", "code", "404"), 1, &err),
                         0);
        ck_assert_int_eq(
            ag_metrics_counter_add(m, "cubelet_restarts_total", "Restarts.", NULL, 1e6, &err), 0);
        char *text = ag_metrics_render(m);
        ck_assert_ptr_nonnull(text);
        ck_assert_str_eq(text, "# HELP cubelet_api_requests_total API requests.\n"
                               "# TYPE cubelet_api_requests_total counter\n"
                               "cubelet_api_requests_total{verb=\"DELETE\",code=\"404\"} 1\n"
                               "cubelet_api_requests_total{verb=\"GET\",code=\"200\"} 3.5\n"
                               "# HELP cubelet_pods Pods on the node by phase.\n"
                               "# TYPE cubelet_pods gauge\n"
                               "cubelet_pods{phase=\"Pending\"} 1\n"
                               "cubelet_pods{phase=\"Running\"} 2\n"
                               "# HELP cubelet_restarts_total Restarts.\n"
                               "# TYPE cubelet_restarts_total counter\n"
                               "cubelet_restarts_total 1e+06\n");
        free(text);
        ag_metrics_free(m);
}
END_TEST

START_TEST(test_histogram_bucket_edges)
{
        struct ag_metrics *m = ag_metrics_new();
        struct cb_error err = {0};
        /* Bounds are inclusive: 0.25, 0.5, 1, 2.5 and 300 land in their own
         * bucket, 5.5 in le=10, 400 only in +Inf. Sums are exact in binary. */
        static const double obs[] = {0.25, 0.5, 1, 2.5, 300, 5.5, 400};
        for (size_t i = 0; i < sizeof(obs) / sizeof(obs[0]); i++)
                ck_assert_int_eq(ag_metrics_observe(m, "cubelet_pod_step_duration_seconds",
                                                    "Seconds from the pod worker's start to "
                                                    "each step.",
                                                    L("step", "sandboxReady"), obs[i], &err),
                                 0);
        ck_assert_int_eq(ag_metrics_observe(m, "cubelet_pod_step_duration_seconds", NULL,
                                            L("step", "admitted"), 0.005, &err),
                         0);
        char *text = ag_metrics_render(m);
        ck_assert_ptr_nonnull(text);

        static const char *const le[] = {"0.005", "0.01", "0.025", "0.05", "0.1", "0.25",
                                         "0.5",   "1",    "2.5",   "5",    "10",  "30",
                                         "60",    "120",  "300",   "+Inf"};
        static const int ready[] = {0, 0, 0, 0, 0, 1, 2, 3, 4, 4, 5, 5, 5, 5, 6, 7};
        char want[8192];
        size_t n = 0;
        n += snprintf(want + n, sizeof(want) - n,
                      "# HELP cubelet_pod_step_duration_seconds Seconds from the pod worker's "
                      "start to each step.\n"
                      "# TYPE cubelet_pod_step_duration_seconds histogram\n");
        for (size_t i = 0; i < 16; i++)
                n += snprintf(want + n, sizeof(want) - n,
                              "cubelet_pod_step_duration_seconds_bucket{step=\"admitted\","
                              "le=\"%s\"} 1\n",
                              le[i]);
        n += snprintf(want + n, sizeof(want) - n,
                      "cubelet_pod_step_duration_seconds_sum{step=\"admitted\"} 0.005\n"
                      "cubelet_pod_step_duration_seconds_count{step=\"admitted\"} 1\n");
        for (size_t i = 0; i < 16; i++)
                n += snprintf(want + n, sizeof(want) - n,
                              "cubelet_pod_step_duration_seconds_bucket{step=\"sandboxReady\","
                              "le=\"%s\"} %d\n",
                              le[i], ready[i]);
        snprintf(want + n, sizeof(want) - n,
                 "cubelet_pod_step_duration_seconds_sum{step=\"sandboxReady\"} 709.75\n"
                 "cubelet_pod_step_duration_seconds_count{step=\"sandboxReady\"} 7\n");
        ck_assert_str_eq(text, want);
        free(text);
        ag_metrics_free(m);
}
END_TEST

START_TEST(test_escaping)
{
        struct ag_metrics *m = ag_metrics_new();
        struct cb_error err = {0};
        ck_assert_int_eq(ag_metrics_counter_add(m, "x_total", "a \"quoted\" \\ help\nline two",
                                                L("v", "a\\b\"c\nd"), 1, &err),
                         0);
        char *text = ag_metrics_render(m);
        ck_assert_str_eq(text, "# HELP x_total a \"quoted\" \\\\ help\\nline two\n"
                               "# TYPE x_total counter\n"
                               "x_total{v=\"a\\\\b\\\"c\\nd\"} 1\n");
        free(text);
        ag_metrics_free(m);
}
END_TEST

START_TEST(test_empty_registry)
{
        struct ag_metrics *m = ag_metrics_new();
        char *text = ag_metrics_render(m);
        ck_assert_str_eq(text, "");
        free(text);
        ag_metrics_free(m);
}
END_TEST

START_TEST(test_format_value)
{
        static const struct {
                double v;
                const char *want;
        } t[] = {
            {0, "0"},
            {0.005, "0.005"},
            {0.1, "0.1"},
            {2.5, "2.5"},
            {300, "300"},
            {123456.7, "123456.7"},
            {999999, "999999"},
            {1e6, "1e+06"},
            {1234567, "1.234567e+06"},
            {0.0001, "0.0001"},
            {0.000015, "1.5e-05"},
            {-3.25, "-3.25"},
            {0.1 + 0.2, "0.30000000000000004"},
            {INFINITY, "+Inf"},
            {-INFINITY, "-Inf"},
            {NAN, "NaN"},
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                char buf[64];
                ck_assert_str_eq(ag_metrics_format_value(t[i].v, buf, sizeof(buf)), t[i].want);
        }
}
END_TEST

START_TEST(test_invalid_uses)
{
        struct ag_metrics *m = ag_metrics_new();
        struct cb_error err = {0};
        ck_assert_int_eq(ag_metrics_counter_add(m, "c_total", "", L("a", "1"), 1, &err), 0);
        ck_assert_int_eq(ag_metrics_observe(m, "h_seconds", "", L("step", "x"), 1, &err), 0);

        const struct {
                const char *what;
                int kind; /* 0 counter, 1 gauge, 2 histogram */
                const char *name;
                const char *const *labels;
                double value;
                const char *msg;
        } t[] = {
            {"type conflict", 1, "c_total", L("a", "1"), 1, "is a counter, not a gauge"},
            {"other label names", 0, "c_total", L("b", "1"), 1, "label names differ"},
            {"more labels", 0, "c_total", L("a", "1", "b", "2"), 1, "label names differ"},
            {"no labels", 0, "c_total", NULL, 1, "label names differ"},
            {"negative counter", 0, "c_total", L("a", "1"), -1, "only goes up"},
            {"NaN counter", 0, "c_total", L("a", "1"), NAN, "only goes up"},
            {"infinite observation", 2, "h_seconds", L("step", "x"), INFINITY, "not finite"},
            {"le on a histogram", 2, "h2_seconds", L("le", "1"), 1, "reserved"},
            {"bad metric name", 0, "2x", NULL, 1, "metric name \"2x\" is invalid"},
            {"dash in name", 0, "a-b", NULL, 1, "is invalid"},
            {"colon in label", 0, "d_total", L("a:b", "1"), 1, "label name \"a:b\" is invalid"},
            {"reserved label", 0, "d_total", L("__x", "1"), 1, "is invalid"},
            {"duplicate label", 0, "d_total", L("a", "1", "a", "2"), 1, "given twice"},
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                cb_error_clear(&err);
                int r = t[i].kind == 0 ? ag_metrics_counter_add(m, t[i].name, "", t[i].labels,
                                                                t[i].value, &err)
                        : t[i].kind == 1
                            ? ag_metrics_gauge_set(m, t[i].name, "", t[i].labels, t[i].value, &err)
                            : ag_metrics_observe(m, t[i].name, "", t[i].labels, t[i].value, &err);
                ck_assert_msg(r == -1, "%s: accepted", t[i].what);
                ck_assert_msg(strstr(err.msg, t[i].msg) != NULL, "%s: message \"%s\"", t[i].what,
                              err.msg);
        }
        /* The failed uses left nothing behind. */
        char *text = ag_metrics_render(m);
        ck_assert_ptr_null(strstr(text, "d_total"));
        ck_assert_ptr_null(strstr(text, "h2_seconds"));
        ck_assert_ptr_nonnull(strstr(text, "c_total{a=\"1\"} 1\n"));
        free(text);
        ag_metrics_free(m);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("metrics");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_counter_and_gauge_rendering);
        tcase_add_test(tc, test_histogram_bucket_edges);
        tcase_add_test(tc, test_escaping);
        tcase_add_test(tc, test_empty_registry);
        tcase_add_test(tc, test_format_value);
        tcase_add_test(tc, test_invalid_uses);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
