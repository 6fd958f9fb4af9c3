/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Image references, following the grammar of distribution/reference:
 *
 *   reference := name [ ":" tag ] [ "@" digest ]
 *   name      := [domain "/"] path-component ["/" path-component]*
 *   domain    := host [":" port]
 *
 * The first component is a domain only when it contains "." or ":", is
 * "localhost", or has an uppercase letter (which a path may not); otherwise
 * the name is on Docker Hub, and a one-component Hub name gets "library/".
 */
#include "runtime/image.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define HUB_DOMAIN "docker.io"

static int is_lower_alnum(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

int rt_digest_valid(const char *s)
{
        if (strncmp(s, "sha256:", 7) != 0)
                return 0;
        s += 7;
        size_t n = 0;
        for (; s[n] != '\0'; n++)
                if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
                        return 0;
        return n == 64;
}

/* path-component := [a-z0-9]+ ((\.|_|__|-+) [a-z0-9]+)* */
static int path_component_valid(const char *s, size_t len)
{
        size_t i = 0;
        if (len == 0 || !is_lower_alnum(s[0]))
                return 0;
        while (i < len) {
                while (i < len && is_lower_alnum(s[i]))
                        i++;
                if (i == len)
                        return 1;
                if (s[i] == '.') {
                        i++;
                } else if (s[i] == '_') {
                        i++;
                        if (i < len && s[i] == '_')
                                i++;
                } else if (s[i] == '-') {
                        while (i < len && s[i] == '-')
                                i++;
                } else {
                        return 0;
                }
                if (i == len || !is_lower_alnum(s[i]))
                        return 0;
        }
        return 1;
}

/* host := label ("." label)*, label := [A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?
 * followed by an optional ":" port of digits. */
static int domain_valid(const char *s, size_t len)
{
        const char *colon = memchr(s, ':', len);
        size_t hostlen = colon != NULL ? (size_t)(colon - s) : len;
        if (hostlen == 0)
                return 0;
        size_t start = 0;
        for (size_t i = 0; i <= hostlen; i++) {
                if (i < hostlen && s[i] != '.')
                        continue;
                size_t l = i - start;
                if (l == 0 || !isalnum((unsigned char)s[start]) ||
                    !isalnum((unsigned char)s[i - 1]))
                        return 0;
                for (size_t j = start; j < i; j++)
                        if (!isalnum((unsigned char)s[j]) && s[j] != '-')
                                return 0;
                start = i + 1;
        }
        if (colon != NULL) {
                size_t plen = len - hostlen - 1;
                if (plen == 0 || plen > 5)
                        return 0;
                for (size_t j = hostlen + 1; j < len; j++)
                        if (!isdigit((unsigned char)s[j]))
                                return 0;
        }
        return 1;
}

/* tag := [\w][\w.-]{0,127} */
static int tag_valid(const char *s)
{
        size_t n = strlen(s);
        if (n == 0 || n > RT_REF_TAG_MAX)
                return 0;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                int word = isalnum((unsigned char)c) || c == '_';
                if (!word && (i == 0 || (c != '.' && c != '-')))
                        return 0;
        }
        return 1;
}

static int domain_like(const char *s, size_t len)
{
        if (memchr(s, '.', len) != NULL || memchr(s, ':', len) != NULL)
                return 1;
        if (len == 9 && memcmp(s, "localhost", 9) == 0)
                return 1;
        for (size_t i = 0; i < len; i++)
                if (isupper((unsigned char)s[i]))
                        return 1;
        return 0;
}

static int bad(struct cb_error *err, const char *s, const char *why)
{
        return cb_error_set(err, 0, "invalid image reference \"%s\": %s", s, why);
}

int rt_image_ref_parse(const char *s, struct rt_image_ref *ret, struct cb_error *err)
{
        struct rt_image_ref r = {0};
        char name[RT_REF_STR_MAX + 1];

        if (s == NULL || *s == '\0')
                return bad(err, "", "the reference is empty; name an image such as busybox:1.36");
        if (strlen(s) > RT_REF_STR_MAX)
                return bad(err, s, "the reference is too long");

        const char *at = strchr(s, '@');
        size_t namelen = at != NULL ? (size_t)(at - s) : strlen(s);
        if (at != NULL) {
                if (strncmp(at + 1, "sha256:", 7) != 0 && strchr(at + 1, ':') != NULL)
                        return bad(err, s, "only sha256 digests are supported");
                if (!rt_digest_valid(at + 1))
                        return bad(err, s,
                                   "the digest must be sha256: followed by 64 lowercase hex "
                                   "digits");
                snprintf(r.digest, sizeof(r.digest), "%s", at + 1);
        }
        memcpy(name, s, namelen);
        name[namelen] = '\0';

        /* The tag is after the last ':' that follows the last '/'. */
        char *slash = strrchr(name, '/');
        char *colon = strrchr(slash != NULL ? slash : name, ':');
        if (colon != NULL) {
                *colon = '\0';
                if (!tag_valid(colon + 1))
                        return bad(err, s,
                                   "the tag must be 1 to 128 of [A-Za-z0-9_.-], not starting "
                                   "with . or -");
                snprintf(r.tag, sizeof(r.tag), "%s", colon + 1);
        }
        if (name[0] == '\0')
                return bad(err, s, "the repository name is empty");

        const char *path = name;
        char *first = strchr(name, '/');
        if (first != NULL && domain_like(name, (size_t)(first - name))) {
                size_t dlen = (size_t)(first - name);
                if (!domain_valid(name, dlen))
                        return bad(err, s, "the registry host is not a valid host[:port]");
                if (dlen == 15 && memcmp(name, "index.docker.io", 15) == 0)
                        snprintf(r.domain, sizeof(r.domain), "%s", HUB_DOMAIN);
                else
                        snprintf(r.domain, sizeof(r.domain), "%.*s", (int)dlen, name);
                path = first + 1;
        } else {
                snprintf(r.domain, sizeof(r.domain), "%s", HUB_DOMAIN);
        }

        /* Validate every path component. */
        for (const char *p = path;;) {
                const char *end = strchr(p, '/');
                size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
                for (size_t i = 0; i < len; i++)
                        if (isupper((unsigned char)p[i]))
                                return bad(err, s, "the repository name must be lowercase");
                if (!path_component_valid(p, len))
                        return bad(err, s,
                                   "each repository path component must be [a-z0-9] words "
                                   "joined by '.', '_', '__' or '-'");
                if (end == NULL)
                        break;
                p = end + 1;
        }

        int hub_short = strcmp(r.domain, HUB_DOMAIN) == 0 && strchr(path, '/') == NULL;
        if ((size_t)snprintf(r.path, sizeof(r.path), "%s%s", hub_short ? "library/" : "", path) >=
                sizeof(r.path) ||
            strlen(r.domain) + 1 + strlen(r.path) > 255)
                return bad(err, s, "the repository name is longer than 255 characters");

        if (r.tag[0] == '\0' && r.digest[0] == '\0')
                snprintf(r.tag, sizeof(r.tag), "latest");
        *ret = r;
        return 0;
}

char *rt_image_ref_format(const struct rt_image_ref *r, char *buf, size_t size)
{
        snprintf(buf, size, "%s/%s%s%s%s%s", r->domain, r->path, r->tag[0] ? ":" : "", r->tag,
                 r->digest[0] ? "@" : "", r->digest);
        return buf;
}
