"""etcd v3 client over etcd's JSON gRPC-gateway (standard library only).

Every object lives in etcd as JSON without metadata.resourceVersion; the
resourceVersion seen by clients is the key's mod_revision (for lists, the
header revision). The apiserver keeps no state of its own.
"""

import base64
import http.client
import json
import queue
import socket
import threading


def _b64(s):
    return base64.b64encode(s.encode() if isinstance(s, str) else s).decode()


def _unb64(s):
    return base64.b64decode(s or "")


def prefix_end(prefix):
    """The range_end that selects every key starting with prefix."""
    b = bytearray(prefix.encode())
    while b:
        if b[-1] < 0xFF:
            b[-1] += 1
            return bytes(b)
        b.pop()
    return b"\0"


class EtcdError(Exception):
    pass


class Compacted(EtcdError):
    """The requested revision was compacted away."""

    def __init__(self, compact_revision=0):
        super().__init__("etcdserver: mvcc: required revision has been compacted")
        self.compact_revision = compact_revision


class FutureRevision(EtcdError):
    pass


class KV:
    __slots__ = ("key", "value", "mod_revision", "create_revision")

    def __init__(self, raw):
        self.key = _unb64(raw["key"]).decode()
        self.value = json.loads(_unb64(raw.get("value"))) if raw.get("value") else None
        self.mod_revision = int(raw.get("mod_revision", 0))
        self.create_revision = int(raw.get("create_revision", 0))

    def obj(self):
        """The stored object with its resourceVersion filled in."""
        o = self.value
        o.setdefault("metadata", {})["resourceVersion"] = str(self.mod_revision)
        return o


def _encode(obj):
    o = dict(obj)
    meta = dict(o.get("metadata") or {})
    meta.pop("resourceVersion", None)
    o["metadata"] = meta
    return _b64(json.dumps(o, separators=(",", ":")))


class _Http:
    """A small HTTP/1.1 client for etcd's JSON gateway: one keep-alive
    connection, POST only, Content-Length or chunked answers. The etcd
    calls were 45 % of the stand-in's CPU in a 110-pod burst (cProfile of
    bench.sh figure 3), and http.client's request and header handling (it
    parses every answer's headers with the email package) about half of
    that; this reads the three headers it needs."""

    def __init__(self, host, port, timeout=30):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.host = ("%s:%d" % (host, port)).encode()

    def close(self):
        self.sock.close()

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("etcd closed the connection")
        self.buf += chunk

    def _line(self, sep=b"\r\n"):
        while True:
            i = self.buf.find(sep)
            if i >= 0:
                out = bytes(self.buf[:i])
                del self.buf[:i + len(sep)]
                return out
            self._fill()

    def _read(self, n):
        while len(self.buf) < n:
            self._fill()
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def post(self, path, data):
        """(status, body, whether the server closes the connection)."""
        self.sock.sendall(b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                          b"Content-Length: %d\r\n\r\n%s" % (path.encode(), self.host,
                                                            len(data), data))
        lines = self._line(b"\r\n\r\n").split(b"\r\n")
        status = int(lines[0].split(None, 2)[1])
        length, chunked, close = None, False, False
        for line in lines[1:]:
            k, _, v = line.partition(b":")
            k, v = k.strip().lower(), v.strip().lower()
            if k == b"content-length":
                length = int(v)
            elif k == b"transfer-encoding":
                chunked = v == b"chunked"
            elif k == b"connection":
                close = v == b"close"
        if chunked:
            body = bytearray()
            while True:
                size = int(self._line().split(b";", 1)[0], 16)
                if size == 0:
                    while self._line():  # trailers, then the empty line
                        pass
                    break
                body += self._read(size)
                self._read(2)
            return status, bytes(body), close
        if length is not None:
            return status, self._read(length), close
        while True:  # to the end of the connection
            try:
                self._fill()
            except ConnectionError:
                return status, bytes(self.buf), True


class Etcd:
    def __init__(self, host, port):
        self.host, self.port = host, port
        self._local = threading.local()

    def _conn(self):
        c = getattr(self._local, "conn", None)
        if c is None:
            c = _Http(self.host, self.port, timeout=30)
            self._local.conn = c
        return c

    def _call(self, path, body):
        data = json.dumps(body).encode()
        for attempt in (0, 1):
            try:
                c = self._conn()
                _, raw, close = c.post(path, data)
                if close:
                    c.close()
                    self._local.conn = None
                out = json.loads(raw or b"{}")
                break
            except (OSError, ValueError, IndexError):
                c = getattr(self._local, "conn", None)
                if c is not None:
                    c.close()
                self._local.conn = None
                if attempt:
                    raise
        if "error" in out or ("code" in out and "header" not in out):
            msg = out.get("message") or out.get("error") or str(out)
            if "compacted" in msg:
                raise Compacted()
            if "future revision" in msg:
                raise FutureRevision(msg)
            raise EtcdError(msg)
        return out

    # ---- key-value ----

    def get(self, key):
        """(KV or None, header revision)."""
        out = self._call("/v3/kv/range", {"key": _b64(key)})
        kvs = out.get("kvs") or []
        return (KV(kvs[0]) if kvs else None), int(out["header"]["revision"])

    def list(self, prefix, start=None, revision=0, limit=0):
        """(list of KV, header revision, more) for keys under prefix, from start."""
        body = {"key": _b64(start or prefix), "range_end": _b64(prefix_end(prefix))}
        if revision:
            body["revision"] = str(revision)
        if limit:
            body["limit"] = str(limit)
        out = self._call("/v3/kv/range", body)
        kvs = [KV(k) for k in out.get("kvs") or []]
        return kvs, int(out["header"]["revision"]), bool(out.get("more"))

    def revision(self):
        out = self._call("/v3/kv/range", {"key": _b64("/registry/"), "limit": "1",
                                          "count_only": True})
        return int(out["header"]["revision"])

    def _txn(self, compare, success, failure_key=None):
        body = {"compare": [compare], "success": [success]}
        if failure_key:
            body["failure"] = [{"request_range": {"key": _b64(failure_key)}}]
        out = self._call("/v3/kv/txn", body)
        return out

    def create(self, key, obj):
        """Put key only if absent. Returns the new revision or None if it exists."""
        out = self._txn({"key": _b64(key), "result": "EQUAL", "target": "CREATE",
                         "create_revision": "0"},
                        {"request_put": {"key": _b64(key), "value": _encode(obj)}})
        if not out.get("succeeded"):
            return None
        return int(out["header"]["revision"])

    def update(self, key, obj, mod_revision):
        """Put key only if its mod_revision is unchanged. New revision or None."""
        out = self._txn({"key": _b64(key), "result": "EQUAL", "target": "MOD",
                         "mod_revision": str(mod_revision)},
                        {"request_put": {"key": _b64(key), "value": _encode(obj)}})
        if not out.get("succeeded"):
            return None
        return int(out["header"]["revision"])

    def delete(self, key, mod_revision):
        """Delete key only if its mod_revision is unchanged. New revision or None."""
        out = self._txn({"key": _b64(key), "result": "EQUAL", "target": "MOD",
                         "mod_revision": str(mod_revision)},
                        {"request_delete_range": {"key": _b64(key)}})
        if not out.get("succeeded"):
            return None
        return int(out["header"]["revision"])

    def compact(self, revision):
        self._call("/v3/kv/compaction", {"revision": str(revision), "physical": True})

    # ---- watch ----

    def watch(self, prefix, start_revision):
        return Watch(self.host, self.port, prefix, start_revision)


class Watch:
    """One etcd watch stream. Events arrive on .events as tuples:
    ("PUT"|"DELETE", KV, prev KV or None), ("PROGRESS", revision, None),
    ("ERROR", exception, None). close() ends the reader thread."""

    def __init__(self, host, port, prefix, start_revision):
        self.events = queue.Queue()
        self._conn = http.client.HTTPConnection(host, port, timeout=None)
        body = {"create_request": {"key": _b64(prefix), "range_end": _b64(prefix_end(prefix)),
                                   "start_revision": str(start_revision), "prev_kv": True,
                                   "progress_notify": True}}
        self._conn.request("POST", "/v3/watch", body=json.dumps(body).encode(),
                           headers={"Content-Type": "application/json"})
        self._resp = self._conn.getresponse()
        self._closed = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        try:
            while not self._closed:
                line = self._resp.readline()
                if not line:
                    break
                line = line.strip()
                if not line:
                    continue
                msg = json.loads(line)
                if "error" in msg:
                    self.events.put(("ERROR", EtcdError(str(msg["error"])), None))
                    return
                res = msg.get("result", {})
                if res.get("canceled"):
                    cr = int(res.get("compact_revision", 0))
                    err = Compacted(cr) if cr else EtcdError(res.get("cancel_reason", "canceled"))
                    self.events.put(("ERROR", err, None))
                    return
                if res.get("created"):
                    continue
                evs = res.get("events") or []
                for ev in evs:
                    kind = ev.get("type", "PUT")
                    prev = KV(ev["prev_kv"]) if ev.get("prev_kv") else None
                    self.events.put((kind, KV(ev["kv"]), prev))
                if not evs:
                    self.events.put(("PROGRESS", int(res["header"]["revision"]), None))
        except Exception as e:  # connection closed or broken
            if not self._closed:
                self.events.put(("ERROR", EtcdError(str(e)), None))
        finally:
            self.events.put(("CLOSED", None, None))

    def close(self):
        self._closed = True
        try:
            sock = self._conn.sock
            if sock is not None:
                import socket
                sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._conn.close()
