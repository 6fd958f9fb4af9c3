"""HTTP/2 for the stand-in (README.md, "HTTP/2"), with Debian's python3-h2.

A connection whose TLS handshake chose ALPN "h2" is served here: one I/O
thread (the connection's socketserver thread) is the only one to touch the
TLS socket; each request stream runs the ordinary request handler in a
thread of its own (H2Handler, a Handler whose status line, headers and body
writes become HEADERS and DATA frames), so every route, watch and error of
the HTTP/1.1 server behaves the same over HTTP/2.

As Go's HTTP/2 server under kube-apiserver v1.32 (secure_serving.go):
SETTINGS_MAX_CONCURRENT_STREAMS 100 unless --http2-max-streams-per-connection
sets another, SETTINGS_MAX_FRAME_SIZE and SETTINGS_INITIAL_WINDOW_SIZE
256 KiB (MaxReadFrameSize, MaxUploadBufferPerStream), a connection window of
256 KiB times the stream limit; requests with connection-specific headers
(Connection, Upgrade, Keep-Alive, Proxy-Connection, Transfer-Encoding, a TE
other than "trailers") are reset with PROTOCOL_ERROR: a WebSocket or SPDY
upgrade cannot be made over HTTP/2, and the clients that need one (kubectl
exec/attach/port-forward) offer only http/1.1 in ALPN. A graceful shutdown
(and POST /debug/goaway) sends GOAWAY NO_ERROR with the highest stream id
seen, lets the streams already open finish, and closes the connection once
none is left (or when the grace period given ends)."""

import http.client
import os
import select
import socket
import ssl
import sys
import threading
import time

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
from hyperframe.frame import GoAwayFrame

DEFAULT_MAX_STREAMS = 100       # kube-apiserver when --http2-max-streams-per-connection is 0
FRAME_SIZE = 256 * 1024         # resourceBody99Percentile: MaxReadFrameSize
STREAM_WINDOW = 256 * 1024      # MaxUploadBufferPerStream
CONNECTION_HEADERS = {b"connection", b"upgrade", b"keep-alive", b"proxy-connection",
                      b"transfer-encoding"}
RESPONSE_HOP_HEADERS = {"connection", "keep-alive", "proxy-connection", "transfer-encoding",
                        "upgrade"}


class StreamGone(ConnectionResetError):
    """The client reset the stream or the connection ended."""


class Body:
    """A request body as it arrives in DATA frames; reading it gives the
    client flow-control credit back."""

    def __init__(self, conn, sid):
        self.conn, self.sid = conn, sid
        self.buf = bytearray()
        self.eof = False
        self.gone = False
        self.total = 0

    def feed(self, data, flow_len):
        # under conn.lock
        self.buf += data
        self.total += len(data)
        padding = flow_len - len(data)
        if padding > 0:
            self.conn.ack(self.sid, padding)

    def read_all(self, limit):
        """The whole body; None when it is larger than limit (the rest is
        still received and dropped)."""
        out, too_large = bytearray(), False
        with self.conn.lock:
            while True:
                if self.buf:
                    n = len(self.buf)
                    if not too_large and len(out) + n <= limit:
                        out += self.buf
                    else:
                        too_large = True
                        out.clear()
                    self.buf.clear()
                    self.conn.ack(self.sid, n)
                if self.eof or self.gone:
                    break
                self.conn.cond.wait(1.0)
        if self.gone and not self.eof:
            raise StreamGone("the client reset the stream")
        return None if too_large else bytes(out)


class PeerInfo:
    """What authenticate() reads from the TLS socket, taken once."""

    def __init__(self, cert):
        self._cert = cert

    def getpeercert(self):
        return self._cert


class Writer:
    """wfile of an H2Handler: DATA frames on its stream."""

    def __init__(self, h):
        self.h = h

    def write(self, data):
        self.h.h2_write(bytes(data))
        return len(data)

    def flush(self):
        pass


def local_settings(max_streams):
    return h2.settings.Settings(client=False, initial_values={
        h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: max_streams,
        h2.settings.SettingCodes.MAX_FRAME_SIZE: FRAME_SIZE,
        h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: STREAM_WINDOW,
        h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: 1 << 20,
    })


class Conn:
    """One HTTP/2 connection: the h2 state machine, its lock, and the
    streams' bookkeeping. Only io_loop touches the socket."""

    def __init__(self, handler):
        self.handler = handler
        self.server = handler.server
        self.sock = handler.request
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.streams = {}            # sid -> H2Handler
        self.wake_r, self.wake_w = os.pipe()
        self.pipe_closed = False  # under self.lock, as every wake()
        os.set_blocking(self.wake_w, False)
        self.extra_out = bytearray()  # frames h2 does not send itself (graceful GOAWAY)
        self.goaway_sent = False
        self.goaway_last = 0
        self.close_at = None
        self.closed = False
        self.max_seen = 0
        self.rec = handler.conn_rec
        max_streams = getattr(self.server, "h2_max_streams", 0) or DEFAULT_MAX_STREAMS
        cfg = h2.config.H2Configuration(client_side=False, header_encoding=None,
                                        validate_inbound_headers=False)
        self.h2 = h2.connection.H2Connection(config=cfg)
        # Our settings, current from the start (h2 would apply the ones
        # sent in the first SETTINGS only at their ACK; a client may use
        # them as soon as it has them)
        self.h2.local_settings = local_settings(max_streams)
        self.h2.max_inbound_frame_size = FRAME_SIZE
        self.h2.decoder.max_header_list_size = 1 << 20
        self.rec["maxConcurrentStreams"] = max_streams
        self.max_streams = max_streams
        self.settings_acked = False
        self.h2.initiate_connection()
        # The limit is enforced in _request, per stream as Go does (h2
        # would end the whole connection, also for the streams a client
        # may open before it has our SETTINGS): h2's own check gets no limit.
        self.h2.local_settings = local_settings(2 ** 31 - 1)
        # the connection window: MaxUploadBufferPerConnection
        self.h2.increment_flow_control_window(STREAM_WINDOW * max_streams - 65535)
        self.peer = PeerInfo(self.sock.getpeercert())

    # ---- called with self.lock held

    def wake(self):
        if self.pipe_closed:
            return   # (the fd numbers may belong to another connection by now)
        try:
            os.write(self.wake_w, b"x")
        except (BlockingIOError, OSError):
            pass

    def ack(self, sid, n):
        if n <= 0:
            return
        try:
            self.h2.acknowledge_received_data(n, sid)
        except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError, KeyError):
            pass
        self.wake()

    def goaway(self, grace=None):
        """GOAWAY NO_ERROR with the highest stream seen; streams up to it
        go on (h2 itself would refuse to send on them after its own
        close_connection, so the frame is made here)."""
        if self.goaway_sent:
            return
        self.goaway_sent = True
        self.goaway_last = self.max_seen
        self.extra_out += GoAwayFrame(stream_id=0, last_stream_id=self.max_seen,
                                      error_code=0).serialize()
        self.rec["goaway"] = time.time()
        if grace is not None:
            self.close_at = time.monotonic() + grace
        self.wake()

    # ---- the I/O thread

    def io_loop(self):
        srv = self.server
        with srv.h2_lock:
            srv.h2_conns.add(self)
        try:
            self._loop()
        finally:
            with self.lock:
                self.closed = True
                for h in list(self.streams.values()):
                    h.h2_gone = True
                    h.h2_body.gone = True
                self.cond.notify_all()
                # streams' threads may still end after this: wake() then
                # writes nowhere
                self.pipe_closed = True
                os.close(self.wake_r)
                os.close(self.wake_w)
            with srv.h2_lock:
                srv.h2_conns.discard(self)

    def _flush(self):
        with self.lock:
            out = self.h2.data_to_send()
            if self.extra_out:
                out += bytes(self.extra_out)
                self.extra_out.clear()
        if out:
            self.sock.sendall(out)

    def _loop(self):
        sock = self.sock
        while True:
            self._flush()
            with self.lock:
                idle = not self.streams
            if self.goaway_sent and (idle or (self.close_at is not None and
                                              time.monotonic() >= self.close_at)):
                return
            if srv_stopping(self.server) and not self.goaway_sent:
                with self.lock:
                    self.goaway(grace=2.0)
                continue
            if sock.pending() == 0:
                r, _, _ = select.select([sock, self.wake_r], [], [], 0.5)
                if self.wake_r in r:
                    try:
                        os.read(self.wake_r, 4096)
                    except BlockingIOError:
                        pass
                if sock not in r:
                    continue
            try:
                data = sock.recv(65536)
            except ssl.SSLWantReadError:
                continue
            if not data:
                return
            with self.lock:
                try:
                    events = self.h2.receive_data(data)
                except h2.exceptions.ProtocolError as e:
                    # h2 ends the connection where Go may reset only the
                    # stream (a client over the stream limit): a client
                    # that ignores SETTINGS
                    sys.stderr.write(f"apiserver: http2: {e!r}\n")
                    self.rec["protocolError"] = repr(e)
                    try:
                        self.h2.close_connection(h2.errors.ErrorCodes.PROTOCOL_ERROR)
                    except h2.exceptions.ProtocolError:
                        pass
                    events = None
                    self.closed = True
            if events is None:
                self._flush()
                return
            for ev in events:
                self._event(ev)

    def _event(self, ev):
        if isinstance(ev, h2.events.RequestReceived):
            self._request(ev)
        elif isinstance(ev, h2.events.DataReceived):
            with self.lock:
                h = self.streams.get(ev.stream_id)
                if h is None:
                    self.ack(ev.stream_id, ev.flow_controlled_length)
                else:
                    h.h2_body.feed(ev.data, ev.flow_controlled_length)
                    self.cond.notify_all()
        elif isinstance(ev, h2.events.StreamEnded):
            with self.lock:
                h = self.streams.get(ev.stream_id)
                if h is not None:
                    h.h2_body.eof = True
                    self.cond.notify_all()
        elif isinstance(ev, h2.events.StreamReset):
            with self.lock:
                h = self.streams.get(ev.stream_id)
                if h is not None:
                    h.h2_gone = True
                    h.h2_body.gone = True
                self.cond.notify_all()
        elif isinstance(ev, h2.events.SettingsAcknowledged):
            self.settings_acked = True
        elif isinstance(ev, (h2.events.WindowUpdated, h2.events.RemoteSettingsChanged)):
            with self.lock:
                self.cond.notify_all()
        elif isinstance(ev, h2.events.ConnectionTerminated):
            with self.lock:
                self.rec["clientGoaway"] = ev.error_code
                for h in self.streams.values():
                    if h.h2_sid > (ev.last_stream_id or 0) and ev.error_code:
                        h.h2_gone = True
                        h.h2_body.gone = True
                self.cond.notify_all()

    def _request(self, ev):
        sid = ev.stream_id
        hdrs = [(k.decode("latin-1") if isinstance(k, bytes) else k,
                 v.decode("latin-1") if isinstance(v, bytes) else v) for k, v in ev.headers]
        pseudo = {k: v for k, v in hdrs if k.startswith(":")}
        bad = any(k.encode("latin-1") in CONNECTION_HEADERS for k, _ in hdrs) or any(
            k == "te" and v.strip().lower() not in ("trailers", "") for k, v in hdrs)
        with self.lock:
            self.max_seen = max(self.max_seen, sid)
            if self.goaway_sent and sid > self.goaway_last:
                self.h2.reset_stream(sid, h2.errors.ErrorCodes.REFUSED_STREAM)
                return
            if bad or not pseudo.get(":method") or (pseudo.get(":method") != "CONNECT" and
                                                    not pseudo.get(":path")):
                # Go: checkValidHTTP2RequestHeaders -> stream error PROTOCOL_ERROR
                self.h2.reset_stream(sid, h2.errors.ErrorCodes.PROTOCOL_ERROR)
                self.rec["resetRequests"] = self.rec.get("resetRequests", 0) + 1
                return
            if len(self.streams) + 1 > self.max_streams:
                # Go: over the limit before our SETTINGS were acknowledged is
                # a race (REFUSED_STREAM, the client retries), after it a
                # stream error PROTOCOL_ERROR
                self.h2.reset_stream(sid, h2.errors.ErrorCodes.PROTOCOL_ERROR if
                                     self.settings_acked else
                                     h2.errors.ErrorCodes.REFUSED_STREAM)
                key = "overLimit" if self.settings_acked else "refusedBeforeSettingsAck"
                self.rec[key] = self.rec.get(key, 0) + 1
                return
            h = make_handler(self, sid, pseudo, [(k, v) for k, v in hdrs
                                                 if not k.startswith(":")])
            self.streams[sid] = h
            self.rec["requests"] += 1
            self.rec["active"] = len(self.streams)
            self.rec["maxActive"] = max(self.rec["maxActive"], len(self.streams))
        threading.Thread(target=h.h2_run, daemon=True).start()


def srv_stopping(srv):
    ev = getattr(srv, "stopping", None)
    return ev is not None and ev.is_set()


# server.py's H2Handler (set there: server.py may run as __main__)
HANDLER_CLASS = None


def make_handler(conn, sid, pseudo, headers):
    cls = HANDLER_CLASS
    h = cls.__new__(cls)
    h.h2_init(conn, sid, pseudo, headers)
    return h


class H2Mixin:
    """Turns BaseHTTPRequestHandler's output into HTTP/2 frames."""

    def h2_init(self, conn, sid, pseudo, headers):
        self.h2_conn, self.h2_sid = conn, sid
        self.server = conn.server
        self.client_address = conn.handler.client_address
        self.request = conn.peer
        self.conn_rec = conn.rec
        self.command = pseudo.get(":method", "")
        self.path = pseudo.get(":path", "")
        self.request_version = "HTTP/2.0"
        self.requestline = f"{self.command} {self.path} HTTP/2.0"
        self.close_connection = False
        msg = http.client.HTTPMessage()
        if pseudo.get(":authority"):
            msg["Host"] = pseudo[":authority"]
        for k, v in headers:
            if k == "host" and "Host" in msg:
                continue
            msg[k] = v
        self.headers = msg
        self.h2_body = Body(conn, sid)
        self.h2_out = []              # headers being built
        self.h2_status = None
        self.h2_headers_sent = False
        self.h2_ended = False
        self.h2_gone = False
        self.wfile = Writer(self)
        self.rfile = None

    def h2_run(self):
        conn = self.h2_conn
        try:
            self.handle_any()
        except StreamGone:
            pass
        except Exception:
            import traceback
            traceback.print_exc()
        finally:
            with conn.lock:
                try:
                    if not self.h2_gone and not conn.closed:
                        if not self.h2_headers_sent:
                            conn.h2.send_headers(self.h2_sid, [(":status", "500")],
                                                 end_stream=True)
                        elif not self.h2_ended:
                            conn.h2.end_stream(self.h2_sid)
                        if not self.h2_body.eof:
                            # the body was not read to its end (Go: RST_STREAM NO_ERROR)
                            conn.h2.reset_stream(self.h2_sid, h2.errors.ErrorCodes.NO_ERROR)
                except (h2.exceptions.ProtocolError, h2.exceptions.StreamClosedError):
                    pass
                conn.streams.pop(self.h2_sid, None)
                conn.rec["active"] = len(conn.streams)
                conn.wake()

    # ---- BaseHTTPRequestHandler's output

    def send_response(self, code, message=None):
        self.log_request(code)
        self.send_response_only(code, message)
        self.send_header("Date", self.date_time_string())

    def send_response_only(self, code, message=None):
        self.h2_status = code
        self.h2_out = []

    def send_header(self, keyword, value):
        k = keyword.lower()
        if k in RESPONSE_HOP_HEADERS:
            # not allowed in HTTP/2 (RFC 9113 8.2.2); the stand-in's own
            # "Connection: close" only ends its HTTP/1.1 connections
            return
        self.h2_out.append((k, str(value)))

    def end_headers(self):
        conn = self.h2_conn
        with conn.lock:
            self._check_gone()
            try:
                conn.h2.send_headers(self.h2_sid, [(":status", str(self.h2_status))] +
                                     self.h2_out, end_stream=False)
            except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError):
                raise StreamGone("the stream is closed")
            self.h2_headers_sent = True
            conn.wake()

    def flush_headers(self):
        pass

    def _check_gone(self):
        if self.h2_gone or self.h2_conn.closed:
            raise StreamGone("the client reset the stream")

    def h2_write(self, data):
        conn = self.h2_conn
        if self.command == "HEAD":
            return   # no body, whatever the handler writes (Go's server too)
        view = memoryview(data)
        while view:
            with conn.lock:
                while True:
                    self._check_gone()
                    try:
                        room = min(conn.h2.local_flow_control_window(self.h2_sid),
                                   conn.h2.max_outbound_frame_size)
                    except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError):
                        raise StreamGone("the stream is closed")
                    if room > 0:
                        break
                    conn.cond.wait(1.0)
                n = min(room, len(view))
                try:
                    conn.h2.send_data(self.h2_sid, bytes(view[:n]))
                except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError):
                    raise StreamGone("the stream is closed")
                conn.wake()
            view = view[n:]

    # ---- what the HTTP/1.1 handler does with its socket

    def read_raw_body(self):
        raw = self.h2_body.read_all(self.MAX_BODY)
        if raw is None:
            raise self.BodyError(*self.TOO_LARGE)
        cl = (self.headers.get("Content-Length") or "").strip()
        if cl and (not cl.isdigit() or int(cl) != len(raw)):
            # Go: a body of another length than its content-length is a
            # stream error PROTOCOL_ERROR
            conn = self.h2_conn
            with conn.lock:
                try:
                    conn.h2.reset_stream(self.h2_sid, h2.errors.ErrorCodes.PROTOCOL_ERROR)
                except (h2.exceptions.ProtocolError, h2.exceptions.StreamClosedError):
                    pass
                self.h2_gone = True
                conn.wake()
            raise StreamGone("request body length differs from its content-length")
        return raw

    def send_body_error(self, e, unread=0):
        self.send_json(e.code, self.ApiError(e.code, e.reason, e.message).status())

    def client_gone(self):
        return self.h2_gone or self.h2_conn.closed

    def write_chunk(self, obj):
        import json
        self.h2_write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")

    def end_chunks(self):
        pass  # the stream ends when the handler returns

    def relay_kubelet(self, up, upgrade):
        """pods/log over HTTP/2: the kubelet's status and headers (less the
        hop-by-hop ones), then its body as DATA, unframed (Content-Length,
        chunked or until it closes), as it comes; a client that resets the
        stream closes the kubelet side."""
        buf = bytearray()

        def more():
            while True:
                if self.client_gone():
                    raise StreamGone("the client reset the stream")
                r, _, _ = select.select([up], [], [], 0.5)
                if r or (hasattr(up, "pending") and up.pending()):
                    break
            got = up.recv(65536)
            buf.extend(got)
            return bool(got)

        while b"\r\n\r\n" not in buf:
            if not more():
                raise self.ApiError(500, "InternalError",
                                      "the kubelet closed the connection")
            if len(buf) > 1 << 20:
                raise self.ApiError(500, "InternalError",
                                      "the kubelet's answer has no end of headers")
        head, _, rest = bytes(buf).partition(b"\r\n\r\n")
        buf[:] = rest
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        self.send_response_only(int(parts[1]))
        chunked, length = False, None
        for line in lines[1:]:
            k, _, v = line.partition(":")
            k, v = k.strip(), v.strip()
            if k.lower() == "transfer-encoding" and "chunked" in v.lower():
                chunked = True
            if k.lower() == "content-length" and v.isdigit():
                length = int(v)
            self.send_header(k, v)
        self.end_headers()
        if chunked:
            while True:
                while b"\r\n" not in buf:
                    if not more():
                        return
                line, _, rest = bytes(buf).partition(b"\r\n")
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                buf[:] = rest
                if size == 0:
                    return
                while len(buf) < size + 2:
                    if not more():
                        if buf:
                            self.h2_write(bytes(buf[:size]))
                        return
                self.h2_write(bytes(buf[:size]))
                del buf[:size + 2]
        left = length
        while True:
            if buf:
                piece = bytes(buf) if left is None else bytes(buf[:left])
                buf.clear()
                self.h2_write(piece)
                if left is not None:
                    left -= len(piece)
            if left == 0 or not more():
                return

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("apiserver: h2: " + (fmt % args) + "\n")


def shutdown_all(srv, timeout):
    """Graceful shutdown: GOAWAY on every HTTP/2 connection, then wait
    (at most timeout) for them to close."""
    with srv.h2_lock:
        conns = list(srv.h2_conns)
    for c in conns:
        with c.lock:
            c.goaway(grace=timeout)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with srv.h2_lock:
            if not srv.h2_conns:
                return
        time.sleep(0.05)


def goaway_all(srv, grace, user=None):
    """POST /debug/goaway: GOAWAY on every HTTP/2 connection (of one user,
    if given); the connections close when their streams end or after
    grace seconds. The number of connections told."""
    with srv.h2_lock:
        conns = list(srv.h2_conns)
    n = 0
    for c in conns:
        if user is not None and user not in c.rec.get("users", []):
            continue
        with c.lock:
            if not c.goaway_sent:
                c.goaway(grace=grace)
                n += 1
    return n


def serve(handler):
    """Serve an HTTP/2 connection (ALPN h2) until it ends."""
    conn = Conn(handler)
    try:
        conn.io_loop()
    except (OSError, ssl.SSLError, socket.timeout):
        pass
