/* SPDX-License-Identifier: Apache-2.0 */
#include "lib/arena.h"

#include <stdarg.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_MIN 4096
/* Chunks stay CHUNK_MIN until the arena holds GROW_AFTER bytes, then
 * double (up to 1 MiB): most arenas are one decoded object of a few KiB
 * kept for its life (a pod in the store, ~10-20 KiB), where doubling from
 * the first chunk left the last one, of 8 or 16 KiB, mostly empty. */
#define GROW_AFTER (64u << 10)

struct chunk {
        struct chunk *next;
        size_t size;
        size_t used;
        alignas(max_align_t) unsigned char data[];
};

struct cb_arena {
        struct chunk *head;
        size_t limit;
        size_t used;
        int over;
};

struct cb_arena *cb_arena_new(size_t limit)
{
        struct cb_arena *a = calloc(1, sizeof(*a));
        if (a != NULL)
                a->limit = limit;
        return a;
}

void cb_arena_free(struct cb_arena *a)
{
        if (a == NULL)
                return;
        struct chunk *c = a->head;
        while (c != NULL) {
                struct chunk *n = c->next;
                free(c);
                c = n;
        }
        free(a);
}

void *cb_arena_alloc(struct cb_arena *a, size_t size)
{
        const size_t align = alignof(max_align_t);
        if (size == 0)
                size = 1;
        if (size > SIZE_MAX / 2)
                return NULL;
        size = (size + align - 1) & ~(align - 1);
        if (a->limit != 0 && (size > a->limit || a->used > a->limit - size)) {
                a->over = 1;
                return NULL;
        }
        struct chunk *c = a->head;
        if (c == NULL || c->size - c->used < size) {
                size_t csize = size > CHUNK_MIN ? size : CHUNK_MIN;
                if (c != NULL && a->used >= GROW_AFTER && c->size * 2 > csize &&
                    c->size < (1u << 20))
                        csize = c->size * 2;
                c = malloc(sizeof(*c) + csize);
                if (c == NULL)
                        return NULL;
                c->size = csize;
                c->used = 0;
                c->next = a->head;
                a->head = c;
        }
        void *p = c->data + c->used;
        c->used += size;
        a->used += size;
        memset(p, 0, size);
        return p;
}

void *cb_arena_calloc(struct cb_arena *a, size_t n, size_t size)
{
        if (size != 0 && n > SIZE_MAX / size)
                return NULL;
        return cb_arena_alloc(a, n * size);
}

char *cb_arena_strndup(struct cb_arena *a, const char *s, size_t n)
{
        char *p = cb_arena_alloc(a, n + 1);
        if (p != NULL) {
                memcpy(p, s, n);
                p[n] = '\0';
        }
        return p;
}

char *cb_arena_strdup(struct cb_arena *a, const char *s)
{
        return s == NULL ? NULL : cb_arena_strndup(a, s, strlen(s));
}

char *cb_arena_printf(struct cb_arena *a, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        if (n < 0)
                return NULL;
        char *p = cb_arena_alloc(a, (size_t)n + 1);
        if (p == NULL)
                return NULL;
        va_start(ap, fmt);
        vsnprintf(p, (size_t)n + 1, fmt, ap);
        va_end(ap);
        return p;
}

int cb_arena_over_limit(const struct cb_arena *a)
{
        return a->over;
}
