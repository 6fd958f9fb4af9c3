/* SPDX-License-Identifier: Apache-2.0 */
#include "agent/core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>

int ag_log_verbosity = 0;

void ag_log(char level, int v, const char *fmt, ...)
{
        if (v > ag_log_verbosity)
                return;
        struct timeval tv;
        gettimeofday(&tv, NULL);
        struct tm tm;
        gmtime_r(&tv.tv_sec, &tm);
        char line[4096];
        int n =
            snprintf(line, sizeof(line), "%c%02d%02d %02d:%02d:%02d.%06ld cubelet] ", level,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)tv.tv_usec);
        va_list ap;
        va_start(ap, fmt);
        if (n > 0 && (size_t)n < sizeof(line))
                vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
        va_end(ap);
        fprintf(stderr, "%s\n", line);
}
