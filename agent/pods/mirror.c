/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/pods/mirror.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/core/log.h"
#include "agent/client/statusmgr.h"
#include "lib/cleanup.h"

#define MIRROR_ANNOTATION "kubernetes.io/config.mirror"
#define HASH_ANNOTATION   "kubernetes.io/config.hash"
#define RETRY_MS          2000

/* A static pod this node runs. */
struct spod {
        struct spod *next;
        struct ag_mirror *m;
        char *uid, *ns, *name, *hash;
        cJSON *pod;
        cJSON *status;    /* newest, NULL before the first */
        char *mirror_uid; /* of its mirror (created or seen), NULL: none */
        struct ag_request *req;
};

/* A mirror pod of this node in the apiserver. */
struct mpod {
        struct mpod *next;
        struct ag_mirror *m;
        char *uid, *ns, *name, *hash;
        bool deleting;
        struct ag_request *req; /* our DELETE */
        bool delete_sent;
};

struct ag_mirror {
        struct ag_loop *loop;
        struct ag_api *api;
        char *node_name, *node_uid;
        struct spod *spods;
        struct mpod *mpods;
        bool synced;
        struct ag_status_mgr *status;
        struct ag_timer *retry;
};

static void reconcile(struct ag_mirror *m);

static const char *str_at(const cJSON *o, const char *a, const char *b)
{
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
        if (b != NULL)
                x = cJSON_GetObjectItemCaseSensitive(x, b);
        return cJSON_IsString(x) ? x->valuestring : NULL;
}

static const char *annotation(const cJSON *pod, const char *key)
{
        const cJSON *ann = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(pod, "metadata"), "annotations");
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(ann, key);
        return cJSON_IsString(v) ? v->valuestring : NULL;
}

static char *dup_or_empty(const char *s)
{
        return strdup(s ? s : "");
}

cJSON *ag_mirror_pod_json(const cJSON *static_pod, const char *node_name, const char *node_uid)
{
        cJSON *pod = cJSON_Duplicate(static_pod, true);
        if (pod == NULL)
                return NULL;
        cJSON_DeleteItemFromObjectCaseSensitive(pod, "status");
        cJSON *meta = cJSON_GetObjectItemCaseSensitive(pod, "metadata");
        if (!cJSON_IsObject(meta)) {
                cJSON_Delete(pod);
                return NULL;
        }
        /* The apiserver gives the mirror its own uid. */
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "uid");
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "resourceVersion");
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "creationTimestamp");
        cJSON *ann = cJSON_GetObjectItemCaseSensitive(meta, "annotations");
        const char *hash = annotation(static_pod, HASH_ANNOTATION);
        if (!cJSON_IsObject(ann) || hash == NULL) {
                cJSON_Delete(pod);
                return NULL;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(ann, MIRROR_ANNOTATION);
        cJSON_AddStringToObject(ann, MIRROR_ANNOTATION, hash);
        /* The NodeRestriction admission plugin wants the Node as owner. */
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "ownerReferences");
        cJSON *refs = cJSON_AddArrayToObject(meta, "ownerReferences");
        cJSON *ref = cJSON_CreateObject();
        cJSON_AddStringToObject(ref, "apiVersion", "v1");
        cJSON_AddStringToObject(ref, "kind", "Node");
        cJSON_AddStringToObject(ref, "name", node_name);
        cJSON_AddStringToObject(ref, "uid", node_uid);
        cJSON_AddBoolToObject(ref, "controller", true);
        cJSON_AddItemToArray(refs, ref);
        return pod;
}

/* ---- lookups and lifetime ---- */

static struct spod *spod_by_uid(struct ag_mirror *m, const char *uid)
{
        for (struct spod *s = m->spods; s; s = s->next)
                if (strcmp(s->uid, uid) == 0)
                        return s;
        return NULL;
}

static struct spod *spod_by_name(struct ag_mirror *m, const char *ns, const char *name)
{
        for (struct spod *s = m->spods; s; s = s->next)
                if (strcmp(s->ns, ns) == 0 && strcmp(s->name, name) == 0)
                        return s;
        return NULL;
}

static struct mpod *mpod_by_name(struct ag_mirror *m, const char *ns, const char *name)
{
        for (struct mpod *p = m->mpods; p; p = p->next)
                if (strcmp(p->ns, ns) == 0 && strcmp(p->name, name) == 0)
                        return p;
        return NULL;
}

static void spod_free(struct spod *s)
{
        if (s->req)
                ag_api_cancel(s->req);
        if (s->mirror_uid)
                ag_status_mgr_forget(s->m->status, s->mirror_uid);
        free(s->uid);
        free(s->ns);
        free(s->name);
        free(s->hash);
        free(s->mirror_uid);
        cJSON_Delete(s->pod);
        cJSON_Delete(s->status);
        free(s);
}

static void mpod_free(struct mpod *p)
{
        if (p->req)
                ag_api_cancel(p->req);
        free(p->uid);
        free(p->ns);
        free(p->name);
        free(p->hash);
        free(p);
}

/* The static pod's status goes to its mirror (uid as precondition). */
static void push_status(struct spod *s)
{
        if (s->status == NULL || s->mirror_uid == NULL)
                return;
        struct cb_error err = {0};
        if (ag_status_mgr_set(s->m->status, s->ns, s->name, s->mirror_uid, s->status, &err) < 0)
                log_error("mirror pod %s/%s: %s", s->ns, s->name, err.msg);
}

static void set_mirror_uid(struct spod *s, const char *uid)
{
        if (s->mirror_uid != NULL && uid != NULL && strcmp(s->mirror_uid, uid) == 0)
                return;
        if (s->mirror_uid != NULL)
                ag_status_mgr_forget(s->m->status, s->mirror_uid);
        free(s->mirror_uid);
        s->mirror_uid = uid ? strdup(uid) : NULL;
        push_status(s);
}

/* ---- requests ---- */

static void on_post_done(struct ag_api_result *res, void *data)
{
        struct spod *s = data;
        s->req = NULL;
        if (res->status == 201 || res->status == 200) {
                const char *uid = str_at(res->json, "metadata", "uid");
                log_info("mirror pod %s/%s created (uid %s) for static pod uid %s", s->ns, s->name,
                         uid ? uid : "?", s->uid);
                if (uid != NULL)
                        set_mirror_uid(s, uid);
                return;
        }
        if (res->status == 409) {
                /* AlreadyExists: the watch shows it; reconcile decides. */
                log_v(1, "mirror pod %s/%s already exists", s->ns, s->name);
                return;
        }
        log_warning("mirror pod %s/%s: create failed: %s; retrying", s->ns, s->name,
                    res->error ? res->error : "no response");
        ag_timer_arm(s->m->retry, RETRY_MS);
}

static void create_mirror(struct spod *s)
{
        struct ag_mirror *m = s->m;
        _cleanup_cjson_ cJSON *body = ag_mirror_pod_json(s->pod, m->node_name, m->node_uid);
        _cleanup_free_ char *text = body ? cJSON_PrintUnformatted(body) : NULL;
        _cleanup_free_ char *ns = ag_api_escape(s->ns);
        if (text == NULL || ns == NULL) {
                log_error("mirror pod %s/%s: out of memory", s->ns, s->name);
                return;
        }
        char path[512];
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", ns);
        struct ag_api_req_opts opts = {.body = text, .body_len = strlen(text)};
        struct cb_error err = {0};
        s->req = ag_api_request(m->api, "POST", path, &opts, on_post_done, s, &err);
        if (s->req == NULL) {
                log_warning("mirror pod %s/%s: %s", s->ns, s->name, err.msg);
                ag_timer_arm(m->retry, RETRY_MS);
        }
}

static void on_delete_done(struct ag_api_result *res, void *data)
{
        struct mpod *p = data;
        p->req = NULL;
        if ((res->status >= 200 && res->status < 300) || res->status == 404 || res->status == 409) {
                /* Deleted (the DELETED event follows), gone, or another pod
                 * by now (uid precondition). */
                log_v(1, "mirror pod %s/%s uid %s: deleted (%ld)", p->ns, p->name, p->uid,
                      res->status);
                return;
        }
        log_warning("mirror pod %s/%s: delete failed: %s; retrying", p->ns, p->name,
                    res->error ? res->error : "no response");
        p->delete_sent = false;
        ag_timer_arm(p->m->retry, RETRY_MS);
}

static void delete_mirror(struct mpod *p, const char *why)
{
        if (p->delete_sent)
                return;
        p->delete_sent = true;
        log_info("mirror pod %s/%s uid %s: %s: deleting it", p->ns, p->name, p->uid, why);
        _cleanup_free_ char *ns = ag_api_escape(p->ns);
        _cleanup_free_ char *name = ag_api_escape(p->name);
        char path[1024];
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ns ? ns : "",
                 name ? name : "");
        char body[256];
        snprintf(body, sizeof(body),
                 "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"gracePeriodSeconds\":0,"
                 "\"preconditions\":{\"uid\":\"%s\"}}",
                 p->uid);
        struct ag_api_req_opts opts = {.body = body, .body_len = strlen(body)};
        struct cb_error err = {0};
        p->req = ag_api_request(p->m->api, "DELETE", path, &opts, on_delete_done, p, &err);
        if (p->req == NULL) {
                log_warning("mirror pod %s/%s: %s", p->ns, p->name, err.msg);
                p->delete_sent = false;
                ag_timer_arm(p->m->retry, RETRY_MS);
        }
}

/* ---- the reconciliation ---- */

static void reconcile(struct ag_mirror *m)
{
        if (!m->synced || m->node_uid == NULL)
                return;
        for (struct mpod *p = m->mpods; p; p = p->next) {
                struct spod *s = spod_by_name(m, p->ns, p->name);
                if (s == NULL)
                        delete_mirror(p, "no static pod of that name on this node");
                else if (p->hash == NULL || strcmp(p->hash, s->hash) != 0)
                        delete_mirror(p, "it mirrors another version of the static pod");
                else if (p->deleting)
                        delete_mirror(p, "deletion requested (the static pod keeps running; "
                                         "its mirror is recreated)");
                else
                        set_mirror_uid(s, p->uid);
        }
        for (struct spod *s = m->spods; s; s = s->next) {
                if (s->req != NULL || mpod_by_name(m, s->ns, s->name) != NULL)
                        continue;
                if (s->mirror_uid != NULL)
                        continue; /* created; the watch has not shown it yet */
                create_mirror(s);
        }
}

static void on_retry(struct ag_timer *t, void *data)
{
        (void)t;
        reconcile(data);
}

void ag_mirror_observe(struct ag_mirror *m, enum ag_change change, const struct ag_object *o)
{
        const char *ns = o->namespace_ ? o->namespace_ : "default";
        const char *name = o->name ? o->name : "";
        struct mpod *p = mpod_by_name(m, ns, name);
        if (p != NULL && strcmp(p->uid, o->uid) != 0) {
                /* A new object under the name: the old one is gone. */
                for (struct mpod **pp = &m->mpods; *pp; pp = &(*pp)->next)
                        if (*pp == p) {
                                *pp = p->next;
                                break;
                        }
                struct spod *s = spod_by_name(m, ns, name);
                if (s != NULL && s->mirror_uid != NULL && strcmp(s->mirror_uid, p->uid) == 0)
                        set_mirror_uid(s, NULL);
                mpod_free(p);
                p = NULL;
        }
        if (change == AG_DELETED) {
                if (p != NULL) {
                        for (struct mpod **pp = &m->mpods; *pp; pp = &(*pp)->next)
                                if (*pp == p) {
                                        *pp = p->next;
                                        break;
                                }
                        mpod_free(p);
                }
                struct spod *s = spod_by_name(m, ns, name);
                if (s != NULL && s->mirror_uid != NULL && strcmp(s->mirror_uid, o->uid) == 0) {
                        log_info("mirror pod %s/%s uid %s deleted: recreating it", ns, name,
                                 o->uid);
                        set_mirror_uid(s, NULL);
                }
                reconcile(m);
                return;
        }
        if (p == NULL) {
                p = calloc(1, sizeof(*p));
                if (p == NULL)
                        return;
                p->m = m;
                p->uid = strdup(o->uid);
                p->ns = strdup(ns);
                p->name = strdup(name);
                if (!p->uid || !p->ns || !p->name) {
                        mpod_free(p);
                        return;
                }
                p->next = m->mpods;
                m->mpods = p;
        }
        free(p->hash);
        const char *hash = annotation(o->json, MIRROR_ANNOTATION);
        p->hash = hash ? strdup(hash) : NULL;
        p->deleting = str_at(o->json, "metadata", "deletionTimestamp") != NULL;
        reconcile(m);
}

void ag_mirror_static_add(struct ag_mirror *m, const cJSON *pod)
{
        const char *uid = str_at(pod, "metadata", "uid");
        const char *hash = annotation(pod, HASH_ANNOTATION);
        if (uid == NULL || hash == NULL)
                return;
        struct spod *s = spod_by_uid(m, uid);
        if (s == NULL) {
                s = calloc(1, sizeof(*s));
                if (s == NULL)
                        return;
                s->m = m;
                s->uid = strdup(uid);
                s->ns = dup_or_empty(str_at(pod, "metadata", "namespace"));
                s->name = dup_or_empty(str_at(pod, "metadata", "name"));
                s->hash = strdup(hash);
                if (!s->uid || !s->ns || !s->name || !s->hash) {
                        spod_free(s);
                        return;
                }
                /* An edited manifest: the old static pod of the name is
                 * removed first (staticpods.c), so names stay unique. */
                s->next = m->spods;
                m->spods = s;
        }
        cJSON_Delete(s->pod);
        s->pod = cJSON_Duplicate(pod, true);
        reconcile(m);
}

void ag_mirror_static_remove(struct ag_mirror *m, const char *static_uid)
{
        for (struct spod **pp = &m->spods; *pp; pp = &(*pp)->next) {
                struct spod *s = *pp;
                if (strcmp(s->uid, static_uid) != 0)
                        continue;
                *pp = s->next;
                spod_free(s);
                break;
        }
        reconcile(m);
}

void ag_mirror_status(struct ag_mirror *m, const char *static_uid, const cJSON *status)
{
        struct spod *s = spod_by_uid(m, static_uid);
        if (s == NULL)
                return;
        cJSON_Delete(s->status);
        s->status = cJSON_Duplicate(status, true);
        push_status(s);
}

void ag_mirror_node_uid(struct ag_mirror *m, const char *uid)
{
        if (uid == NULL || (m->node_uid != NULL && strcmp(m->node_uid, uid) == 0))
                return;
        free(m->node_uid);
        m->node_uid = strdup(uid);
        reconcile(m);
}

void ag_mirror_synced(struct ag_mirror *m)
{
        m->synced = true;
        reconcile(m);
}

static void on_status_delivered(const char *uid, bool delivered, void *data)
{
        (void)uid;
        (void)delivered;
        (void)data;
}

int ag_mirror_new(struct ag_loop *loop, struct ag_api *api, const char *node_name,
                  struct ag_mirror **ret, struct cb_error *err)
{
        struct ag_mirror *m = calloc(1, sizeof(*m));
        if (m == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        m->loop = loop;
        m->api = api;
        m->node_name = strdup(node_name);
        m->retry = ag_timer_new(loop, on_retry, m, err);
        if (m->node_name == NULL || m->retry == NULL ||
            ag_status_mgr_new(loop, api, on_status_delivered, m, &m->status, err) < 0) {
                ag_mirror_free(m);
                return err->msg[0] ? -1 : cb_error_set(err, ENOMEM, "out of memory");
        }
        *ret = m;
        return 0;
}

void ag_mirror_free(struct ag_mirror *m)
{
        if (m == NULL)
                return;
        while (m->spods) {
                struct spod *s = m->spods;
                m->spods = s->next;
                spod_free(s);
        }
        while (m->mpods) {
                struct mpod *p = m->mpods;
                m->mpods = p->next;
                mpod_free(p);
        }
        if (m->retry)
                ag_timer_free(m->retry);
        ag_status_mgr_free(m->status);
        free(m->node_name);
        free(m->node_uid);
        free(m);
}
