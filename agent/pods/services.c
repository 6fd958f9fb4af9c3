/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/pods/services.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct entry {
        struct cb_arena *arena;
        struct k8s_service svc;
};

struct ag_services {
        struct entry *v;
        size_t n, cap;
        bool synced;
};

struct ag_services *ag_services_new(void)
{
        return calloc(1, sizeof(struct ag_services));
}

void ag_services_free(struct ag_services *s)
{
        if (s == NULL)
                return;
        for (size_t i = 0; i < s->n; i++)
                cb_arena_free(s->v[i].arena);
        free(s->v);
        free(s);
}

int ag_services_set(struct ag_services *s, const char *uid, const cJSON *json, struct cb_error *err)
{
        size_t i = 0;
        while (i < s->n && strcmp(s->v[i].svc.uid, uid) != 0)
                i++;
        if (json == NULL) {
                if (i < s->n) {
                        cb_arena_free(s->v[i].arena);
                        s->v[i] = s->v[--s->n];
                }
                return 0;
        }
        struct cb_arena *a = cb_arena_new(1u << 20);
        struct k8s_service svc;
        if (a == NULL)
                return cb_error_set(err, ENOMEM, "Service");
        if (k8s_service_from_json(a, json, &svc, err) < 0) {
                cb_arena_free(a);
                return -1;
        }
        if ((svc.uid = cb_arena_strdup(a, uid)) == NULL) {
                cb_arena_free(a);
                return cb_error_set(err, ENOMEM, "Service");
        }
        if (i < s->n) {
                cb_arena_free(s->v[i].arena);
        } else {
                if (s->n == s->cap) {
                        size_t cap = s->cap ? s->cap * 2 : 16;
                        struct entry *v = realloc(s->v, cap * sizeof(*v));
                        if (v == NULL) {
                                cb_arena_free(a);
                                return cb_error_set(err, ENOMEM, "Service");
                        }
                        s->v = v;
                        s->cap = cap;
                }
                s->n++;
        }
        s->v[i] = (struct entry){a, svc};
        return 0;
}

void ag_services_mark_synced(struct ag_services *s)
{
        s->synced = true;
}

bool ag_services_synced(const struct ag_services *s)
{
        return s->synced;
}

int ag_services_env(const struct ag_services *s, struct cb_arena *a, const char *ns,
                    bool enable_service_links, char ***ret_env, size_t *ret_n, struct cb_error *err)
{
        if (!s->synced) {
                cb_error_set(err, 0,
                             "services have not yet been read at least once, cannot construct "
                             "envvars");
                err->code = EAGAIN; /* the caller retries */
                return -1;
        }
        const struct k8s_service **v = cb_arena_calloc(a, s->n + 1, sizeof(*v));
        if (v == NULL)
                return cb_error_set(err, ENOMEM, "service environment");
        for (size_t i = 0; i < s->n; i++)
                v[i] = &s->v[i].svc;
        return k8s_service_env(a, v, s->n, ns, enable_service_links, ret_env, ret_n, err);
}
