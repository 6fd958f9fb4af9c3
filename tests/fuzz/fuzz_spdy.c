/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the SPDY codec: the input is what a peer sends.
 * The first byte picks the side (server or client) and how the rest is cut
 * into feeds; the callbacks answer like the exec server will (SYN_REPLY,
 * DATA, RST_STREAM, GOAWAY from inside callbacks). Protocol errors are
 * expected; crashes, leaks (ASan), undefined behaviour (UBSan) and memory
 * beyond the codec's limits (-rss_limit_mb) are findings.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/nodeapi/spdy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct ctx {
        struct ag_spdy_session *s;
        unsigned calls;
};

static int on_stream(void *d, uint32_t id, const struct ag_spdy_header *h, size_t n, bool fin)
{
        struct ctx *c = d;
        struct cb_error err = {0};
        size_t total = 0;
        for (size_t i = 0; i < n; i++) /* every string is NUL-terminated */
                total += strlen(h[i].name) + strlen(h[i].value);
        (void)total;
        c->calls++;
        if (c->calls % 5 == 0)
                return ag_spdy_rst(c->s, id, AG_SPDY_REFUSED_STREAM, &err) == 0 ? 0 : -1;
        /* echo the headers back, as a reply may carry any */
        if (ag_spdy_reply(c->s, id, h, n, fin, &err) < 0)
                return 0; /* e.g. a unidirectional stream: fine */
        if (!fin)
                (void)ag_spdy_data(c->s, id, "ok", 2, c->calls % 3 == 0, &err);
        return 0;
}

static int on_reply(void *d, uint32_t id, const struct ag_spdy_header *h, size_t n, bool fin)
{
        (void)h;
        (void)n;
        (void)fin;
        struct ctx *c = d;
        struct cb_error err = {0};
        (void)ag_spdy_data(c->s, id, NULL, 0, true, &err);
        return 0;
}

static int on_data(void *d, uint32_t id, const uint8_t *buf, size_t len, bool fin)
{
        struct ctx *c = d;
        struct cb_error err = {0};
        volatile uint8_t sink = 0;
        for (size_t i = 0; i < len; i++) /* touch every byte */
                sink ^= buf[i];
        (void)sink;
        c->calls++;
        if (c->calls % 7 == 0)
                (void)ag_spdy_rst(c->s, id, AG_SPDY_CANCEL, &err);
        else if (len > 0 && !fin)
                (void)ag_spdy_data(c->s, id, buf, len > 16 ? 16 : len, false, &err);
        return c->calls % 97 == 0 ? -1 : 0; /* a handler failing now and then */
}

static void on_reset(void *d, uint32_t id, uint32_t status)
{
        (void)d;
        (void)id;
        (void)status;
}

static void on_goaway(void *d, uint32_t last, uint32_t status)
{
        struct ctx *c = d;
        struct cb_error err = {0};
        (void)last;
        (void)ag_spdy_goaway(c->s, status, &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const struct ag_spdy_callbacks cb = {on_stream, on_reply, on_data, on_reset,
                                                    on_goaway};
        struct ctx c = {0};
        struct cb_error err = {0};

        if (size < 1)
                return 0;
        uint8_t mode = data[0];
        data++;
        size--;
        if (ag_spdy_session_new(mode & 1, &cb, &c, &c.s, &err) < 0)
                abort();
        /* the client side opens a stream first, so replies have one to meet */
        if (!(mode & 1)) {
                static const struct ag_spdy_header h[] = {{"streamtype", "data"}, {"port", "80"}};
                uint32_t id;
                if (ag_spdy_syn_stream(c.s, h, 2, false, &id, &err) < 0)
                        abort();
        }
        /* feeds of 1..16 bytes (mode bits 1-4), or all at once when 0 */
        size_t step = (mode >> 1) & 0x0f;
        if (step == 0)
                step = size;
        for (size_t off = 0; off < size; off += step) {
                size_t n = size - off < step ? size - off : step;
                if (ag_spdy_session_feed(c.s, data + off, n, &err) < 0)
                        break;
                /* the writer drains now and then */
                if (mode & 0x20)
                        ag_spdy_consumed(c.s, ag_spdy_output_len(c.s) / 2);
        }
        size_t len;
        const uint8_t *out = ag_spdy_output(c.s, &len);
        if ((out == NULL) != (len == 0))
                abort();
        ag_spdy_session_free(c.s);
        return 0;
}
