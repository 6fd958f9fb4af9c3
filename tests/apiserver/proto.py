"""Decoder for the Kubernetes protobuf request bodies that kubectl's typed
clients send (`kubectl create namespace|configmap|secret|serviceaccount|token|
role|rolebinding|clusterrole|clusterrolebinding`, `kubectl auth can-i`,
typed deletes and evictions): the "k8s\\0" envelope (runtime.Unknown) around
the object's protobuf, decoded by field number into the JSON form. Only the
kinds below are known; anything else answers 415 like an unsupported media
type."""

import base64
import datetime

# Field tables: number -> (json name, type, sub-table for messages).
TIME = "time"
TYPE_META = {1: ("apiVersion", "string", None), 2: ("kind", "string", None)}
UNKNOWN = {1: ("typeMeta", "msg", TYPE_META), 2: ("raw", "raw", None),
           3: ("contentEncoding", "string", None), 4: ("contentType", "string", None)}
OWNER_REF = {1: ("kind", "string", None), 3: ("name", "string", None),
             4: ("uid", "string", None), 5: ("apiVersion", "string", None),
             6: ("controller", "bool", None), 7: ("blockOwnerDeletion", "bool", None)}
OBJECT_META = {
    1: ("name", "string", None), 2: ("generateName", "string", None),
    3: ("namespace", "string", None), 4: ("selfLink", "string", None),
    5: ("uid", "string", None), 6: ("resourceVersion", "string", None),
    7: ("generation", "int", None), 8: ("creationTimestamp", TIME, None),
    9: ("deletionTimestamp", TIME, None), 10: ("deletionGracePeriodSeconds", "int", None),
    11: ("labels", "map_ss", None), 12: ("annotations", "map_ss", None),
    13: ("ownerReferences", "rep_msg", OWNER_REF), 14: ("finalizers", "rep_string", None),
}
PRECONDITIONS = {1: ("uid", "string", None), 2: ("resourceVersion", "string", None)}
DELETE_OPTIONS = {1: ("gracePeriodSeconds", "int", None),
                  2: ("preconditions", "msg", PRECONDITIONS),
                  3: ("orphanDependents", "bool", None), 4: ("propagationPolicy", "string", None),
                  5: ("dryRun", "rep_string", None)}
LOCAL_REF = {1: ("name", "string", None)}
OBJECT_REF = {1: ("kind", "string", None), 2: ("namespace", "string", None),
              3: ("name", "string", None), 4: ("uid", "string", None),
              5: ("apiVersion", "string", None), 6: ("resourceVersion", "string", None),
              7: ("fieldPath", "string", None)}
RESOURCE_ATTRS = {1: ("namespace", "string", None), 2: ("verb", "string", None),
                  3: ("group", "string", None), 4: ("version", "string", None),
                  5: ("resource", "string", None), 6: ("subresource", "string", None),
                  7: ("name", "string", None)}
POLICY_RULE = {1: ("verbs", "rep_string", None), 2: ("apiGroups", "rep_string", None),
               3: ("resources", "rep_string", None), 4: ("resourceNames", "rep_string", None),
               5: ("nonResourceURLs", "rep_string", None)}
BINDING = {1: ("metadata", "msg", OBJECT_META),
           2: ("subjects", "rep_msg", {1: ("kind", "string", None),
                                       2: ("apiGroup", "string", None),
                                       3: ("name", "string", None),
                                       4: ("namespace", "string", None)}),
           3: ("roleRef", "msg", {1: ("apiGroup", "string", None), 2: ("kind", "string", None),
                                  3: ("name", "string", None)})}
KINDS = {
    "Namespace": {1: ("metadata", "msg", OBJECT_META),
                  2: ("spec", "msg", {1: ("finalizers", "rep_string", None)}),
                  3: ("status", "msg", {1: ("phase", "string", None)})},
    "ConfigMap": {1: ("metadata", "msg", OBJECT_META), 2: ("data", "map_ss", None),
                  3: ("binaryData", "map_sb", None), 4: ("immutable", "bool", None)},
    "Secret": {1: ("metadata", "msg", OBJECT_META), 2: ("data", "map_sb", None),
               3: ("type", "string", None), 4: ("stringData", "map_ss", None),
               5: ("immutable", "bool", None)},
    "ServiceAccount": {1: ("metadata", "msg", OBJECT_META),
                       2: ("secrets", "rep_msg", OBJECT_REF),
                       3: ("imagePullSecrets", "rep_msg", LOCAL_REF),
                       4: ("automountServiceAccountToken", "bool", None)},
    "Eviction": {1: ("metadata", "msg", OBJECT_META),
                 2: ("deleteOptions", "msg", DELETE_OPTIONS)},
    "DeleteOptions": DELETE_OPTIONS,
    # kubectl create token
    "TokenRequest": {1: ("metadata", "msg", OBJECT_META), 2: ("spec", "msg", {
        1: ("audiences", "rep_string", None), 4: ("expirationSeconds", "int", None),
        3: ("boundObjectRef", "msg", {1: ("kind", "string", None),
                                      2: ("apiVersion", "string", None),
                                      3: ("name", "string", None),
                                      4: ("uid", "string", None)})})},
    # kubectl create role|clusterrole|rolebinding|clusterrolebinding
    "Role": {1: ("metadata", "msg", OBJECT_META), 2: ("rules", "rep_msg", POLICY_RULE)},
    "ClusterRole": {1: ("metadata", "msg", OBJECT_META), 2: ("rules", "rep_msg", POLICY_RULE)},
    "RoleBinding": BINDING,
    "ClusterRoleBinding": BINDING,
    # kubectl create service
    "Service": {1: ("metadata", "msg", OBJECT_META), 2: ("spec", "msg", {
        1: ("ports", "rep_msg", {1: ("name", "string", None), 2: ("protocol", "string", None),
                                 3: ("port", "int", None), 4: ("targetPort", "intorstr", None),
                                 5: ("nodePort", "int", None),
                                 6: ("appProtocol", "string", None)}),
        2: ("selector", "map_ss", None), 3: ("clusterIP", "string", None),
        4: ("type", "string", None), 5: ("externalIPs", "rep_string", None),
        7: ("sessionAffinity", "string", None), 10: ("externalName", "string", None),
        18: ("clusterIPs", "rep_string", None)})},
    # kubectl certificate approve|deny, kubectl create -f csr.yaml
    "CertificateSigningRequest": {1: ("metadata", "msg", OBJECT_META), 2: ("spec", "msg", {
        1: ("request", "bytes", None), 7: ("signerName", "string", None),
        8: ("expirationSeconds", "int", None), 5: ("usages", "rep_string", None),
        2: ("username", "string", None), 3: ("uid", "string", None),
        4: ("groups", "rep_string", None), 6: ("extra", "map_sextra", None)}),
        3: ("status", "msg", {
            1: ("conditions", "rep_msg", {1: ("type", "string", None),
                                          6: ("status", "string", None),
                                          2: ("reason", "string", None),
                                          3: ("message", "string", None),
                                          4: ("lastUpdateTime", TIME, None),
                                          5: ("lastTransitionTime", TIME, None)}),
            2: ("certificate", "bytes", None)})},
    # kubectl auth whoami
    "SelfSubjectReview": {1: ("metadata", "msg", OBJECT_META)},
    # kubectl auth can-i
    "SelfSubjectAccessReview": {1: ("metadata", "msg", OBJECT_META), 2: ("spec", "msg", {
        1: ("resourceAttributes", "msg", RESOURCE_ATTRS),
        2: ("nonResourceAttributes", "msg", {1: ("path", "string", None),
                                             2: ("verb", "string", None)})})},
}


class ProtoError(Exception):
    pass


def _varint(buf, i):
    out, shift = 0, 0
    while True:
        if i >= len(buf):
            raise ProtoError("truncated varint")
        b = buf[i]
        i += 1
        out |= (b & 0x7F) << shift
        if not b & 0x80:
            return out, i
        shift += 7


def _fields(buf):
    """Yield (number, wire type, value) of a protobuf message."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(buf, i)
        elif wt == 2:
            n, i = _varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ProtoError(f"unsupported wire type {wt}")
        yield num, wt, v


def _int(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def _time(buf):
    secs = 0
    for num, _, v in _fields(buf):
        if num == 1:
            secs = _int(v)
    if secs == 0:
        return None
    t = datetime.datetime.fromtimestamp(secs, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


# Pointer fields: gogo-protobuf writes them only when set, so a zero value is
# meaningful. Every other scalar is always written and, as in JSON's
# omitempty, dropped when zero.
POINTERS = {"gracePeriodSeconds", "deletionGracePeriodSeconds", "immutable", "controller",
            "blockOwnerDeletion", "orphanDependents", "automountServiceAccountToken",
            "expirationSeconds"}


def decode_message(buf, table):
    out = {}
    for num, _, v in _fields(buf):
        if num not in table:
            continue  # fields this server does not model
        name, typ, sub = table[num]
        if typ in ("string", "int", "bool") and not v and name not in POINTERS:
            continue
        if typ == TIME and _time(v) is None:
            continue
        if typ == "string":
            out[name] = bytes(v).decode()
        elif typ == "raw":
            out[name] = bytes(v)
        elif typ == "bytes":
            if v:
                out[name] = base64.b64encode(bytes(v)).decode()
        elif typ == "map_sextra":  # map<string, ExtraValue{repeated string items = 1}>
            k, items = "", []
            for n2, _, v2 in _fields(v):
                if n2 == 1:
                    k = bytes(v2).decode()
                elif n2 == 2:
                    items = [bytes(v3).decode() for n3, _, v3 in _fields(v2) if n3 == 1]
            out.setdefault(name, {})[k] = items
        elif typ == "intorstr":  # intstr.IntOrString {type, intVal, strVal}
            f = {n2: v2 for n2, _, v2 in _fields(v)}
            out[name] = bytes(f.get(3, b"")).decode() if f.get(1) == 1 else _int(f.get(2, 0))
        elif typ == "int":
            out[name] = _int(v)
        elif typ == "bool":
            out[name] = bool(v)
        elif typ == TIME:
            out[name] = _time(v)
        elif typ == "msg":
            out[name] = decode_message(v, sub)
        elif typ == "rep_string":
            out.setdefault(name, []).append(bytes(v).decode())
        elif typ == "rep_msg":
            out.setdefault(name, []).append(decode_message(v, sub))
        elif typ in ("map_ss", "map_sb"):
            k, val = "", b""
            for n2, _, v2 in _fields(v):
                if n2 == 1:
                    k = bytes(v2).decode()
                elif n2 == 2:
                    val = bytes(v2)
            out.setdefault(name, {})[k] = val.decode() if typ == "map_ss" else \
                base64.b64encode(val).decode()
    return out


def decode(body):
    """The JSON form of a k8s protobuf body."""
    if not body.startswith(b"k8s\0"):
        raise ProtoError("missing the k8s protobuf envelope")
    env = decode_message(body[4:], UNKNOWN)
    tm = env.get("typeMeta", {})
    kind = tm.get("kind", "")
    if kind not in KINDS:
        raise ProtoError(f"kind {kind!r} is not supported in protobuf by this server")
    obj = decode_message(env.get("raw", b""), KINDS[kind])
    obj["kind"] = kind
    obj["apiVersion"] = tm.get("apiVersion") or "v1"
    return obj
