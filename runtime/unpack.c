/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Safe layer extraction.
 *
 * libarchive only reads here; every file system change is ours, made with
 * *at() calls relative to an fd of the target directory:
 *
 *  - an entry path is split into components; an absolute path or a ".."
 *    component refuses the whole layer (no sanitising: a layer that tries
 *    is hostile or broken, and either way should not run);
 *  - parent components are opened one at a time with
 *    O_DIRECTORY|O_NOFOLLOW, creating missing ones (0755). A parent that is
 *    a symlink is refused, so no entry is ever written through a symlink,
 *    wherever it points (layer tars list real paths, so a legitimate layer
 *    never needs one);
 *  - the final component is removed first when it exists (a directory is
 *    kept when the entry is a directory), then created with O_EXCL /
 *    mknodat / symlinkat / linkat, which never follow a symlink;
 *  - hardlink targets go through the same path checks, and linkat() is
 *    called without AT_SYMLINK_FOLLOW.
 *
 * Whiteouts, with RT_UNPACK_OVERLAY_WHITEOUTS, become overlayfs whiteouts:
 * ".wh.<name>" a 0/0 char device <name>, ".wh..wh..opq" the xattr
 * trusted.overlay.opaque=y on its directory. Other ".wh..wh." entries (aufs
 * bookkeeping) are skipped, and trusted.overlay.* xattrs carried by the
 * archive itself are dropped, so a layer cannot forge overlay metadata.
 */
#include "runtime/image.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "lib/cleanup.h"
#include "runtime/image_internal.h"

#define WH_PREFIX     ".wh."
#define WH_META       ".wh..wh."
#define WH_OPAQUE     ".wh..wh..opq"
#define OVL_OPAQUE    "trusted.overlay.opaque"
#define OVL_XATTR_PFX "trusted.overlay."

struct dirtime {
        char *path; /* relative to the target dir */
        struct timespec ts[2];
};

struct unpack_ctx {
        int rootfd;
        int flags;
        struct dirtime *dirs;
        size_t ndirs, capdirs;
};

/* Removes parentfd/name unless it is a directory and keep_dir is set.
 * Returns 1 when a directory was kept, 0 otherwise. */
static int remove_existing(int parentfd, const char *name, int keep_dir, const char *entry,
                           struct cb_error *err)
{
        struct stat st;
        if (fstatat(parentfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno == ENOENT)
                        return 0;
                return cb_error_set(err, errno, "layer entry \"%s\": cannot stat", entry);
        }
        if (S_ISDIR(st.st_mode) && keep_dir)
                return 1;
        if (rt_rm_rf_at(parentfd, name, err) < 0)
                return cb_error_prefix(err, "layer entry \"%s\": cannot replace", entry);
        return 0;
}

static int apply_xattrs(int fd, struct archive_entry *e, const char *entry, struct cb_error *err)
{
        const char *name;
        const void *value;
        size_t size;
        archive_entry_xattr_reset(e);
        while (archive_entry_xattr_next(e, &name, &value, &size) == ARCHIVE_OK) {
                if (strncmp(name, OVL_XATTR_PFX, strlen(OVL_XATTR_PFX)) == 0)
                        continue;
                if (fsetxattr(fd, name, value, size, 0) < 0 && errno != ENOTSUP)
                        return cb_error_set(err, errno, "layer entry \"%s\": cannot set xattr %s",
                                            entry, name);
        }
        return 0;
}

static void entry_times(struct archive_entry *e, struct timespec ts[2])
{
        ts[1].tv_sec = archive_entry_mtime(e);
        ts[1].tv_nsec = archive_entry_mtime_nsec(e);
        if (archive_entry_atime_is_set(e)) {
                ts[0].tv_sec = archive_entry_atime(e);
                ts[0].tv_nsec = archive_entry_atime_nsec(e);
        } else {
                ts[0] = ts[1];
        }
}

/* Ownership first: chown clears set-id bits, so the mode comes after. */
static int apply_meta_fd(int fd, struct archive_entry *e, const char *entry, int times,
                         struct cb_error *err)
{
        if (fchown(fd, (uid_t)archive_entry_uid(e), (gid_t)archive_entry_gid(e)) < 0)
                return cb_error_set(err, errno, "layer entry \"%s\": cannot chown", entry);
        if (fchmod(fd, archive_entry_perm(e) & 07777) < 0)
                return cb_error_set(err, errno, "layer entry \"%s\": cannot chmod", entry);
        if (apply_xattrs(fd, e, entry, err) < 0)
                return -1;
        if (times) {
                struct timespec ts[2];
                entry_times(e, ts);
                if (futimens(fd, ts) < 0)
                        return cb_error_set(err, errno, "layer entry \"%s\": cannot set times",
                                            entry);
        }
        return 0;
}

static int write_file(struct archive *a, int parentfd, const char *name, struct archive_entry *e,
                      const char *entry, struct cb_error *err)
{
        if (remove_existing(parentfd, name, 0, entry, err) < 0)
                return -1;
        _cleanup_close_ int fd =
            openat(parentfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return cb_error_set(err, errno, "layer entry \"%s\": cannot create", entry);
        const void *buf;
        size_t len;
        la_int64_t off;
        int r;
        while ((r = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK) {
                const char *p = buf;
                while (len > 0) {
                        ssize_t n = pwrite(fd, p, len, off);
                        if (n < 0) {
                                if (errno == EINTR)
                                        continue;
                                return cb_error_set(err, errno, "layer entry \"%s\": cannot write",
                                                    entry);
                        }
                        p += n;
                        off += n;
                        len -= (size_t)n;
                }
        }
        if (r != ARCHIVE_EOF)
                return cb_error_set(err, 0, "layer entry \"%s\": cannot read data: %s", entry,
                                    archive_error_string(a));
        /* A sparse file may end in a hole. */
        if (ftruncate(fd, archive_entry_size(e)) < 0)
                return cb_error_set(err, errno, "layer entry \"%s\": cannot truncate", entry);
        return apply_meta_fd(fd, e, entry, 1, err);
}

static int make_dir(struct unpack_ctx *c, int parentfd, const char *name, struct archive_entry *e,
                    const char *entry, struct cb_error *err)
{
        int kept = remove_existing(parentfd, name, 1, entry, err);
        if (kept < 0)
                return -1;
        if (!kept && mkdirat(parentfd, name, 0700) < 0)
                return cb_error_set(err, errno, "layer entry \"%s\": cannot mkdir", entry);
        _cleanup_close_ int fd =
            openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return cb_error_set(err, errno, "layer entry \"%s\": cannot open", entry);
        if (apply_meta_fd(fd, e, entry, 0, err) < 0)
                return -1;
        /* Later entries change the directory's mtime: set it at the end. */
        if (c->ndirs == c->capdirs) {
                size_t ncap = c->capdirs ? c->capdirs * 2 : 64;
                struct dirtime *nd = realloc(c->dirs, ncap * sizeof(*nd));
                if (nd == NULL)
                        return cb_error_set(err, ENOMEM, "layer entry \"%s\"", entry);
                c->dirs = nd;
                c->capdirs = ncap;
        }
        struct dirtime *dt = &c->dirs[c->ndirs];
        dt->path = strdup(entry);
        if (dt->path == NULL)
                return cb_error_set(err, ENOMEM, "layer entry \"%s\"", entry);
        entry_times(e, dt->ts);
        c->ndirs++;
        return 0;
}

static int meta_at(int parentfd, const char *name, struct archive_entry *e, const char *entry,
                   int chmod_too, struct cb_error *err)
{
        if (fchownat(parentfd, name, (uid_t)archive_entry_uid(e), (gid_t)archive_entry_gid(e),
                     AT_SYMLINK_NOFOLLOW) < 0)
                return cb_error_set(err, errno, "layer entry \"%s\": cannot chown", entry);
        /* The node was just created by us in a directory only we write, and
         * is not a symlink, so following is not a concern here. */
        if (chmod_too && fchmodat(parentfd, name, archive_entry_perm(e) & 07777, 0) < 0)
                return cb_error_set(err, errno, "layer entry \"%s\": cannot chmod", entry);
        struct timespec ts[2];
        entry_times(e, ts);
        if (utimensat(parentfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
                return cb_error_set(err, errno, "layer entry \"%s\": cannot set times", entry);
        return 0;
}

static int make_hardlink(struct unpack_ctx *c, int parentfd, const char *name, const char *target,
                         const char *entry, struct cb_error *err)
{
        struct rt_components tc;
        const char *why;
        if (rt_split_path(target, &tc, &why) < 0)
                return cb_error_set(err, 0, "layer entry \"%s\": hardlink target \"%s\": %s", entry,
                                    target, why);
        if (tc.n == 0) {
                rt_components_free(&tc);
                return cb_error_set(err, 0,
                                    "layer entry \"%s\": hardlink target \"%s\" is the layer root",
                                    entry, target);
        }
        int tfd = rt_open_dirs_beneath(c->rootfd, tc.v, tc.n - 1, 0, entry, err);
        if (tfd < 0) {
                rt_components_free(&tc);
                return cb_error_prefix(err, "hardlink target \"%s\"", target);
        }
        int ret = remove_existing(parentfd, name, 0, entry, err);
        if (ret >= 0 && linkat(tfd, tc.v[tc.n - 1], parentfd, name, 0) < 0)
                ret = cb_error_set(err, errno, "layer entry \"%s\": cannot link to \"%s\"", entry,
                                   target);
        close(tfd);
        rt_components_free(&tc);
        return ret < 0 ? -1 : 0;
}

static int whiteout(int parentfd, const char *base, const char *entry, struct cb_error *err)
{
        if (strcmp(base, WH_OPAQUE) == 0) {
                if (fsetxattr(parentfd, OVL_OPAQUE, "y", 1, 0) < 0)
                        return cb_error_set(err, errno,
                                            "layer entry \"%s\": cannot mark the directory "
                                            "opaque (" OVL_OPAQUE ")",
                                            entry);
                return 0;
        }
        if (strncmp(base, WH_META, strlen(WH_META)) == 0)
                return 0;
        const char *name = base + strlen(WH_PREFIX);
        if (*name == '\0' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                return cb_error_set(err, 0, "layer entry \"%s\": invalid whiteout", entry);
        if (remove_existing(parentfd, name, 0, entry, err) < 0)
                return -1;
        if (mknodat(parentfd, name, S_IFCHR | 0000, makedev(0, 0)) < 0)
                return cb_error_set(err, errno, "layer entry \"%s\": cannot create whiteout",
                                    entry);
        return 0;
}

static int unpack_entry(struct unpack_ctx *c, struct archive *a, struct archive_entry *e,
                        struct cb_error *err)
{
        const char *entry = archive_entry_pathname(e);
        if (entry == NULL)
                return cb_error_set(err, 0, "layer entry with an unreadable path name");
        struct rt_components pc;
        const char *why;
        if (rt_split_path(entry, &pc, &why) < 0)
                return cb_error_set(err, 0, "layer entry \"%s\": %s; refusing the layer", entry,
                                    why);
        if (pc.n == 0) { /* the layer root itself */
                rt_components_free(&pc);
                return 0;
        }
        const char *base = pc.v[pc.n - 1];
        int parentfd = rt_open_dirs_beneath(c->rootfd, pc.v, pc.n - 1, 1, entry, err);
        int ret = parentfd < 0 ? -1 : 0;
        const char *hl = archive_entry_hardlink(e);
        if (ret < 0) {
                /* error set */
        } else if ((c->flags & RT_UNPACK_OVERLAY_WHITEOUTS) &&
                   strncmp(base, WH_PREFIX, strlen(WH_PREFIX)) == 0) {
                ret = whiteout(parentfd, base, entry, err);
        } else if (hl != NULL) {
                ret = make_hardlink(c, parentfd, base, hl, entry, err);
        } else {
                switch (archive_entry_filetype(e)) {
                case AE_IFREG:
                        ret = write_file(a, parentfd, base, e, entry, err);
                        break;
                case AE_IFDIR:
                        ret = make_dir(c, parentfd, base, e, entry, err);
                        break;
                case AE_IFLNK:
                        ret = remove_existing(parentfd, base, 0, entry, err);
                        if (ret >= 0 &&
                            symlinkat(archive_entry_symlink(e) ? archive_entry_symlink(e) : "",
                                      parentfd, base) < 0)
                                ret = cb_error_set(
                                    err, errno, "layer entry \"%s\": cannot create symlink", entry);
                        if (ret >= 0)
                                ret = meta_at(parentfd, base, e, entry, 0, err);
                        break;
                case AE_IFCHR:
                case AE_IFBLK:
                case AE_IFIFO:
                        ret = remove_existing(parentfd, base, 0, entry, err);
                        if (ret >= 0 &&
                            mknodat(parentfd, base,
                                    archive_entry_filetype(e) | (archive_entry_perm(e) & 07777),
                                    archive_entry_rdev(e)) < 0)
                                ret = cb_error_set(err, errno,
                                                   "layer entry \"%s\": cannot create node", entry);
                        if (ret >= 0)
                                ret = meta_at(parentfd, base, e, entry, 1, err);
                        break;
                case AE_IFSOCK: /* sockets are not archived state; tar skips them too */
                        break;
                default:
                        ret = cb_error_set(err, 0, "layer entry \"%s\": unsupported file type 0%o",
                                           entry, (unsigned)archive_entry_filetype(e));
                }
        }
        if (parentfd >= 0)
                close(parentfd);
        rt_components_free(&pc);
        return ret < 0 ? -1 : 0;
}

static int apply_dir_times(struct unpack_ctx *c, struct cb_error *err)
{
        for (size_t i = 0; i < c->ndirs; i++) {
                struct rt_components pc;
                const char *why;
                if (rt_split_path(c->dirs[i].path, &pc, &why) < 0)
                        continue;
                struct cb_error ignored = {0};
                int fd = rt_open_dirs_beneath(c->rootfd, pc.v, pc.n, 0, c->dirs[i].path, &ignored);
                rt_components_free(&pc);
                if (fd < 0) /* replaced by a later entry */
                        continue;
                int r = futimens(fd, c->dirs[i].ts);
                int e = errno;
                close(fd);
                if (r < 0)
                        return cb_error_set(err, e, "layer entry \"%s\": cannot set times",
                                            c->dirs[i].path);
        }
        return 0;
}

int rt_layer_unpack(const char *archive_path, const char *target_dir, int flags,
                    struct cb_error *err)
{
        _cleanup_close_ int afd = open(archive_path, O_RDONLY | O_CLOEXEC);
        if (afd < 0)
                return cb_error_set(err, errno, "cannot open layer %s", archive_path);
        struct unpack_ctx c = {.flags = flags};
        c.rootfd = open(target_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (c.rootfd < 0)
                return cb_error_set(err, errno, "cannot open %s", target_dir);
        struct archive *a = archive_read_new();
        int ret = 0;
        if (a == NULL) {
                ret = cb_error_set(err, ENOMEM, "cannot unpack %s", archive_path);
                goto out;
        }
        archive_read_support_filter_all(a);
        archive_read_support_format_tar(a);
        if (archive_read_open_fd(a, afd, 65536) != ARCHIVE_OK) {
                ret = cb_error_set(err, 0, "cannot read layer %s: %s", archive_path,
                                   archive_error_string(a));
                goto out;
        }
        for (;;) {
                struct archive_entry *e;
                int r = archive_read_next_header(a, &e);
                if (r == ARCHIVE_EOF)
                        break;
                if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
                        ret = cb_error_set(err, 0, "cannot read layer %s: %s", archive_path,
                                           archive_error_string(a));
                        goto out;
                }
                if (unpack_entry(&c, a, e, err) < 0) {
                        ret = -1;
                        goto out;
                }
        }
        ret = apply_dir_times(&c, err);
out:
        if (a != NULL)
                archive_read_free(a);
        for (size_t i = 0; i < c.ndirs; i++)
                free(c.dirs[i].path);
        free(c.dirs);
        close(c.rootfd);
        return ret;
}

int rt_unpack_main(int argc, char **argv)
{
        /* __unpack REPORT_FD ARCHIVE DIR FLAGS PARENT_PID */
        if (argc != 6)
                return 2;
        char *end;
        long fd = strtol(argv[1], &end, 10);
        if (*end != '\0' || fd < 3 || fd > 1024)
                return 2;
        long flags = strtol(argv[4], &end, 10);
        if (*end != '\0' || flags < 0 || flags > INT_MAX)
                return 2;
        long ppid = strtol(argv[5], &end, 10);
        if (*end != '\0' || ppid <= 0)
                return 2;
        /* Gone with the agent: a helper left behind would go on writing
         * into a staging dir the next agent removes. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != (pid_t)ppid)
                return 2;
        struct cb_error err = {0};
        if (rt_layer_unpack(argv[2], argv[3], (int)flags, &err) == 0)
                return 0;
        char buf[CB_ERROR_MSG_MAX + 16];
        int n = snprintf(buf, sizeof(buf), "%d %s", err.code, err.msg);
        size_t len = n < 0 ? 0 : (size_t)n >= sizeof(buf) ? sizeof(buf) - 1 : (size_t)n;
        for (size_t off = 0; off < len;) {
                ssize_t w = write((int)fd, buf + off, len - off);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        break;
                off += (size_t)w;
        }
        return 1;
}
