/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Namespace pins (runtime/nsutil.h). The helper child created here runs in
 * a copy of a possibly multi-threaded agent, so between fork() and _exit()
 * it makes only async-signal-safe system calls: no malloc, no stdio, no
 * locks. It reports through a pipe and lives until the parent closes the
 * other pipe, so its namespaces stay reachable through /proc/<pid>/ns while
 * the parent bind-mounts them; if the parent dies, the EOF ends it too.
 */
#include "runtime/nsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <net/if.h>
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

static int wait_child(pid_t pid, int *ret_status)
{
        int status;
        for (;;) {
                pid_t r = waitpid(pid, &status, __WALL);
                if (r == pid)
                        break;
                if (r < 0 && errno != EINTR)
                        return -1;
        }
        if (ret_status != NULL)
                *ret_status = status;
        return 0;
}

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

/* What the helper child reports: which step failed and its errno. */
struct pin_report {
        int step; /* 0 = ok, 1 = unshare, 2 = sethostname, 3 = loopback */
        int errnum;
};

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

static void write_all(int fd, const void *p, size_t n)
{
        while (n > 0) {
                ssize_t w = write(fd, p, n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return;
                p = (const char *)p + w;
                n -= (size_t)w;
        }
}

/* Closes every fd >= 3 except a and b. A child forked from one thread of
 * the agent holds copies of the fds other threads just made (pipes of a
 * concurrent sandbox or CNI call); a long-lived child must drop them at
 * once, or a pipe whose EOF another thread waits for never ends. */
static void close_all_except(int a, int b)
{
        unsigned lo = (unsigned)(a < b ? a : b), hi = (unsigned)(a < b ? b : a);
        if (lo > 3)
                (void)rt_close_range(3, lo - 1, 0);
        if (hi > lo + 1)
                (void)rt_close_range(lo + 1, hi - 1, 0);
        (void)rt_close_range(hi + 1, ~0U, 0);
}

/* The helper child: async-signal-safe calls only (see the file comment). */
static _Noreturn void pin_child(int report_fd, int hold_fd, int flags, const char *hostname)
{
        struct pin_report rep = {0, 0};
        close_all_except(report_fd, hold_fd);
        if (unshare(flags) < 0) {
                rep = (struct pin_report){1, errno};
        } else if ((flags & CLONE_NEWUTS) && hostname != NULL &&
                   sethostname(hostname, strlen(hostname)) < 0) {
                rep = (struct pin_report){2, errno};
        } else if ((flags & CLONE_NEWNET) && loopback_up() < 0) {
                rep = (struct pin_report){3, errno};
        }
        write_all(report_fd, &rep, sizeof(rep));
        close(report_fd);
        if (rep.step != 0)
                _exit(1);
        char c;
        while (read(hold_fd, &c, 1) < 0 && errno == EINTR)
                ;
        _exit(0);
}

static const struct {
        int flag;
        const char *name;
} ns_types[] = {
    {CLONE_NEWNET, "net"},
    {CLONE_NEWIPC, "ipc"},
    {CLONE_NEWUTS, "uts"},
};

static int bind_pin(pid_t pid, const char *ns_dir, const char *name, struct cb_error *err)
{
        char src[64], dst[4096];
        snprintf(src, sizeof(src), "/proc/%d/ns/%s", (int)pid, name);
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

int rt_ns_pin_process(pid_t pid, const char *ns_dir, const char *name, struct cb_error *err)
{
        return bind_pin(pid, ns_dir, name, err);
}

int rt_ns_pin(const char *ns_dir, int clone_flags, const char *hostname, struct cb_error *err)
{
        if (clone_flags & ~(CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS))
                return cb_error_set(err, EINVAL, "cannot pin namespaces: flags 0x%x unsupported",
                                    clone_flags);
        if (hostname != NULL && strlen(hostname) > 64)
                return cb_error_set(err, EINVAL,
                                    "hostname %s is longer than 64 bytes; use a shorter one",
                                    hostname);
        int report[2], hold[2];
        if (pipe2(report, O_CLOEXEC) < 0)
                return cb_error_set(err, errno, "cannot create a pipe");
        if (pipe2(hold, O_CLOEXEC) < 0) {
                int e = errno;
                close(report[0]);
                close(report[1]);
                return cb_error_set(err, e, "cannot create a pipe");
        }
        pid_t pid = fork();
        if (pid == 0) {
                close(report[0]);
                close(hold[1]);
                pin_child(report[1], hold[0], clone_flags, hostname);
        }
        int fork_errno = errno;
        close(report[1]);
        close(hold[0]);
        _cleanup_close_ int report_fd = report[0];
        _cleanup_close_ int hold_fd = hold[1];
        if (pid < 0)
                return cb_error_set(err, fork_errno, "cannot fork the namespace helper");

        struct pin_report rep;
        ssize_t n;
        do
                n = read(report_fd, &rep, sizeof(rep));
        while (n < 0 && errno == EINTR);
        int rc = 0;
        if (n != (ssize_t)sizeof(rep)) {
                rc = cb_error_set(err, 0, "the namespace helper died before reporting");
        } else if (rep.step != 0) {
                static const char *const steps[] = {"", "unshare the namespaces",
                                                    "set the hostname",
                                                    "bring up the loopback interface"};
                rc = cb_error_set(err, rep.errnum, "namespace helper: cannot %s",
                                  steps[rep.step < 4 && rep.step > 0 ? rep.step : 1]);
        } else {
                size_t done = 0;
                for (; done < CB_ARRAY_SIZE(ns_types); done++) {
                        if (!(clone_flags & ns_types[done].flag))
                                continue;
                        if (bind_pin(pid, ns_dir, ns_types[done].name, err) < 0) {
                                rc = -1;
                                break;
                        }
                }
                if (rc < 0) {
                        /* Undo the pins made so far. */
                        for (size_t i = 0; i < done; i++) {
                                if (!(clone_flags & ns_types[i].flag))
                                        continue;
                                char p[4096];
                                snprintf(p, sizeof(p), "%s/%s", ns_dir, ns_types[i].name);
                                rt_ns_unpin(p, NULL);
                        }
                }
        }
        /* Release the helper: EOF on the hold pipe makes it exit. */
        cb_closep(&hold_fd);
        hold_fd = -1;
        wait_child(pid, NULL);
        return rc;
}
