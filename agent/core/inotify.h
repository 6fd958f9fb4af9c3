/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Reading an inotify fd (made with IN_NONBLOCK): every queued event,
 * without the buffer and alignment rules at each caller. */

#include <stdint.h>
#include <sys/inotify.h>

/* Called for each event (may be NULL: the events are only drained). */
typedef void (*ag_inotify_fn)(const struct inotify_event *ev, void *data);

/* Reads until the fd is empty; returns the OR of the events' masks (0 when
 * nothing was queued). */
uint32_t ag_inotify_drain(int fd, ag_inotify_fn fn, void *data);
