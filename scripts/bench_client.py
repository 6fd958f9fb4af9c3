#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The API side of scripts/bench.sh (figures 2 and 3): creates pods bound to
a node through an apiserver, sees them Running and gone through a watch (as
a controller would), and reads the agent's own timeline of each pod from its
local endpoint. Standard library only: one HTTPS connection for requests and
one per watch (a burst: a pool of them), client certificate from the admin
kubeconfig's files.

  bench_client.py perpod --data D[,D2...] --node N[,N2...] --endpoint URL[,URL2...] --token-file F[,F2...]
                         --count K    one pod at a time, the nodes in turn
  bench_client.py exits|taints ...  (as perpod) figure 5: a container's exit -> its
                         terminal status stored; a NoExecute taint -> the
                         container stopped -> the pod gone
  bench_client.py execs ... --node-api HOST:PORT[,HOST2:PORT2...]  (as perpod)
                         figure 5: exec round trips node-side, as the
                         apiserver makes them (SPDY/3.1, remotecommand v5,
                         the kubelet-client certificate), into one pod per node
  bench_client.py burst  --node N --endpoint URL --token-file F --count K
                         [--creates slowstart|sequential] [--connections C]
                         K pods created at once: in the ReplicaSet controller's
                         slow-start batches (1, 2, 4, ... concurrent, over C
                         connections opened beforehand; the deletes all at
                         once), or sequentially

Prints one JSON object per line: per pod {"node","created_ms","running_ms",
"post_ms","timeline":{step: wall ms}}, for a burst a line per pod deleted
({"delete":true,"gone_ms","timeline"}: the agent's steps from the DELETE
sent) and a summary line as well.
Times are wall clock (both ends run on this machine).
"""
import argparse
import http.client
import json
import os
import queue
import ssl
import sys
import threading
import time
import urllib.request


def now_ms():
    return time.time() * 1000.0


class Api:
    def __init__(self, data):
        with open(os.path.join(data, "admin.kubeconfig")) as f:
            for line in f:
                line = line.strip()
                if line.startswith("server:"):
                    self.server = line.split(None, 1)[1].strip().strip('"')
        self.ctx = ssl.create_default_context(cafile=os.path.join(data, "ca.crt"))
        self.ctx.check_hostname = False
        self.ctx.load_cert_chain(os.path.join(data, "admin.crt"), os.path.join(data, "admin.key"))
        hp = self.server.split("://", 1)[1]
        self.host, self.port = hp.rsplit(":", 1)
        self.conn = self.connect()

    def connect(self, timeout=120):
        return http.client.HTTPSConnection(self.host, int(self.port), context=self.ctx,
                                           timeout=timeout)

    def request(self, method, path, body=None, ctype="application/json"):
        data = json.dumps(body).encode() if body is not None else None
        hdr = {"Content-Type": ctype, "Accept": "application/json"}
        for attempt in range(3):
            try:
                self.conn.request(method, path, body=data, headers=hdr)
                r = self.conn.getresponse()
                out = r.read()
                return r.status, json.loads(out) if out else None
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = self.connect()
                if attempt == 2:
                    raise
        return 0, None

    def watch(self, node, rv, events):
        """Feeds (wall ms, type, pod) for the pods bound to node into events."""
        # no socket timeout: a watch is quiet while nothing changes (a burst
        # held Running while figure 4 runs); the callers' until() bounds it
        c = self.connect(timeout=None)
        c.request("GET", "/api/v1/namespaces/default/pods?watch=1&resourceVersion=%s"
                  "&fieldSelector=spec.nodeName%%3D%s&timeoutSeconds=3600" % (rv, node))
        r = c.getresponse()
        buf = b""
        while True:
            chunk = r.read1(65536) if hasattr(r, "read1") else r.read(1)
            if not chunk:
                events.put((now_ms(), "END", None))
                return
            t = now_ms()
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if line.strip():
                    ev = json.loads(line)
                    events.put((t, ev["type"], ev["object"]))


HOST_NETWORK = False


def pod_body(name, node, image, grace, command="sleep 3600"):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node, "restartPolicy": "Never", "hostNetwork": HOST_NETWORK,
                     "terminationGracePeriodSeconds": grace,
                     "automountServiceAccountToken": False,
                     "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                     "containers": [{"name": "main", "image": image,
                                     "imagePullPolicy": "IfNotPresent",
                                     "command": ["sh", "-c", command]}]}}


def parse_ts(s):
    # 2026-12-01T23:30:47.123456Z
    import calendar
    base, frac = s.rstrip("Z").split(".")
    t = calendar.timegm(time.strptime(base, "%Y-%m-%dT%H:%M:%S"))
    return t * 1000.0 + int(frac.ljust(6, "0")[:6]) / 1000.0


def timelines(endpoint, token_file):
    with open(token_file) as f:
        tok = f.read().strip()
    req = urllib.request.Request(endpoint + "/timelines", headers={"Authorization": "Bearer " + tok})
    with urllib.request.urlopen(req, timeout=30) as r:
        doc = json.load(r)
    out = {}
    for p in doc.get("pods", []):
        steps = {}
        for st in p.get("timeline", []):
            steps.setdefault(st["step"], parse_ts(st["time"]))
        out[p["uid"]] = steps
    return out


class Node:
    def __init__(self, api, name, endpoint, token_file):
        self.api, self.name, self.endpoint, self.token_file = api, name, endpoint, token_file
        self.events = queue.Queue()
        st, lst = api.request("GET", "/api/v1/namespaces/default/pods?fieldSelector=spec.nodeName%%3D%s"
                              % name)
        rv = lst["metadata"]["resourceVersion"]
        threading.Thread(target=api.watch, args=(name, rv, self.events), daemon=True).start()

    def until(self, pred, timeout_s):
        end = time.time() + timeout_s
        while True:
            left = end - time.time()
            if left <= 0:
                raise TimeoutError("node %s: timed out" % self.name)
            t, typ, obj = self.events.get(timeout=left)
            if typ == "END":
                raise RuntimeError("node %s: the watch ended" % self.name)
            if pred(t, typ, obj):
                return


def nodes_of(args):
    """The nodes of --data/--node/--endpoint/--token-file, each watched."""
    return [Node(Api(d), n, e, t) for d, n, e, t in
            zip(args.data.split(","), args.node.split(","), args.endpoint.split(","),
                args.token_file.split(","))]


def turns(nodes, count):
    """(i, node) for count rounds, the nodes in turn, each round starting
    with the next: runs of one side alternate with the other's."""
    for i in range(count):
        for nd in nodes[i % len(nodes):] + nodes[:i % len(nodes)]:
            yield i, nd


def running(obj):
    return obj["status"].get("phase") == "Running"


def perpod(args):
    nodes = nodes_of(args)
    for i, nd in turns(nodes, args.count):
        api = nd.api
        name = "bench-%d" % i
        t0 = now_ms()
        st, obj = api.request("POST", "/api/v1/namespaces/default/pods",
                              pod_body(name, nd.name, args.image, 1))
        t1 = now_ms()
        if st != 201:
            sys.exit("bench_client: create %s: %s %s" % (name, st, obj))
        uid = obj["metadata"]["uid"]
        seen = {}

        def is_running(t, typ, o):
            if o["metadata"]["uid"] == uid and running(o):
                seen["t"] = t
                return True
            return False
        nd.until(is_running, args.timeout)
        tl = timelines(nd.endpoint, nd.token_file).get(uid, {})
        # the status acknowledged: stamped when the PATCH's answer is back
        for _ in range(50):
            if "statusDelivered:Running" in tl:
                break
            time.sleep(0.02)
            tl = timelines(nd.endpoint, nd.token_file).get(uid, {})
        api.request("DELETE", "/api/v1/namespaces/default/pods/" + name,
                    {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 1})
        t2 = now_ms()
        nd.until(lambda t, typ, o: typ == "DELETED" and o["metadata"]["uid"] == uid, args.timeout)
        print(json.dumps({"node": nd.name, "i": i, "created_ms": t0, "post_ms": t1 - t0,
                          "running_ms": seen["t"] - t0, "deleted_ms": now_ms() - t2,
                          "timeline": {k: v - t0 for k, v in tl.items()}}), flush=True)


def exits(args):
    """Figure 5: a container exits -> its terminal status stored (seen by a
    watch), against the agent's containerExited stamp."""
    nodes = nodes_of(args)
    for i, nd in turns(nodes, args.count):
        api = nd.api
        name = "exit-%d" % i
        st, obj = api.request("POST", "/api/v1/namespaces/default/pods",
                              pod_body(name, nd.name, args.image, 1, "sleep 0.3"))
        if st != 201:
            sys.exit("bench_client: create %s: %s %s" % (name, st, obj))
        uid = obj["metadata"]["uid"]
        seen = {}

        def terminal(t, typ, o):
            if o["metadata"]["uid"] == uid and o["status"].get("phase") == "Succeeded":
                seen["t"] = t
                return True
            return False
        nd.until(terminal, args.timeout)
        tl = timelines(nd.endpoint, nd.token_file).get(uid, {})
        api.request("DELETE", "/api/v1/namespaces/default/pods/" + name,
                    {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 1})
        nd.until(lambda t, typ, o: typ == "DELETED" and o["metadata"]["uid"] == uid, args.timeout)
        ex = tl.get("containerExited:main")
        print(json.dumps({"node": nd.name, "i": i,
                          "exit_to_stored_ms": seen["t"] - ex if ex else None,
                          "exit_to_delivered_ms": tl["statusDelivered:Succeeded"] - ex
                          if ex and "statusDelivered:Succeeded" in tl else None}), flush=True)


def taints(args):
    """Figure 5: a NoExecute taint the pod does not tolerate -> the agent
    stops its container (the timeline's terminating: the stop signal sent),
    through the agent's eviction (DisruptionTarget, then a graceful DELETE,
    whose watch event starts the termination) -> exited -> gone. The taint
    is added and removed with a merge patch of the Node's spec.taints, as
    kubectl taint does."""
    nodes = nodes_of(args)
    taint = {"key": "bench.cubelet.dev/evict", "value": "now", "effect": "NoExecute"}
    merge = "application/merge-patch+json"
    for i, nd in turns(nodes, args.count):
        api = nd.api
        name = "taint-%d" % i
        st, obj = api.request("POST", "/api/v1/namespaces/default/pods",
                              pod_body(name, nd.name, args.image, 1,
                                       "trap 'exit 0' TERM; sleep 3600 & wait"))
        if st != 201:
            sys.exit("bench_client: create %s: %s %s" % (name, st, obj))
        uid = obj["metadata"]["uid"]
        nd.until(lambda t, typ, o: o["metadata"]["uid"] == uid and running(o), args.timeout)
        t0 = now_ms()
        st, obj = api.request("PATCH", "/api/v1/nodes/" + nd.name,
                              {"spec": {"taints": [taint]}}, merge)
        if st != 200:
            sys.exit("bench_client: taint %s: %s %s" % (nd.name, st, obj))
        nd.until(lambda t, typ, o: typ == "DELETED" and o["metadata"]["uid"] == uid,
                 args.timeout)
        gone = now_ms()
        st, obj = api.request("PATCH", "/api/v1/nodes/" + nd.name,
                              {"spec": {"taints": None}}, merge)
        if st != 200:
            sys.exit("bench_client: untaint %s: %s %s" % (nd.name, st, obj))
        tl = timelines(nd.endpoint, nd.token_file).get(uid, {})
        print(json.dumps({"node": nd.name, "i": i, "gone_ms": gone - t0,
                          "timeline": {k: v - t0 for k, v in tl.items() if v >= t0}}),
              flush=True)
        # the agent's node watch sees the taint gone before the next
        # pod is admitted (it would be evicted at once otherwise)
        time.sleep(0.3)


def spdy_exec(ctx, host, port, target):
    """One exec as kube-apiserver makes it to a kubelet (client-go's SPDY
    executor, with the helpers of the stand-in's own translator): TLS, the
    upgrade, the error/stdout/stderr streams each awaiting its SYN_REPLY,
    then until every stream is closed. Returns (stamps in ms from the start,
    stdout, the error stream)."""
    import spdy
    import streams
    t0 = time.monotonic()
    st = {}
    sock = streams.connect_kubelet(ctx, host, port)
    st["tls"] = (time.monotonic() - t0) * 1000
    try:
        sock.sendall(streams.spdy_upgrade_request(target, host, port,
                                                  streams.REMOTECOMMAND_PROTOCOLS))
        code, _, hdrs, _, rest = streams.read_head(sock)
        if code != 101:
            raise RuntimeError("exec %s: HTTP %d" % (target, code))
        st["upgraded"] = (time.monotonic() - t0) * 1000
        codec = spdy.HeaderCodec()
        parser = spdy.FrameParser(codec)
        by_sid, replied, closed, data = {}, set(), set(), {}
        pending = list(parser.feed(rest))
        sock.settimeout(30)

        def pump():
            frames, pending[:] = pending[:], []
            if not frames:
                chunk = sock.recv(65536)
                if not chunk:
                    raise RuntimeError("exec %s: the connection ended" % target)
                frames = parser.feed(chunk)
            for f in frames:
                if f.type is None:
                    data.setdefault(f.sid, bytearray()).extend(f.data)
                    if f.fin:
                        closed.add(f.sid)
                elif f.type == spdy.SYN_REPLY:
                    replied.add(f.sid)
                    if f.fin:
                        closed.add(f.sid)
                elif f.type == spdy.RST_STREAM:
                    raise RuntimeError("exec %s: stream %d reset" % (target, f.sid))
                elif f.type == spdy.PING and f.ping_id % 2 == 0:
                    sock.sendall(spdy.ping(f.ping_id))
        for sid, typ in ((1, "error"), (3, "stdout"), (5, "stderr")):
            by_sid[sid] = typ
            sock.sendall(spdy.syn_stream(codec, sid, [("streamtype", typ)]))
            while sid not in replied:
                pump()
        st["streams"] = (time.monotonic() - t0) * 1000
        while not all(sid in closed for sid in by_sid):
            pump()
        st["done"] = (time.monotonic() - t0) * 1000
        sock.sendall(spdy.goaway(0))
    finally:
        sock.close()
    return st, bytes(data.get(3, b"")), bytes(data.get(1, b""))


def execs(args):
    """Figure 5: exec round trips into a running container, node-side: what
    the apiserver's part of a kubectl exec costs at the node (no kubectl, no
    apiserver in the path). One pod per node, then the nodes in turn."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                    "apiserver"))
    nodes = nodes_of(args)
    napis = args.node_api.split(",")
    targets = []
    for nd, hp in zip(nodes, napis):
        name = "exec-target"
        st, obj = nd.api.request("POST", "/api/v1/namespaces/default/pods",
                                 pod_body(name, nd.name, args.image, 1))
        if st != 201:
            sys.exit("bench_client: create %s: %s %s" % (name, st, obj))
        uid = obj["metadata"]["uid"]
        nd.until(lambda t, typ, o: o["metadata"]["uid"] == uid and running(o), args.timeout)
        data = args.data.split(",")[nodes.index(nd)]
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE   # the agent's self-signed serving certificate
        ctx.load_cert_chain(os.path.join(data, "kubelet-client.crt"),
                            os.path.join(data, "kubelet-client.key"))
        host, port = hp.rsplit(":", 1)
        targets.append((nd, name, uid, ctx, host, port))
    cmd = "/exec/default/exec-target/main?command=echo&command=ok&output=1&error=1"
    for i, nd in turns(nodes, args.count):
        _, name, uid, ctx, host, port = targets[nodes.index(nd)]
        st, out, err = spdy_exec(ctx, host, port, cmd)
        if out != b"ok\n" or b"Failure" in err:
            sys.exit("bench_client: exec on %s: stdout %r, error stream %r" % (nd.name, out, err))
        print(json.dumps({"node": nd.name, "i": i, **{k + "_ms": v for k, v in st.items()}}),
              flush=True)
    for nd, name, uid, *_ in targets:
        nd.api.request("DELETE", "/api/v1/namespaces/default/pods/" + name,
                       {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 1})
        nd.until(lambda t, typ, o: typ == "DELETED" and o["metadata"]["uid"] == uid,
                 args.timeout)


class Pool:
    """Connections opened (TLS handshake done) before a burst, one per
    worker thread, so that concurrent requests do not wait on each other's
    connection nor pay a handshake inside the measured time."""

    def __init__(self, data, n):
        self.apis = queue.Queue()
        for _ in range(n):
            a = Api(data)
            a.request("GET", "/api/v1/namespaces/default")
            self.apis.put(a)
        self.n = n

    def run(self, jobs):
        """Runs every job (a function of an Api) at once, at most n at a
        time; returns their results in order."""
        out = [None] * len(jobs)
        errs = []

        def one(i, fn):
            a = self.apis.get()
            try:
                out[i] = fn(a)
            except Exception as e:  # reported by the caller
                errs.append(e)
            finally:
                self.apis.put(a)
        ts = [threading.Thread(target=one, args=(i, fn)) for i, fn in enumerate(jobs)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        if errs:
            raise errs[0]
        return out


def slow_start_batches(count, initial=1):
    """The ReplicaSet controller's slowStartBatch (pkg/controller/replicaset):
    batches of 1, 2, 4, ... (SlowStartInitialBatchSize 1), each batch's
    creates concurrent, the next batch once the whole batch is answered."""
    done, size = 0, min(count, initial)
    while size > 0:
        yield list(range(done, done + size))
        done += size
        size = min(2 * size, count - done)


def burst(args):
    api = Api(args.data)
    nd = Node(api, args.node, args.endpoint, args.token_file)
    pool = Pool(args.data, args.connections) if args.creates == "slowstart" else None
    created = {}

    def create(i):
        name = "burst-%d" % i

        def fn(a):
            t = now_ms()
            st, obj = a.request("POST", "/api/v1/namespaces/default/pods",
                                pod_body(name, nd.name, args.image, 1, args.command))
            if st != 201:
                raise RuntimeError("bench_client: create %s: %s %s" % (name, st, obj))
            return obj["metadata"]["uid"], name, t
        return fn
    t0 = now_ms()
    if pool is None:
        for i in range(args.count):
            uid, name, t = create(i)(api)
            created[uid] = (name, t)
    else:
        for batch in slow_start_batches(args.count):
            for uid, name, t in pool.run([create(i) for i in batch]):
                created[uid] = (name, t)
    t_created = now_ms()
    run = {}

    def all_running(t, typ, o):
        uid = o["metadata"]["uid"]
        if uid in created and uid not in run and running(o):
            run[uid] = t
        return len(run) == len(created)
    nd.until(all_running, args.timeout)
    t_all = now_ms()
    if args.hold_file:
        # the caller measures memory now and removes the file
        open(args.hold_file, "w").close()
        while os.path.exists(args.hold_file):
            time.sleep(0.1)
    tl = timelines(nd.endpoint, nd.token_file)
    for uid, (name, t) in created.items():
        print(json.dumps({"node": nd.name, "name": name, "created_ms": t, "running_ms": run[uid] - t,
                          "timeline": {k: v - t for k, v in tl.get(uid, {}).items()}}), flush=True)
    opts = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 1}
    sent = {}

    def delete(uid, name):
        def fn(a):
            sent[uid] = now_ms()
            a.request("DELETE", "/api/v1/namespaces/default/pods/" + name, opts)
        return fn
    d0 = now_ms()
    if pool is None:
        for uid, (name, t) in created.items():
            delete(uid, name)(api)
    else:
        # the ReplicaSet controller deletes its surplus all at once
        pool.run([delete(uid, name) for uid, (name, t) in created.items()])
    d1 = now_ms()
    gone = {}

    def all_gone(t, typ, o):
        if typ == "DELETED" and o["metadata"]["uid"] in created:
            gone[o["metadata"]["uid"]] = t
        return len(gone) == len(created)
    nd.until(all_gone, args.timeout)
    t_gone = now_ms()
    # the agent's steps of each deletion (it keeps the last 64 pods gone)
    tl = timelines(nd.endpoint, nd.token_file)
    for uid in created:
        print(json.dumps({"node": nd.name, "delete": True, "uid": uid,
                          "gone_ms": gone[uid] - sent[uid],
                          "timeline": {k: v - sent[uid] for k, v in tl.get(uid, {}).items()
                                       if v >= sent[uid]}}), flush=True)
    print(json.dumps({"summary": True, "count": args.count, "creates": args.creates,
                      "create_ms": t_created - t0,
                      "first_running_ms": min(run.values()) - t0, "all_running_ms": t_all - t0,
                      "delete_ms": d1 - d0, "all_gone_ms": t_gone - d0}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["perpod", "burst", "exits", "taints", "execs"])
    ap.add_argument("--data", required=True)
    ap.add_argument("--node", required=True)
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--token-file", required=True)
    ap.add_argument("--count", type=int, default=30)
    ap.add_argument("--image", default="docker.io/library/busybox:1.36")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--hold-file")
    ap.add_argument("--command", default="sleep 3600",
                    help="burst: the container's sh -c command")
    ap.add_argument("--host-network", action="store_true")
    ap.add_argument("--node-api", help="execs: each node's API, HOST:PORT, as --node")
    ap.add_argument("--creates", choices=["slowstart", "sequential"], default="slowstart",
                    help="burst: the ReplicaSet controller's slow-start batches, concurrent "
                    "(and its deletes all at once), or one request after the other")
    ap.add_argument("--connections", type=int, default=32,
                    help="burst: connections for the concurrent requests")
    args = ap.parse_args()
    global HOST_NETWORK
    HOST_NETWORK = args.host_network
    {"perpod": perpod, "burst": burst, "exits": exits, "taints": taints,
     "execs": execs}[args.mode](args)


if __name__ == "__main__":
    main()
