/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/k8s/qos.h"

#include "helpers.h"

#define GI  1073741824LL
#define MI  1048576LL
#define CAP (4 * GI)

/* A pod with the given containers / initContainers JSON arrays. */
static struct k8s_pod *pod_with(const char *extra_spec, const char *containers,
                                const char *init_containers)
{
        char buf[8192];
        snprintf(buf, sizeof(buf),
                 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
                 "\"namespace\":\"default\",\"uid\":\"uid-1\"},\"spec\":{%s%s\"containers\":%s,"
                 "\"initContainers\":%s}}",
                 extra_spec, extra_spec[0] ? "," : "", containers,
                 init_containers ? init_containers : "[]");
        return th_pod_json(buf);
}

#define C(name, res) "{\"name\":\"" name "\",\"image\":\"busybox\",\"resources\":" res "}"
#define SIDECAR(name, res)                                                                         \
        "{\"name\":\"" name "\",\"image\":\"busybox\",\"restartPolicy\":\"Always\","               \
        "\"resources\":" res "}"
#define NONE  "{}"
#define LIM_G "{\"limits\":{\"cpu\":\"500m\",\"memory\":\"128Mi\"}}"
#define REQLIM_G                                                                                   \
        "{\"requests\":{\"cpu\":\"500m\",\"memory\":\"128Mi\"},\"limits\":{\"cpu\":\"0.5\","       \
        "\"memory\":\"134217728\"}}"

START_TEST(test_qos_table)
{
        static const struct {
                const char *name, *containers, *init;
                enum k8s_qos_class want;
        } t[] = {
            {"no resources", "[" C("a", NONE) "]", NULL, K8S_QOS_BEST_EFFORT},
            {"limits only is Guaranteed", "[" C("a", LIM_G) "]", NULL, K8S_QOS_GUARANTEED},
            {"requests == limits (different spelling)", "[" C("a", REQLIM_G) "]", NULL,
             K8S_QOS_GUARANTEED},
            {"two guaranteed containers", "[" C("a", LIM_G) "," C("b", REQLIM_G) "]", NULL,
             K8S_QOS_GUARANTEED},
            {"requests < limits",
             "[" C("a", "{\"requests\":{\"cpu\":\"100m\",\"memory\":\"128Mi\"},"
                        "\"limits\":{\"cpu\":\"500m\",\"memory\":\"128Mi\"}}") "]",
             NULL, K8S_QOS_BURSTABLE},
            {"cpu limit only", "[" C("a", "{\"limits\":{\"cpu\":\"1\"}}") "]", NULL,
             K8S_QOS_BURSTABLE},
            {"memory request only", "[" C("a", "{\"requests\":{\"memory\":\"1Gi\"}}") "]", NULL,
             K8S_QOS_BURSTABLE},
            {"guaranteed + besteffort", "[" C("a", LIM_G) "," C("b", NONE) "]", NULL,
             K8S_QOS_BURSTABLE},
            {"besteffort init container counts", "[" C("a", LIM_G) "]", "[" C("i", NONE) "]",
             K8S_QOS_BURSTABLE},
            {"guaranteed init container", "[" C("a", LIM_G) "]", "[" C("i", LIM_G) "]",
             K8S_QOS_GUARANTEED},
            {"burstable init only", "[" C("a", NONE) "]",
             "[" C("i", "{\"requests\":{\"cpu\":\"1\"}}") "]", K8S_QOS_BURSTABLE},
            {"ephemeral-storage does not count",
             "[" C("a", "{\"requests\":{\"ephemeral-storage\":\"1Gi\"}}") "]", NULL,
             K8S_QOS_BEST_EFFORT},
            {"zero quantities do not count",
             "[" C("a", "{\"requests\":{\"cpu\":\"0\",\"memory\":\"0\"}}") "]", NULL,
             K8S_QOS_BEST_EFFORT},
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                struct k8s_pod *p = pod_with("", t[i].containers, t[i].init);
                enum k8s_qos_class got = k8s_pod_qos(p);
                ck_assert_msg(got == t[i].want, "%s: got %s want %s", t[i].name, k8s_qos_name(got),
                              k8s_qos_name(t[i].want));
                k8s_pod_free(p);
        }
        ck_assert_str_eq(k8s_qos_name(K8S_QOS_GUARANTEED), "Guaranteed");
        ck_assert_str_eq(k8s_qos_name(K8S_QOS_BURSTABLE), "Burstable");
        ck_assert_str_eq(k8s_qos_name(K8S_QOS_BEST_EFFORT), "BestEffort");
}
END_TEST

START_TEST(test_pod_requests)
{
        /* Init container max vs sum of containers, plus overhead. */
        struct k8s_pod *p =
            pod_with("\"overhead\":{\"cpu\":\"10m\",\"memory\":\"1Mi\"}",
                     "[" C("a", "{\"requests\":{\"cpu\":\"100m\",\"memory\":\"64Mi\"}}") "," C(
                         "b", "{\"requests\":{\"cpu\":\"200m\",\"memory\":\"64Mi\","
                              "\"ephemeral-storage\":\"1Gi\"}}") "]",
                     "[" C("i", "{\"requests\":{\"cpu\":\"500m\",\"memory\":\"100Mi\"}}") "]");
        struct k8s_resource_totals r;
        k8s_pod_requests(p, &r);
        ck_assert_int_eq(r.milli_cpu, 510);            /* max(300, 500) + 10 */
        ck_assert_int_eq(r.memory, 128 * MI + 1 * MI); /* max(128Mi, 100Mi) + 1Mi */
        ck_assert_int_eq(r.ephemeral_storage, GI);
        ck_assert(!r.saturated);
        k8s_pod_free(p);

        /* Sidecars run alongside: added to the sum, and to later init needs. */
        p = pod_with("", "[" C("a", "{\"requests\":{\"cpu\":\"100m\"}}") "]",
                     "[" SIDECAR("s", "{\"requests\":{\"cpu\":\"50m\"}}") "," C(
                         "i", "{\"requests\":{\"cpu\":\"400m\"}}") "]");
        k8s_pod_requests(p, &r);
        ck_assert_int_eq(r.milli_cpu, 450); /* max(100+50, 400+50) */
        k8s_pod_free(p);

        /* Limits default requests. */
        p = pod_with("", "[" C("a", LIM_G) "]", NULL);
        k8s_pod_requests(p, &r);
        ck_assert_int_eq(r.milli_cpu, 500);
        ck_assert_int_eq(r.memory, 128 * MI);
        k8s_pod_free(p);

        /* Exact integer sums, saturating. */
        p = pod_with("",
                     "[" C("a", "{\"requests\":{\"memory\":\"8E\"}}") "," C(
                         "b", "{\"requests\":{\"memory\":\"8E\"}}") "]",
                     NULL);
        k8s_pod_requests(p, &r);
        ck_assert(r.saturated);
        ck_assert_int_eq(r.memory, INT64_MAX);
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_pod_limits)
{
        bool cpu_all, mem_all;
        struct k8s_resource_totals l;
        struct k8s_pod *p =
            pod_with("\"overhead\":{\"cpu\":\"10m\",\"memory\":\"1Mi\"}",
                     "[" C("a", "{\"limits\":{\"cpu\":\"200m\"}}") "," C(
                         "b", "{\"limits\":{\"cpu\":\"300m\",\"memory\":\"64Mi\"}}") "]",
                     "[" C("i", "{\"limits\":{\"cpu\":\"1\",\"memory\":\"32Mi\"}}") "]");
        k8s_pod_limits(p, &l, &cpu_all, &mem_all);
        ck_assert_int_eq(l.milli_cpu, 1010); /* max(500, 1000) + overhead */
        ck_assert_int_eq(l.memory, 65 * MI);
        ck_assert_int_eq(l.ephemeral_storage, 0); /* no limit: no overhead added */
        ck_assert(cpu_all);
        ck_assert(!mem_all); /* container a has no memory limit */
        k8s_pod_free(p);

        p = pod_with("", "[" C("a", LIM_G) "]", "[" C("i", NONE) "]");
        k8s_pod_limits(p, &l, &cpu_all, &mem_all);
        ck_assert(!cpu_all); /* init containers count */
        ck_assert(!mem_all);
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_oom_score_adj)
{
        struct k8s_pod *g = pod_with("", "[" C("a", LIM_G) "]", NULL);
        ck_assert_int_eq(k8s_oom_score_adj(g, &g->spec.containers[0], CAP), -997);
        k8s_pod_free(g);

        struct k8s_pod *be = pod_with("", "[" C("a", NONE) "]", NULL);
        ck_assert_int_eq(k8s_oom_score_adj(be, &be->spec.containers[0], CAP), 1000);
        k8s_pod_free(be);

        static const struct {
                const char *mem;
                int want;
        } t[] = {
            {"1Gi", 750},                  /* 1000 - 1000*1Gi/4Gi */
            {"64Mi", 985},                 /* 1000 - 15.625 truncated -> 985 */
            {"1", 999},                    /* 1000 -> 999 */
            {"4286578688", 3},             /* 1000 - 998 = 2 -> 3 */
            {"3Gi", 250},      {"5Gi", 3}, /* beyond capacity -> 3 */
            {"8E", 3},                     /* no overflow in 1000*req */
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                char c[256];
                snprintf(c, sizeof(c), "[" C("a", "{\"requests\":{\"memory\":\"%s\"}}") "]",
                         t[i].mem);
                struct k8s_pod *b = pod_with("", c, NULL);
                ck_assert_int_eq(k8s_pod_qos(b), K8S_QOS_BURSTABLE);
                ck_assert_msg(k8s_oom_score_adj(b, &b->spec.containers[0], CAP) == t[i].want,
                              "memory %s: got %d want %d", t[i].mem,
                              k8s_oom_score_adj(b, &b->spec.containers[0], CAP), t[i].want);
                ck_assert_int_eq(k8s_oom_score_adj(b, &b->spec.containers[0], 0), 999);
                k8s_pod_free(b);
        }

        /* Sidecar: the lower of its own value and the smallest regular request's. */
        struct k8s_pod *s = pod_with("",
                                     "[" C("a", "{\"requests\":{\"memory\":\"1Gi\"}}") "," C(
                                         "b", "{\"requests\":{\"memory\":\"2Gi\"}}") "]",
                                     "[" SIDECAR("side", NONE) "," C("init", NONE) "]");
        ck_assert_int_eq(k8s_oom_score_adj(s, &s->spec.init_containers[0], CAP), 750);
        ck_assert_int_eq(k8s_oom_score_adj(s, &s->spec.init_containers[1], CAP), 999);
        ck_assert_int_eq(k8s_oom_score_adj(s, &s->spec.containers[1], CAP), 500);
        k8s_pod_free(s);

        /* Node-critical (static pod, system-node-critical) Burstable -> -997;
         * the class name alone on an API pod without critical priority is not. */
        struct k8s_pod *crit = th_pod_json(
            "{\"metadata\":{\"name\":\"etcd\",\"uid\":\"u\",\"annotations\":{"
            "\"kubernetes.io/config.source\":\"file\"}},\"spec\":{\"priorityClassName\":"
            "\"system-node-critical\",\"containers\":[" C(
                "a", "{\"requests\":{\"memory\":\"1Gi\"}}") "]}}");
        ck_assert(k8s_pod_is_node_critical(crit));
        ck_assert_int_eq(k8s_oom_score_adj(crit, &crit->spec.containers[0], CAP), -997);
        k8s_pod_free(crit);
        struct k8s_pod *prio = th_pod_json(
            "{\"metadata\":{\"name\":\"x\",\"uid\":\"u\"},\"spec\":{\"priorityClassName\":"
            "\"system-node-critical\",\"priority\":2000001000,\"containers\":[" C(
                "a", "{\"requests\":{\"memory\":\"1Gi\"}}") "]}}");
        ck_assert_int_eq(k8s_oom_score_adj(prio, &prio->spec.containers[0], CAP), -997);
        k8s_pod_free(prio);
        struct k8s_pod *notcrit = th_pod_json(
            "{\"metadata\":{\"name\":\"x\",\"uid\":\"u\"},\"spec\":{\"priorityClassName\":"
            "\"system-node-critical\",\"priority\":1000,\"containers\":[" C(
                "a", "{\"requests\":{\"memory\":\"1Gi\"}}") "]}}");
        ck_assert(!k8s_pod_is_node_critical(notcrit));
        ck_assert_int_eq(k8s_oom_score_adj(notcrit, &notcrit->spec.containers[0], CAP), 750);
        k8s_pod_free(notcrit);
}
END_TEST

static void render(const struct cg_limits *l, enum cg_version v, char *out, size_t size)
{
        struct cg_file f[8];
        size_t n = cg_render_files(l, v, f, 8);
        out[0] = '\0';
        for (size_t i = 0; i < n; i++) {
                size_t len = strlen(out);
                int w =
                    snprintf(out + len, size - len, "%s%s=%s", i ? ";" : "", f[i].name, f[i].value);
                ck_assert_msg(w >= 0 && (size_t)w < size - len, "render: %zu bytes are too few",
                              size);
        }
}

START_TEST(test_cgroup_plan_guaranteed)
{
        struct k8s_pod *p = pod_with("", "[" C("app", LIM_G) "]", NULL);
        struct k8s_pod_cgroup_plan plan;
        struct cb_error err = {0};
        ck_assert_int_eq(k8s_pod_cgroup_plan(p, CAP, 100, "", &plan, &err), 0);
        ck_assert_int_eq(plan.qos, K8S_QOS_GUARANTEED);
        ck_assert_str_eq(plan.path, "kubepods/poduid-1");
        char buf[512];
        render(&plan.limits, CG_V1, buf, sizeof(buf));
        ck_assert_str_eq(buf, "cpu.shares=512;cpu.cfs_period_us=100000;cpu.cfs_quota_us=50000;"
                              "memory.limit_in_bytes=134217728;pids.max=100");
        render(&plan.limits, CG_V2, buf, sizeof(buf));
        ck_assert_str_eq(buf, "cpu.weight=59;cpu.max=50000 100000;memory.max=134217728;"
                              "pids.max=100");
        ck_assert_uint_eq(plan.n_containers, 1);
        ck_assert_str_eq(plan.containers[0].path, "kubepods/poduid-1/app");
        ck_assert_int_eq(plan.containers[0].oom_score_adj, -997);
        render(&plan.containers[0].limits, CG_V2, buf, sizeof(buf));
        ck_assert_str_eq(buf, "cpu.weight=59;cpu.max=50000 100000;memory.max=134217728");
        k8s_pod_cgroup_plan_free(&plan);
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_cgroup_plan_burstable)
{
        struct k8s_pod *p = pod_with(
            "",
            "[" C("c1",
                  "{\"requests\":{\"cpu\":\"100m\",\"memory\":\"64Mi\"},"
                  "\"limits\":{\"cpu\":\"200m\"}}") "," C("c2", "{\"requests\":{\"cpu\":\"250m\"},"
                                                                "\"limits\":{\"cpu\":\"500m\","
                                                                "\"memory\":\"256Mi\"}}") "]",
            "[" C("init", "{\"limits\":{\"cpu\":\"100m\"}}") "]");
        struct k8s_pod_cgroup_plan plan;
        struct cb_error err = {0};
        ck_assert_int_eq(k8s_pod_cgroup_plan(p, CAP, 0, "/custom", &plan, &err), 0);
        ck_assert_int_eq(plan.qos, K8S_QOS_BURSTABLE);
        ck_assert_str_eq(plan.path, "/custom/kubepods/burstable/poduid-1");
        char buf[512];
        /* shares(350m) = 358; every container has a cpu limit -> quota of
         * 700m; c1 has no memory limit -> no memory.max; no pids. */
        render(&plan.limits, CG_V1, buf, sizeof(buf));
        ck_assert_str_eq(buf, "cpu.shares=358;cpu.cfs_period_us=100000;cpu.cfs_quota_us=70000");
        render(&plan.limits, CG_V2, buf, sizeof(buf));
        ck_assert_str_eq(buf, "cpu.weight=45;cpu.max=70000 100000");

        ck_assert_uint_eq(plan.n_containers, 3);
        ck_assert(plan.containers[0].init);
        ck_assert_str_eq(plan.containers[0].path, "/custom/kubepods/burstable/poduid-1/init");
        /* init: no request, limit 100m -> shares from the limit. */
        ck_assert_uint_eq(plan.containers[0].limits.cpu_shares, 102);
        ck_assert_str_eq(plan.containers[1].path, "/custom/kubepods/burstable/poduid-1/c1");
        render(&plan.containers[1].limits, CG_V1, buf, sizeof(buf));
        ck_assert_str_eq(buf, "cpu.shares=102;cpu.cfs_period_us=100000;cpu.cfs_quota_us=20000");
        ck_assert_int_eq(plan.containers[1].oom_score_adj, 985);
        render(&plan.containers[2].limits, CG_V1, buf, sizeof(buf));
        ck_assert_str_eq(buf, "cpu.shares=256;cpu.cfs_period_us=100000;cpu.cfs_quota_us=50000;"
                              "memory.limit_in_bytes=268435456");
        ck_assert_int_eq(plan.containers[2].oom_score_adj, 938); /* request defaults to 256Mi */
        k8s_pod_cgroup_plan_free(&plan);
        k8s_pod_free(p);

        /* A container without a cpu limit drops the pod quota. */
        p = pod_with("",
                     "[" C("a", "{\"requests\":{\"cpu\":\"100m\"},\"limits\":{\"memory\":"
                                "\"64Mi\"}}") "]",
                     NULL);
        ck_assert_int_eq(k8s_pod_cgroup_plan(p, CAP, 0, "", &plan, &err), 0);
        render(&plan.limits, CG_V2, buf, sizeof(buf));
        ck_assert_str_eq(buf, "cpu.weight=17;memory.max=67108864");
        k8s_pod_cgroup_plan_free(&plan);
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_cgroup_plan_besteffort_and_errors)
{
        struct k8s_pod *p = pod_with("", "[" C("a", NONE) "]", NULL);
        struct k8s_pod_cgroup_plan plan;
        struct cb_error err = {0};
        ck_assert_int_eq(k8s_pod_cgroup_plan(p, CAP, -1, "", &plan, &err), 0);
        ck_assert_str_eq(plan.path, "kubepods/besteffort/poduid-1");
        char buf[256];
        render(&plan.limits, CG_V1, buf, sizeof(buf));
        ck_assert_str_eq(buf, "cpu.shares=2");
        render(&plan.containers[0].limits, CG_V2, buf, sizeof(buf));
        ck_assert_str_eq(buf, "cpu.weight=1");
        ck_assert_int_eq(plan.containers[0].oom_score_adj, 1000);
        k8s_pod_cgroup_plan_free(&plan);
        k8s_pod_free(p);

        /* Overflowing sums are refused. */
        p = pod_with("",
                     "[" C("a", "{\"limits\":{\"memory\":\"8E\"}}") "," C(
                         "b", "{\"limits\":{\"memory\":\"8E\"}}") "]",
                     NULL);
        ck_assert_int_eq(k8s_pod_cgroup_plan(p, CAP, 0, "", &plan, &err), -1);
        ck_assert_msg(strstr(err.msg, "2^63-1") != NULL, "%s", err.msg);
        k8s_pod_free(p);

        /* No uid, or a uid that is a path. */
        p = th_pod_json(
            "{\"metadata\":{\"name\":\"x\"},\"spec\":{\"containers\":[" C("a", NONE) "]}}");
        ck_assert_int_eq(k8s_pod_cgroup_plan(p, CAP, 0, "", &plan, &err), -1);
        ck_assert_msg(strstr(err.msg, "metadata.uid") != NULL, "%s", err.msg);
        k8s_pod_free(p);
        p = th_pod_json("{\"metadata\":{\"name\":\"x\",\"uid\":\"../../etc\"},\"spec\":{"
                        "\"containers\":[" C("a", NONE) "]}}");
        ck_assert_int_eq(k8s_pod_cgroup_plan(p, CAP, 0, "", &plan, &err), -1);
        k8s_pod_free(p);

        /* A root too long for the path buffer. */
        char root[K8S_CGROUP_PATH_MAX + 16];
        memset(root, 'r', sizeof(root) - 1);
        root[0] = '/';
        root[sizeof(root) - 1] = '\0';
        p = pod_with("", "[" C("a", NONE) "]", NULL);
        ck_assert_int_eq(k8s_pod_cgroup_plan(p, CAP, 0, root, &plan, &err), -1);
        k8s_pod_free(p);
}
END_TEST

/* spec.resources (PodLevelResources, 1.34+) */
#define PLR(res) "\"resources\":" res
#define FIXTURE_PLR                                                                                \
        PLR("{\"requests\":{\"cpu\":\"50m\",\"memory\":\"20Mi\"},\"limits\":{\"cpu\":\"100m\","    \
            "\"memory\":\"40Mi\"}}")
#define FIXTURE_C                                                                                  \
        "{\"requests\":{\"cpu\":\"40m\",\"memory\":\"15Mi\"},\"limits\":{\"cpu\":\"80m\","         \
        "\"memory\":\"30Mi\"}}"

START_TEST(test_pod_level_qos)
{
        static const struct {
                const char *name, *spec, *containers;
                enum k8s_qos_class want;
        } t[] = {
            /* ComputePodQOS: spec.resources present decides alone, even {} */
            {"empty pod-level beats guaranteed containers", PLR("{}"), "[" C("a", LIM_G) "]",
             K8S_QOS_BEST_EFFORT},
            {"pod-level requests == limits",
             PLR("{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"},\"limits\":{\"cpu\":\"1\","
                 "\"memory\":\"1Gi\"}}"),
             "[" C("a", NONE) "," C("b", NONE) "]", K8S_QOS_GUARANTEED},
            {"pod-level limits only: requests default to them",
             PLR("{\"limits\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}"), "[" C("a", NONE) "]",
             K8S_QOS_GUARANTEED},
            {"pod-level limits, a container cpu request: the request is the aggregate",
             PLR("{\"limits\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}"),
             "[" C("a", "{\"requests\":{\"cpu\":\"100m\"}}") "]", K8S_QOS_BURSTABLE},
            {"the minikube v1.35 e2e-deployment pod", FIXTURE_PLR, "[" C("a", FIXTURE_C) "]",
             K8S_QOS_BURSTABLE},
            {"pod-level memory request, guaranteed containers",
             PLR("{\"requests\":{\"memory\":\"1Gi\"}}"), "[" C("a", LIM_G) "]", K8S_QOS_BURSTABLE},
            {"pod-level cpu only, request == limit",
             PLR("{\"requests\":{\"cpu\":\"1\"},\"limits\":{\"cpu\":\"1\"}}"), "[" C("a", NONE) "]",
             K8S_QOS_BURSTABLE},
            {"pod-level with no cpu/memory", PLR("{\"requests\":{\"ephemeral-storage\":\"1Gi\"}}"),
             "[" C("a", LIM_G) "]", K8S_QOS_BEST_EFFORT},
            {"null is absent", PLR("null"), "[" C("a", LIM_G) "]", K8S_QOS_GUARANTEED},
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                struct k8s_pod *p = pod_with(t[i].spec, t[i].containers, NULL);
                enum k8s_qos_class got = k8s_pod_qos(p);
                ck_assert_msg(got == t[i].want, "%s: got %s want %s", t[i].name, k8s_qos_name(got),
                              k8s_qos_name(t[i].want));
                k8s_pod_free(p);
        }
}
END_TEST

START_TEST(test_pod_level_requests_limits)
{
        struct k8s_resource_totals r, l;
        bool cpu_all, mem_all;
        /* Pod-level values replace the aggregate; overhead is added on top;
         * ephemeral-storage stays the containers'. */
        struct k8s_pod *p = pod_with(
            "\"overhead\":{\"cpu\":\"10m\",\"memory\":\"1Mi\"}," PLR(
                "{\"requests\":{\"cpu\":\"500m\",\"memory\":\"256Mi\"},\"limits\":{\"cpu\":\"1\","
                "\"memory\":\"512Mi\"}}"),
            "[" C("a", "{\"requests\":{\"cpu\":\"100m\",\"memory\":\"64Mi\","
                       "\"ephemeral-storage\":\"1Gi\"}}") "," C("b", NONE) "]",
            "[" C("i", "{\"requests\":{\"cpu\":\"200m\"}}") "]");
        ck_assert(k8s_pod_level_resources_set(p));
        k8s_pod_requests(p, &r);
        ck_assert_int_eq(r.milli_cpu, 510);
        ck_assert_int_eq(r.memory, 257 * MI);
        ck_assert_int_eq(r.ephemeral_storage, GI);
        k8s_pod_limits(p, &l, &cpu_all, &mem_all);
        ck_assert_int_eq(l.milli_cpu, 1010);
        ck_assert_int_eq(l.memory, 513 * MI);
        ck_assert(cpu_all); /* a non-zero pod-level limit counts as declared */
        ck_assert(mem_all);
        k8s_pod_free(p);

        /* defaultPodRequests: with pod-level limits, a missing request is the
         * containers' aggregate (cpu here) or else the pod-level limit. */
        p = pod_with(PLR("{\"limits\":{\"cpu\":\"1\",\"memory\":\"512Mi\"}}"),
                     "[" C("a", "{\"requests\":{\"cpu\":\"100m\"}}") "," C("b", NONE) "]", NULL);
        k8s_pod_requests(p, &r);
        ck_assert_int_eq(r.milli_cpu, 100);
        ck_assert_int_eq(r.memory, 512 * MI);
        k8s_pod_free(p);

        /* Requests only: no pod-level limit, the containers' limits stand. */
        p = pod_with(PLR("{\"requests\":{\"memory\":\"1Gi\"}}"),
                     "[" C("a", "{\"limits\":{\"cpu\":\"200m\"}}") "]", NULL);
        k8s_pod_requests(p, &r);
        ck_assert_int_eq(r.milli_cpu, 200); /* the container's, defaulted from its limit */
        ck_assert_int_eq(r.memory, GI);
        k8s_pod_limits(p, &l, &cpu_all, &mem_all);
        ck_assert_int_eq(l.milli_cpu, 200);
        ck_assert_int_eq(l.memory, 0);
        ck_assert(cpu_all);
        ck_assert(!mem_all);
        k8s_pod_free(p);

        /* Names not supported at pod level are ignored, as the kubelet does. */
        p = pod_with(PLR("{\"requests\":{\"ephemeral-storage\":\"5Gi\"}}"),
                     "[" C("a", "{\"requests\":{\"cpu\":\"100m\"}}") "]", NULL);
        ck_assert(!k8s_pod_level_resources_set(p));
        k8s_pod_requests(p, &r);
        ck_assert_int_eq(r.milli_cpu, 100);
        ck_assert_int_eq(r.ephemeral_storage, 0);
        k8s_pod_free(p);

        /* An init container's declared limit counts the sidecars before it
         * (PodLimits' ContainerFn sees the combined need). */
        p = pod_with("", "[" C("a", "{\"limits\":{\"cpu\":\"200m\"}}") "]",
                     "[" SIDECAR("s", "{\"limits\":{\"cpu\":\"100m\"}}") "," C("i", NONE) "]");
        k8s_pod_limits(p, &l, &cpu_all, &mem_all);
        ck_assert(cpu_all);
        ck_assert(!mem_all);
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_pod_level_cgroup_plan)
{
        struct k8s_pod_cgroup_plan plan;
        struct cb_error err = {0};
        char buf[512];

        /* The minikube v1.35 fixture: the pod cgroup from the pod-level values,
         * the container's from its own. */
        struct k8s_pod *p = pod_with(FIXTURE_PLR, "[" C("compute-pi-digits", FIXTURE_C) "]", NULL);
        ck_assert_int_eq(k8s_pod_cgroup_plan(p, CAP, 0, "", &plan, &err), 0);
        ck_assert_int_eq(plan.qos, K8S_QOS_BURSTABLE);
        ck_assert_str_eq(plan.path, "kubepods/burstable/poduid-1");
        render(&plan.limits, CG_V1, buf, sizeof(buf));
        ck_assert_str_eq(buf, "cpu.shares=51;cpu.cfs_period_us=100000;cpu.cfs_quota_us=10000;"
                              "memory.limit_in_bytes=41943040");
        render(&plan.limits, CG_V2, buf, sizeof(buf));
        ck_assert_str_eq(buf, "cpu.weight=11;cpu.max=10000 100000;memory.max=41943040");
        render(&plan.containers[0].limits, CG_V2, buf, sizeof(buf));
        ck_assert_str_eq(buf, "cpu.weight=9;cpu.max=8000 100000;memory.max=31457280");
        /* 15Mi + (20Mi - 15Mi) / 1 container -> 1000 - 1000*20Mi/4Gi */
        ck_assert_int_eq(plan.containers[0].oom_score_adj, 996);
        k8s_pod_cgroup_plan_free(&plan);
        k8s_pod_free(p);

        /* Pod-level limits only -> Guaranteed; containers without limits get
         * the pod's for their own cgroup, and their shares from it. */
        p = pod_with(PLR("{\"limits\":{\"cpu\":\"500m\",\"memory\":\"128Mi\"}}"),
                     "[" C("a", NONE) "," C("b", NONE) "]", NULL);
        ck_assert_int_eq(k8s_pod_cgroup_plan(p, CAP, 0, "", &plan, &err), 0);
        ck_assert_int_eq(plan.qos, K8S_QOS_GUARANTEED);
        ck_assert_str_eq(plan.path, "kubepods/poduid-1");
        render(&plan.limits, CG_V2, buf, sizeof(buf));
        ck_assert_str_eq(buf, "cpu.weight=59;cpu.max=50000 100000;memory.max=134217728");
        for (size_t i = 0; i < 2; i++) {
                render(&plan.containers[i].limits, CG_V2, buf, sizeof(buf));
                ck_assert_str_eq(buf, "cpu.weight=59;cpu.max=50000 100000;memory.max=134217728");
                ck_assert_int_eq(plan.containers[i].oom_score_adj, -997);
        }
        k8s_pod_cgroup_plan_free(&plan);
        k8s_pod_free(p);

        /* Burstable: a container with a cpu request keeps its shares; one
         * without takes them from the pod-level cpu limit; the unrequested
         * part of the pod's memory request is shared by all three
         * containers for oom_score_adj. */
        p = pod_with(PLR("{\"requests\":{\"cpu\":\"200m\",\"memory\":\"64Mi\"},\"limits\":{"
                         "\"cpu\":\"1\",\"memory\":\"256Mi\"}}"),
                     "[" C("a", "{\"requests\":{\"cpu\":\"100m\",\"memory\":\"32Mi\"}}") "," C(
                         "b", NONE) "]",
                     "[" C("i", NONE) "]");
        ck_assert_int_eq(k8s_pod_cgroup_plan(p, CAP, 0, "", &plan, &err), 0);
        ck_assert_int_eq(plan.qos, K8S_QOS_BURSTABLE);
        render(&plan.limits, CG_V1, buf, sizeof(buf));
        ck_assert_str_eq(buf, "cpu.shares=204;cpu.cfs_period_us=100000;cpu.cfs_quota_us=100000;"
                              "memory.limit_in_bytes=268435456");
        ck_assert_str_eq(plan.containers[1].path, "kubepods/burstable/poduid-1/a");
        render(&plan.containers[1].limits, CG_V1, buf, sizeof(buf));
        ck_assert_str_eq(buf, "cpu.shares=102;cpu.cfs_period_us=100000;cpu.cfs_quota_us=100000;"
                              "memory.limit_in_bytes=268435456");
        render(&plan.containers[2].limits, CG_V1, buf, sizeof(buf));
        ck_assert_str_eq(buf, "cpu.shares=1024;cpu.cfs_period_us=100000;cpu.cfs_quota_us=100000;"
                              "memory.limit_in_bytes=268435456");
        /* remaining = (64Mi - 32Mi) / 3 = 11184810 */
        ck_assert_int_eq(plan.containers[1].oom_score_adj, 990); /* 32Mi + 11184810 */
        ck_assert_int_eq(plan.containers[2].oom_score_adj, 998); /* 11184810 */
        ck_assert_int_eq(plan.containers[0].oom_score_adj, 998);
        k8s_pod_cgroup_plan_free(&plan);
        k8s_pod_free(p);

        /* A container's own limits win over the pod's. */
        p = pod_with(PLR("{\"limits\":{\"cpu\":\"1\",\"memory\":\"256Mi\"}}"),
                     "[" C("a", "{\"limits\":{\"cpu\":\"250m\",\"memory\":\"64Mi\"}}") "]", NULL);
        ck_assert_int_eq(k8s_pod_cgroup_plan(p, CAP, 0, "", &plan, &err), 0);
        render(&plan.containers[0].limits, CG_V2, buf, sizeof(buf));
        ck_assert_str_eq(buf, "cpu.weight=35;cpu.max=25000 100000;memory.max=67108864");
        k8s_pod_cgroup_plan_free(&plan);
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_pod_level_oom_sidecar)
{
        /* remaining = (1Gi - 256Mi) / 2 = 384Mi: a 640Mi -> 844; the sidecar
         * 384Mi -> 907, capped by the smallest regular 256Mi+384Mi -> 844. */
        struct k8s_pod *p = pod_with(PLR("{\"requests\":{\"memory\":\"1Gi\"}}"),
                                     "[" C("a", "{\"requests\":{\"memory\":\"256Mi\"}}") "]",
                                     "[" SIDECAR("s", NONE) "]");
        ck_assert_int_eq(k8s_pod_qos(p), K8S_QOS_BURSTABLE);
        ck_assert_int_eq(k8s_oom_score_adj(p, &p->spec.containers[0], CAP), 844);
        ck_assert_int_eq(k8s_oom_score_adj(p, &p->spec.init_containers[0], CAP), 844);
        k8s_pod_free(p);
}
END_TEST

START_TEST(test_pod_level_downward_limit)
{
        struct k8s_pod *p =
            pod_with(PLR("{\"limits\":{\"memory\":\"256Mi\"}}"),
                     "[" C("a", NONE) "," C("b", "{\"limits\":{\"memory\":\"64Mi\"}}") "]", NULL);
        ck_assert_int_eq(k8s_container_downward_limit(p, &p->spec.containers[0], "memory", GI),
                         256 * MI);
        ck_assert_int_eq(k8s_container_downward_limit(p, &p->spec.containers[1], "memory", GI),
                         64 * MI);
        /* no pod-level cpu limit: the allocatable */
        ck_assert_int_eq(k8s_container_downward_limit(p, &p->spec.containers[0], "cpu", 4000),
                         4000);
        ck_assert_int_eq(
            k8s_container_downward_limit(p, &p->spec.containers[0], "ephemeral-storage", GI), GI);
        k8s_pod_free(p);
        p = pod_with("", "[" C("a", NONE) "]", NULL);
        ck_assert_int_eq(k8s_container_downward_limit(p, &p->spec.containers[0], "memory", GI), GI);
        k8s_pod_free(p);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("qos");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_qos_table);
        tcase_add_test(tc, test_pod_requests);
        tcase_add_test(tc, test_pod_limits);
        tcase_add_test(tc, test_oom_score_adj);
        tcase_add_test(tc, test_cgroup_plan_guaranteed);
        tcase_add_test(tc, test_cgroup_plan_burstable);
        tcase_add_test(tc, test_cgroup_plan_besteffort_and_errors);
        tcase_add_test(tc, test_pod_level_qos);
        tcase_add_test(tc, test_pod_level_requests_limits);
        tcase_add_test(tc, test_pod_level_cgroup_plan);
        tcase_add_test(tc, test_pod_level_oom_sidecar);
        tcase_add_test(tc, test_pod_level_downward_limit);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
