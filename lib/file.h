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
