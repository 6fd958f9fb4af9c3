/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The parent<->child sync protocol of a container start (runtime/sync.c),
 * shared by the agent side (container.c), the monitor (monitor.c) and the
 * container's init (init.c); internal to runtime/. Kept apart from
 * container.c so the init does not depend on the agent-side code. */

#include <stdint.h>

#include "lib/error.h"

/* ---- the sync protocol (pattern 5) ---------------------------------------
 * One SOCK_SEQPACKET|SOCK_CLOEXEC socketpair per hop; every message is one
 * struct rt_sync_msg (message boundaries kept by the socket type; a short
 * read is an error, EOF means the peer exited or exec'd).
 *   monitor <-> init:
 *     sync 1  GO      monitor -> C0: placed in the cgroup, oom_score_adj set
 *     sync 2  PID     C0 -> monitor: host pid of C (pid 1 of the new pid ns)
 *     sync 3  EXEC    C -> monitor: setup done, execve() next; then EOF
 *                     (CLOEXEC) means the exec succeeded
 *     ERROR   C0/C -> monitor at any point: errno + message, then exit
 *   monitor -> agent:
 *     RUNNING value = pid, value2 = start time; or ERROR. */
enum rt_sync_type {
        RT_SYNC_GO = 1,
        RT_SYNC_PID = 2,
        RT_SYNC_EXEC = 3,
        RT_SYNC_RUNNING = 4,
        RT_SYNC_ERROR = 5,
        RT_SYNC_PTY = 6, /* C -> monitor, with tty: the terminal's master fd (SCM_RIGHTS) */
};

struct rt_sync_msg {
        int32_t type;
        int32_t code; /* errno for ERROR */
        int64_t value;
        int64_t value2;
        char msg[CB_ERROR_MSG_MAX];
};

int rt_sync_send(int fd, int type, int64_t value, int64_t value2);
int rt_sync_send_error(int fd, const struct cb_error *err);
/* Receives one message: 1 on a message, 0 on EOF, -1 on error. */
int rt_sync_recv(int fd, struct rt_sync_msg *ret, struct cb_error *err);
/* A message carrying one fd (SCM_RIGHTS), and receiving one: *ret_fd is
 * the fd that came with it (O_CLOEXEC) or -1. */
int rt_sync_send_fd(int fd, int type, int passed_fd);
int rt_sync_recv_fd(int fd, struct rt_sync_msg *ret, int *ret_fd, struct cb_error *err);
