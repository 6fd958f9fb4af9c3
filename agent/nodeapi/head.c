/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The request head (agent/nodeapi/head.h): http-parser callbacks that keep
 * the request target and the few headers the server acts on; a repeated
 * header's values are joined with ',' as RFC 9110 allows.
 */
#include "agent/nodeapi/head.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/cleanup.h"

void ag_napi_head_clear(struct ag_napi_head *h)
{
        free(h->url);
        free(h->upgrade);
        free(h->connection);
        free(h->authorization);
        free(h->ws_key);
        free(h->ws_version);
        free(h->ws_protocol);
        free(h->stream_protocol);
        free(h->field);
        memset(h, 0, sizeof(*h));
}

static int append(char **dst, size_t *len, const char *at, size_t n)
{
        size_t have = *dst != NULL ? (len != NULL ? *len : strlen(*dst)) : 0;
        char *p = realloc(*dst, have + n + 1);
        if (p == NULL)
                return -1;
        memcpy(p + have, at, n);
        p[have + n] = '\0';
        *dst = p;
        if (len != NULL)
                *len = have + n;
        return 0;
}

static int on_url(http_parser *p, const char *at, size_t n)
{
        struct ag_napi_head *h = p->data;
        return append(&h->url, &h->url_len, at, n);
}

static int on_header_field(http_parser *p, const char *at, size_t n)
{
        struct ag_napi_head *h = p->data;
        if (h->value != NULL || h->value_started) {
                free(h->field);
                h->field = NULL;
                h->field_len = 0;
                h->value = NULL;
                h->value_started = false;
        }
        return append(&h->field, &h->field_len, at, n);
}

static int on_header_value(http_parser *p, const char *at, size_t n)
{
        struct ag_napi_head *h = p->data;
        if (!h->value_started) {
                static const struct {
                        const char *name;
                        size_t off;
                } wanted[] = {
                    {"upgrade", offsetof(struct ag_napi_head, upgrade)},
                    {"connection", offsetof(struct ag_napi_head, connection)},
                    {"authorization", offsetof(struct ag_napi_head, authorization)},
                    {"sec-websocket-key", offsetof(struct ag_napi_head, ws_key)},
                    {"sec-websocket-version", offsetof(struct ag_napi_head, ws_version)},
                    {"sec-websocket-protocol", offsetof(struct ag_napi_head, ws_protocol)},
                    {"x-stream-protocol-version", offsetof(struct ag_napi_head, stream_protocol)},
                };
                h->value = NULL;
                for (size_t i = 0; i < CB_ARRAY_SIZE(wanted); i++)
                        if (h->field != NULL && strcasecmp(h->field, wanted[i].name) == 0)
                                h->value = (char **)((char *)h + wanted[i].off);
                h->value_started = true;
                if (h->value != NULL && *h->value != NULL && append(h->value, NULL, ",", 1) < 0)
                        return -1;
        }
        if (h->value == NULL)
                return 0;
        return append(h->value, NULL, at, n);
}

static int on_headers_complete(http_parser *p)
{
        struct ag_napi_head *h = p->data;
        snprintf(h->method, sizeof(h->method), "%s", http_method_str((enum http_method)p->method));
        h->head_done = true;
        /* The parse ends here: no request of ours has a body worth reading,
         * and what follows (a body, a pipelined request) must never be
         * parsed as the next request of this head (issue 15 item 12: its
         * headers were merged into this one's, its path appended). */
        if (!p->upgrade)
                http_parser_pause(p, 1);
        return 0;
}

static int on_message_complete(http_parser *p)
{
        (void)p;
        return 0;
}

static const http_parser_settings settings = {
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_message_complete = on_message_complete,
};

void ag_napi_head_init(http_parser *p, struct ag_napi_head *h)
{
        http_parser_init(p, HTTP_REQUEST);
        p->data = h;
}

enum ag_napi_head_state ag_napi_head_feed(http_parser *p, struct ag_napi_head *h, const char *buf,
                                          size_t len, size_t *used, const char **why)
{
        size_t n = http_parser_execute(p, &settings, buf, len);
        h->head_bytes += n;
        *used = 0;
        if (p->http_errno != HPE_OK && p->http_errno != HPE_PAUSED && !h->head_done) {
                *why = http_errno_description(HTTP_PARSER_ERRNO(p));
                return AG_NAPI_HEAD_BAD;
        }
        if (!h->head_done)
                return h->head_bytes > AG_NAPI_HEAD_MAX ? AG_NAPI_HEAD_TOO_LONG : AG_NAPI_HEAD_MORE;
        *used = p->upgrade ? n : len;
        return AG_NAPI_HEAD_DONE;
}
