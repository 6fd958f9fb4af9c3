/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The SPDY/3.1 codec (agent/nodeapi/spdy.c): a client and a server session wired
 * back to back, literal frames from the SPDY/3 draft's layouts, and
 * malformed input. Header blocks for the hand-made frames are compressed
 * here with zlib and the dictionary, independently of the codec's own
 * compressor.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "agent/nodeapi/spdy.h"

#include "helpers.h"

#define MAXEV 4096

struct event {
        char kind; /* 's'tream 'r'eply 'd'ata 'x' reset 'g'oaway */
        uint32_t id;
        bool fin;
        uint32_t status;
        char headers[512]; /* "name=value;" ... */
};

struct peer {
        struct ag_spdy_session *s;
        struct event ev[MAXEV];
        size_t n;
        uint8_t *data[8]; /* received DATA per stream id (id < 8) */
        size_t data_len[8];
        int data_calls;
        bool rst_in_data; /* on_data resets the stream it is called for */
};

static void add_headers(struct event *e, const struct ag_spdy_header *h, size_t n)
{
        e->headers[0] = '\0';
        for (size_t i = 0; i < n; i++) {
                size_t l = strlen(e->headers);
                snprintf(e->headers + l, sizeof(e->headers) - l, "%s=%s;", h[i].name, h[i].value);
        }
}

static struct event *push(struct peer *p, char kind, uint32_t id)
{
        ck_assert_uint_lt(p->n, MAXEV);
        struct event *e = &p->ev[p->n++];
        memset(e, 0, sizeof(*e));
        e->kind = kind;
        e->id = id;
        return e;
}

static int on_stream(void *d, uint32_t id, const struct ag_spdy_header *h, size_t n, bool fin)
{
        struct event *e = push(d, 's', id);
        e->fin = fin;
        add_headers(e, h, n);
        return 0;
}

static int on_reply(void *d, uint32_t id, const struct ag_spdy_header *h, size_t n, bool fin)
{
        struct event *e = push(d, 'r', id);
        e->fin = fin;
        add_headers(e, h, n);
        return 0;
}

static int on_data(void *d, uint32_t id, const uint8_t *buf, size_t len, bool fin)
{
        struct peer *p = d;
        p->data_calls++;
        if (id < 8 && len > 0) {
                p->data[id] = realloc(p->data[id], p->data_len[id] + len);
                ck_assert_ptr_nonnull(p->data[id]);
                memcpy(p->data[id] + p->data_len[id], buf, len);
                p->data_len[id] += len;
        }
        if (fin)
                push(p, 'd', id)->fin = true;
        if (p->rst_in_data) {
                struct cb_error err = {0};
                ck_assert_int_eq(ag_spdy_rst(p->s, id, AG_SPDY_CANCEL, &err), 0);
        }
        return 0;
}

static void on_reset(void *d, uint32_t id, uint32_t status)
{
        push(d, 'x', id)->status = status;
}

static void on_goaway(void *d, uint32_t last, uint32_t status)
{
        push(d, 'g', last)->status = status;
}

static const struct ag_spdy_callbacks cbs = {on_stream, on_reply, on_data, on_reset, on_goaway};

static struct peer *peer_new(bool server)
{
        struct peer *p = calloc(1, sizeof(*p));
        struct cb_error err = {0};
        ck_assert_ptr_nonnull(p);
        ck_assert_msg(ag_spdy_session_new(server, &cbs, p, &p->s, &err) == 0, "%s", err.msg);
        return p;
}

static void peer_free(struct peer *p)
{
        ag_spdy_session_free(p->s);
        for (int i = 0; i < 8; i++)
                free(p->data[i]);
        free(p);
}

/* Moves what `from` queued into `to`, in pieces of `chunk` bytes (0:
 * pieces of varying size). */
static void pipe_to(struct peer *from, struct peer *to, size_t chunk)
{
        size_t len;
        const uint8_t *out;
        unsigned seed = 7;
        while ((out = ag_spdy_output(from->s, &len)) != NULL) {
                size_t n = chunk;
                if (n == 0) {
                        seed = seed * 1103515245u + 12345u;
                        n = 1 + (seed >> 8) % 3000;
                }
                if (n > len)
                        n = len;
                struct cb_error err = {0};
                ck_assert_msg(ag_spdy_session_feed(to->s, out, n, &err) == 0, "feed: %s", err.msg);
                ag_spdy_consumed(from->s, n);
        }
}

static void pump(struct peer *a, struct peer *b, size_t chunk)
{
        while (ag_spdy_output_len(a->s) > 0 || ag_spdy_output_len(b->s) > 0) {
                pipe_to(a, b, chunk);
                pipe_to(b, a, chunk);
        }
}

static const struct ag_spdy_header exec_headers[] = {
    {"streamType", "stdout"}, /* spdystream lower-cases names on the wire */
    {"port", "8080"},
    {"requestid", "0"},
};

static uint32_t open_stream(struct peer *client, struct peer *server, bool fin)
{
        struct cb_error err = {0};
        uint32_t id = 0;
        ck_assert_msg(ag_spdy_syn_stream(client->s, exec_headers, 3, fin, &id, &err) == 0, "%s",
                      err.msg);
        pump(client, server, 0);
        return id;
}

static void reply(struct peer *server, struct peer *client, uint32_t id)
{
        struct cb_error err = {0};
        const struct ag_spdy_header h[] = {{"status", "200"}};
        ck_assert_msg(ag_spdy_reply(server->s, id, h, 1, false, &err) == 0, "%s", err.msg);
        pump(server, client, 0);
}

static struct event *last(struct peer *p)
{
        ck_assert_uint_gt(p->n, 0);
        return &p->ev[p->n - 1];
}

/* ---- building frames by hand ---- */

struct frame {
        uint8_t b[1 << 20];
        size_t len;
};

static void f_put32(struct frame *f, uint32_t v)
{
        f->b[f->len++] = (uint8_t)(v >> 24);
        f->b[f->len++] = (uint8_t)(v >> 16);
        f->b[f->len++] = (uint8_t)(v >> 8);
        f->b[f->len++] = (uint8_t)v;
}

/* A zlib stream with the SPDY dictionary, as a peer keeps one. */
static void zinit(z_stream *z)
{
        size_t dl;
        const uint8_t *dict = ag_spdy_header_dictionary(&dl);
        memset(z, 0, sizeof(*z));
        ck_assert_int_eq(deflateInit(z, Z_BEST_COMPRESSION), Z_OK);
        ck_assert_int_eq(deflateSetDictionary(z, dict, (uInt)dl), Z_OK);
}

static size_t zblock(z_stream *z, const uint8_t *plain, size_t len, uint8_t *out, size_t cap)
{
        z->next_in = (Bytef *)plain;
        z->avail_in = (uInt)len;
        z->next_out = out;
        z->avail_out = (uInt)cap;
        ck_assert_int_eq(deflate(z, Z_SYNC_FLUSH), Z_OK);
        ck_assert_uint_eq(z->avail_in, 0);
        ck_assert_uint_gt(z->avail_out, 0);
        return cap - z->avail_out;
}

/* A control frame carrying a header block: SYN_STREAM (type 1, 10-byte
 * prefix), SYN_REPLY (2) or HEADERS (8) (4-byte prefix). */
static void hdr_frame(struct frame *f, z_stream *z, uint16_t type, uint8_t flags, uint32_t id,
                      const uint8_t *plain, size_t len)
{
        static uint8_t zb[1 << 16];
        size_t zl = zblock(z, plain, len, zb, sizeof(zb));
        size_t pre = type == 1 ? 10 : 4;
        f->len = 0;
        f->b[f->len++] = 0x80;
        f->b[f->len++] = 0x03;
        f->b[f->len++] = (uint8_t)(type >> 8);
        f->b[f->len++] = (uint8_t)type;
        f_put32(f, (uint32_t)flags << 24 | (uint32_t)(pre + zl));
        f_put32(f, id);
        if (pre == 10) {
                f_put32(f, 0);
                f->b[f->len++] = 0;
                f->b[f->len++] = 0;
        }
        memcpy(f->b + f->len, zb, zl);
        f->len += zl;
}

/* SYN_STREAM (version 3, type 1) with a compressed block made of `plain`,
 * plus `junk` bytes after it inside the frame. */
static void syn_frame(struct frame *f, z_stream *z, uint32_t id, const uint8_t *plain, size_t len,
                      const char *junk)
{
        static uint8_t zb[1 << 20];
        size_t zl = zblock(z, plain, len, zb, sizeof(zb));
        size_t jl = junk ? strlen(junk) : 0;
        f->len = 0;
        f->b[f->len++] = 0x80;
        f->b[f->len++] = 0x03;
        f->b[f->len++] = 0x00;
        f->b[f->len++] = 0x01;
        f_put32(f, (uint32_t)(10 + zl + jl));
        f_put32(f, id);
        f_put32(f, 0);      /* associated-to */
        f->b[f->len++] = 0; /* priority */
        f->b[f->len++] = 0; /* slot */
        memcpy(f->b + f->len, zb, zl);
        f->len += zl;
        memcpy(f->b + f->len, junk ? junk : "", jl);
        f->len += jl;
}

/* A plain header block: pairs of (name, value). */
static size_t plain_block(uint8_t *b, uint32_t count, const char *const *nv, size_t pairs)
{
        struct frame f;
        f.len = 0;
        f_put32(&f, count);
        for (size_t i = 0; i < 2 * pairs; i++) {
                f_put32(&f, (uint32_t)strlen(nv[i]));
                memcpy(f.b + f.len, nv[i], strlen(nv[i]));
                f.len += strlen(nv[i]);
        }
        memcpy(b, f.b, f.len);
        return f.len;
}

static int feed(struct peer *p, const void *b, size_t len, struct cb_error *err)
{
        memset(err, 0, sizeof(*err));
        return ag_spdy_session_feed(p->s, b, len, err);
}

/* ---- tests ---- */

START_TEST(dictionary_is_spdy3s)
{
        size_t len;
        const uint8_t *d = ag_spdy_header_dictionary(&len);
        ck_assert_uint_eq(len, 1423);
        /* the DICTID a SPDY/3 peer's zlib stream carries (RFC 1950 2.2),
         * here 0xe3c6a7c2 as node's spdy-transport writes it */
        ck_assert_uint_eq(adler32(adler32(0, NULL, 0), d, (uInt)len), 0xe3c6a7c2u);
        ck_assert_mem_eq(d, "\0\0\0\x07options", 11);
        ck_assert_mem_eq(d + len - 6, "enq=0.", 6);
}
END_TEST

START_TEST(syn_stream_reaches_server_lower_cased)
{
        struct peer *c = peer_new(false), *s = peer_new(true);
        uint32_t id = open_stream(c, s, false);
        ck_assert_uint_eq(id, 1);
        ck_assert_uint_eq(s->n, 1);
        ck_assert_int_eq(s->ev[0].kind, 's');
        ck_assert_uint_eq(s->ev[0].id, 1);
        ck_assert(!s->ev[0].fin);
        ck_assert_str_eq(s->ev[0].headers, "streamtype=stdout;port=8080;requestid=0;");
        /* the next one is 3, and FIN reaches the server */
        ck_assert_uint_eq(open_stream(c, s, true), 3);
        ck_assert(last(s)->fin);
        peer_free(c);
        peer_free(s);
}
END_TEST

START_TEST(reply_and_data_both_ways)
{
        /* _i: 0 = pieces of varying size, 1 = one byte at a time */
        size_t chunk = _i == 0 ? 0 : 1;
        struct peer *c = peer_new(false), *s = peer_new(true);
        struct cb_error err = {0};
        uint32_t id = open_stream(c, s, false);

        /* the client's stdin may come before the reply: it is delivered */
        ck_assert_int_eq(ag_spdy_data(c->s, id, "early", 5, false, &err), 0);
        pump(c, s, chunk);
        ck_assert_uint_eq(s->data_len[id], 5);

        reply(s, c, id);
        ck_assert_int_eq(last(c)->kind, 'r');
        ck_assert_str_eq(last(c)->headers, "status=200;");

        size_t big = _i == 0 ? 200000 : 70000; /* over AG_SPDY_DATA_CHUNK: several frames */
        uint8_t *payload = malloc(big);
        for (size_t i = 0; i < big; i++)
                payload[i] = (uint8_t)(i * 7 + i / 251);
        ck_assert_int_eq(ag_spdy_data(s->s, id, payload, big, false, &err), 0);
        ck_assert_int_eq(ag_spdy_data(c->s, id, payload, 1000, false, &err), 0);
        pump(s, c, chunk);
        ck_assert_uint_eq(c->data_len[id], big);
        ck_assert_mem_eq(c->data[id], payload, big);
        ck_assert_uint_eq(s->data_len[id], 1005);
        ck_assert_mem_eq(s->data[id] + 5, payload, 1000);
        free(payload);
        peer_free(c);
        peer_free(s);
}
END_TEST

START_TEST(fin_half_closes)
{
        struct peer *c = peer_new(false), *s = peer_new(true);
        struct cb_error err = {0};
        uint32_t id = open_stream(c, s, false);
        reply(s, c, id);

        /* the client is done sending (Stream.Close: an empty DATA with FIN) */
        ck_assert_int_eq(ag_spdy_data(c->s, id, NULL, 0, true, &err), 0);
        ck_assert_int_eq(ag_spdy_data(c->s, id, "x", 1, false, &err), -1);
        ck_assert_msg(strstr(err.msg, "after our FIN") != NULL, "%s", err.msg);
        pump(c, s, 1);
        ck_assert_int_eq(last(s)->kind, 'd');
        ck_assert(last(s)->fin);

        /* the other half still carries data */
        ck_assert_int_eq(ag_spdy_data(s->s, id, "out", 3, false, &err), 0);
        ck_assert_int_eq(ag_spdy_data(s->s, id, "put", 3, true, &err), 0);
        pump(s, c, 1);
        ck_assert_uint_eq(c->data_len[id], 6);
        ck_assert_mem_eq(c->data[id], "output", 6);
        ck_assert_int_eq(last(c)->kind, 'd');

        /* both halves closed: the stream is forgotten on both sides */
        ck_assert_int_eq(ag_spdy_data(s->s, id, "x", 1, false, &err), -1);
        ck_assert_msg(strstr(err.msg, "not open") != NULL, "%s", err.msg);
        ck_assert_int_eq(ag_spdy_rst(c->s, id, AG_SPDY_CANCEL, &err), 0); /* any id may be reset */
        peer_free(c);
        peer_free(s);
}
END_TEST

START_TEST(rst_closes_both_halves)
{
        struct peer *c = peer_new(false), *s = peer_new(true);
        struct cb_error err = {0};
        uint32_t id = open_stream(c, s, false);
        reply(s, c, id);
        ck_assert_int_eq(ag_spdy_rst(c->s, id, AG_SPDY_CANCEL, &err), 0);
        pump(c, s, 0);
        ck_assert_int_eq(last(s)->kind, 'x');
        ck_assert_uint_eq(last(s)->status, AG_SPDY_CANCEL);
        ck_assert_int_eq(ag_spdy_data(s->s, id, "x", 1, false, &err), -1);
        size_t n = s->n;
        /* a late RST for a stream that is gone is not answered */
        uint8_t rst[] = {0x80, 0x03, 0x00, 0x03, 0x00, 0x00, 0x00, 0x08,
                         0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05};
        ck_assert_int_eq(feed(s, rst, sizeof(rst), &err), 0);
        ck_assert_uint_eq(s->n, n);
        ck_assert_uint_eq(ag_spdy_output_len(s->s), 0);
        peer_free(c);
        peer_free(s);
}
END_TEST

START_TEST(goaway)
{
        struct peer *c = peer_new(false), *s = peer_new(true);
        struct cb_error err = {0};
        open_stream(c, s, false);
        open_stream(c, s, false);
        ck_assert_int_eq(ag_spdy_goaway(s->s, 0, &err), 0);
        pump(s, c, 0);
        ck_assert_int_eq(last(c)->kind, 'g');
        ck_assert_uint_eq(last(c)->id, 3); /* the last stream the server accepted */
        ck_assert_uint_eq(last(c)->status, 0);
        uint32_t id;
        ck_assert_int_eq(ag_spdy_syn_stream(c->s, exec_headers, 1, false, &id, &err), -1);
        ck_assert_msg(strstr(err.msg, "GOAWAY") != NULL, "%s", err.msg);
        peer_free(c);
        peer_free(s);
}
END_TEST

START_TEST(refused_after_goaway_sent)
{
        struct peer *c = peer_new(false), *s = peer_new(true);
        struct cb_error err = {0};
        ck_assert_int_eq(ag_spdy_goaway(s->s, 0, &err), 0);
        ag_spdy_consumed(s->s, ag_spdy_output_len(s->s));
        uint32_t id;
        ck_assert_int_eq(ag_spdy_syn_stream(c->s, exec_headers, 1, false, &id, &err), 0);
        pipe_to(c, s, 0); /* the client has not read the GOAWAY yet */
        ck_assert_uint_eq(s->n, 0);
        uint8_t want[] = {0x80, 0x03, 0x00, 0x03, 0x00, 0x00, 0x00, 0x08,
                          0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x03};
        size_t len;
        const uint8_t *out = ag_spdy_output(s->s, &len);
        ck_assert_uint_eq(len, sizeof(want));
        ck_assert_mem_eq(out, want, sizeof(want));
        peer_free(c);
        peer_free(s);
}
END_TEST

START_TEST(ping_literal_answered)
{
        struct peer *s = peer_new(true);
        struct cb_error err = {0};
        /* SPDY/3 2.6.5: control bit, version 3, type 6, flags 0, length 4, id */
        const uint8_t ping[] = {0x80, 0x03, 0x00, 0x06, 0x00, 0x00,
                                0x00, 0x04, 0x00, 0x00, 0x00, 0x01};
        for (size_t i = 0; i < sizeof(ping); i++) /* one byte at a time */
                ck_assert_int_eq(feed(s, ping + i, 1, &err), 0);
        size_t len;
        const uint8_t *out = ag_spdy_output(s->s, &len);
        ck_assert_uint_eq(len, sizeof(ping));
        ck_assert_mem_eq(out, ping, sizeof(ping));
        ag_spdy_consumed(s->s, len);
        /* an even id is the server's own: a reply, not answered */
        const uint8_t pong[] = {0x80, 0x03, 0x00, 0x06, 0x00, 0x00,
                                0x00, 0x04, 0x00, 0x00, 0x00, 0x02};
        ck_assert_int_eq(feed(s, pong, sizeof(pong), &err), 0);
        ck_assert_uint_eq(ag_spdy_output_len(s->s), 0);
        peer_free(s);
}
END_TEST

START_TEST(literal_data_and_rst)
{
        struct peer *c = peer_new(false), *s = peer_new(true);
        struct cb_error err = {0};
        uint32_t id = open_stream(c, s, false);
        /* DATA: stream 1, FLAG_FIN, length 3, "abc" */
        const uint8_t data[] = {0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0x00, 0x03, 'a', 'b', 'c'};
        ck_assert_int_eq(feed(s, data, sizeof(data), &err), 0);
        ck_assert_uint_eq(s->data_len[id], 3);
        ck_assert_mem_eq(s->data[id], "abc", 3);
        ck_assert_int_eq(last(s)->kind, 'd');
        /* RST_STREAM: stream 1, status 5 (CANCEL) */
        const uint8_t rst[] = {0x80, 0x03, 0x00, 0x03, 0x00, 0x00, 0x00, 0x08,
                               0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05};
        ck_assert_int_eq(feed(s, rst, sizeof(rst), &err), 0);
        ck_assert_int_eq(last(s)->kind, 'x');
        ck_assert_uint_eq(last(s)->id, 1);
        ck_assert_uint_eq(last(s)->status, 5);
        /* SETTINGS with one entry (flags 0, id 4 = max concurrent streams, 100): ignored */
        const uint8_t settings[] = {0x80, 0x03, 0x00, 0x04, 0x00, 0x00, 0x00, 0x0c, 0x00, 0x00,
                                    0x00, 0x01, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x64};
        size_t n = s->n;
        ck_assert_int_eq(feed(s, settings, sizeof(settings), &err), 0);
        /* WINDOW_UPDATE for the session: read, changes nothing */
        const uint8_t wu[] = {0x80, 0x03, 0x00, 0x09, 0x00, 0x00, 0x00, 0x08,
                              0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00};
        ck_assert_int_eq(feed(s, wu, sizeof(wu), &err), 0);
        /* an unknown control type (10, CREDENTIAL) is skipped */
        const uint8_t cred[] = {0x80, 0x03, 0x00, 0x0a, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00};
        ck_assert_int_eq(feed(s, cred, sizeof(cred), &err), 0);
        ck_assert_uint_eq(s->n, n);
        ck_assert_uint_eq(ag_spdy_output_len(s->s), 0);
        peer_free(c);
        peer_free(s);
}
END_TEST

START_TEST(window_update_after_data)
{
        struct peer *c = peer_new(false), *s = peer_new(true);
        struct cb_error err = {0};
        uint32_t id = open_stream(c, s, false);
        reply(s, c, id);
        uint8_t buf[1000] = {0};
        ck_assert_int_eq(ag_spdy_data(c->s, id, buf, sizeof(buf), false, &err), 0);
        pipe_to(c, s, 0);
        /* WINDOW_UPDATE (type 9, length 8) for stream 1 and for the session, 1000 each */
        const uint8_t want[] = {0x80, 0x03, 0x00, 0x09, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00,
                                0x01, 0x00, 0x00, 0x03, 0xe8, 0x80, 0x03, 0x00, 0x09, 0x00, 0x00,
                                0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xe8};
        size_t len;
        const uint8_t *out = ag_spdy_output(s->s, &len);
        ck_assert_uint_eq(len, sizeof(want));
        ck_assert_mem_eq(out, want, sizeof(want));
        /* the client reads them without complaint */
        pump(s, c, 0);
        /* nothing is owed for data that ends the stream */
        ck_assert_int_eq(ag_spdy_data(c->s, id, buf, 10, true, &err), 0);
        pipe_to(c, s, 0);
        ck_assert_uint_eq(ag_spdy_output_len(s->s), 0);
        peer_free(c);
        peer_free(s);
}
END_TEST

START_TEST(data_on_unknown_stream_resets_it)
{
        struct peer *s = peer_new(true);
        struct cb_error err = {0};
        const uint8_t data[] = {0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x02, 'h', 'i'};
        ck_assert_int_eq(feed(s, data, sizeof(data), &err), 0);
        ck_assert_uint_eq(s->data_calls, 0);
        const uint8_t want[] = {0x80, 0x03, 0x00, 0x03, 0x00, 0x00, 0x00, 0x08,
                                0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x02};
        size_t len;
        const uint8_t *out = ag_spdy_output(s->s, &len);
        ck_assert_uint_eq(len, sizeof(want));
        ck_assert_mem_eq(out, want, sizeof(want));
        /* the session goes on */
        const uint8_t ping[] = {0x80, 0x03, 0x00, 0x06, 0x00, 0x00, 0x00, 0x04, 0, 0, 0, 3};
        ck_assert_int_eq(feed(s, ping, sizeof(ping), &err), 0);
        peer_free(s);
}
END_TEST

START_TEST(data_after_fin_resets_stream)
{
        struct peer *c = peer_new(false), *s = peer_new(true);
        struct cb_error err = {0};
        open_stream(c, s, true); /* SYN_STREAM with FLAG_FIN */
        const uint8_t data[] = {0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 'x'};
        ck_assert_int_eq(feed(s, data, sizeof(data), &err), 0);
        ck_assert_uint_eq(s->data_calls, 0);
        ck_assert_int_eq(last(s)->kind, 'x');
        ck_assert_uint_eq(last(s)->status, AG_SPDY_STREAM_ALREADY_CLOSED);
        peer_free(c);
        peer_free(s);
}
END_TEST

START_TEST(callback_may_reset_mid_frame)
{
        struct peer *c = peer_new(false), *s = peer_new(true);
        struct cb_error err = {0};
        uint32_t id = open_stream(c, s, false);
        reply(s, c, id);
        char buf[5000] = {0};
        ck_assert_int_eq(ag_spdy_data(c->s, id, buf, sizeof(buf), false, &err), 0);
        s->rst_in_data = true;
        pipe_to(c, s, 100); /* the frame arrives in 50 pieces; the first resets */
        ck_assert_int_eq(s->data_calls, 1);
        ck_assert_uint_eq(s->data_len[id], 100 - 8); /* the first piece held the frame header */
        /* and no WINDOW_UPDATE for a stream that is gone: only the RST_STREAM */
        ck_assert_uint_eq(ag_spdy_output_len(s->s), 16);
        peer_free(c);
        peer_free(s);
}
END_TEST

START_TEST(compression_context_persists)
{
        struct peer *c = peer_new(false), *s = peer_new(true);
        struct cb_error err = {0};
        uint32_t id;
        size_t l1, l2;
        ck_assert_int_eq(ag_spdy_syn_stream(c->s, exec_headers, 3, false, &id, &err), 0);
        l1 = ag_spdy_output_len(c->s);
        pipe_to(c, s, 0);
        ck_assert_int_eq(ag_spdy_syn_stream(c->s, exec_headers, 3, false, &id, &err), 0);
        const uint8_t *second = ag_spdy_output(c->s, &l2);
        /* the same headers again mostly refer back into the first block */
        ck_assert_uint_lt(l2, l1);
        uint8_t *copy = malloc(l2);
        memcpy(copy, second, l2);
        pipe_to(c, s, 0);
        ck_assert_uint_eq(s->n, 2);
        ck_assert_str_eq(s->ev[1].headers, "streamtype=stdout;port=8080;requestid=0;");
        /* a fresh session, without the first block, cannot read the second */
        struct peer *fresh = peer_new(true);
        ck_assert_int_eq(feed(fresh, copy, l2, &err), -1);
        ck_assert_uint_eq(fresh->n, 0);
        free(copy);
        peer_free(fresh);
        peer_free(c);
        peer_free(s);
}
END_TEST

START_TEST(hand_compressed_syn_stream)
{
        struct peer *s = peer_new(true);
        struct cb_error err = {0};
        static struct frame f;
        z_stream z;
        zinit(&z);
        uint8_t plain[256];
        const char *nv[] = {"streamtype", "error", "x", "a|b"};
        size_t pl = plain_block(plain, 2, nv, 2);
        plain[pl - 2] = '\0'; /* two values, NUL-separated: the first is given */
        syn_frame(&f, &z, 1, plain, pl, NULL);
        ck_assert_int_eq(feed(s, f.b, f.len, &err), 0);
        ck_assert_str_eq(last(s)->headers, "streamtype=error;x=a;");
        /* the second block from the same zlib stream */
        const char *nv2[] = {"streamtype", "stdin"};
        pl = plain_block(plain, 1, nv2, 1);
        syn_frame(&f, &z, 3, plain, pl, NULL);
        ck_assert_int_eq(feed(s, f.b, f.len, &err), 0);
        ck_assert_str_eq(last(s)->headers, "streamtype=stdin;");
        deflateEnd(&z);
        peer_free(s);
}
END_TEST

/* Each case: a SYN_STREAM (or raw bytes) that must fail the session, and
 * a word its message must contain. */
START_TEST(malformed_input_fails_cleanly)
{
        static struct frame f;
        uint8_t plain[1024];
        struct cb_error err;
        z_stream z;
        struct peer *s;
        size_t pl;

        /* bad version: a PING of version 2 */
        s = peer_new(true);
        const uint8_t v2[] = {0x80, 0x02, 0x00, 0x06, 0x00, 0x00, 0x00, 0x04, 0, 0, 0, 1};
        ck_assert_int_eq(feed(s, v2, sizeof(v2), &err), -1);
        ck_assert_msg(strstr(err.msg, "version 2") != NULL, "%s", err.msg);
        /* and it stays failed */
        ck_assert_int_eq(feed(s, v2, 1, &err), -1);
        peer_free(s);

        /* a control frame over the limit, refused from its header alone */
        s = peer_new(true);
        const uint8_t huge[] = {0x80, 0x03, 0x00, 0x01, 0x00, 0xff, 0xff, 0xff};
        ck_assert_int_eq(feed(s, huge, sizeof(huge), &err), -1);
        ck_assert_msg(strstr(err.msg, "at most") != NULL, "%s", err.msg);
        peer_free(s);

        /* truncated header block: a name longer than what follows */
        s = peer_new(true);
        zinit(&z);
        pl = plain_block(plain, 1, (const char *[]){"port", "80"}, 1);
        plain[7] = 40; /* name length 40, 10 bytes left */
        syn_frame(&f, &z, 1, plain, pl, NULL);
        ck_assert_int_eq(feed(s, f.b, f.len, &err), -1);
        ck_assert_msg(strstr(err.msg, "truncated") != NULL, "%s", err.msg);
        deflateEnd(&z);
        peer_free(s);

        /* a header count that overruns the block */
        s = peer_new(true);
        zinit(&z);
        pl = plain_block(plain, 200, (const char *[]){"port", "80"}, 1);
        syn_frame(&f, &z, 1, plain, pl, NULL);
        ck_assert_int_eq(feed(s, f.b, f.len, &err), -1);
        ck_assert_msg(strstr(err.msg, "overruns") != NULL, "%s", err.msg);
        deflateEnd(&z);
        peer_free(s);

        /* bytes after the last header */
        s = peer_new(true);
        zinit(&z);
        pl = plain_block(plain, 1, (const char *[]){"port", "80", "b", "c"}, 2);
        syn_frame(&f, &z, 1, plain, pl, NULL);
        ck_assert_int_eq(feed(s, f.b, f.len, &err), -1);
        ck_assert_msg(strstr(err.msg, "after the last") != NULL, "%s", err.msg);
        deflateEnd(&z);
        peer_free(s);

        /* garbage after the compressed block, inside the frame */
        s = peer_new(true);
        zinit(&z);
        pl = plain_block(plain, 1, (const char *[]){"port", "80"}, 1);
        syn_frame(&f, &z, 1, plain, pl, "\xff\xfe\xfd\xfc garbage");
        ck_assert_int_eq(feed(s, f.b, f.len, &err), -1);
        ck_assert_msg(strstr(err.msg, "inflate") != NULL || strstr(err.msg, "after") != NULL, "%s",
                      err.msg);
        deflateEnd(&z);
        peer_free(s);

        /* not zlib at all */
        s = peer_new(true);
        const uint8_t notz[] = {0x80, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x0e, 0,   0,   0,
                                1,    0,    0,    0,    0,    0,    0,    'n',  'o', 'p', 'e'};
        ck_assert_int_eq(feed(s, notz, sizeof(notz), &err), -1);
        ck_assert_msg(strstr(err.msg, "inflate") != NULL, "%s", err.msg);
        peer_free(s);

        /* a name in upper case, a name twice, an empty name */
        const char *bad[][4] = {
            {"Port", "80", "", ""}, {"port", "80", "port", "81"}, {"", "80", "", ""}};
        const char *why[] = {"lower case", "twice", "empty name"};
        for (int i = 0; i < 3; i++) {
                s = peer_new(true);
                zinit(&z);
                size_t pairs = bad[i][2][0] ? 2 : 1;
                pl = plain_block(plain, (uint32_t)pairs, bad[i], pairs);
                syn_frame(&f, &z, 1, plain, pl, NULL);
                ck_assert_int_eq(feed(s, f.b, f.len, &err), -1);
                ck_assert_msg(strstr(err.msg, why[i]) != NULL, "%d: %s", i, err.msg);
                deflateEnd(&z);
                peer_free(s);
        }

        /* a SYN_STREAM shorter than its fixed part; fixed-size frames of the wrong size */
        const uint8_t shorts[][16] = {
            {0x80, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x04, 0, 0, 0, 1},
            {0x80, 0x03, 0x00, 0x03, 0x00, 0x00, 0x00, 0x04, 0, 0, 0, 1},
            {0x80, 0x03, 0x00, 0x06, 0x00, 0x00, 0x00, 0x04 - 4},
            {0x80, 0x03, 0x00, 0x07, 0x00, 0x00, 0x00, 0x04, 0, 0, 0, 1},
            {0x80, 0x03, 0x00, 0x04, 0x00, 0x00, 0x00, 0x04, 0, 0, 0, 9},
        };
        const size_t short_len[] = {12, 12, 8, 12, 12};
        for (int i = 0; i < 5; i++) {
                s = peer_new(true);
                ck_assert_int_eq(feed(s, shorts[i], short_len[i], &err), -1);
                ck_assert_msg(strstr(err.msg, "bytes") != NULL, "%d: %s", i, err.msg);
                peer_free(s);
        }
}
END_TEST

START_TEST(header_block_bomb_is_bounded)
{
        static struct frame f;
        static uint8_t plain[400 << 10];
        struct cb_error err;
        z_stream z;
        /* 300 KiB of one value compresses to a few hundred bytes */
        size_t vl = 300 << 10;
        uint32_t i = 0;
        struct frame hdr;
        hdr.len = 0;
        f_put32(&hdr, 1);
        f_put32(&hdr, 1);
        hdr.b[hdr.len++] = 'a';
        f_put32(&hdr, (uint32_t)vl);
        memcpy(plain, hdr.b, hdr.len);
        memset(plain + hdr.len, 'v', vl);
        (void)i;
        struct peer *s = peer_new(true);
        zinit(&z);
        syn_frame(&f, &z, 1, plain, hdr.len + vl, NULL);
        ck_assert_uint_lt(f.len, AG_SPDY_MAX_CONTROL_FRAME);
        ck_assert_int_eq(feed(s, f.b, f.len, &err), -1);
        ck_assert_msg(strstr(err.msg, "more than") != NULL, "%s", err.msg);
        deflateEnd(&z);
        peer_free(s);
}
END_TEST

START_TEST(stream_id_rules)
{
        static struct frame f;
        uint8_t plain[64];
        struct cb_error err;
        z_stream z;
        size_t pl = plain_block(plain, 1, (const char *[]){"port", "80"}, 1);
        const struct {
                bool server;
                uint32_t first, second;
                const char *why;
        } cases[] = {
            {true, 1, 1, "increase"}, {true, 5, 3, "increase"}, {true, 2, 0, "odd"},
            {false, 1, 0, "even"},    {true, 0, 0, "stream 0"},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct peer *p = peer_new(cases[i].server);
                zinit(&z);
                syn_frame(&f, &z, cases[i].first, plain, pl, NULL);
                int rc = feed(p, f.b, f.len, &err);
                if (cases[i].second != 0) {
                        ck_assert_msg(rc == 0, "%zu: %s", i, err.msg);
                        syn_frame(&f, &z, cases[i].second, plain, pl, NULL);
                        rc = feed(p, f.b, f.len, &err);
                }
                ck_assert_int_eq(rc, -1);
                ck_assert_msg(strstr(err.msg, cases[i].why) != NULL, "%zu: %s", i, err.msg);
                deflateEnd(&z);
                peer_free(p);
        }
}
END_TEST

START_TEST(too_many_streams_refused)
{
        struct peer *c = peer_new(false), *s = peer_new(true);
        for (unsigned i = 0; i < AG_SPDY_MAX_STREAMS; i++)
                open_stream(c, s, false);
        ck_assert_uint_eq(s->n, AG_SPDY_MAX_STREAMS);
        /* the client forgets one stream without telling, to open one more */
        struct cb_error err = {0};
        ck_assert_int_eq(ag_spdy_rst(c->s, 1, AG_SPDY_CANCEL, &err), 0);
        ag_spdy_consumed(c->s, ag_spdy_output_len(c->s));
        uint32_t id = open_stream(c, s, false);
        ck_assert_uint_eq(s->n, AG_SPDY_MAX_STREAMS); /* not delivered */
        /* the server refused it: the client learns through RST_STREAM */
        ck_assert_int_eq(last(c)->kind, 'x');
        ck_assert_uint_eq(last(c)->id, id);
        ck_assert_uint_eq(last(c)->status, AG_SPDY_REFUSED_STREAM);
        peer_free(c);
        peer_free(s);
}
END_TEST

START_TEST(api_misuse_is_refused)
{
        struct peer *c = peer_new(false), *s = peer_new(true);
        struct cb_error err = {0};
        uint32_t id = open_stream(c, s, false);
        /* DATA on the peer's stream before its SYN_REPLY: spdystream would drop it */
        ck_assert_int_eq(ag_spdy_data(s->s, id, "x", 1, false, &err), -1);
        ck_assert_msg(strstr(err.msg, "before its SYN_REPLY") != NULL, "%s", err.msg);
        ck_assert_int_eq(ag_spdy_reply(s->s, 99, NULL, 0, false, &err), -1);
        ck_assert_int_eq(ag_spdy_reply(c->s, id, NULL, 0, false, &err), -1); /* the client's own */
        const struct ag_spdy_header dup[] = {{"a", "1"}, {"A", "2"}};
        ck_assert_int_eq(ag_spdy_reply(s->s, id, dup, 2, false, &err), -1);
        ck_assert_msg(strstr(err.msg, "twice") != NULL, "%s", err.msg);
        const struct ag_spdy_header empty[] = {{"", "1"}};
        ck_assert_int_eq(ag_spdy_reply(s->s, id, empty, 1, false, &err), -1);
        ck_assert_int_eq(ag_spdy_reply(s->s, id, NULL, 0, false, &err), 0);
        ck_assert_int_eq(ag_spdy_reply(s->s, id, NULL, 0, false, &err), -1);
        ck_assert_int_eq(ag_spdy_rst(s->s, 0, AG_SPDY_CANCEL, &err), -1);
        ck_assert_int_eq(ag_spdy_rst(s->s, id, 0, &err), -1);
        /* a server's own streams are even */
        uint32_t sid;
        ck_assert_int_eq(ag_spdy_syn_stream(s->s, NULL, 0, false, &sid, &err), 0);
        ck_assert_uint_eq(sid, 2);
        pump(s, c, 0);
        ck_assert_int_eq(last(c)->kind, 's');
        ck_assert_uint_eq(last(c)->id, 2);
        peer_free(c);
        peer_free(s);
}
END_TEST

START_TEST(headers_frame_and_flags)
{
        struct peer *s = peer_new(true);
        struct cb_error err = {0};
        static struct frame f;
        z_stream z;
        uint8_t plain[128];
        zinit(&z);
        size_t pl = plain_block(plain, 1, (const char *[]){"streamtype", "stdin"}, 1);
        /* SYN_STREAM 1, then HEADERS on it without and with FIN */
        hdr_frame(&f, &z, 1, 0, 1, plain, pl);
        ck_assert_int_eq(feed(s, f.b, f.len, &err), 0);
        hdr_frame(&f, &z, 8, 0, 1, plain, pl);
        ck_assert_int_eq(feed(s, f.b, f.len, &err), 0);
        ck_assert_int_eq(last(s)->kind, 's');
        hdr_frame(&f, &z, 8, 0x01, 1, plain, pl);
        ck_assert_int_eq(feed(s, f.b, f.len, &err), 0);
        ck_assert_int_eq(last(s)->kind, 'd');
        ck_assert(last(s)->fin);
        ck_assert_uint_eq(ag_spdy_output_len(s->s), 0);
        /* HEADERS on a stream that was never opened: that stream is reset */
        hdr_frame(&f, &z, 8, 0, 7, plain, pl);
        ck_assert_int_eq(feed(s, f.b, f.len, &err), 0);
        size_t len;
        const uint8_t *out = ag_spdy_output(s->s, &len);
        ck_assert_uint_eq(len, 16);
        ck_assert_uint_eq(out[11], 7);
        ck_assert_uint_eq(out[15], AG_SPDY_INVALID_STREAM);
        ag_spdy_consumed(s->s, len);
        /* a SYN_REPLY to a server for its peer's stream is not the peer's to send */
        hdr_frame(&f, &z, 2, 0, 1, plain, pl);
        ck_assert_int_eq(feed(s, f.b, f.len, &err), 0);
        out = ag_spdy_output(s->s, &len);
        ck_assert_uint_eq(len, 16);
        ck_assert_uint_eq(out[15], AG_SPDY_INVALID_STREAM);
        ag_spdy_consumed(s->s, len);
        /* a unidirectional stream: the server may not send on it */
        hdr_frame(&f, &z, 1, 0x02, 3, plain, pl);
        ck_assert_int_eq(feed(s, f.b, f.len, &err), 0);
        ck_assert_int_eq(last(s)->kind, 's');
        ck_assert_uint_eq(last(s)->id, 3);
        ck_assert_int_eq(ag_spdy_reply(s->s, 3, NULL, 0, false, &err), 0);
        ck_assert_int_eq(ag_spdy_data(s->s, 3, "x", 1, false, &err), -1);
        /* the context is intact after all that: the same block decodes again */
        hdr_frame(&f, &z, 1, 0, 5, plain, pl);
        ck_assert_int_eq(feed(s, f.b, f.len, &err), 0);
        ck_assert_str_eq(last(s)->headers, "streamtype=stdin;");
        deflateEnd(&z);
        peer_free(s);
}
END_TEST

START_TEST(no_resets_after_goaway_sent)
{
        struct peer *s = peer_new(true);
        struct cb_error err = {0};
        ck_assert_int_eq(ag_spdy_goaway(s->s, 0, &err), 0);
        ag_spdy_consumed(s->s, ag_spdy_output_len(s->s));
        /* late DATA for streams it never accepted: dropped quietly */
        const uint8_t data[] = {0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x02, 'h', 'i'};
        ck_assert_int_eq(feed(s, data, sizeof(data), &err), 0);
        ck_assert_uint_eq(ag_spdy_output_len(s->s), 0);
        ck_assert_int_eq(s->data_calls, 0);
        peer_free(s);
}
END_TEST

static Suite *suite(void)
{
        Suite *s = suite_create("spdy");
        TCase *tc = tcase_create("codec");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, dictionary_is_spdy3s);
        tcase_add_test(tc, syn_stream_reaches_server_lower_cased);
        tcase_add_loop_test(tc, reply_and_data_both_ways, 0, 2);
        tcase_add_test(tc, fin_half_closes);
        tcase_add_test(tc, rst_closes_both_halves);
        tcase_add_test(tc, goaway);
        tcase_add_test(tc, refused_after_goaway_sent);
        tcase_add_test(tc, ping_literal_answered);
        tcase_add_test(tc, literal_data_and_rst);
        tcase_add_test(tc, window_update_after_data);
        tcase_add_test(tc, data_on_unknown_stream_resets_it);
        tcase_add_test(tc, data_after_fin_resets_stream);
        tcase_add_test(tc, callback_may_reset_mid_frame);
        tcase_add_test(tc, compression_context_persists);
        tcase_add_test(tc, hand_compressed_syn_stream);
        tcase_add_test(tc, malformed_input_fails_cleanly);
        tcase_add_test(tc, header_block_bomb_is_bounded);
        tcase_add_test(tc, stream_id_rules);
        tcase_add_test(tc, too_many_streams_refused);
        tcase_add_test(tc, api_misuse_is_refused);
        tcase_add_test(tc, headers_frame_and_flags);
        tcase_add_test(tc, no_resets_after_goaway_sent);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return th_run(suite()) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
