/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stddef.h>

#include "lib/error.h"

/* Reads a whole file of at most max bytes into a NUL-terminated malloc'd
 * buffer. A larger file is refused with an error naming the limit. */
int cb_read_file(const char *path, size_t max, char **ret_buf, size_t *ret_len,
                 struct cb_error *err);

/* Writes data to path atomically: <path>.tmp (O_CLOEXEC), fsync, rename.
 * For records whose loss in a power failure would leak or repeat
 * something that outlives a reboot (a CNI ADD's cache, image blobs). */
int cb_write_file_atomic(const char *path, const void *data, size_t len, int mode,
                         struct cb_error *err);
/* The same without the fsync: a reader sees the old or the new content
 * whatever happens to the writing process (rename), but a power failure
 * may leave the old one. For state that only a live process needs after
 * an agent restart (worker.json, container state) and derived files: an
 * fsync costs milliseconds of a disk flush, and blocks the caller. */
int cb_write_file_replace(const char *path, const void *data, size_t len, int mode,
                          struct cb_error *err);

/* Creates path and its missing parents (mkdir -p): the parents with
 * parent_mode, path itself with mode (both under the umask). Existing
 * directories are left as they are. */
int cb_mkdir_p(const char *path, unsigned parent_mode, unsigned mode, struct cb_error *err);
