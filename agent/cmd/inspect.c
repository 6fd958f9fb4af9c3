/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cubelet inspect POD_FILE [--node NODE_FILE] [--running PODLIST_FILE]
 *
 * Answers "what would this node do with this pod" without a cluster: the
 * decoded pod, its QoS class, the admission verdict with the kubelet's
 * reason and message, a verdict per node taint, and the cgroup plan for v1
 * and v2. Without --node the node is this machine, as cubelet would
 * register it. Exit status: 0 admitted, 1 rejected, 2 input error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/k8s/admit.h"
#include "agent/cmd/cli.h"
#include "agent/k8s/k8s.h"
#include "agent/node/nodeinfo.h"
#include "agent/k8s/qos.h"
#include "agent/k8s/selector.h"
#include "agent/k8s/taint.h"
#include "lib/cleanup.h"
#include "lib/file.h"

#define MAX_PODS_DEFAULT 110

/* The running pods: a view (pods) over pods owned either by a decoded list
 * (lists) or individually (singles). */
struct running_set {
        struct k8s_pod_list **lists;
        size_t n_lists;
        struct k8s_pod **singles;
        size_t n_singles;
        struct k8s_pod **pods;
        size_t n;
};

static void running_set_free(struct running_set *r)
{
        for (size_t i = 0; i < r->n_lists; i++)
                k8s_pod_list_free(r->lists[i]);
        for (size_t i = 0; i < r->n_singles; i++)
                k8s_pod_free(r->singles[i]);
        free(r->lists);
        free(r->singles);
        free(r->pods);
}

static int push_pod(struct k8s_pod ***arr, size_t *n, struct k8s_pod *p)
{
        struct k8s_pod **np = realloc(*arr, (*n + 1) * sizeof(*np));
        if (np == NULL)
                return -1;
        *arr = np;
        (*arr)[(*n)++] = p;
        return 0;
}

/* A PodList (kind List or PodList, or any object with items), or one or
 * more Pod documents. */
static int load_running(const char *path, struct running_set *r, struct cb_error *err)
{
        _cleanup_free_ char *text = NULL;
        size_t len;
        if (cb_read_file(path, K8S_MAX_LIST_BYTES, &text, &len, err) < 0)
                return -1;
        cJSON **docs = NULL;
        size_t n_docs = 0;
        if (k8s_parse_documents(text, len, &docs, &n_docs, err) < 0)
                return cb_error_prefix(err, "%s", path);
        int ret = 0;
        for (size_t d = 0; d < n_docs && ret == 0; d++) {
                if (cJSON_GetObjectItemCaseSensitive(docs[d], "items") != NULL) {
                        struct k8s_pod_list *l;
                        if (k8s_pod_list_from_json(docs[d], &l, err) < 0) {
                                ret = cb_error_prefix(err, "%s", path);
                                break;
                        }
                        struct k8s_pod_list **nl =
                            realloc(r->lists, (r->n_lists + 1) * sizeof(*nl));
                        if (nl == NULL) {
                                k8s_pod_list_free(l);
                                ret = cb_error_set(err, ENOMEM, "%s", path);
                                break;
                        }
                        r->lists = nl;
                        r->lists[r->n_lists++] = l;
                        for (size_t i = 0; i < l->n && ret == 0; i++)
                                if (push_pod(&r->pods, &r->n, l->items[i]) < 0)
                                        ret = cb_error_set(err, ENOMEM, "%s", path);
                } else {
                        struct k8s_pod *p;
                        if (k8s_pod_from_json(docs[d], &p, err) < 0) {
                                ret = cb_error_prefix(err, "%s", path);
                                break;
                        }
                        if (push_pod(&r->singles, &r->n_singles, p) < 0) {
                                k8s_pod_free(p);
                                ret = cb_error_set(err, ENOMEM, "%s", path);
                        } else if (push_pod(&r->pods, &r->n, p) < 0) {
                                ret = cb_error_set(err, ENOMEM, "%s", path);
                        }
                }
        }
        k8s_free_documents(docs, n_docs);
        return ret;
}

static int load_pod(const char *path, struct k8s_pod **ret, struct cb_error *err)
{
        _cleanup_cjson_ cJSON *doc = NULL;
        if (k8s_parse_file(path, &doc, err) < 0)
                return -1;
        /* A Deployment/DaemonSet/Job: inspect its pod template. */
        const cJSON *spec = cJSON_GetObjectItemCaseSensitive(doc, "spec");
        const cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(spec, "template");
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(doc, "kind");
        bool is_pod = !cJSON_IsString(kind) || strcmp(kind->valuestring, "Pod") == 0;
        if (!is_pod && !cJSON_IsObject(tmpl))
                return cb_error_set(err, 0, "%s: kind %s has no spec.template; want a Pod", path,
                                    kind->valuestring);
        if (k8s_pod_from_json(is_pod ? doc : tmpl, ret, err) < 0)
                return cb_error_prefix(err, "%s%s", path, is_pod ? "" : " (spec.template)");
        return 0;
}

static int load_node(const char *path, const char *root_dir, struct k8s_node **ret,
                     struct cb_error *err)
{
        _cleanup_cjson_ cJSON *doc = NULL;
        if (path != NULL) {
                if (k8s_parse_file(path, &doc, err) < 0)
                        return -1;
        } else {
                struct ag_node_facts f;
                if (ag_node_facts_read(root_dir, &f, err) < 0)
                        return cb_error_prefix(err, "reading this machine's capacity");
                doc = ag_node_json(&f, f.hostname, MAX_PODS_DEFAULT);
                if (doc == NULL)
                        return cb_error_set(err, ENOMEM, "building the local node");
                path = "this machine";
        }
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(doc, "kind");
        if (cJSON_IsString(kind) && strcmp(kind->valuestring, "Node") != 0)
                return cb_error_set(err, 0, "%s: kind is %s; --node wants a Node", path,
                                    kind->valuestring);
        if (k8s_node_from_json(doc, ret, err) < 0)
                return cb_error_prefix(err, "%s", path);
        return 0;
}

/* Quantities as Kubernetes prints them. */
static void add_quantity(cJSON *obj, const char *key, int64_t amount, bool is_cpu)
{
        struct k8s_quantity q = {.set = true};
        if (is_cpu) {
                q.milli = amount;
                q.value = amount / 1000 + (amount % 1000 != 0);
                q.format = K8S_QF_DECIMAL_SI;
        } else {
                q.value = amount;
                q.milli_saturated = amount > INT64_MAX / 1000;
                q.milli = q.milli_saturated ? INT64_MAX : amount * 1000;
                q.format = K8S_QF_BINARY_SI;
        }
        char buf[64];
        k8s_quantity_format(&q, buf, sizeof(buf));
        cJSON_AddStringToObject(obj, key, buf);
}

static void add_totals(cJSON *obj, const struct k8s_resource_totals *t)
{
        add_quantity(obj, "cpu", t->milli_cpu, true);
        add_quantity(obj, "memory", t->memory, false);
        add_quantity(obj, "ephemeral-storage", t->ephemeral_storage, false);
}

static cJSON *resource_list_json(const struct k8s_resource_list *l)
{
        cJSON *o = cJSON_CreateObject();
        for (size_t i = 0; i < l->n; i++) {
                char buf[64];
                k8s_quantity_format(&l->items[i].q, buf, sizeof(buf));
                cJSON_AddStringToObject(o, l->items[i].name, buf);
        }
        return o;
}

static cJSON *containers_json(const struct k8s_container *cs, size_t n, bool init)
{
        cJSON *arr = cJSON_CreateArray();
        for (size_t i = 0; i < n; i++) {
                const struct k8s_container *c = &cs[i];
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "name", c->name ? c->name : "");
                cJSON_AddStringToObject(o, "image", c->image ? c->image : "");
                cJSON_AddStringToObject(o, "kind",
                                        !init                         ? "regular"
                                        : k8s_container_is_sidecar(c) ? "sidecar"
                                                                      : "init");
                cJSON_AddItemToObject(o, "requests", resource_list_json(&c->resources.requests));
                cJSON_AddItemToObject(o, "limits", resource_list_json(&c->resources.limits));
                cJSON *ports = cJSON_AddArrayToObject(o, "hostPorts");
                for (size_t p = 0; p < c->n_ports; p++) {
                        if (c->ports[p].host_port <= 0)
                                continue;
                        char buf[96];
                        snprintf(buf, sizeof(buf), "%s%s%d/%s",
                                 c->ports[p].host_ip ? c->ports[p].host_ip : "",
                                 c->ports[p].host_ip ? ":" : "", c->ports[p].host_port,
                                 k8s_protocol_name(c->ports[p].protocol));
                        cJSON_AddItemToArray(ports, cJSON_CreateString(buf));
                }
                cJSON_AddItemToArray(arr, o);
        }
        return arr;
}

static cJSON *pod_summary(const struct k8s_pod *p)
{
        cJSON *o = cJSON_CreateObject();
        const struct k8s_object_meta *m = &p->meta;
        cJSON_AddStringToObject(o, "namespace", m->namespace_ ? m->namespace_ : "default");
        cJSON_AddStringToObject(o, "name", m->name ? m->name : "");
        if (m->uid)
                cJSON_AddStringToObject(o, "uid", m->uid);
        if (p->spec.node_name)
                cJSON_AddStringToObject(o, "nodeName", p->spec.node_name);
        cJSON_AddStringToObject(o, "restartPolicy",
                                k8s_restart_policy_name(p->spec.restart_policy));
        cJSON_AddBoolToObject(o, "static", k8s_pod_is_static(p));
        cJSON_AddItemToObject(
            o, "initContainers",
            containers_json(p->spec.init_containers, p->spec.n_init_containers, true));
        cJSON_AddItemToObject(o, "containers",
                              containers_json(p->spec.containers, p->spec.n_containers, false));
        return o;
}

static cJSON *files_json(const struct cg_limits *l, enum cg_version v)
{
        struct cg_file files[16];
        size_t n = cg_render_files(l, v, files, CB_ARRAY_SIZE(files));
        cJSON *o = cJSON_CreateObject();
        for (size_t i = 0; i < n; i++)
                cJSON_AddStringToObject(o, files[i].name, files[i].value);
        return o;
}

static cJSON *cgroup_json(const char *path, const struct cg_limits *l)
{
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "path", path);
        cJSON_AddItemToObject(o, "v1", files_json(l, CG_V1));
        cJSON_AddItemToObject(o, "v2", files_json(l, CG_V2));
        return o;
}

static cJSON *plan_json(const struct k8s_pod_cgroup_plan *plan)
{
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "driver", "cgroupfs");
        cJSON_AddStringToObject(
            o, "cpuWeightFormula",
            "ceil(10^((log2(s)^2 + 125*log2(s))/612 - 7/34)) (runc >= 1.3.2, crun)");
        cJSON_AddItemToObject(o, "pod", cgroup_json(plan->path, &plan->limits));
        cJSON *cs = cJSON_AddArrayToObject(o, "containers");
        for (size_t i = 0; i < plan->n_containers; i++) {
                const struct k8s_container_cgroup *c = &plan->containers[i];
                cJSON *co = cgroup_json(c->path, &c->limits);
                cJSON_AddStringToObject(co, "name", c->container->name);
                cJSON_AddBoolToObject(co, "init", c->init);
                cJSON_AddNumberToObject(co, "oomScoreAdj", c->oom_score_adj);
                cJSON_AddItemToArray(cs, co);
        }
        return o;
}

static const char *noexec_action_name(enum k8s_noexecute_action a)
{
        switch (a) {
        case K8S_NOEXEC_NO_TAINTS:
                return "none";
        case K8S_NOEXEC_TOLERATE_FOREVER:
                return "tolerateForever";
        case K8S_NOEXEC_EVICT_AFTER:
                return "evictAfter";
        case K8S_NOEXEC_EVICT_NOW:
                return "evictNow";
        }
        return "unknown";
}

static cJSON *taints_json(const struct k8s_pod *pod, const struct k8s_node *node)
{
        cJSON *arr = cJSON_CreateArray();
        for (size_t i = 0; i < node->n_taints; i++) {
                const struct k8s_taint *t = &node->taints[i];
                struct k8s_taint_verdict v;
                k8s_taint_verdict(pod->spec.tolerations, pod->spec.n_tolerations, t, &v);
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "key", t->key ? t->key : "");
                if (t->value && t->value[0])
                        cJSON_AddStringToObject(o, "value", t->value);
                cJSON_AddStringToObject(o, "effect", k8s_effect_name(t->effect));
                cJSON_AddBoolToObject(o, "tolerated", v.tolerated);
                if (v.tolerated && v.has_seconds)
                        cJSON_AddNumberToObject(o, "tolerationSeconds", (double)v.seconds);
                else
                        cJSON_AddNullToObject(o, "tolerationSeconds");
                cJSON_AddItemToArray(arr, o);
        }
        return arr;
}

static cJSON *noexec_json(const struct k8s_pod *pod, const struct k8s_node *node)
{
        struct k8s_noexecute_verdict v;
        k8s_noexecute_verdict(pod->spec.tolerations, pod->spec.n_tolerations, node->taints,
                              node->n_taints, &v);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "action", noexec_action_name(v.action));
        if (v.action == K8S_NOEXEC_EVICT_AFTER)
                cJSON_AddNumberToObject(o, "afterSeconds", (double)v.seconds);
        if (v.untolerated != NULL)
                cJSON_AddStringToObject(o, "untoleratedTaint",
                                        v.untolerated->key ? v.untolerated->key : "");
        cJSON_AddBoolToObject(o, "staticPodExempt", k8s_pod_is_static(pod));
        return o;
}

static cJSON *node_json(const struct k8s_pod *pod, const struct k8s_node *node,
                        struct k8s_pod *const *running, size_t n_running)
{
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", node->meta.name ? node->meta.name : "");
        struct k8s_node_allocatable alloc;
        k8s_node_allocatable(node, &alloc);
        cJSON *a = cJSON_AddObjectToObject(o, "allocatable");
        add_totals(a, &alloc.res);
        cJSON_AddNumberToObject(a, "pods", (double)alloc.pods);
        struct k8s_node_usage used;
        k8s_node_usage(pod, running, n_running, &used);
        cJSON *u = cJSON_AddObjectToObject(o, "used");
        add_totals(u, &used.requested);
        cJSON_AddNumberToObject(u, "pods", (double)used.pods);
        cJSON_AddBoolToObject(o, "matchesNodeSelectorAndAffinity",
                              k8s_pod_matches_node_selector(pod, node));
        cJSON_AddNumberToObject(o, "preferredAffinityScore",
                                (double)k8s_preferred_affinity_score(pod, node));
        return o;
}

static int node_memory_capacity(const struct k8s_node *node, int64_t *ret)
{
        const struct k8s_quantity *q = k8s_resource_get(&node->capacity, "memory");
        if (q == NULL)
                q = k8s_resource_get(&node->allocatable, "memory");
        *ret = q != NULL ? q->value : 0;
        return 0;
}

int cmd_inspect(int argc, char **argv, const struct cb_global_opts *opts)
{
        const char *pod_file = NULL, *node_file = NULL, *running_file = NULL;
        for (int i = 1; i < argc; i++) {
                if ((strcmp(argv[i], "--node") == 0 || strcmp(argv[i], "--running") == 0) &&
                    i + 1 < argc) {
                        if (strcmp(argv[i], "--node") == 0)
                                node_file = argv[++i];
                        else
                                running_file = argv[++i];
                } else if (strncmp(argv[i], "--node=", 7) == 0) {
                        node_file = argv[i] + 7;
                } else if (strncmp(argv[i], "--running=", 10) == 0) {
                        running_file = argv[i] + 10;
                } else if (argv[i][0] == '-' || pod_file != NULL) {
                        fprintf(stderr,
                                "cubelet inspect: unexpected argument \"%s\"\n"
                                "usage: cubelet inspect POD_FILE [--node NODE_FILE] "
                                "[--running PODLIST_FILE]\n",
                                argv[i]);
                        return 2;
                } else {
                        pod_file = argv[i];
                }
        }
        if (pod_file == NULL) {
                fprintf(stderr, "usage: cubelet inspect POD_FILE [--node NODE_FILE] "
                                "[--running PODLIST_FILE]\n");
                return 2;
        }

        struct cb_error err = {0};
        struct k8s_pod *pod = NULL;
        struct k8s_node *node = NULL;
        struct running_set running = {0};
        struct k8s_pod_cgroup_plan plan = {0};
        bool have_plan = false;
        cJSON *out = NULL;
        int status = 2;

        if (load_pod(pod_file, &pod, &err) < 0 ||
            load_node(node_file, opts->root_dir, &node, &err) < 0 ||
            (running_file != NULL && load_running(running_file, &running, &err) < 0)) {
                fprintf(stderr, "cubelet inspect: %s\n", err.msg);
                goto out;
        }

        struct k8s_admit_result adm;
        k8s_admit(pod, node, running.pods, running.n, &adm);

        int64_t mem_capacity;
        node_memory_capacity(node, &mem_capacity);
        /* A pod without a uid (a manifest not yet created) still gets a plan. */
        if (pod->meta.uid == NULL)
                pod->meta.uid = cb_arena_strdup(pod->arena, "<uid>");
        if (k8s_pod_cgroup_plan(pod, mem_capacity, 0, "", &plan, &err) < 0) {
                fprintf(stderr, "cubelet inspect: %s: cgroup plan: %s\n", pod_file, err.msg);
                goto out;
        }
        have_plan = true;

        out = cJSON_CreateObject();
        cJSON_AddItemToObject(out, "pod", pod_summary(pod));
        cJSON_AddStringToObject(out, "qosClass", k8s_qos_name(k8s_pod_qos(pod)));
        struct k8s_resource_totals req;
        k8s_pod_requests(pod, &req);
        add_totals(cJSON_AddObjectToObject(out, "requests"), &req);
        cJSON_AddItemToObject(out, "node", node_json(pod, node, running.pods, running.n));
        cJSON *a = cJSON_AddObjectToObject(out, "admission");
        cJSON_AddBoolToObject(a, "admitted", adm.admitted);
        if (adm.admitted) {
                cJSON_AddNullToObject(a, "reason");
                cJSON_AddNullToObject(a, "message");
        } else {
                char msg[600];
                snprintf(msg, sizeof(msg), "Pod was rejected: %s", adm.message);
                cJSON_AddStringToObject(a, "reason", adm.reason);
                cJSON_AddStringToObject(a, "message", adm.message);
                cJSON_AddStringToObject(a, "statusMessage", msg);
        }
        cJSON_AddItemToObject(out, "tolerations", taints_json(pod, node));
        cJSON_AddItemToObject(out, "noExecute", noexec_json(pod, node));
        cJSON_AddItemToObject(out, "cgroups", plan_json(&plan));

        char *text = cJSON_Print(out);
        if (text == NULL) {
                fprintf(stderr, "cubelet inspect: out of memory\n");
                goto out;
        }
        printf("%s\n", text);
        free(text);
        status = adm.admitted ? 0 : 1;
out:
        cJSON_Delete(out);
        if (have_plan)
                k8s_pod_cgroup_plan_free(&plan);
        running_set_free(&running);
        k8s_node_free(node);
        k8s_pod_free(pod);
        return status;
}
