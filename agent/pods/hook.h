/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * httpGet lifecycle hooks (postStart, preStop): one GET to the pod, as the
 * kubelet's runHTTPHandler (k/k pkg/kubelet/lifecycle/handlers.go): the
 * host is the handler's host or the pod IP, the port a number or a named
 * container port, User-Agent kube-lifecycle/<major.minor>, the handler's
 * httpHeaders; the body is discarded and only a transport error (refused,
 * timeout, TLS) fails the hook, not the status code. The request runs in a
 * worker thread of an ag_offload queue (libcurl's easy interface), never on
 * the event loop; the result comes back on the loop.
 */

#include <stdbool.h>
#include <stdint.h>

#include "agent/k8s/k8s.h"
#include "agent/core/offload.h"
#include "lib/error.h"

struct ag_http_hook;

/* The options of every kubelet-style GET aimed at a pod (httpGet probes
 * and hooks): HTTP/1.1, no proxy, no redirects followed, TLS without
 * verification, no connection reuse, the given timeout, headers, body
 * callback and error buffer (CURL_ERROR_SIZE). e is a CURL easy handle. */
void ag_pod_http_setopts(void *e, const char *url, const void *headers, long timeout_ms,
                         size_t (*write_fn)(char *, size_t, size_t, void *), void *write_data,
                         char *errbuf);

/* ok, or error says why (the kubelet's error text). */
typedef void (*ag_http_hook_fn)(bool ok, const char *error, void *data);

struct ag_http_hook *ag_http_hook_start(struct ag_offload *o, const struct k8s_handler *h,
                                        const char *pod_ip, const struct k8s_container_port *ports,
                                        size_t n_ports, int64_t timeout_ms, ag_http_hook_fn fn,
                                        void *data, struct cb_error *err);
/* fn is not called after this (the request itself ends on its timeout). */
void ag_http_hook_cancel(struct ag_http_hook *hk);
