/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Service-account tokens for projected volumes, as the kubelet's token
 * manager (pkg/kubelet/token/token_manager.go) keeps them: requested with
 * TokenRequest (POST /api/v1/namespaces/<ns>/serviceaccounts/<sa>/token:
 * audiences, expirationSeconds, boundObjectRef to the pod by name and
 * uid), cached per (namespace, service account, audience, expiration,
 * pod), refreshed once 80 % of the requested TTL has passed or 24 h after
 * it was issued (minus a jitter of up to 10 s), dropped with the pod.
 * A failed request is retried after a backoff (0.5 s doubling to 2 min 2 s,
 * the kubelet's volume-operation backoff). Tokens never reach a log, an
 * event or an error text.
 */

#include <stdbool.h>
#include <stdint.h>

#include "agent/client/apiclient.h"
#include "agent/core/loop.h"
#include "lib/error.h"

#define AG_TOKEN_MAX_TTL_S    (24 * 3600)
#define AG_TOKEN_MAX_JITTER_S 10
/* A token that already needed a refresh when it arrived (the node's clock
 * far ahead of the apiserver's: every new token looks old at once) is asked
 * for again at most once per this long (monotonic). The kubelet asks when
 * it syncs the pod's volumes, once a sync period: one request a minute, not
 * a storm. */
#define AG_TOKEN_MIN_REFETCH_MS 60000u

struct ag_token_key {
        const char *ns, *service_account;
        const char *audience; /* NULL or "": the apiserver's audiences */
        int64_t expiration_seconds;
        const char *pod_name, *pod_uid;
};

struct ag_tokenmgr;

/* A request for one of the pod's tokens ended (fine or failed). */
typedef void (*ag_token_fn)(void *data);

/* now_s (may be NULL: the real clock) gives the wall-clock time in
 * seconds; tests pass a fake. */
int ag_tokenmgr_new(struct ag_loop *loop, struct ag_api *api, int64_t (*now_s)(void),
                    struct ag_tokenmgr **ret, struct cb_error *err);
void ag_tokenmgr_free(struct ag_tokenmgr *m);

/* 1: a fresh token (*ret_token borrowed until the next call, *ret_exp its
 * expiry); 0: requested, fn(data) is called when it ends; -1: the last
 * request failed and its backoff has not passed (err: the apiserver's
 * answer, e.g. `serviceaccounts "x" not found`). */
int ag_tokenmgr_get(struct ag_tokenmgr *m, const struct ag_token_key *key, ag_token_fn fn,
                    void *data, const char **ret_token, int64_t *ret_exp, struct cb_error *err);

/* The earliest time (seconds) a cached token of this pod needs a refresh
 * or a failed one may be retried; 0 when none. */
int64_t ag_tokenmgr_next_due(struct ag_tokenmgr *m, const char *pod_uid);

/* Drops the pod's tokens and cancels its requests (fn is not called). */
void ag_tokenmgr_forget_pod(struct ag_tokenmgr *m, const char *pod_uid);

/* Requests sent so far (tests). */
uint64_t ag_tokenmgr_requests(const struct ag_tokenmgr *m);

/* The refresh rule (pure): exp is the token's expiry, expiration_seconds
 * what was requested, jitter_s in [0, AG_TOKEN_MAX_JITTER_S]. */
bool ag_token_requires_refresh(int64_t now, int64_t exp, int64_t expiration_seconds,
                               int64_t jitter_s);
/* The first time ag_token_requires_refresh answers true (jitter 0). */
int64_t ag_token_refresh_at(int64_t exp, int64_t expiration_seconds);

/* The TokenRequest body for key (caller frees) and the parse of its
 * answer (status.token, status.expirationTimestamp). */
char *ag_token_request_body(const struct ag_token_key *key);
int ag_token_response_parse(const cJSON *json, char **ret_token, int64_t *ret_exp,
                            struct cb_error *err);
