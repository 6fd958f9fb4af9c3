/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The status manager: delivers each pod's newest status to the apiserver
 * with PATCH pods/<name>/status (application/strategic-merge-patch+json,
 * {"metadata":{"uid"},"status"}: the uid acts as a precondition), one
 * request in flight per pod, the newest status winning (statuses set while
 * a PATCH is in flight are coalesced into one follow-up), failures retried
 * with backoff (1 s doubling to 30 s) and a full resync every 10 s that
 * re-sends whatever has not been delivered. Statuses wait while the
 * apiserver is down and are delivered when it is back.
 */

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "agent/client/apiclient.h"
#include "agent/core/loop.h"

struct ag_status_mgr;

/* Called when a pod's status was accepted (or refused for good: gone, or
 * another pod of the same name: delivered is false then). */
typedef void (*ag_status_delivered_fn)(const char *uid, bool delivered, void *data);

int ag_status_mgr_new(struct ag_loop *loop, struct ag_api *api, ag_status_delivered_fn fn,
                      void *data, struct ag_status_mgr **ret, struct cb_error *err);
void ag_status_mgr_free(struct ag_status_mgr *m);

/* Queues status (copied) for the pod; the newest wins. */
int ag_status_mgr_set(struct ag_status_mgr *m, const char *ns, const char *name, const char *uid,
                      const cJSON *status, struct cb_error *err);
/* True when the newest status set for uid has been accepted. */
bool ag_status_mgr_synced(const struct ag_status_mgr *m, const char *uid);
/* Told of every PATCH as it is sent (its body) and of its answer
 * (accepted: 2xx; code 0: no response), for the pod's history. */
struct ag_status_observer {
        void (*sent)(const char *uid, const char *body, void *data);
        void (*answered)(const char *uid, bool accepted, long code, void *data);
        void *data;
};
/* o is copied; NULL stops observing. */
void ag_status_mgr_observe(struct ag_status_mgr *m, const struct ag_status_observer *o);
/* Drops the pod (its API object is gone). */
void ag_status_mgr_forget(struct ag_status_mgr *m, const char *uid);
