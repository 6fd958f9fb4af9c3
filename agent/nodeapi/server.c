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

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <http_parser.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <wslay/wslay.h>

#include "agent/client/apiclient.h"
#include "agent/core/log.h"
#include "agent/nodeapi/authz.h"
#include "agent/nodeapi/proto.h"
#include "agent/pods/podlogs.h"
#include "agent/nodeapi/spdy.h"
#include "lib/cleanup.h"
#include "lib/file.h"
#include "runtime/attach.h"
#include "runtime/container.h"
#include "runtime/sandbox.h"

#define MAX_ARGS        256
#define MAX_HEAD        (64 * 1024) /* request line + headers */
#define LOG_CHUNK       65536
#define OUT_HIGH        (1 << 20) /* queued output above which sources are not read */
#define STDIN_HIGH      (1 << 20)
#define READ_CHUNK      32768
#define HEAD_TIMEOUT_MS 30000 /* TLS handshake + request head */
#define CLOSE_WAIT_MS   5000  /* a WebSocket close's answer */
/* the kubelet's streamCreationTimeout default: the streams of an exec or
 * a port-forward request must all be open within it */
#define STREAM_CREATION_MS 30000

struct ag_napi {
        struct ag_loop *loop;
        struct ag_napi_config cfg;
        SSL_CTX *ssl_ctx;
        int listen_fd;
        struct ag_io *listen_io;
        struct ag_napi_tokens *tokens;
        struct ag_napi_authz *authz;
        char cert_path[4096], key_path[4096];
        int port;
        struct conn *conns;
        struct reaper *reapers; /* killed execs waiting to be reaped */
};

enum conn_mode {
        C_HANDSHAKE, /* TLS */
        C_HEAD,      /* reading the request head */
        C_AUTH,      /* waiting for a TokenReview or SubjectAccessReview */
        C_RESPONSE,  /* a whole response queued: close once written */
        C_LOGS,      /* a streamed log */
        C_WS,        /* WebSocket: exec/attach, or the SPDY tunnel */
        C_SPDY,      /* SPDY: exec/attach or port-forward */
};

struct request {
        char method[16];
        char *url; /* path?query as sent */
        size_t url_len;
        /* headers of interest (values of repeated headers joined by ',') */
        char *upgrade, *connection, *authorization, *ws_key, *ws_version, *ws_protocol,
            *stream_protocol;
        char *field; /* the header being read */
        size_t field_len;
        char **value; /* where its value goes, NULL: not of interest */
        bool value_started;
        bool head_done, upgrade_asked;
        size_t head_bytes;
};

struct conn {
        struct conn *next;
        struct ag_napi *srv;
        int fd;
        SSL *ssl;
        struct ag_io *io;
        struct ag_timer *timer;
        enum conn_mode mode;
        bool read_paused, write_wants_read, read_wants_write, eof, close_after_flush, dead;
        uint8_t *out;
        size_t out_len, out_off, out_cap;
        http_parser hp;
        struct request req;
        char who[256];
        struct ag_napi_who id;         /* user and groups, for authorization */
        struct ag_napi_review *review; /* the review waited for in C_AUTH */
        uint8_t *held;                 /* bytes after the head, read meanwhile */
        size_t held_len;
        struct logstream *log;
        struct exec *ex;
        struct pfwd *pf;
        wslay_event_context_ptr ws;
        const uint8_t *ws_in; /* the bytes wslay's recv callback hands out */
        size_t ws_in_len;
        bool ws_tunnel; /* the WebSocket carries SPDY */
        struct spdy_session *spdy;
};

static void conn_free(struct conn *c);
static void conn_update(struct conn *c);
static void conn_flush(struct conn *c);
static void conn_input(struct conn *c, const uint8_t *buf, size_t len);
static void conn_written(struct conn *c);
static void stream_timeout(struct ag_timer *t, void *data);

/* ---- small helpers ---- */

static int64_t wall_ns(void)
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

static int set_nonblock(int fd)
{
        int fl = fcntl(fd, F_GETFL);
        return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* ---- the connection: TLS, output buffer, events ---- */

/* Queues bytes for the client. Never fails the caller: without memory the
 * connection is dropped. */
static void conn_write(struct conn *c, const void *buf, size_t len)
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

static size_t conn_pending(const struct conn *c)
{
        return c->out_len - c->out_off;
}

static void conn_printf(struct conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void conn_printf(struct conn *c, const char *fmt, ...)
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
        conn_write(c, buf, (size_t)n);
}

/* A response head; len < 0: no Content-Length, the body ends with the
 * connection. Every response closes its connection. */
static void conn_head(struct conn *c, int code, const char *ctype, long long len)
{
        conn_printf(c, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nCache-Control: no-cache, private\r\n",
                    code, ag_http_reason_phrase(code), ctype);
        if (len >= 0)
                conn_printf(c, "Content-Length: %lld\r\n", len);
        conn_printf(c, "Connection: close\r\n\r\n");
}

static void respond(struct conn *c, int code, const char *ctype, char *body)
{
        size_t len = body != NULL ? strlen(body) : 0;
        conn_head(c, code, ctype, (long long)len);
        if (strcmp(c->req.method, "HEAD") != 0)
                conn_write(c, body, len);
        free(body);
        c->mode = C_RESPONSE;
        c->close_after_flush = true;
}

static void respond_error(struct conn *c, int code, const char *msg)
{
        log_v(3, "node API: %d %s", code, msg);
        respond(c, code, "application/json", status_json(code, reason_of(code), msg));
}

static void close_timeout(struct ag_timer *t, void *data)
{
        (void)t;
        struct conn *c = data;
        log_v(3, "node API: a connection timed out (%s)",
              c->mode == C_HANDSHAKE || c->mode == C_HEAD ? "no request" : "no close answer");
        c->dead = true;
        conn_update(c);
}

/* Reads what TLS has for us, as long as the connection wants input. */
static void conn_read(struct conn *c)
{
        uint8_t buf[16384];
        for (int i = 0; i < 64 && !c->dead && !c->eof && !c->read_paused; i++) {
                ERR_clear_error();
                int n = SSL_read(c->ssl, buf, sizeof(buf));
                if (n > 0) {
                        c->read_wants_write = false;
                        conn_input(c, buf, (size_t)n);
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
                conn_input(c, NULL, 0);
                return;
        }
}

static void conn_flush(struct conn *c)
{
        while (!c->dead && conn_pending(c) > 0) {
                ERR_clear_error();
                size_t n = conn_pending(c);
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
        if (conn_pending(c) == 0) {
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
static void conn_update(struct conn *c)
{
        if (!c->dead && c->mode != C_HANDSHAKE) {
                size_t before = conn_pending(c);
                conn_flush(c);
                /* only a drop can resume a source that stopped for a slow
                 * client (each stops with output pending): no reads or
                 * epoll changes on every event */
                if (!c->dead && before > 0 && conn_pending(c) < before)
                        conn_written(c);
                conn_flush(c);
        }
        if (!c->dead && c->close_after_flush && conn_pending(c) == 0) {
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
        if (conn_pending(c) > 0 || c->read_wants_write || c->mode == C_HANDSHAKE)
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
                        http_parser_init(&c->hp, HTTP_REQUEST);
                        c->hp.data = c;
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
                        conn_update(c);
                        return;
                }
        }
        if ((events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) && c->read_paused &&
            !c->write_wants_read) {
                /* it went away while we were not reading from it */
                log_v(3, "node API: a client went away");
                c->dead = true;
                conn_update(c);
                return;
        }
        if (c->write_wants_read || c->read_wants_write)
                conn_flush(c);
        if (!c->dead)
                conn_read(c);
        conn_update(c);
}

static void on_accept(struct ag_io *io, int fd, uint32_t events, void *data)
{
        (void)io;
        (void)events;
        struct ag_napi *s = data;
        for (int i = 0; i < 16; i++) {
                int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (cfd < 0) {
                        if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                                log_warning("node API: accept: %s", strerror(errno));
                        return;
                }
                struct cb_error err = {0};
                struct conn *c = calloc(1, sizeof(*c));
                if (c == NULL) {
                        close(cfd);
                        return;
                }
                c->srv = s;
                c->fd = cfd;
                c->mode = C_HANDSHAKE;
                c->ssl = SSL_new(s->ssl_ctx);
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
        }
}

/* ---- the request head ---- */

static void req_clear(struct request *r)
{
        free(r->url);
        free(r->upgrade);
        free(r->connection);
        free(r->authorization);
        free(r->ws_key);
        free(r->ws_version);
        free(r->ws_protocol);
        free(r->stream_protocol);
        free(r->field);
        memset(r, 0, sizeof(*r));
}

static int append(char **dst, size_t *len, const char *at, size_t n)
{
        size_t have = *dst != NULL ? (len != NULL ? *len : strlen(*dst)) : 0;
        char *p = realloc(*dst, have + n + 1);
        if (p == NULL)
                return -1;
        memcpy(p + have, at, n);
        p[have + n] = '\0';
        *dst = p;
        if (len != NULL)
                *len = have + n;
        return 0;
}

static int on_url(http_parser *p, const char *at, size_t n)
{
        struct conn *c = p->data;
        return append(&c->req.url, &c->req.url_len, at, n);
}

static int on_header_field(http_parser *p, const char *at, size_t n)
{
        struct conn *c = p->data;
        struct request *r = &c->req;
        if (r->value != NULL || r->value_started) {
                free(r->field);
                r->field = NULL;
                r->field_len = 0;
                r->value = NULL;
                r->value_started = false;
        }
        return append(&r->field, &r->field_len, at, n);
}

static int on_header_value(http_parser *p, const char *at, size_t n)
{
        struct conn *c = p->data;
        struct request *r = &c->req;
        if (!r->value_started) {
                static const struct {
                        const char *name;
                        size_t off;
                } wanted[] = {
                    {"upgrade", offsetof(struct request, upgrade)},
                    {"connection", offsetof(struct request, connection)},
                    {"authorization", offsetof(struct request, authorization)},
                    {"sec-websocket-key", offsetof(struct request, ws_key)},
                    {"sec-websocket-version", offsetof(struct request, ws_version)},
                    {"sec-websocket-protocol", offsetof(struct request, ws_protocol)},
                    {"x-stream-protocol-version", offsetof(struct request, stream_protocol)},
                };
                r->value = NULL;
                for (size_t i = 0; i < CB_ARRAY_SIZE(wanted); i++)
                        if (r->field != NULL && strcasecmp(r->field, wanted[i].name) == 0)
                                r->value = (char **)((char *)r + wanted[i].off);
                r->value_started = true;
                /* a repeated header: its values join with ',' */
                if (r->value != NULL && *r->value != NULL && append(r->value, NULL, ",", 1) < 0)
                        return -1;
        }
        if (r->value == NULL)
                return 0;
        return append(r->value, NULL, at, n);
}

static int on_headers_complete(http_parser *p)
{
        struct conn *c = p->data;
        snprintf(c->req.method, sizeof(c->req.method), "%s",
                 http_method_str((enum http_method)p->method));
        c->req.head_done = true;
        /* no request of ours has a body worth reading: skip it */
        return p->upgrade ? 0 : 1;
}

static int on_message_complete(http_parser *p)
{
        (void)p;
        return 0;
}

static const http_parser_settings parser_settings = {
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_message_complete = on_message_complete,
};

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
/* ---- finding pods and containers ---- */

struct found {
        cJSON *list;      /* owned */
        const cJSON *pod; /* in list */
        const char *uid;  /* in list */
        const char *cid;  /* runtime id of the current instance, NULL when none */
        bool running;     /* the current instance runs */
        char msg[1024];
};

static const cJSON *jget(const cJSON *o, const char *k)
{
        return cJSON_GetObjectItemCaseSensitive(o, k);
}

static const char *jstr(const cJSON *o, const char *k)
{
        const cJSON *v = jget(o, k);
        return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool in_spec(const cJSON *pod, const char *name)
{
        const cJSON *spec = jget(pod, "spec");
        static const char *const lists[] = {"containers", "initContainers", "ephemeralContainers"};
        for (size_t i = 0; i < CB_ARRAY_SIZE(lists); i++) {
                const cJSON *c;
                cJSON_ArrayForEach(c, jget(spec, lists[i]))
                {
                        const char *n = jstr(c, "name");
                        if (n != NULL && strcmp(n, name) == 0)
                                return true;
                }
        }
        return false;
}

/* 0, or the HTTP status with f->msg. container NULL: the pod only. */
static int find_target(struct ag_napi *s, const struct ag_napi_target *t, const char *container,
                       struct found *f)
{
        memset(f, 0, sizeof(*f));
        f->list = s->cfg.pods != NULL ? s->cfg.pods(s->cfg.data) : NULL;
        const cJSON *item;
        cJSON_ArrayForEach(item, jget(f->list, "items"))
        {
                const cJSON *meta = jget(item, "metadata");
                const char *ns = jstr(meta, "namespace"), *name = jstr(meta, "name");
                if (ns == NULL || name == NULL || strcmp(ns, t->ns) != 0 ||
                    strcmp(name, t->pod) != 0)
                        continue;
                const char *uid = jstr(meta, "uid");
                if (t->uid[0] != '\0' && (uid == NULL || strcmp(uid, t->uid) != 0))
                        continue;
                f->pod = item;
                f->uid = uid;
        }
        if (f->pod == NULL) {
                snprintf(f->msg, sizeof(f->msg), "pod \"%s/%s\" not found on this node", t->ns,
                         t->pod);
                return 404;
        }
        if (container == NULL)
                return 0;
        if (!in_spec(f->pod, container)) {
                snprintf(f->msg, sizeof(f->msg), "container \"%s\" not found in pod \"%s/%s\"",
                         container, t->ns, t->pod);
                return 404;
        }
        const cJSON *st = jget(f->pod, "status");
        static const char *const lists[] = {"containerStatuses", "initContainerStatuses",
                                            "ephemeralContainerStatuses"};
        for (size_t i = 0; i < CB_ARRAY_SIZE(lists); i++) {
                const cJSON *cs;
                cJSON_ArrayForEach(cs, jget(st, lists[i]))
                {
                        const char *n = jstr(cs, "name");
                        if (n == NULL || strcmp(n, container) != 0)
                                continue;
                        const char *cid = jstr(cs, "containerID");
                        if (cid != NULL && strncmp(cid, "cubelet://", 10) == 0)
                                f->cid = cid + 10;
                        f->running = jget(jget(cs, "state"), "running") != NULL;
                }
        }
        return 0;
}

static void found_clear(struct found *f)
{
        cJSON_Delete(f->list);
        f->list = NULL;
}

/* The query's decoded name=value strings. */
struct args {
        char **v;
        size_t n;
};

static void args_free(struct args *a)
{
        for (size_t i = 0; i < a->n; i++)
                free(a->v[i]);
        free(a->v);
        a->v = NULL;
        a->n = 0;
}

static int args_read(struct conn *c, struct args *a, struct cb_error *err)
{
        const char *q = c->req.url != NULL ? strchr(c->req.url, '?') : NULL;
        return ag_query_split(q != NULL ? q + 1 : "", MAX_ARGS, &a->v, &a->n, err);
}

/* ---- /containerLogs ---- */

struct logstream {
        int fd, ino;
        struct ag_io *ino_io;
        struct conn *c;
        struct ag_log_options opts;
        int64_t off, sent;
        bool follow, ended, finished;
        char in[LOG_CHUNK];
        size_t in_len;
};

static void logstream_free(struct logstream *l)
{
        if (l == NULL)
                return;
        ag_io_free(l->ino_io);
        if (l->ino >= 0)
                close(l->ino);
        if (l->fd >= 0)
                close(l->fd);
        free(l);
}

static void write_logs(struct logstream *l);

static void on_log_change(struct ag_io *io, int fd, uint32_t events, void *data)
{
        (void)io;
        (void)events;
        struct logstream *l = data;
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n <= 0)
                        break;
                for (char *p = buf; p < buf + n;) {
                        struct inotify_event *ev = (struct inotify_event *)p;
                        if (ev->mask & (IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF))
                                l->ended = true;
                        p += sizeof(*ev) + ev->len;
                }
        }
        struct conn *c = l->c;
        if (conn_pending(c) < LOG_CHUNK)
                write_logs(l);
        conn_update(c);
}

static void start_logs(struct conn *c, const struct ag_napi_target *t, struct args *a)
{
        struct ag_napi *s = c->srv;
        struct cb_error err = {0};
        struct ag_log_options o;
        if (ag_log_options_parse((const char *const *)a->v, a->n, wall_ns(), &o, &err) < 0)
                return respond_error(c, 400, err.msg);
        struct found f;
        int code = find_target(s, t, t->container, &f);
        if (code != 0) {
                respond_error(c, code, f.msg);
                found_clear(&f);
                return;
        }
        char pod_dir[4096], cdir[4400], path[4500], msg[600], cid[128];
        long newest, prev;
        bool running = f.running;
        snprintf(cid, sizeof(cid), "%s", f.cid != NULL ? f.cid : "");
        if (ag_podlogs_pod_dir(s->cfg.pod_logs_dir, t->ns, t->pod, f.uid, pod_dir,
                               sizeof(pod_dir)) < 0 ||
            snprintf(cdir, sizeof(cdir), "%s/%s", pod_dir, t->container) >= (int)sizeof(cdir) ||
            ag_podlogs_restarts(cdir, &newest, &prev) < 0) {
                snprintf(msg, sizeof(msg), "container \"%s\" in pod \"%s\" is waiting to start",
                         t->container, t->pod);
                found_clear(&f);
                return respond_error(c, 400, msg);
        }
        found_clear(&f);
        if (o.previous && prev < 0) {
                snprintf(msg, sizeof(msg),
                         "previous terminated container \"%s\" in pod \"%s\" not found",
                         t->container, t->pod);
                return respond_error(c, 400, msg);
        }
        snprintf(path, sizeof(path), "%s/%ld.log", cdir, o.previous ? prev : newest);
        struct logstream *l = calloc(1, sizeof(*l));
        if (l == NULL)
                return respond_error(c, 500, "out of memory");
        l->fd = l->ino = -1;
        l->c = c;
        l->opts = o;
        l->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (l->fd < 0) {
                logstream_free(l);
                snprintf(msg, sizeof(msg), "cannot open the log of container \"%s\": %s",
                         t->container, strerror(errno));
                return respond_error(c, 500, msg);
        }
        if (o.has_tail_lines && ag_log_tail_offset(l->fd, o.tail_lines, &l->off, &err) < 0) {
                logstream_free(l);
                return respond_error(c, 500, err.msg);
        }
        /* follow only the running instance, until its log writer closes:
         * the watch comes first, so an exit after the check still ends it */
        l->follow = o.follow && !o.previous && running;
        if (l->follow) {
                l->ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
                if (l->ino < 0 ||
                    inotify_add_watch(l->ino, path,
                                      IN_MODIFY | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF) <
                        0 ||
                    (l->ino_io = ag_io_new(s->loop, l->ino, EPOLLIN, on_log_change, l, &err)) ==
                        NULL) {
                        logstream_free(l);
                        return respond_error(c, 500, "cannot follow the log file");
                }
                struct rt_container_state cst;
                if (cid[0] == '\0' || rt_container_state(s->cfg.root_dir, cid, &cst, NULL) < 0 ||
                    cst.status != RT_CONTAINER_RUNNING)
                        l->follow = false;
        }
        c->log = l;
        c->mode = C_LOGS;
        conn_head(c, 200, "text/plain", -1);
        write_logs(l);
}

/* Renders what the file has now into the connection (a chunk at a time:
 * the rest when the client took it); at the end the connection closes. */
static void write_logs(struct logstream *l)
{
        struct conn *c = l->c;
        if (l->finished)
                return;
        static char o[2 * LOG_CHUNK + 64];
        size_t olen = 0, cap = sizeof(o);
        bool limit_hit = false, eof = false;
        while (olen < LOG_CHUNK && !limit_hit && !eof) {
                ssize_t n = pread(l->fd, l->in + l->in_len, sizeof(l->in) - l->in_len, l->off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        c->dead = true;
                        return;
                }
                eof = n == 0;
                l->off += n;
                l->in_len += (size_t)n;
                size_t start = 0;
                for (;;) {
                        char *nl = memchr(l->in + start, '\n', l->in_len - start);
                        if (nl == NULL)
                                break;
                        size_t rl = (size_t)(nl - (l->in + start));
                        size_t w = ag_log_render(l->in + start, rl, &l->opts, o + olen, cap - olen);
                        if (l->opts.has_limit_bytes &&
                            l->sent + (int64_t)olen + (int64_t)w >= l->opts.limit_bytes) {
                                w = (size_t)(l->opts.limit_bytes - l->sent - (int64_t)olen);
                                limit_hit = true;
                        }
                        olen += w;
                        start += rl + 1;
                        if (limit_hit || olen >= LOG_CHUNK)
                                break;
                }
                if (start == 0 && l->in_len == sizeof(l->in)) {
                        /* a record longer than the buffer: not a CRI log
                         * writer's (they split lines at 16 KiB); skip it */
                        l->in_len = 0;
                } else {
                        memmove(l->in, l->in + start, l->in_len - start);
                        l->in_len -= start;
                }
        }
        l->sent += (int64_t)olen;
        conn_write(c, o, olen);
        if (limit_hit || (eof && (!l->follow || l->ended))) {
                l->finished = true;
                c->close_after_flush = true;
        }
        /* not at the end of the file: conn_written asks again once the
         * client took this; at the end: the inotify watch does */
}

/* ---- exec and attach sessions (WebSocket or SPDY) ---- */

struct reaper {
        struct reaper *next;
        struct ag_napi *srv;
        int pidfd;
        struct ag_io *io;
};

#define N_CH 5 /* stdin, stdout, stderr, error, resize */

struct exec {
        struct conn *c;
        struct ag_napi *srv;
        enum ag_channel_proto proto; /* WebSocket: the channel subprotocol */
        bool spdy;
        struct ag_exec_options opts;
        struct ag_napi_target t;
        int pidfd, in_fd, out_fd, err_fd, pty; /* pty: the master, for in and out */
        struct ag_io *pid_io, *in_io, *out_io, *err_io;
        uint8_t *stdin_buf;
        size_t stdin_len;
        bool stdin_close; /* close stdin once stdin_buf is written */
        /* SPDY: the client's streams by channel, and the resize stream's
         * bytes until a whole JSON object is there */
        uint32_t sid[N_CH];
        bool want[N_CH], fin_sent[N_CH];
        bool started;
        uint8_t resize_buf[1024];
        size_t resize_len;
        char *cid; /* the container, once found */
        /* attach: the container's output, from its log file as it grows */
        bool attach;
        int att_fd, att_ino;
        struct ag_io *att_io;
        int64_t att_off;
        char *att_buf; /* an incomplete last record */
        size_t att_len;
        /* attach -i/-t: the connection to the monitor, see runtime/attach.h */
        int att_sock;
        struct ag_io *att_sock_io;
        bool exited, closing;
};

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

static void exec_free(struct exec *x)
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

static void ws_send(struct conn *c, uint8_t opcode, const void *a, size_t alen, const void *b,
                    size_t blen);
static void spdy_flush(struct conn *c);

/* Output on a channel: a WebSocket message [channel][data], or DATA on the
 * SPDY stream of that channel. */
static void queue(struct exec *x, uint8_t channel, const void *data, size_t len)
{
        struct conn *c = x->c;
        if (!x->spdy) {
                ws_send(c, WSLAY_BINARY_FRAME, &channel, 1, data, len);
                return;
        }
        if (channel >= N_CH || !x->want[channel] || x->fin_sent[channel] || len == 0)
                return;
        struct cb_error err = {0};
        if (spdy_data(c->spdy, x->sid[channel], data, len, false, &err) < 0)
                log_v(2, "node API: %s", err.msg);
        spdy_flush(c);
}

static void attach_pump(struct exec *x);

static void update_reading(struct exec *x)
{
        size_t q = conn_pending(x->c);
        if (x->attach && !x->closing && q < OUT_HIGH / 2)
                attach_pump(x); /* what waited while the client was slow */
        uint32_t ev = conn_pending(x->c) < OUT_HIGH ? EPOLLIN : 0;
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
        for (int i = 0; drain ? i < 64 : (i < 8 && conn_pending(x->c) < OUT_HIGH); i++) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return true;
                if (n <= 0) /* EOF, or EIO from a pty whose slave side closed */
                        return false;
                queue(x, channel, buf, (size_t)n);
        }
        return true;
}

/* The end of a session: the status on the error channel (v4+: a
 * metav1.Status, also for success), then the close. */
static void finish_exec(struct exec *x, int code, const char *message)
{
        if (x->closing)
                return;
        struct conn *c = x->c;
        if (x->out_fd >= 0)
                (void)pump(x, x->out_fd, AG_CH_STDOUT, true);
        if (x->err_fd >= 0)
                (void)pump(x, x->err_fd, AG_CH_STDERR, true);
        _cleanup_free_ char *st = ag_exec_status_json(code, message);
        if ((x->spdy || x->proto >= AG_CHANNEL_V4) && st != NULL) {
                queue(x, AG_CH_ERROR, st, strlen(st));
        } else if (!x->spdy && (code != 0 || message != NULL)) {
                char m[512];
                snprintf(m, sizeof(m), "%s", message ? message : "command terminated");
                queue(x, AG_CH_ERROR, m, strlen(m));
        }
        x->closing = true;
        if (x->spdy) {
                /* every stream of ours ends; the connection closes once
                 * the client has it all, as the kubelet closes it */
                struct cb_error err = {0};
                for (int ch = 0; ch < N_CH; ch++)
                        if (x->want[ch] && !x->fin_sent[ch]) {
                                x->fin_sent[ch] = true;
                                (void)spdy_data(c->spdy, x->sid[ch], NULL, 0, true, &err);
                        }
                (void)spdy_goaway(c->spdy, 0, &err);
                spdy_flush(c);
                c->close_after_flush = true;
        } else {
                wslay_event_queue_close(c->ws, WSLAY_CODE_NORMAL_CLOSURE, NULL, 0);
                if (wslay_event_send(c->ws) < 0)
                        c->dead = true;
                ag_timer_arm(c->timer, CLOSE_WAIT_MS);
        }
}

static void on_exec_out(struct ag_io *io, int fd, uint32_t events, void *data)
{
        (void)events;
        struct exec *x = data;
        struct conn *c = x->c;
        uint8_t ch = io == x->err_io ? AG_CH_STDERR : AG_CH_STDOUT;
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
        update_reading(x);
        conn_update(c);
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
        finish_exec(x, r < 0 ? 1 : code, r < 0 ? err.msg : NULL);
        conn_update(c);
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
                conn_read(c);
        conn_update(c);
}

static void exec_stdin(struct exec *x, const uint8_t *p, size_t n)
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

static void exec_stdin_close(struct exec *x)
{
        if (x->attach) {
                x->stdin_close = true;
                attach_write(x);
                return;
        }
        if (x->pty >= 0 && x->in_fd == x->pty) {
                /* a terminal has no half-close: ^D ends input */
                static const uint8_t eot = 4;
                exec_stdin(x, &eot, 1);
        } else {
                x->stdin_close = true;
                write_stdin(x);
        }
}

static void exec_resize(struct exec *x, const uint8_t *p, size_t n)
{
        uint16_t w, h;
        struct cb_error err = {0};
        if (x->attach) {
                /* a full socket drops a resize: the next one carries the size */
                if (x->att_sock >= 0 && ag_parse_resize(p, n, &w, &h, &err) == 0)
                        (void)rt_attach_resize(x->att_sock, w, h, &err);
                return;
        }
        if (x->pty >= 0 && ag_parse_resize(p, n, &w, &h, &err) == 0) {
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
                if (slave < 0 || set_nonblock(x->pty) < 0)
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
                if ((x->in_fd >= 0 && set_nonblock(x->in_fd) < 0) ||
                    (x->out_fd >= 0 && set_nonblock(x->out_fd) < 0) ||
                    (x->err_fd >= 0 && set_nonblock(x->err_fd) < 0))
                        return cb_error_set(err, errno, "O_NONBLOCK");
        }
        if (rt_container_exec_start_stdio(s->cfg.root_dir, cid, s->cfg.monitor_path, x->opts.argv,
                                          &io, &x->pidfd, err) < 0)
                return -1;
        /* from here on the command runs: every failure kills it (exec_free) */
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
        for (int i = 0; i < 64 && conn_pending(x->c) < OUT_HIGH && x->att_fd >= 0; i++) {
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
                                                 ? AG_CH_STDERR
                                                 : AG_CH_STDOUT;
                                /* the content ends at the record's '\n': a
                                 * full line goes out with it */
                                if (ch == AG_CH_STDERR || x->opts.out)
                                        queue(x, ch, e.content, e.len + (e.partial ? 0 : 1));
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
        bool ended = false;
        char ev[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        for (;;) {
                ssize_t n = read(fd, ev, sizeof(ev));
                if (n <= 0)
                        break;
                for (char *p = ev; p < ev + n;) {
                        struct inotify_event *e = (struct inotify_event *)p;
                        if (e->mask & (IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF))
                                ended = true;
                        p += sizeof(*e) + e->len;
                }
        }
        attach_pump(x);
        if (ended)
                finish_exec(x, 0, NULL);
        conn_update(x->c);
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
                finish_exec(x, 0, NULL);
        return 0;
}

/* ---- WebSocket (wslay) ---- */

static void ws_send(struct conn *c, uint8_t opcode, const void *a, size_t alen, const void *b,
                    size_t blen)
{
        if (c->ws == NULL || c->dead)
                return;
        uint8_t *m = malloc(alen + blen + 1);
        if (m == NULL) {
                c->dead = true;
                return;
        }
        if (alen > 0)
                memcpy(m, a, alen);
        if (blen > 0)
                memcpy(m + alen, b, blen);
        struct wslay_event_msg msg = {.opcode = opcode, .msg = m, .msg_length = alen + blen};
        (void)wslay_event_queue_msg(c->ws, &msg); /* copies; refused after our close */
        free(m);
        if (wslay_event_send(c->ws) < 0)
                c->dead = true;
}

static ssize_t ws_recv_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags,
                          void *user)
{
        (void)flags;
        struct conn *c = user;
        if (c->ws_in_len == 0) {
                wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
                return -1;
        }
        size_t n = len < c->ws_in_len ? len : c->ws_in_len;
        memcpy(buf, c->ws_in, n);
        c->ws_in += n;
        c->ws_in_len -= n;
        return (ssize_t)n;
}

static ssize_t ws_send_cb(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
                          void *user)
{
        (void)ctx;
        (void)flags;
        struct conn *c = user;
        conn_write(c, data, len);
        return (ssize_t)len;
}

static void spdy_input(struct conn *c, const uint8_t *buf, size_t len);

static void ws_on_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg,
                      void *user)
{
        (void)ctx;
        struct conn *c = user;
        if (arg->opcode != WSLAY_BINARY_FRAME && arg->opcode != WSLAY_TEXT_FRAME)
                return; /* close, ping, pong: wslay answers */
        if (c->ws_tunnel) {
                spdy_input(c, arg->msg, arg->msg_length);
                return;
        }
        struct exec *x = c->ex;
        uint8_t ch;
        const uint8_t *p;
        size_t n;
        if (x == NULL || x->closing || ag_channel_split(arg->msg, arg->msg_length, &ch, &p, &n) < 0)
                return;
        switch (ch) {
        case AG_CH_STDIN:
                exec_stdin(x, p, n);
                break;
        case AG_CH_RESIZE:
                exec_resize(x, p, n);
                break;
        case AG_CH_CLOSE:
                if (x->proto >= AG_CHANNEL_V5 && n >= 1 && p[0] == AG_CH_STDIN)
                        exec_stdin_close(x);
                break;
        default:
                break;
        }
}

static int ws_start(struct conn *c, const char *protocol, struct cb_error *err)
{
        char accept[32];
        if (ag_ws_accept(c->req.ws_key, accept) < 0)
                return cb_error_set(err, EINVAL, "bad Sec-WebSocket-Key");
        static const struct wslay_event_callbacks cbs = {
            .recv_callback = ws_recv_cb,
            .send_callback = ws_send_cb,
            .on_msg_recv_callback = ws_on_msg,
        };
        if (wslay_event_context_server_init(&c->ws, &cbs, c) != 0)
                return cb_error_set(err, ENOMEM, "WebSocket");
        wslay_event_config_set_max_recv_msg_length(c->ws, SPDY_MAX_FRAME + 64);
        conn_printf(c,
                    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                    "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n",
                    accept);
        if (protocol != NULL)
                conn_printf(c, "Sec-WebSocket-Protocol: %s\r\n", protocol);
        conn_printf(c, "\r\n");
        c->mode = C_WS;
        return 0;
}

static void ws_input(struct conn *c, const uint8_t *buf, size_t len)
{
        c->ws_in = buf;
        c->ws_in_len = len;
        if (wslay_event_recv(c->ws) != 0) {
                log_v(2, "node API: WebSocket protocol error");
                c->dead = true;
        }
        c->ws_in_len = 0;
        if (!c->dead && wslay_event_send(c->ws) != 0)
                c->dead = true;
        /* both closes seen, or the peer closed and ours went out */
        if (!c->dead && !wslay_event_want_read(c->ws) && !wslay_event_want_write(c->ws))
                c->close_after_flush = true;
}

/* ---- SPDY ---- */

/* What the session queued goes to the client: raw after an SPDY upgrade,
 * in WebSocket binary messages through the tunnel. */
static void spdy_flush(struct conn *c)
{
        size_t n;
        const uint8_t *o;
        while (c->spdy != NULL && !c->dead && (o = spdy_output(c->spdy, &n)) != NULL && n > 0) {
                if (c->ws_tunnel)
                        ws_send(c, WSLAY_BINARY_FRAME, o, n, NULL, 0);
                else
                        conn_write(c, o, n);
                spdy_consumed(c->spdy, n);
        }
}

static void spdy_input(struct conn *c, const uint8_t *buf, size_t len)
{
        struct cb_error err = {0};
        if (spdy_session_feed(c->spdy, buf, len, &err) < 0) {
                log_v(2, "node API: SPDY: %s", err.msg);
                (void)spdy_goaway(c->spdy, 1, &err);
                spdy_flush(c);
                c->close_after_flush = true;
                return;
        }
        spdy_flush(c);
}

static const char *hget(const struct spdy_header *h, size_t n, const char *name)
{
        for (size_t i = 0; i < n; i++)
                if (strcasecmp(h[i].name, name) == 0)
                        return h[i].value;
        return NULL;
}

static void exec_begin(struct exec *x);

static int exec_on_stream(struct conn *c, uint32_t id, const struct spdy_header *h, size_t n)
{
        struct exec *x = c->ex;
        struct cb_error err = {0};
        const char *type = hget(h, n, "streamtype");
        static const char *const names[N_CH] = {"stdin", "stdout", "stderr", "error", "resize"};
        int ch = -1;
        for (int i = 0; type != NULL && i < N_CH; i++)
                if (strcmp(type, names[i]) == 0)
                        ch = i;
        if (ch < 0 || x->sid[ch] != 0 || x->started) {
                log_v(2, "node API: exec: unexpected stream type \"%s\"", type ? type : "");
                (void)spdy_rst(c->spdy, id, SPDY_REFUSED_STREAM, &err);
                return 0;
        }
        if (spdy_reply(c->spdy, id, NULL, 0, false, &err) < 0)
                return -1;
        x->sid[ch] = id;
        x->want[ch] = true;
        /* all there: the error stream, and each one the request asked for */
        bool all = x->sid[AG_CH_ERROR] != 0 && (!x->opts.in || x->sid[AG_CH_STDIN] != 0) &&
                   (!x->opts.out || x->sid[AG_CH_STDOUT] != 0) &&
                   (!x->opts.err || x->opts.tty || x->sid[AG_CH_STDERR] != 0) &&
                   (!x->opts.tty || x->proto < AG_CHANNEL_V4 || x->sid[AG_CH_RESIZE] != 0);
        if (all)
                exec_begin(x);
        return 0;
}

static int exec_on_data(struct conn *c, uint32_t id, const uint8_t *buf, size_t len, bool fin)
{
        struct exec *x = c->ex;
        if (x->closing)
                return 0;
        if (id == x->sid[AG_CH_STDIN] && x->sid[AG_CH_STDIN] != 0) {
                exec_stdin(x, buf, len);
                if (fin)
                        exec_stdin_close(x);
        } else if (id == x->sid[AG_CH_RESIZE] && x->sid[AG_CH_RESIZE] != 0) {
                while (len > 0) {
                        size_t take = sizeof(x->resize_buf) - x->resize_len;
                        if (take > len)
                                take = len;
                        memcpy(x->resize_buf + x->resize_len, buf, take);
                        x->resize_len += take;
                        buf += take;
                        len -= take;
                        size_t used;
                        while ((used = ag_json_object_len(x->resize_buf, x->resize_len)) > 0) {
                                exec_resize(x, x->resize_buf, used);
                                memmove(x->resize_buf, x->resize_buf + used, x->resize_len - used);
                                x->resize_len -= used;
                        }
                        if (x->resize_len == sizeof(x->resize_buf))
                                x->resize_len = 0; /* not JSON objects: drop */
                }
        }
        return 0;
}

/* ---- port forwarding (SPDY streams in pairs) ---- */

#define PF_MAX_PAIRS 128

struct pfpair {
        struct pfpair *next;
        struct pfwd *pf;
        char request_id[64];
        uint16_t port;
        uint32_t data_id, error_id;
        int sock;
        struct ag_io *io;
        uint8_t *to_sock; /* from the client, not yet written */
        size_t to_len;
        bool client_fin, sock_eof, data_fin_sent, shut_wr, failed;
};

struct pfwd {
        struct conn *c;
        char ns[AG_NAPI_NAME_MAX], pod[AG_NAPI_NAME_MAX], uid[AG_NAPI_NAME_MAX];
        char netns[RT_PATH_MAX];
        struct pfpair *pairs;
        size_t n_pairs;
};

static void pair_free(struct pfpair *p)
{
        struct pfpair **pp = &p->pf->pairs;
        while (*pp != NULL && *pp != p)
                pp = &(*pp)->next;
        if (*pp == p) {
                *pp = p->next;
                p->pf->n_pairs--;
        }
        ag_io_free(p->io);
        if (p->sock >= 0)
                close(p->sock);
        free(p->to_sock);
        free(p);
}

static void pfwd_free(struct pfwd *pf)
{
        if (pf == NULL)
                return;
        while (pf->pairs != NULL)
                pair_free(pf->pairs);
        free(pf);
}

/* Ends a pair from our side: FIN on both streams (the client closes its
 * listener's connection on the data stream's end). */
static void pair_end(struct pfpair *p)
{
        struct conn *c = p->pf->c;
        struct cb_error err = {0};
        if (p->data_id != 0 && !p->data_fin_sent)
                (void)spdy_data(c->spdy, p->data_id, NULL, 0, true, &err);
        if (p->error_id != 0)
                (void)spdy_data(c->spdy, p->error_id, NULL, 0, true, &err);
        spdy_flush(c);
        pair_free(p);
}

static void pair_error(struct pfpair *p, const char *why)
{
        struct pfwd *pf = p->pf;
        char msg[1024];
        /* the kubelet's wording (portforward/httpstream.go) */
        snprintf(msg, sizeof(msg), "error forwarding port %u to pod %s, uid %s: %s",
                 (unsigned)p->port, pf->pod, pf->uid, why);
        log_v(2, "node API: %s", msg);
        struct cb_error err = {0};
        if (p->error_id != 0)
                (void)spdy_data(pf->c->spdy, p->error_id, msg, strlen(msg), false, &err);
        pair_end(p);
}

static void pair_events(struct pfpair *p)
{
        if (p->io == NULL)
                return;
        uint32_t ev = 0;
        if (!p->sock_eof && conn_pending(p->pf->c) < OUT_HIGH)
                ev |= EPOLLIN;
        if (p->to_len > 0)
                ev |= EPOLLOUT;
        ag_io_set_events(p->io, ev, NULL);
}

/* true when the pair is over and was freed */
static bool pair_step(struct pfpair *p)
{
        struct conn *c = p->pf->c;
        struct cb_error err = {0};
        while (p->to_len > 0) {
                ssize_t n = write(p->sock, p->to_sock, p->to_len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        break;
                if (n < 0) { /* the server in the pod went away */
                        p->to_len = 0;
                        p->sock_eof = true;
                        break;
                }
                memmove(p->to_sock, p->to_sock + n, p->to_len - (size_t)n);
                p->to_len -= (size_t)n;
        }
        if (p->client_fin && p->to_len == 0 && !p->shut_wr) {
                p->shut_wr = true;
                (void)shutdown(p->sock, SHUT_WR);
        }
        if (c->read_paused && p->to_len < STDIN_HIGH / 2)
                c->read_paused = false;
        uint8_t buf[READ_CHUNK];
        for (int i = 0; i < 8 && !p->sock_eof && conn_pending(c) < OUT_HIGH; i++) {
                ssize_t n = read(p->sock, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        break;
                if (n <= 0) {
                        p->sock_eof = true;
                        break;
                }
                (void)spdy_data(c->spdy, p->data_id, buf, (size_t)n, false, &err);
                spdy_flush(c);
        }
        if (p->sock_eof && !p->data_fin_sent) {
                p->data_fin_sent = true;
                (void)spdy_data(c->spdy, p->data_id, NULL, 0, true, &err);
                spdy_flush(c);
        }
        if (p->sock_eof && (p->client_fin || p->shut_wr)) {
                pair_end(p);
                return true;
        }
        pair_events(p);
        return false;
}

static void on_pair_sock(struct ag_io *io, int fd, uint32_t events, void *data)
{
        (void)io;
        (void)fd;
        (void)events;
        struct pfpair *p = data;
        struct conn *c = p->pf->c;
        (void)pair_step(p);
        conn_update(c);
}

static void pair_connect(struct pfpair *p)
{
        struct pfwd *pf = p->pf;
        struct cb_error err = {0};
        if (rt_sandbox_dial(pf->netns, p->port, &p->sock, &err) < 0) {
                p->sock = -1;
                pair_error(p, err.msg);
                return;
        }
        p->io = ag_io_new(pf->c->srv->loop, p->sock, EPOLLIN, on_pair_sock, p, &err);
        if (p->io == NULL) {
                pair_error(p, err.msg);
                return;
        }
        log_v(2, "node API: port-forward %s/%s port %u (request %s)", pf->ns, pf->pod,
              (unsigned)p->port, p->request_id);
        (void)pair_step(p);
}

static int pf_on_stream(struct conn *c, uint32_t id, const struct spdy_header *h, size_t n,
                        bool fin)
{
        struct pfwd *pf = c->pf;
        struct cb_error err = {0};
        const char *type = hget(h, n, "streamtype"), *port = hget(h, n, "port"),
                   *rid = hget(h, n, "requestid");
        char *end = NULL;
        long pn = port != NULL ? strtol(port, &end, 10) : -1;
        if (type == NULL || (strcmp(type, "data") != 0 && strcmp(type, "error") != 0) ||
            port == NULL || *port == '\0' || end == NULL || *end != '\0' || pn < 1 || pn > 65535 ||
            rid == NULL || strlen(rid) >= sizeof(((struct pfpair *)0)->request_id)) {
                log_v(2,
                      "node API: port-forward: refused a stream (type \"%s\" port \"%s\" "
                      "requestID \"%s\")",
                      type ? type : "", port ? port : "", rid ? rid : "");
                (void)spdy_rst(c->spdy, id, SPDY_REFUSED_STREAM, &err);
                return 0;
        }
        if (spdy_reply(c->spdy, id, NULL, 0, false, &err) < 0)
                return -1;
        struct pfpair *p = pf->pairs;
        while (p != NULL && strcmp(p->request_id, rid) != 0)
                p = p->next;
        if (p == NULL) {
                if (pf->n_pairs >= PF_MAX_PAIRS) {
                        (void)spdy_rst(c->spdy, id, SPDY_REFUSED_STREAM, &err);
                        return 0;
                }
                p = calloc(1, sizeof(*p));
                if (p == NULL)
                        return -1;
                p->pf = pf;
                p->sock = -1;
                p->port = (uint16_t)pn;
                snprintf(p->request_id, sizeof(p->request_id), "%s", rid);
                p->next = pf->pairs;
                pf->pairs = p;
                pf->n_pairs++;
        }
        bool data = strcmp(type, "data") == 0;
        if ((data ? p->data_id : p->error_id) != 0 || p->port != (uint16_t)pn) {
                (void)spdy_rst(c->spdy, id, SPDY_PROTOCOL_ERROR, &err);
                return 0;
        }
        if (data) {
                p->data_id = id;
                p->client_fin = fin;
        } else {
                p->error_id = id;
        }
        if (p->data_id != 0 && p->error_id != 0)
                pair_connect(p);
        return 0;
}

static struct pfpair *pair_of(struct pfwd *pf, uint32_t id)
{
        for (struct pfpair *p = pf->pairs; p != NULL; p = p->next)
                if (p->data_id == id || p->error_id == id)
                        return p;
        return NULL;
}

static int pf_on_data(struct conn *c, uint32_t id, const uint8_t *buf, size_t len, bool fin)
{
        struct pfpair *p = pair_of(c->pf, id);
        if (p == NULL || id != p->data_id)
                return 0; /* the error stream carries nothing from the client */
        if (len > 0 && p->sock >= 0 && !p->shut_wr) {
                if (p->to_len + len > STDIN_HIGH * 2)
                        return 0; /* the pause keeps this from happening */
                uint8_t *nb = realloc(p->to_sock, p->to_len + len);
                if (nb == NULL)
                        return -1;
                p->to_sock = nb;
                memcpy(nb + p->to_len, buf, len);
                p->to_len += len;
                if (p->to_len >= STDIN_HIGH)
                        c->read_paused = true;
        }
        if (fin)
                p->client_fin = true;
        if (p->sock >= 0)
                (void)pair_step(p);
        return 0;
}

static void pf_on_reset(struct conn *c, uint32_t id)
{
        struct pfpair *p = pair_of(c->pf, id);
        if (p != NULL && id == p->data_id)
                pair_free(p); /* the client gave up on this connection */
}

/* ---- SPDY callbacks ---- */

static int cb_stream(void *data, uint32_t id, const struct spdy_header *h, size_t n, bool fin)
{
        struct conn *c = data;
        if (c->pf != NULL)
                return pf_on_stream(c, id, h, n, fin);
        if (c->ex != NULL)
                return exec_on_stream(c, id, h, n);
        return -1;
}

static int cb_reply(void *data, uint32_t id, const struct spdy_header *h, size_t n, bool fin)
{
        (void)data;
        (void)id;
        (void)h;
        (void)n;
        (void)fin;
        return 0; /* we open no streams */
}

static int cb_data(void *data, uint32_t id, const uint8_t *buf, size_t len, bool fin)
{
        struct conn *c = data;
        if (c->pf != NULL)
                return pf_on_data(c, id, buf, len, fin);
        if (c->ex != NULL)
                return exec_on_data(c, id, buf, len, fin);
        return 0;
}

static void cb_reset(void *data, uint32_t id, uint32_t status)
{
        (void)status;
        struct conn *c = data;
        if (c->pf != NULL)
                pf_on_reset(c, id);
        else if (c->ex != NULL && id == c->ex->sid[AG_CH_STDIN] && id != 0)
                exec_stdin_close(c->ex);
}

static void cb_goaway(void *data, uint32_t last, uint32_t status)
{
        (void)last;
        (void)status;
        struct conn *c = data;
        c->close_after_flush = true;
}

static const struct spdy_callbacks spdy_cbs = {
    .on_stream = cb_stream,
    .on_reply = cb_reply,
    .on_data = cb_data,
    .on_reset = cb_reset,
    .on_goaway = cb_goaway,
};

/* ---- streaming requests ---- */

/* What an exec/attach/portForward request asks for, checked: 0, or the
 * HTTP status with msg. On success *x (exec/attach) or *pf is made. */
static int stream_check(struct conn *c, enum ag_napi_route r, const struct ag_napi_target *t,
                        struct exec **ret_x, struct pfwd **ret_pf, char *msg, size_t size)
{
        struct ag_napi *s = c->srv;
        struct found f;
        if (r == AG_NAPI_PORTFORWARD) {
                int code = find_target(s, t, NULL, &f);
                if (code != 0) {
                        snprintf(msg, size, "%s", f.msg);
                        found_clear(&f);
                        return code;
                }
                struct pfwd *pf = calloc(1, sizeof(*pf));
                if (pf == NULL) {
                        found_clear(&f);
                        snprintf(msg, size, "out of memory");
                        return 500;
                }
                pf->c = c;
                snprintf(pf->ns, sizeof(pf->ns), "%s", t->ns);
                snprintf(pf->pod, sizeof(pf->pod), "%s", t->pod);
                snprintf(pf->uid, sizeof(pf->uid), "%s", f.uid ? f.uid : "");
                struct rt_sandbox sb;
                struct cb_error err = {0};
                if (f.uid == NULL || rt_sandbox_load(s->cfg.root_dir, f.uid, &sb, &err) < 0) {
                        snprintf(msg, size, "pod \"%s/%s\" has no sandbox yet: %.300s", t->ns,
                                 t->pod, err.msg);
                        found_clear(&f);
                        free(pf);
                        return 400;
                }
                snprintf(pf->netns, sizeof(pf->netns), "%s", sb.netns_path);
                found_clear(&f);
                *ret_pf = pf;
                return 0;
        }
        /* the session exists even for a refusal: a WebSocket refusal goes
         * on its error channel */
        struct exec *x = calloc(1, sizeof(*x));
        if (x == NULL) {
                snprintf(msg, size, "out of memory");
                return 500;
        }
        x->c = c;
        x->srv = s;
        x->t = *t;
        x->pidfd = x->in_fd = x->out_fd = x->err_fd = x->pty = -1;
        x->att_fd = x->att_ino = x->att_sock = -1;
        x->attach = r == AG_NAPI_ATTACH;
        *ret_x = x;
        struct args a = {0};
        struct cb_error err = {0};
        struct ag_exec_options o = {0};
        if (args_read(c, &a, &err) < 0 ||
            ag_exec_options_parse((const char *const *)a.v, a.n, r == AG_NAPI_EXEC, &o, &err) < 0) {
                snprintf(msg, size, "%s", err.msg);
                args_free(&a);
                return 400;
        }
        /* argv points into a.v: keep copies that outlive the request */
        size_t total = 0;
        for (size_t i = 0; i < o.argc; i++)
                total += strlen(o.argv[i]) + 1;
        char **argv = malloc((o.argc + 1) * sizeof(char *) + total);
        if (argv == NULL) {
                free(o.argv);
                args_free(&a);
                snprintf(msg, size, "out of memory");
                return 500;
        }
        char *p = (char *)(argv + o.argc + 1);
        for (size_t i = 0; i < o.argc; i++) {
                size_t l = strlen(o.argv[i]) + 1;
                memcpy(p, o.argv[i], l);
                argv[i] = p;
                p += l;
        }
        argv[o.argc] = NULL;
        free(o.argv);
        o.argv = (const char **)argv;
        args_free(&a);
        x->opts = o;
        int code = find_target(s, t, t->container, &f);
        if (code != 0) {
                snprintf(msg, size, "%s", f.msg);
                found_clear(&f);
                return code;
        }
        if (f.cid == NULL || !f.running) {
                snprintf(msg, size, "container \"%s\" in pod \"%s\" is not running", t->container,
                         t->pod);
                found_clear(&f);
                return 400;
        }
        if (x->attach && (o.in || o.tty)) {
                struct rt_container_state cst;
                struct cb_error e2 = {0};
                if (rt_container_state(s->cfg.root_dir, f.cid, &cst, &e2) < 0) {
                        snprintf(msg, size, "%s", e2.msg);
                        found_clear(&f);
                        return 500;
                }
                if ((o.in && !cst.stdin_open) || (o.tty && !cst.tty)) {
                        snprintf(msg, size,
                                 "container \"%s\" in pod \"%s\" was created without %s: set "
                                 "%s in its spec to attach with %s",
                                 t->container, t->pod, o.in && !cst.stdin_open ? "stdin" : "a tty",
                                 o.in && !cst.stdin_open ? "stdin: true" : "tty: true",
                                 o.in && !cst.stdin_open ? "-i" : "-t");
                        found_clear(&f);
                        return 400;
                }
        }
        x->cid = strdup(f.cid);
        found_clear(&f);
        if (x->cid == NULL) {
                snprintf(msg, size, "out of memory");
                return 500;
        }
        return 0;
}

/* The session's streams are there: run the command, or follow the
 * container's output. */
static void exec_begin(struct exec *x)
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
                if (find_target(x->srv, &x->t, x->t.container, &f) != 0) {
                        found_clear(&f);
                        return finish_exec(x, 0, f.msg);
                }
                r = start_attach(x, &x->t, &f, &err);
                found_clear(&f);
        } else {
                r = spawn_exec(x, x->cid, &err);
        }
        if (r < 0) {
                log_warning("node API: %s in %s/%s container %s: %s", x->attach ? "attach" : "exec",
                            x->t.ns, x->t.pod, x->t.container, err.msg);
                finish_exec(x, 0, err.msg);
        }
}

static void stream_timeout(struct ag_timer *t, void *data)
{
        (void)t;
        struct conn *c = data;
        if (c->ex != NULL && c->ex->spdy && !c->ex->started) {
                log_v(2, "node API: timed out waiting for client to create streams");
                c->dead = true;
                conn_update(c);
                return;
        }
        close_timeout(t, data);
}

static const char *const ws_exec_protocols[] = {"v5.channel.k8s.io", "v4.channel.k8s.io",
                                                "channel.k8s.io", NULL};
static const char *const ws_pf_protocols[] = {"SPDY/3.1+portforward.k8s.io", NULL};
static const char *const spdy_exec_protocols[] = {"v4.channel.k8s.io", NULL};
static const char *const spdy_pf_protocols[] = {"portforward.k8s.io", NULL};

static void handle_upgrade(struct conn *c, enum ag_napi_route r, const struct ag_napi_target *t,
                           const uint8_t *rest, size_t rest_len)
{
        bool ws = strcasecmp(c->req.upgrade, "websocket") == 0;
        bool spdy = strcasecmp(c->req.upgrade, "SPDY/3.1") == 0;
        char msg[1200];
        if (!ws && !spdy)
                return respond_error(c, 400,
                                     "unable to upgrade: only websocket and SPDY/3.1 are "
                                     "supported");
        struct exec *x = NULL;
        struct pfwd *pf = NULL;
        struct cb_error err = {0};
        const char *proto = NULL;
        if (spdy) {
                const char *const *sup =
                    r == AG_NAPI_PORTFORWARD ? spdy_pf_protocols : spdy_exec_protocols;
                proto = ag_negotiate(c->req.stream_protocol, sup);
                if (proto == NULL) {
                        /* httpstream.Handshake's answer: plain text, the
                         * lists as Go prints them */
                        const char *cl = c->req.stream_protocol;
                        if (cl == NULL) {
                                log_v(2,
                                      "node API: SPDY upgrade without X-Stream-Protocol-Version");
                                conn_head(c, 400, "text/plain; charset=utf-8", -1);
                                conn_printf(c, "unable to upgrade: X-Stream-Protocol-Version is "
                                               "required\n");
                                c->mode = C_RESPONSE;
                                c->close_after_flush = true;
                                return;
                        }
                        char list[256];
                        size_t li = 0;
                        for (const char *p = cl; *p != '\0' && li + 1 < sizeof(list); p++) {
                                if (*p == ',') {
                                        while (p[1] == ' ')
                                                p++;
                                        list[li++] = ' ';
                                } else {
                                        list[li++] = *p;
                                }
                        }
                        list[li] = '\0';
                        log_v(2, "node API: SPDY protocols [%s] refused", list);
                        conn_printf(c,
                                    "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; "
                                    "charset=utf-8\r\nX-Accepted-Stream-Protocol-Versions: "
                                    "%s\r\nConnection: close\r\n\r\nunable to upgrade: unable to "
                                    "negotiate protocol: client supports [%s], server accepts "
                                    "[%s]\n",
                                    sup[0], list, sup[0]);
                        c->mode = C_RESPONSE;
                        c->close_after_flush = true;
                        return;
                }
                /* refused before the upgrade: client-go shows the Status */
                int code = stream_check(c, r, t, &x, &pf, msg, sizeof(msg));
                if (code != 0) {
                        exec_free(x);
                        pfwd_free(pf);
                        return respond_error(c, code, msg);
                }
                if (spdy_session_new(true, &spdy_cbs, c, &c->spdy, &err) < 0) {
                        exec_free(x);
                        pfwd_free(pf);
                        return respond_error(c, 500, err.msg);
                }
                conn_printf(c,
                            "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
                            "Upgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: %s\r\n\r\n",
                            proto);
                c->mode = C_SPDY;
                c->ex = x;
                c->pf = pf;
                if (x != NULL) {
                        x->spdy = true;
                        x->proto = AG_CHANNEL_V4;
                        ag_timer_arm(c->timer, STREAM_CREATION_MS);
                }
                if (rest_len > 0)
                        conn_input(c, rest, rest_len);
                return;
        }
        /* WebSocket */
        if (c->req.ws_key == NULL || c->req.ws_version == NULL ||
            strcmp(c->req.ws_version, "13") != 0)
                return respond_error(c, 400,
                                     "unable to upgrade: a WebSocket upgrade needs "
                                     "Sec-WebSocket-Key and Sec-WebSocket-Version 13");
        const char *const *sup = r == AG_NAPI_PORTFORWARD ? ws_pf_protocols : ws_exec_protocols;
        proto = ag_negotiate(c->req.ws_protocol, sup);
        if (proto == NULL && c->req.ws_protocol != NULL) {
                snprintf(msg, sizeof(msg),
                         "unable to upgrade: requested protocol(s) [%.200s] are not supported: "
                         "use one of %s%s%s",
                         c->req.ws_protocol, sup[0], sup[1] ? ", " : "", sup[1] ? sup[1] : "");
                return respond_error(c, 400, msg);
        }
        if (r == AG_NAPI_PORTFORWARD && proto == NULL)
                return respond_error(c, 400,
                                     "unable to upgrade: port-forward over WebSocket "
                                     "needs the SPDY/3.1+portforward.k8s.io protocol");
        int code = stream_check(c, r, t, &x, &pf, msg, sizeof(msg));
        if (ws_start(c, proto, &err) < 0) {
                exec_free(x);
                pfwd_free(pf);
                return respond_error(c, 500, err.msg);
        }
        if (r == AG_NAPI_PORTFORWARD) {
                if (code != 0) {
                        /* the tunnel has no channel for it: the close says why */
                        log_v(2, "node API: port-forward refused (%d): %s", code, msg);
                        wslay_event_queue_close(c->ws, 1011, (const uint8_t *)msg,
                                                strlen(msg) > 120 ? 120 : strlen(msg));
                        (void)wslay_event_send(c->ws);
                        ag_timer_arm(c->timer, CLOSE_WAIT_MS);
                        return;
                }
                if (spdy_session_new(true, &spdy_cbs, c, &c->spdy, &err) < 0) {
                        pfwd_free(pf);
                        c->dead = true;
                        return;
                }
                c->pf = pf;
                c->ws_tunnel = true;
        } else {
                c->ex = x;
                x->proto = ag_channel_proto_from_name(proto);
                if (code != 0) {
                        /* Refused after the upgrade, on the error channel:
                         * kubectl shows it (a refused WebSocket upgrade
                         * makes it retry with SPDY and report that). */
                        log_v(2, "node API: streaming request refused (%d): %s", code, msg);
                        finish_exec(x, 0, msg);
                } else {
                        /* an empty message on the first output channel tells
                         * the client the streams are ready, as the kubelet
                         * does */
                        queue(x,
                              x->opts.out   ? AG_CH_STDOUT
                              : x->opts.err ? AG_CH_STDERR
                                            : AG_CH_ERROR,
                              NULL, 0);
                        exec_begin(x);
                }
        }
        if (rest_len > 0 && !c->dead)
                conn_input(c, rest, rest_len);
}

/* The request, authenticated and authorized. */
static void serve_request(struct conn *c, const uint8_t *rest, size_t rest_len)
{
        struct ag_napi *s = c->srv;
        int code;
        char path[2048];
        size_t pl = strcspn(c->req.url ? c->req.url : "", "?");
        if (c->req.url == NULL || pl >= sizeof(path))
                return respond_error(c, 404, "the server could not find the requested resource");
        memcpy(path, c->req.url, pl);
        path[pl] = '\0';
        struct ag_napi_target t;
        enum ag_napi_route r = ag_napi_route_path(path, &t);
        log_v(3, "node API: %s %s (%s)", c->req.method, path, c->who);
        if (r == AG_NAPI_NONE)
                return respond_error(c, 404, "the server could not find the requested resource");
        bool streaming = r == AG_NAPI_EXEC || r == AG_NAPI_ATTACH || r == AG_NAPI_PORTFORWARD;
        if (streaming) {
                if (!c->hp.upgrade || c->req.upgrade == NULL) {
                        /* the target's problem first, as the kubelet */
                        struct exec *x = NULL;
                        struct pfwd *pf = NULL;
                        char msg[1200];
                        code = stream_check(c, r, &t, &x, &pf, msg, sizeof(msg));
                        exec_free(x);
                        pfwd_free(pf);
                        if (code != 0)
                                return respond_error(c, code, msg);
                        return respond_error(c, 400,
                                             "unable to upgrade: missing upgrade headers in "
                                             "request (exec, attach and portForward need "
                                             "Upgrade: SPDY/3.1 or websocket)");
                }
                return handle_upgrade(c, r, &t, rest, rest_len);
        }
        if (strcmp(c->req.method, "GET") != 0 && strcmp(c->req.method, "HEAD") != 0)
                return respond_error(c, 405,
                                     "the server does not allow this method on the requested "
                                     "resource");
        switch (r) {
        case AG_NAPI_HEALTHZ: {
                char why[256] = "";
                if (s->cfg.healthy != NULL && !s->cfg.healthy(s->cfg.data, why, sizeof(why)))
                        return respond(c, 500, "text/plain", strdup(why));
                return respond(c, 200, "text/plain", strdup("ok"));
        }
        case AG_NAPI_PODS: {
                _cleanup_cjson_ cJSON *l = s->cfg.pods != NULL ? s->cfg.pods(s->cfg.data) : NULL;
                char *b = l != NULL ? cJSON_PrintUnformatted(l) : NULL;
                if (b == NULL)
                        return respond_error(c, 500, "cannot list the pods");
                return respond(c, 200, "application/json", b);
        }
        case AG_NAPI_STATS_SUMMARY: {
                _cleanup_cjson_ cJSON *o =
                    s->cfg.summary != NULL ? s->cfg.summary(s->cfg.data) : NULL;
                char *b = o != NULL ? cJSON_PrintUnformatted(o) : NULL;
                if (b == NULL)
                        return respond_error(c, 500, "cannot read the node's statistics");
                return respond(c, 200, "application/json", b);
        }
        case AG_NAPI_LOGS: {
                struct args a = {0};
                struct cb_error err = {0};
                if (args_read(c, &a, &err) < 0) {
                        args_free(&a);
                        return respond_error(c, 400, err.msg);
                }
                start_logs(c, &t, &a);
                args_free(&a);
                return;
        }
        default:
                return respond_error(c, 404, "not found");
        }
}

/* ---- authentication and authorization of a request ---- */

/* The kubelet answers these in plain text (not a Status). */
static void respond_text(struct conn *c, int code, const char *msg)
{
        log_v(2, "node API: %d %s", code, msg);
        respond(c, code, "text/plain; charset=utf-8", strdup(msg));
}

/* Serves the request with the bytes read after its head. */
static void proceed(struct conn *c)
{
        _cleanup_free_ uint8_t *held = c->held;
        size_t n = c->held_len;
        c->held = NULL;
        c->held_len = 0;
        c->mode = C_HEAD;
        serve_request(c, held, n);
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
        conn_update(c);
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
                respond_error(c, 401, "Unauthorized");
        }
        conn_update(c);
}

static void handle_request(struct conn *c, const uint8_t *rest, size_t rest_len)
{
        ag_timer_disarm(c->timer);
        if (rest_len > 0) {
                c->held = malloc(rest_len);
                if (c->held == NULL)
                        return respond_error(c, 500, "out of memory");
                memcpy(c->held, rest, rest_len);
                c->held_len = rest_len;
        }
        c->mode = C_AUTH;
        int code = authenticate(c);
        if (code == 1)
                return; /* on_token_review goes on */
        if (code != 0)
                return respond_error(c, code, "Unauthorized");
        authorize(c);
}

/* ---- dispatch ---- */

static void conn_input(struct conn *c, const uint8_t *buf, size_t len)
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
                size_t n = http_parser_execute(&c->hp, &parser_settings, (const char *)buf, len);
                c->req.head_bytes += n;
                if (c->hp.http_errno != HPE_OK && !c->req.head_done) {
                        respond_error(c, 400, http_errno_description(HTTP_PARSER_ERRNO(&c->hp)));
                        return;
                }
                if (!c->req.head_done) {
                        if (c->req.head_bytes > MAX_HEAD)
                                respond_error(c, 431, "the request head is too large");
                        return;
                }
                size_t used = c->hp.upgrade ? n : len;
                handle_request(c, buf + used, len - used);
                return;
        }
        case C_AUTH: {
                /* a client that does not wait for the answer: keep it */
                if (c->held_len + len > MAX_HEAD) {
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
                ws_input(c, buf, len);
                return;
        case C_SPDY:
                spdy_input(c, buf, len);
                return;
        default:
                return; /* nothing more is read from a plain request */
        }
}

static void conn_written(struct conn *c)
{
        if (c->log != NULL && !c->log->finished && conn_pending(c) < LOG_CHUNK)
                write_logs(c->log);
        if (c->ex != NULL)
                update_reading(c->ex);
        if (c->pf != NULL)
                for (struct pfpair *p = c->pf->pairs, *next; p != NULL; p = next) {
                        next = p->next;
                        if (p->sock >= 0)
                                (void)pair_step(p);
                }
}

static void conn_free(struct conn *c)
{
        struct conn **pp = &c->srv->conns;
        while (*pp != NULL && *pp != c)
                pp = &(*pp)->next;
        if (*pp == c)
                *pp = c->next;
        ag_napi_review_cancel(c->review);
        cJSON_Delete(c->id.groups);
        free(c->held);
        exec_free(c->ex);
        pfwd_free(c->pf);
        logstream_free(c->log);
        if (c->ws != NULL)
                wslay_event_context_free(c->ws);
        spdy_session_free(c->spdy);
        ag_io_free(c->io);
        if (c->timer != NULL)
                ag_timer_free(c->timer);
        if (c->ssl != NULL)
                SSL_free(c->ssl);
        close(c->fd);
        req_clear(&c->req);
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
        if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 128) < 0) {
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

static int tls_context(struct ag_napi *s, struct cb_error *err)
{
        s->ssl_ctx = SSL_CTX_new(TLS_server_method());
        if (s->ssl_ctx == NULL)
                return cb_error_set(err, ENOMEM, "node API: TLS context");
        SSL_CTX_set_min_proto_version(s->ssl_ctx, TLS1_2_VERSION);
        SSL_CTX_set_mode(s->ssl_ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                                         SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                                         SSL_MODE_RELEASE_BUFFERS);
        if (SSL_CTX_use_certificate_chain_file(s->ssl_ctx, s->cert_path) != 1 ||
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
        if (cfg->tls_cert_file != NULL || cfg->tls_key_file != NULL) {
                if (cfg->tls_cert_file == NULL || cfg->tls_key_file == NULL) {
                        cb_error_set(err, EINVAL,
                                     "--tls-cert-file and --tls-private-key-file go together");
                        goto fail;
                }
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
        while (s->reapers != NULL) {
                struct reaper *r = s->reapers;
                int code;
                (void)rt_container_exec_reap(r->pidfd, true, &code, NULL);
                reaper_free(r);
        }
        ag_io_free(s->listen_io);
        if (s->listen_fd >= 0)
                close(s->listen_fd);
        if (s->ssl_ctx != NULL)
                SSL_CTX_free(s->ssl_ctx);
        ag_napi_tokens_free(s->tokens);
        ag_napi_authz_free(s->authz); /* after the connections: they cancel their reviews */
        free(s);
}

int ag_napi_port(const struct ag_napi *s)
{
        return s->port;
}

const struct ag_napi_authz *ag_napi_authz_of(const struct ag_napi *s)
{
        return s->authz;
}
/* ---- flags ---- */

void ag_napi_flags_init(struct ag_napi_flags *f)
{
        *f = (struct ag_napi_flags){.address = "0.0.0.0", .port = AG_NAPI_DEFAULT_PORT};
}

int ag_napi_parse_flag(int argc, char **argv, int *i, struct ag_napi_flags *f)
{
        static const struct {
                const char *name;
                size_t off;
        } flags[] = {
            {"--address", offsetof(struct ag_napi_flags, address)},
            {"--tls-cert-file", offsetof(struct ag_napi_flags, tls_cert_file)},
            {"--tls-private-key-file", offsetof(struct ag_napi_flags, tls_key_file)},
            {"--client-ca-file", offsetof(struct ag_napi_flags, client_ca_file)},
            {"--authentication-token-file", offsetof(struct ag_napi_flags, token_file)},
            {"--cert-dir", offsetof(struct ag_napi_flags, cert_dir)},
            {"--port", 0},
        };
        const char *a = argv[*i];
        for (size_t k = 0; k < CB_ARRAY_SIZE(flags); k++) {
                size_t n = strlen(flags[k].name);
                if (strncmp(a, flags[k].name, n) != 0 || (a[n] != '\0' && a[n] != '='))
                        continue;
                const char *v;
                if (a[n] == '=') {
                        v = a + n + 1;
                } else if (*i + 1 < argc) {
                        v = argv[++*i];
                } else {
                        fprintf(stderr, "cubelet: %s needs a value\n", flags[k].name);
                        return -1;
                }
                if (strcmp(flags[k].name, "--port") == 0) {
                        char *end;
                        errno = 0;
                        long p = strtol(v, &end, 10);
                        if (*v == '\0' || *end != '\0' || errno != 0 || p < 1 || p > 65535) {
                                fprintf(stderr,
                                        "cubelet: --port: invalid value \"%s\" (want 1..65535)\n",
                                        v);
                                return -1;
                        }
                        f->port = (int)p;
                } else {
                        *(const char **)((char *)f + flags[k].off) = v;
                }
                return 1;
        }
        return 0;
}

const char *ag_napi_usage(void)
{
        return "  --port N                             node API port (HTTPS; default 10250)\n"
               "  --address IP                         its address (default 0.0.0.0)\n"
               "  --tls-cert-file FILE                 its serving certificate (default: "
               "self-signed,\n"
               "                                       made in --cert-dir)\n"
               "  --tls-private-key-file FILE          the certificate's key\n"
               "  --cert-dir DIR                       where a self-signed one is kept (default "
               "ROOT/pki)\n"
               "  --client-ca-file FILE                CA of the client certificates accepted "
               "(the\n"
               "                                       apiserver's kubelet client)\n"
               "  --authentication-token-file FILE     bearer tokens accepted: token,user,uid "
               "lines\n"
               "                                       (the node API runs when one of these, "
               "or\n"
               "                                       webhook or anonymous authentication, is "
               "set)\n";
}
