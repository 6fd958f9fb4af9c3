/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pure parsers of cgroup interface files and /proc/<pid>/cgroup. They take
 * the file's text, so the unit tests need neither root nor a cgroup mount.
 */
#include "cgroups/cgroup.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Parses a decimal u64 in [s, s+len): digits only. */
static int parse_u64_span(const char *s, size_t len, uint64_t *ret)
{
        if (len == 0 || len > 20)
                return -1;
        uint64_t v = 0;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -1;
                uint64_t d = (uint64_t)(s[i] - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -1;
                v = v * 10 + d;
        }
        *ret = v;
        return 0;
}

int cg_parse_keyed(const char *buf, const char *key, uint64_t *ret, struct cb_error *err)
{
        size_t klen = strlen(key);
        const char *line = buf;
        while (*line != '\0') {
                const char *eol = strchrnul(line, '\n');
                if ((size_t)(eol - line) > klen && strncmp(line, key, klen) == 0 &&
                    line[klen] == ' ') {
                        const char *v = line + klen + 1;
                        size_t vlen = (size_t)(eol - v);
                        if (parse_u64_span(v, vlen, ret) < 0)
                                return cb_error_set(err, EINVAL,
                                                    "key \"%s\" has the value \"%.*s\", "
                                                    "not a non-negative integer",
                                                    key, (int)(vlen > 64 ? 64 : vlen), v);
                        return 1;
                }
                line = *eol == '\n' ? eol + 1 : eol;
        }
        return 0;
}

int cg_parse_u64(const char *buf, uint64_t *ret, struct cb_error *err)
{
        size_t len = strcspn(buf, "\n");
        if (len == 3 && strncmp(buf, "max", 3) == 0) {
                *ret = UINT64_MAX;
                return 0;
        }
        if (parse_u64_span(buf, len, ret) < 0)
                return cb_error_set(err, EINVAL,
                                    "value \"%.*s\" is not a non-negative integer or \"max\"",
                                    (int)(len > 64 ? 64 : len), buf);
        return 0;
}

/* True when the comma-separated list [list, list+len) contains name. */
static int list_has(const char *list, size_t len, const char *name)
{
        size_t nlen = strlen(name);
        const char *p = list, *end = list + len;
        while (p < end) {
                const char *comma = memchr(p, ',', (size_t)(end - p));
                const char *tok_end = comma != NULL ? comma : end;
                if ((size_t)(tok_end - p) == nlen && strncmp(p, name, nlen) == 0)
                        return 1;
                p = tok_end + 1;
        }
        return 0;
}

int cg_parse_proc_cgroup(const char *buf, const char *controller, char *path, size_t size,
                         struct cb_error *err)
{
        const char *line = buf;
        while (*line != '\0') {
                const char *eol = strchrnul(line, '\n');
                /* hierarchy-id:controller-list:path; the path may contain ':' */
                const char *c1 = memchr(line, ':', (size_t)(eol - line));
                const char *c2 = c1 != NULL ? memchr(c1 + 1, ':', (size_t)(eol - c1 - 1)) : NULL;
                if (c2 != NULL) {
                        int match;
                        if (controller == NULL)
                                match = c1 - line == 1 && line[0] == '0' && c2 == c1 + 1;
                        else
                                match = list_has(c1 + 1, (size_t)(c2 - c1 - 1), controller);
                        if (match) {
                                size_t plen = (size_t)(eol - c2 - 1);
                                if (plen + 1 > size)
                                        return cb_error_set(err, ENAMETOOLONG,
                                                            "cgroup path of %zu bytes does "
                                                            "not fit in %zu",
                                                            plen, size);
                                memcpy(path, c2 + 1, plen);
                                path[plen] = '\0';
                                return (int)plen;
                        }
                }
                line = *eol == '\n' ? eol + 1 : eol;
        }
        if (controller == NULL)
                return cb_error_set(err, ENOENT,
                                    "no \"0::\" (cgroup v2) line in /proc/<pid>/cgroup");
        return cb_error_set(err, ENOENT, "no line for controller \"%s\" in /proc/<pid>/cgroup",
                            controller);
}

int cg_parse_pids(const char *buf, pid_t **pids, size_t *n, struct cb_error *err)
{
        const char *line = buf;
        while (*line != '\0') {
                const char *eol = strchrnul(line, '\n');
                if (eol != line) {
                        uint64_t v;
                        if (parse_u64_span(line, (size_t)(eol - line), &v) < 0 || v == 0 ||
                            v > INT32_MAX)
                                return cb_error_set(err, EINVAL,
                                                    "\"%.*s\" in cgroup.procs is not a pid",
                                                    (int)(eol - line > 32 ? 32 : eol - line), line);
                        /* The capacity is 8, then doubles: grow at 0 and at each
                         * power of two from 8 on. */
                        if (*n == 0 || (*n >= 8 && (*n & (*n - 1)) == 0)) {
                                size_t cap = *n == 0 ? 8 : *n * 2;
                                pid_t *np = realloc(*pids, cap * sizeof(**pids));
                                if (np == NULL)
                                        return cb_error_set(err, ENOMEM, "cannot list pids");
                                *pids = np;
                        }
                        (*pids)[(*n)++] = (pid_t)v;
                }
                line = *eol == '\n' ? eol + 1 : eol;
        }
        return 0;
}

int cg_parse_oom(const char *buf, enum cg_version v, struct cg_oom *ret, struct cb_error *err)
{
        uint64_t val;
        int r;
        if (v == CG_V1) {
                /* memory.oom_control: oom_kill_disable, under_oom, oom_kill (>= 4.13) */
                r = cg_parse_keyed(buf, "under_oom", &val, err);
                if (r < 0)
                        return cb_error_prefix(err, "memory.oom_control");
                if (r == 0)
                        return cb_error_set(err, EINVAL,
                                            "memory.oom_control has no \"under_oom\" line");
                ret->under_oom = val != 0;
                r = cg_parse_keyed(buf, "oom_kill", &val, err);
                if (r < 0)
                        return cb_error_prefix(err, "memory.oom_control");
                /* kernels before 4.13 have no oom_kill counter */
                ret->oom_kill = r == 1 ? val : 0;
                ret->oom = 0;
                return 0;
        }
        static const struct {
                const char *key;
                size_t off;
        } keys[] = {
            {"oom", offsetof(struct cg_oom, oom)},
            {"oom_kill", offsetof(struct cg_oom, oom_kill)},
            {"max", offsetof(struct cg_oom, limit_hits)},
        };
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
                r = cg_parse_keyed(buf, keys[i].key, &val, err);
                if (r < 0)
                        return cb_error_prefix(err, "memory.events");
                if (r == 0)
                        return cb_error_set(err, EINVAL, "memory.events has no \"%s\" line",
                                            keys[i].key);
                memcpy((char *)ret + keys[i].off, &val, sizeof(val));
        }
        ret->under_oom = false;
        return 0;
}
