/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/k8s/k8s.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cleanup.h"

/*
 * cJSON tree -> typed structs. Every string and array of one object lives in
 * that object's arena. A decoder walks only the fields it knows, keeping the
 * JSON path of the field it is on so an error can name it.
 *
 * Numbers: a number node may carry its original text in valuestring (the YAML
 * reader stores the plain scalar there, see k8s.h); integers and quantities
 * use that text when present, so "0.5" or 2^62 keep every digit. A number
 * parsed from JSON text only has its double.
 */

/* The most bytes one decoded object may use: generous for any valid object
 * built from an 8 MiB document, still bounded for hostile input. */
#define DECODE_ARENA_LIMIT ((size_t)K8S_MAX_DOC_BYTES * 4)
#define LIST_ARENA_LIMIT   ((size_t)K8S_MAX_LIST_ITEMS * 64 + 4096)

struct dec {
        struct cb_arena *a;
        struct cb_error *err;
        char path[512];
        size_t plen;
};

/* ---- paths ---- */

static size_t path_push(struct dec *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static size_t path_push(struct dec *d, const char *fmt, ...)
{
        size_t old = d->plen;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(d->path + d->plen, sizeof(d->path) - d->plen, fmt, ap);
        va_end(ap);
        if (n > 0)
                d->plen += (size_t)n < sizeof(d->path) - d->plen ? (size_t)n
                                                                 : sizeof(d->path) - 1 - d->plen;
        return old;
}

static size_t path_field(struct dec *d, const char *key)
{
        return path_push(d, "%s%s", d->plen > 0 ? "." : "", key);
}

static void path_pop(struct dec *d, size_t old)
{
        d->plen = old;
        d->path[old] = '\0';
}

/* A short, printable rendering of a value for error messages. */
static void describe(const cJSON *v, char *buf, size_t size)
{
        if (v == NULL || cJSON_IsNull(v)) {
                snprintf(buf, size, "null");
        } else if (cJSON_IsBool(v)) {
                snprintf(buf, size, "%s", cJSON_IsTrue(v) ? "true" : "false");
        } else if (cJSON_IsNumber(v)) {
                if (v->valuestring != NULL)
                        snprintf(buf, size, "%.64s", v->valuestring);
                else
                        snprintf(buf, size, "%.17g", v->valuedouble);
        } else if (cJSON_IsString(v)) {
                size_t o = 0;
                const unsigned char *s = (const unsigned char *)v->valuestring;
                buf[o++] = '"';
                for (size_t i = 0; s[i] != '\0' && o + 8 < size; i++) {
                        if (i == 64) {
                                o += (size_t)snprintf(buf + o, size - o, "...");
                                break;
                        }
                        if (s[i] == '"' || s[i] == '\\')
                                o += (size_t)snprintf(buf + o, size - o, "\\%c", s[i]);
                        else if (s[i] < 0x20 || s[i] == 0x7f)
                                o += (size_t)snprintf(buf + o, size - o, "\\x%02x", s[i]);
                        else
                                buf[o++] = (char)s[i];
                }
                snprintf(buf + o, size - o, "\"");
        } else if (cJSON_IsArray(v)) {
                snprintf(buf, size, "an array");
        } else {
                snprintf(buf, size, "an object");
        }
}

static int fail(struct dec *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct dec *d, const char *fmt, ...)
{
        char msg[CB_ERROR_MSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (d->plen > 0)
                return cb_error_set(d->err, 0, "%s: %s", d->path, msg);
        return cb_error_set(d->err, 0, "%s", msg);
}

static int wrong_type(struct dec *d, const cJSON *v, const char *want)
{
        char got[128];
        describe(v, got, sizeof(got));
        return fail(d, "expected %s, got %s", want, got);
}

static int oom(struct dec *d)
{
        if (cb_arena_over_limit(d->a))
                return fail(d, "the decoded object exceeds the limit of %zu bytes",
                            DECODE_ARENA_LIMIT);
        return fail(d, "out of memory");
}

static void *alloc_array(struct dec *d, size_t n, size_t size)
{
        if (n == 0)
                return NULL;
        void *p = cb_arena_calloc(d->a, n, size);
        if (p == NULL)
                oom(d);
        return p;
}

/* ---- field accessors: absent and null are the same ---- */

static const cJSON *field(const cJSON *obj, const char *key)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
        return cJSON_IsNull(v) ? NULL : v;
}

/* Enters obj.key if it is an object. *ret = NULL when absent. */
static int d_object(struct dec *d, const cJSON *obj, const char *key, const cJSON **ret)
{
        const cJSON *v = field(obj, key);
        *ret = NULL;
        if (v == NULL)
                return 0;
        if (!cJSON_IsObject(v)) {
                size_t old = path_field(d, key);
                wrong_type(d, v, "an object");
                path_pop(d, old);
                return -1;
        }
        *ret = v;
        return 0;
}

static int str_value(struct dec *d, const cJSON *v, char **out)
{
        if (!cJSON_IsString(v))
                return wrong_type(d, v, "a string");
        size_t len = strlen(v->valuestring);
        if (len > K8S_MAX_STRING_BYTES)
                return fail(d, "a string of %zu bytes exceeds the limit of %u bytes", len,
                            K8S_MAX_STRING_BYTES);
        *out = cb_arena_strndup(d->a, v->valuestring, len);
        if (*out == NULL)
                return oom(d);
        return 0;
}

static int d_string(struct dec *d, const cJSON *obj, const char *key, char **out)
{
        const cJSON *v = field(obj, key);
        *out = NULL;
        if (v == NULL)
                return 0;
        size_t old = path_field(d, key);
        int r = str_value(d, v, out);
        path_pop(d, old);
        return r;
}

static int d_bool(struct dec *d, const cJSON *obj, const char *key, bool *has, bool *out)
{
        const cJSON *v = field(obj, key);
        if (v == NULL)
                return 0;
        if (!cJSON_IsBool(v)) {
                size_t old = path_field(d, key);
                wrong_type(d, v, "a boolean");
                path_pop(d, old);
                return -1;
        }
        *out = cJSON_IsTrue(v);
        if (has != NULL)
                *has = true;
        return 0;
}

/* An integral number in [min, max]; uses the node's text when it has one. */
static int int_value(struct dec *d, const cJSON *v, int64_t min, int64_t max, int64_t *out)
{
        int64_t x;
        if (!cJSON_IsNumber(v))
                return wrong_type(d, v, "an integer");
        if (v->valuestring != NULL) {
                char *end;
                errno = 0;
                long long ll = strtoll(v->valuestring, &end, 0);
                if (end == v->valuestring || *end != '\0' || errno == ERANGE) {
                        /* 1e3 or 5.0: integral floats are accepted by value */
                        double dv = v->valuedouble;
                        if (!isfinite(dv) || dv != floor(dv) || dv < -9223372036854775808.0 ||
                            dv >= 9223372036854775808.0)
                                goto bad;
                        ll = (long long)dv;
                }
                x = ll;
        } else {
                double dv = v->valuedouble;
                if (!isfinite(dv) || dv != floor(dv) || dv < -9223372036854775808.0 ||
                    dv >= 9223372036854775808.0)
                        goto bad;
                x = (int64_t)dv;
        }
        if (x < min || x > max) {
                char got[128];
                describe(v, got, sizeof(got));
                return fail(d, "%s is out of range [%lld, %lld]", got, (long long)min,
                            (long long)max);
        }
        *out = x;
        return 0;
bad:
        return wrong_type(d, v, "an integer");
}

static int d_int64(struct dec *d, const cJSON *obj, const char *key, bool *has, int64_t *out)
{
        const cJSON *v = field(obj, key);
        if (v == NULL)
                return 0;
        size_t old = path_field(d, key);
        int r = int_value(d, v, INT64_MIN, INT64_MAX, out);
        path_pop(d, old);
        if (r == 0 && has != NULL)
                *has = true;
        return r;
}

static int d_int32(struct dec *d, const cJSON *obj, const char *key, bool *has, int32_t *out)
{
        int64_t x;
        const cJSON *v = field(obj, key);
        if (v == NULL)
                return 0;
        size_t old = path_field(d, key);
        int r = int_value(d, v, INT32_MIN, INT32_MAX, &x);
        path_pop(d, old);
        if (r < 0)
                return -1;
        *out = (int32_t)x;
        if (has != NULL)
                *has = true;
        return 0;
}

/* An enum from its API spelling; absent leaves *out alone (the default). */
static int d_enum(struct dec *d, const cJSON *obj, const char *key, const char *const *names,
                  const int *values, size_t n, const char *want, int *out)
{
        char *s;
        if (d_string(d, obj, key, &s) < 0)
                return -1;
        if (s == NULL)
                return 0;
        for (size_t i = 0; i < n; i++) {
                if (strcmp(s, names[i]) == 0) {
                        *out = values[i];
                        return 0;
                }
        }
        size_t old = path_field(d, key);
        char got[128];
        describe(field(obj, key), got, sizeof(got));
        fail(d, "unsupported value %s (want %s)", got, want);
        path_pop(d, old);
        return -1;
}

/* obj.key as an array of at most limit items; *ret NULL and *n 0 when absent.
 * The count is checked before anything is allocated. */
static int d_array(struct dec *d, const cJSON *obj, const char *key, size_t limit,
                   const cJSON **ret, size_t *n)
{
        const cJSON *v = field(obj, key);
        *ret = NULL;
        *n = 0;
        if (v == NULL)
                return 0;
        size_t old = path_field(d, key);
        if (!cJSON_IsArray(v)) {
                wrong_type(d, v, "an array");
                path_pop(d, old);
                return -1;
        }
        size_t count = 0;
        for (const cJSON *it = v->child; it != NULL; it = it->next)
                if (++count > limit)
                        break;
        if (count > limit) {
                count = (size_t)cJSON_GetArraySize(v);
                fail(d, "%zu items exceed the limit of %zu", count, limit);
                path_pop(d, old);
                return -1;
        }
        path_pop(d, old);
        *ret = v;
        *n = count;
        return 0;
}

typedef int (*item_fn)(struct dec *d, const cJSON *item, void *out);

/* Decodes each item of obj.key into a new array of n elements of size sz. */
static int d_items(struct dec *d, const cJSON *obj, const char *key, size_t limit, size_t sz,
                   bool want_object, item_fn fn, void **ret, size_t *ret_n)
{
        const cJSON *arr;
        size_t n;
        *ret = NULL;
        *ret_n = 0;
        if (d_array(d, obj, key, limit, &arr, &n) < 0)
                return -1;
        if (n == 0)
                return 0;
        unsigned char *items = alloc_array(d, n, sz);
        if (items == NULL)
                return -1;
        size_t old = path_field(d, key);
        size_t i = 0;
        for (const cJSON *it = arr->child; it != NULL; it = it->next, i++) {
                size_t o2 = path_push(d, "[%zu]", i);
                if (want_object && !cJSON_IsObject(it)) {
                        wrong_type(d, it, "an object");
                        return -1;
                }
                if (fn(d, it, items + i * sz) < 0)
                        return -1;
                path_pop(d, o2);
        }
        path_pop(d, old);
        *ret = items;
        *ret_n = n;
        return 0;
}

static int string_item(struct dec *d, const cJSON *item, void *out)
{
        return str_value(d, item, (char **)out);
}

static int d_strings(struct dec *d, const cJSON *obj, const char *key, char ***ret, size_t *n)
{
        return d_items(d, obj, key, K8S_MAX_ARRAY_ITEMS, sizeof(char *), false, string_item,
                       (void **)ret, n);
}

static int d_map(struct dec *d, const cJSON *obj, const char *key, struct k8s_map *m)
{
        const cJSON *v;
        m->items = NULL;
        m->n = 0;
        if (d_object(d, obj, key, &v) < 0)
                return -1;
        if (v == NULL)
                return 0;
        size_t count = 0;
        for (const cJSON *it = v->child; it != NULL; it = it->next)
                count++;
        size_t old = path_field(d, key);
        if (count > K8S_MAX_ARRAY_ITEMS) {
                fail(d, "%zu entries exceed the limit of %d", count, K8S_MAX_ARRAY_ITEMS);
                path_pop(d, old);
                return -1;
        }
        if (count > 0 && (m->items = alloc_array(d, count, sizeof(*m->items))) == NULL)
                return -1;
        for (const cJSON *it = v->child; it != NULL; it = it->next) {
                struct k8s_kv *kv = &m->items[m->n];
                size_t o2 = path_push(d, "[%s]", it->string != NULL ? it->string : "");
                if (str_value(d, it, &kv->value) < 0)
                        return -1;
                path_pop(d, o2);
                kv->key = cb_arena_strdup(d->a, it->string != NULL ? it->string : "");
                if (kv->key == NULL)
                        return oom(d);
                m->n++;
        }
        path_pop(d, old);
        return 0;
}

/* ---- quantities ---- */

/* The text of a number node: its original text when the YAML reader kept
 * it, else the shortest %.15g/%.17g rendering that reads back the same. */
static void number_text(const cJSON *v, char *buf, size_t size)
{
        if (v->valuestring != NULL) {
                snprintf(buf, size, "%s", v->valuestring);
                return;
        }
        snprintf(buf, size, "%.15g", v->valuedouble);
        if (strtod(buf, NULL) != v->valuedouble)
                snprintf(buf, size, "%.17g", v->valuedouble);
}

static int quantity_value(struct dec *d, const cJSON *v, struct k8s_quantity *q)
{
        char nbuf[128];
        const char *text;
        if (cJSON_IsString(v)) {
                text = v->valuestring;
        } else if (cJSON_IsNumber(v)) {
                number_text(v, nbuf, sizeof(nbuf));
                text = nbuf;
        } else {
                return wrong_type(d, v, "a quantity (string or number)");
        }
        if (strlen(text) > K8S_MAX_STRING_BYTES)
                return fail(d, "a quantity of %zu bytes exceeds the limit of %u bytes",
                            strlen(text), K8S_MAX_STRING_BYTES);
        if (k8s_quantity_parse(text, q, d->err) < 0) {
                if (d->plen > 0)
                        cb_error_prefix(d->err, "%s", d->path);
                return -1;
        }
        q->text = cb_arena_strdup(d->a, text);
        if (q->text == NULL)
                return oom(d);
        return 0;
}

static int d_resource_list(struct dec *d, const cJSON *obj, const char *key,
                           struct k8s_resource_list *l)
{
        const cJSON *v;
        l->items = NULL;
        l->n = 0;
        if (d_object(d, obj, key, &v) < 0)
                return -1;
        if (v == NULL)
                return 0;
        size_t count = 0;
        for (const cJSON *it = v->child; it != NULL; it = it->next)
                count++;
        size_t old = path_field(d, key);
        if (count > K8S_MAX_ARRAY_ITEMS) {
                fail(d, "%zu entries exceed the limit of %d", count, K8S_MAX_ARRAY_ITEMS);
                path_pop(d, old);
                return -1;
        }
        if (count > 0 && (l->items = alloc_array(d, count, sizeof(*l->items))) == NULL)
                return -1;
        for (const cJSON *it = v->child; it != NULL; it = it->next) {
                struct k8s_resource *r = &l->items[l->n];
                const char *name = it->string != NULL ? it->string : "";
                size_t o2 = path_field(d, name);
                if (quantity_value(d, it, &r->q) < 0)
                        return -1;
                path_pop(d, o2);
                if ((r->name = cb_arena_strdup(d->a, name)) == NULL)
                        return oom(d);
                l->n++;
        }
        path_pop(d, old);
        return 0;
}

/* ---- metadata ---- */

static int owner_ref_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_owner_ref *o = out;
        if (d_string(d, it, "apiVersion", &o->api_version) < 0 ||
            d_string(d, it, "kind", &o->kind) < 0 || d_string(d, it, "name", &o->name) < 0 ||
            d_string(d, it, "uid", &o->uid) < 0 ||
            d_bool(d, it, "controller", NULL, &o->controller) < 0)
                return -1;
        return 0;
}

static int decode_meta(struct dec *d, const cJSON *obj, struct k8s_object_meta *m)
{
        const cJSON *md;
        if (d_object(d, obj, "metadata", &md) < 0)
                return -1;
        if (md == NULL)
                return 0;
        size_t old = path_field(d, "metadata");
        if (d_string(d, md, "name", &m->name) < 0 ||
            d_string(d, md, "generateName", &m->generate_name) < 0 ||
            d_string(d, md, "namespace", &m->namespace_) < 0 ||
            d_string(d, md, "uid", &m->uid) < 0 ||
            d_string(d, md, "resourceVersion", &m->resource_version) < 0 ||
            d_int64(d, md, "generation", NULL, &m->generation) < 0 ||
            d_string(d, md, "creationTimestamp", &m->creation_timestamp) < 0 ||
            d_string(d, md, "deletionTimestamp", &m->deletion_timestamp) < 0 ||
            d_int64(d, md, "deletionGracePeriodSeconds", &m->has_deletion_grace_period,
                    &m->deletion_grace_period_seconds) < 0 ||
            d_map(d, md, "labels", &m->labels) < 0 ||
            d_map(d, md, "annotations", &m->annotations) < 0 ||
            d_items(d, md, "ownerReferences", K8S_MAX_ARRAY_ITEMS, sizeof(*m->owner_refs), true,
                    owner_ref_item, (void **)&m->owner_refs, &m->n_owner_refs) < 0)
                return -1;
        path_pop(d, old);
        return 0;
}

/* ---- node affinity, tolerations, taints ---- */

static const char *const op_names[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};
static const int op_values[] = {K8S_OP_IN, K8S_OP_NOT_IN, K8S_OP_EXISTS, K8S_OP_DOES_NOT_EXIST,
                                K8S_OP_GT, K8S_OP_LT};

static int requirement_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_requirement *r = out;
        int op = -1;
        if (d_string(d, it, "key", &r->key) < 0 ||
            d_enum(d, it, "operator", op_names, op_values, 6,
                   "In, NotIn, Exists, DoesNotExist, Gt or Lt", &op) < 0 ||
            d_strings(d, it, "values", &r->values, &r->n_values) < 0)
                return -1;
        if (op < 0) {
                size_t old = path_field(d, "operator");
                fail(d, "required field is missing (want In, NotIn, Exists, DoesNotExist, Gt "
                        "or Lt)");
                path_pop(d, old);
                return -1;
        }
        r->op = (enum k8s_selector_op)op;
        return 0;
}

static int selector_term(struct dec *d, const cJSON *it, struct k8s_node_selector_term *t)
{
        return d_items(d, it, "matchExpressions", K8S_MAX_ARRAY_ITEMS,
                       sizeof(*t->match_expressions), true, requirement_item,
                       (void **)&t->match_expressions, &t->n_match_expressions) < 0 ||
                       d_items(d, it, "matchFields", K8S_MAX_ARRAY_ITEMS, sizeof(*t->match_fields),
                               true, requirement_item, (void **)&t->match_fields,
                               &t->n_match_fields) < 0
                   ? -1
                   : 0;
}

static int selector_term_item(struct dec *d, const cJSON *it, void *out)
{
        return selector_term(d, it, out);
}

static int preferred_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_preferred_term *p = out;
        const cJSON *pref;
        if (d_int32(d, it, "weight", NULL, &p->weight) < 0 ||
            d_object(d, it, "preference", &pref) < 0)
                return -1;
        if (pref == NULL)
                return 0;
        size_t old = path_field(d, "preference");
        if (selector_term(d, pref, &p->preference) < 0)
                return -1;
        path_pop(d, old);
        return 0;
}

static int decode_affinity(struct dec *d, const cJSON *spec, struct k8s_node_affinity *na)
{
        const cJSON *aff, *node, *req;
        if (d_object(d, spec, "affinity", &aff) < 0)
                return -1;
        if (aff == NULL)
                return 0;
        size_t o1 = path_field(d, "affinity");
        if (d_object(d, aff, "nodeAffinity", &node) < 0)
                return -1;
        if (node != NULL) {
                size_t o2 = path_field(d, "nodeAffinity");
                if (d_object(d, node, "requiredDuringSchedulingIgnoredDuringExecution", &req) < 0)
                        return -1;
                if (req != NULL) {
                        size_t o3 = path_field(d, "requiredDuringSchedulingIgnoredDuringExecution");
                        na->has_required = true;
                        if (d_items(d, req, "nodeSelectorTerms", K8S_MAX_ARRAY_ITEMS,
                                    sizeof(*na->required_terms), true, selector_term_item,
                                    (void **)&na->required_terms, &na->n_required_terms) < 0)
                                return -1;
                        path_pop(d, o3);
                }
                if (d_items(d, node, "preferredDuringSchedulingIgnoredDuringExecution",
                            K8S_MAX_ARRAY_ITEMS, sizeof(*na->preferred), true, preferred_item,
                            (void **)&na->preferred, &na->n_preferred) < 0)
                        return -1;
                path_pop(d, o2);
        }
        path_pop(d, o1);
        return 0;
}

static const char *const effect_names[] = {"", "NoSchedule", "PreferNoSchedule", "NoExecute"};
static const int effect_values[] = {K8S_EFFECT_ALL, K8S_EFFECT_NO_SCHEDULE,
                                    K8S_EFFECT_PREFER_NO_SCHEDULE, K8S_EFFECT_NO_EXECUTE};

static int toleration_item(struct dec *d, const cJSON *it, void *out)
{
        static const char *const names[] = {"", "Equal", "Exists", "Gt", "Lt"};
        static const int values[] = {K8S_TOL_EQUAL, K8S_TOL_EQUAL, K8S_TOL_EXISTS, K8S_TOL_GT,
                                     K8S_TOL_LT};
        struct k8s_toleration *t = out;
        int op = K8S_TOL_EQUAL, effect = K8S_EFFECT_ALL;
        if (d_string(d, it, "key", &t->key) < 0 ||
            d_enum(d, it, "operator", names, values, 5, "Equal, Exists, Gt or Lt", &op) < 0 ||
            d_string(d, it, "value", &t->value) < 0 ||
            d_enum(d, it, "effect", effect_names, effect_values, 4,
                   "NoSchedule, PreferNoSchedule, NoExecute or empty", &effect) < 0 ||
            d_int64(d, it, "tolerationSeconds", &t->has_toleration_seconds,
                    &t->toleration_seconds) < 0)
                return -1;
        t->op = (enum k8s_toleration_op)op;
        t->effect = (enum k8s_taint_effect)effect;
        return 0;
}

static int taint_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_taint *t = out;
        int effect = -1;
        if (d_string(d, it, "key", &t->key) < 0 || d_string(d, it, "value", &t->value) < 0 ||
            d_enum(d, it, "effect", effect_names + 1, effect_values + 1, 3,
                   "NoSchedule, PreferNoSchedule or NoExecute", &effect) < 0 ||
            d_string(d, it, "timeAdded", &t->time_added) < 0)
                return -1;
        if (effect < 0) {
                size_t old = path_field(d, "effect");
                fail(d, "required field is missing (want NoSchedule, PreferNoSchedule or "
                        "NoExecute)");
                path_pop(d, old);
                return -1;
        }
        t->effect = (enum k8s_taint_effect)effect;
        return 0;
}

/* ---- containers ---- */

static int env_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_env_var *e = out;
        const cJSON *vf, *ref;
        if (d_string(d, it, "name", &e->name) < 0 || d_string(d, it, "value", &e->value) < 0 ||
            d_object(d, it, "valueFrom", &vf) < 0)
                return -1;
        if (vf == NULL)
                return 0;
        size_t old = path_field(d, "valueFrom");
        if (d_object(d, vf, "fieldRef", &ref) < 0)
                return -1;
        if (ref != NULL) {
                size_t o2 = path_field(d, "fieldRef");
                if (d_string(d, ref, "fieldPath", &e->field_ref_path) < 0 ||
                    d_string(d, ref, "apiVersion", &e->field_ref_api_version) < 0)
                        return -1;
                path_pop(d, o2);
        }
        if (d_object(d, vf, "resourceFieldRef", &ref) < 0)
                return -1;
        if (ref != NULL) {
                size_t o2 = path_field(d, "resourceFieldRef");
                const cJSON *dv = field(ref, "divisor");
                if (d_string(d, ref, "resource", &e->resource_field_ref) < 0 ||
                    d_string(d, ref, "containerName", &e->resource_field_container) < 0)
                        return -1;
                if (dv != NULL) {
                        size_t o3 = path_field(d, "divisor");
                        if (quantity_value(d, dv, &e->resource_field_divisor) < 0)
                                return -1;
                        e->has_divisor = true;
                        path_pop(d, o3);
                }
                path_pop(d, o2);
        }
        static const char *const key_refs[] = {"configMapKeyRef", "secretKeyRef"};
        for (int k = 0; k < 2; k++) {
                if (d_object(d, vf, key_refs[k], &ref) < 0)
                        return -1;
                if (ref == NULL)
                        continue;
                size_t o2 = path_field(d, key_refs[k]);
                e->key_ref = k == 0 ? K8S_KEY_REF_CONFIG_MAP : K8S_KEY_REF_SECRET;
                if (d_string(d, ref, "name", &e->key_ref_name) < 0 ||
                    d_string(d, ref, "key", &e->key_ref_key) < 0 ||
                    d_bool(d, ref, "optional", NULL, &e->key_ref_optional) < 0)
                        return -1;
                if (e->key_ref_key == NULL)
                        return fail(d, "key: required field is missing");
                path_pop(d, o2);
        }
        if (field(vf, "fileKeyRef") != NULL)
                e->has_value_from_other = true;
        path_pop(d, old);
        return 0;
}

static int env_from_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_env_from *e = out;
        const cJSON *cm, *sec;
        if (d_string(d, it, "prefix", &e->prefix) < 0 || d_object(d, it, "configMapRef", &cm) < 0 ||
            d_object(d, it, "secretRef", &sec) < 0)
                return -1;
        /* Both at once is refused by the apiserver's validation; the API's
         * round-trip fixtures carry both: configMapRef is taken then. */
        if (cm == NULL && sec == NULL)
                return fail(d, "one of configMapRef and secretRef is required");
        e->secret = cm == NULL;
        size_t old = path_field(d, e->secret ? "secretRef" : "configMapRef");
        const cJSON *ref = e->secret ? sec : cm;
        if (d_string(d, ref, "name", &e->name) < 0 ||
            d_bool(d, ref, "optional", NULL, &e->optional) < 0)
                return -1;
        path_pop(d, old);
        return 0;
}

static const char *const proto_names[] = {"TCP", "UDP", "SCTP"};
static const int proto_values[] = {K8S_PROTO_TCP, K8S_PROTO_UDP, K8S_PROTO_SCTP};

static int port_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_container_port *p = out;
        int proto = K8S_PROTO_TCP;
        if (d_string(d, it, "name", &p->name) < 0 ||
            d_int32(d, it, "containerPort", NULL, &p->container_port) < 0 ||
            d_int32(d, it, "hostPort", NULL, &p->host_port) < 0 ||
            d_enum(d, it, "protocol", proto_names, proto_values, 3, "TCP, UDP or SCTP", &proto) <
                0 ||
            d_string(d, it, "hostIP", &p->host_ip) < 0)
                return -1;
        p->protocol = (enum k8s_protocol)proto;
        return 0;
}

static int header_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_http_header *h = out;
        return d_string(d, it, "name", &h->name) < 0 || d_string(d, it, "value", &h->value) < 0 ? -1
                                                                                                : 0;
}

/* IntOrString port: a number is the port, a string a named port. */
static int d_port(struct dec *d, const cJSON *obj, struct k8s_handler *h)
{
        const cJSON *v = field(obj, "port");
        if (v == NULL)
                return 0;
        size_t old = path_field(d, "port");
        int r;
        if (cJSON_IsString(v)) {
                r = str_value(d, v, &h->port_name);
        } else if (cJSON_IsNumber(v)) {
                int64_t x;
                r = int_value(d, v, INT32_MIN, INT32_MAX, &x);
                h->port = (int32_t)x;
        } else {
                r = wrong_type(d, v, "a port number or name");
        }
        if (r == 0)
                path_pop(d, old);
        return r;
}

/* The API allows one handler; when several are given (the API server would
 * refuse the object) the first of exec, httpGet, tcpSocket, grpc, sleep is
 * taken and the others are ignored. */
static int decode_handler(struct dec *d, const cJSON *obj, struct k8s_handler *h)
{
        const cJSON *v;
        size_t old;
        if (d_object(d, obj, "exec", &v) < 0)
                return -1;
        if (v != NULL) {
                h->kind = K8S_HANDLER_EXEC;
                old = path_field(d, "exec");
                if (d_strings(d, v, "command", &h->command, &h->n_command) < 0)
                        return -1;
                path_pop(d, old);
        }
        if (h->kind != K8S_HANDLER_NONE)
                return 0;
        if (d_object(d, obj, "httpGet", &v) < 0)
                return -1;
        if (v != NULL) {
                h->kind = K8S_HANDLER_HTTP_GET;
                old = path_field(d, "httpGet");
                if (d_string(d, v, "path", &h->path) < 0 || d_port(d, v, h) < 0 ||
                    d_string(d, v, "host", &h->host) < 0 ||
                    d_string(d, v, "scheme", &h->scheme) < 0 ||
                    d_items(d, v, "httpHeaders", K8S_MAX_ARRAY_ITEMS, sizeof(*h->headers), true,
                            header_item, (void **)&h->headers, &h->n_headers) < 0)
                        return -1;
                if (h->scheme == NULL && (h->scheme = cb_arena_strdup(d->a, "HTTP")) == NULL)
                        return oom(d);
                path_pop(d, old);
        }
        if (h->kind != K8S_HANDLER_NONE)
                return 0;
        if (d_object(d, obj, "tcpSocket", &v) < 0)
                return -1;
        if (v != NULL) {
                h->kind = K8S_HANDLER_TCP_SOCKET;
                old = path_field(d, "tcpSocket");
                if (d_port(d, v, h) < 0 || d_string(d, v, "host", &h->host) < 0)
                        return -1;
                path_pop(d, old);
        }
        if (h->kind != K8S_HANDLER_NONE)
                return 0;
        if (d_object(d, obj, "grpc", &v) < 0)
                return -1;
        if (v != NULL) {
                h->kind = K8S_HANDLER_GRPC;
                old = path_field(d, "grpc");
                /* the gRPC service name goes to path */
                if (d_port(d, v, h) < 0 || d_string(d, v, "service", &h->path) < 0)
                        return -1;
                path_pop(d, old);
        }
        if (h->kind != K8S_HANDLER_NONE)
                return 0;
        if (d_object(d, obj, "sleep", &v) < 0)
                return -1;
        if (v != NULL) {
                h->kind = K8S_HANDLER_SLEEP;
                old = path_field(d, "sleep");
                if (d_int64(d, v, "seconds", NULL, &h->sleep_seconds) < 0)
                        return -1;
                path_pop(d, old);
        }
        return 0;
}

static int decode_probe(struct dec *d, const cJSON *obj, const char *key, struct k8s_probe *p)
{
        const cJSON *v;
        if (d_object(d, obj, key, &v) < 0)
                return -1;
        if (v == NULL)
                return 0;
        size_t old = path_field(d, key);
        p->present = true;
        p->timeout_seconds = 1;
        p->period_seconds = 10;
        p->success_threshold = 1;
        p->failure_threshold = 3;
        if (decode_handler(d, v, &p->handler) < 0 ||
            d_int32(d, v, "initialDelaySeconds", NULL, &p->initial_delay_seconds) < 0 ||
            d_int32(d, v, "timeoutSeconds", NULL, &p->timeout_seconds) < 0 ||
            d_int32(d, v, "periodSeconds", NULL, &p->period_seconds) < 0 ||
            d_int32(d, v, "successThreshold", NULL, &p->success_threshold) < 0 ||
            d_int32(d, v, "failureThreshold", NULL, &p->failure_threshold) < 0 ||
            d_int64(d, v, "terminationGracePeriodSeconds", &p->has_termination_grace_period,
                    &p->termination_grace_period_seconds) < 0)
                return -1;
        path_pop(d, old);
        return 0;
}

static int decode_seccomp(struct dec *d, const cJSON *obj, struct k8s_seccomp_profile *s)
{
        static const char *const names[] = {"RuntimeDefault", "Unconfined", "Localhost"};
        static const int values[] = {K8S_SECCOMP_RUNTIME_DEFAULT, K8S_SECCOMP_UNCONFINED,
                                     K8S_SECCOMP_LOCALHOST};
        const cJSON *v;
        int type = K8S_SECCOMP_UNSET;
        if (d_object(d, obj, "seccompProfile", &v) < 0)
                return -1;
        if (v == NULL)
                return 0;
        size_t old = path_field(d, "seccompProfile");
        if (d_enum(d, v, "type", names, values, 3, "RuntimeDefault, Unconfined or Localhost",
                   &type) < 0 ||
            d_string(d, v, "localhostProfile", &s->localhost_profile) < 0)
                return -1;
        s->type = (enum k8s_seccomp_type)type;
        path_pop(d, old);
        return 0;
}

static int decode_container_sc(struct dec *d, const cJSON *obj, struct k8s_security_context *sc)
{
        const cJSON *v, *caps;
        if (d_object(d, obj, "securityContext", &v) < 0)
                return -1;
        if (v == NULL)
                return 0;
        size_t old = path_field(d, "securityContext");
        sc->present = true;
        if (d_int64(d, v, "runAsUser", &sc->has_run_as_user, &sc->run_as_user) < 0 ||
            d_int64(d, v, "runAsGroup", &sc->has_run_as_group, &sc->run_as_group) < 0 ||
            d_bool(d, v, "runAsNonRoot", &sc->has_run_as_non_root, &sc->run_as_non_root) < 0 ||
            d_bool(d, v, "privileged", &sc->has_privileged, &sc->privileged) < 0 ||
            d_bool(d, v, "allowPrivilegeEscalation", &sc->has_allow_privilege_escalation,
                   &sc->allow_privilege_escalation) < 0 ||
            d_bool(d, v, "readOnlyRootFilesystem", &sc->has_read_only_root_filesystem,
                   &sc->read_only_root_filesystem) < 0 ||
            d_object(d, v, "capabilities", &caps) < 0 || decode_seccomp(d, v, &sc->seccomp) < 0)
                return -1;
        if (caps != NULL) {
                size_t o2 = path_field(d, "capabilities");
                if (d_strings(d, caps, "add", &sc->caps.add, &sc->caps.n_add) < 0 ||
                    d_strings(d, caps, "drop", &sc->caps.drop, &sc->caps.n_drop) < 0)
                        return -1;
                path_pop(d, o2);
        }
        path_pop(d, old);
        return 0;
}

static int mount_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_volume_mount *m = out;
        return d_string(d, it, "name", &m->name) < 0 ||
                       d_string(d, it, "mountPath", &m->mount_path) < 0 ||
                       d_string(d, it, "subPath", &m->sub_path) < 0 ||
                       d_string(d, it, "subPathExpr", &m->sub_path_expr) < 0 ||
                       d_bool(d, it, "readOnly", NULL, &m->read_only) < 0
                   ? -1
                   : 0;
}

static const char *const restart_names[] = {"Always", "OnFailure", "Never"};
static const int restart_values[] = {K8S_RESTART_ALWAYS, K8S_RESTART_ON_FAILURE, K8S_RESTART_NEVER};
#define RESTART_WANT "Always, OnFailure or Never"

static int container_item(struct dec *d, const cJSON *it, void *out)
{
        static const char *const pull_names[] = {"Always", "IfNotPresent", "Never"};
        static const int pull_values[] = {K8S_PULL_ALWAYS, K8S_PULL_IF_NOT_PRESENT, K8S_PULL_NEVER};
        struct k8s_container *c = out;
        const cJSON *res, *lc, *h;
        int pull = K8S_PULL_DEFAULT, restart = -1;
        char *tmp = NULL;

        if (d_string(d, it, "name", &c->name) < 0 || d_string(d, it, "image", &c->image) < 0 ||
            d_enum(d, it, "imagePullPolicy", pull_names, pull_values, 3,
                   "Always, IfNotPresent or Never", &pull) < 0 ||
            d_strings(d, it, "command", &c->command, &c->n_command) < 0 ||
            d_strings(d, it, "args", &c->args, &c->n_args) < 0 ||
            d_string(d, it, "workingDir", &c->working_dir) < 0 ||
            d_items(d, it, "env", K8S_MAX_ARRAY_ITEMS, sizeof(*c->env), true, env_item,
                    (void **)&c->env, &c->n_env) < 0 ||
            d_items(d, it, "envFrom", K8S_MAX_ARRAY_ITEMS, sizeof(*c->env_from), true,
                    env_from_item, (void **)&c->env_from, &c->n_env_from) < 0 ||
            d_items(d, it, "ports", K8S_MAX_ARRAY_ITEMS, sizeof(*c->ports), true, port_item,
                    (void **)&c->ports, &c->n_ports) < 0 ||
            d_object(d, it, "resources", &res) < 0)
                return -1;
        c->image_pull_policy = (enum k8s_pull_policy)pull;
        if (res != NULL) {
                size_t old = path_field(d, "resources");
                if (d_resource_list(d, res, "requests", &c->resources.requests) < 0 ||
                    d_resource_list(d, res, "limits", &c->resources.limits) < 0)
                        return -1;
                path_pop(d, old);
        }
        if (decode_container_sc(d, it, &c->security_context) < 0 ||
            decode_probe(d, it, "livenessProbe", &c->liveness_probe) < 0 ||
            decode_probe(d, it, "readinessProbe", &c->readiness_probe) < 0 ||
            decode_probe(d, it, "startupProbe", &c->startup_probe) < 0 ||
            d_object(d, it, "lifecycle", &lc) < 0)
                return -1;
        if (lc != NULL) {
                size_t old = path_field(d, "lifecycle");
                if (d_object(d, lc, "preStop", &h) < 0)
                        return -1;
                if (h != NULL) {
                        size_t o2 = path_field(d, "preStop");
                        if (decode_handler(d, h, &c->pre_stop) < 0)
                                return -1;
                        path_pop(d, o2);
                }
                if (d_object(d, lc, "postStart", &h) < 0)
                        return -1;
                if (h != NULL) {
                        size_t o2 = path_field(d, "postStart");
                        if (decode_handler(d, h, &c->post_start) < 0)
                                return -1;
                        path_pop(d, o2);
                }
                path_pop(d, old);
        }
        if (d_items(d, it, "volumeMounts", K8S_MAX_ARRAY_ITEMS, sizeof(*c->volume_mounts), true,
                    mount_item, (void **)&c->volume_mounts, &c->n_volume_mounts) < 0 ||
            d_bool(d, it, "stdin", NULL, &c->stdin_) < 0 ||
            d_bool(d, it, "stdinOnce", NULL, &c->stdin_once) < 0 ||
            d_bool(d, it, "tty", NULL, &c->tty) < 0 ||
            d_string(d, it, "terminationMessagePath", &c->termination_message_path) < 0 ||
            d_string(d, it, "terminationMessagePolicy", &tmp) < 0 ||
            d_enum(d, it, "restartPolicy", restart_names, restart_values, 3, RESTART_WANT,
                   &restart) < 0)
                return -1;
        /* The apiserver allows only File (its default) and FallbackToLogsOnError;
         * anything else reads as File. */
        c->termination_message_fallback = tmp != NULL && strcmp(tmp, "FallbackToLogsOnError") == 0;
        if (restart >= 0) {
                c->has_restart_policy = true;
                c->restart_policy = (enum k8s_restart_policy)restart;
        }
        return 0;
}

/* ---- volumes ---- */

/* A file mode: 0..0777 (the API's validation). */
static int d_mode(struct dec *d, const cJSON *obj, const char *key, bool *has, int32_t *out)
{
        int32_t m = *out;
        bool h = false;
        if (d_int32(d, obj, key, &h, &m) < 0)
                return -1;
        if (!h)
                return 0;
        if (m < 0 || m > 0777) {
                size_t old = path_field(d, key);
                fail(d, "must be a number between 0 and 0777 (octal), both inclusive");
                path_pop(d, old);
                return -1;
        }
        *out = m;
        if (has != NULL)
                *has = true;
        return 0;
}

/* A relative path inside a volume: not absolute, no ".." element, not
 * empty (the API's validateLocalDescendingPath). */
static int check_rel_path(struct dec *d, const char *key, const char *path)
{
        bool bad = path == NULL || path[0] == '\0' || path[0] == '/';
        for (const char *p = path; !bad && p && *p;) {
                const char *e = strchr(p, '/');
                size_t n = e ? (size_t)(e - p) : strlen(p);
                bad = n == 2 && p[0] == '.' && p[1] == '.';
                p = e ? e + 1 : p + n;
        }
        if (!bad)
                return 0;
        size_t old = path_field(d, key);
        if (path == NULL || path[0] == '\0')
                fail(d, "required field is missing");
        else
                fail(d, "\"%s\": must be a relative path without '..'", path);
        path_pop(d, old);
        return -1;
}

static int key_to_path_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_key_to_path *k = out;
        if (d_string(d, it, "key", &k->key) < 0 || d_string(d, it, "path", &k->path) < 0 ||
            d_mode(d, it, "mode", &k->has_mode, &k->mode) < 0)
                return -1;
        if (k->key == NULL)
                return fail(d, "key: required field is missing");
        return check_rel_path(d, "path", k->path);
}

static int keyed_source(struct dec *d, const cJSON *src, const char *name_key,
                        struct k8s_keyed_source *ks)
{
        return d_string(d, src, name_key, &ks->name) < 0 ||
                       d_bool(d, src, "optional", NULL, &ks->optional) < 0 ||
                       d_items(d, src, "items", K8S_MAX_ARRAY_ITEMS, sizeof(*ks->items), true,
                               key_to_path_item, (void **)&ks->items, &ks->n_items) < 0
                   ? -1
                   : 0;
}

static int downward_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_downward_item *w = out;
        const cJSON *ref;
        if (d_string(d, it, "path", &w->path) < 0 ||
            d_mode(d, it, "mode", &w->has_mode, &w->mode) < 0 ||
            check_rel_path(d, "path", w->path) < 0 || d_object(d, it, "fieldRef", &ref) < 0)
                return -1;
        if (ref != NULL) {
                size_t old = path_field(d, "fieldRef");
                if (d_string(d, ref, "fieldPath", &w->field_path) < 0)
                        return -1;
                path_pop(d, old);
        }
        if (d_object(d, it, "resourceFieldRef", &ref) < 0)
                return -1;
        if (ref != NULL) {
                size_t old = path_field(d, "resourceFieldRef");
                const cJSON *dv = field(ref, "divisor");
                if (d_string(d, ref, "resource", &w->resource) < 0 ||
                    d_string(d, ref, "containerName", &w->container_name) < 0)
                        return -1;
                if (dv != NULL) {
                        size_t o2 = path_field(d, "divisor");
                        if (quantity_value(d, dv, &w->divisor) < 0)
                                return -1;
                        w->has_divisor = true;
                        path_pop(d, o2);
                }
                path_pop(d, old);
        }
        if ((w->field_path == NULL) == (w->resource == NULL))
                return fail(d, "exactly one of fieldRef and resourceFieldRef is required");
        return 0;
}

static int projection_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_projection *p = out;
        const cJSON *src;
        static const char *const kinds[] = {"serviceAccountToken", "configMap", "secret",
                                            "downwardAPI", "clusterTrustBundle"};
        static const enum k8s_projection_kind values[] = {
            K8S_PROJ_SERVICE_ACCOUNT_TOKEN, K8S_PROJ_CONFIG_MAP, K8S_PROJ_SECRET,
            K8S_PROJ_DOWNWARD_API, K8S_PROJ_CLUSTER_TRUST_BUNDLE};
        for (int k = 0; k < 5; k++) {
                if (d_object(d, it, kinds[k], &src) < 0)
                        return -1;
                if (src == NULL)
                        continue;
                size_t old = path_field(d, kinds[k]);
                p->kind = values[k];
                int r = 0;
                if (k == 0) {
                        p->expiration_seconds = 3600;
                        r = d_string(d, src, "audience", &p->audience) < 0 ||
                                    d_int64(d, src, "expirationSeconds", NULL,
                                            &p->expiration_seconds) < 0 ||
                                    d_string(d, src, "path", &p->path) < 0 ||
                                    check_rel_path(d, "path", p->path) < 0
                                ? -1
                                : 0;
                        if (r == 0 && p->expiration_seconds < 600)
                                r = fail(d, "expirationSeconds: may not specify a duration less "
                                            "than 10 minutes");
                        else if (r == 0 && p->expiration_seconds > (int64_t)1 << 32)
                                r = fail(d, "expirationSeconds: may not specify a duration "
                                            "larger than 2^32 seconds");
                } else if (k == 1 || k == 2) {
                        r = keyed_source(d, src, "name", &p->keyed);
                } else if (k == 3) {
                        r = d_items(d, src, "items", K8S_MAX_ARRAY_ITEMS, sizeof(*p->dw_items),
                                    true, downward_item, (void **)&p->dw_items, &p->n_dw_items);
                } else {
                        r = d_string(d, src, "path", &p->path);
                }
                if (r < 0)
                        return -1;
                path_pop(d, old);
                return 0;
        }
        for (const cJSON *m = it->child; m != NULL; m = m->next)
                if (m->string != NULL && !cJSON_IsNull(m)) {
                        if ((p->other_kind = cb_arena_strdup(d->a, m->string)) == NULL)
                                return oom(d);
                        break;
                }
        return 0;
}

static int dns_option_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_dns_option *o = out;
        return d_string(d, it, "name", &o->name) < 0 || d_string(d, it, "value", &o->value) < 0 ? -1
                                                                                                : 0;
}

static int pull_secret_item(struct dec *d, const cJSON *it, void *out)
{
        return d_string(d, it, "name", (char **)out);
}

static int decode_dns_config(struct dec *d, const cJSON *spec, struct k8s_pod_spec *s)
{
        const cJSON *dc;
        if (d_object(d, spec, "dnsConfig", &dc) < 0)
                return -1;
        if (dc == NULL)
                return 0;
        s->has_dns_config = true;
        size_t old = path_field(d, "dnsConfig");
        struct k8s_pod_dns_config *c = &s->dns_config;
        if (d_strings(d, dc, "nameservers", &c->nameservers, &c->n_nameservers) < 0 ||
            d_strings(d, dc, "searches", &c->searches, &c->n_searches) < 0 ||
            d_items(d, dc, "options", K8S_MAX_ARRAY_ITEMS, sizeof(*c->options), true,
                    dns_option_item, (void **)&c->options, &c->n_options) < 0)
                return -1;
        path_pop(d, old);
        return 0;
}

static int volume_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_volume *v = out;
        const cJSON *src;
        if (d_string(d, it, "name", &v->name) < 0 || d_object(d, it, "emptyDir", &src) < 0)
                return -1;
        if (src != NULL) {
                size_t old = path_field(d, "emptyDir");
                v->kind = K8S_VOLUME_EMPTY_DIR;
                const cJSON *sl = field(src, "sizeLimit");
                if (d_string(d, src, "medium", &v->empty_dir_medium) < 0)
                        return -1;
                if (sl != NULL) {
                        size_t o2 = path_field(d, "sizeLimit");
                        if (quantity_value(d, sl, &v->size_limit) < 0)
                                return -1;
                        v->has_size_limit = true;
                        path_pop(d, o2);
                }
                path_pop(d, old);
                return 0;
        }
        if (d_object(d, it, "hostPath", &src) < 0)
                return -1;
        if (src != NULL) {
                size_t old = path_field(d, "hostPath");
                v->kind = K8S_VOLUME_HOST_PATH;
                if (d_string(d, src, "path", &v->host_path) < 0 ||
                    d_string(d, src, "type", &v->host_path_type) < 0)
                        return -1;
                path_pop(d, old);
                return 0;
        }
        v->default_mode = 0644;
        static const char *const keyed[] = {"configMap", "secret", "downwardAPI", "projected"};
        static const enum k8s_volume_kind keyed_kinds[] = {K8S_VOLUME_CONFIG_MAP, K8S_VOLUME_SECRET,
                                                           K8S_VOLUME_DOWNWARD_API,
                                                           K8S_VOLUME_PROJECTED};
        for (int k = 0; k < 4; k++) {
                if (d_object(d, it, keyed[k], &src) < 0)
                        return -1;
                if (src == NULL)
                        continue;
                size_t old = path_field(d, keyed[k]);
                v->kind = keyed_kinds[k];
                if (d_mode(d, src, "defaultMode", NULL, &v->default_mode) < 0)
                        return -1;
                int r = 0;
                if (k == 0 || k == 1)
                        r = keyed_source(d, src, k == 1 ? "secretName" : "name", &v->keyed);
                else if (k == 2)
                        r = d_items(d, src, "items", K8S_MAX_ARRAY_ITEMS, sizeof(*v->dw_items),
                                    true, downward_item, (void **)&v->dw_items, &v->n_dw_items);
                else
                        r = d_items(d, src, "sources", K8S_MAX_ARRAY_ITEMS, sizeof(*v->projections),
                                    true, projection_item, (void **)&v->projections,
                                    &v->n_projections);
                if (r < 0)
                        return -1;
                path_pop(d, old);
                return 0;
        }
        for (const cJSON *m = it->child; m != NULL; m = m->next) {
                if (m->string != NULL && strcmp(m->string, "name") != 0 && !cJSON_IsNull(m)) {
                        if ((v->other_kind = cb_arena_strdup(d->a, m->string)) == NULL)
                                return oom(d);
                        break;
                }
        }
        return 0;
}

/* ---- pod ---- */

static int readiness_gate_item(struct dec *d, const cJSON *it, void *out)
{
        return d_string(d, it, "conditionType", (char **)out);
}

static int decode_pod_sc(struct dec *d, const cJSON *spec, struct k8s_pod_security_context *sc)
{
        const cJSON *v, *arr;
        size_t n;
        if (d_object(d, spec, "securityContext", &v) < 0)
                return -1;
        if (v == NULL)
                return 0;
        size_t old = path_field(d, "securityContext");
        if (d_int64(d, v, "runAsUser", &sc->has_run_as_user, &sc->run_as_user) < 0 ||
            d_int64(d, v, "runAsGroup", &sc->has_run_as_group, &sc->run_as_group) < 0 ||
            d_bool(d, v, "runAsNonRoot", &sc->has_run_as_non_root, &sc->run_as_non_root) < 0 ||
            d_int64(d, v, "fsGroup", &sc->has_fs_group, &sc->fs_group) < 0 ||
            decode_seccomp(d, v, &sc->seccomp) < 0 ||
            d_array(d, v, "supplementalGroups", K8S_MAX_ARRAY_ITEMS, &arr, &n) < 0)
                return -1;
        if (n > 0) {
                if ((sc->supplemental_groups = alloc_array(d, n, sizeof(int64_t))) == NULL)
                        return -1;
                size_t o2 = path_field(d, "supplementalGroups");
                for (const cJSON *it = arr->child; it != NULL; it = it->next) {
                        size_t o3 = path_push(d, "[%zu]", sc->n_supplemental_groups);
                        if (int_value(d, it, INT64_MIN, INT64_MAX,
                                      &sc->supplemental_groups[sc->n_supplemental_groups]) < 0)
                                return -1;
                        sc->n_supplemental_groups++;
                        path_pop(d, o3);
                }
                path_pop(d, o2);
        }
        path_pop(d, old);
        return 0;
}

static int decode_pod_spec(struct dec *d, const cJSON *spec, struct k8s_pod_spec *s)
{
        const cJSON *os;
        int restart = K8S_RESTART_ALWAYS;
        s->termination_grace_period_seconds = 30;
        if (d_string(d, spec, "nodeName", &s->node_name) < 0 ||
            d_map(d, spec, "nodeSelector", &s->node_selector) < 0 ||
            decode_affinity(d, spec, &s->node_affinity) < 0 ||
            d_items(d, spec, "tolerations", K8S_MAX_ARRAY_ITEMS, sizeof(*s->tolerations), true,
                    toleration_item, (void **)&s->tolerations, &s->n_tolerations) < 0 ||
            d_items(d, spec, "containers", K8S_MAX_CONTAINERS, sizeof(*s->containers), true,
                    container_item, (void **)&s->containers, &s->n_containers) < 0 ||
            d_items(d, spec, "initContainers", K8S_MAX_CONTAINERS, sizeof(*s->init_containers),
                    true, container_item, (void **)&s->init_containers,
                    &s->n_init_containers) < 0 ||
            d_enum(d, spec, "restartPolicy", restart_names, restart_values, 3, RESTART_WANT,
                   &restart) < 0 ||
            d_int64(d, spec, "terminationGracePeriodSeconds", &s->has_termination_grace_period,
                    &s->termination_grace_period_seconds) < 0 ||
            d_int64(d, spec, "activeDeadlineSeconds", &s->has_active_deadline,
                    &s->active_deadline_seconds) < 0 ||
            d_string(d, spec, "hostname", &s->hostname) < 0 ||
            d_string(d, spec, "subdomain", &s->subdomain) < 0 ||
            d_bool(d, spec, "hostNetwork", NULL, &s->host_network) < 0 ||
            d_bool(d, spec, "hostPID", NULL, &s->host_pid) < 0 ||
            d_bool(d, spec, "hostIPC", NULL, &s->host_ipc) < 0 ||
            d_bool(d, spec, "shareProcessNamespace", NULL, &s->share_process_namespace) < 0 ||
            d_string(d, spec, "dnsPolicy", &s->dns_policy) < 0 ||
            decode_dns_config(d, spec, s) < 0 ||
            d_bool(d, spec, "enableServiceLinks", &s->has_enable_service_links,
                   &s->enable_service_links) < 0 ||
            d_items(d, spec, "imagePullSecrets", K8S_MAX_ARRAY_ITEMS,
                    sizeof(*s->image_pull_secrets), true, pull_secret_item,
                    (void **)&s->image_pull_secrets, &s->n_image_pull_secrets) < 0 ||
            d_string(d, spec, "serviceAccountName", &s->service_account_name) < 0 ||
            decode_pod_sc(d, spec, &s->security_context) < 0 ||
            d_items(d, spec, "volumes", K8S_MAX_ARRAY_ITEMS, sizeof(*s->volumes), true, volume_item,
                    (void **)&s->volumes, &s->n_volumes) < 0 ||
            d_items(d, spec, "readinessGates", K8S_MAX_ARRAY_ITEMS, sizeof(*s->readiness_gates),
                    true, readiness_gate_item, (void **)&s->readiness_gates,
                    &s->n_readiness_gates) < 0 ||
            d_int32(d, spec, "priority", &s->has_priority, &s->priority) < 0 ||
            d_string(d, spec, "priorityClassName", &s->priority_class_name) < 0 ||
            d_object(d, spec, "os", &os) < 0 ||
            d_resource_list(d, spec, "overhead", &s->overhead) < 0)
                return -1;
        s->restart_policy = (enum k8s_restart_policy)restart;
        if ((s->service_account_name == NULL || s->service_account_name[0] == '\0') &&
            d_string(d, spec, "serviceAccount", &s->service_account_name) < 0)
                return -1;
        if (os != NULL) {
                size_t old = path_field(d, "os");
                if (d_string(d, os, "name", &s->os_name) < 0)
                        return -1;
                path_pop(d, old);
        }
        return 0;
}

static int condition_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_condition *c = out;
        return d_string(d, it, "type", &c->type) < 0 || d_string(d, it, "status", &c->status) < 0 ||
                       d_string(d, it, "reason", &c->reason) < 0 ||
                       d_string(d, it, "message", &c->message) < 0 ||
                       d_string(d, it, "lastTransitionTime", &c->last_transition_time) < 0 ||
                       d_string(d, it, "lastHeartbeatTime", &c->last_heartbeat_time) < 0 ||
                       d_string(d, it, "lastProbeTime", &c->last_probe_time) < 0
                   ? -1
                   : 0;
}

static int decode_state(struct dec *d, const cJSON *obj, const char *key,
                        struct k8s_container_state *st)
{
        const cJSON *v, *s;
        if (d_object(d, obj, key, &v) < 0)
                return -1;
        if (v == NULL)
                return 0;
        size_t old = path_field(d, key);
        if (d_object(d, v, "waiting", &s) < 0)
                return -1;
        if (s != NULL) {
                size_t o2 = path_field(d, "waiting");
                st->waiting = true;
                if (d_string(d, s, "reason", &st->reason) < 0 ||
                    d_string(d, s, "message", &st->message) < 0)
                        return -1;
                path_pop(d, o2);
        } else {
                if (d_object(d, v, "running", &s) < 0)
                        return -1;
                if (s != NULL) {
                        size_t o2 = path_field(d, "running");
                        st->running = true;
                        if (d_string(d, s, "startedAt", &st->started_at) < 0)
                                return -1;
                        path_pop(d, o2);
                } else {
                        if (d_object(d, v, "terminated", &s) < 0)
                                return -1;
                        if (s != NULL) {
                                size_t o2 = path_field(d, "terminated");
                                st->terminated = true;
                                if (d_int32(d, s, "exitCode", NULL, &st->exit_code) < 0 ||
                                    d_int32(d, s, "signal", NULL, &st->signal) < 0 ||
                                    d_string(d, s, "reason", &st->reason) < 0 ||
                                    d_string(d, s, "message", &st->message) < 0 ||
                                    d_string(d, s, "startedAt", &st->started_at) < 0 ||
                                    d_string(d, s, "finishedAt", &st->finished_at) < 0 ||
                                    d_string(d, s, "containerID", &st->container_id) < 0)
                                        return -1;
                                path_pop(d, o2);
                        }
                }
        }
        path_pop(d, old);
        return 0;
}

static int container_status_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_container_status *cs = out;
        return d_string(d, it, "name", &cs->name) < 0 || d_string(d, it, "image", &cs->image) < 0 ||
                       d_string(d, it, "imageID", &cs->image_id) < 0 ||
                       d_string(d, it, "containerID", &cs->container_id) < 0 ||
                       d_int32(d, it, "restartCount", NULL, &cs->restart_count) < 0 ||
                       d_bool(d, it, "ready", NULL, &cs->ready) < 0 ||
                       d_bool(d, it, "started", &cs->has_started, &cs->started) < 0 ||
                       decode_state(d, it, "state", &cs->state) < 0 ||
                       decode_state(d, it, "lastState", &cs->last_state) < 0
                   ? -1
                   : 0;
}

static int pod_ip_item(struct dec *d, const cJSON *it, void *out)
{
        return d_string(d, it, "ip", (char **)out);
}

static int decode_pod_status(struct dec *d, const cJSON *st, struct k8s_pod_status *s)
{
        return d_string(d, st, "phase", &s->phase) < 0 ||
                       d_string(d, st, "reason", &s->reason) < 0 ||
                       d_string(d, st, "message", &s->message) < 0 ||
                       d_string(d, st, "hostIP", &s->host_ip) < 0 ||
                       d_string(d, st, "podIP", &s->pod_ip) < 0 ||
                       d_items(d, st, "podIPs", K8S_MAX_ARRAY_ITEMS, sizeof(*s->pod_ips), true,
                               pod_ip_item, (void **)&s->pod_ips, &s->n_pod_ips) < 0 ||
                       d_string(d, st, "startTime", &s->start_time) < 0 ||
                       d_string(d, st, "qosClass", &s->qos_class) < 0 ||
                       d_items(d, st, "conditions", K8S_MAX_ARRAY_ITEMS, sizeof(*s->conditions),
                               true, condition_item, (void **)&s->conditions,
                               &s->n_conditions) < 0 ||
                       d_items(d, st, "initContainerStatuses", K8S_MAX_CONTAINERS,
                               sizeof(*s->init_container_statuses), true, container_status_item,
                               (void **)&s->init_container_statuses,
                               &s->n_init_container_statuses) < 0 ||
                       d_items(d, st, "containerStatuses", K8S_MAX_CONTAINERS,
                               sizeof(*s->container_statuses), true, container_status_item,
                               (void **)&s->container_statuses, &s->n_container_statuses) < 0
                   ? -1
                   : 0;
}

static int not_object(struct dec *d, const cJSON *json, const char *what)
{
        if (cJSON_IsObject(json))
                return 0;
        char got[128];
        describe(json, got, sizeof(got));
        return fail(d, "expected %s object, got %s", what, got);
}

/* Decodes a pod; d->path holds the prefix ("" or "items[3]"). */
static int pod_decode(struct dec *d, const cJSON *json, struct k8s_pod *p)
{
        const cJSON *spec, *st;
        if (not_object(d, json, "a Pod") < 0 ||
            d_string(d, json, "apiVersion", &p->api_version) < 0 ||
            d_string(d, json, "kind", &p->kind) < 0 || decode_meta(d, json, &p->meta) < 0 ||
            d_object(d, json, "spec", &spec) < 0 || d_object(d, json, "status", &st) < 0)
                return -1;
        p->spec.termination_grace_period_seconds = 30;
        if (spec != NULL) {
                size_t old = path_field(d, "spec");
                if (decode_pod_spec(d, spec, &p->spec) < 0)
                        return -1;
                path_pop(d, old);
        }
        if (st != NULL) {
                size_t old = path_field(d, "status");
                if (decode_pod_status(d, st, &p->status) < 0)
                        return -1;
                path_pop(d, old);
        }
        return 0;
}

static uint64_t pod_decodes;

uint64_t k8s_pod_decodes(void)
{
        return __atomic_load_n(&pod_decodes, __ATOMIC_RELAXED);
}

static int pod_new(struct dec *d, const cJSON *json, struct k8s_pod **ret)
{
        struct cb_arena *a = cb_arena_new(DECODE_ARENA_LIMIT);
        struct k8s_pod *p;
        if (a == NULL)
                return fail(d, "out of memory");
        p = cb_arena_alloc(a, sizeof(*p));
        if (p == NULL) {
                cb_arena_free(a);
                return fail(d, "out of memory");
        }
        p->arena = a;
        p->refs_ = 1;
        struct cb_arena *saved = d->a;
        d->a = a;
        __atomic_add_fetch(&pod_decodes, 1, __ATOMIC_RELAXED);
        int r = pod_decode(d, json, p);
        d->a = saved;
        if (r < 0) {
                cb_arena_free(a);
                return -1;
        }
        *ret = p;
        return 0;
}

int k8s_pod_from_json(const cJSON *json, struct k8s_pod **ret, struct cb_error *err)
{
        struct dec d = {.err = err};
        *ret = NULL;
        return pod_new(&d, json, ret);
}

int k8s_pod_decode(cJSON *json, struct k8s_pod **ret, struct cb_error *err)
{
        if (k8s_pod_from_json(json, ret, err) < 0)
                return -1;
        (*ret)->json_ = json;
        return 0;
}

const cJSON *k8s_pod_json(const struct k8s_pod *p)
{
        return p != NULL ? p->json_ : NULL;
}

struct k8s_pod *k8s_pod_ref(const struct k8s_pod *p)
{
        struct k8s_pod *m = (struct k8s_pod *)p; /* only the count changes */
        if (m != NULL)
                __atomic_add_fetch(&m->refs_, 1, __ATOMIC_RELAXED);
        return m;
}

/* ---- node ---- */

static int address_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_node_address *a = out;
        return d_string(d, it, "type", &a->type) < 0 || d_string(d, it, "address", &a->address) < 0
                   ? -1
                   : 0;
}

static int node_decode(struct dec *d, const cJSON *json, struct k8s_node *n)
{
        const cJSON *spec, *st;
        if (not_object(d, json, "a Node") < 0 || decode_meta(d, json, &n->meta) < 0 ||
            d_object(d, json, "spec", &spec) < 0 || d_object(d, json, "status", &st) < 0)
                return -1;
        if (spec != NULL) {
                size_t old = path_field(d, "spec");
                if (d_bool(d, spec, "unschedulable", NULL, &n->unschedulable) < 0 ||
                    d_items(d, spec, "taints", K8S_MAX_ARRAY_ITEMS, sizeof(*n->taints), true,
                            taint_item, (void **)&n->taints, &n->n_taints) < 0 ||
                    d_string(d, spec, "podCIDR", &n->pod_cidr) < 0)
                        return -1;
                path_pop(d, old);
        }
        if (st != NULL) {
                size_t old = path_field(d, "status");
                if (d_resource_list(d, st, "capacity", &n->capacity) < 0 ||
                    d_resource_list(d, st, "allocatable", &n->allocatable) < 0 ||
                    d_items(d, st, "conditions", K8S_MAX_ARRAY_ITEMS, sizeof(*n->conditions), true,
                            condition_item, (void **)&n->conditions, &n->n_conditions) < 0 ||
                    d_items(d, st, "addresses", K8S_MAX_ARRAY_ITEMS, sizeof(*n->addresses), true,
                            address_item, (void **)&n->addresses, &n->n_addresses) < 0)
                        return -1;
                path_pop(d, old);
        }
        return 0;
}

static int node_new(struct dec *d, const cJSON *json, struct k8s_node **ret)
{
        struct cb_arena *a = cb_arena_new(DECODE_ARENA_LIMIT);
        struct k8s_node *n;
        if (a == NULL)
                return fail(d, "out of memory");
        n = cb_arena_alloc(a, sizeof(*n));
        if (n == NULL) {
                cb_arena_free(a);
                return fail(d, "out of memory");
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
        return d_string(d, it, "reason", &c->type) < 0 ||
                       d_string(d, it, "message", &c->message) < 0 ||
                       d_string(d, it, "field", &c->field) < 0
                   ? -1
                   : 0;
}

int k8s_status_from_json(const cJSON *json, struct k8s_status **ret, struct cb_error *err)
{
        struct dec d = {.err = err};
        const cJSON *details;
        struct k8s_status *s;
        *ret = NULL;
        if (not_object(&d, json, "a Status") < 0)
                return -1;
        if ((d.a = cb_arena_new(DECODE_ARENA_LIMIT)) == NULL ||
            (s = cb_arena_alloc(d.a, sizeof(*s))) == NULL) {
                cb_arena_free(d.a);
                return cb_error_set(err, 0, "out of memory");
        }
        s->arena = d.a;
        if (d_string(&d, json, "status", &s->status) < 0 ||
            d_string(&d, json, "message", &s->message) < 0 ||
            d_string(&d, json, "reason", &s->reason) < 0 ||
            d_int32(&d, json, "code", NULL, &s->code) < 0 ||
            d_object(&d, json, "details", &details) < 0)
                goto fail;
        if (details != NULL) {
                size_t old = path_field(&d, "details");
                if (d_string(&d, details, "name", &s->details_name) < 0 ||
                    d_string(&d, details, "kind", &s->details_kind) < 0 ||
                    d_items(&d, details, "causes", K8S_MAX_ARRAY_ITEMS, sizeof(*s->causes), true,
                            cause_item, (void **)&s->causes, &s->n_causes) < 0)
                        goto fail;
                path_pop(&d, old);
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

static int b64_value(char c)
{
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Standard base64 with padding, as encoding/json decodes []byte. */
static int b64_decode(struct dec *d, const char *in, char **out, size_t *out_len)
{
        size_t n = strlen(in);
        if (n % 4 != 0)
                return fail(d, "illegal base64 data at input byte %zu", n - n % 4);
        char *buf = cb_arena_alloc(d->a, n / 4 * 3 + 1);
        if (buf == NULL)
                return oom(d);
        size_t o = 0;
        for (size_t i = 0; i < n; i += 4) {
                int v[4];
                for (int k = 0; k < 4; k++) {
                        v[k] = b64_value(in[i + k]);
                        bool pad = in[i + k] == '=' && i + 4 == n && k >= 2 &&
                                   (k == 3 || in[i + 3] == '=');
                        if (v[k] < 0 && !pad)
                                return fail(d, "illegal base64 data at input byte %zu", i + k);
                }
                buf[o++] = (char)(v[0] << 2 | v[1] >> 4);
                if (v[2] >= 0)
                        buf[o++] = (char)((v[1] & 15) << 4 | v[2] >> 2);
                if (v[2] >= 0 && v[3] >= 0)
                        buf[o++] = (char)((v[2] & 3) << 6 | v[3]);
        }
        buf[o] = '\0';
        *out = buf;
        *out_len = o;
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
        if (d_object(d, obj, key, &m) < 0)
                return -1;
        if (m == NULL)
                return 0;
        size_t old = path_field(d, key);
        for (const cJSON *it = m->child; it != NULL; it = it->next) {
                const char *k = it->string ? it->string : "";
                size_t o2 = path_push(d, "[%s]", k);
                if (!k8s_valid_data_key(k))
                        return fail(d, "a valid config key must consist of alphanumeric "
                                       "characters, '-', '_' or '.'");
                for (size_t i = 0; i < kd->n; i++)
                        if (strcmp(kd->items[i].key, k) == 0)
                                return fail(d, "duplicate of key present in data");
                if (kd->n >= cap)
                        return fail(d, "more than %zu keys", cap);
                struct k8s_data_item *di = &kd->items[kd->n];
                char *v;
                if (str_value(d, it, &v) < 0)
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
                        return oom(d);
                kd->n++;
                path_pop(d, o2);
        }
        path_pop(d, old);
        return 0;
}

static int keyed_data_from_json(const cJSON *json, bool secret, struct k8s_keyed_data **ret,
                                struct cb_error *err)
{
        struct dec d = {.err = err};
        struct k8s_keyed_data *kd;
        *ret = NULL;
        if (not_object(&d, json, secret ? "a Secret" : "a ConfigMap") < 0)
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
                const cJSON *m = field(json, fields[f]);
                for (const cJSON *it = cJSON_IsObject(m) ? m->child : NULL; it; it = it->next)
                        cap++;
        }
        if (cap > K8S_MAX_ARRAY_ITEMS) {
                fail(&d, "data: %zu keys exceed the limit of %d", cap, K8S_MAX_ARRAY_ITEMS);
                goto fail;
        }
        if (cap > 0 && (kd->items = alloc_array(&d, cap, sizeof(*kd->items))) == NULL)
                goto fail;
        if (decode_meta(&d, json, &kd->meta) < 0 ||
            (secret && d_string(&d, json, "type", &kd->type) < 0) ||
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

/* ---- lists ---- */

static int list_meta(struct dec *d, const cJSON *json, char **rv, char **cont)
{
        const cJSON *md;
        if (d_object(d, json, "metadata", &md) < 0)
                return -1;
        if (md == NULL)
                return 0;
        size_t old = path_field(d, "metadata");
        if (d_string(d, md, "resourceVersion", rv) < 0 ||
            (cont != NULL && d_string(d, md, "continue", cont) < 0))
                return -1;
        path_pop(d, old);
        return 0;
}

int k8s_pod_list_from_json(const cJSON *json, struct k8s_pod_list **ret, struct cb_error *err)
{
        struct dec d = {.err = err};
        const cJSON *items;
        size_t n;
        struct k8s_pod_list *l;
        *ret = NULL;
        if (not_object(&d, json, "a PodList") < 0)
                return -1;
        if ((d.a = cb_arena_new(LIST_ARENA_LIMIT)) == NULL ||
            (l = cb_arena_alloc(d.a, sizeof(*l))) == NULL) {
                cb_arena_free(d.a);
                return cb_error_set(err, 0, "out of memory");
        }
        l->arena = d.a;
        if (list_meta(&d, json, &l->resource_version, &l->continue_) < 0 ||
            d_array(&d, json, "items", K8S_MAX_LIST_ITEMS, &items, &n) < 0)
                goto fail;
        if (n > 0 && (l->items = alloc_array(&d, n, sizeof(*l->items))) == NULL)
                goto fail;
        for (const cJSON *it = items != NULL ? items->child : NULL; it != NULL; it = it->next) {
                size_t old = path_push(&d, "items[%zu]", l->n);
                if (pod_new(&d, it, &l->items[l->n]) < 0)
                        goto fail;
                l->n++;
                path_pop(&d, old);
        }
        *ret = l;
        return 0;
fail:
        k8s_pod_list_free(l);
        return -1;
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
        if (not_object(&d, json, "a watch event") < 0)
                return -1;
        /* no arena: strings decoded here are only compared */
        d.a = cb_arena_new(4096 + K8S_MAX_STRING_BYTES);
        if (d.a == NULL)
                return cb_error_set(err, 0, "out of memory");
        int r = d_enum(&d, json, "type", names, values, 5,
                       "ADDED, MODIFIED, DELETED, BOOKMARK or ERROR", &type);
        cb_arena_free(d.a);
        if (r < 0)
                return -1;
        if (type < 0)
                return cb_error_set(err, 0,
                                    "type: required field is missing (want ADDED, MODIFIED, "
                                    "DELETED, BOOKMARK or ERROR)");
        const cJSON *obj = field(json, "object");
        if (obj == NULL)
                return cb_error_set(err, 0, "object: required field is missing");
        if (!cJSON_IsObject(obj)) {
                size_t old = path_field(&d, "object");
                wrong_type(&d, obj, "an object");
                path_pop(&d, old);
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
        cJSON_Delete(p->json_);
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
