/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/k8s/keyring.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lib/base64.h"

/* Standard base64 (padding optional); NULL when it is not. */
static char *b64_decode(struct cb_arena *a, const char *in)
{
        size_t n = strlen(in);
        char *out = cb_arena_alloc(a, cb_base64_max(n));
        if (out == NULL || cb_base64_decode(in, n, CB_B64_SKIP_NEWLINES | CB_B64_PAD_OPTIONAL,
                                            (unsigned char *)out, NULL) < 0)
                return NULL;
        return out;
}

/* "https://host:port/path/" -> "host:port/path"; a path of /v1/ or /v2/
 * counts as the host alone (docker's ResolveAuthConfig, as the kubelet). */
static char *normalize_key(struct cb_arena *a, const char *key)
{
        const char *p = strstr(key, "://");
        p = p ? p + 3 : key;
        const char *slash = strchr(p, '/');
        size_t hl = slash ? (size_t)(slash - p) : strlen(p);
        const char *path = slash ? slash : "";
        if (strncmp(path, "/v1/", 4) == 0 || strncmp(path, "/v2/", 4) == 0)
                path += 3;
        size_t pl = strlen(path);
        while (pl > 0 && path[pl - 1] == '/')
                pl--;
        char *k = cb_arena_printf(a, "%.*s%.*s", (int)hl, p, (int)pl, path);
        /* Docker Hub's keys: index.docker.io (the legacy /v1/ one) */
        if (k && strcmp(k, "index.docker.io") == 0)
                k = cb_arena_strdup(a, "docker.io");
        return k;
}

static int add(struct k8s_keyring *k, const char *key, const char *user, const char *pass,
               int origin)
{
        if (k->n == k->cap) {
                size_t cap = k->cap ? k->cap * 2 : 8;
                struct k8s_registry_cred *v = cb_arena_calloc(k->a, cap, sizeof(*v));
                if (v == NULL)
                        return -1;
                if (k->n)
                        memcpy(v, k->v, k->n * sizeof(*v));
                k->v = v;
                k->cap = cap;
        }
        k->v[k->n++] = (struct k8s_registry_cred){key, user, pass, origin};
        return 0;
}

static int add_entries(struct k8s_keyring *k, const cJSON *map, int origin, const char *source,
                       struct cb_error *err)
{
        const cJSON *e;
        cJSON_ArrayForEach(e, map)
        {
                if (!cJSON_IsObject(e) || e->string == NULL)
                        return cb_error_set(err, 0, "%s: entry %s: want an object", source,
                                            e->string ? e->string : "?");
                const cJSON *auth = cJSON_GetObjectItemCaseSensitive(e, "auth");
                const cJSON *u = cJSON_GetObjectItemCaseSensitive(e, "username");
                const cJSON *p = cJSON_GetObjectItemCaseSensitive(e, "password");
                const char *user = cJSON_IsString(u) ? u->valuestring : "";
                const char *pass = cJSON_IsString(p) ? p->valuestring : "";

                if (cJSON_IsString(auth) && auth->valuestring[0]) {
                        char *d = b64_decode(k->a, auth->valuestring);
                        char *colon = d ? strchr(d, ':') : NULL;
                        if (colon == NULL)
                                return cb_error_set(err, 0,
                                                    "%s: entry %s: auth is not base64 of "
                                                    "user:password",
                                                    source, e->string);
                        *colon = '\0';
                        user = d;
                        pass = colon + 1;
                }
                char *key = normalize_key(k->a, e->string);
                char *cu = cb_arena_strdup(k->a, user), *cp = cb_arena_strdup(k->a, pass);
                if (key == NULL || cu == NULL || cp == NULL || add(k, key, cu, cp, origin) < 0)
                        return cb_error_set(err, ENOMEM, "%s", source);
        }
        return 0;
}

int k8s_keyring_add_text(struct k8s_keyring *k, const char *text, bool dockercfg, int origin,
                         const char *source, struct cb_error *err)
{
        cJSON *j = cJSON_Parse(text);
        if (!cJSON_IsObject(j)) {
                cJSON_Delete(j);
                return cb_error_set(err, 0, "%s: not a JSON object", source);
        }
        const cJSON *map = j;
        if (!dockercfg) {
                map = cJSON_GetObjectItemCaseSensitive(j, "auths");
                if (map == NULL) {
                        cJSON_Delete(j);
                        return 0; /* a config.json without auths (credsStore only) */
                }
                if (!cJSON_IsObject(map)) {
                        cJSON_Delete(j);
                        return cb_error_set(err, 0, "%s: auths: want an object", source);
                }
        }
        size_t before = k->n;
        int r = add_entries(k, map, origin, source, err);
        if (r < 0)
                k->n = before; /* all of a source or nothing */
        cJSON_Delete(j);
        return r;
}

int k8s_keyring_add_secret(struct k8s_keyring *k, const struct k8s_keyed_data *s, int origin,
                           struct cb_error *err)
{
        const char *type = s->type ? s->type : "Opaque";
        const char *ns = s->meta.namespace_ ? s->meta.namespace_ : "default";
        const char *name = s->meta.name ? s->meta.name : "";
        char source[512];
        snprintf(source, sizeof(source), "secret %s/%s", ns, name);
        bool cfg = strcmp(type, "kubernetes.io/dockercfg") == 0;
        if (!cfg && strcmp(type, "kubernetes.io/dockerconfigjson") != 0)
                return cb_error_set(err, 0,
                                    "%s: type %s: an imagePullSecret must be "
                                    "kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg",
                                    source, type);
        const struct k8s_data_item *it =
            k8s_keyed_data_get(s, cfg ? ".dockercfg" : ".dockerconfigjson");
        if (it == NULL)
                return cb_error_set(err, 0, "%s: no key %s", source,
                                    cfg ? ".dockercfg" : ".dockerconfigjson");
        return k8s_keyring_add_text(k, it->value, cfg, origin, source, err);
}

/* The registry host[:port] and path of an image reference. */
static void split_image(const char *image, char *host, size_t hs, char *path, size_t ps)
{
        const char *slash = strchr(image, '/');
        bool reg = slash && (memchr(image, '.', (size_t)(slash - image)) ||
                             memchr(image, ':', (size_t)(slash - image)) ||
                             (slash - image == 9 && strncmp(image, "localhost", 9) == 0));
        const char *rest = image;
        if (reg) {
                snprintf(host, hs, "%.*s", (int)(slash - image), image);
                rest = slash + 1;
        } else {
                snprintf(host, hs, "docker.io");
        }
        if (strcmp(host, "index.docker.io") == 0 || strcmp(host, "registry-1.docker.io") == 0)
                snprintf(host, hs, "docker.io");
        if (strcmp(host, "docker.io") == 0 && strchr(rest, '/') == NULL)
                snprintf(path, ps, "library/%s", rest);
        else
                snprintf(path, ps, "%s", rest);
        /* drop the tag or digest */
        char *at = strchr(path, '@');
        if (at)
                *at = '\0';
        char *last = strrchr(path, '/');
        char *colon = strrchr(last ? last : path, ':');
        if (colon)
                *colon = '\0';
}

static bool host_match(const char *pattern, const char *host)
{
        char p[512], h[512];
        snprintf(p, sizeof(p), "%s", pattern);
        snprintf(h, sizeof(h), "%s", host);
        char *pp = strchr(p, ':'), *hp = strchr(h, ':');
        if ((pp == NULL) != (hp == NULL) || (pp && strcmp(pp, hp) != 0))
                return false; /* the ports must be equal */
        if (pp)
                *pp = *hp = '\0';
        char *s1 = NULL, *s2 = NULL;
        char *a = strtok_r(p, ".", &s1), *b = strtok_r(h, ".", &s2);
        while (a && b) {
                if (fnmatch(a, b, 0) != 0)
                        return false;
                a = strtok_r(NULL, ".", &s1);
                b = strtok_r(NULL, ".", &s2);
        }
        return a == NULL && b == NULL;
}

static bool matches(const char *key, const char *host, const char *path)
{
        const char *slash = strchr(key, '/');
        char khost[512];
        snprintf(khost, sizeof(khost), "%.*s", (int)(slash ? (size_t)(slash - key) : strlen(key)),
                 key);
        if (!host_match(khost, host))
                return false;
        if (slash == NULL)
                return true;
        return strncmp(path, slash + 1, strlen(slash + 1)) == 0;
}

static int cmp_cred(const void *x, const void *y)
{
        const struct k8s_registry_cred *const *a = x, *const *b = y;
        if ((*a)->origin != (*b)->origin)
                return (*a)->origin < (*b)->origin ? -1 : 1;
        int c = strcmp((*a)->key, (*b)->key);
        if (c != 0)
                return -c; /* reverse: the most specific first */
        /* the same key in two sources: the order they were added (the
         * kubelet appends each one's credentials to the key's list) */
        return *a < *b ? -1 : *a > *b;
}

size_t k8s_keyring_lookup(const struct k8s_keyring *k, const char *image,
                          const struct k8s_registry_cred **ret, size_t max)
{
        char host[512], path[2048];
        split_image(image, host, sizeof(host), path, sizeof(path));
        size_t n = 0;
        for (size_t i = 0; i < k->n && n < max; i++)
                if (matches(k->v[i].key, host, path))
                        ret[n++] = &k->v[i];
        qsort(ret, n, sizeof(*ret), cmp_cred);
        return n;
}

size_t k8s_docker_config_paths(struct cb_arena *a, const char *root_dir, const char *cwd,
                               const char *home, const char *ret[8], bool ret_dockercfg[8])
{
        size_t n = 0;
        const char *dirs[] = {root_dir, cwd};
        for (int cfg = 0; cfg < 2; cfg++) {
                for (size_t i = 0; i < 2; i++)
                        if (dirs[i] && dirs[i][0]) {
                                ret_dockercfg[n] = cfg;
                                ret[n++] = cb_arena_printf(a, "%s/%s", dirs[i],
                                                           cfg ? ".dockercfg" : "config.json");
                        }
                if (home && home[0]) {
                        ret_dockercfg[n] = cfg;
                        ret[n++] = cb_arena_printf(a, "%s/%s", home,
                                                   cfg ? ".dockercfg" : ".docker/config.json");
                }
                ret_dockercfg[n] = cfg;
                ret[n++] = cfg ? "/.dockercfg" : "/.docker/config.json";
        }
        return n;
}
