/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Blocking work off the event loop: image pulls and sandbox creation
 * (namespaces, CNI ADD) take from milliseconds to minutes and must not
 * stall every other pod, the watches and the Lease. An ag_offload is a
 * queue served by a few worker threads; each job's work function runs in
 * a worker thread, its done function afterwards on the loop thread (an
 * eventfd wakes the loop), in completion order.
 *
 * The work function may only touch the job's own data: copies of its
 * inputs and room for its outputs. Library calls made there must be
 * thread-safe (runtime/ and cgroups/ are: no global mutable state besides
 * the locked seccomp cache and libcgroup's once-initialised mount table).
 *
 * Worker threads block every signal, so the agent's signalfd keeps getting
 * them; children forked from a worker thread reset their signal mask as
 * every child of cubelet does.
 */

#include <stdbool.h>
#include <stddef.h>

#include "agent/core/loop.h"
#include "lib/error.h"

struct ag_offload;
struct ag_job;

typedef void (*ag_job_work_fn)(void *data);
/* On the loop thread. cancelled: the offload is being freed and the work
 * never ran; the function must still release data. */
typedef void (*ag_job_done_fn)(void *data, bool cancelled);

/* A queue served by `threads` worker threads (1 = strictly one job at a
 * time, in submission order). name appears in errors. */
int ag_offload_new(struct ag_loop *loop, const char *name, unsigned threads,
                   struct ag_offload **ret, struct cb_error *err);

/* Queues a job. Returns 0, or -1 (err set, done not called). */
int ag_offload_submit(struct ag_offload *o, ag_job_work_fn work, ag_job_done_fn done, void *data,
                      struct cb_error *err);

/* Jobs queued or running. */
size_t ag_offload_pending(const struct ag_offload *o);

/* Waits for the running jobs, calls done for every job (cancelled for
 * those that never ran), joins the threads. */
void ag_offload_free(struct ag_offload *o);
