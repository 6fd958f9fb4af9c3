/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Services as the kubelet uses them: the docker-link environment variables
 * of a pod (k/k pkg/kubelet/kubelet_pods.go getServiceEnvVarMap and
 * pkg/kubelet/envvars/envvars.go FromServices). For each Service with a
 * ClusterIP (not "" or "None") of the pod's namespace when
 * enableServiceLinks, and always the `kubernetes` Service of `default`
 * (a Service named kubernetes in the pod's own namespace replaces it):
 *   <SVC>_SERVICE_HOST=<clusterIP>
 *   <SVC>_SERVICE_PORT=<first port>
 *   <SVC>_SERVICE_PORT_<PORTNAME>=<port>        each named port
 *   <SVC>_PORT=<proto>://<ip>:<first port>
 *   <SVC>_PORT_<port>_<PROTO>=<proto>://<ip>:<port>, then its _PROTO,
 *   _PORT and _ADDR                               each port
 * with <SVC> the name upper-cased and '-' made '_', IPv6 addresses in
 * brackets. Go's map makes the kubelet's order random; cubelet orders the
 * Services by name. Pure.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "lib/arena.h"
#include "lib/error.h"

struct k8s_service_port {
        char *name;     /* "" when unnamed */
        int32_t port;   /* spec.ports[].port */
        char *protocol; /* TCP (default), UDP, SCTP */
};

struct k8s_service {
        char *namespace_, *name, *uid, *cluster_ip;
        struct k8s_service_port *ports;
        size_t n_ports;
};

/* The fields above from a Service object. -1 when it is not one (err
 * names the field). */
int k8s_service_from_json(struct cb_arena *a, const cJSON *obj, struct k8s_service *ret,
                          struct cb_error *err);

/* The pod's service variables, "KEY=value" in arena (NULL-terminated). */
int k8s_service_env(struct cb_arena *a, const struct k8s_service *const *svcs, size_t n,
                    const char *pod_namespace, bool enable_service_links, char ***ret_env,
                    size_t *ret_n, struct cb_error *err);
