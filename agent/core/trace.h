/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Phase-transition timelines as the Trace Event Format (the JSON
 * chrome://tracing, Perfetto and speedscope open). Pure: no I/O.
 *
 * Input: the /timelines document, {"pods":[{"namespace","name","uid",
 * "gone"?, "timeline":[{"step","offsetUs","time"}], "history"?:[{"kind",
 * "offsetUs", ...}]}]}. Output: {"traceEvents":[...], "displayTimeUnit":"ms",
 * "otherData":{"baseTime": ISO time of ts 0, "baseTimeUs": its µs since the
 * epoch}}, where each pod is a process (pid 1, 2, ... in input order) named
 * "ns/name", whose thread 1 is the pod and threads 2, 3, ... its
 * containers (in order of their first step). Events:
 *  - "X" (complete) spans on the pod's track for each phase (from its
 *    "phase:P" step to the next phase step, the last one to the pod's last
 *    step or, for a pod not gone, to now_us), and on a container's track
 *    for each run (containerStarted:C to the next containerExited:C, or
 *    the end as above), named "running" with args {"restart": N};
 *  - "i" (instant, scope thread) marks for every step, on the container's
 *    track when the step names one ("imageReady:web"; "phase:" and
 *    "statusDelivered:" name a phase), and for every history entry (status
 *    sent / acknowledged, spec changes, events) on the pod's track, with
 *    the entry as args;
 *  - "M" metadata naming processes and threads.
 * ts and dur are microseconds; ts 0 is the earliest first step of any pod
 * (each pod's steps are placed at its first step's wall time plus their
 * monotonic offsetUs, so a pod's track never goes backwards when the wall
 * clock is stepped). Within a track the events are in ts order.
 */

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* now_us: wall µs since the epoch where a live pod's spans end (0: at its
 * last step). NULL only when out of memory. The caller owns the result. */
cJSON *ag_trace_from_timelines(const cJSON *timelines, int64_t now_us);

/* "2026-12-01T23:27:45.123456Z" (fraction optional) as µs since the epoch;
 * -1 when it is not such a time. */
int64_t ag_trace_parse_time(const char *s);

/* Whether a step "prefix:suffix" names a container in its suffix (false
 * for "phase:Running", "statusDelivered:Running" and steps without one). */
int ag_trace_step_container(const char *step, char *name, size_t size);
