/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/k8s/jsondiff.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define PATH_MAX_LEN 1024

struct diff {
        cJSON *ops;
        int n;
        int omitted;
        bool oom;
};

/* The strategic-merge keys of the arrays a pod or node status and spec
 * carry (k8s.io/api core/v1 patchMergeKey). */
static const struct {
        const char *field, *key1, *key2;
} merge_keys[] = {
    {"conditions", "type", NULL},
    {"containerStatuses", "name", NULL},
    {"initContainerStatuses", "name", NULL},
    {"ephemeralContainerStatuses", "name", NULL},
    {"containers", "name", NULL},
    {"initContainers", "name", NULL},
    {"ephemeralContainers", "name", NULL},
    {"volumes", "name", NULL},
    {"volumeMounts", "mountPath", NULL},
    {"env", "name", NULL},
    {"podIPs", "ip", NULL},
    {"hostIPs", "ip", NULL},
    {"taints", "key", "effect"},
    {"resourceClaimStatuses", "name", NULL},
};

static void emit(struct diff *d, const char *op, const char *path, const cJSON *old,
                 const cJSON *new_)
{
        if (d->oom)
                return;
        if (d->n >= K8S_DIFF_MAX_OPS) {
                d->omitted++;
                return;
        }
        cJSON *o = cJSON_CreateObject();
        if (o == NULL || cJSON_AddStringToObject(o, "op", op) == NULL ||
            cJSON_AddStringToObject(o, "path", path) == NULL) {
                cJSON_Delete(o);
                d->oom = true;
                return;
        }
        if (old != NULL)
                cJSON_AddItemToObject(o, "old", cJSON_Duplicate(old, true));
        if (new_ != NULL)
                cJSON_AddItemToObject(o, "new", cJSON_Duplicate(new_, true));
        cJSON_AddItemToArray(d->ops, o);
        d->n++;
}

static void diff_value(struct diff *d, char *path, size_t len, const char *field, const cJSON *a,
                       const cJSON *b, int depth);

/* Appends ".key" (or "key" at the root) to path; false when it does not fit. */
static bool push_key(char *path, size_t len, const char *key)
{
        int n = snprintf(path + len, PATH_MAX_LEN - len, "%s%s", len > 0 ? "." : "", key);
        return n > 0 && (size_t)n < PATH_MAX_LEN - len;
}

static void diff_object(struct diff *d, char *path, size_t len, const cJSON *a, const cJSON *b,
                        int depth)
{
        for (const cJSON *x = a ? a->child : NULL; x; x = x->next) {
                if (x->string == NULL)
                        continue;
                const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, x->string);
                if (!push_key(path, len, x->string)) {
                        path[len] = '\0';
                        if (!cJSON_Compare(a, b, true))
                                emit(d, "change", path, a, b);
                        return;
                }
                if (y == NULL)
                        emit(d, "remove", path, x, NULL);
                else
                        diff_value(d, path, strlen(path), x->string, x, y, depth + 1);
                path[len] = '\0';
        }
        for (const cJSON *y = b ? b->child : NULL; y; y = y->next) {
                if (y->string == NULL || cJSON_GetObjectItemCaseSensitive(a, y->string) != NULL)
                        continue;
                if (push_key(path, len, y->string))
                        emit(d, "add", path, NULL, y);
                path[len] = '\0';
        }
}

static const char *elem_key(const cJSON *e, const char *k)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, k);
        return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Every element an object with key1 (and key2, where the table has one:
 * a taint's effect may be missing, which counts as ""), no two alike. */
static bool keyed(const cJSON *arr, const char *k1, const char *k2)
{
        for (const cJSON *e = arr->child; e; e = e->next) {
                if (!cJSON_IsObject(e) || elem_key(e, k1) == NULL)
                        return false;
                for (const cJSON *f = arr->child; f != e; f = f->next) {
                        const char *a2 = k2 ? elem_key(e, k2) : NULL;
                        const char *b2 = k2 ? elem_key(f, k2) : NULL;
                        if (strcmp(elem_key(e, k1), elem_key(f, k1)) == 0 &&
                            strcmp(a2 ? a2 : "", b2 ? b2 : "") == 0)
                                return false;
                }
        }
        return true;
}

static const cJSON *find_elem(const cJSON *arr, const cJSON *like, const char *k1, const char *k2)
{
        const char *v1 = elem_key(like, k1);
        const char *v2 = k2 ? elem_key(like, k2) : NULL;
        for (const cJSON *e = arr->child; e; e = e->next) {
                const char *e2 = k2 ? elem_key(e, k2) : NULL;
                if (strcmp(elem_key(e, k1), v1) == 0 && strcmp(e2 ? e2 : "", v2 ? v2 : "") == 0)
                        return e;
        }
        return NULL;
}

static bool push_elem(char *path, size_t len, const cJSON *e, const char *k1, const char *k2)
{
        const char *v2 = k2 ? elem_key(e, k2) : NULL;
        int n = k2 != NULL
                    ? snprintf(path + len, PATH_MAX_LEN - len, "[%s=%s,%s=%s]", k1, elem_key(e, k1),
                               k2, v2 ? v2 : "")
                    : snprintf(path + len, PATH_MAX_LEN - len, "[%s=%s]", k1, elem_key(e, k1));
        return n > 0 && (size_t)n < PATH_MAX_LEN - len;
}

static void diff_array(struct diff *d, char *path, size_t len, const char *field, const cJSON *a,
                       const cJSON *b, int depth)
{
        const char *k1 = NULL, *k2 = NULL;
        for (size_t i = 0; field != NULL && i < sizeof(merge_keys) / sizeof(merge_keys[0]); i++)
                if (strcmp(field, merge_keys[i].field) == 0) {
                        k1 = merge_keys[i].key1;
                        k2 = merge_keys[i].key2;
                }
        if (k1 == NULL || !keyed(a, k1, k2) || !keyed(b, k1, k2)) {
                if (!cJSON_Compare(a, b, true))
                        emit(d, "change", path, a, b);
                return;
        }
        for (const cJSON *x = a->child; x; x = x->next) {
                const cJSON *y = find_elem(b, x, k1, k2);
                if (!push_elem(path, len, x, k1, k2)) {
                        path[len] = '\0';
                        if (!cJSON_Compare(a, b, true))
                                emit(d, "change", path, a, b);
                        return;
                }
                if (y == NULL)
                        emit(d, "remove", path, x, NULL);
                else
                        diff_value(d, path, strlen(path), NULL, x, y, depth + 1);
                path[len] = '\0';
        }
        for (const cJSON *y = b->child; y; y = y->next) {
                if (find_elem(a, y, k1, k2) != NULL)
                        continue;
                if (push_elem(path, len, y, k1, k2))
                        emit(d, "add", path, NULL, y);
                path[len] = '\0';
        }
}

static void diff_value(struct diff *d, char *path, size_t len, const char *field, const cJSON *a,
                       const cJSON *b, int depth)
{
        if (depth >= K8S_DIFF_MAX_DEPTH) {
                if (!cJSON_Compare(a, b, true))
                        emit(d, "change", path, a, b);
                return;
        }
        if (cJSON_IsObject(a) && cJSON_IsObject(b))
                diff_object(d, path, len, a, b, depth);
        else if (cJSON_IsArray(a) && cJSON_IsArray(b))
                diff_array(d, path, len, field, a, b, depth);
        else if (!cJSON_Compare(a, b, true))
                emit(d, "change", path, a, b);
}

cJSON *k8s_json_diff(const cJSON *old, const cJSON *new_, const char *prefix)
{
        struct diff d = {.ops = cJSON_CreateArray()};
        if (d.ops == NULL)
                return NULL;
        char path[PATH_MAX_LEN];
        snprintf(path, sizeof(path), "%s", prefix ? prefix : "");
        size_t len = strlen(path);
        const char *field = strrchr(path, '.') ? strrchr(path, '.') + 1 : path;
        if (old == NULL && new_ == NULL) {
                /* nothing */
        } else if (old == NULL) {
                if (cJSON_IsObject(new_))
                        diff_object(&d, path, len, NULL, new_, 0);
                else
                        emit(&d, "add", path, NULL, new_);
        } else if (new_ == NULL) {
                if (cJSON_IsObject(old))
                        diff_object(&d, path, len, old, NULL, 0);
                else
                        emit(&d, "remove", path, old, NULL);
        } else {
                diff_value(&d, path, len, field[0] ? field : NULL, old, new_, 0);
        }
        if (!d.oom && d.omitted > 0) {
                cJSON *t = cJSON_CreateObject();
                cJSON_AddStringToObject(t, "op", "truncated");
                cJSON_AddNumberToObject(t, "omitted", d.omitted);
                cJSON_AddItemToArray(d.ops, t);
        }
        if (d.oom) {
                cJSON_Delete(d.ops);
                return NULL;
        }
        return d.ops;
}

/* A copy of obj's metadata keys (those named) and of the listed top-level
 * fields: what the spec diffs compare. */
static cJSON *pick(const cJSON *obj, const char *const *meta_keys, const char *const *fields)
{
        if (obj == NULL)
                return NULL;
        cJSON *o = cJSON_CreateObject();
        if (o == NULL)
                return NULL;
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
        cJSON *m = cJSON_AddObjectToObject(o, "metadata");
        for (size_t i = 0; m != NULL && meta_keys[i] != NULL; i++) {
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(meta, meta_keys[i]);
                if (v != NULL)
                        cJSON_AddItemToObject(m, meta_keys[i], cJSON_Duplicate(v, true));
        }
        for (size_t i = 0; fields[i] != NULL; i++) {
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, fields[i]);
                if (v != NULL)
                        cJSON_AddItemToObject(o, fields[i], cJSON_Duplicate(v, true));
        }
        return o;
}

static cJSON *picked_diff(const cJSON *a, const cJSON *b, const char *const *meta_keys,
                          const char *const *fields)
{
        cJSON *pa = pick(a, meta_keys, fields);
        cJSON *pb = pick(b, meta_keys, fields);
        cJSON *d = NULL;
        if ((a == NULL || pa != NULL) && (b == NULL || pb != NULL))
                d = k8s_json_diff(pa, pb, NULL);
        cJSON_Delete(pa);
        cJSON_Delete(pb);
        return d;
}

cJSON *k8s_pod_spec_diff(const cJSON *old_pod, const cJSON *new_pod)
{
        static const char *const meta[] = {"deletionTimestamp",
                                           "deletionGracePeriodSeconds",
                                           "labels",
                                           "annotations",
                                           "ownerReferences",
                                           "finalizers",
                                           NULL};
        static const char *const fields[] = {"spec", NULL};
        return picked_diff(old_pod, new_pod, meta, fields);
}

cJSON *k8s_node_spec_diff(const cJSON *old_node, const cJSON *new_node)
{
        static const char *const meta[] = {"labels", NULL};
        static const char *const fields[] = {"spec", NULL};
        return picked_diff(old_node, new_node, meta, fields);
}

/* ---- digests ---------------------------------------------------------------------- */

#define DIGEST_MAX_DEPTH 64

static uint64_t mix(uint64_t x) /* splitmix64's finaliser */
{
        x ^= x >> 30;
        x *= UINT64_C(0xbf58476d1ce4e5b9);
        x ^= x >> 27;
        x *= UINT64_C(0x94d049bb133111eb);
        x ^= x >> 31;
        return x;
}

static uint64_t bytes_digest(uint64_t h, const char *p, size_t n)
{
        h ^= n; /* FNV-1a over the length, then the bytes */
        h *= UINT64_C(0x100000001b3);
        for (size_t i = 0; i < n; i++) {
                h ^= (unsigned char)p[i];
                h *= UINT64_C(0x100000001b3);
        }
        return mix(h);
}

static bool keyed_field(const char *field)
{
        for (size_t i = 0; field != NULL && i < sizeof(merge_keys) / sizeof(merge_keys[0]); i++)
                if (strcmp(field, merge_keys[i].field) == 0)
                        return true;
        return false;
}

/* Objects and keyed arrays add their members' digests (the order does not
 * count), other arrays chain them (it does). */
static uint64_t digest(const cJSON *v, const char *field, int depth)
{
        const uint64_t basis = UINT64_C(0xcbf29ce484222325);
        if (cJSON_IsString(v))
                return bytes_digest(basis ^ 's', v->valuestring, strlen(v->valuestring));
        if (cJSON_IsNumber(v)) {
                double d = v->valuedouble == 0 ? 0 : v->valuedouble; /* -0 is 0 */
                uint64_t bits;
                memcpy(&bits, &d, sizeof(bits));
                return mix(basis ^ 'n' ^ mix(bits));
        }
        if (cJSON_IsBool(v))
                return mix(basis ^ (cJSON_IsTrue(v) ? 't' : 'f'));
        if (cJSON_IsNull(v) || v == NULL)
                return mix(basis ^ 'z');
        if (depth >= DIGEST_MAX_DEPTH)
                return mix(basis ^ 'd');
        if (cJSON_IsObject(v)) {
                uint64_t sum = 0;
                for (const cJSON *c = v->child; c; c = c->next) {
                        if (c->string == NULL || cJSON_IsNull(c))
                                continue; /* null: as if left out */
                        uint64_t k = bytes_digest(basis ^ 'k', c->string, strlen(c->string));
                        sum += mix(k ^ digest(c, c->string, depth + 1));
                }
                return mix(basis ^ 'o' ^ sum);
        }
        if (cJSON_IsArray(v)) {
                bool unordered = keyed_field(field);
                uint64_t acc = 0;
                for (const cJSON *c = v->child; c; c = c->next) {
                        uint64_t e = digest(c, NULL, depth + 1);
                        acc = unordered ? acc + e : mix(acc ^ e) + 1;
                }
                return mix(basis ^ (unordered ? 'u' : 'a') ^ acc);
        }
        return mix(basis ^ '?');
}

uint64_t k8s_json_digest(const cJSON *v)
{
        return digest(v, NULL, 0);
}

bool k8s_pod_is_status_echo(const cJSON *old_pod, const cJSON *new_pod, const uint64_t *sent,
                            size_t n)
{
        if (old_pod == NULL || new_pod == NULL || n == 0)
                return false;
        const cJSON *status = cJSON_GetObjectItemCaseSensitive(new_pod, "status");
        if (!cJSON_IsObject(status))
                return false;
        uint64_t d = k8s_json_digest(status);
        bool ours = false;
        for (size_t i = 0; i < n && !ours; i++)
                ours = sent[i] == d;
        if (!ours)
                return false;
        cJSON *diff = k8s_pod_spec_diff(old_pod, new_pod);
        bool same = diff != NULL && cJSON_GetArraySize(diff) == 0;
        cJSON_Delete(diff);
        return same;
}
