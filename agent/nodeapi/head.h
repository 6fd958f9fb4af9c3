/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The request head of a node-API connection (agent/nodeapi/server.c reads
 * it): http-parser's callbacks collecting the method, the request target and
 * the headers the server acts on. Pure: no connection, no I/O, so the fuzz
 * harness (tests/fuzz/fuzz_head.c) drives the same code with any bytes.
 */

#include <stdbool.h>
#include <stddef.h>

#include <http_parser.h>

#define AG_NAPI_HEAD_MAX (64 * 1024) /* request line + headers */

struct ag_napi_head {
        char method[16];
        char *url; /* path?query as sent */
        size_t url_len;
        /* headers of interest (values of repeated headers joined by ',') */
        char *upgrade, *connection, *authorization, *ws_key, *ws_version, *ws_protocol,
            *stream_protocol;
        char *field; /* the header being read */
        size_t field_len;
        char **value; /* where its value goes, NULL: not of interest */
        bool value_started;
        bool head_done, upgrade_asked;
        size_t head_bytes;
};

/* Starts reading a head into h (zeroed) with parser p. */
void ag_napi_head_init(http_parser *p, struct ag_napi_head *h);

enum ag_napi_head_state {
        AG_NAPI_HEAD_MORE,     /* the head is not complete: feed more */
        AG_NAPI_HEAD_DONE,     /* complete; *used bytes were the head's */
        AG_NAPI_HEAD_BAD,      /* http-parser refused it: 400 with *why */
        AG_NAPI_HEAD_TOO_LONG, /* over AG_NAPI_HEAD_MAX without an end: 431 */
};

/* Feeds len bytes. On DONE, *used is how many were the head's when the
 * request asks for an upgrade (the rest belongs to the new protocol), else
 * len (a body is not read); on BAD, *why is http-parser's description. */
enum ag_napi_head_state ag_napi_head_feed(http_parser *p, struct ag_napi_head *h, const char *buf,
                                          size_t len, size_t *used, const char **why);

/* Frees what the head holds and zeroes it. */
void ag_napi_head_clear(struct ag_napi_head *h);
