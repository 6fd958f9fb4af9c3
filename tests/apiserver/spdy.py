"""SPDY/3.1 framing for the stand-in apiserver (standard library only).

The apiserver speaks SPDY/3.1 to a kubelet for exec and attach (its
StreamTranslatorHandler turns a kubectl WebSocket v5 session into the
kubelet's SPDY remotecommand protocol), and tests use it for a fake kubelet.
This module is I/O free: encoders return frame bytes, FrameParser turns bytes
read from a connection into frames, HeaderCodec (de)compresses header blocks.

Frame layout (draft-mbelshe-httpbis-spdy-00, SPDY/3; 3.1 only adds
session-level WINDOW_UPDATE):

    control: |1| version(15)=3 | type(16) | flags(8) | length(24) | payload
    data:    |0| stream id(31)           | flags(8) | length(24) | payload

Header blocks are zlib streams, one per direction for the whole session, with
the SPDY/3 dictionary as the preset dictionary; each block ends with a sync
flush. The uncompressed block is a 32-bit pair count, then per pair a 32-bit
length and the (lower case) name, a 32-bit length and the value (several
values of one name are NUL-separated).
"""

import struct
import zlib

VERSION = 3

# control frame types
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = \
    1, 2, 3, 4, 6, 7, 8, 9
TYPE_NAMES = {SYN_STREAM: "SYN_STREAM", SYN_REPLY: "SYN_REPLY", RST_STREAM: "RST_STREAM",
              SETTINGS: "SETTINGS", PING: "PING", GOAWAY: "GOAWAY", HEADERS: "HEADERS",
              WINDOW_UPDATE: "WINDOW_UPDATE"}

FLAG_FIN = 0x01
FLAG_UNIDIRECTIONAL = 0x02

# RST_STREAM status codes
PROTOCOL_ERROR, INVALID_STREAM, REFUSED_STREAM, UNSUPPORTED_VERSION, CANCEL, \
    INTERNAL_ERROR, FLOW_CONTROL_ERROR, STREAM_IN_USE, STREAM_ALREADY_CLOSED = range(1, 10)

# GOAWAY status codes
GOAWAY_OK, GOAWAY_PROTOCOL_ERROR, GOAWAY_INTERNAL_ERROR = 0, 1, 2

MAX_FRAME = (1 << 24) - 1          # the length field is 24 bits
MAX_HEADER_BLOCK = 1 << 20         # decompressed bytes a header block may expand to
MAX_HEADER_PAIRS = 1024

# The SPDY/3 header compression dictionary (SPDY/3 section 2.6.10.1): the
# length-prefixed words below, then a run of plain text. 1423 bytes.
_DICT_WORDS = (
    "options", "head", "post", "put", "delete", "trace", "accept", "accept-charset",
    "accept-encoding", "accept-language", "accept-ranges", "age", "allow", "authorization",
    "cache-control", "connection", "content-base", "content-encoding", "content-language",
    "content-length", "content-location", "content-md5", "content-range", "content-type",
    "date", "etag", "expect", "expires", "from", "host", "if-match", "if-modified-since",
    "if-none-match", "if-range", "if-unmodified-since", "last-modified", "location",
    "max-forwards", "pragma", "proxy-authenticate", "proxy-authorization", "range", "referer",
    "retry-after", "server", "te", "trailer", "transfer-encoding", "upgrade", "user-agent",
    "vary", "via", "warning", "www-authenticate", "method", "get", "status", "200 OK",
    "version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin")
_DICT_TEXT = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417"
    "502504505"
    "203 Non-Authoritative Information"
    "204 No Content"
    "301 Moved Permanently"
    "400 Bad Request"
    "401 Unauthorized"
    "403 Forbidden"
    "404 Not Found"
    "500 Internal Server Error"
    "501 Not Implemented"
    "503 Service Unavailable"
    "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 "
    "Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
    "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,"
    "text/plain,text/javascript,public"
    "privatemax-age=gzip,deflate,sdch"
    "charset=utf-8charset=iso-8859-1,utf-,*,enq=0.")
DICTIONARY = b"".join(struct.pack(">I", len(w)) + w.encode() for w in _DICT_WORDS) + \
    _DICT_TEXT.encode()


class SpdyError(Exception):
    """A malformed frame or header block; the session must end (GOAWAY)."""


class HeaderCodec:
    """The compression contexts of one session: one deflate stream for what
    we send, one inflate stream for what we receive (never reset)."""

    def __init__(self):
        self._c = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, 15, 8,
                                   zlib.Z_DEFAULT_STRATEGY, DICTIONARY)
        self._d = zlib.decompressobj(15, DICTIONARY)

    @staticmethod
    def encode_block(headers):
        """headers: [(name, value)] (names sent lower case, as SPDY/3
        requires); repeated names are joined with NUL like Go's framer."""
        merged = {}
        for k, v in headers:
            merged.setdefault(k.lower(), []).append(v)
        out = [struct.pack(">I", len(merged))]
        for k, vs in merged.items():
            kb, vb = k.encode(), "\0".join(vs).encode()
            out += [struct.pack(">I", len(kb)), kb, struct.pack(">I", len(vb)), vb]
        return b"".join(out)

    def compress(self, headers):
        return self._c.compress(self.encode_block(headers)) + self._c.flush(zlib.Z_SYNC_FLUSH)

    def decompress(self, block):
        """-> [(name, value)]: NUL-separated values become several pairs."""
        try:
            raw = self._d.decompress(block, MAX_HEADER_BLOCK + 1)
        except zlib.error as e:
            raise SpdyError(f"header block does not inflate: {e}")
        if len(raw) > MAX_HEADER_BLOCK or self._d.unconsumed_tail:
            raise SpdyError(f"header block inflates to more than {MAX_HEADER_BLOCK} bytes")
        return self.decode_block(raw)

    @staticmethod
    def decode_block(raw):
        def take(n):
            nonlocal pos
            if pos + n > len(raw):
                raise SpdyError("header block truncated")
            pos += n
            return raw[pos - n:pos]
        pos = 0
        (count,) = struct.unpack(">I", take(4))
        if count > MAX_HEADER_PAIRS:
            raise SpdyError(f"header block has {count} pairs (more than {MAX_HEADER_PAIRS})")
        out = []
        for _ in range(count):
            (n,) = struct.unpack(">I", take(4))
            name = take(n).decode("latin-1")
            if not name or name != name.lower():
                raise SpdyError(f"invalid header name {name!r} (empty or not lower case)")
            (n,) = struct.unpack(">I", take(4))
            for v in take(n).split(b"\0"):
                out.append((name, v.decode("latin-1")))
        if pos != len(raw):
            raise SpdyError("header block has trailing bytes")
        return out


def _control(typ, flags, payload):
    if len(payload) > MAX_FRAME:
        raise SpdyError("frame too large")
    return struct.pack(">HHI", 0x8000 | VERSION, typ, flags << 24 | len(payload)) + payload


def data_frame(sid, payload=b"", fin=False):
    if len(payload) > MAX_FRAME:
        raise SpdyError("frame too large")
    return struct.pack(">II", sid & 0x7fffffff,
                       (FLAG_FIN if fin else 0) << 24 | len(payload)) + payload


def data_frames(sid, payload, fin=False, chunk=65536):
    """DATA split into frames of at most chunk bytes (spdystream writes at
    most 64 KiB per frame too); fin goes on the last."""
    if not payload:
        return data_frame(sid, b"", fin)
    parts = [payload[i:i + chunk] for i in range(0, len(payload), chunk)]
    return b"".join(data_frame(sid, p, fin and i == len(parts) - 1)
                    for i, p in enumerate(parts))


def syn_stream(codec, sid, headers, fin=False, unidirectional=False, assoc=0, priority=0):
    flags = (FLAG_FIN if fin else 0) | (FLAG_UNIDIRECTIONAL if unidirectional else 0)
    return _control(SYN_STREAM, flags, struct.pack(">IIBB", sid & 0x7fffffff, assoc & 0x7fffffff,
                                                   (priority & 7) << 5, 0) +
                    codec.compress(headers))


def syn_reply(codec, sid, headers, fin=False):
    return _control(SYN_REPLY, FLAG_FIN if fin else 0,
                    struct.pack(">I", sid & 0x7fffffff) + codec.compress(headers))


def headers_frame(codec, sid, headers, fin=False):
    return _control(HEADERS, FLAG_FIN if fin else 0,
                    struct.pack(">I", sid & 0x7fffffff) + codec.compress(headers))


def rst_stream(sid, status):
    return _control(RST_STREAM, 0, struct.pack(">II", sid & 0x7fffffff, status))


def settings(entries=(), clear=False):
    """entries: [(id, value, flags)]"""
    body = struct.pack(">I", len(entries)) + b"".join(
        struct.pack(">II", (fl & 0xff) << 24 | (i & 0xffffff), v) for i, v, fl in entries)
    return _control(SETTINGS, 1 if clear else 0, body)


def ping(pid):
    return _control(PING, 0, struct.pack(">I", pid))


def goaway(last_good, status=GOAWAY_OK):
    return _control(GOAWAY, 0, struct.pack(">II", last_good & 0x7fffffff, status))


def window_update(sid, delta):
    return _control(WINDOW_UPDATE, 0, struct.pack(">II", sid & 0x7fffffff, delta & 0x7fffffff))


class Frame:
    """A parsed frame. type is None for DATA. Fields by type: sid, flags,
    fin, data (DATA); headers (SYN_STREAM/SYN_REPLY/HEADERS, decompressed);
    assoc, priority (SYN_STREAM); status (RST_STREAM, GOAWAY); last_good
    (GOAWAY); ping_id (PING); delta (WINDOW_UPDATE); settings (SETTINGS)."""

    def __init__(self, type, flags, **kw):
        self.type, self.flags = type, flags
        self.fin = bool(flags & FLAG_FIN)
        self.sid = 0
        self.__dict__.update(kw)

    def __repr__(self):
        name = "DATA" if self.type is None else TYPE_NAMES.get(self.type, str(self.type))
        return f"<{name} {dict((k, v) for k, v in self.__dict__.items() if k != 'type')}>"


class FrameParser:
    """feed(bytes) -> [Frame]: the frames the bytes complete; a partial frame
    is kept for the next call. Raises SpdyError on a protocol error (the
    caller sends GOAWAY and closes). max_frame bounds what is buffered."""

    def __init__(self, codec, max_frame=MAX_FRAME):
        self.codec, self.max_frame, self.buf = codec, max_frame, bytearray()

    def feed(self, data):
        self.buf += data
        out = []
        while len(self.buf) >= 8:
            w0, w1 = struct.unpack_from(">II", self.buf)
            length = w1 & 0xffffff
            if length > self.max_frame:
                raise SpdyError(f"frame of {length} bytes (limit {self.max_frame})")
            if len(self.buf) < 8 + length:
                break
            payload = bytes(self.buf[8:8 + length])
            del self.buf[:8 + length]
            flags = w1 >> 24
            if not w0 & 0x80000000:
                out.append(Frame(None, flags, sid=w0 & 0x7fffffff, data=payload))
                continue
            version, typ = (w0 >> 16) & 0x7fff, w0 & 0xffff
            if version != VERSION:
                raise SpdyError(f"SPDY version {version} (only {VERSION} is supported)")
            out.append(self._control(typ, flags, payload))
        return out

    def _control(self, typ, flags, p):
        def need(n):
            if len(p) < n:
                raise SpdyError(f"{TYPE_NAMES.get(typ, typ)} frame of {len(p)} bytes is too short")
        if typ == SYN_STREAM:
            need(10)
            sid, assoc, pri = struct.unpack_from(">IIB", p)
            return Frame(typ, flags, sid=sid & 0x7fffffff, assoc=assoc & 0x7fffffff,
                         priority=pri >> 5, headers=self.codec.decompress(p[10:]))
        if typ in (SYN_REPLY, HEADERS):
            need(4)
            (sid,) = struct.unpack_from(">I", p)
            return Frame(typ, flags, sid=sid & 0x7fffffff, headers=self.codec.decompress(p[4:]))
        if typ == RST_STREAM:
            need(8)
            sid, status = struct.unpack_from(">II", p)
            return Frame(typ, flags, sid=sid & 0x7fffffff, status=status)
        if typ == SETTINGS:
            need(4)
            (n,) = struct.unpack_from(">I", p)
            need(4 + 8 * n)
            entries = []
            for i in range(n):
                a, v = struct.unpack_from(">II", p, 4 + 8 * i)
                entries.append((a & 0xffffff, v, a >> 24))
            return Frame(typ, flags, settings=entries)
        if typ == PING:
            need(4)
            return Frame(typ, flags, ping_id=struct.unpack_from(">I", p)[0])
        if typ == GOAWAY:
            need(8)
            last, status = struct.unpack_from(">II", p)
            return Frame(typ, flags, last_good=last & 0x7fffffff, status=status)
        if typ == WINDOW_UPDATE:
            need(8)
            sid, delta = struct.unpack_from(">II", p)
            return Frame(typ, flags, sid=sid & 0x7fffffff, delta=delta & 0x7fffffff)
        return Frame(typ, flags, data=p)  # unknown control frames are ignored by receivers


def header(headers, name, default=None):
    """The first value of a header (names compared case-insensitively)."""
    name = name.lower()
    return next((v for k, v in headers if k.lower() == name), default)
