/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/client/tokenmgr.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "agent/core/log.h"
#include "lib/wallclock.h"
#include "lib/cleanup.h"

#define BACKOFF_INITIAL_MS 500
#define BACKOFF_CAP_MS     122000 /* the kubelet's 2 min 2 s */

struct tok {
        struct ag_tokenmgr *m;
        char *id; /* ns/sa/audience/expiration/uid */
        char *ns, *sa, *audience, *pod_name, *pod_uid;
        int64_t expiration_seconds;
        char *token; /* never logged */
        int64_t exp;
        struct ag_request *req;
        ag_token_fn fn;
        void *data;
        char error[sizeof(((struct cb_error *)0)->msg)];
        uint64_t failed_at_ms, backoff_ms;
        uint64_t fetched_ms; /* when the token in hand arrived (monotonic) */
        bool old_on_arrival; /* it needed a refresh already then (clock skew) */
};

struct ag_tokenmgr {
        struct ag_loop *loop;
        struct ag_api *api;
        int64_t (*now_s)(void);
        struct tok **toks;
        size_t n;
        uint64_t requests;
};

static int64_t real_now(void)
{
        return cb_wall_now();
}

bool ag_token_requires_refresh(int64_t now, int64_t exp, int64_t expiration_seconds,
                               int64_t jitter_s)
{
        int64_t iat = exp - expiration_seconds;
        if (now > iat + AG_TOKEN_MAX_TTL_S - jitter_s)
                return true;
        /* within 20 % of the TTL (plus the jitter) of the expiry */
        return now > exp - expiration_seconds * 20 / 100 - jitter_s;
}

int64_t ag_token_refresh_at(int64_t exp, int64_t expiration_seconds)
{
        int64_t a = exp - expiration_seconds + AG_TOKEN_MAX_TTL_S;
        int64_t b = exp - expiration_seconds * 20 / 100;
        return (a < b ? a : b) + 1;
}

char *ag_token_request_body(const struct ag_token_key *key)
{
        _cleanup_cjson_ cJSON *o = cJSON_CreateObject();
        cJSON *spec = cJSON_AddObjectToObject(o, "spec");
        cJSON *aud = cJSON_AddArrayToObject(spec, "audiences");
        if (aud && key->audience && key->audience[0])
                cJSON_AddItemToArray(aud, cJSON_CreateString(key->audience));
        cJSON_AddNumberToObject(spec, "expirationSeconds", (double)key->expiration_seconds);
        cJSON *ref = cJSON_AddObjectToObject(spec, "boundObjectRef");
        cJSON_AddStringToObject(o, "apiVersion", "authentication.k8s.io/v1");
        cJSON_AddStringToObject(o, "kind", "TokenRequest");
        if (ref == NULL)
                return NULL;
        cJSON_AddStringToObject(ref, "apiVersion", "v1");
        cJSON_AddStringToObject(ref, "kind", "Pod");
        cJSON_AddStringToObject(ref, "name", key->pod_name ? key->pod_name : "");
        cJSON_AddStringToObject(ref, "uid", key->pod_uid ? key->pod_uid : "");
        return cJSON_PrintUnformatted(o);
}

static int parse_rfc3339(const char *s, int64_t *ret)
{
        int y, mo, d, h, mi, se, n = 0;
        if (s == NULL || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &se, &n) != 6)
                return -1;
        const char *p = s + n;
        if (*p == '.')
                for (p++; *p >= '0' && *p <= '9'; p++)
                        ;
        int64_t off = 0;
        if (*p == '+' || *p == '-') {
                int oh, om;
                if (sscanf(p + 1, "%2d:%2d", &oh, &om) != 2)
                        return -1;
                off = (*p == '+' ? 1 : -1) * (oh * 3600 + om * 60);
        } else if (*p != 'Z' && *p != 'z') {
                return -1;
        }
        struct tm tm = {.tm_year = y - 1900,
                        .tm_mon = mo - 1,
                        .tm_mday = d,
                        .tm_hour = h,
                        .tm_min = mi,
                        .tm_sec = se};
        *ret = (int64_t)timegm(&tm) - off;
        return 0;
}

int ag_token_response_parse(const cJSON *json, char **ret_token, int64_t *ret_exp,
                            struct cb_error *err)
{
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(json, "status");
        const char *tok = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "token"));
        const char *exp =
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "expirationTimestamp"));
        if (tok == NULL || tok[0] == '\0')
                return cb_error_set(err, 0, "the TokenRequest answer has no status.token");
        if (parse_rfc3339(exp, ret_exp) < 0)
                return cb_error_set(err, 0,
                                    "the TokenRequest answer's status.expirationTimestamp \"%s\" "
                                    "is not RFC 3339",
                                    exp ? exp : "");
        if ((*ret_token = strdup(tok)) == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        return 0;
}

static void tok_free(struct tok *t)
{
        if (t == NULL)
                return;
        ag_api_cancel(t->req);
        if (t->token)
                explicit_bzero(t->token, strlen(t->token));
        free(t->token);
        free(t->id);
        free(t->ns);
        free(t->sa);
        free(t->audience);
        free(t->pod_name);
        free(t->pod_uid);
        free(t);
}

static char *key_id(const struct ag_token_key *k)
{
        char *id = NULL;
        if (asprintf(&id, "%s/%s/%s/%lld/%s", k->ns, k->service_account,
                     k->audience ? k->audience : "", (long long)k->expiration_seconds,
                     k->pod_uid) < 0)
                return NULL;
        return id;
}

static void on_done(struct ag_api_result *res, void *data)
{
        struct tok *t = data;
        t->req = NULL;
        struct cb_error err = {0};
        char *token = NULL;
        int64_t exp = 0;
        if (res->status == 200 || res->status == 201) {
                if (ag_token_response_parse(res->json, &token, &exp, &err) < 0)
                        snprintf(t->error, sizeof(t->error), "%s", err.msg);
        } else {
                const char *msg =
                    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res->json, "message"));
                snprintf(t->error, sizeof(t->error), "%s",
                         msg          ? msg
                         : res->error ? res->error
                                      : "the token request failed");
        }
        if (token != NULL) {
                if (t->token)
                        explicit_bzero(t->token, strlen(t->token));
                free(t->token);
                t->token = token;
                t->exp = exp;
                t->fetched_ms = ag_now_ms();
                t->old_on_arrival =
                    ag_token_requires_refresh(t->m->now_s(), exp, t->expiration_seconds, 0);
                if (t->old_on_arrival)
                        log_warning("serviceaccount %s/%s: the token for pod %s/%s is due for a "
                                    "refresh on arrival (the node's clock is ahead of the "
                                    "apiserver's?); asking again in %us at the earliest",
                                    t->ns, t->sa, t->ns, t->pod_name,
                                    AG_TOKEN_MIN_REFETCH_MS / 1000);
                t->error[0] = '\0';
                t->backoff_ms = 0;
                log_v(2, "serviceaccount %s/%s: token for pod %s/%s, expires in %llds", t->ns,
                      t->sa, t->ns, t->pod_name, (long long)(exp - t->m->now_s()));
        } else {
                t->failed_at_ms = ag_now_ms();
                t->backoff_ms = t->backoff_ms ? t->backoff_ms * 2 : BACKOFF_INITIAL_MS;
                if (t->backoff_ms > BACKOFF_CAP_MS)
                        t->backoff_ms = BACKOFF_CAP_MS;
                log_warning("serviceaccount %s/%s: token for pod %s/%s: %s (retry in %llu ms)",
                            t->ns, t->sa, t->ns, t->pod_name, t->error,
                            (unsigned long long)t->backoff_ms);
        }
        if (t->fn)
                t->fn(t->data);
}

static int send_request(struct tok *t, struct cb_error *err)
{
        struct ag_token_key k = {.ns = t->ns,
                                 .service_account = t->sa,
                                 .audience = t->audience,
                                 .expiration_seconds = t->expiration_seconds,
                                 .pod_name = t->pod_name,
                                 .pod_uid = t->pod_uid};
        _cleanup_free_ char *body = ag_token_request_body(&k), *path = NULL;
        if (body == NULL ||
            asprintf(&path, "/api/v1/namespaces/%s/serviceaccounts/%s/token", t->ns, t->sa) < 0) {
                path = NULL;
                return cb_error_set(err, ENOMEM, "out of memory");
        }
        struct ag_api_req_opts o = {.body = body, .body_len = strlen(body)};
        t->req = ag_api_request(t->m->api, "POST", path, &o, on_done, t, err);
        if (t->req == NULL)
                return -1;
        t->m->requests++;
        return 0;
}

static struct tok *find(struct ag_tokenmgr *m, const char *id)
{
        for (size_t i = 0; i < m->n; i++)
                if (strcmp(m->toks[i]->id, id) == 0)
                        return m->toks[i];
        return NULL;
}

int ag_tokenmgr_get(struct ag_tokenmgr *m, const struct ag_token_key *key, ag_token_fn fn,
                    void *data, const char **ret_token, int64_t *ret_exp, struct cb_error *err)
{
        _cleanup_free_ char *id = key_id(key);
        if (id == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        struct tok *t = find(m, id);
        if (t == NULL) {
                struct tok **grown = realloc(m->toks, (m->n + 1) * sizeof(*m->toks));
                if (grown == NULL)
                        return cb_error_set(err, ENOMEM, "out of memory");
                m->toks = grown;
                t = calloc(1, sizeof(*t));
                if (t == NULL)
                        return cb_error_set(err, ENOMEM, "out of memory");
                t->m = m;
                t->id = strdup(id);
                t->ns = strdup(key->ns);
                t->sa = strdup(key->service_account);
                t->audience = strdup(key->audience ? key->audience : "");
                t->pod_name = strdup(key->pod_name);
                t->pod_uid = strdup(key->pod_uid);
                t->expiration_seconds = key->expiration_seconds;
                if (!t->id || !t->ns || !t->sa || !t->audience || !t->pod_name || !t->pod_uid) {
                        tok_free(t);
                        return cb_error_set(err, ENOMEM, "out of memory");
                }
                m->toks[m->n++] = t;
        }
        t->fn = fn;
        t->data = data;
        uint32_t r = 0;
        if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
                r = 0;
        int64_t jitter = (int64_t)(r % (AG_TOKEN_MAX_JITTER_S + 1));
        int64_t now = m->now_s();
        if (t->token != NULL &&
            (!ag_token_requires_refresh(now, t->exp, t->expiration_seconds, jitter) ||
             (t->old_on_arrival && ag_now_ms() < t->fetched_ms + AG_TOKEN_MIN_REFETCH_MS))) {
                *ret_token = t->token;
                if (ret_exp)
                        *ret_exp = t->exp;
                return 1;
        }
        if (t->req != NULL)
                goto pending;
        if (t->error[0] && ag_now_ms() < t->failed_at_ms + t->backoff_ms) {
                /* An expiring token still in hand keeps serving meanwhile. */
                if (t->token != NULL && now < t->exp) {
                        *ret_token = t->token;
                        if (ret_exp)
                                *ret_exp = t->exp;
                        return 1;
                }
                return cb_error_set(err, 0, "%s", t->error);
        }
        if (send_request(t, err) < 0)
                return -1;
pending:
        /* A token that needs a refresh but has not expired is still good. */
        if (t->token != NULL && now < t->exp) {
                *ret_token = t->token;
                if (ret_exp)
                        *ret_exp = t->exp;
                return 1;
        }
        return 0;
}

int64_t ag_tokenmgr_next_due(struct ag_tokenmgr *m, const char *pod_uid)
{
        int64_t due = 0;
        for (size_t i = 0; m && i < m->n; i++) {
                struct tok *t = m->toks[i];
                if (strcmp(t->pod_uid, pod_uid) != 0)
                        continue;
                int64_t at = 0;
                if (t->error[0] && t->req == NULL)
                        at = m->now_s() +
                             (int64_t)((t->failed_at_ms + t->backoff_ms > ag_now_ms()
                                            ? t->failed_at_ms + t->backoff_ms - ag_now_ms()
                                            : 0) /
                                       1000) +
                             1;
                else if (t->token) {
                        at = ag_token_refresh_at(t->exp, t->expiration_seconds);
                        uint64_t mono = ag_now_ms(),
                                 again = t->fetched_ms + AG_TOKEN_MIN_REFETCH_MS;
                        int64_t floor =
                            m->now_s() + (int64_t)((again > mono ? again - mono : 0) / 1000) + 1;
                        if (t->old_on_arrival && at < floor)
                                at = floor;
                }
                if (at && (due == 0 || at < due))
                        due = at;
        }
        return due;
}

void ag_tokenmgr_forget_pod(struct ag_tokenmgr *m, const char *pod_uid)
{
        for (size_t i = 0; m && i < m->n;) {
                if (strcmp(m->toks[i]->pod_uid, pod_uid) == 0) {
                        tok_free(m->toks[i]);
                        m->toks[i] = m->toks[--m->n];
                } else {
                        i++;
                }
        }
}

uint64_t ag_tokenmgr_requests(const struct ag_tokenmgr *m)
{
        return m ? m->requests : 0;
}

int ag_tokenmgr_new(struct ag_loop *loop, struct ag_api *api, int64_t (*now_s)(void),
                    struct ag_tokenmgr **ret, struct cb_error *err)
{
        struct ag_tokenmgr *m = calloc(1, sizeof(*m));
        if (m == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        m->loop = loop;
        m->api = api;
        m->now_s = now_s ? now_s : real_now;
        *ret = m;
        return 0;
}

void ag_tokenmgr_free(struct ag_tokenmgr *m)
{
        if (m == NULL)
                return;
        for (size_t i = 0; i < m->n; i++)
                tok_free(m->toks[i]);
        free(m->toks);
        free(m);
}
