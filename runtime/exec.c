/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Running a command inside a running container (CRI ExecSync in spirit;
 * what exec probes and `kubectl exec` need), with exactly the container's
 * confinement and never the agent's privileges.
 *
 * Process model (pattern 14: nothing runs in a fork of the agent):
 *
 *   agent --posix_spawn--> cubelet __exec CONFIG_FD SECCOMP_FD PID STARTTIME (H)
 *   H: pidfd of the container's first process (checked against its start
 *      time), oom_score_adj, joins the container's cgroup (from the host's
 *      mounts: on v1 it writes its own pid; on v2 it forks its successor
 *      H' born in the cgroup and relays, join_cgroup, and H' goes on
 *      below), setns(pidfd, mnt|net|ipc|uts) in one atomic call
 *      (root and cwd become the container's), setns(pidfd, PID) (children
 *      only), then the security sequence of the container's init
 *      (runtime/init.c): seccomp early without no_new_privs, bounding set,
 *      groups/gid/uid, capset, non-dumpable, no_new_privs; then forks G,
 *      waits for it and exits with its status (128+signal for signal
 *      deaths).
 *   G: setsid, PDEATHSIG, signals reset, fds >= 3 close-on-exec,
 *      chdir(cwd), argv[0] through the container's PATH, seccomp last,
 *      execve.
 * G is the only process the container can see (H stays in the host's PID
 * namespace), and it is born with the container's root, cwd and
 * credentials: nothing reachable through /proc/<G>/{root,cwd,fd} or by
 * attaching to it (a process of the container with CAP_SYS_PTRACE) is
 * more than the container has (issue 15 item 2). H runs in the container's
 * cgroup under its limits, as runc's exec process does.
 *
 * The container's settings come from <state dir>/config.json
 * (rt_container_save_config, runtime/container.c); the seccomp program is compiled (and cached)
 * by the agent from it, as at the container's start.
 *
 * Exit codes: the command's; 126 when it cannot be executed (EACCES,
 * ENOEXEC, a setup step failed), 127 when it is not found. The reason is
 * written to the output pipe, so it shows in the probe's message.
 *
 * With a terminal (rt_container_exec_start_stdio, tty), stdin is made
 * G's controlling terminal after setsid.
 *
 * SIGTERM to H (rt_container_exec_kill) SIGKILLs G's process group (G
 * leads a new session) and H exits 137; G dies with H through PDEATHSIG if
 * H itself is SIGKILLed.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroups/cgroup.h"
#include "lib/arena.h"
#include "lib/cleanup.h"
#include "lib/file.h"
#include "runtime/container.h"
#include "runtime/container_internal.h"
#include "runtime/syscalls.h"

#define CONFIG_MAX (16 << 20)

/* ---- agent side ------------------------------------------------------------ */

int rt_container_exec_start(const char *root_dir, const char *id, const char *monitor_path,
                            const char *const *argv, int *ret_pidfd, int *ret_out_fd,
                            struct cb_error *err)
{
        int pp[2];
        if (pipe2(pp, O_CLOEXEC) < 0)
                return cb_error_set(err, errno, "exec in container %s: pipe", id ? id : "");
        _cleanup_close_ int rd = pp[0];
        _cleanup_close_ int wr = pp[1];
        if (fcntl(rd, F_SETFL, O_NONBLOCK) < 0)
                return cb_error_set(err, errno, "exec in container %s: O_NONBLOCK", id ? id : "");
        struct rt_exec_stdio io = {.stdin_fd = -1, .stdout_fd = wr, .stderr_fd = wr};
        if (rt_container_exec_start_stdio(root_dir, id, monitor_path, argv, &io, ret_pidfd, err) <
            0)
                return -1;
        *ret_out_fd = take_fd(&rd);
        return 0;
}

int rt_container_exec_start_stdio(const char *root_dir, const char *id, const char *monitor_path,
                                  const char *const *argv, const struct rt_exec_stdio *io,
                                  int *ret_pidfd, struct cb_error *err)
{
        if (argv == NULL || argv[0] == NULL || argv[0][0] == '\0')
                return cb_error_set(err, EINVAL, "exec in container %s: the command is empty",
                                    id != NULL ? id : "");
        if (monitor_path == NULL || monitor_path[0] != '/')
                return cb_error_set(err, EINVAL,
                                    "exec in container %s: monitor_path must be the absolute "
                                    "path of the cubelet binary",
                                    id);
        struct rt_container_state st;
        if (rt_container_state(root_dir, id, &st, err) < 0)
                return -1;
        if (st.status != RT_CONTAINER_RUNNING || st.pid <= 0) {
                cb_error_set(err, 0, "container %s is not running", id);
                if (err != NULL)
                        err->code = ESRCH; /* without ": No such process" */
                return -1;
        }

        char dir[RT_PATH_MAX], path[RT_PATH_MAX + 16];
        if (rt_container_dir(root_dir, id, dir, sizeof(dir), err) < 0)
                return -1;
        snprintf(path, sizeof(path), "%s/config.json", dir);
        _cleanup_free_ char *json = NULL;
        if (cb_read_file(path, CONFIG_MAX, &json, NULL, err) < 0)
                return cb_error_prefix(err,
                                       "exec in container %s: no saved config (the container "
                                       "was created without rt_container_save_config)",
                                       id);
        _cleanup_(cb_arena_freep) struct cb_arena *arena = cb_arena_new(0);
        if (arena == NULL)
                return cb_error_set(err, ENOMEM, "exec in container %s", id);
        struct rt_container_config c;
        if (rt_config_from_json(arena, json, &c, err) < 0)
                return cb_error_prefix(err, "exec in container %s: %s", id, path);
        c.argv = argv;
        uint64_t caps = 0;
        if (c.privileged) {
                for (int i = 0; i <= rt_cap_last(); i++)
                        caps |= UINT64_C(1) << i;
        } else if (rt_caps_parse(c.caps, c.n_caps, &caps, err) < 0) {
                return cb_error_prefix(err, "exec in container %s", id);
        }
        _cleanup_close_ int bpf = -1;
        if (rt_seccomp_fd(&c, caps, &bpf, err) < 0)
                return cb_error_prefix(err, "exec in container %s", id);
        _cleanup_free_ char *req = NULL;
        if (rt_config_to_json(&c, &req, err) < 0)
                return cb_error_prefix(err, "exec in container %s", id);
        _cleanup_close_ int cfg = rt_memfd_with("cubelet-exec", req, err);
        if (cfg < 0)
                return -1;

        /* every fd the child gets is moved above the low numbers first, so
         * the dup2s below cannot overwrite one another */
        _cleanup_close_ int hc = rt_high_fd(cfg, err);
        _cleanup_close_ int hb = bpf >= 0 ? rt_high_fd(bpf, err) : -1;
        _cleanup_close_ int h0 = io->stdin_fd >= 0 ? rt_high_fd(io->stdin_fd, err) : -1;
        _cleanup_close_ int h1 = io->stdout_fd >= 0 ? rt_high_fd(io->stdout_fd, err) : -1;
        _cleanup_close_ int h2 = io->stderr_fd >= 0 ? rt_high_fd(io->stderr_fd, err) : -1;
        if (hc < 0 || (bpf >= 0 && hb < 0) || (io->stdin_fd >= 0 && h0 < 0) ||
            (io->stdout_fd >= 0 && h1 < 0) || (io->stderr_fd >= 0 && h2 < 0))
                return -1;
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&attr);
        if (h0 >= 0)
                posix_spawn_file_actions_adddup2(&fa, h0, 0);
        else
                posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        if (h1 >= 0)
                posix_spawn_file_actions_adddup2(&fa, h1, 1);
        else
                posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        if (h2 >= 0)
                posix_spawn_file_actions_adddup2(&fa, h2, 2);
        else
                posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, hc, 3);
        if (hb >= 0)
                posix_spawn_file_actions_adddup2(&fa, hb, 4);
        /* from the sealed copy of the binary, as fd 5 (rt_spawn_self) */
        int clone = rt_exe_clone(monitor_path, err);
        if (clone < 0) {
                posix_spawn_file_actions_destroy(&fa);
                posix_spawnattr_destroy(&attr);
                return cb_error_prefix(err, "exec in container %s", id);
        }
        posix_spawn_file_actions_adddup2(&fa, clone, 5);
        posix_spawn_file_actions_addclosefrom_np(&fa, 6);
        sigset_t all, none;
        sigfillset(&all);
        sigemptyset(&none);
        posix_spawnattr_setsigdefault(&attr, &all);
        posix_spawnattr_setsigmask(&attr, &none);
        /* own process group: a terminal's or the agent's group signals do
         * not reach the exec'd command */
        posix_spawnattr_setpgroup(&attr, 0);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF |
                                            POSIX_SPAWN_SETSIGMASK);
        char pid_s[24], start_s[24];
        snprintf(pid_s, sizeof(pid_s), "%d", (int)st.pid);
        snprintf(start_s, sizeof(start_s), "%llu", (unsigned long long)st.start_time);
        char *hargv[] = {(char *)monitor_path,   "__exec", "3",
                         hb >= 0 ? "4" : "none", pid_s,    start_s,
                         io->tty ? "tty" : NULL, NULL};
        char *envp[] = {"PATH=" RT_DEFAULT_PATH, NULL};
        pid_t pid;
        int rc = posix_spawn(&pid, "/proc/self/fd/5", &fa, &attr, hargv, envp);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        if (rc != 0)
                return cb_error_set(err, rc, "exec in container %s: cannot start %s", id,
                                    monitor_path);
        /* our unreaped child: the pid cannot be reused before we wait */
        int pidfd = rt_pidfd_open(pid, 0);
        if (pidfd < 0) {
                int e = errno;
                kill(pid, SIGKILL);
                while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                return cb_error_set(err, e, "exec in container %s: pidfd_open", id);
        }
        *ret_pidfd = pidfd;
        return 0;
}

int rt_container_exec_kill(int pidfd, struct cb_error *err)
{
        if (rt_pidfd_send_signal(pidfd, SIGTERM, NULL, 0) < 0 && errno != ESRCH)
                return cb_error_set(err, errno, "cannot stop the exec'd command");
        return 0;
}

int rt_container_exec_reap(int pidfd, bool block, int *ret_exit_code, struct cb_error *err)
{
        siginfo_t si;
        for (;;) {
                memset(&si, 0, sizeof(si));
                if (waitid(P_PIDFD, (id_t)pidfd, &si, WEXITED | (block ? 0 : WNOHANG)) == 0)
                        break;
                if (errno != EINTR)
                        return cb_error_set(err, errno, "cannot reap the exec'd command");
        }
        if (si.si_pid == 0)
                return 0;
        *ret_exit_code = si.si_code == CLD_EXITED ? si.si_status : 128 + si.si_status;
        return 1;
}

/* Appends what is readable; output beyond cap is read and dropped. */
static int drain(int fd, char *out, size_t cap, size_t *len, bool *eof)
{
        char buf[4096];
        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return errno == EAGAIN ? 0 : -1;
                if (n == 0) {
                        *eof = true;
                        return 0;
                }
                size_t take = (size_t)n;
                if (*len + take > cap)
                        take = cap - *len;
                if (out != NULL && take > 0)
                        memcpy(out + *len, buf, take);
                *len += take;
        }
}

size_t rt_container_exec_read(int out_fd, char *buf, size_t cap, size_t *len)
{
        bool eof = false;
        (void)drain(out_fd, buf, cap, len, &eof);
        return *len;
}

int rt_container_exec_wait(int pidfd, int out_fd, int timeout_ms, int *ret_exit_code, char *out,
                           size_t out_size, struct cb_error *err)
{
        size_t len = 0, cap = out_size > 0 ? out_size - 1 : 0;
        bool eof = false;
        int64_t deadline = rt_now_ns() / 1000000 + timeout_ms;
        for (;;) {
                struct pollfd p[2] = {{.fd = pidfd, .events = POLLIN},
                                      {.fd = eof ? -1 : out_fd, .events = POLLIN}};
                int64_t left = deadline - rt_now_ns() / 1000000;
                if (timeout_ms >= 0 && left <= 0) {
                        (void)rt_container_exec_kill(pidfd, err);
                        (void)rt_container_exec_reap(pidfd, true, ret_exit_code, err);
                        if (out != NULL && out_size > 0)
                                out[len] = '\0';
                        return cb_error_set(err, ETIMEDOUT, "the command timed out after %d ms",
                                            timeout_ms);
                }
                int n = poll(p, 2, timeout_ms < 0 ? -1 : (int)left);
                if (n < 0 && errno != EINTR)
                        return cb_error_set(err, errno, "poll");
                if (n <= 0)
                        continue;
                if (p[1].revents != 0)
                        (void)drain(out_fd, out, cap, &len, &eof);
                if (p[0].revents != 0) {
                        /* the command exited: what it wrote is in the pipe;
                         * do not wait for EOF from its background children */
                        (void)drain(out_fd, out, cap, &len, &eof);
                        if (out != NULL && out_size > 0)
                                out[len] = '\0';
                        int r = rt_container_exec_reap(pidfd, true, ret_exit_code, err);
                        return r < 0 ? -1 : 0;
                }
        }
}

/* ---- the helper process (cubelet __exec) ------------------------------------- */

static volatile pid_t helper_child;

static void on_term(int sig)
{
        (void)sig;
        pid_t g = helper_child;
        if (g > 0) {
                kill(-g, SIGKILL);
                kill(g, SIGKILL);
        }
}

__attribute__((noreturn)) static void fail(int code, const struct cb_error *e)
{
        dprintf(2, "%s\n", e->msg);
        _exit(code);
}

static volatile pid_t relay_child;

static void on_relay_term(int sig)
{
        pid_t h = relay_child;
        if (h > 0)
                kill(h, sig);
}

/* The stop signals H and the relay act on: blocked around a fork, then
 * handled by fn. */
static void block_stop_signals(sigset_t *old)
{
        sigset_t term;
        sigemptyset(&term);
        sigaddset(&term, SIGTERM);
        sigaddset(&term, SIGINT);
        sigaddset(&term, SIGHUP);
        sigprocmask(SIG_BLOCK, &term, old);
}

static void handle_stop_signals(void (*fn)(int), const sigset_t *old)
{
        struct sigaction sa = {.sa_handler = fn};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
        sigprocmask(SIG_SETMASK, old, NULL);
}

/* Waits for child and exits with its status (128 + the signal it died of). */
__attribute__((noreturn)) static void exit_as(pid_t child)
{
        int ws;
        while (waitpid(child, &ws, 0) < 0)
                if (errno != EINTR)
                        _exit(126);
        _exit(WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : WEXITSTATUS(ws));
}

/* H into the container's cgroup. On cgroup v2, H forks its successor H'
 * born in the cgroup (cg_fork_into: clone3 with CLONE_INTO_CGROUP, no
 * cgroup.procs write, so no wait for an RCU grace period with the
 * machine's cgroup_threadgroup_rwsem held for writing: every fork, exec
 * and exit on the node waits on that lock meanwhile; docs/child-setup-order.md)
 * and stays outside as a relay: it passes SIGTERM, SIGINT and SIGHUP on to
 * H', which does the rest of H's work, and exits with H''s status (128 +
 * the signal when H' died of one, e.g. the container cgroup's OOM killer);
 * H' dies with it (PDEATHSIG). When the clone is refused, H' writes itself
 * to cgroup.procs. On v1 (and hybrid) H moves itself (cg_join_self_at:
 * "0" to each hierarchy's tasks, which takes no such lock). */
static void join_cgroup(const struct cg_location *loc)
{
        struct cb_error err = {0};
        if (loc->version != 2) {
                /* H is one thread (a fresh exec): it moves itself */
                if (cg_join_self_at(loc, &err) < 0) {
                        cb_error_prefix(&err, "cannot join the container's cgroup");
                        fail(126, &err);
                }
                return;
        }
        sigset_t old;
        block_stop_signals(&old);
        pid_t relay = getpid();
        bool placed = false;
        pid_t h = cg_fork_into(loc, &placed, &err);
        if (h < 0) {
                cb_error_prefix(&err, "cannot join the container's cgroup");
                fail(126, &err);
        }
        if (h == 0) {
                /* H': dies with the relay, and checks it did not die first */
                if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != relay)
                        _exit(126);
                if (!placed && cg_attach_at(loc, getpid(), &err) < 0) {
                        cb_error_prefix(&err, "cannot join the container's cgroup");
                        fail(126, &err);
                }
                sigprocmask(SIG_SETMASK, &old, NULL);
                return;
        }
        relay_child = h;
        handle_stop_signals(on_relay_term, &old);
        /* its stdio stays open until it exits, right after H' */
        exit_as(h);
}

/* H, in the container's namespaces: its credentials, so G is born with
 * them. *seccomp_done when the filter is loaded. */
static void drop_to_container(const struct rt_container_config *c, const void *bpf, size_t bpf_len,
                              uint64_t caps, bool *seccomp_done)
{
        struct cb_error err = {0};
        if (bpf != NULL && !c->no_new_privs) {
                if (rt_seccomp_load(bpf, bpf_len, &err) < 0)
                        fail(126, &err);
                *seccomp_done = true;
        }
        if (rt_caps_drop_bounding(caps, &err) < 0 || rt_set_user(c, &err) < 0 ||
            rt_caps_set(caps, &err) < 0)
                fail(126, &err);
        /* the uid change reset it to fs.suid_dumpable */
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
                cb_error_set(&err, errno, "PR_SET_DUMPABLE");
                fail(126, &err);
        }
        if (c->no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
                cb_error_set(&err, errno, "PR_SET_NO_NEW_PRIVS failed");
                fail(126, &err);
        }
}

__attribute__((noreturn)) static void run_command(const struct rt_container_config *c, int hup_fd,
                                                  const void *bpf, size_t bpf_len,
                                                  bool seccomp_done, bool tty)
{
        struct cb_error err = {0};
        if (setsid() < 0) {
                cb_error_set(&err, errno, "setsid failed");
                fail(126, &err);
        }
        /* a terminal on stdin becomes the session's controlling terminal
         * (what a shell needs for job control and ^C) */
        if (tty && ioctl(0, TIOCSCTTY, 0) < 0) {
                cb_error_set(&err, errno, "cannot make stdin the controlling terminal");
                fail(126, &err);
        }
        /* dies with the helper. The helper keeps the other end of hup_fd
         * open until it exits, so a hangup means it died before PDEATHSIG
         * was in place (getppid() is 0 in the container's PID namespace and
         * cannot tell). */
        struct pollfd hup = {.fd = hup_fd, .events = POLLIN};
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || poll(&hup, 1, 0) != 0)
                _exit(126);
        close(hup_fd);
        rt_reset_signals();
        if (rt_close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0 && errno != ENOSYS) {
                cb_error_set(&err, errno, "close_range failed");
                fail(126, &err);
        }
        const char *cwd = c->cwd != NULL && c->cwd[0] != '\0' ? c->cwd : "/";
        char buf[RT_PATH_MAX];
        if (chdir(cwd) < 0) {
                cb_error_set(&err, errno, "cannot chdir to the working directory \"%s\"", cwd);
                fail(126, &err);
        }
        if (getcwd(buf, sizeof(buf)) == NULL || buf[0] != '/') {
                cb_error_set(&err, EPERM, "working directory \"%s\" is outside the container", cwd);
                fail(126, &err);
        }
        char exe[RT_PATH_MAX];
        int r = rt_resolve_exec(c, exe, sizeof(exe));
        if (r != 0) {
                cb_error_set(&err, r, "exec \"%s\"", c->argv[0]);
                fail(r == ENOENT ? 127 : 126, &err);
        }
        if (bpf != NULL && !seccomp_done && rt_seccomp_load(bpf, bpf_len, &err) < 0)
                fail(126, &err);
        static const char *const no_env[] = {"PATH=" RT_DEFAULT_PATH, NULL};
        execve(exe, (char *const *)c->argv, (char *const *)(c->env != NULL ? c->env : no_env));
        int e = errno;
        cb_error_set(&err, e, "exec \"%s\"", c->argv[0]);
        fail(e == ENOENT ? 127 : 126, &err);
}

int rt_exec_main(int argc, char **argv)
{
        if (argc != 5 && !(argc == 6 && strcmp(argv[5], "tty") == 0))
                return 2;
        bool tty = argc == 6;
        struct cb_error err = {0};
        /* fd 5 is the sealed binary this mode was executed from */
        (void)rt_close_range(5, ~0U, 0);
        int cfg_fd = (int)strtol(argv[1], NULL, 10);
        int bpf_fd = strcmp(argv[2], "none") == 0 ? -1 : (int)strtol(argv[2], NULL, 10);
        pid_t cpid = (pid_t)strtol(argv[3], NULL, 10);
        uint64_t start_time = strtoull(argv[4], NULL, 10);
        (void)fcntl(cfg_fd, F_SETFD, FD_CLOEXEC);
        if (bpf_fd >= 0)
                (void)fcntl(bpf_fd, F_SETFD, FD_CLOEXEC);
        signal(SIGPIPE, SIG_IGN);

        struct stat sb;
        if (fstat(cfg_fd, &sb) < 0 || sb.st_size <= 0 || sb.st_size > CONFIG_MAX) {
                cb_error_set(&err, errno, "exec: bad config fd");
                fail(126, &err);
        }
        char *json = calloc(1, (size_t)sb.st_size + 1);
        if (json == NULL || pread(cfg_fd, json, (size_t)sb.st_size, 0) != sb.st_size) {
                cb_error_set(&err, errno, "exec: cannot read the config");
                fail(126, &err);
        }
        close(cfg_fd);
        struct cb_arena *arena = cb_arena_new(0);
        struct rt_container_config c;
        if (arena == NULL || rt_config_from_json(arena, json, &c, &err) < 0)
                fail(126, &err);
        free(json);
        void *bpf = NULL;
        size_t bpf_len = 0;
        if (bpf_fd >= 0) {
                if (rt_seccomp_read(bpf_fd, &bpf, &bpf_len, &err) < 0)
                        fail(126, &err);
                close(bpf_fd);
        }
        uint64_t caps = 0;
        if (c.privileged) {
                for (int i = 0; i <= rt_cap_last(); i++)
                        caps |= UINT64_C(1) << i;
        } else if (rt_caps_parse(c.caps, c.n_caps, &caps, &err) < 0) {
                fail(126, &err);
        }

        /* open first, check second: a recycled pid cannot slip in */
        int pidfd = rt_pidfd_open(cpid, 0);
        uint64_t st;
        if (pidfd < 0 || rt_proc_start_time(cpid, &st, &err) < 0 || st != start_time) {
                cb_error_set(&err, ESRCH, "container %s is not running", c.id);
                fail(126, &err);
        }
        (void)fcntl(pidfd, F_SETFD, FD_CLOEXEC);
        /* the container's oom_score_adj (raising never needs privilege) */
        char adj[16];
        snprintf(adj, sizeof(adj), "%d", c.oom_score_adj);
        int afd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
        if (afd >= 0) {
                (void)!write(afd, adj, strlen(adj));
                close(afd);
        }
        /* the cgroup from the host's mounts, before leaving them: H joins
         * it and G is born in it */
        struct cg_location loc;
        if (c.cgroup_path != NULL && c.cgroup_path[0] != '\0') {
                if (cg_locate(c.cgroup_path, &loc, &err) < 0) {
                        cb_error_prefix(&err, "cannot join the container's cgroup");
                        fail(126, &err);
                }
                join_cgroup(&loc);
        }
        if (setns(pidfd, CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) < 0) {
                cb_error_set(&err, errno, "cannot join the namespaces of container %s", c.id);
                fail(126, &err);
        }
        /* PID last: it applies to children only */
        if (setns(pidfd, CLONE_NEWPID) < 0) {
                cb_error_set(&err, errno, "cannot join the PID namespace of container %s", c.id);
                fail(126, &err);
        }
        close(pidfd);
        int go[2];
        if (pipe2(go, O_CLOEXEC) < 0) {
                cb_error_set(&err, errno, "exec: pipe");
                fail(126, &err);
        }
        bool seccomp_done = false;
        drop_to_container(&c, bpf, bpf_len, caps, &seccomp_done);
        sigset_t old;
        block_stop_signals(&old);
        pid_t g = fork();
        if (g < 0) {
                cb_error_set(&err, errno, "exec: cannot fork");
                fail(126, &err);
        }
        if (g == 0) {
                close(go[1]);
                sigprocmask(SIG_SETMASK, &old, NULL);
                run_command(&c, go[0], bpf, bpf_len, seccomp_done, tty);
        }
        close(go[0]);
        helper_child = g;
        handle_stop_signals(on_term, &old);
        exit_as(g); /* go[1] stays open: the command's check that we live */
}
