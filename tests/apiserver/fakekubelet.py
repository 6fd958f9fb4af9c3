"""A fake kubelet node API for selftest.py: HTTPS on loopback (client
certificate required), speaking what a kubelet speaks after an upgrade:

* SPDY/3.1 remotecommand (v4.channel.k8s.io) for /exec and /attach, with a
  few built-in "commands": `echo ARGS` (stdout), `err ARGS` (stderr),
  `exit N` (exit status N), `cat` (stdin to stdout until stdin ends), `tty`
  (reports each resize on stdout until stdin ends); attach behaves as `cat`;
* SPDY/3.1 portforward.k8s.io for /portForward: each data stream is echoed
  back upper-cased;
* WebSocket v5.channel.k8s.io for /exec (the apiserver's relay mode):
  `echo`/`exit` only;
* a refusal: container `missing` answers 404 text, container `gone` a 404
  Status (chunked), port-forward to pod `p2` a 500 text.

Every request is recorded (method, target, header lines in order) with the
SPDY streams it opened, for the tests to check what the apiserver sent."""

import json
import socket
import ssl
import threading
import urllib.parse

import spdy
import ws

SUPPORTED = ("v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io")


class FakeKubelet:
    def __init__(self, cert, key, ca):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.ctx.load_verify_locations(ca)
        self.ctx.verify_mode = ssl.CERT_REQUIRED
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.requests = []
        self.lock = threading.Lock()
        threading.Thread(target=self.serve, daemon=True).start()

    def close(self):
        self.sock.close()

    def serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.conn, args=(c,), daemon=True).start()

    def conn(self, raw):
        try:
            s = self.ctx.wrap_socket(raw, server_side=True)
        except (OSError, ssl.SSLError):
            raw.close()
            return
        try:
            self.handle(s)
        except (OSError, ssl.SSLError, spdy.SpdyError, ws.WsError):
            pass
        finally:
            try:
                s.close()
            except OSError:
                pass

    def handle(self, s):
        buf = b""
        while b"\r\n\r\n" not in buf:
            d = s.recv(65536)
            if not d:
                return
            buf += d
        head, _, rest = buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        hdrs = [tuple(x.strip() for x in ln.split(":", 1)) for ln in lines[1:]]
        rec = {"method": method, "target": target, "headers": hdrs, "streams": []}
        with self.lock:
            self.requests.append(rec)
        url = urllib.parse.urlsplit(target)
        q = urllib.parse.parse_qs(url.query)
        parts = url.path.split("/")
        container = parts[4] if len(parts) > 4 else ""

        def h(name):
            return [v for k, v in hdrs if k.lower() == name.lower()]
        if parts[1] == "portForward" and parts[3] == "p2":
            body = b"port-forward refused by the fake kubelet"
            s.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\n"
                      b"Content-Length: %d\r\n\r\n" % len(body) + body)
            return
        if container == "missing":
            body = b'container not found ("missing")'
            s.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\n"
                      b"Content-Length: %d\r\n\r\n" % len(body) + body)
            return
        if container == "gone":
            body = json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {},
                               "status": "Failure", "message": "pod default/p has no container "
                               "gone", "reason": "NotFound", "code": 404}).encode()
            # chunked, to check the apiserver passes a whole body on
            s.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
                      b"Transfer-Encoding: chunked\r\n\r\n" +
                      b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
            return
        if parts[1] == "containerLogs" and container == "c":
            # a log, chunked in two pieces (the apiserver relays it as it comes)
            s.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                      b"Transfer-Encoding: chunked\r\n\r\n" +
                      b"b\r\nlog line 1\n\r\n" + b"b\r\nlog line 2\n\r\n0\r\n\r\n")
            return
        if (h("Upgrade") or [""])[0].lower() == "websocket":
            return self.websocket(s, rec, q, h)
        if (h("Upgrade") or [""])[0] != "SPDY/3.1":
            s.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            return
        offered = [p.strip() for v in h("X-Stream-Protocol-Version") for p in v.split(",")]
        supported = ("portforward.k8s.io",) if parts[1] == "portForward" else SUPPORTED
        chosen = next((p for p in offered if p in supported), None)
        if chosen is None:
            s.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            return
        rec["protocol"] = chosen
        s.sendall(("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
                   "Upgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: %s\r\n\r\n" % chosen).encode())
        Session(s, rec, q, parts[1], rest).run()

    def websocket(self, s, rec, q, h):
        offered = ws.subprotocols((h("Sec-WebSocket-Protocol") or [""])[0])
        proto = next((p for p in offered if p in ("v5.channel.k8s.io", "v4.channel.k8s.io")),
                     None)
        rec["protocol"] = proto
        key = h("Sec-WebSocket-Key")[0]
        s.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                   "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n"
                   "Sec-WebSocket-Protocol: %s\r\n\r\n" % (ws.accept_key(key), proto)).encode())
        cmd = q.get("command", [])
        if cmd[:1] == ["exit"]:
            status = exit_status(int(cmd[1]))
        else:
            s.sendall(ws.frame(ws.BINARY, b"\x01" + " ".join(cmd[1:]).encode() + b"\n"))
            status = {"metadata": {}, "status": "Success"}
        s.sendall(ws.frame(ws.BINARY, b"\x03" + json.dumps(status).encode()))
        s.sendall(ws.close_frame(ws.NORMAL))
        p = ws.Parser(server=True)
        while True:
            d = s.recv(65536)
            if not d or any(op == ws.CLOSE for op, _ in p.feed(d)):
                return


def exit_status(rc):
    return {"metadata": {}, "status": "Failure",
            "message": f"command terminated with non-zero exit code: exit status {rc}",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(rc)}]}}


class Session:
    """The server side of one SPDY session."""

    def __init__(self, s, rec, q, kind, rest):
        self.s, self.rec, self.q, self.kind = s, rec, q, kind
        self.codec = spdy.HeaderCodec()
        self.parser = spdy.FrameParser(self.codec)
        self.rest = rest
        self.types = {}       # streamtype -> sid (remotecommand)
        self.pf = {}          # sid -> (streamtype, requestid) (port-forward)
        self.started = False
        self.done = False

    def send(self, b):
        self.s.sendall(b)

    def run(self):
        frames = self.parser.feed(self.rest)
        while True:
            for f in frames:
                self.frame(f)
            try:
                d = self.s.recv(65536)
            except OSError:
                d = b""
            if not d:
                self.rec["ended"] = True
                return
            frames = self.parser.feed(d)

    def frame(self, f):
        if f.type == spdy.SYN_STREAM:
            self.rec["streams"].append(f.headers)
            self.send(spdy.syn_reply(self.codec, f.sid, []))
            t = spdy.header(f.headers, "streamtype")
            if self.kind == "portForward":
                self.pf[f.sid] = (t, spdy.header(f.headers, "requestid"))
                return
            self.types[t] = f.sid
            self.maybe_start()
        elif f.type == spdy.PING:
            self.send(spdy.ping(f.ping_id))
        elif f.type == spdy.GOAWAY:
            self.rec["goaway"] = True
        elif f.type is None:
            self.data(f)

    def flag(self, name):
        return self.q.get(name, [""])[0] in ("1", "true")

    def maybe_start(self):
        want = {"error"} | {n for n in ("stdin", "stdout") if self.flag(n)}
        if self.flag("stderr") and not self.flag("tty"):
            want.add("stderr")
        if self.flag("tty") and self.rec.get("protocol") != "v2.channel.k8s.io":
            want.add("resize")
        if self.started or not want <= set(self.types):
            return
        self.started = True
        cmd = self.q.get("command", []) if self.kind == "exec" else ["cat"]
        if cmd[:1] == ["echo"]:
            self.out("stdout", " ".join(cmd[1:]).encode() + b"\n")
            self.finish(0)
        elif cmd[:1] == ["err"]:
            self.out("stderr", " ".join(cmd[1:]).encode() + b"\n")
            self.finish(0)
        elif cmd[:1] == ["exit"]:
            self.finish(int(cmd[1]))
        self.cmd = cmd

    def out(self, t, data, fin=False):
        if t in self.types:
            self.send(spdy.data_frames(self.types[t], data, fin))

    def finish(self, rc):
        if self.done:
            return
        self.done = True
        for t in ("stdout", "stderr"):
            self.out(t, b"", fin=True)
        if rc:
            self.out("error", json.dumps(exit_status(rc)).encode())
        self.out("error", b"", fin=True)

    def data(self, f):
        if self.kind == "portForward":
            t, rid = self.pf.get(f.sid, (None, None))
            if t == "data":
                if f.data:
                    self.send(spdy.data_frame(f.sid, f.data.upper()))
                if f.fin:
                    self.send(spdy.data_frame(f.sid, b"", fin=True))
                    err = next((sid for sid, (tt, r) in self.pf.items()
                                if tt == "error" and r == rid), None)
                    if err is not None:
                        self.send(spdy.data_frame(err, b"", fin=True))
            return
        sid_type = {v: k for k, v in self.types.items()}.get(f.sid)
        if sid_type == "stdin" and not self.done:
            if f.data and self.cmd[:1] == ["cat"]:
                self.out("stdout", f.data)
            if f.fin:
                self.finish(0)
        elif sid_type == "resize" and f.data:
            self.rec.setdefault("resizes", []).append(f.data)
            for line in f.data.splitlines():
                size = json.loads(line)
                self.out("stdout", b"resize %d %d\n" % (size["Width"], size["Height"]))

