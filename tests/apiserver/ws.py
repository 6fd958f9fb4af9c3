"""WebSocket framing (RFC 6455) for the stand-in apiserver, I/O free.

The server side of kubectl's WebSocket sessions: exec/attach with the
v5.channel.k8s.io subprotocol (translated to SPDY for the kubelet) and
port-forward with SPDY/3.1+portforward.k8s.io (SPDY tunnelled in binary
messages). Client frames must be masked, server frames are not; messages may
be fragmented and control frames (ping, pong, close) may come between the
fragments. Tests use the client side (mask=True)."""

import base64
import hashlib
import os
import struct

CONT, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

NORMAL, GOING_AWAY, PROTOCOL_ERROR, UNSUPPORTED, NO_STATUS, INVALID_DATA, TOO_BIG = \
    1000, 1001, 1002, 1003, 1005, 1007, 1009

MAX_MESSAGE = 32 << 20


class WsError(Exception):
    """A protocol error: answer with a close frame of this code and end."""

    def __init__(self, code, reason):
        super().__init__(reason)
        self.code, self.reason = code, reason


def accept_key(key):
    return base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()


def subprotocols(value):
    """The Sec-WebSocket-Protocol list, in the client's order."""
    return [p.strip() for p in (value or "").split(",") if p.strip()]


def frame(opcode, payload=b"", fin=True, mask=False):
    """One frame; mask=True for a client (random key)."""
    b0 = (0x80 if fin else 0) | opcode
    n = len(payload)
    m = 0x80 if mask else 0
    if n < 126:
        head = struct.pack(">BB", b0, m | n)
    elif n < 1 << 16:
        head = struct.pack(">BBH", b0, m | 126, n)
    else:
        head = struct.pack(">BBQ", b0, m | 127, n)
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + _mask(payload, key)


def close_frame(code=NORMAL, reason="", mask=False):
    body = b"" if code is None else struct.pack(">H", code) + reason.encode()[:123]
    return frame(CLOSE, body, mask=mask)


def parse_close(payload):
    """-> (code or None, reason)"""
    if len(payload) < 2:
        return None, ""
    return struct.unpack(">H", payload[:2])[0], payload[2:].decode("utf-8", "replace")


def _mask(data, key):
    if not data:
        return b""
    k = (key * (len(data) // 4 + 1))[:len(data)]
    return (int.from_bytes(data, "big") ^ int.from_bytes(k, "big")).to_bytes(len(data), "big")


class Parser:
    """feed(bytes) -> [(opcode, payload)]: whole messages (fragments joined)
    and control frames, in order. server=True requires masked frames (what a
    client sends), server=False unmasked ones."""

    def __init__(self, server=True, max_message=MAX_MESSAGE):
        self.server, self.max_message = server, max_message
        self.buf = bytearray()
        self.frag_op, self.frag = None, bytearray()

    def feed(self, data):
        self.buf += data
        out = []
        while True:
            f = self._one()
            if f is None:
                return out
            fin, op, payload = f
            if op >= 0x8:
                if not fin or len(payload) > 125:
                    raise WsError(PROTOCOL_ERROR, "fragmented or long control frame")
                if op not in (CLOSE, PING, PONG):
                    raise WsError(PROTOCOL_ERROR, f"unknown opcode {op}")
                if op == CLOSE and len(payload) == 1:
                    raise WsError(PROTOCOL_ERROR, "close frame of 1 byte")
                out.append((op, payload))
                continue
            if op == CONT:
                if self.frag_op is None:
                    raise WsError(PROTOCOL_ERROR, "continuation without a message")
            elif op in (TEXT, BINARY):
                if self.frag_op is not None:
                    raise WsError(PROTOCOL_ERROR, "new message inside a fragmented one")
                self.frag_op = op
            else:
                raise WsError(PROTOCOL_ERROR, f"unknown opcode {op}")
            if len(self.frag) + len(payload) > self.max_message:
                raise WsError(TOO_BIG, f"message over {self.max_message} bytes")
            self.frag += payload
            if fin:
                out.append((self.frag_op, bytes(self.frag)))
                self.frag_op, self.frag = None, bytearray()

    def _one(self):
        b = self.buf
        if len(b) < 2:
            return None
        fin, rsv, op = b[0] & 0x80, b[0] & 0x70, b[0] & 0x0F
        masked, n = b[1] & 0x80, b[1] & 0x7F
        if rsv:
            raise WsError(PROTOCOL_ERROR, "reserved bits set (no extension was negotiated)")
        if bool(masked) != self.server:
            raise WsError(PROTOCOL_ERROR, "client frames must be masked, server frames not")
        pos = 2
        if n == 126:
            if len(b) < 4:
                return None
            n = struct.unpack_from(">H", b, 2)[0]
            pos = 4
        elif n == 127:
            if len(b) < 10:
                return None
            n = struct.unpack_from(">Q", b, 2)[0]
            pos = 10
        if n > self.max_message:
            raise WsError(TOO_BIG, f"frame over {self.max_message} bytes")
        key = b""
        if masked:
            if len(b) < pos + 4:
                return None
            key = bytes(b[pos:pos + 4])
            pos += 4
        if len(b) < pos + n:
            return None
        payload = bytes(b[pos:pos + n])
        del b[:pos + n]
        return bool(fin), op, _mask(payload, key) if masked else payload
