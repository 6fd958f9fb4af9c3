/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Container logs as the kubelet serves them (`kubectl logs` through the
 * node API, and `cubelet logs` on the node): where the CRI log files of a
 * pod's container are (<dir>/<ns>_<pod>_<uid>/<container>/<restart>.log),
 * the PodLogOptions of /containerLogs, and how each CRI record becomes
 * output. No I/O beyond reading directories and files; nothing prints.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

/* The pod's log directory <dir>/<ns>_<pod>_<uid>: with uid NULL, when pods
 * of this name ran several times (different uids), the one written to last.
 * 0 or -1 (none). */
int ag_podlogs_pod_dir(const char *dir, const char *ns, const char *pod, const char *uid, char *buf,
                       size_t size);
/* The newest and the previous restart number (N of N.log) in a container's
 * log directory (-1: none). -1 when there is no log file at all. */
int ag_podlogs_restarts(const char *container_dir, long *ret_newest, long *ret_previous);
/* The one container directory of a pod log directory; -1 when there are
 * none or several. */
int ag_podlogs_only_container(const char *pod_dir, char *buf, size_t size);

/* PodLogOptions from the query of /containerLogs (the kubelet's names). */
struct ag_log_options {
        bool follow, previous, timestamps;
        bool has_tail_lines, has_limit_bytes, has_since;
        int64_t tail_lines;  /* >= 0 */
        int64_t limit_bytes; /* >= 1 */
        int64_t since_ns;    /* wall clock (CLOCK_REALTIME) in ns: sinceSeconds or sinceTime */
};

/* args are the query's decoded "name=value" fragments (a bare "name" is
 * "name=true" for the booleans). now_ns turns sinceSeconds into a time.
 * Unknown names are ignored, as the kubelet's decoder does; bad values fail
 * with a message naming the parameter. */
int ag_log_options_parse(const char *const *args, size_t n, int64_t now_ns,
                         struct ag_log_options *ret, struct cb_error *err);

/* One CRI record (without its '\n') as the kubelet writes it to the
 * client: the content, a '\n' for a full (F) record, prefixed with the
 * RFC 3339 nano timestamp and a space when opts->timestamps. Records older
 * than since are skipped (0). Malformed records are skipped too (the
 * kubelet logs and skips them). Returns the bytes written into out (cap
 * must be at least len + 40); 0 for a skipped record. */
size_t ag_log_render(const char *rec, size_t len, const struct ag_log_options *opts, char *out,
                     size_t cap);

/* The offset in fd where the last n records (lines) of the file start
 * (0 when it has n or fewer). Reads backwards, so a huge file costs only
 * what is skipped over from its end. */
int ag_log_tail_offset(int fd, int64_t n, int64_t *ret_offset, struct cb_error *err);

/* The text of the last `lines` records of a CRI log file as `kubectl logs
 * --tail` prints it, of which only the last max_bytes bytes are kept (the
 * kubelet's termination message fallback: 80 lines, 2048 bytes). out needs
 * max_bytes + 1 bytes; *ret_len is the length. A missing file is empty. */
int ag_podlogs_tail_text(const char *path, int64_t lines, size_t max_bytes, char *out,
                         size_t *ret_len, struct cb_error *err);
