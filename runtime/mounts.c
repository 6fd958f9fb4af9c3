/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The container's filesystem, built inside its new mount namespace (so
 * none of it is visible on the host and all of it disappears with the
 * namespace):
 *
 *   1. "/" recursively private: nothing we mount propagates to the host;
 *   2. the rootfs at <state>/rootfs: an overlay of the image layers with
 *      the per-container upper/work dirs, or a bind of a plain directory;
 *   3. /proc (the container's pid namespace: bound from the pod's, mounted
 *      here, or left to step 6 by a process inside a new PID namespace),
 *      /sys read-only, a minimal
 *      /dev on tmpfs (null zero full random urandom tty, pts, shm, ptmx and
 *      the fd/stdin/stdout/stderr links); a privileged container also gets
 *      the host's device nodes and a writable /sys;
 *   4. the volumes (bind ro/rw, tmpfs), each target created and resolved
 *      inside the rootfs with openat2(RESOLVE_IN_ROOT) so a symlink in the
 *      image cannot point a mount at the host, then mounted through the
 *      O_PATH fd (/proc/self/fd/N);
 *   5. pivot_root(".", ".") and a lazy unmount of the old root (the runc
 *      and bubblewrap trick: no put_old directory needed);
 *   6. (rt_mounts_finish) /proc if still missing, the masked and read-only
 *      paths containerd sets for unprivileged containers (/proc/kcore,
 *      /proc/keys, /proc/sys, /sys/firmware, ...);
 *   7. "/" remounted read-only when asked (per-mount flag: the volumes and
 *      /dev, /proc stay as they are).
 * runtime/init.c says which process runs which part, and why.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "lib/cleanup.h"
#include "runtime/container.h"
#include "runtime/container_internal.h"
#include "runtime/syscalls.h"

static void fd_path(char *buf, size_t size, int fd)
{
        snprintf(buf, size, "/proc/self/fd/%d", fd);
}

#define PROC_SUPER_MAGIC_ 0x9fa0

/* Opens rel (relative to the rootfs, symlinks resolved inside it) as O_PATH.
 * There is no path-based fallback: a kernel without openat2 (before 5.6) is
 * refused by rt_mounts_setup, because an O_NOFOLLOW open checks only the
 * last component and would follow an image's intermediate symlinks against
 * the host's root. */
static int open_in_root(int rootfd, const char *rel)
{
        struct rt_open_how how = {.flags = O_PATH | O_CLOEXEC,
                                  .resolve = RT_RESOLVE_IN_ROOT | RT_RESOLVE_NO_MAGICLINKS};
        return rt_openat2(rootfd, rel, &how);
}

/*
 * Creates every missing component of dest (absolute container path) inside
 * the rootfs; the last one a directory or an empty file. Returns an O_PATH
 * fd of the target.
 */
static int create_in_root(int rootfd, const char *dest, bool is_file, struct cb_error *err)
{
        char path[RT_PATH_MAX];
        if (dest[0] != '/' || strlen(dest) >= sizeof(path))
                return cb_error_set(err, EINVAL,
                                    "mount destination \"%s\" is not an absolute "
                                    "path",
                                    dest);
        snprintf(path, sizeof(path), "%s", dest + 1);
        int parent = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
        if (parent < 0)
                return cb_error_set(err, errno, "cannot dup the rootfs fd");
        char *p = path;
        for (;;) {
                while (*p == '/')
                        p++;
                if (*p == '\0')
                        return parent; /* dest was "/" or ended in '/' */
                char *slash = strchr(p, '/');
                bool last = slash == NULL || slash[strspn(slash, "/")] == '\0';
                if (slash != NULL)
                        *slash = '\0';
                if (strcmp(p, "..") == 0) {
                        close(parent);
                        return cb_error_set(err, EINVAL,
                                            "mount destination \"%s\" contains "
                                            "\"..\"",
                                            dest);
                }
                int fd = open_in_root(rootfd, path);
                if (fd < 0 && errno == ENOENT) {
                        int r;
                        if (last && is_file) {
                                int fl = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW;
                                r = openat(parent, p, fl | O_CLOEXEC, 0644);
                                if (r >= 0)
                                        close(r);
                        } else {
                                r = mkdirat(parent, p, 0755);
                        }
                        if (r < 0 && errno != EEXIST) {
                                int e = errno;
                                close(parent);
                                return cb_error_set(err, e,
                                                    "cannot create %s in the rootfs "
                                                    "(mount destination %s)",
                                                    p, dest);
                        }
                        fd = open_in_root(rootfd, path);
                }
                if (fd < 0) {
                        int e = errno;
                        close(parent);
                        return cb_error_set(err, e, "cannot open %s in the rootfs", dest);
                }
                close(parent);
                parent = fd;
                if (last)
                        return parent;
                *slash = '/';
                p = slash + 1;
        }
}

static int mount_at(int rootfd, const char *dest, bool is_file, const char *src, const char *type,
                    unsigned long flags, const char *data, struct cb_error *err)
{
        _cleanup_close_ int fd = create_in_root(rootfd, dest, is_file, err);
        if (fd < 0)
                return -1;
        char target[64];
        fd_path(target, sizeof(target), fd);
        if (mount(src, target, type, flags, data) < 0)
                return cb_error_set(err, errno, "cannot mount %s on %s (%s)",
                                    src != NULL ? src : "", dest, type != NULL ? type : "bind");
        return 0;
}

/* Attaches the detached mount tree on the O_PATH fd target. */
static int attach_tree(int tree, int target, const char *what, const char *dest,
                       struct cb_error *err)
{
        if (rt_move_mount(tree, "", target, "",
                          RT_MOVE_MOUNT_F_EMPTY_PATH | RT_MOVE_MOUNT_T_EMPTY_PATH) < 0)
                return cb_error_set(err, errno, "cannot mount %s on %s", what, dest);
        return 0;
}

/*
 * Gives the detached tree (or, after the fact, the attached mount whose
 * root is tree) the attributes in set. Recursive when rec (the whole tree,
 * submounts included); without mount_setattr (before Linux 5.12) only the
 * top mount can be changed, by a remount through the tree's own fd, never by
 * a path a container could have swapped meanwhile (issue 15 item 6).
 */
static int set_attrs(int tree, uint64_t set, bool rec, bool attached, struct cb_error *err)
{
        struct rt_mount_attr attr = {.attr_set = set};
        if (rt_mount_setattr(tree, "", AT_EMPTY_PATH | (rec ? RT_AT_RECURSIVE : 0), &attr) == 0)
                return 0;
        if (errno != ENOSYS)
                return cb_error_set(err, errno, "mount_setattr");
        if (rec)
                return cb_error_set(err, ENOSYS,
                                    "cannot make a mount tree read-only recursively "
                                    "(mount_setattr needs Linux 5.12)");
        if (!attached)
                return 1; /* the caller remounts after the attach */
        char target[64];
        fd_path(target, sizeof(target), tree);
        struct statvfs sv;
        unsigned long keep = 0;
        if (statvfs(target, &sv) == 0) {
                if (sv.f_flag & ST_NOSUID)
                        keep |= MS_NOSUID;
                if (sv.f_flag & ST_NODEV)
                        keep |= MS_NODEV;
                if (sv.f_flag & ST_NOEXEC)
                        keep |= MS_NOEXEC;
        }
        unsigned long fl = keep | ((set & RT_MOUNT_ATTR_RDONLY) ? MS_RDONLY : 0) |
                           ((set & RT_MOUNT_ATTR_NOSUID) ? MS_NOSUID : 0) |
                           ((set & RT_MOUNT_ATTR_NODEV) ? MS_NODEV : 0) |
                           ((set & RT_MOUNT_ATTR_NOEXEC) ? MS_NOEXEC : 0);
        if (mount(NULL, target, NULL, MS_REMOUNT | MS_BIND | fl, NULL) < 0)
                return cb_error_set(err, errno, "cannot remount read-only");
        return 0;
}

/*
 * Binds the tree at src_fd/src (src_fd AT_FDCWD: a path; src "": the fd
 * itself) on target: cloned detached, made read-only (attrs) before it is
 * reachable, attached through fds.
 */
static int bind_tree(int src_fd, const char *src, int target, bool rec, uint64_t attrs,
                     bool attrs_rec, const char *dest, struct cb_error *err)
{
        unsigned fl = RT_OPEN_TREE_CLONE | O_CLOEXEC | (rec ? RT_AT_RECURSIVE : 0) |
                      (src[0] == '\0' ? AT_EMPTY_PATH : 0);
        _cleanup_close_ int tree = rt_open_tree(src_fd, src, fl);
        if (tree < 0)
                return cb_error_set(err, errno, "cannot clone the mount %s for %s",
                                    src[0] != '\0' ? src : "(fd)", dest);
        int later = 0;
        if (attrs != 0 && (later = set_attrs(tree, attrs, attrs_rec, false, err)) < 0)
                return cb_error_prefix(err, "%s", dest);
        if (attach_tree(tree, target, src[0] != '\0' ? src : "a bind", dest, err) < 0)
                return -1;
        if (later == 1 && set_attrs(tree, attrs, attrs_rec, true, err) < 0)
                return cb_error_prefix(err, "%s", dest);
        return 0;
}

/* A bind of the host path src on dest (inside the rootfs). */
static int bind_at(int rootfd, const char *dest, bool is_file, const char *src, bool rec,
                   uint64_t attrs, struct cb_error *err)
{
        _cleanup_close_ int fd = create_in_root(rootfd, dest, is_file, err);
        if (fd < 0)
                return -1;
        return bind_tree(AT_FDCWD, src, fd, rec, attrs, rec, dest, err);
}

static int setup_rootfs(const struct rt_container_config *c, const char *state_dir, char *mnt,
                        size_t size, struct cb_error *err)
{
        if ((size_t)snprintf(mnt, size, "%s/rootfs", state_dir) >= size)
                return cb_error_set(err, ENAMETOOLONG, "rootfs path is too long");
        if (c->rootfs_dir != NULL) {
                if (mount(c->rootfs_dir, mnt, NULL, MS_BIND | MS_REC, NULL) < 0)
                        return cb_error_set(err, errno, "cannot bind the rootfs %s on %s",
                                            c->rootfs_dir, mnt);
                return 0;
        }
        /* overlay's lowerdir lists the top layer first */
        char data[8192];
        size_t off = (size_t)snprintf(data, sizeof(data), "lowerdir=");
        for (size_t i = c->n_lower; i-- > 0;) {
                if (strchr(c->lower_dirs[i], ':') != NULL || strchr(c->lower_dirs[i], ',') != NULL)
                        return cb_error_set(err, EINVAL, "layer dir %s contains ':' or ','",
                                            c->lower_dirs[i]);
                off += (size_t)snprintf(data + off, off < sizeof(data) ? sizeof(data) - off : 0,
                                        "%s%s", i + 1 < c->n_lower ? ":" : "", c->lower_dirs[i]);
        }
        off += (size_t)snprintf(data + off, off < sizeof(data) ? sizeof(data) - off : 0,
                                ",upperdir=%s/upper,workdir=%s/work", state_dir, state_dir);
        if (off >= sizeof(data))
                return cb_error_set(err, E2BIG, "overlay options for %zu layers are too long",
                                    c->n_lower);
        if (mount("overlay", mnt, "overlay", 0, data) < 0)
                return cb_error_set(err, errno,
                                    "cannot mount the overlay rootfs on %s (%zu "
                                    "layers)",
                                    mnt, c->n_lower);
        return 0;
}

/* A privileged container gets the host's device nodes, as containerd gives
 * them (its host-devices walk): every character and block device under the
 * host's /dev, made with the same numbers, mode and owner, except the
 * pseudo-terminal, shm and mqueue trees, the console and the nodes made
 * above. Runs before pivot_root, when the host's /dev is still /dev. */
static int copy_host_devices(int hostfd, int devfd, int depth, struct cb_error *err)
{
        static const char *const skip[] = {"pts",     "shm",  "mqueue", "fd",
                                           "console", ".lxc", ".udev"};
        int dfd = dup(hostfd);
        if (dfd < 0)
                return cb_error_set(err, errno, "cannot read the host's /dev");
        DIR *d = fdopendir(dfd);
        if (d == NULL) {
                close(dfd);
                return cb_error_set(err, errno, "cannot read the host's /dev");
        }
        int rc = 0;
        struct dirent *de;
        while (rc == 0 && (de = readdir(d)) != NULL) {
                const char *n = de->d_name;
                if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
                        continue;
                bool skipped = false;
                for (size_t i = 0; depth == 0 && i < CB_ARRAY_SIZE(skip); i++)
                        skipped |= strcmp(n, skip[i]) == 0;
                if (skipped)
                        continue;
                struct stat st;
                if (fstatat(hostfd, n, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue; /* gone meanwhile */
                if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
                        if (mknodat(devfd, n, st.st_mode & (S_IFMT | 07777), st.st_rdev) < 0) {
                                if (errno == EEXIST)
                                        continue;
                                rc =
                                    cb_error_set(err, errno, "cannot create the device /dev/%s", n);
                                break;
                        }
                        (void)fchownat(devfd, n, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW);
                        (void)fchmodat(devfd, n, st.st_mode & 07777, 0);
                } else if (S_ISDIR(st.st_mode) && depth < 4) {
                        if (mkdirat(devfd, n, 0755) < 0 && errno != EEXIST) {
                                rc = cb_error_set(err, errno, "cannot create /dev/%s", n);
                                break;
                        }
                        _cleanup_close_ int sub_host =
                            openat(hostfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        _cleanup_close_ int sub_dev =
                            openat(devfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub_host >= 0 && sub_dev >= 0)
                                rc = copy_host_devices(sub_host, sub_dev, depth + 1, err);
                }
        }
        closedir(d);
        return rc;
}

/* The /dev/null setup_dev just made (or bound), checked to be the null
 * device, as an O_PATH fd: the source of every file mask. Opened before any
 * volume exists, so a volume on /dev/null later cannot change what the
 * masks are made of. */
static int open_null(int rootfd, struct cb_error *err)
{
        int fd = open_in_root(rootfd, "dev/null");
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0) {
                int e = errno;
                if (fd >= 0)
                        close(fd);
                return cb_error_set(err, e, "cannot open the container's /dev/null");
        }
        if (!S_ISCHR(st.st_mode) || major(st.st_rdev) != 1 || minor(st.st_rdev) != 3) {
                close(fd);
                return cb_error_set(err, EPERM, "/dev/null is not the null device (char 1:3)");
        }
        return fd;
}

static int setup_dev(int rootfd, bool privileged, struct cb_error *err)
{
        if (mount_at(rootfd, "/dev", false, "tmpfs", "tmpfs", MS_NOSUID | MS_STRICTATIME,
                     "mode=755,size=65536k", err) < 0)
                return -1;
        _cleanup_close_ int devfd = -1;
        {
                _cleanup_close_ int p = open_in_root(rootfd, "dev");
                if (p < 0)
                        return cb_error_set(err, errno, "cannot open /dev");
                char path[64];
                fd_path(path, sizeof(path), p);
                devfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (devfd < 0)
                        return cb_error_set(err, errno, "cannot open /dev");
        }
        static const struct {
                const char *name;
                unsigned maj, min;
        } devs[] = {{"null", 1, 3},   {"zero", 1, 5},    {"full", 1, 7},
                    {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0}};
        for (size_t i = 0; i < CB_ARRAY_SIZE(devs); i++) {
                if (mknodat(devfd, devs[i].name, S_IFCHR | 0666,
                            makedev(devs[i].maj, devs[i].min)) < 0) {
                        /* no mknod (e.g. a user namespace): bind the host's node */
                        char host[64];
                        snprintf(host, sizeof(host), "/dev/%s", devs[i].name);
                        char dest[64];
                        snprintf(dest, sizeof(dest), "/dev/%s", devs[i].name);
                        if (bind_at(rootfd, dest, true, host, false, 0, err) < 0)
                                return -1;
                        continue;
                }
                if (fchmodat(devfd, devs[i].name, 0666, 0) < 0)
                        return cb_error_set(err, errno, "cannot chmod /dev/%s", devs[i].name);
        }
        if (privileged) {
                _cleanup_close_ int hostfd = open("/dev", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (hostfd < 0)
                        return cb_error_set(err, errno, "cannot open the host's /dev");
                if (copy_host_devices(hostfd, devfd, 0, err) < 0)
                        return -1;
        }
        if (mount_at(rootfd, "/dev/pts", false, "devpts", "devpts", MS_NOSUID | MS_NOEXEC,
                     "newinstance,ptmxmode=0666,mode=0620,gid=5", err) < 0)
                return -1;
        if (mount_at(rootfd, "/dev/shm", false, "shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                     "mode=1777,size=65536k", err) < 0)
                return -1;
        static const char *const links[][2] = {
            {"pts/ptmx", "ptmx"},          {"/proc/self/fd", "fd"},
            {"/proc/self/fd/0", "stdin"},  {"/proc/self/fd/1", "stdout"},
            {"/proc/self/fd/2", "stderr"}, {"/proc/kcore", "core"},
        };
        for (size_t i = 0; i < CB_ARRAY_SIZE(links); i++)
                if (symlinkat(links[i][0], devfd, links[i][1]) < 0 && errno != EEXIST)
                        return cb_error_set(err, errno, "cannot create /dev/%s", links[i][1]);
        return 0;
}

/*
 * An unprivileged container's volume may not cover the /dev or /proc the
 * runtime built (issue 15 item 1, the CVE-2025-31133 pattern): a volume on
 * /dev would let the container choose what /dev/null is, one in /proc what
 * the masks and read-only paths cover. Checked on the resolved target, so
 * an image symlink (/data -> /proc) is caught as well as the plain path.
 */
static int check_target(int fd, const struct stat *dev_root, const char *proc_dir, const char *dest,
                        struct cb_error *err)
{
        struct statfs sf;
        struct stat st;
        if (fstatfs(fd, &sf) < 0 || fstat(fd, &st) < 0)
                return cb_error_set(err, errno, "cannot inspect the mount target %s", dest);
        /* where the kernel resolved it (not a path of ours): below the
         * rootfs's /proc directory even before a procfs is mounted there
         * (a container whose first process mounts its own /proc later) */
        char link[64], where[RT_PATH_MAX];
        fd_path(link, sizeof(link), fd);
        ssize_t n = readlink(link, where, sizeof(where) - 1);
        if (n < 0)
                return cb_error_set(err, errno, "cannot inspect the mount target %s", dest);
        where[n] = '\0';
        size_t pl = strlen(proc_dir);
        bool in_proc = strncmp(where, proc_dir, pl) == 0 && (where[pl] == '\0' || where[pl] == '/');
        if (in_proc || sf.f_type == PROC_SUPER_MAGIC_)
                return cb_error_set(err, EPERM,
                                    "mount destination %s is in /proc: refused for an "
                                    "unprivileged container",
                                    dest);
        if (st.st_dev == dev_root->st_dev && st.st_ino == dev_root->st_ino)
                return cb_error_set(err, EPERM,
                                    "mount destination %s is /dev: refused for an unprivileged "
                                    "container",
                                    dest);
        return 0;
}

static int setup_volumes(const struct rt_container_config *c, int rootfd, const char *mnt,
                         struct cb_error *err)
{
        /* the rootfs's /proc as the kernel names it (the root dir may be
         * reached through a symlink) */
        char link[64], proc_dir[RT_PATH_MAX];
        fd_path(link, sizeof(link), rootfd);
        ssize_t n = readlink(link, proc_dir, sizeof(proc_dir) - sizeof("/proc"));
        if (n < 0 || (size_t)n >= sizeof(proc_dir) - sizeof("/proc"))
                return cb_error_set(err, n < 0 ? errno : ENAMETOOLONG, "cannot name the rootfs %s",
                                    mnt);
        memcpy(proc_dir + n, "/proc", sizeof("/proc"));
        struct stat dev_root;
        {
                _cleanup_close_ int d = open_in_root(rootfd, "dev");
                if (d < 0 || fstat(d, &dev_root) < 0)
                        return cb_error_set(err, errno, "cannot open the container's /dev");
        }
        for (size_t i = 0; i < c->n_mounts; i++) {
                const struct rt_mount *m = &c->mounts[i];
                bool is_file = false;
                struct stat st;
                if (m->type != RT_MOUNT_TMPFS) {
                        if (stat(m->source, &st) < 0)
                                return cb_error_set(err, errno, "mounts[%zu]: source %s", i,
                                                    m->source);
                        is_file = !S_ISDIR(st.st_mode);
                }
                _cleanup_close_ int fd = create_in_root(rootfd, m->destination, is_file, err);
                int r = fd < 0 ? -1 : 0;
                if (r == 0 && !c->privileged)
                        r = check_target(fd, &dev_root, proc_dir, m->destination, err);
                if (r == 0 && m->type == RT_MOUNT_TMPFS) {
                        char target[64];
                        fd_path(target, sizeof(target), fd);
                        if (mount("tmpfs", target, "tmpfs",
                                  MS_NOSUID | MS_NODEV | (m->read_only ? MS_RDONLY : 0),
                                  m->options != NULL ? m->options : "mode=1777") < 0)
                                r = cb_error_set(err, errno, "cannot mount a tmpfs on %s",
                                                 m->destination);
                } else if (r == 0) {
                        /* read-only as runc's "ro": the top mount */
                        r = bind_tree(AT_FDCWD, m->source, fd, true,
                                      m->read_only ? RT_MOUNT_ATTR_RDONLY : 0, false,
                                      m->destination, err);
                }
                if (r < 0)
                        return cb_error_prefix(err, "mounts[%zu] (%s)", i, m->destination);
        }
        return 0;
}

int rt_mounts_bind_host_sys(int rootfd, bool privileged, struct cb_error *err)
{
        /* sysfs of a network namespace we do not own: bind the host's,
         * read-only through every submount (cgroupfs, ...) or not at all
         * (issue 15 item 9) */
        uint64_t ro = RT_MOUNT_ATTR_RDONLY | RT_MOUNT_ATTR_NOSUID | RT_MOUNT_ATTR_NODEV |
                      RT_MOUNT_ATTR_NOEXEC;
        if (bind_at(rootfd, "/sys", false, "/sys", true, privileged ? 0 : ro, err) < 0)
                return cb_error_prefix(err, "cannot bind the host's /sys");
        return 0;
}

/* A new instance of fstype (options: key, value pairs, NULL-ended) with
 * the mount attributes attrs, attached on the target fd: the new mount
 * API, no path resolved, so it needs no /proc (after pivot_root /proc may
 * be missing, or the pod's, where /proc/self of a process outside its PID
 * namespace does not exist). */
static int fs_mount_on(int target, const char *fstype, const char *const *opts, uint64_t attrs,
                       const char *dest, struct cb_error *err)
{
        _cleanup_close_ int fsfd = rt_fsopen(fstype, RT_FSOPEN_CLOEXEC);
        if (fsfd < 0)
                return cb_error_set(err, errno, "cannot open a %s filesystem for %s", fstype, dest);
        for (size_t i = 0; opts != NULL && opts[i] != NULL; i += 2)
                if (rt_fsconfig(fsfd, RT_FSCONFIG_SET_STRING, opts[i], opts[i + 1], 0) < 0)
                        return cb_error_set(err, errno, "%s: %s option %s=%s", dest, fstype,
                                            opts[i], opts[i + 1]);
        if (rt_fsconfig(fsfd, RT_FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
                return cb_error_set(err, errno, "cannot create the %s filesystem for %s", fstype,
                                    dest);
        _cleanup_close_ int tree = rt_fsmount(fsfd, RT_FSMOUNT_CLOEXEC, (unsigned)attrs);
        if (tree < 0)
                return cb_error_set(err, errno, "cannot mount %s on %s", fstype, dest);
        return attach_tree(tree, target, fstype, dest, err);
}

/* A new procfs of the calling process's PID namespace on the container's
 * /proc (resolved inside the rootfs). */
static int mount_proc_at(int rootfd, struct cb_error *err)
{
        _cleanup_close_ int fd = create_in_root(rootfd, "/proc", false, err);
        if (fd < 0)
                return -1;
        return fs_mount_on(fd, "proc", NULL,
                           RT_MOUNT_ATTR_NOSUID | RT_MOUNT_ATTR_NODEV | RT_MOUNT_ATTR_NOEXEC,
                           "/proc", err);
}

/* A path of the container's /proc or /sys as O_PATH, no symlink followed
 * anywhere on the way; -1 with errno ENOENT when it does not exist. */
static int open_kernel_path(const char *path)
{
        struct rt_open_how how = {.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
                                  .resolve = RT_RESOLVE_NO_SYMLINKS | RT_RESOLVE_NO_MAGICLINKS};
        return rt_openat2(AT_FDCWD, path, &how);
}

/*
 * After pivot_root: hide kernel interfaces an unprivileged container has
 * no business with (containerd's default masked and read-only paths).
 * Files are covered with null_fd, the /dev/null the runtime made, opened and
 * checked (char 1:3) before any volume was mounted, so nothing the container
 * controls can become a mask's source (runc CVE-2025-31133).
 * A path that exists but cannot be masked fails the start.
 */
static int mask_paths(int null_fd, struct cb_error *err)
{
        static const char *const masked[] = {
            "/proc/acpi",
            "/proc/asound",
            "/proc/kcore",
            "/proc/keys",
            "/proc/latency_stats",
            "/proc/timer_list",
            "/proc/timer_stats",
            "/proc/sched_debug",
            "/proc/scsi",
            "/sys/firmware",
            "/sys/devices/virtual/powercap",
        };
        static const char *const readonly[] = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                                               "/proc/sysrq-trigger"};
        for (size_t i = 0; i < CB_ARRAY_SIZE(masked); i++) {
                _cleanup_close_ int fd = open_kernel_path(masked[i]);
                struct stat st;
                if (fd < 0 && errno == ENOENT)
                        continue;
                if (fd < 0 || fstat(fd, &st) < 0)
                        return cb_error_set(err, errno, "cannot open %s to mask it", masked[i]);
                if (S_ISDIR(st.st_mode)) {
                        static const char *const opts[] = {"size", "4k", "nr_inodes", "1", NULL};
                        if (fs_mount_on(fd, "tmpfs", opts,
                                        RT_MOUNT_ATTR_RDONLY | RT_MOUNT_ATTR_NOSUID |
                                            RT_MOUNT_ATTR_NODEV | RT_MOUNT_ATTR_NOEXEC,
                                        masked[i], err) < 0)
                                return cb_error_prefix(err, "cannot mask %s", masked[i]);
                } else if (bind_tree(null_fd, "", fd, false, 0, false, masked[i], err) < 0) {
                        return cb_error_prefix(err, "cannot mask %s", masked[i]);
                }
        }
        for (size_t i = 0; i < CB_ARRAY_SIZE(readonly); i++) {
                _cleanup_close_ int fd = open_kernel_path(readonly[i]);
                if (fd < 0 && errno == ENOENT)
                        continue;
                if (fd < 0)
                        return cb_error_set(err, errno, "cannot open %s", readonly[i]);
                if (bind_tree(fd, "", fd, true,
                              RT_MOUNT_ATTR_RDONLY | RT_MOUNT_ATTR_NOSUID | RT_MOUNT_ATTR_NODEV |
                                  RT_MOUNT_ATTR_NOEXEC,
                              false, readonly[i], err) < 0)
                        return cb_error_prefix(err, "cannot make %s read-only", readonly[i]);
        }
        return 0;
}

int rt_mounts_setup(const struct rt_container_config *c, const char *state_dir,
                    const char *proc_src, int *ret_null_fd, struct cb_error *err)
{
        *ret_null_fd = -1;
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return cb_error_set(err, errno,
                                    "cannot make / private in the container's mount "
                                    "namespace");
        char mnt[RT_PATH_MAX];
        if (setup_rootfs(c, state_dir, mnt, sizeof(mnt), err) < 0)
                return -1;
        _cleanup_close_ int rootfd = open(mnt, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0)
                return cb_error_set(err, errno, "cannot open the rootfs %s", mnt);
        {
                /* issue 15 item 8: no openat2, no start (see open_in_root) */
                _cleanup_close_ int probe = open_in_root(rootfd, ".");
                if (probe < 0)
                        return cb_error_set(err, errno,
                                            errno == ENOSYS
                                                ? "this kernel has no openat2 (Linux 5.6 or "
                                                  "later is needed to resolve mount targets "
                                                  "inside the rootfs)"
                                                : "cannot open the rootfs %s",
                                            mnt);
        }
        if (proc_src != NULL && proc_src[0] == '\0' && mount_proc_at(rootfd, err) < 0)
                return -1;
        /* the pod's procfs, mounted by its PID namespace's init when the
         * sandbox was made (runtime/pause.c): a bind, no submounts */
        if (proc_src != NULL && proc_src[0] != '\0' &&
            bind_at(rootfd, "/proc", false, proc_src, false,
                    RT_MOUNT_ATTR_NOSUID | RT_MOUNT_ATTR_NODEV | RT_MOUNT_ATTR_NOEXEC, err) < 0)
                return cb_error_prefix(err, "the pod's /proc");
        unsigned long sysflags = MS_NOSUID | MS_NODEV | MS_NOEXEC | (c->privileged ? 0 : MS_RDONLY);
        if (mount_at(rootfd, "/sys", false, "sysfs", "sysfs", sysflags, NULL, err) < 0 &&
            rt_mounts_bind_host_sys(rootfd, c->privileged, err) < 0)
                return -1;
        if (setup_dev(rootfd, c->privileged, err) < 0)
                return -1;
        _cleanup_close_ int null_fd = c->privileged ? -1 : open_null(rootfd, err);
        if (!c->privileged && null_fd < 0)
                return -1;
        if (setup_volumes(c, rootfd, mnt, err) < 0)
                return -1;
        if (chdir(mnt) < 0)
                return cb_error_set(err, errno, "cannot chdir to the rootfs %s", mnt);
        if (rt_pivot_root(".", ".") < 0)
                return cb_error_set(err, errno, "pivot_root to %s failed", mnt);
        /* the old root is stacked under the new one at "/" now */
        if (umount2(".", MNT_DETACH) < 0)
                return cb_error_set(err, errno, "cannot detach the old root");
        if (chdir("/") < 0)
                return cb_error_set(err, errno, "cannot chdir to the new /");
        *ret_null_fd = null_fd;
        null_fd = -1;
        return 0;
}

int rt_mounts_finish(const struct rt_container_config *c, bool mount_proc, int null_fd,
                     struct cb_error *err)
{
        if (mount_proc) {
                _cleanup_close_ int rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (rootfd < 0)
                        return cb_error_set(err, errno, "cannot open the container's /");
                if (mount_proc_at(rootfd, err) < 0)
                        return -1;
        }
        if (!c->privileged && mask_paths(null_fd, err) < 0)
                return -1;
        if (c->read_only_rootfs &&
            mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0)
                return cb_error_set(err, errno, "cannot remount / read-only");
        return 0;
}
