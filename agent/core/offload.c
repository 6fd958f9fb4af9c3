/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/core/offload.h"

#include "agent/core/heap.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define OFFLOAD_THREADS_MAX 16

struct ag_job {
        struct ag_job *next;
        ag_job_work_fn work;
        ag_job_done_fn done;
        void *data;
};

struct ag_offload {
        struct ag_loop *loop;
        char name[32];
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct ag_job *queue, **queue_tail; /* not started */
        struct ag_job *done, **done_tail;   /* worked, done not yet called */
        size_t pending;                     /* queued + running + done-not-called */
        bool stopping;
        int efd;
        struct ag_io *io;
        pthread_t threads[OFFLOAD_THREADS_MAX];
        unsigned n_threads;
};

static void *worker_main(void *arg)
{
        struct ag_offload *o = arg;
        pthread_mutex_lock(&o->lock);
        for (;;) {
                while (o->queue == NULL && !o->stopping)
                        pthread_cond_wait(&o->cond, &o->lock);
                if (o->stopping)
                        break;
                struct ag_job *j = o->queue;
                o->queue = j->next;
                if (o->queue == NULL)
                        o->queue_tail = &o->queue;
                pthread_mutex_unlock(&o->lock);

                j->work(j->data);

                pthread_mutex_lock(&o->lock);
                j->next = NULL;
                *o->done_tail = j;
                o->done_tail = &j->next;
                uint64_t one = 1;
                /* The counter cannot overflow in practice; a failed write
                 * (EAGAIN at 2^64-2) still leaves it readable. */
                ssize_t n = write(o->efd, &one, sizeof(one));
                (void)n;
        }
        pthread_mutex_unlock(&o->lock);
        return NULL;
}

/* Calls done for the finished jobs, on the loop thread. */
static void drain_done(struct ag_offload *o)
{
        pthread_mutex_lock(&o->lock);
        struct ag_job *list = o->done;
        o->done = NULL;
        o->done_tail = &o->done;
        pthread_mutex_unlock(&o->lock);
        while (list != NULL) {
                struct ag_job *j = list;
                list = j->next;
                pthread_mutex_lock(&o->lock);
                o->pending--;
                pthread_mutex_unlock(&o->lock);
                j->done(j->data, false);
                free(j);
        }
        /* The queue is idle: what its jobs freed goes back to the system
         * in a moment (agent/core/heap.h). */
        if (ag_offload_pending(o) == 0)
                ag_heap_release_soon();
}

static void on_efd(struct ag_io *io, int fd, uint32_t events, void *data)
{
        (void)io;
        (void)events;
        uint64_t v;
        ssize_t n = read(fd, &v, sizeof(v));
        (void)n;
        drain_done(data);
}

int ag_offload_new(struct ag_loop *loop, const char *name, unsigned threads,
                   struct ag_offload **ret, struct cb_error *err)
{
        if (threads == 0 || threads > OFFLOAD_THREADS_MAX)
                return cb_error_set(err, EINVAL, "offload %s: %u threads (1..%d)", name, threads,
                                    OFFLOAD_THREADS_MAX);
        struct ag_offload *o = calloc(1, sizeof(*o));
        if (o == NULL)
                return cb_error_set(err, ENOMEM, "offload %s", name);
        o->efd = -1;
        o->loop = loop;
        snprintf(o->name, sizeof(o->name), "%s", name);
        pthread_mutex_init(&o->lock, NULL);
        pthread_cond_init(&o->cond, NULL);
        o->queue_tail = &o->queue;
        o->done_tail = &o->done;
        o->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (o->efd < 0) {
                cb_error_set(err, errno, "offload %s: eventfd", name);
                goto fail;
        }
        o->io = ag_io_new(loop, o->efd, EPOLLIN, on_efd, o, err);
        if (o->io == NULL)
                goto fail;
        /* The threads start with every signal blocked. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        for (unsigned i = 0; i < threads; i++) {
                int rc = pthread_create(&o->threads[i], NULL, worker_main, o);
                if (rc != 0) {
                        pthread_sigmask(SIG_SETMASK, &old, NULL);
                        cb_error_set(err, rc, "offload %s: starting thread %u", name, i + 1);
                        goto fail;
                }
                o->n_threads++;
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        *ret = o;
        return 0;
fail:
        ag_offload_free(o);
        return -1;
}

int ag_offload_submit(struct ag_offload *o, ag_job_work_fn work, ag_job_done_fn done, void *data,
                      struct cb_error *err)
{
        struct ag_job *j = calloc(1, sizeof(*j));
        if (j == NULL)
                return cb_error_set(err, ENOMEM, "offload %s: job", o->name);
        j->work = work;
        j->done = done;
        j->data = data;
        pthread_mutex_lock(&o->lock);
        *o->queue_tail = j;
        o->queue_tail = &j->next;
        o->pending++;
        pthread_cond_signal(&o->cond);
        pthread_mutex_unlock(&o->lock);
        return 0;
}

size_t ag_offload_pending(const struct ag_offload *o)
{
        struct ag_offload *m = (struct ag_offload *)o;
        pthread_mutex_lock(&m->lock);
        size_t n = m->pending;
        pthread_mutex_unlock(&m->lock);
        return n;
}

void ag_offload_free(struct ag_offload *o)
{
        if (o == NULL)
                return;
        pthread_mutex_lock(&o->lock);
        o->stopping = true;
        pthread_cond_broadcast(&o->cond);
        pthread_mutex_unlock(&o->lock);
        for (unsigned i = 0; i < o->n_threads; i++)
                pthread_join(o->threads[i], NULL);
        /* Nothing runs now: finish what worked, cancel what never ran. */
        drain_done(o);
        struct ag_job *j = o->queue;
        while (j != NULL) {
                struct ag_job *next = j->next;
                j->done(j->data, true);
                free(j);
                j = next;
        }
        if (o->io)
                ag_io_free(o->io);
        if (o->efd >= 0)
                close(o->efd);
        pthread_cond_destroy(&o->cond);
        pthread_mutex_destroy(&o->lock);
        free(o);
}
