/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/client/events.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "agent/core/log.h"
#include "lib/wallclock.h"
#include "lib/cleanup.h"

#define CACHE_MAX 4096
#define RETRIES   12
#define RETRY_MS  10000

struct record {
        struct record *next;
        struct ag_events *ev;
        /* kind, namespace, name, uid, fieldPath of the object, type, reason,
         * message, each ended by a newline but the message: the event's
         * identity, and what its POST body is made from (the body itself
         * is not kept: 4096 records of ~0.6 KiB) */
        char *key;
        bool cluster_scoped; /* the object has no namespace (the key says default) */
        char *ns;            /* where the event lives */
        char *name;          /* metadata.name of the Event */
        char first_ts[32];
        int count;
        bool created; /* the POST was accepted */
        bool dirty;   /* count/lastTimestamp changed since the last write */
        char last_ts[32];
        int attempts;
        struct ag_request *req;
        struct ag_timer *retry; /* only while a write waits for its retry */
};

struct ag_events {
        struct ag_loop *loop;
        struct ag_api *api;
        char *node;
        struct record *records; /* newest first */
        size_t n;
};

static void write_record(struct record *r);
static char *record_body(const struct record *r);

static void now_rfc3339(char *buf, size_t size)
{
        time_t t = (time_t)cb_wall_now();
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void record_free(struct record *r)
{
        if (r->req)
                ag_api_cancel(r->req);
        if (r->retry)
                ag_timer_free(r->retry);
        free(r->key);
        free(r->ns);
        free(r->name);
        free(r);
}

static void on_retry(struct ag_timer *t, void *data)
{
        (void)t;
        write_record(data);
}

/* The retry timer exists only while a write waits to be retried: the cache
 * keeps up to CACHE_MAX records, and a timerfd each would exhaust the
 * agent's fds (found by tests/faults: 4 timerfds left per pod). */
static void arm_retry(struct record *r)
{
        struct cb_error err = {0};
        if (r->retry == NULL && (r->retry = ag_timer_new(r->ev->loop, on_retry, r, &err)) == NULL) {
                log_warning("event %s/%s dropped: %s", r->ns, r->name, err.msg);
                return;
        }
        ag_timer_arm(r->retry, RETRY_MS);
}

static void drop_retry(struct record *r)
{
        if (r->retry != NULL) {
                ag_timer_free(r->retry);
                r->retry = NULL;
        }
}

static void on_done(struct ag_api_result *res, void *data)
{
        struct record *r = data;
        r->req = NULL;
        if (res->status >= 200 && res->status < 300) {
                r->created = true;
                r->attempts = 0;
                drop_retry(r);
                if (r->dirty)
                        write_record(r);
                return;
        }
        if (r->created && res->status == 404) {
                /* The event expired on the server: write it anew. */
                r->created = false;
                r->dirty = false;
                write_record(r);
                return;
        }
        if (++r->attempts >= RETRIES) {
                log_warning("event %s/%s dropped after %d attempts: %s", r->ns, r->name, RETRIES,
                            res->error ? res->error : "no response");
                r->attempts = 0;
                drop_retry(r);
                return;
        }
        log_v(2, "event %s/%s not written (%s); retrying", r->ns, r->name,
              res->error ? res->error : "no response");
        arm_retry(r);
}

static void write_record(struct record *r)
{
        if (r->req != NULL)
                return;
        struct ag_events *ev = r->ev;
        _cleanup_free_ char *ns = ag_api_escape(r->ns);
        char path[1024];
        struct ag_api_req_opts opts = {.cls = AG_API_CLASS_EVENTS};
        _cleanup_free_ char *patch = NULL;
        const char *method;
        if (!r->created) {
                snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", ns ? ns : "");
                method = "POST";
                /* A first write after repeats carries the current count. */
                patch = record_body(r);
                if (patch == NULL) {
                        log_warning("event %s/%s: out of memory", r->ns, r->name);
                        arm_retry(r);
                        return;
                }
                opts.body = patch;
        } else {
                _cleanup_free_ char *name = ag_api_escape(r->name);
                snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events/%s", ns ? ns : "",
                         name ? name : "");
                method = "PATCH";
                cJSON *b = cJSON_CreateObject();
                cJSON_AddNumberToObject(b, "count", r->count);
                cJSON_AddStringToObject(b, "lastTimestamp", r->last_ts);
                patch = cJSON_PrintUnformatted(b);
                cJSON_Delete(b);
                if (patch == NULL)
                        return;
                opts.body = patch;
                opts.content_type = "application/strategic-merge-patch+json";
        }
        opts.body_len = strlen(opts.body);
        r->dirty = false;
        struct cb_error err = {0};
        r->req = ag_api_request(ev->api, method, path, &opts, on_done, r, &err);
        if (r->req == NULL) {
                log_warning("event %s/%s: %s", r->ns, r->name, err.msg);
                arm_retry(r);
        }
}

int ag_events_new(struct ag_loop *loop, struct ag_api *api, const char *node_name,
                  struct ag_events **ret, struct cb_error *err)
{
        struct ag_events *ev = calloc(1, sizeof(*ev));
        if (ev == NULL || (ev->node = strdup(node_name)) == NULL) {
                free(ev);
                return cb_error_set(err, ENOMEM, "events");
        }
        ev->loop = loop;
        ev->api = api;
        *ret = ev;
        return 0;
}

void ag_events_free(struct ag_events *ev)
{
        if (ev == NULL)
                return;
        while (ev->records) {
                struct record *r = ev->records;
                ev->records = r->next;
                record_free(r);
        }
        free(ev->node);
        free(ev);
}

static char *make_body(const struct ag_events *ev, const struct ag_event_object *o, const char *ns,
                       const char *name, const char *type, const char *reason, const char *message,
                       const char *first_ts, const char *last_ts, int count)
{
        cJSON *b = cJSON_CreateObject();
        cJSON_AddStringToObject(b, "apiVersion", "v1");
        cJSON_AddStringToObject(b, "kind", "Event");
        cJSON *meta = cJSON_AddObjectToObject(b, "metadata");
        cJSON_AddStringToObject(meta, "name", name);
        cJSON_AddStringToObject(meta, "namespace", ns);
        cJSON *io = cJSON_AddObjectToObject(b, "involvedObject");
        cJSON_AddStringToObject(io, "kind", o->kind);
        if (o->namespace_)
                cJSON_AddStringToObject(io, "namespace", o->namespace_);
        cJSON_AddStringToObject(io, "name", o->name);
        if (o->uid)
                cJSON_AddStringToObject(io, "uid", o->uid);
        cJSON_AddStringToObject(io, "apiVersion", "v1");
        if (o->field_path)
                cJSON_AddStringToObject(io, "fieldPath", o->field_path);
        cJSON_AddStringToObject(b, "reason", reason);
        cJSON_AddStringToObject(b, "message", message);
        cJSON *src = cJSON_AddObjectToObject(b, "source");
        cJSON_AddStringToObject(src, "component", "kubelet");
        cJSON_AddStringToObject(src, "host", ev->node);
        cJSON_AddStringToObject(b, "firstTimestamp", first_ts);
        cJSON_AddStringToObject(b, "lastTimestamp", last_ts);
        cJSON_AddNumberToObject(b, "count", count);
        cJSON_AddStringToObject(b, "type", type);
        cJSON_AddNullToObject(b, "eventTime");
        cJSON_AddStringToObject(b, "reportingComponent", "kubelet");
        cJSON_AddStringToObject(b, "reportingInstance", ev->node);
        char *text = cJSON_PrintUnformatted(b);
        cJSON_Delete(b);
        return text;
}

/* The POST body, from the record's key (see struct record). */
static char *record_body(const struct record *r)
{
        _cleanup_free_ char *k = strdup(r->key);
        if (k == NULL)
                return NULL;
        char *f[8];
        char *p = k;
        for (int i = 0; i < 7; i++) {
                f[i] = p;
                p = strchr(p, '\n');
                if (p == NULL)
                        return NULL;
                *p++ = '\0';
        }
        f[7] = p; /* the message: the rest, newlines and all */
        struct ag_event_object o = {.kind = f[0],
                                    .namespace_ = r->cluster_scoped ? NULL : f[1],
                                    .name = f[2],
                                    .uid = f[3][0] ? f[3] : NULL,
                                    .field_path = f[4][0] ? f[4] : NULL};
        return make_body(r->ev, &o, r->ns, r->name, f[5], f[6], f[7], r->first_ts, r->last_ts,
                         r->count);
}

void ag_events_record(struct ag_events *ev, const struct ag_event_object *o, const char *type,
                      const char *reason, const char *message)
{
        const char *ns = o->namespace_ ? o->namespace_ : "default";
        size_t klen = strlen(o->kind) + strlen(ns) + strlen(o->name) +
                      strlen(o->uid ? o->uid : "") + strlen(o->field_path ? o->field_path : "") +
                      strlen(type) + strlen(reason) + strlen(message) + 16;
        _cleanup_free_ char *key = malloc(klen);
        if (key == NULL)
                return;
        snprintf(key, klen, "%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s", o->kind, ns, o->name,
                 o->uid ? o->uid : "", o->field_path ? o->field_path : "", type, reason, message);
        char ts[32];
        now_rfc3339(ts, sizeof(ts));
        for (struct record *r = ev->records; r; r = r->next) {
                if (strcmp(r->key, key) != 0)
                        continue;
                r->count++;
                snprintf(r->last_ts, sizeof(r->last_ts), "%s", ts);
                r->dirty = true;
                if (r->created)
                        write_record(r);
                return;
        }
        struct record *r = calloc(1, sizeof(*r));
        if (r == NULL)
                return;
        struct timespec tp;
        clock_gettime(CLOCK_REALTIME, &tp);
        char name[512];
        snprintf(name, sizeof(name), "%s.%llx", o->name,
                 (unsigned long long)tp.tv_sec * 1000000000ULL + (unsigned long long)tp.tv_nsec);
        r->ev = ev;
        r->key = steal_pointer(&key);
        r->cluster_scoped = o->namespace_ == NULL;
        r->ns = strdup(ns);
        r->name = strdup(name);
        r->count = 1;
        snprintf(r->first_ts, sizeof(r->first_ts), "%s", ts);
        snprintf(r->last_ts, sizeof(r->last_ts), "%s", ts);
        if (!r->ns || !r->name) {
                record_free(r);
                return;
        }
        r->next = ev->records;
        ev->records = r;
        if (++ev->n > CACHE_MAX) {
                /* Drop the oldest idle record, never the one just added:
                 * it is idle too (its first write is below), and when every
                 * other record had a write in flight it was freed and then
                 * written (a use-after-free that crashed the agent in a
                 * 1000-cycle soak; unit: test_events). */
                struct record **pp = &r->next;
                struct record **victim = NULL;
                for (; *pp; pp = &(*pp)->next)
                        if ((*pp)->req == NULL)
                                victim = pp;
                if (victim != NULL) {
                        struct record *v = *victim;
                        *victim = v->next;
                        record_free(v);
                        ev->n--;
                }
        }
        write_record(r);
}
