/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What happened to each pod on this node, for the local endpoint's
 * /timelines, its live page and `cubelet timeline`: the worker's timeline
 * steps (a copy, so a pod's record outlives its worker), and a history of
 * entries:
 *
 *   {"kind":"status", "diff":[...]}            a status PATCH sent, as a diff
 *                                              against the one sent before
 *                                              (agent/k8s/jsondiff.h); the first
 *                                              is a diff against nothing
 *   {"kind":"statusAck", "accepted":B, "code":N}  the apiserver's answer
 *   {"kind":"spec", "object":"Pod"|"Node/NAME", "diff":[...]}
 *                                              a change cubelet observed in the
 *                                              pod's spec and metadata
 *                                              (deletionTimestamp set, ...) or
 *                                              in its node's (a taint added)
 *   {"kind":"event", "type","reason","message","fieldPath"?}  an event
 *                                              cubelet recorded for the pod
 *
 * each with "time" (RFC 3339, µs), "timeUs" (µs since the epoch) and
 * "offsetUs" (µs after the pod's first step). Steps carry the same three.
 *
 * Bounded: per pod the last AG_PODHIST_ENTRIES entries (older ones are
 * dropped and counted in "dropped") and AG_TIMELINE_MAX steps; pods whose
 * API object is gone are kept (marked "gone") until AG_PODHIST_GONE newer
 * ones are gone too. Live pods are those the pod manager has.
 *
 * Every change is also handed to the sink, for the endpoint's event
 * stream: ("pod", {uid, namespace, name, gone}), ("step", {uid, step,
 * offsetUs, time, timeUs}), ("entry", {uid, entry}).
 */

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#define AG_PODHIST_ENTRIES 64
#define AG_PODHIST_GONE    64

struct ag_podhist;

typedef void (*ag_podhist_sink_fn)(const char *event, const cJSON *data, void *ctx);

struct ag_podhist *ag_podhist_new(void);
void ag_podhist_free(struct ag_podhist *h);
/* fn may be NULL (no sink). */
void ag_podhist_set_sink(struct ag_podhist *h, ag_podhist_sink_fn fn, void *ctx);

/* A pod the manager now has (again: a gone one of the same uid is revived). */
void ag_podhist_pod(struct ag_podhist *h, const char *uid, const char *ns, const char *name);
/* The manager forgot it. */
void ag_podhist_gone(struct ag_podhist *h, const char *uid);
/* A step of the worker's timeline, offset_us after its first. */
void ag_podhist_step(struct ag_podhist *h, const char *uid, const char *step, uint64_t offset_us);
/* A step of a pod without a worker (one admission rejected): at mono_us
 * (CLOCK_MONOTONIC µs; 0: now); the pod's first step is its offset 0. */
void ag_podhist_step_at(struct ag_podhist *h, const char *uid, const char *step, uint64_t mono_us);
/* A status PATCH body ({"metadata":{"uid"},"status":{...}}) sent. */
void ag_podhist_status_sent(struct ag_podhist *h, const char *uid, const char *body);
/* The answer to it (code 0: no response). */
void ag_podhist_status_answer(struct ag_podhist *h, const char *uid, bool accepted, long code);
/* A spec change of the pod ("Pod") or of its node ("Node/NAME"): takes diff
 * (a k8s_json_diff array; an empty one is dropped). */
void ag_podhist_spec(struct ag_podhist *h, const char *uid, const char *object, cJSON *diff);
/* The node as the agent sees it now: what changed in its labels and spec
 * since the last call (k8s_node_spec_diff) goes into every live pod's
 * history. */
void ag_podhist_node(struct ag_podhist *h, const char *node_name, const cJSON *node);
void ag_podhist_event(struct ag_podhist *h, const char *uid, const char *type, const char *reason,
                      const char *message, const char *field_path);

/* {"pods":[{"namespace","name","uid","gone","dropped","timeline":[...],
 * "history":[...]}]}, the live pods first, oldest first. */
cJSON *ag_podhist_json(const struct ag_podhist *h);
