/* SPDX-License-Identifier: Apache-2.0 */
#include "runtime/sysctl.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/cleanup.h"
#include "runtime/nsutil.h"
#include "runtime/syscalls.h"

#define SYSCTL_PATH_MAX 256
#define SYSCTL_MAX      128

enum which_ns { NS_NONE, NS_NET, NS_IPC };

static enum which_ns ns_of(const char *name)
{
        if (strncmp(name, "net.", 4) == 0)
                return NS_NET;
        if (strcmp(name, "kernel.sem") == 0 || strncmp(name, "kernel.shm", 10) == 0 ||
            strncmp(name, "kernel.msg", 10) == 0 || strncmp(name, "fs.mqueue.", 10) == 0)
                return NS_IPC;
        return NS_NONE;
}

/* "net.ipv4.conf.eth0/100.rp_filter" -> "net/ipv4/conf/eth0.100/rp_filter":
 * each component [A-Za-z0-9_.-], not empty, not "." or "..". */
static int to_path(const char *name, char *out, size_t size)
{
        size_t n = strlen(name);
        if (n == 0 || n >= size)
                return -1;
        for (size_t i = 0; i <= n; i++) {
                char c = name[i];
                out[i] = c == '.' ? '/' : c == '/' ? '.' : c;
                if (c != '\0' && c != '.' && c != '/' && c != '_' && c != '-' &&
                    !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9'))
                        return -1;
        }
        const char *p = out;
        while (*p != '\0') {
                const char *e = strchr(p, '/');
                size_t len = e ? (size_t)(e - p) : strlen(p);
                if (len == 0 || (len == 1 && p[0] == '.') ||
                    (len == 2 && p[0] == '.' && p[1] == '.'))
                        return -1;
                if (e == NULL)
                        break;
                p = e + 1;
        }
        return out[strlen(out) - 1] == '/' ? -1 : 0;
}

struct report {
        int index; /* the sysctl that failed; -1: joining a namespace */
        int step;  /* 0 open, 1 write, 2 setns net, 3 setns ipc, 4 /proc/sys */
        int errnum;
};

static void write_report(int fd, const struct report *r)
{
        ssize_t w;
        do
                w = write(fd, r, sizeof(*r));
        while (w < 0 && errno == EINTR);
}

/* The child: syscalls only (it was forked from a threaded process). */
static _Noreturn void child(int report_fd, int net_fd, int ipc_fd, char (*paths)[SYSCTL_PATH_MAX],
                            const struct rt_sysctl *s, size_t n)
{
        struct report r = {-1, 0, 0};
        if (net_fd >= 0 && setns(net_fd, CLONE_NEWNET) < 0) {
                r = (struct report){-1, 2, errno};
                write_report(report_fd, &r);
                _exit(1);
        }
        if (ipc_fd >= 0 && setns(ipc_fd, CLONE_NEWIPC) < 0) {
                r = (struct report){-1, 3, errno};
                write_report(report_fd, &r);
                _exit(1);
        }
        int dir = open("/proc/sys", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0) {
                r = (struct report){-1, 4, errno};
                write_report(report_fd, &r);
                _exit(1);
        }
        for (size_t i = 0; i < n; i++) {
                struct rt_open_how how = {.flags = O_WRONLY | O_CLOEXEC | O_NOFOLLOW,
                                          .resolve = RT_RESOLVE_BENEATH | RT_RESOLVE_NO_SYMLINKS |
                                                     RT_RESOLVE_NO_MAGICLINKS};
                int fd = rt_openat2(dir, paths[i], &how);
                if (fd < 0) {
                        r = (struct report){(int)i, 0, errno};
                        write_report(report_fd, &r);
                        _exit(1);
                }
                size_t len = strlen(s[i].value);
                ssize_t w;
                do
                        w = write(fd, s[i].value, len);
                while (w < 0 && errno == EINTR);
                if (w < 0 || (size_t)w != len) {
                        r = (struct report){(int)i, 1, w < 0 ? errno : EIO};
                        write_report(report_fd, &r);
                        _exit(1);
                }
                close(fd);
        }
        r = (struct report){-2, 0, 0};
        write_report(report_fd, &r);
        _exit(0);
}

int rt_sysctls_apply(const char *netns_path, const char *ipcns_path, const char *pins_mntns,
                     const struct rt_sysctl *s, size_t n, struct cb_error *err)
{
        if (n == 0)
                return 0;
        if (n > SYSCTL_MAX)
                return cb_error_set(err, E2BIG, "%zu sysctls: at most %d", n, SYSCTL_MAX);
        bool has_net = netns_path != NULL && netns_path[0] != '\0';
        bool has_ipc = ipcns_path != NULL && ipcns_path[0] != '\0';
        bool need_net = false, need_ipc = false;
        _cleanup_free_ char(*paths)[SYSCTL_PATH_MAX] = calloc(n, SYSCTL_PATH_MAX);
        if (paths == NULL)
                return cb_error_set(err, ENOMEM, "sysctls");
        for (size_t i = 0; i < n; i++) {
                const char *name = s[i].name ? s[i].name : "";
                if (s[i].value == NULL || strchr(s[i].value, '\n') != NULL)
                        return cb_error_set(err, 0, "sysctl %s: the value must be one line", name);
                if (to_path(name, paths[i], SYSCTL_PATH_MAX) < 0)
                        return cb_error_set(err, 0, "sysctl \"%.64s\" is not a sysctl name", name);
                enum which_ns ns = ns_of(name);
                if (ns == NS_NONE)
                        return cb_error_set(
                            err, 0, "sysctl %s is not namespaced: it would change the host", name);
                if ((ns == NS_NET && !has_net) || (ns == NS_IPC && !has_ipc))
                        return cb_error_set(err, 0,
                                            "sysctl %s: the pod shares the host's %s namespace",
                                            name, ns == NS_NET ? "network" : "IPC");
                need_net |= ns == NS_NET;
                need_ipc |= ns == NS_IPC;
        }
        _cleanup_close_ int net_fd = -1, ipc_fd = -1;
        if (need_net && (net_fd = open(netns_path, O_RDONLY | O_CLOEXEC)) < 0)
                return cb_error_set(err, errno, "cannot open the network namespace %s", netns_path);
        if (need_ipc && rt_ns_open_pins(pins_mntns, &ipcns_path, &ipc_fd, 1, err) < 0)
                return cb_error_prefix(err, "cannot open the IPC namespace");
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return cb_error_set(err, errno, "cannot create a pipe");
        pid_t pid = fork();
        if (pid == 0) {
                close(p[0]);
                child(p[1], net_fd, ipc_fd, paths, s, n);
        }
        int fork_errno = errno;
        close(p[1]);
        _cleanup_close_ int rfd = p[0];
        if (pid < 0)
                return cb_error_set(err, fork_errno, "cannot fork the sysctl helper");
        struct report r = {-1, 4, EIO};
        ssize_t got;
        do
                got = read(rfd, &r, sizeof(r));
        while (got < 0 && errno == EINTR);
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (got == (ssize_t)sizeof(r) && r.index == -2)
                return 0;
        if (got != (ssize_t)sizeof(r))
                return cb_error_set(err, 0, "the sysctl helper died before reporting");
        if (r.index < 0) {
                static const char *const what[] = {"", "", "join the network namespace",
                                                   "join the IPC namespace", "open /proc/sys"};
                return cb_error_set(err, r.errnum, "sysctls: cannot %s",
                                    what[r.step >= 2 && r.step <= 4 ? r.step : 4]);
        }
        if (r.step == 0)
                return cb_error_set(err, r.errnum, "sysctl %s: cannot open /proc/sys/%s",
                                    s[r.index].name, paths[r.index]);
        return cb_error_set(err, r.errnum, "sysctl %s: cannot write \"%s\" to /proc/sys/%s",
                            s[r.index].name, s[r.index].value, paths[r.index]);
}
