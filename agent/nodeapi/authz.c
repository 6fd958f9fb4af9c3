/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Webhook authentication (TokenReview) and authorization
 * (SubjectAccessReview) of the node API, with the kubelet's caches.
 * agent/nodeapi/authz.h says what and why.
 */
#include "agent/nodeapi/authz.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "agent/core/log.h"
#include "lib/cleanup.h"

/* ---- attributes ---- */

/* The kubelet's isSubpath: path is sub, or below it. */
static bool is_subpath(const char *path, const char *sub)
{
        size_t n = strlen(sub);
        while (n > 0 && sub[n - 1] == '/')
                n--;
        return strncmp(path, sub, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

void ag_napi_attrs_of(const char *method, const char *path, struct ag_napi_attrs *a)
{
        static const struct {
                const char *method, *verb;
        } verbs[] = {{"POST", "create"},
                     {"GET", "get"},
                     {"PUT", "update"},
                     {"PATCH", "patch"},
                     {"DELETE", "delete"}};
        static const struct {
                const char *path, *sub;
        } subs[] = {{"/stats/", "stats"},
                    {"/metrics", "metrics"},
                    {"/logs/", "log"},
                    {"/spec/", "spec"},
                    {"/checkpoint", "checkpoint"}};
        *a = (struct ag_napi_attrs){
            .verb = "", .resource = "nodes", .subresource = "proxy", .version = "v1"};
        for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
                if (strcmp(method, verbs[i].method) == 0)
                        a->verb = verbs[i].verb;
        for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
                if (is_subpath(path, subs[i].path)) {
                        a->subresource = subs[i].sub;
                        break;
                }
}

void ag_napi_authz_text(char *buf, size_t size, const char *what, const char *user,
                        const struct ag_napi_attrs *a)
{
        snprintf(buf, size, "%s (user=%s, verb=%s, resource=%s, subresource=%s)", what, user,
                 a->verb, a->resource, a->subresource);
}

void ag_napi_sha256_hex(const char *s, size_t len, char out[65])
{
        unsigned char md[32];
        unsigned int n = 0;
        if (EVP_Digest(s, len, md, &n, EVP_sha256(), NULL) != 1 || n != 32)
                memset(md, 0, sizeof(md));
        static const char hex[] = "0123456789abcdef";
        for (size_t i = 0; i < 32; i++) {
                out[2 * i] = hex[md[i] >> 4];
                out[2 * i + 1] = hex[md[i] & 15];
        }
        out[64] = '\0';
}

/* ---- the cache ---- */

struct centry {
        char *key;
        struct ag_napi_answer a;
};

struct ag_napi_cache {
        struct centry *v;
        size_t n, max;
};

struct ag_napi_cache *ag_napi_cache_new(size_t max)
{
        struct ag_napi_cache *c = calloc(1, sizeof(*c));
        if (c == NULL)
                return NULL;
        c->max = max > 0 ? max : 1;
        c->v = calloc(c->max, sizeof(*c->v));
        if (c->v == NULL) {
                free(c);
                return NULL;
        }
        return c;
}

static void centry_clear(struct centry *e)
{
        free(e->key);
        free(e->a.user);
        cJSON_Delete(e->a.groups);
        *e = (struct centry){0};
}

static void cache_drop(struct ag_napi_cache *c, size_t i)
{
        centry_clear(&c->v[i]);
        c->v[i] = c->v[--c->n];
        c->v[c->n] = (struct centry){0};
}

void ag_napi_cache_free(struct ag_napi_cache *c)
{
        if (c == NULL)
                return;
        for (size_t i = 0; i < c->n; i++)
                centry_clear(&c->v[i]);
        free(c->v);
        free(c);
}

size_t ag_napi_cache_size(const struct ag_napi_cache *c)
{
        return c->n;
}

const struct ag_napi_answer *ag_napi_cache_get(struct ag_napi_cache *c, const char *key,
                                               uint64_t now)
{
        for (size_t i = 0; i < c->n; i++) {
                if (strcmp(c->v[i].key, key) != 0)
                        continue;
                if (now >= c->v[i].a.until) {
                        cache_drop(c, i);
                        return NULL;
                }
                return &c->v[i].a;
        }
        return NULL;
}

int ag_napi_cache_put(struct ag_napi_cache *c, const char *key, bool yes, const char *user,
                      const cJSON *groups, uint64_t until, uint64_t now)
{
        struct centry e = {.key = strdup(key), .a = {.yes = yes, .until = until}};
        if (e.key == NULL || (user != NULL && (e.a.user = strdup(user)) == NULL) ||
            (groups != NULL && (e.a.groups = cJSON_Duplicate(groups, true)) == NULL)) {
                centry_clear(&e);
                return -ENOMEM;
        }
        for (size_t i = 0; i < c->n; i++)
                if (strcmp(c->v[i].key, key) == 0) {
                        cache_drop(c, i);
                        break;
                }
        if (c->n == c->max) {
                for (size_t i = c->n; i-- > 0;)
                        if (now >= c->v[i].a.until)
                                cache_drop(c, i);
        }
        if (c->n == c->max) {
                size_t soonest = 0;
                for (size_t i = 1; i < c->n; i++)
                        if (c->v[i].a.until < c->v[soonest].a.until)
                                soonest = i;
                cache_drop(c, soonest);
        }
        c->v[c->n++] = e;
        return 0;
}

/* ---- the reviewer ---- */

enum call_kind { CALL_TOKEN, CALL_ACCESS };

struct call;

struct ag_napi_review {
        struct ag_napi_review *next;
        struct call *call;
        ag_napi_review_fn done;
        void *data;
        struct ag_napi_who *who; /* CALL_TOKEN: where the user goes */
};

/* One question in flight to the apiserver; reviews asking it wait on it. */
struct call {
        struct call *next;
        struct ag_napi_authz *z;
        enum call_kind kind;
        char key[80]; /* "t:" or "a:" + SHA-256 */
        struct ag_request *req;
        struct ag_napi_review *waiters;
        uint64_t started;
};

struct ag_napi_authz {
        struct ag_api *api;
        struct ag_napi_authz_config cfg;
        struct ag_napi_cache *tokens, *access;
        struct call *calls;
        size_t n_calls;
};

static uint64_t now_ms(const struct ag_napi_authz *z)
{
        return z->cfg.now_ms != NULL ? z->cfg.now_ms() : ag_now_ms();
}

int ag_napi_authz_new(struct ag_api *api, const struct ag_napi_authz_config *cfg,
                      struct ag_napi_authz **ret, struct cb_error *err)
{
        if ((cfg->authn_webhook || cfg->authz_webhook) && api == NULL)
                return cb_error_set(err, EINVAL,
                                    "authentication.webhook.enabled and authorization.mode "
                                    "Webhook ask the apiserver: they need --kubeconfig");
        if (cfg->authz_webhook && (cfg->node_name == NULL || cfg->node_name[0] == '\0'))
                return cb_error_set(err, EINVAL, "authorization.mode Webhook needs the node name");
        struct ag_napi_authz *z = calloc(1, sizeof(*z));
        if (z == NULL)
                return cb_error_set(err, ENOMEM, "node API authorization");
        z->api = api;
        z->cfg = *cfg;
        if (z->cfg.node_name != NULL && (z->cfg.node_name = strdup(cfg->node_name)) == NULL) {
                free(z);
                return cb_error_set(err, ENOMEM, "node API authorization");
        }
        z->tokens = ag_napi_cache_new(AG_NAPI_CACHE_MAX);
        z->access = ag_napi_cache_new(AG_NAPI_CACHE_MAX);
        if (z->tokens == NULL || z->access == NULL) {
                ag_napi_authz_free(z);
                return cb_error_set(err, ENOMEM, "node API authorization");
        }
        *ret = z;
        return 0;
}

static void call_free(struct call *k)
{
        while (k->waiters != NULL) {
                struct ag_napi_review *r = k->waiters;
                k->waiters = r->next;
                free(r);
        }
        if (k->req != NULL)
                ag_api_cancel(k->req);
        free(k);
}

static void call_unlink(struct call *k)
{
        struct call **pp = &k->z->calls;
        while (*pp != NULL && *pp != k)
                pp = &(*pp)->next;
        if (*pp == k) {
                *pp = k->next;
                k->z->n_calls--;
        }
}

void ag_napi_authz_free(struct ag_napi_authz *z)
{
        if (z == NULL)
                return;
        while (z->calls != NULL) {
                struct call *k = z->calls;
                call_unlink(k);
                call_free(k);
        }
        ag_napi_cache_free(z->tokens);
        ag_napi_cache_free(z->access);
        free((char *)z->cfg.node_name);
        free(z);
}

void ag_napi_review_cancel(struct ag_napi_review *r)
{
        if (r == NULL)
                return;
        struct ag_napi_review **pp = &r->call->waiters;
        while (*pp != NULL && *pp != r)
                pp = &(*pp)->next;
        if (*pp == r)
                *pp = r->next;
        free(r);
        /* the call goes on: its answer is cached for the next request */
}

static void who_set(struct ag_napi_who *who, const char *user, const cJSON *groups)
{
        snprintf(who->user, sizeof(who->user), "%s", user != NULL ? user : "");
        cJSON_Delete(who->groups);
        who->groups = groups != NULL ? cJSON_Duplicate(groups, true) : NULL;
}

static const cJSON *jget(const cJSON *o, const char *k)
{
        return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

/* Answers every waiter and frees the call. v: the verdict; for tokens
 * user/groups. */
static void call_finish(struct call *k, enum ag_napi_verdict v, const char *user,
                        const cJSON *groups)
{
        k->req = NULL;
        call_unlink(k); /* a new question now finds the cache, not this call */
        while (k->waiters != NULL) {
                struct ag_napi_review *r = k->waiters;
                k->waiters = r->next;
                if (r->who != NULL && v == AG_NAPI_YES)
                        who_set(r->who, user, groups);
                ag_napi_review_fn done = r->done;
                void *data = r->data;
                free(r);
                done(data, v); /* may cancel other waiters: still linked */
        }
        free(k);
}

static void on_review_done(struct ag_api_result *res, void *data)
{
        struct call *k = data;
        struct ag_napi_authz *z = k->z;
        uint64_t now = now_ms(z);
        const char *what = k->kind == CALL_TOKEN ? "TokenReview" : "SubjectAccessReview";
        log_v(3, "node API: %s answered in %llu ms (HTTP %ld)", what,
              (unsigned long long)(now - k->started), res->status);
        const cJSON *status = jget(res->json, "status");
        if (res->error != NULL || !cJSON_IsObject(status)) {
                log_warning("node API: %s failed: %s", what,
                            res->error != NULL ? res->error : "no status in the answer");
                call_finish(k, AG_NAPI_ERROR, NULL, NULL);
                return;
        }
        if (k->kind == CALL_TOKEN) {
                const cJSON *u = jget(status, "user");
                const cJSON *name = jget(u, "username");
                const cJSON *groups = jget(u, "groups");
                bool yes = cJSON_IsTrue(jget(status, "authenticated")) && cJSON_IsString(name) &&
                           name->valuestring[0] != '\0';
                if (!cJSON_IsArray(groups))
                        groups = NULL;
                const cJSON *e = jget(status, "error");
                if (!yes && cJSON_IsString(e) && e->valuestring[0] != '\0')
                        log_v(2, "node API: TokenReview: %s", e->valuestring);
                (void)ag_napi_cache_put(z->tokens, k->key, yes, yes ? name->valuestring : NULL,
                                        yes ? groups : NULL, now + z->cfg.authn_ttl_ms, now);
                call_finish(k, yes ? AG_NAPI_YES : AG_NAPI_NO, yes ? name->valuestring : NULL,
                            groups);
                return;
        }
        bool allowed = cJSON_IsTrue(jget(status, "allowed"));
        const cJSON *ee = jget(status, "evaluationError");
        if (!allowed && cJSON_IsString(ee) && ee->valuestring[0] != '\0')
                log_v(2, "node API: SubjectAccessReview: %s", ee->valuestring);
        (void)ag_napi_cache_put(
            z->access, k->key, allowed, NULL, NULL,
            now + (allowed ? z->cfg.authz_allowed_ttl_ms : z->cfg.authz_denied_ttl_ms), now);
        call_finish(k, allowed ? AG_NAPI_YES : AG_NAPI_NO, NULL, NULL);
}

static struct call *call_find(struct ag_napi_authz *z, const char *key)
{
        for (struct call *k = z->calls; k != NULL; k = k->next)
                if (strcmp(k->key, key) == 0)
                        return k;
        return NULL;
}

/* Waits on the call for key, or sends body to path. */
static enum ag_napi_verdict ask(struct ag_napi_authz *z, enum call_kind kind, const char *key,
                                const char *path, const char *body, struct ag_napi_who *who,
                                ag_napi_review_fn done, void *data, struct ag_napi_review **ret)
{
        struct ag_napi_review *r = calloc(1, sizeof(*r));
        if (r == NULL)
                return AG_NAPI_ERROR;
        *r = (struct ag_napi_review){.done = done, .data = data, .who = who};
        struct call *k = call_find(z, key);
        if (k == NULL) {
                if (z->n_calls >= AG_NAPI_MAX_REVIEWS) {
                        log_warning("node API: %d reviews in flight already; refusing one more",
                                    AG_NAPI_MAX_REVIEWS);
                        free(r);
                        return AG_NAPI_ERROR;
                }
                k = calloc(1, sizeof(*k));
                if (k == NULL) {
                        free(r);
                        return AG_NAPI_ERROR;
                }
                k->z = z;
                k->kind = kind;
                k->started = now_ms(z);
                snprintf(k->key, sizeof(k->key), "%s", key);
                struct ag_api_req_opts o = {.body = body,
                                            .body_len = strlen(body),
                                            .timeout_ms = AG_NAPI_REVIEW_TIMEOUT_MS};
                struct cb_error err = {0};
                k->req = ag_api_request(z->api, "POST", path, &o, on_review_done, k, &err);
                if (k->req == NULL) {
                        log_warning("node API: %s: %s", path, err.msg);
                        free(k);
                        free(r);
                        return AG_NAPI_ERROR;
                }
                k->next = z->calls;
                z->calls = k;
                z->n_calls++;
        }
        r->call = k;
        r->next = k->waiters;
        k->waiters = r;
        *ret = r;
        return AG_NAPI_PENDING;
}

enum ag_napi_verdict ag_napi_review_token(struct ag_napi_authz *z, const char *token,
                                          struct ag_napi_who *who, ag_napi_review_fn done,
                                          void *data, struct ag_napi_review **ret)
{
        *ret = NULL;
        if (!z->cfg.authn_webhook || token[0] == '\0')
                return AG_NAPI_NO;
        char key[80] = "t:";
        ag_napi_sha256_hex(token, strlen(token), key + 2);
        const struct ag_napi_answer *a = ag_napi_cache_get(z->tokens, key, now_ms(z));
        if (a != NULL) {
                if (a->yes)
                        who_set(who, a->user, a->groups);
                return a->yes ? AG_NAPI_YES : AG_NAPI_NO;
        }
        _cleanup_cjson_ cJSON *b = cJSON_CreateObject();
        cJSON *spec = cJSON_AddObjectToObject(b, "spec");
        cJSON_AddStringToObject(b, "apiVersion", "authentication.k8s.io/v1");
        cJSON_AddStringToObject(b, "kind", "TokenReview");
        cJSON_AddStringToObject(spec, "token", token);
        char *body = cJSON_PrintUnformatted(b);
        if (body == NULL)
                return AG_NAPI_ERROR;
        enum ag_napi_verdict v =
            ask(z, CALL_TOKEN, key, "/apis/authentication.k8s.io/v1/tokenreviews", body, who, done,
                data, ret);
        OPENSSL_cleanse(body, strlen(body));
        free(body);
        return v;
}

enum ag_napi_verdict ag_napi_review_access(struct ag_napi_authz *z, const struct ag_napi_who *who,
                                           const struct ag_napi_attrs *a, ag_napi_review_fn done,
                                           void *data, struct ag_napi_review **ret)
{
        *ret = NULL;
        if (!z->cfg.authz_webhook)
                return AG_NAPI_YES; /* AlwaysAllow */
        _cleanup_cjson_ cJSON *b = cJSON_CreateObject();
        cJSON_AddStringToObject(b, "apiVersion", "authorization.k8s.io/v1");
        cJSON_AddStringToObject(b, "kind", "SubjectAccessReview");
        cJSON *spec = cJSON_AddObjectToObject(b, "spec");
        cJSON *ra = cJSON_AddObjectToObject(spec, "resourceAttributes");
        cJSON_AddStringToObject(ra, "verb", a->verb);
        cJSON_AddStringToObject(ra, "version", a->version);
        cJSON_AddStringToObject(ra, "resource", a->resource);
        cJSON_AddStringToObject(ra, "subresource", a->subresource);
        cJSON_AddStringToObject(ra, "name", z->cfg.node_name);
        cJSON_AddStringToObject(spec, "user", who->user);
        if (who->groups != NULL)
                cJSON_AddItemToObject(spec, "groups", cJSON_Duplicate(who->groups, true));
        _cleanup_free_ char *body = cJSON_PrintUnformatted(b);
        _cleanup_free_ char *spec_text = cJSON_PrintUnformatted(spec);
        if (body == NULL || spec_text == NULL)
                return AG_NAPI_ERROR;
        /* keyed like the kubelet's webhook authorizer: by the whole spec */
        char key[80] = "a:";
        ag_napi_sha256_hex(spec_text, strlen(spec_text), key + 2);
        const struct ag_napi_answer *ans = ag_napi_cache_get(z->access, key, now_ms(z));
        if (ans != NULL) {
                return ans->yes ? AG_NAPI_YES : AG_NAPI_NO;
        }
        return ask(z, CALL_ACCESS, key, "/apis/authorization.k8s.io/v1/subjectaccessreviews", body,
                   NULL, done, data, ret);
}
