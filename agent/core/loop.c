/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/core/loop.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define MAX_EVENTS 64

enum io_kind { IO_FD, IO_TIMER, IO_SIGNAL };

struct ag_io {
        struct ag_loop *loop;
        enum io_kind kind;
        int fd;
        bool owns_fd; /* timerfd, signalfd */
        bool dead;
        uint32_t events;
        ag_io_fn fn;
        void *data;
        struct ag_io *next, *prev; /* all watchers of the loop */
        struct ag_io *next_dead;   /* freed, waiting for the reap */
};

struct ag_timer {
        struct ag_io io; /* first: the epoll cookie points here */
        bool armed;
        ag_timer_fn fn;
        void *data;
};

struct signal_watch {
        struct ag_io io;
        sigset_t mask;
        ag_signal_fn fn;
        void *data;
};

struct ag_loop {
        int epfd;
        bool quit;
        int dispatching;
        struct ag_io *watchers;
        struct ag_io *dead; /* freed watchers, released after the dispatch */
        struct signal_watch *signals;
};

uint64_t ag_now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int ag_loop_new(struct ag_loop **ret, struct cb_error *err)
{
        struct ag_loop *l = calloc(1, sizeof(*l));
        if (l == NULL)
                return cb_error_set(err, ENOMEM, "cannot allocate the event loop");
        l->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (l->epfd < 0) {
                int e = errno;
                free(l);
                return cb_error_set(err, e, "epoll_create1 failed");
        }
        *ret = l;
        return 0;
}

static void io_release(struct ag_io *io)
{
        if (io->owns_fd && io->fd >= 0)
                close(io->fd);
        free(io);
}

/* Frees the watchers marked dead; only outside a dispatch batch. Only the
 * dead are visited: a node with 110 pods has over a thousand timers, and
 * walking all of them after every loop iteration showed in a burst's
 * profile. */
static void reap(struct ag_loop *l)
{
        while (l->dead != NULL) {
                struct ag_io *io = l->dead;
                l->dead = io->next_dead;
                if (io->prev != NULL)
                        io->prev->next = io->next;
                else
                        l->watchers = io->next;
                if (io->next != NULL)
                        io->next->prev = io->prev;
                io_release(io);
        }
}

void ag_loop_free(struct ag_loop *l)
{
        if (l == NULL)
                return;
        if (l->signals != NULL)
                sigprocmask(SIG_UNBLOCK, &l->signals->mask, NULL);
        struct ag_io *io = l->watchers;
        while (io != NULL) {
                struct ag_io *next = io->next;
                io_release(io);
                io = next;
        }
        close(l->epfd);
        free(l);
}

static int io_register(struct ag_loop *l, struct ag_io *io, struct cb_error *err)
{
        struct epoll_event ev = {.events = io->events, .data.ptr = io};
        if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, io->fd, &ev) < 0)
                return cb_error_set(err, errno, "epoll_ctl ADD fd %d failed", io->fd);
        io->loop = l;
        io->next = l->watchers;
        io->prev = NULL;
        if (l->watchers != NULL)
                l->watchers->prev = io;
        l->watchers = io;
        return 0;
}

struct ag_io *ag_io_new(struct ag_loop *l, int fd, uint32_t events, ag_io_fn fn, void *data,
                        struct cb_error *err)
{
        struct ag_io *io = calloc(1, sizeof(*io));
        if (io == NULL) {
                cb_error_set(err, ENOMEM, "cannot allocate an fd watcher");
                return NULL;
        }
        *io = (struct ag_io){.kind = IO_FD, .fd = fd, .events = events, .fn = fn, .data = data};
        if (io_register(l, io, err) < 0) {
                free(io);
                return NULL;
        }
        return io;
}

int ag_io_set_events(struct ag_io *io, uint32_t events, struct cb_error *err)
{
        if (io->events == events)
                return 0;
        struct epoll_event ev = {.events = events, .data.ptr = io};
        if (epoll_ctl(io->loop->epfd, EPOLL_CTL_MOD, io->fd, &ev) < 0)
                return cb_error_set(err, errno, "epoll_ctl MOD fd %d failed", io->fd);
        io->events = events;
        return 0;
}

void ag_io_free(struct ag_io *io)
{
        if (io == NULL || io->dead)
                return;
        /* The fd may already be closed by its owner (curl closes sockets
         * before telling us); epoll then dropped it by itself. */
        epoll_ctl(io->loop->epfd, EPOLL_CTL_DEL, io->fd, NULL);
        if (io->owns_fd) {
                close(io->fd);
                io->fd = -1;
        }
        io->dead = true;
        io->next_dead = io->loop->dead;
        io->loop->dead = io;
        if (io->loop->dispatching == 0)
                reap(io->loop);
}

struct ag_timer *ag_timer_new(struct ag_loop *l, ag_timer_fn fn, void *data, struct cb_error *err)
{
        struct ag_timer *t = calloc(1, sizeof(*t));
        if (t == NULL) {
                cb_error_set(err, ENOMEM, "cannot allocate a timer");
                return NULL;
        }
        t->io.kind = IO_TIMER;
        t->io.owns_fd = true;
        t->io.events = EPOLLIN;
        t->fn = fn;
        t->data = data;
        t->io.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        if (t->io.fd < 0) {
                cb_error_set(err, errno, "timerfd_create failed");
                free(t);
                return NULL;
        }
        if (io_register(l, &t->io, err) < 0) {
                close(t->io.fd);
                free(t);
                return NULL;
        }
        return t;
}

int ag_timer_arm(struct ag_timer *t, uint64_t ms)
{
        /* it_value 0 would disarm: fire after 1 ns instead. */
        struct itimerspec its = {
            .it_value = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L},
        };
        if (ms == 0)
                its.it_value.tv_nsec = 1;
        if (timerfd_settime(t->io.fd, 0, &its, NULL) < 0)
                return -1;
        t->armed = true;
        return 0;
}

void ag_timer_disarm(struct ag_timer *t)
{
        if (t == NULL)
                return;
        struct itimerspec its = {0};
        timerfd_settime(t->io.fd, 0, &its, NULL);
        /* Drain an expiry already queued so it does not fire later. */
        uint64_t n;
        while (read(t->io.fd, &n, sizeof(n)) == (ssize_t)sizeof(n))
                ;
        t->armed = false;
}

int ag_timer_armed(const struct ag_timer *t)
{
        return t != NULL && t->armed;
}

void ag_timer_free(struct ag_timer *t)
{
        if (t != NULL)
                ag_io_free(&t->io);
}

int ag_loop_add_signals(struct ag_loop *l, const sigset_t *mask, ag_signal_fn fn, void *data,
                        struct cb_error *err)
{
        if (l->signals != NULL)
                return cb_error_set(err, EBUSY, "the loop already has a signal watcher");
        struct signal_watch *s = calloc(1, sizeof(*s));
        if (s == NULL)
                return cb_error_set(err, ENOMEM, "cannot allocate the signal watcher");
        s->mask = *mask;
        s->fn = fn;
        s->data = data;
        s->io.kind = IO_SIGNAL;
        s->io.owns_fd = true;
        s->io.events = EPOLLIN;
        if (sigprocmask(SIG_BLOCK, mask, NULL) < 0) {
                int e = errno;
                free(s);
                return cb_error_set(err, e, "sigprocmask failed");
        }
        s->io.fd = signalfd(-1, mask, SFD_NONBLOCK | SFD_CLOEXEC);
        if (s->io.fd < 0) {
                int e = errno;
                sigprocmask(SIG_UNBLOCK, mask, NULL);
                free(s);
                return cb_error_set(err, e, "signalfd failed");
        }
        if (io_register(l, &s->io, err) < 0) {
                sigprocmask(SIG_UNBLOCK, mask, NULL);
                close(s->io.fd);
                free(s);
                return -1;
        }
        l->signals = s;
        return 0;
}

static void dispatch(struct ag_io *io, uint32_t events)
{
        switch (io->kind) {
        case IO_FD:
                io->fn(io, io->fd, events, io->data);
                break;
        case IO_TIMER: {
                struct ag_timer *t = (struct ag_timer *)io;
                uint64_t n;
                /* EAGAIN: disarmed or re-armed since the event was queued. */
                if (read(io->fd, &n, sizeof(n)) != (ssize_t)sizeof(n))
                        break;
                t->armed = false;
                t->fn(t, t->data);
                break;
        }
        case IO_SIGNAL: {
                struct signal_watch *s = (struct signal_watch *)io;
                struct signalfd_siginfo si;
                while (!io->dead && read(io->fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
                        s->fn(io->loop, (int)si.ssi_signo, s->data);
                break;
        }
        }
}

/* per thread: the loops whose callbacks it is dispatching */
static _Thread_local int in_callback;

int ag_loop_in_callback(void)
{
        return in_callback > 0;
}

int ag_loop_run(struct ag_loop *l, struct cb_error *err)
{
        l->quit = false;
        while (!l->quit) {
                struct epoll_event evs[MAX_EVENTS];
                int n = epoll_wait(l->epfd, evs, MAX_EVENTS, -1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return cb_error_set(err, errno, "epoll_wait failed");
                }
                l->dispatching++;
                in_callback++;
                for (int i = 0; i < n; i++) {
                        struct ag_io *io = evs[i].data.ptr;
                        if (!io->dead)
                                dispatch(io, evs[i].events);
                }
                in_callback--;
                l->dispatching--;
                reap(l);
        }
        return 0;
}

void ag_loop_quit(struct ag_loop *l)
{
        l->quit = true;
}
