/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/core/heap.h"

#include <malloc.h>
#include <stddef.h>

/* One loop per process (the agent's, or run-pod's): one timer. */
static struct ag_timer *release_timer;

static void on_release(struct ag_timer *t, void *data)
{
        (void)t;
        (void)data;
        ag_heap_release();
}

int ag_heap_init(struct ag_loop *loop, struct cb_error *err)
{
        /* Not fatal when refused (a sanitizer's allocator ignores it). */
        (void)mallopt(M_ARENA_MAX, AG_HEAP_ARENAS);
        if (release_timer != NULL)
                return 0;
        release_timer = ag_timer_new(loop, on_release, NULL, err);
        return release_timer != NULL ? 0 : -1;
}

void ag_heap_release_soon(void)
{
        if (release_timer != NULL)
                ag_timer_arm(release_timer, AG_HEAP_RELEASE_DELAY);
}

void ag_heap_release(void)
{
        (void)malloc_trim(0);
}

void ag_heap_get_stats(struct ag_heap_stats *ret)
{
        struct mallinfo2 mi = mallinfo2();
        ret->in_use = mi.uordblks + mi.hblkhd;
        ret->free = mi.fordblks;
        ret->mmapped = mi.hblkhd;
}

void ag_heap_fini(void)
{
        ag_timer_free(release_timer);
        release_timer = NULL;
}
