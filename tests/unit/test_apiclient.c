/* SPDX-License-Identifier: Apache-2.0 */
/* The API client's places in flight (agent/client/apiclient.c,
 * AG_API_INFLIGHT_MAX) against a server on the test's own loop that
 * accepts and does not answer until told: HTTP/1.1 without TLS, so each
 * request in libcurl is one connection and the connections accepted count
 * the requests in flight. Checked: no more than AG_API_INFLIGHT_MAX are in
 * flight however many are asked for; a watch does not wait for a place;
 * an answer frees a place, and the waiting pod status goes before the
 * waiting requests of the default class that were asked for earlier, with
 * the body its body_at_start gives when it starts; a
 * waiting request cancelled never reaches the server; the waiting ones
 * all get their answer once the server answers. And a body larger than
 * libcurl's send buffer (AG_API_SEND_BUFFER) arrives whole. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/client/apiclient.h"
#include "agent/client/kubeconfig.h"
#include "agent/core/loop.h"

#include "helpers.h"

#define N_DEFAULT 100
#define CONNS_MAX 256

struct conn {
        int fd;
        char req[512]; /* the start of its request */
        size_t len;
        bool answered;
};

struct t {
        struct ag_loop *loop;
        struct ag_api *api;
        struct ag_kubeconfig kc;
        int lfd;
        struct ag_io *lio;
        struct conn conns[CONNS_MAX];
        int n_conns;
        int done_ok, done_err;
        struct ag_timer *tick;
        int step, ticks;
        struct ag_request *cancel_me;
        int late_calls;
        char failure[256];
};

/* the status's body when it starts (body_at_start): not the one asked with */
#define LATE_BODY "{\"status\":{\"phase\":\"Running\"}}"
static const char *late_body(void *data, size_t *len)
{
        struct t *t = data;
        t->late_calls++;
        *len = strlen(LATE_BODY);
        return LATE_BODY;
}

/* a non-blocking listener on a free loopback port; its URL in server */
static int listen_loopback(int backlog, char *server, size_t size)
{
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(fd, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t al = sizeof(a);
        ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
        ck_assert_int_eq(listen(fd, backlog), 0);
        ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &al), 0);
        snprintf(server, size, "http://127.0.0.1:%d", ntohs(a.sin_port));
        return fd;
}

static void on_accept(struct ag_io *io, int lfd, uint32_t events, void *data)
{
        struct t *t = data;
        (void)io;
        (void)lfd;
        (void)events;
        int fd;
        while ((fd = accept4(t->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                if (t->n_conns == CONNS_MAX) {
                        close(fd);
                        continue;
                }
                t->conns[t->n_conns++] = (struct conn){.fd = fd};
        }
}

/* reads what each connection sent so far (the request line first) */
static void read_requests(struct t *t)
{
        for (int i = 0; i < t->n_conns; i++) {
                struct conn *c = &t->conns[i];
                if (c->len + 1 >= sizeof(c->req))
                        continue;
                ssize_t n = recv(c->fd, c->req + c->len, sizeof(c->req) - 1 - c->len, MSG_DONTWAIT);
                if (n > 0)
                        c->len += (size_t)n;
                c->req[c->len] = '\0';
        }
}

static void answer(struct conn *c)
{
        static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                   "Content-Length: 2\r\nConnection: close\r\n\r\n{}";
        ck_assert_int_eq(write(c->fd, resp, sizeof(resp) - 1), (ssize_t)(sizeof(resp) - 1));
        shutdown(c->fd, SHUT_WR);
        c->answered = true;
}

static void on_done(struct ag_api_result *res, void *data)
{
        struct t *t = data;
        if (res->error == NULL && res->status == 200)
                t->done_ok++;
        else
                t->done_err++;
}

static int watch_stream(const char *buf, size_t len, void *data)
{
        (void)buf;
        (void)len;
        (void)data;
        return 0;
}

static struct ag_request *ask(struct t *t, const char *method, const char *path,
                              enum ag_api_class cls, ag_api_stream_fn stream)
{
        struct cb_error err = {0};
        struct ag_api_req_opts o = {.cls = cls, .stream = stream};
        if (strcmp(method, "PATCH") == 0) {
                o.body = "{}";
                o.body_len = 2;
                o.content_type = "application/merge-patch+json";
                if (cls == AG_API_CLASS_STATUS)
                        o.body_at_start = late_body;
        }
        struct ag_request *r = ag_api_request(t->api, method, path, &o, on_done, t, &err);
        ck_assert_msg(r != NULL, "%s %s: %s", method, path, err.msg);
        return r;
}

static int count_with(struct t *t, const char *needle)
{
        int n = 0;
        for (int i = 0; i < t->n_conns; i++)
                n += strstr(t->conns[i].req, needle) != NULL;
        return n;
}

static void scenario_fail(struct t *t, const char *msg)
{
        snprintf(t->failure, sizeof(t->failure),
                 "step %d: %s (connections %d, answers %d ok, %d "
                 "failed)",
                 t->step, msg, t->n_conns, t->done_ok, t->done_err);
        ag_loop_quit(t->loop);
}

static void answer_watch(struct conn *c)
{
        static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                   "Transfer-Encoding: chunked\r\n\r\n";
        ck_assert_int_eq(write(c->fd, resp, sizeof(resp) - 1), (ssize_t)(sizeof(resp) - 1));
        c->answered = true;
}

static void ask_gets(struct t *t)
{
        for (int i = 0; i < N_DEFAULT; i++) {
                char path[96];
                snprintf(path, sizeof(path), "/api/v1/namespaces/default/configmaps/c%d", i);
                struct ag_request *r = ask(t, "GET", path, AG_API_CLASS_DEFAULT, NULL);
                if (i == 80)
                        t->cancel_me = r; /* waiting: beyond the first 64 */
        }
}

/* The scenario, one step per condition reached; a step waits at most
 * 10 s (500 ticks of 20 ms) for its condition, and a count that must not
 * grow is looked at again 300 ms after it was reached. Connections: [0]
 * the first watch, then one per request (the answers close them; the
 * watch keeps what libcurl learnt of the server, HTTP/1.1 without
 * multiplexing, so it does not hold requests back for a connection to
 * multiplex on, CURLOPT_PIPEWAIT). */
static void on_tick(struct ag_timer *tm, void *data)
{
        struct t *t = data;
        read_requests(t);
        t->ticks++;
        if (t->ticks > 500) {
                scenario_fail(t, "timed out");
                return;
        }
        switch (t->step) {
        case 0: /* a watch, answered with its headers and then silent */
                if (t->n_conns < 1 || t->conns[0].len == 0)
                        break;
                if (!t->conns[0].answered) {
                        answer_watch(&t->conns[0]);
                        t->ticks = 0;
                }
                if (t->ticks < 10)
                        break; /* libcurl reads the answer meanwhile */
                ask_gets(t);
                t->step = 1;
                t->ticks = 0;
                break;
        case 1: /* 100 GETs asked for: 64 in flight, and it stays so */
                if (t->n_conns < 1 + AG_API_INFLIGHT_MAX)
                        break;
                if (t->n_conns > 1 + AG_API_INFLIGHT_MAX) {
                        scenario_fail(t, "more requests in flight than AG_API_INFLIGHT_MAX");
                        return;
                }
                if (t->ticks < 15)
                        break;
                if (count_with(t, "GET /api/v1/namespaces/default/configmaps/c") !=
                    AG_API_INFLIGHT_MAX) {
                        scenario_fail(t, "the connections are not the GETs");
                        return;
                }
                /* a second watch: in flight at once, places or not */
                ask(t, "GET", "/api/v1/pods?watch=1", AG_API_CLASS_DEFAULT, watch_stream);
                /* a status, asked for after the 36 waiting GETs; nothing
                 * asks for its body before it starts */
                ask(t, "PATCH", "/api/v1/namespaces/default/pods/p/status", AG_API_CLASS_STATUS,
                    NULL);
                /* a waiting GET cancelled: it must never be sent */
                ag_api_cancel(t->cancel_me);
                if (t->late_calls != 0) {
                        scenario_fail(t, "a waiting request's body was asked for");
                        return;
                }
                t->step = 2;
                t->ticks = 0;
                break;
        case 2:
                if (t->n_conns < 2 + AG_API_INFLIGHT_MAX)
                        break;
                if (t->ticks < 15)
                        break;
                if (t->n_conns != 2 + AG_API_INFLIGHT_MAX ||
                    count_with(t, "GET /api/v1/pods?watch=1") != 1) {
                        scenario_fail(t, "the watch did not start alone beside the full places");
                        return;
                }
                answer(&t->conns[1]); /* a place comes free */
                t->step = 3;
                t->ticks = 0;
                break;
        case 3:
                if (t->n_conns < 3 + AG_API_INFLIGHT_MAX || t->done_ok < 1)
                        break;
                if (t->ticks < 15)
                        break;
                if (t->n_conns != 3 + AG_API_INFLIGHT_MAX) {
                        scenario_fail(t, "one answer let more than one request start");
                        return;
                }
                if (strstr(t->conns[t->n_conns - 1].req,
                           "PATCH /api/v1/namespaces/default/pods/p/status") == NULL) {
                        scenario_fail(t, "the waiting status did not go first");
                        return;
                }
                /* it waited, and went with the body of its start */
                if (t->late_calls != 1 || strstr(t->conns[t->n_conns - 1].req, LATE_BODY) == NULL) {
                        scenario_fail(t, "the status did not go with the body of its start");
                        return;
                }
                t->step = 4;
                t->ticks = 0;
                break;
        case 4: /* answer everything but the watches, as it comes */
                for (int i = 0; i < t->n_conns; i++)
                        if (!t->conns[i].answered && strstr(t->conns[i].req, "watch=1") == NULL &&
                            t->conns[i].len > 0)
                                answer(&t->conns[i]);
                /* 100 GETs, one cancelled, and the status */
                if (t->done_ok + t->done_err < N_DEFAULT)
                        break;
                if (t->done_err != 0 || t->done_ok != N_DEFAULT) {
                        scenario_fail(t, "not every request was answered");
                        return;
                }
                if (count_with(t, "GET /api/v1/namespaces/default/configmaps/c") != N_DEFAULT - 1 ||
                    count_with(t, "configmaps/c80 ") != 0) {
                        scenario_fail(t, "the cancelled request was sent, or a GET was not");
                        return;
                }
                ag_loop_quit(t->loop);
                return;
        }
        ag_timer_arm(tm, 20);
}

START_TEST(test_inflight_places)
{
        static struct t t; /* large; one per forked test */
        memset(&t, 0, sizeof(t));
        struct cb_error err = {0};
        char server[64];
        t.lfd = listen_loopback(512, server, sizeof(server));
        t.kc.server = server;

        ck_assert_int_eq(ag_loop_new(&t.loop, &err), 0);
        t.lio = ag_io_new(t.loop, t.lfd, EPOLLIN, on_accept, &t, &err);
        ck_assert_ptr_nonnull(t.lio);
        /* the buckets out of the way: only the places limit */
        struct ag_api_config cfg = {.qps = 100000, .burst = 100000};
        ck_assert_msg(ag_api_new(t.loop, &t.kc, &cfg, &t.api, &err) == 0, "%s", err.msg);
        ask(&t, "GET", "/api/v1/nodes?watch=1", AG_API_CLASS_DEFAULT, watch_stream);
        t.tick = ag_timer_new(t.loop, on_tick, &t, &err);
        ck_assert_ptr_nonnull(t.tick);
        ag_timer_arm(t.tick, 20);
        ck_assert_int_eq(ag_loop_run(t.loop, &err), 0);
        ck_assert_msg(t.failure[0] == '\0', "%s", t.failure);
        /* the status answered too: 99 GETs + 1 PATCH */
        ck_assert_int_eq(t.done_ok, N_DEFAULT);
        ag_api_free(t.api);
        ag_timer_free(t.tick);
        ag_io_free(t.lio);
        for (int i = 0; i < t.n_conns; i++)
                close(t.conns[i].fd);
        close(t.lfd);
        ag_loop_free(t.loop);
}
END_TEST

/* ---- a body larger than the send buffer ---- */

#define BIG_BODY (100u * 1024u)

struct big {
        struct ag_loop *loop;
        int lfd, fd;
        struct ag_io *lio, *cio;
        char *got;
        size_t len;
        int done_ok, done_err;
        bool answered;
};

static void big_read(struct ag_io *io, int fd, uint32_t events, void *data)
{
        struct big *b = data;
        (void)io;
        (void)events;
        ssize_t n;
        while ((n = recv(fd, b->got + b->len, 2 * BIG_BODY - b->len, MSG_DONTWAIT)) > 0)
                b->len += (size_t)n;
        const char *end = memmem(b->got, b->len, "\r\n\r\n", 4);
        if (b->answered || end == NULL || b->len - (size_t)(end + 4 - b->got) < BIG_BODY)
                return;
        b->answered = true;
        answer(&(struct conn){.fd = fd});
}

static void big_accept(struct ag_io *io, int lfd, uint32_t events, void *data)
{
        struct big *b = data;
        (void)io;
        (void)events;
        struct cb_error err = {0};
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0 || b->fd >= 0) {
                if (fd >= 0)
                        close(fd);
                return;
        }
        b->fd = fd;
        b->cio = ag_io_new(b->loop, fd, EPOLLIN, big_read, b, &err);
        ck_assert_ptr_nonnull(b->cio);
}

static void big_done(struct ag_api_result *res, void *data)
{
        struct big *b = data;
        if (res->error == NULL && res->status == 200)
                b->done_ok++;
        else
                b->done_err++;
        ag_loop_quit(b->loop);
}

START_TEST(test_body_larger_than_send_buffer)
{
        ck_assert_uint_gt(BIG_BODY, 4 * (unsigned)AG_API_SEND_BUFFER);
        struct big b = {.lfd = -1, .fd = -1};
        struct cb_error err = {0};
        b.got = calloc(1, 2 * BIG_BODY);
        ck_assert_ptr_nonnull(b.got);
        char server[64];
        b.lfd = listen_loopback(8, server, sizeof(server));
        struct ag_kubeconfig kc = {.server = server};
        struct ag_api *api = NULL;
        ck_assert_int_eq(ag_loop_new(&b.loop, &err), 0);
        b.lio = ag_io_new(b.loop, b.lfd, EPOLLIN, big_accept, &b, &err);
        ck_assert_ptr_nonnull(b.lio);
        struct ag_api_config cfg = {.qps = 100, .burst = 100};
        ck_assert_msg(ag_api_new(b.loop, &kc, &cfg, &api, &err) == 0, "%s", err.msg);
        /* a JSON string of BIG_BODY bytes whose every byte says where it is */
        char *body = malloc(BIG_BODY);
        ck_assert_ptr_nonnull(body);
        body[0] = '"';
        for (size_t i = 1; i < BIG_BODY - 1; i++)
                body[i] = (char)('a' + i % 26);
        body[BIG_BODY - 1] = '"';
        struct ag_api_req_opts o = {.cls = AG_API_CLASS_STATUS,
                                    .body = body,
                                    .body_len = BIG_BODY,
                                    .content_type = "application/merge-patch+json"};
        ck_assert_ptr_nonnull(ag_api_request(api, "PATCH", "/api/v1/namespaces/d/pods/p/status", &o,
                                             big_done, &b, &err));
        ck_assert_int_eq(ag_loop_run(b.loop, &err), 0);
        ck_assert_int_eq(b.done_ok, 1);
        const char *end = memmem(b.got, b.len, "\r\n\r\n", 4);
        ck_assert_ptr_nonnull(end);
        ck_assert_uint_eq(b.len - (size_t)(end + 4 - b.got), BIG_BODY);
        ck_assert_msg(memcmp(end + 4, body, BIG_BODY) == 0, "the body arrived changed");
        ag_api_free(api);
        ag_io_free(b.cio);
        ag_io_free(b.lio);
        close(b.fd);
        close(b.lfd);
        ag_loop_free(b.loop);
        free(body);
        free(b.got);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("apiclient");
        TCase *tc = tcase_create("inflight");
        tcase_add_test(tc, test_inflight_places);
        tcase_add_test(tc, test_body_larger_than_send_buffer);
        tcase_set_timeout(tc, 60);
        suite_add_tcase(s, tc);
        return th_run(s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
