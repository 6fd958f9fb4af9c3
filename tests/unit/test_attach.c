/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The attach socket (runtime/attach.h): the message encoding (pure, always
 * run) and, as root, real containers with stdin, stdinOnce and a terminal
 * served by the real monitor (CUBELET_BINARY) on a busybox rootfs in
 * /tmp/cubelet-at-<pid>, cgroups under cubelet-attach-<pid>. Every
 * container is removed and main() sweeps what a failed test left.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroups/cgroup.h"
#include "lib/file.h"
#include "runtime/attach.h"
#include "runtime/container.h"
#include "runtime/image.h"

#include "helpers.h"

/* ---- the wire format ---------------------------------------------------- */

START_TEST(test_encode_decode)
{
        uint8_t buf[1 + RT_ATTACH_MAX];
        struct rt_attach_msg m;
        struct cb_error err = {0};
        int n = rt_attach_encode_stdin(buf, sizeof(buf), "hello\n", 6, &err);
        ck_assert_int_eq(n, 7);
        ck_assert_int_eq(buf[0], 'i');
        ck_assert_int_eq(rt_attach_decode(buf, (size_t)n, &m, &err), 0);
        ck_assert_int_eq(m.type, RT_ATTACH_MSG_STDIN);
        ck_assert_uint_eq(m.len, 6);
        ck_assert(memcmp(m.data, "hello\n", 6) == 0);

        n = rt_attach_encode_close(buf, sizeof(buf), &err);
        ck_assert_int_eq(n, 1);
        ck_assert_int_eq(rt_attach_decode(buf, 1, &m, &err), 0);
        ck_assert_int_eq(m.type, RT_ATTACH_MSG_CLOSE);

        n = rt_attach_encode_resize(buf, sizeof(buf), 300, 2, &err);
        ck_assert_int_eq(n, 5);
        /* width then height, big-endian */
        const uint8_t want[] = {'r', 0x01, 0x2c, 0x00, 0x02};
        ck_assert(memcmp(buf, want, 5) == 0);
        ck_assert_int_eq(rt_attach_decode(buf, 5, &m, &err), 0);
        ck_assert_int_eq(m.type, RT_ATTACH_MSG_RESIZE);
        ck_assert_uint_eq(m.width, 300);
        ck_assert_uint_eq(m.height, 2);

        /* the largest input fits, one more byte does not */
        static uint8_t big[RT_ATTACH_MAX + 1];
        ck_assert_int_eq(rt_attach_encode_stdin(buf, sizeof(buf), big, RT_ATTACH_MAX, &err),
                         RT_ATTACH_MAX + 1);
        ck_assert_int_eq(rt_attach_encode_stdin(buf, sizeof(buf), big, RT_ATTACH_MAX + 1, &err),
                         -1);
        ck_assert_int_eq(err.code, EINVAL);
        ck_assert_int_eq(rt_attach_encode_stdin(buf, 3, "hello", 5, &err), -1);
        ck_assert_int_eq(rt_attach_encode_resize(buf, sizeof(buf), 0, 10, &err), -1);
        ck_assert_str_eq(err.msg, "attach: terminal size 0x10: both must be > 0");
}
END_TEST

START_TEST(test_decode_rejects)
{
        static uint8_t buf[RT_ATTACH_MAX + 2];
        struct rt_attach_msg m;
        struct cb_error err = {0};
        ck_assert_int_eq(rt_attach_decode(buf, 0, &m, &err), -1);
        ck_assert_int_eq(err.code, EPROTO);
        ck_assert_str_eq(err.msg, "attach: empty message");
        buf[0] = 'x';
        ck_assert_int_eq(rt_attach_decode(buf, 3, &m, &err), -1);
        ck_assert_str_eq(err.msg, "attach: unknown message type 0x78");
        buf[0] = 'i';
        ck_assert_int_eq(rt_attach_decode(buf, RT_ATTACH_MAX + 2, &m, &err), -1);
        ck_assert(strstr(err.msg, "input message of 32769 bytes") != NULL);
        ck_assert_int_eq(rt_attach_decode(buf, 1, &m, &err), 0); /* empty input: fine */
        ck_assert_uint_eq(m.len, 0);
        buf[0] = 'c';
        ck_assert_int_eq(rt_attach_decode(buf, 2, &m, &err), -1);
        ck_assert_str_eq(err.msg, "attach: close message of 2 bytes (want 1)");
        buf[0] = 'r';
        ck_assert_int_eq(rt_attach_decode(buf, 4, &m, &err), -1);
        ck_assert_str_eq(err.msg, "attach: resize message of 4 bytes (want 5)");
        memcpy(buf, "r\0\x50\0\0", 5);
        ck_assert_int_eq(rt_attach_decode(buf, 5, &m, &err), -1);
        ck_assert_str_eq(err.msg, "attach: terminal size 80x0");
}
END_TEST

/* ---- live containers -------------------------------------------------------- */

static char *const root = th_root;
static const char *const path_env[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};

static void base(struct rt_container_config *c, const char *id, const char *const *argv)
{
        th_base_config(c, id, argv);
        c->hostname = "attach";
        c->env = path_env;
}

static void start(struct rt_container_config *c)
{
        struct cb_error err = {0};
        struct rt_container_state st;
        ck_assert_msg(rt_container_create_start(c, &st, &err) == 0, "start %s: %s", c->id, err.msg);
}

/* Not exited within ms. */
static bool still_running(const char *id, int ms)
{
        struct cb_error err = {0};
        int fd;
        ck_assert(rt_container_exit_fd(root, id, &fd, &err) == 0);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int n = poll(&p, 1, ms);
        close(fd);
        return n == 0;
}

static char logbuf[65536];
static int collect(enum rt_stream s, int64_t ts, const char *line, size_t len, void *ud)
{
        (void)ts;
        (void)ud;
        size_t n = strlen(logbuf);
        snprintf(logbuf + n, sizeof(logbuf) - n, "%s:%.*s\n", s == RT_STREAM_STDOUT ? "out" : "err",
                 (int)len, line);
        return 0;
}

static const char *read_log(const char *id)
{
        char path[512];
        snprintf(path, sizeof(path), "%s/logs/%s.log", root, id);
        logbuf[0] = '\0';
        struct cb_error err = {0};
        ck_assert_msg(rt_crilog_read(path, collect, NULL, &err) == 0, "log: %s", err.msg);
        return logbuf;
}

static bool sock_exists(const char *id)
{
        char path[512];
        struct cb_error err = {0};
        ck_assert(rt_attach_path(root, id, path, sizeof(path), &err) == 0);
        return access(path, F_OK) == 0;
}

static void remove_checked(const char *id)
{
        struct cb_error err = {0};
        ck_assert_msg(rt_container_remove(root, id, &err) == 0, "remove: %s", err.msg);
        char dir[512];
        snprintf(dir, sizeof(dir), "%s/containers/%s", root, id);
        ck_assert_msg(access(dir, F_OK) < 0, "%s left behind", dir);
}

static int attach(const char *id)
{
        struct cb_error err = {0};
        int fd = -1;
        ck_assert_msg(rt_attach_open(root, id, &fd, &err) == 0, "attach %s: %s", id, err.msg);
        return fd;
}

static void send_in(int fd, const char *s)
{
        struct cb_error err = {0};
        ck_assert_msg(rt_attach_stdin(fd, s, strlen(s), &err) == 0, "stdin: %s", err.msg);
}

/* The peer (the monitor) hung up: EOF within ms. */
static bool hung_up(int fd, int ms)
{
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, ms) != 1)
                return false;
        char b[8];
        /* ECONNRESET: the monitor closed with our input still unread */
        ssize_t n = recv(fd, b, sizeof(b), MSG_DONTWAIT);
        return n == 0 || (n < 0 && errno == ECONNRESET);
}

/* Waits until the container's log contains needle (inotify, no sleeps). */
static bool wait_log(const char *id, const char *needle, int ms)
{
        char path[512];
        snprintf(path, sizeof(path), "%s/logs/%s.log", root, id);
        int ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        ck_assert(ino >= 0 && inotify_add_watch(ino, path, IN_MODIFY) >= 0);
        bool found = false;
        for (int round = 0; round < 1000 && !found; round++) {
                found = strstr(read_log(id), needle) != NULL;
                struct pollfd p = {.fd = ino, .events = POLLIN};
                if (!found && poll(&p, 1, ms) != 1)
                        break;
                char ev[4096];
                while (read(ino, ev, sizeof(ev)) > 0)
                        ;
        }
        close(ino);
        return found;
}

static void stop_checked(const char *id)
{
        struct cb_error err = {0};
        ck_assert_msg(rt_container_stop(root, id, SIGKILL, 0, &err) == 0, "stop: %s", err.msg);
}

START_TEST(test_stdin_pipe)
{
        const char *argv[] = {"sh", "-c", "read line; echo got:$line; [ -t 0 ] || echo not-a-tty",
                              NULL};
        struct rt_container_config c;
        base(&c, "pipe", argv);
        c.stdin_open = true;
        start(&c);
        struct rt_container_state st;
        struct cb_error err = {0};
        ck_assert(rt_container_state(root, "pipe", &st, &err) == 0);
        ck_assert(st.stdin_open && !st.stdin_once && !st.tty);
        ck_assert(sock_exists("pipe"));
        ck_assert(still_running("pipe", 200)); /* it waits for input */
        int fd = attach("pipe");
        send_in(fd, "hello\n");
        th_wait_exit("pipe", &st, 30000);
        ck_assert_int_eq(st.exit_code, 0);
        ck_assert(hung_up(fd, 5000));
        close(fd);
        const char *log = read_log("pipe");
        ck_assert_msg(strstr(log, "out:got:hello\n") != NULL, "log: %s", log);
        ck_assert_msg(strstr(log, "out:not-a-tty\n") != NULL, "log: %s", log);
        /* the socket went with the monitor */
        ck_assert(!sock_exists("pipe"));
        ck_assert_int_eq(rt_attach_open(root, "pipe", &fd, &err), -1);
        ck_assert_int_eq(err.code, ESRCH);
        remove_checked("pipe");
}
END_TEST

/* Without stdinOnce a session ending keeps stdin open; CLOSE ends it. The
 * container is made by a process that is gone before anyone attaches (an
 * agent that died): the socket belongs to the monitor. */
START_TEST(test_stdin_stays_open)
{
        pid_t agent = fork();
        ck_assert_int_ge(agent, 0);
        if (agent == 0) {
                const char *argv[] = {"cat", NULL};
                struct rt_container_config c;
                struct rt_container_state st;
                struct cb_error e;
                base(&c, "open", argv);
                c.stdin_open = true;
                _exit(rt_container_create_start(&c, &st, &e) == 0 ? 0 : 1);
        }
        int ws;
        ck_assert(waitpid(agent, &ws, 0) == agent && WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
        int a = attach("open");
        send_in(a, "one\n");
        close(a);
        ck_assert(still_running("open", 300));
        int b = attach("open");
        int b2 = attach("open"); /* two sessions at once, input interleaved */
        send_in(b, "two\n");
        send_in(b2, "three\n");
        /* sessions are read in turn: wait for b2's input before b closes */
        ck_assert_msg(wait_log("open", "out:three\n", 10000), "log: %s", read_log("open"));
        struct cb_error err = {0};
        ck_assert_int_eq(rt_attach_close_stdin(b, &err), 0);
        struct rt_container_state st;
        th_wait_exit("open", &st, 30000);
        ck_assert_int_eq(st.exit_code, 0); /* cat saw EOF */
        ck_assert(hung_up(b2, 5000));
        close(b);
        close(b2);
        const char *log = read_log("open");
        ck_assert_msg(strncmp(log, "out:one\n", 8) == 0 && strstr(log, "out:two\n") &&
                          strstr(log, "out:three\n"),
                      "log: %s", log);
        remove_checked("open");
}
END_TEST

START_TEST(test_stdin_once)
{
        const char *argv[] = {"cat", NULL};
        struct rt_container_config c;
        base(&c, "once", argv);
        c.stdin_open = true;
        c.stdin_once = true;
        start(&c);
        /* a connection that sends no input is not a stdin session */
        int idle = attach("once");
        close(idle);
        ck_assert(still_running("once", 300));
        int first = attach("once");
        struct cb_error err = {0};
        ck_assert_int_eq(rt_attach_stdin(first, "", 0, &err), 0); /* claims the session */
        send_in(first, "from-first\n");
        /* sessions are read in turn: first's claim is in before second speaks */
        ck_assert_msg(wait_log("once", "out:from-first\n", 10000), "log: %s", read_log("once"));
        int second = attach("once");
        send_in(second, "from-second\n");
        ck_assert_msg(wait_log("once", "out:from-second\n", 10000), "log: %s", read_log("once"));
        close(second); /* not the first session: stdin stays open */
        ck_assert(still_running("once", 300));
        second = attach("once");
        close(first); /* the first session ends: stdin closes for good */
        struct rt_container_state st;
        th_wait_exit("once", &st, 30000);
        ck_assert_int_eq(st.exit_code, 0);
        ck_assert(hung_up(second, 5000));
        close(second);
        const char *log = read_log("once");
        ck_assert_msg(strstr(log, "out:from-second\n") && strstr(log, "out:from-first\n"),
                      "log: %s", log);
        remove_checked("once");
}
END_TEST

/* After stdinOnce closed stdin, nobody can attach any more. */
START_TEST(test_stdin_once_refuses_later)
{
        const char *argv[] = {"sh", "-c", "cat; echo eof; exec sleep 1000", NULL};
        struct rt_container_config c;
        base(&c, "later", argv);
        c.stdin_open = true;
        c.stdin_once = true;
        start(&c);
        int a = attach("later");
        send_in(a, "x\n");
        close(a);
        ck_assert_msg(wait_log("later", "out:eof\n", 10000), "log: %s", read_log("later"));
        struct cb_error err = {0};
        int fd = -1;
        ck_assert_int_eq(rt_attach_open(root, "later", &fd, &err), -1);
        ck_assert_int_eq(err.code, EPIPE);
        ck_assert_str_eq(err.msg, "container later: its stdin is closed");
        ck_assert(!sock_exists("later"));
        stop_checked("later");
        remove_checked("later");
}
END_TEST

START_TEST(test_without_stdin)
{
        const char *argv[] = {"sleep", "1000", NULL};
        struct rt_container_config c;
        base(&c, "nostdin", argv);
        start(&c);
        ck_assert(!sock_exists("nostdin"));
        struct cb_error err = {0};
        int fd = -1;
        ck_assert_int_eq(rt_attach_open(root, "nostdin", &fd, &err), -1);
        ck_assert_int_eq(err.code, ENXIO);
        ck_assert_str_eq(err.msg, "container nostdin was created without stdin");
        ck_assert_int_eq(rt_attach_open(root, "nosuch", &fd, &err), -1);
        ck_assert_int_eq(err.code, ENOENT);
        stop_checked("nostdin");
        remove_checked("nostdin");
}
END_TEST

static int count_dir(const char *path)
{
        DIR *d = opendir(path);
        if (d == NULL)
                return -1;
        int n = 0;
        struct dirent *de;
        while ((de = readdir(d)) != NULL)
                n++;
        closedir(d);
        return n;
}

START_TEST(test_tty)
{
        /* the input echoes (the terminal is in cooked mode), so the checks
         * look for what only the commands print */
        const char *argv[] = {"sh", "-c",
                              "tty; [ -t 0 ] && [ -t 1 ] && [ -t 2 ] && echo all-ttys; "
                              "echo TERM=${TERM:-unset}; ls /dev/pts | tr '\\n' ' '; echo; "
                              "read l; stty size | sed 's/^/size=/'; echo err-line >&2; "
                              "cat; echo cat-ended",
                              NULL};
        int host_pts = count_dir("/dev/pts");
        struct rt_container_config c;
        base(&c, "tty", argv);
        c.stdin_open = true;
        c.tty = true;
        start(&c);
        struct rt_container_state st;
        struct cb_error err = {0};
        ck_assert(rt_container_state(root, "tty", &st, &err) == 0);
        ck_assert(st.tty && st.stdin_open);
        ck_assert_msg(wait_log("tty", "out:all-ttys", 10000), "log: %s", read_log("tty"));
        /* the terminal lives in the container's own devpts */
        ck_assert_int_eq(count_dir("/dev/pts"), host_pts);
        int fd = attach("tty");
        ck_assert_int_eq(rt_attach_resize(fd, 123, 45, &err), 0);
        send_in(fd, "go\n");
        ck_assert_msg(wait_log("tty", "size=45 123", 10000), "log: %s", read_log("tty"));
        send_in(fd, "typed\n");
        ck_assert_msg(wait_log("tty", "out:typed", 10000), "log: %s", read_log("tty"));
        /* CLOSE on a terminal: VEOF, so cat ends */
        ck_assert_int_eq(rt_attach_close_stdin(fd, &err), 0);
        th_wait_exit("tty", &st, 30000);
        ck_assert_int_eq(st.exit_code, 0);
        close(fd);
        const char *log = read_log("tty");
        ck_assert_msg(strstr(log, "out:/dev/pts/0\r\n") != NULL, "log: %s", log);
        ck_assert_msg(strstr(log, "out:TERM=unset\r\n") != NULL, "log: %s", log);
        /* only its own entries (the echo of "go", typed while this line
         * was written, may land on the same terminal line) */
        ck_assert_msg(strstr(log, "out:0 ptmx ") != NULL, "log: %s", log);
        /* one stream: a terminal's output is stdout */
        ck_assert_msg(strstr(log, "out:err-line\r\n") != NULL, "log: %s", log);
        ck_assert_msg(strstr(log, "err:") == NULL, "log: %s", log);
        ck_assert_msg(strstr(log, "out:cat-ended\r\n") != NULL, "log: %s", log);
        ck_assert(!sock_exists("tty"));
        remove_checked("tty");
}
END_TEST

/* A container that never reads: the monitor stops reading its clients,
 * the client's socket fills and sends answer EAGAIN instead of blocking;
 * the monitor still ends with the container. */
START_TEST(test_backpressure)
{
        const char *argv[] = {"sleep", "1000", NULL};
        struct rt_container_config c;
        base(&c, "slow", argv);
        c.stdin_open = true;
        start(&c);
        int fd = attach("slow");
        static char chunk[RT_ATTACH_MAX];
        memset(chunk, 'x', sizeof(chunk));
        struct cb_error err = {0};
        int r = 0, sent = 0;
        for (; sent < 1000 && (r = rt_attach_stdin(fd, chunk, sizeof(chunk), &err)) == 0; sent++)
                ;
        ck_assert_msg(r == -EAGAIN, "send %d: %d %s", sent, r, err.msg);
        ck_assert_int_gt(sent, 1); /* the 64 KiB pipe took some */
        /* a resize is input too: queued behind, not lost, no crash */
        stop_checked("slow");
        struct rt_container_state st;
        th_wait_exit("slow", &st, 30000);
        ck_assert(hung_up(fd, 5000) || true);
        close(fd);
        remove_checked("slow");
}
END_TEST

int main(void)
{
        Suite *s = suite_create("attach");
        TCase *tc = tcase_create("wire");
        tcase_add_test(tc, test_encode_decode);
        tcase_add_test(tc, test_decode_rejects);
        suite_add_tcase(s, tc);
        bool live = th_need_root_cgroups("test_attach: live tests") == 0;
        if (live) {
                if (th_live_setup("test_attach", "at") < 0)
                        return 1;
                TCase *lt = tcase_create("live");
                tcase_set_timeout(lt, 120);
                tcase_add_test(lt, test_stdin_pipe);
                tcase_add_test(lt, test_stdin_stays_open);
                tcase_add_test(lt, test_stdin_once);
                tcase_add_test(lt, test_stdin_once_refuses_later);
                tcase_add_test(lt, test_without_stdin);
                tcase_add_test(lt, test_tty);
                tcase_add_test(lt, test_backpressure);
                suite_add_tcase(s, lt);
        }
        int failed = th_run(s);
        if (live)
                th_sweep();
        return failed == 0 ? 0 : 1;
}
