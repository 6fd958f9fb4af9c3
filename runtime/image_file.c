/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading a file out of an image (its /etc/passwd for a user given by
 * name): the image is content an attacker may have written, so the path is
 * resolved inside each layer's root with openat2(RESOLVE_IN_ROOT |
 * RESOLVE_NO_MAGICLINKS) (a symlink to /etc/shadow resolves inside the
 * layer), only a regular file is read (a FIFO or a device is refused
 * without blocking: O_NONBLOCK, then fstat), and at most max bytes.
 */
#include "runtime/image.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/cleanup.h"
#include "runtime/syscalls.h"

static int open_in(const char *root, const char *rel, int flags)
{
        _cleanup_close_ int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0)
                return -1;
        struct rt_open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC),
                                  .resolve = RT_RESOLVE_IN_ROOT | RT_RESOLVE_NO_MAGICLINKS};
        return rt_openat2(rootfd, rel, &how);
}

/* An overlay whiteout for rel (".wh.<name>" beside it) in this layer. */
static bool whiteout(const char *root, const char *rel)
{
        const char *slash = strrchr(rel, '/');
        char wh[4096];
        int n = slash ? snprintf(wh, sizeof(wh), "%.*s/.wh.%s", (int)(slash - rel), rel, slash + 1)
                      : snprintf(wh, sizeof(wh), ".wh.%s", rel);
        if (n < 0 || (size_t)n >= sizeof(wh))
                return false;
        int fd = open_in(root, wh, O_PATH | O_NOFOLLOW);
        if (fd < 0)
                return false;
        close(fd);
        return true;
}

int rt_image_read_file(const struct rt_image *img, const char *rel, size_t max, char **ret,
                       struct cb_error *err)
{
        *ret = NULL;
        for (size_t i = img->n_layers; i-- > 0;) {
                int fd = open_in(img->layer_dirs[i], rel, O_RDONLY | O_NONBLOCK | O_NOCTTY);
                if (fd < 0) {
                        if (errno == ENOSYS)
                                return cb_error_set(err, errno,
                                                    "image %s: cannot resolve %s inside the image "
                                                    "(openat2)",
                                                    img->ref, rel);
                        if (whiteout(img->layer_dirs[i], rel))
                                return 0; /* deleted by this layer */
                        continue;
                }
                _cleanup_close_ int f = fd;
                struct stat st;
                if (fstat(f, &st) < 0)
                        return cb_error_set(err, errno, "image %s: %s", img->ref, rel);
                if (!S_ISREG(st.st_mode))
                        return cb_error_set(err, 0, "image %s: %s is not a regular file", img->ref,
                                            rel);
                if ((uint64_t)st.st_size > max)
                        return cb_error_set(err, 0, "image %s: %s is larger than %zu bytes",
                                            img->ref, rel, max);
                _cleanup_free_ char *buf = malloc((size_t)st.st_size + 1);
                if (buf == NULL)
                        return cb_error_set(err, ENOMEM, "image %s: %s", img->ref, rel);
                size_t got = 0;
                while (got < (size_t)st.st_size) {
                        ssize_t r = read(f, buf + got, (size_t)st.st_size - got);
                        if (r < 0 && errno == EINTR)
                                continue;
                        if (r < 0)
                                return cb_error_set(err, errno, "image %s: reading %s", img->ref,
                                                    rel);
                        if (r == 0)
                                break;
                        got += (size_t)r;
                }
                buf[got] = '\0';
                *ret = steal_pointer(&buf);
                return 0;
        }
        return 0;
}
