/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Interop of the SPDY codec with an independent implementation: node and
 * the npm package spdy-transport run tests/unit/spdy_interop.js as the
 * client; this process is the server, echoing what it reads. The header
 * blocks each way only inflate if both sides use the same dictionary
 * (zlib checks its Adler-32), and 300 KiB against a 64 KiB window only
 * arrive if our WINDOW_UPDATEs are right.
 *
 * Skipped (77) without node or spdy-transport: scripts/deps.sh installs it
 * into ~/.cache/cubelet-npm (where this looks) when npm is there; or set
 * SPDY_TRANSPORT to the module's directory.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/nodeapi/spdy.h"

#include "helpers.h"

static char module_dir[4096];

static bool node_in_path(void)
{
        const char *path = getenv("PATH");
        char dir[4096], exe[4200];
        while (path != NULL && *path != '\0') {
                const char *colon = strchr(path, ':');
                size_t l = colon ? (size_t)(colon - path) : strlen(path);
                snprintf(dir, sizeof(dir), "%.*s", (int)l, path);
                snprintf(exe, sizeof(exe), "%s/node", dir[0] ? dir : ".");
                if (access(exe, X_OK) == 0)
                        return true;
                path = colon ? colon + 1 : NULL;
        }
        return false;
}

struct server {
        struct ag_spdy_session *s;
        char headers[1024];
        size_t echoed;
        bool fin_seen, goaway_seen;
};

static int on_stream(void *d, uint32_t id, const struct ag_spdy_header *h, size_t n, bool fin)
{
        struct server *sv = d;
        struct cb_error err = {0};
        const char *st = "";
        for (size_t i = 0; i < n; i++) {
                size_t l = strlen(sv->headers);
                snprintf(sv->headers + l, sizeof(sv->headers) - l, "%s=%s;", h[i].name, h[i].value);
                if (strcmp(h[i].name, "streamtype") == 0)
                        st = h[i].value;
        }
        const struct ag_spdy_header reply[] = {
            {":status", "200"}, {":version", "HTTP/1.1"}, {"X-Echo", st}};
        ck_assert_msg(ag_spdy_reply(sv->s, id, reply, 3, false, &err) == 0, "%s", err.msg);
        return 0;
}

static int on_data(void *d, uint32_t id, const uint8_t *buf, size_t len, bool fin)
{
        struct server *sv = d;
        struct cb_error err = {0};
        ck_assert_msg(ag_spdy_data(sv->s, id, buf, len, fin, &err) == 0, "%s", err.msg);
        sv->echoed += len;
        if (fin)
                sv->fin_seen = true;
        return 0;
}

static void on_goaway(void *d, uint32_t last, uint32_t status)
{
        struct server *sv = d;
        sv->goaway_seen = true;
}

START_TEST(spdy_transport_client)
{
        static const struct ag_spdy_callbacks cb = {on_stream, NULL, on_data, NULL, on_goaway};
        struct server sv = {0};
        struct cb_error err = {0};
        int in[2], out[2];

        ck_assert_msg(ag_spdy_session_new(true, &cb, &sv, &sv.s, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
        ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                dup2(in[0], 0);
                dup2(out[1], 1);
                setenv("SPDY_TRANSPORT", module_dir, 1);
                execlp("node", "node", CUBELET_FIXTURES "/../unit/spdy_interop.js", (char *)NULL);
                _exit(127);
        }
        close(in[0]);
        close(out[1]);
        int to_node = in[1], from_node = out[0];
        fcntl(to_node, F_SETFL, O_NONBLOCK);

        bool eof = false;
        while (!eof) {
                struct pollfd p[2] = {{from_node, POLLIN, 0},
                                      {to_node, ag_spdy_output_len(sv.s) ? POLLOUT : 0, 0}};
                int r = poll(p, 2, 30000);
                ck_assert_msg(r > 0, "the node client went quiet");
                if ((p[1].revents & (POLLOUT | POLLERR)) && ag_spdy_output_len(sv.s) > 0) {
                        size_t len;
                        const uint8_t *o = ag_spdy_output(sv.s, &len);
                        ssize_t w = write(to_node, o, len);
                        if (w > 0)
                                ag_spdy_consumed(sv.s, (size_t)w);
                        else if (errno == EPIPE) /* it is done: the rest is our WINDOW_UPDATEs */
                                ag_spdy_consumed(sv.s, len);
                        else
                                ck_assert_msg(errno == EAGAIN, "write: %s", strerror(errno));
                }
                if (p[0].revents & (POLLIN | POLLHUP)) {
                        uint8_t buf[16384];
                        ssize_t n = read(from_node, buf, sizeof(buf));
                        if (n <= 0) {
                                eof = true;
                                break;
                        }
                        ck_assert_msg(ag_spdy_session_feed(sv.s, buf, (size_t)n, &err) == 0, "%s",
                                      err.msg);
                }
        }
        close(to_node);
        close(from_node);
        int status;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "the spdy-transport client failed (status 0x%x; its message is above)",
                      status);
        /* what the independent client sent, as we read it */
        ck_assert_msg(strstr(sv.headers, "streamtype=stdin;") != NULL, "%s", sv.headers);
        ck_assert_msg(strstr(sv.headers, "x-several=one;") != NULL, "%s", sv.headers);
        ck_assert_msg(strstr(sv.headers, ":method=POST;") != NULL, "%s", sv.headers);
        ck_assert_uint_eq(sv.echoed, 300u << 10);
        ck_assert(sv.fin_seen);
        ck_assert(sv.goaway_seen);
        ag_spdy_session_free(sv.s);
}
END_TEST

int main(void)
{
        const char *dir = getenv("SPDY_TRANSPORT");
        const char *home = getenv("HOME");
        if (dir != NULL)
                snprintf(module_dir, sizeof(module_dir), "%s", dir);
        else
                snprintf(module_dir, sizeof(module_dir),
                         "%s/.cache/cubelet-npm/node_modules/spdy-transport",
                         home ? home : "/root");
        char probe[4200];
        snprintf(probe, sizeof(probe), "%s/package.json", module_dir);
        if (access(probe, R_OK) != 0 || !node_in_path()) {
                fprintf(stderr, "skipped: needs node and the npm package spdy-transport in %s\n",
                        module_dir);
                return 77;
        }
        signal(SIGPIPE, SIG_IGN);
        Suite *s = suite_create("spdy_interop");
        TCase *tc = tcase_create("spdy-transport");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, spdy_transport_client);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
