/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/k8s/admit.h"

#include "helpers.h"

/* uid, extra metadata, extra spec, container resources, extra status. */
static struct k8s_pod *mkpod(const char *uid, const char *meta, const char *spec,
                             const char *resources, const char *status)
{
        char buf[4096];
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"name\":\"p-%s\",\"namespace\":\"default\",\"uid\":\"%s\"%s%s},"
                 "\"spec\":{%s%s\"containers\":[{\"name\":\"c\",\"image\":\"busybox\","
                 "\"resources\":%s}]},\"status\":{%s}}",
                 uid, uid, meta[0] ? "," : "", meta, spec, spec[0] ? "," : "",
                 resources[0] ? resources : "{}", status);
        return th_pod_json(buf);
}

#define NODE(taints)                                                                               \
        "{\"metadata\":{\"name\":\"node-1\",\"labels\":{\"kubernetes.io/os\":\"linux\","           \
        "\"zone\":\"a\"}},\"spec\":{\"taints\":" taints "},\"status\":{\"allocatable\":{"          \
        "\"cpu\":\"1\",\"memory\":\"1Gi\",\"ephemeral-storage\":\"10Gi\",\"pods\":\"3\"},"         \
        "\"capacity\":{\"cpu\":\"2\",\"memory\":\"2Gi\",\"pods\":\"110\"}}}"

#define CPU(m) "{\"requests\":{\"cpu\":\"" m "\"}}"

struct fixture {
        struct k8s_node *node;
        struct k8s_pod *admitted[4];
        size_t n;
};

static void fx_free(struct fixture *f)
{
        for (size_t i = 0; i < f->n; i++)
                k8s_pod_free(f->admitted[i]);
        k8s_node_free(f->node);
}

static void expect(const struct k8s_pod *pod, const struct fixture *f, const char *reason,
                   const char *message)
{
        struct k8s_admit_result r;
        ck_assert_int_eq(k8s_admit(pod, f->node, f->admitted, f->n, &r), 0);
        if (reason == NULL) {
                ck_assert_msg(r.admitted, "rejected: %s: %s", r.reason, r.message);
                ck_assert_str_eq(r.reason, "");
                return;
        }
        ck_assert_msg(!r.admitted, "admitted, want %s", reason);
        ck_assert_str_eq(r.reason, reason);
        if (message != NULL)
                ck_assert_str_eq(r.message, message);
}

START_TEST(test_resources_exact_fit)
{
        struct fixture f = {.node = th_node_json(NODE("[]"))};
        f.admitted[f.n++] = mkpod("a", "", "", CPU("500m"), "\"phase\":\"Running\"");
        struct k8s_pod *fits = mkpod("new", "", "", CPU("500m"), "");
        expect(fits, &f, NULL, NULL);
        struct k8s_pod *over = mkpod("new", "", "", CPU("501m"), "");
        expect(over, &f, "OutOfcpu",
               "Node didn't have enough resource: cpu, requested: 501, used: 500, capacity: 1000");

        /* Memory and storage, in bytes; exactly the allocatable fits. */
        struct k8s_pod *mem = mkpod("m", "", "", "{\"requests\":{\"memory\":\"1Gi\"}}", "");
        expect(mem, &f, NULL, NULL);
        struct k8s_pod *mem2 = mkpod("m", "", "", "{\"requests\":{\"memory\":\"1073741825\"}}", "");
        expect(mem2, &f, "OutOfmemory",
               "Node didn't have enough resource: memory, requested: 1073741825, used: 0, "
               "capacity: 1073741824");
        struct k8s_pod *st =
            mkpod("s", "", "", "{\"limits\":{\"ephemeral-storage\":\"11Gi\"}}", "");
        expect(st, &f, "OutOfephemeral-storage",
               "Node didn't have enough resource: ephemeral-storage, requested: 11811160064, "
               "used: 0, capacity: 10737418240");

        struct k8s_node_usage u;
        k8s_node_usage(NULL, f.admitted, f.n, &u);
        ck_assert_int_eq(u.requested.milli_cpu, 500);
        ck_assert_int_eq(u.pods, 1);
        k8s_pod_free(fits);
        k8s_pod_free(over);
        k8s_pod_free(mem);
        k8s_pod_free(mem2);
        k8s_pod_free(st);
        fx_free(&f);
}
END_TEST

START_TEST(test_resources_accounting)
{
        struct fixture f = {.node = th_node_json(NODE("[]"))};
        /* Terminal pods and the pod itself (same uid) are not counted. */
        f.admitted[f.n++] = mkpod("done", "", "", CPU("900m"), "\"phase\":\"Succeeded\"");
        f.admitted[f.n++] = mkpod("failed", "", "", CPU("900m"), "\"phase\":\"Failed\"");
        f.admitted[f.n++] = mkpod("self", "", "", CPU("900m"), "\"phase\":\"Running\"");
        f.admitted[f.n++] = mkpod("pending", "", "", CPU("300m"), "\"phase\":\"Pending\"");
        struct k8s_pod *p = mkpod("self", "", "", CPU("700m"), "");
        expect(p, &f, NULL, NULL);
        struct k8s_pod *q = mkpod("other", "", "", CPU("701m"), "");
        expect(q, &f, "OutOfcpu",
               "Node didn't have enough resource: cpu, requested: 701, used: 1200, capacity: 1000");
        struct k8s_node_usage u;
        k8s_node_usage(p, f.admitted, f.n, &u);
        ck_assert_int_eq(u.requested.milli_cpu, 300);
        ck_assert_int_eq(u.pods, 1);

        /* A pod requesting nothing fits on an overcommitted node... */
        struct k8s_pod *be = mkpod("be", "", "", "", "");
        expect(be, &f, NULL, NULL);
        k8s_pod_free(p);
        k8s_pod_free(q);
        k8s_pod_free(be);
        fx_free(&f);
}
END_TEST

/* Pod-level requests (spec.resources, 1.34+) are what the pod asks of the
 * node (PodRequests), both for the new pod and for those already admitted;
 * containers' requests under them do not add up on top. */
START_TEST(test_resources_pod_level)
{
        struct fixture f = {.node = th_node_json(NODE("[]"))};
        f.admitted[f.n++] = mkpod("a", "", "\"resources\":{\"requests\":{\"cpu\":\"600m\"}}",
                                  CPU("100m"), "\"phase\":\"Running\"");
        struct k8s_pod *fits =
            mkpod("new", "", "\"resources\":{\"requests\":{\"cpu\":\"400m\"}}", CPU("400m"), "");
        expect(fits, &f, NULL, NULL);
        struct k8s_pod *over =
            mkpod("new", "", "\"resources\":{\"requests\":{\"cpu\":\"401m\"}}", CPU("10m"), "");
        expect(over, &f, "OutOfcpu",
               "Node didn't have enough resource: cpu, requested: 401, used: 600, capacity: 1000");
        /* pod-level limits only: the requests default to them */
        struct k8s_pod *lim = mkpod(
            "lim", "", "\"resources\":{\"limits\":{\"cpu\":\"500m\",\"memory\":\"2Gi\"}}", "", "");
        expect(lim, &f, "OutOfcpu",
               "Node didn't have enough resource: cpu, requested: 500, used: 600, capacity: 1000");
        k8s_pod_free(fits);
        k8s_pod_free(over);
        k8s_pod_free(lim);
        fx_free(&f);
}
END_TEST

START_TEST(test_pod_count_and_order)
{
        struct fixture f = {.node = th_node_json(NODE("[]"))};
        for (int i = 0; i < 3; i++) {
                char uid[8];
                snprintf(uid, sizeof(uid), "r%d", i);
                f.admitted[f.n++] = mkpod(uid, "", "", "", "\"phase\":\"Running\"");
        }
        /* ...but not when the pod count is exhausted; pods is checked first,
         * before cpu and before node name. */
        struct k8s_pod *p = mkpod("x", "", "\"nodeName\":\"elsewhere\"", CPU("5"), "");
        expect(p, &f, "OutOfpods",
               "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3");
        k8s_pod_free(p);
        k8s_pod_free(f.admitted[--f.n]);
        /* Resources before affinity and node name. */
        p = mkpod("x", "", "\"nodeName\":\"elsewhere\",\"nodeSelector\":{\"zone\":\"b\"}", CPU("5"),
                  "");
        expect(p, &f, "OutOfcpu", NULL);
        k8s_pod_free(p);
        p = mkpod("x", "", "\"nodeName\":\"elsewhere\",\"nodeSelector\":{\"zone\":\"b\"}", "", "");
        expect(p, &f, "NodeAffinity",
               "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector");
        k8s_pod_free(p);
        p = mkpod("x", "", "\"nodeName\":\"elsewhere\",\"nodeSelector\":{\"zone\":\"a\"}", "", "");
        expect(p, &f, "NodeName",
               "Predicate NodeName failed: node(s) didn't match the requested node name");
        k8s_pod_free(p);
        p = mkpod("x", "", "\"nodeName\":\"node-1\",\"nodeSelector\":{\"zone\":\"a\"}", "", "");
        expect(p, &f, NULL, NULL);
        k8s_pod_free(p);
        /* Required node affinity. */
        p = mkpod(
            "x", "",
            "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
            "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":"
            "\"NotIn\",\"values\":[\"a\"]}]}]}}}",
            "", "");
        expect(p, &f, "NodeAffinity", NULL);
        k8s_pod_free(p);
        fx_free(&f);
}
END_TEST

START_TEST(test_os)
{
        struct fixture f = {.node = th_node_json(NODE("[]"))};
        struct k8s_pod *p = mkpod("x", "\"labels\":{\"kubernetes.io/os\":\"windows\"}", "", "", "");
        expect(p, &f, "PodOSSelectorNodeLabelDoesNotMatch",
               "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label");
        k8s_pod_free(p);
        p = mkpod("x", "", "\"os\":{\"name\":\"windows\"}", "", "");
        expect(p, &f, "PodOSNotSupported",
               "Failed to admit pod as the OS field doesn't match node OS");
        k8s_pod_free(p);
        p = mkpod("x", "\"labels\":{\"kubernetes.io/os\":\"linux\"}", "\"os\":{\"name\":\"linux\"}",
                  "", "");
        expect(p, &f, NULL, NULL);
        struct k8s_admit_result r;
        ck_assert_int_eq(k8s_admit(p, NULL, NULL, 0, &r), 0);
        ck_assert_str_eq(r.reason, "InvalidNodeInfo");
        ck_assert_str_eq(r.message, "Kubelet cannot get node info.");
        ck_assert_int_eq(k8s_admit(p, f.node, NULL, 0, NULL), -1);
        k8s_pod_free(p);
        fx_free(&f);
}
END_TEST

static struct k8s_container_port port(int32_t hp, enum k8s_protocol proto, const char *ip)
{
        return (struct k8s_container_port){
            .container_port = 8080, .host_port = hp, .protocol = proto, .host_ip = (char *)ip};
}

START_TEST(test_host_port_conflicts)
{
        static const struct {
                const char *name;
                int32_t pa;
                enum k8s_protocol ta;
                const char *ia;
                int32_t pb;
                enum k8s_protocol tb;
                const char *ib;
                bool want;
        } t[] = {
            {"same tcp any", 80, K8S_PROTO_TCP, NULL, 80, K8S_PROTO_TCP, NULL, true},
            {"tcp vs udp", 80, K8S_PROTO_TCP, NULL, 80, K8S_PROTO_UDP, NULL, false},
            {"udp vs udp", 53, K8S_PROTO_UDP, "", 53, K8S_PROTO_UDP, "0.0.0.0", true},
            {"different port", 80, K8S_PROTO_TCP, NULL, 81, K8S_PROTO_TCP, NULL, false},
            {"127.0.0.1 vs 0.0.0.0", 80, K8S_PROTO_TCP, "127.0.0.1", 80, K8S_PROTO_TCP, "0.0.0.0",
             true},
            {"0.0.0.0 vs 127.0.0.1", 80, K8S_PROTO_TCP, "0.0.0.0", 80, K8S_PROTO_TCP, "127.0.0.1",
             true},
            {"specific vs empty", 80, K8S_PROTO_TCP, "10.0.0.1", 80, K8S_PROTO_TCP, "", true},
            {"two specific ips", 80, K8S_PROTO_TCP, "127.0.0.1", 80, K8S_PROTO_TCP, "10.0.0.1",
             false},
            {"same specific ip", 80, K8S_PROTO_TCP, "10.0.0.1", 80, K8S_PROTO_TCP, "10.0.0.1",
             true},
            {"no host port", 0, K8S_PROTO_TCP, NULL, 0, K8S_PROTO_TCP, NULL, false},
            {"sctp vs tcp", 80, K8S_PROTO_SCTP, NULL, 80, K8S_PROTO_TCP, NULL, false},
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                struct k8s_container_port a = port(t[i].pa, t[i].ta, t[i].ia);
                struct k8s_container_port b = port(t[i].pb, t[i].tb, t[i].ib);
                ck_assert_msg(k8s_host_ports_conflict(&a, &b) == t[i].want, "%s", t[i].name);
        }
}
END_TEST

#define PORTS_POD(uid, ports, status)                                                              \
        "{\"metadata\":{\"name\":\"" uid "\",\"uid\":\"" uid "\"},\"spec\":{\"containers\":["      \
        "{\"name\":\"c\",\"image\":\"i\",\"ports\":" ports "}]},\"status\":{" status "}}"

START_TEST(test_admit_ports)
{
        struct fixture f = {.node = th_node_json(NODE("[]"))};
        f.admitted[f.n++] = th_pod_json(PORTS_POD(
            "a",
            "[{\"containerPort\":80,\"hostPort\":80},{\"containerPort\":53,\"hostPort\":53,"
            "\"protocol\":\"UDP\",\"hostIP\":\"127.0.0.1\"}]",
            "\"phase\":\"Running\""));
        f.admitted[f.n++] = th_pod_json(PORTS_POD(
            "done", "[{\"containerPort\":81,\"hostPort\":81}]", "\"phase\":\"Succeeded\""));
        static const struct {
                const char *ports;
                bool ok;
        } t[] = {
            {"[{\"containerPort\":80,\"hostPort\":80}]", false},
            {"[{\"containerPort\":80,\"hostPort\":80,\"protocol\":\"UDP\"}]", true},
            {"[{\"containerPort\":80,\"hostPort\":80,\"hostIP\":\"10.1.1.1\"}]", false},
            {"[{\"containerPort\":53,\"hostPort\":53,\"protocol\":\"UDP\"}]", false},
            {"[{\"containerPort\":53,\"hostPort\":53,\"protocol\":\"UDP\",\"hostIP\":"
             "\"10.1.1.1\"}]",
             true},
            {"[{\"containerPort\":53,\"hostPort\":53}]", true}, /* TCP 53 is free */
            {"[{\"containerPort\":81,\"hostPort\":81}]", true}, /* terminal pod's port */
            {"[{\"containerPort\":80}]", true},                 /* no hostPort */
            /* Within the pod itself. */
            {"[{\"containerPort\":90,\"hostPort\":90},{\"containerPort\":91,\"hostPort\":90}]",
             false},
            {"[{\"containerPort\":90,\"hostPort\":90},{\"containerPort\":90,\"hostPort\":90,"
             "\"protocol\":\"UDP\"}]",
             true},
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                char buf[1024];
                snprintf(buf, sizeof(buf),
                         "{\"metadata\":{\"name\":\"n\",\"uid\":\"n\"},\"spec\":{\"containers\":["
                         "{\"name\":\"c\",\"image\":\"i\",\"ports\":%s}]}}",
                         t[i].ports);
                struct k8s_pod *p = th_pod_json(buf);
                struct k8s_admit_result r;
                k8s_admit(p, f.node, f.admitted, f.n, &r);
                ck_assert_msg(r.admitted == t[i].ok, "ports %s: %s", t[i].ports, r.message);
                if (!t[i].ok) {
                        ck_assert_str_eq(r.reason, "NodePorts");
                        ck_assert_str_eq(r.message, "Predicate NodePorts failed: node(s) didn't "
                                                    "have free ports for the requested pod ports");
                }
                k8s_pod_free(p);
        }
        fx_free(&f);
}
END_TEST

START_TEST(test_admit_taints)
{
        struct fixture f = {
            .node = th_node_json(
                NODE("[{\"key\":\"dedicated\",\"value\":\"db\",\"effect\":\"NoSchedule\"},"
                     "{\"key\":\"node.kubernetes.io/unreachable\",\"effect\":\"NoExecute\"}]"))};
        /* NoSchedule is ignored by the kubelet; NoExecute is not. */
        struct k8s_pod *p = mkpod("x", "", "", "", "");
        expect(p, &f, "TaintToleration",
               "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate");
        k8s_pod_free(p);
        p = mkpod("x", "",
                  "\"tolerations\":[{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":"
                  "\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300}]",
                  "", "");
        expect(p, &f, NULL, NULL);
        k8s_pod_free(p);
        p = mkpod("x", "", "\"tolerations\":[{\"operator\":\"Exists\"}]", "", "");
        expect(p, &f, NULL, NULL);
        k8s_pod_free(p);
        /* Static pods are exempt. */
        p = mkpod("x", "\"annotations\":{\"kubernetes.io/config.source\":\"file\"}", "", "", "");
        expect(p, &f, NULL, NULL);
        k8s_pod_free(p);
        fx_free(&f);
}
END_TEST

START_TEST(test_allocatable_fallback)
{
        struct k8s_node *n =
            th_node_json("{\"metadata\":{\"name\":\"n\"},\"status\":{\"capacity\":{"
                         "\"cpu\":\"2\",\"memory\":\"1Gi\",\"pods\":\"110\"}}}");
        struct k8s_node_allocatable a;
        k8s_node_allocatable(n, &a);
        ck_assert_int_eq(a.res.milli_cpu, 2000);
        ck_assert_int_eq(a.res.memory, 1073741824);
        ck_assert_int_eq(a.pods, 110);
        k8s_node_free(n);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("admit");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_resources_exact_fit);
        tcase_add_test(tc, test_resources_accounting);
        tcase_add_test(tc, test_resources_pod_level);
        tcase_add_test(tc, test_pod_count_and_order);
        tcase_add_test(tc, test_os);
        tcase_add_test(tc, test_host_port_conflicts);
        tcase_add_test(tc, test_admit_ports);
        tcase_add_test(tc, test_admit_taints);
        tcase_add_test(tc, test_allocatable_fallback);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
