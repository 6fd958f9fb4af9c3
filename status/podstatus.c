/* SPDX-License-Identifier: Apache-2.0 */
#include "status/podstatus.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/cleanup.h"

static const char *str_or_empty(const char *s)
{
        return s != NULL ? s : "";
}

static bool str_set(const char *s)
{
        return s != NULL && s[0] != '\0';
}

static bool str_eq(const char *a, const char *b)
{
        return strcmp(str_or_empty(a), str_or_empty(b)) == 0;
}

/* ---- phase names ---------------------------------------------------------------------- */

static const char *const phase_names[] = {
    [ST_PHASE_NONE] = "",           [ST_PHASE_PENDING] = "Pending",
    [ST_PHASE_RUNNING] = "Running", [ST_PHASE_SUCCEEDED] = "Succeeded",
    [ST_PHASE_FAILED] = "Failed",   [ST_PHASE_UNKNOWN] = "Unknown",
};

const char *st_phase_name(enum st_phase phase)
{
        if ((size_t)phase >= CB_ARRAY_SIZE(phase_names))
                return "";
        return phase_names[phase];
}

enum st_phase st_phase_from_name(const char *name)
{
        if (!str_set(name))
                return ST_PHASE_NONE;
        for (size_t i = 1; i < CB_ARRAY_SIZE(phase_names); i++)
                if (strcmp(name, phase_names[i]) == 0)
                        return (enum st_phase)i;
        return ST_PHASE_NONE;
}

static bool phase_terminal(enum st_phase p)
{
        return p == ST_PHASE_SUCCEEDED || p == ST_PHASE_FAILED;
}

/* ---- the state the API will show ------------------------------------------------------ */

/* The kubelet gives every spec container a status: one the runtime never
 * saw gets the default waiting state, and a runtime state it cannot map
 * collapses to waiting{}. getPhase and the condition generators then run
 * over those API statuses, so every decision here uses this view. */
static enum st_state_kind effective_kind(const struct st_container *c)
{
        if (!c->has_status || c->state.kind == ST_STATE_NONE)
                return ST_STATE_WAITING;
        return c->state.kind;
}

static bool last_terminated(const struct st_container *c)
{
        return c->last_state.kind == ST_STATE_TERMINATED;
}

/* started/ready of one container as the prober reports them. init: the
 * container is in spec.initContainers. */
static bool container_started(const struct st_container *c)
{
        if (effective_kind(c) != ST_STATE_RUNNING)
                return false;
        return !c->has_startup_probe || c->startup_succeeded;
}

static bool container_ready(const struct st_container *c, bool init)
{
        if (init && !c->is_sidecar)
                return effective_kind(c) == ST_STATE_TERMINATED && c->state.exit_code == 0;
        /* ready is only evaluated once started, and started implies running */
        if (!container_started(c))
                return false;
        return !c->has_readiness_probe || c->readiness_succeeded;
}

/* HasAnyRegularContainerStarted: a regular container running or
 * terminated means the init containers completed at some point. */
static bool any_regular_started(const struct st_pod_input *in)
{
        for (size_t i = 0; i < in->n_containers; i++) {
                enum st_state_kind k = effective_kind(&in->containers[i]);
                if (k == ST_STATE_RUNNING || k == ST_STATE_TERMINATED)
                        return true;
        }
        return false;
}

/* ---- phase ----------------------------------------------------------------------------- */

struct phase_counts {
        unsigned pending_init, failed_init;
        unsigned running, waiting, stopped, succeeded;
};

static void count_regular_init(const struct st_container *c, struct phase_counts *n)
{
        switch (effective_kind(c)) {
        case ST_STATE_RUNNING:
                n->pending_init++;
                break;
        case ST_STATE_TERMINATED:
                if (c->state.exit_code != 0)
                        n->failed_init++;
                break;
        default: /* waiting */
                if (!last_terminated(c))
                        n->pending_init++;
                else if (c->last_state.exit_code != 0)
                        n->failed_init++;
                break;
        }
}

static void count_sidecar(const struct st_container *c, struct phase_counts *n)
{
        switch (effective_kind(c)) {
        case ST_STATE_RUNNING:
                if (!container_started(c))
                        n->pending_init++;
                n->running++;
                break;
        case ST_STATE_TERMINATED:
                /* a stopped sidecar does not count towards the phase */
                break;
        default: /* waiting */
                if (!last_terminated(c)) {
                        n->pending_init++;
                        n->waiting++;
                }
                break;
        }
}

static void count_regular(const struct st_container *c, struct phase_counts *n)
{
        switch (effective_kind(c)) {
        case ST_STATE_RUNNING:
                n->running++;
                break;
        case ST_STATE_TERMINATED:
                n->stopped++;
                if (c->state.exit_code == 0)
                        n->succeeded++;
                break;
        default: /* waiting: restarting after a termination counts as stopped */
                if (last_terminated(c))
                        n->stopped++;
                else
                        n->waiting++;
                break;
        }
}

/*
 * getPhase. Its "unknown" counter (a spec container without any status)
 * stays 0 here because the kubelet renders a status for every spec
 * container before calling it; a container the runtime never saw is
 * waiting, which yields Pending exactly as "unknown" would.
 */
static enum st_phase get_phase(const struct st_pod_input *in)
{
        struct phase_counts n = {0};

        for (size_t i = 0; i < in->n_init_containers; i++) {
                const struct st_container *c = &in->init_containers[i];
                if (c->is_sidecar)
                        count_sidecar(c, &n);
                else
                        count_regular_init(c, &n);
        }
        for (size_t i = 0; i < in->n_containers; i++)
                count_regular(&in->containers[i], &n);

        if (n.failed_init > 0 && in->restart_policy == ST_RESTART_NEVER)
                return ST_PHASE_FAILED;
        if ((n.pending_init > 0 && !any_regular_started(in)) || n.waiting > 0)
                return ST_PHASE_PENDING;
        if (n.running > 0)
                return ST_PHASE_RUNNING;
        if (n.stopped > 0) {
                /* a terminal pod's containers will not be restarted whatever
                 * the policy (static pods are exempt, k/k #116484) */
                if (in->is_terminal && !in->is_static)
                        return n.stopped == n.succeeded ? ST_PHASE_SUCCEEDED : ST_PHASE_FAILED;
                if (in->restart_policy == ST_RESTART_ALWAYS)
                        return ST_PHASE_RUNNING;
                if (n.stopped == n.succeeded)
                        return ST_PHASE_SUCCEEDED;
                if (in->restart_policy == ST_RESTART_NEVER)
                        return ST_PHASE_FAILED;
                return ST_PHASE_RUNNING; /* OnFailure, restarting the failed ones */
        }
        return ST_PHASE_PENDING;
}

enum st_phase st_compute_phase(const struct st_pod_input *in)
{
        enum st_phase phase = get_phase(in);

        /* generateAPIPodStatus: a terminal phase seen before (the status
         * manager's first, then the API's) is kept ... */
        if (!phase_terminal(phase)) {
                if (phase_terminal(in->cached_phase))
                        phase = in->cached_phase;
                else if (phase_terminal(in->api_phase))
                        phase = in->api_phase;
        }
        /* ... and the API's terminal phase wins over everything */
        if (phase_terminal(in->api_phase) && phase != in->api_phase)
                phase = in->api_phase;
        return phase;
}

/* ---- time ------------------------------------------------------------------------------- */

int st_time_format(int64_t t, char *buf, size_t len, struct cb_error *err)
{
        struct tm tm;
        time_t tt = (time_t)t;

        if (gmtime_r(&tt, &tm) == NULL || tm.tm_year + 1900 < 0 || tm.tm_year + 1900 > 9999)
                return cb_error_set(err, 0, "time %lld has no RFC 3339 form (year 0-9999)",
                                    (long long)t);
        if (strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
                return cb_error_set(err, 0, "time buffer of %zu bytes too small (need %d)", len,
                                    ST_TIME_MAX);
        return 0;
}

static bool parse_digits(const char **p, int n, int *ret)
{
        int v = 0;
        for (int i = 0; i < n; i++) {
                if (!isdigit((unsigned char)(*p)[i]))
                        return false;
                v = v * 10 + ((*p)[i] - '0');
        }
        *p += n;
        *ret = v;
        return true;
}

static bool parse_char(const char **p, const char *allowed)
{
        if (**p == '\0' || strchr(allowed, **p) == NULL)
                return false;
        (*p)++;
        return true;
}

int st_time_parse(const char *s, int64_t *ret, struct cb_error *err)
{
        const char *p = str_or_empty(s);
        int year, mon, day, hour, min, sec, oh = 0, om = 0, sign = 0;

        if (!parse_digits(&p, 4, &year) || !parse_char(&p, "-") || !parse_digits(&p, 2, &mon) ||
            !parse_char(&p, "-") || !parse_digits(&p, 2, &day) || !parse_char(&p, "Tt") ||
            !parse_digits(&p, 2, &hour) || !parse_char(&p, ":") || !parse_digits(&p, 2, &min) ||
            !parse_char(&p, ":") || !parse_digits(&p, 2, &sec))
                goto invalid;
        if (*p == '.') {
                p++;
                if (!isdigit((unsigned char)*p))
                        goto invalid;
                while (isdigit((unsigned char)*p))
                        p++;
        }
        if (*p == 'Z' || *p == 'z') {
                p++;
        } else if (*p == '+' || *p == '-') {
                sign = *p == '+' ? 1 : -1;
                p++;
                if (!parse_digits(&p, 2, &oh) || !parse_char(&p, ":") ||
                    !parse_digits(&p, 2, &om) || oh > 23 || om > 59)
                        goto invalid;
        } else {
                goto invalid;
        }
        if (*p != '\0' || mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 ||
            sec > 59)
                goto invalid;

        struct tm tm = {.tm_year = year - 1900,
                        .tm_mon = mon - 1,
                        .tm_mday = day,
                        .tm_hour = hour,
                        .tm_min = min,
                        .tm_sec = sec};
        int64_t t = (int64_t)timegm(&tm);
        if (tm.tm_mday != day) /* timegm normalised e.g. Feb 30 */
                goto invalid;
        *ret = t - sign * ((int64_t)oh * 3600 + (int64_t)om * 60);
        return 0;
invalid:
        return cb_error_set(err, 0,
                            "time \"%s\" is not RFC 3339 (want e.g. \"2026-11-29T17:47:39Z\")",
                            str_or_empty(s));
}

/* Adds an RFC 3339 time, or null for an unset (0) or unrepresentable one:
 * both are what the API shows for a zero metav1.Time. */
static bool add_time(cJSON *obj, const char *key, int64_t t)
{
        char buf[ST_TIME_MAX];

        if (t == 0 || st_time_format(t, buf, sizeof(buf), NULL) < 0)
                return cJSON_AddNullToObject(obj, key) != NULL;
        return cJSON_AddStringToObject(obj, key, buf) != NULL;
}

int st_duration_format(int64_t seconds, char *buf, size_t len)
{
        const char *sign = "";
        uint64_t s = (uint64_t)seconds;

        if (seconds < 0) {
                sign = "-";
                s = 0 - s;
        }
        uint64_t h = s / 3600, m = s / 60 % 60, sec = s % 60;
        if (h > 0)
                return snprintf(buf, len, "%s%lluh%llum%llus", sign, (unsigned long long)h,
                                (unsigned long long)m, (unsigned long long)sec);
        if (m > 0)
                return snprintf(buf, len, "%s%llum%llus", sign, (unsigned long long)m,
                                (unsigned long long)sec);
        return snprintf(buf, len, "%s%llus", sign, (unsigned long long)sec);
}

/* ---- names lists and messages ---------------------------------------------------------- */

/* A growing "[a b c]" list, as Go's %s prints a []string. */
struct name_list {
        char *buf;
        size_t len, cap;
        size_t count;
        bool oom;
};

static void name_list_add(struct name_list *l, const char *name)
{
        size_t add = strlen(str_or_empty(name)) + 1;

        if (l->oom)
                return;
        if (l->len + add + 1 > l->cap) {
                size_t cap = (l->cap == 0 ? 64 : l->cap * 2) + add;
                char *b = realloc(l->buf, cap);
                if (b == NULL) {
                        l->oom = true;
                        return;
                }
                l->buf = b;
                l->cap = cap;
        }
        if (l->count > 0)
                l->buf[l->len++] = ' ';
        memcpy(l->buf + l->len, str_or_empty(name), add - 1);
        l->len += add - 1;
        l->buf[l->len] = '\0';
        l->count++;
}

static void name_list_free(struct name_list *l)
{
        free(l->buf);
        l->buf = NULL;
}

/* ---- conditions ------------------------------------------------------------------------- */

static const char *const kubelet_owned[] = {
    "PodScheduled",
    "Ready",
    "Initialized",
    "ContainersReady",
    "PodReadyToStartContainers",
    "PodResizePending",
    "PodResizeInProgress",
};

static bool owned_by_kubelet(const char *type)
{
        for (size_t i = 0; i < CB_ARRAY_SIZE(kubelet_owned); i++)
                if (strcmp(type, kubelet_owned[i]) == 0)
                        return true;
        return false;
}

static const struct st_condition *find_in(const struct st_condition *v, size_t n, const char *type)
{
        for (size_t i = 0; i < n; i++)
                if (v[i].type != NULL && strcmp(v[i].type, type) == 0)
                        return &v[i];
        return NULL;
}

/* The previous condition of a type: from this agent's own last status when
 * it has one (updateLastTransitionTime's oldStatus), else the API's. */
static const struct st_condition *find_condition(const struct st_pod_input *in, const char *type)
{
        if (in->has_own)
                return find_in(in->own_conditions, in->n_own_conditions, type);
        return find_in(in->conditions, in->n_conditions, type);
}

/* A generated condition: status is "True" or "False"; reason/message
 * may be NULL. */
struct gen_condition {
        const char *type;
        const char *status;
        const char *reason;
        char *message; /* malloc'd or NULL */
};

static void gen_condition_free(struct gen_condition *c)
{
        free(c->message);
        c->message = NULL;
}

static cJSON *condition_object(const char *type, const char *status, int64_t probe_time,
                               int64_t transition_time, const char *reason, const char *message)
{
        _cleanup_cjson_ cJSON *o = cJSON_CreateObject();

        /* the field order of v1.PodCondition */
        if (o == NULL || cJSON_AddStringToObject(o, "type", str_or_empty(type)) == NULL ||
            cJSON_AddStringToObject(o, "status", str_or_empty(status)) == NULL ||
            !add_time(o, "lastProbeTime", probe_time) ||
            !add_time(o, "lastTransitionTime", transition_time))
                return NULL;
        if (str_set(reason) && cJSON_AddStringToObject(o, "reason", reason) == NULL)
                return NULL;
        if (str_set(message) && cJSON_AddStringToObject(o, "message", message) == NULL)
                return NULL;
        return steal_pointer(&o);
}

/* The status manager's updateLastTransitionTime: keep the previous time
 * unless the status flipped (or the condition is new). */
static bool append_generated(cJSON *arr, const struct st_pod_input *in,
                             const struct gen_condition *c, int64_t now)
{
        const struct st_condition *prev = find_condition(in, c->type);
        int64_t transition = now;

        if (prev != NULL && str_eq(prev->status, c->status))
                transition = prev->last_transition_time;
        cJSON *o = condition_object(c->type, c->status, 0, transition, c->reason, c->message);
        if (o == NULL)
                return false;
        cJSON_AddItemToArray(arr, o);
        return true;
}

static bool phase_reason(enum st_phase phase, const char **reason)
{
        if (phase == ST_PHASE_SUCCEEDED)
                *reason = ST_REASON_POD_COMPLETED;
        else if (phase == ST_PHASE_FAILED)
                *reason = ST_REASON_POD_FAILED;
        else
                return false;
        return true;
}

/* GeneratePodInitializedCondition. */
static bool gen_initialized(const struct st_pod_input *in, enum st_phase phase,
                            struct gen_condition *c)
{
        struct name_list incomplete = {0};

        *c = (struct gen_condition){.type = "Initialized", .status = "True"};
        if (phase == ST_PHASE_SUCCEEDED) {
                c->reason = ST_REASON_POD_COMPLETED;
                return true;
        }
        /* a regular container that ran proves initialization, even while
         * a sidecar restarts */
        if (any_regular_started(in))
                return true;
        for (size_t i = 0; i < in->n_init_containers; i++) {
                const struct st_container *ic = &in->init_containers[i];
                bool done = ic->is_sidecar ? container_started(ic) : container_ready(ic, true);
                if (!done)
                        name_list_add(&incomplete, ic->name);
        }
        if (incomplete.oom) {
                name_list_free(&incomplete);
                return false;
        }
        if (incomplete.count > 0) {
                c->status = "False";
                c->reason = ST_REASON_CONTAINERS_NOT_INITIALIZED;
                if (asprintf(&c->message, "containers with incomplete status: [%s]",
                             incomplete.buf) < 0)
                        c->message = NULL;
                name_list_free(&incomplete);
                return c->message != NULL;
        }
        return true;
}

/* GenerateContainersReadyCondition. */
static bool gen_containers_ready(const struct st_pod_input *in, enum st_phase phase,
                                 struct gen_condition *c)
{
        struct name_list unready = {0};

        *c = (struct gen_condition){.type = "ContainersReady", .status = "True"};
        if (phase_reason(phase, &c->reason)) {
                c->status = "False";
                return true;
        }
        for (size_t i = 0; i < in->n_init_containers; i++)
                if (in->init_containers[i].is_sidecar &&
                    !container_ready(&in->init_containers[i], true))
                        name_list_add(&unready, in->init_containers[i].name);
        for (size_t i = 0; i < in->n_containers; i++)
                if (!container_ready(&in->containers[i], false))
                        name_list_add(&unready, in->containers[i].name);
        if (unready.oom) {
                name_list_free(&unready);
                return false;
        }
        if (unready.count > 0) {
                c->status = "False";
                c->reason = ST_REASON_CONTAINERS_NOT_READY;
                if (asprintf(&c->message, "containers with unready status: [%s]", unready.buf) < 0)
                        c->message = NULL;
                name_list_free(&unready);
                return c->message != NULL;
        }
        return true;
}

/* The status of a condition as GeneratePodReadyCondition sees the list
 * built so far: the preserved conditions, then the generated ones. */
static const char *gate_status(const struct st_pod_input *in, const struct gen_condition *gen,
                               size_t n_gen, const char *type)
{
        for (size_t i = 0; i < in->n_conditions; i++) {
                const struct st_condition *pc = &in->conditions[i];
                if (pc->type != NULL && !owned_by_kubelet(pc->type) && strcmp(pc->type, type) == 0)
                        return str_or_empty(pc->status);
        }
        for (size_t i = 0; i < n_gen; i++)
                if (strcmp(gen[i].type, type) == 0)
                        return gen[i].status;
        return NULL;
}

/* GeneratePodReadyCondition: mirrors ContainersReady unless that is True,
 * then requires every readiness gate's condition to be True. */
static bool gen_ready(const struct st_pod_input *in, const struct gen_condition *containers_ready,
                      const struct gen_condition *gen, size_t n_gen, struct gen_condition *c)
{
        *c = (struct gen_condition){.type = "Ready", .status = containers_ready->status};
        if (strcmp(containers_ready->status, "True") != 0) {
                c->reason = containers_ready->reason;
                if (containers_ready->message != NULL) {
                        c->message = strdup(containers_ready->message);
                        return c->message != NULL;
                }
                return true;
        }

        _cleanup_free_ char *msg = NULL;
        size_t msg_len = 0;
        _cleanup_fclose_ FILE *f = open_memstream(&msg, &msg_len);
        size_t n_unready = 0;
        if (f == NULL)
                return false;
        for (size_t i = 0; i < in->n_readiness_gates; i++) {
                const char *gate = str_or_empty(in->readiness_gates[i]);
                const char *status = gate_status(in, gen, n_gen, gate);
                if (status != NULL && strcmp(status, "True") == 0)
                        continue;
                if (n_unready++ > 0)
                        fputs(", ", f);
                /* Go's %q of a gate name; condition types are qualified
                 * names, so plain quoting is exact */
                if (status == NULL)
                        fprintf(f,
                                "corresponding condition of pod readiness gate \"%s\" does not "
                                "exist.",
                                gate);
                else
                        fprintf(f,
                                "the status of pod readiness gate \"%s\" is not \"True\", but %s",
                                gate, status);
        }
        if (fclose(f) != 0) {
                f = NULL;
                return false;
        }
        f = NULL;
        if (n_unready > 0) {
                c->status = "False";
                c->reason = ST_REASON_READINESS_GATES_NOT_READY;
                c->message = steal_pointer(&msg);
        }
        return true;
}

static bool append_preserved(cJSON *arr, const struct st_pod_input *in)
{
        for (size_t i = 0; i < in->n_conditions; i++) {
                const struct st_condition *pc = &in->conditions[i];
                if (!str_set(pc->type) || owned_by_kubelet(pc->type))
                        continue;
                cJSON *o = condition_object(pc->type, pc->status, pc->last_probe_time,
                                            pc->last_transition_time, pc->reason, pc->message);
                if (o == NULL)
                        return false;
                cJSON_AddItemToArray(arr, o);
        }
        return true;
}

enum { GEN_SANDBOX, GEN_INITIALIZED, GEN_READY, GEN_CONTAINERS_READY, GEN_SCHEDULED, GEN_N };

cJSON *st_conditions_json(const struct st_pod_input *in, enum st_phase phase, int64_t now)
{
        _cleanup_cjson_ cJSON *arr = cJSON_CreateArray();
        struct gen_condition gen[GEN_N] = {0};
        bool ok = arr != NULL && append_preserved(arr, in);

        gen[GEN_SANDBOX] = (struct gen_condition){.type = "PodReadyToStartContainers",
                                                  .status = in->sandbox_ready ? "True" : "False"};
        gen[GEN_SCHEDULED] = (struct gen_condition){.type = "PodScheduled", .status = "True"};
        ok = ok && gen_initialized(in, phase, &gen[GEN_INITIALIZED]);
        ok = ok && gen_containers_ready(in, phase, &gen[GEN_CONTAINERS_READY]);
        /* Ready sees the list as built up to it: preserved, sandbox, initialized */
        ok = ok &&
             gen_ready(in, &gen[GEN_CONTAINERS_READY], gen, GEN_INITIALIZED + 1, &gen[GEN_READY]);
        /* a terminal phase already makes both readiness conditions False
         * (PodCompleted/PodFailed), which is what the status manager's
         * terminal-phase override would force */
        for (size_t i = 0; ok && i < GEN_N; i++)
                ok = append_generated(arr, in, &gen[i], now);
        for (size_t i = 0; i < GEN_N; i++)
                gen_condition_free(&gen[i]);
        return ok ? steal_pointer(&arr) : NULL;
}

/* ---- container statuses ------------------------------------------------------------- */

/* One v1.ContainerState object; kind NONE gives {}. NULL on out of memory. */
static cJSON *container_state_json(const struct st_container_state *s)
{
        _cleanup_cjson_ cJSON *o = cJSON_CreateObject();
        cJSON *inner = NULL;

        if (o == NULL)
                return NULL;
        switch (s->kind) {
        case ST_STATE_NONE:
                return steal_pointer(&o);
        case ST_STATE_WAITING:
                inner = cJSON_AddObjectToObject(o, "waiting");
                if (inner == NULL ||
                    (str_set(s->reason) && !cJSON_AddStringToObject(inner, "reason", s->reason)) ||
                    (str_set(s->message) && !cJSON_AddStringToObject(inner, "message", s->message)))
                        return NULL;
                break;
        case ST_STATE_RUNNING:
                inner = cJSON_AddObjectToObject(o, "running");
                if (inner == NULL || !add_time(inner, "startedAt", s->started_at))
                        return NULL;
                break;
        case ST_STATE_TERMINATED:
                /* the field order of v1.ContainerStateTerminated */
                inner = cJSON_AddObjectToObject(o, "terminated");
                if (inner == NULL || !cJSON_AddNumberToObject(inner, "exitCode", s->exit_code) ||
                    (s->signal != 0 && !cJSON_AddNumberToObject(inner, "signal", s->signal)) ||
                    (str_set(s->reason) && !cJSON_AddStringToObject(inner, "reason", s->reason)) ||
                    (str_set(s->message) &&
                     !cJSON_AddStringToObject(inner, "message", s->message)) ||
                    !add_time(inner, "startedAt", s->started_at) ||
                    !add_time(inner, "finishedAt", s->finished_at) ||
                    (str_set(s->container_id) &&
                     !cJSON_AddStringToObject(inner, "containerID", s->container_id)))
                        return NULL;
                break;
        }
        return steal_pointer(&o);
}

static int compare_quantity(const void *a, const void *b)
{
        const struct st_quantity *const *qa = a, *const *qb = b;
        return strcmp(str_or_empty((*qa)->name), str_or_empty((*qb)->name));
}

/* A v1.ResourceList object under key, sorted by name; nothing when empty.
 * false only when out of memory. */
static bool add_resource_list(cJSON *o, const char *key, const struct st_resource_list *l)
{
        if (l->n == 0)
                return true;
        _cleanup_free_ const struct st_quantity **order = calloc(l->n, sizeof(*order));
        cJSON *m = cJSON_AddObjectToObject(o, key);
        if (order == NULL || m == NULL)
                return false;
        for (size_t i = 0; i < l->n; i++)
                order[i] = &l->items[i];
        qsort(order, l->n, sizeof(*order), compare_quantity);
        for (size_t i = 0; i < l->n; i++)
                if (!cJSON_AddStringToObject(m, str_or_empty(order[i]->name),
                                             str_or_empty(order[i]->value)))
                        return false;
        return true;
}

/* allocatedResources, resources and volumeMounts, in v1.ContainerStatus
 * order (after started). */
static bool add_container_extras(cJSON *o, const struct st_container *c)
{
        if (!add_resource_list(o, "allocatedResources", &c->allocated))
                return false;
        if (c->has_resources) {
                /* the field order of v1.ResourceRequirements */
                cJSON *r = cJSON_AddObjectToObject(o, "resources");
                if (r == NULL || !add_resource_list(r, "limits", &c->limits) ||
                    !add_resource_list(r, "requests", &c->requests))
                        return false;
        }
        if (c->n_volume_mounts == 0)
                return true;
        cJSON *arr = cJSON_AddArrayToObject(o, "volumeMounts");
        if (arr == NULL)
                return false;
        for (size_t i = 0; i < c->n_volume_mounts; i++) {
                const struct st_volume_mount *m = &c->volume_mounts[i];
                cJSON *vm = cJSON_CreateObject();
                if (vm == NULL)
                        return false;
                cJSON_AddItemToArray(arr, vm);
                if (!cJSON_AddStringToObject(vm, "name", str_or_empty(m->name)) ||
                    !cJSON_AddStringToObject(vm, "mountPath", str_or_empty(m->mount_path)) ||
                    (m->read_only && !cJSON_AddBoolToObject(vm, "readOnly", true)) ||
                    (str_set(m->recursive_read_only) &&
                     !cJSON_AddStringToObject(vm, "recursiveReadOnly", m->recursive_read_only)))
                        return false;
        }
        return true;
}

/* user.linux, after volumeMounts (v1.ContainerStatus order): uid, gid,
 * supplementalGroups (v1.LinuxContainerUser order). */
static bool add_container_user(cJSON *o, const struct st_container *c)
{
        if (!c->has_user)
                return true;
        cJSON *u = cJSON_AddObjectToObject(o, "user");
        cJSON *l = u ? cJSON_AddObjectToObject(u, "linux") : NULL;
        if (l == NULL || !cJSON_AddNumberToObject(l, "uid", c->uid) ||
            !cJSON_AddNumberToObject(l, "gid", c->gid))
                return false;
        if (c->n_supplemental_groups == 0)
                return true;
        cJSON *g = cJSON_AddArrayToObject(l, "supplementalGroups");
        if (g == NULL)
                return false;
        for (size_t i = 0; i < c->n_supplemental_groups; i++) {
                cJSON *n = cJSON_CreateNumber(c->supplemental_groups[i]);
                if (n == NULL)
                        return false;
                cJSON_AddItemToArray(g, n);
        }
        return true;
}

static cJSON *container_status_json(const struct st_container *c, bool init,
                                    bool has_init_containers)
{
        _cleanup_cjson_ cJSON *o = cJSON_CreateObject();
        struct st_container_state state = c->state;
        cJSON *sub;

        if (!c->has_status)
                state = (struct st_container_state){.kind = ST_STATE_WAITING,
                                                    .reason = has_init_containers
                                                                  ? ST_REASON_POD_INITIALIZING
                                                                  : ST_REASON_CONTAINER_CREATING};
        else if (state.kind == ST_STATE_NONE)
                state = (struct st_container_state){.kind = ST_STATE_WAITING};

        /* the field order of v1.ContainerStatus */
        if (o == NULL || !cJSON_AddStringToObject(o, "name", str_or_empty(c->name)))
                return NULL;
        if ((sub = container_state_json(&state)) == NULL)
                return NULL;
        cJSON_AddItemToObject(o, "state", sub);
        if ((sub = container_state_json(&c->last_state)) == NULL)
                return NULL;
        cJSON_AddItemToObject(o, "lastState", sub);
        if (!cJSON_AddBoolToObject(o, "ready", container_ready(c, init)) ||
            !cJSON_AddNumberToObject(o, "restartCount", c->restart_count) ||
            !cJSON_AddStringToObject(o, "image", str_or_empty(c->image)) ||
            !cJSON_AddStringToObject(o, "imageID", str_or_empty(c->image_id)) ||
            (str_set(c->container_id) &&
             !cJSON_AddStringToObject(o, "containerID", c->container_id)) ||
            !cJSON_AddBoolToObject(o, "started", container_started(c)) ||
            !add_container_extras(o, c) || !add_container_user(o, c))
                return NULL;
        return steal_pointer(&o);
}

static int compare_by_name(const void *a, const void *b)
{
        const struct st_container *const *ca = a, *const *cb = b;
        return strcmp(str_or_empty((*ca)->name), str_or_empty((*cb)->name));
}

cJSON *st_container_statuses_json(const struct st_container *cs, size_t n, bool init,
                                  bool has_init_containers)
{
        _cleanup_cjson_ cJSON *arr = cJSON_CreateArray();
        _cleanup_free_ const struct st_container **order = NULL;

        if (arr == NULL)
                return NULL;
        if (n == 0)
                return steal_pointer(&arr);
        order = calloc(n, sizeof(*order));
        if (order == NULL)
                return NULL;
        for (size_t i = 0; i < n; i++)
                order[i] = &cs[i];
        /* the kubelet sorts regular statuses by name and keeps init
         * statuses in spec order (kubetypes.SortedContainerStatuses,
         * SortStatusesOfInitContainers) */
        if (!init)
                qsort(order, n, sizeof(*order), compare_by_name);
        for (size_t i = 0; i < n; i++) {
                cJSON *o = container_status_json(order[i], init, has_init_containers);
                if (o == NULL)
                        return NULL;
                cJSON_AddItemToArray(arr, o);
        }
        return steal_pointer(&arr);
}

/* ---- reasons and exit codes ------------------------------------------------------------ */

const char *st_terminated_reason(int32_t exit_code, bool oom_killed)
{
        /* containerd records the OOM event before the exit, so an
         * OOM-killed container keeps that reason */
        if (oom_killed)
                return ST_REASON_OOM_KILLED;
        return exit_code == 0 ? ST_REASON_COMPLETED : ST_REASON_ERROR;
}

int32_t st_exit_code(int32_t exit_status, int32_t signal)
{
        if (signal > 0)
                return 128 + signal;
        return exit_status;
}

/* ---- backoff ----------------------------------------------------------------------------- */

static bool backoff_expired(const struct st_backoff *b, int64_t event_time)
{
        return event_time - b->last_update > ST_BACKOFF_RESET_SECONDS;
}

bool st_backoff_active(const struct st_backoff *b, int64_t finished_at, int64_t now)
{
        if (b->backoff <= 0 || backoff_expired(b, finished_at))
                return false;
        return now - finished_at < b->backoff;
}

static void backoff_bounds(int64_t *base, int64_t *cap)
{
        if (*cap <= 0)
                *cap = ST_BACKOFF_CAP_DEFAULT;
        if (*base <= 0)
                *base = ST_BACKOFF_BASE_DEFAULT;
        if (*base > *cap)
                *base = *cap;
}

void st_backoff_next(struct st_backoff *b, int64_t finished_at, int64_t now, int64_t base,
                     int64_t cap)
{
        backoff_bounds(&base, &cap);
        if (b->backoff <= 0 || backoff_expired(b, finished_at))
                b->backoff = base;
        else
                b->backoff = b->backoff > cap / 2 ? cap : b->backoff * 2;
        b->last_update = now;
}

int64_t st_backoff_delay(int32_t restarts, int64_t base, int64_t cap)
{
        int64_t d;

        backoff_bounds(&base, &cap);
        if (restarts <= 0)
                return 0;
        d = base;
        for (int32_t i = 1; i < restarts && d < cap; i++)
                d = d > cap / 2 ? cap : d * 2;
        return d < cap ? d : cap;
}

uint64_t st_jitter_ms(uint64_t base_ms, double max_factor, st_random_fn rnd, void *ctx)
{
        if (max_factor <= 0.0)
                max_factor = 1.0;
        if (rnd == NULL || base_ms == 0)
                return base_ms;
        double r = rnd(ctx);
        if (!(r > 0.0)) /* also NaN */
                r = 0.0;
        double span = max_factor * (double)base_ms;
        double extra = r * span;
        /* strictly below base + span, as rand.Float64() < 1 */
        if (extra >= span)
                extra = span > 1.0 ? span - 1.0 : 0.0;
        if (extra > (double)(UINT64_MAX - base_ms))
                return UINT64_MAX;
        return base_ms + (uint64_t)extra;
}

char *st_crashloop_message(int64_t backoff_seconds, const char *container, const char *pod_name,
                           const char *pod_namespace, const char *pod_uid)
{
        char dur[ST_DURATION_MAX];
        char *msg;

        st_duration_format(backoff_seconds, dur, sizeof(dur));
        if (asprintf(&msg, "back-off %s restarting failed container=%s pod=%s_%s(%s)", dur,
                     str_or_empty(container), str_or_empty(pod_name), str_or_empty(pod_namespace),
                     str_or_empty(pod_uid)) < 0)
                return NULL;
        return msg;
}

char *st_backoff_event_message(const char *container, const char *pod_name,
                               const char *pod_namespace, const char *pod_uid)
{
        char *msg;

        if (asprintf(&msg, "Back-off restarting failed container %s in pod %s_%s(%s)",
                     str_or_empty(container), str_or_empty(pod_name), str_or_empty(pod_namespace),
                     str_or_empty(pod_uid)) < 0)
                return NULL;
        return msg;
}

/* ---- termination messages --------------------------------------------------------------- */

bool st_termination_use_logs(bool fallback_policy, int32_t exit_code, const char *reason,
                             size_t file_len)
{
        /* A container that could not even run has no logs to fall back to. */
        bool fallback = fallback_policy && exit_code != 0 &&
                        strcmp(str_or_empty(reason), "ContainerCannotRun") != 0;
        return fallback && file_len == 0;
}

size_t st_termination_message(char *buf, size_t size, const char *runtime_message,
                              const char *termination_message)
{
        const char *r = str_or_empty(runtime_message), *t = str_or_empty(termination_message);
        if (size == 0)
                return 0;
        int n = snprintf(buf, size, "%s%s%s", r, r[0] && t[0] ? ": " : "", t);
        if (n < 0) {
                buf[0] = '\0';
                return 0;
        }
        return (size_t)n < size ? (size_t)n : size - 1;
}

size_t st_termination_message_budget(size_t n_containers)
{
        return n_containers > 0 ? ST_POD_TERMINATION_MESSAGE_MAX / n_containers
                                : ST_POD_TERMINATION_MESSAGE_MAX;
}

/* The length of the valid UTF-8 sequence at p (at most n bytes), 0 when
 * it is not one (Go's utf8.DecodeRuneInString rules: no overlongs, no
 * surrogates, nothing above U+10FFFF). */
static size_t utf8_len(const unsigned char *p, size_t n)
{
        if (p[0] < 0x80)
                return 1;
        size_t len;
        unsigned lo = 0x80, hi = 0xbf;
        if (p[0] >= 0xc2 && p[0] <= 0xdf)
                len = 2;
        else if (p[0] >= 0xe0 && p[0] <= 0xef) {
                len = 3;
                if (p[0] == 0xe0)
                        lo = 0xa0;
                else if (p[0] == 0xed)
                        hi = 0x9f;
        } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
                len = 4;
                if (p[0] == 0xf0)
                        lo = 0x90;
                else if (p[0] == 0xf4)
                        hi = 0x8f;
        } else
                return 0;
        if (n < len || p[1] < lo || p[1] > hi)
                return 0;
        for (size_t i = 2; i < len; i++)
                if (p[i] < 0x80 || p[i] > 0xbf)
                        return 0;
        return len;
}

static void normalize_message(cJSON *state, size_t budget)
{
        cJSON *t = cJSON_GetObjectItemCaseSensitive(state, "terminated");
        cJSON *m = cJSON_GetObjectItemCaseSensitive(t, "message");
        if (!cJSON_IsString(m) || m->valuestring == NULL)
                return;
        const unsigned char *in = (const unsigned char *)m->valuestring;
        size_t n = strlen(m->valuestring);
        if (n > budget)
                n = budget;
        bool clean = n == strlen(m->valuestring);
        for (size_t i = 0; clean && i < n;) {
                size_t l = utf8_len(in + i, n - i);
                if (l == 0)
                        clean = false;
                i += l;
        }
        if (clean)
                return;
        char *out = malloc(n * 3 + 1);
        if (out == NULL)
                return;
        size_t o = 0;
        for (size_t i = 0; i < n;) {
                size_t l = utf8_len(in + i, n - i);
                if (l == 0) {
                        memcpy(out + o, "\xef\xbf\xbd", 3); /* U+FFFD */
                        o += 3;
                        i++;
                } else {
                        memcpy(out + o, in + i, l);
                        o += l;
                        i += l;
                }
        }
        out[o] = '\0';
        cJSON *s = cJSON_CreateString(out);
        free(out);
        if (s != NULL)
                cJSON_ReplaceItemInObjectCaseSensitive(t, "message", s);
}

void st_normalize_termination_messages(cJSON *status, size_t budget)
{
        static const char *const lists[] = {"initContainerStatuses", "containerStatuses",
                                            "ephemeralContainerStatuses"};
        for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++) {
                cJSON *arr = cJSON_GetObjectItemCaseSensitive(status, lists[l]);
                cJSON *cs;
                cJSON_ArrayForEach(cs, arr)
                {
                        normalize_message(cJSON_GetObjectItemCaseSensitive(cs, "state"), budget);
                        normalize_message(cJSON_GetObjectItemCaseSensitive(cs, "lastState"),
                                          budget);
                }
        }
}

/* ---- sidecars ----------------------------------------------------------------------------- */

bool st_init_done(const struct st_run_view *c)
{
        if (c->sidecar)
                return c->running && c->started;
        return c->exited && c->exit_code == 0;
}

bool st_regular_done(const struct st_run_view *regular, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (regular[i].running || !regular[i].exited || regular[i].will_restart)
                        return false;
        return n > 0;
}

bool st_sidecar_may_stop(const struct st_run_view *init, size_t n_init,
                         const struct st_run_view *regular, size_t n_regular, size_t i)
{
        for (size_t j = 0; j < n_regular; j++)
                if (regular[j].running)
                        return false;
        for (size_t j = i + 1; j < n_init; j++)
                if (init[j].sidecar && init[j].running)
                        return false;
        return true;
}
