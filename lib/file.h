/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stddef.h>

#include "lib/error.h"

/* Reads a whole file of at most max bytes into a NUL-terminated malloc'd
 * buffer. A larger file is refused with an error naming the limit. */
int cb_read_file(const char *path, size_t max, char **ret_buf, size_t *ret_len,
                 struct cb_error *err);

/* Writes data to path atomically: <path>.tmp (O_CLOEXEC), fsync, rename. */
int cb_write_file_atomic(const char *path, const void *data, size_t len, int mode,
                         struct cb_error *err);

/* Creates path and its missing parents (mkdir -p): the parents with
 * parent_mode, path itself with mode (both under the umask). Existing
 * directories are left as they are. */
int cb_mkdir_p(const char *path, unsigned parent_mode, unsigned mode, struct cb_error *err);
