/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/pods/statusgen.h"

#include <stdlib.h>
#include <string.h>

#include "agent/k8s/qos.h"
#include "agent/k8s/quantity.h"
#include "lib/arena.h"
#include "lib/cleanup.h"

#define REASON_COPY 256

static enum st_restart_policy restart_policy(enum k8s_restart_policy p)
{
        switch (p) {
        case K8S_RESTART_ON_FAILURE:
                return ST_RESTART_ON_FAILURE;
        case K8S_RESTART_NEVER:
                return ST_RESTART_NEVER;
        case K8S_RESTART_ALWAYS:
                break;
        }
        return ST_RESTART_ALWAYS;
}

/* ---- resources, allocatedResources, volumeMounts ------------------------------------- */

/* cm.MinShares and cm.MinMilliCPULimit: at or below these, the runtime's
 * value says nothing the allocation does not, and the allocation is kept. */
#define MIN_SHARES          2
#define MIN_MILLI_CPU_LIMIT 10
#define QTY_TEXT_MAX        64

struct qlist {
        struct st_quantity *items;
        size_t n, cap;
};

static const char *quantity_text(struct cb_arena *a, const struct k8s_quantity *q)
{
        char buf[QTY_TEXT_MAX];
        k8s_quantity_format(q, buf, sizeof(buf));
        return cb_arena_strdup(a, buf);
}

/* resource.NewMilliQuantity(m, DecimalSI): "100m", "1", "2500m". */
static const char *milli_cpu_text(struct cb_arena *a, int64_t milli)
{
        struct k8s_quantity q = {.set = true,
                                 .milli = milli,
                                 .value = milli / 1000 + (milli % 1000 != 0),
                                 .format = K8S_QF_DECIMAL_SI};
        return quantity_text(a, &q);
}

/* resource.NewQuantity(bytes, BinarySI) as the apiserver stores it: the
 * kubelet writes "70Mi" for a multiple of 1024 and the bare integer
 * ("5000000") otherwise, which the apiserver parses as DecimalSI and keeps
 * as "5M". */
static const char *memory_bytes_text(struct cb_arena *a, int64_t bytes)
{
        struct k8s_quantity q = {.set = true,
                                 .value = bytes,
                                 .format = bytes >= 1024 && bytes % 1024 == 0 ? K8S_QF_BINARY_SI
                                                                              : K8S_QF_DECIMAL_SI};
        if (bytes > INT64_MAX / 1000)
                q.milli_saturated = true, q.milli = INT64_MAX;
        else
                q.milli = bytes * 1000;
        return quantity_text(a, &q);
}

/* A copy of a spec list with canonical texts, room for `extra` more. */
static int qlist_copy(struct cb_arena *a, const struct k8s_resource_list *l, size_t extra,
                      struct qlist *out)
{
        out->n = 0;
        out->cap = l->n + extra;
        out->items = cb_arena_calloc(a, out->cap + 1, sizeof(*out->items));
        if (out->items == NULL)
                return -1;
        for (size_t i = 0; i < l->n; i++) {
                const char *v = quantity_text(a, &l->items[i].q);
                if (v == NULL)
                        return -1;
                out->items[out->n++] = (struct st_quantity){.name = l->items[i].name, .value = v};
        }
        return 0;
}

static int qlist_set(struct qlist *l, const char *name, const char *value)
{
        if (value == NULL)
                return -1;
        for (size_t i = 0; i < l->n; i++)
                if (l->items[i].name != NULL && strcmp(l->items[i].name, name) == 0) {
                        l->items[i].value = value;
                        return 0;
                }
        if (l->n >= l->cap)
                return -1;
        l->items[l->n++] = (struct st_quantity){.name = name, .value = value};
        return 0;
}

/*
 * convertContainerStatusResources (InPlacePodVerticalScaling, GA in 1.35).
 * Only a container the runtime has (created, running or exited) gets the
 * fields. The allocation is the spec: cubelet does not resize in place.
 * allocatedResources = the allocated requests. resources = the allocated
 * requests and limits; for a running container, the cpu request, cpu limit
 * and memory limit are what the runtime reports (the container's cgroup
 * config: shares back to milli-cpu rounded up, quota/period, bytes), where
 * the allocation has requests (resp. limits) at all; a cpu value stays the
 * allocated one when both it and the runtime's are at or below the
 * minimum the kernel can tell apart (2 shares, 10m of quota).
 */
static int container_resources(const struct k8s_pod *pod, const struct k8s_container *c,
                               const struct ag_container_obs *o, struct cb_arena *a,
                               struct st_container *s)
{
        const struct k8s_resources *r = &c->resources;
        struct qlist alloc, req, lim;
        if (qlist_copy(a, &r->requests, 0, &alloc) < 0 ||
            qlist_copy(a, &r->requests, 1, &req) < 0 || qlist_copy(a, &r->limits, 2, &lim) < 0)
                return -1;
        if (o->state.kind == ST_STATE_RUNNING) {
                struct cg_limits cl;
                k8s_container_cgroup_limits(pod, c, &cl);
                if (r->limits.n > 0) {
                        int64_t milli = cl.cpu_period_us > 0 && cl.cpu_quota_us > 0
                                            ? cl.cpu_quota_us * 1000 / (int64_t)cl.cpu_period_us
                                            : 0;
                        if (milli > 0 &&
                            (milli > MIN_MILLI_CPU_LIMIT ||
                             k8s_resource_amount(&r->limits, "cpu", NULL) > MIN_MILLI_CPU_LIMIT) &&
                            qlist_set(&lim, "cpu", milli_cpu_text(a, milli)) < 0)
                                return -1;
                        if (cl.memory_limit > 0 &&
                            qlist_set(&lim, "memory", memory_bytes_text(a, cl.memory_limit)) < 0)
                                return -1;
                }
                if (r->requests.n > 0 && cl.cpu_shares >= MIN_SHARES) {
                        int64_t milli = (int64_t)((cl.cpu_shares * 1000 + 1023) / 1024);
                        if ((milli > MIN_SHARES ||
                             k8s_resource_amount(&r->requests, "cpu", NULL) > MIN_SHARES) &&
                            qlist_set(&req, "cpu", milli_cpu_text(a, milli)) < 0)
                                return -1;
                }
                /* the memory request is the one the container was started
                 * with, which is the allocated one */
        }
        s->allocated = (struct st_resource_list){alloc.items, alloc.n};
        s->has_resources = true;
        s->requests = (struct st_resource_list){req.items, req.n};
        s->limits = (struct st_resource_list){lim.items, lim.n};
        return 0;
}

struct conv {
        struct st_container *init, *regular;
        struct st_condition *conds, *own;
        const char **gates;
        struct cb_arena *arena; /* quantity texts, volume mounts */
        cJSON *api;             /* the pod's JSON, parsed when needed (old_container_status) */
};

/* The previous status of a container: this agent's last status, else the
 * API's (the kubelet's status manager cache, else pod.Status). */
static const cJSON *old_container_status(const struct k8s_pod *pod, const struct ag_pod_obs *obs,
                                         struct conv *cv, bool init, const char *name)
{
        const cJSON *st = obs->own_status;
        if (st == NULL) {
                if (cv->api == NULL)
                        cv->api = k8s_pod_json_parse(pod);
                st = cJSON_GetObjectItemCaseSensitive(cv->api, "status");
        }
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(st, init ? "initContainerStatuses"
                                                                     : "containerStatuses");
        const cJSON *it;
        cJSON_ArrayForEach(it, arr)
        {
                const char *n = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "name"));
                if (n != NULL && name != NULL && strcmp(n, name) == 0)
                        return it;
        }
        return NULL;
}

/*
 * volumeMounts (RecursiveReadOnlyMounts, GA): the default status of every
 * container lists its spec's mounts (recursiveReadOnly "Disabled" on the
 * read-only ones: cubelet refuses Enabled and IfPossible resolves to
 * Disabled, its runtime having no recursive read-only mounts); a container
 * the runtime has takes them from its previous status instead ("immutable"),
 * so one first reported already created, as a static pod's container before
 * the apiserver was reachable, has none.
 */
static int container_volume_mounts(const struct k8s_pod *pod, const struct ag_pod_obs *obs,
                                   const struct k8s_container *c, const struct ag_container_obs *o,
                                   bool init, struct conv *cv, struct st_container *s)
{
        struct cb_arena *a = cv->arena;
        struct st_volume_mount *vm;
        size_t n = 0;
        if (o == NULL || !o->known) {
                vm = cb_arena_calloc(a, c->n_volume_mounts + 1, sizeof(*vm));
                if (vm == NULL)
                        return -1;
                for (size_t i = 0; i < c->n_volume_mounts; i++) {
                        const struct k8s_volume_mount *m = &c->volume_mounts[i];
                        vm[n++] = (struct st_volume_mount){
                            .name = m->name,
                            .mount_path = m->mount_path,
                            .read_only = m->read_only,
                            .recursive_read_only = m->read_only ? "Disabled" : NULL,
                        };
                }
        } else {
                const cJSON *old = old_container_status(pod, obs, cv, init, c->name);
                const cJSON *arr = cJSON_GetObjectItemCaseSensitive(old, "volumeMounts");
                vm = cb_arena_calloc(a, (size_t)cJSON_GetArraySize(arr) + 1, sizeof(*vm));
                if (vm == NULL)
                        return -1;
                const cJSON *it;
                cJSON_ArrayForEach(it, arr)
                {
                        vm[n++] = (struct st_volume_mount){
                            .name =
                                cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "name")),
                            .mount_path = cJSON_GetStringValue(
                                cJSON_GetObjectItemCaseSensitive(it, "mountPath")),
                            .read_only =
                                cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "readOnly")),
                            .recursive_read_only = cJSON_GetStringValue(
                                cJSON_GetObjectItemCaseSensitive(it, "recursiveReadOnly")),
                        };
                }
        }
        s->volume_mounts = vm;
        s->n_volume_mounts = n;
        return 0;
}

static void to_st(const struct k8s_container *c, const struct ag_container_obs *o, bool init,
                  struct st_container *s)
{
        memset(s, 0, sizeof(*s));
        s->name = c->name;
        s->image = c->image;
        s->is_sidecar = init && k8s_container_is_sidecar(c);
        s->has_startup_probe = c->startup_probe.present;
        s->has_readiness_probe = c->readiness_probe.present;
        if (o == NULL)
                return;
        s->has_status = o->known;
        if (o->image != NULL)
                s->image = o->image;
        s->image_id = o->image_id;
        s->container_id = o->container_id;
        s->state = o->state;
        s->last_state = o->last_state;
        s->restart_count = o->restart_count;
        s->startup_succeeded = o->startup_succeeded;
        s->readiness_succeeded = o->readiness_succeeded;
        /* user: only for a container the runtime has (the CRI status's) */
        if (o->known && o->has_user) {
                s->has_user = true;
                s->uid = o->uid;
                s->gid = o->gid;
                s->supplemental_groups = o->groups;
                s->n_supplemental_groups = o->n_groups;
        }
        /* An agent-set waiting reason before the first start counts as a
         * status (the kubelet's reason cache). */
        if (!o->known && o->state.kind == ST_STATE_WAITING && o->state.reason != NULL)
                s->has_status = true;
}

static void conv_free(struct conv *c)
{
        cb_arena_free(c->arena);
        cJSON_Delete(c->api);
        free(c->init);
        free(c->regular);
        free(c->conds);
        free(c->own);
        free(c->gates);
}

static int64_t parse_time(const char *s)
{
        int64_t t = 0;
        if (s != NULL && st_time_parse(s, &t, NULL) < 0)
                t = 0;
        return t;
}

static int container_extras(const struct k8s_pod *pod, const struct ag_pod_obs *obs,
                            const struct k8s_container *c, const struct ag_container_obs *o,
                            bool init, struct conv *cv, struct st_container *s)
{
        if (o != NULL && o->known && container_resources(pod, c, o, cv->arena, s) < 0)
                return -1;
        return container_volume_mounts(pod, obs, c, o, init, cv, s);
}

/* with_extras: also the container statuses' resources and volumeMounts
 * (the status object needs them, the phase does not). */
static int build_input(const struct k8s_pod *pod, const struct ag_pod_obs *obs, int64_t now,
                       bool with_extras, struct st_pod_input *in, struct conv *cv)
{
        const struct k8s_pod_spec *sp = &pod->spec;
        memset(in, 0, sizeof(*in));
        memset(cv, 0, sizeof(*cv));
        if (with_extras && (cv->arena = cb_arena_new(0)) == NULL)
                return -1;
        cv->init = calloc(sp->n_init_containers + 1, sizeof(*cv->init));
        cv->regular = calloc(sp->n_containers + 1, sizeof(*cv->regular));
        size_t n_conds = pod->status.n_conditions + obs->n_extra_conditions;
        cv->conds = calloc(n_conds + 1, sizeof(*cv->conds));
        cv->gates = calloc(sp->n_readiness_gates + 1, sizeof(*cv->gates));
        if (!cv->init || !cv->regular || !cv->conds || !cv->gates)
                return -1;
        if (obs->own_status != NULL) {
                /* the conditions of our own last status, for their times */
                const cJSON *oc = cJSON_GetObjectItemCaseSensitive(obs->own_status, "conditions");
                size_t n_own = 0;
                cv->own = calloc((size_t)cJSON_GetArraySize(oc) + 1, sizeof(*cv->own));
                if (cv->own == NULL)
                        return -1;
                const cJSON *it;
                cJSON_ArrayForEach(it, oc)
                {
                        const char *type =
                            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "type"));
                        if (type == NULL)
                                continue;
                        cv->own[n_own++] = (struct st_condition){
                            .type = type,
                            .status = cJSON_GetStringValue(
                                cJSON_GetObjectItemCaseSensitive(it, "status")),
                            .last_transition_time = parse_time(cJSON_GetStringValue(
                                cJSON_GetObjectItemCaseSensitive(it, "lastTransitionTime"))),
                        };
                }
                in->has_own = true;
                in->own_conditions = cv->own;
                in->n_own_conditions = n_own;
        }
        for (size_t i = 0; i < sp->n_init_containers; i++) {
                const struct ag_container_obs *o =
                    obs->init_containers ? &obs->init_containers[i] : NULL;
                to_st(&sp->init_containers[i], o, true, &cv->init[i]);
                if (with_extras && container_extras(pod, obs, &sp->init_containers[i], o, true, cv,
                                                    &cv->init[i]) < 0)
                        return -1;
        }
        for (size_t i = 0; i < sp->n_containers; i++) {
                const struct ag_container_obs *o = obs->containers ? &obs->containers[i] : NULL;
                to_st(&sp->containers[i], o, false, &cv->regular[i]);
                if (with_extras && container_extras(pod, obs, &sp->containers[i], o, false, cv,
                                                    &cv->regular[i]) < 0)
                        return -1;
        }
        size_t k = 0;
        for (size_t i = 0; i < pod->status.n_conditions; i++) {
                const struct k8s_condition *c = &pod->status.conditions[i];
                bool replaced = false;
                for (size_t j = 0; j < obs->n_extra_conditions; j++)
                        if (c->type && strcmp(c->type, obs->extra_conditions[j].type) == 0)
                                replaced = true;
                if (replaced || c->type == NULL)
                        continue;
                cv->conds[k++] = (struct st_condition){
                    .type = c->type,
                    .status = c->status,
                    .reason = c->reason,
                    .message = c->message,
                    .last_transition_time = parse_time(c->last_transition_time),
                    .last_probe_time = parse_time(c->last_probe_time),
                };
        }
        for (size_t j = 0; j < obs->n_extra_conditions; j++) {
                struct st_condition c = obs->extra_conditions[j];
                /* lastTransitionTime moves only when the status flips. */
                if (c.last_transition_time == 0) {
                        c.last_transition_time = now;
                        for (size_t i = 0; !in->has_own && i < pod->status.n_conditions; i++) {
                                const struct k8s_condition *old = &pod->status.conditions[i];
                                if (old->type && strcmp(old->type, c.type) == 0 && old->status &&
                                    c.status && strcmp(old->status, c.status) == 0 &&
                                    old->last_transition_time)
                                        c.last_transition_time =
                                            parse_time(old->last_transition_time);
                        }
                        for (size_t i = 0; in->has_own && i < in->n_own_conditions; i++) {
                                const struct st_condition *old = &in->own_conditions[i];
                                if (strcmp(old->type, c.type) == 0 && old->status && c.status &&
                                    strcmp(old->status, c.status) == 0 && old->last_transition_time)
                                        c.last_transition_time = old->last_transition_time;
                        }
                }
                cv->conds[k++] = c;
        }
        for (size_t i = 0; i < sp->n_readiness_gates; i++)
                cv->gates[i] = sp->readiness_gates[i];

        in->restart_policy = restart_policy(sp->restart_policy);
        in->is_static = k8s_pod_is_static(pod);
        in->is_terminal = obs->is_terminal;
        in->cached_phase = obs->cached_phase;
        in->api_phase = st_phase_from_name(pod->status.phase);
        in->readiness_gates = cv->gates;
        in->n_readiness_gates = sp->n_readiness_gates;
        in->conditions = cv->conds;
        in->n_conditions = k;
        in->sandbox_ready = obs->sandbox_ready;
        in->init_containers = cv->init;
        in->n_init_containers = sp->n_init_containers;
        in->containers = cv->regular;
        in->n_containers = sp->n_containers;
        return 0;
}

/* A sync handler's verdict (activeDeadlineSeconds, eviction) overrides the
 * phase computed from the containers on every computation, as the kubelet
 * re-applies its sync handlers on every sync: a container that exits 0 on
 * the stop signal does not make a pod past its deadline Succeeded. The
 * caller sets the verdict only for a pod that was not terminal already. */
static bool forced_applies(const struct k8s_pod *pod, const struct ag_pod_obs *obs)
{
        (void)pod;
        return obs->forced_phase != ST_PHASE_NONE;
}

enum st_phase ag_pod_phase(const struct k8s_pod *pod, const struct ag_pod_obs *obs)
{
        struct st_pod_input in;
        struct conv cv;
        enum st_phase phase = ST_PHASE_PENDING;
        if (build_input(pod, obs, 0, false, &in, &cv) == 0) {
                phase = obs->rejected ? ST_PHASE_FAILED : st_compute_phase(&in);
                if (forced_applies(pod, obs))
                        phase = obs->forced_phase;
        }
        conv_free(&cv);
        return phase;
}

static void add_time(cJSON *o, const char *key, int64_t t)
{
        char buf[ST_TIME_MAX];
        if (t != 0 && st_time_format(t, buf, sizeof(buf), NULL) == 0)
                cJSON_AddStringToObject(o, key, buf);
}

static void add_ips(cJSON *status, const char *one, const char *many, const char *const *ips,
                    size_t n)
{
        if (n == 0)
                return;
        cJSON_AddStringToObject(status, one, ips[0]);
        cJSON *arr = cJSON_AddArrayToObject(status, many);
        for (size_t i = 0; i < n && arr; i++) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "ip", ips[i]);
                cJSON_AddItemToArray(arr, o);
        }
}

cJSON *ag_pod_status_json(const struct k8s_pod *pod, const struct ag_pod_obs *obs, int64_t now)
{
        struct st_pod_input in;
        struct conv cv;
        _cleanup_cjson_ cJSON *st = NULL;
        if (build_input(pod, obs, now, true, &in, &cv) < 0)
                goto out;
        enum st_phase phase = st_compute_phase(&in);
        bool forced = forced_applies(pod, obs);
        if (forced)
                phase = obs->forced_phase;
        st = cJSON_CreateObject();
        if (st == NULL)
                goto out;
        if (obs->rejected) {
                cJSON_AddStringToObject(st, "phase", "Failed");
                if (obs->message)
                        cJSON_AddStringToObject(st, "message", obs->message);
                if (obs->reason)
                        cJSON_AddStringToObject(st, "reason", obs->reason);
                add_time(st, "startTime", obs->start_time);
                cJSON_AddStringToObject(st, "qosClass", k8s_qos_name(k8s_pod_qos(pod)));
                conv_free(&cv);
                return steal_pointer(&st);
        }
        cJSON_AddStringToObject(st, "phase", st_phase_name(phase));
        cJSON *conds = st_conditions_json(&in, phase, now);
        if (conds == NULL)
                goto fail;
        cJSON_AddItemToObject(st, "conditions", conds);
        /* reason/message: the verdict's, or kept from the API while the phase
         * is unchanged (generateAPIPodStatus). */
        const char *reason = forced ? obs->reason : NULL;
        const char *message = forced ? obs->message : NULL;
        if (!forced && pod->status.phase && strcmp(pod->status.phase, st_phase_name(phase)) == 0) {
                reason = pod->status.reason;
                message = pod->status.message;
        }
        if (message && message[0])
                cJSON_AddStringToObject(st, "message", message);
        if (reason && reason[0])
                cJSON_AddStringToObject(st, "reason", reason);
        add_ips(st, "hostIP", "hostIPs", obs->host_ips, obs->n_host_ips);
        /* hostNetwork pods get the node's IPs. */
        if (pod->spec.host_network)
                add_ips(st, "podIP", "podIPs", obs->host_ips, obs->n_host_ips);
        else
                add_ips(st, "podIP", "podIPs", obs->pod_ips, obs->n_pod_ips);
        add_time(st, "startTime", obs->start_time);
        bool has_init = pod->spec.n_init_containers > 0;
        if (has_init) {
                cJSON *ic =
                    st_container_statuses_json(cv.init, pod->spec.n_init_containers, true, true);
                if (ic == NULL)
                        goto fail;
                cJSON_AddItemToObject(st, "initContainerStatuses", ic);
        }
        cJSON *cs = st_container_statuses_json(cv.regular, pod->spec.n_containers, false, has_init);
        if (cs == NULL)
                goto fail;
        cJSON_AddItemToObject(st, "containerStatuses", cs);
        cJSON_AddStringToObject(st, "qosClass", k8s_qos_name(k8s_pod_qos(pod)));
        st_normalize_termination_messages(
            st,
            st_termination_message_budget(pod->spec.n_init_containers + pod->spec.n_containers));
        conv_free(&cv);
        return steal_pointer(&st);
fail:
        cJSON_Delete(steal_pointer(&st));
out:
        conv_free(&cv);
        return NULL;
}

static bool phase_name_terminal(const char *p)
{
        return p != NULL && (strcmp(p, "Failed") == 0 || strcmp(p, "Succeeded") == 0);
}

static void set_or_drop(cJSON *o, const char *key, const char *value)
{
        if (value == NULL || value[0] == '\0') {
                cJSON_DeleteItemFromObjectCaseSensitive(o, key);
                return;
        }
        cJSON *s = cJSON_CreateString(value);
        if (s == NULL)
                return;
        if (cJSON_GetObjectItemCaseSensitive(o, key) != NULL)
                cJSON_ReplaceItemInObjectCaseSensitive(o, key, s);
        else
                cJSON_AddItemToObject(o, key, s);
}

bool ag_pod_status_hold_terminal(cJSON *status, const char *old_phase, const char *old_reason,
                                 const char *old_message, bool could_have_running)
{
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(status, "phase");
        if (!could_have_running || !cJSON_IsString(ph) || !phase_name_terminal(ph->valuestring) ||
            phase_name_terminal(old_phase))
                return false;
        /* Copies first: the old strings may live in a status being replaced. */
        char phase[16], reason[REASON_COPY], *message = NULL;
        snprintf(phase, sizeof(phase), "%s", old_phase && old_phase[0] ? old_phase : "Pending");
        snprintf(reason, sizeof(reason), "%s", old_reason ? old_reason : "");
        if (old_message != NULL && (message = strdup(old_message)) == NULL)
                return false;
        set_or_drop(status, "phase", phase);
        set_or_drop(status, "reason", reason);
        set_or_drop(status, "message", message);
        free(message);
        return true;
}

cJSON *ag_status_patch_body(const struct k8s_pod *pod, cJSON *status)
{
        cJSON *body = cJSON_CreateObject();
        if (body == NULL) {
                cJSON_Delete(status);
                return NULL;
        }
        cJSON *meta = cJSON_AddObjectToObject(body, "metadata");
        if (meta != NULL && pod->meta.uid != NULL)
                cJSON_AddStringToObject(meta, "uid", pod->meta.uid);
        cJSON_AddItemToObject(body, "status", status);
        return body;
}
