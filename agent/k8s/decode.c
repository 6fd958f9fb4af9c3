/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/k8s/decode_internal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The generic half of the object decoders (decode_internal.h): the JSON path
 * kept for errors, the field accessors, quantities and object metadata. The
 * object decoders are pod_json.c (pods and pod lists) and json.c (nodes,
 * Status, ConfigMaps, Secrets, watch events).
 */

/* ---- paths ---- */

size_t dec_path_push(struct dec *d, const char *fmt, ...)
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

size_t dec_path_field(struct dec *d, const char *key)
{
        return dec_path_push(d, "%s%s", d->plen > 0 ? "." : "", key);
}

void dec_path_pop(struct dec *d, size_t old)
{
        d->plen = old;
        d->path[old] = '\0';
}

/* A short, printable rendering of a value for error messages. */
static void dec_describe(const cJSON *v, char *buf, size_t size)
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

int dec_fail(struct dec *d, const char *fmt, ...)
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

int dec_wrong_type(struct dec *d, const cJSON *v, const char *want)
{
        char got[128];
        dec_describe(v, got, sizeof(got));
        return dec_fail(d, "expected %s, got %s", want, got);
}

int dec_oom(struct dec *d)
{
        if (cb_arena_over_limit(d->a))
                return dec_fail(d, "the decoded object exceeds the limit of %zu bytes",
                                DECODE_ARENA_LIMIT);
        return dec_fail(d, "out of memory");
}

void *dec_alloc_array(struct dec *d, size_t n, size_t size)
{
        if (n == 0)
                return NULL;
        void *p = cb_arena_calloc(d->a, n, size);
        if (p == NULL)
                dec_oom(d);
        return p;
}

/* ---- field accessors: absent and null are the same ---- */

const cJSON *dec_field(const cJSON *obj, const char *key)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
        return cJSON_IsNull(v) ? NULL : v;
}

/* Enters obj.key if it is an object. *ret = NULL when absent. */
int dec_object(struct dec *d, const cJSON *obj, const char *key, const cJSON **ret)
{
        const cJSON *v = dec_field(obj, key);
        *ret = NULL;
        if (v == NULL)
                return 0;
        if (!cJSON_IsObject(v)) {
                size_t old = dec_path_field(d, key);
                dec_wrong_type(d, v, "an object");
                dec_path_pop(d, old);
                return -1;
        }
        *ret = v;
        return 0;
}

int dec_str_value(struct dec *d, const cJSON *v, char **out)
{
        if (!cJSON_IsString(v))
                return dec_wrong_type(d, v, "a string");
        size_t len = strlen(v->valuestring);
        if (len > K8S_MAX_STRING_BYTES)
                return dec_fail(d, "a string of %zu bytes exceeds the limit of %u bytes", len,
                                K8S_MAX_STRING_BYTES);
        *out = cb_arena_strndup(d->a, v->valuestring, len);
        if (*out == NULL)
                return dec_oom(d);
        return 0;
}

int dec_string(struct dec *d, const cJSON *obj, const char *key, char **out)
{
        const cJSON *v = dec_field(obj, key);
        *out = NULL;
        if (v == NULL)
                return 0;
        size_t old = dec_path_field(d, key);
        int r = dec_str_value(d, v, out);
        dec_path_pop(d, old);
        return r;
}

int dec_bool(struct dec *d, const cJSON *obj, const char *key, bool *has, bool *out)
{
        const cJSON *v = dec_field(obj, key);
        if (v == NULL)
                return 0;
        if (!cJSON_IsBool(v)) {
                size_t old = dec_path_field(d, key);
                dec_wrong_type(d, v, "a boolean");
                dec_path_pop(d, old);
                return -1;
        }
        *out = cJSON_IsTrue(v);
        if (has != NULL)
                *has = true;
        return 0;
}

/* An integral number in [min, max]; uses the node's text when it has one. */
int dec_int_value(struct dec *d, const cJSON *v, int64_t min, int64_t max, int64_t *out)
{
        int64_t x;
        if (!cJSON_IsNumber(v))
                return dec_wrong_type(d, v, "an integer");
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
                dec_describe(v, got, sizeof(got));
                return dec_fail(d, "%s is out of range [%lld, %lld]", got, (long long)min,
                                (long long)max);
        }
        *out = x;
        return 0;
bad:
        return dec_wrong_type(d, v, "an integer");
}

int dec_int64(struct dec *d, const cJSON *obj, const char *key, bool *has, int64_t *out)
{
        const cJSON *v = dec_field(obj, key);
        if (v == NULL)
                return 0;
        size_t old = dec_path_field(d, key);
        int r = dec_int_value(d, v, INT64_MIN, INT64_MAX, out);
        dec_path_pop(d, old);
        if (r == 0 && has != NULL)
                *has = true;
        return r;
}

int dec_int32(struct dec *d, const cJSON *obj, const char *key, bool *has, int32_t *out)
{
        int64_t x;
        const cJSON *v = dec_field(obj, key);
        if (v == NULL)
                return 0;
        size_t old = dec_path_field(d, key);
        int r = dec_int_value(d, v, INT32_MIN, INT32_MAX, &x);
        dec_path_pop(d, old);
        if (r < 0)
                return -1;
        *out = (int32_t)x;
        if (has != NULL)
                *has = true;
        return 0;
}

/* An enum from its API spelling; absent leaves *out alone (the default). */
int dec_enum(struct dec *d, const cJSON *obj, const char *key, const char *const *names,
             const int *values, size_t n, const char *want, int *out)
{
        char *s;
        if (dec_string(d, obj, key, &s) < 0)
                return -1;
        if (s == NULL)
                return 0;
        for (size_t i = 0; i < n; i++) {
                if (strcmp(s, names[i]) == 0) {
                        *out = values[i];
                        return 0;
                }
        }
        size_t old = dec_path_field(d, key);
        char got[128];
        dec_describe(dec_field(obj, key), got, sizeof(got));
        dec_fail(d, "unsupported value %s (want %s)", got, want);
        dec_path_pop(d, old);
        return -1;
}

/* obj.key as an array of at most limit items; *ret NULL and *n 0 when absent.
 * The count is checked before anything is allocated. */
int dec_array(struct dec *d, const cJSON *obj, const char *key, size_t limit, const cJSON **ret,
              size_t *n)
{
        const cJSON *v = dec_field(obj, key);
        *ret = NULL;
        *n = 0;
        if (v == NULL)
                return 0;
        size_t old = dec_path_field(d, key);
        if (!cJSON_IsArray(v)) {
                dec_wrong_type(d, v, "an array");
                dec_path_pop(d, old);
                return -1;
        }
        size_t count = 0;
        for (const cJSON *it = v->child; it != NULL; it = it->next)
                if (++count > limit)
                        break;
        if (count > limit) {
                count = (size_t)cJSON_GetArraySize(v);
                dec_fail(d, "%zu items exceed the limit of %zu", count, limit);
                dec_path_pop(d, old);
                return -1;
        }
        dec_path_pop(d, old);
        *ret = v;
        *n = count;
        return 0;
}

/* Decodes each item of obj.key into a new array of n elements of size sz. */
int dec_items(struct dec *d, const cJSON *obj, const char *key, size_t limit, size_t sz,
              bool want_object, dec_item_fn fn, void **ret, size_t *ret_n)
{
        const cJSON *arr;
        size_t n;
        *ret = NULL;
        *ret_n = 0;
        if (dec_array(d, obj, key, limit, &arr, &n) < 0)
                return -1;
        if (n == 0)
                return 0;
        unsigned char *items = dec_alloc_array(d, n, sz);
        if (items == NULL)
                return -1;
        size_t old = dec_path_field(d, key);
        size_t i = 0;
        for (const cJSON *it = arr->child; it != NULL; it = it->next, i++) {
                size_t o2 = dec_path_push(d, "[%zu]", i);
                if (want_object && !cJSON_IsObject(it)) {
                        dec_wrong_type(d, it, "an object");
                        return -1;
                }
                if (fn(d, it, items + i * sz) < 0)
                        return -1;
                dec_path_pop(d, o2);
        }
        dec_path_pop(d, old);
        *ret = items;
        *ret_n = n;
        return 0;
}

static int dec_string_item(struct dec *d, const cJSON *item, void *out)
{
        return dec_str_value(d, item, (char **)out);
}

int dec_strings(struct dec *d, const cJSON *obj, const char *key, char ***ret, size_t *n)
{
        return dec_items(d, obj, key, K8S_MAX_ARRAY_ITEMS, sizeof(char *), false, dec_string_item,
                         (void **)ret, n);
}

typedef int (*entry_fn)(struct dec *d, const char *name, const cJSON *v, void *out);

/* obj.key as an object of at most K8S_MAX_ARRAY_ITEMS entries, each decoded
 * by fn into a new array of elements of size sz. */
static int dec_entries(struct dec *d, const cJSON *obj, const char *key, size_t sz, entry_fn fn,
                       void **ret, size_t *ret_n)
{
        const cJSON *v;
        *ret = NULL;
        *ret_n = 0;
        if (dec_object(d, obj, key, &v) < 0)
                return -1;
        if (v == NULL)
                return 0;
        size_t count = 0;
        for (const cJSON *it = v->child; it != NULL; it = it->next)
                count++;
        size_t old = dec_path_field(d, key);
        if (count > K8S_MAX_ARRAY_ITEMS) {
                dec_fail(d, "%zu entries exceed the limit of %d", count, K8S_MAX_ARRAY_ITEMS);
                dec_path_pop(d, old);
                return -1;
        }
        char *items = NULL;
        if (count > 0 && (items = dec_alloc_array(d, count, sz)) == NULL)
                return -1;
        size_t n = 0;
        for (const cJSON *it = v->child; it != NULL; it = it->next, n++)
                if (fn(d, it->string != NULL ? it->string : "", it, items + n * sz) < 0)
                        return -1;
        dec_path_pop(d, old);
        *ret = items;
        *ret_n = n;
        return 0;
}

static int map_entry(struct dec *d, const char *name, const cJSON *v, void *out)
{
        struct k8s_kv *kv = out;
        size_t old = dec_path_push(d, "[%s]", name);
        if (dec_str_value(d, v, &kv->value) < 0)
                return -1;
        dec_path_pop(d, old);
        return (kv->key = cb_arena_strdup(d->a, name)) == NULL ? dec_oom(d) : 0;
}

int dec_map(struct dec *d, const cJSON *obj, const char *key, struct k8s_map *m)
{
        return dec_entries(d, obj, key, sizeof(*m->items), map_entry, (void **)&m->items, &m->n);
}

/* ---- quantities ---- */

/* The text of a number node: its original text when the YAML reader kept
 * it, else the shortest %.15g/%.17g rendering that reads back the same. */
static void dec_number_text(const cJSON *v, char *buf, size_t size)
{
        if (v->valuestring != NULL) {
                snprintf(buf, size, "%s", v->valuestring);
                return;
        }
        snprintf(buf, size, "%.15g", v->valuedouble);
        if (strtod(buf, NULL) != v->valuedouble)
                snprintf(buf, size, "%.17g", v->valuedouble);
}

int dec_quantity_value(struct dec *d, const cJSON *v, struct k8s_quantity *q)
{
        char nbuf[128];
        const char *text;
        if (cJSON_IsString(v)) {
                text = v->valuestring;
        } else if (cJSON_IsNumber(v)) {
                dec_number_text(v, nbuf, sizeof(nbuf));
                text = nbuf;
        } else {
                return dec_wrong_type(d, v, "a quantity (string or number)");
        }
        if (strlen(text) > K8S_MAX_STRING_BYTES)
                return dec_fail(d, "a quantity of %zu bytes exceeds the limit of %u bytes",
                                strlen(text), K8S_MAX_STRING_BYTES);
        if (k8s_quantity_parse(text, q, d->err) < 0) {
                if (d->plen > 0)
                        cb_error_prefix(d->err, "%s", d->path);
                return -1;
        }
        q->text = cb_arena_strdup(d->a, text);
        if (q->text == NULL)
                return dec_oom(d);
        return 0;
}

static int resource_entry(struct dec *d, const char *name, const cJSON *v, void *out)
{
        struct k8s_resource *r = out;
        size_t old = dec_path_field(d, name);
        if (dec_quantity_value(d, v, &r->q) < 0)
                return -1;
        dec_path_pop(d, old);
        return (r->name = cb_arena_strdup(d->a, name)) == NULL ? dec_oom(d) : 0;
}

int dec_resource_list(struct dec *d, const cJSON *obj, const char *key, struct k8s_resource_list *l)
{
        return dec_entries(d, obj, key, sizeof(*l->items), resource_entry, (void **)&l->items,
                           &l->n);
}

/* ---- metadata ---- */

static int dec_owner_ref_item(struct dec *d, const cJSON *it, void *out)
{
        struct k8s_owner_ref *o = out;
        if (dec_string(d, it, "apiVersion", &o->api_version) < 0 ||
            dec_string(d, it, "kind", &o->kind) < 0 || dec_string(d, it, "name", &o->name) < 0 ||
            dec_string(d, it, "uid", &o->uid) < 0 ||
            dec_bool(d, it, "controller", NULL, &o->controller) < 0)
                return -1;
        return 0;
}

int dec_meta(struct dec *d, const cJSON *obj, struct k8s_object_meta *m)
{
        const cJSON *md;
        if (dec_object(d, obj, "metadata", &md) < 0)
                return -1;
        if (md == NULL)
                return 0;
        size_t old = dec_path_field(d, "metadata");
        if (dec_string(d, md, "name", &m->name) < 0 ||
            dec_string(d, md, "generateName", &m->generate_name) < 0 ||
            dec_string(d, md, "namespace", &m->namespace_) < 0 ||
            dec_string(d, md, "uid", &m->uid) < 0 ||
            dec_string(d, md, "resourceVersion", &m->resource_version) < 0 ||
            dec_int64(d, md, "generation", NULL, &m->generation) < 0 ||
            dec_string(d, md, "creationTimestamp", &m->creation_timestamp) < 0 ||
            dec_string(d, md, "deletionTimestamp", &m->deletion_timestamp) < 0 ||
            dec_int64(d, md, "deletionGracePeriodSeconds", &m->has_deletion_grace_period,
                      &m->deletion_grace_period_seconds) < 0 ||
            dec_map(d, md, "labels", &m->labels) < 0 ||
            dec_map(d, md, "annotations", &m->annotations) < 0 ||
            dec_items(d, md, "ownerReferences", K8S_MAX_ARRAY_ITEMS, sizeof(*m->owner_refs), true,
                      dec_owner_ref_item, (void **)&m->owner_refs, &m->n_owner_refs) < 0)
                return -1;
        dec_path_pop(d, old);
        return 0;
}

int dec_not_object(struct dec *d, const cJSON *json, const char *what)
{
        if (cJSON_IsObject(json))
                return 0;
        char got[128];
        dec_describe(json, got, sizeof(got));
        return dec_fail(d, "expected %s object, got %s", what, got);
}

int dec_list_meta(struct dec *d, const cJSON *json, char **rv, char **cont)
{
        const cJSON *md;
        if (dec_object(d, json, "metadata", &md) < 0)
                return -1;
        if (md == NULL)
                return 0;
        size_t old = dec_path_field(d, "metadata");
        if (dec_string(d, md, "resourceVersion", rv) < 0 ||
            (cont != NULL && dec_string(d, md, "continue", cont) < 0))
                return -1;
        dec_path_pop(d, old);
        return 0;
}
