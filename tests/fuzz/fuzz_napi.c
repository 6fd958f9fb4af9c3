/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the node API's request decoding (agent/nodeapi/
 * proto.c): the first line is a request target, split at '?' into the path
 * (ag_napi_route_path) and the query (ag_napi_query_split, then
 * ag_napi_exec_options_parse on the decoded parameters as exec/attach do);
 * the rest is a channel message as a WebSocket client sends it
 * (ag_napi_channel_split, the resize payload, ag_napi_json_object_len), and
 * the subprotocol and key headers.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/nodeapi/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct cb_error err = {0};
        const uint8_t *nl = memchr(data, '\n', size);
        size_t first = nl ? (size_t)(nl - data) : size;
        char *line = malloc(first + 1);

        if (line == NULL)
                abort();
        memcpy(line, data, first);
        line[first] = '\0';
        char *q = strchr(line, '?');
        if (q != NULL)
                *q++ = '\0';
        struct ag_napi_target t;
        memset(&t, 0, sizeof(t));
        (void)ag_napi_route_path(line, &t);
        if (q != NULL) {
                char **params = NULL;
                size_t n = 0;
                if (ag_napi_query_split(q, 64, &params, &n, &err) == 0) {
                        for (int need = 0; need < 2; need++) {
                                struct ag_napi_exec_options o;
                                memset(&o, 0, sizeof(o));
                                if (ag_napi_exec_options_parse((const char *const *)params, n, need,
                                                               &o, &err) == 0)
                                        free(o.argv);
                        }
                        for (size_t i = 0; i < n; i++)
                                free(params[i]);
                        free(params);
                }
        }
        const char *const supported[] = {"v5.channel.k8s.io", "v4.channel.k8s.io", "channel.k8s.io",
                                         NULL};
        (void)ag_napi_negotiate(line, supported);
        (void)ag_napi_channel_proto_from_name(line);
        char accept[32];
        (void)ag_napi_ws_accept(line, accept);
        free(line);

        if (nl != NULL) {
                const uint8_t *msg = nl + 1, *payload;
                size_t len = size - first - 1, plen;
                uint8_t ch;
                if (ag_napi_channel_split(msg, len, &ch, &payload, &plen) == 0 &&
                    ch == AG_NAPI_CH_RESIZE) {
                        uint16_t w, h;
                        (void)ag_napi_parse_resize(payload, plen, &w, &h, &err);
                }
                (void)ag_napi_json_object_len(msg, len);
        }
        return 0;
}
