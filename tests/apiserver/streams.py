"""What kube-apiserver v1.32 does between kubectl and a kubelet for exec,
attach and port-forward WebSockets (see README.md, "Streaming"):

* translate(): exec/attach with the WebSocket subprotocol v5.channel.k8s.io
  (StreamTranslatorHandler, feature TranslateStreamCloseWebsocketRequests):
  the apiserver answers the WebSocket itself and runs the remotecommand
  protocol over SPDY/3.1 to the kubelet, channel by channel.
* tunnel(): port-forward with the subprotocol SPDY/3.1+portforward.k8s.io
  (TunnelingHandler, feature PortForwardWebsockets): SPDY tunnelled in
  WebSocket binary messages; the apiserver upgrades to SPDY with the kubelet
  and unwraps the messages into a byte stream.

Both run on the handler's thread with one select() loop over the two TLS
sockets (one SSL object is never used from two threads)."""

import base64
import binascii
import collections
import errno
import json
import select
import socket
import ssl
import time

import spdy
import ws
from registry import ApiError

V5 = "v5.channel.k8s.io"
TUNNEL_PREFIX = "SPDY/3.1+"
PORTFORWARD_TUNNEL = TUNNEL_PREFIX + "portforward.k8s.io"
# What client-go's SPDY executor offers, in its order (NewSPDYExecutorForTransports).
REMOTECOMMAND_PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io", "v3.channel.k8s.io",
                           "v2.channel.k8s.io", "channel.k8s.io")
PING_PERIOD = 5.0              # the translator's SPDY pings (RoundTripperConfig.PingPeriod)
CREATE_STREAM_TIMEOUT = 30.0   # httpstream/spdy createStreamResponseTimeout
FINISH_TIMEOUT = 15 * 60.0     # how long the status waits for the client to close
MAX_HEAD = 1 << 20
MAX_BODY = 1 << 20
MAX_ERROR_STREAM = 1 << 20

STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE_SIGNAL = 0, 1, 2, 3, 4, 255


# ------------------------------------------------------------------ helpers

def is_websocket(headers):
    """wsstream.IsWebSocketRequest"""
    conn = [t.strip().lower() for t in (headers.get("Connection") or "").split(",")]
    return (headers.get("Upgrade") or "").strip().lower() == "websocket" and "upgrade" in conn


def status_success():
    return {"metadata": {}, "status": "Success"}


def internal_error(msg):
    """apierrors.NewInternalError, as json.Marshal writes metav1.Status."""
    return {"metadata": {}, "status": "Failure", "message": f"Internal error occurred: {msg}",
            "reason": "InternalError", "details": {"causes": [{"message": msg}]}, "code": 500}


def exit_code_status(rc):
    """The translator's codeExitToStatusError."""
    return {"metadata": {}, "status": "Failure",
            "message": f"command terminated with non-zero exit code: command terminated with "
                       f"exit code {rc}",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(rc)}]}}


class StreamError(Exception):
    """An error of the SPDY side that becomes an InternalError status."""


def decode_error_stream(message, protocol):
    """What client-go's error decoders make of the kubelet's error stream:
    None (success), an exit code (int) or an error message (str)."""
    if protocol in ("v2.channel.k8s.io", "v3.channel.k8s.io"):
        return "error executing remote command: " + message.decode("utf-8", "replace")
    try:
        st = json.loads(message)
        if not isinstance(st, dict):
            raise ValueError("not an object")
    except ValueError as e:
        return f"error stream protocol error: {e} in {message.decode('utf-8', 'replace')!r}"
    if st.get("status") == "Success":
        return None
    if st.get("status") != "Failure":
        return "error stream protocol error: unknown error"
    if st.get("reason") == "NonZeroExitCode":
        details = st.get("details")
        if not isinstance(details, dict):
            return "error stream protocol error: details must be set"
        for c in details.get("causes") or []:
            if isinstance(c, dict) and c.get("reason") == "ExitCode":
                m = c.get("message", "")
                if isinstance(m, str) and m.isascii() and m.isdigit() and int(m) <= 255:
                    return int(m)
                return f"error stream protocol error: invalid exit code value {m!r}"
        return "error stream protocol error: no ExitCode cause given"
    return str(st.get("message", ""))


def upgrade_failure_status(code, body):
    """SpdyRoundTripper.NewConnection on a refused upgrade: a Status body is
    returned as that status; anything else as 'unable to upgrade connection'."""
    try:
        st = json.loads(body)
    except ValueError:
        st = None
    if isinstance(st, dict) and st.get("kind", "Status") == "Status" and \
            st.get("apiVersion", "v1") == "v1":
        out = {"metadata": st.get("metadata") or {}}
        for k in ("status", "message", "reason", "details", "code"):
            if st.get(k) not in (None, "", 0, {}):
                out[k] = st[k]
        return out
    return internal_error("unable to upgrade connection: " +
                          body.decode("utf-8", "replace").strip())


def dial_error(host, port, e):
    """A failed dial worded as Go's net package words it."""
    if isinstance(e, ssl.SSLError):
        return f"tls: {e.reason or e}"
    if isinstance(e, (socket.timeout, TimeoutError)):
        why = "i/o timeout"
    else:
        why = {errno.ECONNREFUSED: "connect: connection refused",
               errno.EHOSTUNREACH: "connect: no route to host",
               errno.ENETUNREACH: "connect: network is unreachable",
               errno.ECONNRESET: "read: connection reset by peer"}.get(
            getattr(e, "errno", None), getattr(e, "strerror", None) or str(e))
    return f"dial tcp {host}:{port}: {why}"


def connect_kubelet(ctx, host, port):
    raw = socket.create_connection((host, int(port)), timeout=10)
    try:
        return ctx.wrap_socket(raw)
    except (OSError, ssl.SSLError):
        raw.close()
        raise


def read_head(sock, timeout=30.0):
    """An HTTP response head: (code, reason, [(name, value)], raw head bytes,
    bytes already read past it)."""
    sock.settimeout(timeout)
    buf = bytearray()
    try:
        while b"\r\n\r\n" not in buf:
            chunk = sock.recv(65536)
            if not chunk:
                raise StreamError("the kubelet closed the connection before answering")
            buf += chunk
            if len(buf) > MAX_HEAD:
                raise StreamError("the kubelet's answer has no end of headers")
    except socket.timeout:
        raise StreamError("timeout waiting for the kubelet's answer")
    finally:
        sock.settimeout(None)
    head, _, rest = bytes(buf).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        raise StreamError(f"malformed HTTP response from the kubelet: {lines[0]!r}")
    hdrs = []
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hdrs.append((k.strip(), v.strip()))
    return int(parts[1]), parts[2] if len(parts) > 2 else "", hdrs, head + b"\r\n\r\n", rest


def hget(hdrs, name, default=""):
    name = name.lower()
    return next((v for k, v in hdrs if k.lower() == name), default)


def read_body(sock, hdrs, rest, timeout=10.0):
    """The body of a (non-101) response, at most MAX_BODY bytes:
    Content-Length, chunked, or up to the close."""
    buf = bytearray(rest)
    sock.settimeout(timeout)

    def more():
        try:
            chunk = sock.recv(65536)
        except (socket.timeout, OSError):
            return False
        buf.extend(chunk)
        return bool(chunk) and len(buf) <= MAX_BODY + 65536

    try:
        if "chunked" in hget(hdrs, "Transfer-Encoding").lower():
            out, pos = bytearray(), 0
            while True:
                while b"\r\n" not in buf[pos:]:
                    if not more():
                        return bytes(out)
                end = buf.index(b"\r\n", pos)
                try:
                    n = int(bytes(buf[pos:end]).split(b";")[0], 16)
                except ValueError:
                    return bytes(out)
                if n == 0 or len(out) + n > MAX_BODY:
                    return bytes(out)
                while len(buf) < end + 2 + n + 2:
                    if not more():
                        return bytes(out + buf[end + 2:end + 2 + n])
                out += buf[end + 2:end + 2 + n]
                pos = end + 2 + n + 2
        length = hget(hdrs, "Content-Length")
        if length.isdigit():
            n = min(int(length), MAX_BODY)
            while len(buf) < n and more():
                pass
            return bytes(buf[:n])
        while more():
            pass
        return bytes(buf[:MAX_BODY])
    finally:
        try:
            sock.settimeout(None)
        except OSError:
            pass


def send_response(handler, code, reason, hdrs, body):
    """A kubelet's non-101 answer, passed on whole (as the apiserver writes
    the backend response to the client), then the connection ends."""
    out = [f"HTTP/1.1 {code} {reason}".rstrip()]
    for k, v in hdrs:
        if k.lower() not in ("content-length", "transfer-encoding", "connection",
                             "keep-alive"):
            out.append(f"{k}: {v}")
    out += [f"Content-Length: {len(body)}", "Connection: close"]
    handler.connection.sendall(("\r\n".join(out) + "\r\n\r\n").encode("latin-1") + body)


def send_plain(handler, code, reason, text):
    """http.Error"""
    body = (text + "\n").encode()
    handler.connection.sendall(
        (f"HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
         f"X-Content-Type-Options: nosniff\r\nContent-Length: {len(body)}\r\n"
         f"Connection: close\r\n\r\n").encode() + body)


def ws_handshake_error(headers, method):
    """What a Go WebSocket server refuses before upgrading, or None."""
    if method != "GET":
        return ("websocket: the client is not using the websocket protocol: request method "
                "is not GET")
    if (headers.get("Sec-WebSocket-Version") or "").strip() != "13":
        return "websocket: unsupported version: 13 not found in 'Sec-Websocket-Version' header"
    key = (headers.get("Sec-WebSocket-Key") or "").strip()
    try:
        if len(base64.b64decode(key, validate=True)) != 16:
            raise ValueError
    except (ValueError, binascii.Error):
        return "websocket: not a websocket handshake: 'Sec-WebSocket-Key' header must be " \
               "Base64 encoded value of 16-byte in length"
    return None


def send_ws_accept(handler, protocol):
    key = handler.headers.get("Sec-WebSocket-Key").strip()
    lines = ["HTTP/1.1 101 Switching Protocols", "Upgrade: websocket", "Connection: Upgrade",
             f"Sec-WebSocket-Accept: {ws.accept_key(key)}"]
    if protocol:
        lines.append(f"Sec-WebSocket-Protocol: {protocol}")
    handler.connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())


def _recv(s):
    """Non-blocking read: bytes, b'' at EOF or error, None if nothing yet."""
    try:
        return s.recv(65536)
    except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError, InterruptedError):
        return None
    except (OSError, ValueError):
        return b""


HIGH_WATER = 1 << 20   # queued bytes for one side before its source stops being read


class Out:
    """Output queued for a non-blocking socket, written as it takes it: the
    loops never block writing one side while the other side waits to be
    read (the apiserver's goroutines cannot deadlock that way either)."""
    CHUNK = 16384

    def __init__(self, sock):
        self.sock, self.q, self.size, self.broken = sock, collections.deque(), 0, False

    def put(self, data):
        if data and not self.broken:
            self.q.append(bytes(data))
            self.size += len(data)

    def flush(self):
        while self.q and not self.broken:
            head = self.q[0]
            if len(head) > self.CHUNK:   # a TLS write is retried with the same bytes
                self.q[0] = head[self.CHUNK:]
                self.q.appendleft(head[:self.CHUNK])
                head = self.q[0]
            try:
                n = self.sock.send(head)
            except (ssl.SSLWantWriteError, ssl.SSLWantReadError, BlockingIOError,
                    InterruptedError):
                return
            except (OSError, ValueError):
                self.broken = True
                self.q.clear()
                self.size = 0
                return
            self.size -= n
            if n < len(head):
                self.q[0] = head[n:]
            else:
                self.q.popleft()


def _out(s):
    o = getattr(s, "_standin_out", None)
    if o is None:
        o = s._standin_out = Out(s)
    return o


def _send(s, data):
    """Queues data for s and writes what s takes now (never blocks)."""
    o = _out(s)
    o.put(data)
    o.flush()


def _io(readers, socks, timeout):
    """Writes the queued output of socks as they take it and waits (at most
    timeout; None: no limit) until one of readers is readable: -> those."""
    for s in socks:
        _out(s).flush()
    ready = [s for s in readers if s.pending()]
    if ready:
        return ready
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        writers = [s for s in socks if _out(s).q]
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            r, w, _ = select.select(readers, writers, [], left)
        except (OSError, ValueError):
            return list(readers)
        for s in w:
            _out(s).flush()
        if r or not w or (deadline is not None and time.monotonic() >= deadline):
            return r


def _drain(s, timeout):
    """Waits (at most timeout) for the queued output of s to be written."""
    deadline = time.monotonic() + timeout
    o = _out(s)
    o.flush()
    while o.q and not o.broken and time.monotonic() < deadline:
        try:
            select.select([], [s], [], max(0.0, deadline - time.monotonic()))
        except (OSError, ValueError):
            return
        o.flush()


def _close(s):
    try:
        s.setblocking(True)
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        s.close()
    except OSError:
        pass


def spdy_upgrade_request(target, host, port, protocols, extra=()):
    """The upgrade request to the kubelet, laid out as Go's Request.Write does
    (Host, User-Agent, Content-Length: 0 for a body-less POST, then the
    headers sorted by name; X-Stream-Protocol-Version once per protocol)."""
    hdrs = sorted(list(extra) + [("Connection", "Upgrade"), ("Upgrade", "SPDY/3.1")] +
                  [("X-Stream-Protocol-Version", p) for p in protocols],
                  key=lambda kv: kv[0])
    ua = next((v for k, v in hdrs if k.lower() == "user-agent"), "Go-http-client/1.1")
    lines = [f"POST {target} HTTP/1.1", f"Host: {host}:{port}", f"User-Agent: {ua}",
             "Content-Length: 0"]
    lines += [f"{k}: {v}" for k, v in hdrs if k.lower() != "user-agent"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


# ------------------------------------------------------------------ exec/attach

class Translator:
    """One exec/attach session: WebSocket v5 from kubectl, SPDY to the kubelet."""

    def __init__(self, handler, ctx, host, port, target, opts):
        self.h, self.ctx, self.host, self.port, self.target = handler, ctx, host, port, target
        self.stdin, self.stdout, self.stderr, self.tty = (
            opts["stdin"], opts["stdout"], opts["stderr"], opts["tty"])
        self.client = handler.connection
        self.cparse = ws.Parser(server=True)
        self.up = None
        self.codec = spdy.HeaderCodec()
        self.sparse = spdy.FrameParser(self.codec)
        self.streams = {}          # sid -> {"type", "replied", "remote_closed", "local_closed"}
        self.by_type = {}
        self.next_sid, self.next_ping = 1, 1
        self.err = bytearray()
        self.resize_buf, self.resize_open = bytearray(), True
        self.client_gone = False
        self.protocol = None

    # -- WebSocket side

    def ws_send(self, channel, data=b""):
        if not self.client_gone:
            _send(self.client, ws.frame(ws.BINARY, bytes([channel]) + data))
            self.client_gone = _out(self.client).broken

    def run(self):
        bad = ws_handshake_error(self.h.headers, self.h.command)
        if bad:
            return send_plain(self.h, 400, "Bad Request", bad)
        send_ws_accept(self.h, V5)
        self.client.setblocking(False)
        try:
            self._run()
        finally:
            self.client.setblocking(True)

    def _run(self):
        # The lowest writable channel gets an empty message: the client
        # knows the session is set up.
        self.ws_send(STDOUT if self.stdout else STDERR if self.stderr else ERROR)
        try:
            status = self.execute()
        except ws.WsError as e:   # the client broke the WebSocket protocol
            _send(self.client, ws.close_frame(e.code, e.reason))
            self.client_gone, status = True, None
        except (StreamError, spdy.SpdyError, OSError) as e:
            status = internal_error(str(e))
        if self.up is not None:
            _send(self.up, spdy.goaway(0))
            _drain(self.up, 5)
            _close(self.up)
        if status is not None:
            self.finish(status)
        else:
            _drain(self.client, 5)   # a close frame answering the client's

    def finish(self, status):
        """Status on the error channel, a close frame, then wait (bounded)
        for the client to close, so that no output still queued is lost."""
        self.ws_send(ERROR, json.dumps(status, separators=(",", ":")).encode())
        if self.client_gone:
            return
        _send(self.client, ws.close_frame(ws.NORMAL))
        deadline = time.monotonic() + FINISH_TIMEOUT
        while time.monotonic() < deadline and not _out(self.client).broken:
            if not _io([self.client], [self.client], deadline - time.monotonic()):
                continue
            data = _recv(self.client)
            if data is None:
                continue
            if not data:
                return
            try:
                if any(op == ws.CLOSE for op, _ in self.cparse.feed(data)):
                    return
            except ws.WsError:
                return

    def on_ws(self, op, payload):
        if op == ws.CLOSE:
            code, _ = ws.parse_close(payload)
            _send(self.client, ws.close_frame(code if code not in (None, ws.NO_STATUS)
                                              else None))
            self.client_gone = True
            return
        if op == ws.PING:
            _send(self.client, ws.frame(ws.PONG, payload))
            return
        if op not in (ws.BINARY, ws.TEXT) or not payload:
            return
        ch, data = payload[0], payload[1:]
        if ch == STDIN and self.stdin and data:
            s = self.by_type.get("stdin")
            if s is not None and not self.streams[s]["local_closed"]:
                _send(self.up, spdy.data_frames(s, data))
        elif ch == RESIZE and self.tty:
            self.resize_buf += data
            self.resizes()
        elif ch == CLOSE_SIGNAL and len(data) == 1:
            if data[0] == STDIN:
                s = self.by_type.get("stdin")
                if s is not None and not self.streams[s]["local_closed"]:
                    self.streams[s]["local_closed"] = True
                    _send(self.up, spdy.data_frame(s, b"", fin=True))
            elif data[0] == RESIZE:
                self.resize_open = False

    def resizes(self):
        """The client's JSON TerminalSize objects, re-encoded as Go's
        json.Encoder writes them on the SPDY resize stream. Invalid JSON ends
        the resizes (the apiserver's decoder loop stops)."""
        dec = json.JSONDecoder()
        while self.resize_open:
            text = bytes(self.resize_buf).decode("utf-8", "replace")
            stripped = text.lstrip()
            if not stripped:
                self.resize_buf.clear()
                return
            try:
                obj, end = dec.raw_decode(stripped)
            except ValueError as e:
                if getattr(e, "pos", 0) >= len(stripped) - 1 and len(stripped) < 4096:
                    return  # incomplete: wait for more
                self.resize_open = False
                return
            del self.resize_buf[:len(text[:len(text) - len(stripped) + end].encode())]
            size = {k.lower(): v for k, v in obj.items()} if isinstance(obj, dict) else None
            w, hgt = (size or {}).get("width", 0), (size or {}).get("height", 0)
            if size is None or not all(type(x) is int and 0 <= x <= 65535 for x in (w, hgt)):
                self.resize_open = False
                return
            s = self.by_type.get("resize")
            if s is not None:
                _send(self.up, spdy.data_frame(
                    s, json.dumps({"Width": w, "Height": hgt}, separators=(",", ":")).encode() +
                    b"\n"))

    # -- SPDY side

    def on_frame(self, f):
        if f.type is None:
            s = self.streams.get(f.sid)
            if s is None:
                return
            t = s["type"]
            if f.data and t == "stdout":
                self.ws_send(STDOUT, f.data)
            elif f.data and t == "stderr":
                self.ws_send(STDERR, f.data)
            elif t == "error":
                if len(self.err) + len(f.data) > MAX_ERROR_STREAM:
                    raise StreamError("the error stream is larger than 1 MiB")
                self.err += f.data
            if f.fin:
                s["remote_closed"] = True
        elif f.type == spdy.SYN_REPLY:
            s = self.streams.get(f.sid)
            if s is not None:
                s["replied"] = True
                if f.fin:
                    s["remote_closed"] = True
        elif f.type == spdy.RST_STREAM:
            s = self.streams.get(f.sid)
            if s is not None:
                s["reset"] = s["remote_closed"] = s["local_closed"] = True
        elif f.type == spdy.PING:
            if f.ping_id % 2 == 0:      # the kubelet's own ping: echo it
                _send(self.up, spdy.ping(f.ping_id))
        elif f.type == spdy.SYN_STREAM:
            _send(self.up, spdy.rst_stream(f.sid, spdy.REFUSED_STREAM))
        # SETTINGS, WINDOW_UPDATE, HEADERS, GOAWAY: nothing to do

    def pump_once(self, timeout, with_client):
        """Waits for either side; False once the kubelet's side ended."""
        readers = []
        if self.client_gone or _out(self.client).size < HIGH_WATER:
            readers.append(self.up)
        if with_client and not self.client_gone and _out(self.up).size < HIGH_WATER:
            readers.append(self.client)
        for s in _io(readers, [self.up, self.client], timeout):
            data = _recv(s)
            if data is None:
                continue
            if s is self.up:
                if not data:
                    return False
                for f in self.sparse.feed(data):
                    self.on_frame(f)
            elif not data:
                self.client_gone = True
            else:
                for op, payload in self.cparse.feed(data):
                    self.on_ws(op, payload)
        now = time.monotonic()
        if now >= self.ping_at:
            self.ping_at = now + PING_PERIOD
            _send(self.up, spdy.ping(self.next_ping))
            self.next_ping += 2
        if _out(self.client).broken:
            self.client_gone = True
        return not _out(self.up).broken

    def create_stream(self, typ):
        sid = self.next_sid
        self.next_sid += 2
        self.streams[sid] = {"type": typ, "replied": False, "remote_closed": False,
                             "local_closed": False, "reset": False}
        self.by_type[typ] = sid
        _send(self.up, spdy.syn_stream(self.codec, sid, [("streamtype", typ)]))
        deadline = time.monotonic() + CREATE_STREAM_TIMEOUT
        while not self.streams[sid]["replied"]:
            if self.streams[sid]["reset"]:
                raise StreamError(f"error creating {typ} stream: reset by the kubelet")
            left = deadline - time.monotonic()
            if left <= 0:
                raise StreamError(f"error creating {typ} stream: timeout waiting for SYN_REPLY")
            if not self.pump_once(min(left, PING_PERIOD), with_client=False):
                raise StreamError(f"error creating {typ} stream: the kubelet closed the "
                                  f"connection")

    def execute(self):
        try:
            self.up = connect_kubelet(self.ctx, self.host, self.port)
        except OSError as e:
            return internal_error("error dialing backend: " + dial_error(self.host, self.port, e))
        self.up.sendall(spdy_upgrade_request(self.target, self.host, self.port,
                                             REMOTECOMMAND_PROTOCOLS))
        code, reason, hdrs, _, rest = read_head(self.up)
        if code != 101 or "upgrade" not in hget(hdrs, "Connection").lower() or \
                "spdy/3.1" not in hget(hdrs, "Upgrade").lower():
            body = read_body(self.up, hdrs, rest) if code != 101 else b""
            return upgrade_failure_status(code, body)
        self.protocol = hget(hdrs, "X-Stream-Protocol-Version").strip()
        if self.protocol not in REMOTECOMMAND_PROTOCOLS[:4]:
            return internal_error(f"the kubelet chose the remotecommand protocol "
                                  f"{self.protocol!r}, which this stand-in does not translate")
        self.up.setblocking(False)
        self.ping_at = time.monotonic() + PING_PERIOD
        for f in self.sparse.feed(rest):
            self.on_frame(f)
        # client-go's order: error, stdin, stdout, stderr (not with a tty),
        # resize (v3 and later, with a tty); each waits for its SYN_REPLY.
        self.create_stream("error")
        if self.stdin:
            self.create_stream("stdin")
        if self.stdout:
            self.create_stream("stdout")
        if self.stderr and not self.tty:
            self.create_stream("stderr")
        if self.tty and self.protocol != "v2.channel.k8s.io":
            self.create_stream("resize")
            self.resizes()
        wait_for = [sid for sid, s in self.streams.items()
                    if s["type"] in ("stdout", "stderr", "error")]
        while not all(self.streams[sid]["remote_closed"] for sid in wait_for):
            if self.client_gone:
                return None   # kubectl went away: the kubelet side is closed too
            if not self.pump_once(PING_PERIOD, with_client=True):
                break         # the connection ended: every stream ends with it
        result = decode_error_stream(bytes(self.err), self.protocol) if self.err else None
        if result is None:
            return status_success()
        if isinstance(result, int):
            return exit_code_status(result)
        return internal_error(result)


def translate(handler, ctx, host, port, target, opts):
    Translator(handler, ctx, host, port, target, opts).run()


# ------------------------------------------------------------------ port-forward

def tunnel(handler, ctx, host, port, target):
    """SPDY/3.1+portforward.k8s.io: the SPDY upgrade to the kubelet with the
    client's request (minus its WebSocket headers), then WebSocket binary
    message payloads <-> the kubelet's bytes."""
    h = handler
    protos = [p[len(TUNNEL_PREFIX):] for p in ws.subprotocols(h.headers.get(
        "Sec-WebSocket-Protocol")) if p.startswith(TUNNEL_PREFIX) and p.endswith(".k8s.io")]
    if not protos:
        return send_plain(h, 400, "Bad Request",
                          "unable to upgrade: no tunneling spdy protocols provided")
    try:
        up = connect_kubelet(ctx, host, port)
    except OSError as e:
        raise ApiError(500, "InternalError",
                       "error trying to reach service: " + dial_error(host, port, e))
    try:
        extra = [(k, v) for k, v in h.headers.items() if k.lower() not in (
            "host", "authorization", "content-length", "transfer-encoding", "upgrade",
            "sec-websocket-protocol", "sec-websocket-key", "sec-websocket-version",
            "x-stream-protocol-version")]
        extra.append(("X-Forwarded-For", h.client_address[0]))
        # Connection comes from the client's request ("Upgrade")
        req = spdy_upgrade_request(target, host, port, protos, [
            kv for kv in extra if kv[0].lower() != "connection"])
        up.sendall(req)
        try:
            code, reason, hdrs, _, rest = read_head(up)
        except StreamError as e:
            raise ApiError(500, "InternalError", f"error proxying to the kubelet: {e}")
        if code != 101:
            return send_response(h, code, reason, hdrs, read_body(up, hdrs, rest))
        if "upgrade" not in hget(hdrs, "Connection").lower() or \
                "spdy/3.1" not in hget(hdrs, "Upgrade").lower():
            return send_plain(h, 500, "Internal Server Error",
                              "unable to upgrade: missing upgrade headers in response")
        bad = ws_handshake_error(h.headers, h.command)
        if bad:
            return send_plain(h, 400, "Bad Request", bad)
        chosen = hget(hdrs, "X-Stream-Protocol-Version").strip()
        send_ws_accept(h, TUNNEL_PREFIX + chosen if chosen else None)
        try:
            pump_tunnel(h.connection, up, rest)
        finally:
            h.connection.setblocking(True)
    finally:
        _close(up)


def pump_tunnel(client, up, rest=b""):
    for s in (client, up):
        s.setblocking(False)
    try:
        _pump_tunnel(client, up, rest)
    finally:   # what is still queued (a close frame, the last bytes) goes out
        _drain(up, 5)
        _drain(client, 5)


def _pump_tunnel(client, up, rest):
    parser = ws.Parser(server=True)
    if rest:
        _send(client, ws.frame(ws.BINARY, rest))
    while not (_out(client).broken or _out(up).broken):
        readers = []
        if _out(client).size < HIGH_WATER:
            readers.append(up)
        if _out(up).size < HIGH_WATER:
            readers.append(client)
        for s in _io(readers, [client, up], None):
            data = _recv(s)
            if data is None:
                continue
            if s is up:
                if not data:   # the kubelet ended: a normal close to the client
                    _send(client, ws.close_frame(ws.NORMAL))
                    return
                _send(client, ws.frame(ws.BINARY, data))
                continue
            if not data:
                return
            try:
                msgs = parser.feed(data)
            except ws.WsError as e:
                _send(client, ws.close_frame(e.code, e.reason))
                return
            for op, payload in msgs:
                if op == ws.BINARY:
                    _send(up, payload)
                elif op == ws.PING:
                    _send(client, ws.frame(ws.PONG, payload))
                elif op == ws.CLOSE:
                    code, _ = ws.parse_close(payload)
                    _send(client, ws.close_frame(code if code not in (None, ws.NO_STATUS)
                                                 else None))
                    return
                elif op == ws.TEXT:   # the tunnel carries binary messages only
                    _send(client, ws.close_frame(ws.UNSUPPORTED, "invalid message type"))
                    return


def pump_raw(client, up):
    """Bytes both ways until either side ends (the relay of a log body or of
    an upgraded connection); then what is queued for the other side is
    written (bounded) and both are shut down."""
    for s in (client, up):
        s.setblocking(False)
    try:
        while not (_out(client).broken or _out(up).broken):
            readers = [x for x, other in ((client, up), (up, client))
                       if _out(other).size < HIGH_WATER]
            for s in _io(readers, [client, up], None):
                data = _recv(s)
                if data is None:
                    continue
                if not data:
                    return
                _send(up if s is client else client, data)
    finally:
        _drain(up, 5)
        _drain(client, 5)
        for s in (client, up):
            try:
                s.setblocking(True)
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
