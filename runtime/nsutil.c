/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Namespace pins (runtime/nsutil.h). A pod's net, IPC and UTS namespaces
 * are made by a short-lived thread of the caller (rt_ns_pin: pin_thread),
 * which enters them, bind-mounts /proc/thread-self/ns/<name> onto the pin
 * files and ends: the pins are what keeps the namespaces. No process is
 * forked for it.
 *
 * Only the network namespace's pin is in the host's mount table (CNI
 * plugins open it by path). The IPC, UTS and PID namespaces' pins are in
 * the pin space: a mount namespace of the runtime's own, made once per
 * root dir and kept by one pin in the host (rt_ns_pinspace_ensure). Every
 * container start copies the host's mount table (the init's
 * unshare(CLONE_NEWNS)) and detaches the copy after pivot_root, so each
 * pin there made every later start slower as the node filled. The pin
 * space holds a small tmpfs root, a bind of the sandboxes dir at its host
 * path and a procfs, so pins are made, opened and removed there by the same
 * paths as in the host, from a short-lived thread that entered it
 * (unshare(CLONE_FS), then setns: the caller's namespaces never change).
 */
#include "runtime/nsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/cleanup.h"
#include "runtime/syscalls.h"

#ifndef NSFS_MAGIC
#define NSFS_MAGIC 0x6e736673
#endif

static int mount_id(const char *path, uint64_t *ret)
{
        struct statx stx;
        if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) < 0)
                return -1;
        if (!(stx.stx_mask & STATX_MNT_ID)) {
                errno = ENOSYS;
                return -1;
        }
        *ret = stx.stx_mnt_id;
        return 0;
}

/* 1 when dir is a mount point, 0 when not, -1 with errno. */
static int is_mount_point(const char *dir)
{
        char parent[4096];
        if ((size_t)snprintf(parent, sizeof(parent), "%s/..", dir) >= sizeof(parent)) {
                errno = ENAMETOOLONG;
                return -1;
        }
        uint64_t a, b;
        if (mount_id(dir, &a) < 0 || mount_id(parent, &b) < 0)
                return -1;
        return a != b;
}

int rt_ns_make_private_dir(const char *dir, struct cb_error *err)
{
        int mp = is_mount_point(dir);
        if (mp < 0)
                return cb_error_set(err, errno, "cannot inspect the mount of %s", dir);
        if (mp == 0 && mount(dir, dir, NULL, MS_BIND, NULL) < 0)
                return cb_error_set(err, errno, "cannot bind-mount %s onto itself", dir);
        if (mount(NULL, dir, NULL, MS_PRIVATE, NULL) < 0)
                return cb_error_set(err, errno, "cannot make the mount %s private", dir);
        return 0;
}

int rt_ns_release_private_dir(const char *dir, struct cb_error *err)
{
        int mp = is_mount_point(dir);
        if (mp < 0) {
                if (errno == ENOENT)
                        return 0;
                return cb_error_set(err, errno, "cannot inspect the mount of %s", dir);
        }
        /* Two racing rt_ns_make_private_dir calls may have stacked binds. */
        for (int i = 0; i < 8 && mp == 1; i++) {
                if (umount2(dir, MNT_DETACH) < 0 && errno != EINVAL)
                        return cb_error_set(err, errno, "cannot unmount %s", dir);
                mp = is_mount_point(dir);
                if (mp < 0)
                        return cb_error_set(err, errno, "cannot inspect the mount of %s", dir);
        }
        return 0;
}

bool rt_ns_is_pinned(const char *path)
{
        struct statfs sfs;
        if (statfs(path, &sfs) < 0)
                return false;
        return (unsigned long)sfs.f_type == (unsigned long)NSFS_MAGIC;
}

int rt_ns_unpin(const char *path, struct cb_error *err)
{
        /* A pin may have been stacked by an earlier interrupted attempt:
         * unmount until the file is no longer a namespace. */
        for (int i = 0; i < 16 && rt_ns_is_pinned(path); i++) {
                if (umount2(path, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
                        return cb_error_set(err, errno, "cannot unmount the namespace pin %s",
                                            path);
        }
        if (rt_ns_is_pinned(path))
                return cb_error_set(err, EBUSY, "cannot unmount the namespace pin %s", path);
        if (unlink(path) < 0 && errno != ENOENT)
                return cb_error_set(err, errno, "cannot remove the namespace pin %s", path);
        return 0;
}

static int loopback_up(void)
{
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -1;
        struct ifreq ifr;
        memset(&ifr, 0, sizeof(ifr));
        memcpy(ifr.ifr_name, "lo", 3);
        int r = ioctl(fd, SIOCGIFFLAGS, &ifr);
        if (r == 0) {
                ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
                r = ioctl(fd, SIOCSIFFLAGS, &ifr);
        }
        int saved = errno;
        close(fd);
        errno = saved;
        return r;
}

static const struct {
        int flag;
        const char *name;
} ns_types[] = {
    {CLONE_NEWNET, "net"},
    {CLONE_NEWIPC, "ipc"},
    {CLONE_NEWUTS, "uts"},
};

static int bind_pin_from(const char *src, const char *ns_dir, const char *name,
                         struct cb_error *err)
{
        char dst[4096];
        if ((size_t)snprintf(dst, sizeof(dst), "%s/%s", ns_dir, name) >= sizeof(dst))
                return cb_error_set(err, ENAMETOOLONG, "cannot pin the %s namespace", name);
        if (rt_ns_is_pinned(dst))
                return cb_error_set(err, EBUSY, "cannot pin the %s namespace at %s", name, dst);
        _cleanup_close_ int fd = open(dst, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0444);
        if (fd < 0)
                return cb_error_set(err, errno, "cannot create the namespace pin %s", dst);
        if (mount(src, dst, NULL, MS_BIND, NULL) < 0) {
                int e = errno;
                unlink(dst);
                return cb_error_set(err, e, "cannot bind-mount %s onto %s", src, dst);
        }
        return 0;
}

/* Runs fn(arg) in a thread of its own with a small stack (it makes a few
 * system calls) and waits for it. */
static int run_thread(void *(*fn)(void *), void *arg, struct cb_error *err)
{
        pthread_attr_t attr;
        pthread_t t;
        int r = pthread_attr_init(&attr);
        if (r == 0)
                r = pthread_attr_setstacksize(&attr, 128u << 10);
        if (r == 0)
                r = pthread_create(&t, &attr, fn, arg);
        pthread_attr_destroy(&attr);
        if (r != 0)
                return cb_error_set(err, r, "cannot start a thread for the namespace pins");
        pthread_join(t, NULL);
        return 0;
}

/* ---- the pin space -------------------------------------------------------------- */

/* Makes the calling thread's file system context its own and enters the
 * pin space kept at pinspace: for a thread that ends afterwards, or a
 * single-threaded process that goes back (rt_ns_open_pins_here). */
static int enter_pinspace(const char *pinspace, struct cb_error *err)
{
        _cleanup_close_ int fd = open(pinspace, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return cb_error_set(err, errno, "cannot open the pin space %s", pinspace);
        if (unshare(CLONE_FS) < 0)
                return cb_error_set(err, errno, "cannot unshare the file system context");
        if (setns(fd, CLONE_NEWNS) < 0)
                return cb_error_set(err, errno,
                                    "cannot enter the pin space %s (the mount namespace that "
                                    "keeps the pods' IPC, UTS and PID namespaces)",
                                    pinspace);
        return 0;
}

struct in_job {
        const char *pinspace;
        int (*fn)(void *arg, struct cb_error *err);
        void *arg;
        struct cb_error err;
        int rc;
};

static void *in_thread(void *data)
{
        struct in_job *j = data;
        j->rc = enter_pinspace(j->pinspace, &j->err) < 0 ? -1 : j->fn(j->arg, &j->err);
        return NULL;
}

int rt_ns_in_pinspace(const char *pinspace, int (*fn)(void *arg, struct cb_error *err), void *arg,
                      struct cb_error *err)
{
        if (pinspace == NULL || pinspace[0] == '\0')
                return fn(arg, err);
        struct in_job j = {.pinspace = pinspace, .fn = fn, .arg = arg};
        cb_error_clear(&j.err);
        if (run_thread(in_thread, &j, err) < 0)
                return -1;
        if (j.rc < 0 && err != NULL)
                *err = j.err;
        return j.rc;
}

/* Makes the directories of the absolute path in below (a directory fd),
 * component by component, never following a symlink; the last one's fd.
 * ".." is taken as the pin space resolves it later: the parent in the
 * mirror, and "/" at its top (host and space resolve the same string). */
static int mkdir_below(int below, const char *path, struct cb_error *err)
{
        char buf[4096];
        if ((size_t)snprintf(buf, sizeof(buf), "%s", path) >= sizeof(buf))
                return cb_error_set(err, ENAMETOOLONG, "%s is too long", path);
        int fd = fcntl(below, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return cb_error_set(err, errno, "cannot duplicate a directory fd");
        size_t depth = 0;
        char *save = NULL;
        for (char *c = strtok_r(buf, "/", &save); c != NULL; c = strtok_r(NULL, "/", &save)) {
                bool up = strcmp(c, "..") == 0;
                if (strcmp(c, ".") == 0 || (up && depth == 0))
                        continue;
                if (!up && mkdirat(fd, c, 0700) < 0 && errno != EEXIST) {
                        int e = errno;
                        close(fd);
                        return cb_error_set(err, e, "cannot create %s in the pin space", c);
                }
                int next = openat(fd, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                int e = errno;
                close(fd);
                if (next < 0)
                        return cb_error_set(err, e, "cannot open %s in the pin space", c);
                fd = next;
                depth = up ? depth - 1 : depth + 1;
        }
        return fd;
}

struct space_job {
        const char *dir; /* the sandboxes dir, absolute */
        int ns_fd;       /* out: the new mount namespace */
        struct cb_error err;
};

/* Builds the pin space in a new mount namespace of this thread: a tmpfs
 * root that holds a bind of dir at the same path and a procfs (for
 * /proc/thread-self and /proc/<pid>/ns), nothing else of the host's, so
 * no file system of the host is kept busy by it. */
static int build_pinspace(struct space_job *j)
{
        struct cb_error *err = &j->err;
        if (unshare(CLONE_FS | CLONE_NEWNS) < 0)
                return cb_error_set(err, errno, "cannot create the pin space's mount namespace");
        /* nothing made here reaches the host, nothing of the host's comes */
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return cb_error_set(err, errno, "cannot make the pin space's mounts private");
        _cleanup_close_ int tree = rt_open_tree(AT_FDCWD, j->dir, RT_OPEN_TREE_CLONE | O_CLOEXEC);
        if (tree < 0)
                return cb_error_set(err, errno, "cannot clone the mount of %s", j->dir);
        if (mount("tmpfs", j->dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700") < 0)
                return cb_error_set(err, errno, "cannot mount the pin space's root");
        _cleanup_close_ int root = open(j->dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (root < 0)
                return cb_error_set(err, errno, "cannot open the pin space's root");
        _cleanup_close_ int at = mkdir_below(root, j->dir, err);
        if (at < 0)
                return -1;
        if (rt_move_mount(tree, "", at, "",
                          RT_MOVE_MOUNT_F_EMPTY_PATH | RT_MOVE_MOUNT_T_EMPTY_PATH) < 0)
                return cb_error_set(err, errno, "cannot attach %s in the pin space", j->dir);
        char proc[4096];
        if ((size_t)snprintf(proc, sizeof(proc), "%s/proc", j->dir) >= sizeof(proc))
                return cb_error_set(err, ENAMETOOLONG, "%s is too long", j->dir);
        if ((mkdirat(root, "proc", 0555) < 0 && errno != EEXIST) ||
            mount("proc", proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                return cb_error_set(err, errno, "cannot mount a procfs in the pin space");
        if (chdir(j->dir) < 0 || rt_pivot_root(".", ".") < 0)
                return cb_error_set(err, errno, "cannot make the tmpfs the pin space's root");
        if (umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
                return cb_error_set(err, errno,
                                    "cannot detach the host's mounts from the pin space");
        j->ns_fd = open("/proc/thread-self/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (j->ns_fd < 0)
                return cb_error_set(err, errno, "cannot open the pin space's namespace");
        return 0;
}

static void *space_thread(void *data)
{
        build_pinspace(data);
        return NULL;
}

int rt_ns_pinspace_ensure(const char *dir, const char *pinspace, struct cb_error *err)
{
        static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
        if (dir == NULL || dir[0] != '/')
                return cb_error_set(err, EINVAL, "the pin space's dir \"%s\" is not absolute",
                                    dir ? dir : "");
        pthread_mutex_lock(&lock);
        int rc = 0;
        if (!rt_ns_is_pinned(pinspace)) {
                struct space_job j = {.dir = dir, .ns_fd = -1};
                cb_error_clear(&j.err);
                rc = run_thread(space_thread, &j, err);
                if (rc == 0 && j.ns_fd < 0) {
                        if (err != NULL)
                                *err = j.err;
                        rc = -1;
                }
                if (rc == 0) {
                        char src[64];
                        snprintf(src, sizeof(src), "/proc/self/fd/%d", j.ns_fd);
                        _cleanup_close_ int f =
                            open(pinspace, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0444);
                        if (f < 0)
                                rc = cb_error_set(err, errno,
                                                  "cannot create the pin space's pin %s", pinspace);
                        else if (mount(src, pinspace, NULL, MS_BIND, NULL) < 0)
                                rc = cb_error_set(err, errno, "cannot pin the pin space at %s",
                                                  pinspace);
                }
                if (j.ns_fd >= 0)
                        close(j.ns_fd);
        }
        pthread_mutex_unlock(&lock);
        return rc;
}

struct open_job {
        const char *const *paths;
        int *fds;
        size_t n;
};

static void close_fds(int *fds, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (fds[i] >= 0) {
                        close(fds[i]);
                        fds[i] = -1;
                }
}

static int open_pins(void *arg, struct cb_error *err)
{
        struct open_job *o = arg;
        for (size_t i = 0; i < o->n; i++) {
                if (o->paths[i] == NULL || o->paths[i][0] == '\0')
                        continue;
                o->fds[i] = open(o->paths[i], O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                if (o->fds[i] < 0) {
                        int e = errno;
                        close_fds(o->fds, i);
                        return cb_error_set(err, e, "cannot open the namespace pin %s",
                                            o->paths[i]);
                }
        }
        return 0;
}

int rt_ns_open_pins(const char *pinspace, const char *const *paths, int *fds, size_t n,
                    struct cb_error *err)
{
        for (size_t i = 0; i < n; i++)
                fds[i] = -1;
        struct open_job o = {paths, fds, n};
        return rt_ns_in_pinspace(pinspace, open_pins, &o, err);
}

int rt_ns_open_pins_here(const char *pinspace, const char *const *paths, int *fds, size_t n,
                         struct cb_error *err)
{
        for (size_t i = 0; i < n; i++)
                fds[i] = -1;
        struct open_job o = {paths, fds, n};
        if (pinspace == NULL || pinspace[0] == '\0')
                return open_pins(&o, err);
        _cleanup_close_ int host = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        _cleanup_close_ int cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (host < 0 || cwd < 0)
                return cb_error_set(err, errno, "cannot open the caller's mount namespace");
        if (enter_pinspace(pinspace, err) < 0)
                return -1;
        int rc = open_pins(&o, err);
        /* back where the caller was: setns moved its root and cwd */
        if (setns(host, CLONE_NEWNS) < 0 || fchdir(cwd) < 0) {
                int e = errno;
                close_fds(fds, n);
                return cb_error_set(err, e, "cannot return from the pin space %s", pinspace);
        }
        return rc;
}

struct pins_job {
        const char *const *paths;
        size_t n;
        bool pinned; /* for rt_ns_all_pinned_in */
};

static int unpin_all(void *arg, struct cb_error *err)
{
        struct pins_job *u = arg;
        for (size_t i = 0; i < u->n; i++)
                if (u->paths[i] != NULL && u->paths[i][0] != '\0' &&
                    rt_ns_unpin(u->paths[i], err) < 0)
                        return -1;
        return 0;
}

int rt_ns_unpin_in(const char *pinspace, const char *const *paths, size_t n, struct cb_error *err)
{
        struct pins_job u = {paths, n, false};
        return rt_ns_in_pinspace(pinspace, unpin_all, &u, err);
}

static int all_pinned(void *arg, struct cb_error *err)
{
        (void)err;
        struct pins_job *u = arg;
        u->pinned = true;
        for (size_t i = 0; i < u->n; i++)
                if (u->paths[i] != NULL && u->paths[i][0] != '\0' && !rt_ns_is_pinned(u->paths[i]))
                        u->pinned = false;
        return 0;
}

bool rt_ns_all_pinned_in(const char *pinspace, const char *const *paths, size_t n)
{
        struct pins_job u = {paths, n, false};
        struct cb_error ignored;
        return rt_ns_in_pinspace(pinspace, all_pinned, &u, &ignored) == 0 && u.pinned;
}

/* ---- pins ------------------------------------------------------------------------- */

struct process_pin {
        pid_t pid;
        const char *ns_dir, *name;
};

static int pin_process(void *arg, struct cb_error *err)
{
        struct process_pin *p = arg;
        char src[64];
        snprintf(src, sizeof(src), "/proc/%d/ns/%s", (int)p->pid, p->name);
        return bind_pin_from(src, p->ns_dir, p->name, err);
}

int rt_ns_pin_process(pid_t pid, const char *ns_dir, const char *name, const char *pinspace,
                      struct cb_error *err)
{
        struct process_pin p = {pid, ns_dir, name};
        return rt_ns_in_pinspace(pinspace, pin_process, &p, err);
}

/* The pinning thread: the namespaces are its own (net, IPC and UTS
 * namespaces belong to a thread: unshare(2) changes only the caller's), it
 * pins them from /proc/thread-self and ends, and what it leaves is the
 * pins. No other thread's namespaces change, and no copy of the agent is
 * made: a fork of a multi-threaded agent copied its page tables, took a
 * fault on each page the agent wrote while the copy lived, and tore the
 * copy down again, for every pod. The net pin is made in the host's mount
 * table; with a pin space, the thread then enters it for the others. */
struct pin_job {
        const char *ns_dir;
        int flags;
        const char *hostname;
        const char *pinspace;
        struct cb_error err;
        int rc;
};

static void unpin_one(const char *ns_dir, const char *name)
{
        char p[4096];
        snprintf(p, sizeof(p), "%s/%s", ns_dir, name);
        rt_ns_unpin(p, NULL);
}

static void *pin_thread(void *data)
{
        struct pin_job *j = data;
        j->rc = -1;
        bool space = j->pinspace != NULL && j->pinspace[0] != '\0';
        /* to undo the net pin from inside the space */
        _cleanup_close_ int host_fd = -1;
        if (space && (host_fd = open("/proc/thread-self/ns/mnt", O_RDONLY | O_CLOEXEC)) < 0) {
                cb_error_set(&j->err, errno, "cannot open the host's mount namespace");
                return NULL;
        }
        if (unshare(j->flags) < 0) {
                cb_error_set(&j->err, errno, "cannot unshare the pod's namespaces");
                return NULL;
        }
        if ((j->flags & CLONE_NEWUTS) && j->hostname != NULL &&
            sethostname(j->hostname, strlen(j->hostname)) < 0) {
                cb_error_set(&j->err, errno, "cannot set the hostname %s", j->hostname);
                return NULL;
        }
        if ((j->flags & CLONE_NEWNET) && loopback_up() < 0) {
                cb_error_set(&j->err, errno, "cannot bring up the loopback interface");
                return NULL;
        }
        bool in_space = false;
        size_t done = 0;
        for (; done < CB_ARRAY_SIZE(ns_types); done++) {
                if (!(j->flags & ns_types[done].flag))
                        continue;
                if (space && !in_space && ns_types[done].flag != CLONE_NEWNET) {
                        if (enter_pinspace(j->pinspace, &j->err) < 0)
                                break;
                        in_space = true;
                }
                char src[64];
                snprintf(src, sizeof(src), "/proc/thread-self/ns/%s", ns_types[done].name);
                if (bind_pin_from(src, j->ns_dir, ns_types[done].name, &j->err) < 0)
                        break;
        }
        if (done == CB_ARRAY_SIZE(ns_types)) {
                j->rc = 0;
                return NULL;
        }
        /* Undo the pins made so far, each where it was made (net first in
         * ns_types: the host's, left for last). */
        for (size_t i = done; i-- > 0;) {
                if (!(j->flags & ns_types[i].flag))
                        continue;
                if (in_space && ns_types[i].flag == CLONE_NEWNET) {
                        if (setns(host_fd, CLONE_NEWNS) < 0)
                                break; /* the DEL's teardown unpins it */
                        in_space = false;
                }
                unpin_one(j->ns_dir, ns_types[i].name);
        }
        return NULL;
}

int rt_ns_pin(const char *ns_dir, int clone_flags, const char *hostname, const char *pinspace,
              struct cb_error *err)
{
        if (clone_flags & ~(CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS))
                return cb_error_set(err, EINVAL, "cannot pin namespaces: flags 0x%x unsupported",
                                    clone_flags);
        if (hostname != NULL && strlen(hostname) > 64)
                return cb_error_set(err, EINVAL,
                                    "hostname %s is longer than 64 bytes; use a shorter one",
                                    hostname);
        struct pin_job j = {
            .ns_dir = ns_dir, .flags = clone_flags, .hostname = hostname, .pinspace = pinspace};
        cb_error_clear(&j.err);
        if (run_thread(pin_thread, &j, err) < 0)
                return -1;
        if (j.rc < 0) {
                if (err != NULL)
                        *err = j.err;
                return -1;
        }
        return 0;
}
