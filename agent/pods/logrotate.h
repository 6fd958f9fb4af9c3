/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Container log rotation as the kubelet's container log manager does it
 * (pkg/kubelet/logs/container_log_manager.go): every monitor interval, for
 * each running container, when its CRI log file <dir>/<n>.log is at least
 * containerLogMaxSize bytes:
 *
 *   - <n>.log is renamed to <n>.log.<YYYYMMDD-hhmmss> (local time, the
 *     kubelet's "20060102-150405") and the container's monitor reopens
 *     <n>.log (CRI ReopenContainerLog: rt_container_reopen_log); when it
 *     cannot, the file is renamed back and the next round tries again;
 *   - leftovers of an earlier failed round go (<n>.log.*.tmp, and a
 *     rotated file whose .gz exists);
 *   - the oldest rotated files go until MaxFiles - 1 are left (with the
 *     new file: MaxFiles in all);
 *   - rotated files not yet compressed, but the one just rotated, are
 *     gzip-compressed (<n>.log.<timestamp>.gz, level 1, through a .tmp).
 *
 * The kubelet compresses first and renames last; the files left are the
 * same, but renaming first cuts a flooding container's file at once rather
 * than after the compressions.
 *
 * A missing <n>.log of a running container is reopened too. `kubectl
 * logs` reads only <n>.log, as the kubelet does. The file work runs in
 * containerLogMaxWorkers threads of its own offload queue; the loop only
 * holds a one-shot timer re-armed every interval.
 */

#include <stdbool.h>
#include <stdint.h>

#include "agent/core/loop.h"
#include "lib/error.h"

struct ag_logrotate_policy {
        int64_t max_size;     /* containerLogMaxSize in bytes; < 0: no rotation */
        int max_files;        /* containerLogMaxFiles, >= 2 */
        int max_workers;      /* containerLogMaxWorkers, >= 1 */
        uint64_t interval_ms; /* containerLogMonitorInterval, >= 3 s */
};

#define AG_LOGROTATE_DEFAULT_MAX_SIZE    (10 * 1024 * 1024)
#define AG_LOGROTATE_DEFAULT_MAX_FILES   5
#define AG_LOGROTATE_DEFAULT_WORKERS     1
#define AG_LOGROTATE_DEFAULT_INTERVAL_MS 10000
/* how long the monitor gets to reopen the log */
#define AG_LOGROTATE_REOPEN_TIMEOUT_MS 5000

/* ReopenContainerLog for the container that writes the log; 0 or -1. */
typedef int (*ag_log_reopen_fn)(void *ud, struct cb_error *err);

/* One container's log file (an absolute path), blocking: the kubelet's
 * processContainer and rotateLog. now_s (wall clock) names the rotated
 * file. *ret_rotated tells whether it was rotated. */
int ag_logrotate_file(const char *log_path, const struct ag_logrotate_policy *p, int64_t now_s,
                      ag_log_reopen_fn reopen, void *ud, bool *ret_rotated, struct cb_error *err);

/* The kubelet's container GC keeps one dead instance of a container (for
 * `kubectl logs --previous`) and removes older ones with their logs: for a
 * running <dir>/<N>.log, every <K>.log and <K>.log.* with K < N - 1 goes,
 * so a crash-looping container cannot fill the disk one instance at a time.
 * The manager does it each round, before the rotation. */
int ag_logrotate_prune_instances(const char *log_path, int *ret_removed, struct cb_error *err);

struct ag_logrotate;

/* The manager over every running container of the runtime at root_dir
 * (the kubelet lists the CRI runtime's containers the same way). With
 * max_size < 0 it does nothing. */
int ag_logrotate_new(struct ag_loop *loop, const char *root_dir,
                     const struct ag_logrotate_policy *p, struct ag_logrotate **ret,
                     struct cb_error *err);
/* Waits for the running jobs. */
void ag_logrotate_free(struct ag_logrotate *m);
