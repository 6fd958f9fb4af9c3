/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/pods/podlogs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/pods/containerspec.h"
#include "lib/cleanup.h"
#include "runtime/container.h"

int ag_podlogs_pod_dir(const char *dir, const char *ns, const char *pod, const char *uid, char *buf,
                       size_t size)
{
        if (uid != NULL) {
                struct stat st;
                return ag_cri_log_dir(buf, size, dir, ns, pod, uid, NULL) == 0 &&
                               stat(buf, &st) == 0 && S_ISDIR(st.st_mode)
                           ? 0
                           : -1;
        }
        _cleanup_free_ char *prefix = NULL;
        if (asprintf(&prefix, "%s_%s_", ns, pod) < 0)
                return -1;
        DIR *d = opendir(dir);
        if (d == NULL)
                return -1;
        struct timespec best = {0};
        int found = 0;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
                if (strncmp(de->d_name, prefix, strlen(prefix)) != 0 ||
                    strchr(de->d_name + strlen(prefix), '_') != NULL)
                        continue;
                char path[4096];
                struct stat st;
                snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
                if (stat(path, &st) < 0)
                        continue;
                if (!found || st.st_mtim.tv_sec > best.tv_sec ||
                    (st.st_mtim.tv_sec == best.tv_sec && st.st_mtim.tv_nsec > best.tv_nsec)) {
                        best = st.st_mtim;
                        snprintf(buf, size, "%s", path);
                }
                found = 1;
        }
        closedir(d);
        return found ? 0 : -1;
}

int ag_podlogs_restarts(const char *dir, long *newest, long *previous)
{
        DIR *d = opendir(dir);
        if (d == NULL)
                return -1;
        *newest = *previous = -1;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
                char *end;
                long n = strtol(de->d_name, &end, 10);
                if (end == de->d_name || strcmp(end, ".log") != 0 || n < 0)
                        continue;
                if (n > *newest) {
                        *previous = *newest;
                        *newest = n;
                } else if (n > *previous) {
                        *previous = n;
                }
        }
        closedir(d);
        return *newest >= 0 ? 0 : -1;
}

int ag_podlogs_only_container(const char *pod_dir, char *buf, size_t size)
{
        DIR *d = opendir(pod_dir);
        if (d == NULL)
                return -1;
        int n = 0;
        struct dirent *de;
        while ((de = readdir(d)) != NULL)
                if (de->d_name[0] != '.' && de->d_type == DT_DIR) {
                        snprintf(buf, size, "%s", de->d_name);
                        n++;
                }
        closedir(d);
        return n == 1 ? 0 : -1;
}

/* ---- PodLogOptions ---- */

static int parse_bool(const char *name, const char *v, bool *ret, struct cb_error *err)
{
        if (v == NULL || strcmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcmp(v, "") == 0)
                *ret = true;
        else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
                *ret = false;
        else
                return cb_error_set(err, EINVAL, "%s: invalid value \"%s\" (want true or false)",
                                    name, v);
        return 0;
}

static int parse_int(const char *name, const char *v, int64_t min, int64_t *ret,
                     struct cb_error *err)
{
        char *end;
        errno = 0;
        long long x = v != NULL ? strtoll(v, &end, 10) : 0;
        if (v == NULL || *v == '\0' || *end != '\0' || errno != 0)
                return cb_error_set(err, EINVAL, "%s: invalid value \"%s\" (want an integer)", name,
                                    v != NULL ? v : "");
        if (x < min)
                return cb_error_set(err, EINVAL, "%s: must be greater than or equal to %" PRId64,
                                    name, min);
        *ret = x;
        return 0;
}

int ag_log_options_parse(const char *const *args, size_t n, int64_t now_ns,
                         struct ag_log_options *ret, struct cb_error *err)
{
        struct ag_log_options o = {0};
        bool has_since_seconds = false, has_since_time = false;
        for (size_t i = 0; i < n; i++) {
                char name[64];
                const char *eq = strchr(args[i], '=');
                size_t nl = eq != NULL ? (size_t)(eq - args[i]) : strlen(args[i]);
                if (nl >= sizeof(name))
                        continue;
                memcpy(name, args[i], nl);
                name[nl] = '\0';
                const char *v = eq != NULL ? eq + 1 : NULL;
                int r = 0;
                if (strcmp(name, "follow") == 0) {
                        r = parse_bool(name, v, &o.follow, err);
                } else if (strcmp(name, "previous") == 0) {
                        r = parse_bool(name, v, &o.previous, err);
                } else if (strcmp(name, "timestamps") == 0) {
                        r = parse_bool(name, v, &o.timestamps, err);
                } else if (strcmp(name, "tailLines") == 0) {
                        r = parse_int(name, v, 0, &o.tail_lines, err);
                        o.has_tail_lines = true;
                } else if (strcmp(name, "limitBytes") == 0) {
                        r = parse_int(name, v, 1, &o.limit_bytes, err);
                        o.has_limit_bytes = true;
                } else if (strcmp(name, "sinceSeconds") == 0) {
                        int64_t s;
                        r = parse_int(name, v, 1, &s, err);
                        if (r == 0)
                                o.since_ns = now_ns - s * 1000000000;
                        has_since_seconds = true;
                } else if (strcmp(name, "sinceTime") == 0) {
                        /* the CRI record parser reads RFC 3339: give it a
                         * record with this time */
                        char rec[128];
                        struct rt_crilog_entry e;
                        int m = snprintf(rec, sizeof(rec), "%s stdout F x", v != NULL ? v : "");
                        if (m <= 0 || (size_t)m >= sizeof(rec) ||
                            rt_crilog_parse(rec, (size_t)m, &e, NULL) < 0)
                                return cb_error_set(err, EINVAL,
                                                    "sinceTime: invalid value \"%s\" (want an "
                                                    "RFC 3339 time)",
                                                    v != NULL ? v : "");
                        o.since_ns = e.ts_ns;
                        has_since_time = true;
                }
                if (r < 0)
                        return -1;
        }
        if (has_since_seconds && has_since_time)
                return cb_error_set(err, EINVAL,
                                    "at most one of sinceTime or sinceSeconds may be specified");
        o.has_since = has_since_seconds || has_since_time;
        *ret = o;
        return 0;
}

size_t ag_log_render(const char *rec, size_t len, const struct ag_log_options *opts, char *out,
                     size_t cap)
{
        struct rt_crilog_entry e;
        if (rt_crilog_parse(rec, len, &e, NULL) < 0)
                return 0;
        if (opts->has_since && e.ts_ns < opts->since_ns)
                return 0;
        size_t n = 0;
        if (opts->timestamps) {
                time_t sec = (time_t)(e.ts_ns / 1000000000);
                struct tm tm;
                gmtime_r(&sec, &tm);
                int m = snprintf(out, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ ",
                                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                                 tm.tm_min, tm.tm_sec, (long long)(e.ts_ns % 1000000000));
                if (m < 0 || (size_t)m >= cap)
                        return 0;
                n = (size_t)m;
        }
        if (n + e.len + 1 > cap)
                return 0;
        memcpy(out + n, e.content, e.len);
        n += e.len;
        if (!e.partial)
                out[n++] = '\n';
        return n;
}

int ag_log_tail_offset(int fd, int64_t n, int64_t *ret_offset, struct cb_error *err)
{
        struct stat st;
        if (fstat(fd, &st) < 0)
                return cb_error_set(err, errno, "cannot stat the log file");
        int64_t pos = st.st_size;
        if (n <= 0) {
                *ret_offset = pos;
                return 0;
        }
        char buf[65536];
        /* a last '\n' ends the last record; it does not start one */
        int64_t newlines = 0;
        bool first = true;
        while (pos > 0) {
                size_t chunk = pos > (int64_t)sizeof(buf) ? sizeof(buf) : (size_t)pos;
                ssize_t r = pread(fd, buf, chunk, pos - (int64_t)chunk);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r != (ssize_t)chunk)
                        return cb_error_set(err, r < 0 ? errno : EIO, "cannot read the log file");
                for (size_t i = chunk; i-- > 0;) {
                        int64_t at = pos - (int64_t)chunk + (int64_t)i;
                        if (buf[i] != '\n')
                                continue;
                        if (first && at == st.st_size - 1) {
                                first = false;
                                continue;
                        }
                        if (++newlines >= n) {
                                *ret_offset = at + 1;
                                return 0;
                        }
                }
                first = false;
                pos -= (int64_t)chunk;
        }
        *ret_offset = 0;
        return 0;
}

int ag_podlogs_tail_text(const char *path, int64_t lines, size_t max_bytes, char *out,
                         size_t *ret_len, struct cb_error *err)
{
        *ret_len = 0;
        out[0] = '\0';
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return errno == ENOENT ? 0 : cb_error_set(err, errno, "%s", path);
        int64_t off = 0;
        if (ag_log_tail_offset(fd, lines, &off, err) < 0)
                return cb_error_prefix(err, "%s", path);
        if (lseek(fd, off, SEEK_SET) < 0)
                return cb_error_set(err, errno, "%s", path);
        _cleanup_fclose_ FILE *f = fdopen(take_fd(&fd), "re");
        if (f == NULL)
                return cb_error_set(err, errno, "%s", path);
        char *line = NULL, *rendered = NULL;
        size_t cap = 0, len = 0, rcap = 0;
        ssize_t n;
        struct ag_log_options opts = {0};
        while ((n = getline(&line, &cap, f)) > 0) {
                if (line[n - 1] == '\n')
                        n--;
                if ((size_t)n + 64 > rcap) {
                        char *nr = realloc(rendered, (size_t)n + 64);
                        if (nr == NULL)
                                break;
                        rendered = nr;
                        rcap = (size_t)n + 64;
                }
                size_t r = ag_log_render(line, (size_t)n, &opts, rendered, rcap);
                /* keep the last max_bytes bytes (a circular buffer) */
                const char *src = rendered;
                if (r > max_bytes) {
                        src += r - max_bytes;
                        r = max_bytes;
                }
                if (len + r > max_bytes) {
                        size_t drop = len + r - max_bytes;
                        memmove(out, out + drop, len - drop);
                        len -= drop;
                }
                memcpy(out + len, src, r);
                len += r;
        }
        free(line);
        free(rendered);
        out[len] = '\0';
        *ret_len = len;
        return 0;
}
