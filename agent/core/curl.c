/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/core/curl.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>

struct ag_curl {
        struct ag_loop *loop;
        CURLM *multi;
        struct ag_timer *timer;
        ag_curl_done_fn done;
        ag_curl_after_fn after;
        void *data;
        int depth; /* inside curl_multi_socket_action */
};

void ag_curl_check(struct ag_curl *c)
{
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(c->multi, &left)) != NULL) {
                if (m->msg != CURLMSG_DONE)
                        continue;
                CURL *easy = m->easy_handle;
                CURLcode rc = m->data.result;
                curl_multi_remove_handle(c->multi, easy);
                c->done(easy, rc, c->data);
        }
        if (c->after != NULL)
                c->after(c->data);
}

static void action(struct ag_curl *c, curl_socket_t fd, int flags)
{
        int running;
        c->depth++;
        curl_multi_socket_action(c->multi, fd, flags, &running);
        c->depth--;
        ag_curl_check(c);
}

static void on_io(struct ag_io *io, int fd, uint32_t events, void *data)
{
        int flags = 0;
        (void)io;
        if (events & EPOLLIN)
                flags |= CURL_CSELECT_IN;
        if (events & EPOLLOUT)
                flags |= CURL_CSELECT_OUT;
        if (events & (EPOLLERR | EPOLLHUP))
                flags |= CURL_CSELECT_ERR;
        action(data, fd, flags);
}

static int on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
        struct ag_curl *c = userp;
        struct ag_io *io = socketp;
        (void)easy;
        if (what == CURL_POLL_REMOVE) {
                ag_io_free(io);
                curl_multi_assign(c->multi, s, NULL);
                return 0;
        }
        uint32_t ev = 0;
        if (what & CURL_POLL_IN)
                ev |= EPOLLIN;
        if (what & CURL_POLL_OUT)
                ev |= EPOLLOUT;
        if (io == NULL) {
                io = ag_io_new(c->loop, s, ev, on_io, c, NULL);
                if (io == NULL)
                        return -1;
                curl_multi_assign(c->multi, s, io);
                return 0;
        }
        return ag_io_set_events(io, ev, NULL) < 0 ? -1 : 0;
}

static int on_timer(CURLM *multi, long timeout_ms, void *userp)
{
        struct ag_curl *c = userp;
        (void)multi;
        if (timeout_ms < 0)
                ag_timer_disarm(c->timer);
        else if (ag_timer_arm(c->timer, (uint64_t)timeout_ms) < 0)
                return -1;
        return 0;
}

static void on_timeout(struct ag_timer *t, void *data)
{
        (void)t;
        action(data, CURL_SOCKET_TIMEOUT, 0);
}

int ag_curl_new(struct ag_loop *loop, ag_curl_done_fn done, ag_curl_after_fn after, void *data,
                struct ag_curl **ret, struct cb_error *err)
{
        struct ag_curl *c = calloc(1, sizeof(*c));
        if (c == NULL)
                return cb_error_set(err, ENOMEM, "libcurl multi handle");
        *c = (struct ag_curl){.loop = loop, .done = done, .after = after, .data = data};
        c->multi = curl_multi_init();
        c->timer = ag_timer_new(loop, on_timeout, c, err);
        if (c->multi == NULL || c->timer == NULL) {
                ag_curl_free(c);
                return cb_error_set(err, 0, "cannot set up a libcurl multi handle");
        }
        curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
        curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
        curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_timer);
        curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
        *ret = c;
        return 0;
}

CURLM *ag_curl_multi(const struct ag_curl *c)
{
        return c->multi;
}

bool ag_curl_in_callback(const struct ag_curl *c)
{
        return c->depth > 0;
}

void ag_curl_free(struct ag_curl *c)
{
        if (c == NULL)
                return;
        if (c->multi != NULL)
                curl_multi_cleanup(c->multi);
        ag_timer_free(c->timer);
        free(c);
}
