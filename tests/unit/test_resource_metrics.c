/* SPDX-License-Identifier: Apache-2.0 */
/* /metrics/resource: the kubelet's resource metrics collector over the
 * summary, in the Prometheus text format; its authorization attributes. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "agent/nodeapi/authz.h"
#include "agent/nodeapi/proto.h"
#include "agent/pods/stats.h"
#include "lib/cleanup.h"

#include "helpers.h"

START_TEST(test_go_float)
{
        static const struct {
                double v;
                const char *want;
        } cases[] = {{0, "0"},
                     {1, "1"},
                     {12.5, "12.5"},
                     {123456, "123456"},
                     {1234567, "1.234567e+06"},
                     {22523904, "2.2523904e+07"},
                     {1e9, "1e+09"},
                     {0.0001, "0.0001"},
                     {0.00001, "1e-05"},
                     {357.351234567, "357.351234567"},
                     {1764620000, "1.76462e+09"}};
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char buf[64];
                ag_go_float(cases[i].v, buf, sizeof(buf));
                ck_assert_msg(strcmp(buf, cases[i].want) == 0, "%.17g: got %s, want %s", cases[i].v,
                              buf, cases[i].want);
        }
}
END_TEST

static const char *SUMMARY =
    "{\"node\":{\"nodeName\":\"n1\",\"cpu\":{\"time\":\"2026-12-01T10:00:00Z\","
    "\"usageCoreNanoSeconds\":357351234567},\"memory\":{\"time\":\"2026-12-01T10:00:01Z\","
    "\"workingSetBytes\":1433518080}},\"pods\":[{\"podRef\":{\"name\":\"web\",\"namespace\":"
    "\"shop\",\"uid\":\"u\"},\"containers\":[{\"name\":\"zeta\",\"startTime\":"
    "\"2026-12-01T09:00:00Z\",\"cpu\":{\"time\":\"2026-12-01T10:00:00Z\",\"usageCoreNanoSeconds\":"
    "2500000000},\"memory\":{\"time\":\"2026-12-01T10:00:00Z\",\"workingSetBytes\":22523904}},"
    "{\"name\":\"alpha\",\"startTime\":\"2026-12-01T09:00:05Z\",\"cpu\":{\"time\":"
    "\"2026-12-01T10:00:00Z\",\"usageCoreNanoSeconds\":1000000},\"memory\":{\"time\":"
    "\"2026-12-01T10:00:00Z\",\"workingSetBytes\":4096}}],\"cpu\":{\"time\":"
    "\"2026-12-01T10:00:00Z\",\"usageCoreNanoSeconds\":2501000000},\"memory\":{\"time\":"
    "\"2026-12-01T10:00:00Z\",\"workingSetBytes\":22528000}}]}";

START_TEST(test_text)
{
        _cleanup_cjson_ cJSON *s = cJSON_Parse(SUMMARY);
        _cleanup_free_ char *t = ag_resource_metrics_text(s);
        ck_assert_ptr_nonnull(t);
        const char *want =
            "# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the "
            "container in core-seconds\n"
            "# TYPE container_cpu_usage_seconds_total counter\n"
            "container_cpu_usage_seconds_total{container=\"alpha\",namespace=\"shop\",pod=\"web\"} "
            "0.001 1796119200000\n"
            "container_cpu_usage_seconds_total{container=\"zeta\",namespace=\"shop\",pod=\"web\"} "
            "2.5 1796119200000\n"
            "# HELP container_memory_working_set_bytes [STABLE] Current working set of the "
            "container in bytes\n"
            "# TYPE container_memory_working_set_bytes gauge\n"
            "container_memory_working_set_bytes{container=\"alpha\",namespace=\"shop\",pod=\"web\"}"
            " "
            "4096 1796119200000\n"
            "container_memory_working_set_bytes{container=\"zeta\",namespace=\"shop\",pod=\"web\"} "
            "2.2523904e+07 1796119200000\n"
            "# HELP container_start_time_seconds [STABLE] Start time of the container since unix "
            "epoch in seconds\n"
            "# TYPE container_start_time_seconds gauge\n"
            "container_start_time_seconds{container=\"alpha\",namespace=\"shop\",pod=\"web\"} "
            "1.796115605e+09\n"
            "container_start_time_seconds{container=\"zeta\",namespace=\"shop\",pod=\"web\"} "
            "1.7961156e+09\n"
            "# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node "
            "in core-seconds\n"
            "# TYPE node_cpu_usage_seconds_total counter\n"
            "node_cpu_usage_seconds_total 357.351234567 1796119200000\n"
            "# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in "
            "bytes\n"
            "# TYPE node_memory_working_set_bytes gauge\n"
            "node_memory_working_set_bytes 1.43351808e+09 1796119201000\n"
            "# HELP pod_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the pod "
            "in "
            "core-seconds\n"
            "# TYPE pod_cpu_usage_seconds_total counter\n"
            "pod_cpu_usage_seconds_total{namespace=\"shop\",pod=\"web\"} 2.501 1796119200000\n"
            "# HELP pod_memory_working_set_bytes [STABLE] Current working set of the pod in bytes\n"
            "# TYPE pod_memory_working_set_bytes gauge\n"
            "pod_memory_working_set_bytes{namespace=\"shop\",pod=\"web\"} 2.2528e+07 "
            "1796119200000\n"
            "# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container "
            "metrics, 0 otherwise\n"
            "# TYPE resource_scrape_error gauge\n"
            "resource_scrape_error 0\n";
        ck_assert_str_eq(t, want);
}
END_TEST

START_TEST(test_error_and_route)
{
        _cleanup_free_ char *t = ag_resource_metrics_text(NULL);
        ck_assert_ptr_nonnull(strstr(t, "\nresource_scrape_error 1\n"));
        ck_assert_ptr_null(strstr(t, "node_cpu"));
        struct ag_napi_target tg;
        ck_assert_int_eq(ag_napi_route_path("/metrics/resource", &tg), AG_NAPI_METRICS_RESOURCE);
        struct ag_napi_attrs a;
        ag_napi_attrs_of("GET", "/metrics/resource", &a);
        ck_assert_str_eq(a.verb, "get");
        ck_assert_str_eq(a.resource, "nodes");
        ck_assert_str_eq(a.subresource, "metrics");
}
END_TEST

int main(void)
{
        Suite *s = suite_create("resource_metrics");
        TCase *tc = tcase_create("text");
        tcase_add_test(tc, test_go_float);
        tcase_add_test(tc, test_text);
        tcase_add_test(tc, test_error_and_route);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
