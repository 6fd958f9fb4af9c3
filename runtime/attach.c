/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The attach socket's wire format and its client side (runtime/attach.h).
 * The server side is the container's monitor (runtime/monitor.c).
 */
#include "runtime/attach.h"

#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/cleanup.h"
#include "runtime/container.h"
#include "runtime/container_internal.h"

/* An error that is not a failed system call: the code for the caller to
 * test, without cb_error_set's ": <strerror>" suffix. */
__attribute__((format(printf, 3, 4))) static int fail(struct cb_error *err, int code,
                                                      const char *fmt, ...)
{
        if (err == NULL)
                return -1;
        va_list ap;
        va_start(ap, fmt);
        cb_error_setv(err, 0, fmt, ap);
        va_end(ap);
        err->code = code;
        return -1;
}

int rt_attach_encode_stdin(uint8_t *buf, size_t size, const void *data, size_t len,
                           struct cb_error *err)
{
        if (len > RT_ATTACH_MAX)
                return fail(err, EINVAL, "attach: %zu bytes of input in one message (at most %d)",
                            len, RT_ATTACH_MAX);
        if (size < len + 1)
                return fail(err, EINVAL, "attach: buffer of %zu bytes too small", size);
        buf[0] = RT_ATTACH_MSG_STDIN;
        if (len > 0)
                memcpy(buf + 1, data, len);
        return (int)(len + 1);
}

int rt_attach_encode_close(uint8_t *buf, size_t size, struct cb_error *err)
{
        if (size < 1)
                return fail(err, EINVAL, "attach: buffer of %zu bytes too small", size);
        buf[0] = RT_ATTACH_MSG_CLOSE;
        return 1;
}

int rt_attach_encode_resize(uint8_t *buf, size_t size, uint16_t width, uint16_t height,
                            struct cb_error *err)
{
        if (width == 0 || height == 0)
                return fail(err, EINVAL, "attach: terminal size %ux%u: both must be > 0",
                            (unsigned)width, (unsigned)height);
        if (size < 5)
                return fail(err, EINVAL, "attach: buffer of %zu bytes too small", size);
        buf[0] = RT_ATTACH_MSG_RESIZE;
        buf[1] = (uint8_t)(width >> 8);
        buf[2] = (uint8_t)width;
        buf[3] = (uint8_t)(height >> 8);
        buf[4] = (uint8_t)height;
        return 5;
}

int rt_attach_decode(const uint8_t *buf, size_t len, struct rt_attach_msg *ret,
                     struct cb_error *err)
{
        memset(ret, 0, sizeof(*ret));
        if (len == 0)
                return fail(err, EPROTO, "attach: empty message");
        switch (buf[0]) {
        case RT_ATTACH_MSG_STDIN:
                if (len - 1 > RT_ATTACH_MAX)
                        return fail(err, EPROTO, "attach: input message of %zu bytes (at most %d)",
                                    len - 1, RT_ATTACH_MAX);
                ret->type = RT_ATTACH_MSG_STDIN;
                ret->data = buf + 1;
                ret->len = len - 1;
                return 0;
        case RT_ATTACH_MSG_CLOSE:
                if (len != 1)
                        return fail(err, EPROTO, "attach: close message of %zu bytes (want 1)",
                                    len);
                ret->type = RT_ATTACH_MSG_CLOSE;
                return 0;
        case RT_ATTACH_MSG_RESIZE:
                if (len != 5)
                        return fail(err, EPROTO, "attach: resize message of %zu bytes (want 5)",
                                    len);
                ret->type = RT_ATTACH_MSG_RESIZE;
                ret->width = (uint16_t)(buf[1] << 8 | buf[2]);
                ret->height = (uint16_t)(buf[3] << 8 | buf[4]);
                if (ret->width == 0 || ret->height == 0)
                        return fail(err, EPROTO, "attach: terminal size %ux%u",
                                    (unsigned)ret->width, (unsigned)ret->height);
                return 0;
        default:
                return fail(err, EPROTO, "attach: unknown message type 0x%02x", buf[0]);
        }
}

int rt_attach_path(const char *root_dir, const char *cid, char *buf, size_t size,
                   struct cb_error *err)
{
        char dir[RT_PATH_MAX];
        if (rt_container_dir(root_dir, cid, dir, sizeof(dir), err) < 0)
                return -1;
        if ((size_t)snprintf(buf, size, "%s/%s", dir, RT_ATTACH_SOCKET) >= size)
                return cb_error_set(err, ENAMETOOLONG, "attach socket path of %s is too long", cid);
        return 0;
}

int rt_attach_sockaddr(int dirfd, struct sockaddr_un *ret, socklen_t *ret_len)
{
        memset(ret, 0, sizeof(*ret));
        ret->sun_family = AF_UNIX;
        /* through the directory fd: a long --root-dir cannot overflow
         * sun_path (108 bytes) */
        int n = snprintf(ret->sun_path, sizeof(ret->sun_path), "/proc/self/fd/%d/%s", dirfd,
                         RT_ATTACH_SOCKET);
        *ret_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)n + 1);
        return 0;
}

int rt_attach_open(const char *root_dir, const char *cid, int *ret_fd, struct cb_error *err)
{
        struct rt_container_state st;
        if (rt_container_state(root_dir, cid, &st, err) < 0)
                return -1;
        if (st.status != RT_CONTAINER_RUNNING)
                return fail(err, ESRCH, "container %s is not running", cid);
        if (!st.stdin_open && !st.tty)
                return fail(err, ENXIO, "container %s was created without stdin", cid);
        char dir[RT_PATH_MAX];
        if (rt_container_dir(root_dir, cid, dir, sizeof(dir), err) < 0)
                return -1;
        _cleanup_close_ int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return cb_error_set(err, errno, "cannot open %s", dir);
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return cb_error_set(err, errno, "cannot create a socket");
        struct sockaddr_un sa;
        socklen_t sl;
        rt_attach_sockaddr(dfd, &sa, &sl);
        int r;
        do
                r = connect(fd, (struct sockaddr *)&sa, sl);
        while (r < 0 && errno == EINTR);
        if (r < 0) {
                if (errno == ENOENT || errno == ECONNREFUSED)
                        return fail(err, EPIPE, "container %s: its stdin is closed", cid);
                if (errno == EAGAIN)
                        return fail(err, EAGAIN,
                                    "container %s: too many attach connections waiting", cid);
                return cb_error_set(err, errno, "container %s: cannot connect to %s/%s", cid, dir,
                                    RT_ATTACH_SOCKET);
        }
        *ret_fd = take_fd(&fd);
        return 0;
}

static int send_msg(int fd, const uint8_t *buf, size_t len, struct cb_error *err)
{
        ssize_t n;
        do
                n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                        return -EAGAIN;
                if (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN)
                        return fail(err, EPIPE,
                                    "attach: the container's stdin is closed (or it ended)");
                return cb_error_set(err, errno, "attach: send");
        }
        return 0;
}

int rt_attach_stdin(int fd, const void *buf, size_t len, struct cb_error *err)
{
        /* On the heap, sized to the message: a thread-local buffer of
         * RT_ATTACH_MAX would be zeroed into every thread's TLS. */
        if (len > RT_ATTACH_MAX)
                return rt_attach_encode_stdin(NULL, 0, buf, len, err);
        _cleanup_free_ uint8_t *msg = malloc(1 + len);
        if (msg == NULL)
                return cb_error_set(err, ENOMEM, "attach: out of memory");
        int n = rt_attach_encode_stdin(msg, 1 + len, buf, len, err);
        if (n < 0)
                return -1;
        return send_msg(fd, msg, (size_t)n, err);
}

int rt_attach_close_stdin(int fd, struct cb_error *err)
{
        uint8_t msg[1];
        int n = rt_attach_encode_close(msg, sizeof(msg), err);
        if (n < 0)
                return -1;
        return send_msg(fd, msg, (size_t)n, err);
}

int rt_attach_resize(int fd, uint16_t width, uint16_t height, struct cb_error *err)
{
        uint8_t msg[5];
        int n = rt_attach_encode_resize(msg, sizeof(msg), width, height, err);
        if (n < 0)
                return -1;
        return send_msg(fd, msg, (size_t)n, err);
}
