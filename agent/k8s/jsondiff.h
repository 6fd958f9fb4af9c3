/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What changed between two versions of a Kubernetes object (or of a part
 * of one, such as a pod's status). Pure: no I/O, no loop.
 *
 * The result is a JSON array of operations, in document order:
 *
 *   {"op":"add",    "path":"status.podIP",                    "new":"10.1.0.5"}
 *   {"op":"change", "path":"status.conditions[type=Ready].status", "old":"False","new":"True"}
 *   {"op":"remove", "path":"status.containerStatuses[name=web].state.waiting", "old":{...}}
 *
 * Objects are compared key by key. Arrays whose elements are objects that
 * Kubernetes identifies by a field are matched by that field, not by
 * index (the strategic-merge-patch keys): conditions by `type`; container
 * statuses, containers, volumes, env and ephemeral containers by `name`;
 * podIPs and hostIPs by `ip`; taints by `key` and `effect`. An element
 * appears in the path as `[type=Ready]` (`[key=k,effect=NoExecute]`). Any
 * other array, or a keyed array whose elements lack the key or repeat it,
 * is one value: a difference anywhere is one "change" of the whole array.
 *
 * At most K8S_DIFF_MAX_OPS operations are produced; a longer diff ends
 * with {"op":"truncated","omitted":N}. Paths deeper than
 * K8S_DIFF_MAX_DEPTH levels are compared as whole values.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#define K8S_DIFF_MAX_OPS   256
#define K8S_DIFF_MAX_DEPTH 24

/* The operations turning old into new (either may be NULL: every field of
 * the other is added / removed). prefix (may be NULL or "") starts every
 * path, e.g. "status". NULL only when out of memory; an empty array when
 * equal. The caller owns the result. */
cJSON *k8s_json_diff(const cJSON *old, const cJSON *new_, const char *prefix);

/* The spec changes of a pod that cubelet acts on, as a diff: its metadata
 * (deletionTimestamp, deletionGracePeriodSeconds, labels, annotations,
 * ownerReferences) and spec, leaving out what changes on every write
 * (resourceVersion, managedFields, generation) and the status. Either
 * object may be NULL. */
cJSON *k8s_pod_spec_diff(const cJSON *old_pod, const cJSON *new_pod);

/* The node changes a pod's life depends on: spec (taints, unschedulable,
 * podCIDR) and its labels. */
cJSON *k8s_node_spec_diff(const cJSON *old_node, const cJSON *new_node);

/* A 64-bit digest of a JSON value that the encodings of the same content
 * share: object keys in any order, a field set to null the same as one left
 * out (the apiserver drops them: lastProbeTime), and the keyed arrays of
 * k8s_json_diff (conditions, containerStatuses, ...: the apiserver's
 * strategic merge may order them otherwise) in any order. Not for hostile
 * input: nothing but an equality check of our own statuses rests on it. */
uint64_t k8s_json_digest(const cJSON *v);

/* True when new_pod is the watch echo of a status this node sent: nothing
 * k8s_pod_spec_diff compares changed from old_pod, and the digest of
 * new_pod's status is one of sent[0..n) (the digests of the statuses sent
 * last: the echo of one PATCH may come after the next status was made).
 * The kubelet's pod config hands a pod whose only change is its status on
 * as a RECONCILE, not an UPDATE, and its pod workers do not sync for it
 * (pkg/kubelet/config/config.go checkAndUpdatePod, kubelet.go
 * HandlePodReconcile); here only a status we sent counts as no change: one
 * written by anyone else is. False when either object or its status is
 * missing, or out of memory. */
bool k8s_pod_is_status_echo(const cJSON *old_pod, const cJSON *new_pod, const uint64_t *sent,
                            size_t n);
