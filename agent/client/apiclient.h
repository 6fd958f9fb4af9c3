/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Asynchronous requests to the apiserver, driven by the agent's loop
 * through libcurl's multi socket interface. One connection cache for the
 * whole agent (keep-alive; HTTP/2 over TLS when both ends offer it).
 * Requests pass token buckets like client-go's (QPS 50, burst 100), one
 * per class, so that a burst of one kind never delays another: pod status
 * PATCHes have a bucket of their own, events one with the kubelet's
 * eventRecordQPS/eventBurst (50/100), the Lease none (it never waits);
 * everything else (lists, watches, node status, deletes) shares the
 * default one. Over the rate, requests wait in FIFO order on a timer.
 *
 * Every request ends in exactly one call of its done callback, unless it is
 * cancelled first (then never). A streaming request (watch) hands 2xx body
 * bytes to its stream callback as they arrive; a non-2xx body is collected
 * and decoded like any other.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "agent/client/kubeconfig.h"
#include "agent/core/loop.h"
#include "lib/error.h"

#define AG_API_QPS          50.0
#define AG_API_BURST        100
#define AG_API_EVENT_QPS    50.0        /* the kubelet's eventRecordQPS */
#define AG_API_EVENT_BURST  100         /* ... and eventBurst */
#define AG_API_MAX_RESPONSE (64u << 20) /* K8S_MAX_LIST_BYTES */
#define AG_API_TIMEOUT_MS   60000       /* non-streaming requests */
/* At most this many requests other than watches are in libcurl at once;
 * the others wait in the client, holding no libcurl memory. Below
 * kube-apiserver's 100 streams per HTTP/2 connection (with the watches
 * beside them): libcurl 7.88 over a server's stream limit opens a
 * connection per refused stream (docs/apiserver-http2.md), and each
 * request in flight holds its easy handle and receive buffer. */
#define AG_API_INFLIGHT_MAX 64
#define AG_API_RECV_BUFFER  4096L  /* CURLOPT_BUFFERSIZE, but for watches */
#define AG_API_SEND_BUFFER  16384L /* CURLOPT_UPLOAD_BUFFERSIZE (its least) */

struct ag_api;
struct ag_request;

struct ag_api_result {
        long status;      /* HTTP status, 0 when no response arrived */
        const char *body; /* the body collected (not for streamed 2xx) */
        size_t len;
        cJSON *json;       /* body parsed as JSON, or NULL; the callee may steal it */
        const char *error; /* NULL on 2xx; else what failed and what to do */
        bool tls_error;    /* the server certificate could not be verified */
        bool auth_error;   /* 401 or 403 */
        bool aborted;      /* the stream callback asked to stop */
};

typedef void (*ag_api_done_fn)(struct ag_api_result *res, void *data);

/* Answers and watch events of at least this size give the heap's free
 * pages back to the system once they are freed (ag_api_release_memory). */
#define AG_API_TRIM_BYTES (1u << 20)
void ag_api_release_memory(void);
/* Returns 0 to go on, -1 to abort the request (done then has aborted). */
typedef int (*ag_api_stream_fn)(const char *buf, size_t len, void *data);

/* Which rate limiter a request passes (see the top). */
enum ag_api_class {
        AG_API_CLASS_DEFAULT = 0,
        AG_API_CLASS_STATUS, /* pod status PATCHes */
        AG_API_CLASS_EVENTS, /* events */
        AG_API_CLASS_LEASE,  /* the node's Lease: not limited */
        AG_API_CLASS_N
};

struct ag_api_req_opts {
        enum ag_api_class cls;
        const char *content_type; /* of the body; NULL: application/json */
        const char *body;         /* copied */
        size_t body_len;
        ag_api_stream_fn stream;
        long low_speed_time_s; /* abort when no byte arrives for this long (0: none) */
        long timeout_ms;       /* whole request; 0: AG_API_TIMEOUT_MS, <0: none */
        /* A \u0000 in a string does not refuse the response whole: it is
         * marked (k8s_json_mark_nul) and the caller refuses the objects
         * holding it (a list's items; the reflector). */
        bool nul_per_object;
        /* Called on the loop right before the request goes to libcurl,
         * after it passed its bucket and found a place (at once when
         * nothing waits): returns the body to send instead of `body` (the
         * client copies it), or NULL to keep it. A caller whose request
         * waited sends its newest content then, as the kubelet's status
         * manager does: it reads the newest status of a pod when it gets to
         * it, so statuses set while their PATCH waited go as one. */
        const char *(*body_at_start)(void *data, size_t *len);
};

struct ag_api_config {
        double qps;                /* 0: AG_API_QPS (default and status buckets) */
        int burst;                 /* 0: AG_API_BURST */
        double event_qps;          /* 0: AG_API_EVENT_QPS */
        int event_burst;           /* 0: AG_API_EVENT_BURST */
        size_t max_response_bytes; /* 0: AG_API_MAX_RESPONSE */
};

/* kc is copied where needed (credentials as curl options); it must stay
 * valid while the client lives. */
int ag_api_new(struct ag_loop *loop, const struct ag_kubeconfig *kc,
               const struct ag_api_config *cfg, struct ag_api **ret, struct cb_error *err);
/* Cancels every request (no callbacks) and frees the client. */
void ag_api_free(struct ag_api *api);
const char *ag_api_server(const struct ag_api *api);

/* path starts with '/' and is already escaped (see ag_api_escape). Returns
 * the request, or NULL with err set when it could not even be queued. */
struct ag_request *ag_api_request(struct ag_api *api, const char *method, const char *path,
                                  const struct ag_api_req_opts *opts, ag_api_done_fn done,
                                  void *data, struct cb_error *err);
/* What the client did, for the agent's metrics and the benchmark. */
enum ag_api_verb {
        AG_VERB_GET,
        AG_VERB_WATCH,
        AG_VERB_POST,
        AG_VERB_PUT,
        AG_VERB_PATCH,
        AG_VERB_DELETE,
        AG_VERB_OTHER,
        AG_VERB_N
};
struct ag_api_stats {
        uint64_t requests[AG_VERB_N];        /* started */
        uint64_t waited[AG_API_CLASS_N];     /* requests that waited on their bucket */
        double wait_seconds[AG_API_CLASS_N]; /* time spent waiting, summed */
        uint64_t inflight_waited;            /* requests that waited for a place */
        double inflight_wait_seconds;        /* ... and how long, summed */
};
void ag_api_get_stats(const struct ag_api *api, struct ag_api_stats *ret);
const char *ag_api_verb_name(enum ag_api_verb v);
const char *ag_api_class_name(enum ag_api_class c);

/* Stops a request that has not completed; its done callback is not called.
 * Safe from any callback, including the request's own stream callback. */
void ag_api_cancel(struct ag_request *req);

/* Percent-escapes a query parameter value. Caller frees. */
char *ag_api_escape(const char *s);
/* Closes idle connections (after repeated heartbeat failures, as the
 * kubelet does, so a half-dead connection is not reused). */
void ag_api_close_idle(struct ag_api *api);
/* The credential files named by the kubeconfig changed (a rotated client
 * certificate): requests from now on use connections made after this call,
 * so they handshake with the new certificate; requests in flight and open
 * watches keep their connections. */
void ag_api_credentials_changed(struct ag_api *api);
/* fn(data) is called (on the loop, after the request's own callback) when
 * the apiserver answers again after requests that got no answer at all
 * (refused, reset, timed out): what waits on a retry timer may go now.
 * Up to AG_API_REACHABLE_MAX listeners; fn NULL removes data's. */
#define AG_API_REACHABLE_MAX 4
typedef void (*ag_api_reachable_fn)(void *data);
int ag_api_on_reachable(struct ag_api *api, ag_api_reachable_fn fn, void *data);
