#!/usr/bin/env python3
"""A fault proxy in front of a plain-HTTP registry (test code).

  regproxy.py --listen-port P --upstream http://127.0.0.1:U --mode-file F

Forwards everything; blob GETs (/v2/<name>/blobs/<digest>) get what the
mode file says:
  pass     as the registry sends them
  drop     half of the body, then the connection is closed
  digest   the whole body with one byte changed (a wrong digest)
  slow     the body at ~64 kB/s
Prints "ready"; one line per injected fault on stderr.
"""
import argparse
import http.client
import http.server
import socketserver
import sys
import time
from urllib.parse import urlparse

HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
       "content-length"}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def handle_any(self):
        srv = self.server
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        try:
            with open(srv.mode_file) as f:
                mode = (f.read().split() or ["pass"])[0]
        except OSError:
            mode = "pass"
        up = http.client.HTTPConnection(srv.up.hostname, srv.up.port, timeout=60)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        up.request(self.command, self.path, body=body, headers=headers)
        r = up.getresponse()
        data = r.read()
        up.close()
        blob = self.command == "GET" and "/blobs/" in self.path and r.status == 200
        if blob and mode != "pass":
            print(f"inject {mode} {self.path}", file=sys.stderr, flush=True)
        self.send_response(r.status, r.reason)
        for k, v in r.getheaders():
            if k.lower() not in HOP:
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command == "HEAD":
            return
        if not blob or mode == "pass":
            self.wfile.write(data)
        elif mode == "drop":
            self.wfile.write(data[:len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
        elif mode == "digest":
            bad = bytearray(data)
            if bad:
                bad[len(bad) // 2] ^= 0xFF
            self.wfile.write(bytes(bad))
        elif mode == "slow":
            for i in range(0, len(data), 8192):
                self.wfile.write(data[i:i + 8192])
                self.wfile.flush()
                time.sleep(0.125)

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen-port", type=int, required=True)
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--mode-file", required=True)
    a = ap.parse_args()
    srv = Server(("127.0.0.1", a.listen_port), Handler)
    srv.mode_file = a.mode_file
    srv.up = urlparse(a.upstream)
    print("ready", flush=True)
    srv.serve_forever(poll_interval=0.2)


if __name__ == "__main__":
    main()
