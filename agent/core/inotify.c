/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/core/inotify.h"

#include <errno.h>
#include <unistd.h>

uint32_t ag_inotify_drain(int fd, ag_inotify_fn fn, void *data)
{
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        uint32_t mask = 0;
        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return mask;
                for (const char *p = buf; p < buf + n;) {
                        const struct inotify_event *ev = (const struct inotify_event *)p;
                        mask |= ev->mask;
                        if (fn != NULL)
                                fn(ev, data);
                        p += sizeof(*ev) + ev->len;
                }
        }
}
