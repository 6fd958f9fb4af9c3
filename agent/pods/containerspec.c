/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/pods/containerspec.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/capability.h>

#include "agent/k8s/qos.h"
#include "agent/k8s/selector.h"
#include "runtime/container.h"
#include "status/podstatus.h"

/* ---- $(VAR) expansion ---------------------------------------------------- */

struct sbuf {
        struct cb_arena *a;
        char *p;
        size_t len, cap;
        bool oom;
};

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
        if (b->oom)
                return;
        if (b->len + n + 1 > b->cap) {
                size_t ncap = (b->cap ? b->cap * 2 : 64);
                while (ncap < b->len + n + 1)
                        ncap *= 2;
                char *np = cb_arena_alloc(b->a, ncap);
                if (np == NULL) {
                        b->oom = true;
                        return;
                }
                if (b->len)
                        memcpy(np, b->p, b->len);
                b->p = np;
                b->cap = ncap;
        }
        memcpy(b->p + b->len, s, n);
        b->len += n;
        b->p[b->len] = '\0';
}

char *ag_expand(struct cb_arena *a, const char *in,
                const char *(*lookup)(void *ctx, const char *name, size_t len), void *ctx)
{
        struct sbuf b = {.a = a};
        sb_add(&b, "", 0);
        size_t n = strlen(in);
        for (size_t i = 0; i < n; i++) {
                if (in[i] != '$' || i + 1 >= n) {
                        sb_add(&b, in + i, 1);
                        continue;
                }
                char next = in[i + 1];
                if (next == '$') { /* escaped: "$$" -> "$" */
                        sb_add(&b, "$", 1);
                        i++;
                } else if (next == '(') {
                        const char *close = memchr(in + i + 2, ')', n - i - 2);
                        if (close == NULL) { /* no closing paren: literal "$(" */
                                sb_add(&b, "$(", 2);
                                i++;
                                continue;
                        }
                        const char *name = in + i + 2;
                        size_t len = (size_t)(close - name);
                        const char *v = lookup(ctx, name, len);
                        if (v != NULL)
                                sb_add(&b, v, strlen(v));
                        else /* undefined: kept as written */
                                sb_add(&b, in + i, len + 3);
                        i += len + 2;
                } else {
                        sb_add(&b, in + i, 1);
                }
        }
        return b.oom ? NULL : b.p;
}

/* ---- pull policy ---------------------------------------------------------- */

enum k8s_pull_policy ag_pull_policy(const struct k8s_container *c)
{
        if (c->image_pull_policy != K8S_PULL_DEFAULT)
                return c->image_pull_policy;
        const char *img = c->image ? c->image : "";
        if (strchr(img, '@') != NULL)
                return K8S_PULL_IF_NOT_PRESENT;
        const char *last = strrchr(img, '/');
        const char *tag = strchr(last ? last + 1 : img, ':');
        if (tag == NULL || strcmp(tag + 1, "latest") == 0)
                return K8S_PULL_ALWAYS;
        return K8S_PULL_IF_NOT_PRESENT;
}

const char *ag_pull_policy_name(enum k8s_pull_policy p)
{
        switch (p) {
        case K8S_PULL_ALWAYS:
                return "Always";
        case K8S_PULL_IF_NOT_PRESENT:
                return "IfNotPresent";
        case K8S_PULL_NEVER:
                return "Never";
        case K8S_PULL_DEFAULT:
                break;
        }
        return "";
}

/* ---- environment ---------------------------------------------------------- */

struct envset {
        struct cb_arena *a;
        char **names, **values;
        size_t n, cap;
};

static int env_set(struct envset *e, const char *name, const char *value)
{
        for (size_t i = 0; i < e->n; i++)
                if (strcmp(e->names[i], name) == 0) {
                        e->values[i] = cb_arena_strdup(e->a, value);
                        return e->values[i] ? 0 : -1;
                }
        if (e->n == e->cap) {
                size_t ncap = e->cap ? e->cap * 2 : 16;
                char **nn = cb_arena_calloc(e->a, ncap, sizeof(char *));
                char **nv = cb_arena_calloc(e->a, ncap, sizeof(char *));
                if (nn == NULL || nv == NULL)
                        return -1;
                if (e->n) {
                        memcpy(nn, e->names, e->n * sizeof(char *));
                        memcpy(nv, e->values, e->n * sizeof(char *));
                }
                e->names = nn;
                e->values = nv;
                e->cap = ncap;
        }
        e->names[e->n] = cb_arena_strdup(e->a, name);
        e->values[e->n] = cb_arena_strdup(e->a, value);
        if (e->names[e->n] == NULL || e->values[e->n] == NULL)
                return -1;
        e->n++;
        return 0;
}

static const char *env_lookup(void *ctx, const char *name, size_t len)
{
        const struct envset *e = ctx;
        for (size_t i = 0; i < e->n; i++)
                if (strlen(e->names[i]) == len && memcmp(e->names[i], name, len) == 0)
                        return e->values[i];
        return NULL;
}

static char *join(struct cb_arena *a, const char *const *v, size_t n)
{
        struct sbuf b = {.a = a};
        sb_add(&b, "", 0);
        for (size_t i = 0; i < n; i++) {
                if (i)
                        sb_add(&b, ",", 1);
                sb_add(&b, v[i], strlen(v[i]));
        }
        return b.oom ? NULL : b.p;
}

/* metadata.labels['key'] / metadata.annotations['key'] */
static bool subscript(const char *path, const char *prefix, char *key, size_t size)
{
        size_t pl = strlen(prefix);
        if (strncmp(path, prefix, pl) != 0 || path[pl] != '[')
                return false;
        const char *s = path + pl + 1;
        char q = *s;
        if (q != '\'' && q != '"')
                return false;
        const char *end = strchr(s + 1, q);
        if (end == NULL || strcmp(end + 1, "]") != 0 || (size_t)(end - s - 1) >= size)
                return false;
        memcpy(key, s + 1, (size_t)(end - s - 1));
        key[end - s - 1] = '\0';
        return true;
}

static const char *field_ref(struct cb_arena *a, const struct k8s_pod *pod, const char *path,
                             const struct ag_env_context *ctx)
{
        const struct k8s_object_meta *m = &pod->meta;
        char key[320];
        if (strcmp(path, "metadata.name") == 0)
                return m->name ? m->name : "";
        if (strcmp(path, "metadata.namespace") == 0)
                return m->namespace_ ? m->namespace_ : "default";
        if (strcmp(path, "metadata.uid") == 0)
                return m->uid ? m->uid : "";
        if (strcmp(path, "spec.nodeName") == 0)
                return pod->spec.node_name ? pod->spec.node_name
                                           : (ctx->node_name ? ctx->node_name : "");
        if (strcmp(path, "spec.serviceAccountName") == 0)
                return ctx->service_account ? ctx->service_account : "default";
        if (strcmp(path, "status.podIP") == 0)
                return ctx->pod_ip ? ctx->pod_ip : "";
        if (strcmp(path, "status.podIPs") == 0)
                return join(a, ctx->pod_ips, ctx->n_pod_ips);
        if (strcmp(path, "status.hostIP") == 0)
                return ctx->host_ip ? ctx->host_ip : "";
        if (strcmp(path, "status.hostIPs") == 0)
                return join(a, ctx->host_ips, ctx->n_host_ips);
        if (subscript(path, "metadata.labels", key, sizeof(key))) {
                const char *v = k8s_map_get(&m->labels, key);
                return v ? v : "";
        }
        if (subscript(path, "metadata.annotations", key, sizeof(key))) {
                const char *v = k8s_map_get(&m->annotations, key);
                return v ? v : "";
        }
        return NULL;
}

static const struct k8s_container *find_container(const struct k8s_pod *pod, const char *name)
{
        for (size_t i = 0; i < pod->spec.n_containers; i++)
                if (strcmp(pod->spec.containers[i].name, name) == 0)
                        return &pod->spec.containers[i];
        for (size_t i = 0; i < pod->spec.n_init_containers; i++)
                if (strcmp(pod->spec.init_containers[i].name, name) == 0)
                        return &pod->spec.init_containers[i];
        return NULL;
}

/* ceil(amount / divisor) as the kubelet's ExtractContainerResourceValue. */
static int64_t ceil_div(int64_t amount, int64_t divisor)
{
        if (divisor <= 0)
                return amount;
        return amount / divisor + (amount % divisor != 0);
}

static int resource_field_ref(struct cb_arena *a, const struct k8s_pod *pod,
                              const struct k8s_container *self, const struct k8s_env_var *ev,
                              const struct ag_env_context *ctx, const char **ret,
                              struct cb_error *err)
{
        const struct k8s_container *c = self;
        if (ev->resource_field_container && ev->resource_field_container[0]) {
                c = find_container(pod, ev->resource_field_container);
                if (c == NULL)
                        return cb_error_set(err, 0,
                                            "env %s: resourceFieldRef: container %s not found",
                                            ev->name, ev->resource_field_container);
        }
        const char *res = ev->resource_field_ref;
        bool limit = strncmp(res, "limits.", 7) == 0;
        bool request = strncmp(res, "requests.", 9) == 0;
        const char *name = limit ? res + 7 : request ? res + 9 : "";
        bool is_cpu = strcmp(name, "cpu") == 0;
        if (!is_cpu && strcmp(name, "memory") != 0 && strcmp(name, "ephemeral-storage") != 0)
                return cb_error_set(err, 0, "env %s: unsupported resourceFieldRef \"%s\"", ev->name,
                                    res);
        /* The divisor is not decoded yet: 1 (whole cores, bytes). */
        int64_t amount;
        if (limit) {
                /* unlimited: the pod-level limit, else the node's allocatable */
                amount = k8s_container_downward_limit(pod, c, name,
                                                      is_cpu ? ctx->node_allocatable_milli_cpu
                                                      : strcmp(name, "memory") == 0
                                                          ? ctx->node_allocatable_memory
                                                          : ctx->node_allocatable_ephemeral);
        } else {
                amount = k8s_container_request(c, name);
        }
        int64_t v = is_cpu ? ceil_div(amount, 1000) : amount;
        char *s = cb_arena_printf(a, "%" PRId64, v);
        if (s == NULL)
                return cb_error_set(err, ENOMEM, "env %s", ev->name);
        *ret = s;
        return 0;
}

static const struct ag_env_object *env_object(const struct ag_env_context *ctx, bool secret,
                                              const char *name)
{
        for (size_t i = 0; ctx && name && i < ctx->n_objects; i++)
                if (ctx->objects[i].secret == secret && ctx->objects[i].name &&
                    strcmp(ctx->objects[i].name, name) == 0)
                        return &ctx->objects[i];
        return NULL;
}

/* validation.IsEnvVarName: [-._a-zA-Z][-._a-zA-Z0-9]* */
static bool env_name_ok(const char *s)
{
        if (s == NULL || *s == '\0' || (*s >= '0' && *s <= '9'))
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                      (*s >= '0' && *s <= '9') || *s == '-' || *s == '.' || *s == '_'))
                        return false;
        return true;
}

static int kv_key_cmp(const void *x, const void *y)
{
        return strcmp(*(char *const *)x, *(char *const *)y);
}

static int env_from(struct cb_arena *a, const struct k8s_pod *pod, const struct k8s_container *c,
                    const struct ag_env_context *ctx, struct envset *out,
                    struct ag_container_spec *spec, struct cb_error *err)
{
        const char *ns = pod->meta.namespace_ ? pod->meta.namespace_ : "default";
        for (size_t i = 0; i < c->n_env_from; i++) {
                const struct k8s_env_from *ef = &c->env_from[i];
                const struct ag_env_object *o = env_object(ctx, ef->secret, ef->name);
                if (o == NULL || o->data == NULL) {
                        if (ef->optional)
                                continue;
                        return cb_error_set(err, 0, "%s \"%s\" not found",
                                            ef->secret ? "secret" : "configmap",
                                            ef->name ? ef->name : "");
                }
                const struct k8s_keyed_data *kd = o->data;
                char **invalid = cb_arena_calloc(a, kd->n + 1, sizeof(char *));
                size_t n_invalid = 0;
                if (invalid == NULL)
                        return cb_error_set(err, ENOMEM, "env");
                for (size_t k = 0; k < kd->n; k++) {
                        if (kd->items[k].binary)
                                continue; /* only a ConfigMap's data */
                        char *name = cb_arena_printf(a, "%s%s", ef->prefix ? ef->prefix : "",
                                                     kd->items[k].key);
                        if (name == NULL)
                                return cb_error_set(err, ENOMEM, "env");
                        if (!env_name_ok(name)) {
                                invalid[n_invalid++] = name;
                                continue;
                        }
                        if (env_set(out, name, kd->items[k].value) < 0)
                                return cb_error_set(err, ENOMEM, "env");
                }
                if (n_invalid == 0)
                        continue;
                qsort(invalid, n_invalid, sizeof(*invalid), kv_key_cmp);
                char *keys = cb_arena_strdup(a, "");
                for (size_t k = 0; keys && k < n_invalid; k++)
                        keys = cb_arena_printf(a, "%s%s%s", keys, k ? ", " : "", invalid[k]);
                char **w = cb_arena_calloc(a, spec->n_env_warnings + 1, sizeof(char *));
                if (keys == NULL || w == NULL)
                        return cb_error_set(err, ENOMEM, "env");
                if (spec->n_env_warnings)
                        memcpy(w, spec->env_warnings, spec->n_env_warnings * sizeof(char *));
                w[spec->n_env_warnings] = cb_arena_printf(
                    a,
                    "Keys [%s] from the EnvFrom %s %s/%s were skipped since they are considered "
                    "invalid environment variable names.",
                    keys, ef->secret ? "secret" : "configMap", ns, ef->name);
                if (w[spec->n_env_warnings] == NULL)
                        return cb_error_set(err, ENOMEM, "env");
                spec->env_warnings = w;
                spec->n_env_warnings++;
        }
        return 0;
}

/* 1: *ret set; 0: optional and absent (the variable is not set). */
static int key_ref(const struct k8s_pod *pod, const struct k8s_env_var *ev,
                   const struct ag_env_context *ctx, const char **ret, struct cb_error *err)
{
        bool secret = ev->key_ref == K8S_KEY_REF_SECRET;
        const char *ns = pod->meta.namespace_ ? pod->meta.namespace_ : "default";
        const char *name = ev->key_ref_name ? ev->key_ref_name : "";
        const struct ag_env_object *o = env_object(ctx, secret, name);
        if (o == NULL || o->data == NULL) {
                if (ev->key_ref_optional)
                        return 0;
                return cb_error_set(err, 0, "%s \"%s\" not found", secret ? "secret" : "configmap",
                                    name);
        }
        const struct k8s_data_item *di = k8s_keyed_data_get(o->data, ev->key_ref_key);
        if (di == NULL || di->binary) {
                if (ev->key_ref_optional)
                        return 0;
                return cb_error_set(err, 0, "couldn't find key %s in %s %s/%s", ev->key_ref_key,
                                    secret ? "Secret" : "ConfigMap", ns, name);
        }
        *ret = di->value;
        return 1;
}

/* The service variables (ctx->service_env, "KEY=value"): `$(VAR)` sees
 * them after the container's own (expansion.MappingFuncFor(tmpEnv,
 * serviceEnv)); those the container does not set come after its own. */
struct svc_lookup {
        const struct envset *env;
        const struct ag_env_context *ctx;
};

static const char *svc_value(const struct ag_env_context *ctx, const char *name, size_t len)
{
        for (size_t i = 0; ctx && i < ctx->n_service_env; i++) {
                const char *e = ctx->service_env[i];
                if (strncmp(e, name, len) == 0 && e[len] == '=')
                        return e + len + 1;
        }
        return NULL;
}

static const char *env_svc_lookup(void *data, const char *name, size_t len)
{
        const struct svc_lookup *l = data;
        const char *v = env_lookup((void *)l->env, name, len);
        return v ? v : svc_value(l->ctx, name, len);
}

static int add_service_env(const struct ag_env_context *ctx, struct envset *out)
{
        for (size_t i = 0; ctx && i < ctx->n_service_env; i++) {
                const char *e = ctx->service_env[i];
                const char *eq = strchr(e, '=');
                if (eq == NULL || env_lookup(out, e, (size_t)(eq - e)) != NULL)
                        continue;
                char *name = cb_arena_strndup(out->a, e, (size_t)(eq - e));
                if (name == NULL || env_set(out, name, eq + 1) < 0)
                        return -1;
        }
        return 0;
}

static int build_env(struct cb_arena *a, const struct k8s_pod *pod, const struct k8s_container *c,
                     const struct ag_env_context *ctx, struct envset *out,
                     struct ag_container_spec *spec, struct cb_error *err)
{
        struct svc_lookup sl = {out, ctx};
        if (env_from(a, pod, c, ctx, out, spec, err) < 0)
                return -1;
        for (size_t i = 0; i < c->n_env; i++) {
                const struct k8s_env_var *ev = &c->env[i];
                const char *v = NULL;
                if (ev->value != NULL) {
                        v = ag_expand(a, ev->value, env_svc_lookup, &sl);
                } else if (ev->field_ref_path != NULL) {
                        v = field_ref(a, pod, ev->field_ref_path, ctx);
                        if (v == NULL)
                                return cb_error_set(err, 0,
                                                    "env %s: unsupported fieldRef fieldPath \"%s\"",
                                                    ev->name, ev->field_ref_path);
                } else if (ev->resource_field_ref != NULL) {
                        if (resource_field_ref(a, pod, c, ev, ctx, &v, err) < 0)
                                return -1;
                } else if (ev->key_ref != K8S_KEY_REF_NONE) {
                        int r = key_ref(pod, ev, ctx, &v, err);
                        if (r < 0)
                                return -1;
                        if (r == 0)
                                continue;
                } else if (ev->has_value_from_other) {
                        return cb_error_set(
                            err, 0, "env %s: fileKeyRef is not supported by cubelet", ev->name);
                } else {
                        v = "";
                }
                if (v == NULL || env_set(out, ev->name, v) < 0)
                        return cb_error_set(err, ENOMEM, "env %s", ev->name);
        }
        if (add_service_env(ctx, out) < 0)
                return cb_error_set(err, ENOMEM, "env");
        return 0;
}

/* ---- user ------------------------------------------------------------------ */

static bool parse_id(const char *s, size_t len, int64_t *ret)
{
        char buf[32];
        if (len == 0 || len >= sizeof(buf))
                return false;
        memcpy(buf, s, len);
        buf[len] = '\0';
        int64_t v;
        if (!k8s_parse_int64(buf, &v) || v < 0 || v > UINT32_MAX - 1)
                return false;
        *ret = v;
        return true;
}

static void pod_ref(const struct k8s_pod *pod, char *buf, size_t size)
{
        snprintf(buf, size, "\"%s_%s(%s)\"", pod->meta.name ? pod->meta.name : "",
                 pod->meta.namespace_ ? pod->meta.namespace_ : "default",
                 pod->meta.uid ? pod->meta.uid : "");
}

static int resolve_user(struct cb_arena *a, const struct k8s_pod *pod,
                        const struct k8s_container *c, const struct ag_image_defaults *img,
                        struct ag_container_spec *s, struct cb_error *err)
{
        const struct k8s_security_context *sc = &c->security_context;
        const struct k8s_pod_security_context *psc = &pod->spec.security_context;
        if (sc->has_run_as_user || psc->has_run_as_user) {
                s->has_uid = true;
                s->uid = sc->has_run_as_user ? sc->run_as_user : psc->run_as_user;
        }
        if (sc->has_run_as_group || psc->has_run_as_group) {
                s->has_gid = true;
                s->gid = sc->has_run_as_group ? sc->run_as_group : psc->run_as_group;
        }
        const char *user = img && img->user ? img->user : "";
        if (!s->has_uid) {
                const char *colon = strchr(user, ':');
                size_t ulen = colon ? (size_t)(colon - user) : strlen(user);
                int64_t id;
                if (ulen == 0) {
                        s->has_uid = true; /* no user in the image: root */
                        s->uid = 0;
                } else if (parse_id(user, ulen, &id)) {
                        s->has_uid = true;
                        s->uid = id;
                } else {
                        s->user_name = cb_arena_strndup(a, user, ulen);
                }
                if (colon != NULL && !s->has_gid) {
                        if (parse_id(colon + 1, strlen(colon + 1), &id)) {
                                s->has_gid = true;
                                s->gid = id;
                        } else {
                                s->group_name = cb_arena_strdup(a, colon + 1);
                        }
                }
        }
        bool non_root = sc->has_run_as_non_root
                            ? sc->run_as_non_root
                            : (psc->has_run_as_non_root && psc->run_as_non_root);
        if (!non_root)
                return 0;
        char pref[512];
        pod_ref(pod, pref, sizeof(pref));
        if (sc->has_run_as_user || psc->has_run_as_user) {
                if (s->uid == 0)
                        return cb_error_set(err, 0,
                                            "container's runAsUser breaks non-root policy (pod: "
                                            "%s, container: %s)",
                                            pref, c->name);
                return 0;
        }
        if (s->user_name != NULL)
                return cb_error_set(err, 0,
                                    "container has runAsNonRoot and image has non-numeric user "
                                    "(%s), cannot verify user is non-root (pod: %s, container: %s)",
                                    s->user_name, pref, c->name);
        if (s->uid == 0)
                return cb_error_set(err, 0,
                                    "container has runAsNonRoot and image will run as root (pod: "
                                    "%s, container: %s)",
                                    pref, c->name);
        return 0;
}

/* ---- capabilities -------------------------------------------------------------- */

struct capset {
        bool on[64];
        const char *names[64];
        int max;
};

static void caps_init(struct cb_arena *a, struct capset *cs)
{
        memset(cs, 0, sizeof(*cs));
        cs->max = (int)cap_max_bits();
        if (cs->max > 64)
                cs->max = 64;
        for (int i = 0; i < cs->max; i++) {
                char *n = cap_to_name((cap_value_t)i);
                if (n == NULL)
                        continue;
                if (strncmp(n, "cap_", 4) == 0) {
                        char *u = cb_arena_strdup(a, n);
                        for (char *p = u; p && *p; p++)
                                *p = (char)toupper((unsigned char)*p);
                        cs->names[i] = u;
                }
                cap_free(n);
        }
}

/* "NET_ADMIN", "net_admin" or "CAP_NET_ADMIN" -> index, -1 if unknown. */
static int cap_index(const struct capset *cs, const char *name)
{
        char buf[64];
        const char *n = name;
        if (strncasecmp(n, "CAP_", 4) == 0)
                n += 4;
        if (snprintf(buf, sizeof(buf), "CAP_%s", n) >= (int)sizeof(buf))
                return -1;
        for (int i = 0; i < cs->max; i++)
                if (cs->names[i] != NULL && strcasecmp(cs->names[i], buf) == 0)
                        return i;
        return -1;
}

static bool has_all(char *const *v, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (strcasecmp(v[i], "ALL") == 0)
                        return true;
        return false;
}

static int resolve_caps(struct cb_arena *a, const struct k8s_container *c,
                        struct ag_container_spec *s, struct cb_error *err)
{
        struct capset cs;
        caps_init(a, &cs);
        const struct k8s_capabilities *k = &c->security_context.caps;
        if (s->privileged) {
                for (int i = 0; i < cs.max; i++)
                        cs.on[i] = cs.names[i] != NULL;
        } else {
                /* containerd's default set, as the runtime defines it. */
                const char *const *defaults = rt_caps_default(NULL);
                for (size_t i = 0; defaults[i] != NULL; i++) {
                        int idx = cap_index(&cs, defaults[i]);
                        if (idx >= 0)
                                cs.on[idx] = true;
                }
                /* containerd: "ALL" in add / drop first, then the individual
                 * names, so drop ALL + add X = X and add ALL + drop X = all - X. */
                if (has_all(k->add, k->n_add))
                        for (int i = 0; i < cs.max; i++)
                                cs.on[i] = cs.names[i] != NULL;
                if (has_all(k->drop, k->n_drop))
                        memset(cs.on, 0, sizeof(cs.on));
                for (size_t pass = 0; pass < 2; pass++) {
                        char *const *v = pass == 0 ? k->add : k->drop;
                        size_t n = pass == 0 ? k->n_add : k->n_drop;
                        for (size_t i = 0; i < n; i++) {
                                if (strcasecmp(v[i], "ALL") == 0)
                                        continue;
                                int idx = cap_index(&cs, v[i]);
                                if (idx < 0)
                                        return cb_error_set(
                                            err, 0,
                                            "securityContext.capabilities.%s[%zu]: unknown "
                                            "capability \"%s\"",
                                            pass == 0 ? "add" : "drop", i, v[i]);
                                cs.on[idx] = pass == 0;
                        }
                }
        }
        s->caps = cb_arena_calloc(a, (size_t)cs.max + 1, sizeof(char *));
        if (s->caps == NULL)
                return cb_error_set(err, ENOMEM, "capabilities");
        for (int i = 0; i < cs.max; i++)
                if (cs.on[i])
                        s->caps[s->n_caps++] = cs.names[i];
        return 0;
}

/* ---- seccomp ---------------------------------------------------------------------- */

static int resolve_seccomp(const struct k8s_pod *pod, const struct k8s_container *c,
                           const struct ag_env_context *ctx, struct ag_container_spec *s,
                           struct cb_error *err)
{
        const struct k8s_seccomp_profile *p = &c->security_context.seccomp;
        const char *field = "securityContext.seccompProfile";
        if (p->type == K8S_SECCOMP_UNSET) {
                p = &pod->spec.security_context.seccomp;
                field = "spec.securityContext.seccompProfile";
        }
        if (s->privileged) {
                s->seccomp = AG_SECCOMP_UNCONFINED;
                return 0;
        }
        switch (p->type) {
        case K8S_SECCOMP_UNSET:
                s->seccomp = ctx != NULL && ctx->seccomp_default ? AG_SECCOMP_RUNTIME_DEFAULT
                                                                 : AG_SECCOMP_UNCONFINED;
                return 0;
        case K8S_SECCOMP_UNCONFINED:
                s->seccomp = AG_SECCOMP_UNCONFINED;
                return 0;
        case K8S_SECCOMP_RUNTIME_DEFAULT:
                s->seccomp = AG_SECCOMP_RUNTIME_DEFAULT;
                return 0;
        case K8S_SECCOMP_LOCALHOST:
                break;
        }
        const char *lp = p->localhost_profile;
        if (lp == NULL || lp[0] == '\0')
                return cb_error_set(err, 0, "%s.localhostProfile: required for type Localhost",
                                    field);
        /* Relative to <root-dir>/seccomp and never outside it. */
        if (lp[0] == '/' || strcmp(lp, "..") == 0 || strncmp(lp, "../", 3) == 0 ||
            strstr(lp, "/../") != NULL ||
            (strlen(lp) >= 3 && strcmp(lp + strlen(lp) - 3, "/..") == 0))
                return cb_error_set(err, 0,
                                    "%s.localhostProfile: \"%s\" must be a relative path "
                                    "without \"..\" (profiles live under <root-dir>/seccomp/)",
                                    field, lp);
        s->seccomp = AG_SECCOMP_LOCALHOST;
        s->seccomp_localhost = lp;
        return 0;
}

/* ---- argv -------------------------------------------------------------------------- */

static size_t vlen(char *const *v)
{
        size_t n = 0;
        while (v && v[n])
                n++;
        return n;
}

static int build_argv(struct cb_arena *a, const struct k8s_container *c,
                      const struct ag_image_defaults *img, struct envset *env,
                      struct ag_container_spec *s, struct cb_error *err)
{
        char *const *ep = img ? img->entrypoint : NULL;
        char *const *cmd = img ? img->cmd : NULL;
        size_t n_head = c->n_command ? c->n_command : vlen(ep);
        size_t n_tail = c->n_command || c->n_args ? c->n_args : vlen(cmd);
        s->argv = cb_arena_calloc(a, n_head + n_tail + 1, sizeof(char *));
        if (s->argv == NULL)
                return cb_error_set(err, ENOMEM, "argv");
        for (size_t i = 0; i < n_head; i++)
                s->argv[s->argc++] =
                    c->n_command ? ag_expand(a, c->command[i], env_lookup, env) : ep[i];
        for (size_t i = 0; i < n_tail; i++)
                s->argv[s->argc++] =
                    c->n_command || c->n_args ? ag_expand(a, c->args[i], env_lookup, env) : cmd[i];
        for (size_t i = 0; i < s->argc; i++)
                if (s->argv[i] == NULL)
                        return cb_error_set(err, ENOMEM, "argv");
        if (s->argc == 0)
                return cb_error_set(err, 0,
                                    "no command specified: the container has no command or args "
                                    "and the image has no Entrypoint or Cmd");
        return 0;
}

int ag_container_spec_build(struct cb_arena *a, const struct k8s_pod *pod,
                            const struct k8s_container *c, const struct ag_image_defaults *img,
                            const struct ag_env_context *ctx, struct ag_container_spec *ret,
                            struct cb_error *err)
{
        struct ag_container_spec s = {0};
        const struct k8s_security_context *sc = &c->security_context;
        s.pull_policy = ag_pull_policy(c);
        s.privileged = sc->has_privileged && sc->privileged;
        s.no_new_privs = sc->has_allow_privilege_escalation && !sc->allow_privilege_escalation;
        s.read_only_rootfs = sc->has_read_only_root_filesystem && sc->read_only_root_filesystem;
        s.stdin_open = c->stdin_;
        s.stdin_once = c->stdin_ && c->stdin_once;
        s.tty = c->tty;

        struct envset env = {.a = a};
        if (build_env(a, pod, c, ctx, &env, &s, err) < 0)
                return -1;
        /* Image env first; the container's overrides it. */
        struct envset all = {.a = a};
        for (char *const *e = img ? img->env : NULL; e && *e; e++) {
                const char *eq = strchr(*e, '=');
                char *name = cb_arena_strndup(a, *e, eq ? (size_t)(eq - *e) : strlen(*e));
                if (name == NULL || env_set(&all, name, eq ? eq + 1 : "") < 0)
                        return cb_error_set(err, ENOMEM, "env");
        }
        for (size_t i = 0; i < env.n; i++)
                if (env_set(&all, env.names[i], env.values[i]) < 0)
                        return cb_error_set(err, ENOMEM, "env");
        /* a terminal's type, as containerd's oci.WithTTY gives it (it
         * appends; a TERM set before stays the one getenv finds) */
        bool has_term = false;
        for (size_t i = 0; i < all.n; i++)
                has_term = has_term || strcmp(all.names[i], "TERM") == 0;
        if (c->tty && !has_term && env_set(&all, "TERM", "xterm") < 0)
                return cb_error_set(err, ENOMEM, "env");
        s.env = cb_arena_calloc(a, all.n + 1, sizeof(char *));
        if (s.env == NULL)
                return cb_error_set(err, ENOMEM, "env");
        for (size_t i = 0; i < all.n; i++) {
                s.env[i] = cb_arena_printf(a, "%s=%s", all.names[i], all.values[i]);
                if (s.env[i] == NULL)
                        return cb_error_set(err, ENOMEM, "env");
        }
        s.n_env = all.n;

        /* command/args expand against the container's own variables only. */
        if (build_argv(a, c, img, &env, &s, err) < 0)
                return -1;
        s.cwd = c->working_dir && c->working_dir[0]              ? c->working_dir
                : img && img->working_dir && img->working_dir[0] ? img->working_dir
                                                                 : "/";
        if (resolve_user(a, pod, c, img, &s, err) < 0)
                return -1;
        const struct k8s_pod_security_context *psc = &pod->spec.security_context;
        s.groups = cb_arena_calloc(a, psc->n_supplemental_groups + 1, sizeof(int64_t));
        if (s.groups == NULL)
                return cb_error_set(err, ENOMEM, "groups");
        for (size_t i = 0; i < psc->n_supplemental_groups; i++)
                s.groups[s.n_groups++] = psc->supplemental_groups[i];
        if (psc->has_fs_group)
                s.groups[s.n_groups++] = psc->fs_group;
        if (resolve_caps(a, c, &s, err) < 0 || resolve_seccomp(pod, c, ctx, &s, err) < 0)
                return -1;
        *ret = s;
        return 0;
}

/* ---- the runtime config ---- */

int ag_cri_log_dir(char *buf, size_t size, const char *logs_dir, const char *ns, const char *name,
                   const char *uid, const char *container)
{
        int n = container != NULL
                    ? snprintf(buf, size, "%s/%s_%s_%s/%s", logs_dir, ns, name, uid, container)
                    : snprintf(buf, size, "%s/%s_%s_%s", logs_dir, ns, name, uid);
        return n >= 0 && (size_t)n < size ? 0 : -1;
}

void ag_image_id(char *buf, size_t size, const char *ref, const char *manifest_digest)
{
        const char *at = strchr(ref, '@');
        size_t name_len = at ? (size_t)(at - ref) : strlen(ref);
        const char *colon = memrchr(ref, ':', name_len);
        const char *slash = memrchr(ref, '/', name_len);
        if (colon && (!slash || colon > slash))
                name_len = (size_t)(colon - ref);
        snprintf(buf, size, "%.*s@%s", (int)name_len, ref, manifest_digest);
}

int ag_signal_number(const char *name)
{
        static const struct {
                const char *n;
                int s;
        } t[] = {{"SIGTERM", SIGTERM}, {"SIGINT", SIGINT},    {"SIGQUIT", SIGQUIT},
                 {"SIGKILL", SIGKILL}, {"SIGHUP", SIGHUP},    {"SIGUSR1", SIGUSR1},
                 {"SIGUSR2", SIGUSR2}, {"SIGWINCH", SIGWINCH}};
        if (name == NULL)
                return SIGTERM;
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
                if (strcmp(name, t[i].n) == 0 || strcmp(name, t[i].n + 3) == 0)
                        return t[i].s;
        char *end;
        long v = strtol(name, &end, 10);
        return *name != '\0' && *end == '\0' && v > 0 && v < 65 ? (int)v : SIGTERM;
}

int ag_lookup_id(const char *text, const char *name, int64_t numeric, int64_t *ret_id,
                 int64_t *ret_gid)
{
        for (const char *line = text; line != NULL && *line != '\0';) {
                const char *eol = strchr(line, '\n');
                size_t len = eol ? (size_t)(eol - line) : strlen(line);
                /* name:password:id:gid:... */
                const char *f[4] = {0};
                size_t flen[4] = {0};
                const char *p = line, *end = line + len;
                for (int k = 0; k < 4 && p != NULL && p <= end; k++) {
                        f[k] = p;
                        const char *colon = memchr(p, ':', (size_t)(end - p));
                        flen[k] = colon ? (size_t)(colon - p) : (size_t)(end - p);
                        p = colon ? colon + 1 : NULL;
                }
                line = eol ? eol + 1 : NULL;
                if (f[2] == NULL)
                        continue;
                char num[32];
                snprintf(num, sizeof(num), "%.*s", (int)(flen[2] < 31 ? flen[2] : 31), f[2]);
                int64_t id = strtoll(num, NULL, 10);
                bool match = name ? strlen(name) == flen[0] && strncmp(f[0], name, flen[0]) == 0
                                  : id == numeric;
                if (!match)
                        continue;
                *ret_id = id;
                if (ret_gid != NULL) {
                        snprintf(num, sizeof(num), "%.*s", (int)(flen[3] < 31 ? flen[3] : 31),
                                 f[3] ? f[3] : "0");
                        *ret_gid = f[3] ? strtoll(num, NULL, 10) : 0;
                }
                return 0;
        }
        return -1;
}

static int resolve_ids(const struct ag_container_inputs *in, const struct ag_container_spec *s,
                       uint32_t *uid, uint32_t *gid, struct cb_error *err)
{
        int64_t u = s->uid, g = s->has_gid ? s->gid : 0, pg = 0;
        /* The image's files are the image author's: one that is not a
         * regular file (a FIFO, a device, a directory) or is too large
         * refuses the start when it is needed, saying what to change. */
        if (!s->has_uid) {
                if (in->passwd_error != NULL)
                        return cb_error_set(err, 0,
                                            "unable to find user %s: %s; make /etc/passwd a "
                                            "regular file in the image, or set a numeric "
                                            "runAsUser and runAsGroup",
                                            s->user_name, in->passwd_error);
                if (ag_lookup_id(in->passwd, s->user_name, 0, &u, &pg) < 0)
                        return cb_error_set(err, 0,
                                            "unable to find user %s: no matching entries in "
                                            "passwd file",
                                            s->user_name);
                if (!s->has_gid)
                        g = pg;
        } else if (!s->has_gid && s->group_name == NULL) {
                /* The primary group of a numeric uid, when the image knows it. */
                if (in->passwd_error != NULL)
                        return cb_error_set(err, 0,
                                            "unable to find the primary group of uid %" PRId64
                                            ": %s; make /etc/passwd a regular file in the "
                                            "image, or set runAsGroup",
                                            u, in->passwd_error);
                if (ag_lookup_id(in->passwd, NULL, u, &u, &pg) == 0)
                        g = pg;
        }
        if (s->group_name != NULL && !s->has_gid) {
                int64_t gg;
                if (in->group_error != NULL)
                        return cb_error_set(err, 0,
                                            "unable to find group %s: %s; make /etc/group a "
                                            "regular file in the image, or set a numeric "
                                            "runAsGroup",
                                            s->group_name, in->group_error);
                if (ag_lookup_id(in->group, s->group_name, 0, &gg, NULL) < 0)
                        return cb_error_set(err, 0,
                                            "unable to find group %s: no matching entries in "
                                            "group file",
                                            s->group_name);
                g = gg;
        }
        *uid = (uint32_t)u;
        *gid = (uint32_t)g;
        return 0;
}

/* The fields of one passwd/group line: up to max, colon-separated. */
static size_t split_line(const char *line, size_t len, const char **f, size_t *flen, size_t max)
{
        const char *p = line, *end = line + len;
        size_t k = 0;
        while (k < max) {
                const char *colon = memchr(p, ':', (size_t)(end - p));
                f[k] = p;
                flen[k] = colon ? (size_t)(colon - p) : (size_t)(end - p);
                k++;
                if (colon == NULL)
                        break;
                p = colon + 1;
        }
        return k;
}

static bool field_is(const char *f, size_t flen, const char *s)
{
        return strlen(s) == flen && strncmp(f, s, flen) == 0;
}

static int add_gid(struct cb_arena *a, uint32_t **v, size_t *n, size_t *cap, uint32_t g)
{
        for (size_t i = 0; i < *n; i++)
                if ((*v)[i] == g)
                        return 0;
        if (*n == *cap) {
                size_t nc = *cap ? *cap * 2 : 16;
                uint32_t *nv = cb_arena_calloc(a, nc, sizeof(*nv));
                if (nv == NULL)
                        return -1;
                if (*n)
                        memcpy(nv, *v, *n * sizeof(*nv));
                *v = nv;
                *cap = nc;
        }
        (*v)[(*n)++] = g;
        return 0;
}

int ag_supplementary_groups(struct cb_arena *a, const struct ag_groups_input *in, uint32_t **ret,
                            size_t *ret_n, struct cb_error *err)
{
        uint32_t *v = NULL;
        size_t n = 0, cap = 0;
        if (add_gid(a, &v, &n, &cap, in->gid) < 0)
                return cb_error_set(err, ENOMEM, "groups");
        const char *user = in->user_name;
        char *name = NULL;
        if (in->merge && user == NULL) {
                /* a numeric user: its name in the image's passwd, if any */
                if (in->passwd_error != NULL)
                        return cb_error_set(err, 0,
                                            "unable to find the user of uid %" PRId64
                                            ": %s; make /etc/passwd a regular file in the "
                                            "image, or set supplementalGroupsPolicy: Strict",
                                            in->uid, in->passwd_error);
                for (const char *line = in->passwd; line != NULL && *line && user == NULL;) {
                        const char *eol = strchr(line, '\n');
                        size_t len = eol ? (size_t)(eol - line) : strlen(line);
                        const char *f[3];
                        size_t fl[3];
                        if (split_line(line, len, f, fl, 3) == 3) {
                                char num[32];
                                snprintf(num, sizeof(num), "%.*s", (int)(fl[2] < 31 ? fl[2] : 31),
                                         f[2]);
                                char *end;
                                long long id = strtoll(num, &end, 10);
                                if (fl[2] > 0 && *end == '\0' && id == in->uid) {
                                        name = cb_arena_strndup(a, f[0], fl[0]);
                                        if (name == NULL)
                                                return cb_error_set(err, ENOMEM, "groups");
                                        user = name;
                                }
                        }
                        line = eol ? eol + 1 : NULL;
                }
        }
        if (in->merge && user != NULL && user[0] != '\0') {
                if (in->group_error != NULL)
                        return cb_error_set(err, 0,
                                            "unable to find the groups of user %s: %s; make "
                                            "/etc/group a regular file in the image, or set "
                                            "supplementalGroupsPolicy: Strict",
                                            user, in->group_error);
                /* name:password:gid:member,member: the groups listing the
                 * user, in file order, but not the one named as the user */
                for (const char *line = in->group; line != NULL && *line;) {
                        const char *eol = strchr(line, '\n');
                        size_t len = eol ? (size_t)(eol - line) : strlen(line);
                        const char *f[4];
                        size_t fl[4];
                        const char *start = line;
                        line = eol ? eol + 1 : NULL;
                        if (split_line(start, len, f, fl, 4) < 4 || field_is(f[0], fl[0], user))
                                continue;
                        bool member = false;
                        for (const char *m = f[3], *mend = f[3] + fl[3]; m < mend && !member;) {
                                const char *comma = memchr(m, ',', (size_t)(mend - m));
                                size_t ml = comma ? (size_t)(comma - m) : (size_t)(mend - m);
                                member = field_is(m, ml, user);
                                m += ml + 1;
                        }
                        char num[32];
                        snprintf(num, sizeof(num), "%.*s", (int)(fl[2] < 31 ? fl[2] : 31), f[2]);
                        char *end;
                        long long id = strtoll(num, &end, 10);
                        if (member && fl[2] > 0 && *end == '\0' && id >= 0 && id <= UINT32_MAX &&
                            add_gid(a, &v, &n, &cap, (uint32_t)id) < 0)
                                return cb_error_set(err, ENOMEM, "groups");
                }
        }
        for (size_t i = 0; i < in->n_pod_groups; i++)
                if (add_gid(a, &v, &n, &cap, (uint32_t)in->pod_groups[i]) < 0)
                        return cb_error_set(err, ENOMEM, "groups");
        *ret = v;
        *ret_n = n;
        return 0;
}

static const struct ag_volume_source *find_source(const struct ag_container_inputs *in,
                                                  const char *name)
{
        for (size_t i = 0; i < in->n_volumes; i++)
                if (strcmp(in->volumes[i].name, name) == 0)
                        return &in->volumes[i];
        return NULL;
}

static const char *spec_env_lookup(void *ctx, const char *name, size_t len)
{
        const struct ag_container_spec *s = ctx;
        for (size_t i = 0; i < s->n_env; i++)
                if (strncmp(s->env[i], name, len) == 0 && s->env[i][len] == '=')
                        return s->env[i] + len + 1;
        return NULL;
}

/* subPath / subPathExpr of volumeMounts[i] with the kubelet's checks:
 * NULL when there is none. */
static int sub_path(struct cb_arena *a, const struct k8s_volume_mount *vm,
                    const struct ag_container_spec *s, const char **ret, struct cb_error *err)
{
        const char *p = vm->sub_path && vm->sub_path[0] ? vm->sub_path : NULL;
        *ret = NULL;
        if (p == NULL && vm->sub_path_expr && vm->sub_path_expr[0]) {
                p = ag_expand(a, vm->sub_path_expr, spec_env_lookup, (void *)s);
                if (p == NULL)
                        return cb_error_set(err, ENOMEM, "subPathExpr");
                if (strstr(p, "$(") != NULL)
                        return cb_error_set(err, 0,
                                            "unable to expand subPath \"%s\" for volumeMount %s: "
                                            "missing value for %s",
                                            vm->sub_path_expr, vm->name, p);
        }
        if (p == NULL)
                return 0;
        if (p[0] == '/')
                return cb_error_set(err, 0, "error SubPath `%s` must not be an absolute path", p);
        for (const char *q = p; *q;) {
                const char *e = strchr(q, '/');
                size_t n = e ? (size_t)(e - q) : strlen(q);
                if (n == 2 && q[0] == '.' && q[1] == '.')
                        return cb_error_set(err, 0,
                                            "unable to provision SubPath `%s`: must not contain "
                                            "'..'",
                                            p);
                q += n + (e != NULL);
        }
        *ret = p;
        return 0;
}

/* The sandbox's /etc files, then the volume mounts in order. */
static int build_mounts(struct cb_arena *a, const struct ag_container_inputs *in,
                        struct ag_container_spec *s, struct rt_mount **ret, size_t *ret_n,
                        struct cb_error *err)
{
        const struct k8s_container *c = in->container;
        struct rt_mount *m = cb_arena_calloc(a, c->n_volume_mounts + 4, sizeof(*m));
        if (m == NULL)
                return cb_error_set(err, ENOMEM, "mounts");
        size_t n = 0;
        const struct rt_sandbox *sb = in->sandbox;
        if (sb != NULL && sb->hosts_path[0])
                m[n++] =
                    (struct rt_mount){RT_MOUNT_BIND, sb->hosts_path, "/etc/hosts", false, NULL};
        if (sb != NULL && sb->hostname_path[0])
                m[n++] = (struct rt_mount){RT_MOUNT_BIND, sb->hostname_path, "/etc/hostname", false,
                                           NULL};
        if (sb != NULL && sb->resolv_conf_path[0])
                m[n++] = (struct rt_mount){RT_MOUNT_BIND, sb->resolv_conf_path, "/etc/resolv.conf",
                                           false, NULL};
        for (size_t i = 0; i < c->n_volume_mounts; i++) {
                const struct k8s_volume_mount *vm = &c->volume_mounts[i];
                const struct ag_volume_source *v = find_source(in, vm->name);
                if (v == NULL)
                        return cb_error_set(err, 0, "volumeMounts[%zu]: volume \"%s\" not found", i,
                                            vm->name);
                const char *sp;
                if (sub_path(a, vm, s, &sp, err) < 0)
                        return -1;
                if (sp != NULL) {
                        if (v->type != RT_MOUNT_BIND)
                                return cb_error_set(err, 0,
                                                    "volumeMounts[%zu]: subPath of a volume "
                                                    "that is not a directory on the node",
                                                    i);
                        struct ag_subpath *g = cb_arena_calloc(a, s->n_subpaths + 1, sizeof(*g));
                        if (g == NULL)
                                return cb_error_set(err, ENOMEM, "mounts");
                        if (s->n_subpaths)
                                memcpy(g, s->subpaths, s->n_subpaths * sizeof(*g));
                        g[s->n_subpaths++] = (struct ag_subpath){n, i, vm->name, v->source, sp};
                        s->subpaths = g;
                }
                m[n++] = (struct rt_mount){.type = v->type,
                                           .source = v->source,
                                           .destination = vm->mount_path,
                                           .read_only = vm->read_only || v->read_only,
                                           .options = v->options};
        }
        /* The termination message file last, as the kubelet's makeMounts
         * appends it; the runtime creates the target file in the rootfs. */
        const char *tlog = in->termination_log ? cb_arena_strdup(a, in->termination_log) : NULL;
        if (in->termination_log != NULL && tlog == NULL)
                return cb_error_set(err, ENOMEM, "mounts");
        if (tlog != NULL)
                m[n++] =
                    (struct rt_mount){RT_MOUNT_BIND, tlog,
                                      c->termination_message_path && c->termination_message_path[0]
                                          ? c->termination_message_path
                                          : ST_DEFAULT_TERMINATION_PATH,
                                      false, NULL};
        *ret = m;
        *ret_n = n;
        return 0;
}

int ag_container_config_build(struct cb_arena *a, const struct ag_container_inputs *in,
                              struct rt_container_config *ret, struct ag_container_spec *ret_spec,
                              struct cb_error *err)
{
        const struct rt_image *img = in->image;
        const struct k8s_pod *pod = in->pod;
        struct ag_image_defaults defs = {
            .entrypoint = img->config.entrypoint,
            .cmd = img->config.cmd,
            .env = img->config.env,
            .working_dir = img->config.working_dir,
            .user = img->config.user,
        };
        struct ag_container_spec s;
        uint32_t uid = 0, gid = 0;
        struct rt_mount *mounts = NULL;
        size_t n_mounts = 0;
        if (ag_container_spec_build(a, pod, in->container, &defs, in->ctx, &s, err) < 0 ||
            resolve_ids(in, &s, &uid, &gid, err) < 0 ||
            build_mounts(a, in, &s, &mounts, &n_mounts, err) < 0)
                return -1;
        uint32_t *groups = NULL;
        size_t n_groups = 0;
        struct ag_groups_input gi = {
            .passwd = in->passwd,
            .group = in->group,
            .passwd_error = in->passwd_error,
            .group_error = in->group_error,
            .user_name = s.user_name,
            .uid = uid,
            .gid = gid,
            .merge = !pod->spec.security_context.strict_supplemental_groups,
            .pod_groups = s.groups,
            .n_pod_groups = s.n_groups,
        };
        if (ag_supplementary_groups(a, &gi, &groups, &n_groups, err) < 0)
                return -1;
        char dir[4096];
        const char *ns = pod->meta.namespace_ ? pod->meta.namespace_ : "default";
        if (ag_cri_log_dir(dir, sizeof(dir), in->pod_logs_dir, ns, pod->meta.name, pod->meta.uid,
                           in->container->name) < 0)
                return cb_error_set(err, ENOMEM, "container config");
        const struct k8s_container_cgroup *cp = in->plan;
        *ret = (struct rt_container_config){
            .id = cb_arena_strdup(a, in->id),
            .name = cb_arena_strdup(a, in->container->name),
            .root_dir = cb_arena_strdup(a, in->root_dir),
            .monitor_path = cb_arena_strdup(a, in->monitor_path),
            .sandbox = in->sandbox,
            .lower_dirs = img->layer_dirs,
            .n_lower = img->n_layers,
            .argv = (const char *const *)s.argv,
            .env = (const char *const *)s.env,
            .cwd = s.cwd,
            .uid = uid,
            .gid = gid,
            .groups = groups,
            .n_groups = n_groups,
            .caps = s.caps,
            .n_caps = s.n_caps,
            .privileged = s.privileged,
            .no_new_privs = s.no_new_privs,
            .seccomp = s.seccomp == AG_SECCOMP_RUNTIME_DEFAULT ? RT_SECCOMP_RUNTIME_DEFAULT
                       : s.seccomp == AG_SECCOMP_LOCALHOST     ? RT_SECCOMP_LOCALHOST
                                                               : RT_SECCOMP_UNCONFINED,
            .seccomp_profile = s.seccomp_localhost,
            .read_only_rootfs = s.read_only_rootfs,
            .mounts = mounts,
            .n_mounts = n_mounts,
            .oom_score_adj = cp ? cp->oom_score_adj : 0,
            .cgroup_path = cb_arena_printf(a, "%s/%s", in->pod_cgroup, in->id),
            .limits = cp ? cp->limits : (struct cg_limits){0},
            .log_path = cb_arena_printf(a, "%s/%d.log", dir, in->restart_count),
            .stop_signal = ag_signal_number(img->config.stop_signal),
            .stdin_open = s.stdin_open,
            .stdin_once = s.stdin_once,
            .tty = s.tty,
        };
        if (cb_arena_over_limit(a) || ret->id == NULL || ret->name == NULL ||
            ret->root_dir == NULL || ret->monitor_path == NULL || ret->cgroup_path == NULL ||
            ret->log_path == NULL)
                return cb_error_set(err, ENOMEM, "container config: out of memory");
        if (ret_spec != NULL)
                *ret_spec = s;
        return 0;
}
