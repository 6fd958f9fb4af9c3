/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The agent's heap after a burst. glibc keeps what a burst of pods freed
 * (their objects, the jobs' temporaries) in the heap: free pages in the
 * middle of an arena are not given back by free() itself, and every thread
 * that allocates may get an arena of its own (8 per core). So the agent
 *
 *  - caps the arenas (ag_heap_init: AG_HEAP_ARENAS; its threads mostly wait
 *    on child processes, a shared arena costs them nothing measurable), and
 *  - gives the free pages back (malloc_trim) once a burst is over:
 *    ag_heap_release_soon(), called when an offload queue becomes idle and
 *    when a pod is forgotten, (re)arms a one-shot timer, so the release
 *    comes AG_HEAP_RELEASE_DELAY after the last of them: not in the gaps
 *    of a burst, whose pages would be faulted back at once. No timer runs
 *    while nothing happens.
 */

#include "agent/core/loop.h"
#include "lib/error.h"

#define AG_HEAP_ARENAS        2
#define AG_HEAP_RELEASE_DELAY 2000 /* ms after the last call */

/* Caps the arenas (before any thread starts) and makes the release timer
 * on loop. */
int ag_heap_init(struct ag_loop *loop, struct cb_error *err);
/* Releases the free pages AG_HEAP_RELEASE_DELAY ms after the last call.
 * A no-op before ag_heap_init and after ag_heap_fini. */
void ag_heap_release_soon(void);
/* Releases now (what the timer does). */
void ag_heap_release(void);
void ag_heap_fini(void);

/* What the heap holds now (mallinfo2, every arena): bytes in use by the
 * agent, free in the arenas (kept by malloc, resident or not), and in
 * blocks of their own (mmap). */
struct ag_heap_stats {
        size_t in_use, free, mmapped;
};
void ag_heap_get_stats(struct ag_heap_stats *ret);
