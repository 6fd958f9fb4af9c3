/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/core/wallwatch.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "agent/core/inotify.h"
#include "agent/core/log.h"
#include "lib/cleanup.h"
#include "lib/file.h"
#include "lib/wallclock.h"

struct ag_wallwatch {
        ag_wall_fn fn;
        void *data;
        int tfd;            /* CLOCK_REALTIME, TFD_TIMER_CANCEL_ON_SET */
        struct ag_io *t_io; /* on it */
        int ifd;            /* inotify on the test offset file's directory, or -1 */
        struct ag_io *i_io;
        char base[NAME_MAX + 1];
        bool hit;
};

static const char *env_path(void)
{
        const char *p = getenv(AG_TESTCLOCK_ENV);
        return p && p[0] ? p : NULL;
}

/* Returns 1 when the offset changed. */
static int load(const char *path, struct cb_error *err)
{
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        int64_t off = 0;
        /* A small file the test writes in its own directory. */
        if (cb_read_file(path, 64, &buf, &len, err) < 0 || cb_wall_offset_parse(buf, &off, err) < 0)
                return cb_error_prefix(err, "%s=%s", AG_TESTCLOCK_ENV, path);
        if (off == cb_wall_offset())
                return 0;
        log_warning("test hook %s: the agent's wall clock is now offset by %lld s",
                    AG_TESTCLOCK_ENV, (long long)off);
        cb_wall_set_offset(off);
        return 1;
}

int ag_testclock_init(struct cb_error *err)
{
        const char *p = env_path();
        if (p == NULL)
                return 0;
        if (p[0] != '/')
                return cb_error_set(err, 0, "%s=%s: must be an absolute path (a test hook)",
                                    AG_TESTCLOCK_ENV, p);
        log_warning("test hook %s is set: wall-time decisions follow the offset in %s; never "
                    "set it on a real node",
                    AG_TESTCLOCK_ENV, p);
        if (load(p, err) < 0)
                return -1;
        return 1;
}

/* Far in the future, absolute: it never expires, it is only cancelled. */
static int arm_cancel_on_set(int fd)
{
        struct itimerspec its = {.it_value = {.tv_sec = (time_t)INT32_MAX}};
        return timerfd_settime(fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &its, NULL);
}

static void on_timerfd(struct ag_io *io, int fd, uint32_t events, void *data)
{
        (void)io, (void)events;
        struct ag_wallwatch *w = data;
        uint64_t n;
        ssize_t r = read(fd, &n, sizeof(n));
        if (r >= 0 || errno != ECANCELED)
                return; /* EAGAIN: not for us */
        if (arm_cancel_on_set(fd) < 0)
                log_warning("wall clock watch: timerfd_settime: %s", strerror(errno));
        log_info("the wall clock was set (now %lld): re-arming wall-time deadlines",
                 (long long)cb_wall_now());
        w->fn(w->data);
}

static void on_event(const struct inotify_event *ev, void *data)
{
        struct ag_wallwatch *w = data;
        if (ev->len > 0 && strcmp(ev->name, w->base) == 0)
                w->hit = true;
}

static void on_inotify(struct ag_io *io, int fd, uint32_t events, void *data)
{
        (void)io, (void)events;
        struct ag_wallwatch *w = data;
        w->hit = false;
        ag_inotify_drain(fd, on_event, w);
        if (!w->hit)
                return;
        struct cb_error err = {0};
        const char *p = env_path();
        int r = p != NULL ? load(p, &err) : 0;
        if (r < 0)
                log_warning("%s (the offset stays %lld s)", err.msg, (long long)cb_wall_offset());
        else if (r > 0)
                w->fn(w->data);
}

static int watch_file(struct ag_wallwatch *w, struct ag_loop *loop, const char *p,
                      struct cb_error *err)
{
        const char *slash = strrchr(p, '/');
        char dir[PATH_MAX];
        size_t dl = (size_t)(slash - p);
        if (dl == 0)
                dl = 1;
        if (dl >= sizeof(dir) || slash[1] == '\0' || strlen(slash + 1) >= sizeof(w->base))
                return cb_error_set(err, 0, "%s=%s: not a file path", AG_TESTCLOCK_ENV, p);
        memcpy(dir, p, dl);
        dir[dl] = '\0';
        snprintf(w->base, sizeof(w->base), "%s", slash + 1);
        w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (w->ifd < 0 || inotify_add_watch(w->ifd, dir, IN_CLOSE_WRITE | IN_MOVED_TO) < 0)
                return cb_error_set(err, errno, "%s: inotify on %s", AG_TESTCLOCK_ENV, dir);
        w->i_io = ag_io_new(loop, w->ifd, EPOLLIN, on_inotify, w, err);
        return w->i_io ? 0 : -1;
}

int ag_wallwatch_new(struct ag_loop *loop, ag_wall_fn fn, void *data, struct ag_wallwatch **ret,
                     struct cb_error *err)
{
        struct ag_wallwatch *w = calloc(1, sizeof(*w));
        if (w == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        w->fn = fn;
        w->data = data;
        w->ifd = -1;
        w->tfd = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC);
        if (w->tfd < 0 || arm_cancel_on_set(w->tfd) < 0) {
                cb_error_set(err, errno, "wall clock watch: a CLOCK_REALTIME timerfd");
                ag_wallwatch_free(w);
                return -1;
        }
        w->t_io = ag_io_new(loop, w->tfd, EPOLLIN, on_timerfd, w, err);
        const char *p = env_path();
        if (w->t_io == NULL || (p != NULL && p[0] == '/' && watch_file(w, loop, p, err) < 0)) {
                ag_wallwatch_free(w);
                return -1;
        }
        *ret = w;
        return 0;
}

void ag_wallwatch_free(struct ag_wallwatch *w)
{
        if (w == NULL)
                return;
        ag_io_free(w->t_io);
        ag_io_free(w->i_io);
        if (w->tfd >= 0)
                close(w->tfd);
        if (w->ifd >= 0)
                close(w->ifd);
        free(w);
}
