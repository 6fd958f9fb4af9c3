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
