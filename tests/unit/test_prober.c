/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The prober on a real agent loop against servers this test runs on the
 * same loop over loopback: an HTTP server (200, 500, a hanging request,
 * 302; it records the last request), a TCP listener, a closed port. Exec
 * probes against a real container (busybox-static rootfs, the cubelet
 * binary as monitor and __exec helper) when running as root.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/core/loop.h"
#include "agent/core/curl.h"
#include "agent/pods/prober.h"
#include "cgroups/cgroup.h"
#include "lib/cleanup.h"
#include "runtime/container.h"
#include "runtime/image.h"

#include "helpers.h"

/* ---- recording updates ---------------------------------------------------- */

struct rec {
        int n;
        struct {
                enum ag_probe_result result;
                bool changed;
                char msg[1024];
                uint64_t at_ms;
        } u[32];
        int quit_at; /* quit the loop after this many updates */
        bool free_in_cb;
};

static struct ag_loop *loop;
static struct ag_curl *http; /* the node's shared transport, as the agent has it */
static struct rec rec;
static uint64_t t0;

static void on_update(struct ag_prober *p, const struct ag_probe_update *u, void *data)
{
        struct rec *r = data;
        if (r->n < 32) {
                r->u[r->n].result = u->result;
                r->u[r->n].changed = u->changed;
                snprintf(r->u[r->n].msg, sizeof(r->u[0].msg), "%s",
                         u->message != NULL ? u->message : "");
                r->u[r->n].at_ms = ag_now_ms() - t0;
        }
        r->n++;
        if (r->free_in_cb)
                ag_prober_free(p);
        if (r->n == r->quit_at)
                ag_loop_quit(loop);
}

static void on_guard(struct ag_timer *t, void *data)
{
        ag_loop_quit(loop);
}

/* Runs the loop until quit_at updates arrived or ms passed. */
static void run_for(int quit_at, uint64_t ms)
{
        struct cb_error err = {0};
        rec.quit_at = quit_at;
        struct ag_timer *g = ag_timer_new(loop, on_guard, NULL, &err);
        ck_assert(g != NULL);
        ag_timer_arm(g, ms);
        ck_assert_msg(ag_loop_run(loop, &err) == 0, "loop: %s", err.msg);
        ag_timer_free(g);
}

/* ---- the loopback HTTP server --------------------------------------------- */

static int http_port, closed_port;
static char last_request[4096];

struct conn {
        struct ag_io *io;
        int fd;
        char buf[4096];
        size_t len;
};

static void on_conn(struct ag_io *io, int fd, uint32_t events, void *data)
{
        struct conn *c = data;
        ssize_t n = read(fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len);
        if (n > 0) {
                c->len += (size_t)n;
                c->buf[c->len] = '\0';
                if (strstr(c->buf, "\r\n\r\n") == NULL)
                        return;
                snprintf(last_request, sizeof(last_request), "%s", c->buf);
                const char *resp = NULL;
                if (strncmp(c->buf, "GET /ok ", 8) == 0)
                        resp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
                else if (strncmp(c->buf, "GET /fail ", 10) == 0)
                        resp =
                            "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\nbody";
                else if (strncmp(c->buf, "GET /redirect ", 14) == 0)
                        resp = "HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: "
                               "0\r\n\r\n";
                else if (strncmp(c->buf, "GET /hang ", 10) == 0)
                        return; /* never answers */
                else
                        resp = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
                (void)!write(fd, resp, strlen(resp));
        }
        if (n == 0 || (n < 0 && errno != EAGAIN) || n > 0) {
                ag_io_free(c->io);
                close(c->fd);
                free(c);
        }
}

static void on_accept(struct ag_io *io, int fd, uint32_t events, void *data)
{
        int s = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (s < 0)
                return;
        struct conn *c = calloc(1, sizeof(*c));
        ck_assert(c != NULL);
        c->fd = s;
        c->io = ag_io_new(loop, s, EPOLLIN, on_conn, c, NULL);
        ck_assert(c->io != NULL);
}

static int listen_loopback(int *ret_port, int backlog)
{
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        ck_assert(fd >= 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        ck_assert(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
        ck_assert(listen(fd, backlog) == 0);
        socklen_t l = sizeof(a);
        ck_assert(getsockname(fd, (struct sockaddr *)&a, &l) == 0);
        *ret_port = ntohs(a.sin_port);
        return fd;
}

static int listen_fd = -1;
static struct ag_io *listen_io;

static void setup(void)
{
        struct cb_error err = {0};
        ck_assert(ag_loop_new(&loop, &err) == 0);
        ck_assert(ag_probe_http_new(loop, &http, &err) == 0);
        memset(&rec, 0, sizeof(rec));
        last_request[0] = '\0';
        listen_fd = listen_loopback(&http_port, 16);
        listen_io = ag_io_new(loop, listen_fd, EPOLLIN, on_accept, NULL, &err);
        ck_assert(listen_io != NULL);
        int c = listen_loopback(&closed_port, 1);
        close(c); /* nothing listens there any more: connection refused */
        t0 = ag_now_ms();
}

static void teardown(void)
{
        ag_curl_free(http);
        ag_loop_free(loop); /* frees the connections' watchers too */
        close(listen_fd);
}

static struct k8s_http_header hdrs[] = {{"X-Probe", "yes"}, {"Host", "example.test"}};
static struct k8s_container_port ports[] = {{.name = "web"}, {.name = "other"}};

static struct k8s_probe http_probe(const char *path, int port)
{
        struct k8s_probe p = {.present = true,
                              .timeout_seconds = 1,
                              .period_seconds = 1,
                              .success_threshold = 1,
                              .failure_threshold = 3};
        p.handler.kind = K8S_HANDLER_HTTP_GET;
        p.handler.path = (char *)path;
        p.handler.port = port;
        return p;
}

static struct ag_prober *new_prober(enum ag_probe_kind kind, const struct k8s_probe *probe)
{
        struct cb_error err = {0};
        ports[0].container_port = http_port;
        ports[1].container_port = 1;
        struct ag_probe_target t = {.ip = "127.0.0.1", .ports = ports, .n_ports = 2, .http = http};
        struct ag_prober *p = ag_prober_new(loop, kind, probe, &t, on_update, &rec, &err);
        ck_assert_msg(p != NULL, "new: %s", err.msg);
        return p;
}

/* ---- HTTP ------------------------------------------------------------------ */

START_TEST(test_http_ok_headers_named_port_delay)
{
        struct k8s_probe pr = http_probe("ok", 0);
        pr.handler.port_name = "web";
        pr.handler.headers = hdrs;
        pr.handler.n_headers = 2;
        pr.initial_delay_seconds = 1;
        struct ag_prober *p = new_prober(AG_PROBE_READINESS, &pr);
        ck_assert_int_eq(ag_prober_result(p), AG_PROBE_FAILURE); /* readiness starts failed */
        run_for(1, 5000);
        ck_assert_int_eq(rec.n, 1);
        ck_assert(rec.u[0].changed);
        ck_assert_int_eq(rec.u[0].result, AG_PROBE_SUCCESS);
        ck_assert_str_eq(rec.u[0].msg, "");
        ck_assert_msg(rec.u[0].at_ms >= 1000, "probed after %llu ms, before the initial delay",
                      (unsigned long long)rec.u[0].at_ms);
        ck_assert_int_eq(ag_prober_result(p), AG_PROBE_SUCCESS);
        ck_assert_msg(strncmp(last_request, "GET /ok HTTP/1.1\r\n", 18) == 0, "%s", last_request);
        static const char *const want[] = {"\r\nHost: example.test\r\n", "\r\nX-Probe: yes\r\n",
                                           "\r\nUser-Agent: kube-probe/1.", "\r\nAccept: */*\r\n"};
        for (size_t i = 0; i < CB_ARRAY_SIZE(want); i++)
                ck_assert_msg(strstr(last_request, want[i]) != NULL, "no %s in %s", want[i],
                              last_request);
        /* steady success: no further callbacks */
        run_for(1, 2300);
        ck_assert_int_eq(rec.n, 1);
        ag_prober_free(p);
}
END_TEST

START_TEST(test_http_500_failure_threshold)
{
        struct k8s_probe pr = http_probe("/fail", http_port);
        pr.failure_threshold = 2;
        struct ag_prober *p = new_prober(AG_PROBE_LIVENESS, &pr);
        ck_assert_int_eq(ag_prober_result(p), AG_PROBE_SUCCESS); /* liveness starts ok */
        run_for(2, 6000);
        ck_assert_int_eq(rec.n, 2);
        /* every failed attempt carries the Unhealthy message; the result
         * flips on the second */
        for (int i = 0; i < 2; i++)
                ck_assert_str_eq(rec.u[i].msg,
                                 "Liveness probe failed: HTTP probe failed with statuscode: 500");
        ck_assert(!rec.u[0].changed);
        ck_assert_int_eq(rec.u[0].result, AG_PROBE_SUCCESS);
        ck_assert(rec.u[1].changed);
        ck_assert_int_eq(rec.u[1].result, AG_PROBE_FAILURE);
        ck_assert_msg(rec.u[1].at_ms - rec.u[0].at_ms >= 900, "period not kept");
        /* a failed liveness probe holds: nothing more until a new prober */
        run_for(3, 2500);
        ck_assert_int_eq(rec.n, 2);
        ag_prober_free(p);
}
END_TEST

/* Probers share the node's transport: each gets its own request's result,
 * and one without a shared transport makes its own. */
START_TEST(test_http_shared_and_own_transport)
{
        struct k8s_probe ok = http_probe("/ok", http_port), bad = http_probe("/fail", http_port);
        bad.failure_threshold = 1;
        struct ag_prober *a = new_prober(AG_PROBE_READINESS, &ok);
        struct ag_prober *b = new_prober(AG_PROBE_LIVENESS, &bad);
        struct cb_error err = {0};
        struct ag_probe_target own = {.ip = "127.0.0.1", .ports = ports, .n_ports = 2};
        struct ag_prober *c =
            ag_prober_new(loop, AG_PROBE_STARTUP, &ok, &own, on_update, &rec, &err);
        ck_assert_msg(c != NULL, "new: %s", err.msg);
        run_for(3, 5000);
        ck_assert_int_eq(ag_prober_result(a), AG_PROBE_SUCCESS);
        ck_assert_int_eq(ag_prober_result(b), AG_PROBE_FAILURE);
        ck_assert_int_eq(ag_prober_result(c), AG_PROBE_SUCCESS);
        ag_prober_free(a);
        ag_prober_free(b);
        ag_prober_free(c);
}
END_TEST

START_TEST(test_http_timeout_refused_redirect)
{
        char want[512];
        struct k8s_probe pr = http_probe("/hang", http_port);
        struct ag_prober *p = new_prober(AG_PROBE_LIVENESS, &pr);
        run_for(1, 5000);
        ck_assert_int_eq(rec.n, 1);
        snprintf(want, sizeof(want),
                 "Liveness probe failed: Get \"http://127.0.0.1:%d/hang\": context deadline "
                 "exceeded (Client.Timeout exceeded while awaiting headers)",
                 http_port);
        ck_assert_str_eq(rec.u[0].msg, want);
        ck_assert_msg(rec.u[0].at_ms >= 1000 && rec.u[0].at_ms < 2500, "timed out after %llu",
                      (unsigned long long)rec.u[0].at_ms);
        ag_prober_free(p);

        memset(&rec, 0, sizeof(rec));
        pr = http_probe("", closed_port);
        p = new_prober(AG_PROBE_READINESS, &pr);
        run_for(1, 5000);
        snprintf(want, sizeof(want),
                 "Readiness probe failed: Get \"http://127.0.0.1:%d/\": dial tcp "
                 "127.0.0.1:%d: connect: connection refused",
                 closed_port, closed_port);
        ck_assert_int_eq(rec.n, 1);
        ck_assert_str_eq(rec.u[0].msg, want);
        ck_assert(!rec.u[0].changed); /* readiness was failed already */
        ag_prober_free(p);

        memset(&rec, 0, sizeof(rec));
        pr = http_probe("/redirect", http_port);
        p = new_prober(AG_PROBE_READINESS, &pr);
        run_for(1, 5000);
        ck_assert_int_eq(rec.n, 1);
        ck_assert_int_eq(rec.u[0].result, AG_PROBE_SUCCESS);
        ag_prober_free(p);
}
END_TEST

START_TEST(test_success_threshold_and_free_in_callback)
{
        struct k8s_probe pr = http_probe("/ok", http_port);
        pr.success_threshold = 2;
        struct ag_prober *p = new_prober(AG_PROBE_READINESS, &pr);
        run_for(1, 6000);
        ck_assert_int_eq(rec.n, 1);
        ck_assert(rec.u[0].changed);
        ck_assert_int_eq(rec.u[0].result, AG_PROBE_SUCCESS);
        /* first success at ~0 ms does not count alone */
        ck_assert_msg(rec.u[0].at_ms >= 900, "success after %llu ms",
                      (unsigned long long)rec.u[0].at_ms);
        ag_prober_free(p);

        /* freed from its own callback (ASan checks the rest) */
        memset(&rec, 0, sizeof(rec));
        rec.free_in_cb = true;
        pr = http_probe("/fail", http_port);
        (void)new_prober(AG_PROBE_READINESS, &pr);
        run_for(2, 2500);
        ck_assert_int_eq(rec.n, 1);
}
END_TEST

START_TEST(test_port_errors_and_bad_handlers)
{
        struct k8s_probe pr = http_probe("/ok", 0);
        pr.handler.port_name = "nosuch";
        struct ag_prober *p = new_prober(AG_PROBE_STARTUP, &pr);
        ck_assert_int_eq(ag_prober_result(p), AG_PROBE_UNKNOWN);
        run_for(1, 3000);
        ck_assert_int_eq(rec.n, 1);
        ck_assert_str_eq(rec.u[0].msg, "Startup probe errored: couldn't find port: nosuch");
        ag_prober_free(p);

        struct cb_error err = {0};
        struct ag_probe_target t = {.ip = "127.0.0.1"};
        pr.handler.kind = K8S_HANDLER_GRPC;
        ck_assert(ag_prober_new(loop, AG_PROBE_LIVENESS, &pr, &t, on_update, &rec, &err) == NULL);
        ck_assert_msg(strstr(err.msg, "grpc") != NULL, "%s", err.msg);
        pr.handler.kind = K8S_HANDLER_EXEC; /* no command */
        ck_assert(ag_prober_new(loop, AG_PROBE_LIVENESS, &pr, &t, on_update, &rec, &err) == NULL);
}
END_TEST

/* ---- TCP -------------------------------------------------------------------- */

START_TEST(test_tcp)
{
        struct k8s_probe pr = http_probe(NULL, http_port);
        pr.handler.kind = K8S_HANDLER_TCP_SOCKET;
        struct ag_prober *p = new_prober(AG_PROBE_READINESS, &pr);
        run_for(1, 3000);
        ck_assert_int_eq(rec.n, 1);
        ck_assert_int_eq(rec.u[0].result, AG_PROBE_SUCCESS);
        ag_prober_free(p);

        memset(&rec, 0, sizeof(rec));
        pr.handler.port = closed_port;
        pr.failure_threshold = 1;
        p = new_prober(AG_PROBE_LIVENESS, &pr);
        run_for(1, 3000);
        char want[256];
        snprintf(want, sizeof(want),
                 "Liveness probe failed: dial tcp 127.0.0.1:%d: connect: connection refused",
                 closed_port);
        ck_assert_int_eq(rec.n, 1);
        ck_assert_str_eq(rec.u[0].msg, want);
        ck_assert(rec.u[0].changed);
        ck_assert_int_eq(rec.u[0].result, AG_PROBE_FAILURE);
        ag_prober_free(p);

        /* a listener whose accept queue is full drops the SYN: timeout */
        memset(&rec, 0, sizeof(rec));
        int full_port;
        int lfd = listen_loopback(&full_port, 0);
        int fillers[4];
        for (size_t i = 0; i < CB_ARRAY_SIZE(fillers); i++) {
                fillers[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
                struct sockaddr_in a = {.sin_family = AF_INET,
                                        .sin_port = htons((uint16_t)full_port),
                                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
                (void)connect(fillers[i], (struct sockaddr *)&a, sizeof(a));
        }
        pr.handler.port = full_port;
        p = new_prober(AG_PROBE_LIVENESS, &pr);
        run_for(1, 4000);
        snprintf(want, sizeof(want), "Liveness probe failed: dial tcp 127.0.0.1:%d: i/o timeout",
                 full_port);
        ck_assert_int_eq(rec.n, 1);
        ck_assert_str_eq(rec.u[0].msg, want);
        ck_assert(rec.u[0].at_ms >= 1000);
        ag_prober_free(p);
        for (size_t i = 0; i < CB_ARRAY_SIZE(fillers); i++)
                close(fillers[i]);
        close(lfd);
}
END_TEST

/* ---- exec (root) ---------------------------------------------------------------- */

static char *const root = th_root, *const cgparent = th_cgparent;
static const char *const path_env[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};

static void start_container(const char *id)
{
        static const char *const argv[] = {"sleep", "1000", NULL};
        struct rt_container_config c;
        th_base_config(&c, id, argv);
        c.hostname = "probed";
        c.env = path_env;
        c.cwd = NULL;
        c.log_path = NULL;
        struct rt_container_state st;
        struct cb_error err = {0};
        ck_assert_msg(rt_container_create_start(&c, &st, &err) == 0, "start: %s", err.msg);
        ck_assert_msg(rt_container_save_config(&c, &err) == 0, "save: %s", err.msg);
}

static struct ag_prober *exec_prober(enum ag_probe_kind kind, const char *id, char **cmd, size_t n,
                                     int failure_threshold)
{
        struct k8s_probe pr = {.present = true,
                               .timeout_seconds = 1,
                               .period_seconds = 1,
                               .success_threshold = 1,
                               .failure_threshold = failure_threshold};
        pr.handler.kind = K8S_HANDLER_EXEC;
        pr.handler.command = cmd;
        pr.handler.n_command = n;
        struct ag_probe_target t = {
            .root_dir = root, .container_id = id, .monitor_path = CUBELET_BINARY};
        struct cb_error err = {0};
        struct ag_prober *p = ag_prober_new(loop, kind, &pr, &t, on_update, &rec, &err);
        ck_assert_msg(p != NULL, "new: %s", err.msg);
        return p;
}

START_TEST(test_exec_probes)
{
        struct cb_error err = {0};
        start_container("probed");
        char *ok[] = {"sh", "-c", "test \"$(hostname)\" = probed"};
        struct ag_prober *p = exec_prober(AG_PROBE_READINESS, "probed", ok, 3, 3);
        run_for(1, 10000);
        ck_assert_int_eq(rec.n, 1);
        ck_assert_str_eq(rec.u[0].msg, "");
        ck_assert_int_eq(rec.u[0].result, AG_PROBE_SUCCESS);
        ag_prober_free(p);

        memset(&rec, 0, sizeof(rec));
        char *bad[] = {"sh", "-c", "echo not healthy; exit 1"};
        p = exec_prober(AG_PROBE_LIVENESS, "probed", bad, 3, 1);
        run_for(1, 10000);
        ck_assert_int_eq(rec.n, 1);
        ck_assert_str_eq(rec.u[0].msg, "Liveness probe failed: not healthy\n");
        ck_assert(rec.u[0].changed);
        ck_assert_int_eq(rec.u[0].result, AG_PROBE_FAILURE);
        ag_prober_free(p);

        memset(&rec, 0, sizeof(rec));
        t0 = ag_now_ms();
        char *slow[] = {"sleep", "30"};
        p = exec_prober(AG_PROBE_STARTUP, "probed", slow, 2, 1);
        run_for(1, 10000);
        ck_assert_int_eq(rec.n, 1);
        ck_assert_str_eq(rec.u[0].msg, "Startup probe failed: command \"sleep 30\" timed out");
        ck_assert_msg(rec.u[0].at_ms >= 1000 && rec.u[0].at_ms < 5000, "after %llu ms",
                      (unsigned long long)rec.u[0].at_ms);
        ag_prober_free(p);
        /* the timed-out command is gone: only the container's sleep is left */
        pid_t *pids = NULL;
        size_t n = 0;
        char cg[128];
        snprintf(cg, sizeof(cg), "%s/probed", cgparent);
        ck_assert(cg_list_pids(cg, &pids, &n, &err) == 0);
        free(pids);
        ck_assert_uint_eq(n, 1);

        /* a stopped container: the probe errors */
        ck_assert(rt_container_stop(root, "probed", SIGKILL, 0, &err) == 0);
        memset(&rec, 0, sizeof(rec));
        p = exec_prober(AG_PROBE_READINESS, "probed", ok, 3, 3);
        run_for(1, 5000);
        ck_assert_int_eq(rec.n, 1);
        ck_assert_str_eq(rec.u[0].msg, "Readiness probe errored: container probed is not running");
        ag_prober_free(p);
        ck_assert_msg(rt_container_remove(root, "probed", &err) == 0, "%s", err.msg);
}
END_TEST

static bool setup_exec_env(void)
{
        return th_need_root_cgroups("test_prober: exec probes") == 0 &&
               th_live_setup("test_prober", "pr") == 0;
}

int main(void)
{
        signal(SIGPIPE, SIG_IGN);
        Suite *s = suite_create("prober");
        TCase *tc = tcase_create("loopback");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_http_ok_headers_named_port_delay);
        tcase_add_test(tc, test_http_500_failure_threshold);
        tcase_add_test(tc, test_http_shared_and_own_transport);
        tcase_add_test(tc, test_http_timeout_refused_redirect);
        tcase_add_test(tc, test_success_threshold_and_free_in_callback);
        tcase_add_test(tc, test_port_errors_and_bad_handlers);
        tcase_add_test(tc, test_tcp);
        suite_add_tcase(s, tc);
        bool exec_env = setup_exec_env();
        if (exec_env) {
                TCase *te = tcase_create("exec");
                tcase_add_checked_fixture(te, setup, teardown);
                tcase_set_timeout(te, 90);
                tcase_add_test(te, test_exec_probes);
                suite_add_tcase(s, te);
        } else {
                fprintf(stderr, "test_prober: not root or no cgroups: exec probes skipped\n");
        }
        int failed = th_run(s);
        if (exec_env)
                th_sweep();
        return failed == 0 ? 0 : 1;
}
