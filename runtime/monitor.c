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
 *     tells the agent (RUNNING), then pumps stdout/stderr (or the
 *     terminal's master, with tty) into the CRI log, takes SIGCHLD through
 *     a signalfd and, with stdin or tty, serves the attach socket
 *     (runtime/attach.h): input to the container's stdin pipe or terminal,
 *     resizes, stdinOnce; SIGHUP makes it reopen the log file at its path
 *     (the kubelet's log rotation: rt_container_reopen_log);
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
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "cgroups/cgroup.h"
#include "lib/arena.h"
#include "lib/cleanup.h"
#include "lib/file.h"
#include "runtime/attach.h"
#include "runtime/container.h"
#include "runtime/container_internal.h"
#include "runtime/sync.h"
#include "runtime/syscalls.h"

#define MAX_CLIENTS 32

/* epoll tags (data.u32) */
enum { T_OUT, T_ERR, T_SIG, T_LISTEN, T_STDIN, T_MASTER, T_CLIENT = 16 };

struct client {
        int fd;     /* -1: free slot */
        bool first; /* the first session that attached stdin (stdinOnce) */
};

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
        /* stdin and terminal (runtime/attach.h) */
        int dir_fd;    /* O_PATH of the state dir: the socket lives there */
        int in[2];     /* stdin pipe: the container reads in[0], we keep in[1] */
        int master;    /* the terminal's master (tty), from the init */
        int listen_fd; /* the attach socket */
        int ep;
        bool stdin_closed; /* for good: stdinOnce, CLOSE, or the reader went away */
        bool any_session;  /* a first stdin session was seen */
        bool paused;       /* input pending: clients are not read */
        struct client clients[MAX_CLIENTS];
        uint8_t pend[RT_ATTACH_MAX];
        size_t pend_off, pend_len;
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

static int listen_attach(struct monitor *m, struct cb_error *err);

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
        if (!c->tty) { /* with a terminal, its master carries the output */
                if (pipe2(m->out, O_CLOEXEC) < 0 || pipe2(m->errp, O_CLOEXEC) < 0)
                        return cb_error_set(err, errno, "cannot create the stdio pipes");
                /* our ends are drained without blocking once the container exited */
                if (fcntl(m->out[0], F_SETFL, O_NONBLOCK) < 0 ||
                    fcntl(m->errp[0], F_SETFL, O_NONBLOCK) < 0)
                        return cb_error_set(err, errno, "cannot make the stdio pipes non-blocking");
                if (c->stdin_open) {
                        if (pipe2(m->in, O_CLOEXEC) < 0 || fcntl(m->in[1], F_SETFL, O_NONBLOCK) < 0)
                                return cb_error_set(err, errno, "cannot create the stdin pipe");
                }
        }
        if ((c->stdin_open || c->tty) && listen_attach(m, err) < 0)
                return -1;
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGCHLD);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGHUP); /* reopen the log (rt_container_reopen_log) */
        sigprocmask(SIG_BLOCK, &set, NULL);
        m->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
        if (m->sigfd < 0)
                return cb_error_set(err, errno, "cannot create a signalfd");
        return 0;
}

/* The attach socket in the state dir, bound through /proc/self/fd so a
 * long root dir cannot overflow sun_path; 0600: root only, as the state
 * dir. It exists before the agent hears RUNNING. */
static int listen_attach(struct monitor *m, struct cb_error *err)
{
        m->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (m->listen_fd < 0)
                return cb_error_set(err, errno, "cannot create the attach socket");
        (void)unlinkat(m->dir_fd, RT_ATTACH_SOCKET, 0); /* a stale one of a crashed monitor */
        struct sockaddr_un sa;
        socklen_t sl;
        rt_attach_sockaddr(m->dir_fd, &sa, &sl);
        if (bind(m->listen_fd, (struct sockaddr *)&sa, sl) < 0)
                return cb_error_set(err, errno, "cannot bind the attach socket %s/%s", m->dir,
                                    RT_ATTACH_SOCKET);
        if (fchmodat(m->dir_fd, RT_ATTACH_SOCKET, 0600, 0) < 0 ||
            listen(m->listen_fd, MAX_CLIENTS) < 0)
                return cb_error_set(err, errno, "cannot listen on the attach socket");
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
        /* v2: C0 is born in the container cgroup (no migration) */
        bool placed = false;
        pid_t c0 = cg_fork_into(c->cg_loc, &placed, err);
        if (c0 < 0) {
                close(sp[0]);
                close(sp[1]);
                return cb_error_prefix(err, "cannot fork the container init");
        }
        if (c0 == 0) {
                close(sp[0]);
                struct rt_init_args a = *tmpl;
                a.sync_fd = sp[1];
                a.stdin_fd = m->in[0] >= 0 ? m->in[0] : devnull;
                a.stdout_fd = m->out[1] >= 0 ? m->out[1] : devnull;
                a.stderr_fd = m->errp[1] >= 0 ? m->errp[1] : devnull;
                a.join_cgroup = c->cg_loc != NULL && !placed && c->cg_loc->version == 1;
                rt_init_run(&a);
        }
        _cleanup_close_ int fd = sp[0];
        close(sp[1]);
        int *child_ends[] = {&m->out[1], &m->errp[1], &m->in[0]};
        for (size_t i = 0; i < CB_ARRAY_SIZE(child_ends); i++) {
                if (*child_ends[i] >= 0)
                        close(*child_ends[i]);
                *child_ends[i] = -1;
        }

        /* the cgroup before anything runs in the container: C inherits it
         * (v1: C0 joins it itself after sync 1, rt_init_run) */
        char adj[16];
        snprintf(adj, sizeof(adj), "%d", c->oom_score_adj);
        char file[64];
        snprintf(file, sizeof(file), "/proc/%d/oom_score_adj", (int)c0);
        int r = 0;
        /* The runtime made the cgroup and gave us its directories: no
         * libcgroup initialisation in the monitor (see cg_locate). */
        if (c->cg_loc != NULL && !placed && c->cg_loc->version != 1)
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
                int passed = -1;
                int n = rt_sync_recv_fd(fd, &msg, &passed, err);
                if (passed >= 0 &&
                    (n <= 0 || msg.type != RT_SYNC_PTY || m->master >= 0 || !c->tty)) {
                        close(passed);
                        passed = -1;
                }
                if (n < 0)
                        break;
                if (n == 0)
                        break;
                if (msg.type == RT_SYNC_PTY && passed >= 0)
                        m->master = passed;
                else if (msg.type == RT_SYNC_PID)
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
        if (c->tty && m->master < 0) {
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
                return cb_error_set(err, EPROTO, "the container init sent no terminal");
        }
        if (m->master >= 0 && fcntl(m->master, F_SETFL, O_NONBLOCK) < 0) {
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
                return cb_error_set(err, errno, "cannot make the terminal non-blocking");
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
                /* a terminal's master reads EIO once no slave is open */
                if (n == 0 || (n < 0 && errno == EIO)) { /* every writer is gone */
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

/* ---- the attach socket --------------------------------------------------- */

static int ep_set(struct monitor *m, int op, int fd, uint32_t events, uint32_t tag)
{
        struct epoll_event ev = {.events = events, .data.u32 = tag};
        return epoll_ctl(m->ep, op, fd, &ev);
}

/* The fd that takes the container's input: the pipe or the terminal. */
static int input_fd(const struct monitor *m)
{
        return m->c->tty ? m->master : m->in[1];
}

/* While input is pending the clients are not read (taken out of epoll, so
 * a hang-up cannot spin either): a client's sends then block or fail
 * with EAGAIN, the back-pressure the node API waits out on EPOLLOUT. */
static void set_paused(struct monitor *m, bool paused)
{
        if (m->paused == paused)
                return;
        m->paused = paused;
        for (size_t i = 0; i < MAX_CLIENTS; i++)
                if (m->clients[i].fd >= 0)
                        (void)ep_set(m, paused ? EPOLL_CTL_DEL : EPOLL_CTL_ADD, m->clients[i].fd,
                                     EPOLLIN, T_CLIENT + (uint32_t)i);
        int fd = input_fd(m);
        if (fd < 0)
                return;
        if (m->c->tty) /* the master is watched for output already */
                (void)ep_set(m, EPOLL_CTL_MOD, fd, EPOLLIN | (paused ? EPOLLOUT : 0), T_MASTER);
        else
                (void)ep_set(m, paused ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, fd, EPOLLOUT, T_STDIN);
}

static void drop_client(struct monitor *m, size_t i)
{
        struct client *cl = &m->clients[i];
        if (cl->fd < 0)
                return;
        (void)epoll_ctl(m->ep, EPOLL_CTL_DEL, cl->fd, NULL);
        close(cl->fd);
        cl->fd = -1;
}

/* The container's stdin ends for good: a pipe gets EOF; a terminal gets
 * its VEOF character (^D: EOF for a reader in canonical mode) and no more
 * input. Every client is disconnected and the socket removed, so nobody
 * attaches to a stdin that cannot take input any more. */
static void close_stdin(struct monitor *m)
{
        if (m->stdin_closed)
                return;
        set_paused(m, false);
        m->stdin_closed = true;
        m->pend_len = m->pend_off = 0;
        if (m->in[1] >= 0) {
                close(m->in[1]);
                m->in[1] = -1;
        }
        if (m->master >= 0 && m->c->stdin_open) {
                struct termios t;
                char eof =
                    tcgetattr(m->master, &t) == 0 && t.c_cc[VEOF] != 0 ? (char)t.c_cc[VEOF] : 4;
                (void)!write(m->master, &eof, 1);
        }
        for (size_t i = 0; i < MAX_CLIENTS; i++)
                drop_client(m, i);
        if (m->listen_fd >= 0) {
                (void)epoll_ctl(m->ep, EPOLL_CTL_DEL, m->listen_fd, NULL);
                close(m->listen_fd);
                m->listen_fd = -1;
                (void)unlinkat(m->dir_fd, RT_ATTACH_SOCKET, 0);
        }
}

/* Writes pending input; true when all of it is out. */
static bool flush_input(struct monitor *m)
{
        int fd = input_fd(m);
        while (m->pend_off < m->pend_len && fd >= 0) {
                ssize_t n = write(fd, m->pend + m->pend_off, m->pend_len - m->pend_off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return false;
                if (n <= 0) { /* EPIPE: nobody reads the pipe any more; EIO: terminal gone */
                        close_stdin(m);
                        return true;
                }
                m->pend_off += (size_t)n;
        }
        m->pend_off = m->pend_len = 0;
        return true;
}

static void take_input(struct monitor *m, const uint8_t *data, size_t len)
{
        if (m->stdin_closed || !m->c->stdin_open || len == 0)
                return;
        memcpy(m->pend, data, len); /* len <= RT_ATTACH_MAX, nothing pending here */
        m->pend_off = 0;
        m->pend_len = len;
        if (!flush_input(m))
                set_paused(m, true);
}

static void on_client(struct monitor *m, size_t i)
{
        static uint8_t buf[RT_ATTACH_MAX + 2]; /* one more: an oversized message shows */
        /* a few messages per wakeup: several clients get their turn */
        for (int k = 0; k < 16 && m->clients[i].fd >= 0 && !m->paused; k++) {
                ssize_t n = recv(m->clients[i].fd, buf, sizeof(buf), MSG_DONTWAIT);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return;
                if (n <= 0) { /* the session ended */
                        bool first = m->clients[i].first;
                        drop_client(m, i);
                        if (first && m->c->stdin_once)
                                close_stdin(m);
                        return;
                }
                struct rt_attach_msg msg;
                struct cb_error e;
                if (rt_attach_decode(buf, (size_t)n, &msg, &e) < 0)
                        continue; /* dropped */
                /* input (even none) or a close makes this a stdin session;
                 * a connection that only resizes is not one */
                if (msg.type != RT_ATTACH_MSG_RESIZE && !m->any_session) {
                        m->any_session = true;
                        m->clients[i].first = true;
                }
                switch (msg.type) {
                case RT_ATTACH_MSG_STDIN:
                        take_input(m, msg.data, msg.len);
                        break;
                case RT_ATTACH_MSG_CLOSE:
                        if (m->c->stdin_open)
                                close_stdin(m);
                        return;
                case RT_ATTACH_MSG_RESIZE:
                        if (m->master >= 0) {
                                struct winsize ws = {.ws_row = msg.height, .ws_col = msg.width};
                                (void)ioctl(m->master, TIOCSWINSZ, &ws);
                        }
                        break;
                }
        }
}

static void on_listen(struct monitor *m)
{
        for (;;) {
                int fd = accept4(m->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (fd < 0)
                        return; /* EAGAIN, or nothing we can do */
                size_t i = 0;
                while (i < MAX_CLIENTS && m->clients[i].fd >= 0)
                        i++;
                if (i == MAX_CLIENTS || m->stdin_closed) {
                        close(fd);
                        continue;
                }
                m->clients[i] = (struct client){.fd = fd};
                if (!m->paused && ep_set(m, EPOLL_CTL_ADD, fd, EPOLLIN, T_CLIENT + (uint32_t)i) < 0)
                        drop_client(m, i);
        }
}

/* ---- log rotation ------------------------------------------------------------ */

/* CRI ReopenContainerLog: the agent renamed the log file away (or it was
 * removed) and asks, with SIGHUP, for a new one at the same path. The new
 * file is created before the old fd is closed, and between two records (the
 * monitor is single-threaded), so the renamed file ends with whole records
 * and the agent's waiting for the new name to appear is the answer. When the
 * open fails the old file is kept: the agent times out and renames it back.
 * A partial line waiting in the writer goes to the new file. */
static void reopen_log(struct monitor *m)
{
        const char *path = m->c->log_path;
        if (path == NULL || path[0] == '\0' || m->log == NULL)
                return;
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0640);
        if (fd < 0)
                return;
        close(m->log_fd);
        m->log_fd = fd;
        m->log->fd = fd;
}

/* ---- the loop ---------------------------------------------------------------- */

static int loop(struct monitor *m, pid_t pid)
{
        m->ep = epoll_create1(EPOLL_CLOEXEC);
        if (m->ep < 0)
                return -1;
        const struct {
                int fd;
                uint32_t tag;
        } regs[] = {{m->out[0], T_OUT},
                    {m->errp[0], T_ERR},
                    {m->sigfd, T_SIG},
                    {m->listen_fd, T_LISTEN},
                    {m->master, T_MASTER}};
        for (size_t i = 0; i < CB_ARRAY_SIZE(regs); i++)
                if (regs[i].fd >= 0 &&
                    ep_set(m, EPOLL_CTL_ADD, regs[i].fd, EPOLLIN, regs[i].tag) < 0)
                        return -1;
        bool exited = false;
        int status = 0;
        while (!exited) {
                struct epoll_event evs[16];
                int n = epoll_wait(m->ep, evs, 16, -1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -1;
                }
                for (int i = 0; i < n; i++) {
                        uint32_t k = evs[i].data.u32;
                        if (k == T_OUT || k == T_ERR || k == T_MASTER) {
                                int *fd = k == T_OUT   ? &m->out[0]
                                          : k == T_ERR ? &m->errp[0]
                                                       : &m->master;
                                if (k == T_MASTER && (evs[i].events & EPOLLOUT) && m->paused &&
                                    flush_input(m))
                                        set_paused(m, false);
                                if (*fd >= 0 && (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
                                        int before = *fd;
                                        pump(m, fd,
                                             k == T_ERR ? RT_STREAM_STDERR : RT_STREAM_STDOUT);
                                        if (*fd < 0) {
                                                (void)epoll_ctl(m->ep, EPOLL_CTL_DEL, before, NULL);
                                                if (k == T_MASTER) /* the terminal is gone */
                                                        close_stdin(m);
                                        }
                                }
                                continue;
                        }
                        if (k == T_STDIN) {
                                if (m->paused && flush_input(m))
                                        set_paused(m, false);
                                continue;
                        }
                        if (k == T_LISTEN) {
                                if (m->listen_fd >= 0)
                                        on_listen(m);
                                continue;
                        }
                        if (k >= T_CLIENT) {
                                if (k - T_CLIENT < MAX_CLIENTS)
                                        on_client(m, k - T_CLIENT);
                                continue;
                        }
                        struct signalfd_siginfo si;
                        while (read(m->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                                if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
                                        kill(pid, (int)si.ssi_signo); /* our unreaped child */
                                else if (si.ssi_signo == SIGHUP)
                                        reopen_log(m);
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
        /* what the container wrote before it exited is in the pipes (or the
         * terminal) now; do not wait for writers that outlive it (host PID
         * namespace) */
        if (m->out[0] >= 0)
                pump(m, &m->out[0], RT_STREAM_STDOUT);
        if (m->errp[0] >= 0)
                pump(m, &m->errp[0], RT_STREAM_STDERR);
        if (m->master >= 0)
                pump(m, &m->master, RT_STREAM_STDOUT);
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
        m->st.stdin_open = c->stdin_open;
        m->st.stdin_once = c->stdin_once;
        m->st.tty = c->tty;
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
        m->dir_fd = open(m->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (m->dir_fd < 0) {
                cb_error_set(&err, errno, "cannot open %s", m->dir);
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
        /* fd 6 is the sealed binary this mode was executed from */
        (void)rt_close_range(6, ~0U, 0);
        /* nothing we were given may reach the container */
        (void)fcntl(cfg_fd, F_SETFD, FD_CLOEXEC);
        (void)fcntl(agent_fd, F_SETFD, FD_CLOEXEC);
        if (bpf_fd >= 0)
                (void)fcntl(bpf_fd, F_SETFD, FD_CLOEXEC);
        struct cb_error err = {0};
        _cleanup_free_ char *json = NULL;
        _cleanup_(cb_arena_freep) struct cb_arena *arena = cb_arena_new(0);
        struct rt_container_config c;
        struct monitor m = {.agent_fd = agent_fd,
                            .log_fd = -1,
                            .out = {-1, -1},
                            .errp = {-1, -1},
                            .sigfd = -1,
                            .dir_fd = -1,
                            .in = {-1, -1},
                            .master = -1,
                            .listen_fd = -1,
                            .ep = -1};
        for (size_t i = 0; i < MAX_CLIENTS; i++)
                m.clients[i].fd = -1;
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
                if (m.in[i] >= 0)
                        close(m.in[i]);
        }
        for (size_t i = 0; i < MAX_CLIENTS; i++)
                if (m.clients[i].fd >= 0)
                        close(m.clients[i].fd);
        if (m.listen_fd >= 0) {
                /* the socket belongs to this monitor: gone with it */
                close(m.listen_fd);
                (void)unlinkat(m.dir_fd, RT_ATTACH_SOCKET, 0);
        }
        if (m.master >= 0)
                close(m.master);
        if (m.ep >= 0)
                close(m.ep);
        if (m.dir_fd >= 0)
                close(m.dir_fd);
        if (m.agent_fd >= 0)
                close(m.agent_fd);
        return r;
}
