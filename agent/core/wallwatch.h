/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Changes of the agent's wall clock (lib/wallclock.h). Timers run on
 * CLOCK_MONOTONIC, so a deadline stated in wall time (a token's refresh, a
 * certificate's rotation, activeDeadlineSeconds) is armed as "so many ms
 * from now" and would fire early or late after the wall clock is set. The
 * watch tells the agent when that happens, so it re-arms them:
 *   - the kernel's word: a CLOCK_REALTIME timerfd with
 *     TFD_TIMER_CANCEL_ON_SET is cancelled whenever the clock is set
 *     (settimeofday, clock_settime, NTP steps), not when it merely runs;
 *   - the test hook: when the environment names
 *     CUBELET_TEST_WALL_OFFSET_FILE (an absolute path), the file's content,
 *     a signed number of seconds, is the offset of the agent's wall clock,
 *     re-read whenever the file is replaced or rewritten (inotify on its
 *     directory). Without the variable nothing is read or watched and the
 *     offset stays 0. Tests only: docs/reliability.md ("Clock jumps").
 */

#include "agent/core/loop.h"
#include "lib/error.h"

#define AG_TESTCLOCK_ENV "CUBELET_TEST_WALL_OFFSET_FILE"

struct ag_wallwatch;

/* Called on the loop after the wall clock was set or its offset changed. */
typedef void (*ag_wall_fn)(void *data);

/* Reads the test offset file once (before any loop exists, so the TLS
 * bootstrap sees the offset too). Returns 1 when the hook is on, 0 when the
 * variable is unset, -1 when it is set but wrong (a relative path, an
 * unreadable file or one that is not a number): the agent refuses to start. */
int ag_testclock_init(struct cb_error *err);

int ag_wallwatch_new(struct ag_loop *loop, ag_wall_fn fn, void *data, struct ag_wallwatch **ret,
                     struct cb_error *err);
void ag_wallwatch_free(struct ag_wallwatch *w);
