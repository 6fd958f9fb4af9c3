/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CRI log format (what containerd and CRI-O write and `kubectl logs`
 * reads through the kubelet):
 *
 *   2024-01-02T03:04:05.123456789Z stdout F hello world
 *
 * one record per line: an RFC 3339 timestamp with nanoseconds, the stream,
 * a tag (F: the line is complete, P: a chunk of a longer line continues in
 * the next record of that stream) and the content without its newline.
 * Lines of RT_CRILOG_MAX_LINE bytes or more are split into P chunks, as
 * containerd does with its 16 KiB line buffer.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/cleanup.h"
#include "lib/file.h"
#include "runtime/container.h"
#include "runtime/container_internal.h"
#include "runtime/syscalls.h"

int64_t rt_now_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void rt_format_time(int64_t ns, char *buf, size_t size)
{
        time_t sec = (time_t)(ns / 1000000000);
        long nsec = (long)(ns % 1000000000);
        struct tm tm;
        gmtime_r(&sec, &tm);
        snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%09ldZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, nsec);
}

static const char *stream_name(enum rt_stream s)
{
        return s == RT_STREAM_STDERR ? "stderr" : "stdout";
}

size_t rt_crilog_format(char *buf, size_t size, int64_t ts_ns, enum rt_stream s, bool partial,
                        const char *line, size_t len)
{
        char ts[48];
        rt_format_time(ts_ns, ts, sizeof(ts));
        int n = snprintf(buf, size, "%s %s %c ", ts, stream_name(s), partial ? 'P' : 'F');
        size_t need = (size_t)n + len + 1;
        if (need <= size) {
                memcpy(buf + n, line, len);
                buf[n + len] = '\n';
                if (need < size)
                        buf[need] = '\0';
        }
        return need;
}

void rt_crilog_init(struct rt_crilog_writer *w, int fd)
{
        w->fd = fd;
        w->len[0] = w->len[1] = 0;
}

static int write_all(int fd, const char *p, size_t len, struct cb_error *err)
{
        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return cb_error_set(err, errno, "cannot write the container log");
                }
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

static int emit(struct rt_crilog_writer *w, enum rt_stream s, bool partial, const char *line,
                size_t len, struct cb_error *err)
{
        char rec[RT_CRILOG_MAX_LINE + 96];
        size_t n = rt_crilog_format(rec, sizeof(rec), rt_now_ns(), s, partial, line, len);
        if (n > sizeof(rec))
                return cb_error_set(err, EOVERFLOW, "log record of %zu bytes is too long", n);
        return write_all(w->fd, rec, n, err);
}

int rt_crilog_write(struct rt_crilog_writer *w, enum rt_stream s, const char *data, size_t len,
                    struct cb_error *err)
{
        char *buf = w->buf[s];
        size_t *blen = &w->len[s];
        while (len > 0) {
                const char *nl = memchr(data, '\n', len);
                size_t take = nl != NULL ? (size_t)(nl - data) : len;
                size_t room = RT_CRILOG_MAX_LINE - *blen;
                if (take >= room) {
                        /* the line reaches the limit: a P chunk of exactly
                         * RT_CRILOG_MAX_LINE bytes */
                        memcpy(buf + *blen, data, room);
                        if (emit(w, s, true, buf, RT_CRILOG_MAX_LINE, err) < 0)
                                return -1;
                        *blen = 0;
                        data += room;
                        len -= room;
                        continue;
                }
                memcpy(buf + *blen, data, take);
                *blen += take;
                data += take;
                len -= take;
                if (nl != NULL) {
                        if (emit(w, s, false, buf, *blen, err) < 0)
                                return -1;
                        *blen = 0;
                        data++; /* the newline */
                        len--;
                }
        }
        return 0;
}

int rt_crilog_flush(struct rt_crilog_writer *w, enum rt_stream s, struct cb_error *err)
{
        if (w->len[s] == 0)
                return 0;
        int r = emit(w, s, false, w->buf[s], w->len[s], err);
        w->len[s] = 0;
        return r;
}

static int parse_num(const char *p, int n, int *ret)
{
        int v = 0;
        for (int i = 0; i < n; i++) {
                if (p[i] < '0' || p[i] > '9')
                        return -1;
                v = v * 10 + (p[i] - '0');
        }
        *ret = v;
        return 0;
}

/* "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+hh:mm|-hh:mm)"; returns chars used. */
static int parse_time(const char *s, size_t len, int64_t *ret)
{
        struct tm tm = {0};
        int y, mo, d, h, mi, se;
        if (len < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
            s[16] != ':' || parse_num(s, 4, &y) < 0 || parse_num(s + 5, 2, &mo) < 0 ||
            parse_num(s + 8, 2, &d) < 0 || parse_num(s + 11, 2, &h) < 0 ||
            parse_num(s + 14, 2, &mi) < 0 || parse_num(s + 17, 2, &se) < 0)
                return -1;
        size_t i = 19;
        int64_t frac = 0;
        if (i < len && s[i] == '.') {
                int digits = 0;
                for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++, digits++)
                        if (digits < 9)
                                frac = frac * 10 + (s[i] - '0');
                if (digits == 0)
                        return -1;
                for (; digits < 9; digits++)
                        frac *= 10;
        }
        int64_t off = 0;
        if (i < len && s[i] == 'Z') {
                i++;
        } else if (i + 6 <= len && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':') {
                int oh, om;
                if (parse_num(s + i + 1, 2, &oh) < 0 || parse_num(s + i + 4, 2, &om) < 0)
                        return -1;
                off = (int64_t)(oh * 3600 + om * 60) * (s[i] == '+' ? 1 : -1);
                i += 6;
        } else {
                return -1;
        }
        tm.tm_year = y - 1900;
        tm.tm_mon = mo - 1;
        tm.tm_mday = d;
        tm.tm_hour = h;
        tm.tm_min = mi;
        tm.tm_sec = se;
        int64_t sec = (int64_t)timegm(&tm) - off;
        *ret = sec * 1000000000 + frac;
        return (int)i;
}

int rt_crilog_parse(const char *line, size_t len, struct rt_crilog_entry *ret, struct cb_error *err)
{
        struct rt_crilog_entry e = {0};
        int n = parse_time(line, len, &e.ts_ns);
        if (n < 0 || (size_t)n >= len || line[n] != ' ')
                return cb_error_set(err, EINVAL, "CRI log record \"%.*s\": bad timestamp",
                                    (int)(len > 60 ? 60 : len), line);
        const char *p = line + n + 1;
        size_t left = len - (size_t)n - 1;
        if (left >= 7 && memcmp(p, "stdout ", 7) == 0)
                e.stream = RT_STREAM_STDOUT;
        else if (left >= 7 && memcmp(p, "stderr ", 7) == 0)
                e.stream = RT_STREAM_STDERR;
        else
                return cb_error_set(err, EINVAL,
                                    "CRI log record \"%.*s\": stream is not stdout or stderr",
                                    (int)(len > 60 ? 60 : len), line);
        p += 7;
        left -= 7;
        /* The tag field may carry more ':'-separated tags (CRI); the first
         * is F or P. */
        if (left < 2 || (p[0] != 'F' && p[0] != 'P'))
                return cb_error_set(err, EINVAL, "CRI log record \"%.*s\": tag is not F or P",
                                    (int)(len > 60 ? 60 : len), line);
        e.partial = p[0] == 'P';
        const char *sp = memchr(p, ' ', left);
        if (sp == NULL)
                return cb_error_set(err, EINVAL, "CRI log record \"%.*s\": no content field",
                                    (int)(len > 60 ? 60 : len), line);
        e.content = sp + 1;
        e.len = left - (size_t)(sp + 1 - p);
        *ret = e;
        return 0;
}

struct joiner {
        char *buf[2];
        size_t len[2];
};

static int join_add(struct joiner *j, enum rt_stream s, const char *p, size_t n,
                    struct cb_error *err)
{
        char *nb = realloc(j->buf[s], j->len[s] + n + 1);
        if (nb == NULL)
                return cb_error_set(err, ENOMEM, "cannot join log chunks");
        memcpy(nb + j->len[s], p, n);
        j->buf[s] = nb;
        j->len[s] += n;
        return 0;
}

int rt_crilog_read(const char *path, rt_crilog_line_fn fn, void *ud, struct cb_error *err)
{
        _cleanup_free_ char *data = NULL;
        size_t size;
        if (cb_read_file(path, (size_t)1 << 30, &data, &size, err) < 0)
                return -1;
        struct joiner j = {{NULL, NULL}, {0, 0}};
        int r = 0;
        size_t lineno = 0;
        for (size_t off = 0; off < size && r == 0;) {
                const char *nl = memchr(data + off, '\n', size - off);
                size_t len = nl != NULL ? (size_t)(nl - (data + off)) : size - off;
                lineno++;
                struct rt_crilog_entry e;
                if (rt_crilog_parse(data + off, len, &e, err) < 0) {
                        r = cb_error_prefix(err, "%s: line %zu", path, lineno);
                        break;
                }
                int cb = 0;
                if (e.partial) {
                        r = join_add(&j, e.stream, e.content, e.len, err);
                } else if (j.len[e.stream] > 0) {
                        r = join_add(&j, e.stream, e.content, e.len, err);
                        if (r == 0)
                                cb = fn(e.stream, e.ts_ns, j.buf[e.stream], j.len[e.stream], ud);
                        j.len[e.stream] = 0;
                } else {
                        cb = fn(e.stream, e.ts_ns, e.content, e.len, ud);
                }
                if (cb < 0) /* the callback stops the read */
                        r = cb_error_set(err, ECANCELED, "%s: reading stopped at line %zu", path,
                                         lineno);
                off += len + 1;
        }
        free(j.buf[0]);
        free(j.buf[1]);
        return r < 0 ? -1 : 0;
}

/* ---- ReopenContainerLog ------------------------------------------------------ */

int rt_container_reopen_log(const char *root_dir, const char *id, int timeout_ms,
                            struct cb_error *err)
{
        struct rt_container_state st;
        if (rt_container_state(root_dir, id, &st, err) < 0)
                return -1;
        if (st.status != RT_CONTAINER_RUNNING)
                return cb_error_set(err, ESRCH, "container %s is not running", id);
        if (st.log_path[0] != '/')
                return cb_error_set(err, EINVAL, "container %s has no log file", id);
        _cleanup_free_ char *dir = strdup(st.log_path);
        if (dir == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        char *slash = strrchr(dir, '/');
        const char *name = st.log_path + (slash - dir) + 1;
        slash[slash == dir ? 1 : 0] = '\0'; /* "/x.log": the directory is "/" */
        /* the monitor: opened first, checked second (a recycled pid cannot
         * get our signal) */
        _cleanup_close_ int pidfd = rt_pidfd_open(st.monitor_pid, 0);
        uint64_t start = 0;
        if (pidfd < 0 || rt_proc_start_time(st.monitor_pid, &start, NULL) < 0 ||
            start != st.monitor_start_time)
                return cb_error_set(err, ESRCH, "the monitor of container %s is gone", id);
        /* the answer is the new file appearing: watch before asking */
        _cleanup_close_ int ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        if (ino < 0 || inotify_add_watch(ino, dir, IN_CREATE | IN_MOVED_TO) < 0)
                return cb_error_set(err, errno, "cannot watch %s", dir);
        struct stat sb;
        bool existed = lstat(st.log_path, &sb) == 0;
        if (rt_pidfd_send_signal(pidfd, SIGHUP, NULL, 0) < 0)
                return cb_error_set(err, errno, "cannot signal the monitor of container %s", id);
        if (existed) /* nothing to wait for: it appends to the same file */
                return 0;
        int64_t deadline = rt_now_ns() + (int64_t)timeout_ms * 1000000;
        for (;;) {
                int64_t left = (deadline - rt_now_ns()) / 1000000;
                if (left <= 0)
                        return cb_error_set(err, ETIMEDOUT,
                                            "the monitor of container %s did not reopen %s "
                                            "within %d ms",
                                            id, st.log_path, timeout_ms);
                struct pollfd p[2] = {{.fd = ino, .events = POLLIN},
                                      {.fd = pidfd, .events = POLLIN}};
                int n = poll(p, 2, (int)left);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return cb_error_set(err, errno, "poll");
                if (p[0].revents & POLLIN) {
                        _Alignas(struct inotify_event) char buf[4096];
                        ssize_t r;
                        while ((r = read(ino, buf, sizeof(buf))) > 0) {
                                for (char *q = buf; q < buf + r;) {
                                        struct inotify_event *ev = (struct inotify_event *)q;
                                        if (ev->len > 0 && strcmp(ev->name, name) == 0)
                                                return 0;
                                        q += sizeof(*ev) + ev->len;
                                }
                        }
                }
                if (lstat(st.log_path, &sb) == 0) /* an event queue overflow */
                        return 0;
                if (p[1].revents & POLLIN)
                        return cb_error_set(err, ESRCH,
                                            "the monitor of container %s exited before it "
                                            "reopened its log",
                                            id);
        }
}
