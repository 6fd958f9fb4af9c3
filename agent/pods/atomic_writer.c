/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/pods/atomic_writer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/cleanup.h"

#define DATA_LINK     "..data"
#define DATA_LINK_TMP "..data_tmp"
#define MAX_FILES     4096

int ag_payload_path_check(const char *path, struct cb_error *err)
{
        size_t n = path ? strlen(path) : 0;
        if (n == 0)
                return cb_error_set(err, 0, "invalid path: must not be empty");
        if (n > PATH_MAX / 2)
                return cb_error_set(err, 0,
                                    "invalid path: must be less than or equal to %d "
                                    "characters",
                                    PATH_MAX / 2);
        if (path[0] == '/')
                return cb_error_set(err, 0, "invalid path: must be relative path: %s", path);
        if (strncmp(path, "..", 2) == 0)
                return cb_error_set(err, 0, "invalid path: must not start with '..': %s", path);
        for (const char *p = path; *p;) {
                const char *e = strchr(p, '/');
                size_t len = e ? (size_t)(e - p) : strlen(p);
                if ((len == 2 && p[0] == '.' && p[1] == '.') || len == 0 ||
                    (len == 1 && p[0] == '.'))
                        return cb_error_set(err, 0, "invalid path: must not contain '..': %s",
                                            path);
                p += len + (e != NULL);
        }
        return 0;
}

/* Removes name under dfd, recursively, never following a symlink. */
static int rm_rf_at(int dfd, const char *name)
{
        struct stat sb;
        if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -1;
        if (!S_ISDIR(sb.st_mode))
                return unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -1 : 0;
        int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -1;
        DIR *d = fdopendir(fd);
        if (d == NULL) {
                close(fd);
                return -1;
        }
        int r = 0;
        for (struct dirent *de; (de = readdir(d)) != NULL;) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (rm_rf_at(dirfd(d), de->d_name) < 0)
                        r = -1;
        }
        closedir(d);
        if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                r = -1;
        return r;
}

/* Whether the file at dfd/path has exactly these bytes, mode and owner. */
static bool same_file(int dfd, const struct ag_payload_file *f, int want_mode)
{
        _cleanup_close_ int fd = openat(dfd, f->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        struct stat sb;
        if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) ||
            (sb.st_mode & 07777) != (unsigned)want_mode || (size_t)sb.st_size != f->len ||
            (f->has_fs_user && sb.st_uid != (uid_t)f->fs_user))
                return false;
        char buf[8192];
        size_t off = 0;
        while (off < f->len) {
                ssize_t k = read(fd, buf, sizeof(buf));
                if (k <= 0 || memcmp(buf, f->data + off, (size_t)k) != 0)
                        return false;
                off += (size_t)k;
        }
        return true;
}

/* Regular files under dfd (recursively), counted. */
static long count_files(int dfd)
{
        int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        DIR *d = fdopendir(fd);
        if (d == NULL) {
                close(fd);
                return -1;
        }
        long n = 0;
        for (struct dirent *de; (de = readdir(d)) != NULL && n >= 0;) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                struct stat sb;
                if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
                        n = -1;
                else if (S_ISREG(sb.st_mode))
                        n++;
                else if (S_ISDIR(sb.st_mode)) {
                        int o = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;
                        _cleanup_close_ int sub = openat(dirfd(d), de->d_name, o | O_CLOEXEC);
                        long k = sub < 0 ? -1 : count_files(sub);
                        n = k < 0 ? -1 : n + k;
                } else {
                        n = -1;
                }
        }
        closedir(d);
        return n;
}

static int effective_mode(const struct ag_payload_file *f, const struct ag_atomic_opts *o)
{
        return (f->mode & 0777) | (o && o->has_fs_group ? 0440 : 0);
}

static int own_dir(int fd, const struct ag_atomic_opts *o)
{
        if (o == NULL || !o->has_fs_group)
                return 0;
        struct stat sb;
        if (fchown(fd, (uid_t)-1, (gid_t)o->fs_group) < 0 || fstat(fd, &sb) < 0)
                return -1;
        return fchmod(fd, (sb.st_mode & 07777) | 02110);
}

/* Opens (making it 0755) each parent directory of path under root. */
static int open_parent(int root, const char *path, const char **ret_base,
                       const struct ag_atomic_opts *o)
{
        int dfd = fcntl(root, F_DUPFD_CLOEXEC, 3);
        const char *p = path;
        for (const char *slash; dfd >= 0 && (slash = strchr(p, '/')) != NULL; p = slash + 1) {
                char comp[NAME_MAX + 1];
                size_t len = (size_t)(slash - p);
                if (len == 0 || len > NAME_MAX) {
                        close(dfd);
                        errno = ENAMETOOLONG;
                        return -1;
                }
                memcpy(comp, p, len);
                comp[len] = '\0';
                bool made = mkdirat(dfd, comp, 0755) == 0;
                if (!made && errno != EEXIST) {
                        close(dfd);
                        return -1;
                }
                int next = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                close(dfd);
                dfd = next;
                if (dfd >= 0 && made && (fchmod(dfd, 0755) < 0 || own_dir(dfd, o) < 0)) {
                        close(dfd);
                        return -1;
                }
        }
        *ret_base = p;
        return dfd;
}

static int write_one(int root, const struct ag_payload_file *f, const struct ag_atomic_opts *o,
                     struct cb_error *err)
{
        const char *base;
        _cleanup_close_ int dfd = open_parent(root, f->path, &base, o);
        if (dfd < 0)
                return cb_error_set(err, errno, "%s: cannot make its directory", f->path);
        _cleanup_close_ int fd =
            openat(dfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return cb_error_set(err, errno, "%s: cannot create it", f->path);
        for (size_t off = 0; off < f->len;) {
                ssize_t k = write(fd, f->data + off, f->len - off);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return cb_error_set(err, errno, "%s: cannot write it", f->path);
                off += (size_t)k;
        }
        if (f->has_fs_user && fchown(fd, (uid_t)f->fs_user, (gid_t)-1) < 0)
                return cb_error_set(err, errno, "%s: cannot set its owner %lld", f->path,
                                    (long long)f->fs_user);
        if (o && o->has_fs_group && fchown(fd, (uid_t)-1, (gid_t)o->fs_group) < 0)
                return cb_error_set(err, errno, "%s: cannot set its group %lld", f->path,
                                    (long long)o->fs_group);
        if (fchmod(fd, (mode_t)effective_mode(f, o)) < 0)
                return cb_error_set(err, errno, "%s: cannot set its mode", f->path);
        return 0;
}

/* The first element of path, in buf. */
static const char *top_name(const char *path, char *buf, size_t size)
{
        const char *e = strchr(path, '/');
        size_t len = e ? (size_t)(e - path) : strlen(path);
        if (len >= size)
                len = size - 1;
        memcpy(buf, path, len);
        buf[len] = '\0';
        return buf;
}

static bool in_payload(const struct ag_payload_file *files, size_t n, const char *name)
{
        char top[NAME_MAX + 1];
        for (size_t i = 0; i < n; i++)
                if (strcmp(top_name(files[i].path, top, sizeof(top)), name) == 0)
                        return true;
        return false;
}

static int make_ts_dir(int dfd, char *name, size_t size, struct cb_error *err)
{
        for (int attempt = 0; attempt < 100; attempt++) {
                struct timespec ts;
                struct tm tm;
                clock_gettime(CLOCK_REALTIME, &ts);
                gmtime_r(&ts.tv_sec, &tm);
                uint32_t rnd = 0;
                if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
                        rnd = (uint32_t)ts.tv_nsec;
                snprintf(name, size, "..%04d_%02d_%02d_%02d_%02d_%02d.%u", tm.tm_year + 1900,
                         tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                         rnd % 1000000000u);
                if (mkdirat(dfd, name, 0755) == 0)
                        return 0;
                if (errno != EEXIST)
                        break;
        }
        return cb_error_set(err, errno, "cannot create the data directory");
}

int ag_atomic_write(const char *dir, const struct ag_payload_file *files, size_t n,
                    const struct ag_atomic_opts *opts, bool *ret_changed, struct cb_error *err)
{
        if (ret_changed)
                *ret_changed = false;
        if (n > MAX_FILES)
                return cb_error_set(err, 0, "%zu files exceed the limit of %d", n, MAX_FILES);
        for (size_t i = 0; i < n; i++) {
                if (ag_payload_path_check(files[i].path, err) < 0)
                        return -1;
                for (size_t k = 0; k < i; k++)
                        if (strcmp(files[i].path, files[k].path) == 0)
                                return cb_error_set(err, 0, "duplicate path %s", files[i].path);
        }
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return cb_error_set(err, errno, "%s", dir);
        char old[NAME_MAX + 1] = "";
        ssize_t ol = readlinkat(dfd, DATA_LINK, old, sizeof(old) - 1);
        if (ol > 0)
                old[ol] = '\0';
        else if (ol < 0 && errno != ENOENT && errno != EINVAL)
                return cb_error_set(err, errno, "%s/%s", dir, DATA_LINK);
        if (ol <= 0 || strncmp(old, "..", 2) != 0 || strchr(old, '/') != NULL)
                old[0] = '\0';

        /* Unchanged: every file the same, none more, the links in place. */
        if (old[0]) {
                _cleanup_close_ int ofd =
                    openat(dfd, old, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                bool same = ofd >= 0 && count_files(ofd) == (long)n;
                for (size_t i = 0; same && i < n; i++)
                        same = same_file(ofd, &files[i], effective_mode(&files[i], opts));
                char top[NAME_MAX + 1];
                for (size_t i = 0; same && i < n; i++) {
                        struct stat sb;
                        same = fstatat(dfd, top_name(files[i].path, top, sizeof(top)), &sb,
                                       AT_SYMLINK_NOFOLLOW) == 0 &&
                               S_ISLNK(sb.st_mode);
                }
                if (same)
                        return 0;
        }

        char ts[NAME_MAX + 1];
        if (make_ts_dir(dfd, ts, sizeof(ts), err) < 0)
                return cb_error_prefix(err, "%s", dir);
        _cleanup_close_ int tfd = openat(dfd, ts, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (tfd < 0 || fchmod(tfd, 0755) < 0 || own_dir(tfd, opts) < 0) {
                cb_error_set(err, errno, "%s/%s", dir, ts);
                rm_rf_at(dfd, ts);
                return -1;
        }
        for (size_t i = 0; i < n; i++)
                if (write_one(tfd, &files[i], opts, err) < 0) {
                        rm_rf_at(dfd, ts);
                        return cb_error_prefix(err, "%s", dir);
                }
        if (fsync(tfd) < 0) {
                /* tmpfs and most file systems accept it; an error is real */
                cb_error_set(err, errno, "%s/%s", dir, ts);
                rm_rf_at(dfd, ts);
                return -1;
        }
        /* The swap: ..data_tmp -> ts, renamed over ..data. */
        unlinkat(dfd, DATA_LINK_TMP, 0);
        if (symlinkat(ts, dfd, DATA_LINK_TMP) < 0 ||
            renameat(dfd, DATA_LINK_TMP, dfd, DATA_LINK) < 0) {
                cb_error_set(err, errno, "%s: cannot switch %s", dir, DATA_LINK);
                rm_rf_at(dfd, ts);
                return -1;
        }
        if (ret_changed)
                *ret_changed = true;
        /* User-visible names, then the names no longer in the payload. */
        char top[NAME_MAX + 1];
        for (size_t i = 0; i < n; i++) {
                top_name(files[i].path, top, sizeof(top));
                struct stat sb;
                if (fstatat(dfd, top, &sb, AT_SYMLINK_NOFOLLOW) == 0)
                        continue;
                char target[NAME_MAX + 16];
                snprintf(target, sizeof(target), "%s/%s", DATA_LINK, top);
                if (symlinkat(target, dfd, top) < 0 && errno != EEXIST)
                        return cb_error_set(err, errno, "%s/%s: cannot link it", dir, top);
        }
        int cfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = cfd >= 0 ? fdopendir(cfd) : NULL;
        if (d == NULL && cfd >= 0)
                close(cfd);
        for (struct dirent *de; d && (de = readdir(d)) != NULL;) {
                if (strncmp(de->d_name, "..", 2) == 0 || strcmp(de->d_name, ".") == 0)
                        continue;
                if (!in_payload(files, n, de->d_name))
                        rm_rf_at(dfd, de->d_name);
        }
        if (d)
                closedir(d);
        if (old[0] && strcmp(old, ts) != 0 && rm_rf_at(dfd, old) < 0)
                return cb_error_set(err, errno, "%s/%s: cannot remove the old data", dir, old);
        if (own_dir(dfd, opts) < 0)
                return cb_error_set(err, errno, "%s: cannot set its group", dir);
        return 0;
}
