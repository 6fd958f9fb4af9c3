/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What the pieces of the node API server share (agent/nodeapi/server.h is
 * its interface; docs/node-api.md): the server, a connection, its request,
 * and the sessions that run on a connection (a streamed log, an exec or
 * attach session, port forwarding). Not for use outside agent/nodeapi/.
 */

#include <stdbool.h>
#include <sys/socket.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <http_parser.h>
#include <openssl/ssl.h>
#include <wslay/wslay.h>

#include "agent/core/loop.h"
#include "agent/nodeapi/authz.h"
#include "agent/nodeapi/head.h"
#include "agent/nodeapi/proto.h"
#include "agent/nodeapi/server.h"
#include "agent/nodeapi/spdy.h"
#include "agent/pods/podlogs.h"
#include "runtime/container.h"

struct logstream; /* logs.c */
struct pfpair;    /* portforward.c */
struct reaper;    /* exec.c */

#define OUT_HIGH      (1 << 20) /* queued output above which sources are not read */
#define STDIN_HIGH    (1 << 20) /* input waiting for a command or socket: stop reading */
#define READ_CHUNK    32768
#define CLOSE_WAIT_MS 5000 /* a WebSocket close's answer */

struct ag_napi {
        struct ag_loop *loop;
        struct ag_napi_config cfg;
        SSL_CTX *ssl_ctx;
        int listen_fd;
        struct ag_io *listen_io;
        struct ag_napi_tokens *tokens;
        struct ag_napi_authz *authz;
        char cert_path[4096], key_path[4096];
        /* serving_cert_managed: the pair handed to each handshake */
        X509 *srv_cert;
        STACK_OF(X509) * srv_chain;
        EVP_PKEY *srv_key;
        int port;
        struct conn *conns;
        size_t n_conns;
        size_t max_conns;       /* AG_NAPI_MAX_CONNS, or less with a low RLIMIT_NOFILE */
        struct reaper *reapers; /* killed execs waiting to be reaped */
};

/* What a connection may send beyond its request head and is not asked for
 * (a body of a request whose handler reads none, bytes during a streamed
 * log) before it is closed: Go's net/http discards up to 256 KiB of an
 * unread body after a handler (maxPostHandlerReadBytes) and closes the
 * connection beyond that; here every response closes its connection, so
 * such bytes are never parsed as a next request (issue 15 item 12). */
#define AG_NAPI_DISCARD_MAX (256 * 1024)

enum conn_mode {
        C_HANDSHAKE, /* TLS */
        C_HEAD,      /* reading the request head */
        C_AUTH,      /* waiting for a TokenReview or SubjectAccessReview */
        C_RESPONSE,  /* a whole response queued: close once written */
        C_LOGS,      /* a streamed log */
        C_WS,        /* WebSocket: exec/attach, or the SPDY tunnel */
        C_SPDY,      /* SPDY: exec/attach or port-forward */
};

struct conn {
        struct conn *next;
        struct ag_napi *srv;
        int fd;
        struct sockaddr_storage peer; /* for the per-address cap */
        socklen_t peer_len;
        SSL *ssl;
        struct ag_io *io;
        struct ag_timer *timer;
        enum conn_mode mode;
        bool read_paused, write_wants_read, read_wants_write, eof, close_after_flush, dead;
        /* our WebSocket close is queued behind output: the wait for the
         * client's answer (CLOSE_WAIT_MS) starts when that output is out */
        bool close_wait_after_flush;
        int close_outq; /* bytes the kernel still held for the client at the last close wait */
        uint8_t *out;
        size_t out_len, out_off, out_cap;
        http_parser hp;
        struct ag_napi_head req;
        char who[256];
        struct ag_napi_who id;         /* user and groups, for authorization */
        struct ag_napi_review *review; /* the review waited for in C_AUTH */
        uint8_t *held;                 /* bytes after the head, read meanwhile */
        size_t held_len;
        size_t discarded; /* bytes read and dropped (AG_NAPI_DISCARD_MAX) */
        struct logstream *log;
        struct exec *ex;
        struct pfwd *pf;
        wslay_event_context_ptr ws;
        const uint8_t *ws_in; /* the bytes wslay's recv callback hands out */
        size_t ws_in_len;
        bool ws_tunnel; /* the WebSocket carries SPDY */
        struct ag_spdy_session *spdy;
};

struct found {
        cJSON *list;      /* owned */
        const cJSON *pod; /* in list */
        const char *uid;  /* in list */
        const char *cid;  /* runtime id of the current instance, NULL when none */
        bool running;     /* the current instance runs */
        char msg[1024];
};

/* The query's decoded name=value strings. */
struct args {
        char **v;
        size_t n;
};

#define N_CH 5 /* stdin, stdout, stderr, error, resize */

struct exec {
        struct conn *c;
        struct ag_napi *srv;
        enum ag_napi_channel_proto proto; /* WebSocket: the channel subprotocol */
        bool spdy;
        struct ag_napi_exec_options opts;
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

struct pfwd {
        struct conn *c;
        char ns[AG_NAPI_NAME_MAX], pod[AG_NAPI_NAME_MAX], uid[AG_NAPI_NAME_MAX];
        char netns[RT_PATH_MAX];
        struct pfpair *pairs;
        size_t n_pairs;
};

int64_t ag_napi_wall_ns(void);
int ag_napi_set_nonblock(int fd);
void ag_napi_conn_write(struct conn *c, const void *buf, size_t len);
size_t ag_napi_conn_pending(const struct conn *c);
void ag_napi_conn_printf(struct conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void ag_napi_conn_head(struct conn *c, int code, const char *ctype, long long len);
void ag_napi_respond(struct conn *c, int code, const char *ctype, char *body);
void ag_napi_respond_error(struct conn *c, int code, const char *msg);
void ag_napi_conn_read(struct conn *c);
void ag_napi_conn_update(struct conn *c);
void ag_napi_conn_input(struct conn *c, const uint8_t *buf, size_t len);
int ag_napi_find_target(struct ag_napi *s, const struct ag_napi_target *t, const char *container,
                        struct found *f);
void ag_napi_found_clear(struct found *f);
void ag_napi_serve_request(struct conn *c, const uint8_t *rest, size_t rest_len);
void ag_napi_logstream_free(struct logstream *l);
void ag_napi_start_logs(struct conn *c, const struct ag_napi_target *t, struct args *a);
/* The connection wrote some of its output: a log stream goes on. */
void ag_napi_logs_written(struct logstream *l);
/* Waits for every killed exec still being reaped (the server goes away). */
void ag_napi_reapers_free(struct ag_napi *s);
void ag_napi_exec_free(struct exec *x);
void ag_napi_exec_queue(struct exec *x, uint8_t channel, const void *data, size_t len);
void ag_napi_exec_update_reading(struct exec *x);
void ag_napi_exec_finish(struct exec *x, int code, const char *message);
void ag_napi_exec_stdin(struct exec *x, const uint8_t *p, size_t n);
void ag_napi_exec_stdin_close(struct exec *x);
void ag_napi_exec_resize(struct exec *x, const uint8_t *p, size_t n);
int ag_napi_exec_on_stream(struct conn *c, uint32_t id, const struct ag_spdy_header *h, size_t n);
int ag_napi_exec_on_data(struct conn *c, uint32_t id, const uint8_t *buf, size_t len, bool fin);
void ag_napi_exec_begin(struct exec *x);
void ag_napi_ws_send(struct conn *c, uint8_t opcode, const void *a, size_t alen, const void *b,
                     size_t blen);
int ag_napi_ws_start(struct conn *c, const char *protocol, struct cb_error *err);
void ag_napi_ws_input(struct conn *c, const uint8_t *buf, size_t len);
void ag_napi_spdy_flush(struct conn *c);
void ag_napi_spdy_input(struct conn *c, const uint8_t *buf, size_t len);
const char *ag_napi_header_get(const struct ag_spdy_header *h, size_t n, const char *name);
void ag_napi_pfwd_free(struct pfwd *pf);
/* The connection wrote some of its output: the pairs read their sockets again. */
void ag_napi_pfwd_written(struct pfwd *pf);
int ag_napi_pf_on_stream(struct conn *c, uint32_t id, const struct ag_spdy_header *h, size_t n,
                         bool fin);
int ag_napi_pf_on_data(struct conn *c, uint32_t id, const uint8_t *buf, size_t len, bool fin);
void ag_napi_pf_on_reset(struct conn *c, uint32_t id);

extern const struct ag_spdy_callbacks ag_napi_spdy_cbs;
