#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""peer_sockopt.py PID HOST PORT: connects to HOST:PORT, finds the socket
PID accepted for this connection (its inode in /proc/PID/net/tcp{,6},
matched by the two ends' ports, then /proc/PID/fd), takes a copy of it with
pidfd_getfd(2) and prints its TCP_NODELAY (0 or 1). Root only. Exit 1 when
the accepted socket does not show up within 5 s."""
import ctypes
import os
import socket
import sys
import time

SYS_PIDFD_OPEN, SYS_PIDFD_GETFD = 434, 438


def accepted_inode(pid, local_port, peer_port):
    """The inode of PID's socket from peer_port to local_port (the server's
    end: its local port is the one listened on)."""
    for name in ("tcp", "tcp6"):
        try:
            with open("/proc/%d/net/%s" % (pid, name)) as f:
                next(f)
                for line in f:
                    p = line.split()
                    lport = int(p[1].rsplit(":", 1)[1], 16)
                    rport = int(p[2].rsplit(":", 1)[1], 16)
                    if lport == local_port and rport == peer_port:
                        return p[9]
        except FileNotFoundError:
            pass
    return None


def fd_of(pid, inode):
    want = "socket:[%s]" % inode
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)) == want:
                return int(fd)
        except OSError:
            pass
    return None


def main():
    pid, host, port = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    c = socket.create_connection((host, port), timeout=5)
    mine = c.getsockname()[1]
    end = time.monotonic() + 5
    while time.monotonic() < end:
        inode = accepted_inode(pid, port, mine)
        fd = fd_of(pid, inode) if inode not in (None, "0") else None
        if fd is not None:
            pidfd = libc.syscall(SYS_PIDFD_OPEN, pid, 0)
            if pidfd < 0:
                sys.exit("pidfd_open: %s" % os.strerror(ctypes.get_errno()))
            copy = libc.syscall(SYS_PIDFD_GETFD, pidfd, fd, 0)
            if copy < 0:
                sys.exit("pidfd_getfd: %s" % os.strerror(ctypes.get_errno()))
            s = socket.socket(fileno=copy)
            print(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) and 1 or 0)
            s.detach()
            os.close(copy)
            os.close(pidfd)
            c.close()
            return
        time.sleep(0.05)
    sys.exit("no socket of pid %d from port %d to %d" % (pid, mine, port))


if __name__ == "__main__":
    main()
