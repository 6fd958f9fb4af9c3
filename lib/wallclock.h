/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The agent's wall clock, for every decision it takes from wall time
 * (service-account token refresh, certificate validity and rotation,
 * deadlines stated as wall stamps, status times). Intervals and timers
 * never use it: they run on CLOCK_MONOTONIC / CLOCK_BOOTTIME (ag_now_ms,
 * timerfd), so a jump of the wall clock neither fires nor stalls them.
 *
 * It is CLOCK_REALTIME plus an offset that is 0 unless a test sets it
 * (the agent's CUBELET_TEST_WALL_OFFSET_FILE, docs/reliability.md). Safe
 * from any thread.
 */

#include <stdint.h>

#include "lib/error.h"

/* Seconds, microseconds and nanoseconds since the epoch on the agent's clock. */
int64_t cb_wall_now(void);
int64_t cb_wall_now_us(void);
int64_t cb_wall_now_ns(void);

/* CLOCK_BOOTTIME in seconds: for back-offs that must survive neither a
 * wall jump nor be stretched by a suspend. */
int64_t cb_boot_now(void);

/* The offset (seconds) added to CLOCK_REALTIME; tests only. */
void cb_wall_set_offset(int64_t seconds);
int64_t cb_wall_offset(void);

/* Parses an offset file's text: optional blanks, a signed decimal count of
 * seconds (|s| <= 10 years), optional blanks and newline. */
int cb_wall_offset_parse(const char *text, int64_t *ret, struct cb_error *err);
