/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A periodic collector off the agent's loop, as the image and the
 * container garbage collectors (agent/node/imagegc.h, containergc.h) are:
 * a timer on the loop, a job on its own offload queue (one thread, so a
 * reclaim runs after a collection in progress), at most one periodic job
 * queued or running, the timer armed again for the period once that job is
 * done (or could not be queued), and the eviction manager's reclaim: a job
 * of the other kind whose done callback gets the bytes freed.
 *
 * The collector gives what a job is: how it is made on the loop, its work
 * in the worker thread, what is said of it on the loop afterwards, how it
 * is freed. It keeps its own state between runs (previous failures).
 */

#include <stdbool.h>
#include <stdint.h>

#include "agent/core/loop.h"
#include "lib/error.h"

/* The reclaim's result on the loop: the bytes freed and the error (NULL on
 * success); freed -1 with the ops' stopped message when the collector was
 * freed before the job ran. */
typedef void (*ag_periodic_done_fn)(void *data, int64_t freed, const char *error);

struct ag_periodic_ops {
        const char *name;    /* "image garbage collection": allocation errors */
        const char *queue;   /* the offload queue's name */
        const char *stopped; /* the reclaim's error when the job never ran */
        /* The log line of a periodic job that cannot be made or queued: this,
         * then the error. */
        const char *not_queued;
        /* On the loop: a job (reclaim: the eviction manager's), or NULL with
         * err set. */
        void *(*make)(void *owner, bool reclaim, struct cb_error *err);
        /* In the worker thread: only the job's own data. */
        void (*work)(void *job);
        /* On the loop after work: logs, events, the collector's state;
         * returns the run's error (NULL: none; it may point into the job,
         * which is freed after the reclaim's done) and sets *freed. */
        const char *(*finish)(void *owner, void *job, bool reclaim, int64_t *freed);
        void (*free_job)(void *job);
};

struct ag_periodic;

/* ops (static) and owner are borrowed; the timer is not armed. */
int ag_periodic_new(struct ag_loop *loop, const struct ag_periodic_ops *ops, void *owner,
                    uint64_t period_ms, struct ag_periodic **ret, struct cb_error *err);
/* The first run at once (wait.Until), then one every period. */
void ag_periodic_start(struct ag_periodic *p);
/* A reclaim job, after what the queue holds; done on the loop. -1 when the
 * job cannot be made or queued (done is not called). */
int ag_periodic_reclaim(struct ag_periodic *p, ag_periodic_done_fn done, void *data,
                        struct cb_error *err);
/* Stops the timer; the jobs that never ran are freed, reclaims' done
 * called with -1. */
void ag_periodic_free(struct ag_periodic *p);
