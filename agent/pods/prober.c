/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Container probes on the agent's loop (prober.h). One attempt at a time:
 * tick timer -> start (exec: pidfd + output pipe watchers; tcp: a
 * non-blocking connect watched for EPOLLOUT; http: an easy handle on the
 * prober's own curl multi handle, whose sockets and timer are loop
 * watchers) -> finish: thresholds, callback, next tick.
 */
#include "agent/pods/prober.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/core/curl.h"
#include "agent/core/version.h"
#include "agent/pods/hook.h"
#include "lib/cleanup.h"
#include "runtime/container.h"

#define MAX_OUTPUT (10 * 1024) /* the kubelet's maxReadLength / maxRespBodyLength */

struct ag_prober {
        struct ag_loop *loop;
        enum ag_probe_kind kind;
        enum k8s_handler_kind hkind;
        int64_t delay_ms, period_ms, timeout_ms;
        int success_threshold, failure_threshold;
        ag_probe_result_fn fn;
        void *data;

        /* the target */
        char *ip, *host, *scheme, *path, *port_error;
        int port;
        char **argv; /* exec, NULL-terminated */
        char *cmdline;
        char *root_dir, *container_id, *monitor_path;
        struct curl_slist *headers;

        /* results */
        enum ag_probe_result result, last;
        int run;
        bool stopped;

        /* the attempt in flight */
        struct ag_timer *tick, *tmo;
        bool busy, timed_out;
        uint64_t started_ms;
        int pidfd, outfd, sock;
        struct ag_io *io_pid, *io_out, *io_sock;
        char out[MAX_OUTPUT + 1];
        size_t out_len;
        struct ag_curl *http; /* the node's shared one, or own_http */
        bool own_http;
        CURL *easy;
        char url[1024];
        char curl_err[CURL_ERROR_SIZE];

        int in_cb;
        bool dead;
};

/* "Liveness", "Readiness", "Startup". */
static const char *probe_kind_name(enum ag_probe_kind kind)
{
        switch (kind) {
        case AG_PROBE_LIVENESS:
                return "Liveness";
        case AG_PROBE_READINESS:
                return "Readiness";
        default:
                return "Startup";
        }
}

enum ag_probe_result ag_prober_result(const struct ag_prober *p)
{
        return p->result;
}

/* "10.0.0.5:8080", "[fd00::5]:8080" */
static void join_host_port(char *buf, size_t size, const char *host, int port)
{
        snprintf(buf, size, strchr(host, ':') != NULL ? "[%s]:%d" : "%s:%d", host, port);
}

/* Go spells errno strings in lower case: "connection refused". */
static void go_strerror(int e, char *buf, size_t size)
{
        snprintf(buf, size, "%s", strerror(e));
        if (buf[0] != '\0')
                buf[0] = (char)tolower((unsigned char)buf[0]);
}

/* ---- finishing an attempt --------------------------------------------------- */

static void destroy(struct ag_prober *p);

static void stop_attempt(struct ag_prober *p)
{
        ag_timer_disarm(p->tmo);
        ag_io_free(p->io_pid);
        ag_io_free(p->io_out);
        ag_io_free(p->io_sock);
        p->io_pid = p->io_out = p->io_sock = NULL;
        if (p->pidfd >= 0) {
                struct cb_error e;
                int code;
                /* the helper SIGKILLs the command's group on SIGTERM and
                 * exits at once: a short wait */
                (void)rt_container_exec_kill(p->pidfd, &e);
                (void)rt_container_exec_reap(p->pidfd, true, &code, &e);
                close(p->pidfd);
                p->pidfd = -1;
        }
        if (p->outfd >= 0)
                close(p->outfd);
        if (p->sock >= 0)
                close(p->sock);
        p->outfd = p->sock = -1;
        if (p->easy != NULL) {
                curl_multi_remove_handle(ag_curl_multi(p->http), p->easy);
                curl_easy_cleanup(p->easy);
                p->easy = NULL;
        }
        p->busy = false;
        p->timed_out = false;
}

static void finish(struct ag_prober *p, bool ok, bool errored, const char *output)
{
        stop_attempt(p);
        enum ag_probe_result r = ok ? AG_PROBE_SUCCESS : AG_PROBE_FAILURE;
        if (p->last == r) {
                p->run++;
        } else {
                p->last = r;
                p->run = 1;
        }
        bool changed = false;
        if (!((r == AG_PROBE_FAILURE && p->run < p->failure_threshold) ||
              (r == AG_PROBE_SUCCESS && p->run < p->success_threshold))) {
                changed = p->result != r;
                p->result = r;
                if (r == AG_PROBE_FAILURE && p->kind != AG_PROBE_READINESS) {
                        /* the container will be restarted: hold until then */
                        p->stopped = true;
                        p->run = 0;
                }
                if (r == AG_PROBE_SUCCESS && p->kind == AG_PROBE_STARTUP)
                        p->stopped = true; /* started: never probed again */
        }
        if (!ok || changed) {
                _cleanup_free_ char *msg = NULL;
                if (!ok && asprintf(&msg, "%s probe %s: %s", probe_kind_name(p->kind),
                                    errored ? "errored" : "failed", output) < 0)
                        msg = NULL;
                struct ag_probe_update u = {
                    .result = p->result, .changed = changed, .message = ok ? NULL : msg};
                if (!ok && msg == NULL)
                        u.message = errored ? "probe errored" : "probe failed";
                p->in_cb++;
                p->fn(p, &u, p->data);
                p->in_cb--;
                if (p->dead) {
                        if (p->in_cb == 0)
                                destroy(p);
                        return;
                }
        }
        if (p->stopped)
                return;
        uint64_t now = ag_now_ms(), due = p->started_ms + (uint64_t)p->period_ms;
        ag_timer_arm(p->tick, due > now ? due - now : 0);
}

/* ---- exec --------------------------------------------------------------------- */

static void exec_done(struct ag_prober *p)
{
        (void)rt_container_exec_read(p->outfd, p->out, MAX_OUTPUT, &p->out_len);
        p->out[p->out_len] = '\0';
        int code = -1;
        struct cb_error e = {0};
        int r = rt_container_exec_reap(p->pidfd, true, &code, &e);
        /* Out of epoll before the close: closed first, EPOLL_CTL_DEL failed
         * (EBADF) and the pidfd stayed registered while a child forked by
         * an offload thread still held it, so its event came after the
         * watcher was freed (heap-use-after-free in ag_loop_run under ASan,
         * tests/faults/process_kill). */
        ag_io_free(p->io_pid);
        p->io_pid = NULL;
        close(p->pidfd);
        p->pidfd = -1;
        if (p->timed_out) {
                char msg[1200];
                snprintf(msg, sizeof(msg), "command \"%s\" timed out", p->cmdline);
                finish(p, false, false, msg);
        } else if (r < 0) {
                finish(p, false, true, e.msg);
        } else {
                finish(p, code == 0, false, p->out);
        }
}

static void on_exec_pid(struct ag_io *io, int fd, uint32_t events, void *data)
{
        exec_done(data);
}

static void on_exec_out(struct ag_io *io, int fd, uint32_t events, void *data)
{
        struct ag_prober *p = data;
        char buf[4096];
        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n > 0) {
                        size_t take = (size_t)n;
                        if (p->out_len + take > MAX_OUTPUT)
                                take = MAX_OUTPUT - p->out_len;
                        memcpy(p->out + p->out_len, buf, take);
                        p->out_len += take;
                        continue;
                }
                if (n == 0 || errno != EAGAIN) {
                        /* EOF (background children may keep it open
                         * longer: the pidfd ends the attempt, not this) */
                        ag_io_free(p->io_out);
                        p->io_out = NULL;
                }
                return;
        }
}

static void start_exec(struct ag_prober *p)
{
        struct cb_error err = {0};
        p->out_len = 0;
        if (rt_container_exec_start(p->root_dir, p->container_id, p->monitor_path,
                                    (const char *const *)p->argv, &p->pidfd, &p->outfd, &err) < 0) {
                p->pidfd = p->outfd = -1;
                finish(p, false, true, err.msg);
                return;
        }
        p->io_out = ag_io_new(p->loop, p->outfd, EPOLLIN, on_exec_out, p, &err);
        p->io_pid = ag_io_new(p->loop, p->pidfd, EPOLLIN, on_exec_pid, p, &err);
        if (p->io_out == NULL || p->io_pid == NULL) {
                finish(p, false, true, err.msg);
                return;
        }
        ag_timer_arm(p->tmo, (uint64_t)p->timeout_ms);
}

/* ---- tcpSocket ------------------------------------------------------------------ */

static void tcp_fail(struct ag_prober *p, const char *what)
{
        char hp[300], msg[512];
        join_host_port(hp, sizeof(hp), p->host, p->port);
        snprintf(msg, sizeof(msg), "dial tcp %s: %s", hp, what);
        finish(p, false, false, msg);
}

static void on_tcp(struct ag_io *io, int fd, uint32_t events, void *data)
{
        struct ag_prober *p = data;
        int e = 0;
        socklen_t len = sizeof(e);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
                e = errno;
        if (e == 0) {
                finish(p, true, false, "");
                return;
        }
        char s[128], what[160];
        go_strerror(e, s, sizeof(s));
        snprintf(what, sizeof(what), "connect: %s", s);
        tcp_fail(p, what);
}

static void start_tcp(struct ag_prober *p)
{
        struct sockaddr_storage ss = {0};
        socklen_t sl;
        struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
        if (inet_pton(AF_INET, p->host, &in4->sin_addr) == 1) {
                in4->sin_family = AF_INET;
                in4->sin_port = htons((uint16_t)p->port);
                sl = sizeof(*in4);
        } else if (inet_pton(AF_INET6, p->host, &in6->sin6_addr) == 1) {
                in6->sin6_family = AF_INET6;
                in6->sin6_port = htons((uint16_t)p->port);
                sl = sizeof(*in6);
        } else {
                /* names would need a blocking resolver: the kubelet's
                 * probes use IPs in practice */
                tcp_fail(p, "lookup: not an IP address");
                return;
        }
        p->sock = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (p->sock < 0) {
                char s[128], what[160];
                go_strerror(errno, s, sizeof(s));
                snprintf(what, sizeof(what), "socket: %s", s);
                tcp_fail(p, what);
                return;
        }
        if (connect(p->sock, (struct sockaddr *)&ss, sl) == 0) {
                finish(p, true, false, "");
                return;
        }
        if (errno != EINPROGRESS) {
                char s[128], what[160];
                go_strerror(errno, s, sizeof(s));
                snprintf(what, sizeof(what), "connect: %s", s);
                tcp_fail(p, what);
                return;
        }
        struct cb_error err = {0};
        p->io_sock = ag_io_new(p->loop, p->sock, EPOLLOUT, on_tcp, p, &err);
        if (p->io_sock == NULL) {
                finish(p, false, true, err.msg);
                return;
        }
        ag_timer_arm(p->tmo, (uint64_t)p->timeout_ms);
}

/* ---- httpGet ---------------------------------------------------------------------- */

static void http_result(struct ag_prober *p, CURLcode rc)
{
        char msg[2048];
        if (rc == CURLE_OK) {
                long status = 0;
                curl_easy_getinfo(p->easy, CURLINFO_RESPONSE_CODE, &status);
                if (status >= 200 && status < 400) {
                        finish(p, true, false, "");
                } else {
                        snprintf(msg, sizeof(msg), "HTTP probe failed with statuscode: %ld",
                                 status);
                        finish(p, false, false, msg);
                }
                return;
        }
        char hp[300];
        join_host_port(hp, sizeof(hp), p->host, p->port);
        if (rc == CURLE_OPERATION_TIMEDOUT) {
                snprintf(msg, sizeof(msg),
                         "Get \"%s\": context deadline exceeded (Client.Timeout "
                         "exceeded while awaiting headers)",
                         p->url);
        } else if (rc == CURLE_COULDNT_CONNECT) {
                long oe = 0;
                char s[128];
                curl_easy_getinfo(p->easy, CURLINFO_OS_ERRNO, &oe);
                go_strerror(oe > 0 ? (int)oe : ECONNREFUSED, s, sizeof(s));
                snprintf(msg, sizeof(msg), "Get \"%s\": dial tcp %s: connect: %s", p->url, hp, s);
        } else {
                snprintf(msg, sizeof(msg), "Get \"%s\": %s", p->url,
                         p->curl_err[0] != '\0' ? p->curl_err : curl_easy_strerror(rc));
        }
        finish(p, false, false, msg);
}

/* A probe's request finished (agent/core/curl.h); the easy handle names
 * its prober. */
static void on_http_done(CURL *easy, CURLcode rc, void *data)
{
        struct ag_prober *p = NULL;
        (void)data;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&p);
        if (p != NULL && p->easy == easy)
                http_result(p, rc);
}

int ag_probe_http_new(struct ag_loop *loop, struct ag_curl **ret, struct cb_error *err)
{
        return ag_curl_new(loop, on_http_done, NULL, NULL, ret, err);
}

static size_t discard_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
        struct ag_prober *p = ud;
        size_t n = size * nmemb, take = n;
        /* kept only up to the kubelet's limit; nothing uses it beyond that */
        if (p->out_len + take > MAX_OUTPUT)
                take = MAX_OUTPUT - p->out_len;
        memcpy(p->out + p->out_len, ptr, take);
        p->out_len += take;
        return n;
}

static void start_http(struct ag_prober *p)
{
        p->easy = curl_easy_init();
        if (p->easy == NULL) {
                finish(p, false, true, "cannot create an HTTP request");
                return;
        }
        p->out_len = 0;
        p->curl_err[0] = '\0';
        CURL *e = p->easy;
        ag_pod_http_setopts(e, p->url, p->headers, (long)p->timeout_ms, discard_body, p,
                            p->curl_err);
        curl_easy_setopt(e, CURLOPT_PRIVATE, p);
        if (curl_multi_add_handle(ag_curl_multi(p->http), e) != CURLM_OK)
                finish(p, false, true, "cannot start the HTTP request");
}

/* ---- the tick ------------------------------------------------------------------------ */

static void on_tick(struct ag_timer *t, void *data)
{
        struct ag_prober *p = data;
        if (p->busy || p->stopped)
                return;
        p->busy = true;
        p->started_ms = ag_now_ms();
        if (p->port_error != NULL) {
                finish(p, false, true, p->port_error);
                return;
        }
        switch (p->hkind) {
        case K8S_HANDLER_EXEC:
                start_exec(p);
                break;
        case K8S_HANDLER_TCP_SOCKET:
                start_tcp(p);
                break;
        default:
                start_http(p);
                break;
        }
}

static void on_timeout(struct ag_timer *t, void *data)
{
        struct ag_prober *p = data;
        if (p->hkind == K8S_HANDLER_TCP_SOCKET) {
                tcp_fail(p, "i/o timeout");
                return;
        }
        if (p->hkind == K8S_HANDLER_EXEC && p->pidfd >= 0) {
                /* the pidfd watcher finishes the attempt once it is dead */
                struct cb_error e;
                p->timed_out = true;
                (void)rt_container_exec_kill(p->pidfd, &e);
        }
}

/* ---- life cycle ------------------------------------------------------------------------- */

static void destroy(struct ag_prober *p)
{
        stop_attempt(p);
        ag_timer_free(p->tick);
        ag_timer_free(p->tmo);
        if (p->own_http)
                ag_curl_free(p->http);
        curl_slist_free_all(p->headers);
        for (size_t i = 0; p->argv != NULL && p->argv[i] != NULL; i++)
                free(p->argv[i]);
        free(p->argv);
        free(p->cmdline);
        free(p->ip);
        free(p->host);
        free(p->scheme);
        free(p->path);
        free(p->port_error);
        free(p->root_dir);
        free(p->container_id);
        free(p->monitor_path);
        free(p);
}

void ag_prober_free(struct ag_prober *p)
{
        if (p == NULL)
                return;
        if (p->in_cb > 0) {
                p->dead = true;
                return;
        }
        destroy(p);
}

static char *dup_or_null(const char *s)
{
        return s != NULL ? strdup(s) : NULL;
}

/* The port of a handler: a number, or a named container port (kubelet
 * findPortByName / extractPort). A bad one is an "errored" probe. */
static void resolve_port(struct ag_prober *p, const struct k8s_handler *h,
                         const struct ag_probe_target *t)
{
        int port = h->port;
        if (h->port_name != NULL && h->port_name[0] != '\0') {
                port = -1;
                for (size_t i = 0; i < t->n_ports; i++)
                        if (t->ports[i].name != NULL &&
                            strcmp(t->ports[i].name, h->port_name) == 0) {
                                port = t->ports[i].container_port;
                                break;
                        }
                if (port < 0) {
                        if (asprintf(&p->port_error, "couldn't find port: %s", h->port_name) < 0)
                                p->port_error = NULL;
                        return;
                }
        }
        if (port <= 0 || port > 65535) {
                if (asprintf(&p->port_error, "invalid port number: %d", port) < 0)
                        p->port_error = NULL;
                return;
        }
        p->port = port;
}

static int setup_http(struct ag_prober *p, const struct k8s_handler *h,
                      const struct ag_probe_target *t, struct cb_error *err)
{
        const char *scheme =
            h->scheme != NULL && strcasecmp(h->scheme, "HTTPS") == 0 ? "https" : "http";
        const char *path = h->path != NULL ? h->path : "";
        char hp[300];
        join_host_port(hp, sizeof(hp), p->host, p->port);
        if ((size_t)snprintf(p->url, sizeof(p->url), "%s://%s%s%s", scheme, hp,
                             path[0] == '/' ? "" : "/", path) >= sizeof(p->url))
                return cb_error_set(err, ENAMETOOLONG, "httpGet.path \"%s\" is too long", path);
        char ua[64];
        /* "kube-probe/1.32" from "v1.32.0" */
        const char *v = AG_KUBELET_VERSION;
        if (v[0] == 'v')
                v++;
        const char *dot2 = strchr(v, '.');
        dot2 = dot2 != NULL ? strchr(dot2 + 1, '.') : NULL;
        snprintf(ua, sizeof(ua), "User-Agent: kube-probe/%.*s",
                 dot2 != NULL ? (int)(dot2 - v) : (int)strlen(v), v);
        bool has_ua = false, has_accept = false;
        for (size_t i = 0; i < h->n_headers; i++) {
                if (h->headers[i].name == NULL)
                        continue;
                has_ua |= strcasecmp(h->headers[i].name, "User-Agent") == 0;
                has_accept |= strcasecmp(h->headers[i].name, "Accept") == 0;
        }
        struct curl_slist *l = NULL;
        if (!has_ua)
                l = curl_slist_append(l, ua);
        if (!has_accept && l != NULL)
                l = curl_slist_append(l, "Accept: */*");
        if (l != NULL)
                l = curl_slist_append(l, "Connection: close");
        for (size_t i = 0; l != NULL && i < h->n_headers; i++) {
                if (h->headers[i].name == NULL || h->headers[i].name[0] == '\0')
                        continue;
                _cleanup_free_ char *line = NULL;
                const char *val = h->headers[i].value != NULL ? h->headers[i].value : "";
                /* "Name;" is curl's spelling of a header with an empty value */
                if (asprintf(&line, val[0] != '\0' ? "%s: %s" : "%s;", h->headers[i].name, val) < 0)
                        return cb_error_set(err, ENOMEM, "httpHeaders");
                struct curl_slist *n = curl_slist_append(l, line);
                if (n == NULL) {
                        curl_slist_free_all(l);
                        l = NULL;
                }
                l = n;
        }
        if (l == NULL)
                return cb_error_set(err, ENOMEM, "httpGet headers");
        p->headers = l;
        p->http = t->http;
        if (p->http == NULL) {
                if (ag_probe_http_new(p->loop, &p->http, err) < 0)
                        return -1;
                p->own_http = true;
        }
        return 0;
}

static int setup_exec(struct ag_prober *p, const struct k8s_handler *h,
                      const struct ag_probe_target *t, struct cb_error *err)
{
        if (h->n_command == 0 || h->command == NULL || h->command[0] == NULL)
                return cb_error_set(err, EINVAL, "exec.command is empty");
        if (t->root_dir == NULL || t->container_id == NULL || t->monitor_path == NULL)
                return cb_error_set(err, EINVAL,
                                    "an exec probe needs root_dir, container_id and "
                                    "monitor_path in its target");
        p->argv = calloc(h->n_command + 1, sizeof(char *));
        size_t len = 1;
        for (size_t i = 0; p->argv != NULL && i < h->n_command; i++) {
                p->argv[i] = strdup(h->command[i] != NULL ? h->command[i] : "");
                if (p->argv[i] == NULL)
                        return cb_error_set(err, ENOMEM, "exec.command");
                len += strlen(p->argv[i]) + 1;
        }
        p->cmdline = calloc(1, len);
        p->root_dir = strdup(t->root_dir);
        p->container_id = strdup(t->container_id);
        p->monitor_path = strdup(t->monitor_path);
        if (p->argv == NULL || p->cmdline == NULL || p->root_dir == NULL ||
            p->container_id == NULL || p->monitor_path == NULL)
                return cb_error_set(err, ENOMEM, "exec probe");
        /* what the kubelet quotes in its timeout message: argv joined */
        size_t off = 0;
        for (size_t i = 0; i < h->n_command; i++) {
                size_t n = strlen(p->argv[i]);
                if (i > 0)
                        p->cmdline[off++] = ' ';
                memcpy(p->cmdline + off, p->argv[i], n);
                off += n;
        }
        p->cmdline[off] = '\0';
        return 0;
}

struct ag_prober *ag_prober_new(struct ag_loop *loop, enum ag_probe_kind kind,
                                const struct k8s_probe *probe, const struct ag_probe_target *t,
                                ag_probe_result_fn fn, void *data, struct cb_error *err)
{
        const char *kname = probe_kind_name(kind);
        const struct k8s_handler *h = &probe->handler;
        if (h->kind != K8S_HANDLER_EXEC && h->kind != K8S_HANDLER_HTTP_GET &&
            h->kind != K8S_HANDLER_TCP_SOCKET) {
                cb_error_set(err, ENOTSUP,
                             "%s probe: %s handlers are not supported (use exec, httpGet or "
                             "tcpSocket)",
                             kname, h->kind == K8S_HANDLER_GRPC ? "grpc" : "this kind of");
                return NULL;
        }
        struct ag_prober *p = calloc(1, sizeof(*p));
        if (p == NULL) {
                cb_error_set(err, ENOMEM, "%s probe", kname);
                return NULL;
        }
        p->loop = loop;
        p->kind = kind;
        p->hkind = h->kind;
        p->fn = fn;
        p->data = data;
        p->pidfd = p->outfd = p->sock = -1;
        p->delay_ms =
            (int64_t)(probe->initial_delay_seconds > 0 ? probe->initial_delay_seconds : 0) * 1000;
        p->period_ms = (int64_t)(probe->period_seconds > 0 ? probe->period_seconds : 10) * 1000;
        p->timeout_ms = (int64_t)(probe->timeout_seconds > 0 ? probe->timeout_seconds : 1) * 1000;
        p->success_threshold = probe->success_threshold > 0 ? probe->success_threshold : 1;
        p->failure_threshold = probe->failure_threshold > 0 ? probe->failure_threshold : 3;
        /* worker.go initialValue */
        p->result = kind == AG_PROBE_READINESS  ? AG_PROBE_FAILURE
                    : kind == AG_PROBE_LIVENESS ? AG_PROBE_SUCCESS
                                                : AG_PROBE_UNKNOWN;
        p->last = AG_PROBE_UNKNOWN;
        p->tick = ag_timer_new(loop, on_tick, p, err);
        p->tmo = ag_timer_new(loop, on_timeout, p, err);
        if (p->tick == NULL || p->tmo == NULL)
                goto fail;
        if (h->kind == K8S_HANDLER_EXEC) {
                if (setup_exec(p, h, t, err) < 0)
                        goto fail;
        } else {
                const char *host = h->host != NULL && h->host[0] != '\0' ? h->host : t->ip;
                if (host == NULL || host[0] == '\0') {
                        cb_error_set(err, EINVAL, "%s probe: no pod IP and no host to probe",
                                     kname);
                        goto fail;
                }
                p->host = strdup(host);
                p->ip = dup_or_null(t->ip);
                if (p->host == NULL) {
                        cb_error_set(err, ENOMEM, "%s probe", kname);
                        goto fail;
                }
                resolve_port(p, h, t);
                if (h->kind == K8S_HANDLER_HTTP_GET && setup_http(p, h, t, err) < 0)
                        goto fail;
        }
        if (ag_timer_arm(p->tick, (uint64_t)p->delay_ms) < 0) {
                cb_error_set(err, errno, "%s probe: cannot arm the timer", kname);
                goto fail;
        }
        return p;
fail:
        cb_error_prefix(err, "%s probe", kname);
        destroy(p);
        return NULL;
}
