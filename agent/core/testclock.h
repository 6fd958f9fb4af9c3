/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The test hook on the agent's wall clock (lib/wallclock.h). When the
 * environment names CUBELET_TEST_WALL_OFFSET_FILE (an absolute path), the
 * file's content, a signed number of seconds, is added to CLOCK_REALTIME
 * for every wall-time decision of the agent, and re-read whenever the file
 * is replaced or rewritten (inotify on its directory). Without the
 * variable nothing is read or watched and the offset stays 0. Tests only:
 * docs/reliability.md ("Clock jumps").
 */

#include <stdbool.h>

#include "agent/core/loop.h"
#include "lib/error.h"

#define AG_TESTCLOCK_ENV "CUBELET_TEST_WALL_OFFSET_FILE"

struct ag_testclock;

/* Reads the file once (before any loop exists, so the TLS bootstrap sees
 * the offset too). Returns 1 when the hook is on, 0 when the variable is
 * unset, -1 when it is set but wrong (a relative path, an unreadable file
 * or one that is not a number): the agent refuses to start then. */
int ag_testclock_init(struct cb_error *err);

/* Watches the file on the loop (only when ag_testclock_init returned 1;
 * *ret is NULL otherwise). */
int ag_testclock_watch(struct ag_loop *loop, struct ag_testclock **ret, struct cb_error *err);
void ag_testclock_free(struct ag_testclock *tc);
