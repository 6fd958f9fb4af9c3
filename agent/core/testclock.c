/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/core/testclock.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "agent/core/inotify.h"
#include "agent/core/log.h"
#include "lib/cleanup.h"
#include "lib/file.h"
#include "lib/wallclock.h"

struct ag_testclock {
        int fd;
        struct ag_io *io;
        char dir[PATH_MAX], base[NAME_MAX + 1];
        bool hit;
};

static const char *env_path(void)
{
        const char *p = getenv(AG_TESTCLOCK_ENV);
        return p && p[0] ? p : NULL;
}

static int load(const char *path, struct cb_error *err)
{
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        int64_t off = 0;
        /* A small file the test writes in its own directory. */
        if (cb_read_file(path, 64, &buf, &len, err) < 0 || cb_wall_offset_parse(buf, &off, err) < 0)
                return cb_error_prefix(err, "%s=%s", AG_TESTCLOCK_ENV, path);
        if (off != cb_wall_offset())
                log_warning("test hook %s: the agent's wall clock is now offset by %lld s",
                            AG_TESTCLOCK_ENV, (long long)off);
        cb_wall_set_offset(off);
        return 0;
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

static void on_event(const struct inotify_event *ev, void *data)
{
        struct ag_testclock *tc = data;
        if (ev->len > 0 && strcmp(ev->name, tc->base) == 0)
                tc->hit = true;
}

static void on_io(struct ag_io *io, int fd, uint32_t events, void *data)
{
        (void)io, (void)events;
        struct ag_testclock *tc = data;
        tc->hit = false;
        ag_inotify_drain(fd, on_event, tc);
        if (!tc->hit)
                return;
        struct cb_error err = {0};
        const char *p = env_path();
        if (p != NULL && load(p, &err) < 0)
                log_warning("%s (the offset stays %lld s)", err.msg, (long long)cb_wall_offset());
}

int ag_testclock_watch(struct ag_loop *loop, struct ag_testclock **ret, struct cb_error *err)
{
        *ret = NULL;
        const char *p = env_path();
        if (p == NULL || p[0] != '/')
                return 0;
        struct ag_testclock *tc = calloc(1, sizeof(*tc));
        if (tc == NULL)
                return cb_error_set(err, ENOMEM, "out of memory");
        const char *slash = strrchr(p, '/');
        size_t dl = (size_t)(slash - p);
        if (dl == 0)
                dl = 1;
        if (dl >= sizeof(tc->dir) || strlen(slash + 1) >= sizeof(tc->base) || slash[1] == '\0') {
                free(tc);
                return cb_error_set(err, 0, "%s=%s: not a file path", AG_TESTCLOCK_ENV, p);
        }
        memcpy(tc->dir, p, dl);
        tc->dir[dl] = '\0';
        snprintf(tc->base, sizeof(tc->base), "%s", slash + 1);
        tc->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (tc->fd < 0 || inotify_add_watch(tc->fd, tc->dir, IN_CLOSE_WRITE | IN_MOVED_TO) < 0) {
                int e = errno;
                if (tc->fd >= 0)
                        close(tc->fd);
                free(tc);
                return cb_error_set(err, e, "%s: inotify on %s", AG_TESTCLOCK_ENV, p);
        }
        tc->io = ag_io_new(loop, tc->fd, EPOLLIN, on_io, tc, err);
        if (tc->io == NULL) {
                close(tc->fd);
                free(tc);
                return -1;
        }
        *ret = tc;
        return 0;
}

void ag_testclock_free(struct ag_testclock *tc)
{
        if (tc == NULL)
                return;
        ag_io_free(tc->io);
        close(tc->fd);
        free(tc);
}
