/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/nodeapi/proto.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include "lib/cleanup.h"

/* Copies the next '/'-separated segment of *p into buf; false when there
 * is none, it is empty or too long. */
static bool segment(const char **p, char *buf, size_t size)
{
        const char *s = *p;
        if (*s != '/')
                return false;
        s++;
        const char *e = strchrnul(s, '/');
        size_t n = (size_t)(e - s);
        if (n == 0 || n >= size)
                return false;
        memcpy(buf, s, n);
        buf[n] = '\0';
        *p = e;
        return true;
}

enum ag_napi_route ag_napi_route_path(const char *path, struct ag_napi_target *t)
{
        memset(t, 0, sizeof(*t));
        if (strcmp(path, "/healthz") == 0)
                return t->route = AG_NAPI_HEALTHZ;
        if (strcmp(path, "/pods") == 0 || strcmp(path, "/pods/") == 0)
                return t->route = AG_NAPI_PODS;
        if (strcmp(path, "/stats/summary") == 0 || strcmp(path, "/stats/summary/") == 0)
                return t->route = AG_NAPI_STATS_SUMMARY;
        if (strcmp(path, "/metrics/resource") == 0 || strcmp(path, "/metrics/resource/") == 0)
                return t->route = AG_NAPI_METRICS_RESOURCE;
        static const struct {
                const char *prefix;
                enum ag_napi_route route;
        } prefixes[] = {{"/containerLogs", AG_NAPI_LOGS},
                        {"/exec", AG_NAPI_EXEC},
                        {"/attach", AG_NAPI_ATTACH},
                        {"/portForward", AG_NAPI_PORTFORWARD}};
        for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
                size_t n = strlen(prefixes[i].prefix);
                if (strncmp(path, prefixes[i].prefix, n) != 0 || path[n] != '/')
                        continue;
                const char *p = path + n;
                char seg[4][AG_NAPI_NAME_MAX];
                int k = 0;
                while (*p != '\0' && k < 4) {
                        if (!segment(&p, seg[k], sizeof(seg[k])))
                                return t->route = AG_NAPI_NONE;
                        k++;
                }
                if (*p != '\0' && strcmp(p, "/") != 0)
                        return t->route = AG_NAPI_NONE;
                enum ag_napi_route r = prefixes[i].route;
                bool ok = false;
                if (r == AG_NAPI_LOGS && k == 3) {
                        ok = true;
                        snprintf(t->container, sizeof(t->container), "%s", seg[2]);
                } else if ((r == AG_NAPI_EXEC || r == AG_NAPI_ATTACH) && (k == 3 || k == 4)) {
                        ok = true;
                        if (k == 4)
                                snprintf(t->uid, sizeof(t->uid), "%s", seg[2]);
                        snprintf(t->container, sizeof(t->container), "%s", seg[k - 1]);
                } else if (r == AG_NAPI_PORTFORWARD && (k == 2 || k == 3)) {
                        ok = true;
                        if (k == 3)
                                snprintf(t->uid, sizeof(t->uid), "%s", seg[2]);
                }
                if (!ok)
                        return t->route = AG_NAPI_NONE;
                snprintf(t->ns, sizeof(t->ns), "%s", seg[0]);
                snprintf(t->pod, sizeof(t->pod), "%s", seg[1]);
                return t->route = r;
        }
        return t->route = AG_NAPI_NONE;
}

static int flag(const char *name, const char *v, bool *ret, struct cb_error *err)
{
        if (v == NULL || strcmp(v, "1") == 0 || strcmp(v, "true") == 0 || strcmp(v, "") == 0)
                *ret = true;
        else if (strcmp(v, "0") == 0 || strcmp(v, "false") == 0)
                *ret = false;
        else
                return cb_error_set(err, EINVAL, "%s: invalid value \"%s\" (want true or false)",
                                    name, v);
        return 0;
}

int ag_napi_exec_options_parse(const char *const *args, size_t n, bool need_command,
                               struct ag_napi_exec_options *ret, struct cb_error *err)
{
        struct ag_napi_exec_options o = {0};
        _cleanup_free_ const char **argv = calloc(n + 1, sizeof(*argv));
        if (argv == NULL)
                return cb_error_set(err, ENOMEM, "exec options");
        for (size_t i = 0; i < n; i++) {
                const char *a = args[i], *eq = strchr(a, '=');
                size_t nl = eq != NULL ? (size_t)(eq - a) : strlen(a);
                const char *v = eq != NULL ? eq + 1 : NULL;
                int r = 0;
#define IS(s) (nl == strlen(s) && strncmp(a, s, nl) == 0)
                if (IS("command")) {
                        argv[o.argc++] = v != NULL ? v : "";
                } else if (IS("stdin") || IS("input")) {
                        r = flag("stdin", v, &o.in, err);
                } else if (IS("stdout") || IS("output")) {
                        r = flag("stdout", v, &o.out, err);
                } else if (IS("stderr") || IS("error")) {
                        r = flag("stderr", v, &o.err, err);
                } else if (IS("tty")) {
                        r = flag("tty", v, &o.tty, err);
                }
#undef IS
                if (r < 0)
                        return -1;
        }
        if (!o.in && !o.out && !o.err)
                return cb_error_set(err, EINVAL,
                                    "you must specify at least 1 of stdin, stdout, "
                                    "stderr");
        if (o.tty && o.err)
                o.err = false; /* a terminal merges stderr into stdout */
        if (need_command && (o.argc == 0 || argv[0][0] == '\0'))
                return cb_error_set(err, EINVAL,
                                    "command: required value (pass command=... once "
                                    "per argument)");
        o.argv = steal_pointer(&argv);
        *ret = o;
        return 0;
}

enum ag_napi_channel_proto ag_napi_channel_proto_from_name(const char *name)
{
        if (name == NULL)
                return 0;
        if (strcmp(name, "v5.channel.k8s.io") == 0)
                return AG_NAPI_CHANNEL_V5;
        if (strcmp(name, "v4.channel.k8s.io") == 0)
                return AG_NAPI_CHANNEL_V4;
        if (strcmp(name, "channel.k8s.io") == 0)
                return AG_NAPI_CHANNEL_V1;
        return 0;
}

int ag_napi_channel_split(const uint8_t *msg, size_t len, uint8_t *ret_channel,
                          const uint8_t **ret_payload, size_t *ret_len)
{
        if (len == 0)
                return -1;
        *ret_channel = msg[0];
        *ret_payload = msg + 1;
        *ret_len = len - 1;
        return 0;
}

int ag_napi_parse_resize(const uint8_t *data, size_t len, uint16_t *ret_width, uint16_t *ret_height,
                         struct cb_error *err)
{
        _cleanup_cjson_ cJSON *o = cJSON_ParseWithLength((const char *)data, len);
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(o, "Width");
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(o, "Height");
        if (!cJSON_IsNumber(w) || !cJSON_IsNumber(h) || w->valuedouble < 0 || h->valuedouble < 0 ||
            w->valuedouble > 65535 || h->valuedouble > 65535)
                return cb_error_set(err, EINVAL,
                                    "resize message \"%.*s\": want {\"Width\":N,\"Height\":N}",
                                    (int)(len > 64 ? 64 : len), (const char *)data);
        *ret_width = (uint16_t)w->valuedouble;
        *ret_height = (uint16_t)h->valuedouble;
        return 0;
}

char *ag_napi_exec_status_json(int exit_code, const char *message)
{
        _cleanup_cjson_ cJSON *s = cJSON_CreateObject();
        cJSON_AddObjectToObject(s, "metadata");
        if (message == NULL && exit_code == 0) {
                cJSON_AddStringToObject(s, "status", "Success");
        } else if (message != NULL) {
                cJSON_AddStringToObject(s, "status", "Failure");
                cJSON_AddStringToObject(s, "message", message);
                cJSON_AddStringToObject(s, "reason", "InternalError");
                cJSON_AddNumberToObject(s, "code", 500);
        } else {
                char msg[128], code[16];
                snprintf(msg, sizeof(msg),
                         "command terminated with non-zero exit code: exit status %d", exit_code);
                snprintf(code, sizeof(code), "%d", exit_code);
                cJSON_AddStringToObject(s, "status", "Failure");
                cJSON_AddStringToObject(s, "message", msg);
                cJSON_AddStringToObject(s, "reason", "NonZeroExitCode");
                cJSON *d = cJSON_AddObjectToObject(s, "details");
                cJSON *causes = cJSON_AddArrayToObject(d, "causes");
                cJSON *c = cJSON_CreateObject();
                cJSON_AddStringToObject(c, "reason", "ExitCode");
                cJSON_AddStringToObject(c, "message", code);
                cJSON_AddItemToArray(causes, c);
        }
        return cJSON_PrintUnformatted(s);
}

static int hexval(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

int ag_napi_query_split(const char *query, size_t max, char ***ret, size_t *ret_n,
                        struct cb_error *err)
{
        char **v = NULL;
        size_t n = 0;
        const char *p = query != NULL ? query : "";
        while (*p != '\0') {
                const char *end = strchr(p, '&');
                size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
                if (len > 0) {
                        if (n == max) {
                                cb_error_set(err, E2BIG, "too many query parameters (at most %zu)",
                                             max);
                                goto fail;
                        }
                        char *s = malloc(len + 1), *o = s;
                        char **nv = s != NULL ? realloc(v, (n + 1) * sizeof(*v)) : NULL;
                        if (nv == NULL) {
                                free(s);
                                cb_error_set(err, ENOMEM, "query");
                                goto fail;
                        }
                        v = nv;
                        v[n++] = s;
                        for (size_t i = 0; i < len; i++) {
                                char c = p[i];
                                if (c == '+') {
                                        c = ' ';
                                } else if (c == '%') {
                                        int h1 = i + 1 < len ? hexval(p[i + 1]) : -1;
                                        int h2 = i + 2 < len ? hexval(p[i + 2]) : -1;
                                        if (h1 < 0 || h2 < 0 || (h1 == 0 && h2 == 0)) {
                                                *o = '\0';
                                                cb_error_set(err, EINVAL,
                                                             "invalid escape in the query "
                                                             "parameter \"%.*s\"",
                                                             (int)(len > 64 ? 64 : len), p);
                                                goto fail;
                                        }
                                        c = (char)(h1 * 16 + h2);
                                        i += 2;
                                }
                                *o++ = c;
                        }
                        *o = '\0';
                }
                if (end == NULL)
                        break;
                p = end + 1;
        }
        *ret = v;
        *ret_n = n;
        return 0;
fail:
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
        return -1;
}

int ag_napi_ws_accept(const char *key, char out[32])
{
        static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
        char buf[256];
        int n = snprintf(buf, sizeof(buf), "%s%s", key, guid);
        if (n < 0 || (size_t)n >= sizeof(buf))
                return -1;
        unsigned char md[SHA_DIGEST_LENGTH];
        SHA1((const unsigned char *)buf, (size_t)n, md);
        EVP_EncodeBlock((unsigned char *)out, md, SHA_DIGEST_LENGTH);
        return 0;
}

const char *ag_napi_negotiate(const char *offered, const char *const *supported)
{
        const char *p = offered != NULL ? offered : "";
        while (*p != '\0') {
                while (*p == ' ' || *p == ',' || *p == '\t')
                        p++;
                size_t len = strcspn(p, ",");
                size_t l = len;
                while (l > 0 && (p[l - 1] == ' ' || p[l - 1] == '\t'))
                        l--;
                for (size_t i = 0; l > 0 && supported[i] != NULL; i++)
                        if (strlen(supported[i]) == l && strncmp(p, supported[i], l) == 0)
                                return supported[i];
                p += len;
        }
        return NULL;
}

size_t ag_napi_json_object_len(const uint8_t *buf, size_t len)
{
        int depth = 0;
        bool in_str = false, esc = false;
        for (size_t i = 0; i < len; i++) {
                uint8_t c = buf[i];
                if (in_str) {
                        if (esc)
                                esc = false;
                        else if (c == '\\')
                                esc = true;
                        else if (c == '"')
                                in_str = false;
                        continue;
                }
                if (c == '"')
                        in_str = true;
                else if (c == '{')
                        depth++;
                else if (c == '}' && --depth == 0)
                        return i + 1;
        }
        return 0;
}
