/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Events as the kubelet records them (client-go tools/record): POST
 * /api/v1/namespaces/<ns>/events with source {component: kubelet, host},
 * reportingComponent/Instance, firstTimestamp, lastTimestamp and count 1;
 * a repeat of the same event (same object, fieldPath, type, reason and
 * message) PATCHes the existing one with count+1 and a new lastTimestamp
 * instead of creating another. Failed writes are retried up to 12 times,
 * 10 s apart. Node events go to the "default" namespace.
 */

#include "agent/client/apiclient.h"
#include "agent/core/loop.h"

struct ag_events;

struct ag_event_object {
        const char *kind;       /* "Pod", "Node" */
        const char *namespace_; /* NULL for cluster-scoped objects */
        const char *name;
        const char *uid;
        const char *field_path; /* "spec.containers{web}" or NULL */
};

int ag_events_new(struct ag_loop *loop, struct ag_api *api, const char *node_name,
                  struct ag_events **ret, struct cb_error *err);
void ag_events_free(struct ag_events *ev);

/* type: "Normal" or "Warning". Never fails: problems are logged. */
void ag_events_record(struct ag_events *ev, const struct ag_event_object *obj, const char *type,
                      const char *reason, const char *message);
