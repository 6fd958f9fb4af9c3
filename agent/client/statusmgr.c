/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/client/statusmgr.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/core/log.h"
#include "lib/cleanup.h"

#define RESYNC_MS    10000
#define RETRY_MIN_MS 1000
/* the kubelet's status manager retries what failed at its next syncBatch,
 * every 10 s (syncPeriod), and at once when a newer status comes: no
 * longer than the resync here either */
#define RETRY_MAX_MS RESYNC_MS

struct entry {
        struct entry *next;
        struct ag_status_mgr *m;
        char *ns, *name, *uid;
        char *body;         /* the newest patch body */
        unsigned long gen;  /* bumped by every set */
        unsigned long sent; /* gen of the body in flight or last accepted */
        bool accepted;      /* `sent` was accepted */
        struct ag_request *req;
        struct ag_timer *retry;
        uint64_t backoff_ms;
};

struct ag_status_mgr {
        struct ag_loop *loop;
        struct ag_api *api;
        ag_status_delivered_fn fn;
        void *data;
        struct entry *entries;
        struct ag_timer *resync;
        struct ag_status_observer obs;
};

static void send_entry(struct entry *e);

static struct entry *find(const struct ag_status_mgr *m, const char *uid)
{
        for (struct entry *e = m->entries; e; e = e->next)
                if (strcmp(e->uid, uid) == 0)
                        return e;
        return NULL;
}

static void entry_free(struct entry *e)
{
        if (e->req)
                ag_api_cancel(e->req);
        if (e->retry)
                ag_timer_free(e->retry);
        free(e->ns);
        free(e->name);
        free(e->uid);
        free(e->body);
        free(e);
}

static void on_retry(struct ag_timer *t, void *data)
{
        (void)t;
        send_entry(data);
}

static void on_done(struct ag_api_result *res, void *data)
{
        struct entry *e = data;
        struct ag_status_mgr *m = e->m;
        e->req = NULL;
        if (m->obs.answered != NULL)
                m->obs.answered(e->uid, res->status >= 200 && res->status < 300, res->status,
                                m->obs.data);
        if (res->status >= 200 && res->status < 300) {
                e->accepted = true;
                e->backoff_ms = 0;
                log_v(2, "pod %s/%s: status delivered", e->ns, e->name);
                if (e->gen != e->sent)
                        send_entry(e); /* a newer status came meanwhile */
                else if (m->fn)
                        m->fn(e->uid, true, m->data);
                return;
        }
        if (res->status == 404 || res->status == 409) {
                /* The pod is gone, or the name now belongs to another pod
                 * (the uid precondition failed): never retry. */
                log_v(1, "pod %s/%s: status not delivered (%ld): %s", e->ns, e->name, res->status,
                      res->error ? res->error : "");
                e->accepted = true;
                e->gen = e->sent;
                if (m->fn)
                        m->fn(e->uid, false, m->data);
                return;
        }
        e->backoff_ms = e->backoff_ms ? e->backoff_ms * 2 : RETRY_MIN_MS;
        if (e->backoff_ms > RETRY_MAX_MS)
                e->backoff_ms = RETRY_MAX_MS;
        log_warning("pod %s/%s: status update failed (%s); retrying in %llus", e->ns, e->name,
                    res->error ? res->error : "no response",
                    (unsigned long long)(e->backoff_ms / 1000));
        e->sent = 0; /* not delivered: the resync and the retry send again */
        ag_timer_arm(e->retry, e->backoff_ms);
}

/* The request passed its bucket: the newest status goes (what was set
 * while it waited), and it is what counts as sent. */
static const char *body_at_start(void *data, size_t *len)
{
        struct entry *e = data;
        struct ag_status_mgr *m = e->m;
        e->sent = e->gen;
        if (m->obs.sent != NULL)
                m->obs.sent(e->uid, e->body, m->obs.data);
        *len = strlen(e->body);
        return e->body;
}

static void send_entry(struct entry *e)
{
        struct ag_status_mgr *m = e->m;
        if (e->req != NULL || (e->accepted && e->sent == e->gen))
                return;
        _cleanup_free_ char *ns = ag_api_escape(e->ns);
        _cleanup_free_ char *name = ag_api_escape(e->name);
        char path[1024];
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", ns ? ns : "",
                 name ? name : "");
        struct ag_api_req_opts opts = {
            .cls = AG_API_CLASS_STATUS,
            .content_type = "application/strategic-merge-patch+json",
            .body = e->body,
            .body_len = strlen(e->body),
            .body_at_start = body_at_start,
        };
        struct cb_error err = {0};
        e->sent = e->gen;
        e->accepted = false;
        e->req = ag_api_request(m->api, "PATCH", path, &opts, on_done, e, &err);
        if (e->req == NULL) {
                log_warning("pod %s/%s: cannot send its status: %s", e->ns, e->name, err.msg);
                e->sent = 0;
                ag_timer_arm(e->retry, RETRY_MIN_MS);
        }
}

/* The apiserver answers again: what failed during the outage goes now, not
 * when each one's retry is due (up to the 10 s the kubelet waits). */
static void on_reachable(void *data)
{
        struct ag_status_mgr *m = data;
        for (struct entry *e = m->entries; e; e = e->next)
                if (e->req == NULL && ag_timer_armed(e->retry)) {
                        ag_timer_disarm(e->retry);
                        send_entry(e);
                }
}

static void on_resync(struct ag_timer *t, void *data)
{
        struct ag_status_mgr *m = data;
        for (struct entry *e = m->entries; e; e = e->next)
                if (e->req == NULL && !(e->accepted && e->sent == e->gen) &&
                    !ag_timer_armed(e->retry))
                        send_entry(e);
        ag_timer_arm(t, RESYNC_MS);
}

int ag_status_mgr_new(struct ag_loop *loop, struct ag_api *api, ag_status_delivered_fn fn,
                      void *data, struct ag_status_mgr **ret, struct cb_error *err)
{
        struct ag_status_mgr *m = calloc(1, sizeof(*m));
        if (m == NULL)
                return cb_error_set(err, ENOMEM, "status manager");
        m->loop = loop;
        m->api = api;
        m->fn = fn;
        m->data = data;
        m->resync = ag_timer_new(loop, on_resync, m, err);
        if (m->resync == NULL) {
                free(m);
                return -1;
        }
        ag_timer_arm(m->resync, RESYNC_MS);
        /* without the hook, the retries still come within RETRY_MAX_MS */
        (void)ag_api_on_reachable(api, on_reachable, m);
        *ret = m;
        return 0;
}

void ag_status_mgr_free(struct ag_status_mgr *m)
{
        if (m == NULL)
                return;
        (void)ag_api_on_reachable(m->api, NULL, m);
        while (m->entries) {
                struct entry *e = m->entries;
                m->entries = e->next;
                entry_free(e);
        }
        ag_timer_free(m->resync);
        free(m);
}

int ag_status_mgr_set(struct ag_status_mgr *m, const char *ns, const char *name, const char *uid,
                      const cJSON *status, struct cb_error *err)
{
        struct entry *e = find(m, uid);
        if (e == NULL) {
                e = calloc(1, sizeof(*e));
                if (e == NULL)
                        return cb_error_set(err, ENOMEM, "status manager");
                e->m = m;
                e->ns = strdup(ns);
                e->name = strdup(name);
                e->uid = strdup(uid);
                e->retry = ag_timer_new(m->loop, on_retry, e, err);
                if (!e->ns || !e->name || !e->uid || !e->retry) {
                        entry_free(e);
                        return cb_error_set(err, ENOMEM, "status manager");
                }
                e->next = m->entries;
                m->entries = e;
        }
        cJSON *body = cJSON_CreateObject();
        cJSON *meta = cJSON_AddObjectToObject(body, "metadata");
        cJSON_AddStringToObject(meta, "uid", uid);
        cJSON_AddItemToObject(body, "status", cJSON_Duplicate(status, true));
        char *text = cJSON_PrintUnformatted(body);
        cJSON_Delete(body);
        if (text == NULL)
                return cb_error_set(err, ENOMEM, "status manager");
        if (e->body != NULL && strcmp(e->body, text) == 0) {
                free(text); /* nothing changed */
                return 0;
        }
        free(e->body);
        e->body = text;
        e->gen++;
        /* a newer status goes now, not when a failed one's retry is due
         * (the kubelet's podStatusChannel): after an outage the retry may
         * be 10 s away while the pod has moved on */
        if (ag_timer_armed(e->retry))
                ag_timer_disarm(e->retry);
        send_entry(e);
        return 0;
}

bool ag_status_mgr_synced(const struct ag_status_mgr *m, const char *uid)
{
        const struct entry *e = find(m, uid);
        return e != NULL && e->accepted && e->sent == e->gen;
}

void ag_status_mgr_observe(struct ag_status_mgr *m, const struct ag_status_observer *o)
{
        m->obs = o != NULL ? *o : (struct ag_status_observer){0};
}

void ag_status_mgr_forget(struct ag_status_mgr *m, const char *uid)
{
        for (struct entry **pp = &m->entries; *pp; pp = &(*pp)->next)
                if (strcmp((*pp)->uid, uid) == 0) {
                        struct entry *e = *pp;
                        *pp = e->next;
                        entry_free(e);
                        return;
                }
}
