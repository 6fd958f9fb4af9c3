/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The framing of an upgraded connection: WebSocket by wslay (exec/attach
 * channels, or SPDY tunnelled in binary messages) and the SPDY session's
 * glue (agent/nodeapi/spdy.h) with its callbacks, which hand streams and
 * data to an exec session or to port forwarding.
 */
#include "agent/nodeapi/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agent/core/log.h"
#include "lib/cleanup.h"

/* ---- WebSocket (wslay) ---- */

void ag_napi_ws_send(struct conn *c, uint8_t opcode, const void *a, size_t alen, const void *b,
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
        ag_napi_conn_write(c, data, len);
        return (ssize_t)len;
}

static void ws_on_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg,
                      void *user)
{
        (void)ctx;
        struct conn *c = user;
        if (arg->opcode != WSLAY_BINARY_FRAME && arg->opcode != WSLAY_TEXT_FRAME)
                return; /* close, ping, pong: wslay answers */
        if (c->ws_tunnel) {
                ag_napi_spdy_input(c, arg->msg, arg->msg_length);
                return;
        }
        struct exec *x = c->ex;
        uint8_t ch;
        const uint8_t *p;
        size_t n;
        if (x == NULL || x->closing ||
            ag_napi_channel_split(arg->msg, arg->msg_length, &ch, &p, &n) < 0)
                return;
        switch (ch) {
        case AG_NAPI_CH_STDIN:
                ag_napi_exec_stdin(x, p, n);
                break;
        case AG_NAPI_CH_RESIZE:
                ag_napi_exec_resize(x, p, n);
                break;
        case AG_NAPI_CH_CLOSE:
                if (x->proto >= AG_NAPI_CHANNEL_V5 && n >= 1 && p[0] == AG_NAPI_CH_STDIN)
                        ag_napi_exec_stdin_close(x);
                break;
        default:
                break;
        }
}

int ag_napi_ws_start(struct conn *c, const char *protocol, struct cb_error *err)
{
        char accept[32];
        if (ag_napi_ws_accept(c->req.ws_key, accept) < 0)
                return cb_error_set(err, EINVAL, "bad Sec-WebSocket-Key");
        static const struct wslay_event_callbacks cbs = {
            .recv_callback = ws_recv_cb,
            .send_callback = ws_send_cb,
            .on_msg_recv_callback = ws_on_msg,
        };
        if (wslay_event_context_server_init(&c->ws, &cbs, c) != 0)
                return cb_error_set(err, ENOMEM, "WebSocket");
        wslay_event_config_set_max_recv_msg_length(c->ws, AG_SPDY_MAX_FRAME + 64);
        ag_napi_conn_printf(c,
                            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                            "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n",
                            accept);
        if (protocol != NULL)
                ag_napi_conn_printf(c, "Sec-WebSocket-Protocol: %s\r\n", protocol);
        ag_napi_conn_printf(c, "\r\n");
        c->mode = C_WS;
        return 0;
}

void ag_napi_ws_input(struct conn *c, const uint8_t *buf, size_t len)
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
void ag_napi_spdy_flush(struct conn *c)
{
        size_t n;
        const uint8_t *o;
        while (c->spdy != NULL && !c->dead && (o = ag_spdy_output(c->spdy, &n)) != NULL && n > 0) {
                if (c->ws_tunnel)
                        ag_napi_ws_send(c, WSLAY_BINARY_FRAME, o, n, NULL, 0);
                else
                        ag_napi_conn_write(c, o, n);
                ag_spdy_consumed(c->spdy, n);
        }
}

void ag_napi_spdy_input(struct conn *c, const uint8_t *buf, size_t len)
{
        struct cb_error err = {0};
        if (ag_spdy_session_feed(c->spdy, buf, len, &err) < 0) {
                log_v(2, "node API: SPDY: %s", err.msg);
                (void)ag_spdy_goaway(c->spdy, 1, &err);
                ag_napi_spdy_flush(c);
                c->close_after_flush = true;
                return;
        }
        ag_napi_spdy_flush(c);
}

const char *ag_napi_header_get(const struct ag_spdy_header *h, size_t n, const char *name)
{
        for (size_t i = 0; i < n; i++)
                if (strcasecmp(h[i].name, name) == 0)
                        return h[i].value;
        return NULL;
}

/* ---- SPDY callbacks ---- */

static int cb_stream(void *data, uint32_t id, const struct ag_spdy_header *h, size_t n, bool fin)
{
        struct conn *c = data;
        if (c->pf != NULL)
                return ag_napi_pf_on_stream(c, id, h, n, fin);
        if (c->ex != NULL)
                return ag_napi_exec_on_stream(c, id, h, n);
        return -1;
}

static int cb_reply(void *data, uint32_t id, const struct ag_spdy_header *h, size_t n, bool fin)
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
                return ag_napi_pf_on_data(c, id, buf, len, fin);
        if (c->ex != NULL)
                return ag_napi_exec_on_data(c, id, buf, len, fin);
        return 0;
}

static void cb_reset(void *data, uint32_t id, uint32_t status)
{
        (void)status;
        struct conn *c = data;
        if (c->pf != NULL)
                ag_napi_pf_on_reset(c, id);
        else if (c->ex != NULL && id == c->ex->sid[AG_NAPI_CH_STDIN] && id != 0)
                ag_napi_exec_stdin_close(c->ex);
}

static void cb_goaway(void *data, uint32_t last, uint32_t status)
{
        (void)last;
        (void)status;
        struct conn *c = data;
        c->close_after_flush = true;
}

const struct ag_spdy_callbacks ag_napi_spdy_cbs = {
    .on_stream = cb_stream,
    .on_reply = cb_reply,
    .on_data = cb_data,
    .on_reset = cb_reset,
    .on_goaway = cb_goaway,
};
