/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The container garbage collector on the agent's loop (k/k
 * pkg/kubelet/kuberuntime/kuberuntime_gc.go GarbageCollect, started by the
 * kubelet's StartGarbageCollection every ContainerGCPeriod, 1 min, the
 * first run at start). The decisions are agent/k8s/containergc.h.
 *
 * What a dead container holds in cubelet: its runtime directory
 * (<root-dir>/containers/<id>: state, exit record, the overlay's upper and
 * work dirs) only while it is its pod worker's current instance (dead in a
 * back-off, or the last one of a terminated pod until the teardown, which
 * follows at once); a restart retires the instance and removes it off the
 * loop, beside the next start. What stays after it is its CRI log,
 * <pod-logs-dir>/<ns>_<pod>_<uid>/<container>/<restart>.log and its rotated
 * files: a crash-looping container leaves one per restart, and a pod's log
 * directory outlives the pod. Those are the instances this collector
 * removes (the kubelet's removeContainer takes the container's log with
 * it):
 *  - every run: per (pod, container), the current instance and the newest
 *    dead one before it are kept (MaxPerPodContainer 1: `kubectl logs
 *    --previous` reads it), older ones go; a terminated pod keeps its newest
 *    instance; the log directory of a pod the agent no longer knows
 *    (deleted), once every pod source is ready (evictPodLogsDirectories);
 *  - every run too, once every pod source is ready: the runtime
 *    containers (<root-dir>/containers/<id>) no pod worker claims
 *    (ag_pods_claimed: current, starting, retired and being torn down),
 *    not running and unchanged since before the snapshot, as the kubelet's
 *    evictContainers removes every dead container of a pod that no longer
 *    exists (the startup collection, agent/pods/pods.c collect_orphans,
 *    also stops running ones);
 *  - DeleteAllUnusedContainers (the eviction manager's node-level reclaim,
 *    ag_containergc_reclaim): the same, and every instance of a terminated
 *    pod.
 * The scan and the removals run in a job on its own offload queue
 * ("container gc", one thread; the timer, the queue and the reclaim are
 * agent/node/periodic.h), fd-relative below the pod logs directory
 * (O_NOFOLLOW, never crossing into another filesystem); the loop only
 * takes the snapshot of the pods (agent/pods/pods.h ag_pods_gc_snapshot).
 * A log directory made after the snapshot is never taken for a deleted
 * pod's. The collector keeps no state: a run after an agent restart scans
 * again, and what an interrupted run left is found again (a file already
 * gone is no error).
 *
 * A failed run logs "Container garbage collection failed" and makes a
 * ContainerGCFailed Warning event on the Node, as the kubelet's.
 */

#include <stdbool.h>
#include <stdint.h>

#include "agent/client/events.h"
#include "agent/core/loop.h"
#include "agent/k8s/containergc.h"
#include "agent/pods/pods.h"
#include "lib/error.h"

struct ag_containergc_config {
        struct k8s_container_gc_policy policy;
        uint64_t period_ms; /* 0: K8S_CONTAINER_GC_PERIOD_MS */
        const char *pod_logs_dir;
        const char *node_name;
        const char *root_dir; /* the runtime's; NULL: no runtime containers collected */
};

struct ag_containergc;

/* pods and events (NULL: no events) are borrowed. */
int ag_containergc_new(struct ag_loop *loop, const struct ag_containergc_config *cfg,
                       struct ag_pods *pods, struct ag_events *events, struct ag_containergc **ret,
                       struct cb_error *err);
void ag_containergc_start(struct ag_containergc *gc);
void ag_containergc_free(struct ag_containergc *gc);

/* DeleteAllUnusedContainers: a run that also removes every instance of the
 * terminated pods; done is called on the loop with the bytes freed and the
 * error (NULL on success); freed -1 when the collector was freed before the
 * job ran. -1 when the job cannot be queued (done is not called). */
typedef void (*ag_containergc_done_fn)(void *data, int64_t freed, const char *error);
int ag_containergc_reclaim(struct ag_containergc *gc, ag_containergc_done_fn done, void *data,
                           struct cb_error *err);
