"""The three patch types of the apiserver: JSON merge patch (RFC 7386),
strategic merge patch (the subset of core/v1 patch strategies that kubectl
and a kubelet rely on) and JSON patch (RFC 6902)."""

import copy


def clone(o):
    """copy.deepcopy for JSON values (dicts, lists, strings, numbers, bools,
    None), several times faster: a pod copied per update was a good part of
    a status PATCH's time. Anything else is deep-copied as before."""
    t = type(o)
    if t is dict:
        return {k: clone(v) for k, v in o.items()}
    if t is list:
        return [clone(v) for v in o]
    if t is str or t is int or t is float or t is bool or o is None:
        return o
    return copy.deepcopy(o)


class PatchError(Exception):
    pass


def merge_patch(target, patch):
    """RFC 7386."""
    if not isinstance(patch, dict):
        return clone(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


# Lists that merge element-wise (patchStrategy=merge) and their merge key, by
# field name. A key of None is a set of primitives. Every other list is
# replaced whole (e.g. tolerations, taints, containerStatuses).
MERGE_KEYS = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name",
    "env": "name", "volumes": "name", "imagePullSecrets": "name", "resourceClaims": "name",
    "volumeMounts": "mountPath", "volumeDevices": "devicePath",
    "ports": "containerPort", "conditions": "type", "addresses": "type",
    "podIPs": "ip", "hostIPs": "ip", "hostAliases": "ip",
    "ownerReferences": "uid", "finalizers": None,
}


def strategic_merge_patch(target, patch):
    if not isinstance(patch, dict):
        raise PatchError("strategic merge patch must be a JSON object")
    return _smp_map(clone(target) if isinstance(target, dict) else {}, patch)


def _smp_map(orig, patch):
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    if directive not in (None, "merge"):
        raise PatchError(f"Unknown patch type: {directive}")
    retain = patch.get("$retainKeys")
    for k, v in patch.items():
        if k in ("$patch", "$retainKeys") or k.startswith("$setElementOrder/"):
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            field = k.split("/", 1)[1]
            if isinstance(orig.get(field), list):
                orig[field] = [x for x in orig[field] if x not in v]
            continue
        if v is None:
            orig.pop(k, None)
        elif isinstance(v, dict):
            sub = _smp_map(orig[k] if isinstance(orig.get(k), dict) else {}, v)
            if sub is None:
                orig.pop(k, None)
            else:
                orig[k] = sub
        elif isinstance(v, list) and k in MERGE_KEYS:
            orig[k] = _smp_list(orig.get(k) if isinstance(orig.get(k), list) else [], v,
                                MERGE_KEYS[k])
        else:
            orig[k] = clone(_strip_directives(v))
    if retain is not None:
        for k in list(orig):
            if k not in retain:
                del orig[k]
    return orig


def _strip_directives(v):
    if isinstance(v, dict):
        return {k: _strip_directives(x) for k, x in v.items() if not k.startswith("$")}
    if isinstance(v, list):
        return [_strip_directives(x) for x in v]
    return v


def _smp_list(orig, patch, key):
    if any(isinstance(e, dict) and e.get("$patch") == "replace" for e in patch):
        return [_strip_directives(e) for e in patch
                if not (isinstance(e, dict) and e.get("$patch") == "replace")]
    if key is None:  # set of primitives
        out = list(orig)
        for e in patch:
            if e not in out:
                out.append(e)
        return out
    out = list(orig)
    for e in patch:
        if not isinstance(e, dict) or key not in e:
            raise PatchError(f"map: {e} does not contain declared merge key: {key}")
        idx = next((i for i, o in enumerate(out)
                    if isinstance(o, dict) and o.get(key) == e[key]), None)
        if e.get("$patch") == "delete":
            if idx is not None:
                del out[idx]
            continue
        if idx is None:
            out.append(_strip_directives(e))
        else:
            out[idx] = _smp_map(out[idx], e)
    return out


def _pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer: {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc, parts):
    cur = doc
    for p in parts:
        if isinstance(cur, dict) and p in cur:
            cur = cur[p]
        elif isinstance(cur, list) and p.isdigit() and int(p) < len(cur):
            cur = cur[int(p)]
        else:
            raise PatchError("doc is missing path: /" + "/".join(parts))
    return cur


def _add(doc, parts, value):
    if not parts:
        return value
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent):
            parent.insert(int(last), value)
        else:
            raise PatchError(f"add operation does not apply: index {last} out of bounds")
    else:
        raise PatchError("doc is missing path: /" + "/".join(parts))
    return doc


def _remove(doc, parts):
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent.pop(int(last))
    raise PatchError("doc is missing path: /" + "/".join(parts))


def json_patch(doc, ops):
    """RFC 6902."""
    if not isinstance(ops, list):
        raise PatchError("json patch must be a JSON array of operations")
    doc = clone(doc)
    for op in ops:
        kind = op.get("op")
        parts = _pointer(op.get("path", ""))
        if kind == "add":
            doc = _add(doc, parts, clone(op.get("value")))
        elif kind == "remove":
            _remove(doc, parts)
        elif kind == "replace":
            _walk(doc, parts)
            if not parts:
                doc = clone(op.get("value"))
            else:
                _remove(doc, parts)
                doc = _add(doc, parts, clone(op.get("value")))
        elif kind in ("move", "copy"):
            src = _pointer(op.get("from", ""))
            value = _remove(doc, src) if kind == "move" else clone(_walk(doc, src))
            doc = _add(doc, parts, value)
        elif kind == "test":
            if _walk(doc, parts) != op.get("value"):
                raise PatchError(f"testing value /{'/'.join(parts)} failed")
        else:
            raise PatchError(f"Unexpected kind: {kind}")
    return doc
