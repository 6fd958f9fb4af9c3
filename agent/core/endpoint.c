/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/core/endpoint.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "agent/core/page.h"
#include "agent/core/trace.h"
#include "lib/wallclock.h"

/* Idle connections are dropped after this long, and at most this many are
 * served at once: the endpoint is for local tools and Prometheus scrapes,
 * and must not let a stuck client pin memory in the agent. */
#define ENDPOINT_CONNECTION_TIMEOUT_S 30
#define ENDPOINT_CONNECTION_LIMIT     64

#define CONTENT_TEXT    "text/plain; charset=utf-8"
#define CONTENT_METRICS "text/plain; version=0.0.4; charset=utf-8"
#define CONTENT_JSON    "application/json"
#define CONTENT_HTML    "text/html; charset=utf-8"
#define CONTENT_SSE     "text/event-stream"

/* The event stream: a comment every so often keeps idle connections under
 * the connection timeout and finds clients that went away (a suspended
 * connection does not notice a close); a client that lets this much pile
 * up unread is dropped (its EventSource reconnects and gets a snapshot). */
#define SSE_KEEPALIVE_MS 15000
#define SSE_BACKLOG_MAX  (4u << 20)

struct sse_client {
        struct sse_client *next;
        struct ag_endpoint *ep;
        struct MHD_Connection *c;
        char *buf;
        size_t off, len, cap;
        bool suspended;
        bool overflow;
};

struct ag_endpoint {
        struct ag_loop *loop;
        struct MHD_Daemon *daemon;
        struct ag_io *io;       /* MHD's epoll fd */
        struct ag_timer *timer; /* MHD_get_timeout: idle connections, pending work */
        struct ag_endpoint_sources src;
        char token[128]; /* src.token copied; "" = none */
        int port;
        struct sse_client *clients; /* GET /timelines?watch=true */
        struct ag_timer *keepalive;
        bool stopping;
        unsigned long published;
};

/* Queues a response whose body (malloc'd, or NULL for none) MHD frees. */
static enum MHD_Result reply(struct MHD_Connection *c, unsigned int status,
                             const char *content_type, char *body, size_t len)
{
        struct MHD_Response *r = MHD_create_response_from_buffer(
            body != NULL ? len : 0, body,
            body != NULL ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
        if (r == NULL) {
                free(body);
                return MHD_NO;
        }
        if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type) != MHD_YES ||
            MHD_add_response_header(r, "X-Content-Type-Options", "nosniff") != MHD_YES ||
            (status == MHD_HTTP_METHOD_NOT_ALLOWED &&
             MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD") != MHD_YES)) {
                MHD_destroy_response(r);
                return MHD_NO;
        }
        enum MHD_Result res = MHD_queue_response(c, status, r);
        MHD_destroy_response(r);
        return res;
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned int status, const char *text)
{
        char *body = strdup(text);
        if (body == NULL)
                return MHD_NO;
        return reply(c, status, CONTENT_TEXT, body, strlen(body));
}

static enum MHD_Result reply_json(struct MHD_Connection *c, const char *route, cJSON *json)
{
        char *body = json != NULL ? cJSON_PrintUnformatted(json) : NULL;
        cJSON_Delete(json);
        if (body == NULL) {
                char msg[128];
                snprintf(msg, sizeof(msg), "cannot produce %s\n", route);
                return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, msg);
        }
        return reply(c, MHD_HTTP_OK, CONTENT_JSON, body, strlen(body));
}

/* Constant time in the length of the token. */
static bool token_equal(const char *a, const char *b)
{
        size_t na = strlen(a), nb = strlen(b);
        unsigned char d = na != nb;
        for (size_t i = 0; i < nb; i++)
                d |= (unsigned char)(i < na ? a[i] : 0) ^ (unsigned char)b[i];
        return d == 0;
}

static bool authorized(const struct ag_endpoint *ep, struct MHD_Connection *c)
{
        if (ep->token[0] == '\0')
                return false;
        const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
        if (h != NULL && strncmp(h, "Bearer ", 7) == 0 && token_equal(h + 7, ep->token))
                return true;
        const char *q = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token");
        return q != NULL && token_equal(q, ep->token);
}

static enum MHD_Result reply_page(struct ag_endpoint *ep, struct MHD_Connection *c)
{
        cJSON *tl = ep->src.timelines(ep->src.data);
        char *html = ag_page_render(tl);
        cJSON_Delete(tl);
        if (html == NULL)
                return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot produce /ui\n");
        struct MHD_Response *r =
            MHD_create_response_from_buffer(strlen(html), html, MHD_RESPMEM_MUST_FREE);
        if (r == NULL) {
                free(html);
                return MHD_NO;
        }
        /* Everything from this endpoint; no inline script; the token in the
         * page's address does not leak through a Referer. */
        if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, CONTENT_HTML) != MHD_YES ||
            MHD_add_response_header(r, "X-Content-Type-Options", "nosniff") != MHD_YES ||
            MHD_add_response_header(r, "Content-Security-Policy",
                                    "default-src 'self'; object-src 'none'; "
                                    "frame-ancestors 'none'") != MHD_YES ||
            MHD_add_response_header(r, "Referrer-Policy", "no-referrer") != MHD_YES ||
            MHD_add_response_header(r, "Cache-Control", "no-store") != MHD_YES) {
                MHD_destroy_response(r);
                return MHD_NO;
        }
        enum MHD_Result res = MHD_queue_response(c, MHD_HTTP_OK, r);
        MHD_destroy_response(r);
        return res;
}

/* ---- the event stream (server-sent events) ---------------------------------------- */

static bool sse_append(struct sse_client *cl, const char *s, size_t n)
{
        if (cl->overflow)
                return false;
        if (cl->off > 0 && cl->off == cl->len)
                cl->off = cl->len = 0;
        if (cl->len - cl->off + n > SSE_BACKLOG_MAX) {
                cl->overflow = true; /* the reader ends the stream */
                return false;
        }
        if (cl->len + n > cl->cap) {
                if (cl->off > 0) { /* compact first */
                        memmove(cl->buf, cl->buf + cl->off, cl->len - cl->off);
                        cl->len -= cl->off;
                        cl->off = 0;
                }
                size_t cap = cl->cap ? cl->cap : 16384;
                while (cap < cl->len + n)
                        cap *= 2;
                if (cap != cl->cap) {
                        char *b = realloc(cl->buf, cap);
                        if (b == NULL) {
                                cl->overflow = true;
                                return false;
                        }
                        cl->buf = b;
                        cl->cap = cap;
                }
        }
        memcpy(cl->buf + cl->len, s, n);
        cl->len += n;
        return true;
}

/* "event: NAME\ndata: JSON\n\n" (JSON printed unformatted has no newline). */
static void sse_message(struct sse_client *cl, const char *event, const char *data)
{
        char head[96];
        int n = snprintf(head, sizeof(head), "event: %s\ndata: ", event);
        if (sse_append(cl, head, (size_t)n) && sse_append(cl, data, strlen(data)))
                sse_append(cl, "\n\n", 2);
}

static void sse_wake(struct sse_client *cl)
{
        if (cl->suspended) {
                cl->suspended = false;
                MHD_resume_connection(cl->c);
        }
}

static ssize_t sse_read(void *cls, uint64_t pos, char *out, size_t max)
{
        struct sse_client *cl = cls;
        (void)pos;
        if (cl->overflow)
                return MHD_CONTENT_READER_END_WITH_ERROR;
        if (cl->ep->stopping)
                return MHD_CONTENT_READER_END_OF_STREAM;
        size_t n = cl->len - cl->off;
        if (n == 0) {
                /* Nothing to send: off MHD's loop until a publish. */
                cl->suspended = true;
                MHD_suspend_connection(cl->c);
                return 0;
        }
        if (n > max)
                n = max;
        memcpy(out, cl->buf + cl->off, n);
        cl->off += n;
        return (ssize_t)n;
}

static void sse_free(void *cls)
{
        struct sse_client *cl = cls;
        for (struct sse_client **pp = &cl->ep->clients; *pp; pp = &(*pp)->next)
                if (*pp == cl) {
                        *pp = cl->next;
                        break;
                }
        free(cl->buf);
        free(cl);
}

static enum MHD_Result start_stream(struct ag_endpoint *ep, struct MHD_Connection *c)
{
        cJSON *tl = ep->src.timelines(ep->src.data);
        char *snap = tl != NULL ? cJSON_PrintUnformatted(tl) : NULL;
        cJSON_Delete(tl);
        struct sse_client *cl = calloc(1, sizeof(*cl));
        if (snap == NULL || cl == NULL) {
                free(snap);
                free(cl);
                return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
                                  "cannot produce /timelines?watch=true\n");
        }
        cl->ep = ep;
        cl->c = c;
        /* The client's reconnect delay, then the state it starts from. */
        sse_append(cl, "retry: 1000\n", 12);
        sse_message(cl, "snapshot", snap);
        free(snap);
        struct MHD_Response *r =
            MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, sse_read, cl, sse_free);
        if (r == NULL) {
                free(cl->buf);
                free(cl);
                return MHD_NO;
        }
        cl->next = ep->clients;
        ep->clients = cl;
        if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, CONTENT_SSE) != MHD_YES ||
            MHD_add_response_header(r, "Cache-Control", "no-store") != MHD_YES ||
            MHD_add_response_header(r, "X-Content-Type-Options", "nosniff") != MHD_YES) {
                MHD_destroy_response(r); /* frees cl */
                return MHD_NO;
        }
        enum MHD_Result res = MHD_queue_response(c, MHD_HTTP_OK, r);
        MHD_destroy_response(r);
        return res;
}

static void run(struct ag_endpoint *ep);

void ag_endpoint_publish(struct ag_endpoint *ep, const char *event, const char *data)
{
        if (ep == NULL || ep->clients == NULL)
                return;
        ep->published++;
        for (struct sse_client *cl = ep->clients; cl; cl = cl->next) {
                sse_message(cl, event, data);
                sse_wake(cl);
        }
        run(ep);
}

size_t ag_endpoint_stream_clients(const struct ag_endpoint *ep)
{
        size_t n = 0;
        for (const struct sse_client *cl = ep->clients; cl; cl = cl->next)
                n++;
        return n;
}

static void on_keepalive(struct ag_timer *t, void *data)
{
        struct ag_endpoint *ep = data;
        for (struct sse_client *cl = ep->clients; cl; cl = cl->next) {
                sse_append(cl, ": keepalive\n\n", 14);
                sse_wake(cl);
        }
        run(ep);
        ag_timer_arm(t, SSE_KEEPALIVE_MS);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls)
{
        struct ag_endpoint *ep = cls;
        const struct ag_endpoint_sources *src = &ep->src;

        bool healthz = strcmp(url, "/healthz") == 0;
        bool metrics = strcmp(url, "/metrics") == 0 && src->metrics != NULL;
        bool pods = strcmp(url, "/pods") == 0 && src->pods != NULL;
        bool timelines = strcmp(url, "/timelines") == 0 && src->timelines != NULL;
        bool ui = strcmp(url, "/ui") == 0 && src->timelines != NULL;
        const char *asset_type = NULL;
        size_t asset_len = 0;
        const char *asset = strncmp(url, "/ui/", 4) == 0 && src->timelines != NULL
                                ? ag_page_asset(url + 4, &asset_type, &asset_len)
                                : NULL;
        if (!healthz && !metrics && !pods && !timelines && !ui && asset == NULL)
                return reply_text(c, MHD_HTTP_NOT_FOUND, "404 page not found\n");
        /* MHD sends HEAD responses without their body. Other methods are
         * answered before any request body is read. */
        if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
                return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "405 method not allowed\n");

        /* The page's script and style hold no data: open, like /healthz. */
        if (asset != NULL) {
                struct MHD_Response *r = MHD_create_response_from_buffer(asset_len, (void *)asset,
                                                                         MHD_RESPMEM_PERSISTENT);
                if (r == NULL)
                        return MHD_NO;
                if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, asset_type) !=
                        MHD_YES ||
                    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff") != MHD_YES) {
                        MHD_destroy_response(r);
                        return MHD_NO;
                }
                enum MHD_Result res = MHD_queue_response(c, MHD_HTTP_OK, r);
                MHD_destroy_response(r);
                return res;
        }
        if ((pods || timelines || ui) && !authorized(ep, c))
                return reply_text(c, MHD_HTTP_UNAUTHORIZED,
                                  "401 Unauthorized: this path needs the token in "
                                  "<root-dir>/endpoint.token\n");
        if (healthz) {
                char why[512] = "";
                if (src->healthy == NULL || src->healthy(src->data, why, sizeof(why)))
                        return reply_text(c, MHD_HTTP_OK, "ok");
                return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
                                  why[0] != '\0' ? why : "unhealthy");
        }
        if (metrics) {
                char *text = src->metrics(src->data);
                if (text == NULL)
                        return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
                                          "cannot produce /metrics\n");
                return reply(c, MHD_HTTP_OK, CONTENT_METRICS, text, strlen(text));
        }
        if (pods)
                return reply_json(c, "/pods", src->pods(src->data));
        if (ui)
                return reply_page(ep, c);
        const char *watch = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "watch");
        if (watch != NULL && (strcmp(watch, "true") == 0 || strcmp(watch, "1") == 0))
                return start_stream(ep, c);
        const char *format = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
        if (format != NULL && strcmp(format, "trace") == 0) {
                cJSON *tl = src->timelines(src->data);
                cJSON *trace = tl != NULL ? ag_trace_from_timelines(tl, cb_wall_now_us()) : NULL;
                cJSON_Delete(tl);
                return reply_json(c, "/timelines?format=trace", trace);
        }
        if (format != NULL && strcmp(format, "json") != 0)
                return reply_text(c, MHD_HTTP_BAD_REQUEST,
                                  "400 Bad Request: format must be json or trace\n");
        return reply_json(c, "/timelines", src->timelines(src->data));
}

/* MHD wants MHD_run again within its timeout even without socket activity
 * (idle connections to close, data it already read but did not process). */
static void run(struct ag_endpoint *ep)
{
        MHD_run(ep->daemon);
        MHD_UNSIGNED_LONG_LONG ms = 0;
        if (MHD_get_timeout(ep->daemon, &ms) == MHD_YES)
                ag_timer_arm(ep->timer, ms);
        else
                ag_timer_disarm(ep->timer);
}

static void on_epoll(struct ag_io *io, int fd, uint32_t events, void *data)
{
        run(data);
}

static void on_timer(struct ag_timer *t, void *data)
{
        run(data);
}

/* The endpoint has neither authentication nor TLS: loopback only. */
static int parse_loopback(const char *address, int port, struct sockaddr_storage *ss,
                          struct cb_error *err)
{
        memset(ss, 0, sizeof(*ss));
        struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
        struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
        if (inet_pton(AF_INET, address, &v4->sin_addr) == 1) {
                v4->sin_family = AF_INET;
                v4->sin_port = htons((uint16_t)port);
                if ((ntohl(v4->sin_addr.s_addr) >> 24) == 127)
                        return 0;
        } else if (inet_pton(AF_INET6, address, &v6->sin6_addr) == 1) {
                v6->sin6_family = AF_INET6;
                v6->sin6_port = htons((uint16_t)port);
                if (IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr))
                        return 0;
        } else {
                return cb_error_set(err, 0,
                                    "endpoint address \"%s\" is not an IPv4 or IPv6 address: "
                                    "use %s (or ::1)",
                                    address, AG_ENDPOINT_DEFAULT_ADDRESS);
        }
        return cb_error_set(err, 0,
                            "endpoint address %s is not a loopback address: serving beyond "
                            "loopback needs TLS and a token, which cubelet does not support "
                            "yet; use %s (or ::1)",
                            address, AG_ENDPOINT_DEFAULT_ADDRESS);
}

int ag_endpoint_start(struct ag_loop *loop, const char *bind_address, int port,
                      const struct ag_endpoint_sources *src, struct ag_endpoint **ret,
                      struct cb_error *err)
{
        const char *address = bind_address != NULL ? bind_address : AG_ENDPOINT_DEFAULT_ADDRESS;
        if (port < 0 || port > 65535)
                return cb_error_set(err, 0, "endpoint port %d is out of range: use 0 to 65535",
                                    port);
        struct sockaddr_storage ss;
        if (parse_loopback(address, port, &ss, err) < 0)
                return -1;

        struct ag_endpoint *ep = calloc(1, sizeof(*ep));
        if (ep == NULL)
                return cb_error_set(err, ENOMEM, "cannot allocate the endpoint");
        ep->loop = loop;
        ep->src = *src;
        snprintf(ep->token, sizeof(ep->token), "%s", src->token != NULL ? src->token : "");
        ep->src.token = NULL;

        /* MHD_USE_EPOLL without MHD_USE_INTERNAL_POLLING_THREAD: no threads,
         * MHD_run() is called from the loop when its epoll fd is readable.
         * No MHD_USE_ERROR_LOG: library code does not print. On Linux MHD
         * creates every socket and its epoll fd close-on-exec. */
        unsigned int flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
        if (ss.ss_family == AF_INET6)
                flags |= MHD_USE_IPv6;
        errno = 0;
        ep->daemon = MHD_start_daemon(
            flags, (uint16_t)port, NULL, NULL, handle, ep, MHD_OPTION_SOCK_ADDR,
            (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_TIMEOUT,
            (unsigned int)ENDPOINT_CONNECTION_TIMEOUT_S, MHD_OPTION_CONNECTION_LIMIT,
            (unsigned int)ENDPOINT_CONNECTION_LIMIT, MHD_OPTION_END);
        if (ep->daemon == NULL) {
                int e = errno;
                free(ep);
                return cb_error_set(err, e, "cannot serve the endpoint on %s port %d%s", address,
                                    port, e == 0 ? ": is the port already in use?" : "");
        }
        const union MHD_DaemonInfo *info =
            MHD_get_daemon_info(ep->daemon, MHD_DAEMON_INFO_EPOLL_FD);
        int epfd = info != NULL ? info->epoll_fd : -1;
        info = MHD_get_daemon_info(ep->daemon, MHD_DAEMON_INFO_BIND_PORT);
        ep->port = info != NULL ? info->port : 0;
        if (epfd < 0 || ep->port == 0) {
                ag_endpoint_free(ep);
                return cb_error_set(err, 0,
                                    "the endpoint on %s port %d has no epoll fd or port: "
                                    "libmicrohttpd must be built with epoll support",
                                    address, port);
        }
        ep->timer = ag_timer_new(loop, on_timer, ep, err);
        if (ep->timer == NULL) {
                ag_endpoint_free(ep);
                return cb_error_prefix(err, "endpoint");
        }
        ep->keepalive = ag_timer_new(loop, on_keepalive, ep, err);
        if (ep->keepalive == NULL) {
                ag_endpoint_free(ep);
                return cb_error_prefix(err, "endpoint");
        }
        ag_timer_arm(ep->keepalive, SSE_KEEPALIVE_MS);
        ep->io = ag_io_new(loop, epfd, EPOLLIN, on_epoll, ep, err);
        if (ep->io == NULL) {
                ag_endpoint_free(ep);
                return cb_error_prefix(err, "endpoint");
        }
        /* Let MHD arm its first timeout, if any. */
        run(ep);
        *ret = ep;
        return 0;
}

void ag_endpoint_free(struct ag_endpoint *ep)
{
        if (ep == NULL)
                return;
        /* Unwatch the epoll fd before MHD closes it. MHD must not be
         * stopped with suspended connections: resume them, and let their
         * reader end the stream. */
        ep->stopping = true;
        for (struct sse_client *cl = ep->clients; cl; cl = cl->next)
                sse_wake(cl);
        if (ep->daemon != NULL && ep->clients != NULL)
                MHD_run(ep->daemon);
        ag_io_free(ep->io);
        ag_timer_free(ep->timer);
        ag_timer_free(ep->keepalive);
        if (ep->daemon != NULL)
                MHD_stop_daemon(ep->daemon);
        free(ep);
}

int ag_endpoint_port(const struct ag_endpoint *ep)
{
        return ep->port;
}
