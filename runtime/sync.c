/* SPDX-License-Identifier: Apache-2.0 */
/* The sync protocol's messages (runtime/sync.h): one struct rt_sync_msg per
 * SOCK_SEQPACKET message, an fd passed with SCM_RIGHTS where one goes along. */
#include "runtime/sync.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int rt_sync_send(int fd, int type, int64_t value, int64_t value2)
{
        struct rt_sync_msg m = {.type = type, .value = value, .value2 = value2};
        ssize_t n;
        do
                n = send(fd, &m, offsetof(struct rt_sync_msg, msg), MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        return n < 0 ? -1 : 0;
}

int rt_sync_send_error(int fd, const struct cb_error *err)
{
        struct rt_sync_msg m = {.type = RT_SYNC_ERROR, .code = err->code};
        snprintf(m.msg, sizeof(m.msg), "%s", err->msg);
        ssize_t n;
        do
                n = send(fd, &m, sizeof(m), MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        return n < 0 ? -1 : 0;
}

int rt_sync_recv(int fd, struct rt_sync_msg *ret, struct cb_error *err)
{
        memset(ret, 0, sizeof(*ret));
        ssize_t n;
        do
                n = recv(fd, ret, sizeof(*ret), 0);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return cb_error_set(err, errno, "sync socket");
        if (n == 0)
                return 0;
        if ((size_t)n < offsetof(struct rt_sync_msg, msg))
                return cb_error_set(err, EPROTO, "sync socket: short message of %zd bytes", n);
        ret->msg[sizeof(ret->msg) - 1] = '\0';
        return 1;
}

int rt_sync_send_fd(int fd, int type, int passed_fd)
{
        struct rt_sync_msg m = {.type = type};
        struct iovec iov = {.iov_base = &m, .iov_len = offsetof(struct rt_sync_msg, msg)};
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } u;
        memset(&u, 0, sizeof(u));
        struct msghdr mh = {.msg_iov = &iov,
                            .msg_iovlen = 1,
                            .msg_control = u.buf,
                            .msg_controllen = sizeof(u.buf)};
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &passed_fd, sizeof(int));
        ssize_t n;
        do
                n = sendmsg(fd, &mh, MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        return n < 0 ? -1 : 0;
}

int rt_sync_recv_fd(int fd, struct rt_sync_msg *ret, int *ret_fd, struct cb_error *err)
{
        memset(ret, 0, sizeof(*ret));
        *ret_fd = -1;
        struct iovec iov = {.iov_base = ret, .iov_len = sizeof(*ret)};
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } u;
        struct msghdr mh = {.msg_iov = &iov,
                            .msg_iovlen = 1,
                            .msg_control = u.buf,
                            .msg_controllen = sizeof(u.buf)};
        ssize_t n;
        do
                n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return cb_error_set(err, errno, "sync socket");
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm))
                if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
                    cm->cmsg_len == CMSG_LEN(sizeof(int)))
                        memcpy(ret_fd, CMSG_DATA(cm), sizeof(int));
        if (n == 0)
                return 0;
        if ((size_t)n < offsetof(struct rt_sync_msg, msg)) {
                if (*ret_fd >= 0)
                        close(*ret_fd);
                *ret_fd = -1;
                return cb_error_set(err, EPROTO, "sync socket: short message of %zd bytes", n);
        }
        ret->msg[sizeof(ret->msg) - 1] = '\0';
        return 1;
}
