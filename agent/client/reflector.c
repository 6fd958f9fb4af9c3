/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/client/reflector.h"
#include "agent/k8s/validate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "agent/core/log.h"
#include "lib/cleanup.h"

#define BACKOFF_INITIAL_MS 800
#define BACKOFF_CAP_MS     30000
#define BACKOFF_RESET_MS   120000
#define MIN_WATCH_TIMEOUT  300  /* client-go minWatchTimeout: 5 min */
#define SHORT_WATCH_MS     1000 /* an empty watch shorter than this is a failure */

/* ---- backoff ---- */

void ag_backoff_init(struct ag_backoff *b, uint64_t initial_ms, uint64_t cap_ms,
                     uint64_t reset_after_ms)
{
        *b = (struct ag_backoff){
            .initial_ms = initial_ms, .cap_ms = cap_ms, .reset_after_ms = reset_after_ms};
}

uint64_t ag_backoff_next(struct ag_backoff *b, uint64_t now_ms, double rand01)
{
        if (b->current_ms == 0 ||
            (b->reset_after_ms > 0 && now_ms - b->last_failure_ms > b->reset_after_ms))
                b->current_ms = b->initial_ms;
        else if (b->current_ms < b->cap_ms)
                b->current_ms = b->current_ms * 2 > b->cap_ms ? b->cap_ms : b->current_ms * 2;
        b->last_failure_ms = now_ms;
        return b->current_ms + (uint64_t)((double)b->current_ms * rand01);
}

static double random01(void)
{
        uint32_t v = 0;
        if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
                v = (uint32_t)ag_now_ms() * 2654435761u;
        return (double)v / 4294967296.0;
}

/* ---- the stream parser ---- */

void ag_watch_parser_reset(struct ag_watch_parser *p)
{
        free(p->buf);
        size_t max = p->max_object;
        *p = (struct ag_watch_parser){.max_object = max};
}

/* Appends n bytes of the event being read. Past max_object the event is
 * skipped to its end, its first max_object bytes kept and its whole size
 * counted in oversized. */
static int parser_append(struct ag_watch_parser *p, const char *d, size_t n, struct cb_error *err)
{
        size_t max = p->max_object ? p->max_object : AG_WATCH_MAX_OBJECT_BYTES;
        if (p->oversized > 0) {
                p->oversized += n;
                return 0;
        }
        size_t keep = n;
        if (p->len + n > max) {
                keep = max - p->len;
                p->oversized = p->len + n;
        }
        if (p->len + keep > p->cap) {
                size_t cap = p->cap ? p->cap : 4096;
                while (cap < p->len + keep)
                        cap *= 2;
                if (cap > max)
                        cap = max;
                char *b = realloc(p->buf, cap);
                if (b == NULL)
                        return cb_error_set(err, ENOMEM, "out of memory buffering a watch event");
                p->buf = b;
                p->cap = cap;
        }
        if (keep > 0)
                memcpy(p->buf + p->len, d, keep);
        p->len += keep;
        return 0;
}

/* The end of a string's plain run from d: the offset of its first '"' or
 * '\\', or n. memchr, since nearly every string of an object holds
 * neither until its closing quote. */
static size_t string_run(const char *d, size_t n)
{
        const char *q = memchr(d, '"', n);
        size_t end = q != NULL ? (size_t)(q - d) : n;
        const char *b = memchr(d, '\\', end);
        return b != NULL ? (size_t)(b - d) : end;
}

/* Outside a string, the bytes that move the parser's state. */
static const bool structural[256] = {
    ['"'] = true, ['{'] = true, ['}'] = true, ['['] = true, [']'] = true};

/* The end of a run of bytes inside an object but outside its strings that
 * holds none of them (numbers, literals, separators, whitespace). */
static size_t plain_run(const char *d, size_t n)
{
        size_t j = 0;
        while (j < n && !structural[(unsigned char)d[j]])
                j++;
        return j;
}

int ag_watch_parser_feed(struct ag_watch_parser *p, const char *data, size_t len,
                         ag_watch_object_fn fn, void *fn_data, struct cb_error *err)
{
        size_t i = 0;
        while (i < len) {
                if (p->depth > 0 && !p->escape) {
                        size_t run = p->in_string ? string_run(data + i, len - i)
                                                  : plain_run(data + i, len - i);
                        if (run > 0) {
                                if (parser_append(p, data + i, run, err) < 0)
                                        return -1;
                                i += run;
                                continue;
                        }
                }
                char c = data[i++];
                if (p->depth == 0) {
                        /* Between objects only whitespace may appear. */
                        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
                                continue;
                        if (c != '{')
                                return cb_error_set(
                                    err, 0,
                                    "malformed watch stream: unexpected byte 0x%02x between "
                                    "events (want '{')",
                                    (unsigned char)c);
                }
                if (parser_append(p, &c, 1, err) < 0)
                        return -1;
                if (p->in_string) {
                        if (p->escape)
                                p->escape = false;
                        else if (c == '\\')
                                p->escape = true;
                        else if (c == '"')
                                p->in_string = false;
                        continue;
                }
                if (c == '"') {
                        p->in_string = true;
                } else if (c == '{' || c == '[') {
                        if (++p->depth > K8S_MAX_DEPTH)
                                return cb_error_set(err, 0,
                                                    "malformed watch stream: nesting deeper "
                                                    "than %d",
                                                    K8S_MAX_DEPTH);
                } else if (c == '}' || c == ']') {
                        if (--p->depth == 0) {
                                int r = fn(p->buf, p->len, fn_data, err);
                                p->len = 0;
                                p->oversized = 0;
                                if (r < 0)
                                        return -1;
                        }
                }
        }
        return 0;
}

int ag_watch_parser_finish(const struct ag_watch_parser *p, struct cb_error *err)
{
        if (p->len > 0)
                return cb_error_set(err, 0,
                                    "the watch stream ended inside an event (%zu bytes of an "
                                    "unfinished object)",
                                    p->len);
        return 0;
}

static void object_ref(const cJSON *obj, char *buf, size_t size);

int ag_watch_event_parse(const char *json, size_t len, struct k8s_watch_event *ev,
                         struct cb_error *err)
{
        ev->object = NULL;
        /* A \u0000 is marked in a copy: the object holding it is refused
         * by the store (object_new), not the event stream. */
        _cleanup_free_ char *copy = NULL;
        if (k8s_json_has_nul(json, len)) {
                copy = malloc(len ? len : 1);
                if (copy == NULL)
                        return cb_error_set(err, ENOMEM, "out of memory");
                memcpy(copy, json, len);
                k8s_json_mark_nul(copy, len);
                json = copy;
        }
        _cleanup_cjson_ cJSON *root = cJSON_ParseWithLength(json, len);
        if (root == NULL)
                return cb_error_set(err, 0, "malformed watch event: not valid JSON (%zu bytes)",
                                    len);
        if (k8s_watch_event_from_json(root, ev, err) < 0) {
                char ref[320];
                object_ref(cJSON_GetObjectItemCaseSensitive(root, "object"), ref, sizeof(ref));
                if (ref[0] != '\0')
                        return cb_error_prefix(err, "watch event for %s", ref);
                return cb_error_prefix(err, "watch event");
        }
        return 0;
}

/* ---- the store ---- */

static const char *meta_string(const cJSON *obj, const char *key)
{
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, key);
        return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* "namespace/name" (or "name") of an event object, for messages. */
static void object_ref(const cJSON *obj, char *buf, size_t size)
{
        const char *ns = meta_string(obj, "namespace");
        const char *name = meta_string(obj, "name");
        char n[160], d[128];
        k8s_nul_display(name != NULL ? name : "", n, sizeof(n));
        k8s_nul_display(ns != NULL ? ns : "", d, sizeof(d));
        if (name == NULL)
                snprintf(buf, size, "%s", "");
        else if (d[0] != '\0')
                snprintf(buf, size, "%s/%s", d, n);
        else
                snprintf(buf, size, "%s", n);
}

void ag_store_init(struct ag_store *s, enum ag_kind kind, ag_change_fn fn, void *data)
{
        *s = (struct ag_store){.kind = kind, .fn = fn, .data = data};
}

static void object_free(struct ag_object *o)
{
        if (o == NULL)
                return;
        free(o->uid);
        free(o->namespace_);
        free(o->name);
        free(o->resource_version);
        cJSON_Delete(o->json);
        k8s_pod_free(o->pod);
        k8s_node_free(o->node);
        free(o);
}

void ag_store_clear(struct ag_store *s)
{
        for (size_t i = 0; i < s->n; i++)
                object_free(s->items[i]);
        free(s->items);
        s->items = NULL;
        s->n = s->cap = 0;
}

/* A linear store: a node has at most --max-pods pods (110 by default). */
static ssize_t store_find(const struct ag_store *s, const char *uid)
{
        for (size_t i = 0; i < s->n; i++)
                if (strcmp(s->items[i]->uid, uid) == 0)
                        return (ssize_t)i;
        return -1;
}

const struct ag_object *ag_store_get(const struct ag_store *s, const char *uid)
{
        ssize_t i = store_find(s, uid);
        return i < 0 ? NULL : s->items[i];
}

static char *dup_or_null(const char *s)
{
        return s != NULL ? strdup(s) : NULL;
}

/* Builds an object from json (taken, also on failure). */
static int object_new(const struct ag_store *s, cJSON *json, struct ag_object **ret,
                      struct cb_error *err)
{
        enum ag_kind kind = s->kind;
        struct ag_object *o = calloc(1, sizeof(*o));
        if (o == NULL) {
                cJSON_Delete(json);
                return cb_error_set(err, ENOMEM, "out of memory");
        }
        o->json = json;
        o->received_mono_us = s->arrival_mono_us;
        o->received_wall_us = s->arrival_wall_us;
        char ref[320];
        object_ref(json, ref, sizeof(ref));
        char nul_at[256];
        if (k8s_json_find_nul(json, nul_at, sizeof(nul_at))) {
                /* cJSON would have cut the string there ("web\u0000../x"
                 * read as "web"): this object alone is refused. */
                char uid[160];
                k8s_nul_display(meta_string(json, "uid") ? meta_string(json, "uid") : "", uid,
                                sizeof(uid));
                object_free(o);
                return cb_error_set(err, 0,
                                    "%s (uid %s): %s: a NUL character (\\u0000) in a string; "
                                    "the object is refused (an apiserver never serves one: "
                                    "check what serves %s)",
                                    ref[0] ? ref : "an object", uid[0] ? uid : "none",
                                    nul_at[0] ? nul_at : "(the object)", ref[0] ? ref : "it");
        }
        const char *uid = meta_string(json, "uid");
        if (uid == NULL || uid[0] == '\0') {
                object_free(o);
                return cb_error_set(err, 0, "%s: metadata.uid: required field is missing",
                                    ref[0] ? ref : "an object");
        }
        o->uid = strdup(uid);
        o->namespace_ = dup_or_null(meta_string(json, "namespace"));
        o->name = dup_or_null(meta_string(json, "name"));
        o->resource_version = dup_or_null(meta_string(json, "resourceVersion"));
        /* The one decode of this version of the object: the pod keeps its
         * JSON as text, and goes on by reference (agent/pods/pods.c); the
         * tree is the consumers' while the change is reported (settle). */
        int r = kind == AG_KIND_POD    ? k8s_pod_decode(json, &o->pod, err)
                : kind == AG_KIND_NODE ? k8s_node_from_json(json, &o->node, err)
                                       : 0; /* AG_KIND_RAW: the consumer decodes */
        if (r < 0 || o->uid == NULL) {
                if (ref[0] == '\0') /* uid points into json, which goes with o */
                        snprintf(ref, sizeof(ref), "%s", uid);
                object_free(o);
                return cb_error_prefix(err, "%s", ref);
        }
        *ret = o;
        return 0;
}

static int store_insert(struct ag_store *s, struct ag_object *o, struct cb_error *err)
{
        if (s->n == s->cap) {
                size_t cap = s->cap ? s->cap * 2 : 16;
                struct ag_object **items = realloc(s->items, cap * sizeof(*items));
                if (items == NULL) {
                        object_free(o);
                        return cb_error_set(err, ENOMEM, "out of memory");
                }
                s->items = items;
                s->cap = cap;
        }
        s->items[s->n++] = o;
        return 0;
}

static void store_remove_at(struct ag_store *s, size_t i)
{
        struct ag_object *o = s->items[i];
        s->items[i] = s->items[--s->n];
        /* A pod gone while the agent was not watching (a relist) is
         * reported with its last JSON too, as every change is (a mirror
         * pod is told from its annotations). */
        if (o->json == NULL && o->pod != NULL)
                o->json = k8s_pod_json_parse(o->pod);
        if (s->fn != NULL)
                s->fn(AG_DELETED, o, s->data);
        object_free(o);
}

static bool same_rv(const struct ag_object *a, const struct ag_object *b)
{
        return a->resource_version != NULL && b->resource_version != NULL &&
               strcmp(a->resource_version, b->resource_version) == 0;
}

/* After its change was reported: a pod keeps its JSON as text, the tree
 * goes (a node's consumers read the tree later: it stays). */
static void settle(struct ag_object *o)
{
        if (o->pod != NULL) {
                cJSON_Delete(o->json);
                o->json = NULL;
        }
}

/* Puts o in place of an entry with the same uid, or adds it. */
static int store_upsert(struct ag_store *s, struct ag_object *o, struct cb_error *err)
{
        ssize_t i = store_find(s, o->uid);
        if (i >= 0) {
                struct ag_object *old = s->items[i];
                if (same_rv(old, o)) {
                        object_free(o);
                        return 0;
                }
                s->items[i] = o;
                if (s->fn != NULL)
                        s->fn(AG_UPDATED, o, s->data);
                settle(o);
                object_free(old);
                return 0;
        }
        if (store_insert(s, o, err) < 0)
                return -1;
        if (s->fn != NULL)
                s->fn(AG_ADDED, o, s->data);
        settle(o);
        return 0;
}

int ag_store_apply(struct ag_store *s, enum k8s_watch_type type, cJSON *json, struct cb_error *err)
{
        if (type != K8S_WATCH_ADDED && type != K8S_WATCH_MODIFIED && type != K8S_WATCH_DELETED) {
                cJSON_Delete(json);
                return cb_error_set(err, 0, "only ADDED, MODIFIED and DELETED change the store");
        }
        if (type == K8S_WATCH_DELETED) {
                const char *uid = meta_string(json, "uid");
                ssize_t i = uid != NULL ? store_find(s, uid) : -1;
                if (i >= 0) {
                        /* Report the object's final state, as the event has it. */
                        struct ag_object *o;
                        s->received++;
                        if (object_new(s, json, &o, err) == 0) {
                                object_free(s->items[i]);
                                s->items[i] = o;
                        }
                        store_remove_at(s, (size_t)i);
                        return 0;
                }
                cJSON_Delete(json);
                return 0;
        }
        struct ag_object *o;
        s->received++;
        if (object_new(s, json, &o, err) < 0)
                return -1;
        return store_upsert(s, o, err);
}

int ag_store_replace(struct ag_store *s, cJSON *items, struct cb_error *err)
{
        _cleanup_cjson_ cJSON *list = items;
        if (!cJSON_IsArray(list))
                return cb_error_set(err, 0, "items: must be a list");
        size_t n = (size_t)cJSON_GetArraySize(list);
        _cleanup_free_ struct ag_object **fresh = calloc(n ? n : 1, sizeof(*fresh));
        if (fresh == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        /* Decode every item first: a list that cannot be read as a whole
         * leaves the store untouched. */
        size_t k = 0, skipped = 0, idx = 0;
        struct cb_error item_err = {0};
        while (list->child != NULL) {
                cJSON *it = cJSON_DetachItemViaPointer(list, list->child);
                s->received++;
                /* An item that cannot be decoded is skipped (and reported),
                 * so one bad object cannot stop the node from syncing. */
                if (object_new(s, it, &fresh[k], &item_err) < 0) {
                        if (skipped++ == 0 && err != NULL) {
                                *err = item_err;
                                cb_error_prefix(err, "items[%zu]", idx);
                        }
                } else {
                        k++;
                }
                idx++;
        }
        /* Deleted while we were not watching. */
        for (size_t i = s->n; i-- > 0;) {
                bool present = false;
                for (size_t j = 0; j < k && !present; j++)
                        present = strcmp(fresh[j]->uid, s->items[i]->uid) == 0;
                if (!present)
                        store_remove_at(s, i);
        }
        for (size_t j = 0; j < k; j++) {
                struct ag_object *o = steal_pointer(&fresh[j]);
                if (store_upsert(s, o, err) < 0) {
                        for (size_t i = j + 1; i < k; i++)
                                object_free(fresh[i]);
                        return -1;
                }
        }
        return (int)skipped;
}

/* ---- the reflector ---- */

struct ag_reflector {
        struct ag_loop *loop;
        struct ag_api *api;
        struct ag_reflector_config cfg;
        char *what, *path, *field_selector; /* owned copies; selector escaped */
        struct ag_store store;
        struct ag_watch_parser parser;
        struct ag_backoff backoff;
        struct ag_timer *retry;
        struct ag_request *req;
        char *rv;      /* last synced resourceVersion, NULL before the first list */
        char *list_rv; /* resourceVersion of the list in flight or to retry */
        bool watching; /* req is a watch (else a list) */
        bool next_is_list;
        bool expired; /* the watch stream carried 410 Expired */
        bool stream_failed;
        char stream_error[CB_ERROR_MSG_MAX];
        uint64_t watch_started_ms;
        unsigned long watch_events;
        int timeout_s;
};

static void do_list(struct ag_reflector *r, const char *rv);
static void do_watch(struct ag_reflector *r);

/* The objects decoded from what just arrived carry its arrival time (the
 * pod timeline's `watched` step). */
static void stamp_arrival(struct ag_reflector *r)
{
        struct timespec m, w;
        clock_gettime(CLOCK_MONOTONIC, &m);
        clock_gettime(CLOCK_REALTIME, &w);
        r->store.arrival_mono_us = (uint64_t)m.tv_sec * 1000000u + (uint64_t)m.tv_nsec / 1000u;
        r->store.arrival_wall_us = (int64_t)w.tv_sec * 1000000 + w.tv_nsec / 1000;
}

static void set_str(char **dst, const char *src)
{
        char *c = src != NULL ? strdup(src) : NULL;
        free(*dst);
        *dst = c;
}

static void retry_later(struct ag_reflector *r, bool list)
{
        uint64_t ms = ag_backoff_next(&r->backoff, ag_now_ms(), random01());
        r->next_is_list = list;
        log_v(1, "%s: retrying the %s in %llu ms", r->what, list ? "list" : "watch",
              (unsigned long long)ms);
        ag_timer_arm(r->retry, ms);
}

static void on_retry(struct ag_timer *t, void *data)
{
        struct ag_reflector *r = data;
        if (r->next_is_list)
                do_list(r, r->list_rv);
        else
                do_watch(r);
}

static void on_list_done(struct ag_api_result *res, void *data)
{
        struct ag_reflector *r = data;
        r->req = NULL;
        const char *asked = r->list_rv != NULL ? r->list_rv : "";
        if (res->status == 410 || res->status == 504) {
                /* Expired, or "Too large resource version": the second step
                 * of client-go's relist is a quorum read (RV ""). */
                if (asked[0] != '\0') {
                        log_warning("%s: list at resourceVersion %s failed (%s); listing at the "
                                    "latest resourceVersion",
                                    r->what, asked, res->error);
                        do_list(r, "");
                        return;
                }
        }
        if (res->error != NULL) {
                log_error("%s: list failed: %s", r->what, res->error);
                retry_later(r, true);
                return;
        }
        const char *rv = meta_string(res->json, "resourceVersion");
        cJSON *items = cJSON_DetachItemFromObjectCaseSensitive(res->json, "items");
        char nul_at[256];
        if (k8s_json_find_nul(res->json, nul_at, sizeof(nul_at))) {
                /* outside the items: the list itself cannot be read */
                cJSON_Delete(items);
                log_error("%s: the list from %s has a NUL character (\\u0000) in %s; retrying",
                          r->what, ag_api_server(r->api), nul_at);
                retry_later(r, true);
                return;
        }
        if (rv == NULL) {
                cJSON_Delete(items);
                log_error("%s: the list from %s has no metadata.resourceVersion; retrying", r->what,
                          ag_api_server(r->api));
                retry_later(r, true);
                return;
        }
        if (items == NULL || cJSON_IsNull(items)) {
                cJSON_Delete(items);
                items = cJSON_CreateArray(); /* an empty list may omit items */
        }
        struct cb_error err = {0};
        stamp_arrival(r);
        int skipped = ag_store_replace(&r->store, items, &err);
        if (skipped < 0) {
                log_error("%s: cannot apply the list: %s", r->what, err.msg);
                retry_later(r, true);
                return;
        }
        if (skipped > 0)
                log_error("%s: %d listed object(s) skipped: %s", r->what, skipped, err.msg);
        set_str(&r->rv, rv);
        log_v(2, "%s: listed %zu object(s) at resourceVersion %s", r->what, r->store.n, rv);
        if (r->cfg.on_synced != NULL)
                r->cfg.on_synced(r->store.n, r->cfg.data);
        do_watch(r);
}

static void do_list(struct ag_reflector *r, const char *rv)
{
        if (rv != r->list_rv)
                set_str(&r->list_rv, rv);
        _cleanup_free_ char *path = NULL;
        int n;
        if (rv != NULL && rv[0] != '\0')
                n = asprintf(&path, "%s?fieldSelector=%s&resourceVersion=%s", r->path,
                             r->field_selector, rv);
        else
                n = asprintf(&path, "%s?fieldSelector=%s", r->path, r->field_selector);
        struct cb_error err = {0};
        /* one object with a \u0000 is refused alone (ag_store_replace) */
        const struct ag_api_req_opts o = {.nul_per_object = true};
        if (n >= 0)
                r->req = ag_api_request(r->api, "GET", path, &o, on_list_done, r, &err);
        r->watching = false;
        if (n < 0 || r->req == NULL) {
                log_error("%s: cannot start the list: %s", r->what,
                          n < 0 ? "out of memory" : err.msg);
                retry_later(r, true);
        }
}

static void apply_event(struct ag_reflector *r, struct k8s_watch_event *ev)
{
        /* A copy: the store may free the object. */
        _cleanup_free_ char *rv = dup_or_null(meta_string(ev->object, "resourceVersion"));
        char ref[320];
        object_ref(ev->object, ref, sizeof(ref));
        if (ev->type != K8S_WATCH_BOOKMARK) {
                struct cb_error err = {0};
                r->watch_events++;
                cJSON *obj = steal_pointer(&ev->object);
                if (ag_store_apply(&r->store, ev->type, obj, &err) < 0)
                        log_error("%s: watch event for %s ignored: %s%s", r->what,
                                  ref[0] ? ref : "an object", err.msg,
                                  strstr(err.msg, "check what serves") != NULL
                                      ? ""
                                      : " (the object is refused: check what serves it)");
        }
        if (rv != NULL && rv[0] != '\0' && strchr(rv, K8S_NUL_MARK) == NULL)
                set_str(&r->rv, rv);
}

/*
 * From the first bytes of a watch event too large to be read (no JSON
 * parser gets it): the event's type and its object's metadata, which Go's
 * encoder writes before spec and status ({"type":"ADDED","object":{"kind":
 * ...,"metadata":{...},"spec":...). The metadata is parsed alone once its
 * closing brace is within the prefix; NULL when it is not.
 */
cJSON *ag_watch_prefix_metadata(const char *s, size_t n, char *type, size_t type_size)
{
        int depth = 0;
        bool in_str = false, esc = false;
        size_t str_start = 0, key_start = 0, key_len = 0, meta_start = 0;
        bool key_pending = false, in_object = false, in_meta = false, want_type = false;
        if (type_size > 0)
                type[0] = '\0';
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                if (in_str) {
                        if (esc)
                                esc = false;
                        else if (c == '\\')
                                esc = true;
                        else if (c == '"') {
                                in_str = false;
                                if (want_type && depth == 1) {
                                        size_t l = i - str_start;
                                        if (l < type_size) {
                                                memcpy(type, s + str_start, l);
                                                type[l] = '\0';
                                        }
                                        want_type = false;
                                } else {
                                        key_start = str_start;
                                        key_len = i - str_start;
                                        key_pending = true;
                                }
                        }
                        continue;
                }
                if (c == '"') {
                        in_str = true;
                        str_start = i + 1;
                } else if (c == ':' && key_pending) {
                        key_pending = false;
                        bool is = false;
#define KEY_IS(k) (key_len == sizeof(k) - 1 && memcmp(s + key_start, k, key_len) == 0)
                        if (depth == 1 && KEY_IS("type"))
                                want_type = true;
                        else if (depth == 1 && KEY_IS("object"))
                                is = true;
                        else if (depth == 2 && in_object && KEY_IS("metadata"))
                                in_meta = true;
#undef KEY_IS
                        if (is)
                                in_object = true;
                } else if (c == '{' || c == '[') {
                        key_pending = false;
                        depth++;
                        if (in_meta && depth == 3 && meta_start == 0)
                                meta_start = i;
                } else if (c == '}' || c == ']') {
                        if (in_meta && depth == 3 && meta_start > 0)
                                return cJSON_ParseWithLength(s + meta_start, i + 1 - meta_start);
                        depth--;
                        if (depth == 1)
                                in_object = false;
                } else if (c == ',') {
                        key_pending = false;
                        if (depth == 2)
                                in_meta = meta_start > 0 ? in_meta : false;
                }
        }
        return NULL;
}

/* An event past AG_WATCH_MAX_OBJECT_BYTES: refused alone, logged with what
 * its prefix tells; the watch goes on past it (its resourceVersion taken),
 * so one oversized object cannot stop the node from seeing the others. A
 * DELETED one still removes its object from the store. */
static void oversized_event(struct ag_reflector *r, const char *json, size_t len)
{
        char type[32];
        _cleanup_cjson_ cJSON *meta = ag_watch_prefix_metadata(json, len, type, sizeof(type));
        cJSON *m = cJSON_CreateObject();
        if (m != NULL && meta != NULL)
                cJSON_AddItemReferenceToObject(m, "metadata", meta);
        char ref[320];
        object_ref(m, ref, sizeof(ref));
        const char *uid = m != NULL ? meta_string(m, "uid") : NULL;
        const char *rv = m != NULL ? meta_string(m, "resourceVersion") : NULL;
        char u[160];
        k8s_nul_display(uid != NULL ? uid : "", u, sizeof(u));
        size_t max = r->parser.max_object ? r->parser.max_object : AG_WATCH_MAX_OBJECT_BYTES;
        log_error("%s: watch event %s for %s (uid %s): %zu bytes exceed the limit of %zu bytes "
                  "for one object; the object is refused (kube-apiserver stores at most 1.5 "
                  "MiB: check what serves %s)",
                  r->what, type[0] ? type : "(no type)", ref[0] ? ref : "an object",
                  u[0] ? u : "unknown", r->parser.oversized, max, ref[0] ? ref : "it");
        r->watch_events++;
        if (strcmp(type, "DELETED") == 0 && uid != NULL) {
                struct cb_error err = {0};
                cJSON *gone = cJSON_Duplicate(m, true);
                if (gone != NULL)
                        (void)ag_store_apply(&r->store, K8S_WATCH_DELETED, gone, &err);
        }
        if (rv != NULL && rv[0] != '\0' && strchr(rv, K8S_NUL_MARK) == NULL &&
            !k8s_json_has_nul(rv, strlen(rv)))
                set_str(&r->rv, rv);
        cJSON_Delete(m);
}

static int on_event(const char *json, size_t len, void *data, struct cb_error *err)
{
        struct ag_reflector *r = data;
        struct k8s_watch_event ev = {0};
        if (r->parser.oversized > 0) {
                oversized_event(r, json, len);
                ag_api_release_memory();
                return 0;
        }
        if (ag_watch_event_parse(json, len, &ev, err) < 0)
                return -1;
        if (ev.type == K8S_WATCH_ERROR) {
                struct k8s_status *st = NULL;
                struct cb_error serr = {0};
                int code = 0;
                if (k8s_status_from_json(ev.object, &st, &serr) == 0) {
                        code = st->code;
                        cb_error_set(err, 0, "the watch stream carried an ERROR: %s (%s, %d)",
                                     st->message ? st->message : "(no message)",
                                     st->reason ? st->reason : "no reason", code);
                        k8s_status_free(st);
                } else {
                        cb_error_set(err, 0,
                                     "the watch stream carried an ERROR event whose "
                                     "object is not a Status: %s",
                                     serr.msg);
                }
                r->expired = code == 410;
                k8s_watch_event_clear(&ev);
                return -1;
        }
        apply_event(r, &ev);
        k8s_watch_event_clear(&ev);
        if (len >= AG_API_TRIM_BYTES)
                ag_api_release_memory();
        return 0;
}

static int on_stream(const char *buf, size_t len, void *data)
{
        struct ag_reflector *r = data;
        struct cb_error err = {0};
        stamp_arrival(r);
        if (ag_watch_parser_feed(&r->parser, buf, len, on_event, r, &err) < 0) {
                r->stream_failed = true;
                snprintf(r->stream_error, sizeof(r->stream_error), "%s", err.msg);
                return -1;
        }
        return 0;
}

static void on_watch_done(struct ag_api_result *res, void *data)
{
        struct ag_reflector *r = data;
        r->req = NULL;
        uint64_t lasted = ag_now_ms() - r->watch_started_ms;
        struct cb_error err = {0};
        if (r->expired || res->status == 410) {
                log_info("%s: the watch from resourceVersion %s expired (410): relisting", r->what,
                         r->rv);
                do_list(r, r->rv);
                return;
        }
        if (r->stream_failed) {
                log_error("%s: watch restarted: %s", r->what, r->stream_error);
                retry_later(r, false);
                return;
        }
        if (res->error != NULL) {
                if (res->status >= 200 && res->status < 300 &&
                    lasted >= 1000 * (uint64_t)r->timeout_s)
                        log_warning("%s: no data on the watch for %llu s: replacing the stalled "
                                    "connection (%s)",
                                    r->what, (unsigned long long)lasted / 1000, res->error);
                else
                        log_error("%s: watch failed: %s", r->what, res->error);
                retry_later(r, false);
                return;
        }
        if (ag_watch_parser_finish(&r->parser, &err) < 0) {
                log_error("%s: watch restarted: %s", r->what, err.msg);
                retry_later(r, false);
                return;
        }
        if (r->watch_events == 0 && lasted < SHORT_WATCH_MS) {
                log_warning("%s: the watch ended after %llu ms without any event", r->what,
                            (unsigned long long)lasted);
                retry_later(r, false);
                return;
        }
        log_v(3, "%s: watch ended after %llu ms; watching again from %s", r->what,
              (unsigned long long)lasted, r->rv);
        do_watch(r);
}

static void do_watch(struct ag_reflector *r)
{
        ag_watch_parser_reset(&r->parser);
        r->expired = r->stream_failed = false;
        r->stream_error[0] = '\0';
        r->watch_events = 0;
        r->watching = true;
        r->timeout_s = r->cfg.watch_timeout_s > 0
                           ? r->cfg.watch_timeout_s
                           : MIN_WATCH_TIMEOUT + (int)(random01() * MIN_WATCH_TIMEOUT);
        _cleanup_free_ char *rv = ag_api_escape(r->rv ? r->rv : "");
        _cleanup_free_ char *path = NULL;
        struct cb_error err = {0};
        if (rv != NULL && asprintf(&path,
                                   "%s?allowWatchBookmarks=true&fieldSelector=%s&resourceVersion="
                                   "%s&timeoutSeconds=%d&watch=true",
                                   r->path, r->field_selector, rv, r->timeout_s) >= 0) {
                /* A live watch sends bookmarks; one silent past the server's
                 * own timeout is a dead connection. */
                struct ag_api_req_opts o = {
                    .stream = on_stream,
                    .low_speed_time_s = r->timeout_s + AG_WATCH_STALL_MARGIN_S,
                    .timeout_ms = -1,
                };
                r->watch_started_ms = ag_now_ms();
                r->req = ag_api_request(r->api, "GET", path, &o, on_watch_done, r, &err);
        } else {
                path = NULL;
                cb_error_set(&err, ENOMEM, "out of memory");
        }
        if (r->req == NULL) {
                log_error("%s: cannot start the watch: %s", r->what, err.msg);
                retry_later(r, false);
        }
}

int ag_reflector_new(struct ag_loop *loop, struct ag_api *api,
                     const struct ag_reflector_config *cfg, struct ag_reflector **ret,
                     struct cb_error *err)
{
        struct ag_reflector *r = calloc(1, sizeof(*r));
        if (r == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        r->loop = loop;
        r->api = api;
        r->cfg = *cfg;
        r->what = strdup(cfg->what);
        r->path = strdup(cfg->path);
        r->field_selector = ag_api_escape(cfg->field_selector ? cfg->field_selector : "");
        r->parser.max_object = cfg->max_object_bytes;
        ag_store_init(&r->store, cfg->kind, cfg->on_change, cfg->data);
        ag_backoff_init(&r->backoff, BACKOFF_INITIAL_MS, BACKOFF_CAP_MS, BACKOFF_RESET_MS);
        r->retry = ag_timer_new(loop, on_retry, r, err);
        if (r->what == NULL || r->path == NULL || r->field_selector == NULL || r->retry == NULL) {
                ag_reflector_free(r);
                return cb_error_set(err, ENOMEM, "cannot set up the %s reflector", cfg->what);
        }
        *ret = r;
        return 0;
}

uint64_t ag_reflector_received(const struct ag_reflector *r)
{
        return r->store.received;
}

void ag_reflector_start(struct ag_reflector *r)
{
        do_list(r, "0");
}

void ag_reflector_free(struct ag_reflector *r)
{
        if (r == NULL)
                return;
        ag_api_cancel(r->req);
        ag_timer_free(r->retry);
        r->store.fn = NULL;
        ag_store_clear(&r->store);
        ag_watch_parser_reset(&r->parser);
        free(r->what);
        free(r->path);
        free(r->field_selector);
        free(r->rv);
        free(r->list_rv);
        free(r);
}
