/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/client/objmanager.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/client/reflector.h"
#include "agent/core/log.h"
#include "lib/cleanup.h"

struct ag_objmgr_entry {
        enum ag_obj_kind kind;
        char *ns, *name;
        unsigned refs; /* pods referring to it */
        void *watch;
        bool synced;
        struct k8s_keyed_data *obj; /* NULL: absent (or not synced) */
        char
            decode_error[sizeof(((struct cb_error *)0)->msg)]; /* the last version did not decode */
};

struct pod_reg {
        char *uid;
        ag_objmgr_fn fn;
        void *data;
        struct ag_objmgr_entry **entries;
        size_t n;
};

struct ag_objmgr {
        struct ag_loop *loop;
        struct ag_api *api;
        struct ag_objmgr_watch_ops ops;
        bool default_ops;
        struct ag_objmgr_entry **entries;
        size_t n_entries;
        struct pod_reg *pods;
        size_t n_pods;
};

const char *ag_obj_kind_name(enum ag_obj_kind kind)
{
        return kind == AG_OBJ_SECRET ? "secret" : "configmap";
}

/* ---- the default watch: one reflector per object ---- */

struct refl_watch {
        struct ag_objmgr *m;
        struct ag_objmgr_entry *e;
        struct ag_reflector *r;
};

static void refl_change(enum ag_change change, const struct ag_object *obj, void *data)
{
        struct refl_watch *w = data;
        ag_objmgr_deliver(w->m, w->e, change == AG_DELETED ? NULL : obj->json);
}

static void refl_synced(size_t n, void *data)
{
        struct refl_watch *w = data;
        (void)n;
        ag_objmgr_synced(w->m, w->e);
}

static void *refl_start(struct ag_objmgr *m, struct ag_objmgr_entry *e, enum ag_obj_kind kind,
                        const char *ns, const char *name, void *data)
{
        (void)data;
        struct refl_watch *w = calloc(1, sizeof(*w));
        _cleanup_free_ char *path = NULL, *sel = NULL, *what = NULL;
        if (w == NULL ||
            asprintf(&path, "/api/v1/namespaces/%s/%ss", ns,
                     kind == AG_OBJ_SECRET ? "secret" : "configmap") < 0 ||
            asprintf(&sel, "metadata.name=%s", name) < 0 ||
            asprintf(&what, "%s %s/%s", ag_obj_kind_name(kind), ns, name) < 0) {
                free(w);
                return NULL;
        }
        w->m = m;
        w->e = e;
        struct ag_reflector_config cfg = {
            .what = what,
            .path = path,
            .field_selector = sel,
            .kind = AG_KIND_RAW,
            .on_change = refl_change,
            .on_synced = refl_synced,
            .data = w,
        };
        struct cb_error err = {0};
        if (ag_reflector_new(m->loop, m->api, &cfg, &w->r, &err) < 0) {
                log_error("%s: %s", what, err.msg);
                free(w);
                return NULL;
        }
        ag_reflector_start(w->r);
        return w;
}

static void refl_stop(void *watch, void *data)
{
        (void)data;
        struct refl_watch *w = watch;
        if (w == NULL)
                return;
        ag_reflector_free(w->r);
        free(w);
}

/* ---- entries ---- */

static struct ag_objmgr_entry *find_entry(const struct ag_objmgr *m, enum ag_obj_kind kind,
                                          const char *ns, const char *name)
{
        for (size_t i = 0; i < m->n_entries; i++) {
                struct ag_objmgr_entry *e = m->entries[i];
                if (e->kind == kind && strcmp(e->ns, ns) == 0 && strcmp(e->name, name) == 0)
                        return e;
        }
        return NULL;
}

static void entry_free(struct ag_objmgr *m, struct ag_objmgr_entry *e)
{
        if (m->ops.stop && e->watch != NULL)
                m->ops.stop(e->watch, m->ops.data);
        k8s_keyed_data_free(e->obj);
        free(e->ns);
        free(e->name);
        free(e);
}

static struct ag_objmgr_entry *entry_get(struct ag_objmgr *m, enum ag_obj_kind kind, const char *ns,
                                         const char *name)
{
        struct ag_objmgr_entry *e = find_entry(m, kind, ns, name);
        if (e != NULL)
                return e;
        struct ag_objmgr_entry **grown =
            realloc(m->entries, (m->n_entries + 1) * sizeof(*m->entries));
        if (grown == NULL)
                return NULL;
        m->entries = grown;
        e = calloc(1, sizeof(*e));
        if (e == NULL)
                return NULL;
        e->kind = kind;
        e->ns = strdup(ns);
        e->name = strdup(name);
        if (e->ns == NULL || e->name == NULL) {
                free(e->ns);
                free(e->name);
                free(e);
                return NULL;
        }
        m->entries[m->n_entries++] = e;
        e->watch = m->ops.start(m, e, kind, ns, name, m->ops.data);
        if (e->watch == NULL)
                log_warning("%s %s/%s: cannot watch it", ag_obj_kind_name(kind), ns, name);
        log_v(3, "%s %s/%s: watched (%zu objects)", ag_obj_kind_name(kind), ns, name, m->n_entries);
        return e;
}

static void entry_put(struct ag_objmgr *m, struct ag_objmgr_entry *e)
{
        if (e == NULL || --e->refs > 0)
                return;
        for (size_t i = 0; i < m->n_entries; i++)
                if (m->entries[i] == e) {
                        m->entries[i] = m->entries[--m->n_entries];
                        break;
                }
        log_v(3, "%s %s/%s: no pod refers to it any more; not watched", ag_obj_kind_name(e->kind),
              e->ns, e->name);
        entry_free(m, e);
}

static void notify(struct ag_objmgr *m, struct ag_objmgr_entry *e)
{
        /* Copied first: a callback may register or unregister pods. */
        size_t n = 0;
        struct pod_reg *calls = calloc(m->n_pods + 1, sizeof(*calls));
        if (calls == NULL)
                return;
        for (size_t i = 0; i < m->n_pods; i++) {
                if (m->pods[i].fn == NULL)
                        continue;
                for (size_t k = 0; k < m->pods[i].n; k++)
                        if (m->pods[i].entries[k] == e) {
                                calls[n++] = m->pods[i];
                                break;
                        }
        }
        enum ag_obj_kind kind = e->kind;
        _cleanup_free_ char *ns = strdup(e->ns), *name = strdup(e->name);
        for (size_t i = 0; ns && name && i < n; i++)
                calls[i].fn(kind, ns, name, calls[i].data);
        free(calls);
}

void ag_objmgr_deliver(struct ag_objmgr *m, struct ag_objmgr_entry *e, const cJSON *obj)
{
        struct k8s_keyed_data *kd = NULL;
        e->decode_error[0] = '\0';
        if (obj != NULL) {
                struct cb_error err = {0};
                int r = e->kind == AG_OBJ_SECRET ? k8s_secret_from_json(obj, &kd, &err)
                                                 : k8s_configmap_from_json(obj, &kd, &err);
                if (r < 0) {
                        /* Never the value: a Secret's bytes stay out of logs. */
                        snprintf(e->decode_error, sizeof(e->decode_error), "%s", err.msg);
                        log_warning("%s %s/%s: %s", ag_obj_kind_name(e->kind), e->ns, e->name,
                                    err.msg);
                        kd = NULL;
                }
        }
        k8s_keyed_data_free(e->obj);
        e->obj = kd;
        if (e->synced)
                notify(m, e);
}

void ag_objmgr_synced(struct ag_objmgr *m, struct ag_objmgr_entry *e)
{
        bool first = !e->synced;
        e->synced = true;
        if (first)
                notify(m, e);
}

int ag_objmgr_get(struct ag_objmgr *m, enum ag_obj_kind kind, const char *ns, const char *name,
                  const struct k8s_keyed_data **ret, struct cb_error *err)
{
        *ret = NULL;
        struct ag_objmgr_entry *e = m ? find_entry(m, kind, ns, name) : NULL;
        if (e == NULL)
                return cb_error_set(err, 0, "%s \"%s\" not registered", ag_obj_kind_name(kind),
                                    name);
        if (!e->synced)
                return cb_error_set(err, EAGAIN, "failed to sync %s cache: not synced yet",
                                    ag_obj_kind_name(kind));
        if (e->decode_error[0])
                return cb_error_set(err, 0, "%s \"%s\": %s", ag_obj_kind_name(kind), name,
                                    e->decode_error);
        if (e->obj == NULL)
                return 0;
        /* As the kubelet's objectCache.Get: an immutable object cannot
         * change, so its watch stops at the first read and the cached
         * version serves every later one (a deletion is not seen either). */
        if (e->obj->immutable && e->watch != NULL) {
                if (m->ops.stop)
                        m->ops.stop(e->watch, m->ops.data);
                e->watch = NULL;
                log_v(4, "%s %s/%s: stopped watching for changes - object is immutable",
                      ag_obj_kind_name(kind), ns, name);
        }
        *ret = e->obj;
        return 1;
}

size_t ag_objmgr_watches(const struct ag_objmgr *m)
{
        size_t n = 0;
        for (size_t i = 0; m != NULL && i < m->n_entries; i++)
                n += m->entries[i]->watch != NULL;
        return n;
}

/* ---- pods ---- */

static struct pod_reg *find_pod(struct ag_objmgr *m, const char *uid)
{
        for (size_t i = 0; i < m->n_pods; i++)
                if (strcmp(m->pods[i].uid, uid) == 0)
                        return &m->pods[i];
        return NULL;
}

int ag_objmgr_register(struct ag_objmgr *m, const char *pod_uid, const char *ns,
                       const struct ag_obj_ref *refs, size_t n, ag_objmgr_fn fn, void *data,
                       struct cb_error *err)
{
        struct ag_objmgr_entry **entries = calloc(n + 1, sizeof(*entries));
        if (entries == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        size_t k = 0;
        /* New references first, so an object both pods keep is never
         * dropped and watched again. */
        for (size_t i = 0; i < n; i++) {
                if (refs[i].name == NULL || refs[i].name[0] == '\0')
                        continue;
                struct ag_objmgr_entry *e = entry_get(m, refs[i].kind, ns, refs[i].name);
                if (e == NULL) {
                        for (size_t j = 0; j < k; j++)
                                entry_put(m, entries[j]);
                        free(entries);
                        return cb_error_set(err, ENOMEM, "out of memory");
                }
                bool dup = false;
                for (size_t j = 0; j < k && !dup; j++)
                        dup = entries[j] == e;
                if (dup)
                        continue;
                e->refs++;
                entries[k++] = e;
        }
        struct pod_reg *p = find_pod(m, pod_uid);
        if (p == NULL) {
                struct pod_reg *grown = realloc(m->pods, (m->n_pods + 1) * sizeof(*m->pods));
                char *uid = strdup(pod_uid);
                if (grown != NULL)
                        m->pods = grown;
                if (grown == NULL || uid == NULL) {
                        free(uid);
                        for (size_t j = 0; j < k; j++)
                                entry_put(m, entries[j]);
                        free(entries);
                        return cb_error_set(err, ENOMEM, "out of memory");
                }
                p = &m->pods[m->n_pods++];
                *p = (struct pod_reg){.uid = uid};
        }
        struct ag_objmgr_entry **old = p->entries;
        size_t n_old = p->n;
        p->entries = entries;
        p->n = k;
        p->fn = fn;
        p->data = data;
        for (size_t j = 0; j < n_old; j++)
                entry_put(m, old[j]);
        free(old);
        return 0;
}

void ag_objmgr_unregister(struct ag_objmgr *m, const char *pod_uid)
{
        if (m == NULL)
                return;
        struct pod_reg *p = find_pod(m, pod_uid);
        if (p == NULL)
                return;
        struct pod_reg gone = *p;
        *p = m->pods[--m->n_pods];
        for (size_t j = 0; j < gone.n; j++)
                entry_put(m, gone.entries[j]);
        free(gone.entries);
        free(gone.uid);
}

int ag_objmgr_new(struct ag_loop *loop, struct ag_api *api, const struct ag_objmgr_watch_ops *ops,
                  struct ag_objmgr **ret, struct cb_error *err)
{
        struct ag_objmgr *m = calloc(1, sizeof(*m));
        if (m == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        m->loop = loop;
        m->api = api;
        if (ops != NULL)
                m->ops = *ops;
        else
                m->ops = (struct ag_objmgr_watch_ops){.start = refl_start, .stop = refl_stop};
        *ret = m;
        return 0;
}

void ag_objmgr_free(struct ag_objmgr *m)
{
        if (m == NULL)
                return;
        for (size_t i = 0; i < m->n_pods; i++) {
                free(m->pods[i].entries);
                free(m->pods[i].uid);
        }
        free(m->pods);
        for (size_t i = 0; i < m->n_entries; i++)
                entry_free(m, m->entries[i]);
        free(m->entries);
        free(m);
}
