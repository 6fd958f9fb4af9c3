/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pulling images over the OCI distribution API with libcurl's easy
 * interface.
 *
 * The code is split into one request builder (http_get) and response
 * handlers (a body sink that hashes while it writes, a header parser, the
 * bearer challenge handler), so the agent's event loop can later drive the
 * same handlers from a multi handle. Bodies of non-2xx responses never
 * reach a sink: they are kept (up to 4 KiB) for the error message.
 *
 * Authentication (the Docker registry token spec, as containerd answers
 * it): a 401 with "WWW-Authenticate: Basic" gets the request again with the
 * credential (and every later request to the registry sends it at once); a
 * 401 with "Bearer realm=,service=,scope=" gets a token from the realm (GET
 * with Basic auth when there is a credential, anonymous otherwise), sent
 * as "Authorization: Bearer" from then on and fetched again when a request
 * with it gets a 401 (expired). Credentials and tokens are never part of a
 * URL or an error message.
 *
 * Security: TLS verification stays on unless the caller named the registry
 * insecure (then, and only then, plain HTTP is allowed); redirects (blob
 * storage) may not downgrade to HTTP; neither the bearer token nor Basic
 * credentials are sent to a redirected-to host (curl drops
 * CURLOPT_XOAUTH2_BEARER and CURLOPT_USERNAME/PASSWORD across hosts unless
 * CURLOPT_UNRESTRICTED_AUTH, which is never set);
 * manifests are limited to 4 MiB, configs to 16 MiB and layers to the size
 * their descriptor states; every blob's sha256 is checked before it is
 * staged, and nothing reaches the store until the whole image verified.
 */
#include "runtime/image.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "lib/http.h"
#include "lib/cleanup.h"
#include "lib/file.h"
#include "runtime/image_internal.h"

#define ERRBODY_MAX 4096
#define TOKEN_MAX   (1u << 20)
#define USER_AGENT  "cubelet"

static const char *const manifest_accept = "Accept: " RT_MT_OCI_INDEX ", " RT_MT_OCI_MANIFEST
                                           ", " RT_MT_DOCKER_LIST ", " RT_MT_DOCKER_MANIFEST;

struct pull_session {
        CURL *curl;
        struct rt_store *store;
        struct rt_image_ref ref;
        char base[1024]; /* scheme://host/v2/<path> */
        int insecure;
        const struct rt_registry_auth *auth; /* NULL: anonymous */
        int basic;                           /* the registry asked for Basic auth */
        char *token;                         /* the Bearer token, once fetched */
        char curl_err[CURL_ERROR_SIZE];
};

static bool have_auth(const struct rt_registry_auth *a)
{
        return a != NULL && a->username != NULL && a->username[0] && a->password != NULL &&
               a->password[0];
}

/* One response: headers parsed as they arrive, the body either fed to a
 * handler (2xx) or kept for the error message. */
struct http_response {
        long status;
        char content_type[256];
        char www_auth[2048];
        char docker_digest[128];
        /* 2xx body handler; mem collects the body when it is NULL */
        int (*on_body)(void *ctx, const void *data, size_t len, struct cb_error *err);
        void *body_ctx;
        char *mem;
        size_t memlen, memlimit;
        int body_failed;
        struct cb_error body_err;
        struct pull_session *session;
};

static void response_reset(struct http_response *r)
{
        r->status = 0;
        r->content_type[0] = r->www_auth[0] = r->docker_digest[0] = '\0';
        r->memlen = 0;
}

static void copy_header_value(char *dst, size_t size, const char *v, size_t len)
{
        while (len > 0 && (*v == ' ' || *v == '\t')) {
                v++;
                len--;
        }
        while (len > 0 && (v[len - 1] == '\r' || v[len - 1] == '\n' || v[len - 1] == ' '))
                len--;
        if (len >= size)
                len = size - 1;
        memcpy(dst, v, len);
        dst[len] = '\0';
}

static size_t on_header(char *buf, size_t size, size_t n, void *ud)
{
        struct http_response *r = ud;
        size_t len = size * n;
        static const struct {
                const char *name;
                size_t off, size;
        } hs[] = {
            {"content-type:", offsetof(struct http_response, content_type), 256},
            {"www-authenticate:", offsetof(struct http_response, www_auth), 2048},
            {"docker-content-digest:", offsetof(struct http_response, docker_digest), 128},
        };
        if (len >= 5 && strncmp(buf, "HTTP/", 5) == 0) { /* a new response (redirect) */
                response_reset(r);
                return len;
        }
        for (size_t i = 0; i < CB_ARRAY_SIZE(hs); i++) {
                size_t nl = strlen(hs[i].name);
                if (len > nl && strncasecmp(buf, hs[i].name, nl) == 0)
                        copy_header_value((char *)r + hs[i].off, hs[i].size, buf + nl, len - nl);
        }
        return len;
}

static int mem_append(struct http_response *r, const void *data, size_t len)
{
        if (r->memlen + len > r->memlimit)
                return -1;
        char *m = realloc(r->mem, r->memlen + len + 1);
        if (m == NULL)
                return -1;
        r->mem = m;
        memcpy(r->mem + r->memlen, data, len);
        r->memlen += len;
        r->mem[r->memlen] = '\0';
        return 0;
}

static size_t on_write(char *buf, size_t size, size_t n, void *ud)
{
        struct http_response *r = ud;
        size_t len = size * n;
        long status = 0;
        curl_easy_getinfo(r->session->curl, CURLINFO_RESPONSE_CODE, &status);
        if (status < 200 || status > 299 || r->on_body == NULL) {
                size_t limit = r->on_body == NULL && status >= 200 && status <= 299 ? r->memlimit
                                                                                    : ERRBODY_MAX;
                size_t keep =
                    r->memlen + len > limit ? (limit > r->memlen ? limit - r->memlen : 0) : len;
                if (status >= 200 && status <= 299 && keep < len) {
                        cb_error_set(&r->body_err, EFBIG,
                                     "response is larger than the limit of %zu bytes", limit);
                        r->body_failed = 1;
                        return 0;
                }
                size_t saved = r->memlimit;
                r->memlimit = limit;
                int ok = mem_append(r, buf, keep) == 0;
                r->memlimit = saved;
                return ok ? len : 0;
        }
        if (r->on_body(r->body_ctx, buf, len, &r->body_err) < 0) {
                r->body_failed = 1;
                return 0;
        }
        return len;
}

static curl_socket_t open_socket_cloexec(void *ud, curlsocktype purpose, struct curl_sockaddr *addr)
{
        (void)ud;
        (void)purpose;
        return socket(addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);
}

/* The registry's error message from a JSON error body, if any. */
static void body_message(const struct http_response *r, char *buf, size_t size)
{
        buf[0] = '\0';
        if (r->mem == NULL)
                return;
        _cleanup_cjson_ cJSON *j = cJSON_ParseWithLength(r->mem, r->memlen);
        const cJSON *e0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "errors"), 0);
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(e0, "message");
        if (cJSON_IsString(m))
                snprintf(buf, size, ": %s", m->valuestring);
}

/* The request builder: one GET, no retry; bearer or basic (or neither)
 * authenticates it. */
static int http_perform(struct pull_session *s, const char *url, const char *accept,
                        const char *bearer, const struct rt_registry_auth *basic,
                        struct http_response *r, struct cb_error *err)
{
        CURL *c = s->curl;
        struct curl_slist *hdrs = NULL;
        if (accept != NULL && (hdrs = curl_slist_append(NULL, accept)) == NULL)
                return cb_error_set(err, ENOMEM, "GET %s", url);
        const char *protos = s->insecure ? "http,https" : "https";
        curl_easy_reset(c);
        response_reset(r);
        r->session = s;
        s->curl_err[0] = '\0';
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, protos);
        curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, protos);
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
        curl_easy_setopt(c, CURLOPT_USERAGENT, USER_AGENT);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, s->curl_err);
        curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_socket_cloexec);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
        if (bearer != NULL) {
                curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
                curl_easy_setopt(c, CURLOPT_XOAUTH2_BEARER, bearer);
        } else if (basic != NULL) {
                curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
                curl_easy_setopt(c, CURLOPT_USERNAME, basic->username);
                curl_easy_setopt(c, CURLOPT_PASSWORD, basic->password);
        }
        CURLcode rc = curl_easy_perform(c);
        curl_slist_free_all(hdrs);
        if (r->body_failed) {
                cb_error_set(err, r->body_err.code, "%s", r->body_err.msg);
                return cb_error_prefix(err, "GET %s", url);
        }
        if (rc != CURLE_OK)
                return cb_error_set(err, 0, "GET %s: %s", url,
                                    s->curl_err[0] ? s->curl_err : curl_easy_strerror(rc));
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
        return 0;
}

/* Parses key="value" pairs of a Bearer challenge. */
static void challenge_param(const char *ch, const char *key, char *buf, size_t size)
{
        buf[0] = '\0';
        size_t kl = strlen(key);
        for (const char *p = ch; (p = strcasestr(p, key)) != NULL; p += kl) {
                if ((p != ch && p[-1] != ' ' && p[-1] != ',') || p[kl] != '=')
                        continue;
                const char *v = p + kl + 1;
                size_t len;
                if (*v == '"') {
                        v++;
                        const char *end = strchr(v, '"');
                        len = end != NULL ? (size_t)(end - v) : strlen(v);
                } else {
                        len = strcspn(v, ",");
                }
                if (len >= size)
                        len = size - 1;
                memcpy(buf, v, len);
                buf[len] = '\0';
                return;
        }
}

#define PULL_ACCESS_DENIED                                                                         \
        "pull access denied, repository does not exist or may require authorization"

/* The Bearer challenge: GET the realm with service and scope (Basic auth
 * with the credential, if any), keep the token. */
static int fetch_token(struct pull_session *s, const char *challenge, struct cb_error *err)
{
        char realm[1024], service[512], scope[768];
        challenge_param(challenge, "realm", realm, sizeof(realm));
        challenge_param(challenge, "service", service, sizeof(service));
        challenge_param(challenge, "scope", scope, sizeof(scope));
        if (scope[0] == '\0')
                snprintf(scope, sizeof(scope), "repository:%s:pull", s->ref.path);
        if (strncmp(realm, "https://", 8) != 0 &&
            !(s->insecure && strncmp(realm, "http://", 7) == 0))
                return cb_error_set(err, 0, "registry %s: token realm \"%s\" is not an https URL",
                                    s->ref.domain, realm);
        char *esc_service = curl_easy_escape(s->curl, service, 0);
        char *esc_scope = curl_easy_escape(s->curl, scope, 0);
        char url[4096];
        snprintf(url, sizeof(url), "%s%sservice=%s&scope=%s", realm, strchr(realm, '?') ? "&" : "?",
                 esc_service ? esc_service : "", esc_scope ? esc_scope : "");
        curl_free(esc_service);
        curl_free(esc_scope);
        bool creds = have_auth(s->auth);
        /* containerd's words: "oauth" when it had a credential to send */
        const char *what =
            creds ? "failed to fetch oauth token" : "failed to fetch anonymous token";
        struct http_response r = {.memlimit = TOKEN_MAX};
        int ret =
            http_perform(s, url, "Accept: application/json", NULL, creds ? s->auth : NULL, &r, err);
        if (ret < 0)
                cb_error_prefix(err, "failed to authorize: %s", what);
        else if (r.status != 200)
                ret = cb_error_set(err, 0,
                                   "failed to authorize: %s: unexpected status from GET request to "
                                   "%s: %ld %s",
                                   what, url, r.status, cb_http_reason_phrase(r.status));
        if (ret == 0) {
                _cleanup_cjson_ cJSON *j = cJSON_ParseWithLength(r.mem ? r.mem : "", r.memlen);
                const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "token");
                if (!cJSON_IsString(t))
                        t = cJSON_GetObjectItemCaseSensitive(j, "access_token");
                if (!cJSON_IsString(t) || t->valuestring[0] == '\0')
                        ret = cb_error_set(err, 0,
                                           "failed to authorize: %s: GET %s: no token in the "
                                           "response",
                                           what, realm);
                else if ((free(s->token), s->token = strdup(t->valuestring)) == NULL)
                        ret = cb_error_set(err, ENOMEM, "token");
        }
        free(r.mem);
        return ret;
}

/* The 401 handler: 1 to send the request again (now with a credential or
 * token), 0 when there is nothing to try (the 401 is the answer), -1 on an
 * error. */
static int on_challenge(struct pull_session *s, const char *challenge, struct cb_error *err)
{
        if (strncasecmp(challenge, "Bearer ", 7) == 0)
                return fetch_token(s, challenge + 7, err) < 0 ? -1 : 1;
        if (strncasecmp(challenge, "Basic", 5) == 0 &&
            (challenge[5] == '\0' || challenge[5] == ' ')) {
                if (!have_auth(s->auth))
                        return cb_error_set(err, 0,
                                            PULL_ACCESS_DENIED
                                            ": authorization failed: no basic auth credentials");
                if (s->basic)
                        return 0; /* sent and refused: a wrong credential */
                s->basic = 1;
                return 1;
        }
        return 0; /* a scheme we cannot answer */
}

/* GET with the registry's authentication (above): a 401 gets its challenge
 * answered and one retry. Non-2xx ends in an error naming the URL. */
static int http_get(struct pull_session *s, const char *url, const char *accept,
                    struct http_response *r, struct cb_error *err)
{
        for (int attempt = 0;; attempt++) {
                const struct rt_registry_auth *basic = s->basic ? s->auth : NULL;
                if (http_perform(s, url, accept, s->token, basic, r, err) < 0)
                        return -1;
                if (r->status == 401 && attempt == 0 && r->www_auth[0] != '\0') {
                        char ch[2048];
                        snprintf(ch, sizeof(ch), "%s", r->www_auth);
                        int again = on_challenge(s, ch, err);
                        if (again < 0)
                                return -1;
                        if (again) {
                                r->memlen = 0;
                                continue;
                        }
                }
                break;
        }
        if (r->status >= 200 && r->status <= 299)
                return 0;
        char msg[512];
        body_message(r, msg, sizeof(msg));
        if (r->status == 401 && s->token != NULL && strncasecmp(r->www_auth, "Bearer ", 7) == 0) {
                /* A fresh token and still refused: the registry's error
                 * (insufficient_scope, invalid_token) says why. */
                char e[256];
                challenge_param(r->www_auth + 7, "error", e, sizeof(e));
                if (e[0] != '\0')
                        return cb_error_set(
                            err, 0, PULL_ACCESS_DENIED ": server message: %s: authorization failed",
                            e);
        }
        if (r->status == 401 || r->status == 403) /* containerd's words, without the body */
                return cb_error_set(err, 0, "unexpected status from GET request to %s: %ld %s", url,
                                    r->status, cb_http_reason_phrase(r->status));
        if (r->status == 404)
                return cb_error_set(err, ENOENT, "GET %s: not found (HTTP 404)%s", url, msg);
        return cb_error_set(err, 0, "GET %s: HTTP %ld%s", url, r->status, msg);
}

static int sink_body(void *ctx, const void *data, size_t len, struct cb_error *err)
{
        return rt_sink_write(ctx, data, len, err);
}

/* GETs a manifest or blob into a verified staged blob. */
static int fetch_verified(struct pull_session *s, const char *kind, const char *ref_or_digest,
                          const char *expected, int64_t size, uint64_t limit,
                          char ret_digest[RT_DIGEST_LEN + 1], char *ret_content_type,
                          size_t ct_size, struct cb_error *err)
{
        char url[2048];
        snprintf(url, sizeof(url), "%s/%s/%s", s->base, kind, ref_or_digest);
        struct rt_sink k;
        if (rt_sink_open(&k, s->store, limit, err) < 0)
                return -1;
        struct http_response r = {.on_body = sink_body, .body_ctx = &k};
        int manifest = strcmp(kind, "manifests") == 0;
        int ret = http_get(s, url, manifest ? manifest_accept : NULL, &r, err);
        free(r.mem);
        if (ret < 0) {
                rt_sink_discard(&k);
                return -1;
        }
        if (rt_sink_finish(&k, expected, size, ret_digest, err) < 0)
                return cb_error_prefix(err, "%s", url);
        /* A tag has no digest to check against; the registry's own claim
         * must at least agree with what it sent. */
        if (manifest && expected == NULL && rt_digest_valid(r.docker_digest) &&
            strcmp(r.docker_digest, ret_digest) != 0)
                return cb_error_set(err, 0,
                                    "%s: digest mismatch: the registry says %s, the content is %s",
                                    url, r.docker_digest, ret_digest);
        if (ret_content_type != NULL)
                snprintf(ret_content_type, ct_size, "%s", r.content_type);
        return 0;
}

static int read_staged(struct pull_session *s, const char *digest, size_t max, char **ret,
                       size_t *ret_len, struct cb_error *err)
{
        char p[4200];
        if (rt_store_find_blob(s->store, digest, p, sizeof(p)) < 0)
                return cb_error_set(err, ENOENT, "blob %s is missing", digest);
        return cb_read_file(p, max, ret, ret_len, err);
}

static int pull_image(struct pull_session *s, const char *arch, const char *canon,
                      struct cb_error *err)
{
        char digest[RT_DIGEST_LEN + 1], ct[256];
        const char *first = s->ref.digest[0] ? s->ref.digest : s->ref.tag;
        if (fetch_verified(s, "manifests", first, s->ref.digest[0] ? s->ref.digest : NULL, -1,
                           RT_MANIFEST_MAX, digest, ct, sizeof(ct), err) < 0)
                return cb_error_prefix(err, "failed to resolve reference \"%s\"", canon);
        _cleanup_free_ char *json = NULL;
        size_t len;
        for (int depth = 0;; depth++) {
                int is_index;
                free(json);
                json = NULL;
                if (read_staged(s, digest, RT_MANIFEST_MAX, &json, &len, err) < 0 ||
                    rt_manifest_is_index(json, len, ct, &is_index, err) < 0)
                        return cb_error_prefix(err, "manifest %s", digest);
                if (!is_index)
                        break;
                struct rt_descriptor d;
                if (depth >= RT_INDEX_DEPTH_MAX || rt_index_select(json, len, arch, &d, err) < 0)
                        return cb_error_prefix(err, "image %s", canon);
                char sub[RT_DIGEST_LEN + 1];
                if (fetch_verified(s, "manifests", d.digest, d.digest, d.size, RT_MANIFEST_MAX, sub,
                                   ct, sizeof(ct), err) < 0)
                        return -1;
                snprintf(digest, sizeof(digest), "%s", sub);
        }
        struct rt_manifest m;
        if (rt_manifest_parse(json, len, &m, err) < 0)
                return cb_error_prefix(err, "manifest %s", digest);
        char got[RT_DIGEST_LEN + 1], p[4200];
        int ret = fetch_verified(s, "blobs", m.config.digest, m.config.digest, m.config.size,
                                 RT_CONFIG_MAX, got, NULL, 0, err);
        for (size_t i = 0; ret == 0 && i < m.n_layers; i++) {
                if (rt_store_find_blob(s->store, m.layers[i].digest, p, sizeof(p)) == 0)
                        continue; /* verified when it was stored */
                ret = fetch_verified(s, "blobs", m.layers[i].digest, m.layers[i].digest,
                                     m.layers[i].size, (uint64_t)m.layers[i].size + 1, got, NULL, 0,
                                     err);
        }
        if (ret == 0)
                ret = rt_store_commit(s->store, canon, digest, &m, err);
        rt_manifest_free(&m);
        return ret;
}

/* Appends msg to the aggregate unless an earlier attempt said the same
 * (k8s.io/apimachinery's utilerrors aggregate drops repeated messages). */
static void aggregate_add(char *agg, size_t size, size_t *n, const char *msg)
{
        size_t ml = strlen(msg);
        for (const char *p = agg; (p = strstr(p, msg)) != NULL; p++)
                if ((p == agg || (p - agg >= 2 && p[-2] == ',' && p[-1] == ' ')) &&
                    (p[ml] == '\0' || (p[ml] == ',' && p[ml + 1] == ' ')))
                        return;
        size_t len = strlen(agg), sep = *n ? 2 : 0;
        if (len + sep + 1 >= size)
                return;
        size_t room = size - len - sep - 1, take = ml < room ? ml : room;
        memcpy(agg + len, ", ", sep);
        memcpy(agg + len + sep, msg, take);
        agg[len + sep + take] = '\0';
        (*n)++;
}

#define PULL_AUTHS_MAX 16

int rt_image_pull(const char *root_dir, const char *ref, const struct rt_pull_opts *opts,
                  char **ret_ref, struct cb_error *err)
{
        struct pull_session s = {0};
        char canon[RT_REF_STR_MAX + 1];
        if (rt_image_ref_parse(ref, &s.ref, err) < 0)
                return -1;
        rt_image_ref_format(&s.ref, canon, sizeof(canon));
        for (size_t i = 0; opts != NULL && i < opts->n_insecure; i++)
                if (strcmp(opts->insecure_registries[i], s.ref.domain) == 0)
                        s.insecure = 1;
        const char *host =
            strcmp(s.ref.domain, "docker.io") == 0 ? "registry-1.docker.io" : s.ref.domain;
        snprintf(s.base, sizeof(s.base), "%s://%s/v2/%s", s.insecure ? "http" : "https", host,
                 s.ref.path);
        const char *arch = opts != NULL && opts->arch != NULL ? opts->arch : rt_host_arch();
        size_t n_auths = opts != NULL && opts->auths != NULL ? opts->n_auths : 0;
        if (n_auths > PULL_AUTHS_MAX)
                n_auths = PULL_AUTHS_MAX;

        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                return cb_error_set(err, 0, "cannot initialise libcurl");
        s.curl = curl_easy_init();
        if (s.curl == NULL)
                return cb_error_set(err, ENOMEM, "cannot initialise libcurl");
        struct rt_store store;
        int ret = rt_store_open(root_dir, &store, err);
        if (ret == 0) {
                store.unpack_helper = opts != NULL ? opts->unpack_helper : NULL;
                s.store = &store;
                /* One pull per credential until one works, as the kubelet
                 * calls the CRI's PullImage once per matching credential. */
                char agg[CB_ERROR_MSG_MAX] = "";
                size_t n_seen = 0;
                for (size_t i = 0; i < (n_auths ? n_auths : 1); i++) {
                        struct cb_error e = {0};
                        s.auth = n_auths ? &opts->auths[i] : NULL;
                        s.basic = 0;
                        free(s.token);
                        s.token = NULL;
                        ret = pull_image(&s, arch, canon, &e);
                        if (ret == 0)
                                break;
                        cb_error_prefix(&e, "failed to pull and unpack image \"%s\"", canon);
                        *err = e;
                        aggregate_add(agg, sizeof(agg), &n_seen, e.msg);
                }
                if (ret < 0 && n_seen > 1)
                        cb_error_set(err, 0, "[%.1020s]", agg);
                rt_store_close(&store);
        } else {
                cb_error_prefix(err, "failed to pull and unpack image \"%s\"", canon);
        }
        curl_easy_cleanup(s.curl);
        free(s.token);
        if (ret < 0)
                return -1;
        if (ret_ref != NULL && (*ret_ref = strdup(canon)) == NULL)
                return cb_error_set(err, ENOMEM, "pull %s", canon);
        return 0;
}
