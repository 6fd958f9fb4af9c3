/* SPDX-License-Identifier: Apache-2.0 */
/* rt_sandbox_dial (runtime/sandbox.h): a connection inside a pod's network
 * namespace without moving any long-lived thread into it. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/cleanup.h"
#include "runtime/sandbox.h"

struct dial {
        const char *netns_path;
        uint16_t port;
        int fd;
        int error;
        const char *step;
};

static int connect_local(int family, uint16_t port, int *ret_fd)
{
        int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        struct sockaddr_storage ss;
        socklen_t len;
        memset(&ss, 0, sizeof(ss));
        if (family == AF_INET) {
                struct sockaddr_in *a = (struct sockaddr_in *)&ss;
                a->sin_family = AF_INET;
                a->sin_port = htons(port);
                a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                len = sizeof(*a);
        } else {
                struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
                a->sin6_family = AF_INET6;
                a->sin6_port = htons(port);
                a->sin6_addr = in6addr_loopback;
                len = sizeof(*a);
        }
        /* loopback: the connect completes (or is refused) at once */
        if (connect(fd, (struct sockaddr *)&ss, len) < 0) {
                int e = errno;
                close(fd);
                return -e;
        }
        /* relayed bytes go out as they come, as Go's dialer (containerd's
         * port forward) has it */
        int one = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        *ret_fd = fd;
        return 0;
}

static void *dial_thread(void *arg)
{
        struct dial *d = arg;
        if (d->netns_path != NULL && d->netns_path[0] != '\0') {
                _cleanup_close_ int ns = open(d->netns_path, O_RDONLY | O_CLOEXEC);
                if (ns < 0) {
                        d->error = errno;
                        d->step = "open the network namespace";
                        return NULL;
                }
                /* this thread only: it ends right after */
                if (setns(ns, CLONE_NEWNET) < 0) {
                        d->error = errno;
                        d->step = "enter the network namespace";
                        return NULL;
                }
        }
        int r = connect_local(AF_INET, d->port, &d->fd);
        if (r < 0) {
                int r6 = connect_local(AF_INET6, d->port, &d->fd);
                if (r6 < 0) {
                        /* the IPv4 answer is the one people expect to see */
                        d->error = -r;
                        d->step = "connect";
                        return NULL;
                }
        }
        return NULL;
}

int rt_sandbox_dial(const char *netns_path, uint16_t port, int *ret_fd, struct cb_error *err)
{
        struct dial d = {.netns_path = netns_path, .port = port, .fd = -1};
        pthread_t t;
        int r = pthread_create(&t, NULL, dial_thread, &d);
        if (r != 0)
                return cb_error_set(err, r, "cannot start the dial thread");
        pthread_join(t, NULL);
        if (d.fd < 0 && d.step != NULL && strcmp(d.step, "connect") != 0)
                return cb_error_set(err, d.error, "cannot %s %s: %s", d.step, netns_path,
                                    strerror(d.error));
        if (d.fd < 0) {
                /* worded like containerd's PortForward error */
                char reason[128];
                snprintf(reason, sizeof(reason), "%s", strerror(d.error));
                reason[0] = (char)tolower((unsigned char)reason[0]);
                cb_error_set(err, 0,
                             "failed to connect to localhost:%u inside namespace \"%s\": "
                             "dial tcp4 127.0.0.1:%u: connect: %s",
                             (unsigned)port, netns_path && netns_path[0] ? netns_path : "host",
                             (unsigned)port, reason);
                if (err != NULL)
                        err->code = d.error;
                return -1;
        }
        int fl = fcntl(d.fd, F_GETFL);
        if (fl < 0 || fcntl(d.fd, F_SETFL, fl | O_NONBLOCK) < 0) {
                int e = errno;
                close(d.fd);
                return cb_error_set(err, e, "O_NONBLOCK");
        }
        *ret_fd = d.fd;
        return 0;
}
