/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/client/kubeconfig.h"

#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include "agent/k8s/k8s.h"
#include "lib/cleanup.h"
#include "lib/base64.h"
#include "lib/file.h"

#define MAX_TOKEN_FILE_BYTES (64u << 10)

int ag_base64_decode(const char *in, size_t len, struct ag_blob *ret, struct cb_error *err)
{
        _cleanup_free_ char *out = malloc(cb_base64_max(len));
        size_t bad = 0;
        if (out == NULL)
                return cb_error_set(err, ENOMEM, "out of memory decoding base64");
        ssize_t n =
            cb_base64_decode(in, len, CB_B64_SKIP_SPACE | CB_B64_PAD_OPTIONAL | CB_B64_STRICT_BITS,
                             (unsigned char *)out, &bad);
        if (n < 0)
                return cb_error_set(err, 0, "invalid base64 data at input byte %zu", bad);
        ret->data = steal_pointer(&out);
        ret->len = (size_t)n;
        return 0;
}

static const cJSON *named(const cJSON *list, const char *what, const char *name,
                          struct cb_error *err)
{
        const cJSON *it;
        if (list != NULL && !cJSON_IsArray(list)) {
                cb_error_set(err, 0, "%s: must be a list", what);
                return NULL;
        }
        cJSON_ArrayForEach(it, list)
        {
                const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "name");
                if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0) {
                        const cJSON *body = cJSON_GetObjectItemCaseSensitive(
                            it, strcmp(what, "clusters") == 0 ? "cluster"
                                : strcmp(what, "users") == 0  ? "user"
                                                              : "context");
                        if (!cJSON_IsObject(body)) {
                                cb_error_set(err, 0, "%s[name=%s]: has no %.*s map", what, name,
                                             (int)strlen(what) - 1, what);
                                return NULL;
                        }
                        return body;
                }
        }
        cb_error_set(err, 0, "%s: no entry named \"%s\"", what, name);
        return NULL;
}

/* A string field that may be absent (ret NULL). */
static int opt_string(const cJSON *obj, const char *key, const char *where, char **ret,
                      struct cb_error *err)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
        *ret = NULL;
        if (v == NULL || cJSON_IsNull(v))
                return 0;
        if (!cJSON_IsString(v))
                return cb_error_set(err, 0, "%s.%s: must be a string", where, key);
        if (v->valuestring[0] == '\0')
                return 0;
        *ret = strdup(v->valuestring);
        if (*ret == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        return 0;
}

static int resolve_path(const char *base_dir, char **p, struct cb_error *err)
{
        if (*p == NULL || (*p)[0] == '/' || base_dir == NULL)
                return 0;
        char *full;
        if (asprintf(&full, "%s/%s", base_dir, *p) < 0)
                return cb_error_set(err, ENOMEM, "out of memory");
        free(*p);
        *p = full;
        return 0;
}

static int opt_data(const cJSON *obj, const char *key, const char *where, struct ag_blob *ret,
                    struct cb_error *err)
{
        _cleanup_free_ char *s = NULL;
        if (opt_string(obj, key, where, &s, err) < 0)
                return -1;
        if (s == NULL)
                return 0;
        if (ag_base64_decode(s, strlen(s), ret, err) < 0)
                return cb_error_prefix(err, "%s.%s", where, key);
        return 0;
}

static int parse_cluster(const cJSON *c, const char *base, struct ag_kubeconfig *kc,
                         struct cb_error *err)
{
        const char *where = "cluster";
        if (opt_string(c, "server", where, &kc->server, err) < 0 ||
            opt_string(c, "certificate-authority", where, &kc->ca_file, err) < 0 ||
            opt_data(c, "certificate-authority-data", where, &kc->ca_data, err) < 0 ||
            resolve_path(base, &kc->ca_file, err) < 0)
                return -1;
        if (kc->server == NULL)
                return cb_error_set(err, 0,
                                    "cluster.server: required (the apiserver URL, "
                                    "e.g. https://10.0.0.1:6443)");
        if (strncmp(kc->server, "https://", 8) != 0 && strncmp(kc->server, "http://", 7) != 0)
                return cb_error_set(err, 0, "cluster.server: \"%s\" is not an http(s) URL",
                                    kc->server);
        size_t n = strlen(kc->server);
        while (n > 0 && kc->server[n - 1] == '/')
                kc->server[--n] = '\0';
        const cJSON *ins = cJSON_GetObjectItemCaseSensitive(c, "insecure-skip-tls-verify");
        if (ins != NULL && !cJSON_IsBool(ins) && !cJSON_IsNull(ins))
                return cb_error_set(err, 0,
                                    "cluster.insecure-skip-tls-verify: must be true "
                                    "or false");
        kc->insecure_skip_tls_verify = cJSON_IsTrue(ins);
        return 0;
}

static int parse_user(const cJSON *u, const char *base, struct ag_kubeconfig *kc,
                      struct cb_error *err)
{
        const char *where = "user";
        if (opt_string(u, "client-certificate", where, &kc->cert_file, err) < 0 ||
            opt_string(u, "client-key", where, &kc->key_file, err) < 0 ||
            opt_data(u, "client-certificate-data", where, &kc->cert_data, err) < 0 ||
            opt_data(u, "client-key-data", where, &kc->key_data, err) < 0 ||
            opt_string(u, "token", where, &kc->token, err) < 0 ||
            opt_string(u, "tokenFile", where, &kc->token_file, err) < 0 ||
            resolve_path(base, &kc->cert_file, err) < 0 ||
            resolve_path(base, &kc->key_file, err) < 0 ||
            resolve_path(base, &kc->token_file, err) < 0)
                return -1;
        if (cJSON_GetObjectItemCaseSensitive(u, "exec") != NULL ||
            cJSON_GetObjectItemCaseSensitive(u, "auth-provider") != NULL)
                return cb_error_set(err, 0,
                                    "user: exec and auth-provider credential plugins "
                                    "are not supported; use a client certificate or "
                                    "a token");
        bool has_cert = kc->cert_file != NULL || kc->cert_data.data != NULL;
        bool has_key = kc->key_file != NULL || kc->key_data.data != NULL;
        if (has_cert != has_key)
                return cb_error_set(err, 0,
                                    "user: client-certificate%s needs client-key%s "
                                    "(both or neither)",
                                    has_cert ? "" : " (missing)", has_key ? "" : " (missing)");
        /* client-go: token wins over tokenFile when both are set. */
        if (kc->token == NULL && kc->token_file != NULL) {
                char *buf;
                size_t len;
                if (cb_read_file(kc->token_file, MAX_TOKEN_FILE_BYTES, &buf, &len, err) < 0)
                        return cb_error_prefix(err, "user.tokenFile");
                while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r' ||
                                   buf[len - 1] == ' ' || buf[len - 1] == '\t'))
                        buf[--len] = '\0';
                if (len == 0 || memchr(buf, '\n', len) != NULL) {
                        free(buf);
                        return cb_error_set(err, 0,
                                            "user.tokenFile: %s must hold one token "
                                            "on one line",
                                            kc->token_file);
                }
                kc->token = buf;
        }
        return 0;
}

static int parse_tree(const cJSON *root, const char *base, const char *ctx_name,
                      struct ag_kubeconfig *kc, struct cb_error *err)
{
        if (!cJSON_IsObject(root))
                return cb_error_set(err, 0, "not a kubeconfig: the document is not a map");
        if (ctx_name == NULL) {
                const cJSON *cur = cJSON_GetObjectItemCaseSensitive(root, "current-context");
                if (!cJSON_IsString(cur) || cur->valuestring[0] == '\0')
                        return cb_error_set(err, 0,
                                            "current-context: not set (name the "
                                            "context to use)");
                ctx_name = cur->valuestring;
        }
        kc->context = strdup(ctx_name);
        const cJSON *ctx =
            named(cJSON_GetObjectItemCaseSensitive(root, "contexts"), "contexts", ctx_name, err);
        if (kc->context == NULL || ctx == NULL)
                return -1;
        if (opt_string(ctx, "cluster", "context", &kc->cluster_name, err) < 0 ||
            opt_string(ctx, "user", "context", &kc->user_name, err) < 0)
                return -1;
        if (kc->cluster_name == NULL)
                return cb_error_set(err, 0, "contexts[name=%s].context.cluster: required",
                                    ctx_name);
        const cJSON *cl = named(cJSON_GetObjectItemCaseSensitive(root, "clusters"), "clusters",
                                kc->cluster_name, err);
        if (cl == NULL || parse_cluster(cl, base, kc, err) < 0)
                return cb_error_prefix(err, "clusters[name=%s]", kc->cluster_name);
        if (kc->user_name != NULL) {
                const cJSON *u = named(cJSON_GetObjectItemCaseSensitive(root, "users"), "users",
                                       kc->user_name, err);
                if (u == NULL || parse_user(u, base, kc, err) < 0)
                        return cb_error_prefix(err, "users[name=%s]", kc->user_name);
        }
        return 0;
}

int ag_kubeconfig_parse(const char *text, size_t len, const char *path, const char *context,
                        struct ag_kubeconfig *kc, struct cb_error *err)
{
        memset(kc, 0, sizeof(*kc));
        _cleanup_free_ char *base = NULL;
        if (path != NULL) {
                kc->path = strdup(path);
                _cleanup_free_ char *copy = strdup(path);
                if (kc->path == NULL || copy == NULL)
                        return cb_error_set(err, ENOMEM, "out of memory");
                base = strdup(dirname(copy));
        }
        _cleanup_cjson_ cJSON *root = NULL;
        int r = k8s_parse_text(text, len, &root, err);
        if (r == 0)
                r = parse_tree(root, base, context, kc, err);
        if (r < 0) {
                ag_kubeconfig_clear(kc);
                if (path != NULL)
                        cb_error_prefix(err, "kubeconfig %s", path);
                return -1;
        }
        return 0;
}

int ag_kubeconfig_load(const char *path, const char *context, struct ag_kubeconfig *kc,
                       struct cb_error *err)
{
        _cleanup_free_ char *buf = NULL;
        size_t len;
        memset(kc, 0, sizeof(*kc));
        if (cb_read_file(path, K8S_MAX_DOC_BYTES, &buf, &len, err) < 0)
                return cb_error_prefix(err, "kubeconfig");
        return ag_kubeconfig_parse(buf, len, path, context, kc, err);
}

static void blob_clear(struct ag_blob *b)
{
        if (b->data != NULL)
                explicit_bzero(b->data, b->len);
        free(b->data);
        b->data = NULL;
        b->len = 0;
}

void ag_kubeconfig_clear(struct ag_kubeconfig *kc)
{
        if (kc == NULL)
                return;
        free(kc->path);
        free(kc->context);
        free(kc->cluster_name);
        free(kc->user_name);
        free(kc->server);
        free(kc->ca_file);
        free(kc->cert_file);
        free(kc->key_file);
        free(kc->token_file);
        if (kc->token != NULL)
                explicit_bzero(kc->token, strlen(kc->token));
        free(kc->token);
        blob_clear(&kc->ca_data);
        blob_clear(&kc->cert_data);
        blob_clear(&kc->key_data);
        memset(kc, 0, sizeof(*kc));
}
