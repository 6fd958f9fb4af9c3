/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the node API's request head and what follows an
 * upgrade: the bytes go, in chunks whose sizes the first byte picks, through
 * ag_napi_head_feed (agent/nodeapi/head.c, http-parser's callbacks as the
 * server uses them); once the head is complete and asks for an upgrade, the
 * rest is read as WebSocket frames by a wslay server context configured as
 * the server's (agent/nodeapi/framing.c), each message through the channel
 * framing and the resize decoder (agent/nodeapi/proto.c).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <wslay/wslay.h>

#include "agent/nodeapi/head.h"
#include "agent/nodeapi/proto.h"
#include "agent/nodeapi/spdy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct input {
        const uint8_t *p;
        size_t len;
};

static ssize_t recv_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *user)
{
        (void)flags;
        struct input *in = user;
        if (in->len == 0) {
                wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
                return -1;
        }
        size_t n = len < in->len ? len : in->len;
        memcpy(buf, in->p, n);
        in->p += n;
        in->len -= n;
        return (ssize_t)n;
}

static ssize_t send_cb(wslay_event_context_ptr ctx, const uint8_t *d, size_t len, int flags,
                       void *user)
{
        (void)ctx;
        (void)d;
        (void)flags;
        (void)user;
        return (ssize_t)len;
}

static void on_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg,
                   void *user)
{
        (void)ctx;
        (void)user;
        uint8_t ch;
        const uint8_t *p;
        size_t n;
        if (arg->opcode != WSLAY_BINARY_FRAME && arg->opcode != WSLAY_TEXT_FRAME)
                return;
        if (ag_napi_channel_split(arg->msg, arg->msg_length, &ch, &p, &n) == 0 &&
            ch == AG_NAPI_CH_RESIZE) {
                struct cb_error err = {0};
                uint16_t w, h;
                (void)ag_napi_parse_resize(p, n, &w, &h, &err);
        }
}

static void frames(const uint8_t *p, size_t len)
{
        static const struct wslay_event_callbacks cbs = {
            .recv_callback = recv_cb,
            .send_callback = send_cb,
            .on_msg_recv_callback = on_msg,
        };
        struct input in = {p, len};
        wslay_event_context_ptr ws;
        if (wslay_event_context_server_init(&ws, &cbs, &in) != 0)
                abort();
        wslay_event_config_set_max_recv_msg_length(ws, AG_SPDY_MAX_FRAME + 64);
        while (in.len > 0 && wslay_event_recv(ws) == 0)
                (void)wslay_event_send(ws);
        wslay_event_context_free(ws);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size == 0)
                return 0;
        size_t chunk = (size_t)(data[0] & 0x3f) + 1; /* 1..64 bytes per read */
        const char *p = (const char *)data + 1;
        size_t left = size - 1;
        http_parser hp;
        struct ag_napi_head h;
        memset(&h, 0, sizeof(h));
        ag_napi_head_init(&hp, &h);
        enum ag_napi_head_state st = AG_NAPI_HEAD_MORE;
        size_t used = 0;
        const char *why = NULL;
        while (left > 0 && st == AG_NAPI_HEAD_MORE) {
                size_t n = left < chunk ? left : chunk;
                st = ag_napi_head_feed(&hp, &h, p, n, &used, &why);
                if (st == AG_NAPI_HEAD_DONE && used > n)
                        abort(); /* more than was fed */
                if (st == AG_NAPI_HEAD_BAD && why == NULL)
                        abort();
                if (st != AG_NAPI_HEAD_MORE)
                        left -= used, p += used;
                else
                        left -= n, p += n;
        }
        if (st == AG_NAPI_HEAD_DONE) {
                if (h.method[0] == '\0')
                        abort(); /* a complete head always has its method */
                if (hp.upgrade)
                        frames((const uint8_t *)p, left);
        }
        ag_napi_head_clear(&h);
        return 0;
}
