/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /containerLogs: a container's CRI log file as the kubelet serves it,
 * followed through inotify with "follow" (docs/node-api.md).
 */
#include "agent/nodeapi/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/core/inotify.h"
#include "lib/cleanup.h"

#define LOG_CHUNK   65536
#define FILE_EVENTS (IN_MODIFY | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF)

struct logstream {
        int fd, ino;
        int wd_file, wd_dir; /* the file read now; its directory (a rotation's new file) */
        int next_fd;         /* the file at path after a rotation, once it exists */
        struct ag_io *ino_io;
        struct conn *c;
        struct ag_log_options opts;
        int64_t off, sent;
        bool follow, ended, finished;
        bool moved; /* the file read now was renamed or removed (a rotation) */
        char in[LOG_CHUNK];
        size_t in_len;
        char path[4500];
        const char *root_dir;
        char cid[128];
};

/* ---- /containerLogs ---- */

static void write_logs(struct logstream *l);

void ag_napi_logstream_free(struct logstream *l)
{
        if (l == NULL)
                return;
        ag_io_free(l->ino_io);
        if (l->ino >= 0)
                close(l->ino);
        if (l->fd >= 0)
                close(l->fd);
        if (l->next_fd >= 0)
                close(l->next_fd);
        free(l);
}

/* The writer closing the file ends the stream (the container exited),
 * unless the file was rotated away first: the monitor closes the old file
 * once it opened the new one, and the stream goes on there. Events of a
 * file no longer read are stale. */
static void on_log_event(const struct inotify_event *ev, void *data)
{
        struct logstream *l = data;
        if (ev->wd == l->wd_file) {
                if (ev->mask & (IN_MOVE_SELF | IN_DELETE_SELF))
                        l->moved = true;
                else if ((ev->mask & IN_CLOSE_WRITE) && !l->moved)
                        l->ended = true;
        }
}

static void on_log_change(struct ag_io *io, int fd, uint32_t events, void *data)
{
        (void)io;
        (void)events;
        struct logstream *l = data;
        ag_inotify_drain(fd, on_log_event, l);
        struct conn *c = l->c;
        if (ag_napi_conn_pending(c) < LOG_CHUNK)
                write_logs(l);
        ag_napi_conn_update(c);
}

void ag_napi_start_logs(struct conn *c, const struct ag_napi_target *t, struct args *a)
{
        struct ag_napi *s = c->srv;
        struct cb_error err = {0};
        struct ag_log_options o;
        if (ag_log_options_parse((const char *const *)a->v, a->n, ag_napi_wall_ns(), &o, &err) < 0)
                return ag_napi_respond_error(c, 400, err.msg);
        struct found f;
        int code = ag_napi_find_target(s, t, t->container, &f);
        if (code != 0) {
                ag_napi_respond_error(c, code, f.msg);
                ag_napi_found_clear(&f);
                return;
        }
        char pod_dir[4096], cdir[4400], path[4500], msg[600], cid[128];
        long newest, prev;
        bool running = f.running;
        snprintf(cid, sizeof(cid), "%s", f.cid != NULL ? f.cid : "");
        if (ag_podlogs_pod_dir(s->cfg.pod_logs_dir, t->ns, t->pod, f.uid, pod_dir,
                               sizeof(pod_dir)) < 0 ||
            snprintf(cdir, sizeof(cdir), "%s/%s", pod_dir, t->container) >= (int)sizeof(cdir) ||
            ag_podlogs_restarts(cdir, &newest, &prev) < 0) {
                snprintf(msg, sizeof(msg), "container \"%s\" in pod \"%s\" is waiting to start",
                         t->container, t->pod);
                ag_napi_found_clear(&f);
                return ag_napi_respond_error(c, 400, msg);
        }
        ag_napi_found_clear(&f);
        if (o.previous && prev < 0) {
                snprintf(msg, sizeof(msg),
                         "previous terminated container \"%s\" in pod \"%s\" not found",
                         t->container, t->pod);
                return ag_napi_respond_error(c, 400, msg);
        }
        snprintf(path, sizeof(path), "%s/%ld.log", cdir, o.previous ? prev : newest);
        struct logstream *l = calloc(1, sizeof(*l));
        if (l == NULL)
                return ag_napi_respond_error(c, 500, "out of memory");
        l->fd = l->ino = l->next_fd = l->wd_file = l->wd_dir = -1;
        l->c = c;
        l->opts = o;
        snprintf(l->path, sizeof(l->path), "%s", path);
        snprintf(l->cid, sizeof(l->cid), "%s", cid);
        l->root_dir = s->cfg.root_dir;
        l->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (l->fd < 0) {
                ag_napi_logstream_free(l);
                snprintf(msg, sizeof(msg), "cannot open the log of container \"%s\": %s",
                         t->container, strerror(errno));
                return ag_napi_respond_error(c, 500, msg);
        }
        if (o.has_tail_lines && ag_log_tail_offset(l->fd, o.tail_lines, &l->off, &err) < 0) {
                ag_napi_logstream_free(l);
                return ag_napi_respond_error(c, 500, err.msg);
        }
        /* follow only the running instance, until its log writer closes:
         * the watch comes first, so an exit after the check still ends it */
        l->follow = o.follow && !o.previous && running;
        if (l->follow) {
                l->ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
                if (l->ino >= 0) {
                        l->wd_file = inotify_add_watch(l->ino, path, FILE_EVENTS);
                        l->wd_dir = inotify_add_watch(l->ino, cdir, IN_CREATE | IN_MOVED_TO);
                }
                if (l->ino < 0 || l->wd_file < 0 || l->wd_dir < 0 ||
                    (l->ino_io = ag_io_new(s->loop, l->ino, EPOLLIN, on_log_change, l, &err)) ==
                        NULL) {
                        ag_napi_logstream_free(l);
                        return ag_napi_respond_error(c, 500, "cannot follow the log file");
                }
                struct rt_container_state cst;
                if (cid[0] == '\0' || rt_container_state(s->cfg.root_dir, cid, &cst, NULL) < 0 ||
                    cst.status != RT_CONTAINER_RUNNING)
                        l->follow = false;
        }
        c->log = l;
        c->mode = C_LOGS;
        ag_napi_conn_head(c, 200, "text/plain", -1);
        write_logs(l);
}

/* At the end of a file that was rotated away: once the new file exists,
 * the old one is read to its end once more (the monitor wrote its last
 * record there before it made the new one), then the stream goes on at the
 * start of the new file -- `kubectl logs -f` across a rotation loses
 * nothing. False: wait (for the new file, through the directory's watch). */
static bool follow_rotation(struct logstream *l)
{
        if (l->next_fd < 0) {
                l->next_fd = open(l->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                struct stat a, b;
                if (l->next_fd >= 0 && fstat(l->fd, &a) == 0 && fstat(l->next_fd, &b) == 0 &&
                    a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
                        /* renamed back (the monitor could not reopen): the
                         * same file, read on where we are */
                        close(l->next_fd);
                        l->next_fd = -1;
                        l->moved = false;
                        return false;
                }
                if (l->next_fd >= 0)
                        return true; /* first: the rest of the old file */
                /* no new file, and none will come: the writer closed the
                 * old one as it exited (the kubelet's isContainerRunning) */
                struct rt_container_state st;
                if (rt_container_state(l->root_dir, l->cid, &st, NULL) < 0 ||
                    st.status != RT_CONTAINER_RUNNING)
                        l->ended = true;
                return false;
        }
        close(l->fd);
        l->fd = l->next_fd;
        l->next_fd = -1;
        l->off = 0;
        l->in_len = 0; /* the old file ended with a whole record */
        l->moved = false;
        (void)inotify_rm_watch(l->ino, l->wd_file);
        l->wd_file = inotify_add_watch(l->ino, l->path, FILE_EVENTS);
        if (l->wd_file < 0)
                l->ended = true;
        return true;
}

/* Renders what the file has now into the connection (a chunk at a time:
 * the rest when the client took it); at the end the connection closes. */
static void write_logs(struct logstream *l)
{
        struct conn *c = l->c;
        if (l->finished)
                return;
        static char o[2 * LOG_CHUNK + 64];
        size_t olen = 0, cap = sizeof(o);
        bool limit_hit = false, eof = false;
        while (olen < LOG_CHUNK && !limit_hit && !eof) {
                ssize_t n = pread(l->fd, l->in + l->in_len, sizeof(l->in) - l->in_len, l->off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        c->dead = true;
                        return;
                }
                eof = n == 0;
                l->off += n;
                l->in_len += (size_t)n;
                size_t start = 0;
                for (;;) {
                        char *nl = memchr(l->in + start, '\n', l->in_len - start);
                        if (nl == NULL)
                                break;
                        size_t rl = (size_t)(nl - (l->in + start));
                        size_t w = ag_log_render(l->in + start, rl, &l->opts, o + olen, cap - olen);
                        if (l->opts.has_limit_bytes &&
                            l->sent + (int64_t)olen + (int64_t)w >= l->opts.limit_bytes) {
                                w = (size_t)(l->opts.limit_bytes - l->sent - (int64_t)olen);
                                limit_hit = true;
                        }
                        olen += w;
                        start += rl + 1;
                        if (limit_hit || olen >= LOG_CHUNK)
                                break;
                }
                if (start == 0 && l->in_len == sizeof(l->in)) {
                        /* a record longer than the buffer: not a CRI log
                         * writer's (they split lines at 16 KiB); skip it */
                        l->in_len = 0;
                } else {
                        memmove(l->in, l->in + start, l->in_len - start);
                        l->in_len -= start;
                }
                if (eof && !limit_hit && l->follow && l->moved && follow_rotation(l))
                        eof = false;
        }
        l->sent += (int64_t)olen;
        ag_napi_conn_write(c, o, olen);
        if (limit_hit || (eof && (!l->follow || l->ended))) {
                l->finished = true;
                c->close_after_flush = true;
        }
        /* not at the end of the file: conn_written asks again once the
         * client took this; at the end: the inotify watch does */
}

void ag_napi_logs_written(struct logstream *l)
{
        if (l != NULL && !l->finished && ag_napi_conn_pending(l->c) < LOG_CHUNK)
                write_logs(l);
}
