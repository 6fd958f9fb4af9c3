/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/k8s/decode_internal.h"

#include <stdlib.h>
#include <string.h>

#include "lib/base64.h"

/* Nodes, metav1.Status, ConfigMaps and Secrets, watch events, freeing and
 * lookups; pods are in pod_json.c, the generic accessors in decode.c. */

/* ---- node ---- */

static int address_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_node_address *a = out;
        return dec_string(d, it, "type", &a->type) < 0 ||
                       dec_string(d, it, "address", &a->address) < 0
                   ? -1
                   : 0;
}

static int node_decode(struct dec *d, const cJSON *json, struct k8s_node *n)
{
        const cJSON *spec, *st;
        if (dec_not_object(d, json, "a Node") < 0 || dec_meta(d, json, &n->meta) < 0 ||
            dec_object(d, json, "spec", &spec) < 0 || dec_object(d, json, "status", &st) < 0)
                return -1;
        if (spec != NULL) {
                size_t old = dec_path_field(d, "spec");
                if (dec_bool(d, spec, "unschedulable", NULL, &n->unschedulable) < 0 ||
                    dec_items(d, spec, "taints", K8S_MAX_ARRAY_ITEMS, sizeof(*n->taints), true,
                              dec_taint_item, (void **)&n->taints, &n->n_taints) < 0 ||
                    dec_string(d, spec, "podCIDR", &n->pod_cidr) < 0)
                        return -1;
                dec_path_pop(d, old);
        }
        if (st != NULL) {
                size_t old = dec_path_field(d, "status");
                if (dec_resource_list(d, st, "capacity", &n->capacity) < 0 ||
                    dec_resource_list(d, st, "allocatable", &n->allocatable) < 0 ||
                    dec_items(d, st, "conditions", K8S_MAX_ARRAY_ITEMS, sizeof(*n->conditions),
                              true, dec_condition_item, (void **)&n->conditions,
                              &n->n_conditions) < 0 ||
                    dec_items(d, st, "addresses", K8S_MAX_ARRAY_ITEMS, sizeof(*n->addresses), true,
                              address_item, (void **)&n->addresses, &n->n_addresses) < 0)
                        return -1;
                dec_path_pop(d, old);
        }
        return 0;
}

static int node_new(struct dec *d, const cJSON *json, struct k8s_node **ret)
{
        struct cb_arena *a = cb_arena_new(DECODE_ARENA_LIMIT);
        struct k8s_node *n;
        if (a == NULL)
                return dec_fail(d, "out of memory");
        n = cb_arena_alloc(a, sizeof(*n));
        if (n == NULL) {
                cb_arena_free(a);
                return dec_fail(d, "out of memory");
        }
        n->arena = a;
        n->refs_ = 1;
        struct cb_arena *saved = d->a;
        d->a = a;
        int r = node_decode(d, json, n);
        d->a = saved;
        if (r < 0) {
                cb_arena_free(a);
                return -1;
        }
        *ret = n;
        return 0;
}

int k8s_node_from_json(const cJSON *json, struct k8s_node **ret, struct cb_error *err)
{
        struct dec d = {.err = err};
        *ret = NULL;
        return node_new(&d, json, ret);
}

/* ---- metav1.Status ---- */

static int cause_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_status_cause *c = out;
        /* StatusCause.Type is serialized as "reason" */
        return dec_string(d, it, "reason", &c->type) < 0 ||
                       dec_string(d, it, "message", &c->message) < 0 ||
                       dec_string(d, it, "field", &c->field) < 0
                   ? -1
                   : 0;
}

int k8s_status_from_json(const cJSON *json, struct k8s_status **ret, struct cb_error *err)
{
        struct dec d = {.err = err};
        const cJSON *details;
        struct k8s_status *s;
        *ret = NULL;
        if (dec_not_object(&d, json, "a Status") < 0)
                return -1;
        if ((d.a = cb_arena_new(DECODE_ARENA_LIMIT)) == NULL ||
            (s = cb_arena_alloc(d.a, sizeof(*s))) == NULL) {
                cb_arena_free(d.a);
                return cb_error_set(err, 0, "out of memory");
        }
        s->arena = d.a;
        if (dec_string(&d, json, "status", &s->status) < 0 ||
            dec_string(&d, json, "message", &s->message) < 0 ||
            dec_string(&d, json, "reason", &s->reason) < 0 ||
            dec_int32(&d, json, "code", NULL, &s->code) < 0 ||
            dec_object(&d, json, "details", &details) < 0)
                goto fail;
        if (details != NULL) {
                size_t old = dec_path_field(&d, "details");
                if (dec_string(&d, details, "name", &s->details_name) < 0 ||
                    dec_string(&d, details, "kind", &s->details_kind) < 0 ||
                    dec_items(&d, details, "causes", K8S_MAX_ARRAY_ITEMS, sizeof(*s->causes), true,
                              cause_item, (void **)&s->causes, &s->n_causes) < 0)
                        goto fail;
                dec_path_pop(&d, old);
        }
        *ret = s;
        return 0;
fail:
        cb_arena_free(d.a);
        return -1;
}

/* ---- ConfigMaps and Secrets ---- */

bool k8s_valid_data_key(const char *key)
{
        size_t n = key ? strlen(key) : 0;
        if (n == 0 || n > 253 || strcmp(key, ".") == 0 || strncmp(key, "..", 2) == 0)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = key[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.'))
                        return false;
        }
        return true;
}

/* Standard base64 with padding, as encoding/json decodes []byte (Go's
 * decoder skips newlines). */
static int b64_decode(struct dec *d, const char *in, char **out, size_t *out_len)
{
        size_t n = strlen(in), bad = 0;
        char *buf = cb_arena_alloc(d->a, cb_base64_max(n));
        if (buf == NULL)
                return dec_oom(d);
        ssize_t r = cb_base64_decode(in, n, CB_B64_SKIP_NEWLINES, (unsigned char *)buf, &bad);
        if (r < 0)
                return dec_fail(d, "illegal base64 data at input byte %zu", bad);
        *out = buf;
        *out_len = (size_t)r;
        return 0;
}

static int data_cmp(const void *x, const void *y)
{
        return strcmp(((const struct k8s_data_item *)x)->key,
                      ((const struct k8s_data_item *)y)->key);
}

/* Adds obj.key's entries; base64 ones are decoded. */
static int data_field(struct dec *d, const cJSON *obj, const char *key, bool base64,
                      struct k8s_keyed_data *kd, size_t cap)
{
        const cJSON *m;
        if (dec_object(d, obj, key, &m) < 0)
                return -1;
        if (m == NULL)
                return 0;
        size_t old = dec_path_field(d, key);
        for (const cJSON *it = m->child; it != NULL; it = it->next) {
                const char *k = it->string ? it->string : "";
                size_t o2 = dec_path_push(d, "[%s]", k);
                if (!k8s_valid_data_key(k))
                        return dec_fail(d, "a valid config key must consist of alphanumeric "
                                           "characters, '-', '_' or '.'");
                for (size_t i = 0; i < kd->n; i++)
                        if (strcmp(kd->items[i].key, k) == 0)
                                return dec_fail(d, "duplicate of key present in data");
                if (kd->n >= cap)
                        return dec_fail(d, "more than %zu keys", cap);
                struct k8s_data_item *di = &kd->items[kd->n];
                char *v;
                if (dec_str_value(d, it, &v) < 0)
                        return -1;
                di->binary = base64 && !kd->secret;
                if (base64) {
                        if (b64_decode(d, v, &di->value, &di->len) < 0)
                                return -1;
                } else {
                        di->value = v;
                        di->len = strlen(v);
                }
                if ((di->key = cb_arena_strdup(d->a, k)) == NULL)
                        return dec_oom(d);
                kd->n++;
                dec_path_pop(d, o2);
        }
        dec_path_pop(d, old);
        return 0;
}

static int keyed_data_from_json(const cJSON *json, bool secret, struct k8s_keyed_data **ret,
                                struct cb_error *err)
{
        struct dec d = {.err = err};
        struct k8s_keyed_data *kd;
        *ret = NULL;
        if (dec_not_object(&d, json, secret ? "a Secret" : "a ConfigMap") < 0)
                return -1;
        if ((d.a = cb_arena_new(DECODE_ARENA_LIMIT)) == NULL ||
            (kd = cb_arena_calloc(d.a, 1, sizeof(*kd))) == NULL) {
                cb_arena_free(d.a);
                return cb_error_set(err, 0, "out of memory");
        }
        kd->arena = d.a;
        kd->secret = secret;
        size_t cap = 0;
        const char *fields[2] = {"data", "binaryData"};
        for (int f = 0; f < (secret ? 1 : 2); f++) {
                const cJSON *m = dec_field(json, fields[f]);
                for (const cJSON *it = cJSON_IsObject(m) ? m->child : NULL; it; it = it->next)
                        cap++;
        }
        if (cap > K8S_MAX_ARRAY_ITEMS) {
                dec_fail(&d, "data: %zu keys exceed the limit of %d", cap, K8S_MAX_ARRAY_ITEMS);
                goto fail;
        }
        if (cap > 0 && (kd->items = dec_alloc_array(&d, cap, sizeof(*kd->items))) == NULL)
                goto fail;
        if (dec_meta(&d, json, &kd->meta) < 0 ||
            (secret && dec_string(&d, json, "type", &kd->type) < 0) ||
            dec_bool(&d, json, "immutable", NULL, &kd->immutable) < 0 ||
            data_field(&d, json, "data", secret, kd, cap) < 0 ||
            (!secret && data_field(&d, json, "binaryData", true, kd, cap) < 0))
                goto fail;
        if (kd->n > 1)
                qsort(kd->items, kd->n, sizeof(*kd->items), data_cmp);
        *ret = kd;
        return 0;
fail:
        cb_arena_free(d.a);
        return -1;
}

int k8s_configmap_from_json(const cJSON *json, struct k8s_keyed_data **ret, struct cb_error *err)
{
        return keyed_data_from_json(json, false, ret, err);
}

int k8s_secret_from_json(const cJSON *json, struct k8s_keyed_data **ret, struct cb_error *err)
{
        return keyed_data_from_json(json, true, ret, err);
}

void k8s_keyed_data_free(struct k8s_keyed_data *kd)
{
        if (kd != NULL)
                cb_arena_free(kd->arena);
}

const struct k8s_data_item *k8s_keyed_data_get(const struct k8s_keyed_data *kd, const char *key)
{
        if (kd == NULL || key == NULL)
                return NULL;
        struct k8s_data_item probe = {.key = (char *)key};
        return bsearch(&probe, kd->items, kd->n, sizeof(*kd->items), data_cmp);
}

/* ---- watch events ---- */

int k8s_watch_event_from_json(cJSON *json, struct k8s_watch_event *ret, struct cb_error *err)
{
        static const char *const names[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};
        static const int values[] = {K8S_WATCH_ADDED, K8S_WATCH_MODIFIED, K8S_WATCH_DELETED,
                                     K8S_WATCH_BOOKMARK, K8S_WATCH_ERROR};
        struct dec d = {.err = err};
        int type = -1;
        ret->object = NULL;
        ret->type = K8S_WATCH_ADDED;
        if (dec_not_object(&d, json, "a watch event") < 0)
                return -1;
        /* no arena: strings decoded here are only compared */
        d.a = cb_arena_new(4096 + K8S_MAX_STRING_BYTES);
        if (d.a == NULL)
                return cb_error_set(err, 0, "out of memory");
        int r = dec_enum(&d, json, "type", names, values, 5,
                         "ADDED, MODIFIED, DELETED, BOOKMARK or ERROR", &type);
        cb_arena_free(d.a);
        if (r < 0)
                return -1;
        if (type < 0)
                return cb_error_set(err, 0,
                                    "type: required field is missing (want ADDED, MODIFIED, "
                                    "DELETED, BOOKMARK or ERROR)");
        const cJSON *obj = dec_field(json, "object");
        if (obj == NULL)
                return cb_error_set(err, 0, "object: required field is missing");
        if (!cJSON_IsObject(obj)) {
                size_t old = dec_path_field(&d, "object");
                dec_wrong_type(&d, obj, "an object");
                dec_path_pop(&d, old);
                return -1;
        }
        ret->object = cJSON_DetachItemViaPointer(json, (cJSON *)obj);
        ret->type = (enum k8s_watch_type)type;
        return 0;
}

void k8s_watch_event_clear(struct k8s_watch_event *ev)
{
        if (ev == NULL)
                return;
        cJSON_Delete(ev->object);
        ev->object = NULL;
}

/* ---- freeing ---- */

void k8s_pod_free(struct k8s_pod *p)
{
        if (p == NULL || __atomic_sub_fetch(&p->refs_, 1, __ATOMIC_ACQ_REL) != 0)
                return;
        free(p->json_text_);
        cb_arena_free(p->arena);
}

void k8s_node_free(struct k8s_node *n)
{
        if (n != NULL && __atomic_sub_fetch(&n->refs_, 1, __ATOMIC_ACQ_REL) == 0)
                cb_arena_free(n->arena);
}

struct k8s_node *k8s_node_ref(const struct k8s_node *n)
{
        struct k8s_node *m = (struct k8s_node *)n; /* only the count changes */
        if (m != NULL)
                __atomic_add_fetch(&m->refs_, 1, __ATOMIC_RELAXED);
        return m;
}

void k8s_status_free(struct k8s_status *s)
{
        if (s != NULL)
                cb_arena_free(s->arena);
}

void k8s_pod_list_free(struct k8s_pod_list *l)
{
        if (l == NULL)
                return;
        for (size_t i = 0; i < l->n; i++)
                k8s_pod_free(l->items[i]);
        cb_arena_free(l->arena);
}

/* ---- lookups ---- */

const char *k8s_map_get(const struct k8s_map *m, const char *key)
{
        for (size_t i = 0; m != NULL && i < m->n; i++)
                if (strcmp(m->items[i].key, key) == 0)
                        return m->items[i].value;
        return NULL;
}

const struct k8s_quantity *k8s_resource_get(const struct k8s_resource_list *l, const char *name)
{
        for (size_t i = 0; l != NULL && i < l->n; i++)
                if (strcmp(l->items[i].name, name) == 0)
                        return &l->items[i].q;
        return NULL;
}

const char *k8s_restart_policy_name(enum k8s_restart_policy p)
{
        switch (p) {
        case K8S_RESTART_ALWAYS:
                return "Always";
        case K8S_RESTART_ON_FAILURE:
                return "OnFailure";
        case K8S_RESTART_NEVER:
                return "Never";
        }
        return "Unknown";
}

const char *k8s_effect_name(enum k8s_taint_effect e)
{
        switch (e) {
        case K8S_EFFECT_ALL:
                return "";
        case K8S_EFFECT_NO_SCHEDULE:
                return "NoSchedule";
        case K8S_EFFECT_PREFER_NO_SCHEDULE:
                return "PreferNoSchedule";
        case K8S_EFFECT_NO_EXECUTE:
                return "NoExecute";
        }
        return "Unknown";
}

const char *k8s_protocol_name(enum k8s_protocol p)
{
        switch (p) {
        case K8S_PROTO_TCP:
                return "TCP";
        case K8S_PROTO_UDP:
                return "UDP";
        case K8S_PROTO_SCTP:
                return "SCTP";
        }
        return "Unknown";
}

bool k8s_pod_is_static(const struct k8s_pod *p)
{
        const char *src = k8s_map_get(&p->meta.annotations, "kubernetes.io/config.source");
        return src != NULL && (strcmp(src, "file") == 0 || strcmp(src, "http") == 0);
}
