/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A bump allocator: a decoded object owns one arena and every string and
 * array in it lives there, so the object is freed in one call. Allocation
 * failure returns NULL; the arena also enforces a byte budget so hostile
 * input cannot make the agent allocate without bound.
 */

#include <stddef.h>

struct cb_arena;

/* limit: the most bytes this arena may hand out (0 = no limit). */
struct cb_arena *cb_arena_new(size_t limit);
void cb_arena_free(struct cb_arena *a);

/* Zeroed memory aligned for any type, or NULL (out of memory or over the
 * limit; cb_arena_over_limit() tells which). */
void *cb_arena_alloc(struct cb_arena *a, size_t size);
void *cb_arena_calloc(struct cb_arena *a, size_t n, size_t size);
char *cb_arena_strdup(struct cb_arena *a, const char *s);
char *cb_arena_strndup(struct cb_arena *a, const char *s, size_t n);
char *cb_arena_printf(struct cb_arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int cb_arena_over_limit(const struct cb_arena *a);

static inline void cb_arena_freep(struct cb_arena **a)
{
        if (*a != NULL)
                cb_arena_free(*a);
}
