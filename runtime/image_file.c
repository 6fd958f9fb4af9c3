/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading a file out of an image (its /etc/passwd and /etc/group for a
 * user or group given by name): the image is content an attacker may have
 * written, so the path is resolved here in the merged view of the layers,
 * the way overlayfs shows it to the container, and never against the
 * host:
 *
 *  - one component at a time, each looked up from the topmost layer down
 *    with openat2(O_PATH | O_NOFOLLOW, RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS)
 *    on the canonical path so far (which holds no symlink in the merged
 *    view; a layer where a component of it is a symlink has nothing there);
 *  - an overlay whiteout (a 0/0 character device) hides the lower layers,
 *    an opaque directory (trusted.overlay.opaque=y) the lower layers' entries
 *    beneath it, a non-directory the lower layers' directory;
 *  - a symlink is read (readlinkat) and its target resolved the same way,
 *    an absolute one from the image's root, ".." stops at the root, at most
 *    40 links;
 *  - only a regular file is opened (checked on the O_PATH fd, so a FIFO, a
 *    socket or a device is never opened), with O_NONBLOCK and O_NOFOLLOW,
 *    and it must be the inode inspected; at most max bytes.
 *
 * Blocking file I/O: callers run it off the event loop.
 */
#include "runtime/image.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "lib/cleanup.h"
#include "runtime/syscalls.h"

#define MAX_LINKS 40
#define PATH_SZ   4096

struct layers {
        const struct rt_image *img;
        int *fd; /* O_PATH of each layer's root, bottom first */
        size_t n;
};

/* The entry at path (canonical, relative, no symlink) in layer i: 1 with
 * *ret_fd (O_PATH, the entry itself) and *st, 0 when this layer has
 * nothing there, -1 on an error (errno). */
static int entry_at(const struct layers *l, size_t i, const char *path, int *ret_fd,
                    struct stat *st)
{
        struct rt_open_how how = {.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
                                  .resolve = RT_RESOLVE_IN_ROOT | RT_RESOLVE_NO_SYMLINKS};
        int fd = rt_openat2(l->fd[i], path, &how);
        if (fd < 0)
                return errno == ENOENT || errno == ENOTDIR || errno == ELOOP ? 0 : -1;
        if (fstat(fd, st) < 0) {
                int e = errno;
                close(fd);
                errno = e;
                return -1;
        }
        *ret_fd = fd;
        return 1;
}

static bool is_whiteout(const struct stat *st)
{
        return S_ISCHR(st->st_mode) && st->st_rdev == makedev(0, 0);
}

/* An overlay opaque directory (its lower layers' entries are hidden). */
static bool is_opaque(int dirfd)
{
        _cleanup_close_ int d = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        char v[4];
        return d >= 0 && fgetxattr(d, "trusted.overlay.opaque", v, sizeof(v)) == 1 && v[0] == 'y';
}

/* The layers that make up directory path in the merged view: [*lo, *hi]
 * narrowed from [lo, hi] where hi is the layer holding its topmost entry
 * (a directory). */
static int dir_layers(const struct layers *l, const char *path, size_t hi, size_t *lo)
{
        size_t floor = *lo;
        for (size_t i = hi + 1; i-- > floor;) {
                int fd = -1;
                struct stat st;
                int r = entry_at(l, i, path, &fd, &st);
                if (r < 0)
                        return -1;
                if (r == 0)
                        continue;
                _cleanup_close_ int f = fd;
                if (!S_ISDIR(st.st_mode)) {
                        /* a whiteout or a file: nothing below it shows */
                        *lo = i + 1;
                        return 0;
                }
                if (is_opaque(f)) {
                        *lo = i;
                        return 0;
                }
        }
        *lo = floor;
        return 0;
}

static const char *type_name(mode_t m)
{
        return S_ISFIFO(m)   ? "a FIFO"
               : S_ISCHR(m)  ? "a character device"
               : S_ISBLK(m)  ? "a block device"
               : S_ISSOCK(m) ? "a socket"
               : S_ISDIR(m)  ? "a directory"
                             : "not a regular file";
}

/* Resolves rel in the merged view. 1: found, the topmost entry of the
 * final path in layer *ret_layer at canonical path ret_path (not a
 * symlink) with *st; 0: the image has no such file (or a dangling link); -1:
 * an error (err set). */
static int resolve(const struct layers *l, const char *rel, size_t *ret_layer, char *ret_path,
                   struct stat *st, struct cb_error *err)
{
        char cur[PATH_SZ] = "", rest[PATH_SZ];
        if (snprintf(rest, sizeof(rest), "%s", rel) >= (int)sizeof(rest))
                return cb_error_set(err, ENAMETOOLONG, "image %s: %s", l->img->ref, rel);
        size_t hi = l->n - 1, lo = 0; /* the layers of the directory cur */
        int links = 0;
        char *p = rest;
        for (;;) {
                while (*p == '/')
                        p++;
                if (*p == '\0')
                        return 0; /* rel names a directory, not a file */
                char *slash = strchr(p, '/');
                size_t clen = slash ? (size_t)(slash - p) : strlen(p);
                char comp[256];
                if (clen >= sizeof(comp))
                        return 0; /* longer than NAME_MAX: no such entry */
                memcpy(comp, p, clen);
                comp[clen] = '\0';
                p += clen;
                while (*p == '/')
                        p++;
                bool last = *p == '\0';
                if (strcmp(comp, ".") == 0) {
                        if (last)
                                return 0;
                        continue;
                }
                if (strcmp(comp, "..") == 0) {
                        char *up = strrchr(cur, '/');
                        if (up != NULL)
                                *up = '\0';
                        else
                                cur[0] = '\0';
                        if (last)
                                return 0;
                        /* the layers of the parent: from the root again */
                        char again[PATH_SZ];
                        if (snprintf(again, sizeof(again), "%s/%s", cur, p) >= (int)sizeof(again))
                                return cb_error_set(err, ENAMETOOLONG, "image %s: %s", l->img->ref,
                                                    rel);
                        memcpy(rest, again, strlen(again) + 1);
                        p = rest;
                        cur[0] = '\0';
                        hi = l->n - 1;
                        lo = 0;
                        continue;
                }
                char cand[PATH_SZ];
                if (snprintf(cand, sizeof(cand), "%s%s%s", cur, cur[0] ? "/" : "", comp) >=
                    (int)sizeof(cand))
                        return cb_error_set(err, ENAMETOOLONG, "image %s: %s", l->img->ref, rel);
                int fd = -1;
                size_t at = 0;
                bool found = false;
                for (size_t i = hi + 1; i-- > lo;) {
                        int r = entry_at(l, i, cand, &fd, st);
                        if (r < 0)
                                return cb_error_set(err, errno, "image %s: looking up /%s",
                                                    l->img->ref, cand);
                        if (r == 1) {
                                at = i;
                                found = true;
                                break;
                        }
                }
                if (!found)
                        return 0;
                _cleanup_close_ int f = fd;
                if (is_whiteout(st))
                        return 0; /* deleted by this layer */
                if (S_ISLNK(st->st_mode)) {
                        if (++links > MAX_LINKS)
                                return cb_error_set(err, ELOOP,
                                                    "image %s: /%s: too many levels of symbolic "
                                                    "links",
                                                    l->img->ref, rel);
                        char target[PATH_SZ];
                        ssize_t n = readlinkat(f, "", target, sizeof(target) - 1);
                        if (n < 0)
                                return cb_error_set(err, errno, "image %s: reading the link /%s",
                                                    l->img->ref, cand);
                        target[n] = '\0';
                        char next[PATH_SZ];
                        if (snprintf(next, sizeof(next), "%s/%s", target, p) >= (int)sizeof(next))
                                return cb_error_set(err, ENAMETOOLONG, "image %s: %s", l->img->ref,
                                                    rel);
                        memcpy(rest, next, strlen(next) + 1);
                        p = rest;
                        if (target[0] == '/') {
                                cur[0] = '\0';
                                hi = l->n - 1;
                                lo = 0;
                        }
                        continue;
                }
                if (last) {
                        *ret_layer = at;
                        memcpy(ret_path, cand, strlen(cand) + 1);
                        return 1;
                }
                if (!S_ISDIR(st->st_mode))
                        return 0; /* ENOTDIR in the container */
                size_t nlo = lo;
                if (dir_layers(l, cand, at, &nlo) < 0)
                        return cb_error_set(err, errno, "image %s: looking up /%s", l->img->ref,
                                            cand);
                memcpy(cur, cand, strlen(cand) + 1);
                hi = at;
                lo = nlo;
        }
}

static int read_resolved(const struct layers *l, const char *rel, size_t max, char **ret,
                         struct cb_error *err)
{
        size_t layer = 0;
        char path[PATH_SZ];
        struct stat st;
        int r = resolve(l, rel, &layer, path, &st, err);
        if (r <= 0)
                return r;
        if (!S_ISREG(st.st_mode))
                return cb_error_set(err, 0, "/%s in image %s is %s, not a regular file", rel,
                                    l->img->ref, type_name(st.st_mode));
        if ((uint64_t)st.st_size > max)
                return cb_error_set(err, 0, "/%s in image %s is larger than %zu bytes", rel,
                                    l->img->ref, max);
        struct rt_open_how how = {.flags =
                                      O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC,
                                  .resolve = RT_RESOLVE_IN_ROOT | RT_RESOLVE_NO_SYMLINKS};
        _cleanup_close_ int f = rt_openat2(l->fd[layer], path, &how);
        struct stat now;
        if (f < 0 || fstat(f, &now) < 0)
                return cb_error_set(err, errno, "/%s in image %s", rel, l->img->ref);
        if (!S_ISREG(now.st_mode) || now.st_dev != st.st_dev || now.st_ino != st.st_ino)
                return cb_error_set(err, 0, "/%s in image %s changed while it was read", rel,
                                    l->img->ref);
        if ((uint64_t)now.st_size > max)
                return cb_error_set(err, 0, "/%s in image %s is larger than %zu bytes", rel,
                                    l->img->ref, max);
        _cleanup_free_ char *buf = malloc((size_t)now.st_size + 1);
        if (buf == NULL)
                return cb_error_set(err, ENOMEM, "/%s in image %s", rel, l->img->ref);
        size_t got = 0;
        while (got < (size_t)now.st_size) {
                ssize_t n = read(f, buf + got, (size_t)now.st_size - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return cb_error_set(err, errno, "reading /%s in image %s", rel,
                                            l->img->ref);
                if (n == 0)
                        break;
                got += (size_t)n;
        }
        buf[got] = '\0';
        *ret = steal_pointer(&buf);
        return 0;
}

int rt_image_read_file(const struct rt_image *img, const char *rel, size_t max, char **ret,
                       struct cb_error *err)
{
        *ret = NULL;
        if (img->n_layers == 0)
                return 0;
        struct layers l = {.img = img, .n = img->n_layers};
        l.fd = calloc(img->n_layers, sizeof(int));
        if (l.fd == NULL)
                return cb_error_set(err, ENOMEM, "image %s", img->ref);
        for (size_t i = 0; i < l.n; i++)
                l.fd[i] = -1;
        int r = 0;
        for (size_t i = 0; i < l.n && r == 0; i++) {
                l.fd[i] = open(img->layer_dirs[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (l.fd[i] < 0)
                        r = cb_error_set(err, errno, "image %s: layer %s", img->ref,
                                         img->layer_dirs[i]);
        }
        if (r == 0) {
                /* openat2 (Linux 5.6) or nothing: no path-based fallback */
                struct rt_open_how how = {.flags = O_PATH | O_CLOEXEC,
                                          .resolve = RT_RESOLVE_IN_ROOT};
                int probe = rt_openat2(l.fd[0], ".", &how);
                if (probe < 0 && errno == ENOSYS)
                        r = cb_error_set(err, ENOSYS,
                                         "image %s: cannot resolve /%s inside the image (this "
                                         "kernel has no openat2)",
                                         img->ref, rel);
                if (probe >= 0)
                        close(probe);
        }
        if (r == 0)
                r = read_resolved(&l, rel, max, ret, err);
        for (size_t i = 0; i < l.n; i++)
                if (l.fd[i] >= 0)
                        close(l.fd[i]);
        free(l.fd);
        return r;
}
