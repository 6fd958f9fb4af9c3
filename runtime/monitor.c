/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-container monitor (conmon's role), run as the hidden
 * `cubelet __monitor CONFIG_FD SECCOMP_FD SYNC_FD` mode:
 *
 *   - M0, spawned by the agent in a new session, reads the config and
 *     forks M1, then exits: M1 is not the agent's child and survives it;
 *   - M1 becomes a child subreaper (C is re-parented to it when C0 exits,
 *     and so are orphans of a host-PID container), creates the cgroup and
 *     the log pipes, forks the init (init.c), places it in the cgroup,
 *     writes its oom_score_adj and releases it (sync 1);
 *   - once the exec succeeded it writes state.json (pid, start time) and
 *     tells the agent (RUNNING), then pumps stdout/stderr into the CRI log
 *     and takes SIGCHLD through a signalfd;
 *   - when C is reaped it drains the pipes, reads the OOM counter of the
 *     container's own cgroup, writes exit.json atomically and exits.
 *
 * Errors end up in exit.json (StartError) and on the agent's sync socket;
 * the monitor never prints (its stdio is /dev/null).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroups/cgroup.h"
#include "lib/arena.h"
#include "lib/cleanup.h"
#include "lib/file.h"
#include "runtime/container.h"
#include "runtime/container_internal.h"

struct monitor {
        const struct rt_container_config *c;
        char dir[RT_PATH_MAX];
        struct rt_container_state st;
        int agent_fd;
        int log_fd;
        int out[2], errp[2];
        int sigfd;
        uint64_t oom_before;
        struct rt_crilog_writer *log;
};

static int read_config(int fd, char **ret, struct cb_error *err)
{
        struct stat st;
        if (fstat(fd, &st) < 0)
                return cb_error_set(err, errno, "cannot stat the config fd");
        if (st.st_size <= 0 || st.st_size > (16 << 20))
                return cb_error_set(err, EINVAL, "config fd holds %lld bytes",
                                    (long long)st.st_size);
        size_t len = (size_t)st.st_size;
        char *buf = malloc(len + 1);
        if (buf == NULL)
                return cb_error_set(err, ENOMEM, "cannot read the config");
        size_t off = 0;
        while (off < len) {
                ssize_t n = pread(fd, buf + off, len - off, (off_t)off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        free(buf);
                        return cb_error_set(err, n < 0 ? errno : EIO, "cannot read the config");
                }
                off += (size_t)n;
        }
        buf[len] = '\0';
        *ret = buf;
        return 0;
}

/* A start that failed: exit.json says StartError / 128 (what the kubelet
 * shows for a container whose exec failed), the agent gets the message. */
static int start_failed(struct monitor *m, const struct cb_error *e)
{
        m->st.status = RT_CONTAINER_EXITED;
        m->st.exit_code = 128;
        m->st.start_failed = true;
        m->st.finished_at = rt_now_ns();
        snprintf(m->st.reason, sizeof(m->st.reason), "StartError");
        size_t n = strnlen(e->msg, sizeof(m->st.message) - 1);
        memcpy(m->st.message, e->msg, n);
        m->st.message[n] = '\0';
        struct cb_error ign;
        (void)rt_exit_write(m->dir, &m->st, &ign);
        (void)rt_state_write(m->dir, &m->st, &ign);
        if (m->agent_fd >= 0)
                (void)rt_sync_send_error(m->agent_fd, e);
        return 1;
}

static int setup_io(struct monitor *m, struct cb_error *err)
{
        const struct rt_container_config *c = m->c;
        if (c->log_path != NULL && c->log_path[0] != '\0') {
                m->log_fd = open(c->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
                if (m->log_fd < 0)
                        return cb_error_set(err, errno, "cannot open the container log %s",
                                            c->log_path);
        } else {
                m->log_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
                if (m->log_fd < 0)
                        return cb_error_set(err, errno, "cannot open /dev/null");
        }
        if (pipe2(m->out, O_CLOEXEC) < 0 || pipe2(m->errp, O_CLOEXEC) < 0)
                return cb_error_set(err, errno, "cannot create the stdio pipes");
        /* our ends are drained without blocking once the container exited */
        if (fcntl(m->out[0], F_SETFL, O_NONBLOCK) < 0 || fcntl(m->errp[0], F_SETFL, O_NONBLOCK) < 0)
                return cb_error_set(err, errno, "cannot make the stdio pipes non-blocking");
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGCHLD);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGHUP);
        sigprocmask(SIG_BLOCK, &set, NULL);
        m->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
        if (m->sigfd < 0)
                return cb_error_set(err, errno, "cannot create a signalfd");
        return 0;
}

/* Forks the init, places it, and waits for the outcome of the exec. */
static int start(struct monitor *m, const struct rt_init_args *tmpl, pid_t *ret_pid,
                 struct cb_error *err)
{
        const struct rt_container_config *c = m->c;
        int sp[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
                return cb_error_set(err, errno, "cannot create the sync socket");
        _cleanup_close_ int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (devnull < 0) {
                close(sp[0]);
                close(sp[1]);
                return cb_error_set(err, errno, "cannot open /dev/null");
        }
        pid_t c0 = fork();
        if (c0 < 0) {
                close(sp[0]);
                close(sp[1]);
                return cb_error_set(err, errno, "cannot fork the container init");
        }
        if (c0 == 0) {
                close(sp[0]);
                struct rt_init_args a = *tmpl;
                a.sync_fd = sp[1];
                a.stdin_fd = devnull;
                a.stdout_fd = m->out[1];
                a.stderr_fd = m->errp[1];
                rt_init_run(&a);
        }
        _cleanup_close_ int fd = sp[0];
        close(sp[1]);
        close(m->out[1]);
        close(m->errp[1]);
        m->out[1] = m->errp[1] = -1;

        /* the cgroup before anything runs in the container: C inherits it */
        char adj[16];
        snprintf(adj, sizeof(adj), "%d", c->oom_score_adj);
        char file[64];
        snprintf(file, sizeof(file), "/proc/%d/oom_score_adj", (int)c0);
        int r = 0;
        /* The runtime made the cgroup and gave us its directories: no
         * libcgroup initialisation in the monitor (see cg_locate). */
        if (c->cg_loc != NULL)
                r = cg_attach_at(c->cg_loc, c0, err);
        if (r == 0) {
                /* Lowering oom_score_adj below the current value needs
                 * CAP_SYS_RESOURCE. Without it (a node agent inside a
                 * container, or a restricted host) the container keeps the
                 * inherited value rather than failing to start: the kubelet's
                 * guarantees weaken, nothing else changes. Raising it never
                 * needs privilege, so BestEffort/Burstable values always
                 * apply. */
                _cleanup_close_ int afd = open(file, O_WRONLY | O_CLOEXEC);
                if (afd < 0 || write(afd, adj, strlen(adj)) < 0) {
                        int e = errno;
                        if (!((e == EACCES || e == EPERM) && c->oom_score_adj < 0))
                                r = cb_error_set(err, e, "cannot set oom_score_adj %s", adj);
                }
        }
        if (r == 0 && rt_sync_send(fd, RT_SYNC_GO, 0, 0) < 0) /* sync 1 */
                r = cb_error_set(err, errno, "cannot release the container init");
        if (r < 0) {
                kill(c0, SIGKILL);
                waitpid(c0, NULL, 0);
                return -1;
        }
        /* sync 2 (PID from C0) and sync 3 (EXEC from C) in either order, an
         * ERROR from either, then EOF when C0 exited and C exec'd */
        pid_t pid = 0;
        bool exec_sent = false, failed = false;
        struct rt_sync_msg msg;
        struct cb_error child = {0};
        for (;;) {
                int n = rt_sync_recv(fd, &msg, err);
                if (n < 0)
                        break;
                if (n == 0)
                        break;
                if (msg.type == RT_SYNC_PID)
                        pid = (pid_t)msg.value;
                else if (msg.type == RT_SYNC_EXEC)
                        exec_sent = true;
                else if (msg.type == RT_SYNC_ERROR && !failed) {
                        failed = true;
                        child.code = msg.code;
                        snprintf(child.msg, sizeof(child.msg), "%s", msg.msg);
                }
        }
        waitpid(c0, NULL, 0);
        if (failed || !exec_sent || pid <= 0) {
                if (pid > 0)
                        waitpid(pid, NULL, 0);
                if (failed) {
                        *err = child;
                        return -1;
                }
                return cb_error_set(err, 0, "the container init exited during setup");
        }
        *ret_pid = pid;
        return 0;
}

static void pump(struct monitor *m, int *fd, enum rt_stream s)
{
        char buf[65536];
        for (;;) {
                ssize_t n = read(*fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n > 0) {
                        struct cb_error e;
                        (void)rt_crilog_write(m->log, s, buf, (size_t)n, &e);
                        continue;
                }
                if (n == 0) { /* every writer is gone */
                        struct cb_error e;
                        (void)rt_crilog_flush(m->log, s, &e);
                        close(*fd);
                        *fd = -1;
                }
                return; /* EAGAIN: later */
        }
}

static void record_exit(struct monitor *m, int status)
{
        struct rt_container_state *st = &m->st;
        st->status = RT_CONTAINER_EXITED;
        st->finished_at = rt_now_ns();
        if (WIFSIGNALED(status)) {
                st->signal = WTERMSIG(status);
                st->exit_code = 128 + st->signal;
        } else {
                st->exit_code = WEXITSTATUS(status);
        }
        struct cg_oom oom;
        struct cb_error e;
        if (m->c->cg_loc != NULL && cg_read_oom_at(m->c->cg_loc, &oom, &e) == 0 &&
            oom.oom_kill > m->oom_before)
                st->oom_killed = true;
        snprintf(st->reason, sizeof(st->reason), "%s",
                 st->oom_killed       ? "OOMKilled"
                 : st->exit_code == 0 ? "Completed"
                                      : "Error");
}

static int loop(struct monitor *m, pid_t pid)
{
        _cleanup_close_ int ep = epoll_create1(EPOLL_CLOEXEC);
        if (ep < 0)
                return -1;
        int *fds[] = {&m->out[0], &m->errp[0], &m->sigfd};
        for (size_t i = 0; i < CB_ARRAY_SIZE(fds); i++) {
                struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
                if (epoll_ctl(ep, EPOLL_CTL_ADD, *fds[i], &ev) < 0)
                        return -1;
        }
        bool exited = false;
        int status = 0;
        while (!exited) {
                struct epoll_event evs[4];
                int n = epoll_wait(ep, evs, 4, -1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -1;
                }
                for (int i = 0; i < n; i++) {
                        uint32_t k = evs[i].data.u32;
                        if (k < 2) {
                                int *fd = fds[k];
                                if (*fd >= 0) {
                                        int before = *fd;
                                        pump(m, fd, k == 0 ? RT_STREAM_STDOUT : RT_STREAM_STDERR);
                                        if (*fd < 0)
                                                (void)epoll_ctl(ep, EPOLL_CTL_DEL, before, NULL);
                                }
                                continue;
                        }
                        struct signalfd_siginfo si;
                        while (read(m->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                                if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
                                        kill(pid, (int)si.ssi_signo); /* our unreaped child */
                        }
                        /* reap everything: C and re-parented orphans */
                        for (;;) {
                                int ws;
                                pid_t w = waitpid(-1, &ws, WNOHANG);
                                if (w <= 0)
                                        break;
                                if (w == pid) {
                                        status = ws;
                                        exited = true;
                                }
                        }
                }
        }
        /* what the container wrote before it exited is in the pipes now;
         * do not wait for writers that outlive it (host PID namespace) */
        if (m->out[0] >= 0)
                pump(m, &m->out[0], RT_STREAM_STDOUT);
        if (m->errp[0] >= 0)
                pump(m, &m->errp[0], RT_STREAM_STDERR);
        struct cb_error e;
        (void)rt_crilog_flush(m->log, RT_STREAM_STDOUT, &e);
        (void)rt_crilog_flush(m->log, RT_STREAM_STDERR, &e);
        record_exit(m, status);
        return 0;
}

static int run(struct monitor *m, int bpf_fd)
{
        const struct rt_container_config *c = m->c;
        struct cb_error err = {0};
        (void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        signal(SIGPIPE, SIG_IGN);
        snprintf(m->st.id, sizeof(m->st.id), "%s", c->id);
        m->st.status = RT_CONTAINER_CREATED;
        m->st.created_at = rt_now_ns();
        m->st.stop_signal = c->stop_signal;
        snprintf(m->st.cgroup_path, sizeof(m->st.cgroup_path), "%s",
                 c->cgroup_path != NULL ? c->cgroup_path : "");
        snprintf(m->st.log_path, sizeof(m->st.log_path), "%s",
                 c->log_path != NULL ? c->log_path : "");
        m->st.monitor_pid = getpid();
        if (rt_container_dir(c->root_dir, c->id, m->dir, sizeof(m->dir), &err) < 0 ||
            rt_proc_start_time(getpid(), &m->st.monitor_start_time, &err) < 0 ||
            rt_state_write(m->dir, &m->st, &err) < 0)
                return start_failed(m, &err);

        struct rt_init_args a = {.config = c, .state_dir = m->dir};
        _cleanup_free_ void *bpf = NULL;
        if (bpf_fd >= 0) {
                if (rt_seccomp_read(bpf_fd, &bpf, &a.bpf_len, &err) < 0)
                        return start_failed(m, &err);
                a.bpf = bpf;
                close(bpf_fd);
        }
        if (c->privileged) {
                /* Every capability this process holds (containerd's
                 * WithAllCurrentCapabilities): asking for one outside our
                 * own bounding set would make capset fail. */
                a.caps = 0;
                for (int i = 0; i <= rt_cap_last(); i++)
                        if (prctl(PR_CAPBSET_READ, i, 0, 0, 0) == 1)
                                a.caps |= UINT64_C(1) << i;
        } else if (rt_caps_parse(c->caps, c->n_caps, &a.caps, &err) < 0) {
                return start_failed(m, &err);
        }
        if (setup_io(m, &err) < 0)
                return start_failed(m, &err);
        m->oom_before = c->oom_before; /* read by the runtime with the cgroup made */
        pid_t pid = 0;
        if (start(m, &a, &pid, &err) < 0)
                return start_failed(m, &err);
        m->st.pid = pid;
        m->st.started_at = rt_now_ns();
        if (rt_proc_start_time(pid, &m->st.start_time, &err) < 0)
                return start_failed(m, &err);
        m->st.status = RT_CONTAINER_RUNNING;
        if (rt_state_write(m->dir, &m->st, &err) < 0) {
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
                return start_failed(m, &err);
        }
        (void)rt_sync_send(m->agent_fd, RT_SYNC_RUNNING, pid, (int64_t)m->st.start_time);
        close(m->agent_fd);
        m->agent_fd = -1;

        struct rt_crilog_writer *w = malloc(sizeof(*w));
        if (w == NULL)
                return 1;
        rt_crilog_init(w, m->log_fd);
        m->log = w;
        int r = loop(m, pid);
        free(w);
        if (r < 0) {
                /* the monitor cannot watch any more: record what we know */
                snprintf(m->st.reason, sizeof(m->st.reason), "Error");
                snprintf(m->st.message, sizeof(m->st.message), "monitor failed: %s",
                         strerror(errno));
                m->st.status = RT_CONTAINER_EXITED;
                m->st.exit_code = 255;
        }
        (void)rt_exit_write(m->dir, &m->st, &err);
        (void)rt_state_write(m->dir, &m->st, &err);
        return 0;
}

int rt_monitor_main(int argc, char **argv)
{
        if (argc != 4)
                return 2;
        int cfg_fd = (int)strtol(argv[1], NULL, 10);
        /* "none" rather than -1: nothing that looks like a flag */
        int bpf_fd = strcmp(argv[2], "none") == 0 ? -1 : (int)strtol(argv[2], NULL, 10);
        int agent_fd = (int)strtol(argv[3], NULL, 10);
        /* nothing we were given may reach the container */
        (void)fcntl(cfg_fd, F_SETFD, FD_CLOEXEC);
        (void)fcntl(agent_fd, F_SETFD, FD_CLOEXEC);
        if (bpf_fd >= 0)
                (void)fcntl(bpf_fd, F_SETFD, FD_CLOEXEC);
        struct cb_error err = {0};
        _cleanup_free_ char *json = NULL;
        _cleanup_(cb_arena_freep) struct cb_arena *arena = cb_arena_new(0);
        struct rt_container_config c;
        struct monitor m = {
            .agent_fd = agent_fd, .log_fd = -1, .out = {-1, -1}, .errp = {-1, -1}, .sigfd = -1};
        if (arena == NULL) {
                cb_error_set(&err, ENOMEM, "monitor: out of memory");
                (void)rt_sync_send_error(agent_fd, &err);
                return 1;
        }
        if (read_config(cfg_fd, &json, &err) < 0 ||
            rt_config_from_json(arena, json, &c, &err) < 0) {
                (void)rt_sync_send_error(agent_fd, &err);
                return 1;
        }
        close(cfg_fd);
        /* double fork: the agent reaps M0 at once, M1 is nobody's child
         * the agent has to wait for and lives on in this session */
        pid_t pid = fork();
        if (pid < 0) {
                cb_error_set(&err, errno, "monitor: cannot fork");
                (void)rt_sync_send_error(agent_fd, &err);
                return 1;
        }
        if (pid > 0)
                _exit(0);
        m.c = &c;
        int r = run(&m, bpf_fd);
        if (m.log_fd >= 0)
                close(m.log_fd);
        if (m.sigfd >= 0)
                close(m.sigfd);
        for (int i = 0; i < 2; i++) {
                if (m.out[i] >= 0)
                        close(m.out[i]);
                if (m.errp[i] >= 0)
                        close(m.errp[i]);
        }
        if (m.agent_fd >= 0)
                close(m.agent_fd);
        return r;
}
