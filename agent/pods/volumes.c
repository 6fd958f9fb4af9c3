/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/pods/volumes.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/client/apiclient.h"
#include "agent/client/tokenmgr.h"
#include "agent/core/offload.h"
#include "agent/k8s/pv.h"
#include "agent/k8s/qos.h"
#include "lib/wallclock.h"
#include "lib/cleanup.h"
#include "lib/file.h"

#define RETRY_INITIAL_MS 500
#define RETRY_CAP_MS     122000 /* the kubelet's volume operation backoff: 2 min 2 s */
/* A claim that is not bound yet, or a PV not there yet, is asked for again
 * sooner: the kubelet's populator GETs them on each of its passes (100 ms)
 * while they fail; cubelet backs off from 500 ms to this. */
#define PVC_RETRY_CAP_MS 8000

/* ---- payloads (pure) ------------------------------------------------------------------- */

bool ag_volume_managed(const struct k8s_volume *v)
{
        switch (v->kind) {
        case K8S_VOLUME_CONFIG_MAP:
        case K8S_VOLUME_SECRET:
        case K8S_VOLUME_DOWNWARD_API:
        case K8S_VOLUME_PROJECTED:
        case K8S_VOLUME_PVC:
        case K8S_VOLUME_HOST_PATH:
                return true;
        case K8S_VOLUME_EMPTY_DIR:
                return v->empty_dir_medium && strcmp(v->empty_dir_medium, "Memory") == 0;
        default:
                return false;
        }
}

static const char *plugin_dir(const struct k8s_volume *v)
{
        switch (v->kind) {
        case K8S_VOLUME_CONFIG_MAP:
                return "kubernetes.io~configmap";
        case K8S_VOLUME_SECRET:
                return "kubernetes.io~secret";
        case K8S_VOLUME_DOWNWARD_API:
                return "kubernetes.io~downward-api";
        case K8S_VOLUME_PROJECTED:
                return "kubernetes.io~projected";
        case K8S_VOLUME_PVC:
                return "kubernetes.io~local-volume"; /* named by the PV (local_dir) */
        default:
                return "kubernetes.io~empty-dir";
        }
}

char *ag_volume_dir(struct cb_arena *a, const char *root_dir, const char *uid,
                    const struct k8s_volume *v)
{
        return cb_arena_printf(a, "%s/pods/%s/volumes/%s/%s", root_dir, uid, plugin_dir(v),
                               v->name);
}

/* Secrets, tokens and emptyDir Memory: tmpfs, as the kubelet's wrapped
 * emptyDir with medium Memory. configMap and downwardAPI: the disk. */
static bool on_tmpfs(const struct k8s_volume *v)
{
        return v->kind == K8S_VOLUME_SECRET || v->kind == K8S_VOLUME_PROJECTED ||
               v->kind == K8S_VOLUME_EMPTY_DIR;
}

struct files {
        struct cb_arena *a;
        struct ag_payload_file *f;
        size_t n, cap;
};

bool ag_pod_fs_user(const struct k8s_pod *pod, int64_t *ret)
{
        const struct k8s_pod_spec *s = &pod->spec;
        bool have = false;
        int64_t user = 0;
        for (size_t i = 0; i < s->n_init_containers + s->n_containers; i++) {
                const struct k8s_container *c = i < s->n_init_containers
                                                    ? &s->init_containers[i]
                                                    : &s->containers[i - s->n_init_containers];
                int64_t u;
                if (c->security_context.has_run_as_user)
                        u = c->security_context.run_as_user;
                else if (s->security_context.has_run_as_user)
                        u = s->security_context.run_as_user;
                else
                        return false; /* one container runs as the image's user */
                if (have && u != user)
                        return false; /* two different users */
                have = true;
                user = u;
        }
        if (have)
                *ret = user;
        return have;
}

static int add_file(struct files *fs, const char *path, const char *data, size_t len, int mode,
                    struct cb_error *err)
{
        /* A copy in the job's arena: the write runs on an offload thread,
         * and the token manager (a refreshed token) or the object manager
         * (an updated ConfigMap or Secret) may free the source meanwhile
         * (ASan, token_rotation in the CI rehearsal of session 7) */
        char *copy = cb_arena_alloc(fs->a, len + 1);
        if (copy == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        if (len > 0)
                memcpy(copy, data, len);
        copy[len] = '\0';
        data = copy;
        if ((path = cb_arena_strdup(fs->a, path)) == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        /* A later source of a projected volume overrides an earlier one
         * (the kubelet's payload map). */
        for (size_t i = 0; i < fs->n; i++)
                if (strcmp(fs->f[i].path, path) == 0) {
                        fs->f[i] = (struct ag_payload_file){
                            .path = fs->f[i].path, .data = data, .len = len, .mode = mode};
                        return 0;
                }
        if (fs->n == fs->cap) {
                size_t cap = fs->cap ? fs->cap * 2 : 8;
                struct ag_payload_file *g = cb_arena_calloc(fs->a, cap, sizeof(*g));
                if (g == NULL)
                        return cb_error_set(err, ENOMEM, "out of memory");
                if (fs->n)
                        memcpy(g, fs->f, fs->n * sizeof(*g));
                fs->f = g;
                fs->cap = cap;
        }
        fs->f[fs->n++] =
            (struct ag_payload_file){.path = path, .data = data, .len = len, .mode = mode};
        return 0;
}

/* configmap.MakePayload / secret.MakePayload */
/* The token file as projected.go writes it: 0600 (and owned by the fsUser)
 * when every container runs as one user (FsUserFrom) or the pod has an
 * fsGroup (the atomic writer then adds g+r: 0640, group fsGroup), else the
 * volume's defaultMode. */
static int add_token(struct files *fs, const struct k8s_pod *pod, const char *path, const char *tok,
                     int default_mode, struct cb_error *err)
{
        int64_t user = 0;
        bool has_user = ag_pod_fs_user(pod, &user);
        bool owned = has_user || pod->spec.security_context.has_fs_group;
        if (add_file(fs, path, tok, strlen(tok), owned ? 0600 : default_mode, err) < 0)
                return -1;
        for (size_t i = 0; i < fs->n; i++)
                if (strcmp(fs->f[i].path, path) == 0) {
                        fs->f[i].has_fs_user = has_user;
                        fs->f[i].fs_user = user;
                }
        return 0;
}

static int keyed_payload(struct files *fs, enum ag_obj_kind kind, const struct k8s_keyed_source *ks,
                         const struct k8s_keyed_data *kd, int default_mode, struct cb_error *err)
{
        if (kd == NULL)
                return 0; /* optional and absent */
        if (ks->n_items == 0) {
                for (size_t i = 0; i < kd->n; i++)
                        if (add_file(fs, kd->items[i].key, kd->items[i].value, kd->items[i].len,
                                     default_mode, err) < 0)
                                return -1;
                return 0;
        }
        for (size_t i = 0; i < ks->n_items; i++) {
                const struct k8s_key_to_path *it = &ks->items[i];
                const struct k8s_data_item *di = k8s_keyed_data_get(kd, it->key);
                if (di == NULL) {
                        if (ks->optional)
                                continue;
                        return kind == AG_OBJ_SECRET
                                   ? cb_error_set(err, 0, "references non-existent secret key: %s",
                                                  it->key)
                                   : cb_error_set(err, 0,
                                                  "configmap references non-existent config key: "
                                                  "%s",
                                                  it->key);
                }
                if (add_file(fs, it->path, di->value, di->len,
                             it->has_mode ? it->mode : default_mode, err) < 0)
                        return -1;
        }
        return 0;
}

/* Go's %q of a string: the labels and annotations files. */
static void go_quote(struct cb_arena *a, const char *s, char **out)
{
        size_t n = strlen(s);
        char *buf = cb_arena_alloc(a, n * 4 + 3);
        if (buf == NULL) {
                *out = NULL;
                return;
        }
        size_t o = 0;
        buf[o++] = '"';
        for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
                unsigned char c = *p;
                const char *esc = c == '"'    ? "\\\""
                                  : c == '\\' ? "\\\\"
                                  : c == '\n' ? "\\n"
                                  : c == '\t' ? "\\t"
                                  : c == '\r' ? "\\r"
                                              : NULL;
                if (esc) {
                        size_t k = strlen(esc);
                        memcpy(buf + o, esc, k);
                        o += k;
                } else if (c < 0x20 || c == 0x7f) {
                        o += (size_t)snprintf(buf + o, 5, "\\x%02x", c);
                } else {
                        buf[o++] = (char)c;
                }
        }
        buf[o++] = '"';
        buf[o] = '\0';
        *out = buf;
}

static int kv_cmp(const void *x, const void *y)
{
        return strcmp(((const struct k8s_kv *)x)->key, ((const struct k8s_kv *)y)->key);
}

/* fieutil.FormatMap: sorted `k="v"` lines joined by "\n". */
static char *format_map(struct cb_arena *a, const struct k8s_map *m)
{
        struct k8s_kv *kv = m->n ? cb_arena_calloc(a, m->n, sizeof(*kv)) : NULL;
        if (m->n && kv == NULL)
                return NULL;
        if (m->n)
                memcpy(kv, m->items, m->n * sizeof(*kv));
        qsort(kv, m->n, sizeof(*kv), kv_cmp);
        char *out = cb_arena_strdup(a, "");
        for (size_t i = 0; out && i < m->n; i++) {
                char *q;
                go_quote(a, kv[i].value ? kv[i].value : "", &q);
                out = q ? cb_arena_printf(a, "%s%s%s=%s", out, i ? "\n" : "", kv[i].key, q) : NULL;
        }
        return out;
}

static const struct k8s_container *find_container(const struct k8s_pod *pod, const char *name)
{
        for (size_t i = 0; name && i < pod->spec.n_containers; i++)
                if (strcmp(pod->spec.containers[i].name, name) == 0)
                        return &pod->spec.containers[i];
        for (size_t i = 0; name && i < pod->spec.n_init_containers; i++)
                if (strcmp(pod->spec.init_containers[i].name, name) == 0)
                        return &pod->spec.init_containers[i];
        return NULL;
}

static char *resource_value(struct cb_arena *a, const struct k8s_pod *pod,
                            const struct k8s_downward_item *it, const struct ag_env_context *ctx,
                            struct cb_error *err)
{
        const struct k8s_container *c = find_container(pod, it->container_name);
        if (c == NULL) {
                cb_error_set(err, 0, "container %s not found",
                             it->container_name ? it->container_name : "");
                return NULL;
        }
        const char *res = it->resource;
        bool limit = strncmp(res, "limits.", 7) == 0;
        bool request = strncmp(res, "requests.", 9) == 0;
        const char *name = limit ? res + 7 : request ? res + 9 : "";
        bool cpu = strcmp(name, "cpu") == 0, mem = strcmp(name, "memory") == 0;
        if (!cpu && !mem && strcmp(name, "ephemeral-storage") != 0) {
                cb_error_set(err, 0, "unsupported container resource : %s", res);
                return NULL;
        }
        int64_t amount;
        if (limit) {
                amount = k8s_container_downward_limit(pod, c, name,
                                                      cpu   ? ctx->node_allocatable_milli_cpu
                                                      : mem ? ctx->node_allocatable_memory
                                                            : ctx->node_allocatable_ephemeral);
        } else {
                amount = k8s_container_request(c, name);
        }
        int64_t div = cpu ? 1000 : 1;
        if (it->has_divisor && it->divisor.set)
                div = cpu ? it->divisor.milli : it->divisor.value;
        if (div <= 0)
                div = 1;
        int64_t v = amount / div + (amount % div != 0);
        return cb_arena_printf(a, "%" PRId64, v);
}

static char *field_value(struct cb_arena *a, const struct k8s_pod *pod, const char *path)
{
        const struct k8s_object_meta *m = &pod->meta;
        if (strcmp(path, "metadata.name") == 0)
                return cb_arena_strdup(a, m->name ? m->name : "");
        if (strcmp(path, "metadata.namespace") == 0)
                return cb_arena_strdup(a, m->namespace_ ? m->namespace_ : "default");
        if (strcmp(path, "metadata.uid") == 0)
                return cb_arena_strdup(a, m->uid ? m->uid : "");
        if (strcmp(path, "metadata.labels") == 0)
                return format_map(a, &m->labels);
        if (strcmp(path, "metadata.annotations") == 0)
                return format_map(a, &m->annotations);
        const char *const pfx[2] = {"metadata.labels['", "metadata.annotations['"};
        for (int k = 0; k < 2; k++) {
                size_t pl = strlen(pfx[k]), n = strlen(path);
                if (strncmp(path, pfx[k], pl) == 0 && n > pl + 2 &&
                    strcmp(path + n - 2, "']") == 0) {
                        char *key = cb_arena_strndup(a, path + pl, n - pl - 2);
                        const char *v =
                            key ? k8s_map_get(k ? &m->annotations : &m->labels, key) : NULL;
                        return cb_arena_strdup(a, v ? v : "");
                }
        }
        return NULL;
}

/* downwardapi.CollectData */
static int downward_payload(struct files *fs, const struct k8s_pod *pod,
                            const struct k8s_downward_item *items, size_t n, int default_mode,
                            const struct ag_env_context *ctx, struct cb_error *err)
{
        for (size_t i = 0; i < n; i++) {
                const struct k8s_downward_item *it = &items[i];
                char *v = it->field_path ? field_value(fs->a, pod, it->field_path)
                                         : resource_value(fs->a, pod, it, ctx, err);
                if (v == NULL) {
                        if (it->field_path)
                                return cb_error_set(err, 0, "unsupported fieldPath: %s",
                                                    it->field_path);
                        return -1;
                }
                if (add_file(fs, it->path, v, strlen(v), it->has_mode ? it->mode : default_mode,
                             err) < 0)
                        return -1;
        }
        return 0;
}

static int lookup(const struct ag_volume_lookup *lk, enum ag_obj_kind kind,
                  const struct k8s_keyed_source *ks, const struct k8s_keyed_data **ret,
                  struct cb_error *err)
{
        int r = lk && lk->get ? lk->get(lk->ctx, kind, ks->name ? ks->name : "", ret, err)
                              : cb_error_set(err, 0, "%s \"%s\": no apiserver to read it from",
                                             ag_obj_kind_name(kind), ks->name ? ks->name : "");
        if (r < 0)
                return err->code == EAGAIN ? 0 : -1;
        if (r == 0 && !ks->optional)
                return cb_error_set(err, 0, "%s \"%s\" not found", ag_obj_kind_name(kind),
                                    ks->name ? ks->name : "");
        return 1;
}

int ag_volume_payload(struct cb_arena *a, const struct k8s_pod *pod, const struct k8s_volume *v,
                      const struct ag_volume_lookup *lk, const struct ag_env_context *ctx,
                      struct ag_payload_file **ret, size_t *ret_n, struct cb_error *err)
{
        struct files fs = {.a = a};
        const struct k8s_keyed_data *kd = NULL;
        int r = 1;
        *ret = NULL;
        *ret_n = 0;
        switch (v->kind) {
        case K8S_VOLUME_CONFIG_MAP:
        case K8S_VOLUME_SECRET: {
                enum ag_obj_kind kind =
                    v->kind == K8S_VOLUME_SECRET ? AG_OBJ_SECRET : AG_OBJ_CONFIG_MAP;
                r = lookup(lk, kind, &v->keyed, &kd, err);
                if (r == 1 && keyed_payload(&fs, kind, &v->keyed, kd, v->default_mode, err) < 0)
                        r = -1;
                break;
        }
        case K8S_VOLUME_DOWNWARD_API:
                if (downward_payload(&fs, pod, v->dw_items, v->n_dw_items, v->default_mode, ctx,
                                     err) < 0)
                        r = -1;
                break;
        case K8S_VOLUME_PROJECTED:
                for (size_t i = 0; r == 1 && i < v->n_projections; i++) {
                        const struct k8s_projection *p = &v->projections[i];
                        if (p->kind == K8S_PROJ_CONFIG_MAP || p->kind == K8S_PROJ_SECRET) {
                                enum ag_obj_kind kind =
                                    p->kind == K8S_PROJ_SECRET ? AG_OBJ_SECRET : AG_OBJ_CONFIG_MAP;
                                r = lookup(lk, kind, &p->keyed, &kd, err);
                                if (r == 1 && keyed_payload(&fs, kind, &p->keyed, kd,
                                                            v->default_mode, err) < 0)
                                        r = -1;
                        } else if (p->kind == K8S_PROJ_DOWNWARD_API) {
                                if (downward_payload(&fs, pod, p->dw_items, p->n_dw_items,
                                                     v->default_mode, ctx, err) < 0)
                                        r = -1;
                        } else if (p->kind == K8S_PROJ_SERVICE_ACCOUNT_TOKEN) {
                                const char *tok = NULL;
                                int t = lk && lk->token
                                            ? lk->token(lk->ctx, p, &tok, err)
                                            : cb_error_set(err, 0, "no apiserver to ask");
                                if (t < 0)
                                        r = cb_error_prefix(err, "failed to fetch token");
                                else if (t == 0)
                                        r = 0;
                                else if (add_token(&fs, pod, p->path, tok, v->default_mode, err) <
                                         0)
                                        r = -1;
                        } else if (p->kind == K8S_PROJ_CLUSTER_TRUST_BUNDLE) {
                                r = cb_error_set(err, 0,
                                                 "clusterTrustBundle projections are not "
                                                 "supported by cubelet (sources[%zu])",
                                                 i);
                        } else {
                                r = cb_error_set(err, 0,
                                                 "projected source %s is not supported by "
                                                 "cubelet (sources[%zu])",
                                                 p->other_kind ? p->other_kind : "(empty)", i);
                        }
                }
                break;
        default:
                break;
        }
        if (r != 1)
                return r;
        *ret = fs.f;
        *ret_n = fs.n;
        return 1;
}

static int add_ref(struct cb_arena *a, struct ag_obj_ref **refs, size_t *n, size_t *cap,
                   enum ag_obj_kind kind, const char *name)
{
        if (name == NULL || name[0] == '\0')
                return 0;
        if (*n == *cap) {
                size_t nc = *cap ? *cap * 2 : 8;
                struct ag_obj_ref *g = cb_arena_calloc(a, nc, sizeof(*g));
                if (g == NULL)
                        return -1;
                if (*n)
                        memcpy(g, *refs, *n * sizeof(*g));
                *refs = g;
                *cap = nc;
        }
        (*refs)[(*n)++] = (struct ag_obj_ref){kind, name};
        return 0;
}

static void container_refs(struct cb_arena *a, const struct k8s_container *c,
                           struct ag_obj_ref **refs, size_t *n, size_t *cap)
{
        for (size_t i = 0; i < c->n_env; i++)
                if (c->env[i].key_ref != K8S_KEY_REF_NONE)
                        add_ref(a, refs, n, cap,
                                c->env[i].key_ref == K8S_KEY_REF_SECRET ? AG_OBJ_SECRET
                                                                        : AG_OBJ_CONFIG_MAP,
                                c->env[i].key_ref_name);
        for (size_t i = 0; i < c->n_env_from; i++)
                add_ref(a, refs, n, cap, c->env_from[i].secret ? AG_OBJ_SECRET : AG_OBJ_CONFIG_MAP,
                        c->env_from[i].name);
}

size_t ag_pod_object_refs(struct cb_arena *a, const struct k8s_pod *pod, struct ag_obj_ref **ret)
{
        struct ag_obj_ref *refs = NULL;
        size_t n = 0, cap = 0;
        for (size_t i = 0; i < pod->spec.n_volumes; i++) {
                const struct k8s_volume *v = &pod->spec.volumes[i];
                if (v->kind == K8S_VOLUME_CONFIG_MAP || v->kind == K8S_VOLUME_SECRET)
                        add_ref(a, &refs, &n, &cap,
                                v->kind == K8S_VOLUME_SECRET ? AG_OBJ_SECRET : AG_OBJ_CONFIG_MAP,
                                v->keyed.name);
                for (size_t k = 0; k < v->n_projections; k++) {
                        const struct k8s_projection *p = &v->projections[k];
                        if (p->kind == K8S_PROJ_CONFIG_MAP || p->kind == K8S_PROJ_SECRET)
                                add_ref(a, &refs, &n, &cap,
                                        p->kind == K8S_PROJ_SECRET ? AG_OBJ_SECRET
                                                                   : AG_OBJ_CONFIG_MAP,
                                        p->keyed.name);
                }
        }
        for (size_t i = 0; i < pod->spec.n_init_containers; i++)
                container_refs(a, &pod->spec.init_containers[i], &refs, &n, &cap);
        for (size_t i = 0; i < pod->spec.n_containers; i++)
                container_refs(a, &pod->spec.containers[i], &refs, &n, &cap);
        /* The kubelet's secret manager registers the pull secrets too
         * (podutil.VisitPodSecretNames), so the Node authorizer's graph and
         * the watch have them when the image is pulled. */
        for (size_t i = 0; i < pod->spec.n_image_pull_secrets; i++)
                add_ref(a, &refs, &n, &cap, AG_OBJ_SECRET, pod->spec.image_pull_secrets[i]);
        *ret = refs;
        return n;
}

/* ---- one pod's volumes ---------------------------------------------------------------- */

enum vstate { V_PENDING, V_READY, V_FAILED };

struct vol {
        const struct k8s_volume *spec;
        enum vstate state;
        bool ever_ready;
        char message[sizeof(((struct cb_error *)0)->msg) + 320];
        uint64_t retry_ms; /* backoff after a failure */
        uint64_t retry_at_ms;
        /* persistentVolumeClaim: the claim and its PV, GET one after the
         * other (the populator's getPVCExtractPV and getPVSpec) */
        struct ag_pod_volumes *owner;
        struct ag_request *req; /* the GET in flight */
        struct k8s_pvc *pvc;
        struct k8s_pv *pv;   /* checked: the source to mount */
        bool process_failed; /* the last failure was the claim's or PV's, not a mount */
        bool mount_pending;  /* local: the bind is for the next job */
};

struct ag_pod_volumes {
        const struct ag_node_env *env;
        struct k8s_pod *pod;
        struct ag_env_context ctx; /* numbers only */
        struct ag_pod_volumes_ops ops;
        void *data;
        struct vol *vols;
        size_t n;
        struct cb_arena *refs_arena;
        struct ag_obj_ref *refs;
        size_t n_refs;
        struct ag_timer *timer;
        struct vjob *job;
        bool dirty;
        bool token_pending;
        uint64_t wait_since_ms;  /* not every volume set up since then */
        uint64_t wait_report_ms; /* the last "timed out waiting" event */
        uint64_t due_ms;         /* when the timer is armed for (ag_now_ms) */
};

/* The kubelet's WaitForAttachAndMount gives up after 2 min 3 s and says so
 * (then tries again). */
#define MOUNT_WAIT_MS 123000

static int name_cmp(const void *x, const void *y)
{
        return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* " "-joined sorted names of the volumes not set up (failed: only those
 * whose claim or PV could not be processed); false when there is none. */
static bool vol_names(const struct ag_pod_volumes *pv, bool failed, char *buf, size_t size)
{
        const char *names[64];
        size_t n = 0, o = 0;
        buf[0] = '\0';
        for (size_t i = 0; i < pv->n && n < 64; i++) {
                const struct vol *v = &pv->vols[i];
                if (v->state == V_READY || (failed && !(v->state == V_FAILED && v->process_failed)))
                        continue;
                names[n++] = v->spec->name;
        }
        qsort(names, n, sizeof(names[0]), name_cmp);
        for (size_t i = 0; i < n; i++) {
                int k = snprintf(buf + o, size - o, "%s%s", o ? " " : "", names[i]);
                if (k > 0 && (size_t)k < size - o)
                        o += (size_t)k;
        }
        return n > 0;
}

/* WaitForAttachAndMount's error as syncPod's FailedMount event words it. */
static void wait_message(const struct ag_pod_volumes *pv, const char *cause, char *buf, size_t size)
{
        char unmounted[512], failed[512];
        vol_names(pv, false, unmounted, sizeof(unmounted));
        vol_names(pv, true, failed, sizeof(failed));
        snprintf(buf, size,
                 "Unable to attach or mount volumes: unmounted volumes=[%s], unattached "
                 "volumes=[], failed to process volumes=[%s]: %s",
                 unmounted, failed, cause);
}

static void report_wait(struct ag_pod_volumes *pv, uint64_t now)
{
        char names[512];
        if (!vol_names(pv, false, names, sizeof(names))) {
                pv->wait_since_ms = 0;
                return;
        }
        if (pv->wait_since_ms == 0)
                pv->wait_since_ms = now;
        if (now - pv->wait_since_ms < MOUNT_WAIT_MS ||
            (pv->wait_report_ms && now - pv->wait_report_ms < MOUNT_WAIT_MS))
                return;
        pv->wait_report_ms = now;
        char msg[4096];
        wait_message(pv, "timed out waiting for the condition", msg, sizeof(msg));
        if (pv->ops.event)
                pv->ops.event(pv->data, "Warning", "FailedMount", msg);
}

struct vjob_vol {
        struct vol *v; /* NULL once the pod's volumes are gone */
        char *name, *dir;
        char *bind_src; /* a local PV's directory, bound on dir */
        /* a hostPath (inline or a PV's): the plugin's SetUp, its type
         * check (and DirectoryOrCreate/FileOrCreate); nothing mounted */
        char *host_path, *host_type;
        bool bind_ro;
        bool has_fs_group; /* the pod's fsGroup: the bind's SetVolumeOwnership */
        int64_t fs_group;
        char *refs_glob; /* every pod's bind of the same PV */
        bool tmpfs, empty_dir;
        char *tmpfs_opts;
        bool write;
        struct ag_payload_file *files;
        size_t n;
        int rc;
        bool changed;
        struct cb_error err;
};

struct vjob {
        struct ag_pod_volumes *pv;
        struct cb_arena *a;
        struct vjob_vol *vols;
        size_t n;
        struct ag_atomic_opts opts;
};

static void schedule(struct ag_pod_volumes *pv, uint64_t ms)
{
        if (pv->timer) {
                ag_timer_arm(pv->timer, ms);
                pv->due_ms = ag_now_ms() + ms;
        }
}

/* A retry after a job's failure: the next sync no later than in ms, an
 * earlier one kept (sync_now arms the rest from what is due). */
static void schedule_by(struct ag_pod_volumes *pv, uint64_t ms)
{
        if (pv->timer && (!ag_timer_armed(pv->timer) || ag_now_ms() + ms < pv->due_ms))
                schedule(pv, ms);
}

static bool is_mountpoint(const char *dir)
{
        /* A bind from the same file system has its parent's st_dev. */
        struct statx sx;
        if (statx(AT_FDCWD, dir, AT_SYMLINK_NOFOLLOW, 0, &sx) == 0 &&
            (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
                return (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
        struct stat a, b;
        char parent[PATH_MAX];
        snprintf(parent, sizeof(parent), "%s/..", dir);
        return stat(dir, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev;
}

/* volume.SetVolumeOwnership with fsGroupChangePolicy Always: every file
 * and directory (symlinks not followed) gets the group fsGroup and g+rw,
 * directories also g+x and setgid; a symlink only its group. */
static _Thread_local gid_t owner_gid;
static _Thread_local int owner_errno;
static _Thread_local char owner_path[256];

static int own_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
        (void)ftw;
        if (lchown(path, (uid_t)-1, owner_gid) < 0 ||
            (type != FTW_SL && chmod(path, (sb->st_mode & 07777) | 0660 |
                                               (S_ISDIR(sb->st_mode) ? S_ISGID | 0110 : 0)) < 0)) {
                owner_errno = errno;
                snprintf(owner_path, sizeof(owner_path), "%s", path);
                return 1;
        }
        return 0;
}

static int set_ownership(const char *dir, int64_t fs_group, struct cb_error *err)
{
        owner_gid = (gid_t)fs_group;
        owner_errno = 0;
        if (nftw(dir, own_one, 16, FTW_PHYS) != 0)
                return cb_error_set(err, owner_errno ? owner_errno : errno,
                                    "setting the fsGroup %lld ownership of %s", (long long)fs_group,
                                    owner_errno ? owner_path : dir);
        return 0;
}

/* Whether another pod's bind of the PV is mounted (GetMountRefs). */
static bool other_binds(const char *pattern, const char *dir)
{
        glob_t g;
        bool found = false;
        if (pattern == NULL || glob(pattern, GLOB_NOSORT, NULL, &g) != 0)
                return false;
        for (size_t i = 0; i < g.gl_pathc && !found; i++)
                found = strcmp(g.gl_pathv[i], dir) != 0 && is_mountpoint(g.gl_pathv[i]);
        globfree(&g);
        return found;
}

/* The local volume plugin's SetUpAt for a directory: a bind of the PV's
 * path on the pod's volume directory, "ro" when the claim is read-only;
 * a writable bind gets the pod's fsGroup ownership when no other pod has
 * the PV mounted (the plugin sets it on the volume's first mount). */
static int bind_local(const char *src, const char *dir, bool ro, bool has_fs_group,
                      int64_t fs_group, const char *refs_glob, struct cb_error *err)
{
        struct stat sb;
        if (stat(src, &sb) < 0)
                return cb_error_set(err, errno, "local volume path %s", src);
        if (S_ISBLK(sb.st_mode))
                return cb_error_set(err, 0,
                                    "local volume path %s is a block device: cubelet mounts "
                                    "only directory local volumes",
                                    src);
        if (!S_ISDIR(sb.st_mode))
                return cb_error_set(err, 0, "local volume path %s is not a directory", src);
        if (cb_mkdir_p(dir, 0750, 0750, err) < 0)
                return -1;
        if (is_mountpoint(dir))
                return 0; /* made before (an agent restart) */
        bool first = !other_binds(refs_glob, dir);
        if (mount(src, dir, NULL, MS_BIND, NULL) < 0)
                return cb_error_set(err, errno, "mount failed: bind %s on %s", src, dir);
        if (ro && mount(NULL, dir, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0) {
                int e = errno;
                umount2(dir, MNT_DETACH);
                return cb_error_set(err, e, "mount failed: read-only remount of %s", dir);
        }
        if (!ro && has_fs_group && first && set_ownership(dir, fs_group, err) < 0) {
                umount2(dir, MNT_DETACH);
                return -1;
        }
        return 0;
}

/* Go's error text of a failed syscall on path: "mkdir /a/b: not a directory". */
static int go_path_error(struct cb_error *err, int e, const char *op, const char *path)
{
        char text[128];
        snprintf(text, sizeof(text), "%s", strerror(e));
        if (text[0] >= 'A' && text[0] <= 'Z')
                text[0] = (char)(text[0] - 'A' + 'a');
        cb_error_set(err, 0, "%s %s: %s", op, path, text); /* Go's text, no strerror added */
        if (err != NULL)
                err->code = e;
        return -1;
}

/* os.MkdirAll(path, 0755): each missing component made; a component
 * that exists and is no directory fails with ENOTDIR. */
static int mkdir_all(const char *path, struct cb_error *err)
{
        char buf[PATH_MAX];
        struct stat sb;
        if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
                return go_path_error(err, ENAMETOOLONG, "mkdir", path);
        for (char *p = buf + 1;; p++) {
                if (*p != '/' && *p != '\0')
                        continue;
                char c = *p;
                *p = '\0';
                if (mkdir(buf, 0755) < 0) {
                        int e = errno;
                        if (e != EEXIST)
                                return go_path_error(err, e, "mkdir", buf);
                        if (stat(buf, &sb) == 0 && !S_ISDIR(sb.st_mode))
                                return go_path_error(err, ENOTDIR, "mkdir", buf);
                }
                *p = c;
                if (c == '\0')
                        return 0;
        }
}

/* hostPath's SetUp (pkg/volume/hostpath, v1.32): no `..` element, then
 * for a set type its checkType: DirectoryOrCreate/FileOrCreate make a
 * missing path (0755 directories, an empty 0644 file), every type must
 * then match (stat, symlinks followed; a File is anything but a
 * directory). The texts are the plugin's. */
int ag_host_path_setup(const char *path, const char *type, struct cb_error *err)
{
        for (const char *p = path; (p = strstr(p, "..")) != NULL; p += 2)
                if ((p == path || p[-1] == '/') && (p[2] == '\0' || p[2] == '/'))
                        return cb_error_set(err, 0, "invalid HostPath `%s`: must not contain '..'",
                                            path);
        if (type == NULL || type[0] == '\0')
                return 0; /* HostPathUnset: no check */
        struct stat sb;
        bool exists = stat(path, &sb) == 0;
        const char *want;
        bool ok;
        if (strcmp(type, "DirectoryOrCreate") == 0 || strcmp(type, "Directory") == 0) {
                if (!exists && strcmp(type, "DirectoryOrCreate") == 0)
                        return mkdir_all(path, err);
                want = "directory";
                ok = exists && S_ISDIR(sb.st_mode);
        } else if (strcmp(type, "FileOrCreate") == 0 || strcmp(type, "File") == 0) {
                if (!exists && strcmp(type, "FileOrCreate") == 0) {
                        int fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
                        if (fd < 0)
                                return go_path_error(err, errno, "open", path);
                        close(fd);
                        return 0;
                }
                want = "file";
                ok = exists && !S_ISDIR(sb.st_mode);
        } else if (strcmp(type, "Socket") == 0) {
                want = "socket file";
                ok = exists && S_ISSOCK(sb.st_mode);
        } else if (strcmp(type, "CharDevice") == 0) {
                want = "character device";
                ok = exists && S_ISCHR(sb.st_mode);
        } else if (strcmp(type, "BlockDevice") == 0) {
                want = "block device";
                ok = exists && S_ISBLK(sb.st_mode);
        } else {
                return cb_error_set(err, 0, "%s is an invalid volume type", type);
        }
        if (!ok)
                return cb_error_set(err, 0, "hostPath type check failed: %s is not a %s", path,
                                    want);
        return 0;
}

static void vjob_work(void *data)
{
        struct vjob *j = data;
        for (size_t i = 0; i < j->n; i++) {
                struct vjob_vol *vv = &j->vols[i];
                if (vv->host_path != NULL) {
                        vv->rc = ag_host_path_setup(vv->host_path, vv->host_type, &vv->err);
                        continue;
                }
                if (vv->bind_src != NULL) {
                        vv->rc = bind_local(vv->bind_src, vv->dir, vv->bind_ro, vv->has_fs_group,
                                            vv->fs_group, vv->refs_glob, &vv->err);
                        continue;
                }
                if (cb_mkdir_p(vv->dir, 0750, 0750, &vv->err) < 0) {
                        vv->rc = -1;
                        continue;
                }
                if (vv->tmpfs && !is_mountpoint(vv->dir) &&
                    mount("tmpfs", vv->dir, "tmpfs", MS_NOSUID | MS_NODEV, vv->tmpfs_opts) < 0) {
                        vv->rc = cb_error_set(&vv->err, errno, "mount tmpfs on %s", vv->dir);
                        continue;
                }
                /* emptyDir's setupDir: 0777 whatever the medium; the API-data
                 * volumes are bound read-only, so their 0777 root is moot. */
                if (chmod(vv->dir, vv->empty_dir ? 01777 : 0777) < 0) {
                        vv->rc = cb_error_set(&vv->err, errno, "chmod %s", vv->dir);
                        continue;
                }
                if (vv->write)
                        vv->rc = ag_atomic_write(vv->dir, vv->files, vv->n, &j->opts, &vv->changed,
                                                 &vv->err);
        }
}

static void sync_now(struct ag_pod_volumes *pv);

static void vjob_done(void *data, bool cancelled)
{
        struct vjob *j = data;
        struct ag_pod_volumes *pv = j->pv;
        if (pv != NULL && !cancelled) {
                pv->job = NULL;
                uint64_t now = ag_now_ms();
                for (size_t i = 0; i < j->n; i++) {
                        struct vjob_vol *vv = &j->vols[i];
                        struct vol *v = vv->v;
                        if (vv->rc < 0) {
                                v->state = v->ever_ready ? V_READY : V_FAILED;
                                v->process_failed = false;
                                snprintf(v->message, sizeof(v->message),
                                         "MountVolume.SetUp failed for volume \"%s\" : %s",
                                         vv->name, vv->err.msg);
                                v->retry_ms =
                                    v->retry_ms ? v->retry_ms * 2 : (uint64_t)RETRY_INITIAL_MS;
                                if (v->retry_ms > RETRY_CAP_MS)
                                        v->retry_ms = RETRY_CAP_MS;
                                v->retry_at_ms = now + v->retry_ms;
                                /* a mount that failed off the loop (a
                                 * hostPath's type, a local PV's bind) is
                                 * tried again after its backoff */
                                if (v->state == V_FAILED)
                                        schedule_by(pv, v->retry_ms);
                                if (pv->ops.event)
                                        pv->ops.event(pv->data, "Warning", "FailedMount",
                                                      v->message);
                        } else {
                                v->state = V_READY;
                                v->ever_ready = true;
                                v->retry_ms = 0;
                                v->message[0] = '\0';
                                if (vv->bind_src != NULL || vv->host_path != NULL)
                                        v->mount_pending = false;
                        }
                }
                if (pv->dirty)
                        schedule(pv, 0);
                if (pv->ops.changed)
                        pv->ops.changed(pv->data);
        } else if (pv != NULL) {
                pv->job = NULL;
        }
        cb_arena_free(j->a);
        free(j);
}

static int get_object(void *ctx, enum ag_obj_kind kind, const char *name,
                      const struct k8s_keyed_data **ret, struct cb_error *err)
{
        struct ag_pod_volumes *pv = ctx;
        if (pv->env->objects == NULL)
                return cb_error_set(err, 0, "%s \"%s\": no apiserver to read it from",
                                    ag_obj_kind_name(kind), name);
        return ag_objmgr_get(pv->env->objects, kind, pv->pod->meta.namespace_ ?: "default", name,
                             ret, err);
}

static void on_token(void *data)
{
        struct ag_pod_volumes *pv = data;
        schedule(pv, 0);
}

static int get_token(void *ctx, const struct k8s_projection *p, const char **ret,
                     struct cb_error *err)
{
        struct ag_pod_volumes *pv = ctx;
        if (pv->env->tokens == NULL)
                return cb_error_set(err, 0, "no apiserver to ask");
        const char *sa = pv->pod->spec.service_account_name;
        struct ag_token_key key = {
            .ns = pv->pod->meta.namespace_ ? pv->pod->meta.namespace_ : "default",
            .service_account = sa && sa[0] ? sa : "default",
            .audience = p->audience,
            .expiration_seconds = p->expiration_seconds,
            .pod_name = pv->pod->meta.name,
            .pod_uid = pv->pod->meta.uid,
        };
        int r = ag_tokenmgr_get(pv->env->tokens, &key, on_token, pv, ret, NULL, err);
        if (r == 0)
                pv->token_pending = true;
        return r;
}

/* ---- persistentVolumeClaim volumes ---- */

static const char *pod_ns(const struct ag_pod_volumes *pv)
{
        return pv->pod->meta.namespace_ ? pv->pod->meta.namespace_ : "default";
}

/* Whether a container (init or regular) mounts the volume. */
static bool pod_mounts(const struct k8s_pod *pod, const char *name)
{
        const struct k8s_pod_spec *s = &pod->spec;
        for (size_t i = 0; i < s->n_init_containers + s->n_containers; i++) {
                const struct k8s_container *c = i < s->n_init_containers
                                                    ? &s->init_containers[i]
                                                    : &s->containers[i - s->n_init_containers];
                for (size_t k = 0; k < c->n_volume_mounts; k++)
                        if (c->volume_mounts[k].name && strcmp(c->volume_mounts[k].name, name) == 0)
                                return true;
        }
        return false;
}

/* What client-go's error says: the Status message, else the transport's. */
static const char *answer_error(const struct ag_api_result *res)
{
        const cJSON *m = res->json ? cJSON_GetObjectItemCaseSensitive(res->json, "message") : NULL;
        if (cJSON_IsString(m) && m->valuestring[0])
                return m->valuestring;
        return res->error ? res->error : "no answer";
}

/* A claim that cannot be used yet. process: the populator's error ("error
 * processing PVC ns/name: ...", in syncPod's "Unable to attach or mount
 * volumes" event); else a mount's (the message is the whole event). The
 * next sync asks again after the backoff. */
static void pvc_failed(struct vol *v, bool process, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void pvc_failed(struct vol *v, bool process, const char *fmt, ...)
{
        struct ag_pod_volumes *pv = v->owner;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(v->message, sizeof(v->message), fmt, ap);
        va_end(ap);
        k8s_pv_free(v->pv);
        v->pv = NULL;
        v->mount_pending = false;
        v->state = V_FAILED;
        v->process_failed = process;
        v->retry_ms = v->retry_ms ? v->retry_ms * 2 : (uint64_t)RETRY_INITIAL_MS;
        if (v->retry_ms > PVC_RETRY_CAP_MS)
                v->retry_ms = PVC_RETRY_CAP_MS;
        v->retry_at_ms = ag_now_ms() + v->retry_ms;
        if (pv->ops.event) {
                if (process) {
                        char msg[4096];
                        wait_message(pv, v->message, msg, sizeof(msg));
                        pv->ops.event(pv->data, "Warning", "FailedMount", msg);
                } else {
                        pv->ops.event(pv->data, "Warning", "FailedMount", v->message);
                }
        }
        schedule(pv, 0); /* sync_now arms the retry with the others */
        if (pv->ops.changed)
                pv->ops.changed(pv->data);
}

/* The PV is the claim's and can be mounted here: hostPath gets its SetUp
 * (the type check, as an inline hostPath) and local its bind by the next
 * job; any other source is refused by name. */
static void pv_accept(struct vol *v)
{
        struct ag_pod_volumes *pv = v->owner;
        const struct k8s_pv *p = v->pv;
        const char *pvn = p->meta.name ? p->meta.name : "";
        struct cb_error err = {0};
        const struct k8s_node *node = pv->env->node ? pv->env->node(pv->env->node_data) : NULL;
        if (k8s_pv_node_affinity_check(p, node, &err) < 0) {
                pvc_failed(v, false, "MountVolume.NodeAffinity check failed for volume \"%s\" : %s",
                           pvn, err.msg);
                return;
        }
        if (p->source == K8S_PV_HOST_PATH && p->n_mount_options > 0) {
                pvc_failed(v, false,
                           "MountVolume.MountOptionSupport check failed for volume \"%s\" : mount "
                           "options are not supported for this volume type",
                           pvn);
                return;
        }
        if (p->source == K8S_PV_LOCAL && p->n_mount_options > 0) {
                pvc_failed(v, false,
                           "MountVolume.SetUp failed for volume \"%s\" : pod %s/%s volume \"%s\": "
                           "mountOptions of local PV %s are not supported by cubelet",
                           pvn, pod_ns(pv), pv->pod->meta.name, v->spec->name, pvn);
                return;
        }
        if (p->source == K8S_PV_OTHER) {
                const char *src = k8s_pv_source_name(p);
                pvc_failed(v, false,
                           "MountVolume.SetUp failed for volume \"%s\" : pod %s/%s volume \"%s\": "
                           "PV %s has a %s source: %s volumes are not supported by cubelet (it "
                           "mounts hostPath and local PVs)",
                           pvn, pod_ns(pv), pv->pod->meta.name, v->spec->name, pvn, src, src);
                return;
        }
        if (p->path == NULL || p->path[0] != '/') {
                pvc_failed(v, false,
                           "MountVolume.SetUp failed for volume \"%s\" : path \"%s\" is "
                           "not absolute",
                           pvn, p->path ? p->path : "");
                return;
        }
        /* local: the bind; hostPath: its SetUp (the type check), both by
         * the next job, now, not after an earlier failure's backoff */
        v->mount_pending = true;
        v->state = V_PENDING;
        schedule(pv, 0);
}

static void on_pv(struct ag_api_result *res, void *data)
{
        struct vol *v = data;
        const char *claim = v->spec->claim_name;
        const char *pvn = v->pvc->volume_name;
        struct cb_error err = {0};
        v->req = NULL;
        if (res->status != 200) {
                pvc_failed(v, true,
                           "error processing PVC %s/%s: failed to fetch PV %s from API "
                           "server: %s",
                           pod_ns(v->owner), claim, pvn, answer_error(res));
                return;
        }
        if (k8s_pv_from_json(res->json, &v->pv, &err) < 0) {
                pvc_failed(v, true, "error processing PVC %s/%s: PV %s: %s", pod_ns(v->owner),
                           claim, pvn, err.msg);
                return;
        }
        if (k8s_pv_check(v->pv, v->pvc, v->spec->name, pod_mounts(v->owner->pod, v->spec->name),
                         &err) < 0) {
                pvc_failed(v, true, "error processing PVC %s/%s: %s", pod_ns(v->owner), claim,
                           err.msg);
                return;
        }
        pv_accept(v);
}

static void on_pvc(struct ag_api_result *res, void *data)
{
        struct vol *v = data;
        struct ag_pod_volumes *pv = v->owner;
        const char *claim = v->spec->claim_name;
        struct cb_error err = {0};
        v->req = NULL;
        k8s_pvc_free(v->pvc);
        v->pvc = NULL;
        if (res->status != 200) {
                pvc_failed(v, true,
                           "error processing PVC %s/%s: failed to fetch PVC from API server: %s",
                           pod_ns(pv), claim, answer_error(res));
                return;
        }
        if (k8s_pvc_from_json(res->json, &v->pvc, &err) < 0 || k8s_pvc_check(v->pvc, &err) < 0) {
                pvc_failed(v, true, "error processing PVC %s/%s: %s", pod_ns(pv), claim, err.msg);
                return;
        }
        _cleanup_free_ char *name = ag_api_escape(v->pvc->volume_name);
        char path[1024];
        snprintf(path, sizeof(path), "/api/v1/persistentvolumes/%s", name ? name : "");
        struct ag_api_req_opts opts = {0};
        if (name == NULL ||
            (v->req = ag_api_request(pv->env->api, "GET", path, &opts, on_pv, v, &err)) == NULL)
                pvc_failed(v, true,
                           "error processing PVC %s/%s: failed to fetch PV %s from API "
                           "server: %s",
                           pod_ns(pv), claim, v->pvc->volume_name,
                           name ? err.msg : "out of memory");
}

static void pvc_start(struct ag_pod_volumes *pv, struct vol *v)
{
        const char *claim = v->spec->claim_name ? v->spec->claim_name : "";
        struct cb_error err = {0};
        if (pv->env->api == NULL) {
                pvc_failed(v, true,
                           "error processing PVC %s/%s: failed to fetch PVC from API "
                           "server: no apiserver to read it from",
                           pod_ns(pv), claim);
                return;
        }
        _cleanup_free_ char *ns = ag_api_escape(pod_ns(pv));
        _cleanup_free_ char *name = ag_api_escape(claim);
        char path[1024];
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/persistentvolumeclaims/%s",
                 ns ? ns : "", name ? name : "");
        struct ag_api_req_opts opts = {0};
        if (ns == NULL || name == NULL ||
            (v->req = ag_api_request(pv->env->api, "GET", path, &opts, on_pvc, v, &err)) == NULL)
                pvc_failed(v, true,
                           "error processing PVC %s/%s: failed to fetch PVC from API server: %s",
                           pod_ns(pv), claim, ns && name ? err.msg : "out of memory");
}

static char *local_dir(struct cb_arena *a, const char *root_dir, const char *uid, const char *pv)
{
        return cb_arena_printf(a, "%s/pods/%s/volumes/kubernetes.io~local-volume/%s", root_dir, uid,
                               pv);
}

int ag_pod_volumes_pvc_source(const struct ag_pod_volumes *pv, const struct k8s_volume *v,
                              struct cb_arena *a, struct ag_pvc_source *ret, struct cb_error *err)
{
        const struct vol *vol = NULL;
        for (size_t i = 0; pv && i < pv->n && vol == NULL; i++)
                if (pv->vols[i].spec == v)
                        vol = &pv->vols[i];
        if (vol == NULL || vol->state != V_READY || vol->pv == NULL)
                return cb_error_set(err, 0, "volume \"%s\" is not set up yet", v->name);
        const struct k8s_pv *p = vol->pv;
        *ret = (struct ag_pvc_source){
            .pv_name = p->meta.name,
            .local = p->source == K8S_PV_LOCAL,
            .path = p->path,
            .host_path_type = p->host_path_type,
            .read_only = v->claim_read_only,
        };
        if (ret->local &&
            (ret->path = local_dir(a, pv->env->root_dir, pv->pod->meta.uid, p->meta.name)) == NULL)
                return cb_error_set(err, ENOMEM, "volume %s", v->name);
        return 0;
}

static void sync_now(struct ag_pod_volumes *pv)
{
        if (pv->job != NULL) {
                pv->dirty = true;
                return;
        }
        pv->dirty = false;
        pv->token_pending = false;
        struct vjob *j = calloc(1, sizeof(*j));
        struct cb_arena *a = cb_arena_new(0);
        if (j == NULL || a == NULL ||
            (pv->n && (j->vols = cb_arena_calloc(a, pv->n, sizeof(*j->vols))) == NULL)) {
                free(j);
                cb_arena_free(a);
                schedule(pv, 1000);
                return;
        }
        j->pv = pv;
        j->a = a;
        const struct k8s_pod_security_context *psc = &pv->pod->spec.security_context;
        j->opts =
            (struct ag_atomic_opts){.has_fs_group = psc->has_fs_group, .fs_group = psc->fs_group};
        struct ag_volume_lookup lk = {.get = get_object, .token = get_token, .ctx = pv};
        uint64_t now = ag_now_ms(), next = AG_VOLUME_RESYNC_S * 1000u;
        bool notify = false;
        for (size_t i = 0; i < pv->n; i++) {
                struct vol *v = &pv->vols[i];
                if (v->state == V_FAILED && v->retry_at_ms > now) {
                        uint64_t d = v->retry_at_ms - now;
                        next = d < next ? d : next;
                        continue;
                }
                if (v->spec->kind == K8S_VOLUME_PVC) {
                        if (v->req != NULL || v->state == V_READY)
                                continue; /* asked, or set up for good */
                        if (!v->mount_pending) {
                                pvc_start(pv, v);
                                if (v->state == V_FAILED && v->req == NULL &&
                                    v->retry_at_ms > now && v->retry_at_ms - now < next)
                                        next = v->retry_at_ms - now; /* failed at once */
                                continue;
                        }
                        const char *pvn = v->pv->meta.name;
                        if (v->pv->source == K8S_PV_HOST_PATH) {
                                j->vols[j->n++] = (struct vjob_vol){
                                    .v = v,
                                    .name = cb_arena_strdup(a, pvn),
                                    .host_path = cb_arena_strdup(a, v->pv->path),
                                    .host_type = v->pv->host_path_type
                                                     ? cb_arena_strdup(a, v->pv->host_path_type)
                                                     : NULL,
                                };
                                continue;
                        }
                        j->vols[j->n++] = (struct vjob_vol){
                            .v = v,
                            .name = cb_arena_strdup(a, pvn),
                            .dir = local_dir(a, pv->env->root_dir, pv->pod->meta.uid, pvn),
                            .bind_src = cb_arena_strdup(a, v->pv->path),
                            .bind_ro = v->spec->claim_read_only,
                            .has_fs_group = pv->pod->spec.security_context.has_fs_group,
                            .fs_group = pv->pod->spec.security_context.fs_group,
                            .refs_glob = cb_arena_printf(
                                a, "%s/pods/*/volumes/kubernetes.io~local-volume/%s",
                                pv->env->root_dir, pvn),
                        };
                        continue;
                }
                if (v->spec->kind == K8S_VOLUME_HOST_PATH) {
                        if (v->state == V_READY)
                                continue; /* set up once: hostPath needs no remount */
                        j->vols[j->n++] = (struct vjob_vol){
                            .v = v,
                            .name = v->spec->name,
                            .host_path =
                                cb_arena_strdup(a, v->spec->host_path ? v->spec->host_path : ""),
                            .host_type = v->spec->host_path_type
                                             ? cb_arena_strdup(a, v->spec->host_path_type)
                                             : NULL,
                        };
                        continue;
                }
                struct vjob_vol *vv = &j->vols[j->n];
                *vv = (struct vjob_vol){
                    .v = v,
                    .name = v->spec->name,
                    .dir = ag_volume_dir(a, pv->env->root_dir, pv->pod->meta.uid, v->spec),
                    .tmpfs = on_tmpfs(v->spec),
                    .empty_dir = v->spec->kind == K8S_VOLUME_EMPTY_DIR,
                    .write = v->spec->kind != K8S_VOLUME_EMPTY_DIR,
                };
                if (vv->empty_dir && v->spec->has_size_limit && v->spec->size_limit.value > 0)
                        vv->tmpfs_opts =
                            cb_arena_printf(a, "size=%" PRId64, v->spec->size_limit.value);
                struct cb_error err = {0};
                const char *vn = v->spec->name ? v->spec->name : "";
                int r = vv->write ? ag_volume_payload(a, pv->pod, v->spec, &lk, &pv->ctx,
                                                      &vv->files, &vv->n, &err)
                                  : 1;
                /* The name becomes a directory: one path component. */
                if (vn[0] == '\0' || strchr(vn, '/') != NULL || strcmp(vn, ".") == 0 ||
                    strcmp(vn, "..") == 0 || strlen(vn) > 253)
                        r = cb_error_set(&err, 0, "invalid volume name \"%s\"", vn);
                if (vv->dir == NULL) {
                        r = cb_error_set(&err, ENOMEM, "out of memory");
                }
                if (r == 0) {
                        next = next > 1000 ? 1000 : next; /* the watch or token kicks sooner */
                        continue;
                }
                if (r < 0) {
                        if (v->ever_ready)
                                continue; /* keeps what it had, as the kubelet */
                        v->state = V_FAILED;
                        snprintf(v->message, sizeof(v->message),
                                 "MountVolume.SetUp failed for volume \"%s\" : %s", v->spec->name,
                                 err.msg);
                        v->retry_ms = v->retry_ms ? v->retry_ms * 2 : (uint64_t)RETRY_INITIAL_MS;
                        if (v->retry_ms > RETRY_CAP_MS)
                                v->retry_ms = RETRY_CAP_MS;
                        v->retry_at_ms = now + v->retry_ms;
                        next = v->retry_ms < next ? v->retry_ms : next;
                        if (pv->ops.event)
                                pv->ops.event(pv->data, "Warning", "FailedMount", v->message);
                        notify = true;
                        continue;
                }
                j->n++;
        }
        if (pv->env->tokens) {
                int64_t due = ag_tokenmgr_next_due(pv->env->tokens, pv->pod->meta.uid);
                int64_t wall = cb_wall_now();
                if (due > 0) {
                        uint64_t d = due > wall ? (uint64_t)(due - wall) * 1000u : 0;
                        next = d < next ? d : next;
                }
        }
        report_wait(pv, now);
        schedule(pv, next);
        if (j->n == 0) {
                cb_arena_free(a);
                free(j);
        } else {
                struct cb_error err = {0};
                if (ag_offload_submit(pv->env->sandboxes, vjob_work, vjob_done, j, &err) < 0) {
                        cb_arena_free(a);
                        free(j);
                        schedule(pv, 1000);
                } else {
                        pv->job = j;
                }
        }
        if (notify && pv->ops.changed)
                pv->ops.changed(pv->data);
}

void ag_pod_volumes_resync(struct ag_pod_volumes *pv)
{
        schedule(pv, 0);
}

static void on_timer(struct ag_timer *t, void *data)
{
        (void)t;
        sync_now(data);
}

static void on_object(enum ag_obj_kind kind, const char *ns, const char *name, void *data)
{
        (void)kind, (void)ns, (void)name;
        struct ag_pod_volumes *pv = data;
        schedule(pv, 0);
        if (pv->ops.changed)
                pv->ops.changed(pv->data); /* a synced object may unblock the pod */
}

int ag_pod_volumes_new(const struct ag_node_env *env, const struct k8s_pod *pod,
                       const struct ag_env_context *ctx, const struct ag_pod_volumes_ops *ops,
                       void *data, struct ag_pod_volumes **ret, struct cb_error *err)
{
        struct ag_pod_volumes *pv = calloc(1, sizeof(*pv));
        if (pv == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        pv->env = env;
        pv->pod = k8s_pod_ref(pod);
        if (ctx)
                pv->ctx = (struct ag_env_context){
                    .node_allocatable_milli_cpu = ctx->node_allocatable_milli_cpu,
                    .node_allocatable_memory = ctx->node_allocatable_memory,
                    .node_allocatable_ephemeral = ctx->node_allocatable_ephemeral};
        if (ops)
                pv->ops = *ops;
        pv->data = data;
        pv->vols = calloc(pod->spec.n_volumes + 1, sizeof(*pv->vols));
        pv->refs_arena = cb_arena_new(0);
        pv->timer = ag_timer_new(env->loop, on_timer, pv, err);
        if (pv->vols == NULL || pv->refs_arena == NULL || pv->timer == NULL) {
                ag_pod_volumes_free(pv);
                return cb_error_set(err, ENOMEM, "out of memory");
        }
        for (size_t i = 0; i < pod->spec.n_volumes; i++)
                if (ag_volume_managed(&pod->spec.volumes[i])) {
                        pv->vols[pv->n].owner = pv;
                        pv->vols[pv->n++].spec = &pod->spec.volumes[i];
                }
        pv->n_refs = ag_pod_object_refs(pv->refs_arena, pod, &pv->refs);
        if (pv->n_refs && env->objects &&
            ag_objmgr_register(env->objects, pod->meta.uid,
                               pod->meta.namespace_ ? pod->meta.namespace_ : "default", pv->refs,
                               pv->n_refs, on_object, pv, err) < 0) {
                ag_pod_volumes_free(pv);
                return -1;
        }
        schedule(pv, 0);
        *ret = pv;
        return 0;
}

bool ag_pod_volumes_ready(const struct ag_pod_volumes *pv)
{
        if (pv == NULL)
                return true;
        for (size_t i = 0; i < pv->n; i++)
                if (pv->vols[i].state != V_READY)
                        return false;
        /* env references resolve at container start: their watches must
         * have synced (found or not) */
        for (size_t i = 0; pv->env->objects && i < pv->n_refs; i++) {
                const struct k8s_keyed_data *kd;
                struct cb_error err = {0};
                if (ag_objmgr_get(pv->env->objects, pv->refs[i].kind,
                                  pv->pod->meta.namespace_ ? pv->pod->meta.namespace_ : "default",
                                  pv->refs[i].name, &kd, &err) < 0 &&
                    err.code == EAGAIN)
                        return false;
        }
        return true;
}

bool ag_pod_volumes_busy(const struct ag_pod_volumes *pv)
{
        return pv != NULL && pv->job != NULL;
}

void ag_pod_volumes_free(struct ag_pod_volumes *pv)
{
        if (pv == NULL)
                return;
        if (pv->job != NULL) {
                pv->job->pv = NULL; /* finishes detached */
                for (size_t i = 0; i < pv->job->n; i++)
                        pv->job->vols[i].v = NULL;
        }
        for (size_t i = 0; pv->vols && i < pv->n; i++) {
                struct vol *v = &pv->vols[i];
                if (v->req != NULL)
                        ag_api_cancel(v->req);
                k8s_pvc_free(v->pvc);
                k8s_pv_free(v->pv);
        }
        if (pv->env->objects && pv->pod)
                ag_objmgr_unregister(pv->env->objects, pv->pod->meta.uid);
        if (pv->env->tokens && pv->pod)
                ag_tokenmgr_forget_pod(pv->env->tokens, pv->pod->meta.uid);
        ag_timer_free(pv->timer);
        cb_arena_free(pv->refs_arena);
        free(pv->vols);
        k8s_pod_free(pv->pod);
        free(pv);
}

/* ---- unmounting ---------------------------------------------------------------------- */

/* A mount point from /proc/self/mountinfo's octal escapes. */
static void unescape(char *s)
{
        char *o = s;
        for (char *p = s; *p; p++) {
                if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
                    p[3] >= '0' && p[3] <= '7') {
                        *o++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
                        p += 3;
                } else {
                        *o++ = *p;
                }
        }
        *o = '\0';
}

int ag_pod_volumes_unmount_all(const char *root_dir, const char *uid, struct cb_error *err)
{
        char prefix[PATH_MAX];
        int pl = snprintf(prefix, sizeof(prefix), "%s/pods/%s/", root_dir, uid);
        if (pl < 0 || (size_t)pl >= sizeof(prefix))
                return cb_error_set(err, 0, "pod %s: path too long", uid);
        int failed = 0;
        /* Deepest first, one per pass (mountinfo re-read each time). */
        for (int pass = 0; pass < 4096; pass++) {
                _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
                if (f == NULL)
                        return cb_error_set(err, errno, "/proc/self/mountinfo");
                char line[8192], best[PATH_MAX] = "";
                while (fgets(line, sizeof(line), f)) {
                        char mp[PATH_MAX];
                        if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1)
                                continue;
                        unescape(mp);
                        if (strncmp(mp, prefix, (size_t)pl) == 0 && strlen(mp) > strlen(best))
                                snprintf(best, sizeof(best), "%s", mp);
                }
                if (best[0] == '\0')
                        return failed ? -1 : 0;
                if (umount2(best, MNT_DETACH) < 0) {
                        failed = 1;
                        cb_error_set(err, errno, "unmount %s", best);
                        return -1;
                }
        }
        return failed ? -1 : 0;
}
