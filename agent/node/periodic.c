/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/node/periodic.h"

#include <errno.h>
#include <stdlib.h>

#include "agent/core/log.h"
#include "agent/core/offload.h"

struct ag_periodic {
        const struct ag_periodic_ops *ops;
        void *owner;
        uint64_t period_ms;
        struct ag_offload *queue;
        struct ag_timer *timer;
        bool running; /* a periodic job is queued or runs */
};

/* One job on the queue: the collector's, and what the loop does after it. */
struct run {
        struct ag_periodic *p;
        void *job;
        bool reclaim;
        ag_periodic_done_fn done; /* reclaim */
        void *data;
};

static void run_work(void *data)
{
        struct run *r = data;
        r->p->ops->work(r->job);
}

static void run_done(void *data, bool cancelled)
{
        struct run *r = data;
        struct ag_periodic *p = r->p;
        const struct ag_periodic_ops *ops = p->ops;
        if (cancelled) {
                if (r->done != NULL)
                        r->done(r->data, -1, ops->stopped);
                ops->free_job(r->job);
                free(r);
                return;
        }
        int64_t freed = 0;
        const char *error = ops->finish(p->owner, r->job, r->reclaim, &freed);
        if (r->reclaim) {
                r->done(r->data, freed, error);
                ops->free_job(r->job);
                free(r);
                return;
        }
        p->running = false;
        ops->free_job(r->job);
        free(r);
        ag_timer_arm(p->timer, p->period_ms);
}

static int submit(struct ag_periodic *p, bool reclaim, ag_periodic_done_fn done, void *data,
                  struct cb_error *err)
{
        struct run *r = calloc(1, sizeof(*r));
        if (r == NULL)
                return cb_error_set(err, ENOMEM, "%s", p->ops->name);
        *r = (struct run){.p = p, .reclaim = reclaim, .done = done, .data = data};
        if ((r->job = p->ops->make(p->owner, reclaim, err)) == NULL) {
                free(r);
                return -1;
        }
        if (ag_offload_submit(p->queue, run_work, run_done, r, err) < 0) {
                p->ops->free_job(r->job);
                free(r);
                return -1;
        }
        return 0;
}

static void on_timer(struct ag_timer *t, void *data)
{
        struct ag_periodic *p = data;
        struct cb_error err = {0};
        if (p->running)
                return;
        if (submit(p, false, NULL, NULL, &err) < 0) {
                log_error("%s%s", p->ops->not_queued, err.msg);
                ag_timer_arm(t, p->period_ms);
                return;
        }
        p->running = true;
}

int ag_periodic_new(struct ag_loop *loop, const struct ag_periodic_ops *ops, void *owner,
                    uint64_t period_ms, struct ag_periodic **ret, struct cb_error *err)
{
        struct ag_periodic *p = calloc(1, sizeof(*p));
        if (p == NULL)
                return cb_error_set(err, ENOMEM, "%s", ops->name);
        *p = (struct ag_periodic){.ops = ops, .owner = owner, .period_ms = period_ms};
        if (ag_offload_new(loop, ops->queue, 1, &p->queue, err) < 0 ||
            (p->timer = ag_timer_new(loop, on_timer, p, err)) == NULL) {
                ag_periodic_free(p);
                return -1;
        }
        *ret = p;
        return 0;
}

void ag_periodic_start(struct ag_periodic *p)
{
        ag_timer_arm(p->timer, 0);
}

int ag_periodic_reclaim(struct ag_periodic *p, ag_periodic_done_fn done, void *data,
                        struct cb_error *err)
{
        return submit(p, true, done, data, err);
}

void ag_periodic_free(struct ag_periodic *p)
{
        if (p == NULL)
                return;
        ag_timer_free(p->timer);
        ag_offload_free(p->queue); /* cancelled jobs call their done */
        free(p);
}
