/* SPDX-License-Identifier: Apache-2.0 */
#include "lib/file.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/cleanup.h"

int cb_read_file(const char *path, size_t max, char **ret_buf, size_t *ret_len,
                 struct cb_error *err)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return cb_error_set(err, errno, "cannot open %s", path);
        struct stat st;
        if (fstat(fd, &st) < 0)
                return cb_error_set(err, errno, "cannot stat %s", path);
        if (S_ISDIR(st.st_mode))
                return cb_error_set(err, EISDIR, "cannot read %s", path);
        size_t cap = 4096, len = 0;
        _cleanup_free_ char *buf = malloc(cap);
        if (buf == NULL)
                return cb_error_set(err, ENOMEM, "cannot read %s", path);
        for (;;) {
                if (len + 1 >= cap) {
                        if (cap > max + 1)
                                break;
                        size_t ncap = cap * 2;
                        char *nb = realloc(buf, ncap);
                        if (nb == NULL)
                                return cb_error_set(err, ENOMEM, "cannot read %s", path);
                        buf = nb;
                        cap = ncap;
                }
                ssize_t n = read(fd, buf + len, cap - len - 1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return cb_error_set(err, errno, "cannot read %s", path);
                }
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len > max)
                        return cb_error_set(err, 0,
                                            "%s is larger than the limit of %zu bytes; "
                                            "refusing to read it",
                                            path, max);
        }
        buf[len] = '\0';
        *ret_buf = steal_pointer(&buf);
        if (ret_len != NULL)
                *ret_len = len;
        return 0;
}

static int write_file(const char *path, const void *data, size_t len, int mode, bool sync,
                      struct cb_error *err)
{
        char tmp[4096];
        if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
                return cb_error_set(err, ENAMETOOLONG, "cannot write %s", path);
        _cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        if (fd < 0)
                return cb_error_set(err, errno, "cannot create %s", tmp);
        const char *p = data;
        size_t left = len;
        while (left > 0) {
                ssize_t n = write(fd, p, left);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        int e = errno;
                        unlink(tmp);
                        return cb_error_set(err, e, "cannot write %s", tmp);
                }
                p += n;
                left -= (size_t)n;
        }
        if (sync && fsync(fd) < 0) {
                int e = errno;
                unlink(tmp);
                return cb_error_set(err, e, "cannot sync %s", tmp);
        }
        if (rename(tmp, path) < 0) {
                int e = errno;
                unlink(tmp);
                return cb_error_set(err, e, "cannot rename %s to %s", tmp, path);
        }
        return 0;
}

int cb_write_file_atomic(const char *path, const void *data, size_t len, int mode,
                         struct cb_error *err)
{
        return write_file(path, data, len, mode, true, err);
}

int cb_write_file_replace(const char *path, const void *data, size_t len, int mode,
                          struct cb_error *err)
{
        return write_file(path, data, len, mode, false, err);
}

int cb_mkdir_p(const char *path, unsigned parent_mode, unsigned mode, struct cb_error *err)
{
        char buf[4096];
        if ((size_t)snprintf(buf, sizeof(buf), "%s", path) >= sizeof(buf))
                return cb_error_set(err, ENAMETOOLONG, "cannot create %.200s...", path);
        for (char *p = buf + 1;; p++) {
                if (*p != '/' && *p != '\0')
                        continue;
                char c = *p;
                *p = '\0';
                if (mkdir(buf, c == '\0' ? mode : parent_mode) < 0 && errno != EEXIST)
                        return cb_error_set(err, errno, "cannot create directory %s", buf);
                *p = c;
                if (c == '\0')
                        break;
        }
        return 0;
}
