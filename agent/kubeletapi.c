/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node API server (see agent/kubeletapi.h, docs/node-api.md).
 *
 * Event loop: libwebsockets runs on a foreign libuv loop. libuv exposes
 * its epoll fd (uv_backend_fd) and its next timeout (uv_backend_timeout),
 * its documented way of being embedded: the agent's loop watches that fd
 * and a timer, and both run uv_run(UV_RUN_NOWAIT). Anything done to a
 * connection from outside a libwebsockets callback (exec output arriving,
 * a log file growing) ends with kick(), so libuv applies the change on the
 * next loop iteration.
 *
 * Authentication happens per request, before any work: a client
 * certificate that verified against the client CA (the TLS handshake asks
 * for one but does not require it, so bearer-token clients and clients
 * with an untrusted certificate get a clear 401 instead of a failed
 * handshake), or "Authorization: Bearer" with a token of the token file.
 * Authenticated users are authorized for everything (the kubelet's
 * AlwaysAllow authorization mode).
 */
#include "agent/kubeletapi.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <libwebsockets.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <uv.h>

#include "agent/log.h"
#include "agent/nodeapi_proto.h"
#include "agent/podlogs.h"
#include "lib/cleanup.h"
#include "runtime/container.h"

#define MAX_ARGS   256
#define LOG_CHUNK  65536
#define OUT_HIGH   (1 << 20) /* queued exec output above which the pipes are not read */
#define STDIN_HIGH (1 << 20)
/* The WebSocket close opcode's lws_write() type: libwebsockets keeps the
 * slot between LWS_WRITE_HTTP (3) and LWS_WRITE_PING (5) for it and frames
 * it like any other message (see exec_writable for why it is written). */
#define LWS_WRITE_CLOSE_FRAME ((enum lws_write_protocol)4)
#define READ_CHUNK            32768

struct ag_napi {
        struct ag_loop *loop;
        struct ag_napi_config cfg;
        uv_loop_t uv;
        bool uv_ok;
        struct lws_context *ctx;
        struct ag_io *uv_io;
        struct ag_timer *uv_timer;
        struct ag_napi_tokens *tokens;
        char cert_path[4096], key_path[4096];
        int port;
        struct exec *execs;     /* live exec sessions */
        struct reaper *reapers; /* killed execs waiting to be reaped */
};

/* ---- the libuv embedding ---- */

static void service(struct ag_napi *s)
{
        uv_run(&s->uv, UV_RUN_NOWAIT);
        int t = uv_backend_timeout(&s->uv);
        if (t >= 0)
                ag_timer_arm(s->uv_timer, (uint64_t)t);
        else
                ag_timer_disarm(s->uv_timer);
}

static void on_uv_fd(struct ag_io *io, int fd, uint32_t events, void *data)
{
        (void)io;
        (void)fd;
        (void)events;
        service(data);
}

static void on_uv_timer(struct ag_timer *t, void *data)
{
        (void)t;
        service(data);
}

static void kick(struct ag_napi *s)
{
        ag_timer_arm(s->uv_timer, 0);
}

/* ---- per-connection state ---- */

struct logstream {
        int fd, ino;
        struct ag_io *ino_io;
        struct ag_io *hup_io; /* the client's socket, for its hangup while we wait */
        struct ag_napi *srv;
        struct lws *wsi;
        struct ag_log_options opts;
        int64_t off, sent;
        bool follow, ended, finished;
        char in[LOG_CHUNK];
        size_t in_len;
};

struct outmsg {
        struct outmsg *next;
        size_t len; /* payload after LWS_PRE, channel byte included */
        uint8_t buf[];
};

struct exec {
        struct exec *next;
        struct ag_napi *srv;
        struct lws *wsi;
        enum ag_channel_proto proto;
        struct ag_exec_options opts;
        int pidfd, in_fd, out_fd, err_fd, pty; /* pty: the master, for in and out */
        struct ag_io *pid_io, *in_io, *out_io, *err_io;
        struct outmsg *q, **qtail;
        size_t qbytes;
        uint8_t *stdin_buf;
        size_t stdin_len;
        bool stdin_close; /* close stdin once stdin_buf is written */
        int rx_channel;   /* of the message being received (fragments) */
        /* attach: the container's output, from its log file as it grows */
        bool attach;
        int att_fd, att_ino;
        struct ag_io *att_io;
        int64_t att_off;
        char *att_buf; /* an incomplete last record */
        size_t att_len;
        bool exited, closing, close_sent, rx_paused;
        char close_text[120]; /* the close frame's reason, for refusals */
};

struct reaper {
        struct reaper *next;
        struct ag_napi *srv;
        int pidfd;
        struct ag_io *io;
};

/* What lws allocates per connection, for every protocol. */
struct pss {
        /* a plain HTTP response */
        char *body;
        size_t body_len, body_off;
        struct logstream *log;
        struct exec *ex;
};

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

/* Starts a response: headers now, body from the writable callback. len
 * LWS_ILLEGAL_HTTP_CONTENT_LEN: streamed until the connection closes. */
static int send_headers(struct lws *wsi, unsigned code, const char *ctype, lws_filepos_t len)
{
        uint8_t buf[LWS_PRE + 1024], *start = buf + LWS_PRE, *p = start, *end = buf + sizeof(buf);
        if (lws_add_http_common_headers(wsi, code, ctype, len, &p, end))
                return -1;
        if (len == LWS_ILLEGAL_HTTP_CONTENT_LEN &&
            lws_add_http_header_by_token(wsi, WSI_TOKEN_CONNECTION, (const uint8_t *)"close", 5, &p,
                                         end))
                return -1;
        if (lws_add_http_header_by_name(wsi, (const uint8_t *)"cache-control:",
                                        (const uint8_t *)"no-cache, private", 17, &p, end))
                return -1;
        if (lws_finalize_write_http_header(wsi, start, &p, end))
                return -1;
        return 0;
}

/* A whole response (body owned by the connection afterwards). */
static int respond(struct lws *wsi, struct pss *ps, unsigned code, const char *ctype, char *body)
{
        free(ps->body);
        ps->body = body;
        ps->body_len = body != NULL ? strlen(body) : 0;
        ps->body_off = 0;
        if (send_headers(wsi, code, ctype, ps->body_len) < 0)
                return -1;
        lws_callback_on_writable(wsi);
        return 0;
}

static int respond_error(struct lws *wsi, struct pss *ps, int code, const char *msg)
{
        log_v(3, "node API: %d %s", code, msg);
        return respond(wsi, ps, (unsigned)code, "application/json",
                       status_json(code, reason_of(code), msg));
}

/* The query's decoded name=value fragments. */
struct args {
        char *v[MAX_ARGS];
        size_t n;
};

static void args_free(struct args *a)
{
        for (size_t i = 0; i < a->n; i++)
                free(a->v[i]);
        a->n = 0;
}

/* -1 when there are more than MAX_ARGS parameters (never cut a command
 * short silently) or memory runs out. */
static int args_read(struct lws *wsi, struct args *a)
{
        a->n = 0;
        for (int i = 0;; i++) {
                int len = lws_hdr_fragment_length(wsi, WSI_TOKEN_HTTP_URI_ARGS, i);
                if (len <= 0)
                        break;
                if (a->n == MAX_ARGS)
                        return -1;
                char *v = malloc((size_t)len + 1);
                if (v == NULL)
                        return -1;
                if (lws_hdr_copy_fragment(wsi, v, len + 1, WSI_TOKEN_HTTP_URI_ARGS, i) < 0) {
                        free(v);
                        return -1;
                }
                a->v[a->n++] = v;
        }
        return 0;
}

/* ---- authentication ---- */

static int verify_any(int preverify_ok, X509_STORE_CTX *ctx)
{
        (void)preverify_ok;
        (void)ctx;
        /* decided per request from SSL_get_verify_result(): see above */
        return 1;
}

/* 0 authenticated (user written to who), else the HTTP status. */
static int authenticate(struct ag_napi *s, struct lws *wsi, char *who, size_t size)
{
        SSL *ssl = lws_get_ssl(wsi);
        if (ssl != NULL && s->cfg.client_ca_file != NULL) {
                X509 *peer = SSL_get1_peer_certificate(ssl);
                if (peer != NULL) {
                        long vr = SSL_get_verify_result(ssl);
                        if (vr == X509_V_OK) {
                                char cn[256] = "";
                                X509_NAME_get_text_by_NID(X509_get_subject_name(peer),
                                                          NID_commonName, cn, sizeof(cn));
                                snprintf(who, size, "%s", cn);
                                X509_free(peer);
                                return 0;
                        }
                        log_v(2, "node API: client certificate refused: %s",
                              X509_verify_cert_error_string(vr));
                        X509_free(peer);
                }
        }
        char auth[4096];
        if (s->tokens != NULL &&
            lws_hdr_copy(wsi, auth, sizeof(auth), WSI_TOKEN_HTTP_AUTHORIZATION) > 7 &&
            strncasecmp(auth, "Bearer ", 7) == 0) {
                const char *user = ag_napi_tokens_user(s->tokens, auth + 7);
                OPENSSL_cleanse(auth, sizeof(auth));
                if (user != NULL) {
                        snprintf(who, size, "%s", user);
                        return 0;
                }
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

/* ---- /containerLogs ---- */

static void logstream_free(struct logstream *l)
{
        if (l == NULL)
                return;
        ag_io_free(l->ino_io);
        ag_io_free(l->hup_io);
        if (l->ino >= 0)
                close(l->ino);
        if (l->fd >= 0)
                close(l->fd);
        free(l);
}

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
        lws_callback_on_writable(l->wsi);
        kick(l->srv);
}

/* While a follow waits for the file, libwebsockets does not read the
 * connection and would not see the client go away: a hangup watch does. */
static void on_log_client_hup(struct ag_io *io, int fd, uint32_t events, void *data)
{
        (void)fd;
        (void)events;
        struct logstream *l = data;
        ag_io_set_events(io, 0, NULL);
        log_v(3, "node API: a log follower went away");
        lws_set_timeout(l->wsi, PENDING_TIMEOUT_KILLED_BY_PARENT, LWS_TO_KILL_ASYNC);
        kick(l->srv);
}

static int start_logs(struct ag_napi *s, struct lws *wsi, struct pss *ps,
                      const struct ag_napi_target *t, struct args *a)
{
        struct cb_error err = {0};
        struct ag_log_options o;
        if (ag_log_options_parse((const char *const *)a->v, a->n, wall_ns(), &o, &err) < 0)
                return respond_error(wsi, ps, 400, err.msg);
        struct found f;
        int code = find_target(s, t, t->container, &f);
        if (code != 0) {
                int r = respond_error(wsi, ps, code, f.msg);
                found_clear(&f);
                return r;
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
                return respond_error(wsi, ps, 400, msg);
        }
        found_clear(&f);
        if (o.previous && prev < 0) {
                snprintf(msg, sizeof(msg),
                         "previous terminated container \"%s\" in pod \"%s\" not found",
                         t->container, t->pod);
                return respond_error(wsi, ps, 400, msg);
        }
        snprintf(path, sizeof(path), "%s/%ld.log", cdir, o.previous ? prev : newest);
        struct logstream *l = calloc(1, sizeof(*l));
        if (l == NULL)
                return -1;
        l->fd = l->ino = -1;
        l->srv = s;
        l->wsi = wsi;
        l->opts = o;
        l->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (l->fd < 0) {
                logstream_free(l);
                snprintf(msg, sizeof(msg), "cannot open the log of container \"%s\": %s",
                         t->container, strerror(errno));
                return respond_error(wsi, ps, 500, msg);
        }
        if (o.has_tail_lines && ag_log_tail_offset(l->fd, o.tail_lines, &l->off, &err) < 0) {
                logstream_free(l);
                return respond_error(wsi, ps, 500, err.msg);
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
                        return respond_error(wsi, ps, 500, "cannot follow the log file");
                }
                int sfd = lws_get_socket_fd(wsi);
                if (sfd >= 0)
                        l->hup_io = ag_io_new(s->loop, sfd, EPOLLRDHUP, on_log_client_hup, l, NULL);
                struct rt_container_state cst;
                if (cid[0] == '\0' || rt_container_state(s->cfg.root_dir, cid, &cst, NULL) < 0 ||
                    cst.status != RT_CONTAINER_RUNNING)
                        l->follow = false;
        }
        ps->log = l;
        if (send_headers(wsi, 200, "text/plain", LWS_ILLEGAL_HTTP_CONTENT_LEN) < 0)
                return -1;
        lws_callback_on_writable(wsi);
        return 0;
}

/* One writable slot: returns -1 to close (done or failed), 0 to go on. */
static int write_logs(struct lws *wsi, struct logstream *l)
{
        static uint8_t out[LWS_PRE + 2 * LOG_CHUNK + 64];
        size_t olen = 0, cap = sizeof(out) - LWS_PRE;
        uint8_t *o = out + LWS_PRE;
        if (l->finished) {
                /* the zero-length final write marks the end; the connection
                 * then closes (the response has no Content-Length) */
                lws_write(wsi, o, 0, LWS_WRITE_HTTP_FINAL);
                return -1;
        }
        bool limit_hit = false, eof = false;
        while (olen < LOG_CHUNK && !limit_hit && !eof) {
                ssize_t n = pread(l->fd, l->in + l->in_len, sizeof(l->in) - l->in_len, l->off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -1;
                eof = n == 0;
                l->off += n;
                l->in_len += (size_t)n;
                size_t start = 0;
                for (;;) {
                        char *nl = memchr(l->in + start, '\n', l->in_len - start);
                        if (nl == NULL)
                                break;
                        size_t rl = (size_t)(nl - (l->in + start));
                        size_t w = ag_log_render(l->in + start, rl, &l->opts, (char *)o + olen,
                                                 cap - olen);
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
        bool done = limit_hit || (eof && (!l->follow || l->ended));
        if (olen > 0) {
                l->sent += (int64_t)olen;
                if (lws_write(wsi, o, olen, LWS_WRITE_HTTP) < (int)olen)
                        return -1;
                l->finished = done;
                lws_callback_on_writable(wsi);
                return 0;
        }
        if (done) {
                lws_write(wsi, o, 0, LWS_WRITE_HTTP_FINAL);
                return -1;
        }
        if (!eof)
                lws_callback_on_writable(wsi);
        /* else: the inotify watch calls again */
        return 0;
}

/* ---- /exec ---- */

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
        struct exec **pp = &x->srv->execs;
        while (*pp != NULL && *pp != x)
                pp = &(*pp)->next;
        if (*pp == x)
                *pp = x->next;
        ag_io_free(x->pid_io);
        if (x->pidfd >= 0)
                kill_and_reap(x->srv, x->pidfd);
        if (x->pty >= 0 && x->in_fd == x->pty)
                x->in_fd = -1;
        if (x->pty >= 0 && x->out_fd == x->pty)
                x->out_fd = -1;
        close_fd_io(&x->in_fd, &x->in_io);
        close_fd_io(&x->out_fd, &x->out_io);
        close_fd_io(&x->err_fd, &x->err_io);
        close_fd_io(&x->att_ino, &x->att_io);
        if (x->att_fd >= 0)
                close(x->att_fd);
        free(x->att_buf);
        if (x->pty >= 0)
                close(x->pty);
        while (x->q != NULL) {
                struct outmsg *m = x->q;
                x->q = m->next;
                free(m);
        }
        free(x->stdin_buf);
        free(x->opts.argv);
        free(x);
}

static int queue(struct exec *x, uint8_t channel, const void *data, size_t len)
{
        struct outmsg *m = malloc(sizeof(*m) + LWS_PRE + 1 + len);
        if (m == NULL)
                return -1;
        m->next = NULL;
        m->len = 1 + len;
        m->buf[LWS_PRE] = channel;
        if (len > 0)
                memcpy(m->buf + LWS_PRE + 1, data, len);
        *x->qtail = m;
        x->qtail = &m->next;
        x->qbytes += m->len;
        lws_callback_on_writable(x->wsi);
        return 0;
}

static void attach_pump(struct exec *x);

static void update_reading(struct exec *x)
{
        if (x->attach && !x->closing && x->qbytes < OUT_HIGH / 2)
                attach_pump(x); /* what waited while the client was slow */
        uint32_t ev = x->qbytes < OUT_HIGH ? EPOLLIN : 0;
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
        for (int i = 0; drain ? i < 64 : (i < 8 && x->qbytes < OUT_HIGH); i++) {
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

static void finish_exec(struct exec *x, int code, const char *message)
{
        if (x->closing)
                return;
        if (x->out_fd >= 0) {
                (void)pump(x, x->out_fd, AG_CH_STDOUT, true);
        }
        if (x->err_fd >= 0)
                (void)pump(x, x->err_fd, AG_CH_STDERR, true);
        _cleanup_free_ char *st = ag_exec_status_json(code, message);
        if (x->proto >= AG_CHANNEL_V4 && st != NULL)
                queue(x, AG_CH_ERROR, st, strlen(st));
        else if (x->proto < AG_CHANNEL_V4 && (code != 0 || message != NULL)) {
                char m[512];
                snprintf(m, sizeof(m), "%s", message ? message : "command terminated");
                queue(x, AG_CH_ERROR, m, strlen(m));
        }
        x->closing = true;
        lws_callback_on_writable(x->wsi);
}

static void on_exec_out(struct ag_io *io, int fd, uint32_t events, void *data)
{
        (void)events;
        struct exec *x = data;
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
        kick(x->srv);
}

static void on_exec_exit(struct ag_io *io, int fd, uint32_t events, void *data)
{
        (void)io;
        (void)fd;
        (void)events;
        struct exec *x = data;
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
        kick(x->srv);
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
        if (x->rx_paused && x->stdin_len < STDIN_HIGH / 2) {
                x->rx_paused = false;
                lws_rx_flow_control(x->wsi, 1);
        }
}

static void on_exec_in(struct ag_io *io, int fd, uint32_t events, void *data)
{
        (void)io;
        (void)fd;
        (void)events;
        struct exec *x = data;
        write_stdin(x);
        kick(x->srv);
}

static int set_nonblock(int fd)
{
        int fl = fcntl(fd, F_GETFL);
        return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
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
            (x->in_io = ag_io_new(s->loop, x->in_fd, 0, on_exec_in, x, err)) == NULL)
                return -1;
        return 0;
}

static int upgrade_check(struct ag_napi *s, struct lws *wsi, struct ag_napi_target *t,
                         struct ag_exec_options *o, struct found *f, char *msg, size_t size)
{
        char path[2048];
        if (lws_hdr_copy(wsi, path, sizeof(path), WSI_TOKEN_GET_URI) <= 0) {
                snprintf(msg, size, "only GET may upgrade to a WebSocket");
                return 400;
        }
        enum ag_napi_route r = ag_napi_route_path(path, t);
        if (r == AG_NAPI_PORTFORWARD) {
                snprintf(msg, size, "port-forward is not supported by this node yet");
                return 400;
        }
        if (r != AG_NAPI_EXEC && r != AG_NAPI_ATTACH) {
                snprintf(msg, size, "no WebSocket endpoint at %.200s", path);
                return 404;
        }
        struct args a = {0};
        struct cb_error err = {0};
        if (args_read(wsi, &a) < 0 ||
            ag_exec_options_parse((const char *const *)a.v, a.n, r == AG_NAPI_EXEC, o, &err) < 0) {
                snprintf(msg, size, "%s",
                         err.msg[0] ? err.msg : "too many query parameters (at most 256)");
                args_free(&a);
                return 400;
        }
        /* argv points into a.v: keep copies that outlive the request */
        size_t total = 0;
        for (size_t i = 0; i < o->argc; i++)
                total += strlen(o->argv[i]) + 1;
        char **argv = malloc((o->argc + 1) * sizeof(char *) + total);
        if (argv == NULL) {
                free(o->argv);
                args_free(&a);
                snprintf(msg, size, "out of memory");
                return 500;
        }
        char *p = (char *)(argv + o->argc + 1);
        for (size_t i = 0; i < o->argc; i++) {
                size_t l = strlen(o->argv[i]) + 1;
                memcpy(p, o->argv[i], l);
                argv[i] = p;
                p += l;
        }
        argv[o->argc] = NULL;
        free(o->argv);
        o->argv = (const char **)argv;
        args_free(&a);
        int code = find_target(s, t, t->container, f);
        if (code != 0) {
                snprintf(msg, size, "%s", f->msg);
                return code;
        }
        if (f->cid == NULL || !f->running) {
                snprintf(msg, size, "container \"%s\" in pod \"%s\" is not running", t->container,
                         t->pod);
                return 400;
        }
        if (r == AG_NAPI_ATTACH && (o->in || o->tty)) {
                snprintf(msg, size,
                         "attach with stdin or a terminal is not supported by this node (the "
                         "container's stdin is not kept open): use kubectl attach without -i/-t");
                return 400;
        }
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
        for (int i = 0; i < 64 && x->qbytes < OUT_HIGH && x->att_fd >= 0; i++) {
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
        kick(x->srv);
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
        /* the container may have ended between the status and the watch */
        struct rt_container_state cs;
        if (f->cid != NULL && rt_container_state(x->srv->cfg.root_dir, f->cid, &cs, NULL) == 0 &&
            cs.status != RT_CONTAINER_RUNNING)
                finish_exec(x, 0, NULL);
        return 0;
}

static int start_exec(struct ag_napi *s, struct lws *wsi, struct pss *ps)
{
        struct ag_napi_target t;
        struct ag_exec_options o = {0};
        struct found f = {0};
        char msg[1200];
        int code = upgrade_check(s, wsi, &t, &o, &f, msg, sizeof(msg));
        struct exec *x = calloc(1, sizeof(*x));
        if (x == NULL) {
                free(o.argv);
                found_clear(&f);
                return -1;
        }
        x->srv = s;
        x->wsi = wsi;
        x->opts = o;
        x->pidfd = x->in_fd = x->out_fd = x->err_fd = x->pty = -1;
        x->att_fd = x->att_ino = -1;
        x->attach = t.route == AG_NAPI_ATTACH;
        x->qtail = &x->q;
        x->rx_channel = -1;
        char proto[64] = "";
        lws_hdr_copy(wsi, proto, sizeof(proto), WSI_TOKEN_PROTOCOL);
        const struct lws_protocols *pr = lws_get_protocol(wsi);
        x->proto = ag_channel_proto_from_name(pr != NULL ? pr->name : NULL);
        x->next = s->execs;
        s->execs = x;
        ps->ex = x;
        struct cb_error err = {0};
        if (code != 0) {
                /* Refused after the upgrade: a refused upgrade makes kubectl
                 * retry with SPDY, which libwebsockets answers with a bare
                 * 403, hiding the reason. On the error channel (or in the
                 * close frame of a protocol without channels) kubectl
                 * shows it. */
                log_v(2, "node API: streaming request refused (%d): %s", code, msg);
                snprintf(x->close_text, sizeof(x->close_text), "%.100s", msg);
                if (x->proto == 0) {
                        x->closing = true;
                        lws_callback_on_writable(wsi);
                } else {
                        finish_exec(x, 0, msg);
                }
                found_clear(&f);
                return 0;
        }
        log_v(1, "node API: %s %s in %s/%s container %s (%s%s%s%s)", x->attach ? "attach" : "exec",
              x->attach ? "" : o.argv[0], t.ns, t.pod, t.container, o.in ? "stdin " : "",
              o.out ? "stdout " : "", o.err ? "stderr " : "", o.tty ? "tty" : "");
        /* an empty message on the first output channel tells the client the
         * streams are ready, as the kubelet does */
        queue(x, o.out ? AG_CH_STDOUT : o.err ? AG_CH_STDERR : AG_CH_ERROR, NULL, 0);
        if ((x->attach ? start_attach(x, &t, &f, &err) : spawn_exec(x, f.cid, &err)) < 0) {
                log_warning("node API: exec in %s/%s container %s: %s", t.ns, t.pod, t.container,
                            err.msg);
                finish_exec(x, 0, err.msg);
        }
        found_clear(&f);
        return 0;
}

static void exec_receive(struct exec *x, struct lws *wsi, const uint8_t *in, size_t len)
{
        const uint8_t *p = in;
        size_t n = len;
        if (lws_is_first_fragment(wsi)) {
                uint8_t ch;
                if (ag_channel_split(in, len, &ch, &p, &n) < 0) {
                        x->rx_channel = -1;
                        return;
                }
                x->rx_channel = ch;
        }
        switch (x->rx_channel) {
        case AG_CH_STDIN:
                if (x->in_fd < 0 || n == 0)
                        return;
                if (x->stdin_len + n > STDIN_HIGH * 2)
                        return; /* cannot happen with flow control; never grow unbounded */
                uint8_t *nb = realloc(x->stdin_buf, x->stdin_len + n);
                if (nb == NULL)
                        return;
                x->stdin_buf = nb;
                memcpy(nb + x->stdin_len, p, n);
                x->stdin_len += n;
                write_stdin(x);
                if (x->stdin_len >= STDIN_HIGH && !x->rx_paused) {
                        x->rx_paused = true;
                        lws_rx_flow_control(wsi, 0);
                }
                break;
        case AG_CH_RESIZE: {
                uint16_t w, h;
                struct cb_error err = {0};
                if (x->pty >= 0 && ag_parse_resize(p, n, &w, &h, &err) == 0) {
                        struct winsize ws = {.ws_row = h, .ws_col = w};
                        (void)ioctl(x->pty, TIOCSWINSZ, &ws);
                } else if (x->pty >= 0) {
                        log_v(2, "node API: %s", err.msg);
                }
                break;
        }
        case AG_CH_CLOSE:
                if (x->proto >= AG_CHANNEL_V5 && n >= 1 && p[0] == AG_CH_STDIN) {
                        if (x->pty >= 0 && x->in_fd == x->pty) {
                                /* a terminal has no half-close: ^D ends input */
                                uint8_t *b = realloc(x->stdin_buf, x->stdin_len + 1);
                                if (b != NULL) {
                                        x->stdin_buf = b;
                                        b[x->stdin_len++] = 4;
                                        write_stdin(x);
                                }
                        } else {
                                x->stdin_close = true;
                                write_stdin(x);
                        }
                }
                break;
        default:
                break;
        }
}

static int exec_writable(struct exec *x, struct lws *wsi)
{
        struct outmsg *m = x->q;
        if (m != NULL) {
                x->q = m->next;
                if (x->q == NULL)
                        x->qtail = &x->q;
                x->qbytes -= m->len;
                int r = lws_write(wsi, m->buf + LWS_PRE, m->len, LWS_WRITE_BINARY);
                free(m);
                if (r < 0)
                        return -1;
                update_reading(x);
                if (x->q != NULL || (x->closing && !x->close_sent))
                        lws_callback_on_writable(wsi);
                return 0;
        }
        if (x->closing && !x->close_sent) {
                /* The close frame is written here rather than by returning
                 * -1 after lws_close_reason(): libwebsockets 4.1 on libuv
                 * drops the connection without it then, and kubectl
                 * reports an abnormal closure instead of the exit status.
                 * The peer's answering close ends the connection (or the
                 * timeout does). */
                uint8_t buf[LWS_PRE + 2 + sizeof(x->close_text)];
                unsigned status = x->close_text[0] != '\0' && x->proto == 0
                                      ? LWS_CLOSE_STATUS_UNEXPECTED_CONDITION
                                      : LWS_CLOSE_STATUS_NORMAL;
                size_t tl = x->proto == 0 ? strlen(x->close_text) : 0;
                buf[LWS_PRE] = (uint8_t)(status >> 8);
                buf[LWS_PRE + 1] = (uint8_t)(status & 0xff);
                memcpy(buf + LWS_PRE + 2, x->close_text, tl);
                x->close_sent = true;
                if (lws_write(wsi, buf + LWS_PRE, 2 + tl, LWS_WRITE_CLOSE_FRAME) < 0)
                        return -1;
                lws_set_timeout(wsi, PENDING_TIMEOUT_CLOSE_ACK, 5);
        }
        return 0;
}

/* ---- the callback ---- */

/* A whole error response written at once (before an upgrade); 1 for the
 * upgrade callback ("answered"), -1 when it cannot be written. */
static int reject_now(struct lws *wsi, int code, const char *msg)
{
        _cleanup_free_ char *body = status_json(code, reason_of(code), msg);
        uint8_t buf[LWS_PRE + 2048], *start = buf + LWS_PRE, *p = start, *end = buf + sizeof(buf);
        size_t bl = body != NULL ? strlen(body) : 0;
        if (bl > 1024)
                bl = 1024;
        if (lws_add_http_common_headers(wsi, (unsigned)code, "application/json", bl, &p, end) ||
            lws_finalize_http_header(wsi, &p, end) || p + bl > end)
                return -1;
        memcpy(p, body, bl);
        p += bl;
        if (lws_write(wsi, start, (size_t)(p - start), LWS_WRITE_HTTP_HEADERS) < 0)
                return -1;
        return 1;
}

/* Why a streaming request that is not a WebSocket upgrade (SPDY, or no
 * upgrade at all) is refused: the target's problem first, as the upgrade
 * path would report it. Always non-zero. */
static int target_refusal(struct ag_napi *s, const char *uri, char *msg, size_t size)
{
        struct ag_napi_target t;
        enum ag_napi_route r = ag_napi_route_path(uri, &t);
        if (r != AG_NAPI_EXEC && r != AG_NAPI_ATTACH && r != AG_NAPI_PORTFORWARD) {
                snprintf(msg, size, "no streaming endpoint at %.200s", uri);
                return 404;
        }
        struct found f;
        int code = find_target(s, &t, r == AG_NAPI_PORTFORWARD ? NULL : t.container, &f);
        if (code != 0)
                snprintf(msg, size, "%s", f.msg);
        else if (r == AG_NAPI_PORTFORWARD)
                snprintf(msg, size, "port-forward is not supported by this node yet");
        else
                snprintf(msg, size,
                         "this node streams over WebSocket only (v5.channel.k8s.io, "
                         "v4.channel.k8s.io); SPDY is not supported");
        found_clear(&f);
        return code != 0 ? code : 400;
}

static int handle_http(struct ag_napi *s, struct lws *wsi, struct pss *ps, const char *uri)
{
        char who[256];
        int code = authenticate(s, wsi, who, sizeof(who));
        if (code != 0)
                return respond_error(wsi, ps, code, "Unauthorized");
        struct ag_napi_target t;
        enum ag_napi_route r = ag_napi_route_path(uri, &t);
        bool get = lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) > 0;
        log_v(3, "node API: %s %s (%s)", get ? "GET" : "non-GET", uri, who);
        if (r == AG_NAPI_NONE)
                return respond_error(wsi, ps, 404,
                                     "the server could not find the requested "
                                     "resource");
        if (r == AG_NAPI_EXEC || r == AG_NAPI_ATTACH || r == AG_NAPI_PORTFORWARD) {
                char msg[1200];
                code = target_refusal(s, uri, msg, sizeof(msg));
                return respond_error(wsi, ps, code, msg);
        }
        if (!get)
                return respond_error(wsi, ps, 405,
                                     "the server does not allow this method on "
                                     "the requested resource");
        switch (r) {
        case AG_NAPI_HEALTHZ: {
                char why[256] = "";
                if (s->cfg.healthy != NULL && !s->cfg.healthy(s->cfg.data, why, sizeof(why)))
                        return respond(wsi, ps, 500, "text/plain", strdup(why));
                return respond(wsi, ps, 200, "text/plain", strdup("ok"));
        }
        case AG_NAPI_PODS: {
                _cleanup_cjson_ cJSON *l = s->cfg.pods != NULL ? s->cfg.pods(s->cfg.data) : NULL;
                char *b = l != NULL ? cJSON_PrintUnformatted(l) : NULL;
                if (b == NULL)
                        return respond_error(wsi, ps, 500, "cannot list the pods");
                return respond(wsi, ps, 200, "application/json", b);
        }
        case AG_NAPI_STATS_SUMMARY: {
                _cleanup_cjson_ cJSON *o =
                    s->cfg.summary != NULL ? s->cfg.summary(s->cfg.data) : NULL;
                char *b = o != NULL ? cJSON_PrintUnformatted(o) : NULL;
                if (b == NULL)
                        return respond_error(wsi, ps, 500, "cannot read the node's statistics");
                return respond(wsi, ps, 200, "application/json", b);
        }
        case AG_NAPI_LOGS: {
                struct args a = {0};
                if (args_read(wsi, &a) < 0) {
                        args_free(&a);
                        return respond_error(wsi, ps, 400, "too many query parameters");
                }
                int rr = start_logs(s, wsi, ps, &t, &a);
                args_free(&a);
                return rr;
        }
        default:
                return respond_error(wsi, ps, 404, "not found");
        }
}

static void pss_clear(struct pss *ps)
{
        free(ps->body);
        ps->body = NULL;
        logstream_free(ps->log);
        ps->log = NULL;
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len)
{
        struct lws_context *ctx = lws_get_context(wsi);
        struct ag_napi *s = ctx != NULL ? lws_context_user(ctx) : NULL;
        struct pss *ps = user;
        switch (reason) {
        case LWS_CALLBACK_OPENSSL_LOAD_EXTRA_SERVER_VERIFY_CERTS: {
                SSL_CTX *sctx = user;
                struct lws_vhost *vh = in;
                s = vh != NULL ? lws_vhost_user(vh) : NULL;
                if (s == NULL || s->cfg.client_ca_file == NULL)
                        return 0;
                STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(s->cfg.client_ca_file);
                if (!SSL_CTX_load_verify_locations(sctx, s->cfg.client_ca_file, NULL) ||
                    names == NULL) {
                        log_error("--client-ca-file %s: no usable CA certificate",
                                  s->cfg.client_ca_file);
                        return 1;
                }
                SSL_CTX_set_client_CA_list(sctx, names);
                SSL_CTX_set_verify(sctx, SSL_VERIFY_PEER, verify_any);
                return 0;
        }
        case LWS_CALLBACK_HTTP:
                if (s == NULL || ps == NULL)
                        return -1;
                pss_clear(ps);
                if (handle_http(s, wsi, ps, in) < 0)
                        return -1;
                kick(s);
                return 0;
        case LWS_CALLBACK_HTTP_WRITEABLE:
                if (ps == NULL)
                        return -1;
                if (ps->log != NULL)
                        return write_logs(wsi, ps->log);
                if (ps->body != NULL) {
                        size_t left = ps->body_len - ps->body_off;
                        size_t n = left > LOG_CHUNK ? LOG_CHUNK : left;
                        static uint8_t buf[LWS_PRE + LOG_CHUNK];
                        memcpy(buf + LWS_PRE, ps->body + ps->body_off, n);
                        ps->body_off += n;
                        bool last = ps->body_off == ps->body_len;
                        if (lws_write(wsi, buf + LWS_PRE, n,
                                      last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) < (int)n)
                                return -1;
                        if (!last) {
                                lws_callback_on_writable(wsi);
                                return 0;
                        }
                        free(ps->body);
                        ps->body = NULL;
                        if (lws_http_transaction_completed(wsi))
                                return -1;
                }
                return 0;
        case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
        case LWS_CALLBACK_CLOSED_HTTP:
                if (ps != NULL)
                        pss_clear(ps);
                return 0;
        case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE: {
                /* only who asks is checked before the 101: what is asked for
                 * is refused on the stream (start_exec says why) */
                if (s == NULL || in == NULL)
                        return -1;
                char who[256];
                if (authenticate(s, wsi, who, sizeof(who)) == 0)
                        return 0;
                log_v(2, "node API: upgrade refused (401)");
                return reject_now(wsi, 401, "Unauthorized");
        }
        case LWS_CALLBACK_ESTABLISHED:
                if (s == NULL || ps == NULL)
                        return -1;
                memset(ps, 0, sizeof(*ps));
                if (start_exec(s, wsi, ps) < 0)
                        return -1;
                kick(s);
                return 0;
        case LWS_CALLBACK_RECEIVE:
                if (ps != NULL && ps->ex != NULL)
                        exec_receive(ps->ex, wsi, in, len);
                return 0;
        case LWS_CALLBACK_SERVER_WRITEABLE:
                if (ps == NULL || ps->ex == NULL)
                        return -1;
                return exec_writable(ps->ex, wsi);
        case LWS_CALLBACK_CLOSED:
                if (ps != NULL && ps->ex != NULL) {
                        if (!ps->ex->exited && ps->ex->pidfd >= 0)
                                log_v(1, "node API: exec client went away: command killed");
                        exec_free(ps->ex);
                        ps->ex = NULL;
                }
                return 0;
        default:
                break;
        }
        return lws_callback_http_dummy(wsi, reason, user, in, len);
}

static const struct lws_protocols protocols[] = {
    {"http", callback, sizeof(struct pss), 0, 0, NULL, 0},
    {"v5.channel.k8s.io", callback, sizeof(struct pss), 65536, 0, NULL, 0},
    {"v4.channel.k8s.io", callback, sizeof(struct pss), 65536, 0, NULL, 0},
    {"channel.k8s.io", callback, sizeof(struct pss), 65536, 0, NULL, 0},
    /* port-forward (refused with a reason, see start_exec): kubectl 1.32
     * tunnels SPDY in a WebSocket; the kubelet's own WebSocket protocol */
    {"SPDY/3.1+portforward.k8s.io", callback, sizeof(struct pss), 65536, 0, NULL, 0},
    {"portforward.k8s.io", callback, sizeof(struct pss), 65536, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

static void lws_to_log(int level, const char *line)
{
        size_t n = strlen(line);
        while (n > 0 && line[n - 1] == '\n')
                n--;
        if (level & LLL_ERR)
                log_warning("libwebsockets: %.*s", (int)n, line);
        else
                log_v(4, "libwebsockets: %.*s", (int)n, line);
}

int ag_napi_start(struct ag_loop *loop, const struct ag_napi_config *cfg, struct ag_napi **ret,
                  struct cb_error *err)
{
        if (cfg->client_ca_file == NULL && cfg->token_file == NULL)
                return cb_error_set(err, EINVAL,
                                    "the node API needs --client-ca-file or "
                                    "--authentication-token-file (anonymous requests are never "
                                    "served)");
        struct ag_napi *s = calloc(1, sizeof(*s));
        if (s == NULL)
                return cb_error_set(err, ENOMEM, "node API");
        s->loop = loop;
        s->cfg = *cfg;
        if (cfg->token_file != NULL && ag_napi_tokens_load(cfg->token_file, &s->tokens, err) < 0)
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
                if (mkdir(cfg->cert_dir, 0700) < 0 && errno != EEXIST) {
                        cb_error_set(err, errno, "cannot create %s", cfg->cert_dir);
                        goto fail;
                }
                snprintf(s->cert_path, sizeof(s->cert_path), "%s/kubelet.crt", cfg->cert_dir);
                snprintf(s->key_path, sizeof(s->key_path), "%s/kubelet.key", cfg->cert_dir);
                if (ag_napi_ensure_cert(s->cert_path, s->key_path, cfg->node_ip, cfg->hostname,
                                        err) < 0) {
                        cb_error_prefix(err, "serving certificate %s", s->cert_path);
                        goto fail;
                }
        }
        if (uv_loop_init(&s->uv) != 0) {
                cb_error_set(err, ENOMEM, "node API: libuv loop");
                goto fail;
        }
        s->uv_ok = true;
        lws_set_log_level(getenv("CUBELET_LWS_DEBUG")
                              ? LLL_ERR | LLL_WARN | LLL_NOTICE | LLL_INFO | LLL_DEBUG
                              : LLL_ERR | LLL_WARN,
                          lws_to_log);
        void *foreign[] = {&s->uv};
        struct lws_context_creation_info info;
        memset(&info, 0, sizeof(info));
        info.options = LWS_SERVER_OPTION_LIBUV | LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT |
                       LWS_SERVER_OPTION_EXPLICIT_VHOSTS | LWS_SERVER_OPTION_DISABLE_IPV6;
        info.foreign_loops = foreign;
        info.user = s;
        info.protocols = protocols;
        info.max_http_header_data = 16384;
        info.timeout_secs = 30;
        s->ctx = lws_create_context(&info);
        if (s->ctx == NULL) {
                cb_error_set(err, EIO, "node API: cannot create the libwebsockets context");
                goto fail;
        }
        info.port = cfg->port;
        info.iface =
            cfg->address != NULL && strcmp(cfg->address, "0.0.0.0") != 0 ? cfg->address : NULL;
        info.vhost_name = "node-api";
        info.ssl_cert_filepath = s->cert_path;
        info.ssl_private_key_filepath = s->key_path;
        info.alpn = "http/1.1";
        info.options = LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT | LWS_SERVER_OPTION_DISABLE_IPV6;
        struct lws_vhost *vh = lws_create_vhost(s->ctx, &info);
        if (vh == NULL) {
                cb_error_set(err, EADDRINUSE,
                             "node API: cannot serve HTTPS on %s:%d (address in use, or the "
                             "certificate %s / key %s unusable)",
                             info.iface ? info.iface : "0.0.0.0", cfg->port, s->cert_path,
                             s->key_path);
                goto fail;
        }
        s->port = lws_get_vhost_listen_port(vh);
        s->uv_timer = ag_timer_new(loop, on_uv_timer, s, err);
        if (s->uv_timer == NULL)
                goto fail;
        s->uv_io = ag_io_new(loop, uv_backend_fd(&s->uv), EPOLLIN, on_uv_fd, s, err);
        if (s->uv_io == NULL)
                goto fail;
        kick(s);
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
        /* On a foreign loop the first destroy closes the libuv handles, the
         * loop runs their close callbacks, and the second destroy frees the
         * context (its TLS contexts, buffers) */
        if (s->ctx != NULL) {
                lws_context_destroy(s->ctx);
                if (s->uv_ok)
                        uv_run(&s->uv, UV_RUN_DEFAULT);
                lws_context_destroy(s->ctx);
        }
        if (s->uv_ok) {
                uv_run(&s->uv, UV_RUN_DEFAULT);
                uv_loop_close(&s->uv);
        }
        while (s->execs != NULL)
                exec_free(s->execs);
        while (s->reapers != NULL) {
                struct reaper *r = s->reapers;
                int code;
                (void)rt_container_exec_reap(r->pidfd, true, &code, NULL);
                reaper_free(r);
        }
        ag_io_free(s->uv_io);
        if (s->uv_timer != NULL)
                ag_timer_free(s->uv_timer);
        ag_napi_tokens_free(s->tokens);
        free(s);
}

int ag_napi_port(const struct ag_napi *s)
{
        return s->port;
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
               "                                       (the node API runs when one of these "
               "two is set)\n";
}
