#!/usr/bin/env python3
"""The node API against request bodies it never asked for (issue 15 item 12;
tests/integration/escapes.sh). Usage: bodyflood.py PORT TOKEN MODE [PATH...]

flood: for each PATH, a POST with a Content-Length of 1 GiB and then one
with a chunked body, each streaming up to 64 MiB while reading what comes
back; prints one line per request: "PATH FRAMING sent=BYTES responses=N
status=LINE closed=yes|no".
smuggle: requests with another request hidden in their body (Content-Length,
chunked, both at once, an unauthenticated outer request); prints the same
lines, "responses" the count of HTTP status lines received on the
connection (1: the hidden request was never answered)."""
import socket
import ssl
import sys
import time

port, token, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
paths = sys.argv[4:]
LIMIT = 64 << 20
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE


def connect():
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    return ctx.wrap_socket(s, server_hostname="localhost")


def drain(s, got, wait):
    """Reads what is there (up to wait seconds); False once closed."""
    s.settimeout(wait)
    try:
        while True:
            b = s.recv(65536)
            if not b:
                return False
            got.extend(b)
    except (socket.timeout, ssl.SSLWantReadError, BlockingIOError):
        return True
    except (ssl.SSLError, OSError):
        return False


def report(path, framing, sent, got, closed):
    text = bytes(got).decode("latin-1")
    n = text.count("HTTP/1.1 ")
    status = text.split("\r\n", 1)[0] if text else "(none)"
    print(f"{path} {framing} sent={sent} responses={n} status={status} "
          f"closed={'yes' if closed else 'no'}", flush=True)


def flood(path, framing):
    s = connect()
    head = f"POST {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\n"
    head += ("Content-Length: 1073741824\r\n" if framing == "cl"
             else "Transfer-Encoding: chunked\r\n")
    s.sendall((head + "\r\n").encode())
    chunk = b"G" * 65536
    if framing == "chunked":
        chunk = b"10000\r\n" + chunk + b"\r\n"
    sent, got, closed = 0, bytearray(), False
    t_end = time.monotonic() + 60
    s.settimeout(5)
    while sent < LIMIT and time.monotonic() < t_end:
        try:
            s.sendall(chunk)
            sent += len(chunk)
        except (ssl.SSLError, OSError):
            closed = True
            break
        if sent % (1 << 20) == 0 and not drain(s, got, 0.001):
            closed = True
            break
    if not closed:
        closed = not drain(s, got, 3)
    else:
        drain(s, got, 1)
    report(path, framing, sent, got, closed)
    s.close()


def smuggle(name, head, body):
    s = connect()
    got = bytearray()
    try:
        s.sendall(head.encode() + body.encode())
    except (ssl.SSLError, OSError):
        pass
    closed = not drain(s, got, 5)
    report(name, "smuggle", len(body), got, closed)
    s.close()


if mode == "flood":
    for p in paths:
        for framing in ("cl", "chunked"):
            flood(p, framing)
else:
    auth = f"Authorization: Bearer {token}\r\n"
    inner = f"GET /pods HTTP/1.1\r\nHost: localhost\r\n{auth}\r\n"
    chunked = f"{len(inner):x}\r\n{inner}\r\n0\r\n\r\n"
    smuggle("/healthz+CL", f"POST /healthz HTTP/1.1\r\nHost: localhost\r\n{auth}"
            f"Content-Length: {len(inner)}\r\n\r\n", inner)
    smuggle("/healthz+chunked", f"POST /healthz HTTP/1.1\r\nHost: localhost\r\n{auth}"
            "Transfer-Encoding: chunked\r\n\r\n", chunked)
    # CL.TE: a front end that trusts Content-Length: 0 sees the rest as
    # the next request
    smuggle("/healthz+CL0+TE", f"POST /healthz HTTP/1.1\r\nHost: localhost\r\n{auth}"
            "Content-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n", chunked)
    # an unauthenticated request carrying an authenticated one
    smuggle("/pods-anon+CL", "GET /pods HTTP/1.1\r\nHost: localhost\r\n"
            f"Content-Length: {len(inner)}\r\n\r\n", inner)
    # pipelined right after a bodiless GET
    smuggle("/healthz+pipelined", f"GET /healthz HTTP/1.1\r\nHost: localhost\r\n{auth}\r\n",
            inner)
