/* SPDX-License-Identifier: Apache-2.0 */
/* The pod worker's side of its volumes (agent/pods/volumes.h): made when
 * the worker starts, waited for before the sandbox, bound into each
 * container, stopped before the teardown. */
#include "agent/pods/worker_internal.h"

static void volumes_changed(void *data)
{
        struct ag_pod_worker *w = data;
        if (!w->done)
                ag_timer_arm(w->kick, 0);
}

static void volumes_event(void *data, const char *type, const char *reason, const char *message)
{
        struct ag_pod_worker *w = data;
        if (!w->terminating && !w->done)
                pw_emit_event(w, NULL, type, reason, "%s", message);
}

int pw_volumes_start(struct ag_pod_worker *w, struct cb_error *err)
{
        static const struct ag_pod_volumes_ops ops = {.changed = volumes_changed,
                                                      .event = volumes_event};
        struct ag_env_context ctx = {
            .node_allocatable_milli_cpu = w->env->alloc_milli_cpu,
            .node_allocatable_memory = w->env->alloc_memory,
            .node_allocatable_ephemeral = w->env->alloc_ephemeral,
        };
        return ag_pod_volumes_new(w->env, w->pod, &ctx, &ops, w, &w->volumes, err);
}

bool pw_volumes_ready(struct ag_pod_worker *w)
{
        return ag_pod_volumes_ready(w->volumes);
}

void pw_volumes_stop(struct ag_pod_worker *w)
{
        ag_pod_volumes_free(w->volumes);
        w->volumes = NULL;
}

/* configMap, secret, downwardAPI and projected volumes are bound
 * read-only whatever the mount says (the kubelet's read-only API data
 * volumes); emptyDir Memory is its tmpfs, made once per pod. */
int pw_volume_source(struct ag_pod_worker *w, const struct k8s_volume *v, struct cb_arena *a,
                     struct ag_volume_source *ret, struct cb_error *err)
{
        char *dir = ag_volume_dir(a, w->env->root_dir, w->pod->meta.uid, v);
        if (dir == NULL)
                return cb_error_set(err, ENOMEM, "volume %s", v->name);
        if (!ag_pod_volumes_ready(w->volumes))
                return cb_error_set(err, 0, "volume \"%s\" is not set up yet", v->name);
        ret->type = RT_MOUNT_BIND;
        ret->source = dir;
        ret->read_only = v->kind != K8S_VOLUME_EMPTY_DIR;
        return 0;
}

/* The ConfigMaps and Secrets the container's env refers to, as the
 * manager has them now: the values are fixed at this start, as in the
 * kubelet. */
int pw_env_objects(struct ag_pod_worker *w, const struct ctr *c, struct cb_arena *a,
                   struct ag_env_context *ctx, struct cb_error *err)
{
        const struct k8s_container *s = c->spec;
        size_t n = s->n_env + s->n_env_from, k = 0;
        if (n == 0)
                return 0;
        struct ag_env_object *objs = cb_arena_calloc(a, n, sizeof(*objs));
        if (objs == NULL)
                return cb_error_set(err, ENOMEM, "env");
        const char *ns = pw_pod_ns(w->pod);
        for (size_t i = 0; i < n; i++) {
                bool secret;
                const char *name;
                if (i < s->n_env) {
                        if (s->env[i].key_ref == K8S_KEY_REF_NONE)
                                continue;
                        secret = s->env[i].key_ref == K8S_KEY_REF_SECRET;
                        name = s->env[i].key_ref_name;
                } else {
                        secret = s->env_from[i - s->n_env].secret;
                        name = s->env_from[i - s->n_env].name;
                }
                const struct k8s_keyed_data *kd = NULL;
                struct cb_error gerr = {0};
                if (name == NULL || w->env->objects == NULL)
                        continue; /* not found */
                int r = ag_objmgr_get(w->env->objects, secret ? AG_OBJ_SECRET : AG_OBJ_CONFIG_MAP,
                                      ns, name, &kd, &gerr);
                if (r < 0 && gerr.code != 0 && gerr.code != EAGAIN)
                        return cb_error_set(err, 0, "%s", gerr.msg);
                if (r < 0 && gerr.code == EAGAIN)
                        return cb_error_set(err, 0,
                                            "failed to sync %s cache: timed out waiting "
                                            "for the condition",
                                            secret ? "secret" : "configmap");
                objs[k++] = (struct ag_env_object){secret, name, r > 0 ? kd : NULL};
        }
        ctx->objects = objs;
        ctx->n_objects = k;
        return 0;
}
