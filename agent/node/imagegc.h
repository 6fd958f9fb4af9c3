/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The image garbage collector on the agent's loop (k/k pkg/kubelet/images/
 * image_gc_manager.go GarbageCollect and DeleteUnusedImages, started as
 * the kubelet's StartGarbageCollection). Every imageGCPeriod (5 min, the
 * first run at start) a job on its own offload queue ("image gc", one
 * thread; the timer, the queue and the reclaim are agent/node/periodic.h)
 * lists the store (runtime/image_store.c), marks the images the
 * runtime's containers use (rt_images_in_use; also the images of the
 * pods the agent runs, so a container about to be created keeps its
 * image) as used now, removes the unused ones older than
 * imageMaximumGCAge, then statvfs()es <root-dir>/images and, at or above
 * imageGCHighThresholdPercent, removes the least recently used images that
 * are at least imageMinimumGCAge old until usage is back at
 * imageGCLowThresholdPercent. The decisions are agent/k8s/imagegc.h.
 *
 * Events on the Node, as the kubelet's: FreeDiskSpaceFailed (Warning,
 * "Failed to garbage collect required amount of images. Attempted to free
 * N bytes, but only found M bytes eligible to free.") from every run that
 * fell short; ImageGCFailed (Warning, the error) when a run fails and the
 * one before failed too (the first failure is only logged);
 * InvalidDiskCapacity for a filesystem of capacity 0. The counter
 * cubelet_image_garbage_collected_total{reason="age"|"space"} is the
 * kubelet's image_garbage_collected_total.
 */

#include <stdbool.h>
#include <stdint.h>

#include "agent/client/events.h"
#include "agent/core/loop.h"
#include "agent/core/metrics.h"
#include "agent/k8s/imagegc.h"
#include "agent/pods/pods.h"
#include "lib/error.h"

struct ag_imagegc_config {
        struct k8s_imagegc_policy policy;
        uint64_t period_ms; /* 0: K8S_IMAGE_GC_PERIOD_MS */
        const char *root_dir;
        const char *node_name;
};

struct ag_imagegc;

/* pods, events (NULL: standalone) and metrics (may be NULL) are borrowed. */
int ag_imagegc_new(struct ag_loop *loop, const struct ag_imagegc_config *cfg, struct ag_pods *pods,
                   struct ag_events *events, struct ag_metrics *metrics, struct ag_imagegc **ret,
                   struct cb_error *err);
/* Starts the periodic collection (a no-op when the policy disables it). */
void ag_imagegc_start(struct ag_imagegc *gc);
void ag_imagegc_free(struct ag_imagegc *gc);

/* The eviction manager's node-level reclaim (DeleteUnusedImages): removes
 * every unused image at least imageMinimumGCAge old, whatever the
 * thresholds, then calls done on the loop with the bytes freed and the
 * error (NULL on success); freed is -1 when the collector was freed before
 * the job ran. Runs after a collection in progress. -1 when the job cannot
 * be queued (done is not called). */
typedef void (*ag_imagegc_done_fn)(void *data, int64_t freed, const char *error);
int ag_imagegc_reclaim(struct ag_imagegc *gc, ag_imagegc_done_fn done, void *data,
                       struct cb_error *err);
