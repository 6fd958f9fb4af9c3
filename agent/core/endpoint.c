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

/* Idle connections are dropped after this long, and at most this many are
 * served at once: the endpoint is for local tools and Prometheus scrapes,
 * and must not let a stuck client pin memory in the agent. */
#define ENDPOINT_CONNECTION_TIMEOUT_S 30
#define ENDPOINT_CONNECTION_LIMIT     64

#define CONTENT_TEXT    "text/plain; charset=utf-8"
#define CONTENT_METRICS "text/plain; version=0.0.4; charset=utf-8"
#define CONTENT_JSON    "application/json"

struct ag_endpoint {
        struct ag_loop *loop;
        struct MHD_Daemon *daemon;
        struct ag_io *io;       /* MHD's epoll fd */
        struct ag_timer *timer; /* MHD_get_timeout: idle connections, pending work */
        struct ag_endpoint_sources src;
        char token[128]; /* src.token copied; "" = none */
        int port;
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
        if (!healthz && !metrics && !pods && !timelines)
                return reply_text(c, MHD_HTTP_NOT_FOUND, "404 page not found\n");
        /* MHD sends HEAD responses without their body. Other methods are
         * answered before any request body is read. */
        if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
                return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "405 method not allowed\n");

        if ((pods || timelines) && !authorized(ep, c))
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
        unsigned int flags = MHD_USE_EPOLL;
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
        /* Unwatch the epoll fd before MHD closes it. */
        ag_io_free(ep->io);
        ag_timer_free(ep->timer);
        if (ep->daemon != NULL)
                MHD_stop_daemon(ep->daemon);
        free(ep);
}

int ag_endpoint_port(const struct ag_endpoint *ep)
{
        return ep->port;
}
