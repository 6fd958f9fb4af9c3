/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Container probes (k/k pkg/kubelet/prober: worker.go, prober.go,
 * pkg/probe/{exec,http,tcp}): one prober per container and probe kind,
 * driven by the agent's loop (timers, fd watchers, a libcurl multi handle
 * of its own), never blocking.
 *
 * Timing: the first probe runs initialDelaySeconds after ag_prober_new,
 * then one every periodSeconds (from the start of the previous one, like
 * the kubelet's ticker; a probe still running skips nothing: the next
 * starts when it has finished and the period has passed), each limited to
 * timeoutSeconds.
 *
 * Results (worker.go doProbe): the initial result is FAILURE for readiness,
 * SUCCESS for liveness and UNKNOWN for startup. A run of
 * successThreshold successes / failureThreshold failures sets the result;
 * fn is told when it changes. After liveness or startup turned FAILURE the
 * prober stops (the kubelet holds the worker until a new container
 * instance: free it and make a new one for the restarted container). A
 * startup prober stops after it turned SUCCESS (the container started;
 * liveness and readiness probers should only be created then).
 *
 * Every failed attempt also reaches fn with the kubelet's Unhealthy event
 * message (prober.go): "Liveness probe failed: <output>" for a failure
 * (exec: the command's output; http: "HTTP probe failed with statuscode:
 * 500" or the client error `Get "http://10.0.0.5:8080/": dial tcp
 * 10.0.0.5:8080: connect: connection refused`; tcp: "dial tcp
 * 10.0.0.5:8080: connect: connection refused"), or "Liveness probe
 * errored: <error>" when the probe could not run at all (unknown named
 * port, container not running). Both count as a failure.
 *
 * httpGet: HTTP/1.1 through libcurl, no proxy, no redirects followed (a
 * 3xx is a success, the kubelet's "Probe terminated redirects" warning),
 * HTTPS without certificate verification, headers: User-Agent
 * kube-probe/<major.minor>, Accept (any type), then httpHeaders (a Host
 * header sets the virtual host). Up to 10 KiB of the body is read.
 */

#include <stdbool.h>
#include <stddef.h>

#include "agent/k8s/k8s.h"
#include "agent/core/loop.h"
#include "lib/error.h"

enum ag_probe_kind { AG_PROBE_LIVENESS, AG_PROBE_READINESS, AG_PROBE_STARTUP };

enum ag_probe_result { AG_PROBE_UNKNOWN, AG_PROBE_SUCCESS, AG_PROBE_FAILURE };

/* What a probe is aimed at; copied by ag_prober_new. */
struct ag_probe_target {
        const char *ip;                         /* pod IP, or "127.0.0.1" for hostNetwork pods */
        const struct k8s_container_port *ports; /* named-port lookup */
        size_t n_ports;
        const char *root_dir, *container_id, *monitor_path; /* exec probes */
        /* httpGet probes: the node's transfers (ag_probe_http_new), shared by
         * every prober; NULL: the prober makes its own. */
        struct ag_curl *http;
};

struct ag_probe_update {
        enum ag_probe_result result; /* after the thresholds */
        bool changed;                /* result differs from the one before */
        /* this attempt failed: the Unhealthy event message, else NULL */
        const char *message;
};

struct ag_prober;
/* Called on every failed attempt and every change of result. The prober
 * may be freed from inside. */
typedef void (*ag_probe_result_fn)(struct ag_prober *p, const struct ag_probe_update *u,
                                   void *data);

/* Fails for a probe without a handler or with a gRPC/sleep handler. */
struct ag_prober *ag_prober_new(struct ag_loop *loop, enum ag_probe_kind kind,
                                const struct k8s_probe *probe, const struct ag_probe_target *t,
                                ag_probe_result_fn fn, void *data, struct cb_error *err);
/* libcurl on the loop for every httpGet probe of the node (one multi
 * handle, one timer, instead of one per prober). Free with ag_curl_free
 * after the probers that use it. */
struct ag_curl;
int ag_probe_http_new(struct ag_loop *loop, struct ag_curl **ret, struct cb_error *err);
/* Stops probing (a running exec is killed and reaped). */
void ag_prober_free(struct ag_prober *p);
/* The current (thresholded) result. */
enum ag_probe_result ag_prober_result(const struct ag_prober *p);
