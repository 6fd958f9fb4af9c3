/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A small Prometheus registry: counters, gauges and histograms with labels,
 * rendered in the text exposition format 0.0.4 (what /metrics serves).
 *
 * A metric family is created by its first use; later uses must give the
 * same type and the same label names in the same order (the help text of
 * the first use is kept). Labels are passed as a NULL-terminated array of
 * name/value pairs, e.g. (const char *[]){"step", "sandboxReady", NULL};
 * NULL stands for no labels.
 *
 * Rendering is stable: families sorted by name, series by their label
 * values, histogram buckets in increasing order ending with le="+Inf".
 * Numbers are formatted like the Go client (shortest round-trip, %g style
 * with exponent from 1e+06), so the output matches what the kubelet's
 * client_golang would print for the same values.
 */

#include <stddef.h>

#include "lib/error.h"

/* The histogram buckets (upper bounds, seconds), suited to pod start-up
 * steps: from an image already present (milliseconds) to a pull (minutes). */
#define AG_METRICS_NBUCKETS 15
extern const double ag_metrics_buckets[AG_METRICS_NBUCKETS];

struct ag_metrics;

struct ag_metrics *ag_metrics_new(void);
void ag_metrics_free(struct ag_metrics *m);

/* Adds value (>= 0, finite) to a counter. */
int ag_metrics_counter_add(struct ag_metrics *m, const char *name, const char *help,
                           const char *const *labels, double value, struct cb_error *err);

/* Sets a gauge (e.g. the number of pods in each phase). */
int ag_metrics_gauge_set(struct ag_metrics *m, const char *name, const char *help,
                         const char *const *labels, double value, struct cb_error *err);

/* Records one observation (seconds, finite) in a histogram with the
 * ag_metrics_buckets bounds; "le" is reserved and may not be a label. */
int ag_metrics_observe(struct ag_metrics *m, const char *name, const char *help,
                       const char *const *labels, double seconds, struct cb_error *err);

/* The whole registry in the text format, malloc'd; NULL when out of memory. */
char *ag_metrics_render(const struct ag_metrics *m);

/* Formats v like the Prometheus Go client ("0.1", "2.5", "1e+06", "+Inf",
 * "NaN") into buf; returns buf. */
const char *ag_metrics_format_value(double v, char *buf, size_t size);
