/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Node membership, as the kubelet does it (kubelet_node_status.go, the
 * node lease controller):
 *  - registration: POST /api/v1/nodes with labels, --register-with-taints,
 *    capacity/allocatable, addresses, nodeInfo and the four conditions; on
 *    409 GET the node and reconcile its labels; retried with backoff
 *    100 ms doubling to 7 s;
 *  - status: every update interval the status is recomputed and PATCHed
 *    (strategic merge, status only) when something other than heartbeat
 *    times changed, else once per report interval;
 *  - the Lease kube-node-lease/<node>, renewed every 0.25 x its duration
 *    with PUT from the last returned object (GET, POST on 404, re-GET on
 *    409 as fallbacks).
 */

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "agent/client/apiclient.h"
#include "agent/core/loop.h"
#include "agent/node/nodeinfo.h"
#include "lib/error.h"

#define AG_NODE_STATUS_UPDATE_MS 10000
#define AG_NODE_STATUS_REPORT_MS 300000
#define AG_NODE_LEASE_DURATION_S 40
#define AG_NODE_LEASE_NAMESPACE  "kube-node-lease"

struct ag_node_config {
        const char *node_name;
        struct ag_node_facts facts; /* hostname is the label and Hostname address */
        int max_pods;
        cJSON *extra_labels; /* object, from --node-labels; borrowed */
        cJSON *taints;       /* array, from --register-with-taints; borrowed */
        uint64_t update_ms, report_ms;
        int lease_duration_s;
        void (*on_registered)(const char *uid, void *data);
        /* After each status update the apiserver took: the Node's
         * status.addresses as it returned them (the kubelet's
         * setLastObservedNodeAddresses); NULL: not wanted. */
        void (*on_addresses)(const cJSON *addresses, void *data);
        void *data;
};

struct ag_nodestatus;

int ag_nodestatus_new(struct ag_loop *loop, struct ag_api *api, const struct ag_node_config *cfg,
                      struct ag_nodestatus **ret, struct cb_error *err);
/* Registers, then keeps the status and the Lease fresh. */
void ag_nodestatus_start(struct ag_nodestatus *ns);
/* The node as the apiserver last showed it (the agent's Node reflector),
 * or NULL once it is deleted; compared with the computed status. */
void ag_nodestatus_observe(struct ag_nodestatus *ns, const cJSON *node);
void ag_nodestatus_free(struct ag_nodestatus *ns);
/* The pressure conditions (K8S_PRESSURE_* of agent/k8s/eviction.h) the
 * eviction manager reports; the next status update carries them, with
 * lastTransitionTime moved for each one that flipped. */
void ag_nodestatus_set_pressure(struct ag_nodestatus *ns, unsigned conditions);
/* The Ready condition: True (KubeletReady) with NULL, else False with
 * reason KubeletNotReady and this message (static storage), e.g. the
 * runtime's network not being ready (setters.go ReadyCondition). */
void ag_nodestatus_set_ready(struct ag_nodestatus *ns, const char *not_ready_message);

/* ---- pure helpers (unit tested) ---- */

/* "k=v,k2=v2" into a JSON object; keys and values checked like the
 * apiserver's label validation. */
int ag_parse_node_labels(const char *s, cJSON **ret, struct cb_error *err);
/* "key=value:Effect,key2:Effect" into a JSON array of taints. */
int ag_parse_taints(const char *s, cJSON **ret, struct cb_error *err);
/* True when the parts of a node status the agent owns differ, ignoring
 * lastHeartbeatTime and lastTransitionTime. */
bool ag_node_status_differs(const cJSON *old_status, const cJSON *new_status);
/* Formats a time: RFC3339 in UTC, with 6 fractional digits when micro. */
void ag_format_time(char *buf, size_t size, bool micro);
