/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The pod's API status (v1.PodStatus JSON) from its spec, its last reported
 * status and what the agent observed: the glue between the decoded pod
 * (agent/k8s.h), the runtime's view and status/podstatus.h's rules. Pure.
 * Used by the status manager (PATCH pods/<name>/status) and by
 * `cubelet run-pod` (one JSON line per change).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "agent/k8s/k8s.h"
#include "status/podstatus.h"

/* What the agent knows about one container of the spec. */
struct ag_container_obs {
        bool known;               /* false: never created (default waiting state) */
        const char *container_id; /* "cubelet://<id>" */
        const char *image;        /* as the runtime resolved it; NULL = spec image */
        const char *image_id;     /* digested reference */
        /* Current state. A waiting reason set by the agent (ErrImagePull,
         * CrashLoopBackOff, CreateContainerConfigError, ...) wins over the
         * runtime's. */
        struct st_container_state state;
        struct st_container_state last_state;
        int32_t restart_count;
        bool startup_succeeded;
        bool readiness_succeeded;
        /* The process identity the container was started with (known:
         * has_user): uid, primary gid and supplementary groups. */
        bool has_user;
        uint32_t uid, gid;
        const uint32_t *groups;
        size_t n_groups;
};

struct ag_pod_obs {
        /* Parallel to spec.initContainers and spec.containers; NULL = none known. */
        const struct ag_container_obs *init_containers;
        const struct ag_container_obs *containers;
        enum st_phase cached_phase; /* the last phase this agent computed */
        const cJSON *own_status;    /* the last status this agent computed (NULL: none) */
        bool is_terminal;           /* being deleted or evicted */
        bool sandbox_ready;
        const char *const *pod_ips; /* first IPv4, then IPv6 */
        size_t n_pod_ips;
        const char *const *host_ips; /* the node's InternalIPs, first first */
        size_t n_host_ips;
        int64_t start_time; /* 0 = not started (set once, never changed) */
        /* A sync handler's verdict (eviction, activeDeadlineSeconds): forces
         * the phase with reason and message on every computation; set it
         * only for a pod that is not terminal yet. */
        enum st_phase forced_phase; /* ST_PHASE_NONE when none */
        const char *reason, *message;
        /* Admission rejected the pod: the kubelet's status is then only
         * phase Failed, reason, message, qosClass and startTime (rejectPod). */
        bool rejected;
        /* Extra conditions the agent sets (DisruptionTarget); they replace
         * conditions of the same type from the API status. */
        const struct st_condition *extra_conditions;
        size_t n_extra_conditions;
};

/* The status object. NULL only when out of memory. */
cJSON *ag_pod_status_json(const struct k8s_pod *pod, const struct ag_pod_obs *obs, int64_t now);

/* The phase ag_pod_status_json would report. */
enum st_phase ag_pod_phase(const struct k8s_pod *pod, const struct ag_pod_obs *obs);

/* The status manager's mergePodStatus rule (the kubelet since 1.27): a pod
 * whose containers could still run is never reported terminal. When status
 * turns Failed/Succeeded while the previously reported phase (old_phase,
 * NULL = none) was not terminal and could_have_running is true, status
 * keeps the old phase, reason and message; the container statuses and
 * conditions stay the new ones. The terminal phase goes out with the first
 * status computed after the last container stopped. Returns true when the
 * phase was held. */
bool ag_pod_status_hold_terminal(cJSON *status, const char *old_phase, const char *old_reason,
                                 const char *old_message, bool could_have_running);

/* The status PATCH body: {"metadata":{"uid":...},"status":{...}} (the uid
 * acts as a precondition: the server refuses it for another pod of the
 * same name). Takes ownership of status. */
cJSON *ag_status_patch_body(const struct k8s_pod *pod, cJSON *status);
