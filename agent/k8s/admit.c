/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/k8s/admit.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "agent/k8s/selector.h"
#include "agent/k8s/taint.h"

/* cubelet only runs on Linux: the node OS is runtime.GOOS = "linux". */
#define NODE_OS "linux"

static void reject(struct k8s_admit_result *res, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void reject(struct k8s_admit_result *res, const char *reason, const char *fmt, ...)
{
        res->admitted = false;
        snprintf(res->reason, sizeof(res->reason), "%s", reason);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(res->message, sizeof(res->message), fmt, ap);
        va_end(ap);
}

/* True for status.phase "Succeeded" or "Failed". */
static bool pod_is_terminal(const struct k8s_pod *pod)
{
        const char *ph = pod->status.phase;
        return ph != NULL && (strcmp(ph, "Succeeded") == 0 || strcmp(ph, "Failed") == 0);
}

static bool same_uid(const struct k8s_pod *a, const struct k8s_pod *b)
{
        return a != NULL && b != NULL && a->meta.uid != NULL && b->meta.uid != NULL &&
               strcmp(a->meta.uid, b->meta.uid) == 0;
}

static bool counted(const struct k8s_pod *self, const struct k8s_pod *other)
{
        return other != NULL && other != self && !pod_is_terminal(other) && !same_uid(self, other);
}

static int64_t sat_add(int64_t a, int64_t b, bool *sat)
{
        int64_t r;
        if (__builtin_add_overflow(a, b, &r)) {
                *sat = true;
                return INT64_MAX;
        }
        return r;
}

void k8s_node_usage(const struct k8s_pod *self, struct k8s_pod *const *admitted, size_t n_admitted,
                    struct k8s_node_usage *ret)
{
        memset(ret, 0, sizeof(*ret));
        for (size_t i = 0; i < n_admitted; i++) {
                if (!counted(self, admitted[i]))
                        continue;
                struct k8s_resource_totals r;
                k8s_pod_requests(admitted[i], &r);
                bool *sat = &ret->requested.saturated;
                *sat |= r.saturated;
                ret->requested.milli_cpu = sat_add(ret->requested.milli_cpu, r.milli_cpu, sat);
                ret->requested.memory = sat_add(ret->requested.memory, r.memory, sat);
                ret->requested.ephemeral_storage =
                    sat_add(ret->requested.ephemeral_storage, r.ephemeral_storage, sat);
                ret->pods++;
        }
}

void k8s_node_allocatable(const struct k8s_node *node, struct k8s_node_allocatable *ret)
{
        memset(ret, 0, sizeof(*ret));
        const struct k8s_resource_list *l =
            node->allocatable.n > 0 ? &node->allocatable : &node->capacity;
        ret->res.milli_cpu = k8s_resource_amount(l, "cpu", NULL);
        ret->res.memory = k8s_resource_amount(l, "memory", NULL);
        ret->res.ephemeral_storage = k8s_resource_amount(l, "ephemeral-storage", NULL);
        ret->pods = k8s_resource_amount(l, "pods", NULL);
}

/* NodeResourcesFit (fitsRequest): false with res filled at the first
 * insufficient resource. */
static bool check_resources(const struct k8s_pod *pod, const struct k8s_node *node,
                            struct k8s_pod *const *admitted, size_t n_admitted,
                            struct k8s_admit_result *res)
{
        struct k8s_node_usage used;
        struct k8s_node_allocatable alloc;
        struct k8s_resource_totals want;
        k8s_node_usage(pod, admitted, n_admitted, &used);
        k8s_node_allocatable(node, &alloc);
        k8s_pod_requests(pod, &want);

        if (used.pods + 1 > alloc.pods) {
                reject(res, "OutOfpods",
                       "Node didn't have enough resource: pods, requested: 1, used: %" PRId64
                       ", capacity: %" PRId64,
                       used.pods, alloc.pods);
                return false;
        }
        static const struct {
                const char *name, *reason;
                size_t off;
        } checks[] = {
            {"cpu", "OutOfcpu", offsetof(struct k8s_resource_totals, milli_cpu)},
            {"memory", "OutOfmemory", offsetof(struct k8s_resource_totals, memory)},
            {"ephemeral-storage", "OutOfephemeral-storage",
             offsetof(struct k8s_resource_totals, ephemeral_storage)},
        };
        for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
                int64_t w, u, a;
                memcpy(&w, (const char *)&want + checks[i].off, sizeof(w));
                memcpy(&u, (const char *)&used.requested + checks[i].off, sizeof(u));
                memcpy(&a, (const char *)&alloc.res + checks[i].off, sizeof(a));
                /* want > a - u, computed without overflow (u may exceed a). */
                if (w > 0 && (__int128)w > (__int128)a - (__int128)u) {
                        reject(res, checks[i].reason,
                               "Node didn't have enough resource: %s, requested: %" PRId64
                               ", used: %" PRId64 ", capacity: %" PRId64,
                               checks[i].name, w, u, a);
                        return false;
                }
        }
        return true;
}

static const char *ip_or_any(const char *ip)
{
        return ip != NULL && ip[0] != '\0' ? ip : "0.0.0.0";
}

bool k8s_host_ports_conflict(const struct k8s_container_port *a, const struct k8s_container_port *b)
{
        if (a->host_port <= 0 || b->host_port <= 0 || a->host_port != b->host_port)
                return false;
        if (a->protocol != b->protocol)
                return false;
        const char *ia = ip_or_any(a->host_ip), *ib = ip_or_any(b->host_ip);
        if (strcmp(ia, "0.0.0.0") == 0 || strcmp(ib, "0.0.0.0") == 0)
                return true;
        return strcmp(ia, ib) == 0;
}

/* Iterates the host ports (hostPort > 0) of a pod: sidecar init containers,
 * then regular containers (schedutil.GetHostPorts). */
struct port_iter {
        const struct k8s_pod *pod;
        size_t c; /* index over init containers, then containers */
        size_t p;
};

static const struct k8s_container_port *next_host_port(struct port_iter *it)
{
        const struct k8s_pod_spec *s = &it->pod->spec;
        while (it->c < s->n_init_containers + s->n_containers) {
                bool init = it->c < s->n_init_containers;
                const struct k8s_container *c = init ? &s->init_containers[it->c]
                                                     : &s->containers[it->c - s->n_init_containers];
                if ((!init || k8s_container_is_sidecar(c)) && it->p < c->n_ports) {
                        const struct k8s_container_port *port = &c->ports[it->p++];
                        if (port->host_port > 0)
                                return port;
                        continue;
                }
                it->c++;
                it->p = 0;
        }
        return NULL;
}

static bool ports_fit(const struct k8s_pod *pod, struct k8s_pod *const *admitted, size_t n_admitted)
{
        struct port_iter want = {.pod = pod};
        const struct k8s_container_port *p;
        while ((p = next_host_port(&want)) != NULL) {
                for (size_t i = 0; i < n_admitted; i++) {
                        if (!counted(pod, admitted[i]))
                                continue;
                        struct port_iter used = {.pod = admitted[i]};
                        const struct k8s_container_port *q;
                        while ((q = next_host_port(&used)) != NULL)
                                if (k8s_host_ports_conflict(p, q))
                                        return false;
                }
                /* Clashes within the pod: the ports listed before p. */
                struct port_iter self = {.pod = pod};
                const struct k8s_container_port *q;
                while ((q = next_host_port(&self)) != NULL && q != p)
                        if (k8s_host_ports_conflict(p, q))
                                return false;
        }
        return true;
}

int k8s_admit(const struct k8s_pod *pod, const struct k8s_node *node,
              struct k8s_pod *const *admitted, size_t n_admitted, struct k8s_admit_result *res)
{
        if (pod == NULL || res == NULL)
                return -1;
        memset(res, 0, sizeof(*res));
        res->admitted = true;
        if (node == NULL) {
                reject(res, "InvalidNodeInfo", "Kubelet cannot get node info.");
                return 0;
        }

        /* The kubelet compares the pod's kubernetes.io/os LABEL with the
         * node's label, which it forces to runtime.GOOS. */
        for (size_t i = 0; i < pod->meta.labels.n; i++) {
                const struct k8s_kv *kv = &pod->meta.labels.items[i];
                if (kv->key != NULL && strcmp(kv->key, "kubernetes.io/os") == 0 &&
                    (kv->value == NULL || strcmp(kv->value, NODE_OS) != 0)) {
                        reject(res, "PodOSSelectorNodeLabelDoesNotMatch",
                               "Failed to admit pod as the `kubernetes.io/os` label doesn't "
                               "match node label");
                        return 0;
                }
        }
        if (pod->spec.os_name != NULL && strcmp(pod->spec.os_name, NODE_OS) != 0) {
                reject(res, "PodOSNotSupported",
                       "Failed to admit pod as the OS field doesn't match node OS");
                return 0;
        }

        if (!check_resources(pod, node, admitted, n_admitted, res))
                return 0;
        if (!k8s_pod_matches_node_selector(pod, node)) {
                reject(res, "NodeAffinity",
                       "Predicate NodeAffinity failed: node(s) didn't match Pod's node "
                       "affinity/selector");
                return 0;
        }
        if (pod->spec.node_name != NULL && pod->spec.node_name[0] != '\0' &&
            (node->meta.name == NULL || strcmp(pod->spec.node_name, node->meta.name) != 0)) {
                reject(res, "NodeName",
                       "Predicate NodeName failed: node(s) didn't match the requested node name");
                return 0;
        }
        if (!ports_fit(pod, admitted, n_admitted)) {
                reject(res, "NodePorts",
                       "Predicate NodePorts failed: node(s) didn't have free ports for the "
                       "requested pod ports");
                return 0;
        }
        if (!k8s_pod_is_static(pod) &&
            k8s_find_untolerated_taint(pod->spec.tolerations, pod->spec.n_tolerations, node->taints,
                                       node->n_taints, K8S_EFFECT_NO_EXECUTE) != NULL) {
                reject(res, "TaintToleration",
                       "Predicate TaintToleration failed: node(s) had taints that the pod didn't "
                       "tolerate");
                return 0;
        }
        return 0;
}
