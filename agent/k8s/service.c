/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/k8s/service.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static char *str_field(struct cb_arena *a, const cJSON *o, const char *key, const char *def)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
        return cb_arena_strdup(a, cJSON_IsString(v) ? v->valuestring : def);
}

int k8s_service_from_json(struct cb_arena *a, const cJSON *obj, struct k8s_service *ret,
                          struct cb_error *err)
{
        *ret = (struct k8s_service){0};
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
        const cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
        if (!cJSON_IsObject(meta) || !cJSON_IsObject(spec))
                return cb_error_set(err, 0, "Service: want metadata and spec objects");
        ret->namespace_ = str_field(a, meta, "namespace", "default");
        ret->name = str_field(a, meta, "name", "");
        ret->uid = str_field(a, meta, "uid", "");
        ret->cluster_ip = str_field(a, spec, "clusterIP", "");
        if (!ret->namespace_ || !ret->name || !ret->uid || !ret->cluster_ip)
                return cb_error_set(err, ENOMEM, "Service");
        const cJSON *ports = cJSON_GetObjectItemCaseSensitive(spec, "ports");
        int n = cJSON_IsArray(ports) ? cJSON_GetArraySize(ports) : 0;
        if (n > 1000)
                return cb_error_set(err, 0, "Service %s/%s: spec.ports: %d ports, at most 1000",
                                    ret->namespace_, ret->name, n);
        ret->ports = cb_arena_calloc(a, (size_t)n + 1, sizeof(*ret->ports));
        if (ret->ports == NULL)
                return cb_error_set(err, ENOMEM, "Service");
        const cJSON *p;
        cJSON_ArrayForEach(p, ports)
        {
                struct k8s_service_port *sp = &ret->ports[ret->n_ports];
                const cJSON *port = cJSON_GetObjectItemCaseSensitive(p, "port");
                if (!cJSON_IsNumber(port) || port->valuedouble < 1 || port->valuedouble > 65535)
                        return cb_error_set(err, 0,
                                            "Service %s/%s: spec.ports[%zu].port: want 1-65535",
                                            ret->namespace_, ret->name, ret->n_ports);
                sp->port = (int32_t)port->valuedouble;
                sp->name = str_field(a, p, "name", "");
                sp->protocol = str_field(a, p, "protocol", "TCP");
                if (sp->name == NULL || sp->protocol == NULL)
                        return cb_error_set(err, ENOMEM, "Service");
                if (sp->protocol[0] == '\0')
                        sp->protocol = "TCP";
                ret->n_ports++;
        }
        return 0;
}

static bool ip_set(const struct k8s_service *s)
{
        return s->cluster_ip && s->cluster_ip[0] && strcmp(s->cluster_ip, "None") != 0;
}

/* makeEnvVariableName: upper case, '-' to '_' */
static char *var_name(struct cb_arena *a, const char *s)
{
        char *r = cb_arena_strdup(a, s);
        for (char *p = r; p && *p; p++)
                *p = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
        return r;
}

static char *lower(struct cb_arena *a, const char *s)
{
        char *r = cb_arena_strdup(a, s);
        for (char *p = r; p && *p; p++)
                *p = (char)tolower((unsigned char)*p);
        return r;
}

static int by_name(const void *x, const void *y)
{
        const struct k8s_service *const *a = x, *const *b = y;
        return strcmp((*a)->name, (*b)->name);
}

struct out {
        struct cb_arena *a;
        char **v;
        size_t n, cap;
        bool oom;
};

static void add(struct out *o, char *kv)
{
        if (kv == NULL) {
                o->oom = true;
                return;
        }
        if (o->n + 1 >= o->cap) {
                size_t cap = o->cap ? o->cap * 2 : 32;
                char **v = cb_arena_calloc(o->a, cap, sizeof(char *));
                if (v == NULL) {
                        o->oom = true;
                        return;
                }
                if (o->n)
                        memcpy(v, o->v, o->n * sizeof(char *));
                o->v = v;
                o->cap = cap;
        }
        o->v[o->n++] = kv;
}

static void service_vars(struct out *o, const struct k8s_service *s)
{
        struct cb_arena *a = o->a;
        char *svc = var_name(a, s->name);
        bool v6 = strchr(s->cluster_ip, ':') != NULL;
        char *host = cb_arena_printf(a, v6 ? "[%s]" : "%s", s->cluster_ip);
        if (svc == NULL || host == NULL) {
                o->oom = true;
                return;
        }
        add(o, cb_arena_printf(a, "%s_SERVICE_HOST=%s", svc, s->cluster_ip));
        add(o, cb_arena_printf(a, "%s_SERVICE_PORT=%d", svc, s->ports[0].port));
        for (size_t i = 0; i < s->n_ports; i++)
                if (s->ports[i].name[0] != '\0') {
                        char *pn = var_name(a, s->ports[i].name);
                        add(o, pn ? cb_arena_printf(a, "%s_SERVICE_PORT_%s=%d", svc, pn,
                                                    s->ports[i].port)
                                  : NULL);
                }
        for (size_t i = 0; i < s->n_ports; i++) {
                const struct k8s_service_port *p = &s->ports[i];
                char *proto = lower(a, p->protocol);
                char *up = var_name(a, p->protocol);
                if (proto == NULL || up == NULL) {
                        o->oom = true;
                        return;
                }
                if (i == 0)
                        add(o, cb_arena_printf(a, "%s_PORT=%s://%s:%d", svc, proto, host, p->port));
                add(o, cb_arena_printf(a, "%s_PORT_%d_%s=%s://%s:%d", svc, p->port, up, proto, host,
                                       p->port));
                add(o, cb_arena_printf(a, "%s_PORT_%d_%s_PROTO=%s", svc, p->port, up, proto));
                add(o, cb_arena_printf(a, "%s_PORT_%d_%s_PORT=%d", svc, p->port, up, p->port));
                add(o,
                    cb_arena_printf(a, "%s_PORT_%d_%s_ADDR=%s", svc, p->port, up, s->cluster_ip));
        }
}

int k8s_service_env(struct cb_arena *a, const struct k8s_service *const *svcs, size_t n,
                    const char *pod_namespace, bool enable_service_links, char ***ret_env,
                    size_t *ret_n, struct cb_error *err)
{
        const struct k8s_service **pick = cb_arena_calloc(a, n + 1, sizeof(*pick));
        if (pick == NULL)
                return cb_error_set(err, ENOMEM, "service environment");
        size_t k = 0;
        const char *ns = pod_namespace && pod_namespace[0] ? pod_namespace : "default";
        for (size_t i = 0; i < n; i++) {
                const struct k8s_service *s = svcs[i];
                if (!ip_set(s) || s->n_ports == 0)
                        continue;
                bool master =
                    strcmp(s->namespace_, "default") == 0 && strcmp(s->name, "kubernetes") == 0;
                bool mine = enable_service_links && strcmp(s->namespace_, ns) == 0;
                if (!master && !mine)
                        continue;
                /* one per name: the pod's namespace wins over default's kubernetes */
                size_t j = 0;
                while (j < k && strcmp(pick[j]->name, s->name) != 0)
                        j++;
                if (j < k) {
                        if (mine)
                                pick[j] = s;
                        continue;
                }
                pick[k++] = s;
        }
        qsort(pick, k, sizeof(*pick), by_name);
        struct out o = {.a = a};
        for (size_t i = 0; i < k; i++)
                service_vars(&o, pick[i]);
        if (o.oom)
                return cb_error_set(err, ENOMEM, "service environment");
        if (o.v == NULL && (o.v = cb_arena_calloc(a, 1, sizeof(char *))) == NULL)
                return cb_error_set(err, ENOMEM, "service environment");
        *ret_env = o.v;
        *ret_n = o.n;
        return 0;
}
