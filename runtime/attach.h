/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Attaching to a container's stdin and terminal (conmon's attach socket,
 * CRI Attach in spirit). A container created with stdin_open has a monitor
 * (runtime/monitor.c) that keeps the container's stdin: the write end of a
 * pipe, or with tty the master of the container's terminal. For a
 * container with stdin_open or tty the monitor serves a unix
 * SOCK_SEQPACKET socket at
 *
 *     <root_dir>/containers/<id>/attach     (mode 0600, root only)
 *
 * for as long as it runs (it survives agent restarts, as the monitor does).
 * Output never goes through this socket: it is in the CRI log file
 * (state.json logPath), which attach clients follow; a terminal's output
 * is logged as stream "stdout", as the kubelet/containerd do.
 *
 * Messages from a client to the monitor, one SEQPACKET message each (the
 * socket keeps the boundaries), byte 0 the type:
 *
 *   'i' (RT_ATTACH_MSG_STDIN)  bytes 1..: input for the container, at most
 *                              RT_ATTACH_MAX bytes; an empty one writes
 *                              nothing but marks the session as attaching
 *                              stdin (see stdin_once)
 *   'c' (RT_ATTACH_MSG_CLOSE)  no payload: close the container's stdin for
 *                              good (a pipe: EOF; a terminal: the VEOF
 *                              character, ^D, is written and input is
 *                              refused from then on)
 *   'r' (RT_ATTACH_MSG_RESIZE) bytes 1..4: width (columns) then height
 *                              (rows), each an unsigned 16-bit big-endian
 *                              number; TIOCSWINSZ on the terminal (ignored
 *                              without one)
 *
 * The monitor sends nothing. Malformed messages (unknown type, wrong
 * length) are dropped, and so is input to a tty container without
 * stdin_open (its socket is there for resizes). Several clients may be connected; their input is
 * written in the order it arrives. When the container's stdin is closed
 * for good (a CLOSE message, stdin_once, or the container closed its end)
 * the monitor disconnects every client and removes the socket: a client
 * sees EOF (or EPIPE on send), and later connections fail.
 *
 * stdin_once (Kubernetes' stdinOnce: "stdin is opened on container start,
 * is empty until the first client attaches to stdin, and then remains open
 * and accepts data until the client disconnects"): the first connection
 * that sends a STDIN message (an empty one counts: send it right after
 * connecting to claim the session) or a CLOSE is the first stdin session;
 * when it disconnects the container's stdin is closed for good. Another
 * client connected meanwhile does not keep it open, and a connection that
 * only resizes never counts. A node API handler for `attach -i` therefore
 * sends an empty STDIN at once and disconnects (closes its fd) when the
 * remote client's stdin stream ends; without stdin_once that leaves the
 * container's stdin open for the next attach, as containerd does.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

#define RT_ATTACH_MAX 32768 /* the most input bytes in one message */

enum rt_attach_msg_type {
        RT_ATTACH_MSG_STDIN = 'i',
        RT_ATTACH_MSG_CLOSE = 'c',
        RT_ATTACH_MSG_RESIZE = 'r',
};

struct rt_attach_msg {
        enum rt_attach_msg_type type;
        const uint8_t *data; /* STDIN: points into the decoded buffer */
        size_t len;
        uint16_t width, height; /* RESIZE */
};

/* ---- the wire format (pure; runtime/attach.c) ----------------------------- */

/* Encode one message into buf (size >= 1 + RT_ATTACH_MAX for input; 5 for
 * a resize; 1 for close). Return the length, or -1 with EINVAL in err
 * (input longer than RT_ATTACH_MAX, a zero width or height, a small buf). */
int rt_attach_encode_stdin(uint8_t *buf, size_t size, const void *data, size_t len,
                           struct cb_error *err);
int rt_attach_encode_close(uint8_t *buf, size_t size, struct cb_error *err);
int rt_attach_encode_resize(uint8_t *buf, size_t size, uint16_t width, uint16_t height,
                            struct cb_error *err);
/* Decode one received message of len bytes: 0, or -1 with EPROTO in err
 * naming what is wrong (an empty message, an unknown type, a STDIN longer
 * than RT_ATTACH_MAX, a RESIZE that is not 5 bytes or has a zero side). */
int rt_attach_decode(const uint8_t *buf, size_t len, struct rt_attach_msg *ret,
                     struct cb_error *err);

/* ---- clients (the agent's node API, `cubelet attach`) --------------------- */

/* Connects to the attach socket of container cid: *ret_fd is a
 * SOCK_SEQPACKET socket, SOCK_CLOEXEC | SOCK_NONBLOCK, the caller's.
 * Errors: ENOENT "container X not found"; ESRCH "container X is not
 * running"; ENXIO "container X was created without stdin" (neither
 * stdin_open nor tty; with tty alone the connection only resizes); EPIPE
 * "container X: its stdin is closed" (stdin_once after the first session,
 * or a CLOSE). Works with any root_dir length (connects through
 * /proc/self/fd). */
int rt_attach_open(const char *root_dir, const char *cid, int *ret_fd, struct cb_error *err);
/* Sends len (0..RT_ATTACH_MAX) bytes of input as one message (0: the
 * empty message that claims the stdin session, see stdin_once). Returns 0; -EAGAIN when the socket
 * is full (the monitor is waiting for the container to read: wait for EPOLLOUT on fd and send the
 * same bytes again), or -1 with err (EPIPE: the monitor closed the
 * connection because stdin was closed or the container ended). */
int rt_attach_stdin(int fd, const void *buf, size_t len, struct cb_error *err);
/* Closes the container's stdin for good (see CLOSE above). 0, -EAGAIN or -1. */
int rt_attach_close_stdin(int fd, struct cb_error *err);
/* Sets the terminal size (columns, rows). 0, -EAGAIN or -1. */
int rt_attach_resize(int fd, uint16_t width, uint16_t height, struct cb_error *err);

/* The socket path of a container (for messages and tests). */
int rt_attach_path(const char *root_dir, const char *cid, char *buf, size_t size,
                   struct cb_error *err);
