/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SPDY/3.1 session codec (agent/nodeapi/spdy.h). Frame layouts and the header
 * compression dictionary: draft-mbelshe-httpbis-spdy-00 ("SPDY Protocol",
 * Belshe and Peon, Feb 2012), section 2.2 (framing), 2.6 (control frames),
 * 2.6.10.1 (compression); SPDY/3.1 adds the session-level WINDOW_UPDATE
 * (stream id 0).
 *
 * What the peer does, from moby/spdystream (the Go library under
 * client-go's httpstream/spdy, so under the apiserver and kubectl):
 *
 *  - Flow control: spdystream neither keeps a send window nor sends
 *    WINDOW_UPDATE; received WINDOW_UPDATE and SETTINGS frames fall into
 *    its "unhandled frame type" branch and are dropped. A sender that
 *    waited for spdystream to grant window would stall after the first
 *    64 KiB, so this session never blocks its own DATA on the peer's
 *    window. As a receiver it still does what SPDY/3 asks: every DATA
 *    frame is answered with WINDOW_UPDATE for the stream and (3.1) for
 *    the session, harmless to spdystream and right for a peer that counts.
 *  - Header names go lower-cased on the wire (spdystream lower-cases on
 *    write and fails the whole connection on a name that is not lower case
 *    or appears twice); values may hold several NUL-separated values.
 *  - Header blocks: one zlib stream per direction for the connection,
 *    seeded with the dictionary, each block ending in a sync flush
 *    (Z_SYNC_FLUSH; Go's zlib Writer.Flush is the same) and read by the
 *    peer with a reader limited to the frame's length that must consume
 *    all of it. spdystream compresses at zlib.BestCompression; any level
 *    inflates the same.
 *  - SYN_REPLY before DATA: spdystream drops DATA on a stream it has not
 *    seen a SYN_REPLY for ("Data frame not replied"), so ag_spdy_data refuses
 *    to send on a peer's stream before ag_spdy_reply. The peer itself may send
 *    DATA before our SYN_REPLY (its stdin), which is delivered.
 *  - FIN: each side half-closes with FLAG_FIN on a DATA frame (an empty one
 *    from Stream.Close) or on SYN_STREAM/SYN_REPLY; RST_STREAM (CANCEL from
 *    Stream.Reset) closes both halves at once. It checks only that stream
 *    ids increase, not their parity; this session checks both.
 *  - PING: each side uses ids of its own parity (a client odd, a server
 *    even) and echoes a PING whose parity differs from its own, so the
 *    session echoes the peer's and ignores replies to its own.
 *  - GOAWAY: on receipt spdystream stops accepting streams and closes the
 *    connection once its open streams are done.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "lib/cleanup.h"

#include "agent/nodeapi/spdy.h"

/* The header compression dictionary, SPDY/3 draft section 2.6.10.1: 65
 * length-prefixed header names and methods, then common values. Protocol
 * data: the peer's zlib stream names it by its Adler-32 (0xe3c6a7c2), so a
 * single wrong byte makes every header block fail to inflate. */
/* clang-format off */
static const char spdy_dictionary[] =
        "\0\0\0\x07" "options"
        "\0\0\0\x04" "head"
        "\0\0\0\x04" "post"
        "\0\0\0\x03" "put"
        "\0\0\0\x06" "delete"
        "\0\0\0\x05" "trace"
        "\0\0\0\x06" "accept"
        "\0\0\0\x0e" "accept-charset"
        "\0\0\0\x0f" "accept-encoding"
        "\0\0\0\x0f" "accept-language"
        "\0\0\0\x0d" "accept-ranges"
        "\0\0\0\x03" "age"
        "\0\0\0\x05" "allow"
        "\0\0\0\x0d" "authorization"
        "\0\0\0\x0d" "cache-control"
        "\0\0\0\x0a" "connection"
        "\0\0\0\x0c" "content-base"
        "\0\0\0\x10" "content-encoding"
        "\0\0\0\x10" "content-language"
        "\0\0\0\x0e" "content-length"
        "\0\0\0\x10" "content-location"
        "\0\0\0\x0b" "content-md5"
        "\0\0\0\x0d" "content-range"
        "\0\0\0\x0c" "content-type"
        "\0\0\0\x04" "date"
        "\0\0\0\x04" "etag"
        "\0\0\0\x06" "expect"
        "\0\0\0\x07" "expires"
        "\0\0\0\x04" "from"
        "\0\0\0\x04" "host"
        "\0\0\0\x08" "if-match"
        "\0\0\0\x11" "if-modified-since"
        "\0\0\0\x0d" "if-none-match"
        "\0\0\0\x08" "if-range"
        "\0\0\0\x13" "if-unmodified-since"
        "\0\0\0\x0d" "last-modified"
        "\0\0\0\x08" "location"
        "\0\0\0\x0c" "max-forwards"
        "\0\0\0\x06" "pragma"
        "\0\0\0\x12" "proxy-authenticate"
        "\0\0\0\x13" "proxy-authorization"
        "\0\0\0\x05" "range"
        "\0\0\0\x07" "referer"
        "\0\0\0\x0b" "retry-after"
        "\0\0\0\x06" "server"
        "\0\0\0\x02" "te"
        "\0\0\0\x07" "trailer"
        "\0\0\0\x11" "transfer-encoding"
        "\0\0\0\x07" "upgrade"
        "\0\0\0\x0a" "user-agent"
        "\0\0\0\x04" "vary"
        "\0\0\0\x03" "via"
        "\0\0\0\x07" "warning"
        "\0\0\0\x10" "www-authenticate"
        "\0\0\0\x06" "method"
        "\0\0\0\x03" "get"
        "\0\0\0\x06" "status"
        "\0\0\0\x06" "200 OK"
        "\0\0\0\x07" "version"
        "\0\0\0\x08" "HTTP/1.1"
        "\0\0\0\x03" "url"
        "\0\0\0\x06" "public"
        "\0\0\0\x0a" "set-cookie"
        "\0\0\0\x0a" "keep-alive"
        "\0\0\0\x06" "origin"
        "100101201202205206300302303304305306307402405406407408409410"
        "411412413414415416417502504505203 Non-Authoritative Informat"
        "ion204 No Content301 Moved Permanently400 Bad Request401 Una"
        "uthorized403 Forbidden404 Not Found500 Internal Server Error"
        "501 Not Implemented503 Service UnavailableJan Feb Mar Apr Ma"
        "y Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, "
        "Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,imag"
        "e/gif,application/xml,application/xhtml+xml,text/plain,text/"
        "javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf"
        "-8charset=iso-8859-1,utf-,*,enq=0.";
/* clang-format on */
_Static_assert(sizeof(spdy_dictionary) - 1 == 1423, "the SPDY/3 dictionary is 1423 bytes");

#define SPDY_VERSION 3

enum {
        TYPE_SYN_STREAM = 1,
        TYPE_SYN_REPLY = 2,
        TYPE_RST_STREAM = 3,
        TYPE_SETTINGS = 4,
        TYPE_PING = 6,
        TYPE_GOAWAY = 7,
        TYPE_HEADERS = 8,
        TYPE_WINDOW_UPDATE = 9,
};

#define FLAG_FIN            0x01
#define FLAG_UNIDIRECTIONAL 0x02

struct stream {
        uint32_t id;
        bool local_fin;  /* we sent FIN (or the stream is unidirectional) */
        bool remote_fin; /* the peer sent FIN */
        bool replied;    /* SYN_REPLY sent (peer's stream) or received (ours) */
        struct stream *next;
};

struct buf {
        uint8_t *p;
        size_t off, len, cap; /* bytes [off, len) are live */
};

enum parse_state { P_HEAD, P_CONTROL, P_DATA };

struct ag_spdy_session {
        bool server;
        struct ag_spdy_callbacks cb;
        void *data;

        z_stream inflate;
        z_stream deflate;
        bool inflate_ok, deflate_ok;

        struct stream *streams;
        size_t n_streams;
        uint32_t next_id;      /* our next stream id */
        uint32_t last_peer_id; /* the highest stream id the peer opened */
        bool goaway_sent, goaway_received;

        /* the frame being read */
        enum parse_state state;
        uint8_t head[8];
        size_t head_len;
        uint32_t frame_len; /* payload length from the header */
        struct buf ctrl;    /* control frame payload */
        uint32_t data_id;   /* P_DATA: stream, remaining bytes, flags, whether delivered */
        uint32_t data_left;
        uint8_t data_flags;
        bool data_deliver;

        struct buf hblock; /* inflated header block */
        struct buf out;
        bool failed; /* a protocol error: the session is unusable */
};

static uint32_t get32(const uint8_t *p)
{
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(uint8_t *p, uint32_t v)
{
        p[0] = (uint8_t)(v >> 24);
        p[1] = (uint8_t)(v >> 16);
        p[2] = (uint8_t)(v >> 8);
        p[3] = (uint8_t)v;
}

/* Room for n more bytes at the end of b; reclaims consumed bytes first. */
static int buf_reserve(struct buf *b, size_t n, size_t limit, struct cb_error *err)
{
        if (b->off > 0 && b->off == b->len) {
                b->off = b->len = 0;
        } else if (b->off > 0 && b->len + n > b->cap) {
                memmove(b->p, b->p + b->off, b->len - b->off);
                b->len -= b->off;
                b->off = 0;
        }
        if (b->len + n <= b->cap)
                return 0;
        if (n > limit - b->len)
                return cb_error_set(err, 0, "spdy: buffer over its limit of %zu bytes", limit);
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
                cap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
        if (cap > limit)
                cap = limit;
        uint8_t *p = realloc(b->p, cap);
        if (p == NULL)
                return cb_error_set(err, ENOMEM, "spdy: growing a buffer to %zu bytes", cap);
        b->p = p;
        b->cap = cap;
        return 0;
}

static int buf_append(struct buf *b, const void *data, size_t n, struct cb_error *err)
{
        if (buf_reserve(b, n, SIZE_MAX, err) < 0)
                return -1;
        if (n > 0)
                memcpy(b->p + b->len, data, n);
        b->len += n;
        return 0;
}

static void buf_free(struct buf *b)
{
        free(b->p);
        *b = (struct buf){0};
}

/* ---- streams ---- */

static bool peer_id(const struct ag_spdy_session *s, uint32_t id)
{
        /* SPDY/3 2.3.2: the client's streams are odd, the server's even */
        return (id & 1) == (s->server ? 1u : 0u);
}

static struct stream *stream_find(struct ag_spdy_session *s, uint32_t id)
{
        for (struct stream *st = s->streams; st != NULL; st = st->next)
                if (st->id == id)
                        return st;
        return NULL;
}

static void stream_remove(struct ag_spdy_session *s, uint32_t id)
{
        for (struct stream **pp = &s->streams; *pp != NULL; pp = &(*pp)->next) {
                if ((*pp)->id == id) {
                        struct stream *st = *pp;
                        *pp = st->next;
                        free(st);
                        s->n_streams--;
                        return;
                }
        }
}

static struct stream *stream_add(struct ag_spdy_session *s, uint32_t id, struct cb_error *err)
{
        struct stream *st = calloc(1, sizeof(*st));
        if (st == NULL) {
                cb_error_set(err, ENOMEM, "spdy: stream %u", id);
                return NULL;
        }
        st->id = id;
        st->next = s->streams;
        s->streams = st;
        s->n_streams++;
        return st;
}

/* Both halves closed: the stream is done. */
static void stream_maybe_done(struct ag_spdy_session *s, struct stream *st)
{
        if (st->local_fin && st->remote_fin)
                stream_remove(s, st->id);
}

/* ---- frame writers ---- */

static int put_control(struct ag_spdy_session *s, uint16_t type, uint8_t flags, uint32_t len,
                       struct cb_error *err)
{
        uint8_t h[8];
        h[0] = 0x80 | (SPDY_VERSION >> 8);
        h[1] = SPDY_VERSION & 0xff;
        h[2] = (uint8_t)(type >> 8);
        h[3] = (uint8_t)type;
        put32(h + 4, (uint32_t)flags << 24 | len);
        return buf_append(&s->out, h, sizeof(h), err);
}

static int put_u32_pair(struct ag_spdy_session *s, uint16_t type, uint32_t a, uint32_t b,
                        struct cb_error *err)
{
        uint8_t p[8];
        put32(p, a);
        put32(p + 4, b);
        if (put_control(s, type, 0, 8, err) < 0)
                return -1;
        return buf_append(&s->out, p, sizeof(p), err);
}

static int queue_rst(struct ag_spdy_session *s, uint32_t id, uint32_t status, struct cb_error *err)
{
        return put_u32_pair(s, TYPE_RST_STREAM, id & 0x7fffffff, status, err);
}

/* Serialises and compresses a header block into s->hblock (reused as the
 * scratch for the plain block, then the compressed one goes to out). */
static int encode_headers(struct ag_spdy_session *s, const struct ag_spdy_header *h, size_t n,
                          struct buf *z, struct cb_error *err)
{
        struct buf plain = {0};
        uint8_t w[4];
        int rc = -1;

        if (n > AG_SPDY_MAX_HEADERS) {
                cb_error_set(err, 0, "spdy: %zu headers, at most %u", n, AG_SPDY_MAX_HEADERS);
                goto out;
        }
        put32(w, (uint32_t)n);
        if (buf_append(&plain, w, 4, err) < 0)
                goto out;
        for (size_t i = 0; i < n; i++) {
                size_t nl = h[i].name ? strlen(h[i].name) : 0;
                size_t vl = h[i].value ? strlen(h[i].value) : 0;
                if (nl == 0) {
                        cb_error_set(err, 0, "spdy: header %zu: empty name", i);
                        goto out;
                }
                if (nl > AG_SPDY_MAX_HEADER_BLOCK || vl > AG_SPDY_MAX_HEADER_BLOCK) {
                        cb_error_set(err, 0, "spdy: header %s: too long", h[i].name);
                        goto out;
                }
                for (size_t j = 0; j < i; j++) {
                        if (strcasecmp(h[i].name, h[j].name) == 0) {
                                /* spdystream fails the connection on a repeated name */
                                cb_error_set(err, 0, "spdy: header %s: given twice", h[i].name);
                                goto out;
                        }
                }
                put32(w, (uint32_t)nl);
                if (buf_append(&plain, w, 4, err) < 0 || buf_reserve(&plain, nl, SIZE_MAX, err) < 0)
                        goto out;
                for (size_t k = 0; k < nl; k++) {
                        char c = h[i].name[k];
                        plain.p[plain.len++] = (uint8_t)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
                }
                put32(w, (uint32_t)vl);
                if (buf_append(&plain, w, 4, err) < 0 ||
                    buf_append(&plain, h[i].value, vl, err) < 0)
                        goto out;
        }
        if (plain.len > AG_SPDY_MAX_HEADER_BLOCK) {
                cb_error_set(err, 0, "spdy: header block of %zu bytes, at most %u", plain.len,
                             AG_SPDY_MAX_HEADER_BLOCK);
                goto out;
        }

        /* deflate with a sync flush: the peer must be able to inflate the
         * whole block from this frame alone, while the compression context
         * carries over to the next block */
        s->deflate.next_in = plain.p;
        s->deflate.avail_in = (uInt)plain.len;
        do {
                if (buf_reserve(z, 1024, SIZE_MAX, err) < 0)
                        goto out;
                s->deflate.next_out = z->p + z->len;
                s->deflate.avail_out = (uInt)(z->cap - z->len);
                int zr = deflate(&s->deflate, Z_SYNC_FLUSH);
                if (zr != Z_OK && zr != Z_BUF_ERROR) {
                        cb_error_set(err, 0, "spdy: compressing a header block: zlib error %d", zr);
                        goto out;
                }
                z->len = z->cap - s->deflate.avail_out;
        } while (s->deflate.avail_out == 0 || s->deflate.avail_in > 0);
        rc = 0;
out:
        buf_free(&plain);
        return rc;
}

/* SYN_STREAM (prefix: id, associated id, priority, slot) or SYN_REPLY (id). */
static int put_headers_frame(struct ag_spdy_session *s, uint16_t type, uint8_t flags, uint32_t id,
                             const struct ag_spdy_header *h, size_t n, struct cb_error *err)
{
        struct buf z = {0};
        uint8_t pre[10] = {0};
        size_t pre_len = type == TYPE_SYN_STREAM ? 10 : 4;
        int rc = -1;

        put32(pre, id);
        /* SYN_STREAM: associated-to 0, priority 0 (highest), slot 0 */
        if (encode_headers(s, h, n, &z, err) < 0)
                goto out;
        if (z.len + pre_len > AG_SPDY_MAX_CONTROL_FRAME) {
                /* our own peer would refuse a frame we refuse to read */
                cb_error_set(err, 0, "spdy: stream %u: header frame of %zu bytes, at most %u", id,
                             z.len + pre_len, AG_SPDY_MAX_CONTROL_FRAME);
                goto out;
        }
        if (put_control(s, type, flags, (uint32_t)(pre_len + z.len), err) < 0 ||
            buf_append(&s->out, pre, pre_len, err) < 0 || buf_append(&s->out, z.p, z.len, err) < 0)
                goto out;
        rc = 0;
out:
        buf_free(&z);
        return rc;
}

/* ---- header block decoding ---- */

/* Inflates one block (the whole of it must be consumed) into s->hblock. */
static int inflate_block(struct ag_spdy_session *s, const uint8_t *in, size_t len,
                         struct cb_error *err)
{
        s->hblock.off = s->hblock.len = 0;
        s->inflate.next_in = (Bytef *)in;
        s->inflate.avail_in = (uInt)len;
        for (;;) {
                if (s->hblock.len == AG_SPDY_MAX_HEADER_BLOCK)
                        return cb_error_set(err, 0,
                                            "spdy: header block inflates to more than %u bytes",
                                            AG_SPDY_MAX_HEADER_BLOCK);
                size_t room = s->hblock.cap - s->hblock.len;
                if (room == 0) {
                        size_t want = s->hblock.cap ? s->hblock.cap : 1024;
                        if (want > AG_SPDY_MAX_HEADER_BLOCK - s->hblock.len)
                                want = AG_SPDY_MAX_HEADER_BLOCK - s->hblock.len;
                        if (buf_reserve(&s->hblock, want, AG_SPDY_MAX_HEADER_BLOCK, err) < 0)
                                return -1;
                        room = s->hblock.cap - s->hblock.len;
                }
                s->inflate.next_out = s->hblock.p + s->hblock.len;
                s->inflate.avail_out = (uInt)room;
                int zr = inflate(&s->inflate, Z_SYNC_FLUSH);
                if (zr == Z_NEED_DICT) {
                        zr = inflateSetDictionary(&s->inflate, (const Bytef *)spdy_dictionary,
                                                  sizeof(spdy_dictionary) - 1);
                        if (zr != Z_OK)
                                return cb_error_set(err, 0,
                                                    "spdy: header block asks for a dictionary that "
                                                    "is not SPDY/3's");
                        continue;
                }
                s->hblock.len += room - s->inflate.avail_out;
                if (zr == Z_STREAM_END) {
                        if (s->inflate.avail_in > 0)
                                return cb_error_set(
                                    err, 0,
                                    "spdy: %u bytes after the end of the compressed "
                                    "header stream",
                                    s->inflate.avail_in);
                        /* the peer ended its zlib stream: this block is whole, the next can't be */
                        return 0;
                }
                if (zr == Z_BUF_ERROR) {
                        if (s->inflate.avail_in == 0)
                                return 0; /* all input used, nothing pending */
                        if (s->inflate.avail_out != 0)
                                return cb_error_set(err, 0, "spdy: header block does not inflate");
                        continue;
                }
                if (zr != Z_OK)
                        return cb_error_set(err, 0, "spdy: header block does not inflate: %s",
                                            s->inflate.msg ? s->inflate.msg : "zlib error");
                if (s->inflate.avail_in == 0 && s->inflate.avail_out != 0)
                        return 0;
        }
}

/* Parses s->hblock (inflated) into NUL-terminated pairs in *ret_text and
 * an array of n headers. Names must be non-empty, lower case and unique. */
static int parse_block(struct ag_spdy_session *s, uint32_t id, struct ag_spdy_header **ret_h,
                       size_t *ret_n, char **ret_text, struct cb_error *err)
{
        const uint8_t *p = s->hblock.p + s->hblock.off;
        size_t len = s->hblock.len - s->hblock.off, pos = 4;
        struct ag_spdy_header *h = NULL;
        char *text = NULL;

        if (len < 4)
                return cb_error_set(
                    err, 0, "spdy: stream %u: header block of %zu bytes has no count", id, len);
        uint32_t n = get32(p);
        if (n > AG_SPDY_MAX_HEADERS)
                return cb_error_set(err, 0, "spdy: stream %u: %u headers, at most %u", id, n,
                                    AG_SPDY_MAX_HEADERS);
        /* every pair takes at least 8 bytes: a count that overruns is caught here
         * before anything is allocated for it */
        if ((size_t)n * 8 > len - 4)
                return cb_error_set(
                    err, 0, "spdy: stream %u: header count %u overruns a block of %zu bytes", id, n,
                    len);
        h = calloc(n ? n : 1, sizeof(*h));
        text = malloc(len + 2 * (size_t)n + 1); /* each name and value gains a NUL */
        if (h == NULL || text == NULL) {
                free(h);
                free(text);
                return cb_error_set(err, ENOMEM, "spdy: stream %u: header block", id);
        }
        size_t t = 0;
        for (uint32_t i = 0; i < n; i++) {
                for (int part = 0; part < 2; part++) {
                        if (len - pos < 4)
                                goto truncated;
                        uint32_t l = get32(p + pos);
                        pos += 4;
                        if (l > len - pos)
                                goto truncated;
                        if (part == 0 && l == 0) {
                                cb_error_set(err, 0, "spdy: stream %u: header %u has an empty name",
                                             id, i);
                                goto fail;
                        }
                        const uint8_t *str = p + pos;
                        char *dst = text + t;
                        if (part == 0) {
                                for (uint32_t k = 0; k < l; k++) {
                                        if (str[k] >= 'A' && str[k] <= 'Z') {
                                                cb_error_set(
                                                    err, 0,
                                                    "spdy: stream %u: header name %.*s is not "
                                                    "lower case",
                                                    id, (int)(l > 64 ? 64 : l), (const char *)str);
                                                goto fail;
                                        }
                                        if (str[k] == '\0') {
                                                cb_error_set(
                                                    err, 0,
                                                    "spdy: stream %u: header %u: NUL in its name",
                                                    id, i);
                                                goto fail;
                                        }
                                }
                        }
                        memcpy(dst, str, l);
                        dst[l] = '\0';
                        t += (size_t)l + 1;
                        pos += l;
                        if (part == 0)
                                h[i].name = dst;
                        else
                                h[i].value = dst; /* NUL-separated values: the first */
                }
                for (uint32_t j = 0; j < i; j++) {
                        if (strcmp(h[j].name, h[i].name) == 0) {
                                cb_error_set(err, 0, "spdy: stream %u: header %s appears twice", id,
                                             h[i].name);
                                goto fail;
                        }
                }
        }
        if (pos != len) {
                cb_error_set(err, 0, "spdy: stream %u: %zu bytes after the last of %u headers", id,
                             len - pos, n);
                goto fail;
        }
        *ret_h = h;
        *ret_n = n;
        *ret_text = text;
        return 0;
truncated:
        cb_error_set(err, 0, "spdy: stream %u: header block truncated (%zu bytes, %u headers)", id,
                     len, n);
fail:
        free(h);
        free(text);
        return -1;
}

/* ---- control frames ---- */

static int callback_failed(struct cb_error *err, const char *what, uint32_t id)
{
        return cb_error_set(err, 0, "spdy: stream %u: the %s handler failed", id, what);
}

/* The session resets a stream the peer broke the protocol on. */
static int reset_stream(struct ag_spdy_session *s, uint32_t id, uint32_t status,
                        struct cb_error *err)
{
        bool known = stream_find(s, id) != NULL;
        if (known)
                stream_remove(s, id);
        if (queue_rst(s, id, status, err) < 0)
                return -1;
        if (known && s->cb.on_reset != NULL)
                s->cb.on_reset(s->data, id, status);
        return 0;
}

static int on_syn_stream(struct ag_spdy_session *s, uint8_t flags, const uint8_t *p, uint32_t len,
                         struct cb_error *err)
{
        if (len < 10)
                return cb_error_set(err, 0, "spdy: SYN_STREAM of %u bytes, at least 10", len);
        uint32_t id = get32(p) & 0x7fffffff;
        _cleanup_free_ struct ag_spdy_header *h = NULL;
        _cleanup_free_ char *text = NULL;
        size_t n = 0;

        /* inflate first, whatever becomes of the stream: the compression
         * context is shared by every block of the session */
        if (inflate_block(s, p + 10, len - 10, err) < 0 ||
            parse_block(s, id, &h, &n, &text, err) < 0)
                return -1;
        if (id == 0)
                return cb_error_set(err, 0, "spdy: SYN_STREAM for stream 0");
        if (!peer_id(s, id))
                return cb_error_set(err, 0, "spdy: SYN_STREAM %u: the peer must open %s ids", id,
                                    s->server ? "odd" : "even");
        if (id <= s->last_peer_id)
                return cb_error_set(err, 0,
                                    "spdy: SYN_STREAM %u: ids must increase (the last was %u)", id,
                                    s->last_peer_id);
        s->last_peer_id = id;
        if (s->goaway_sent || s->n_streams >= AG_SPDY_MAX_STREAMS)
                return queue_rst(s, id, AG_SPDY_REFUSED_STREAM, err);

        struct stream *st = stream_add(s, id, err);
        if (st == NULL)
                return -1;
        st->remote_fin = (flags & FLAG_FIN) != 0;
        st->local_fin = (flags & FLAG_UNIDIRECTIONAL) != 0;
        bool fin = st->remote_fin;
        if (s->cb.on_stream != NULL && s->cb.on_stream(s->data, id, h, n, fin) < 0)
                return callback_failed(err, "stream", id);
        st = stream_find(s, id);
        if (st != NULL)
                stream_maybe_done(s, st);
        return 0;
}

static int on_syn_reply(struct ag_spdy_session *s, uint8_t flags, const uint8_t *p, uint32_t len,
                        struct cb_error *err)
{
        if (len < 4)
                return cb_error_set(err, 0, "spdy: SYN_REPLY of %u bytes, at least 4", len);
        uint32_t id = get32(p) & 0x7fffffff;
        _cleanup_free_ struct ag_spdy_header *h = NULL;
        _cleanup_free_ char *text = NULL;
        size_t n = 0;

        if (inflate_block(s, p + 4, len - 4, err) < 0 || parse_block(s, id, &h, &n, &text, err) < 0)
                return -1;
        if (id == 0)
                return cb_error_set(err, 0, "spdy: SYN_REPLY for stream 0");
        struct stream *st = stream_find(s, id);
        if (st == NULL || peer_id(s, id))
                return reset_stream(s, id, AG_SPDY_INVALID_STREAM, err);
        if (st->replied) /* SPDY/3 2.6.2 */
                return reset_stream(s, id, AG_SPDY_STREAM_IN_USE, err);
        if (st->remote_fin)
                return reset_stream(s, id, AG_SPDY_STREAM_ALREADY_CLOSED, err);
        st->replied = true;
        st->remote_fin = (flags & FLAG_FIN) != 0;
        bool fin = st->remote_fin;
        if (s->cb.on_reply != NULL && s->cb.on_reply(s->data, id, h, n, fin) < 0)
                return callback_failed(err, "reply", id);
        st = stream_find(s, id);
        if (st != NULL)
                stream_maybe_done(s, st);
        return 0;
}

static int on_headers(struct ag_spdy_session *s, uint8_t flags, const uint8_t *p, uint32_t len,
                      struct cb_error *err)
{
        if (len < 4)
                return cb_error_set(err, 0, "spdy: HEADERS of %u bytes, at least 4", len);
        uint32_t id = get32(p) & 0x7fffffff;
        _cleanup_free_ struct ag_spdy_header *h = NULL;
        _cleanup_free_ char *text = NULL;
        size_t n = 0;

        if (inflate_block(s, p + 4, len - 4, err) < 0 || parse_block(s, id, &h, &n, &text, err) < 0)
                return -1;
        if (id == 0)
                return cb_error_set(err, 0, "spdy: HEADERS for stream 0");
        struct stream *st = stream_find(s, id);
        if (st == NULL)
                return reset_stream(s, id, AG_SPDY_INVALID_STREAM, err);
        if (st->remote_fin)
                return reset_stream(s, id, AG_SPDY_STREAM_ALREADY_CLOSED, err);
        /* trailing headers carry nothing exec or port-forward uses; only FIN counts */
        if (flags & FLAG_FIN) {
                st->remote_fin = true;
                if (s->cb.on_data != NULL && s->cb.on_data(s->data, id, NULL, 0, true) < 0)
                        return callback_failed(err, "data", id);
                st = stream_find(s, id);
                if (st != NULL)
                        stream_maybe_done(s, st);
        }
        return 0;
}

static int on_control(struct ag_spdy_session *s, uint16_t type, uint8_t flags, const uint8_t *p,
                      uint32_t len, struct cb_error *err)
{
        switch (type) {
        case TYPE_SYN_STREAM:
                return on_syn_stream(s, flags, p, len, err);
        case TYPE_SYN_REPLY:
                return on_syn_reply(s, flags, p, len, err);
        case TYPE_HEADERS:
                return on_headers(s, flags, p, len, err);
        case TYPE_RST_STREAM: {
                if (len != 8)
                        return cb_error_set(err, 0, "spdy: RST_STREAM of %u bytes, not 8", len);
                uint32_t id = get32(p) & 0x7fffffff, status = get32(p + 4);
                if (id == 0 || status == 0)
                        return cb_error_set(err, 0, "spdy: RST_STREAM with stream %u, status %u",
                                            id, status);
                /* never answer a RST_STREAM with one (2.4.2); unknown ids are late */
                if (stream_find(s, id) != NULL) {
                        stream_remove(s, id);
                        if (s->cb.on_reset != NULL)
                                s->cb.on_reset(s->data, id, status);
                }
                return 0;
        }
        case TYPE_SETTINGS: {
                if (len < 4 || (len - 4) / 8 != get32(p) || (len - 4) % 8 != 0)
                        return cb_error_set(err, 0, "spdy: SETTINGS of %u bytes for %u entries",
                                            len, len >= 4 ? get32(p) : 0);
                return 0; /* nothing in them changes what this session does */
        }
        case TYPE_PING: {
                if (len != 4)
                        return cb_error_set(err, 0, "spdy: PING of %u bytes, not 4", len);
                uint32_t id = get32(p);
                /* the peer's own pings have its stream parity; echo those only,
                 * the others answer pings of ours */
                if (!peer_id(s, id))
                        return 0;
                if (put_control(s, TYPE_PING, 0, 4, err) < 0)
                        return -1;
                return buf_append(&s->out, p, 4, err);
        }
        case TYPE_GOAWAY: {
                /* SPDY/3: last-good-stream-id and a status code (SPDY/2 had no status) */
                if (len != 8)
                        return cb_error_set(err, 0, "spdy: GOAWAY of %u bytes, not 8", len);
                s->goaway_received = true;
                if (s->cb.on_goaway != NULL)
                        s->cb.on_goaway(s->data, get32(p) & 0x7fffffff, get32(p + 4));
                return 0;
        }
        case TYPE_WINDOW_UPDATE:
                if (len != 8)
                        return cb_error_set(err, 0, "spdy: WINDOW_UPDATE of %u bytes, not 8", len);
                return 0; /* no send window is kept: see the top of this file */
        default:
                return 0; /* SPDY/3 2.2.1: unknown control frames are ignored (CREDENTIAL too) */
        }
}

/* ---- DATA ---- */

static int data_begin(struct ag_spdy_session *s, struct cb_error *err)
{
        uint32_t id = s->data_id;
        if (id == 0)
                return cb_error_set(err, 0, "spdy: DATA for stream 0");
        struct stream *st = stream_find(s, id);
        s->data_deliver = false;
        if (st == NULL) {
                /* 2.2.2: DATA for a stream that is not open is a stream error,
                 * unless we already said GOAWAY */
                if (s->goaway_sent)
                        return 0;
                return reset_stream(s, id, AG_SPDY_INVALID_STREAM, err);
        }
        if (st->remote_fin)
                return reset_stream(s, id, AG_SPDY_STREAM_ALREADY_CLOSED, err);
        if (!peer_id(s, id) && !st->replied)
                return reset_stream(s, id, AG_SPDY_PROTOCOL_ERROR, err); /* DATA before SYN_REPLY */
        s->data_deliver = true;
        return 0;
}

/* The frame is complete: FIN, and give the peer its window back. */
static int data_end(struct ag_spdy_session *s, struct cb_error *err)
{
        uint32_t id = s->data_id;
        bool fin = (s->data_flags & FLAG_FIN) != 0;
        if (!s->data_deliver)
                return 0;
        struct stream *st = stream_find(s, id);
        if (st == NULL)
                return 0; /* reset by a callback meanwhile */
        if (fin) {
                st->remote_fin = true;
                if (s->frame_len == 0 && s->cb.on_data != NULL &&
                    s->cb.on_data(s->data, id, NULL, 0, true) < 0)
                        return callback_failed(err, "data", id);
                st = stream_find(s, id);
                if (st != NULL)
                        stream_maybe_done(s, st);
        } else if (s->frame_len > 0) {
                if (put_u32_pair(s, TYPE_WINDOW_UPDATE, id, s->frame_len, err) < 0 ||
                    put_u32_pair(s, TYPE_WINDOW_UPDATE, 0, s->frame_len, err) < 0)
                        return -1;
        }
        return 0;
}

/* ---- feed ---- */

static int frame_head(struct ag_spdy_session *s, struct cb_error *err)
{
        const uint8_t *h = s->head;
        uint32_t len = get32(h + 4) & 0xffffff;
        s->frame_len = len;
        if (h[0] & 0x80) {
                uint16_t version = (uint16_t)((h[0] & 0x7f) << 8 | h[1]);
                uint16_t type = (uint16_t)(h[2] << 8 | h[3]);
                if (version != SPDY_VERSION)
                        return cb_error_set(err, 0, "spdy: control frame of version %u, not %u",
                                            version, SPDY_VERSION);
                if (len > AG_SPDY_MAX_CONTROL_FRAME)
                        return cb_error_set(err, 0,
                                            "spdy: control frame (type %u) of %u bytes, at most %u",
                                            type, len, AG_SPDY_MAX_CONTROL_FRAME);
                s->ctrl.off = s->ctrl.len = 0;
                if (len == 0)
                        return on_control(s, type, h[4], NULL, 0, err);
                s->state = P_CONTROL;
                return 0;
        }
        s->data_id = get32(h) & 0x7fffffff;
        s->data_flags = h[4];
        s->data_left = len;
        if (data_begin(s, err) < 0)
                return -1;
        if (len == 0)
                return data_end(s, err);
        s->state = P_DATA;
        return 0;
}

static int feed(struct ag_spdy_session *s, const uint8_t *buf, size_t len, struct cb_error *err)
{
        while (len > 0) {
                switch (s->state) {
                case P_HEAD: {
                        size_t take = sizeof(s->head) - s->head_len;
                        if (take > len)
                                take = len;
                        memcpy(s->head + s->head_len, buf, take);
                        s->head_len += take;
                        buf += take;
                        len -= take;
                        if (s->head_len < sizeof(s->head))
                                break;
                        s->head_len = 0;
                        if (frame_head(s, err) < 0)
                                return -1;
                        break;
                }
                case P_CONTROL: {
                        size_t take = s->frame_len - s->ctrl.len;
                        if (take > len)
                                take = len;
                        if (buf_reserve(&s->ctrl, take, AG_SPDY_MAX_CONTROL_FRAME, err) < 0)
                                return -1;
                        memcpy(s->ctrl.p + s->ctrl.len, buf, take);
                        s->ctrl.len += take;
                        buf += take;
                        len -= take;
                        if (s->ctrl.len < s->frame_len)
                                break;
                        s->state = P_HEAD;
                        const uint8_t *h = s->head;
                        if (on_control(s, (uint16_t)(h[2] << 8 | h[3]), h[4], s->ctrl.p,
                                       s->frame_len, err) < 0)
                                return -1;
                        /* an idle session keeps small buffers, whatever came before */
                        if (s->ctrl.cap > 4096)
                                buf_free(&s->ctrl);
                        if (s->hblock.cap > 16384)
                                buf_free(&s->hblock);
                        break;
                }
                case P_DATA: {
                        size_t take = s->data_left;
                        if (take > len)
                                take = len;
                        s->data_left -= (uint32_t)take;
                        bool last = s->data_left == 0;
                        if (s->data_deliver && stream_find(s, s->data_id) != NULL &&
                            s->cb.on_data != NULL) {
                                bool fin = last && (s->data_flags & FLAG_FIN);
                                if (s->cb.on_data(s->data, s->data_id, buf, take, fin) < 0)
                                        return callback_failed(err, "data", s->data_id);
                        }
                        buf += take;
                        len -= take;
                        if (last) {
                                s->state = P_HEAD;
                                if (data_end(s, err) < 0)
                                        return -1;
                        }
                        break;
                }
                }
        }
        return 0;
}

int ag_spdy_session_feed(struct ag_spdy_session *s, const uint8_t *buf, size_t len,
                         struct cb_error *err)
{
        if (s->failed)
                return cb_error_set(err, 0, "spdy: the session failed already");
        if (feed(s, buf, len, err) < 0) {
                s->failed = true;
                return -1;
        }
        return 0;
}

/* ---- the caller's frames ---- */

int ag_spdy_reply(struct ag_spdy_session *s, uint32_t id, const struct ag_spdy_header *h, size_t n,
                  bool fin, struct cb_error *err)
{
        struct stream *st = stream_find(s, id);
        if (st == NULL || !peer_id(s, id))
                return cb_error_set(err, 0,
                                    "spdy: SYN_REPLY for stream %u, which the peer has not "
                                    "opened or is closed",
                                    id);
        if (st->replied)
                return cb_error_set(err, 0, "spdy: stream %u was replied to already", id);
        if (put_headers_frame(s, TYPE_SYN_REPLY, fin ? FLAG_FIN : 0, id, h, n, err) < 0)
                return -1;
        st->replied = true;
        if (fin) {
                st->local_fin = true;
                stream_maybe_done(s, st);
        }
        return 0;
}

int ag_spdy_syn_stream(struct ag_spdy_session *s, const struct ag_spdy_header *h, size_t n,
                       bool fin, uint32_t *ret_id, struct cb_error *err)
{
        if (s->goaway_received || s->goaway_sent)
                return cb_error_set(err, 0, "spdy: no new streams after GOAWAY");
        if (s->next_id > 0x7fffffff)
                return cb_error_set(err, 0, "spdy: stream ids used up");
        if (s->n_streams >= AG_SPDY_MAX_STREAMS)
                return cb_error_set(err, 0, "spdy: %u streams open already", AG_SPDY_MAX_STREAMS);
        uint32_t id = s->next_id;
        if (put_headers_frame(s, TYPE_SYN_STREAM, fin ? FLAG_FIN : 0, id, h, n, err) < 0)
                return -1;
        s->next_id += 2;
        struct stream *st = stream_add(s, id, err);
        if (st == NULL)
                return -1;
        st->local_fin = fin;
        *ret_id = id;
        return 0;
}

int ag_spdy_data(struct ag_spdy_session *s, uint32_t id, const void *buf, size_t len, bool fin,
                 struct cb_error *err)
{
        struct stream *st = stream_find(s, id);
        if (st == NULL)
                return cb_error_set(err, 0, "spdy: DATA on stream %u, which is not open", id);
        if (st->local_fin)
                return cb_error_set(err, 0, "spdy: DATA on stream %u after our FIN", id);
        if (peer_id(s, id) && !st->replied)
                return cb_error_set(err, 0, "spdy: DATA on stream %u before its SYN_REPLY", id);
        const uint8_t *p = buf;
        do {
                size_t chunk = len > AG_SPDY_DATA_CHUNK ? AG_SPDY_DATA_CHUNK : len;
                bool last = chunk == len;
                uint8_t h[8];
                put32(h, id & 0x7fffffff);
                put32(h + 4, (uint32_t)(last && fin ? FLAG_FIN : 0) << 24 | (uint32_t)chunk);
                if (buf_append(&s->out, h, sizeof(h), err) < 0 ||
                    buf_append(&s->out, p, chunk, err) < 0)
                        return -1;
                if (chunk > 0) /* buf may be NULL for an empty FIN */
                        p += chunk;
                len -= chunk;
        } while (len > 0);
        if (fin) {
                st->local_fin = true;
                stream_maybe_done(s, st);
        }
        return 0;
}

int ag_spdy_rst(struct ag_spdy_session *s, uint32_t id, enum ag_spdy_rst_status status,
                struct cb_error *err)
{
        if (id == 0 || id > 0x7fffffff)
                return cb_error_set(err, 0, "spdy: RST_STREAM for invalid stream id %u", id);
        if (status < AG_SPDY_PROTOCOL_ERROR || status > AG_SPDY_STREAM_ALREADY_CLOSED)
                return cb_error_set(err, 0, "spdy: RST_STREAM status %d is not defined", status);
        if (queue_rst(s, id, status, err) < 0)
                return -1;
        stream_remove(s, id);
        return 0;
}

int ag_spdy_goaway(struct ag_spdy_session *s, uint32_t status, struct cb_error *err)
{
        if (put_u32_pair(s, TYPE_GOAWAY, s->last_peer_id, status, err) < 0)
                return -1;
        s->goaway_sent = true;
        return 0;
}

const uint8_t *ag_spdy_output(const struct ag_spdy_session *s, size_t *len)
{
        *len = s->out.len - s->out.off;
        return *len ? s->out.p + s->out.off : NULL;
}

void ag_spdy_consumed(struct ag_spdy_session *s, size_t n)
{
        size_t live = s->out.len - s->out.off;
        s->out.off += n < live ? n : live;
        if (s->out.off == s->out.len)
                s->out.off = s->out.len = 0;
}

size_t ag_spdy_output_len(const struct ag_spdy_session *s)
{
        return s->out.len - s->out.off;
}

const uint8_t *ag_spdy_header_dictionary(size_t *len)
{
        *len = sizeof(spdy_dictionary) - 1;
        return (const uint8_t *)spdy_dictionary;
}

/* ---- life cycle ---- */

int ag_spdy_session_new(bool server, const struct ag_spdy_callbacks *cb, void *data,
                        struct ag_spdy_session **ret, struct cb_error *err)
{
        struct ag_spdy_session *s = calloc(1, sizeof(*s));
        if (s == NULL)
                return cb_error_set(err, ENOMEM, "spdy: session");
        s->server = server;
        if (cb != NULL)
                s->cb = *cb;
        s->data = data;
        s->next_id = server ? 2 : 1;
        if (inflateInit(&s->inflate) != Z_OK) {
                ag_spdy_session_free(s);
                return cb_error_set(err, ENOMEM, "spdy: zlib inflate");
        }
        s->inflate_ok = true;
        /* A 2 KiB window and small hash tables (about 16 KiB a session
         * instead of 256 KiB): header blocks are a few hundred bytes, and
         * any inflater accepts a stream made with a smaller window. */
        if (deflateInit2(&s->deflate, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 11, 4,
                         Z_DEFAULT_STRATEGY) != Z_OK) {
                ag_spdy_session_free(s);
                return cb_error_set(err, ENOMEM, "spdy: zlib deflate");
        }
        s->deflate_ok = true;
        if (deflateSetDictionary(&s->deflate, (const Bytef *)spdy_dictionary,
                                 sizeof(spdy_dictionary) - 1) != Z_OK) {
                ag_spdy_session_free(s);
                return cb_error_set(err, 0, "spdy: zlib deflateSetDictionary");
        }
        *ret = s;
        return 0;
}

void ag_spdy_session_free(struct ag_spdy_session *s)
{
        if (s == NULL)
                return;
        while (s->streams != NULL)
                stream_remove(s, s->streams->id);
        if (s->inflate_ok)
                inflateEnd(&s->inflate);
        if (s->deflate_ok)
                deflateEnd(&s->deflate);
        buf_free(&s->ctrl);
        buf_free(&s->hblock);
        buf_free(&s->out);
        free(s);
}
