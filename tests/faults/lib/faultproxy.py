#!/usr/bin/env python3
"""A fault proxy between the agent and the stand-in apiserver (test code).

  faultproxy.py --listen-port P --upstream https://127.0.0.1:U --cert C --key K
                --ca CA --mode-file F [--seed N]

Serves HTTPS on 127.0.0.1:P with the stand-in's own serving certificate and
forwards every request to the stand-in (streaming the answer: watches work).
The mode file (re-read on every request and every streamed chunk) says what
to inject:
  pass          forward
  500 P         answer 500 InternalError to a fraction P of the requests
  429 P         answer 429 TooManyRequests (Retry-After: 1) to a fraction P
  stall         accept, read the request, never answer (until the mode
                changes: then the connection is closed); streams in flight
                stop forwarding
Prints "ready" once it listens; one line per injected fault on stderr.
"""
import argparse
import http.client
import http.server
import json
import random
import socketserver
import ssl
import sys
import threading
import time
from urllib.parse import urlparse

HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
       "proxy-authorization", "proxy-authenticate", "content-length"}


def mode(path):
    try:
        with open(path) as f:
            parts = f.read().split()
    except OSError:
        return ("pass", 0.0)
    if not parts:
        return ("pass", 0.0)
    return (parts[0], float(parts[1]) if len(parts) > 1 else 1.0)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def status_body(self, code, reason, msg):
        body = json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {},
                           "status": "Failure", "message": msg, "reason": reason,
                           "code": code}).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if code == 429:
            self.send_header("Retry-After", "1")
        self.end_headers()
        self.wfile.write(body)

    def handle_any(self):
        srv = self.server
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        m, p = mode(srv.mode_file)
        with srv.lock:
            roll = srv.rng.random()
        if m == "stall":
            srv.count("stall", self.command, self.path)
            while mode(srv.mode_file)[0] == "stall":
                time.sleep(0.2)
            self.close_connection = True
            return
        if m in ("500", "429") and roll < p:
            srv.count(m, self.command, self.path)
            if m == "500":
                self.status_body(500, "InternalError", "injected by tests/faults/lib/faultproxy.py")
            else:
                self.status_body(429, "TooManyRequests", "injected by tests/faults/lib/faultproxy.py")
            return
        up = http.client.HTTPSConnection(srv.up.hostname, srv.up.port, context=srv.up_ctx,
                                         timeout=3600)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        try:
            up.request(self.command, self.path, body=body, headers=headers)
            r = up.getresponse()
        except OSError as e:
            self.status_body(502, "ServiceUnavailable", f"upstream: {e}")
            return
        self.send_response(r.status, r.reason)
        for k, v in r.getheaders():
            if k.lower() not in HOP:
                self.send_header(k, v)
        length = r.getheader("Content-Length")
        if length is not None:
            self.send_header("Content-Length", length)
            self.end_headers()
            self.wfile.write(r.read())
            up.close()
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            while True:
                chunk = r.read1(65536)
                while mode(srv.mode_file)[0] == "stall":
                    time.sleep(0.2)
                    self.close_connection = True
                if self.close_connection:
                    break
                if not chunk:
                    self.wfile.write(b"0\r\n\r\n")
                    break
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
        except OSError:
            self.close_connection = True
        finally:
            up.close()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def count(self, what, method, path):
        with self.lock:
            self.injected += 1
        print(f"inject {what} {method} {path}", file=sys.stderr, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen-port", type=int, required=True)
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--ca", required=True)
    ap.add_argument("--mode-file", required=True)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    srv = Server(("127.0.0.1", a.listen_port), Handler)
    srv.lock = threading.Lock()
    srv.rng = random.Random(a.seed)
    srv.injected = 0
    srv.mode_file = a.mode_file
    srv.up = urlparse(a.upstream)
    srv.up_ctx = ssl.create_default_context(cafile=a.ca)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print("ready", flush=True)
    srv.serve_forever(poll_interval=0.2)


if __name__ == "__main__":
    main()
