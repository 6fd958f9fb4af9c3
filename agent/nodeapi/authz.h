/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Webhook authentication and authorization of the node API (the kubelet's
 * authentication.webhook and authorization.mode Webhook; docs/node-api.md):
 *
 *   - a bearer token that is not in the token file goes to the apiserver
 *     as a TokenReview (authentication.k8s.io/v1); the answer (user,
 *     groups, or not authenticated) is kept for cacheTTL under the
 *     token's SHA-256, never the token itself;
 *   - every authenticated request is asked about as a SubjectAccessReview
 *     (authorization.k8s.io/v1) for the attributes the kubelet derives
 *     from the request (verb from the method, resource nodes, subresource
 *     proxy or stats/metrics/log/spec/checkpoint, name the node); allowed
 *     answers are kept cacheAuthorizedTTL, denied ones cacheUnauthorizedTTL.
 *
 * Reviews run through the agent's apiserver client on the loop: a caller
 * gets its answer at once from the cache, or later through a callback on a
 * review handle it may cancel at any time (a connection that goes away).
 * The same question asked while one is in flight waits for that one; at
 * most AG_NAPI_MAX_REVIEWS questions are in flight, more are answered
 * with an error.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "agent/client/apiclient.h"
#include "agent/core/loop.h"
#include "lib/error.h"

#define AG_NAPI_MAX_REVIEWS       64
#define AG_NAPI_CACHE_MAX         4096 /* entries per cache */
#define AG_NAPI_AUTHN_TTL_MS      120000
#define AG_NAPI_AUTHZ_ALLOWED_MS  300000
#define AG_NAPI_AUTHZ_DENIED_MS   30000
#define AG_NAPI_REVIEW_TIMEOUT_MS 10000 /* the kubelet's webhook timeout */

/* ---- pure parts (unit tested) ---- */

/* The kubelet's authorizer attributes of a request to its API. */
struct ag_napi_attrs {
        const char *verb;        /* create/get/update/patch/delete, "" for others */
        const char *resource;    /* "nodes" */
        const char *subresource; /* proxy, stats, metrics, log, spec, checkpoint */
        const char *version;     /* "v1" */
};
void ag_napi_attrs_of(const char *method, const char *path, struct ag_napi_attrs *a);

/* "Forbidden (user=U, verb=V, resource=R, subresource=S)" (what is
 * "Forbidden", or "Authorization error" for the 500 answer). */
void ag_napi_authz_text(char *buf, size_t size, const char *what, const char *user,
                        const struct ag_napi_attrs *a);

/* Lower-case hex SHA-256 of s (65 bytes with the NUL). */
void ag_napi_sha256_hex(const char *s, size_t len, char out[65]);

/* A bounded cache of answers with expiry times; now is injected. */
struct ag_napi_cache;
struct ag_napi_answer {
        bool yes;       /* authenticated / allowed */
        char *user;     /* TokenReview: the user; else NULL */
        cJSON *groups;  /* TokenReview: array of strings; else NULL */
        uint64_t until; /* expires at this ms */
};
struct ag_napi_cache *ag_napi_cache_new(size_t max);
void ag_napi_cache_free(struct ag_napi_cache *c);
/* The answer for key unless missing or expired (an expired one is
 * dropped); it stays valid until the next put or free. */
const struct ag_napi_answer *ag_napi_cache_get(struct ag_napi_cache *c, const char *key,
                                               uint64_t now);
/* Keeps a copy of user/groups. When full, expired entries go first, then
 * the one expiring soonest. */
int ag_napi_cache_put(struct ag_napi_cache *c, const char *key, bool yes, const char *user,
                      const cJSON *groups, uint64_t until, uint64_t now);
size_t ag_napi_cache_size(const struct ag_napi_cache *c);

/* ---- the reviewer ---- */

struct ag_napi_authz_config {
        bool authn_webhook;    /* authentication.webhook.enabled */
        uint64_t authn_ttl_ms; /* authentication.webhook.cacheTTL */
        bool authz_webhook;    /* authorization.mode Webhook */
        uint64_t authz_allowed_ttl_ms, authz_denied_ttl_ms;
        const char *node_name;
        uint64_t (*now_ms)(void); /* NULL: ag_now_ms */
};

/* Who a request comes from. */
struct ag_napi_who {
        char user[256];
        cJSON *groups; /* array of strings, owned; may be NULL */
};

enum ag_napi_verdict {
        AG_NAPI_ERROR = -1, /* no answer (apiserver unreachable, too many reviews) */
        AG_NAPI_NO = 0,
        AG_NAPI_YES = 1,
        AG_NAPI_PENDING = 2, /* done will be called unless the review is cancelled */
};

struct ag_napi_authz;
struct ag_napi_review;
typedef void (*ag_napi_review_fn)(void *data, enum ag_napi_verdict v);

/* api may only be NULL when neither webhook is on. */
int ag_napi_authz_new(struct ag_api *api, const struct ag_napi_authz_config *cfg,
                      struct ag_napi_authz **ret, struct cb_error *err);
/* Cancels every review in flight (no callbacks). NULL is allowed. */
void ag_napi_authz_free(struct ag_napi_authz *z);

/* A bearer token through TokenReview: YES fills who now or, when PENDING,
 * before done is called (who must stay valid until then or a cancel). */
enum ag_napi_verdict ag_napi_review_token(struct ag_napi_authz *z, const char *token,
                                          struct ag_napi_who *who, ag_napi_review_fn done,
                                          void *data, struct ag_napi_review **ret);
/* May who do a (SubjectAccessReview)? */
enum ag_napi_verdict ag_napi_review_access(struct ag_napi_authz *z, const struct ag_napi_who *who,
                                           const struct ag_napi_attrs *a, ag_napi_review_fn done,
                                           void *data, struct ag_napi_review **ret);
/* Drops a pending review: done is never called. NULL is allowed. */
void ag_napi_review_cancel(struct ag_napi_review *r);
