/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The error convention (docs/conventions.md):
 *
 * A function that can fail returns int: 0 (or a non-negative count) on
 * success, -1 on failure, and fills the caller's struct cb_error with a
 * message that names what failed, with which value, and what to do.
 * Library code never prints; the agent decides what to log.
 *
 *   if (parse(x, &err) < 0)
 *           return cb_error_prefix(&err, "spec.containers[%zu]", i);
 */

#include <stdarg.h>
#include <stddef.h>

#define CB_ERROR_MSG_MAX 1024

struct cb_error {
        int code; /* errno value when the cause was a system call, else 0 */
        char msg[CB_ERROR_MSG_MAX];
};

/* Sets the message (replacing any previous one) and returns -1. When
 * errnum > 0, ": <strerror(errnum)>" is appended. err may be NULL. */
int cb_error_set(struct cb_error *err, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int cb_error_setv(struct cb_error *err, int errnum, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* Prepends "<prefix>: " to the current message and returns -1. */
int cb_error_prefix(struct cb_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

void cb_error_clear(struct cb_error *err);

/*
 * The three setters always return -1, but in another translation unit: a
 * caller's optimiser cannot see it and assumes `return cb_error_set(...)` may
 * return 0, so at -O3 it reports "maybe uninitialized" for every output
 * parameter that is set only on success (`if (parse(v, &n, err) < 0) return
 * -1; use(n);`). These wrappers make the -1 visible at each call site, so the
 * compiler knows what the contract says. A parenthesised name, as in
 * `(cb_error_set)(...)` or the definitions in lib/error.c, is the function.
 */
#define cb_error_set(...)    ({ (cb_error_set)(__VA_ARGS__), -1; })
#define cb_error_setv(...)   ({ (cb_error_setv)(__VA_ARGS__), -1; })
#define cb_error_prefix(...) ({ (cb_error_prefix)(__VA_ARGS__), -1; })
