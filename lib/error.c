/* SPDX-License-Identifier: Apache-2.0 */
#include "lib/error.h"

#include <stdio.h>
#include <string.h>

int(cb_error_setv)(struct cb_error *err, int errnum, const char *fmt, va_list ap)
{
        if (err == NULL)
                return -1;
        err->code = errnum;
        int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        if (n < 0)
                err->msg[0] = '\0';
        if (errnum > 0) {
                size_t len = strlen(err->msg);
                snprintf(err->msg + len, sizeof(err->msg) - len, ": %s", strerror(errnum));
        }
        return -1;
}

int(cb_error_set)(struct cb_error *err, int errnum, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        cb_error_setv(err, errnum, fmt, ap);
        va_end(ap);
        return -1;
}

int(cb_error_prefix)(struct cb_error *err, const char *fmt, ...)
{
        if (err == NULL)
                return -1;
        char prefix[CB_ERROR_MSG_MAX];
        char old[CB_ERROR_MSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(prefix, sizeof(prefix), fmt, ap);
        va_end(ap);
        if (n < 0)
                return -1;
        memcpy(old, err->msg, sizeof(old));
        /* Truncation is acceptable: the message stays NUL-terminated. */
        size_t plen = strnlen(prefix, sizeof(err->msg) - 1);
        memcpy(err->msg, prefix, plen);
        size_t pos = plen;
        if (pos + 2 < sizeof(err->msg)) {
                memcpy(err->msg + pos, ": ", 2);
                pos += 2;
        }
        size_t olen = strnlen(old, sizeof(old));
        if (olen > sizeof(err->msg) - 1 - pos)
                olen = sizeof(err->msg) - 1 - pos;
        memcpy(err->msg + pos, old, olen);
        err->msg[pos + olen] = '\0';
        return -1;
}

void cb_error_clear(struct cb_error *err)
{
        if (err == NULL)
                return;
        err->code = 0;
        err->msg[0] = '\0';
}
