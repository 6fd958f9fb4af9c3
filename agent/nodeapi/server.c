/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node API server (see agent/nodeapi/server.h, docs/node-api.md).
 *
 * Every connection is a nonblocking TLS connection (OpenSSL) watched by
 * the agent's loop. The request head is parsed by http-parser; what comes
 * after depends on the request:
 *   - plain requests (/healthz, /pods, /stats/summary, /containerLogs) get
 *     a response and the connection closes after it;
 *   - "Upgrade: websocket" (exec, attach; port-forward's SPDY tunnel): the
 *     WebSocket framing is wslay's, the channel protocols ours
 *     (agent/nodeapi/proto.h);
 *   - "Upgrade: SPDY/3.1" (exec, attach, port-forward as kube-apiserver
 *     1.30-1.35 sends them, and kubectl without WebSockets): agent/nodeapi/spdy.c.
 * One exec/attach session (struct exec) serves either transport; port
 * forwarding (struct pfwd) runs over SPDY, directly or tunnelled in a
 * WebSocket ("SPDY/3.1+portforward.k8s.io", as a kubelet with
 * ExtendWebSocketsToKubelet takes it).
 *
 * Authentication happens per request, before any work: a client
 * certificate that verified against the client CA (the TLS handshake asks
 * for one but does not require it, so bearer-token clients and clients
 * with an untrusted certificate get a clear 401 instead of a failed
 * handshake), or "Authorization: Bearer" with a token of the token file.
 * Authenticated users are authorized for everything (the kubelet's
 * AlwaysAllow authorization mode).
 */
#include "agent/nodeapi/server.h"
#include "agent/nodeapi/internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "agent/core/log.h"
#include "lib/wallclock.h"
#include "lib/http.h"
#include "lib/cleanup.h"
#include "lib/file.h"

#define HEAD_TIMEOUT_MS 30000 /* TLS handshake + request head */
/* Connections at once, and from one client address: idle or slow clients
 * (a slowloris) cannot take every fd of the agent, and one address cannot
 * take them all from the others. Over either, a new connection is closed
 * at once. */
#define AG_NAPI_MAX_CONNS          4096
#define AG_NAPI_MAX_CONNS_PER_PEER 256
/* TLS 1.2 suites: forward-secret AEAD only, as Go's default list (1.3 has
 * only such suites). */
#define TLS12_CIPHERS                                                                              \
        "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:" \
        "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"

static void conn_free(struct conn *c);
static void conn_flush(struct conn *c);
static void conn_written(struct conn *c);
static void stream_timeout(struct ag_timer *t, void *data);

/* ---- small helpers ---- */

int64_t ag_napi_wall_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static char *status_json(int code, const char *reason, const char *msg)
{
        _cleanup_cjson_ cJSON *s = cJSON_CreateObject();
        cJSON_AddStringToObject(s, "kind", "Status");
        cJSON_AddStringToObject(s, "apiVersion", "v1");
        cJSON_AddObjectToObject(s, "metadata");
        cJSON_AddStringToObject(s, "status", "Failure");
        cJSON_AddStringToObject(s, "message", msg);
        cJSON_AddStringToObject(s, "reason", reason);
        cJSON_AddNumberToObject(s, "code", code);
        return cJSON_PrintUnformatted(s);
}

static const char *reason_of(int code)
{
        switch (code) {
        case 400:
                return "BadRequest";
        case 401:
                return "Unauthorized";
        case 403:
                return "Forbidden";
        case 404:
                return "NotFound";
        case 405:
                return "MethodNotAllowed";
        default:
                return "InternalError";
        }
}

int ag_napi_set_nonblock(int fd)
{
        int fl = fcntl(fd, F_GETFL);
        return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* ---- the connection: TLS, output buffer, events ---- */

/* Queues bytes for the client. Never fails the caller: without memory the
 * connection is dropped. */
void ag_napi_conn_write(struct conn *c, const void *buf, size_t len)
{
        if (c->dead || len == 0)
                return;
        if (c->out_off > 0 && c->out_off == c->out_len)
                c->out_off = c->out_len = 0;
        if (c->out_len + len > c->out_cap) {
                if (c->out_off > 0) {
                        memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
                        c->out_len -= c->out_off;
                        c->out_off = 0;
                }
                size_t cap = c->out_cap ? c->out_cap : 16384;
                while (cap < c->out_len + len)
                        cap *= 2;
                if (cap != c->out_cap) {
                        uint8_t *n = realloc(c->out, cap);
                        if (n == NULL) {
                                c->dead = true;
                                return;
                        }
                        c->out = n;
                        c->out_cap = cap;
                }
        }
        memcpy(c->out + c->out_len, buf, len);
        c->out_len += len;
}

size_t ag_napi_conn_pending(const struct conn *c)
{
        return c->out_len - c->out_off;
}

void ag_napi_conn_printf(struct conn *c, const char *fmt, ...)
{
        char buf[4096];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        if (n < 0 || (size_t)n >= sizeof(buf)) {
                c->dead = true;
                return;
        }
        ag_napi_conn_write(c, buf, (size_t)n);
}

/* A response head; len < 0: no Content-Length, the body ends with the
 * connection. Every response closes its connection. */
void ag_napi_conn_head(struct conn *c, int code, const char *ctype, long long len)
{
        ag_napi_conn_printf(
            c, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nCache-Control: no-cache, private\r\n", code,
            cb_http_reason_phrase(code), ctype);
        if (len >= 0)
                ag_napi_conn_printf(c, "Content-Length: %lld\r\n", len);
        ag_napi_conn_printf(c, "Connection: close\r\n\r\n");
}

void ag_napi_respond(struct conn *c, int code, const char *ctype, char *body)
{
        size_t len = body != NULL ? strlen(body) : 0;
        ag_napi_conn_head(c, code, ctype, (long long)len);
        if (strcmp(c->req.method, "HEAD") != 0)
                ag_napi_conn_write(c, body, len);
        free(body);
        c->mode = C_RESPONSE;
        c->close_after_flush = true;
}

void ag_napi_respond_error(struct conn *c, int code, const char *msg)
{
        log_v(3, "node API: %d %s", code, msg);
        ag_napi_respond(c, code, "application/json", status_json(code, reason_of(code), msg));
}

static void close_timeout(struct ag_timer *t, void *data)
{
        (void)t;
        struct conn *c = data;
        /* A WebSocket client that has not answered our close but is still
         * reading what the kernel holds for it (fewer bytes queued than at
         * the last wait) gets another wait: closing now would reset the
         * connection and drop that output. */
        int q = 0;
        if (c->mode == C_WS && ioctl(c->fd, SIOCOUTQ, &q) == 0 && q > 0 &&
            (c->close_outq == 0 || q < c->close_outq)) {
                c->close_outq = q;
                ag_timer_arm(c->timer, CLOSE_WAIT_MS);
                return;
        }
        log_v(3, "node API: a connection timed out (%s)",
              c->mode == C_HANDSHAKE || c->mode == C_HEAD ? "no request" : "no close answer");
        c->dead = true;
        ag_napi_conn_update(c);
}

/* Reads what TLS has for us, as long as the connection wants input. */
void ag_napi_conn_read(struct conn *c)
{
        uint8_t buf[16384];
        for (int i = 0; i < 64 && !c->dead && !c->eof && !c->read_paused; i++) {
                ERR_clear_error();
                int n = SSL_read(c->ssl, buf, sizeof(buf));
                if (n > 0) {
                        c->read_wants_write = false;
                        ag_napi_conn_input(c, buf, (size_t)n);
                        continue;
                }
                int e = SSL_get_error(c->ssl, n);
                if (e == SSL_ERROR_WANT_READ)
                        return;
                if (e == SSL_ERROR_WANT_WRITE) {
                        c->read_wants_write = true;
                        return;
                }
                /* a close, a reset, or garbage */
                c->eof = true;
                ag_napi_conn_input(c, NULL, 0);
                return;
        }
}

static void conn_flush(struct conn *c)
{
        while (!c->dead && ag_napi_conn_pending(c) > 0) {
                ERR_clear_error();
                size_t n = ag_napi_conn_pending(c);
                int w = SSL_write(c->ssl, c->out + c->out_off, n > (1 << 30) ? 1 << 30 : (int)n);
                if (w > 0) {
                        c->out_off += (size_t)w;
                        c->write_wants_read = false;
                        continue;
                }
                int e = SSL_get_error(c->ssl, w);
                if (e == SSL_ERROR_WANT_WRITE)
                        return;
                if (e == SSL_ERROR_WANT_READ) {
                        c->write_wants_read = true;
                        return;
                }
                c->dead = true;
                return;
        }
        if (ag_napi_conn_pending(c) == 0) {
                c->out_off = c->out_len = 0;
                if (c->out_cap > (1 << 20)) {
                        free(c->out);
                        c->out = NULL;
                        c->out_cap = 0;
                }
        }
}

/* After any change: writes what can be written, tells the modes there is
 * room, decides the events to wait for, and frees a finished connection. */
void ag_napi_conn_update(struct conn *c)
{
        if (!c->dead && c->mode != C_HANDSHAKE) {
                size_t before = ag_napi_conn_pending(c);
                conn_flush(c);
                /* only a drop can resume a source that stopped for a slow
                 * client (each stops with output pending): no reads or
                 * epoll changes on every event */
                if (!c->dead && before > 0 && ag_napi_conn_pending(c) < before)
                        conn_written(c);
                conn_flush(c);
        }
        if (!c->dead && c->close_wait_after_flush && ag_napi_conn_pending(c) == 0) {
                c->close_wait_after_flush = false;
                ag_timer_arm(c->timer, CLOSE_WAIT_MS);
        }
        if (!c->dead && c->close_after_flush && ag_napi_conn_pending(c) == 0) {
                ERR_clear_error();
                (void)SSL_shutdown(c->ssl);
                c->dead = true;
        }
        if (c->dead) {
                conn_free(c);
                return;
        }
        uint32_t ev = EPOLLRDHUP;
        if (!c->read_paused || c->write_wants_read)
                ev |= EPOLLIN;
        if (ag_napi_conn_pending(c) > 0 || c->read_wants_write || c->mode == C_HANDSHAKE)
                ev |= EPOLLOUT;
        if (c->eof && !c->write_wants_read)
                ev &= ~(uint32_t)(EPOLLIN | EPOLLRDHUP);
        if (c->mode == C_HANDSHAKE)
                ev = EPOLLIN | (c->read_wants_write ? EPOLLOUT : 0);
        ag_io_set_events(c->io, ev, NULL);
}

static void on_conn_io(struct ag_io *io, int fd, uint32_t events, void *data)
{
        (void)io;
        (void)fd;
        struct conn *c = data;
        if (c->mode == C_HANDSHAKE) {
                ERR_clear_error();
                int r = SSL_accept(c->ssl);
                if (r == 1) {
                        c->mode = C_HEAD;
                        c->read_wants_write = false;
                        ag_napi_head_init(&c->hp, &c->req);
                } else {
                        int e = SSL_get_error(c->ssl, r);
                        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
                                c->read_wants_write = e == SSL_ERROR_WANT_WRITE;
                        } else {
                                unsigned long le = ERR_peek_last_error();
                                char why[256] = "connection closed";
                                if (le != 0)
                                        ERR_error_string_n(le, why, sizeof(why));
                                log_v(3, "node API: TLS handshake failed: %s", why);
                                c->dead = true;
                        }
                        ag_napi_conn_update(c);
                        return;
                }
        }
        if ((events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) && c->read_paused &&
            !c->write_wants_read) {
                /* it went away while we were not reading from it */
                log_v(3, "node API: a client went away");
                c->dead = true;
                ag_napi_conn_update(c);
                return;
        }
        if (c->write_wants_read || c->read_wants_write)
                conn_flush(c);
        if (!c->dead)
                ag_napi_conn_read(c);
        ag_napi_conn_update(c);
}

static bool same_address(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
        if (a->ss_family != b->ss_family)
                return false;
        if (a->ss_family == AF_INET)
                return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
                       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
        if (a->ss_family == AF_INET6)
                return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                              &((const struct sockaddr_in6 *)b)->sin6_addr,
                              sizeof(struct in6_addr)) == 0;
        return false;
}

/* True (and logged once in a while) when a new connection from peer would
 * go over AG_NAPI_MAX_CONNS or AG_NAPI_MAX_CONNS_PER_PEER. */
static bool over_cap(struct ag_napi *s, const struct sockaddr_storage *peer, socklen_t len)
{
        static uint64_t refused;
        size_t from_peer = 0;
        for (const struct conn *c = s->conns; c != NULL && len > 0; c = c->next)
                from_peer += !c->dead && same_address(&c->peer, peer);
        bool over = s->n_conns >= s->max_conns || from_peer >= AG_NAPI_MAX_CONNS_PER_PEER;
        if (over && refused++ % 1000 == 0)
                log_warning(
                    "node API: refusing connections: %zu connections (at most %zu), %zu from "
                    "one client address (at most %d); %llu refused so far",
                    s->n_conns, s->max_conns, from_peer, AG_NAPI_MAX_CONNS_PER_PEER,
                    (unsigned long long)refused);
        return over;
}

static void on_accept(struct ag_io *io, int fd, uint32_t events, void *data)
{
        (void)io;
        (void)events;
        struct ag_napi *s = data;
        for (int i = 0; i < 16; i++) {
                struct sockaddr_storage peer;
                socklen_t peer_len = sizeof(peer);
                int cfd =
                    accept4(fd, (struct sockaddr *)&peer, &peer_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (cfd < 0) {
                        if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                                log_warning("node API: accept: %s", strerror(errno));
                        return;
                }
                if (over_cap(s, &peer, peer_len)) {
                        close(cfd);
                        continue;
                }
                /* Each small write goes out at once, as Go's listeners (the
                 * kubelet's) have it. With Nagle the answer to a request
                 * sent right after the TLS 1.3 handshake waited for the
                 * client's delayed ACK of the session tickets: every exec,
                 * attach and port-forward upgrade, logs and stats answer
                 * took 40 ms more (bench.sh figure 5, the exec's upgrade:
                 * 45.5 ms from the dial, 2.1 of it the handshake). */
                int one = 1;
                if (peer.ss_family == AF_INET || peer.ss_family == AF_INET6)
                        (void)setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                struct cb_error err = {0};
                struct conn *c = calloc(1, sizeof(*c));
                if (c == NULL) {
                        close(cfd);
                        return;
                }
                c->srv = s;
                c->fd = cfd;
                c->peer = peer;
                c->peer_len = peer_len;
                c->mode = C_HANDSHAKE;
                c->ssl = SSL_new(s->ssl_ctx);
                if (c->ssl != NULL)
                        SSL_set_app_data(c->ssl, c);
                if (c->ssl == NULL || SSL_set_fd(c->ssl, cfd) != 1 ||
                    (c->io = ag_io_new(s->loop, cfd, EPOLLIN, on_conn_io, c, &err)) == NULL ||
                    (c->timer = ag_timer_new(s->loop, stream_timeout, c, &err)) == NULL) {
                        log_warning("node API: cannot serve a connection: %s",
                                    err.msg[0] ? err.msg : "TLS");
                        if (c->ssl != NULL)
                                SSL_free(c->ssl);
                        ag_io_free(c->io);
                        close(cfd);
                        free(c);
                        continue;
                }
                ag_timer_arm(c->timer, HEAD_TIMEOUT_MS);
                c->next = s->conns;
                s->conns = c;
                s->n_conns++;
        }
}

/* ---- authentication ---- */

static int verify_any(int preverify_ok, X509_STORE_CTX *ctx)
{
        (void)preverify_ok;
        (void)ctx;
        /* decided per request from SSL_get_verify_result(): see above */
        return 1;
}

static void add_group(struct ag_napi_who *id, const char *g)
{
        if (id->groups == NULL)
                id->groups = cJSON_CreateArray();
        const cJSON *e;
        cJSON_ArrayForEach(e, id->groups)
        {
                if (cJSON_IsString(e) && strcmp(e->valuestring, g) == 0)
                        return;
        }
        cJSON_AddItemToArray(id->groups, cJSON_CreateString(g));
}

static void set_user(struct conn *c, const char *user)
{
        snprintf(c->id.user, sizeof(c->id.user), "%s", user);
        cJSON_Delete(c->id.groups);
        c->id.groups = NULL;
}

static void authenticated(struct conn *c)
{
        /* the apiserver's and the kubelet's AuthenticatedGroupAdder */
        add_group(&c->id, "system:authenticated");
        snprintf(c->who, sizeof(c->who), "%s", c->id.user);
}

static void on_token_review(void *data, enum ag_napi_verdict v);

/* The kubelet's authenticators: a client certificate of the client CA
 * (user CN, groups O), a bearer token (the token file, else a
 * TokenReview), else anonymous when enabled and no credential came at all.
 * 0 authenticated (c->id, c->who), 1 waiting for a TokenReview, else 401. */
static int authenticate(struct conn *c)
{
        struct ag_napi *s = c->srv;
        bool credential = false;
        if (s->cfg.client_ca_file != NULL) {
                X509 *peer = SSL_get1_peer_certificate(c->ssl);
                if (peer != NULL) {
                        credential = true;
                        long vr = SSL_get_verify_result(c->ssl);
                        if (vr == X509_V_OK) {
                                X509_NAME *sn = X509_get_subject_name(peer);
                                char cn[256] = "";
                                X509_NAME_get_text_by_NID(sn, NID_commonName, cn, sizeof(cn));
                                set_user(c, cn);
                                for (int i = -1; (i = X509_NAME_get_index_by_NID(
                                                      sn, NID_organizationName, i)) >= 0;) {
                                        ASN1_STRING *d =
                                            X509_NAME_ENTRY_get_data(X509_NAME_get_entry(sn, i));
                                        unsigned char *u = NULL;
                                        if (ASN1_STRING_to_UTF8(&u, d) >= 0 && u != NULL)
                                                add_group(&c->id, (const char *)u);
                                        OPENSSL_free(u);
                                }
                                X509_free(peer);
                                authenticated(c);
                                return 0;
                        }
                        log_v(2, "node API: client certificate refused: %s",
                              X509_verify_cert_error_string(vr));
                        X509_free(peer);
                }
        }
        const char *auth = c->req.authorization;
        if (auth != NULL)
                credential = true;
        if (auth != NULL && strncasecmp(auth, "Bearer ", 7) == 0) {
                const char *token = auth + 7;
                while (*token == ' ')
                        token++;
                const char *user = s->tokens != NULL ? ag_napi_tokens_user(s->tokens, token) : NULL;
                if (user != NULL) {
                        set_user(c, user);
                        authenticated(c);
                        return 0;
                }
                switch (
                    ag_napi_review_token(s->authz, token, &c->id, on_token_review, c, &c->review)) {
                case AG_NAPI_YES:
                        authenticated(c);
                        return 0;
                case AG_NAPI_PENDING:
                        return 1;
                default:
                        return 401;
                }
        }
        if (!credential && s->cfg.anonymous) {
                set_user(c, "system:anonymous");
                add_group(&c->id, "system:unauthenticated");
                snprintf(c->who, sizeof(c->who), "%s", c->id.user);
                return 0;
        }
        return 401;
}

static void stream_timeout(struct ag_timer *t, void *data)
{
        (void)t;
        struct conn *c = data;
        if (c->ex != NULL && c->ex->spdy && !c->ex->started) {
                log_v(2, "node API: timed out waiting for client to create streams");
                c->dead = true;
                ag_napi_conn_update(c);
                return;
        }
        close_timeout(t, data);
}

/* ---- authentication and authorization of a request ---- */

/* The kubelet answers these in plain text (not a Status). */
static void respond_text(struct conn *c, int code, const char *msg)
{
        log_v(2, "node API: %d %s", code, msg);
        ag_napi_respond(c, code, "text/plain; charset=utf-8", strdup(msg));
}

/* Serves the request with the bytes read after its head. */
static void proceed(struct conn *c)
{
        _cleanup_free_ uint8_t *held = c->held;
        size_t n = c->held_len;
        c->held = NULL;
        c->held_len = 0;
        c->mode = C_HEAD;
        ag_napi_serve_request(c, held, n);
}

static void request_attrs(struct conn *c, struct ag_napi_attrs *a)
{
        char path[2048] = "";
        const char *u = c->req.url != NULL ? c->req.url : "";
        size_t pl = strcspn(u, "?");
        if (pl < sizeof(path)) {
                memcpy(path, u, pl);
                path[pl] = '\0';
        }
        ag_napi_attrs_of(c->req.method, path, a);
}

static void access_verdict(struct conn *c, enum ag_napi_verdict v)
{
        struct ag_napi_attrs a;
        request_attrs(c, &a);
        char msg[600];
        switch (v) {
        case AG_NAPI_YES:
                return proceed(c);
        case AG_NAPI_NO:
                ag_napi_authz_text(msg, sizeof(msg), "Forbidden", c->id.user, &a);
                return respond_text(c, 403, msg);
        default:
                ag_napi_authz_text(msg, sizeof(msg), "Authorization error", c->id.user, &a);
                return respond_text(c, 500, msg);
        }
}

static void on_access_review(void *data, enum ag_napi_verdict v)
{
        struct conn *c = data;
        c->review = NULL; /* freed by the reviewer */
        access_verdict(c, v);
        ag_napi_conn_update(c);
}

static void authorize(struct conn *c)
{
        struct ag_napi_attrs a;
        request_attrs(c, &a);
        enum ag_napi_verdict v =
            ag_napi_review_access(c->srv->authz, &c->id, &a, on_access_review, c, &c->review);
        if (v != AG_NAPI_PENDING)
                access_verdict(c, v);
}

static void on_token_review(void *data, enum ag_napi_verdict v)
{
        struct conn *c = data;
        c->review = NULL;
        if (v == AG_NAPI_YES) {
                authenticated(c);
                authorize(c);
        } else {
                ag_napi_respond_error(c, 401, "Unauthorized");
        }
        ag_napi_conn_update(c);
}

static void handle_request(struct conn *c, const uint8_t *rest, size_t rest_len)
{
        ag_timer_disarm(c->timer);
        if (rest_len > 0) {
                c->held = malloc(rest_len);
                if (c->held == NULL)
                        return ag_napi_respond_error(c, 500, "out of memory");
                memcpy(c->held, rest, rest_len);
                c->held_len = rest_len;
        }
        c->mode = C_AUTH;
        int code = authenticate(c);
        if (code == 1)
                return; /* on_token_review goes on */
        if (code != 0)
                return ag_napi_respond_error(c, code, "Unauthorized");
        authorize(c);
}

/* ---- dispatch ---- */

void ag_napi_conn_input(struct conn *c, const uint8_t *buf, size_t len)
{
        if (c->dead)
                return;
        if (buf == NULL) { /* the client closed */
                if (c->mode != C_RESPONSE)
                        c->dead = true;
                return;
        }
        switch (c->mode) {
        case C_HEAD: {
                size_t used;
                const char *why = NULL;
                switch (ag_napi_head_feed(&c->hp, &c->req, (const char *)buf, len, &used, &why)) {
                case AG_NAPI_HEAD_MORE:
                        return;
                case AG_NAPI_HEAD_BAD:
                        ag_napi_respond_error(c, 400, why);
                        return;
                case AG_NAPI_HEAD_TOO_LONG:
                        ag_napi_respond_error(c, 431, "the request head is too large");
                        return;
                case AG_NAPI_HEAD_DONE:
                        break;
                }
                handle_request(c, buf + used, len - used);
                return;
        }
        case C_AUTH: {
                /* a client that does not wait for the answer: keep it */
                if (c->held_len + len > AG_NAPI_HEAD_MAX) {
                        c->dead = true;
                        return;
                }
                uint8_t *n = realloc(c->held, c->held_len + len);
                if (n == NULL) {
                        c->dead = true;
                        return;
                }
                memcpy(n + c->held_len, buf, len);
                c->held = n;
                c->held_len += len;
                return;
        }
        case C_WS:
                ag_napi_ws_input(c, buf, len);
                return;
        case C_SPDY:
                ag_napi_spdy_input(c, buf, len);
                return;
        default:
                /* a body, or anything after a plain request: never parsed
                 * (the response closes the connection), dropped up to
                 * AG_NAPI_DISCARD_MAX, then the connection is closed */
                c->discarded += len;
                if (c->discarded > AG_NAPI_DISCARD_MAX) {
                        log_v(2,
                              "node API: %s sent more than %d bytes after its request "
                              "head (%s %.100s): closed",
                              c->who[0] ? c->who : "a client", AG_NAPI_DISCARD_MAX, c->req.method,
                              c->req.url ? c->req.url : "");
                        c->dead = true;
                }
                return;
        }
}

static void conn_written(struct conn *c)
{
        ag_napi_logs_written(c->log);
        if (c->ex != NULL)
                ag_napi_exec_update_reading(c->ex);
        if (c->pf != NULL)
                ag_napi_pfwd_written(c->pf);
}

static void conn_free(struct conn *c)
{
        struct conn **pp = &c->srv->conns;
        while (*pp != NULL && *pp != c)
                pp = &(*pp)->next;
        if (*pp == c) {
                *pp = c->next;
                c->srv->n_conns--;
        }
        ag_napi_review_cancel(c->review);
        cJSON_Delete(c->id.groups);
        free(c->held);
        ag_napi_exec_free(c->ex);
        ag_napi_pfwd_free(c->pf);
        ag_napi_logstream_free(c->log);
        if (c->ws != NULL)
                wslay_event_context_free(c->ws);
        ag_spdy_session_free(c->spdy);
        ag_io_free(c->io);
        if (c->timer != NULL)
                ag_timer_free(c->timer);
        if (c->ssl != NULL)
                SSL_free(c->ssl);
        close(c->fd);
        ag_napi_head_clear(&c->req);
        free(c->out);
        free(c);
}

/* ---- the server ---- */

static int listen_on(const char *address, int port, int *ret_fd, int *ret_port,
                     struct cb_error *err)
{
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        const char *addr = address != NULL ? address : "0.0.0.0";
        if (inet_pton(AF_INET, addr, &a.sin_addr) != 1)
                return cb_error_set(err, EINVAL,
                                    "--address \"%s\" is not an IPv4 address (use 0.0.0.0 for "
                                    "every address)",
                                    addr);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return cb_error_set(err, errno, "socket");
        int one = 1;
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        /* the kernel's limit (net.core.somaxconn, 4096 by default), as Go's
         * net.Listen gives the kubelet: with 128, a burst of connections
         * (a flood the caps below close at once, or many kubectl exec)
         * overflowed the queue and every dropped SYN cost its client a
         * 1 s retransmit */
        if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 4096) < 0) {
                int e = errno;
                close(fd);
                return cb_error_set(err, e, "node API: cannot serve HTTPS on %s:%d", addr, port);
        }
        socklen_t len = sizeof(a);
        if (getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
                int e = errno;
                close(fd);
                return cb_error_set(err, e, "getsockname");
        }
        *ret_fd = fd;
        *ret_port = ntohs(a.sin_port);
        return 0;
}

static void peer_text(const struct conn *c, char *buf, size_t len)
{
        char ip[INET6_ADDRSTRLEN] = "?";
        int port = 0;
        if (c->peer.ss_family == AF_INET) {
                const struct sockaddr_in *in = (const struct sockaddr_in *)&c->peer;
                inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
                port = ntohs(in->sin_port);
                snprintf(buf, len, "%s:%d", ip, port);
        } else if (c->peer.ss_family == AF_INET6) {
                const struct sockaddr_in6 *in = (const struct sockaddr_in6 *)&c->peer;
                inet_ntop(AF_INET6, &in->sin6_addr, ip, sizeof(ip));
                port = ntohs(in->sin6_port);
                snprintf(buf, len, "[%s]:%d", ip, port);
        } else {
                snprintf(buf, len, "?");
        }
}

/* The kubelet's GetCertificate with serverTLSBootstrap: the certificate
 * manager's current pair, or a failed handshake (the client sees an
 * internal_error alert, as from Go's TLS server). */
static int serving_cert_cb(SSL *ssl, void *arg)
{
        struct ag_napi *s = arg;
        const char *why = NULL;
        if (s->srv_cert == NULL) {
                why = "no serving certificate available for the kubelet";
        } else {
                time_t now = (time_t)cb_wall_now();
                if (X509_cmp_time(X509_get0_notAfter(s->srv_cert), &now) < 0)
                        why = "no serving certificate available for the kubelet (the current "
                              "one expired)";
        }
        if (why == NULL && SSL_use_cert_and_key(ssl, s->srv_cert, s->srv_key, s->srv_chain, 1) == 1)
                return 1;
        struct conn *c = SSL_get_app_data(ssl);
        char peer[80] = "?";
        if (c != NULL)
                peer_text(c, peer, sizeof(peer));
        log_info("http: TLS handshake error from %s: %s", peer,
                 why ? why : "the serving certificate cannot be used");
        return 0;
}

int ag_napi_set_serving_cert(struct ag_napi *s, const char *cert_pem, const char *key_pem,
                             struct cb_error *err)
{
        BIO *b = BIO_new_mem_buf(cert_pem, -1);
        X509 *leaf = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
        STACK_OF(X509) *chain = leaf ? sk_X509_new_null() : NULL;
        X509 *x;
        while (chain != NULL && (x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL)
                if (sk_X509_push(chain, x) <= 0)
                        X509_free(x);
        BIO_free(b);
        ERR_clear_error();
        b = BIO_new_mem_buf(key_pem, -1);
        EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
        BIO_free(b);
        const char *bad = leaf == NULL || chain == NULL ? "no certificate"
                          : k == NULL                   ? "no private key"
                          : X509_check_private_key(leaf, k) != 1
                              ? "the private key does not match the certificate"
                              : NULL;
        ERR_clear_error();
        if (bad != NULL) {
                X509_free(leaf);
                sk_X509_pop_free(chain, X509_free);
                EVP_PKEY_free(k);
                return cb_error_set(err, 0, "node API: serving certificate: %s", bad);
        }
        /* Handshakes done hold their own references. */
        X509_free(s->srv_cert);
        sk_X509_pop_free(s->srv_chain, X509_free);
        EVP_PKEY_free(s->srv_key);
        s->srv_cert = leaf;
        s->srv_chain = chain;
        s->srv_key = k;
        return 0;
}

static int tls_context(struct ag_napi *s, struct cb_error *err)
{
        s->ssl_ctx = SSL_CTX_new(TLS_server_method());
        if (s->ssl_ctx == NULL)
                return cb_error_set(err, ENOMEM, "node API: TLS context");
        SSL_CTX_set_min_proto_version(s->ssl_ctx, TLS1_2_VERSION);
        if (SSL_CTX_set_cipher_list(s->ssl_ctx, TLS12_CIPHERS) != 1)
                return cb_error_set(err, EINVAL, "node API: the TLS 1.2 cipher list");
        SSL_CTX_set_mode(s->ssl_ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                                         SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                                         SSL_MODE_RELEASE_BUFFERS);
        if (s->cfg.serving_cert_managed) {
                SSL_CTX_set_cert_cb(s->ssl_ctx, serving_cert_cb, s);
        } else if (SSL_CTX_use_certificate_chain_file(s->ssl_ctx, s->cert_path) != 1 ||
                   SSL_CTX_use_PrivateKey_file(s->ssl_ctx, s->key_path, SSL_FILETYPE_PEM) != 1 ||
                   SSL_CTX_check_private_key(s->ssl_ctx) != 1) {
                char why[256] = "";
                ERR_error_string_n(ERR_get_error(), why, sizeof(why));
                return cb_error_set(err, EINVAL,
                                    "node API: the certificate %s / key %s are unusable: %s",
                                    s->cert_path, s->key_path, why);
        }
        if (s->cfg.client_ca_file != NULL) {
                STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(s->cfg.client_ca_file);
                if (names == NULL ||
                    !SSL_CTX_load_verify_locations(s->ssl_ctx, s->cfg.client_ca_file, NULL)) {
                        if (names != NULL)
                                sk_X509_NAME_pop_free(names, X509_NAME_free);
                        return cb_error_set(err, EINVAL,
                                            "--client-ca-file %s: no usable CA certificate",
                                            s->cfg.client_ca_file);
                }
                SSL_CTX_set_client_CA_list(s->ssl_ctx, names);
                SSL_CTX_set_verify(s->ssl_ctx, SSL_VERIFY_PEER, verify_any);
        }
        return 0;
}

int ag_napi_start(struct ag_loop *loop, const struct ag_napi_config *cfg, struct ag_napi **ret,
                  struct cb_error *err)
{
        if (cfg->client_ca_file == NULL && cfg->token_file == NULL && !cfg->authn_webhook &&
            !cfg->anonymous)
                return cb_error_set(err, EINVAL,
                                    "the node API needs --client-ca-file, "
                                    "--authentication-token-file, --authentication-token-webhook "
                                    "or --anonymous-auth");
        struct ag_napi *s = calloc(1, sizeof(*s));
        if (s == NULL)
                return cb_error_set(err, ENOMEM, "node API");
        s->loop = loop;
        s->cfg = *cfg;
        s->listen_fd = -1;
        /* Half the fd limit at most: the agent's own work needs the rest. */
        struct rlimit rl;
        s->max_conns = AG_NAPI_MAX_CONNS;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
            rl.rlim_cur / 2 < s->max_conns)
                s->max_conns = rl.rlim_cur / 2 > 16 ? (size_t)(rl.rlim_cur / 2) : 16;
        if (cfg->token_file != NULL && ag_napi_tokens_load(cfg->token_file, &s->tokens, err) < 0)
                goto fail;
        struct ag_napi_authz_config zc = {
            .authn_webhook = cfg->authn_webhook,
            .authn_ttl_ms = cfg->authn_ttl_ms,
            .authz_webhook = cfg->authz_webhook,
            .authz_allowed_ttl_ms = cfg->authz_allowed_ttl_ms,
            .authz_denied_ttl_ms = cfg->authz_denied_ttl_ms,
            .node_name = cfg->node_name,
        };
        if (ag_napi_authz_new(cfg->api, &zc, &s->authz, err) < 0)
                goto fail;
        if (cfg->client_ca_file != NULL && access(cfg->client_ca_file, R_OK) < 0) {
                cb_error_set(err, errno, "--client-ca-file %s", cfg->client_ca_file);
                goto fail;
        }
        if ((cfg->tls_cert_file == NULL) != (cfg->tls_key_file == NULL)) {
                cb_error_set(err, EINVAL, "--tls-cert-file and --tls-private-key-file go together");
                goto fail;
        }
        if (cfg->serving_cert_managed) {
                /* the certificate manager hands the pair over */
        } else if (cfg->tls_cert_file != NULL) {
                snprintf(s->cert_path, sizeof(s->cert_path), "%s", cfg->tls_cert_file);
                snprintf(s->key_path, sizeof(s->key_path), "%s", cfg->tls_key_file);
        } else {
                /* a fresh --root-dir may not exist yet */
                if (cb_mkdir_p(cfg->cert_dir, 0755, 0700, err) < 0)
                        goto fail;
                snprintf(s->cert_path, sizeof(s->cert_path), "%s/kubelet.crt", cfg->cert_dir);
                snprintf(s->key_path, sizeof(s->key_path), "%s/kubelet.key", cfg->cert_dir);
                if (ag_napi_ensure_cert(s->cert_path, s->key_path, cfg->node_ip, cfg->hostname,
                                        err) < 0) {
                        cb_error_prefix(err, "serving certificate %s", s->cert_path);
                        goto fail;
                }
        }
        if (tls_context(s, err) < 0)
                goto fail;
        if (listen_on(cfg->address, cfg->port, &s->listen_fd, &s->port, err) < 0)
                goto fail;
        s->listen_io = ag_io_new(loop, s->listen_fd, EPOLLIN, on_accept, s, err);
        if (s->listen_io == NULL)
                goto fail;
        *ret = s;
        return 0;
fail:
        ag_napi_free(s);
        return -1;
}

void ag_napi_free(struct ag_napi *s)
{
        if (s == NULL)
                return;
        while (s->conns != NULL)
                conn_free(s->conns);
        ag_napi_reapers_free(s);
        ag_io_free(s->listen_io);
        if (s->listen_fd >= 0)
                close(s->listen_fd);
        if (s->ssl_ctx != NULL)
                SSL_CTX_free(s->ssl_ctx);
        X509_free(s->srv_cert);
        sk_X509_pop_free(s->srv_chain, X509_free);
        EVP_PKEY_free(s->srv_key);
        ag_napi_tokens_free(s->tokens);
        ag_napi_authz_free(s->authz); /* after the connections: they cancel their reviews */
        free(s);
}

int ag_napi_port(const struct ag_napi *s)
{
        return s->port;
}
