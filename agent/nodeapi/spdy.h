/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * SPDY/3.1 framing, the protocol the Kubernetes apiserver (up to 1.35)
 * and kubectl speak to a kubelet for exec, attach and port-forward after
 * "Upgrade: SPDY/3.1" (client-go's httpstream/spdy over moby/spdystream).
 *
 * I/O-free, like wslay: the caller feeds the bytes it read from the
 * connection (ag_spdy_session_feed), gets events through callbacks, queues
 * frames (ag_spdy_reply, ag_spdy_data, ...) and writes out what ag_spdy_output
 * returns. Header blocks are compressed with zlib and the SPDY/3
 * dictionary, one compression context per direction for the whole
 * session, as the protocol requires.
 *
 * Flow control: the session answers received DATA with WINDOW_UPDATE as
 * the receiver must; as a sender it does not wait for the peer's window
 * (moby/spdystream, the only peer in practice, keeps no send window and
 * sends no WINDOW_UPDATE of its own; see agent/nodeapi/spdy.c). PINGs are
 * answered by the session itself; SETTINGS are read and ignored.
 *
 * Back-pressure is the caller's: the session queues every frame it is
 * asked for or must answer with (PING, RST_STREAM, WINDOW_UPDATE), so stop
 * reading the connection while ag_spdy_output_len() is above your bound.
 *
 * Errors: a malformed frame, a header block that does not inflate, a
 * control frame over AG_SPDY_MAX_CONTROL_FRAME, a stream id reused or of the
 * wrong parity: ag_spdy_session_feed returns -1 and says why; the caller
 * sends GOAWAY (ag_spdy_goaway) and closes the connection. A frame for a
 * stream that is not open only resets that stream (RST_STREAM queued),
 * as SPDY/3 2.4.2 asks.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

/* the 24-bit length field's bound; DATA is never buffered */
#define AG_SPDY_MAX_FRAME (16u << 20)
/* Limits on what the peer can make the session hold in memory: */
#define AG_SPDY_MAX_CONTROL_FRAME (64u << 10)  /* a control frame is buffered whole */
#define AG_SPDY_MAX_HEADER_BLOCK  (256u << 10) /* a header block, inflated */
#define AG_SPDY_MAX_HEADERS       256u         /* name/value pairs in one block */
#define AG_SPDY_MAX_STREAMS       1024u        /* open streams; more are refused */
#define AG_SPDY_DATA_CHUNK        (64u << 10)  /* ag_spdy_data splits into frames this big */

/* RST_STREAM status codes (SPDY/3 2.6.3) */
enum ag_spdy_rst_status {
        AG_SPDY_PROTOCOL_ERROR = 1,
        AG_SPDY_INVALID_STREAM = 2,
        AG_SPDY_REFUSED_STREAM = 3,
        AG_SPDY_UNSUPPORTED_VERSION = 4,
        AG_SPDY_CANCEL = 5,
        AG_SPDY_INTERNAL_ERROR = 6,
        AG_SPDY_FLOW_CONTROL_ERROR = 7,
        AG_SPDY_STREAM_IN_USE = 8,
        AG_SPDY_STREAM_ALREADY_CLOSED = 9,
};

struct ag_spdy_header {
        const char *name;  /* lower case, as SPDY requires */
        const char *value; /* several values are NUL-separated in SPDY; here the first */
};

struct ag_spdy_callbacks {
        /* SYN_STREAM from the peer: a new stream with its headers (valid
         * only during the call). fin: the peer will send nothing on it.
         * Return -1 to fail the session. */
        int (*on_stream)(void *data, uint32_t id, const struct ag_spdy_header *h, size_t n,
                         bool fin);
        /* SYN_REPLY from the peer (a client's view of its own streams). */
        int (*on_reply)(void *data, uint32_t id, const struct ag_spdy_header *h, size_t n,
                        bool fin);
        /* DATA on a stream, as it arrives: one DATA frame may come in several
         * calls (it is not buffered); fin: the last the peer sends on it
         * (len may be 0; also for a HEADERS frame with FLAG_FIN). */
        int (*on_data)(void *data, uint32_t id, const uint8_t *buf, size_t len, bool fin);
        /* The stream is gone: RST_STREAM from the peer, or the session reset
         * it because the peer broke the protocol on it (status says why). */
        void (*on_reset)(void *data, uint32_t id, uint32_t status);
        /* GOAWAY from the peer. */
        void (*on_goaway)(void *data, uint32_t last_good_id, uint32_t status);
};

struct ag_spdy_session;

/* server: streams the peer opens have odd ids, ours even (SPDY/3 2.3.2). */
int ag_spdy_session_new(bool server, const struct ag_spdy_callbacks *cb, void *data,
                        struct ag_spdy_session **ret, struct cb_error *err);
void ag_spdy_session_free(struct ag_spdy_session *s);

/* Parses as many whole frames as buf completes (a partial frame is kept
 * for the next call) and calls the callbacks. -1: protocol error (err). */
int ag_spdy_session_feed(struct ag_spdy_session *s, const uint8_t *buf, size_t len,
                         struct cb_error *err);

/* Queue frames. 0, or -1 (err: no memory, unknown stream, already closed).
 * Callbacks may call these; a stream is forgotten once both sides sent
 * FIN or either reset it. Header names are sent lower-cased. */
int ag_spdy_reply(struct ag_spdy_session *s, uint32_t id, const struct ag_spdy_header *h, size_t n,
                  bool fin, struct cb_error *err);
/* Opens a stream of ours (client side, tests): *ret_id gets its id. */
int ag_spdy_syn_stream(struct ag_spdy_session *s, const struct ag_spdy_header *h, size_t n,
                       bool fin, uint32_t *ret_id, struct cb_error *err);
/* DATA, split into frames of at most AG_SPDY_DATA_CHUNK; len 0 with fin
 * half-closes. On a peer's stream only after ag_spdy_reply (spdystream drops
 * DATA that arrives before the SYN_REPLY). */
int ag_spdy_data(struct ag_spdy_session *s, uint32_t id, const void *buf, size_t len, bool fin,
                 struct cb_error *err);
/* RST_STREAM for any id (also one never opened, to refuse it). */
int ag_spdy_rst(struct ag_spdy_session *s, uint32_t id, enum ag_spdy_rst_status status,
                struct cb_error *err);
/* GOAWAY naming the last stream the peer opened; later SYN_STREAMs are refused. */
int ag_spdy_goaway(struct ag_spdy_session *s, uint32_t status, struct cb_error *err);

/* The bytes queued for the peer: ag_spdy_output points at them (NULL, 0 when
 * none); ag_spdy_consumed drops the first n after they were written. */
const uint8_t *ag_spdy_output(const struct ag_spdy_session *s, size_t *len);
void ag_spdy_consumed(struct ag_spdy_session *s, size_t n);
size_t ag_spdy_output_len(const struct ag_spdy_session *s);

/* The SPDY/3 header compression dictionary (1423 bytes; tests build
 * frames with it). */
const uint8_t *ag_spdy_header_dictionary(size_t *len);
