#!/usr/bin/python3
"""Stand-in Kubernetes apiserver for cubelet's tests: HTTPS front end over a
real etcd (see README.md). Usage: run.sh --data DIR [--bind] [--port N]."""

import argparse
import ctypes
import json
import os
import random
import re
import secrets
import select
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import authz
import h2serve
import bootstraptoken
import controllers
import csr
import storage
import priority
import patch
from patch import clone
import proto
import registry as reg
import sa
import store
import streams
import tables
from registry import ApiError

csr.install()
storage.install()
priority.install()

VERSION = {"major": "1", "minor": "32", "gitVersion": "v1.32.4", "gitCommit":
           "59526cd4867447956156ae3a602fcbac10a2c335", "gitTreeState": "clean",
           "buildDate": "2025-04-22T16:02:27Z", "goVersion": "go1.23.6", "compiler": "gc",
           "platform": "linux/amd64"}

BOOKMARK_INTERVAL = 5.0
# Every 403 answered is appended to this file (for finding what a node is
# refused in a test run).
FORBIDDEN_LOG = os.environ.get("CUBELET_STANDIN_FORBIDDEN_LOG", "")
HERE = os.path.dirname(os.path.abspath(__file__))


def success_status(code=200, details=None):
    s = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details:
        s["details"] = details
    if code != 200:
        s["code"] = code
    return s


class Api:
    """The REST semantics over etcd, independent of HTTP."""

    def __init__(self, etcd):
        self.etcd = etcd

    # ---- reads

    def get(self, res, ns, name):
        kv, _ = self.etcd.get(res.key(ns, name))
        if kv is None:
            raise reg.not_found(res, name)
        return kv.obj()

    def list(self, res, ns, q):
        """(items, list metadata)."""
        lsel = reg.parse_label_selector(q.get("labelSelector", ""))
        fsel = reg.parse_field_selector(res, q.get("fieldSelector", ""))
        rv, match = q.get("resourceVersion", ""), q.get("resourceVersionMatch", "")
        try:
            limit = int(q.get("limit") or 0)
        except ValueError:
            raise reg.bad_request(f"limit: Invalid value: \"{q['limit']}\"")
        if rv == "0" and not q.get("continue"):
            limit = 0  # like the watch cache: "any" resourceVersion serves the whole list
        prefix = res.prefix(ns)
        revision, start = 0, prefix
        if q.get("continue"):
            revision, rel = reg.decode_continue(q["continue"])
            start = prefix + rel
        elif rv and rv != "0":
            try:
                want = int(rv)
            except ValueError:
                raise bad_rv(rv)
            if match == "Exact":
                revision = want
            else:
                cur = self.etcd.revision()
                if want > cur:
                    raise too_large(want, cur)
        items, more, last_key = [], False, None
        while True:
            try:
                kvs, hdr, more = self.etcd.list(prefix, start=start, revision=revision,
                                                limit=(limit - len(items) + 1) if limit else 0)
            except store.Compacted:
                if q.get("continue"):
                    raise reg.expired(reg.CONTINUE_EXPIRED)
                raise reg.expired("The resourceVersion for the provided list is too old.")
            except store.FutureRevision:
                raise too_large(revision, self.etcd.revision())
            revision = revision or hdr
            for kv in kvs:
                if limit and len(items) == limit:
                    more = True
                    break
                last_key = kv.key
                o = kv.obj()
                if reg.labels_match(lsel, (o.get("metadata") or {}).get("labels")) and \
                        reg.fields_match(fsel, o):
                    items.append(o)
            else:
                if more and kvs:
                    start = kvs[-1].key + "\0"
                    continue
                more = False
            break
        meta = {"resourceVersion": str(revision)}
        if more and last_key is not None:
            meta["continue"] = reg.encode_continue(revision, last_key[len(prefix):] + "\0")
            if not lsel and not fsel:
                rest, _, _ = self.etcd.list(prefix, start=last_key + "\0", revision=revision)
                meta["remainingItemCount"] = len(rest)
        return items, meta

    # ---- writes

    def check_namespace(self, res, ns, name):
        """Creating in a namespace needs it to exist and not be terminating."""
        kv, _ = self.etcd.get(reg.find_resource("", "v1", "namespaces").key(None, ns))
        if kv is None:
            raise reg.not_found(reg.find_resource("", "v1", "namespaces"), ns)
        if kv.value["metadata"].get("deletionTimestamp"):
            raise ApiError(403, "Forbidden", f'{reg._qualified(res)} "{name}" is forbidden: '
                           f"unable to create new content in namespace {ns} because it is "
                           "being terminated",
                           {"name": name, "kind": res.name,
                            "causes": [{"reason": "NamespaceTerminating",
                                        "message": f"namespace {ns} is being terminated",
                                        "field": "metadata.namespace"}]})

    def create(self, res, ns, obj, dry_run=False):
        if not isinstance(obj, dict):
            raise reg.bad_request("the body of the request must be a JSON object")
        meta = obj.setdefault("metadata", {})
        if res.namespaced:
            if meta.get("namespace") and meta["namespace"] != ns:
                raise reg.bad_request("the namespace of the provided object does not match the "
                                      "namespace sent on the request")
            self.check_namespace(res, ns, meta.get("name") or meta.get("generateName", ""))
        if meta.get("resourceVersion"):
            raise ApiError(500, "InternalError", "Internal error occurred: resourceVersion "
                           "should not be set on objects to be created")
        if obj.get("kind") and obj["kind"] != res.kind:
            raise reg.bad_request(f"the API version in the data ({obj.get('apiVersion')}) does "
                                  f"not match the expected API version ({res.api_version})"
                                  if obj.get("apiVersion") != res.api_version else
                                  f"Kind={obj['kind']} does not match the expected kind "
                                  f"{res.kind}")
        for attempt in range(5):
            o = clone(obj)
            reg.default_meta(res, o, ns)
            reg.default_object(res, o)
            reg.validate(res, o)
            if dry_run:
                return o
            rev = self.etcd.create(res.key(ns, o["metadata"]["name"]), o)
            if rev is not None:
                o["metadata"]["resourceVersion"] = str(rev)
                return o
            if not (obj.get("metadata") or {}).get("generateName") or meta.get("name"):
                raise reg.already_exists(res, o["metadata"]["name"])
        raise reg.already_exists(res, o["metadata"]["name"])

    def update(self, res, ns, name, mutate, expect_rv=None, dry_run=False):
        """Read-modify-write with a compare-and-swap on mod_revision. mutate
        gets the current object and returns the new one."""
        key = res.key(ns, name)
        while True:
            kv, _ = self.etcd.get(key)
            if kv is None:
                raise reg.not_found(res, name)
            cur = kv.obj()
            if expect_rv and expect_rv != str(kv.mod_revision):
                raise reg.stale(res, name)
            new = mutate(clone(cur))
            nrv = (new.get("metadata") or {}).get("resourceVersion")
            if nrv and nrv != cur["metadata"]["resourceVersion"]:
                raise reg.stale(res, name)
            new["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
            reg.validate(res, new)
            if new == cur or dry_run:
                return new
            if reg.should_delete_after_update(new):
                rev = self.etcd.delete(key, kv.mod_revision)
            else:
                rev = self.etcd.update(key, new, kv.mod_revision)
            if rev is not None:
                new["metadata"]["resourceVersion"] = str(rev)
                return new
            if expect_rv:
                raise reg.stale(res, name)

    def replace(self, res, ns, name, sub, body, dry_run=False, admit=None):
        if not isinstance(body, dict):
            raise reg.bad_request("the body of the request must be a JSON object")
        if res.namespaced and (body.get("metadata") or {}).get("namespace") not in (None, "", ns):
            raise reg.bad_request("the namespace of the provided object does not match the "
                                  "namespace sent on the request")
        expect = (body.get("metadata") or {}).get("resourceVersion") or None
        body = clone(body)
        body.get("metadata", {}).pop("resourceVersion", None)
        def mutate(cur):
            new = reg.prepare_update(res, sub, cur, body)
            if admit:
                admit(cur, new)
            return new
        return self.update(res, ns, name, mutate, expect_rv=expect, dry_run=dry_run)

    def patch(self, res, ns, name, sub, ctype, body, dry_run=False, admit=None):
        def mutate(cur):
            try:
                if ctype == "application/json-patch+json":
                    patched = patch.json_patch(cur, body)
                elif ctype == "application/merge-patch+json":
                    patched = patch.merge_patch(cur, body)
                else:
                    patched = patch.strategic_merge_patch(cur, body)
            except patch.PatchError as e:
                raise ApiError(422 if ctype == "application/json-patch+json" else 400,
                               "Invalid" if ctype == "application/json-patch+json"
                               else "BadRequest", str(e))
            if not isinstance(patched, dict):
                raise reg.bad_request("patched object is not a JSON object")
            rv = (patched.get("metadata") or {}).get("resourceVersion")
            if rv and rv != cur["metadata"]["resourceVersion"]:
                raise reg.stale(res, name)
            out = reg.prepare_update(res, sub, cur, patched)
            if admit:
                admit(cur, out)
            return out
        return self.update(res, ns, name, mutate, dry_run=dry_run)

    def delete(self, res, ns, name, opts, dry_run=False):
        """(object or Status, http code)."""
        key = res.key(ns, name)
        while True:
            kv, _ = self.etcd.get(key)
            if kv is None:
                raise reg.not_found(res, name)
            obj = kv.obj()
            reg.precondition_check(res, obj, opts)
            plan, new = reg.deletion_plan(res, obj, opts)
            if plan == "pending":
                return obj, 200
            if plan == "update":
                if dry_run:
                    return new, 200
                rev = self.etcd.update(key, new, kv.mod_revision)
                if rev is None:
                    continue
                new["metadata"]["resourceVersion"] = str(rev)
                if not reg.should_delete_after_update(new):
                    return new, 200
                # Grace exhausted: remove what was just stored (the real
                # store's update-then-delete; a racing writer that removed it
                # first is not an error, issue 19403).
                obj, mod = new, rev
            else:
                mod = kv.mod_revision
                if dry_run:
                    return self._deleted(res, obj, mod), 200
            if self.etcd.delete(key, mod) is None:
                if plan == "update":
                    cur, _ = self.etcd.get(key)
                    if cur is None:
                        return self._deleted(res, obj, mod), 200
                continue
            # Like the etcd3 store, the deleted object carries the revision it
            # had, not the revision of the delete.
            return self._deleted(res, obj, mod), 200

    def evict(self, ns, name, opts, dry_run=False):
        """policy/v1 Eviction (no PodDisruptionBudgets here, so every pod can
        go): like the real eviction REST, first add the DisruptionTarget
        condition (checking the uid/resourceVersion preconditions), then
        delete with the eviction's DeleteOptions."""
        pods = reg.find_resource("", "v1", "pods")
        if not dry_run:
            def mutate(pod):
                reg.precondition_check(pods, pod, opts)
                reg.set_pod_condition(pod, {"type": "DisruptionTarget", "status": "True",
                                            "reason": "EvictionByEvictionAPI",
                                            "message": "Eviction API: evicting"})
                return pod
            new = self.update(pods, ns, name, mutate)
            pre = (opts or {}).get("preconditions") or {}
            if pre.get("resourceVersion"):  # we moved it: follow our own write
                opts = dict(opts, preconditions=dict(
                    pre, resourceVersion=new["metadata"]["resourceVersion"]))
        return self.delete(pods, ns, name, opts, dry_run)

    @staticmethod
    def _deleted(res, obj, rev):
        if res.name == "pods":  # the pod registry returns the deleted object
            obj["metadata"]["resourceVersion"] = str(rev)
            return obj
        d = reg._details(res, obj["metadata"]["name"])
        d["uid"] = obj["metadata"].get("uid")
        return success_status(200, d)

    def bind(self, ns, name, node, dry_run=False):
        pods = reg.find_resource("", "v1", "pods")

        def mutate(pod):
            if pod["metadata"].get("deletionTimestamp"):
                raise reg.conflict(pods, name, f"pod {name} is being deleted, cannot be "
                                   "assigned to a host")
            if pod["spec"].get("nodeName"):
                raise reg.conflict(pods, name, f"pod {name} is already assigned to node "
                                   f"\"{pod['spec']['nodeName']}\"")
            pod["spec"]["nodeName"] = node
            conds = [c for c in pod.setdefault("status", {}).get("conditions") or []
                     if c.get("type") != "PodScheduled"]
            conds.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                          "lastTransitionTime": reg.fmt_time(reg.now())})
            pod["status"]["conditions"] = conds
            return pod
        return self.update(pods, ns, name, mutate, dry_run=dry_run)


def too_large(want, cur):
    return ApiError(504, "Timeout", f"Too large resource version: {want}, current: {cur}",
                    {"causes": [{"reason": "ResourceVersionTooLarge",
                                 "message": "Too large resource version"}],
                     "retryAfterSeconds": 1})


def bad_rv(rv):
    return reg.bad_request(f'invalid resource version "{rv}"')


# ------------------------------------------------------------------ discovery


def discovery_v1(group, version):
    out = []
    for r in reg.RESOURCES:
        if r.group != group or r.version != version:
            continue
        verbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update",
                 "watch"]
        e = {"name": r.name, "singularName": r.singular, "namespaced": r.namespaced,
             "kind": r.kind, "verbs": verbs}
        if r.short:
            e["shortNames"] = r.short
        if r.name == "pods":
            e["categories"] = ["all"]
        out.append(e)
        for s in r.subresources:
            se = {"name": f"{r.name}/{s}", "singularName": "", "namespaced": r.namespaced,
                  "kind": r.kind, "verbs": ["get", "patch", "update"]}
            if s == "binding":
                se.update(kind="Binding", verbs=["create"])
            elif s == "token":
                se.update(kind="TokenRequest", group="authentication.k8s.io", version="v1",
                          verbs=["create"])
            elif s == "eviction":
                se.update(kind="Eviction", group="policy", version="v1", verbs=["create"])
            out.append(se)
    for name, kind in REVIEW_RESOURCES.get(group, ()):
        out.append({"name": name, "singularName": kind.lower(), "namespaced": False,
                    "kind": kind, "verbs": ["create"]})
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version, "resources": out}


# The create-only review resources (answered by Handler.review).
REVIEW_RESOURCES = {
    "authentication.k8s.io": [("selfsubjectreviews", "SelfSubjectReview"),
                              ("tokenreviews", "TokenReview")],
    "authorization.k8s.io": [("selfsubjectaccessreviews", "SelfSubjectAccessReview"),
                             ("selfsubjectrulesreviews", "SelfSubjectRulesReview"),
                             ("subjectaccessreviews", "SubjectAccessReview")],
}


def api_groups():
    gs = []
    for g, v in GROUP_ORDER:
        gv = {"groupVersion": f"{g}/{v}", "version": v}
        gs.append({"name": g, "versions": [gv], "preferredVersion": gv})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": gs}


GROUP_ORDER = [("authentication.k8s.io", "v1"), ("authorization.k8s.io", "v1"),
               ("certificates.k8s.io", "v1"),
               ("rbac.authorization.k8s.io", "v1"), ("coordination.k8s.io", "v1"),
               ("discovery.k8s.io", "v1"), ("policy", "v1")]


def _gv_path(group, version):
    return f"apis/{group}/{version}" if group else f"api/{version}"


def openapi_v3_root():
    """The OpenAPI v3 index. The per-group documents below describe no
    schemas: they only declare, per resource, the PATCH operation with its
    fieldValidation parameter, which is what kubectl reads to decide that the
    server validates fields itself (so `kubectl apply` works without
    --validate=false). /openapi/v2 is not served."""
    gvs = {("", "v1")} | {(r.group, r.version) for r in reg.RESOURCES}
    return {"paths": {_gv_path(g, v): {"serverRelativeURL": f"/openapi/v3/{_gv_path(g, v)}"
                                       f"?hash=0"} for g, v in sorted(gvs)}}


def openapi_v3_gv(group, version):
    paths = {}
    for r in reg.RESOURCES:
        if r.group != group or r.version != version:
            continue
        base = "/" + _gv_path(group, version)
        item = f"{base}/namespaces/{{namespace}}/{r.name}/{{name}}" if r.namespaced else \
            f"{base}/{r.name}/{{name}}"
        params = [{"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
                  for n in ("dryRun", "fieldManager", "fieldValidation", "force")]
        paths[item] = {"patch": {
            "operationId": f"patch{r.kind}", "parameters": params,
            "requestBody": {"content": {t: {"schema": {"type": "object"}} for t in (
                "application/json-patch+json", "application/merge-patch+json",
                "application/apply-patch+yaml")}, "required": True},
            "responses": {"200": {"description": "OK"}},
            "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": {"group": group, "version": version,
                                                "kind": r.kind}}}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": VERSION["gitVersion"]},
            "paths": paths, "components": {"schemas": {}}}

# ------------------------------------------------------------------ HTTP


# The apiserver's MaxRequestBodyBytes (3 MiB) and its answer to a larger body.
MAX_BODY = 3 * 1024 * 1024
TOO_LARGE = (413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_BODY}")


class _BodyError(Exception):
    def __init__(self, code, reason, message, unread=0):
        super().__init__(message)
        self.code, self.reason, self.message, self.unread = code, reason, message, unread


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "cubelet-test-apiserver"

    def setup(self):
        # Headers and body go out as separate writes: without TCP_NODELAY,
        # Nagle plus the client's delayed ACK stalls each response 40 ms.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.request.settimeout(60)
        self.request = self.server.ssl_ctx.wrap_socket(self.request, server_side=True)
        self.request.settimeout(None)
        self.alpn = self.request.selected_alpn_protocol()
        self.conn_rec = self.server.record_connection(self.client_address, self.alpn)
        super().setup()

    def handle(self):
        if self.alpn == "h2":
            self.request.settimeout(120)  # a client that stops reading ends it
            return h2serve.serve(self)
        return super().handle()

    def finish(self):
        # socketserver closes the socket it accepted, which wrap_socket
        # detached: the TLS socket is ours to close.
        self.conn_rec["closed"] = time.time()
        try:
            super().finish()
        finally:
            try:
                self.request.close()
            except OSError:
                pass

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("apiserver: " + (fmt % args) + "\n")

    # ---- plumbing

    def send_json(self, code, obj, extra=None):
        data = json.dumps(obj, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_error_status(self, err):
        if err.code == 403 and (self.server.verbose or FORBIDDEN_LOG):
            user = getattr(self, "user", None)
            line = (f"apiserver: 403 {user.name if user else '-'} {self.command} {self.path}: "
                    f"{err.message}\n")
            if self.server.verbose:
                sys.stderr.write(line)
            if FORBIDDEN_LOG:
                with open(FORBIDDEN_LOG, "a") as f:
                    f.write(line)
        self.send_json(err.code, err.status())

    def read_raw_body(self):
        """Read the whole request body (Content-Length or chunked) before
        anything answers, so that no early error (401, 404, 405, 415, ...)
        leaves body bytes on a keep-alive connection to be parsed as the next
        request. Raises _BodyError when the body cannot or must not be read;
        the answer then closes the connection."""
        te = (self.headers.get("Transfer-Encoding") or "").strip().lower()
        if te and te != "identity":
            if te != "chunked":
                raise _BodyError(501, "NotImplemented",
                                 f"unsupported Transfer-Encoding: {te}")
            return self._read_chunked()
        cl = (self.headers.get("Content-Length") or "").strip()
        if not cl:
            return b""
        if not cl.isdigit():
            raise _BodyError(400, "BadRequest", f"invalid Content-Length: {cl!r}")
        n = int(cl)
        if n > MAX_BODY:
            raise _BodyError(*TOO_LARGE, unread=n)
        raw = self.rfile.read(n)
        if len(raw) != n:
            raise _BodyError(400, "BadRequest", "request body shorter than its Content-Length")
        return raw

    def _read_chunked(self):
        out = bytearray()
        while True:
            line = self.rfile.readline(1024)
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise _BodyError(400, "BadRequest", "malformed chunked request body")
            if size < 0 or len(out) + size > MAX_BODY:
                raise _BodyError(*TOO_LARGE)
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return bytes(out)
            chunk = self.rfile.read(size)
            if len(chunk) != size or self.rfile.readline(1024) not in (b"\r\n", b"\n"):
                raise _BodyError(400, "BadRequest", "malformed chunked request body")
            out += chunk

    def handle_expect_100(self):
        """Refuse a too large body before the client sends it (and close,
        since the client may send it anyway)."""
        cl = (self.headers.get("Content-Length") or "").strip()
        if cl.isdigit() and int(cl) > MAX_BODY:
            self.send_body_error(_BodyError(*TOO_LARGE))
            return False
        return super().handle_expect_100()

    def send_body_error(self, e, unread=0):
        """Answer and close. A client still sending the body it announced
        (unread bytes, up to 4 limits' worth) has it read and dropped first,
        so that closing does not reset the connection before it reads the
        answer (a lingering close)."""
        self.close_connection = True
        self.send_json(e.code, ApiError(e.code, e.reason, e.message).status(),
                       {"Connection": "close"})
        if 0 < unread <= 4 * MAX_BODY:
            try:
                self.wfile.flush()
                self.request.settimeout(5)
                while unread > 0:
                    got = self.rfile.read(min(unread, 1 << 16))
                    if not got:
                        break
                    unread -= len(got)
            except (OSError, ssl.SSLError):
                pass

    def read_body(self):
        raw = self.raw_body
        if not raw:
            return None
        ctype = (self.headers.get("Content-Type") or "application/json").split(";")[0].strip()
        if ctype == "application/vnd.kubernetes.protobuf":
            try:
                return proto.decode(raw)
            except (proto.ProtoError, ValueError, IndexError) as e:
                raise ApiError(415, "UnsupportedMediaType",
                               f"the body of the request was in an unknown format - accepted "
                               f"media types include: application/json, application/yaml, "
                               f"application/vnd.kubernetes.protobuf ({e})")
        try:
            return json.loads(raw)
        except ValueError as e:
            raise reg.bad_request(f"error decoding body: {e}")

    def authenticate(self):
        """The authenticated User, or None (401)."""
        auth = self.headers.get("Authorization") or ""
        if auth.startswith("Bearer "):
            return token_user(self.server, auth[7:].strip())[0]
        cert = self.request.getpeercert() if hasattr(self.request, "getpeercert") else None
        if cert:
            cn, orgs = "", []
            for rdn in cert.get("subject", ()):
                for k, v in rdn:
                    if k == "commonName":
                        cn = v
                    elif k == "organizationName":
                        orgs.append(v)
            if cn:
                return authz.User(cn, authz.with_authenticated(cn, orgs))
        return None

    def impersonate(self, user):
        """Impersonate-User/-Group/-Uid/-Extra-* headers, each authorized as
        the `impersonate` verb (the apiserver's WithImpersonation)."""
        name = self.headers.get("Impersonate-User")
        groups = self.headers.get_all("Impersonate-Group") or []
        uid = self.headers.get("Impersonate-Uid") or ""
        extra = {}
        for k, v in self.headers.items():
            if k.lower().startswith("impersonate-extra-"):
                extra.setdefault(urllib.parse.unquote(k[len("impersonate-extra-"):]).lower(),
                                 []).append(v)
        if name is None:
            if groups or uid or extra:
                raise reg.bad_request("requested user info without a user name: "
                                      "impersonating groups, extra or a uid needs "
                                      "Impersonate-User")
            return user
        checks = []
        if name.startswith("system:serviceaccount:") and name.count(":") == 3:
            _, _, sns, sname = name.split(":")
            checks.append(("serviceaccounts", sns, sname))
            groups = groups + ["system:serviceaccounts", f"system:serviceaccounts:{sns}"]
        else:
            checks.append(("users", "", name))
        checks += [("groups", "", g) for g in self.headers.get_all("Impersonate-Group") or []]
        if uid:
            checks.append(("uids", "", uid))
        checks += [(f"userextras/{k}", "", v) for k, vs in extra.items() for v in vs]
        az = getattr(self.server, "authz", None)
        for resource, ns, n in checks:
            r, _, sub = resource.partition("/")
            a = authz.Attrs(user, "impersonate", r, "" if r != "userextras" and
                            r != "uids" else "authentication.k8s.io", ns, n, sub)
            if az is not None:
                ok, why = az.authorize(a)
                if not ok:
                    raise authz.forbidden(a, why)
        return authz.User(name, authz.with_authenticated(name, groups), uid, extra)

    def authorize(self, a):
        az = getattr(self.server, "authz", None)
        if az is None:
            return
        ok, why = az.authorize(a)
        if not ok:
            raise authz.forbidden(a, why)

    def authorize_path(self, path):
        self.authorize(authz.Attrs(self.user, self.command.lower(), path=path,
                                   is_resource=False))

    def handle_any(self):
        self.raw_body = b""
        try:
            self.raw_body = self.read_raw_body()
        except _BodyError as e:
            return self.send_body_error(e, e.unread)
        except (OSError, ssl.SSLError):
            self.close_connection = True
            return
        try:
            url = urllib.parse.urlsplit(self.path)
            q = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query,
                                                             keep_blank_values=True).items()}
            self.user = self.authenticate()
            if not self.request_version.startswith("HTTP/2"):
                self.conn_rec["requests"] += 1
            if self.user is not None and self.user.name not in self.conn_rec["users"]:
                self.conn_rec["users"].append(self.user.name)
            if self.user is None:
                self.send_json(401, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                     "status": "Failure", "message": "Unauthorized",
                                     "reason": "Unauthorized", "code": 401})
                return
            self.user = self.impersonate(self.user)
            self.route(url.path, q)
        except ApiError as e:
            self.send_error_status(e)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True
        except store.EtcdError as e:
            self.send_error_status(ApiError(500, "InternalError",
                                            f"Internal error occurred: {e}"))
        except Exception as e:  # keep serving; report like the apiserver
            import traceback
            traceback.print_exc()
            self.send_error_status(ApiError(500, "InternalError",
                                            f"Internal error occurred: {e!r}"))

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = handle_any

    # ---- routing

    def route(self, path, q):
        parts = [p for p in path.split("/") if p]
        m = self.command
        if not (parts[:2] == ["api", "v1"] and len(parts) > 2) and \
                not (parts[:1] == ["apis"] and len(parts) > 3):
            self.authorize_path(path)
        if path in ("/healthz", "/livez", "/readyz"):
            return self.send_text("ok")
        if path == "/version":
            return self.send_json(200, VERSION)
        if path == "/api":
            return self.send_json(200, {"kind": "APIVersions", "versions": ["v1"],
                                        "serverAddressByClientCIDRs": [
                                            {"clientCIDR": "0.0.0.0/0",
                                             "serverAddress": self.server.address}]})
        if path == "/apis":
            return self.send_json(200, api_groups())
        if path == "/openapi/v3":
            return self.send_json(200, openapi_v3_root())
        if parts[:2] == ["openapi", "v3"] and len(parts) in (4, 5):
            g, v = ("", parts[3]) if parts[2] == "api" else (parts[3], parts[4] if len(
                parts) == 5 else "")
            if (g, v) == ("", "v1") or any(r.group == g and r.version == v
                                           for r in reg.RESOURCES):
                return self.send_json(200, openapi_v3_gv(g, v))
        if path == "/api/v1":
            return self.send_json(200, discovery_v1("", "v1"))
        if len(parts) == 2 and parts[0] == "apis":
            for g, v in GROUP_ORDER:
                if g == parts[1]:
                    gv = {"groupVersion": f"{g}/{v}", "version": v}
                    return self.send_json(200, {"kind": "APIGroup", "apiVersion": "v1",
                                                "name": g, "versions": [gv],
                                                "preferredVersion": gv})
        if len(parts) == 3 and parts[0] == "apis" and (parts[1], parts[2]) in GROUP_ORDER:
            return self.send_json(200, discovery_v1(parts[1], parts[2]))
        if m == "POST" and len(parts) == 4 and parts[0] == "apis" and parts[2] == "v1" and \
                parts[3] in [n for n, _ in REVIEW_RESOURCES.get(parts[1], ())]:
            self.authorize(authz.Attrs(self.user, "create", parts[3], parts[1]))
            return self.review(parts[3])
        if path == "/debug/hostile-objects" and m == "POST":
            return self.store_hostile()
        if path == "/debug/hostile-objects" and m == "DELETE":
            return self.drop_hostile()
        if path == "/debug/clock" and m in ("GET", "PUT"):
            return self.debug_clock(m)
        if path == "/debug/connections" and m == "GET":
            return self.debug_connections()
        if path == "/debug/goaway" and m == "POST":
            return self.debug_goaway()
        if path == "/debug/reviews" and m in ("GET", "PUT"):
            with self.server.reviews_lock:
                if m == "PUT":
                    self.server.review_delay = float((self.read_body() or {}).get("delay", 0))
                return self.send_json(200, dict(self.server.reviews,
                                                delay=self.server.review_delay))
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource",
                           {})
        if rest and rest[0] == "watch":  # legacy /watch/ paths
            rest = rest[1:]
            q["watch"] = "true"
        ns = None
        if len(rest) >= 3 and rest[0] == "namespaces" and group == "":
            ns, rest = rest[1], rest[2:]
            if rest and rest[0] in ("status", "finalize"):
                rest = ["namespaces", ns] + rest
                ns = None
        elif len(rest) >= 3 and rest[0] == "namespaces":
            ns, rest = rest[1], rest[2:]
        if rest:
            # Authorization comes before routing, as in the apiserver's
            # filter chain: a refused user gets 403 even for what is not served.
            raw = reg.Resource(rest[0], "", True, group=group, version=version)
            self.authorize(authz.request_attrs(self.user, m, raw, ns, rest[1] if len(rest) > 1
                                               else None, rest[2] if len(rest) > 2 else None,
                                               q))
        if not rest or len(rest) > 3:
            raise ApiError(404, "NotFound", "the server could not find the requested resource",
                           {})
        res = reg.find_resource(group, version, rest[0])
        if res is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource",
                           {})
        if res.namespaced and ns is None and len(rest) > 1:
            raise ApiError(404, "NotFound", "the server could not find the requested resource",
                           {})
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if sub and sub not in res.subresources:
            raise ApiError(404, "NotFound", "the server could not find the requested resource",
                           {})
        if not res.namespaced:
            ns = None
        self.dispatch(m, res, ns, name, sub, q)

    # ---- test only: objects a compromised apiserver could serve

    def store_hostile(self):
        """POST /debug/hostile-objects {"namespace": NS, "object": POD}: POD goes
        into etcd exactly as given (no defaulting, no validation, its own uid)
        and is served by lists and watches like any pod, to test that a node
        refuses what kube-apiserver's validation would never let through (a uid
        of ../../x, names with '/' or NUL, 300 containers). Only with
        --serve-hostile-objects; 404 otherwise. README.md, "Hostile objects"."""
        if not self.server.serve_hostile:
            raise ApiError(404, "NotFound", "the server could not find the requested resource",
                           {})
        body = self.read_body() or {}
        obj, ns = body.get("object"), body.get("namespace", "default")
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict) or \
                not isinstance(obj["metadata"].get("name"), str):
            raise reg.bad_request("want {\"namespace\": NS, \"object\": {\"metadata\": "
                                  "{\"name\": ...}, ...}}")
        try:
            fill_hostile(obj, body.get("fill") or [])
        except (KeyError, IndexError, TypeError, ValueError) as e:
            raise reg.bad_request(f"fill: {e}")
        res = reg.find_resource("", "v1", "pods")
        key = res.key(ns, obj["metadata"]["name"])
        rev = self.server.etcd.create(key, obj)
        if rev is None:
            raise reg.already_exists(res, obj["metadata"]["name"])
        self.server.hostile_keys.append(key)
        return self.send_json(201, {"kind": "Status", "apiVersion": "v1", "status": "Success",
                                    "details": {"resourceVersion": str(rev)}})

    def drop_hostile(self):
        """DELETE /debug/hostile-objects: every object stored that way is
        removed (watchers get DELETED), so a test can check the node recovers
        once the apiserver stops serving them."""
        if not self.server.serve_hostile:
            raise ApiError(404, "NotFound", "the server could not find the requested resource",
                           {})
        n = 0
        for key in self.server.hostile_keys:
            kv, _ = self.server.etcd.get(key)
            if kv is not None and self.server.etcd.delete(key, kv.mod_revision) is not None:
                n += 1
        self.server.hostile_keys = []
        return self.send_json(200, {"kind": "Status", "apiVersion": "v1", "status": "Success",
                                    "details": {"deleted": n}})

    def debug_clock(self, m):
        """GET|PUT /debug/clock {"offsetSeconds": N}: the stand-in's wall clock
        runs N seconds off the host's (registry.wall_time) for token issuance
        and validation, bootstrap-token expiry, CSR signing and timestamps, so
        a test can advance time past a token's expiry. Only with --test-clock
        and for a user RBAC allows /debug/* (the admin); 404 otherwise. README.md, "Test clock"."""
        if not self.server.test_clock:
            raise ApiError(404, "NotFound", "the server could not find the requested resource",
                           {})
        if m == "PUT":
            body = self.read_body() or {}
            off = body.get("offsetSeconds") if isinstance(body, dict) else None
            if isinstance(off, bool) or not isinstance(off, (int, float)) or \
                    abs(off) > 10 * 366 * 86400:
                raise reg.bad_request("want {\"offsetSeconds\": N} with |N| <= 10 years")
            reg.CLOCK_OFFSET = float(off)
            sys.stderr.write(f"apiserver: test clock: offset {off:+} s\n")
        return self.send_json(200, {"offsetSeconds": reg.CLOCK_OFFSET,
                                    "now": reg.fmt_time(reg.now())})

    def debug_connections(self):
        """GET /debug/connections: every connection's record (ALPN,
        protocol, users, requests, streams open at once), oldest first.
        Only with --test-connections; README.md, "HTTP/2"."""
        if not self.server.test_connections:
            raise ApiError(404, "NotFound", "the server could not find the requested resource",
                           {})
        with self.server.h2_lock:
            recs = [dict(r, users=list(r["users"])) for r in self.server.conn_records]
        return self.send_json(200, {"connections": recs})

    def debug_goaway(self):
        """POST /debug/goaway {"user": U, "graceSeconds": N}: GOAWAY (NO_ERROR)
        on every HTTP/2 connection (of user U), each closed once its open
        streams end or after N seconds (default 1). Only with
        --test-connections; README.md, "HTTP/2"."""
        if not self.server.test_connections:
            raise ApiError(404, "NotFound", "the server could not find the requested resource",
                           {})
        body = self.read_body() or {}
        grace = body.get("graceSeconds", 1) if isinstance(body, dict) else 1
        if isinstance(grace, bool) or not isinstance(grace, (int, float)) or grace < 0:
            raise reg.bad_request("want {\"graceSeconds\": N} with N >= 0")
        user = body.get("user") if isinstance(body, dict) else None
        n = h2serve.goaway_all(self.server, float(grace), user)
        return self.send_json(200, {"connections": n})

    # ---- TokenReview and SubjectAccessReview (the kubelet's webhooks)

    def review(self, kind):
        body = self.read_body()
        if kind == "selfsubjectreviews":  # kubectl auth whoami
            return self.send_json(201, {"kind": "SelfSubjectReview",
                                        "apiVersion": "authentication.k8s.io/v1",
                                        "metadata": {"creationTimestamp": None},
                                        "status": {"userInfo": self.user.info()}})
        spec = body.get("spec") if isinstance(body, dict) else None
        if not isinstance(spec, dict):
            raise ApiError(400, "BadRequest", f"{kind}: spec is required", {})
        with self.server.reviews_lock:
            if kind in self.server.reviews:
                self.server.reviews[kind] += 1
            delay = self.server.review_delay
        if delay > 0:
            time.sleep(delay)  # a slow apiserver, for tests of clients going away
        if kind == "tokenreviews":
            user, err, auds = token_user(self.server, spec.get("token") or "",
                                         spec.get("audiences") or None)
            if user:
                status = {"authenticated": True, "user": user.info(), "audiences": auds}
            else:
                status = {"user": {}, "error": err}
            out = {"kind": "TokenReview", "apiVersion": "authentication.k8s.io/v1",
                   "metadata": {"creationTimestamp": None}, "spec": spec, "status": status}
        elif kind == "selfsubjectrulesreviews":
            out = {"kind": "SelfSubjectRulesReview", "apiVersion": "authorization.k8s.io/v1",
                   "metadata": {"creationTimestamp": None}, "spec": spec,
                   "status": {"resourceRules": [], "nonResourceRules": [], "incomplete": True,
                              "evaluationError": "the stand-in does not enumerate rules"}}
        else:
            if kind == "selfsubjectaccessreviews":
                who = self.user
                kname = "SelfSubjectAccessReview"
            else:
                who = authz.User(spec.get("user") or "", spec.get("groups") or [],
                                 spec.get("uid") or "", spec.get("extra") or {})
                kname = "SubjectAccessReview"
            allowed, reason = sar_decide(self.server, who, spec)
            status = {"allowed": allowed}
            if reason:
                status["reason"] = reason
            out = {"kind": kname, "apiVersion": "authorization.k8s.io/v1",
                   "metadata": {"creationTimestamp": None}, "spec": spec, "status": status}
        if self.server.verbose:
            sys.stderr.write(f"review {kind}: {json.dumps(out['status'])}\n")
        return self.send_json(201, out)

    def send_text(self, text):
        data = text.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def wants_table(self):
        acc = self.headers.get("Accept") or ""
        for part in acc.split(","):
            params = dict(p.strip().split("=", 1) for p in part.split(";")[1:] if "=" in p)
            if params.get("as") == "Table" and params.get("g") == "meta.k8s.io" and \
                    params.get("v") in ("v1", "v1beta1"):
                return params["v"]
        return None

    def dispatch(self, m, res, ns, name, sub, q):
        api = self.server.api
        if sub in KUBELET_SUBRESOURCES:
            return self.proxy_kubelet(m, res, ns, name, sub, q)
        dry = q.get("dryRun") == "All"
        if m in ("GET", "HEAD"):
            if name is None:
                if q.get("watch") in ("true", "1"):
                    return self.watch(res, ns, q)
                items, meta = api.list(res, ns, q)
                return self.send_list(res, items, meta, q)
            if q.get("watch") in ("true", "1"):
                q["fieldSelector"] = ",".join(x for x in (q.get("fieldSelector"),
                                                          f"metadata.name={name}") if x)
                return self.watch(res, ns, q)
            if sub in ("binding", "eviction", "token"):
                raise ApiError(405, "MethodNotAllowed",
                               "the server does not allow this method on the requested resource")
            return self.send_obj(res, 200, api.get(res, ns, name), q)
        if m == "POST":
            body = self.read_body()
            if name is None:
                self.admit_create(res, ns, body)
                out = api.create(res, ns, body, dry)
                if res.name == "namespaces" and not dry and getattr(self.server, "ca_pem", None):
                    sa.ensure_namespace_objects(api, out["metadata"]["name"], self.server.ca_pem)
                return self.send_obj(res, 201, out, q)
            if sub == "token":
                node = authz.node_name(self.user)
                if node is not None and self.server.admission.get("NodeRestriction", True):
                    self.server.noderestriction.token_request(node, ns, name, body)
                return self.send_json(201, sa.token_request(api, self.server.issuer, ns, name,
                                                            body))
            if sub == "binding":
                node = ((body or {}).get("target") or {}).get("name")
                if not node:
                    raise reg.invalid(res, name, [("target.name", "Required value", None,
                                                   reg._NOVALUE)])
                api.bind(ns, name, node, dry)
                return self.send_json(201, success_status(201))
            if sub == "eviction":
                bname = ((body or {}).get("metadata") or {}).get("name")
                if bname and bname != name:
                    raise reg.bad_request("name in URL does not match name in Eviction object")
                opts = (body or {}).get("deleteOptions") or {}
                node = authz.node_name(self.user)
                if node is not None and self.server.admission.get("NodeRestriction", True):
                    self.server.noderestriction.pod_evict(node, ns, name)
                api.evict(ns, name, opts, dry or "All" in (opts.get("dryRun") or []))
                return self.send_json(201, success_status(201))
            raise ApiError(405, "MethodNotAllowed",
                           "the server does not allow this method on the requested resource")
        if m == "PUT":
            if name is None or sub in ("binding", "eviction", "token"):
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this "
                               "method on the requested resource")
            return self.send_obj(res, 200, api.replace(res, ns, name, sub, self.read_body(),
                                                       dry, self.admit_update(res, ns, name,
                                                                              sub, "update")),
                                 q)
        if m == "PATCH":
            if name is None or sub in ("binding", "eviction", "token"):
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this "
                               "method on the requested resource")
            ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            body = self.read_body()
            if ctype == "application/apply-patch+yaml":
                return self.apply(res, ns, name, sub, body, dry, q)
            if ctype not in ("application/json-patch+json", "application/merge-patch+json",
                             "application/strategic-merge-patch+json"):
                raise ApiError(415, "UnsupportedMediaType",
                               "the body of the request was in an unknown format - accepted "
                               "media types include: application/json-patch+json, "
                               "application/merge-patch+json, application/apply-patch+yaml, "
                               "application/strategic-merge-patch+json")
            return self.send_obj(res, 200, api.patch(
                res, ns, name, sub, ctype, body, dry,
                self.admit_update(res, ns, name, sub, "patch")), q)
        if m == "DELETE":
            if sub:
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this "
                               "method on the requested resource")
            body = self.read_body() or {}
            opts = dict(body) if isinstance(body, dict) else {}
            for k in ("gracePeriodSeconds", "propagationPolicy", "orphanDependents"):
                if k in q:
                    opts[k] = int(q[k]) if k == "gracePeriodSeconds" else q[k]
            dry = dry or "All" in (opts.get("dryRun") or [])
            if name is None:
                return self.delete_collection(res, ns, q, opts, dry)
            self.admit_delete(res, ns, name)
            out, code = api.delete(res, ns, name, opts, dry)
            return self.send_obj(res, code, out, q) if out.get("kind") != "Status" \
                else self.send_json(code, out)
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on "
                       "the requested resource")

    # ---- admission (ServiceAccount, NodeRestriction, the service IP allocator)

    def admit_create(self, res, ns, body):
        if not isinstance(body, dict):
            return
        srv = self.server
        if res.name == csr.RESOURCE.name:
            csr.prepare_create(body, self.user)
        adm = getattr(srv, "admission", None)
        if adm is None:
            return
        meta = body.get("metadata")
        if res.name == "pods" and isinstance(meta, dict) and meta.get("generateName") and \
                not meta.get("name"):
            # admission texts name the generated pod (`pods "web-x7k2q" is forbidden`)
            meta["name"] = meta["generateName"] + reg._gen_suffix()
        if res.name == "pods" and adm.get("ServiceAccount", True):
            sa.admit_pod(srv.api, ns, body)
        if res.name == "pods" and adm.get("Priority", True):
            priority.admit_pod(srv.api, body)
        if res.name == priority.RESOURCE.name and adm.get("Priority", True):
            priority.admit_class(srv.api, body)
        node = authz.node_name(self.user)
        if node is not None and adm.get("NodeRestriction", True):
            nr = srv.noderestriction
            name = (body.get("metadata") or {}).get("name") or ""
            if res.name == "pods":
                nr.pod_create(node, body)
            elif res.name == "nodes":
                nr.node_write(node, "create", name, body, None)
            elif res.name == "leases":
                nr.lease(node, "create", ns, name, body)
        if res.name == "services" and getattr(srv, "allocator", None):
            srv.allocator.assign(body)

    def admit_update(self, res, ns, name, sub, verb):
        """The check run on (old, new) inside the update's read-modify-write."""
        srv = self.server
        adm = getattr(srv, "admission", None)
        if adm is None:
            return None
        node = authz.node_name(self.user)
        nr = srv.noderestriction if node is not None and adm.get("NodeRestriction", True) \
            else None

        def check(old, new):
            if res.name == "services" and not sub:
                controllers.keep_cluster_ip(new, old)
            if res.name == csr.RESOURCE.name:
                csr.admit_update(getattr(srv, "authz", None), self.user, sub, old, new)
            if res.name == priority.RESOURCE.name and adm.get("Priority", True):
                priority.admit_class(srv.api, new, name)
            if nr is None:
                return
            if res.name == "pods" and sub == "status":
                nr.pod_status(node, old, new)
            elif res.name == "nodes":
                nr.node_write(node, verb, name, new, old)
            elif res.name == "leases":
                nr.lease(node, verb, ns, name, new)
        return check

    def admit_delete(self, res, ns, name):
        srv = self.server
        adm = getattr(srv, "admission", None)
        node = authz.node_name(self.user)
        if adm is None or node is None or not adm.get("NodeRestriction", True):
            return
        nr = srv.noderestriction
        if res.name == "pods":
            nr.pod_delete(node, ns, name)
        elif res.name == "nodes":
            nr.node_write(node, "delete", name, {}, None)
        elif res.name == "leases":
            nr.lease(node, "delete", ns, name, None)

    def apply(self, res, ns, name, sub, body, dry, q):
        """Server-side apply, approximated: create if absent, else a strategic
        merge of the applied configuration (no managedFields, no conflicts)."""
        api = self.server.api
        if not isinstance(body, dict):
            raise reg.bad_request("apply patches must be JSON-compatible YAML objects; this "
                                  "server accepts the JSON form only")
        try:
            api.get(res, ns, name)
        except ApiError as e:
            if e.code != 404 or sub:
                raise
            body.setdefault("metadata", {})["name"] = name
            self.admit_create(res, ns, body)
            return self.send_obj(res, 201, api.create(res, ns, body, dry), q)
        return self.send_obj(res, 200, api.patch(res, ns, name, sub,
                                                 "application/strategic-merge-patch+json",
                                                 body, dry,
                                                 self.admit_update(res, ns, name, sub,
                                                                   "patch")), q)

    def delete_collection(self, res, ns, q, opts, dry):
        api = self.server.api
        items, meta = api.list(res, ns, {k: v for k, v in q.items()
                                         if k in ("labelSelector", "fieldSelector")})
        out = []
        for o in items:
            try:
                r, _ = api.delete(res, ns or o["metadata"].get("namespace"),
                                  o["metadata"]["name"], opts, dry)
                if r.get("kind") != "Status":
                    out.append(r)
            except ApiError as e:
                if e.code != 404:
                    raise
        self.send_list(res, out, meta, q)

    def send_obj(self, res, code, obj, q):
        v = self.wants_table()
        if v:
            return self.send_json(code, tables.table(res, [obj], {"resourceVersion": obj[
                "metadata"].get("resourceVersion", "")}, q.get("includeObject", "Metadata")))
        obj["kind"], obj["apiVersion"] = res.kind, res.api_version
        self.send_json(code, obj)

    def send_list(self, res, items, meta, q):
        if self.wants_table():
            for o in items:
                o["kind"], o["apiVersion"] = res.kind, res.api_version
            return self.send_json(200, tables.table(res, items, meta,
                                                    q.get("includeObject", "Metadata")))
        for o in items:
            o.pop("kind", None)
            o.pop("apiVersion", None)
        self.send_json(200, {"kind": res.kind + "List", "apiVersion": res.api_version,
                             "metadata": meta, "items": items})

    # ---- watch

    def write_chunk(self, obj):
        data = json.dumps(obj, separators=(",", ":")).encode() + b"\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_chunks(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def client_gone(self):
        try:
            r, _, _ = select.select([self.request], [], [], 0)
            if not r:
                return False
            self.request.settimeout(0.01)
            try:
                return self.request.recv(1) == b""
            finally:
                self.request.settimeout(None)
        except (ssl.SSLWantReadError, socket.timeout, BlockingIOError):
            return False
        except OSError:
            return True

    def watch(self, res, ns, q):
        api, etcd = self.server.api, self.server.etcd
        lsel = reg.parse_label_selector(q.get("labelSelector", ""))
        fsel = reg.parse_field_selector(res, q.get("fieldSelector", ""))
        table_v = self.wants_table()
        include = q.get("includeObject", "Metadata")
        bookmarks = q.get("allowWatchBookmarks") == "true"
        initial_events = q.get("sendInitialEvents") == "true"
        timeout = int(q["timeoutSeconds"]) if q.get("timeoutSeconds") else \
            random.randint(1800, 3600)
        rv = q.get("resourceVersion", "")
        prefix = res.prefix(ns)

        def matches(o):
            return o is not None and reg.labels_match(
                lsel, (o.get("metadata") or {}).get("labels")) and reg.fields_match(fsel, o)

        initial = []
        if rv in ("", "0") or initial_events:
            items, meta = api.list(res, ns, {})
            start = int(meta["resourceVersion"])
            initial = [o for o in items if matches(o)]
        else:
            try:
                start = int(rv)
            except ValueError:
                raise bad_rv(rv)
        w = etcd.watch(prefix, start + 1)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.close_connection = True
        first = [True]

        def emit(typ, o):
            if typ in ("ADDED", "MODIFIED", "DELETED"):
                o["kind"], o["apiVersion"] = res.kind, res.api_version
                if table_v:
                    o = tables.table(res, [o], {"resourceVersion": o["metadata"].get(
                        "resourceVersion", "")}, include, headers=first[0])
                    first[0] = False
            self.write_chunk({"type": typ, "object": o})

        def bookmark(rev, annotations=None):
            meta = {"resourceVersion": str(rev)}
            if annotations:
                meta["annotations"] = annotations
            self.write_chunk({"type": "BOOKMARK", "object": {
                "kind": res.kind, "apiVersion": res.api_version, "metadata": meta}})

        try:
            for o in initial:
                emit("ADDED", o)
            last_rev = start
            if initial_events and bookmarks:
                bookmark(start, {"k8s.io/initial-events-end": "true"})
            deadline = time.monotonic() + timeout
            next_bookmark = time.monotonic() + BOOKMARK_INTERVAL
            while True:
                now_ = time.monotonic()
                if now_ >= deadline or self.server.stopping.is_set():
                    return
                try:
                    typ, a, b = w.events.get(timeout=min(0.5, deadline - now_))
                except Exception:  # queue.Empty
                    typ = None
                if typ is None:
                    if self.client_gone():
                        return
                elif typ == "ERROR":
                    if self.server.stopping.is_set():
                        # our own shutdown closed etcd under the watch: end
                        # it as kube-apiserver's WatchServer.HandleHTTP ends one
                        # when the server shuts down, its request's context
                        # ends or its watcher's channel closes: it returns,
                        # writing nothing (the response just ends), never an
                        # ERROR event (apiserver endpoints/handlers/watch.go)
                        return
                    if isinstance(a, store.Compacted):
                        msg = f"too old resource version: {start} ({a.compact_revision - 1})"
                        self.write_chunk({"type": "ERROR",
                                          "object": reg.expired(msg).status()})
                    else:
                        self.write_chunk({"type": "ERROR", "object": ApiError(
                            500, "InternalError", f"Internal error occurred: {a}").status()})
                    return
                elif typ == "CLOSED":
                    return
                elif typ == "PROGRESS":
                    last_rev = max(last_rev, a)
                else:
                    last_rev = a.mod_revision
                    self.relay(typ, a, b, matches, emit)
                if bookmarks and time.monotonic() >= next_bookmark:
                    bookmark(last_rev)
                    next_bookmark = time.monotonic() + BOOKMARK_INTERVAL
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            pass
        finally:
            w.close()
            try:
                self.end_chunks()
            except OSError:
                pass

    @staticmethod
    def relay(typ, kv, prev, matches, emit):
        """Turn one etcd event into the watch event a filtered watcher sees."""
        old = prev.obj() if prev is not None and prev.value is not None else None
        if typ == "DELETE":
            if matches(old):
                old["metadata"]["resourceVersion"] = str(kv.mod_revision)
                emit("DELETED", old)
            return
        new = kv.obj()
        now_m, was_m = matches(new), matches(old)
        if now_m and (old is None or not was_m):
            emit("ADDED", new)
        elif now_m:
            emit("MODIFIED", new)
        elif was_m:
            emit("DELETED", new)


    # ---- pods/log, exec, attach, portforward: proxied to the node's kubelet

    def proxy_kubelet(self, m, res, ns, name, sub, q):
        """As kube-apiserver does: find the pod's node, its InternalIP and
        kubelet port (status.daemonEndpoints), and forward the request there
        over TLS with the kubelet client certificate. The kubelet's serving
        certificate is not verified (kube-apiserver without
        --kubelet-certificate-authority). A WebSocket/SPDY upgrade becomes a
        raw byte tunnel after the kubelet's answer."""
        upgrade = "upgrade" in (self.headers.get("Connection") or "").lower()
        if sub == "log" and m not in ("GET", "HEAD"):
            raise ApiError(405, "MethodNotAllowed",
                           "the server does not allow this method on the requested resource")
        if sub != "log" and m not in ("GET", "POST"):
            raise ApiError(405, "MethodNotAllowed",
                           "the server does not allow this method on the requested resource")
        api = self.server.api
        pod = api.get(res, ns, name)
        spec = pod.get("spec") or {}
        node_name = spec.get("nodeName")
        if not node_name:
            raise reg.bad_request(f"pod {name} does not have a host assigned")
        query = [(k, v) for k, v in urllib.parse.parse_qsl(
            urllib.parse.urlsplit(self.path).query, keep_blank_values=True) if k != "container"]
        container = q.get("container", "")
        names = [c.get("name") for c in (spec.get("containers") or [])]
        all_names = names + [c.get("name") for c in (spec.get("initContainers") or []) +
                             (spec.get("ephemeralContainers") or [])]
        if sub != "portforward":
            if not container:
                if len(names) != 1:
                    raise reg.bad_request(
                        f"a container name must be specified for pod {name}, choose one of: "
                        f"[{' '.join(names)}]")
                container = names[0]
            elif container not in all_names:
                raise reg.bad_request(f"container {container} is not valid for pod {name}")
        node = api.get(reg.find_resource("", "v1", "nodes"), None, node_name)
        st = node.get("status") or {}
        host = next((a.get("address") for a in st.get("addresses") or []
                     if a.get("type") == "InternalIP"), None)
        port = ((st.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port")
        if not host or not port:
            raise ApiError(503, "ServiceUnavailable",
                           f"node {node_name} has no InternalIP or kubelet port")
        path = {"log": f"/containerLogs/{ns}/{name}/{container}",
                "exec": f"/exec/{ns}/{name}/{container}",
                "attach": f"/attach/{ns}/{name}/{container}",
                "portforward": f"/portForward/{ns}/{name}"}[sub]
        opts = None
        if sub in ("exec", "attach"):
            # As the apiserver's streamParams: the options decoded from the
            # query, booleans sent as "1", keys sorted (url.Values.Encode).
            opts = {k: query_bool(self.path, k) for k in ("stdin", "stdout", "stderr", "tty")}
            query = [("command", c) for c in query_list(self.path, "command")] if \
                sub == "exec" else []
            query += [(k, "1") for k in ("stdin", "stdout", "stderr", "tty") if opts[k]]
            query.sort(key=lambda kv: kv[0])
        qs = urllib.parse.urlencode(query)   # as url.Values.Encode: QueryEscape, space as +
        target = urllib.parse.quote(path) + ("?" + qs if qs else "")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.load_cert_chain(os.path.join(self.server.data, "kubelet-client.crt"),
                            os.path.join(self.server.data, "kubelet-client.key"))
        if upgrade and streams.is_websocket(self.headers):
            protos = streams.ws.subprotocols(self.headers.get("Sec-WebSocket-Protocol"))
            if sub in ("exec", "attach") and streams.V5 in protos and \
                    not self.server.websockets_to_kubelet:
                self.close_connection = True
                return streams.translate(self, ctx, host, port, target, opts)
            if sub == "portforward" and streams.PORTFORWARD_TUNNEL in protos:
                self.close_connection = True
                return streams.tunnel(self, ctx, host, port, target)
        try:
            raw = socket.create_connection((host, int(port)), timeout=10)
            up = ctx.wrap_socket(raw)
        except OSError as e:
            raise ApiError(500, "InternalError",
                           "error trying to reach service: " +
                           streams.dial_error(host, port, e))
        try:
            hdrs = [f"{m} {target} HTTP/1.1", f"Host: {host}:{port}"]
            for k, v in self.headers.items():
                if k.lower() in ("host", "authorization", "content-length",
                                 "transfer-encoding", "accept-encoding"):
                    continue
                if not upgrade and k.lower() in ("connection", "upgrade"):
                    continue
                hdrs.append(f"{k}: {v}")
            if not upgrade:
                hdrs.append("Connection: close")
            up.sendall(("\r\n".join(hdrs) + "\r\n\r\n").encode())
            self.relay_kubelet(up, upgrade)
        finally:
            try:
                up.close()
            except OSError:
                pass
        self.close_connection = True

    def relay_kubelet(self, up, upgrade):
        """The kubelet's status line and headers, then its bytes both ways
        until either side closes: the body of a log (streamed as it comes,
        kubectl logs -f) or, after a 101, the WebSocket/SPDY tunnel."""
        head = bytearray()
        while b"\r\n\r\n" not in head:
            chunk = up.recv(65536)
            if not chunk:
                raise ApiError(500, "InternalError", "the kubelet closed the connection")
            head += chunk
            if len(head) > 1 << 20:
                raise ApiError(500, "InternalError", "the kubelet's answer has no end of headers")
        head, _, rest = bytes(head).partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        code = int(parts[1])
        reason = parts[2].strip() if len(parts) > 2 else ""
        self.send_response_only(code, reason)
        for line in lines[1:]:
            k, _, v = line.partition(":")
            # the body is relayed as it comes until the kubelet closes
            # (Content-Length/Transfer-Encoding stay: the body's bytes go
            # through unchanged, chunk framing included)
            if code != 101 and k.strip().lower() in ("connection", "keep-alive"):
                continue
            self.send_header(k.strip(), v.strip())
        if code != 101:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()
        if rest:
            self.connection.sendall(rest)
        self.pump(self.connection, up)

    @staticmethod
    def pump(client, up):
        """Copies bytes both ways until either side closes (a client that
        goes away mid-stream closes the kubelet's side too, as
        kube-apiserver does), never blocking one side on the other."""
        streams.pump_raw(client, up)


KUBELET_SUBRESOURCES = ("log", "exec", "attach", "portforward")


class H2Handler(h2serve.H2Mixin, Handler):
    """A request on an HTTP/2 stream (h2serve.py)."""
    MAX_BODY, TOO_LARGE, BodyError, ApiError = MAX_BODY, TOO_LARGE, _BodyError, ApiError


h2serve.HANDLER_CLASS = H2Handler


def query_list(path, key):
    return [v for k, v in urllib.parse.parse_qsl(urllib.parse.urlsplit(path).query,
                                                 keep_blank_values=True) if k == key]


def query_bool(path, key):
    """The apiserver's query conversion of a bool: absent is false, "0" and
    "false" (any case) are false, anything else is true."""
    vals = query_list(path, key)
    return bool(vals) and vals[0] != "0" and vals[0].lower() != "false"


def sar_decide(srv, user, spec):
    """A (Self)SubjectAccessReview, answered by the same Node,RBAC chain as
    the requests themselves."""
    ra = spec.get("resourceAttributes")
    nra = spec.get("nonResourceAttributes")
    if isinstance(ra, dict):
        a = authz.Attrs(user, ra.get("verb") or "", ra.get("resource") or "",
                        ra.get("group") or "", ra.get("namespace") or "", ra.get("name") or "",
                        ra.get("subresource") or "")
    elif isinstance(nra, dict):
        a = authz.Attrs(user, nra.get("verb") or "", path=nra.get("path") or "",
                        is_resource=False)
    else:
        return False, ""
    az = getattr(srv, "authz", None)
    if az is None:
        return True, ""
    return az.authorize(a)


def token_user(srv, token, audiences=None):
    """(User or None, TokenReview error, audiences) of a bearer token: the
    static tokens of the data directory, then service-account JWTs."""
    found = srv.tokens.get(token)
    if found:
        name, groups = found
        return (authz.User(name, authz.with_authenticated(name, groups)), "",
                list(audiences or sa.API_AUDIENCES))
    if getattr(srv, "bootstrap_tokens", False):
        user, why = bootstraptoken.authenticate(srv.api, token)
        if user:
            return user, "", list(audiences or sa.API_AUDIENCES)
        if why:
            if srv.verbose:
                sys.stderr.write(f"apiserver: {why}\n")
            return None, "[invalid bearer token, token lookup failed]", []
    issuer = getattr(srv, "issuer", None)
    if issuer is not None and token:
        try:
            got = sa.authenticate(srv.api, issuer, token, audiences)
        except sa.TokenError as e:
            return None, f"[invalid bearer token, {e}]", []
        except (ApiError, store.EtcdError) as e:
            return None, f"[invalid bearer token, {e}]", []
        if got:
            return got[0], "", got[1]
    return None, "[invalid bearer token, token lookup failed]", []


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128
    websockets_to_kubelet = False
    test_connections = False
    h2_max_streams = 0

    def __init__(self, *a, **kw):
        self.init_connections()
        super().__init__(*a, **kw)

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], (OSError, ssl.SSLError)):
            return  # a client that went away or failed its TLS handshake
        super().handle_error(request, client_address)

    def init_connections(self):
        self.h2_lock = threading.Lock()
        self.h2_conns = set()
        self.conn_records = []
        self.conn_seq = 0

    def record_connection(self, addr, alpn):
        """A connection's record for GET /debug/connections (the last 1000
        kept): its ALPN protocol, the users seen on it, its requests."""
        with self.h2_lock:
            self.conn_seq += 1
            rec = {"id": self.conn_seq, "peer": f"{addr[0]}:{addr[1]}", "alpn": alpn or "",
                   "protocol": "HTTP/2.0" if alpn == "h2" else "HTTP/1.1",
                   "opened": time.time(), "closed": None, "users": [], "requests": 0,
                   "active": 0, "maxActive": 0}
            self.conn_records.append(rec)
            del self.conn_records[:-1000]
        return rec


# ------------------------------------------------------------------ binder


def binder(api, stopping):
    """Bind pending pods to fitting nodes (the --bind scheduler)."""
    pods = reg.find_resource("", "v1", "pods")
    nodes = reg.find_resource("", "v1", "nodes")
    while not stopping.wait(0.5):
        try:
            pending, _ = api.list(pods, None, {"fieldSelector": "spec.nodeName="})
            pending = [p for p in pending if not p["metadata"].get("deletionTimestamp") and
                       (p.get("spec") or {}).get("schedulerName", "default-scheduler")
                       == "default-scheduler"]
            if not pending:
                continue
            all_nodes, _ = api.list(nodes, None, {})
            bound, _ = api.list(pods, None, {})
            load = {}
            for p in bound:
                n = (p.get("spec") or {}).get("nodeName")
                if n:
                    load[n] = load.get(n, 0) + 1
            for p in pending:
                fit = [n for n in all_nodes if reg.node_fits(p, n)]
                if not fit:
                    continue
                target = min(fit, key=lambda n: (load.get(n["metadata"]["name"], 0),
                                                 n["metadata"]["name"]))
                try:
                    api.bind(p["metadata"]["namespace"], p["metadata"]["name"],
                             target["metadata"]["name"])
                    load[target["metadata"]["name"]] = load.get(target["metadata"]["name"],
                                                                0) + 1
                except ApiError:
                    pass
        except Exception as e:  # etcd hiccup: retry on next tick
            sys.stderr.write(f"apiserver: binder: {e}\n")


def namespace_controller(api, stopping):
    """Empty terminating namespaces (pods are deleted gracefully, so a bound
    pod waits for its kubelet), then remove them."""
    nsr = reg.find_resource("", "v1", "namespaces")
    while not stopping.wait(1.0):
        try:
            for ns in api.list(nsr, None, {})[0]:
                meta = ns["metadata"]
                if not meta.get("deletionTimestamp"):
                    continue
                left = 0
                for r in reg.RESOURCES:
                    if not r.namespaced:
                        continue
                    for o in api.list(r, meta["name"], {})[0]:
                        left += 1
                        if not o["metadata"].get("deletionTimestamp"):
                            try:
                                api.delete(r, meta["name"], o["metadata"]["name"], {})
                            except ApiError:
                                pass
                if left == 0:
                    api.etcd.delete(nsr.key(None, meta["name"]),
                                    int(meta["resourceVersion"]))
        except Exception as e:  # etcd hiccup: retry on next tick
            sys.stderr.write(f"apiserver: namespace controller: {e}\n")


# ------------------------------------------------------------------ startup


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def _pdeathsig():
    """Run in the etcd child: die with SIGTERM if this server dies."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


HOSTILE_FILL_MAX = 64 << 20


def fill_hostile(obj, fills):
    """The "fill" of POST /debug/hostile-objects: objects larger than a
    request body may be (3 MiB) are grown here. Each fill is {"path":
    "spec.containers.0.env", "count": N, "item": X}: N copies of X appended
    to the list at path (made when absent), where in every string of X
    "{i}" is the copy's index and "{x*N}" N bytes of 'x'. At most 64 MiB
    in all (README.md, "Hostile objects")."""
    total = 0
    for f in fills:
        node = obj
        keys = f["path"].split(".")
        for k in keys[:-1]:
            node = node[int(k)] if isinstance(node, list) else node[k]
        lst = node.setdefault(keys[-1], [])
        if not isinstance(lst, list):
            raise ValueError(f"{f['path']} is not a list")
        item = json.dumps(f["item"])
        count = int(f["count"])
        for i in range(count):
            text = re.sub(r"\{x\*(\d+)\}", lambda m: "x" * int(m.group(1)),
                          item.replace("{i}", str(i)))
            total += len(text)
            if total > HOSTILE_FILL_MAX:
                raise ValueError(f"more than {HOSTILE_FILL_MAX} bytes")
            lst.append(json.loads(text))


def start_etcd(data, max_request_bytes=0):
    for attempt in range(5):
        cport, pport = free_port(), free_port()
        log = open(os.path.join(data, "etcd.log"), "ab")
        curl, purl = f"http://127.0.0.1:{cport}", f"http://127.0.0.1:{pport}"
        proc = subprocess.Popen(
            ["/usr/bin/etcd", "--name", "default", "--data-dir", os.path.join(data, "etcd"),
             "--listen-client-urls", curl, "--advertise-client-urls", curl,
             "--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl,
             "--initial-cluster", f"default={purl}", "--log-level", "warn",
             "--experimental-watch-progress-notify-interval", "5s"] +
            (["--max-request-bytes", str(max_request_bytes)] if max_request_bytes else []),
            stdout=log, stderr=log, stdin=subprocess.DEVNULL, preexec_fn=_pdeathsig,
            close_fds=True)
        log.close()
        etcd = store.Etcd("127.0.0.1", cport)
        for _ in range(100):
            if proc.poll() is not None:
                break
            try:
                etcd.revision()
                return proc, etcd, cport
            except (OSError, store.EtcdError, Exception):
                time.sleep(0.1)
        proc.terminate()
        proc.wait()
    raise SystemExit("apiserver: etcd did not start; see " + os.path.join(data, "etcd.log"))


def seed(api, ca_pem=None):
    nsr = reg.find_resource("", "v1", "namespaces")
    for n in ("default", "kube-system", "kube-public", "kube-node-lease"):
        try:
            api.create(nsr, None, {"metadata": {"name": n}})
        except ApiError as e:
            if e.code != 409:
                raise
        if ca_pem:
            sa.ensure_namespace_objects(api, n, ca_pem)
    priority.ensure_system_classes(api)


def kubeconfig(path, server, ca, user, creds):
    lines = ["apiVersion: v1", "kind: Config", "clusters:", "- name: test", "  cluster:",
             f"    server: {server}", f"    certificate-authority: {ca}", "contexts:",
             "- name: test", "  context:", "    cluster: test", f"    user: {user}",
             "current-context: test", "users:", f"- name: {user}", "  user:"]
    lines += [f"    {k}: {v}" for k, v in creds.items()]
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def load_or_make_token(path):
    """The bearer token kept in path, or a new one written there: tokens
    survive a restart on the same --data dir, so kubeconfigs and token files
    handed out earlier (node.kubeconfig) stay valid."""
    try:
        with open(path) as f:
            tok = f.read().strip()
        if len(tok) >= 16 and all(c in "0123456789abcdef" for c in tok):
            return tok
    except FileNotFoundError:
        pass
    tok = secrets.token_hex(16)
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(tok + "\n")
    os.replace(tmp, path)
    return tok


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", required=True)
    ap.add_argument("--bind", action="store_true", help="bind pending pods to nodes")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--node-name", default=os.uname().nodename.lower(),
                    help="node identity of node.kubeconfig and node.crt")
    ap.add_argument("--websockets-to-kubelet", action="store_true",
                    default=os.environ.get("CUBELET_STANDIN_WEBSOCKETS_TO_KUBELET", "") not in
                    ("", "0", "false"),
                    help="relay exec/attach WebSockets (v5.channel.k8s.io) to the kubelet "
                    "unchanged instead of translating them to SPDY")
    ap.add_argument("--stats-only-user", action="append",
                    help="a user SubjectAccessReview allows only nodes/stats (repeatable; "
                    "default stats-reader)")
    ap.add_argument("--disable-admission-plugins", default=os.environ.get(
                    "CUBELET_STANDIN_DISABLE_ADMISSION_PLUGINS", ""),
                    help="comma-separated admission plugins to turn off (ServiceAccount, "
                    "NodeRestriction); default from $CUBELET_STANDIN_DISABLE_ADMISSION_PLUGINS")
    ap.add_argument("--authorization-mode", default=os.environ.get(
                    "CUBELET_STANDIN_AUTHORIZATION_MODE", "Node,RBAC"),
                    help="Node,RBAC (default) or AlwaysAllow")
    ap.add_argument("--service-cluster-ip-range", default="10.96.0.0/12")
    ap.add_argument("--serve-hostile-objects", action="store_true",
                    default=os.environ.get("CUBELET_STANDIN_SERVE_HOSTILE_OBJECTS", "") not in
                    ("", "0", "false"),
                    help="TEST ONLY: POST /debug/hostile-objects stores pods unvalidated")
    ap.add_argument("--test-clock", action="store_true",
                    default=os.environ.get("CUBELET_STANDIN_TEST_CLOCK", "") not in
                    ("", "0", "false"),
                    help="TEST ONLY: PUT /debug/clock sets the stand-in's wall-clock offset")
    ap.add_argument("--cluster-signing-duration", default=os.environ.get(
                    "CUBELET_STANDIN_CLUSTER_SIGNING_DURATION", "8760h0m0s"),
                    help="kube-controller-manager's: the longest certificate its signer "
                    "issues (Go duration; default one year)")
    ap.add_argument("--enable-bootstrap-token-auth", default=os.environ.get(
                    "CUBELET_STANDIN_ENABLE_BOOTSTRAP_TOKEN_AUTH", "true"),
                    help="authenticate bootstrap tokens (true, as kubeadm sets it, or false)")
    ap.add_argument("--disable-http2-serving", action="store_true",
                    default=os.environ.get("CUBELET_STANDIN_DISABLE_HTTP2_SERVING", "") not in
                    ("", "0", "false"),
                    help="serve HTTP/1.1 only (ALPN offers only http/1.1), as kube-apiserver's "
                    "flag")
    ap.add_argument("--http2-max-streams-per-connection", type=int, default=int(
                    os.environ.get("CUBELET_STANDIN_HTTP2_MAX_STREAMS_PER_CONNECTION", "0")),
                    help="SETTINGS_MAX_CONCURRENT_STREAMS (0: kube-apiserver's 100)")
    ap.add_argument("--test-connections", action="store_true",
                    default=os.environ.get("CUBELET_STANDIN_TEST_CONNECTIONS", "") not in
                    ("", "0", "false"),
                    help="TEST ONLY: GET /debug/connections and POST /debug/goaway")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    disabled = {p.strip() for p in args.disable_admission_plugins.split(",") if p.strip()}
    unknown = disabled - {"ServiceAccount", "NodeRestriction", "Priority"}
    if unknown:
        raise SystemExit(f"apiserver: unknown admission plugins: {', '.join(sorted(unknown))}")
    if args.authorization_mode not in ("Node,RBAC", "RBAC,Node", "AlwaysAllow"):
        raise SystemExit(f"apiserver: unsupported --authorization-mode "
                         f"{args.authorization_mode!r} (Node,RBAC or AlwaysAllow)")
    try:
        signing_ttl = csr.parse_go_duration(args.cluster_signing_duration)
    except ValueError as e:
        raise SystemExit(f"apiserver: --cluster-signing-duration: {e}")
    data = os.path.abspath(args.data)
    os.makedirs(data, exist_ok=True)
    subprocess.run(["/bin/bash", os.path.join(HERE, "certs.sh"), data, args.node_name],
                   check=True)

    # hostile objects may be larger than etcd's 1.5 MiB default (fill_hostile)
    proc, etcd, cport = start_etcd(data, 80 << 20 if args.serve_hostile_objects else 0)
    stopping = threading.Event()

    def stop(*_):
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        api = Api(etcd)
        with open(os.path.join(data, "ca.crt")) as f:
            ca_pem = f.read()
        seed(api, ca_pem)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(data, "server.crt"), os.path.join(data, "server.key"))
        ctx.load_verify_locations(os.path.join(data, "ca.crt"))
        ctx.verify_mode = ssl.CERT_OPTIONAL
        # as Go's server for kube-apiserver: h2 preferred, http/1.1 still offered
        ctx.set_alpn_protocols(["http/1.1"] if args.disable_http2_serving else
                               ["h2", "http/1.1"])
        srv = Server(("127.0.0.1", args.port), Handler)
        srv.h2_max_streams = max(0, args.http2_max_streams_per_connection)
        srv.test_connections = args.test_connections
        port = srv.server_address[1]
        srv.ssl_ctx, srv.api, srv.etcd, srv.stopping = ctx, api, etcd, stopping
        srv.verbose = args.verbose
        srv.websockets_to_kubelet = args.websockets_to_kubelet
        srv.serve_hostile = args.serve_hostile_objects
        srv.test_clock = args.test_clock
        srv.hostile_keys = []
        srv.data = data
        srv.address = f"127.0.0.1:{port}"
        admin_token = load_or_make_token(os.path.join(data, "admin.token"))
        node_token = load_or_make_token(os.path.join(data, "node.token"))
        stats_token = load_or_make_token(os.path.join(data, "stats-reader.token"))
        srv.tokens = {admin_token: ("kubernetes-admin", ["system:masters"]),
                      node_token: (f"system:node:{args.node_name}", ["system:nodes"]),
                      stats_token: ("stats-reader", ["test:stats-readers"])}
        srv.stats_only_users = set(args.stats_only_user or ["stats-reader"])
        srv.admission = {"ServiceAccount": "ServiceAccount" not in disabled,
                         "NodeRestriction": "NodeRestriction" not in disabled,
                         "Priority": "Priority" not in disabled}
        srv.authz = None if args.authorization_mode == "AlwaysAllow" else \
            authz.Authorizer(api, srv.stats_only_users)
        srv.noderestriction = authz.NodeRestriction(api)
        srv.issuer = sa.Issuer(data)
        srv.ca_pem = ca_pem
        srv.allocator = controllers.Allocator(api, args.service_cluster_ip_range)
        srv.reviews = {"tokenreviews": 0, "subjectaccessreviews": 0}
        srv.reviews_lock = threading.Lock()
        srv.review_delay = 0.0
        srv.bootstrap_tokens = args.enable_bootstrap_token_auth.lower() == "true"
        url = f"https://127.0.0.1:{port}"
        ca = os.path.join(data, "ca.crt")
        kubeconfig(os.path.join(data, "admin.kubeconfig"), url, ca, "admin",
                   {"client-certificate": os.path.join(data, "admin.crt"),
                    "client-key": os.path.join(data, "admin.key")})
        kubeconfig(os.path.join(data, "node.kubeconfig"), url, ca, f"system:node:"
                   f"{args.node_name}", {"token": node_token})
        with open(os.path.join(data, "etcd.endpoint"), "w") as f:
            f.write(f"http://127.0.0.1:{cport}\n")
        with open(os.path.join(data, "etcd.pid"), "w") as f:
            f.write(f"{proc.pid}\n")
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.2},
                         daemon=True).start()
        threading.Thread(target=namespace_controller, args=(api, stopping),
                         daemon=True).start()
        threading.Thread(target=sa.namespace_objects_controller, args=(api, ca_pem, stopping),
                         daemon=True).start()
        threading.Thread(target=controllers.services_controller,
                         args=(api, srv.allocator, port, stopping), daemon=True).start()
        threading.Thread(target=csr.controllers, args=(api, srv.authz, csr.CA(data),
                                                       signing_ttl, stopping),
                         daemon=True).start()
        threading.Thread(target=storage.binder, args=(api, stopping), daemon=True).start()
        if args.bind:
            threading.Thread(target=binder, args=(api, stopping), daemon=True).start()
        print(f"ready {url}", flush=True)
        while not stopping.wait(1):
            if proc.poll() is not None:
                sys.stderr.write("apiserver: etcd exited\n")
                stopping.set()  # the watches and controllers stop as on SIGTERM
                break
        srv.shutdown()
        # as Go's http.Server.Shutdown: GOAWAY on each HTTP/2 connection
        h2serve.shutdown_all(srv, 2.0)
        srv.server_close()
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


if __name__ == "__main__":
    main()
