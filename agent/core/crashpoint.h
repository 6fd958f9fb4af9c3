/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Crash points, a test hook: when the environment names
 * CUBELET_TEST_CRASH_AT=<point>, the agent SIGKILLs itself the first time it
 * reaches that point, as if killed from outside at that very instant
 * (nothing is flushed, no handler runs). A fault scenario gets a kill inside
 * a window too short to hit from outside (tests/faults/crash_points.sh).
 * Without the variable a crash point is a string compare against NULL.
 * An environment variable, not a flag or a config key: a node configured
 * from the documented flags and config file cannot turn it on, and the
 * agent warns at startup whenever it is set. Tests only:
 * docs/reliability.md ("Crash points").
 *
 * The points (each named where it is):
 *   restart-old-removed   agent/pods/worker_jobs.c:retire_work (off the
 *                         loop), a retired instance removed: for a restart
 *                         (podworker.c:restart_or_backoff) the exited one,
 *                         the next one's start queued beside it
 *   pod-cgroup-made       agent/pods/worker_jobs.c:sandbox_work (off the
 *                         loop), the pod cgroup made, before the worker
 *                         knows it (w->cgroup_created, saved in worker.json)
 */

#define AG_CRASHPOINT_ENV "CUBELET_TEST_CRASH_AT"

/* Reads the variable once, before any thread runs; logs a warning when it
 * is set. */
void ag_crashpoint_init(void);

/* SIGKILLs the process when name is the point the variable names. */
void ag_crash_point(const char *name);
