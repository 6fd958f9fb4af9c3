/* SPDX-License-Identifier: Apache-2.0 */
#include "lib/wallclock.h"

#include <ctype.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#define OFFSET_MAX_S (10LL * 366 * 86400)

static _Atomic int64_t offset_s;

static int64_t realtime_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t cb_wall_now_ns(void)
{
        return realtime_ns() + atomic_load_explicit(&offset_s, memory_order_relaxed) * 1000000000LL;
}

int64_t cb_wall_now_us(void)
{
        return cb_wall_now_ns() / 1000;
}

int64_t cb_wall_now(void)
{
        return cb_wall_now_ns() / 1000000000LL;
}

int64_t cb_boot_now(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_BOOTTIME, &ts);
        return (int64_t)ts.tv_sec;
}

void cb_wall_set_offset(int64_t seconds)
{
        atomic_store(&offset_s, seconds);
}

int64_t cb_wall_offset(void)
{
        return atomic_load(&offset_s);
}

int cb_wall_offset_parse(const char *text, int64_t *ret, struct cb_error *err)
{
        const char *p = text;
        while (*p == ' ' || *p == '\t')
                p++;
        char *end = NULL;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno != 0)
                return cb_error_set(
                    err, 0, "wall clock offset \"%.40s\": not a whole number of seconds", text);
        while (*end != '\0' && isspace((unsigned char)*end))
                end++;
        if (*end != '\0')
                return cb_error_set(
                    err, 0, "wall clock offset \"%.40s\": trailing text after the seconds", text);
        if (v > OFFSET_MAX_S || v < -OFFSET_MAX_S)
                return cb_error_set(err, 0, "wall clock offset %lld s: more than 10 years", v);
        *ret = (int64_t)v;
        return 0;
}
