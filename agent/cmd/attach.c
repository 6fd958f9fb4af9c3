/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cubelet attach [--root-dir DIR] [-i] [-t] CONTAINER_ID
 *
 * `kubectl attach` on the node, for operators and tests: prints what the
 * running container writes from now on (following its CRI log file, as
 * the node API's attach does: stdout records to stdout, stderr records to
 * stderr; a terminal's output is stdout) and, with -i, copies this
 * process's stdin to the container's stdin through the monitor's attach
 * attach socket of runtime/attach.h. End of our stdin ends the session:
 * with stdinOnce that closes the container's stdin. -t, when the container
 * has a terminal, puts our terminal in raw mode and sends its size at the
 * start and on every SIGWINCH. Ends when the container ends (exit status:
 * the container's exit code) or on SIGINT/SIGTERM/SIGHUP (without -t;
 * with -t ^C goes to the container).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "agent/cmd/cli.h"
#include "agent/core/inotify.h"
#include "lib/cleanup.h"
#include "runtime/attach.h"
#include "runtime/container.h"

enum { E_STDIN, E_SOCK, E_LOG, E_EXIT, E_SIG };

struct attach {
        const char *cid;
        int ep, sock, log_fd, ino, exit_fd, sig_fd;
        bool in_open; /* still copying our stdin */
        off_t log_off;
        char *rec; /* an incomplete record */
        size_t rec_len;
        uint8_t in_buf[RT_ATTACH_MAX];
        size_t in_len; /* input the socket did not take yet */
        bool raw;
        struct termios saved;
};

static void restore_terminal(struct attach *a)
{
        if (a->raw)
                (void)tcsetattr(STDIN_FILENO, TCSADRAIN, &a->saved);
        a->raw = false;
}

static int write_all(int fd, const char *p, size_t n)
{
        while (n > 0) {
                ssize_t w = write(fd, p, n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return -1;
                p += w;
                n -= (size_t)w;
        }
        return 0;
}

/* Prints the records appended to the log since the last call. */
static int pump_log(struct attach *a)
{
        char buf[65536];
        for (;;) {
                ssize_t n = pread(a->log_fd, buf, sizeof(buf), a->log_off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return 0;
                a->log_off += n;
                char *nb = realloc(a->rec, a->rec_len + (size_t)n);
                if (nb == NULL)
                        return -1;
                a->rec = nb;
                memcpy(a->rec + a->rec_len, buf, (size_t)n);
                a->rec_len += (size_t)n;
                size_t start = 0;
                char *nl;
                while ((nl = memchr(a->rec + start, '\n', a->rec_len - start)) != NULL) {
                        size_t rl = (size_t)(nl - (a->rec + start));
                        struct rt_crilog_entry e;
                        if (rt_crilog_parse(a->rec + start, rl, &e, NULL) == 0) {
                                int fd =
                                    e.stream == RT_STREAM_STDERR ? STDERR_FILENO : STDOUT_FILENO;
                                /* the content is followed by the record's '\n' */
                                if (write_all(fd, e.content, e.len + (e.partial ? 0 : 1)) < 0)
                                        return -1;
                        }
                        start += rl + 1;
                }
                memmove(a->rec, a->rec + start, a->rec_len - start);
                a->rec_len -= start;
                if (a->rec_len > 2 * RT_CRILOG_MAX_LINE)
                        a->rec_len = 0; /* not a record of a CRI writer */
        }
}

static void send_size(struct attach *a)
{
        struct winsize ws;
        struct cb_error e;
        if (a->sock >= 0 && ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 &&
            ws.ws_row > 0)
                (void)rt_attach_resize(a->sock, ws.ws_col, ws.ws_row, &e);
}

static void close_sock(struct attach *a)
{
        if (a->sock < 0)
                return;
        (void)epoll_ctl(a->ep, EPOLL_CTL_DEL, a->sock, NULL);
        close(a->sock);
        a->sock = -1;
}

static void stop_input(struct attach *a)
{
        if (a->in_open)
                (void)epoll_ctl(a->ep, EPOLL_CTL_DEL, STDIN_FILENO, NULL);
        a->in_open = false;
}

/* Sends what is buffered; on EAGAIN waits for the socket instead of stdin. */
static void send_input(struct attach *a)
{
        struct cb_error e = {0};
        int r = a->in_len > 0 ? rt_attach_stdin(a->sock, a->in_buf, a->in_len, &e) : 0;
        if (r == -EAGAIN) {
                struct epoll_event ev = {.events = EPOLLOUT, .data.u32 = E_SOCK};
                (void)epoll_ctl(a->ep, EPOLL_CTL_DEL, STDIN_FILENO, NULL);
                (void)epoll_ctl(a->ep, EPOLL_CTL_MOD, a->sock, &ev);
                return;
        }
        a->in_len = 0;
        if (r < 0) { /* stdin closed meanwhile: keep showing the output */
                fprintf(stderr, "cubelet attach: %s\n", e.msg);
                stop_input(a);
                close_sock(a);
                return;
        }
        struct epoll_event ev = {.events = EPOLLRDHUP, .data.u32 = E_SOCK};
        (void)epoll_ctl(a->ep, EPOLL_CTL_MOD, a->sock, &ev);
        ev = (struct epoll_event){.events = EPOLLIN, .data.u32 = E_STDIN};
        if (a->in_open)
                (void)epoll_ctl(a->ep, EPOLL_CTL_ADD, STDIN_FILENO, &ev);
}

static void on_stdin(struct attach *a)
{
        ssize_t n = read(STDIN_FILENO, a->in_buf, sizeof(a->in_buf));
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                return;
        if (n <= 0) {
                /* the end of our input ends the attach session */
                stop_input(a);
                close_sock(a);
                return;
        }
        a->in_len = (size_t)n;
        send_input(a);
}

static int usage(void)
{
        fprintf(stderr, "usage: cubelet attach [--root-dir DIR] [-i] [-t] CONTAINER_ID\n");
        return 2;
}

static int run(struct attach *a, bool in, bool tty, const char *root)
{
        struct cb_error err = {0};
        struct rt_container_state st;
        if (rt_container_state(root, a->cid, &st, &err) < 0) {
                fprintf(stderr, "cubelet attach: %s\n", err.msg);
                return 1;
        }
        if (st.status != RT_CONTAINER_RUNNING) {
                fprintf(stderr, "cubelet attach: container %s is not running\n", a->cid);
                return 1;
        }
        if (tty && !st.tty) {
                fprintf(stderr, "Unable to use a TTY - container %s did not allocate one\n",
                        a->cid);
                tty = false;
        }
        if (in && !st.stdin_open) {
                fprintf(stderr, "cubelet attach: container %s was created without stdin\n", a->cid);
                return 1;
        }
        /* the output from now on: the file position before any input */
        if (st.log_path[0] != '\0') {
                a->ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
                a->log_fd = open(st.log_path, O_RDONLY | O_CLOEXEC);
                struct stat sb;
                if (a->ino < 0 || a->log_fd < 0 || fstat(a->log_fd, &sb) < 0 ||
                    inotify_add_watch(a->ino, st.log_path, IN_MODIFY) < 0) {
                        fprintf(stderr, "cubelet attach: cannot follow %s: %s\n", st.log_path,
                                strerror(errno));
                        return 1;
                }
                a->log_off = sb.st_size;
        }
        if (rt_container_exit_fd(root, a->cid, &a->exit_fd, &err) < 0) {
                fprintf(stderr, "cubelet attach: %s\n", err.msg);
                return 1;
        }
        if ((in || tty) && rt_attach_open(root, a->cid, &a->sock, &err) < 0) {
                fprintf(stderr, "cubelet attach: %s\n", err.msg);
                return 1;
        }
        /* an empty input message: this is a stdin session (stdinOnce) even
         * if our stdin ends before it gives anything */
        if (in && rt_attach_stdin(a->sock, "", 0, &err) < 0) {
                fprintf(stderr, "cubelet attach: %s\n", err.msg);
                return 1;
        }
        a->ep = epoll_create1(EPOLL_CLOEXEC);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGWINCH);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGHUP);
        if (!tty)
                sigaddset(&set, SIGINT);
        sigprocmask(SIG_BLOCK, &set, NULL);
        a->sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
        if (a->ep < 0 || a->sig_fd < 0) {
                fprintf(stderr, "cubelet attach: %s\n", strerror(errno));
                return 1;
        }
        const struct {
                int fd;
                uint32_t events, tag;
        } regs[] = {{a->ino, EPOLLIN, E_LOG},
                    {a->exit_fd, EPOLLIN, E_EXIT},
                    {a->sig_fd, EPOLLIN, E_SIG},
                    {a->sock, EPOLLRDHUP, E_SOCK},
                    {in ? STDIN_FILENO : -1, EPOLLIN, E_STDIN}};
        for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++) {
                struct epoll_event ev = {.events = regs[i].events, .data.u32 = regs[i].tag};
                if (regs[i].fd >= 0 && epoll_ctl(a->ep, EPOLL_CTL_ADD, regs[i].fd, &ev) < 0) {
                        /* a regular file as stdin cannot be polled: it is
                         * read as it comes (always ready) */
                        if (regs[i].tag == E_STDIN && errno == EPERM) {
                                fprintf(stderr, "cubelet attach: stdin must be a pipe, a "
                                                "terminal or a socket\n");
                                return 2;
                        }
                        fprintf(stderr, "cubelet attach: epoll: %s\n", strerror(errno));
                        return 1;
                }
        }
        a->in_open = in;
        if (tty && isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &a->saved) == 0) {
                struct termios raw = a->saved;
                cfmakeraw(&raw);
                if (tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) == 0)
                        a->raw = true;
        }
        if (tty)
                send_size(a);
        for (;;) {
                struct epoll_event evs[8];
                int n = epoll_wait(a->ep, evs, 8, -1);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return 1;
                for (int i = 0; i < n; i++) {
                        switch (evs[i].data.u32) {
                        case E_STDIN:
                                if (a->in_open && a->in_len == 0)
                                        on_stdin(a);
                                break;
                        case E_SOCK:
                                if (a->sock < 0)
                                        break;
                                if (evs[i].events & EPOLLOUT)
                                        send_input(a);
                                else if (evs[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
                                        /* the monitor closed the container's stdin */
                                        stop_input(a);
                                        close_sock(a);
                                }
                                break;
                        case E_LOG: {
                                ag_inotify_drain(a->ino, NULL, NULL);
                                if (pump_log(a) < 0)
                                        return 1;
                                break;
                        }
                        case E_EXIT: {
                                /* the monitor has written the exit record and
                                 * closed the log: print the rest */
                                if (a->log_fd >= 0 && pump_log(a) < 0)
                                        return 1;
                                struct rt_container_state fin;
                                if (rt_container_state(root, a->cid, &fin, &err) < 0)
                                        return 1;
                                return fin.status == RT_CONTAINER_EXITED ? fin.exit_code & 0xff : 1;
                        }
                        case E_SIG: {
                                struct signalfd_siginfo si;
                                while (read(a->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                                        if (si.ssi_signo == SIGWINCH) {
                                                if (tty)
                                                        send_size(a);
                                        } else {
                                                return 128 + (int)si.ssi_signo;
                                        }
                                }
                                break;
                        }
                        }
                }
        }
}

int cmd_attach(int argc, char **argv, const struct cb_global_opts *opts)
{
        bool in = false, tty = false;
        const char *cid = NULL;
        for (int i = 1; i < argc; i++) {
                const char *s = argv[i];
                if (strcmp(s, "-i") == 0 || strcmp(s, "--stdin") == 0)
                        in = true;
                else if (strcmp(s, "-t") == 0 || strcmp(s, "--tty") == 0)
                        tty = true;
                else if (strcmp(s, "-it") == 0 || strcmp(s, "-ti") == 0)
                        in = tty = true;
                else if (s[0] != '-' && cid == NULL)
                        cid = s;
                else
                        return usage();
        }
        if (cid == NULL)
                return usage();
        signal(SIGPIPE, SIG_IGN);
        struct attach a = {
            .cid = cid, .ep = -1, .sock = -1, .log_fd = -1, .ino = -1, .exit_fd = -1, .sig_fd = -1};
        int r = run(&a, in, tty, opts->root_dir);
        restore_terminal(&a);
        int fds[] = {a.ep, a.sock, a.log_fd, a.ino, a.exit_fd, a.sig_fd};
        for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        free(a.rec);
        return r;
}
