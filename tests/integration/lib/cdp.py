#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A small Chrome DevTools Protocol client (the standard library only: a
WebSocket client of its own) for tests/integration/timeline.sh:

  cdp.py PORT eval EXPR             prints the JSON value of EXPR in the page
  cdp.py PORT wait EXPR SECONDS     until EXPR is truthy in the page (exit 1 if not)
  cdp.py PORT screenshot FILE       the page as a PNG

PORT is chromium's --remote-debugging-port (loopback); the page is the
first "page" target."""
import base64
import json
import os
import socket
import struct
import sys
import time
import urllib.request


class WebSocket:
    def __init__(self, url):
        assert url.startswith("ws://"), url
        hostport, path = url[5:].split("/", 1)
        host, port = hostport.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall(
            (f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
             f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
             "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = self.s.recv(4096)
            if not chunk:
                raise EOFError("closed during the handshake")
            buf += chunk
        head, self.rest = buf.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise RuntimeError("handshake refused: %r" % head[:200])

    def send(self, obj):
        data = json.dumps(obj).encode()
        hdr = bytearray([0x81])
        n = len(data)
        if n < 126:
            hdr.append(0x80 | n)
        elif n < 65536:
            hdr.append(0x80 | 126)
            hdr += struct.pack(">H", n)
        else:
            hdr.append(0x80 | 127)
            hdr += struct.pack(">Q", n)
        mask = os.urandom(4)
        hdr += mask
        self.s.sendall(bytes(hdr) + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _read(self, n):
        while len(self.rest) < n:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError("closed")
            self.rest += chunk
        d, self.rest = self.rest[:n], self.rest[n:]
        return d

    def recv(self):
        msg = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            payload = self._read(n)
            op = b0 & 0x0F
            if op == 8:
                raise EOFError("closed by chromium")
            if op in (9, 10):
                continue
            msg += payload
            if b0 & 0x80:
                return json.loads(msg)


class Page:
    def __init__(self, port):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            targets = json.load(r)
        pages = [t for t in targets if t.get("type") == "page"]
        if not pages:
            raise RuntimeError("no page target: %r" % targets)
        self.ws = WebSocket(pages[0]["webSocketDebuggerUrl"])
        self.n = 0

    def call(self, method, **params):
        self.n += 1
        self.ws.send({"id": self.n, "method": method, "params": params})
        while True:
            m = self.ws.recv()
            if m.get("id") == self.n:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m["result"]

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError("%s: %s" % (expr, r["exceptionDetails"].get("text")))
        return r["result"].get("value")


def main():
    port, cmd = sys.argv[1], sys.argv[2]
    page = Page(port)
    if cmd == "eval":
        print(json.dumps(page.eval(sys.argv[3])))
    elif cmd == "wait":
        deadline = time.monotonic() + float(sys.argv[4])
        while time.monotonic() < deadline:
            try:
                if page.eval(sys.argv[3]):
                    return 0
            except RuntimeError:
                pass
            time.sleep(0.1)
        print("not true after %ss: %s" % (sys.argv[4], sys.argv[3]), file=sys.stderr)
        return 1
    elif cmd == "screenshot":
        r = page.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        with open(sys.argv[3], "wb") as f:
            f.write(base64.b64decode(r["data"]))
    else:
        print("unknown command " + cmd, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
