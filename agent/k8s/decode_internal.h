/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Private to agent/k8s: the generic decoder the object decoders (json.c,
 * pod_json.c) are built from (decode.c). cJSON tree -> typed structs; every
 * string and array of one object lives in that object's arena. A decoder
 * walks only the fields it knows, keeping the JSON path of the field it is on
 * so an error can name it.
 *
 * Numbers: a number node may carry its original text in valuestring (the YAML
 * reader stores the plain scalar there, see k8s.h); integers and quantities
 * use that text when present, so "0.5" or 2^62 keep every digit. A number
 * parsed from JSON text only has its double.
 *
 * Every dec_* returning int returns 0 or -1 with d->err set, the message
 * prefixed with the path ("spec.containers[0].image: ...").
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/k8s/k8s.h"
#include "lib/arena.h"
#include "lib/error.h"

/* The most bytes one decoded object may use: generous for any valid object
 * built from an 8 MiB document, still bounded for hostile input. */
#define DECODE_ARENA_LIMIT ((size_t)K8S_MAX_DOC_BYTES * 4)
#define LIST_ARENA_LIMIT   ((size_t)K8S_MAX_LIST_ITEMS * 64 + 4096)

struct dec {
        struct cb_arena *a;
        struct cb_error *err;
        char path[512];
        size_t plen;
        /* the first unsupported field of the pod being decoded
         * (dec_unsupported); pod_base: where the pod's own path starts */
        const char *unsupported_reason;
        char unsupported[400];
        size_t pod_base;
};

/* The path: push a segment (".key" or "[i]"), pop back to the returned length. */
size_t dec_path_push(struct dec *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
size_t dec_path_field(struct dec *d, const char *key);
void dec_path_pop(struct dec *d, size_t old);

/* Errors at the current path. */
int dec_fail(struct dec *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Records (the first one only) that the field key at the current path is
 * set to something cubelet does not implement: "<path>.<key>: <msg>" with
 * the path from the pod's root, or msg alone when key is NULL. Not an
 * error: the pod decodes, and admission refuses it with reason. */
void dec_unsupported(struct dec *d, const char *reason, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int dec_wrong_type(struct dec *d, const cJSON *v, const char *want);
int dec_oom(struct dec *d);
/* want names the expected object ("a Pod") when json is not an object. */
int dec_not_object(struct dec *d, const cJSON *json, const char *what);

void *dec_alloc_array(struct dec *d, size_t n, size_t size);

/* Field accessors: absent and null are the same. has (may be NULL) says
 * whether the field was there. */
const cJSON *dec_field(const cJSON *obj, const char *key);
int dec_object(struct dec *d, const cJSON *obj, const char *key, const cJSON **ret);
int dec_str_value(struct dec *d, const cJSON *v, char **out);
int dec_string(struct dec *d, const cJSON *obj, const char *key, char **out);
int dec_bool(struct dec *d, const cJSON *obj, const char *key, bool *has, bool *out);
int dec_int_value(struct dec *d, const cJSON *v, int64_t min, int64_t max, int64_t *out);
int dec_int64(struct dec *d, const cJSON *obj, const char *key, bool *has, int64_t *out);
int dec_int32(struct dec *d, const cJSON *obj, const char *key, bool *has, int32_t *out);
/* obj.key as one of n names; *out = values[i], untouched when absent. */
int dec_enum(struct dec *d, const cJSON *obj, const char *key, const char *const *names,
             const int *values, size_t n, const char *want, int *out);
/* obj.key as an array of at most limit items; *ret NULL and *n 0 when absent.
 * The count is checked before anything is allocated. */
int dec_array(struct dec *d, const cJSON *obj, const char *key, size_t limit, const cJSON **ret,
              size_t *n);

typedef int (*dec_item_fn)(struct dec *d, const cJSON *item, void *out);
/* Decodes each item of obj.key with fn into a new array of elements of size sz. */
int dec_items(struct dec *d, const cJSON *obj, const char *key, size_t limit, size_t sz,
              bool want_object, dec_item_fn fn, void **ret, size_t *ret_n);
int dec_strings(struct dec *d, const cJSON *obj, const char *key, char ***ret, size_t *n);
int dec_map(struct dec *d, const cJSON *obj, const char *key, struct k8s_map *m);

int dec_quantity_value(struct dec *d, const cJSON *v, struct k8s_quantity *q);
int dec_resource_list(struct dec *d, const cJSON *obj, const char *key,
                      struct k8s_resource_list *l);

int dec_meta(struct dec *d, const cJSON *obj, struct k8s_object_meta *m);
/* A list's metadata.resourceVersion and (cont not NULL) metadata.continue. */
int dec_list_meta(struct dec *d, const cJSON *json, char **rv, char **cont);

/* Items both the pod and the node decoders use (pod_json.c). */
int dec_taint_item(struct dec *d, const cJSON *it, void *out);     /* a k8s_taint */
int dec_condition_item(struct dec *d, const cJSON *it, void *out); /* a k8s_condition */
int dec_selector_term_item(struct dec *d, const cJSON *it,
                           void *out); /* a k8s_node_selector_term */
