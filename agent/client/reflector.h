/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A reflector, as client-go's: LIST (resourceVersion=0) then WATCH from the
 * list's resourceVersion with bookmarks, re-WATCH from the last seen
 * resourceVersion when the server ends the stream, and on 410 Expired
 * (HTTP, or an ERROR event in the stream) re-LIST at the last
 * resourceVersion and, when that is 410 too, at "" (a quorum read).
 *
 * It keeps a store (uid -> latest object) and reports ADDED / UPDATED /
 * DELETED to a callback. After a relist it diffs the new list against the
 * store, so an object deleted while disconnected is reported DELETED and a
 * changed one UPDATED: no event lost, none reported twice.
 *
 * Failures (transport, HTTP errors, malformed or truncated streams, objects
 * over the size limit, unknown event types, ERROR events) are logged with
 * the object's namespace/name when known and retried with client-go's
 * backoff (0.8 s doubling to 30 s, jitter, reset after 2 min healthy); the
 * store is kept.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "agent/client/apiclient.h"
#include "agent/k8s/k8s.h"
#include "agent/core/loop.h"
#include "lib/error.h"

#define AG_WATCH_MAX_OBJECT_BYTES K8S_MAX_DOC_BYTES
#define AG_WATCH_STALL_MARGIN_S   30 /* beyond timeoutSeconds before a silent watch is replaced */

/* ---- the incremental watch stream parser (pure; unit tested) ---- */

/* Splits a byte stream into top-level JSON objects (newline-delimited in
 * practice, but only the braces count), whatever the chunking. */
struct ag_watch_parser {
        char *buf;
        size_t len, cap;
        size_t max_object; /* bytes of one object; 0: AG_WATCH_MAX_OBJECT_BYTES */
        int depth;
        bool in_string, escape;
        /* bytes of the event being read when it outgrew max_object (0:
         * none): its first max_object bytes stay in buf, the rest is only
         * scanned for its end; fn is then called with that prefix and
         * oversized set (issue 15 item 11) */
        size_t oversized;
};

/* The type of a watch event and its object's metadata from the first len
 * bytes of its text (an event too large to parse); NULL without them. */
cJSON *ag_watch_prefix_metadata(const char *s, size_t len, char *type, size_t type_size);

/* Called with one complete object's text (not NUL-terminated). Returns 0 to
 * go on, -1 to stop (err set). */
typedef int (*ag_watch_object_fn)(const char *json, size_t len, void *data, struct cb_error *err);

/* Feeds bytes; calls fn for every object completed. -1 on garbage between
 * objects, an object over the limit, or fn's failure; the parser must then
 * be reset. */
int ag_watch_parser_feed(struct ag_watch_parser *p, const char *data, size_t len,
                         ag_watch_object_fn fn, void *fn_data, struct cb_error *err);
/* At the end of the stream: -1 when an object was cut short. */
int ag_watch_parser_finish(const struct ag_watch_parser *p, struct cb_error *err);
void ag_watch_parser_reset(struct ag_watch_parser *p);

/* Parses one event's text into ev (see k8s_watch_event_from_json). */
int ag_watch_event_parse(const char *json, size_t len, struct k8s_watch_event *ev,
                         struct cb_error *err);

/* ---- the store (pure; unit tested) ---- */

/* AG_KIND_RAW keeps the JSON only (ConfigMaps, Secrets: the consumer
 * decodes what it needs). */
enum ag_kind { AG_KIND_POD, AG_KIND_NODE, AG_KIND_RAW };
enum ag_change { AG_ADDED, AG_UPDATED, AG_DELETED };

/* One version of an object, decoded once. A consumer that keeps a pod
 * takes a reference (k8s_pod_ref) and has its JSON with it, as text
 * (k8s_pod_json_text). */
struct ag_object {
        char *uid, *namespace_, *name, *resource_version;
        /* Owned. A pod's only while its change is reported: then the pod
         * keeps the JSON as text (k8s_pod_json_parse) and this is NULL. */
        cJSON *json;
        struct k8s_pod *pod;   /* AG_KIND_POD */
        struct k8s_node *node; /* AG_KIND_NODE */
        /* When the bytes of the event (or list) carrying this version
         * reached the agent: the timeline's `watched` step. 0 when the
         * store was fed without a stamp (the consumer then uses its own
         * clock). */
        uint64_t received_mono_us; /* CLOCK_MONOTONIC */
        int64_t received_wall_us;  /* CLOCK_REALTIME */
};

typedef void (*ag_change_fn)(enum ag_change change, const struct ag_object *obj, void *data);

struct ag_store {
        enum ag_kind kind;
        struct ag_object **items;
        size_t n, cap;
        ag_change_fn fn;
        void *data;
        uint64_t received; /* objects handed to the store (events and list items) */
        /* The arrival stamp given to the objects built next (the reflector
         * sets it as a chunk or a list comes in; 0: none). */
        uint64_t arrival_mono_us;
        int64_t arrival_wall_us;
};

void ag_store_init(struct ag_store *s, enum ag_kind kind, ag_change_fn fn, void *data);
void ag_store_clear(struct ag_store *s);
const struct ag_object *ag_store_get(const struct ag_store *s, const char *uid);
/* Applies a watch event (ADDED / MODIFIED / DELETED); takes json. An ADDED
 * for a known uid is an update, a MODIFIED for an unknown one an add, an
 * event whose resourceVersion equals the stored one is not reported. */
int ag_store_apply(struct ag_store *s, enum k8s_watch_type type, cJSON *json, struct cb_error *err);
/* Replaces the content with a list's items (a cJSON array, taken): adds,
 * updates (resourceVersion changed) and deletes are reported. Returns the
 * number of items skipped because they could not be decoded (err then
 * describes the first), or -1. */
int ag_store_replace(struct ag_store *s, cJSON *items, struct cb_error *err);

/* ---- the reflector ---- */

struct ag_reflector_config {
        const char *what;           /* "pods" / "node", for logs */
        const char *path;           /* "/api/v1/pods" */
        const char *field_selector; /* raw, e.g. "spec.nodeName=NODE"; escaped here */
        enum ag_kind kind;
        int watch_timeout_s;     /* 0: random in [300, 600] like client-go */
        size_t max_object_bytes; /* 0: AG_WATCH_MAX_OBJECT_BYTES */
        ag_change_fn on_change;
        void (*on_synced)(size_t n, void *data); /* after every successful list */
        void *data;
};

struct ag_reflector;

int ag_reflector_new(struct ag_loop *loop, struct ag_api *api,
                     const struct ag_reflector_config *cfg, struct ag_reflector **ret,
                     struct cb_error *err);
/* Starts with the first LIST. */
void ag_reflector_start(struct ag_reflector *r);
/* Cancels its requests and timers; the store is freed without callbacks. */
void ag_reflector_free(struct ag_reflector *r);
/* Objects received so far, from watch events and list items: each is
 * decoded once (k8s_pod_decodes moves by as much for the pod reflector). */
uint64_t ag_reflector_received(const struct ag_reflector *r);

/* The backoff of client-go's reflector; exposed for tests. */
struct ag_backoff {
        uint64_t initial_ms, cap_ms, reset_after_ms;
        uint64_t current_ms, last_failure_ms;
};
void ag_backoff_init(struct ag_backoff *b, uint64_t initial_ms, uint64_t cap_ms,
                     uint64_t reset_after_ms);
/* The delay before the next try (with jitter up to +100%, like client-go's
 * jitter 1.0), doubling each call; reset when the previous failure is
 * older than reset_after_ms. now_ms is the monotonic clock. */
uint64_t ag_backoff_next(struct ag_backoff *b, uint64_t now_ms, double rand01);
