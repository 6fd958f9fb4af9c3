/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * cubelet's local HTTP endpoint (libmicrohttpd driven by the agent's loop,
 * no threads of its own):
 *
 *   GET /healthz    200 "ok", or 500 with the reason the source gives
 *   GET /metrics    the Prometheus text format (version 0.0.4)
 *   GET /pods       the node's pods as a v1 PodList (the kubelet's
 *                   read-only /pods)
 *   GET /timelines  {"pods":[{"namespace","name","uid","timeline":[...]}]}
 *                   (agent/pods/podhistory.h has the fields);
 *                   ?format=trace: the Trace Event Format (agent/core/trace.h);
 *                   ?watch=true: server-sent events, a "snapshot" (the
 *                   document) and then each change as the source publishes
 *                   it (ag_endpoint_publish)
 *   GET /ui         the live timeline page (agent/core/page.h), its script
 *                   and style at /ui/timeline.js and /ui/timeline.css
 *
 * Other paths answer 404, other methods 405 (HEAD is served like GET
 * without a body). A route whose source callback is NULL answers 404,
 * except /healthz, which then always answers "ok"; a source returning
 * NULL answers 500.
 *
 * The endpoint has no TLS, so it only binds to loopback addresses
 * (127.0.0.0/8, ::1); anything else is refused. Loopback is not a boundary
 * (a hostNetwork pod is on it too), so only /healthz, /metrics and the
 * page's script and style are open: /pods, /timelines and /ui (every pod's
 * spec, env included; statuses and events) need the token the
 * agent writes to <root-dir>/endpoint.token (0600), as "Authorization:
 * Bearer TOKEN" or "?token=TOKEN" (a browser); 401 otherwise.
 */

#include <stdbool.h>
#include <stddef.h>
#include <cjson/cJSON.h>

#include "agent/core/loop.h"
#include "lib/error.h"

#define AG_ENDPOINT_DEFAULT_ADDRESS "127.0.0.1"

/* Called from the loop for each request; the returned object or string is
 * owned (and freed) by the endpoint. */
struct ag_endpoint_sources {
        cJSON *(*pods)(void *data);
        cJSON *(*timelines)(void *data);
        char *(*metrics)(void *data);
        /* false = unhealthy, with the reason written to why. */
        bool (*healthy)(void *data, char *why, size_t size);
        void *data;
        /* The token of /pods and /timelines (NULL: those routes answer 401
         * to everyone). Copied. */
        const char *token;
};

struct ag_endpoint;

/* Starts serving on bind_address (NULL: AG_ENDPOINT_DEFAULT_ADDRESS) and
 * port (0: an ephemeral port, see ag_endpoint_port). src is copied. */
int ag_endpoint_start(struct ag_loop *loop, const char *bind_address, int port,
                      const struct ag_endpoint_sources *src, struct ag_endpoint **ret,
                      struct cb_error *err);
/* Stops serving, closing every connection. NULL is allowed. */
void ag_endpoint_free(struct ag_endpoint *ep);
/* Sends "event: EVENT\ndata: DATA\n\n" to every /timelines?watch=true
 * client (DATA: one line of JSON). On the loop; never blocks: a client
 * more than 4 MiB behind is dropped (EventSource reconnects). */
void ag_endpoint_publish(struct ag_endpoint *ep, const char *event, const char *data);
/* How many event-stream clients are connected. */
size_t ag_endpoint_stream_clients(const struct ag_endpoint *ep);
/* The port actually bound. */
int ag_endpoint_port(const struct ag_endpoint *ep);
