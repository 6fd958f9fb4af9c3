/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/pods/subpath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/cleanup.h"
#include "lib/file.h"

static int openat2_beneath(int dirfd, const char *path, int flags)
{
        struct open_how how = {
            .flags = (uint64_t)(flags | O_CLOEXEC),
            .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
        };
        return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

/* Makes the missing directories of path under root, each opened beneath
 * its parent without following a symlink. */
static int make_dirs(int root, const char *path, struct cb_error *err)
{
        _cleanup_close_ int dfd = fcntl(root, F_DUPFD_CLOEXEC, 3);
        for (const char *p = path; dfd >= 0 && *p;) {
                const char *e = strchr(p, '/');
                size_t n = e ? (size_t)(e - p) : strlen(p);
                char comp[NAME_MAX + 1];
                if (n > NAME_MAX)
                        return cb_error_set(err, ENAMETOOLONG, "%s", path);
                memcpy(comp, p, n);
                comp[n] = '\0';
                p += n + (e != NULL);
                if (n == 0 || strcmp(comp, ".") == 0)
                        continue;
                if (mkdirat(dfd, comp, 0755) < 0 && errno != EEXIST)
                        return cb_error_set(err, errno, "mkdir %s", path);
                struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                                       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
                                                  RESOLVE_NO_MAGICLINKS};
                int next = (int)syscall(SYS_openat2, dfd, comp, &how, sizeof(how));
                if (next < 0)
                        return cb_error_set(err, errno, "%s: %s is not a directory in the volume",
                                            path, comp);
                close(dfd);
                dfd = next;
        }
        return dfd < 0 ? cb_error_set(err, errno, "%s", path) : 0;
}

static int is_mounted(const char *path)
{
        struct stat a, b;
        char parent[PATH_MAX];
        snprintf(parent, sizeof(parent), "%s/..", path);
        return stat(path, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev;
}

int ag_subpath_prepare(const char *volume_dir, const char *path, const char *target,
                       struct cb_error *err)
{
        _cleanup_close_ int root = open(volume_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return cb_error_set(err, errno, "volume %s", volume_dir);
        _cleanup_close_ int fd = openat2_beneath(root, path, O_PATH);
        if (fd < 0 && errno == ENOENT) {
                if (make_dirs(root, path, err) < 0)
                        return -1;
                fd = openat2_beneath(root, path, O_PATH);
        }
        if (fd < 0)
                return cb_error_set(err, errno == EXDEV ? 0 : errno,
                                    errno == EXDEV ? "subpath %s leads outside the volume %s"
                                                   : "subpath %s in %s",
                                    path, volume_dir);
        struct stat sb;
        if (fstat(fd, &sb) < 0)
                return cb_error_set(err, errno, "subpath %s", path);
        if (!S_ISDIR(sb.st_mode) && !S_ISREG(sb.st_mode))
                return cb_error_set(err, 0, "subpath %s is neither a file nor a directory", path);
        /* The target: an empty file or directory like the source. */
        char parent[PATH_MAX];
        snprintf(parent, sizeof(parent), "%s", target);
        char *slash = strrchr(parent, '/');
        if (slash == NULL)
                return cb_error_set(err, 0, "subpath target %s", target);
        *slash = '\0';
        if (cb_mkdir_p(parent, 0750, 0750, err) < 0)
                return -1;
        while (is_mounted(target) && umount2(target, MNT_DETACH) == 0)
                ;
        struct stat tb;
        if (lstat(target, &tb) == 0 && (S_ISDIR(tb.st_mode) != S_ISDIR(sb.st_mode))) {
                if ((S_ISDIR(tb.st_mode) ? rmdir(target) : unlink(target)) < 0)
                        return cb_error_set(err, errno, "remove %s", target);
        }
        if (S_ISDIR(sb.st_mode)) {
                if (mkdir(target, 0750) < 0 && errno != EEXIST)
                        return cb_error_set(err, errno, "mkdir %s", target);
        } else {
                int t = open(target, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0640);
                if (t < 0)
                        return cb_error_set(err, errno, "create %s", target);
                close(t);
        }
        char proc[64];
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        if (mount(proc, target, NULL, MS_BIND, NULL) < 0)
                return cb_error_set(err, errno, "bind %s onto %s", path, target);
        return 0;
}
