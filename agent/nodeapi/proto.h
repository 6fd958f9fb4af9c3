/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The pure parts of the node API (agent/nodeapi/server.c): request paths, the
 * query parameters of exec/attach, the channel framing of the
 * *.channel.k8s.io WebSocket subprotocols on top of the WebSocket messages
 * wslay frames, the terminal-resize message and the exit status
 * sent on the error channel (a metav1.Status, as the kubelet writes it).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

enum ag_napi_route {
        AG_NAPI_NONE,
        AG_NAPI_HEALTHZ,
        AG_NAPI_PODS,
        AG_NAPI_LOGS,
        AG_NAPI_EXEC,
        AG_NAPI_ATTACH,
        AG_NAPI_PORTFORWARD,
        AG_NAPI_STATS_SUMMARY,
        AG_NAPI_METRICS_RESOURCE, /* /metrics/resource (metrics-server's scrape) */
};

#define AG_NAPI_NAME_MAX 254

struct ag_napi_target {
        enum ag_napi_route route;
        char ns[AG_NAPI_NAME_MAX], pod[AG_NAPI_NAME_MAX], container[AG_NAPI_NAME_MAX];
        char uid[AG_NAPI_NAME_MAX]; /* exec/attach/portForward may name the pod uid: ns/pod/uid/c */
};

/* Splits a request path (without the query) into the route and its names:
 * /healthz, /pods, /stats/summary, /containerLogs/NS/POD/CONTAINER,
 * /exec|/attach/NS/POD[/UID]/CONTAINER, /portForward/NS/POD[/UID].
 * AG_NAPI_NONE for anything else (404). */
enum ag_napi_route ag_napi_route_path(const char *path, struct ag_napi_target *ret);

/* exec/attach options from the query's decoded "name=value" fragments:
 * command (repeated, in order), stdin|input, stdout|output, stderr|error,
 * tty. argv points into args (valid as long as they are) and ends with
 * NULL; the caller frees argv. Fails when no stream is asked for, as the
 * kubelet does. */
struct ag_napi_exec_options {
        const char **argv;
        size_t argc;
        bool in, out, err, tty;
};
int ag_napi_exec_options_parse(const char *const *args, size_t n, bool need_command,
                               struct ag_napi_exec_options *ret, struct cb_error *err);

/* The channel subprotocols, newest first, as the kubelet offers them. */
enum ag_napi_channel_proto {
        AG_NAPI_CHANNEL_V1 = 1, /* channel.k8s.io */
        AG_NAPI_CHANNEL_V4 = 4, /* v4.channel.k8s.io: JSON status on the error channel */
        AG_NAPI_CHANNEL_V5 = 5, /* v5.channel.k8s.io: + the close message (channel 255) */
};
enum ag_napi_channel {
        AG_NAPI_CH_STDIN = 0,
        AG_NAPI_CH_STDOUT = 1,
        AG_NAPI_CH_STDERR = 2,
        AG_NAPI_CH_ERROR = 3,
        AG_NAPI_CH_RESIZE = 4,
        AG_NAPI_CH_CLOSE = 255, /* v5: the payload's first byte names a channel the peer closed */
};
enum ag_napi_channel_proto ag_napi_channel_proto_from_name(const char *name);

/* A received message: its channel and payload (pointing into msg).
 * -1 for an empty message (the kubelet ignores those). */
int ag_napi_channel_split(const uint8_t *msg, size_t len, uint8_t *ret_channel,
                          const uint8_t **ret_payload, size_t *ret_len);

/* {"Width":W,"Height":H} (remotecommand.TerminalSize). */
int ag_napi_parse_resize(const uint8_t *data, size_t len, uint16_t *ret_width, uint16_t *ret_height,
                         struct cb_error *err);

/* The metav1.Status for the error channel: exit_code 0 is Success; a
 * non-zero one is Failure/NonZeroExitCode with the ExitCode cause kubectl
 * turns into its own exit status; message (not NULL) is an
 * InternalError-style failure without an exit code. The caller frees. */
char *ag_napi_exec_status_json(int exit_code, const char *message);

/* A URL query ("a=1&command=ls&command=-l%20x") as decoded "name=value"
 * strings, in order ('+' is a space, %XX a byte, as Go's url.ParseQuery).
 * -1 (err) for a bad escape, a NUL byte or more than max parameters. The
 * caller frees each string and the array. */
int ag_napi_query_split(const char *query, size_t max, char ***ret, size_t *ret_n,
                        struct cb_error *err);

/* Sec-WebSocket-Accept for a Sec-WebSocket-Key (RFC 6455 4.2.2). */
int ag_napi_ws_accept(const char *key, char out[32]);

/* The first protocol of the client's list (comma-separated values of one
 * or more headers, joined with ',') that the server supports, as
 * httpstream/wsstream negotiate: client order wins. NULL when none. */
const char *ag_napi_negotiate(const char *offered, const char *const *supported);

/* Splits the resize stream of the SPDY remotecommand protocol, a sequence
 * of JSON objects ({"Width":W,"Height":H}{"Width":...}).
 * The length of the first complete object in buf (0: none complete yet). */
size_t ag_napi_json_object_len(const uint8_t *buf, size_t len);
