/* SPDX-License-Identifier: Apache-2.0 */
/* The event recorder (agent/client/events.c) against a small HTTP server:
 * more distinct events than its cache holds (4096) while the writes of all
 * the others are in flight: the new record was the only idle one, evicted
 * and then written (a use-after-free that crashed the agent in the soak). */
#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/client/apiclient.h"
#include "agent/client/events.h"
#include "agent/client/kubeconfig.h"
#include "agent/core/loop.h"

#include "helpers.h"

static const char server_py[] =
    "import http.server, socketserver, sys\n"
    "class H(http.server.BaseHTTPRequestHandler):\n"
    "    protocol_version = 'HTTP/1.1'\n"
    "    def log_message(self, *a): pass\n"
    "    def answer(self):\n"
    "        n = int(self.headers.get('Content-Length') or 0)\n"
    "        self.rfile.read(n)\n"
    "        b = b'{}'\n"
    "        self.send_response(201 if self.command == 'POST' else 200)\n"
    "        self.send_header('Content-Type', 'application/json')\n"
    "        self.send_header('Content-Length', str(len(b)))\n"
    "        self.end_headers()\n"
    "        self.wfile.write(b)\n"
    "    do_POST = do_PATCH = answer\n"
    "class S(socketserver.ThreadingMixIn, socketserver.TCPServer):\n"
    "    daemon_threads = True\n"
    "s = S(('127.0.0.1', 0), H)\n"
    "print(s.server_address[1], flush=True)\n"
    "s.serve_forever()\n";

static int count_fds(void)
{
        int n = 0;
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;
        while (d != NULL && (de = readdir(d)) != NULL)
                n += de->d_name[0] != '.';
        if (d != NULL)
                closedir(d);
        return n;
}

struct run {
        struct ag_loop *loop;
        struct ag_events *ev;
        int i, n;
        struct ag_timer *tick;
};

/* records a batch of distinct events per tick (the loop runs the writes in
 * between), then quits after a last tick */
static void on_tick(struct ag_timer *t, void *data)
{
        struct run *r = data;
        char name[64], msg[64];
        for (int k = 0; k < 50 && r->i < r->n; k++, r->i++) {
                snprintf(name, sizeof(name), "pod-%d", r->i);
                snprintf(msg, sizeof(msg), "message %d", r->i);
                struct ag_event_object o = {.kind = "Pod",
                                            .namespace_ = "default",
                                            .name = name,
                                            .uid = "uid",
                                            .field_path = NULL};
                ag_events_record(r->ev, &o, "Normal", "Created", msg);
        }
        if (r->i < r->n + 50) {
                if (r->i >= r->n)
                        r->i++;
                ag_timer_arm(t, 5);
        } else {
                ag_loop_quit(r->loop);
        }
}

START_TEST(test_more_events_than_the_cache)
{
        int pfd[2];
        ck_assert_int_eq(pipe(pfd), 0);
        pid_t srv = fork();
        ck_assert_int_ge(srv, 0);
        if (srv == 0) {
                dup2(pfd[1], 1);
                execlp("python3", "python3", "-c", server_py, (char *)NULL);
                _exit(127);
        }
        close(pfd[1]);
        char port[16] = {0};
        ssize_t got = read(pfd[0], port, sizeof(port) - 1);
        close(pfd[0]);
        ck_assert_int_gt(got, 0);
        port[strcspn(port, "\n")] = '\0';

        struct cb_error err = {0};
        char server[64];
        snprintf(server, sizeof(server), "http://127.0.0.1:%s", port);
        struct ag_kubeconfig kc = {.path = "test", .server = server};
        struct run r = {.n = 5000};
        ck_assert_msg(ag_loop_new(&r.loop, &err) == 0, "%s", err.msg);
        struct ag_api *api = NULL;
        struct ag_api_config cfg = {.qps = 100000, .burst = 100000};
        ck_assert_msg(ag_api_new(r.loop, &kc, &cfg, &api, &err) == 0, "%s", err.msg);
        ck_assert(ag_events_new(r.loop, api, "node-1", &r.ev, &err) == 0);
        int fds0 = count_fds();
        r.tick = ag_timer_new(r.loop, on_tick, &r, &err);
        ck_assert_ptr_nonnull(r.tick);
        ag_timer_arm(r.tick, 1);
        ck_assert_msg(ag_loop_run(r.loop, &err) == 0, "%s", err.msg);
        /* every write was started (no rate limit here: in flight at once) */
        ck_assert_int_eq(r.i, r.n + 50);
        ck_assert_int_ge(count_fds(), fds0);
        ag_timer_free(r.tick);
        ag_events_free(r.ev);
        ag_api_free(api);
        ag_loop_free(r.loop);
        kill(srv, SIGKILL);
        waitpid(srv, NULL, 0);
}
END_TEST

int main(void)
{
        if (system("python3 -c '' 2>/dev/null") != 0)
                return 77;
        Suite *s = suite_create("events");
        TCase *tc = tcase_create("cache");
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_more_events_than_the_cache);
        suite_add_tcase(s, tc);
        return th_run(s) == 0 ? 0 : 1;
}
