/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Mirror pods, as the kubelet keeps them (pkg/kubelet/pod/mirror_client.go,
 * kubelet.go syncPod/HandlePodCleanups): for every static pod, the
 * apiserver holds a copy
 *  - POSTed to /api/v1/namespaces/<ns>/pods with the annotation
 *    kubernetes.io/config.mirror = the static pod's config.hash and an
 *    ownerReference to this Node (controller: true), once the Node's uid is
 *    known;
 *  - that carries the static pod's status (PATCH pods/<name>/status with
 *    the mirror's uid as precondition, through a status manager);
 *  - that is replaced when it is not the static pod's (another hash) or
 *    is being deleted: DELETE with gracePeriodSeconds 0 and a uid
 *    precondition, then POST again once the DELETED event arrived. So
 *    `kubectl delete pod` on a mirror pod does not stop the static pod: the
 *    mirror comes back;
 *  - deleted when its static pod is gone (manifest removed), like any
 *    mirror pod of this node without a static pod.
 */

#include <cjson/cJSON.h>

#include "agent/client/apiclient.h"
#include "agent/core/loop.h"
#include "agent/client/reflector.h"
#include "lib/error.h"

struct ag_mirror;

int ag_mirror_new(struct ag_loop *loop, struct ag_api *api, const char *node_name,
                  struct ag_mirror **ret, struct cb_error *err);
void ag_mirror_free(struct ag_mirror *m);

/* The Node's uid (registered, or seen by the node reflector). Mirrors are
 * created from then on. */
void ag_mirror_node_uid(struct ag_mirror *m, const char *uid);
/* A static pod to mirror (its defaulted object, copied) / gone. */
void ag_mirror_static_add(struct ag_mirror *m, const cJSON *pod);
void ag_mirror_static_remove(struct ag_mirror *m, const char *static_uid);
/* A static pod's newest status (copied). */
void ag_mirror_status(struct ag_mirror *m, const char *static_uid, const cJSON *status);
/* A mirror pod of this node as the pod reflector shows it. */
void ag_mirror_observe(struct ag_mirror *m, enum ag_change change, const struct ag_object *o);
/* The first pod list is in: mirrors the apiserver lacks can be told from
 * mirrors not seen yet. */
void ag_mirror_synced(struct ag_mirror *m);

/* The mirror pod object for a static pod (pure; unit tested): the pod
 * without uid, resourceVersion and status, with the mirror annotation and
 * the Node owner reference. */
cJSON *ag_mirror_pod_json(const cJSON *static_pod, const char *node_name, const char *node_uid);
