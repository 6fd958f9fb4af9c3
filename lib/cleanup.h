/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Scope-bound cleanup (GNU C __attribute__((cleanup))), as crun and systemd
 * use it. A variable declared with one of these is released when it goes
 * out of scope; steal_pointer()/take_fd() hand ownership to the caller.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <cjson/cJSON.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void cb_freep(void *p)
{
        free(*(void **)p);
}
static inline void cb_closep(int *fd)
{
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}
static inline void cb_fclosep(FILE **f)
{
        if (*f != NULL)
                fclose(*f);
}
static inline void cb_cjson_deletep(cJSON **j)
{
        if (*j != NULL)
                cJSON_Delete(*j);
}

#define _cleanup_free_   _cleanup_(cb_freep)
#define _cleanup_close_  _cleanup_(cb_closep)
#define _cleanup_fclose_ _cleanup_(cb_fclosep)
#define _cleanup_cjson_  _cleanup_(cb_cjson_deletep)

static inline void *cb_steal_pointer(void *pp)
{
        void **p = (void **)pp;
        void *v = *p;
        *p = NULL;
        return v;
}
#define steal_pointer(pp) ((__typeof__(*(pp)))cb_steal_pointer(pp))

static inline int take_fd(int *fd)
{
        int v = *fd;
        *fd = -1;
        return v;
}

#define CB_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
