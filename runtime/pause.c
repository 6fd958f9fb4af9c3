/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pod's PID namespace init, for shareProcessNamespace: the role of the
 * kubelet's pause container. A PID namespace dies with its init, so a bind
 * mount alone cannot keep it; this small process (`cubelet __pause`) is
 * pid 1 of the namespace, reaps the zombies re-parented to it, and lives
 * until the sandbox is removed. It runs in its own session, in the pod
 * cgroup (on v2 its leaf <pod>/pause), outside the agent's process tree, so an agent restart leaves
 * it (and the pod's containers) running.
 *
 *   agent --posix_spawn--> P0 `cubelet __pause 3` --unshare(PID), fork--> P (pid 1)
 *
 * P, the first process of the namespace, mounts the pod's procfs on fd 4
 * (<sandbox>/ns/proc, in the host's mount namespace; passed as an fd, so
 * no host path shows in the pod's /proc/1/cmdline) before anything else
 * can run in the namespace: a container's runtime process, which is
 * outside the namespace, binds it as the container's /proc, so the
 * container's first process is set up before it becomes visible to its
 * siblings (runtime/init.c; issue 15 item 2). P0 reports P's pid (as the
 * agent sees it) on fd 3 and exits; the agent checks P's start time and
 * pins its PID namespace at <sandbox>/ns/pid, which containers join with
 * setns().
 *
 * P is born in the pod cgroup (fd 5: its location, the JSON of
 * rt_cg_location_to_json): on v2 P0 clones it into the cgroup
 * (CLONE_INTO_CGROUP); on v1, P, single-threaded, moves itself before it
 * does anything else (cg_join_self_at: "0" into each hierarchy's `tasks`).
 * Neither waits for the RCU grace period that moving a process from outside
 * (cgroup.procs) costs: 8-14 ms of every shareProcessNamespace pod's
 * sandbox here (the agent attached it so before session 20).
 *
 * P is reachable from every container of the pod (/proc/1/...), some of
 * which may have CAP_SYS_PTRACE, so it holds nothing worth reaching (issue
 * 15 item 3): its own mount namespace whose root is an empty read-only
 * tmpfs (P0 makes it before the fork: /proc/1/root and /proc/1/cwd lead
 * nowhere), no capabilities in any set, no_new_privs, non-dumpable, and a
 * seccomp filter that allows only what its loop needs (even code injected
 * with ptrace can do nothing else).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <seccomp.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroups/cgroup.h"
#include "lib/cleanup.h"
#include "runtime/container_internal.h"
#include "runtime/sandbox.h"
#include "runtime/syscalls.h"

#define PAUSE_STOP_TIMEOUT_MS 10000

struct pause_report {
        int errnum; /* 0 = ok */
        int step;   /* 1 = unshare, 2 = fork, 3 = the empty root, 4 = P's confinement,
                     * 5 = the pod's procfs, 6 = the pod cgroup */
        pid_t pid;
};

/* P, in its new mount namespace: an empty, read-only tmpfs becomes the
 * root (mounted on /proc, which every system has, and pivoted to), the
 * host's tree detached. */
static int empty_root(void)
{
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount("tmpfs", "/proc", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  "size=4k,nr_inodes=4,mode=0555") < 0 ||
            chdir("/proc") < 0 || rt_pivot_root(".", ".") < 0 || umount2(".", MNT_DETACH) < 0 ||
            chdir("/") < 0 ||
            mount(NULL, "/", NULL,
                  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                return -1;
        return 0;
}

/* P: no capabilities, no_new_privs, non-dumpable, and the filter. */
static int confine(void)
{
        struct cb_error err;
        if (rt_caps_drop_bounding(0, &err) < 0 || rt_caps_set(0, &err) < 0)
                return errno != 0 ? errno : EPERM;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                return errno;
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
        if (ctx == NULL)
                return ENOMEM;
        static const char *const allow[] = {
            "rt_sigtimedwait", "rt_sigprocmask", "rt_sigreturn", "restart_syscall",
            "wait4",           "waitid",         "exit",         "exit_group",
            "write",           "close",          "close_range",
        };
        int rc = 0;
        for (size_t i = 0; rc == 0 && i < CB_ARRAY_SIZE(allow); i++) {
                int nr = seccomp_syscall_resolve_name(allow[i]);
                if (nr != __NR_SCMP_ERROR)
                        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
        }
        if (rc == 0)
                rc = seccomp_load(ctx);
        seccomp_release(ctx);
        return rc < 0 ? -rc : 0;
}

static void write_report(int fd, const struct pause_report *r)
{
        ssize_t n;
        do
                n = write(fd, r, sizeof(*r));
        while (n < 0 && errno == EINTR);
}

/* A procfs of this process's PID namespace attached on the directory fd,
 * through the new mount API (no path is resolved). */
static int mount_procfs_on(int fd)
{
        int fsfd = rt_fsopen("proc", RT_FSOPEN_CLOEXEC);
        if (fsfd < 0)
                return -1;
        int tree = -1, rc = -1;
        if (rt_fsconfig(fsfd, RT_FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0 &&
            (tree = rt_fsmount(fsfd, RT_FSMOUNT_CLOEXEC,
                               RT_MOUNT_ATTR_NOSUID | RT_MOUNT_ATTR_NODEV |
                                   RT_MOUNT_ATTR_NOEXEC)) >= 0)
                rc = rt_move_mount(tree, "", fd, "",
                                   RT_MOVE_MOUNT_F_EMPTY_PATH | RT_MOVE_MOUNT_T_EMPTY_PATH);
        int e = errno;
        if (tree >= 0)
                close(tree);
        close(fsfd);
        close(fd);
        errno = e;
        return rc;
}

/* pid 1 of the pod's PID namespace; ready_fd tells P0 whether it is
 * confined ({errno, step}, errno 0 = yes). join: the cgroup it moves
 * itself into first (not born there), or NULL. */
static _Noreturn void pause_init(int ready_fd, int procfs_fd, const struct cg_location *join)
{
        (void)prctl(PR_SET_NAME, "pause", 0, 0, 0);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGCHLD);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        sigprocmask(SIG_SETMASK, &set, NULL);
        int rep[2] = {0, 0};
        struct cb_error err;
        /* still in the host's mount namespace, and alone in the new PID
         * namespace: its cgroup, then its procfs, for the containers' /proc */
        if (join != NULL && cg_join_self_at(join, &err) < 0)
                rep[0] = err.code != 0 ? err.code : EIO, rep[1] = 6;
        else if (procfs_fd >= 0 && mount_procfs_on(procfs_fd) < 0)
                rep[0] = errno, rep[1] = 5;
        else if (unshare(CLONE_NEWNS) < 0)
                rep[0] = errno, rep[1] = 1;
        else if (empty_root() < 0)
                rep[0] = errno, rep[1] = 3;
        else if ((rep[0] = confine()) != 0)
                rep[1] = 4;
        ssize_t n;
        do
                n = write(ready_fd, rep, sizeof(rep));
        while (n < 0 && errno == EINTR);
        if (rep[0] != 0)
                _exit(1);
        (void)rt_close_range(3, ~0U, 0);
        for (;;) {
                siginfo_t si;
                int sig = sigwaitinfo(&set, &si);
                if (sig == SIGTERM || sig == SIGINT)
                        _exit(0);
                /* SIGCHLD (or EINTR): reap every orphan that ended */
                while (waitpid(-1, NULL, WNOHANG) > 0)
                        ;
        }
}

/* fd 5: the cgroup's location as rt_pause_start writes it (the JSON of
 * rt_cg_location_to_json). */
static int read_location(int fd, struct cg_location *l)
{
        char buf[(CG_LOC_MAX_DIRS + 1) * (CG_LOC_DIR_MAX + 8) + 256];
        ssize_t n;
        do
                n = pread(fd, buf, sizeof(buf) - 1, 0);
        while (n < 0 && errno == EINTR);
        if (n <= 0)
                return -1;
        buf[n] = '\0';
        _cleanup_cjson_ cJSON *o = cJSON_Parse(buf);
        if (!cJSON_IsObject(o))
                return -1;
        rt_cg_location_from_json(o, l);
        return (l->version == 1 || l->version == 2) && l->n_dirs > 0 ? 0 : -1;
}

int rt_pause_main(int argc, char **argv)
{
        if (argc != 2 || strcmp(argv[1], "3") != 0) {
                /* Not a library message: this mode has no caller to return to. */
                static const char msg[] = "cubelet __pause: internal mode of cubelet's runtime\n";
                ssize_t n = write(2, msg, sizeof(msg) - 1);
                (void)n;
                return 2;
        }
        (void)rt_close_range(6, ~0U, 0);
        /* fd 4, when given: the directory for the pod's procfs; fd 5: the
         * pod cgroup's location */
        int procfs_fd = fcntl(4, F_GETFD) >= 0 ? 4 : -1;
        struct pause_report r = {0, 0, 0};
        struct cg_location loc;
        bool in_cgroup = fcntl(5, F_GETFD) >= 0;
        if (in_cgroup) {
                int bad = read_location(5, &loc);
                close(5);
                if (bad < 0) {
                        r = (struct pause_report){EINVAL, 6, 0};
                        write_report(3, &r);
                        _exit(1);
                }
        }
        if (unshare(CLONE_NEWPID) < 0) {
                r = (struct pause_report){errno, 1, 0};
                write_report(3, &r);
                _exit(1);
        }
        int ready[2];
        if (pipe2(ready, O_CLOEXEC) < 0) {
                r = (struct pause_report){errno, 2, 0};
                write_report(3, &r);
                _exit(1);
        }
        struct cb_error err = {0};
        bool placed = false;
        pid_t pid = in_cgroup ? cg_fork_into(&loc, &placed, &err) : fork();
        if (pid < 0) {
                r = (struct pause_report){in_cgroup ? err.code : errno, 2, 0};
                write_report(3, &r);
                _exit(1);
        }
        if (pid == 0) {
                close(ready[0]);
                pause_init(ready[1], procfs_fd, in_cgroup && !placed ? &loc : NULL);
        }
        close(ready[1]);
        int rep[2] = {EPIPE, 4};
        ssize_t n;
        do
                n = read(ready[0], rep, sizeof(rep));
        while (n < 0 && errno == EINTR);
        if (n != (ssize_t)sizeof(rep))
                rep[0] = EPIPE, rep[1] = 4;
        if (rep[0] != 0) {
                kill(pid, SIGKILL);
                r = (struct pause_report){rep[0], rep[1], 0};
                write_report(3, &r);
                _exit(1);
        }
        r.pid = pid;
        write_report(3, &r);
        /* _exit, not return: nothing may run at exit in a process whose
         * new children land in the pod's PID namespace (LeakSanitizer's
         * tracer, under ASan, would hang there). */
        _exit(0);
}

int rt_pause_start(const char *exe, const char *cgroup, const char *procfs_dir, pid_t *ret_pid,
                   uint64_t *ret_start, struct cb_error *err)
{
        if (exe == NULL || exe[0] != '/')
                return cb_error_set(err, EINVAL,
                                    "the pause process needs the absolute path of the cubelet "
                                    "binary");
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return cb_error_set(err, errno, "cannot create a pipe for the pause process");
        _cleanup_close_ int rd = p[0];
        _cleanup_close_ int wr = p[1];
        _cleanup_close_ int hw = rt_high_fd(wr, err);
        if (hw < 0)
                return -1;
        _cleanup_close_ int pfd = -1;
        _cleanup_close_ int hpfd = -1;
        if (procfs_dir != NULL) {
                pfd = open(procfs_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (pfd < 0)
                        return cb_error_set(err, errno, "cannot open %s for the pod's procfs",
                                            procfs_dir);
                if ((hpfd = rt_high_fd(pfd, err)) < 0)
                        return -1;
        }
        /* The cgroup P is born in: on cgroup v2 a cgroup with processes
         * cannot hand controllers to children ("no internal processes"),
         * so P goes to a leaf of its own, <pod>/pause (as the sandbox of
         * containerd has one), which the pod cgroup's recursive removal
         * takes with it. On v1 the pod cgroup itself. */
        _cleanup_close_ int lfd = -1;
        _cleanup_close_ int hlfd = -1;
        if (cgroup != NULL && cgroup[0] != '\0') {
                char leaf[512];
                const char *at = cgroup;
                if (cg_current_mode() == CG_MODE_UNIFIED) {
                        if ((size_t)snprintf(leaf, sizeof(leaf), "%s/pause", cgroup) >=
                            sizeof(leaf))
                                return cb_error_set(err, ENAMETOOLONG, "cgroup %s: too long",
                                                    cgroup);
                        if (cg_create(leaf, NULL, err) < 0)
                                return cb_error_prefix(err, "the pause process");
                        at = leaf;
                }
                struct cg_location loc;
                if (cg_locate(at, &loc, err) < 0)
                        return cb_error_prefix(err, "the pause process");
                _cleanup_cjson_ cJSON *o = rt_cg_location_to_json(&loc);
                _cleanup_free_ char *text = o != NULL ? cJSON_PrintUnformatted(o) : NULL;
                if (text == NULL)
                        return cb_error_set(err, ENOMEM, "the pause process: out of memory");
                if ((lfd = rt_memfd_with("cubelet-pause-cgroup", text, err)) < 0 ||
                    (hlfd = rt_high_fd(lfd, err)) < 0)
                        return cb_error_prefix(err, "the pause process");
        }
        /* always three slots, so the mode's own copy of the binary is fd 6 */
        int fds[] = {hw, hpfd, hlfd}; /* 3, 4, 5 */
        char *argv[] = {"/pause", "__pause", "3", NULL};
        pid_t p0;
        if (rt_spawn_self(exe, argv, fds, 3, &p0, err) < 0)
                return cb_error_prefix(err, "the pause process");
        cb_closep(&hw);
        hw = -1;
        cb_closep(&wr);
        wr = -1;
        struct pause_report r;
        ssize_t n;
        do
                n = read(rd, &r, sizeof(r));
        while (n < 0 && errno == EINTR);
        while (waitpid(p0, NULL, 0) < 0 && errno == EINTR)
                ;
        if (n != (ssize_t)sizeof(r))
                return cb_error_set(err, 0, "the pause process exited before reporting");
        if (r.errnum != 0)
                return cb_error_set(err, r.errnum, "the pause process cannot %s",
                                    r.step == 1   ? "create its PID and mount namespaces"
                                    : r.step == 3 ? "make its empty root"
                                    : r.step == 4 ? "confine itself"
                                    : r.step == 5 ? "mount the pod's procfs"
                                    : r.step == 6 ? "join the pod cgroup"
                                                  : "fork its init");
        uint64_t start = 0;
        if (rt_proc_start_time(r.pid, &start, err) < 0)
                return cb_error_prefix(err, "the pause process");
        *ret_pid = r.pid;
        *ret_start = start;
        return 0;
}

bool rt_pause_alive(pid_t pid, uint64_t start_time)
{
        /* Killed, it stays a zombie until reaped, and before that it kills
         * and waits for every process of its namespace (PF_EXITING): the
         * namespace is dead or dying meanwhile (no fork succeeds in it: the
         * kernel refuses new pids with ENOMEM), so that is not alive. */
        return rt_proc_alive(pid, start_time);
}

int rt_pause_stop(pid_t pid, uint64_t start_time, struct cb_error *err)
{
        if (pid <= 0)
                return 0;
        _cleanup_close_ int fd = rt_pidfd_open(pid, 0);
        if (fd < 0)
                return errno == ESRCH
                           ? 0
                           : cb_error_set(err, errno, "cannot open the pause process %d", (int)pid);
        uint64_t now;
        if (rt_proc_start_time(pid, &now, NULL) < 0 || now != start_time)
                return 0; /* gone, and the pid reused */
        if (rt_pidfd_send_signal(fd, SIGKILL, NULL, 0) < 0 && errno != ESRCH)
                return cb_error_set(err, errno, "cannot kill the pause process %d", (int)pid);
        /* The pidfd turns readable when it has exited (its parent reaps it). */
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int r;
        do
                r = poll(&pf, 1, PAUSE_STOP_TIMEOUT_MS);
        while (r < 0 && errno == EINTR);
        if (r == 0)
                return cb_error_set(err, ETIMEDOUT, "the pause process %d did not exit", (int)pid);
        return 0;
}
