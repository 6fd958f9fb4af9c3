/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Raw wrappers for system calls newer than the oldest kernels and C
 * libraries we run on (crun's syscalls.h). Each returns -1 with errno
 * ENOSYS when the number is unknown at build time, so callers take their
 * fallback path on ENOSYS exactly as they would on an old kernel.
 */

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef SECCOMP_SET_MODE_FILTER
#define SECCOMP_SET_MODE_FILTER 1
#endif

static inline int rt_pidfd_open(pid_t pid, unsigned int flags)
{
#ifdef SYS_pidfd_open
        return (int)syscall(SYS_pidfd_open, pid, flags);
#else
        (void)pid;
        (void)flags;
        errno = ENOSYS;
        return -1;
#endif
}

static inline int rt_pidfd_send_signal(int pidfd, int sig, siginfo_t *info, unsigned int flags)
{
#ifdef SYS_pidfd_send_signal
        return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, info, flags);
#else
        (void)pidfd;
        (void)sig;
        (void)info;
        (void)flags;
        errno = ENOSYS;
        return -1;
#endif
}

static inline int rt_close_range(unsigned int first, unsigned int last, unsigned int flags)
{
#ifdef SYS_close_range
        return (int)syscall(SYS_close_range, first, last, flags);
#else
        (void)first;
        (void)last;
        (void)flags;
        errno = ENOSYS;
        return -1;
#endif
}

static inline int rt_pivot_root(const char *new_root, const char *put_old)
{
#ifdef SYS_pivot_root
        return (int)syscall(SYS_pivot_root, new_root, put_old);
#else
        (void)new_root;
        (void)put_old;
        errno = ENOSYS;
        return -1;
#endif
}

struct rt_open_how {
        uint64_t flags;
        uint64_t mode;
        uint64_t resolve;
};
#define RT_RESOLVE_NO_MAGICLINKS 0x02
#define RT_RESOLVE_NO_SYMLINKS   0x04
#define RT_RESOLVE_BENEATH       0x08
#define RT_RESOLVE_IN_ROOT       0x10

static inline int rt_openat2(int dirfd, const char *path, struct rt_open_how *how)
{
#ifdef SYS_openat2
        return (int)syscall(SYS_openat2, dirfd, path, how, sizeof(*how));
#else
        (void)dirfd;
        (void)path;
        (void)how;
        errno = ENOSYS;
        return -1;
#endif
}

/* The new mount API (Linux 5.2; mount_setattr 5.12): a bind is cloned as a
 * detached tree (open_tree), given its attributes while nobody can reach
 * it (mount_setattr, recursively), and attached through fds (move_mount),
 * so no step re-resolves a path a container could have changed. */
#define RT_OPEN_TREE_CLONE         1
#define RT_AT_RECURSIVE            0x8000
#define RT_MOVE_MOUNT_F_EMPTY_PATH 0x04
#define RT_MOVE_MOUNT_T_EMPTY_PATH 0x40
#define RT_MOUNT_ATTR_RDONLY       0x01
#define RT_MOUNT_ATTR_NOSUID       0x02
#define RT_MOUNT_ATTR_NODEV        0x04
#define RT_MOUNT_ATTR_NOEXEC       0x08

struct rt_mount_attr {
        uint64_t attr_set;
        uint64_t attr_clr;
        uint64_t propagation;
        uint64_t userns_fd;
};

static inline int rt_open_tree(int dirfd, const char *path, unsigned int flags)
{
#ifdef SYS_open_tree
        return (int)syscall(SYS_open_tree, dirfd, path, flags);
#else
        (void)dirfd;
        (void)path;
        (void)flags;
        errno = ENOSYS;
        return -1;
#endif
}

static inline int rt_move_mount(int from_dirfd, const char *from_path, int to_dirfd,
                                const char *to_path, unsigned int flags)
{
#ifdef SYS_move_mount
        return (int)syscall(SYS_move_mount, from_dirfd, from_path, to_dirfd, to_path, flags);
#else
        (void)from_dirfd;
        (void)from_path;
        (void)to_dirfd;
        (void)to_path;
        (void)flags;
        errno = ENOSYS;
        return -1;
#endif
}

/* A new filesystem instance mounted through fds (Linux 5.2): no path is
 * resolved, so it works where /proc (for /proc/self/fd/N) is missing or
 * belongs to another PID namespace. */
#define RT_FSOPEN_CLOEXEC      0x01
#define RT_FSMOUNT_CLOEXEC     0x01
#define RT_FSCONFIG_SET_STRING 1
#define RT_FSCONFIG_CMD_CREATE 6

static inline int rt_fsopen(const char *fstype, unsigned int flags)
{
#ifdef SYS_fsopen
        return (int)syscall(SYS_fsopen, fstype, flags);
#else
        (void)fstype;
        (void)flags;
        errno = ENOSYS;
        return -1;
#endif
}

static inline int rt_fsconfig(int fd, unsigned int cmd, const char *key, const void *value, int aux)
{
#ifdef SYS_fsconfig
        return (int)syscall(SYS_fsconfig, fd, cmd, key, value, aux);
#else
        (void)fd;
        (void)cmd;
        (void)key;
        (void)value;
        (void)aux;
        errno = ENOSYS;
        return -1;
#endif
}

static inline int rt_fsmount(int fd, unsigned int flags, unsigned int attr_flags)
{
#ifdef SYS_fsmount
        return (int)syscall(SYS_fsmount, fd, flags, attr_flags);
#else
        (void)fd;
        (void)flags;
        (void)attr_flags;
        errno = ENOSYS;
        return -1;
#endif
}

static inline int rt_mount_setattr(int dirfd, const char *path, unsigned int flags,
                                   struct rt_mount_attr *attr)
{
#ifdef SYS_mount_setattr
        return (int)syscall(SYS_mount_setattr, dirfd, path, flags, attr, sizeof(*attr));
#else
        (void)dirfd;
        (void)path;
        (void)flags;
        (void)attr;
        errno = ENOSYS;
        return -1;
#endif
}

static inline int rt_seccomp(unsigned int op, unsigned int flags, void *args)
{
#ifdef SYS_seccomp
        return (int)syscall(SYS_seccomp, op, flags, args);
#else
        (void)op;
        (void)flags;
        (void)args;
        errno = ENOSYS;
        return -1;
#endif
}
