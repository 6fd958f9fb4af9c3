/* SPDX-License-Identifier: Apache-2.0 */
/*
 * exec and attach sessions (struct exec) over either transport: the
 * command's (or the container's) stdin, stdout and stderr on WebSocket
 * channels or SPDY streams, backpressure both ways, the exit status on the
 * error channel, killed commands reaped from the loop.
 */
#include "agent/nodeapi/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "agent/core/inotify.h"
#include "agent/core/log.h"
#include "lib/cleanup.h"
#include "runtime/attach.h"

struct reaper {
        struct reaper *next;
        struct ag_napi *srv;
        int pidfd;
        struct ag_io *io;
};

/* ---- exec and attach sessions (WebSocket or SPDY) ---- */

static void reaper_free(struct reaper *r)
{
        struct reaper **pp = &r->srv->reapers;
        while (*pp != NULL && *pp != r)
                pp = &(*pp)->next;
        if (*pp == r)
                *pp = r->next;
        ag_io_free(r->io);
        close(r->pidfd);
        free(r);
}

void ag_napi_reapers_free(struct ag_napi *s)
{
        while (s->reapers != NULL) {
                struct reaper *r = s->reapers;
                int code;
                (void)rt_container_exec_reap(r->pidfd, true, &code, NULL);
                reaper_free(r);
        }
}

static void on_reap(struct ag_io *io, int fd, uint32_t events, void *data)
{
        (void)io;
        (void)fd;
        (void)events;
        struct reaper *r = data;
        int code;
        if (rt_container_exec_reap(r->pidfd, false, &code, NULL) != 0)
                reaper_free(r);
}

/* Kills a still running command; a watcher reaps it once it is gone. */
static void kill_and_reap(struct ag_napi *s, int pidfd)
{
        int code;
        if (rt_container_exec_reap(pidfd, false, &code, NULL) != 0) {
                close(pidfd);
                return;
        }
        (void)rt_container_exec_kill(pidfd, NULL);
        struct reaper *r = calloc(1, sizeof(*r));
        struct cb_error err = {0};
        if (r != NULL) {
                r->srv = s;
                r->pidfd = pidfd;
                r->io = ag_io_new(s->loop, pidfd, EPOLLIN, on_reap, r, &err);
        }
        if (r == NULL || r->io == NULL) {
                /* cannot watch: reap now (the helper exits at once on SIGTERM) */
                (void)rt_container_exec_reap(pidfd, true, &code, NULL);
                close(pidfd);
                free(r);
                return;
        }
        r->next = s->reapers;
        s->reapers = r;
}

static void close_fd_io(int *fd, struct ag_io **io)
{
        ag_io_free(*io);
        *io = NULL;
        if (*fd >= 0)
                close(*fd);
        *fd = -1;
}

void ag_napi_exec_free(struct exec *x)
{
        if (x == NULL)
                return;
        ag_io_free(x->pid_io);
        if (x->pidfd >= 0) {
                log_v(1, "node API: exec client went away: command killed");
                kill_and_reap(x->srv, x->pidfd);
        }
        if (x->pty >= 0 && x->in_fd == x->pty)
                x->in_fd = -1;
        if (x->pty >= 0 && x->out_fd == x->pty)
                x->out_fd = -1;
        close_fd_io(&x->in_fd, &x->in_io);
        close_fd_io(&x->out_fd, &x->out_io);
        close_fd_io(&x->err_fd, &x->err_io);
        close_fd_io(&x->att_ino, &x->att_io);
        close_fd_io(&x->att_sock, &x->att_sock_io);
        if (x->att_fd >= 0)
                close(x->att_fd);
        free(x->att_buf);
        if (x->pty >= 0)
                close(x->pty);
        free(x->stdin_buf);
        free(x->opts.argv);
        free(x->cid);
        free(x);
}

/* Output on a channel: a WebSocket message [channel][data], or DATA on the
 * SPDY stream of that channel. */
void ag_napi_exec_queue(struct exec *x, uint8_t channel, const void *data, size_t len)
{
        struct conn *c = x->c;
        if (!x->spdy) {
                ag_napi_ws_send(c, WSLAY_BINARY_FRAME, &channel, 1, data, len);
                return;
        }
        if (channel >= N_CH || !x->want[channel] || x->fin_sent[channel] || len == 0)
                return;
        struct cb_error err = {0};
        if (ag_spdy_data(c->spdy, x->sid[channel], data, len, false, &err) < 0)
                log_v(2, "node API: %s", err.msg);
        ag_napi_spdy_flush(c);
}

static void attach_pump(struct exec *x);

void ag_napi_exec_update_reading(struct exec *x)
{
        size_t q = ag_napi_conn_pending(x->c);
        if (x->attach && !x->closing && q < OUT_HIGH / 2)
                attach_pump(x); /* what waited while the client was slow */
        uint32_t ev = ag_napi_conn_pending(x->c) < OUT_HIGH ? EPOLLIN : 0;
        if (x->out_io != NULL)
                ag_io_set_events(x->out_io, ev, NULL);
        if (x->err_io != NULL)
                ag_io_set_events(x->err_io, ev, NULL);
}

/* Reads what a stream has now (with drain: up to 2 MiB whatever is queued,
 * since the command ended and what it wrote last must not be lost); false
 * at its end. */
static bool pump(struct exec *x, int fd, uint8_t channel, bool drain)
{
        uint8_t buf[READ_CHUNK];
        /* a drain is bounded too: a background child may keep writing */
        for (int i = 0; drain ? i < 64 : (i < 8 && ag_napi_conn_pending(x->c) < OUT_HIGH); i++) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return true;
                if (n <= 0) /* EOF, or EIO from a pty whose slave side closed */
                        return false;
                ag_napi_exec_queue(x, channel, buf, (size_t)n);
        }
        return true;
}

/* The end of a session: the status on the error channel (v4+: a
 * metav1.Status, also for success), then the close. */
void ag_napi_exec_finish(struct exec *x, int code, const char *message)
{
        if (x->closing)
                return;
        struct conn *c = x->c;
        if (x->out_fd >= 0)
                (void)pump(x, x->out_fd, AG_NAPI_CH_STDOUT, true);
        if (x->err_fd >= 0)
                (void)pump(x, x->err_fd, AG_NAPI_CH_STDERR, true);
        _cleanup_free_ char *st = ag_napi_exec_status_json(code, message);
        if ((x->spdy || x->proto >= AG_NAPI_CHANNEL_V4) && st != NULL) {
                ag_napi_exec_queue(x, AG_NAPI_CH_ERROR, st, strlen(st));
        } else if (!x->spdy && (code != 0 || message != NULL)) {
                char m[512];
                snprintf(m, sizeof(m), "%s", message ? message : "command terminated");
                ag_napi_exec_queue(x, AG_NAPI_CH_ERROR, m, strlen(m));
        }
        x->closing = true;
        if (x->spdy) {
                /* every stream of ours ends; the connection closes once
                 * the client has it all, as the kubelet closes it */
                struct cb_error err = {0};
                for (int ch = 0; ch < N_CH; ch++)
                        if (x->want[ch] && !x->fin_sent[ch]) {
                                x->fin_sent[ch] = true;
                                (void)ag_spdy_data(c->spdy, x->sid[ch], NULL, 0, true, &err);
                        }
                (void)ag_spdy_goaway(c->spdy, 0, &err);
                ag_napi_spdy_flush(c);
                c->close_after_flush = true;
        } else {
                wslay_event_queue_close(c->ws, WSLAY_CODE_NORMAL_CLOSURE, NULL, 0);
                if (wslay_event_send(c->ws) < 0)
                        c->dead = true;
                /* not yet: a slow client may still have megabytes of the
                 * command's output to read before our close (the timer
                 * armed here cut 4 MiB of a 32 MiB exec under load) */
                c->close_wait_after_flush = true;
                if (ag_napi_conn_pending(c) == 0) {
                        c->close_wait_after_flush = false;
                        ag_timer_arm(c->timer, CLOSE_WAIT_MS);
                }
        }
}

static void on_exec_out(struct ag_io *io, int fd, uint32_t events, void *data)
{
        (void)events;
        struct exec *x = data;
        struct conn *c = x->c;
        uint8_t ch = io == x->err_io ? AG_NAPI_CH_STDERR : AG_NAPI_CH_STDOUT;
        if (!pump(x, fd, ch, false)) {
                if (io == x->err_io) {
                        close_fd_io(&x->err_fd, &x->err_io);
                } else {
                        ag_io_free(x->out_io);
                        x->out_io = NULL;
                        if (x->out_fd != x->pty)
                                close(x->out_fd);
                        x->out_fd = -1;
                }
        }
        ag_napi_exec_update_reading(x);
        ag_napi_conn_update(c);
}

static void on_exec_exit(struct ag_io *io, int fd, uint32_t events, void *data)
{
        (void)io;
        (void)fd;
        (void)events;
        struct exec *x = data;
        struct conn *c = x->c;
        int code = 0;
        struct cb_error err = {0};
        int r = rt_container_exec_reap(x->pidfd, false, &code, &err);
        if (r == 0)
                return;
        ag_io_free(x->pid_io);
        x->pid_io = NULL;
        close(x->pidfd);
        x->pidfd = -1;
        x->exited = true;
        log_v(2, "node API: exec %s exited %d", x->opts.argv[0] ? x->opts.argv[0] : "", code);
        ag_napi_exec_finish(x, r < 0 ? 1 : code, r < 0 ? err.msg : NULL);
        ag_napi_conn_update(c);
}

static void write_stdin(struct exec *x)
{
        while (x->stdin_len > 0 && x->in_fd >= 0) {
                ssize_t n = write(x->in_fd, x->stdin_buf, x->stdin_len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN) {
                        if (x->in_io != NULL)
                                ag_io_set_events(x->in_io, EPOLLOUT, NULL);
                        return;
                }
                if (n < 0) { /* the command closed its stdin: drop the input */
                        x->stdin_len = 0;
                        break;
                }
                memmove(x->stdin_buf, x->stdin_buf + n, x->stdin_len - (size_t)n);
                x->stdin_len -= (size_t)n;
        }
        if (x->in_io != NULL)
                ag_io_set_events(x->in_io, 0, NULL);
        if (x->stdin_close && x->in_fd >= 0 && x->in_fd != x->pty)
                close_fd_io(&x->in_fd, &x->in_io);
        if (x->c->read_paused && x->stdin_len < STDIN_HIGH / 2)
                x->c->read_paused = false;
}

/* attach: what waits in stdin_buf goes to the monitor, a message at a
 * time; a full socket waits for EPOLLOUT. A closed one (stdinOnce used up,
 * the container ended) drops the input. */
static void attach_write(struct exec *x)
{
        struct cb_error err = {0};
        while (x->stdin_len > 0 && x->att_sock >= 0) {
                size_t n = x->stdin_len > RT_ATTACH_MAX ? RT_ATTACH_MAX : x->stdin_len;
                int r = rt_attach_stdin(x->att_sock, x->stdin_buf, n, &err);
                if (r == -EAGAIN) {
                        ag_io_set_events(x->att_sock_io, EPOLLOUT, NULL);
                        return;
                }
                if (r < 0) {
                        log_v(2, "node API: attach %s/%s %s: %s", x->t.ns, x->t.pod, x->t.container,
                              err.msg);
                        close_fd_io(&x->att_sock, &x->att_sock_io);
                        x->stdin_len = 0;
                        break;
                }
                memmove(x->stdin_buf, x->stdin_buf + n, x->stdin_len - n);
                x->stdin_len -= n;
        }
        if (x->att_sock_io != NULL)
                ag_io_set_events(x->att_sock_io, 0, NULL);
        /* the client's stdin ended: this session lets go of the container's
         * stdin (closed for good only with stdinOnce, by the monitor) */
        if (x->stdin_close && x->stdin_len == 0)
                close_fd_io(&x->att_sock, &x->att_sock_io);
        if (x->c->read_paused && x->stdin_len < STDIN_HIGH / 2)
                x->c->read_paused = false;
}

/* The command's stdin (exec) or the monitor's attach socket became
 * writable: what waited goes on, and the client is read again. */
static void on_stdin_writable(struct ag_io *io, int fd, uint32_t events, void *data)
{
        (void)io;
        (void)fd;
        (void)events;
        struct exec *x = data;
        struct conn *c = x->c;
        if (x->attach)
                attach_write(x);
        else
                write_stdin(x);
        if (!c->read_paused && !c->dead)
                ag_napi_conn_read(c);
        ag_napi_conn_update(c);
}

void ag_napi_exec_stdin(struct exec *x, const uint8_t *p, size_t n)
{
        if ((x->attach ? x->att_sock : x->in_fd) < 0 || n == 0)
                return;
        if (x->stdin_len + n > STDIN_HIGH * 2)
                return; /* cannot happen with the pause; never grow unbounded */
        uint8_t *nb = realloc(x->stdin_buf, x->stdin_len + n);
        if (nb == NULL)
                return;
        x->stdin_buf = nb;
        memcpy(nb + x->stdin_len, p, n);
        x->stdin_len += n;
        if (x->attach)
                attach_write(x);
        else
                write_stdin(x);
        if (x->stdin_len >= STDIN_HIGH)
                x->c->read_paused = true;
}

void ag_napi_exec_stdin_close(struct exec *x)
{
        if (x->attach) {
                x->stdin_close = true;
                attach_write(x);
                return;
        }
        if (x->pty >= 0 && x->in_fd == x->pty) {
                /* a terminal has no half-close: ^D ends input */
                static const uint8_t eot = 4;
                ag_napi_exec_stdin(x, &eot, 1);
        } else {
                x->stdin_close = true;
                write_stdin(x);
        }
}

void ag_napi_exec_resize(struct exec *x, const uint8_t *p, size_t n)
{
        uint16_t w, h;
        struct cb_error err = {0};
        if (x->attach) {
                /* a full socket drops a resize: the next one carries the size */
                if (x->att_sock >= 0 && ag_napi_parse_resize(p, n, &w, &h, &err) == 0)
                        (void)rt_attach_resize(x->att_sock, w, h, &err);
                return;
        }
        if (x->pty >= 0 && ag_napi_parse_resize(p, n, &w, &h, &err) == 0) {
                struct winsize ws = {.ws_row = h, .ws_col = w};
                (void)ioctl(x->pty, TIOCSWINSZ, &ws);
        } else if (x->pty >= 0) {
                log_v(2, "node API: %s", err.msg);
        }
}

/* The pipes (or the terminal) and the command. 0, or -1 with err. */
static int spawn_exec(struct exec *x, const char *cid, struct cb_error *err)
{
        struct ag_napi *s = x->srv;
        struct rt_exec_stdio io = {.stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1};
        _cleanup_close_ int c_in = -1, c_out = -1, c_err = -1, slave = -1;
        if (x->opts.tty) {
                x->pty = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
                char name[128];
                if (x->pty < 0 || grantpt(x->pty) < 0 || unlockpt(x->pty) < 0 ||
                    ptsname_r(x->pty, name, sizeof(name)) != 0)
                        return cb_error_set(err, errno, "cannot allocate a terminal");
                slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
                if (slave < 0 || ag_napi_set_nonblock(x->pty) < 0)
                        return cb_error_set(err, errno, "cannot open the terminal %s", name);
                io.stdin_fd = io.stdout_fd = io.stderr_fd = slave;
                io.tty = true;
                x->out_fd = x->pty;
                if (x->opts.in)
                        x->in_fd = x->pty;
        } else {
                int p[2];
                if (x->opts.in) {
                        if (pipe2(p, O_CLOEXEC) < 0)
                                return cb_error_set(err, errno, "pipe");
                        c_in = p[0];
                        x->in_fd = p[1];
                        io.stdin_fd = c_in;
                }
                if (x->opts.out) {
                        if (pipe2(p, O_CLOEXEC) < 0)
                                return cb_error_set(err, errno, "pipe");
                        x->out_fd = p[0];
                        c_out = p[1];
                        io.stdout_fd = c_out;
                }
                if (x->opts.err) {
                        if (pipe2(p, O_CLOEXEC) < 0)
                                return cb_error_set(err, errno, "pipe");
                        x->err_fd = p[0];
                        c_err = p[1];
                        io.stderr_fd = c_err;
                }
                if ((x->in_fd >= 0 && ag_napi_set_nonblock(x->in_fd) < 0) ||
                    (x->out_fd >= 0 && ag_napi_set_nonblock(x->out_fd) < 0) ||
                    (x->err_fd >= 0 && ag_napi_set_nonblock(x->err_fd) < 0))
                        return cb_error_set(err, errno, "O_NONBLOCK");
        }
        if (rt_container_exec_start_stdio(s->cfg.root_dir, cid, s->cfg.monitor_path, x->opts.argv,
                                          &io, &x->pidfd, err) < 0)
                return -1;
        /* from here on the command runs: every failure kills it (ag_napi_exec_free) */
        x->pid_io = ag_io_new(s->loop, x->pidfd, EPOLLIN, on_exec_exit, x, err);
        if (x->pid_io == NULL)
                return -1;
        if (x->out_fd >= 0 &&
            (x->out_io = ag_io_new(s->loop, x->out_fd, EPOLLIN, on_exec_out, x, err)) == NULL)
                return -1;
        if (x->err_fd >= 0 &&
            (x->err_io = ag_io_new(s->loop, x->err_fd, EPOLLIN, on_exec_out, x, err)) == NULL)
                return -1;
        /* the pty master is watched for reading already: stdin writes to it
         * go without a watcher of their own (EAGAIN on a pty is rare) */
        if (x->in_fd >= 0 && x->in_fd != x->pty &&
            (x->in_io = ag_io_new(s->loop, x->in_fd, 0, on_stdin_writable, x, err)) == NULL)
                return -1;
        return 0;
}
/* The log file of a container's current instance. */
static int current_log(struct ag_napi *s, const struct ag_napi_target *t, const struct found *f,
                       char *path, size_t size)
{
        char pod_dir[4096], cdir[4400];
        long newest, prev;
        if (ag_podlogs_pod_dir(s->cfg.pod_logs_dir, t->ns, t->pod, f->uid, pod_dir,
                               sizeof(pod_dir)) < 0 ||
            snprintf(cdir, sizeof(cdir), "%s/%s", pod_dir, t->container) >= (int)sizeof(cdir) ||
            ag_podlogs_restarts(cdir, &newest, &prev) < 0)
                return -1;
        return snprintf(path, size, "%s/%ld.log", cdir, newest) < (int)size ? 0 : -1;
}

/* attach: every record appended to the log goes out on stdout or stderr,
 * as it would have reached a terminal; the writer closing the file (the
 * container ended) ends the session. */
static void attach_pump(struct exec *x)
{
        char buf[READ_CHUNK];
        for (int i = 0; i < 64 && ag_napi_conn_pending(x->c) < OUT_HIGH && x->att_fd >= 0; i++) {
                ssize_t n = pread(x->att_fd, buf, sizeof(buf), x->att_off);
                if (n <= 0)
                        break;
                x->att_off += n;
                char *nb = realloc(x->att_buf, x->att_len + (size_t)n);
                if (nb == NULL)
                        break;
                x->att_buf = nb;
                memcpy(nb + x->att_len, buf, (size_t)n);
                x->att_len += (size_t)n;
                size_t start = 0;
                char *nl;
                while ((nl = memchr(x->att_buf + start, '\n', x->att_len - start)) != NULL) {
                        size_t rl = (size_t)(nl - (x->att_buf + start));
                        struct rt_crilog_entry e;
                        if (rt_crilog_parse(x->att_buf + start, rl, &e, NULL) == 0) {
                                uint8_t ch = e.stream == RT_STREAM_STDERR && x->opts.err
                                                 ? AG_NAPI_CH_STDERR
                                                 : AG_NAPI_CH_STDOUT;
                                /* the content ends at the record's '\n': a
                                 * full line goes out with it */
                                if (ch == AG_NAPI_CH_STDERR || x->opts.out)
                                        ag_napi_exec_queue(x, ch, e.content,
                                                           e.len + (e.partial ? 0 : 1));
                        }
                        start += rl + 1;
                }
                memmove(x->att_buf, x->att_buf + start, x->att_len - start);
                x->att_len -= start;
                if (x->att_len > 2 * RT_CRILOG_MAX_LINE)
                        x->att_len = 0; /* not a CRI writer's record: drop it */
        }
}

static void on_attach_change(struct ag_io *io, int fd, uint32_t events, void *data)
{
        (void)io;
        (void)events;
        struct exec *x = data;
        bool ended = (ag_inotify_drain(fd, NULL, NULL) &
                      (IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF)) != 0;
        attach_pump(x);
        if (ended)
                ag_napi_exec_finish(x, 0, NULL);
        ag_napi_conn_update(x->c);
}

static int start_attach(struct exec *x, const struct ag_napi_target *t, const struct found *f,
                        struct cb_error *err)
{
        char path[4600];
        if (current_log(x->srv, t, f, path, sizeof(path)) < 0)
                return cb_error_set(err, ENOENT, "container \"%s\" has no output yet",
                                    t->container);
        x->att_ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (x->att_ino < 0 ||
            inotify_add_watch(x->att_ino, path,
                              IN_MODIFY | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF) < 0)
                return cb_error_set(err, errno, "cannot watch %s", path);
        x->att_fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (x->att_fd < 0 || fstat(x->att_fd, &st) < 0)
                return cb_error_set(err, errno, "cannot open %s", path);
        x->att_off = st.st_size; /* what comes from now on */
        x->att_io = ag_io_new(x->srv->loop, x->att_ino, EPOLLIN, on_attach_change, x, err);
        if (x->att_io == NULL)
                return -1;
        if ((x->opts.in || x->opts.tty) && f->cid != NULL) {
                if (rt_attach_open(x->srv->cfg.root_dir, f->cid, &x->att_sock, err) < 0)
                        return -1;
                x->att_sock_io = ag_io_new(x->srv->loop, x->att_sock, 0, on_stdin_writable, x, err);
                if (x->att_sock_io == NULL)
                        return -1;
                /* an empty input message claims the stdin session at once
                 * (stdinOnce: this session's end closes the container's
                 * stdin) */
                if (x->opts.in && rt_attach_stdin(x->att_sock, "", 0, err) == -1)
                        return -1;
        }
        /* the container may have ended between the status and the watch */
        struct rt_container_state cs;
        if (f->cid != NULL && rt_container_state(x->srv->cfg.root_dir, f->cid, &cs, NULL) == 0 &&
            cs.status != RT_CONTAINER_RUNNING)
                ag_napi_exec_finish(x, 0, NULL);
        return 0;
}

int ag_napi_exec_on_stream(struct conn *c, uint32_t id, const struct ag_spdy_header *h, size_t n)
{
        struct exec *x = c->ex;
        struct cb_error err = {0};
        const char *type = ag_napi_header_get(h, n, "streamtype");
        static const char *const names[N_CH] = {"stdin", "stdout", "stderr", "error", "resize"};
        int ch = -1;
        for (int i = 0; type != NULL && i < N_CH; i++)
                if (strcmp(type, names[i]) == 0)
                        ch = i;
        if (ch < 0 || x->sid[ch] != 0 || x->started) {
                log_v(2, "node API: exec: unexpected stream type \"%s\"", type ? type : "");
                (void)ag_spdy_rst(c->spdy, id, AG_SPDY_REFUSED_STREAM, &err);
                return 0;
        }
        if (ag_spdy_reply(c->spdy, id, NULL, 0, false, &err) < 0)
                return -1;
        x->sid[ch] = id;
        x->want[ch] = true;
        /* all there: the error stream, and each one the request asked for */
        bool all =
            x->sid[AG_NAPI_CH_ERROR] != 0 && (!x->opts.in || x->sid[AG_NAPI_CH_STDIN] != 0) &&
            (!x->opts.out || x->sid[AG_NAPI_CH_STDOUT] != 0) &&
            (!x->opts.err || x->opts.tty || x->sid[AG_NAPI_CH_STDERR] != 0) &&
            (!x->opts.tty || x->proto < AG_NAPI_CHANNEL_V4 || x->sid[AG_NAPI_CH_RESIZE] != 0);
        if (all)
                ag_napi_exec_begin(x);
        return 0;
}

int ag_napi_exec_on_data(struct conn *c, uint32_t id, const uint8_t *buf, size_t len, bool fin)
{
        struct exec *x = c->ex;
        if (x->closing)
                return 0;
        if (id == x->sid[AG_NAPI_CH_STDIN] && x->sid[AG_NAPI_CH_STDIN] != 0) {
                ag_napi_exec_stdin(x, buf, len);
                if (fin)
                        ag_napi_exec_stdin_close(x);
        } else if (id == x->sid[AG_NAPI_CH_RESIZE] && x->sid[AG_NAPI_CH_RESIZE] != 0) {
                while (len > 0) {
                        size_t take = sizeof(x->resize_buf) - x->resize_len;
                        if (take > len)
                                take = len;
                        memcpy(x->resize_buf + x->resize_len, buf, take);
                        x->resize_len += take;
                        buf += take;
                        len -= take;
                        size_t used;
                        while ((used = ag_napi_json_object_len(x->resize_buf, x->resize_len)) > 0) {
                                ag_napi_exec_resize(x, x->resize_buf, used);
                                memmove(x->resize_buf, x->resize_buf + used, x->resize_len - used);
                                x->resize_len -= used;
                        }
                        if (x->resize_len == sizeof(x->resize_buf))
                                x->resize_len = 0; /* not JSON objects: drop */
                }
        }
        return 0;
}

/* The session's streams are there: run the command, or follow the
 * container's output. */
void ag_napi_exec_begin(struct exec *x)
{
        struct cb_error err = {0};
        struct conn *c = x->c;
        x->started = true;
        if (x->spdy)
                ag_timer_disarm(c->timer);
        log_v(1, "node API: %s %s in %s/%s container %s (%s%s%s%s) for %s",
              x->attach ? "attach" : "exec", x->attach ? "" : x->opts.argv[0], x->t.ns, x->t.pod,
              x->t.container, x->opts.in ? "stdin " : "", x->opts.out ? "stdout " : "",
              x->opts.err ? "stderr " : "", x->opts.tty ? "tty" : "", c->who);
        int r;
        if (x->attach) {
                struct found f = {0};
                if (ag_napi_find_target(x->srv, &x->t, x->t.container, &f) != 0) {
                        ag_napi_found_clear(&f);
                        return ag_napi_exec_finish(x, 0, f.msg);
                }
                r = start_attach(x, &x->t, &f, &err);
                ag_napi_found_clear(&f);
        } else {
                r = spawn_exec(x, x->cid, &err);
        }
        if (r < 0) {
                log_warning("node API: %s in %s/%s container %s: %s", x->attach ? "attach" : "exec",
                            x->t.ns, x->t.pod, x->t.container, err.msg);
                ag_napi_exec_finish(x, 0, err.msg);
        }
}
