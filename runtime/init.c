/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The container's init: runs in a fresh, single-threaded process (a child
 * of the monitor, itself exec'd from the cubelet binary), never in a fork
 * of the multi-threaded agent (pattern 14).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#include "cgroups/cgroup.h"
#include "lib/cleanup.h"
#include "runtime/container.h"
#include "runtime/container_internal.h"
#include "runtime/nsutil.h"
#include "runtime/sync.h"
#include "runtime/syscalls.h"

__attribute__((noreturn)) static void die(int sync_fd, const struct cb_error *err)
{
        (void)rt_sync_send_error(sync_fd, err);
        _exit(1);
}

/* The sandbox's pins, opened: net from the host's mount table, IPC, UTS
 * and PID from the pin space (in the host's too for a sandbox made before
 * it); -1 for a namespace the pod does not have of its own. */
enum { NS_NET, NS_IPC, NS_UTS, NS_PID, NS_N };

static int open_sandbox_ns(const struct rt_sandbox *sb, int fds[NS_N], struct cb_error *err)
{
        for (int i = 0; i < NS_N; i++)
                fds[i] = -1;
        if (sb == NULL)
                return 0;
        if (sb->netns_path[0] != '\0' &&
            (fds[NS_NET] = open(sb->netns_path, O_RDONLY | O_CLOEXEC)) < 0)
                return cb_error_set(err, errno, "cannot open namespace %s of sandbox %s",
                                    sb->netns_path, sb->id);
        const char *const in_space[] = {sb->ipcns_path, sb->utsns_path, sb->pidns_path};
        if (rt_ns_open_pins_here(sb->pins_mntns, in_space, fds + NS_IPC, 3, err) < 0) {
                close(fds[NS_NET]);
                fds[NS_NET] = -1;
                return cb_error_prefix(err, "sandbox %s", sb->id);
        }
        return 0;
}

/* Joins the sandbox's net, IPC and UTS namespaces (their fds are closed)
 * and makes the container's own. */
static int join_namespaces(const struct rt_container_config *c, int fds[NS_N], struct cb_error *err)
{
        const struct rt_sandbox *sb = c->sandbox;
        int flags = CLONE_NEWNS;
        if (sb == NULL) {
                /* no sandbox: private net, IPC and UTS namespaces */
                flags |= CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS;
        } else {
                const struct {
                        const char *path;
                        int type;
                } ns[] = {{sb->netns_path, CLONE_NEWNET},
                          {sb->ipcns_path, CLONE_NEWIPC},
                          {sb->utsns_path, CLONE_NEWUTS}};
                for (size_t i = 0; i < CB_ARRAY_SIZE(ns); i++) {
                        if (fds[i] < 0)
                                continue; /* the host's (hostNetwork, hostIPC) */
                        int r = setns(fds[i], ns[i].type);
                        int e = errno;
                        close(fds[i]);
                        fds[i] = -1;
                        if (r < 0)
                                return cb_error_set(err, e, "cannot join namespace %s", ns[i].path);
                }
        }
        if (unshare(flags) < 0)
                return cb_error_set(err, errno, "cannot create the container's namespaces");
        if (sb == NULL && c->hostname != NULL && c->hostname[0] != '\0' &&
            sethostname(c->hostname, strlen(c->hostname)) < 0)
                return cb_error_set(err, errno, "cannot set the hostname \"%s\"", c->hostname);
        return 0;
}

int rt_set_user(const struct rt_container_config *c, struct cb_error *err)
{
        gid_t groups[64];
        if (c->n_groups > CB_ARRAY_SIZE(groups))
                return cb_error_set(err, E2BIG, "more than %zu supplementary groups",
                                    CB_ARRAY_SIZE(groups));
        for (size_t i = 0; i < c->n_groups; i++)
                groups[i] = (gid_t)c->groups[i];
        if (setgroups(c->n_groups, groups) < 0)
                return cb_error_set(err, errno, "setgroups failed");
        /* keep the permitted set across the uid change; capset below
         * reduces it to exactly the configured set */
        if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
                return cb_error_set(err, errno, "PR_SET_KEEPCAPS failed");
        if (setresgid(c->gid, c->gid, c->gid) < 0)
                return cb_error_set(err, errno, "cannot set gid %u", c->gid);
        if (setresuid(c->uid, c->uid, c->uid) < 0)
                return cb_error_set(err, errno, "cannot set uid %u", c->uid);
        if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
                return cb_error_set(err, errno, "PR_SET_KEEPCAPS failed");
        return 0;
}

void rt_reset_signals(void)
{
        /* ignored dispositions survive execve (crun #2058): reset all */
        struct sigaction sa = {.sa_handler = SIG_DFL};
        sigemptyset(&sa.sa_mask);
        for (int s = 1; s < _NSIG; s++)
                if (s != SIGKILL && s != SIGSTOP)
                        (void)sigaction(s, &sa, NULL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Every fd >= 3 becomes close-on-exec: the sync socket must stay usable up
 * to execve, everything else (a libcurl socket the agent leaked, ...) is
 * gone in the container. */
static int close_fds(struct cb_error *err)
{
        if (rt_close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
                return 0;
        DIR *d = opendir("/proc/self/fd");
        if (d == NULL)
                return cb_error_set(err, errno, "cannot list /proc/self/fd");
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
                char *end;
                long fd = strtol(de->d_name, &end, 10);
                if (*end != '\0' || fd < 3 || fd == dirfd(d))
                        continue;
                (void)fcntl((int)fd, F_SETFD, FD_CLOEXEC);
        }
        closedir(d);
        return 0;
}

/*
 * The container's terminal, as crun makes it: after pivot_root /dev/ptmx
 * is the container's own devpts instance (newinstance), so the pty and its
 * /dev/pts/N exist only there; nothing appears in the host's /dev/pts. The
 * master goes to the monitor over the sync channel (SCM_RIGHTS); the slave
 * becomes stdin/stdout/stderr and, after setsid, the controlling terminal.
 * The slave belongs to the container's user, as a login's terminal does.
 */
static int open_terminal(const struct rt_init_args *a, int *ret_slave, struct cb_error *err)
{
        _cleanup_close_ int master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (master < 0)
                return cb_error_set(err, errno, "cannot open the container's /dev/ptmx");
        int unlock = 0;
        if (ioctl(master, TIOCSPTLCK, &unlock) < 0)
                return cb_error_set(err, errno, "cannot unlock the container's terminal");
        /* the peer of this master: no path lookup that could be raced */
        int slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (slave < 0)
                return cb_error_set(err, errno, "cannot open the container's terminal");
        (void)fchown(slave, a->config->uid, (gid_t)-1);
        if (rt_sync_send_fd(a->sync_fd, RT_SYNC_PTY, master) < 0) {
                int e = errno;
                close(slave);
                return cb_error_set(err, e, "cannot pass the terminal to the monitor");
        }
        *ret_slave = slave;
        return 0;
}

/*
 * C0 and C keep exactly stdin/stdout/stderr and the sync socket, moved to
 * fd 3 and close-on-exec: everything else the monitor had open (its state
 * directory, log pipes' other ends, epoll, signalfd) is closed, not just
 * marked close-on-exec, before any step another process could observe: a
 * sibling in a shared PID namespace reading /proc/<C>/fd/N must find no
 * host directory to walk from (the CVE-2024-21626 pattern). Non-dumpable
 * as well, so /proc/<C>/{fd,cwd,root,exe,mem} need ptrace rights over C;
 * the final execve makes the container's program dumpable again.
 */
static int keep_only_needed_fds(struct rt_init_args *a, struct cb_error *err)
{
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                return cb_error_set(err, errno, "PR_SET_DUMPABLE");
        if (dup2(a->stdin_fd, 0) < 0 || dup2(a->stdout_fd, 1) < 0 || dup2(a->stderr_fd, 2) < 0)
                return cb_error_set(err, errno, "cannot set up stdio");
        a->stdin_fd = 0;
        a->stdout_fd = 1;
        a->stderr_fd = 2;
        if (a->sync_fd != 3) {
                if (dup3(a->sync_fd, 3, O_CLOEXEC) < 0)
                        return cb_error_set(err, errno, "cannot move the sync socket");
                a->sync_fd = 3;
        } else if (fcntl(3, F_SETFD, FD_CLOEXEC) < 0) {
                return cb_error_set(err, errno, "cannot mark the sync socket close-on-exec");
        }
        if (rt_close_range(4, ~0U, 0) == 0)
                return 0;
        /* before close_range (Linux 5.9): every fd listed in /proc/self/fd */
        DIR *d = opendir("/proc/self/fd");
        if (d == NULL)
                return cb_error_set(err, errno, "cannot list /proc/self/fd");
        int fds[1024];
        size_t n = 0;
        struct dirent *de;
        while ((de = readdir(d)) != NULL && n < CB_ARRAY_SIZE(fds)) {
                char *end;
                long fd = strtol(de->d_name, &end, 10);
                if (*end == '\0' && fd > 3 && fd != dirfd(d))
                        fds[n++] = (int)fd;
        }
        closedir(d);
        for (size_t i = 0; i < n; i++)
                close(fds[i]);
        return 0;
}

/* True when path is the binary this process runs: the runtime's own (the
 * sealed copy it was started from, runtime/container.c). A container's
 * command may not be the runtime (ENTRYPOINT ["/proc/self/exe"], the
 * CVE-2019-5736 family). */
static bool is_own_binary(const char *path)
{
        struct stat a, b;
        return stat(path, &a) == 0 && stat("/proc/self/exe", &b) == 0 && a.st_dev == b.st_dev &&
               a.st_ino == b.st_ino;
}

static int safe_chdir(const char *cwd, struct cb_error *err)
{
        if (chdir(cwd) < 0)
                return cb_error_set(err, errno, "cannot chdir to the working directory \"%s\"",
                                    cwd);
        /* the cwd must be reachable from the container's root (runc
         * CVE-2024-21626: "(unreachable)" means it lies outside) */
        char buf[RT_PATH_MAX];
        if (getcwd(buf, sizeof(buf)) == NULL || buf[0] != '/')
                return cb_error_set(err, EPERM,
                                    "working directory \"%s\" is outside the "
                                    "container",
                                    cwd);
        return 0;
}

static const char *env_get(const char *const *env, const char *key)
{
        size_t n = strlen(key);
        for (size_t i = 0; env != NULL && env[i] != NULL; i++)
                if (strncmp(env[i], key, n) == 0 && env[i][n] == '=')
                        return env[i] + n + 1;
        return NULL;
}

int rt_resolve_exec(const struct rt_container_config *c, char *buf, size_t size)
{
        const char *a0 = c->argv[0];
        if (strchr(a0, '/') != NULL) {
                snprintf(buf, size, "%s", a0);
                return 0;
        }
        const char *path = env_get(c->env, "PATH");
        if (path == NULL)
                path = RT_DEFAULT_PATH;
        int best = ENOENT;
        for (const char *p = path;; p++) {
                const char *end = strchrnul(p, ':');
                int n = snprintf(buf, size, "%.*s%s%s", (int)(end - p), p, end > p ? "/" : "", a0);
                if (n > 0 && (size_t)n < size) {
                        struct stat st;
                        if (stat(buf, &st) == 0 && S_ISREG(st.st_mode)) {
                                if (access(buf, X_OK) == 0)
                                        return 0;
                                best = EACCES;
                        }
                }
                if (*end == '\0')
                        break;
                p = end;
        }
        return best;
}

/*
 * The container's first process, C, is forked by C0 into the container's
 * PID namespace. Everything another process of that namespace could reach
 * through /proc/<C>/{root,cwd,fd} or by ptrace is done before the fork,
 * where nobody in the container can see it (issue 15 item 2; a sibling
 * with CAP_SYS_PTRACE in the initial user namespace passes
 * non-dumpable): C is born with the container's root and cwd and only the
 * fds it needs. Where C0 can make /proc itself, C is also born with the
 * container's final credentials (no capability beyond the container's, so
 * a tracer that attaches during the setup gains nothing):
 *
 *   early  (a shared PID namespace whose /proc the pod's init mounted, or
 *          hostPID): C0 binds/mounts /proc, applies the masks, drops to the
 *          container's credentials, then forks C;
 *   late   (a new PID namespace per container, or a shared one made before
 *          its procfs was kept): C mounts /proc (it must be inside the
 *          namespace) and drops its credentials itself. In a new namespace
 *          C is alone, so nobody can watch; the shared case is the window
 *          docs/security.md lists.
 *
 * C0, after sync 1 (it is in the container's cgroup with its
 * oom_score_adj, still in the host's namespaces):
 *  1. stdin = /dev/null or the monitor's stdin pipe, stdout/stderr = the
 *     monitor's log pipes (all /dev/null with tty); only those and the
 *     sync socket are open (keep_only_needed_fds), non-dumpable.
 *  2. setns into the sandbox's net, IPC and UTS namespaces (empty path:
 *     the host's; the IPC, UTS and PID pins are opened inside the pin
 *     space, which C0 enters and leaves: runtime/nsutil.h), then unshare
 *     the mount namespace (and net/IPC/UTS when there is no sandbox; the
 *     hostname is set in that private UTS ns).
 *  3. mounts (mounts.c): / rprivate, overlay rootfs, /proc (early), /sys
 *     ro, /dev, volumes, pivot_root + detach the old root; early: masked
 *     paths and / ro. With tty: the terminal is opened on the container's
 *     /dev/ptmx (its own devpts) and its master sent to the monitor.
 *  4. join the pod's PID namespace, or create the container's (children
 *     only), or stay in the host's (hostPID).
 *  5. early: the credentials (5a-5d below), then fork C and report its pid
 *     (sync 2).
 * C:
 *  late: /proc, the masks and / ro (mounts.c rt_mounts_finish).
 *  6. setsid: a new session, no controlling terminal (CVE-2017-5226).
 *     With tty: the terminal's slave becomes the controlling terminal
 *     (TIOCSCTTY) and stdin, stdout and stderr.
 *  late: the credentials:
 *     5a. seccomp when no_new_privs is off: loading a filter without
 *         NO_NEW_PRIVS needs CAP_SYS_ADMIN, which 5c drops (early, the
 *         filter must then allow fork: C0 forks after loading it);
 *     5b. bounding set reduced to the configured caps (needs CAP_SETPCAP);
 *     5c. setgroups -> KEEPCAPS -> setresgid -> setresuid -> capset
 *         (effective = permitted = caps, inheritable empty) -> ambient
 *         cleared -> non-dumpable again (the uid change resets it);
 *     5d. NO_NEW_PRIVS when asked.
 *  7. every signal disposition reset to SIG_DFL, the mask emptied.
 *  8. every fd >= 3 close-on-exec (close_range; /proc/self/fd fallback).
 *  9. chdir(cwd), verified with getcwd; argv[0] resolved with the
 *     container's PATH (so a missing binary is reported by name).
 * 10. seccomp LAST when no_new_privs is on (no capability needed), so the
 *     filter does not have to allow any of the setup above.
 * 11. sync 3 (EXEC) to the monitor, then execve. The sync socket is
 *     close-on-exec: EOF tells the monitor the exec succeeded; a failed
 *     execve sends `exec "<argv0>": <strerror>` and exits 127.
 */

/* 5a-5d; *seccomp_done when the filter is loaded (5a). */
static int drop_credentials(const struct rt_init_args *a, bool *seccomp_done, struct cb_error *err)
{
        const struct rt_container_config *c = a->config;
        if (a->bpf != NULL && !c->no_new_privs) {
                if (rt_seccomp_load(a->bpf, a->bpf_len, err) < 0)
                        return -1;
                *seccomp_done = true;
        }
        if (rt_caps_drop_bounding(a->caps, err) < 0 || rt_set_user(c, err) < 0 ||
            rt_caps_set(a->caps, err) < 0)
                return -1;
        /* a uid change resets dumpable to fs.suid_dumpable: non-dumpable
         * again, whatever that sysctl says, until the execve */
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                return cb_error_set(err, errno, "PR_SET_DUMPABLE");
        if (c->no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return cb_error_set(err, errno, "PR_SET_NO_NEW_PRIVS failed");
        return 0;
}

struct c_state {
        bool early;        /* /proc, masks and credentials done by C0 */
        bool seccomp_done; /* the filter is loaded (by C0) */
        int null_fd;       /* late: the checked /dev/null for the masks */
        int slave;         /* with tty: the terminal's slave */
};

__attribute__((noreturn)) static void container_setup(const struct rt_init_args *a,
                                                      struct c_state st)
{
        const struct rt_container_config *c = a->config;
        struct cb_error err = {0};
        int sfd = a->sync_fd;
        if (!st.early && rt_mounts_finish(c, true, st.null_fd, &err) < 0)
                die(sfd, &err);
        if (st.null_fd >= 0)
                close(st.null_fd);
        /* 6 */
        if (setsid() < 0) {
                cb_error_set(&err, errno, "setsid failed");
                die(sfd, &err);
        }
        if (st.slave >= 0) {
                if (ioctl(st.slave, TIOCSCTTY, 0) < 0 || dup2(st.slave, 0) < 0 ||
                    dup2(st.slave, 1) < 0 || dup2(st.slave, 2) < 0) {
                        cb_error_set(&err, errno, "cannot make the terminal the container's stdio");
                        die(sfd, &err);
                }
                close(st.slave);
        }
        if (!st.early && drop_credentials(a, &st.seccomp_done, &err) < 0)
                die(sfd, &err);
        /* 7, 8 */
        rt_reset_signals();
        if (close_fds(&err) < 0)
                die(sfd, &err);
        /* 9 */
        char exe[RT_PATH_MAX];
        if (safe_chdir(c->cwd != NULL && c->cwd[0] != '\0' ? c->cwd : "/", &err) < 0)
                die(sfd, &err);
        int rr = rt_resolve_exec(c, exe, sizeof(exe));
        if (rr != 0) {
                cb_error_set(&err, rr, "exec \"%s\"", c->argv[0]);
                die(sfd, &err);
        }
        if (is_own_binary(exe)) {
                cb_error_set(&err, EPERM, "exec \"%s\": the container may not run the runtime",
                             c->argv[0]);
                die(sfd, &err);
        }
        /* 10 */
        if (a->bpf != NULL && !st.seccomp_done && rt_seccomp_load(a->bpf, a->bpf_len, &err) < 0)
                die(sfd, &err);
        /* 11: sync 3 */
        (void)rt_sync_send(sfd, RT_SYNC_EXEC, 0, 0);
        static const char *const no_env[] = {"PATH=" RT_DEFAULT_PATH, NULL};
        execve(exe, (char *const *)c->argv, (char *const *)(c->env != NULL ? c->env : no_env));
        cb_error_set(&err, errno, "exec \"%s\"", c->argv[0]);
        (void)rt_sync_send_error(sfd, &err);
        _exit(127);
}

/* 4: the PID namespace C is forked into; pidns_fd: the pod's, opened
 * before the mounts hid the host's paths (-1: none). */
static int enter_pid_namespace(const struct rt_sandbox *sb, int pidns_fd, struct cb_error *err)
{
        if (pidns_fd >= 0) {
                /* shareProcessNamespace: the pod's namespace, its init the
                 * sandbox's pause process (runtime/pause.c) */
                if (setns(pidns_fd, CLONE_NEWPID) < 0)
                        return cb_error_set(err, errno, "cannot join the pod's PID namespace %s",
                                            sb->pidns_path);
                return 0;
        }
        if ((sb == NULL || !sb->host_pid) && unshare(CLONE_NEWPID) < 0)
                return cb_error_set(err, errno, "cannot create the PID namespace");
        return 0;
}

void rt_init_run(const struct rt_init_args *args)
{
        struct cb_error err = {0};
        struct rt_init_args copy = *args;
        struct rt_init_args *a = &copy;
        /* 1 */
        if (keep_only_needed_fds(a, &err) < 0)
                die(a->sync_fd, &err);
        struct rt_sync_msg m;
        /* sync 1: wait until the monitor placed us in the cgroup (v2), or
         * released us to join it ourselves (v1: cg_join_self_at, no wait
         * for a grace period; C0 is a fork, so it has one thread) */
        int r = rt_sync_recv(a->sync_fd, &m, &err);
        if (r <= 0 || m.type != RT_SYNC_GO)
                _exit(1);
        const struct rt_container_config *c = a->config;
        if (a->join_cgroup && cg_join_self_at(c->cg_loc, &err) < 0) {
                cb_error_prefix(&err, "cannot join the container's cgroup");
                die(a->sync_fd, &err);
        }
        const struct rt_sandbox *sb = c->sandbox;
        const char *proc_src = NULL; /* late */
        if (sb != NULL && sb->pidns_path[0] != '\0' && sb->procfs_path[0] != '\0')
                proc_src = sb->procfs_path;
        else if (sb != NULL && sb->host_pid)
                proc_src = ""; /* C0 is in the host's PID namespace too */
        struct c_state st = {.early = proc_src != NULL, .null_fd = -1, .slave = -1};
        int ns_fds[NS_N];
        if (open_sandbox_ns(sb, ns_fds, &err) < 0)
                die(a->sync_fd, &err);
        int pidns_fd = ns_fds[NS_PID];
        /* 2, 3 */
        if (join_namespaces(c, ns_fds, &err) < 0 ||
            rt_mounts_setup(c, a->state_dir, proc_src, &st.null_fd, &err) < 0)
                die(a->sync_fd, &err);
        if (st.early) {
                if (rt_mounts_finish(c, false, st.null_fd, &err) < 0)
                        die(a->sync_fd, &err);
                close(st.null_fd);
                st.null_fd = -1;
        }
        if (c->tty && open_terminal(a, &st.slave, &err) < 0)
                die(a->sync_fd, &err);
        /* 4, 5 */
        if (enter_pid_namespace(sb, pidns_fd, &err) < 0 ||
            (st.early && drop_credentials(a, &st.seccomp_done, &err) < 0))
                die(a->sync_fd, &err);
        if (pidns_fd >= 0)
                close(pidns_fd);
        pid_t pid = fork();
        if (pid < 0) {
                cb_error_set(&err, errno, "cannot fork the container process");
                die(a->sync_fd, &err);
        }
        if (pid == 0)
                container_setup(a, st);
        /* sync 2: C's pid as the monitor sees it; C is re-parented to the
         * monitor (a subreaper) when we exit */
        (void)rt_sync_send(a->sync_fd, RT_SYNC_PID, pid, 0);
        _exit(0);
}
