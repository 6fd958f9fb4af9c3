/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Recursive removal without following symlinks (rt_rm_rf, rt_rm_rf_at).
 *
 * A file of its own, apart from the layer unpacker (unpack.c), because the
 * container's monitor removes trees too: the cubelet-monitor binary links
 * only the runtime objects it references, and with this in unpack.c every
 * monitor, exec helper and pause process loaded libarchive and what it
 * pulls in (libxml2, ICU, libstdc++: 12 libraries, about 2.4 ms of CPU per
 * exec; issue 17). tests/monitor_libs.sh keeps it out.
 */
#include "runtime/image.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/cleanup.h"
#include "lib/error.h"

int rt_rm_rf_at(int dirfd, const char *name, struct cb_error *err)
{
        struct stat st;
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno == ENOENT)
                        return 0;
                return cb_error_set(err, errno, "cannot stat %s", name);
        }
        if (!S_ISDIR(st.st_mode)) {
                if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
                        return cb_error_set(err, errno, "cannot remove %s", name);
                return 0;
        }
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return cb_error_set(err, errno, "cannot open %s", name);
        DIR *d = fdopendir(fd);
        if (d == NULL) {
                close(fd);
                return cb_error_set(err, errno, "cannot read %s", name);
        }
        struct dirent *de;
        int ret = 0;
        while (ret == 0 && (errno = 0, de = readdir(d)) != NULL) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (rt_rm_rf_at(fd, de->d_name, err) < 0)
                        ret = cb_error_prefix(err, "%s", name);
        }
        closedir(d);
        if (ret < 0)
                return ret;
        if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                return cb_error_set(err, errno, "cannot remove directory %s", name);
        return 0;
}

int rt_rm_rf(const char *path, struct cb_error *err)
{
        _cleanup_free_ char *d = strdup(path);
        _cleanup_free_ char *b = strdup(path);
        if (d == NULL || b == NULL)
                return cb_error_set(err, ENOMEM, "cannot remove %s", path);
        _cleanup_close_ int fd = open(dirname(d), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                if (errno == ENOENT)
                        return 0;
                return cb_error_set(err, errno, "cannot remove %s", path);
        }
        if (rt_rm_rf_at(fd, basename(b), err) < 0)
                return cb_error_prefix(err, "cannot remove %s", path);
        return 0;
}
