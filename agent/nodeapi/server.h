/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The node's own API (the kubelet's port 10250; docs/node-api.md): HTTPS
 * only, every request authenticated by a client certificate signed by the
 * client CA, a bearer token of the token file or (webhook) a TokenReview,
 * or anonymous when enabled, else 401; then authorized (AlwaysAllow, or
 * Webhook: a SubjectAccessReview, else 403; agent/nodeapi/authz.h).
 *
 *   GET /healthz, /pods, /stats/summary
 *   GET /containerLogs/NS/POD/CONTAINER  (follow, tailLines, limitBytes,
 *                                        sinceSeconds, sinceTime,
 *                                        timestamps, previous)
 *   /exec/NS/POD[/UID]/CONTAINER?command=..&stdin&stdout&stderr&tty
 *       SPDY/3.1 (v4.channel.k8s.io, as kube-apiserver sends it) or
 *       WebSocket (v5/v4.channel.k8s.io, channel.k8s.io); the command runs
 *       confined like the container (runtime/exec.c), its exit status goes
 *       on the error stream/channel.
 *   /attach/NS/POD[/UID]/CONTAINER?stdout&stderr
 *       the same protocols: the container's output from now on.
 *   /portForward/NS/POD[/UID]
 *       SPDY/3.1 (portforward.k8s.io), or the same SPDY tunnelled in a
 *       WebSocket (SPDY/3.1+portforward.k8s.io).
 *
 * Non-blocking TLS (OpenSSL) on the agent's loop (agent/core/loop.h), request
 * heads by http-parser, WebSocket framing by wslay, SPDY by agent/nodeapi/spdy.c:
 * no thread.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "agent/client/apiclient.h"
#include "agent/core/loop.h"
#include "lib/error.h"

#define AG_NAPI_DEFAULT_PORT 10250

struct ag_napi_config {
        const char *address;                      /* NULL or "0.0.0.0": every address */
        int port;                                 /* 0: an ephemeral port (tests) */
        const char *tls_cert_file, *tls_key_file; /* NULL: generated in cert_dir */
        /* serverTLSBootstrap: no file is loaded nor generated; the
         * certificate comes from ag_napi_set_serving_cert, and until it does
         * (or once it expired) every TLS handshake fails, as the kubelet's
         * GetCertificate does ("no serving certificate available for the
         * kubelet"). */
        bool serving_cert_managed;
        const char *cert_dir;           /* <cert_dir>/kubelet.crt, kubelet.key */
        const char *node_ip, *hostname; /* names of a generated certificate */
        const char *client_ca_file;     /* NULL: no certificate authentication */
        const char *token_file;         /* NULL: no bearer tokens */
        /* Webhook authentication/authorization (agent/nodeapi/authz.h): the
         * apiserver client (NULL: standalone, no webhook), the node's name,
         * anonymous requests (system:anonymous) when no credential came. */
        struct ag_api *api;
        const char *node_name;
        bool anonymous;
        bool authn_webhook;
        uint64_t authn_ttl_ms;
        bool authz_webhook; /* authorization.mode Webhook; else AlwaysAllow */
        uint64_t authz_allowed_ttl_ms, authz_denied_ttl_ms;
        const char *root_dir, *pod_logs_dir, *monitor_path;
        /* Called on the loop; the caller of the API owns nothing returned. */
        cJSON *(*pods)(void *data); /* the node's PodList with current statuses */
        cJSON *(*summary)(void *data);
        bool (*healthy)(void *data, char *why, size_t size);
        void *data;
};

struct ag_napi;

int ag_napi_start(struct ag_loop *loop, const struct ag_napi_config *cfg, struct ag_napi **ret,
                  struct cb_error *err);
/* Closes every connection, kills running execs. NULL is allowed. */
void ag_napi_free(struct ag_napi *s);
int ag_napi_port(const struct ag_napi *s);
/* The serving certificate from now on (serving_cert_managed): cert_pem
 * holds the certificate and its chain, key_pem the key (the same text
 * may hold both). New handshakes use it; open connections go on. */
int ag_napi_set_serving_cert(struct ag_napi *s, const char *cert_pem, const char *key_pem,
                             struct cb_error *err);

/* A static token file like kube-apiserver's --token-auth-file: lines
 * "token,user,uid[,\"group1,group2\"]", '#' comments. Returns the user of
 * token or NULL. Exposed for the unit test. */
struct ag_napi_tokens;
int ag_napi_tokens_load(const char *path, struct ag_napi_tokens **ret, struct cb_error *err);
const char *ag_napi_tokens_user(const struct ag_napi_tokens *t, const char *token);
void ag_napi_tokens_free(struct ag_napi_tokens *t);

/* Makes a self-signed serving certificate (EC P-256, one year) for ip and
 * host in cert_path/key_path unless both exist and the certificate is
 * valid for more than a day. */
int ag_napi_ensure_cert(const char *cert_path, const char *key_path, const char *ip,
                        const char *host, struct cb_error *err);
