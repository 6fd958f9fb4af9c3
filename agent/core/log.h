/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The agent's log (the only place that prints). Levels follow the kubelet's
 * -v convention: errors and warnings always, info at -v=0, more detail at
 * -v=1..4 (docs/conventions.md). Lines go to stderr as
 *   I1129 17:47:39.123456 cubelet] message
 * so journald and a terminal read them alike.
 */

extern int ag_log_verbosity;

void ag_log(char level, int v, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define log_error(...)   ag_log('E', 0, __VA_ARGS__)
#define log_warning(...) ag_log('W', 0, __VA_ARGS__)
#define log_info(...)    ag_log('I', 0, __VA_ARGS__)
#define log_v(n, ...)                                                                              \
        do {                                                                                       \
                if (ag_log_verbosity >= (n))                                                       \
                        ag_log('I', (n), __VA_ARGS__);                                             \
        } while (0)
