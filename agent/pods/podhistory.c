/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/pods/podhistory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/k8s/jsondiff.h"
#include "agent/pods/podworker.h"
#include "lib/wallclock.h"

struct hstep {
        char name[80];
        int64_t mono, wall;
};

/* Entries and the last status are kept as compact JSON text, parsed when
 * they are read (ag_podhist_json, the next status's diff): a cJSON tree
 * takes about six times the memory of its text, and at 110 pods the trees
 * were ~3.7 MiB of the agent's heap (heaptrack, docs/benchmarks.md). */
struct hentry {
        int64_t mono, wall;
        char *text; /* an object: kind and its fields */
};

struct hpod {
        struct hpod *next;
        char *uid, *ns, *name;
        bool gone;
        bool started;        /* a step arrived: start_* is the worker's first step */
        int64_t start_mono;  /* offset 0 */
        struct hstep *steps; /* grown as steps come, to AG_TIMELINE_MAX */
        size_t n_steps, cap_steps;
        struct hentry ring[AG_PODHIST_ENTRIES];
        size_t head, count; /* oldest at head */
        unsigned long dropped;
        char *last_status; /* the status last sent, as text */
};

struct ag_podhist {
        struct hpod *pods; /* oldest first */
        size_t n_gone;
        ag_podhist_sink_fn sink;
        void *ctx;
        cJSON *node; /* the node's labels and spec at the last ag_podhist_node */
};

static int64_t mono_now(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* the agent's one wall clock (lib/wallclock: what a clock jump moves) */
static int64_t wall_now(void)
{
        return cb_wall_now_us();
}

static void fmt_time(int64_t us, char *buf, size_t size)
{
        time_t sec = (time_t)(us / 1000000);
        struct tm tm;
        gmtime_r(&sec, &tm);
        snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(us % 1000000));
}

static void add_times(cJSON *o, const struct hpod *p, int64_t mono, int64_t wall)
{
        char ts[64];
        fmt_time(wall, ts, sizeof(ts));
        cJSON_AddNumberToObject(o, "offsetUs", (double)(mono - p->start_mono));
        cJSON_AddStringToObject(o, "time", ts);
        cJSON_AddNumberToObject(o, "timeUs", (double)wall);
}

static void pod_free(struct hpod *p)
{
        for (size_t i = 0; i < p->count; i++)
                free(p->ring[(p->head + i) % AG_PODHIST_ENTRIES].text);
        free(p->last_status);
        free(p->steps);
        free(p->uid);
        free(p->ns);
        free(p->name);
        free(p);
}

struct ag_podhist *ag_podhist_new(void)
{
        return calloc(1, sizeof(struct ag_podhist));
}

void ag_podhist_free(struct ag_podhist *h)
{
        if (h == NULL)
                return;
        while (h->pods) {
                struct hpod *p = h->pods;
                h->pods = p->next;
                pod_free(p);
        }
        cJSON_Delete(h->node);
        free(h);
}

void ag_podhist_set_sink(struct ag_podhist *h, ag_podhist_sink_fn fn, void *ctx)
{
        h->sink = fn;
        h->ctx = ctx;
}

static struct hpod *find(const struct ag_podhist *h, const char *uid)
{
        for (struct hpod *p = h->pods; p; p = p->next)
                if (strcmp(p->uid, uid) == 0)
                        return p;
        return NULL;
}

static void publish(struct ag_podhist *h, const char *event, cJSON *data)
{
        if (h->sink != NULL && data != NULL)
                h->sink(event, data, h->ctx);
        cJSON_Delete(data);
}

static void publish_pod(struct ag_podhist *h, const struct hpod *p)
{
        if (h->sink == NULL)
                return;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "uid", p->uid);
        cJSON_AddStringToObject(o, "namespace", p->ns);
        cJSON_AddStringToObject(o, "name", p->name);
        cJSON_AddBoolToObject(o, "gone", p->gone);
        publish(h, "pod", o);
}

void ag_podhist_pod(struct ag_podhist *h, const char *uid, const char *ns, const char *name)
{
        struct hpod *p = find(h, uid);
        if (p != NULL) {
                if (p->gone) {
                        p->gone = false;
                        h->n_gone--;
                        publish_pod(h, p);
                }
                return;
        }
        p = calloc(1, sizeof(*p));
        if (p == NULL)
                return;
        p->uid = strdup(uid);
        p->ns = strdup(ns ? ns : "default");
        p->name = strdup(name ? name : "");
        if (!p->uid || !p->ns || !p->name) {
                pod_free(p);
                return;
        }
        p->start_mono = mono_now();
        struct hpod **pp = &h->pods;
        while (*pp)
                pp = &(*pp)->next;
        *pp = p;
        publish_pod(h, p);
}

void ag_podhist_gone(struct ag_podhist *h, const char *uid)
{
        struct hpod *p = find(h, uid);
        if (p == NULL || p->gone)
                return;
        p->gone = true;
        h->n_gone++;
        publish_pod(h, p);
        /* Forget the oldest gone pods beyond the bound. */
        for (struct hpod **pp = &h->pods; *pp && h->n_gone > AG_PODHIST_GONE;) {
                struct hpod *q = *pp;
                if (!q->gone) {
                        pp = &q->next;
                        continue;
                }
                *pp = q->next;
                h->n_gone--;
                pod_free(q);
        }
}

static cJSON *step_json(const struct hpod *p, const struct hstep *s)
{
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "step", s->name);
        add_times(o, p, s->mono, s->wall);
        return o;
}

static void add_step(struct ag_podhist *h, struct hpod *p, const char *step, int64_t mono)
{
        if (p->n_steps >= AG_TIMELINE_MAX)
                return;
        if (p->n_steps == p->cap_steps) {
                size_t cap = p->cap_steps ? p->cap_steps * 2 : 16;
                if (cap > AG_TIMELINE_MAX)
                        cap = AG_TIMELINE_MAX;
                struct hstep *g = realloc(p->steps, cap * sizeof(*g));
                if (g == NULL)
                        return;
                p->steps = g;
                p->cap_steps = cap;
        }
        /* In time order: a step stamped earlier than one already here (the
         * sandbox's, recorded when the sandbox is done, after the Pending
         * status was acknowledged) goes before it, as in the worker's own
         * list (ag_pod_worker_mark_at). */
        size_t i = p->n_steps;
        while (i > 0 && p->steps[i - 1].mono > mono)
                i--;
        memmove(&p->steps[i + 1], &p->steps[i], (p->n_steps - i) * sizeof(p->steps[0]));
        p->n_steps++;
        struct hstep *s = &p->steps[i];
        snprintf(s->name, sizeof(s->name), "%s", step);
        s->mono = mono;
        s->wall = wall_now() - (mono_now() - mono);
        if (h->sink == NULL)
                return;
        cJSON *o = step_json(p, s);
        cJSON_AddStringToObject(o, "uid", p->uid);
        publish(h, "step", o);
}

void ag_podhist_step(struct ag_podhist *h, const char *uid, const char *step, uint64_t offset_us)
{
        struct hpod *p = find(h, uid);
        if (p == NULL)
                return;
        if (!p->started) {
                /* The worker's first step is offset 0. */
                p->started = true;
                p->start_mono = mono_now() - (int64_t)offset_us;
        }
        add_step(h, p, step, p->start_mono + (int64_t)offset_us);
}

void ag_podhist_step_at(struct ag_podhist *h, const char *uid, const char *step, uint64_t mono_us)
{
        struct hpod *p = find(h, uid);
        if (p == NULL)
                return;
        int64_t mono = mono_us != 0 ? (int64_t)mono_us : mono_now();
        if (!p->started) {
                p->started = true;
                p->start_mono = mono;
        }
        add_step(h, p, step, mono);
}

/* Takes o (the entry's object, parsed or made), adds the entry's times. */
static cJSON *with_times(const struct hpod *p, const struct hentry *e, cJSON *o)
{
        if (o != NULL)
                add_times(o, p, e->mono, e->wall);
        return o;
}

static cJSON *entry_json(const struct hpod *p, const struct hentry *e)
{
        return with_times(p, e, cJSON_Parse(e->text));
}

/* Takes j (an object with "kind"). */
static void add_entry(struct ag_podhist *h, struct hpod *p, cJSON *j)
{
        if (j == NULL)
                return;
        char *text = cJSON_PrintUnformatted(j);
        if (text == NULL) {
                cJSON_Delete(j);
                return;
        }
        if (p->count == AG_PODHIST_ENTRIES) {
                free(p->ring[p->head].text);
                p->head = (p->head + 1) % AG_PODHIST_ENTRIES;
                p->count--;
                p->dropped++;
        }
        struct hentry *e = &p->ring[(p->head + p->count++) % AG_PODHIST_ENTRIES];
        e->mono = mono_now();
        e->wall = wall_now();
        e->text = text;
        if (h->sink == NULL) {
                cJSON_Delete(j);
                return;
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "uid", p->uid);
        cJSON_AddItemToObject(o, "entry", with_times(p, e, j));
        publish(h, "entry", o);
}

void ag_podhist_status_sent(struct ag_podhist *h, const char *uid, const char *body)
{
        struct hpod *p = find(h, uid);
        if (p == NULL || body == NULL)
                return;
        cJSON *doc = cJSON_Parse(body);
        cJSON *status = cJSON_DetachItemFromObjectCaseSensitive(doc, "status");
        cJSON_Delete(doc);
        if (status == NULL)
                return;
        cJSON *last = p->last_status != NULL ? cJSON_Parse(p->last_status) : NULL;
        cJSON *diff = k8s_json_diff(last, status, "status");
        cJSON_Delete(last);
        char *text = diff != NULL ? cJSON_PrintUnformatted(status) : NULL;
        if (text == NULL) {
                cJSON_Delete(diff);
                cJSON_Delete(status);
                return;
        }
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "kind", "status");
        const cJSON *phase = cJSON_GetObjectItemCaseSensitive(status, "phase");
        if (cJSON_IsString(phase))
                cJSON_AddStringToObject(j, "phase", phase->valuestring);
        /* The same body again (a retry after a failure): said so, no diff. */
        if (cJSON_GetArraySize(diff) == 0)
                cJSON_AddBoolToObject(j, "resent", true);
        cJSON_AddItemToObject(j, "diff", diff);
        cJSON_Delete(status);
        free(p->last_status);
        p->last_status = text;
        add_entry(h, p, j);
}

void ag_podhist_status_answer(struct ag_podhist *h, const char *uid, bool accepted, long code)
{
        struct hpod *p = find(h, uid);
        if (p == NULL)
                return;
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "kind", "statusAck");
        cJSON_AddBoolToObject(j, "accepted", accepted);
        cJSON_AddNumberToObject(j, "code", (double)code);
        add_entry(h, p, j);
}

void ag_podhist_spec(struct ag_podhist *h, const char *uid, const char *object, cJSON *diff)
{
        struct hpod *p = find(h, uid);
        if (p == NULL || cJSON_GetArraySize(diff) == 0) {
                cJSON_Delete(diff);
                return;
        }
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "kind", "spec");
        cJSON_AddStringToObject(j, "object", object);
        cJSON_AddItemToObject(j, "diff", diff);
        add_entry(h, p, j);
}

void ag_podhist_node(struct ag_podhist *h, const char *node_name, const cJSON *node)
{
        cJSON *diff = h->node != NULL ? k8s_node_spec_diff(h->node, node) : NULL;
        if (cJSON_GetArraySize(diff) > 0) {
                char object[300];
                snprintf(object, sizeof(object), "Node/%s", node_name ? node_name : "");
                for (struct hpod *p = h->pods; p; p = p->next)
                        if (!p->gone)
                                ag_podhist_spec(h, p->uid, object, cJSON_Duplicate(diff, true));
        }
        cJSON_Delete(diff);
        /* Keep only what the diff compares (a node's status is large). */
        cJSON *keep = cJSON_CreateObject();
        const cJSON *labels = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(node, "metadata"), "labels");
        const cJSON *spec = cJSON_GetObjectItemCaseSensitive(node, "spec");
        cJSON *meta = cJSON_AddObjectToObject(keep, "metadata");
        if (labels != NULL)
                cJSON_AddItemToObject(meta, "labels", cJSON_Duplicate(labels, true));
        if (spec != NULL)
                cJSON_AddItemToObject(keep, "spec", cJSON_Duplicate(spec, true));
        cJSON_Delete(h->node);
        h->node = keep;
}

void ag_podhist_event(struct ag_podhist *h, const char *uid, const char *type, const char *reason,
                      const char *message, const char *field_path)
{
        struct hpod *p = find(h, uid);
        if (p == NULL)
                return;
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "kind", "event");
        cJSON_AddStringToObject(j, "type", type ? type : "");
        cJSON_AddStringToObject(j, "reason", reason ? reason : "");
        cJSON_AddStringToObject(j, "message", message ? message : "");
        if (field_path != NULL)
                cJSON_AddStringToObject(j, "fieldPath", field_path);
        add_entry(h, p, j);
}

static cJSON *pod_json(const struct hpod *p)
{
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "namespace", p->ns);
        cJSON_AddStringToObject(o, "name", p->name);
        cJSON_AddStringToObject(o, "uid", p->uid);
        cJSON_AddBoolToObject(o, "gone", p->gone);
        cJSON_AddNumberToObject(o, "dropped", (double)p->dropped);
        cJSON *tl = cJSON_AddArrayToObject(o, "timeline");
        for (size_t i = 0; tl && i < p->n_steps; i++)
                cJSON_AddItemToArray(tl, step_json(p, &p->steps[i]));
        cJSON *hist = cJSON_AddArrayToObject(o, "history");
        for (size_t i = 0; hist && i < p->count; i++)
                cJSON_AddItemToArray(hist,
                                     entry_json(p, &p->ring[(p->head + i) % AG_PODHIST_ENTRIES]));
        return o;
}

cJSON *ag_podhist_json(const struct ag_podhist *h)
{
        cJSON *o = cJSON_CreateObject();
        cJSON *arr = cJSON_AddArrayToObject(o, "pods");
        for (int gone = 0; arr && gone < 2; gone++)
                for (const struct hpod *p = h->pods; p; p = p->next)
                        if (p->gone == (gone == 1))
                                cJSON_AddItemToArray(arr, pod_json(p));
        return o;
}
