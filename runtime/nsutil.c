/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Namespace pins (runtime/nsutil.h). A pod's net, IPC and UTS namespaces
 * are made by a short-lived thread of the caller (rt_ns_pin: pin_thread),
 * which enters them, bind-mounts /proc/thread-self/ns/<name> onto the pin
 * files and ends: the pins are what keeps the namespaces. No process is
 * forked for it.
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

static int bind_pin(pid_t pid, const char *ns_dir, const char *name, struct cb_error *err)
{
        char src[64];
        snprintf(src, sizeof(src), "/proc/%d/ns/%s", (int)pid, name);
        return bind_pin_from(src, ns_dir, name, err);
}

int rt_ns_pin_process(pid_t pid, const char *ns_dir, const char *name, struct cb_error *err)
{
        return bind_pin(pid, ns_dir, name, err);
}

/* The pinning thread: the namespaces are its own (net, IPC and UTS
 * namespaces belong to a thread: unshare(2) changes only the caller's), it
 * pins them from /proc/thread-self and ends, and what it leaves is the
 * pins. No other thread's namespaces change, and no copy of the agent is
 * made: a fork of a multi-threaded agent copied its page tables, took a
 * fault on each page the agent wrote while the copy lived, and tore the
 * copy down again, for every pod. */
struct pin_job {
        const char *ns_dir;
        int flags;
        const char *hostname;
        struct cb_error err;
        int rc;
};

static void *pin_thread(void *data)
{
        struct pin_job *j = data;
        j->rc = -1;
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
        size_t done = 0;
        for (; done < CB_ARRAY_SIZE(ns_types); done++) {
                if (!(j->flags & ns_types[done].flag))
                        continue;
                char src[64];
                snprintf(src, sizeof(src), "/proc/thread-self/ns/%s", ns_types[done].name);
                if (bind_pin_from(src, j->ns_dir, ns_types[done].name, &j->err) < 0)
                        break;
        }
        if (done == CB_ARRAY_SIZE(ns_types)) {
                j->rc = 0;
                return NULL;
        }
        /* Undo the pins made so far. */
        for (size_t i = 0; i < done; i++) {
                if (!(j->flags & ns_types[i].flag))
                        continue;
                char p[4096];
                snprintf(p, sizeof(p), "%s/%s", j->ns_dir, ns_types[i].name);
                rt_ns_unpin(p, NULL);
        }
        return NULL;
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
        struct pin_job j = {.ns_dir = ns_dir, .flags = clone_flags, .hostname = hostname};
        pthread_attr_t attr;
        pthread_t t;
        /* a small stack: the thread makes a few system calls */
        int r = pthread_attr_init(&attr);
        if (r == 0)
                r = pthread_attr_setstacksize(&attr, 128u << 10);
        if (r == 0)
                r = pthread_create(&t, &attr, pin_thread, &j);
        pthread_attr_destroy(&attr);
        if (r != 0)
                return cb_error_set(err, r, "cannot start the thread that pins the namespaces");
        pthread_join(t, NULL);
        if (j.rc < 0) {
                if (err != NULL)
                        *err = j.err;
                return -1;
        }
        return 0;
}
