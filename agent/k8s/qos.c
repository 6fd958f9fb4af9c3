/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/k8s/qos.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RES_CPU     "cpu"
#define RES_MEMORY  "memory"
#define RES_STORAGE "ephemeral-storage"

/* The kubelet's node-critical test: SystemCriticalPriority = 2 * 10^9. */
#define K8S_SYSTEM_CRITICAL_PRIORITY 2000000000LL

const char *k8s_qos_name(enum k8s_qos_class q)
{
        switch (q) {
        case K8S_QOS_BEST_EFFORT:
                return "BestEffort";
        case K8S_QOS_BURSTABLE:
                return "Burstable";
        case K8S_QOS_GUARANTEED:
                return "Guaranteed";
        }
        return "";
}

enum cg_tier k8s_qos_tier(enum k8s_qos_class q)
{
        switch (q) {
        case K8S_QOS_GUARANTEED:
                return CG_TIER_GUARANTEED;
        case K8S_QOS_BURSTABLE:
                return CG_TIER_BURSTABLE;
        case K8S_QOS_BEST_EFFORT:
                break;
        }
        return CG_TIER_BESTEFFORT;
}

static int64_t sat_add(int64_t a, int64_t b, bool *saturated)
{
        int64_t r;
        if (__builtin_add_overflow(a, b, &r)) {
                *saturated = true;
                return INT64_MAX;
        }
        return r;
}

static int64_t max64(int64_t a, int64_t b)
{
        return a > b ? a : b;
}

/* Local lookup: this module does not depend on the decoder's helpers. */
static const struct k8s_quantity *find_quantity(const struct k8s_resource_list *l, const char *name)
{
        if (l == NULL)
                return NULL;
        for (size_t i = 0; i < l->n; i++)
                if (l->items[i].name != NULL && strcmp(l->items[i].name, name) == 0)
                        return &l->items[i].q;
        return NULL;
}

int64_t k8s_resource_amount(const struct k8s_resource_list *l, const char *name, bool *present)
{
        const struct k8s_quantity *q = find_quantity(l, name);
        if (present != NULL)
                *present = q != NULL;
        if (q == NULL)
                return 0;
        int64_t v;
        if (strcmp(name, RES_CPU) == 0)
                v = q->milli_saturated && q->milli > 0 ? INT64_MAX : q->milli;
        else
                v = q->value;
        return v > 0 ? v : 0;
}

int64_t k8s_container_request(const struct k8s_container *c, const char *name)
{
        bool present;
        int64_t v = k8s_resource_amount(&c->resources.requests, name, &present);
        if (!present)
                return k8s_resource_amount(&c->resources.limits, name, NULL);
        return v;
}

int64_t k8s_container_limit(const struct k8s_container *c, const char *name)
{
        return k8s_resource_amount(&c->resources.limits, name, NULL);
}

bool k8s_container_is_sidecar(const struct k8s_container *c)
{
        return c->has_restart_policy && c->restart_policy == K8S_RESTART_ALWAYS;
}

static enum k8s_qos_class containers_qos(const struct k8s_pod *pod)
{
        int64_t req_cpu = 0, req_mem = 0, lim_cpu = 0, lim_mem = 0;
        bool has_req_cpu = false, has_req_mem = false, has_lim_cpu = false, has_lim_mem = false;
        bool sat = false, guaranteed = true;
        size_t n = pod->spec.n_containers + pod->spec.n_init_containers;

        for (size_t i = 0; i < n; i++) {
                const struct k8s_container *c =
                    i < pod->spec.n_containers
                        ? &pod->spec.containers[i]
                        : &pod->spec.init_containers[i - pod->spec.n_containers];
                int64_t rc = k8s_container_request(c, RES_CPU);
                int64_t rm = k8s_container_request(c, RES_MEMORY);
                int64_t lc = k8s_container_limit(c, RES_CPU);
                int64_t lm = k8s_container_limit(c, RES_MEMORY);
                /* Only positive quantities enter the sums, as in ComputePodQOS. */
                if (rc > 0) {
                        has_req_cpu = true;
                        req_cpu = sat_add(req_cpu, rc, &sat);
                }
                if (rm > 0) {
                        has_req_mem = true;
                        req_mem = sat_add(req_mem, rm, &sat);
                }
                if (lc > 0) {
                        has_lim_cpu = true;
                        lim_cpu = sat_add(lim_cpu, lc, &sat);
                }
                if (lm > 0) {
                        has_lim_mem = true;
                        lim_mem = sat_add(lim_mem, lm, &sat);
                }
                if (lc <= 0 || lm <= 0)
                        guaranteed = false;
        }
        if (!has_req_cpu && !has_req_mem && !has_lim_cpu && !has_lim_mem)
                return K8S_QOS_BEST_EFFORT;
        /* Every requested resource must be limited at the same amount, and
         * the two sets must be the same size. A saturated sum cannot be
         * compared exactly; such a pod is not Guaranteed. */
        if (guaranteed && !sat) {
                if (has_req_cpu && (!has_lim_cpu || lim_cpu != req_cpu))
                        guaranteed = false;
                if (has_req_mem && (!has_lim_mem || lim_mem != req_mem))
                        guaranteed = false;
                if ((int)has_req_cpu + (int)has_req_mem != (int)has_lim_cpu + (int)has_lim_mem)
                        guaranteed = false;
        } else {
                guaranteed = false;
        }
        return guaranteed ? K8S_QOS_GUARANTEED : K8S_QOS_BURSTABLE;
}

/* The three resources admission and cgroups care about, in one array. */
enum { R_CPU, R_MEM, R_STORAGE, R_N };
static const char *const res_names[R_N] = {RES_CPU, RES_MEMORY, RES_STORAGE};

struct agg {
        int64_t v[R_N];
        bool has[R_N]; /* some container declared it (limits: for overhead) */
        bool sat;
};

/*
 * AggregateContainerRequests / AggregateContainerLimits:
 *   total = sum(containers) + sum(sidecars);
 *   for each init container in order: its need is its own amount plus the
 *   sidecars started before it (a sidecar's need is the running sum of
 *   sidecars including itself); total = max(total, max need).
 */
static void aggregate(const struct k8s_pod *pod, bool limits, struct agg *a, bool *cpu_all,
                      bool *mem_all)
{
        memset(a, 0, sizeof(*a));
        int64_t sidecars[R_N] = {0}, init_max[R_N] = {0};
        bool all_cpu = true, all_mem = true;

        for (size_t i = 0; i < pod->spec.n_containers; i++) {
                const struct k8s_container *c = &pod->spec.containers[i];
                for (int r = 0; r < R_N; r++) {
                        int64_t v = limits ? k8s_container_limit(c, res_names[r])
                                           : k8s_container_request(c, res_names[r]);
                        bool present = false;
                        k8s_resource_amount(&c->resources.limits, res_names[r], &present);
                        a->has[r] |= present;
                        a->v[r] = sat_add(a->v[r], v, &a->sat);
                }
                all_cpu &= k8s_container_limit(c, RES_CPU) > 0;
                all_mem &= k8s_container_limit(c, RES_MEMORY) > 0;
        }
        for (size_t i = 0; i < pod->spec.n_init_containers; i++) {
                const struct k8s_container *c = &pod->spec.init_containers[i];
                bool sidecar = k8s_container_is_sidecar(c);
                for (int r = 0; r < R_N; r++) {
                        int64_t v = limits ? k8s_container_limit(c, res_names[r])
                                           : k8s_container_request(c, res_names[r]);
                        bool present = false;
                        k8s_resource_amount(&c->resources.limits, res_names[r], &present);
                        a->has[r] |= present;
                        int64_t need;
                        if (sidecar) {
                                a->v[r] = sat_add(a->v[r], v, &a->sat);
                                sidecars[r] = sat_add(sidecars[r], v, &a->sat);
                                need = sidecars[r];
                        } else {
                                need = sat_add(v, sidecars[r], &a->sat);
                        }
                        init_max[r] = max64(init_max[r], need);
                        /* PodLimits' ContainerFn sees an init container's
                         * combined need (its own plus the sidecars before
                         * it; a sidecar: the sidecars up to it) */
                        if (limits && r == R_CPU)
                                all_cpu &= need > 0;
                        if (limits && r == R_MEM)
                                all_mem &= need > 0;
                }
        }
        for (int r = 0; r < R_N; r++)
                a->v[r] = max64(a->v[r], init_max[r]);
        if (cpu_all != NULL)
                *cpu_all = all_cpu;
        if (mem_all != NULL)
                *mem_all = all_mem;
}

static void to_totals(const struct agg *a, struct k8s_resource_totals *ret)
{
        ret->milli_cpu = a->v[R_CPU];
        ret->memory = a->v[R_MEM];
        ret->ephemeral_storage = a->v[R_STORAGE];
        ret->saturated = a->sat;
}

/* IsSupportedPodLevelResource: cpu, memory, hugepages-*. */
static bool pod_level_name(const char *name)
{
        return name != NULL && (strcmp(name, RES_CPU) == 0 || strcmp(name, RES_MEMORY) == 0 ||
                                strncmp(name, "hugepages-", 10) == 0);
}

static bool has_pod_level_name(const struct k8s_resource_list *l)
{
        for (size_t i = 0; i < l->n; i++)
                if (pod_level_name(l->items[i].name))
                        return true;
        return false;
}

bool k8s_pod_level_resources_set(const struct k8s_pod *pod)
{
        const struct k8s_pod_spec *s = &pod->spec;
        return s->has_resources && (has_pod_level_name(&s->resources.requests) ||
                                    has_pod_level_name(&s->resources.limits));
}

bool k8s_pod_level_limits_set(const struct k8s_pod *pod)
{
        return pod->spec.has_resources && has_pod_level_name(&pod->spec.resources.limits);
}

/*
 * spec.resources as the kubelet sees it: after the apiserver's defaulting
 * (SetDefaults_Pod -> defaultPodRequests, 1.34/1.35), which static pods
 * get too (the kubelet decodes their files with the defaulting scheme).
 * With pod-level limits set, a missing cpu/memory request becomes the
 * containers' aggregated request when some container requests it (after
 * requests default to limits), else the pod-level limit. Limits are not
 * defaulted for cpu/memory in 1.34/1.35 (defaultHugePagePodLimits only
 * concerns hugepages, which the decoder refuses).
 */
struct pod_level {
        bool set;                    /* IsPodLevelResourcesSet (as written) */
        bool requests_set;           /* IsPodLevelRequestsSet (defaulted) */
        size_t n_requests, n_limits; /* len() of the defaulted maps */
        bool has_req[2], has_lim[2]; /* [0] cpu, [1] memory */
        int64_t req[2], lim[2];      /* millicores, bytes */
};

/* Some container (regular or init) has a request for the resource once
 * requests default to limits: the key AggregateContainerRequests returns. */
static bool container_requests_key(const struct k8s_pod *pod, const char *name)
{
        size_t n = pod->spec.n_containers + pod->spec.n_init_containers;
        for (size_t i = 0; i < n; i++) {
                const struct k8s_container *c =
                    i < pod->spec.n_containers
                        ? &pod->spec.containers[i]
                        : &pod->spec.init_containers[i - pod->spec.n_containers];
                bool rp = false, lp = false;
                k8s_resource_amount(&c->resources.requests, name, &rp);
                k8s_resource_amount(&c->resources.limits, name, &lp);
                if (rp || lp)
                        return true;
        }
        return false;
}

static void pod_level(const struct k8s_pod *pod, struct pod_level *pl)
{
        memset(pl, 0, sizeof(*pl));
        const struct k8s_pod_spec *s = &pod->spec;
        if (!s->has_resources)
                return;
        pl->set = k8s_pod_level_resources_set(pod);
        pl->n_requests = s->resources.requests.n;
        pl->n_limits = s->resources.limits.n;
        bool req_named = has_pod_level_name(&s->resources.requests);
        struct agg a;
        bool have_agg = false;
        for (int r = 0; r < 2; r++) {
                const char *name = res_names[r]; /* R_CPU, R_MEM */
                pl->req[r] = k8s_resource_amount(&s->resources.requests, name, &pl->has_req[r]);
                pl->lim[r] = k8s_resource_amount(&s->resources.limits, name, &pl->has_lim[r]);
                if (pl->has_req[r] || s->resources.limits.n == 0)
                        continue;
                /* defaultPodRequests */
                if (container_requests_key(pod, name)) {
                        if (!have_agg) {
                                aggregate(pod, false, &a, NULL, NULL);
                                have_agg = true;
                        }
                        pl->req[r] = a.v[r];
                } else if (pl->has_lim[r]) {
                        pl->req[r] = pl->lim[r];
                } else {
                        continue;
                }
                pl->has_req[r] = true;
                pl->n_requests++;
                req_named = true;
        }
        pl->requests_set = req_named;
}

/* resourceQOS over one set of requirements, for cpu and memory: a request
 * unequal to its limit is Burstable; both zero (or absent) is BestEffort;
 * every resource the same way decides; empty maps are BestEffort. */
static enum k8s_qos_class pod_level_qos(const struct pod_level *pl)
{
        if (pl->n_requests == 0 && pl->n_limits == 0)
                return K8S_QOS_BEST_EFFORT;
        int q = -1;
        for (int r = 0; r < 2; r++) {
                int64_t req = pl->has_req[r] ? pl->req[r] : 0;
                int64_t lim = pl->has_lim[r] ? pl->lim[r] : 0;
                if (req != lim)
                        return K8S_QOS_BURSTABLE;
                int cls = req == 0 ? K8S_QOS_BEST_EFFORT : K8S_QOS_GUARANTEED;
                if (q < 0)
                        q = cls;
                else if (q != cls)
                        return K8S_QOS_BURSTABLE;
        }
        return (enum k8s_qos_class)q;
}

enum k8s_qos_class k8s_pod_qos(const struct k8s_pod *pod)
{
        /* ComputePodQOS: spec.resources, when present, decides alone */
        if (pod->spec.has_resources) {
                struct pod_level pl;
                pod_level(pod, &pl);
                return pod_level_qos(&pl);
        }
        return containers_qos(pod);
}

void k8s_pod_requests(const struct k8s_pod *pod, struct k8s_resource_totals *ret)
{
        struct agg a;
        struct pod_level pl;
        aggregate(pod, false, &a, NULL, NULL);
        pod_level(pod, &pl);
        /* PodRequests: pod-level requests replace the containers' sum */
        if (pl.requests_set)
                for (int r = 0; r < 2; r++)
                        if (pl.has_req[r])
                                a.v[r] = pl.req[r];
        for (int r = 0; r < R_N; r++)
                a.v[r] = sat_add(
                    a.v[r], k8s_resource_amount(&pod->spec.overhead, res_names[r], NULL), &a.sat);
        to_totals(&a, ret);
}

void k8s_pod_limits(const struct k8s_pod *pod, struct k8s_resource_totals *ret, bool *cpu_declared,
                    bool *memory_declared)
{
        struct agg a;
        struct pod_level pl;
        bool cpu_all, mem_all;
        aggregate(pod, true, &a, &cpu_all, &mem_all);
        pod_level(pod, &pl);
        /* PodLimits: pod-level limits replace the containers' sum; and
         * ResourceConfigForPod counts a non-zero pod-level limit as declared */
        if (pl.set)
                for (int r = 0; r < 2; r++)
                        if (pl.has_lim[r]) {
                                a.v[r] = pl.lim[r];
                                a.has[r] = true;
                                if (pl.lim[r] > 0 && r == R_CPU)
                                        cpu_all = true;
                                if (pl.lim[r] > 0 && r == R_MEM)
                                        mem_all = true;
                        }
        /* overhead goes to the limits that are set and non-zero */
        for (int r = 0; r < R_N; r++)
                if (a.has[r] && a.v[r] != 0)
                        a.v[r] = sat_add(
                            a.v[r], k8s_resource_amount(&pod->spec.overhead, res_names[r], NULL),
                            &a.sat);
        to_totals(&a, ret);
        if (cpu_declared != NULL)
                *cpu_declared = cpu_all;
        if (memory_declared != NULL)
                *memory_declared = mem_all;
}

int64_t k8s_container_effective_limit(const struct k8s_pod *pod, const struct k8s_container *c,
                                      const char *name)
{
        int64_t v = k8s_container_limit(c, name);
        if (v > 0 || !k8s_pod_level_resources_set(pod) ||
            (strcmp(name, RES_CPU) != 0 && strcmp(name, RES_MEMORY) != 0))
                return v;
        return k8s_resource_amount(&pod->spec.resources.limits, name, NULL);
}

int64_t k8s_container_downward_limit(const struct k8s_pod *pod, const struct k8s_container *c,
                                     const char *name, int64_t node_allocatable)
{
        int64_t v = k8s_container_limit(c, name);
        if (v > 0)
                return v;
        /* defaultPodLimitsForDownwardAPI: a non-zero pod-level limit, for
         * the resources supported at pod level, before the allocatable */
        if (k8s_pod_level_limits_set(pod) && pod_level_name(name)) {
                int64_t p = k8s_resource_amount(&pod->spec.resources.limits, name, NULL);
                if (p > 0)
                        return p;
        }
        return node_allocatable;
}

bool k8s_pod_is_node_critical(const struct k8s_pod *pod)
{
        if (pod->spec.priority_class_name == NULL ||
            strcmp(pod->spec.priority_class_name, "system-node-critical") != 0)
                return false;
        if (k8s_pod_is_static(pod))
                return true;
        const struct k8s_map *ann = &pod->meta.annotations;
        for (size_t i = 0; i < ann->n; i++)
                if (ann->items[i].key != NULL &&
                    strcmp(ann->items[i].key, "kubernetes.io/config.mirror") == 0)
                        return true;
        return pod->spec.has_priority && pod->spec.priority >= K8S_SYSTEM_CRITICAL_PRIORITY;
}

/* 1000 - 1000*req/capacity with Go's truncating division, in 128 bits so a
 * huge request cannot overflow. */
static int64_t burstable_score(int64_t req, int64_t capacity)
{
        __int128 q = (__int128)1000 * req / capacity;
        __int128 s = 1000 - q;
        if (s < -1000000)
                s = -1000000; /* only compared against 3 below */
        return (int64_t)s;
}

int k8s_oom_score_adj(const struct k8s_pod *pod, const struct k8s_container *c,
                      int64_t node_memory_capacity)
{
        if (k8s_pod_is_node_critical(pod))
                return -997;
        switch (k8s_pod_qos(pod)) {
        case K8S_QOS_GUARANTEED:
                return -997;
        case K8S_QOS_BEST_EFFORT:
                return 1000;
        case K8S_QOS_BURSTABLE:
                break;
        }
        if (node_memory_capacity <= 0)
                return 999;
        /* With pod-level requests, the part of the pod's memory request the
         * containers do not request is shared equally among all of them
         * (init containers included) (remainingPodMemReqPerContainer). */
        struct pod_level pl;
        pod_level(pod, &pl);
        int64_t remaining = 0;
        if (pl.requests_set && pl.has_req[R_MEM] && pl.req[R_MEM] != 0) {
                struct agg a;
                aggregate(pod, false, &a, NULL, NULL);
                int64_t n = (int64_t)(pod->spec.n_containers + pod->spec.n_init_containers);
                if (n > 0)
                        remaining = (pl.req[R_MEM] - a.v[R_MEM]) / n;
        }
        bool sat = false;
        int64_t score = burstable_score(
            sat_add(k8s_container_request(c, RES_MEMORY), remaining, &sat), node_memory_capacity);

        /* A sidecar (restartPolicy Always, listed among the init containers)
         * gets at most the score of the smallest regular container request. */
        bool sidecar = false;
        if (k8s_container_is_sidecar(c) && c->name != NULL)
                for (size_t i = 0; i < pod->spec.n_init_containers; i++)
                        if (pod->spec.init_containers[i].name != NULL &&
                            strcmp(pod->spec.init_containers[i].name, c->name) == 0)
                                sidecar = true;
        if (sidecar && pod->spec.n_containers > 0) {
                int64_t min = k8s_container_request(&pod->spec.containers[0], RES_MEMORY);
                for (size_t i = 1; i < pod->spec.n_containers; i++) {
                        int64_t v = k8s_container_request(&pod->spec.containers[i], RES_MEMORY);
                        if (v < min)
                                min = v;
                }
                int64_t m = burstable_score(sat_add(min, remaining, &sat), node_memory_capacity);
                if (score > m)
                        score = m;
        }
        if (score < 1000 - 997)
                return 1000 - 997;
        if (score == 1000)
                return 999;
        return (int)score;
}

static int check_component(const char *what, const char *s, struct cb_error *err)
{
        if (s == NULL || s[0] == '\0')
                return cb_error_set(err, 0, "%s is missing: a cgroup path needs it", what);
        if (strchr(s, '/') != NULL || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
                return cb_error_set(err, 0, "%s \"%.64s\" cannot be a cgroup path component", what,
                                    s);
        return 0;
}

void k8s_container_cgroup_limits(const struct k8s_pod *pod, const struct k8s_container *c,
                                 struct cg_limits *out)
{
        /* calculateLinuxResources: shares from the request, or from the
         * limit when there is no request; 2 when neither. The limits are
         * the container's own, or with pod-level resources set the pod's
         * where the container has none (getCPULimit/getMemoryLimit), so a
         * container without a request takes its shares from the pod-level
         * cpu limit. */
        memset(out, 0, sizeof(*out));
        int64_t cpu_limit = k8s_container_effective_limit(pod, c, RES_CPU);
        bool has_request = false;
        int64_t cpu_request = k8s_resource_amount(&c->resources.requests, RES_CPU, &has_request);
        out->cpu_shares = cg_milli_cpu_to_shares(has_request ? cpu_request : cpu_limit);
        int64_t quota = cg_milli_cpu_to_quota(cpu_limit, CG_QUOTA_PERIOD_US);
        if (quota > 0) {
                out->cpu_quota_us = quota;
                out->cpu_period_us = CG_QUOTA_PERIOD_US;
        }
        out->memory_limit = k8s_container_effective_limit(pod, c, RES_MEMORY);
}

static int container_plan(const struct k8s_pod *pod, const struct k8s_container *c, bool init,
                          const char *pod_path, int64_t mem_capacity,
                          struct k8s_container_cgroup *out, struct cb_error *err)
{
        out->container = c;
        out->init = init;
        if (check_component(init ? "spec.initContainers[].name" : "spec.containers[].name", c->name,
                            err) < 0)
                return -1;
        int n = snprintf(out->path, sizeof(out->path), "%s/%s", pod_path, c->name);
        if (n < 0 || (size_t)n >= sizeof(out->path))
                return cb_error_set(err, 0, "container %s: cgroup path is longer than %d bytes",
                                    c->name, K8S_CGROUP_PATH_MAX - 1);

        k8s_container_cgroup_limits(pod, c, &out->limits);
        out->oom_score_adj = k8s_oom_score_adj(pod, c, mem_capacity);
        return 0;
}

int k8s_pod_cgroup_plan(const struct k8s_pod *pod, int64_t node_memory_capacity,
                        int64_t pod_pids_limit, const char *cgroup_root,
                        struct k8s_pod_cgroup_plan *ret, struct cb_error *err)
{
        struct k8s_pod_cgroup_plan p;
        memset(&p, 0, sizeof(p));
        if (check_component("metadata.uid", pod->meta.uid, err) < 0)
                return -1;

        p.qos = k8s_pod_qos(pod);
        p.tier = k8s_qos_tier(p.qos);
        int n = cg_pod_path(cgroup_root, p.tier, pod->meta.uid, p.path, sizeof(p.path));
        if (n < 0 || (size_t)n >= sizeof(p.path))
                return cb_error_set(
                    err, 0, "pod cgroup path under \"%.64s\" is longer than %d bytes",
                    cgroup_root != NULL ? cgroup_root : "", K8S_CGROUP_PATH_MAX - 1);

        struct k8s_resource_totals req, lim;
        bool cpu_declared, mem_declared;
        k8s_pod_requests(pod, &req);
        k8s_pod_limits(pod, &lim, &cpu_declared, &mem_declared);
        if (req.saturated || lim.saturated)
                return cb_error_set(err, 0,
                                    "the pod's summed requests or limits exceed 2^63-1: "
                                    "lower spec.containers[].resources or spec.resources");

        int64_t quota = cg_milli_cpu_to_quota(lim.milli_cpu, CG_QUOTA_PERIOD_US);
        switch (p.qos) {
        case K8S_QOS_GUARANTEED:
                p.limits.cpu_shares = cg_milli_cpu_to_shares(req.milli_cpu);
                p.limits.cpu_quota_us = quota;
                p.limits.cpu_period_us = CG_QUOTA_PERIOD_US;
                p.limits.memory_limit = lim.memory;
                break;
        case K8S_QOS_BURSTABLE:
                p.limits.cpu_shares = cg_milli_cpu_to_shares(req.milli_cpu);
                if (cpu_declared) {
                        p.limits.cpu_quota_us = quota;
                        p.limits.cpu_period_us = CG_QUOTA_PERIOD_US;
                }
                if (mem_declared)
                        p.limits.memory_limit = lim.memory;
                break;
        case K8S_QOS_BEST_EFFORT:
                p.limits.cpu_shares = CG_MIN_SHARES;
                break;
        }
        if (pod_pids_limit > 0)
                p.limits.pids_limit = pod_pids_limit;

        size_t total = pod->spec.n_init_containers + pod->spec.n_containers;
        if (total > 0) {
                p.containers = calloc(total, sizeof(*p.containers));
                if (p.containers == NULL)
                        return cb_error_set(err, ENOMEM, "cgroup plan for %zu containers", total);
        }
        for (size_t i = 0; i < total; i++) {
                bool init = i < pod->spec.n_init_containers;
                const struct k8s_container *c =
                    init ? &pod->spec.init_containers[i]
                         : &pod->spec.containers[i - pod->spec.n_init_containers];
                if (container_plan(pod, c, init, p.path, node_memory_capacity, &p.containers[i],
                                   err) < 0) {
                        free(p.containers);
                        return -1;
                }
                p.n_containers++;
        }
        *ret = p;
        return 0;
}

void k8s_pod_cgroup_plan_free(struct k8s_pod_cgroup_plan *plan)
{
        if (plan == NULL)
                return;
        free(plan->containers);
        plan->containers = NULL;
        plan->n_containers = 0;
}
