/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The agent's one event loop: epoll over file descriptors, timers (one
 * timerfd each, CLOCK_MONOTONIC) and signals (signalfd). Everything the
 * agent does is a callback from ag_loop_run(); nothing polls or sleeps.
 *
 * Watchers may be freed from any callback, including their own and other
 * watchers' of the same epoll batch: freeing only marks them, and the
 * memory is released after the batch is dispatched.
 */

#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h> /* EPOLLIN, EPOLLOUT for ag_io_new */

#include "lib/error.h"

struct ag_loop;
struct ag_io;
struct ag_timer;

typedef void (*ag_io_fn)(struct ag_io *io, int fd, uint32_t events, void *data);
typedef void (*ag_timer_fn)(struct ag_timer *t, void *data);
typedef void (*ag_signal_fn)(struct ag_loop *loop, int signo, void *data);

int ag_loop_new(struct ag_loop **ret, struct cb_error *err);
/* Frees every watcher still registered (their callbacks are not called). */
void ag_loop_free(struct ag_loop *loop);

/* Runs until ag_loop_quit(); returns 0, or -1 when epoll itself fails. */
int ag_loop_run(struct ag_loop *loop, struct cb_error *err);
void ag_loop_quit(struct ag_loop *loop);

/* Watches fd (not owned) for EPOLLIN/EPOLLOUT. */
struct ag_io *ag_io_new(struct ag_loop *loop, int fd, uint32_t events, ag_io_fn fn, void *data,
                        struct cb_error *err);
int ag_io_set_events(struct ag_io *io, uint32_t events, struct cb_error *err);
void ag_io_free(struct ag_io *io);

/* A disarmed one-shot timer. */
struct ag_timer *ag_timer_new(struct ag_loop *loop, ag_timer_fn fn, void *data,
                              struct cb_error *err);
/* (Re)arms the timer to fire once after ms milliseconds (0: on the next
 * loop iteration). */
int ag_timer_arm(struct ag_timer *t, uint64_t ms);
void ag_timer_disarm(struct ag_timer *t);
int ag_timer_armed(const struct ag_timer *t);
void ag_timer_free(struct ag_timer *t);

/* Blocks the signals in mask (sigprocmask) and delivers them through a
 * signalfd to fn. One call per loop. */
int ag_loop_add_signals(struct ag_loop *loop, const sigset_t *mask, ag_signal_fn fn, void *data,
                        struct cb_error *err);

/* Whether the calling thread is dispatching a callback of ag_loop_run (a
 * watcher's, a timer's, an offload job's done): work that can block has
 * no business there. Offload worker threads and code outside the loop get
 * false. */
int ag_loop_in_callback(void);

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t ag_now_ms(void);
