/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The eviction manager on the agent's loop (k/k pkg/kubelet/eviction/
 * eviction_manager.go synchronize): every monitoring period (10 s) it
 * measures the node's signals, reports MemoryPressure / DiskPressure /
 * PIDPressure (with the transition period) to the node status and to
 * admission, and while a hard threshold is met evicts one pod per cycle,
 * ranked by agent/k8s/eviction.h, then waits for that pod's cleanup (30 s at
 * most) before evicting another. For a disk signal the dead containers
 * (ag_pressure_set_containergc: DeleteAllUnusedContainers), then the image
 * collector's unused images (ag_pressure_set_imagegc; for a nodefs signal
 * only when the images are on the node filesystem) go first. On cgroup v1 a memory threshold
 * notification on the root memory cgroup (memory.usage_in_bytes through
 * cgroup.event_control, as the kubelet's memcg notifier) runs a cycle at
 * once when usage crosses the memory.available threshold.
 *
 * Measurements:
 *   memory.available  = capacity (MemTotal) - working set of the root
 *                       memory cgroup (cg_read_node_memory)
 *   nodefs.*          = statvfs of --root-dir (f_bavail, f_ffree)
 *   imagefs.*         = statvfs of <root-dir>/images (same fs: same numbers)
 *   pid.available     = min(kernel.pid_max, kernel.threads-max) - sysinfo procs
 * Per pod: the pod cgroup's working set and pids.current, each container
 * cgroup's working set, and (for disk signals only) the blocks and inodes
 * of its containers' writable layers, its logs and its pod directory.
 */

#include <stdint.h>

#include "agent/k8s/eviction.h"
#include "agent/client/events.h"
#include "agent/core/loop.h"
#include "agent/node/nodestatus.h"
#include "agent/pods/pods.h"
#include "lib/error.h"

struct ag_pressure_config {
        struct k8s_eviction_thresholds thresholds;
        uint64_t transition_ms; /* evictionPressureTransitionPeriod */
        uint64_t interval_ms;   /* monitoring period */
        const char *root_dir;
        const char *pod_logs_dir;
        const char *cgroup_root;
        int64_t memory_capacity; /* bytes (MemTotal) */
        const char *node_name;
};

struct ag_pressure;

/* ns, pods and events are borrowed and must outlive the manager. */
int ag_pressure_new(struct ag_loop *loop, const struct ag_pressure_config *cfg,
                    struct ag_nodestatus *ns, struct ag_pods *pods, struct ag_events *events,
                    struct ag_pressure **ret, struct cb_error *err);
/* The image collector (borrowed; freed before the manager) that reclaims
 * unused images before pods are evicted for a disk signal, as the kubelet's
 * reclaimNodeLevelResources: the signals are measured again after it, and
 * pods go only while a threshold is still met. */
struct ag_imagegc;
void ag_pressure_set_imagegc(struct ag_pressure *pm, struct ag_imagegc *gc);
/* The container collector (borrowed; freed before the manager), whose
 * DeleteAllUnusedContainers runs before the images are reclaimed. */
struct ag_containergc;
void ag_pressure_set_containergc(struct ag_pressure *pm, struct ag_containergc *gc);
/* The first cycle runs on the next loop iteration. */
void ag_pressure_start(struct ag_pressure *pm);
void ag_pressure_free(struct ag_pressure *pm);

/* The node's signals now. Signals that cannot be measured are left absent
 * and the first such failure is put in *warn (may be NULL); -1 (err) only
 * when nothing could be measured. */
int ag_pressure_measure(const char *root_dir, int64_t memory_capacity, struct k8s_observations *ret,
                        struct cb_error *warn, struct cb_error *err);

/* Blocks and inodes under dir (not crossing mount points, not following
 * symlinks), like du; missing dir gives 0. */
void ag_disk_usage(const char *dir, int64_t *bytes, int64_t *inodes);
