/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Image garbage collection decisions, as the kubelet's image manager makes
 * them (k/k pkg/kubelet/images/image_gc_manager.go; validation from
 * pkg/kubelet/apis/config/validation). Pure: the measuring and removing is
 * agent/node/imagegc.c.
 *
 *  - every imageGCPeriod (5 min) the images not used by any container
 *    and not pinned are the candidates, least recently used first (an
 *    image never used sorts before every used one), ties broken by the
 *    time the image was first seen;
 *  - imageMaximumGCAge (0 = off): once the collector has run that long,
 *    every candidate unused for longer than it is removed (reason "age");
 *  - when the image filesystem's usage (100 - available*100/capacity,
 *    integer) is at or above imageGCHighThresholdPercent, candidates that
 *    are at least imageMinimumGCAge old are removed until
 *    capacity*(100-low)/100 - available bytes are freed (reason "space");
 *  - a high threshold of 100 with no maximum age turns the collector off.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

#define K8S_IMAGE_GC_PERIOD_MS    300000 /* ImageGCPeriod */
#define K8S_IMAGE_GC_HIGH_DEFAULT 85
#define K8S_IMAGE_GC_LOW_DEFAULT  80
#define K8S_IMAGE_GC_MIN_AGE_MS   120000 /* imageMinimumGCAge: 2m */
#define K8S_IMAGE_GC_REASON_AGE   "age"
#define K8S_IMAGE_GC_REASON_SPACE "space"

struct k8s_imagegc_policy {
        int high_threshold_percent; /* imageGCHighThresholdPercent */
        int low_threshold_percent;  /* imageGCLowThresholdPercent */
        int64_t min_age_ms;         /* imageMinimumGCAge */
        int64_t max_age_ms;         /* imageMaximumGCAge; 0: off */
};

/* The kubelet's checks of the four fields, with its messages:
 *   invalid configuration: imageGCHighThresholdPercent (--image-gc-high-threshold) 101 must be
 *   between 0 and 100, inclusive
 *   invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) 90 must be less
 *   than imageGCHighThresholdPercent (--image-gc-high-threshold) 85
 *   invalid configuration: imageMaximumGCAge 1m0s must be greater than imageMinimumGCAge 2m0s
 * (several at once are joined with ", " in brackets, as the kubelet's
 * aggregate error). */
int k8s_imagegc_validate(const struct k8s_imagegc_policy *p, struct cb_error *err);

/* A duration as Go's time.Duration prints it ("2m0s", "1h0m0s", "500ms"). */
void k8s_format_go_duration(int64_t ms, char *buf, size_t size);

/* False when the high threshold is 100 and there is no maximum age. */
bool k8s_imagegc_enabled(const struct k8s_imagegc_policy *p);

/* What the collector knows of one image. */
struct k8s_image_record {
        const char *id;
        int64_t size;
        int64_t first_detected_ms;
        int64_t last_used_ms; /* 0: never seen in use */
        bool in_use;          /* a container uses it now */
        bool pinned;
};

/* The candidates (not in use, not pinned) in eviction order: indices into
 * recs written to ret (room for n); returns how many. */
size_t k8s_imagegc_order(const struct k8s_image_record *recs, size_t n, size_t *ret);

/* Whether the candidate goes for its age (freeOldImages): the maximum age is
 * set, the collector began more than that long ago, and the image was last
 * used (never: the epoch) more than that long ago. */
bool k8s_imagegc_too_old(const struct k8s_imagegc_policy *p, const struct k8s_image_record *r,
                         int64_t now_ms, int64_t began_ms);

/* Whether a candidate may go to free space: first seen at least
 * imageMinimumGCAge ago, and not used at or after now. */
bool k8s_imagegc_old_enough(const struct k8s_imagegc_policy *p, const struct k8s_image_record *r,
                            int64_t now_ms);

/* The image filesystem's usage and the bytes to free: *ret_usage_percent
 * as the kubelet computes it; returns the bytes to free when usage is at
 * or above the high threshold, 0 otherwise. capacity must be > 0;
 * available is clamped to capacity. */
int64_t k8s_imagegc_bytes_to_free(const struct k8s_imagegc_policy *p, int64_t capacity,
                                  int64_t available, int *ret_usage_percent);
