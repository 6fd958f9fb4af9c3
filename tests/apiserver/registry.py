"""Resource types, errors, selectors, defaulting, validation and graceful
deletion rules of the stand-in apiserver (no I/O here)."""

import base64
import datetime
import json
import random
import re
import time
import uuid
from decimal import Decimal

from patch import clone

# ---------------------------------------------------------------- errors


class ApiError(Exception):
    """A failure answered as a meta/v1 Status."""

    def __init__(self, code, reason, message, details=None):
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def status(self):
        # The field order of metav1.Status, as the real server encodes it.
        s = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
             "message": self.message, "reason": self.reason}
        if self.details:
            s["details"] = self.details
        s["code"] = self.code
        return s


def _qualified(res):
    return res.name if not res.group else f"{res.name}.{res.group}"


def not_found(res, name):
    return ApiError(404, "NotFound", f'{_qualified(res)} "{name}" not found',
                    _details(res, name))


def already_exists(res, name):
    return ApiError(409, "AlreadyExists", f'{_qualified(res)} "{name}" already exists',
                    _details(res, name))


def conflict(res, name, why):
    return ApiError(409, "Conflict",
                    f'Operation cannot be fulfilled on {_qualified(res)} "{name}": {why}',
                    _details(res, name))


MODIFIED = ("the object has been modified; please apply your changes to the latest version "
            "and try again")


def stale(res, name):
    return conflict(res, name, MODIFIED)


def bad_request(msg):
    return ApiError(400, "BadRequest", msg)


def expired(msg):
    return ApiError(410, "Expired", msg)


def _details(res, name):
    """metav1.StatusDetails, in its field order (name, group, kind, ...)."""
    d = {"name": name}
    if res.group:
        d["group"] = res.group
    d["kind"] = res.name
    return d


def invalid(res, name, causes):
    """causes: list of (field, type, detail-or-None, bad value or _NOVALUE)."""
    msgs, out = [], []
    reasons = {"Required value": "FieldValueRequired", "Invalid value": "FieldValueInvalid",
               "Duplicate value": "FieldValueDuplicate",
               "Unsupported value": "FieldValueNotSupported", "Forbidden": "FieldValueForbidden"}
    for field, typ, detail, value in causes:
        text = typ
        if value is not _NOVALUE:
            if isinstance(value, str):
                text += ": " + json.dumps(value)
            elif isinstance(value, list) and all(isinstance(x, str) for x in value):
                text += ": []string{" + ", ".join(json.dumps(x) for x in value) + "}"  # %#v
            else:
                text += ": " + str(value)
        if detail:
            text += ": " + detail
        msgs.append(f"{field}: {text}")
        out.append({"reason": reasons[typ], "message": text, "field": field})
    joined = msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"
    details = {"name": name}
    if res.group:
        details["group"] = res.group
    details.update(kind=res.kind, causes=out)
    kind = f"{res.kind}.{res.group}" if res.group else res.kind  # GroupKind.String()
    return ApiError(422, "Invalid", f'{kind} "{name}" is invalid: {joined}', details)


_NOVALUE = object()

# ---------------------------------------------------------------- resources


class Resource:
    def __init__(self, name, kind, namespaced, group="", version="v1", singular=None,
                 short=(), subresources=(), storage=None, fields=()):
        self.name, self.kind, self.namespaced = name, kind, namespaced
        self.group, self.version = group, version
        self.singular = singular or kind.lower()
        self.short = list(short)
        self.subresources = list(subresources)
        self.storage = storage or name  # etcd key segment
        self.fields = ["metadata.name"] + (["metadata.namespace"] if namespaced else []) \
            + list(fields)

    @property
    def api_version(self):
        return f"{self.group}/{self.version}" if self.group else self.version

    def prefix(self, namespace=None):
        p = f"/registry/{self.storage}/"
        if self.namespaced and namespace:
            p += namespace + "/"
        return p

    def key(self, namespace, name):
        return self.prefix(namespace) + name


EVENT_FIELDS = ["involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                "involvedObject.uid", "involvedObject.apiVersion",
                "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
                "reportingComponent", "source", "type"]

RESOURCES = [
    Resource("pods", "Pod", True, short=["po"], subresources=["status", "binding", "eviction", "log", "exec", "attach",
                                  "portforward"],
             fields=["spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                     "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
                     "status.podIP", "status.podIPs", "status.nominatedNodeName"]),
    # The real apiserver keeps nodes under /registry/minions/ (its
    # SpecialDefaultResourcePrefixes); so do we.
    Resource("nodes", "Node", False, short=["no"], subresources=["status"], storage="minions",
             fields=["spec.unschedulable"]),
    Resource("namespaces", "Namespace", False, short=["ns"], subresources=["status"],
             fields=["status.phase"]),
    Resource("events", "Event", True, short=["ev"], fields=EVENT_FIELDS),
    Resource("configmaps", "ConfigMap", True, short=["cm"]),
    Resource("secrets", "Secret", True, fields=["type"]),
    Resource("serviceaccounts", "ServiceAccount", True, short=["sa"], subresources=["token"]),
    Resource("services", "Service", True, short=["svc"], subresources=["status"],
             fields=["spec.clusterIP", "spec.type"],  # the kubelet watches spec.clusterIP!=None
             storage="services/specs"),
    Resource("endpoints", "Endpoints", True, short=["ep"], singular="endpoints",
             storage="services/endpoints"),
    Resource("leases", "Lease", True, group="coordination.k8s.io"),
    Resource("endpointslices", "EndpointSlice", True, group="discovery.k8s.io"),
    Resource("roles", "Role", True, group="rbac.authorization.k8s.io"),
    Resource("rolebindings", "RoleBinding", True, group="rbac.authorization.k8s.io"),
    Resource("clusterroles", "ClusterRole", False, group="rbac.authorization.k8s.io"),
    Resource("clusterrolebindings", "ClusterRoleBinding", False,
             group="rbac.authorization.k8s.io"),
]

GROUPS = {"coordination.k8s.io": "v1", "policy": "v1", "discovery.k8s.io": "v1",
          "rbac.authorization.k8s.io": "v1"}
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


def find_resource(group, version, name):
    for r in RESOURCES:
        if r.name == name and r.group == group and r.version == version:
            return r
    return None


# ---------------------------------------------------------------- time


# The stand-in's wall clock: time.time() plus an offset that only the
# test-only PUT /debug/clock sets (server.py, --test-clock). Everything it
# decides from wall time reads it: token iat/nbf/exp and their validation,
# bootstrap-token expiry, CSR validity, timestamps.
CLOCK_OFFSET = 0.0


def wall_time():
    return time.time() + CLOCK_OFFSET


def utc_now():
    return datetime.datetime.fromtimestamp(wall_time(), datetime.timezone.utc)


def now():
    return utc_now().replace(microsecond=0)


def fmt_time(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(s):
    if not s:
        return None
    s = s.replace("Z", "+00:00")
    try:
        return datetime.datetime.fromisoformat(s)
    except ValueError:
        return None


# ---------------------------------------------------------------- selectors


def _split_top(s):
    """Split on commas outside parentheses."""
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return [p.strip() for p in out if p.strip()]


_SET_RE = re.compile(r"^(\S+)\s+(in|notin)\s+\((.*)\)$")


def parse_label_selector(s):
    """A list of (key, op, values). Raises ApiError on syntax errors."""
    reqs = []
    for part in _split_top(s or ""):
        m = _SET_RE.match(part)
        if m:
            vals = [v.strip() for v in m.group(3).split(",") if v.strip()]
            reqs.append((m.group(1), m.group(2), vals))
            continue
        for op in ("==", "!=", "=", ">", "<"):
            if op in part:
                k, v = part.split(op, 1)
                reqs.append((k.strip(), {"==": "=", "=": "="}.get(op, op), [v.strip()]))
                break
        else:
            if part.startswith("!"):
                reqs.append((part[1:].strip(), "!exists", []))
            elif re.match(r"^[A-Za-z0-9_./-]+$", part):
                reqs.append((part, "exists", []))
            else:
                raise bad_request(f"unable to parse requirement: {part}")
    return reqs


def labels_match(reqs, labels):
    labels = labels or {}
    for key, op, vals in reqs:
        has, v = key in labels, labels.get(key)
        if op == "=" and v != vals[0]:
            return False
        if op == "!=" and has and v == vals[0]:
            return False
        if op == "in" and v not in vals:
            return False
        if op == "notin" and has and v in vals:
            return False
        if op == "exists" and not has:
            return False
        if op == "!exists" and has:
            return False
        if op in (">", "<"):
            try:
                a, b = int(v), int(vals[0])
            except (TypeError, ValueError):
                return False
            if (op == ">" and not a > b) or (op == "<" and not a < b):
                return False
    return True


def parse_field_selector(res, s):
    reqs = []
    for part in _split_top(s or ""):
        for op in ("!=", "==", "="):
            if op in part:
                k, v = part.split(op, 1)
                k = k.strip()
                if k not in res.fields:
                    gv = f"{res.group}/{res.version}" if res.group else f"/{res.version}"
                    raise bad_request(
                        f'Unable to find "{gv}, Resource={res.name}" that match label '
                        f'selector "", field selector "{s}": field label not supported: {k}')
                reqs.append((k, "!=" if op == "!=" else "=", v.strip()))
                break
        else:
            raise bad_request(f"invalid selector: '{s}'; can't understand '{part}'")
    return reqs


def field_value(obj, path):
    if path == "source":
        return (obj.get("source") or {}).get("component", "")
    if path == "status.podIPs":
        return ",".join(p.get("ip", "") for p in (obj.get("status") or {}).get("podIPs") or [])
    cur = obj
    for p in path.split("."):
        cur = cur.get(p) if isinstance(cur, dict) else None
    if isinstance(cur, bool):
        return "true" if cur else "false"
    if cur is None:
        return "false" if path in ("spec.unschedulable", "spec.hostNetwork") else ""
    return str(cur)


def fields_match(reqs, obj):
    for path, op, v in reqs:
        got = field_value(obj, path)
        if (op == "=") != (got == v):
            return False
    return True


# ---------------------------------------------------------------- continue tokens


def encode_continue(rev, start):
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rev, "start": start},
                     separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(tok):
    try:
        raw = base64.urlsafe_b64decode(tok + "=" * (-len(tok) % 4))
        d = json.loads(raw)
        if d.get("v") != "meta.k8s.io/v1" or int(d["rv"]) <= 0:
            raise ValueError
        return int(d["rv"]), str(d["start"])
    except (ValueError, KeyError, TypeError):
        raise bad_request("continue key is not valid: incorrect encoded start resourceVersion "
                          "(version meta.k8s.io/v1)")


CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted "
    "between the time the first chunk was returned and now may show up in the list.")

# ---------------------------------------------------------------- quantities

_SUFFIX = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
           "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": 1,
           "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_QTY_RE = re.compile(r"^([+-]?[0-9.]+)([eE][+-]?[0-9]+|[a-zA-Z]*)$")


def parse_quantity(q):
    m = _QTY_RE.match(str(q).strip())
    if not m or m.group(1) in (".", "+", "-"):
        return None
    num, suf = m.group(1), m.group(2)
    if suf[:1] in ("e", "E"):
        return Decimal(num + suf)
    if suf not in _SUFFIX:
        return None
    return Decimal(num) * Decimal(_SUFFIX[suf])


_BIN = [("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)]
_DEC = [("E", 18), ("P", 15), ("T", 12), ("G", 9), ("M", 6), ("k", 3), ("", 0), ("m", -3),
        ("u", -6), ("n", -9)]


def format_quantity(d, binary=False):
    """Quantity.String() of a value: the canonical form in the quantity's
    format (BinarySI when binary and a whole number, else DecimalSI): the
    largest suffix that leaves a whole mantissa."""
    d = Decimal(d)
    if d == 0:
        return "0"
    if binary and d == d.to_integral_value():
        n = int(d)
        for suf, mul in _BIN:
            if n % mul == 0:
                return f"{n // mul}{suf}"
        return str(n)
    for suf, exp in _DEC:
        m = d / (Decimal(10) ** exp)
        if m == m.to_integral_value():
            return f"{int(m)}{suf}"
    # finer than nano: rounded up to n, as Quantity does
    return f"{int((d * Decimal(10) ** 9).to_integral_value(rounding='ROUND_CEILING'))}n"


def _is_binary(q):
    return str(q).strip()[-2:] in ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def _res_list(lst):
    """name -> (Decimal, binary) for the entries that parse."""
    out = {}
    for k, v in (lst or {}).items() if isinstance(lst, dict) else ():
        q = parse_quantity(v)
        if q is not None:
            out[k] = (q, _is_binary(v))
    return out


def _add(acc, lst):
    for k, (q, b) in lst.items():
        if k in acc:
            acc[k] = (acc[k][0] + q, acc[k][1])
        else:
            acc[k] = (q, b)


def aggregate_containers(spec, kind):
    """component-helpers' AggregateContainerRequests/Limits (kind "requests"
    or "limits"): regular containers and sidecars summed; each init
    container's own plus the sidecars before it; the larger of the two."""
    total, sidecars, init_max = {}, {}, {}
    for c in spec.get("containers") or []:
        if isinstance(c, dict):
            _add(total, _res_list((c.get("resources") or {}).get(kind)))
    for c in spec.get("initContainers") or []:
        if not isinstance(c, dict):
            continue
        own = _res_list((c.get("resources") or {}).get(kind))
        if c.get("restartPolicy") == "Always":
            _add(total, own)
            _add(sidecars, own)
            need = dict(sidecars)
        else:
            need = dict(own)
            _add(need, sidecars)
        for k, (q, b) in need.items():
            if k not in init_max or q > init_max[k][0]:
                init_max[k] = (q, b)
    for k, (q, b) in init_max.items():
        if k not in total or q > total[k][0]:
            total[k] = (q, b)
    return total


POD_LEVEL_RESOURCES = ("cpu", "memory")  # and hugepages-*


def pod_level_supported(name):
    """IsSupportedPodLevelResource (1.34/1.35): cpu, memory, hugepages-*."""
    return name in POD_LEVEL_RESOURCES or name.startswith("hugepages-")


# ---------------------------------------------------------------- validation helpers

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL_RE = re.compile("^" + _LABEL + "$")
DNS1123_SUBDOMAIN_RE = re.compile("^" + _LABEL + r"(\." + _LABEL + ")*$")
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
             "or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  "
             "or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                 "characters, '-' or '.', and must start and end with an alphanumeric character "
                 "(e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


def _check_subdomain(errs, field, v):
    if len(v) > 253:
        errs.append((field, "Invalid value", "must be no more than 253 characters", v))
    elif not DNS1123_SUBDOMAIN_RE.match(v):
        errs.append((field, "Invalid value", SUBDOMAIN_MSG, v))


def _check_label(errs, field, v):
    if len(v) > 63:
        errs.append((field, "Invalid value", "must be no more than 63 characters", v))
    elif not DNS1123_LABEL_RE.match(v):
        errs.append((field, "Invalid value", LABEL_MSG, v))


def _supported(errs, field, v, allowed):
    if v not in allowed:
        sup = ", ".join(json.dumps(a) for a in allowed)
        errs.append((field, "Unsupported value", f"supported values: {sup}", v))


def validate_meta(res, obj, errs):
    meta = obj.get("metadata") or {}
    name = meta.get("name") or ""
    if not name:
        errs.append(("metadata.name", "Required value", "name or generateName is required",
                     _NOVALUE))
    elif res.name in ("namespaces",):
        _check_label(errs, "metadata.name", name)
    else:
        _check_subdomain(errs, "metadata.name", name)


# ---------------------------------------------------------------- defaulting


def _gen_suffix():
    return "".join(random.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))


def default_meta(res, obj, namespace):
    meta = obj.setdefault("metadata", {})
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = meta["generateName"] + _gen_suffix()
    if res.namespaced:
        meta["namespace"] = namespace
    else:
        meta.pop("namespace", None)
    meta["uid"] = str(uuid.uuid4())
    meta["creationTimestamp"] = fmt_time(now())
    for k in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds",
              "selfLink"):
        meta.pop(k, None)
    obj["kind"], obj["apiVersion"] = res.kind, res.api_version


def _default_container(c):
    image = c.get("image") or ""
    if "imagePullPolicy" not in c:
        last = image.split("/")[-1]
        tag = last.split(":", 1)[1] if ":" in last and "@" not in last else ""
        if "@" in last:
            c["imagePullPolicy"] = "IfNotPresent"
        else:
            c["imagePullPolicy"] = "Always" if tag in ("", "latest") else "IfNotPresent"
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    for p in c.get("ports") or []:
        p.setdefault("protocol", "TCP")
    res = c.setdefault("resources", {})
    limits = res.get("limits") or {}
    if limits:
        req = res.setdefault("requests", {})
        for k, v in limits.items():
            req.setdefault(k, v)
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        p = c.get(probe)
        if isinstance(p, dict):
            p.setdefault("timeoutSeconds", 1)
            p.setdefault("periodSeconds", 10)
            p.setdefault("successThreshold", 1)
            p.setdefault("failureThreshold", 3)
            if isinstance(p.get("httpGet"), dict):
                p["httpGet"].setdefault("path", "/")
                p["httpGet"].setdefault("scheme", "HTTP")
    for e in c.get("env") or []:
        fr = (e.get("valueFrom") or {}).get("fieldRef")
        if isinstance(fr, dict):
            fr.setdefault("apiVersion", "v1")


def _default_pod_resources(spec):
    """SetDefaults_Pod with PodLevelResources (beta, on in 1.34/1.35):
    defaultHugePagePodLimits, then defaultPodRequests (pod-level limits
    are not defaulted from the containers' in these versions)."""
    res = spec.get("resources")
    if not isinstance(res, dict):
        return
    reqs = res.get("requests") if isinstance(res.get("requests"), dict) else {}
    lims = res.get("limits") if isinstance(res.get("limits"), dict) else {}
    if lims or reqs:
        new_lims = dict(lims)
        for k, (q, b) in aggregate_containers(spec, "limits").items():
            if k.startswith("hugepages-") and k not in reqs and k not in new_lims:
                new_lims[k] = format_quantity(q, b)
        if new_lims:
            res["limits"] = lims = new_lims
    if not lims:
        return
    new_reqs = dict(reqs)
    # the containers' aggregate for the overcommittable ones they request
    for k, (q, b) in aggregate_containers(spec, "requests").items():
        if k not in new_reqs and pod_level_supported(k) and not k.startswith("hugepages-"):
            new_reqs[k] = format_quantity(q, b)
    # else the pod-level limit
    for k, v in lims.items():
        if k not in new_reqs and pod_level_supported(k):
            new_reqs[k] = v
    if new_reqs:
        res["requests"] = new_reqs


def _resource_qos(r):
    """resourceQOS over one ResourceRequirements (cpu and memory)."""
    reqs = (r.get("requests") or {}) if isinstance(r.get("requests"), dict) else {}
    lims = (r.get("limits") or {}) if isinstance(r.get("limits"), dict) else {}
    if not reqs and not lims:
        return "BestEffort"
    qos = None
    for k in ("cpu", "memory"):
        req = parse_quantity(reqs.get(k, "0")) or 0
        lim = parse_quantity(lims.get(k, "0")) or 0
        if req != lim:
            return "Burstable"
        this = "BestEffort" if req == 0 else "Guaranteed"
        if qos is None:
            qos = this
        elif qos != this:
            return "Burstable"
    return qos


def qos_class(spec):
    # ComputePodQOS: spec.resources, when present (even {}), decides alone
    if isinstance(spec.get("resources"), dict):
        return _resource_qos(spec["resources"])
    requests, limits, guaranteed = False, False, True
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        r = (c.get("resources") or {})
        req = {k: v for k, v in (r.get("requests") or {}).items() if k in ("cpu", "memory")}
        lim = {k: v for k, v in (r.get("limits") or {}).items() if k in ("cpu", "memory")}
        if any(parse_quantity(v) for v in req.values()):
            requests = True
        if any(parse_quantity(v) for v in lim.values()):
            limits = True
        if set(lim) != {"cpu", "memory"}:
            guaranteed = False
        for k in ("cpu", "memory"):
            if k not in req or parse_quantity(req[k]) != parse_quantity(lim.get(k, "0")):
                guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _tolerates_key(tols, key):
    for t in tols:
        if t.get("effect") not in (None, "", "NoExecute"):
            continue
        if t.get("key") == key or (not t.get("key") and t.get("operator") == "Exists"):
            return True
    return False


def default_pod(pod):
    pod["metadata"]["generation"] = 1
    spec = pod.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    # spec.priority and preemptionPolicy are the Priority admission plugin's
    # (priority.py); without it (disabled) the scheme defaults nothing but
    # the policy
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    sync_service_account_fields(spec)
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        if isinstance(c, dict):
            _default_container(c)
    # pod-level defaults come after the containers' (SetDefaults_Pod)
    _default_pod_resources(spec)
    for v in spec.get("volumes") or []:
        for src in ("configMap", "secret"):
            if isinstance(v.get(src), dict):
                v[src].setdefault("defaultMode", 420)
        if isinstance(v.get("hostPath"), dict):
            v["hostPath"].setdefault("type", "")
    tols = spec.setdefault("tolerations", [])
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not _tolerates_key(tols, key):
            tols.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                         "tolerationSeconds": 300})
    status = {"phase": "Pending", "qosClass": qos_class(spec)}
    if spec.get("nodeName"):
        status["conditions"] = [{"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                                 "lastTransitionTime": fmt_time(now())}]
    pod["status"] = status


def sync_service_account_fields(spec):
    """v1 conversion: serviceAccount is the deprecated spelling of
    serviceAccountName; it is read when the new field is empty and written
    from it."""
    if not spec.get("serviceAccountName") and spec.get("serviceAccount"):
        spec["serviceAccountName"] = spec["serviceAccount"]
    if spec.get("serviceAccountName"):
        spec["serviceAccount"] = spec["serviceAccountName"]


def default_service(svc):
    spec = svc.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    for p in spec.get("ports") or []:
        if isinstance(p, dict):
            p.setdefault("protocol", "TCP")
            if "targetPort" not in p or p["targetPort"] in (0, ""):
                p["targetPort"] = p.get("port")
    if spec.get("type") in ("ClusterIP", "NodePort", "LoadBalancer"):
        spec.setdefault("internalTrafficPolicy", "Cluster")
    svc["status"] = {"loadBalancer": {}}


def default_object(res, obj):
    if res.name == "pods":
        default_pod(obj)
    elif res.name == "services":
        default_service(obj)
    elif res.name == "endpointslices":
        obj["metadata"]["generation"] = 1
    elif res.name == "namespaces":
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        obj.setdefault("status", {}).setdefault("phase", "Active")
    elif res.name == "secrets":
        obj.setdefault("type", "Opaque")
        string_data_into_data(obj)


def string_data_into_data(secret):
    """stringData is write-only: kube-apiserver's conversion of a v1 Secret
    (Convert_v1_Secret_To_core_Secret) merges it into data, its keys winning,
    on every write (create, update and patch alike)."""
    for k, v in (secret.pop("stringData", None) or {}).items():
        if isinstance(v, str):
            secret.setdefault("data", {})[k] = base64.b64encode(v.encode()).decode()


# ---------------------------------------------------------------- validation


def _nonneg(errs, field, v):
    if isinstance(v, int) and v < 0:
        errs.append((field, "Invalid value", "must be greater than or equal to 0", v))


def _validate_containers(errs, spec, field, names):
    for i, c in enumerate(spec.get(field) or []):
        p = f"spec.{field}[{i}]"
        if not isinstance(c, dict):
            errs.append((p, "Invalid value", "must be an object", _NOVALUE))
            continue
        name = c.get("name") or ""
        if not name:
            errs.append((f"{p}.name", "Required value", None, _NOVALUE))
        else:
            _check_label(errs, f"{p}.name", name)
            if name in names:
                errs.append((f"{p}.name", "Duplicate value", None, name))
            names.add(name)
        if not c.get("image"):
            errs.append((f"{p}.image", "Required value", None, _NOVALUE))
        if "imagePullPolicy" in c:
            _supported(errs, f"{p}.imagePullPolicy", c["imagePullPolicy"],
                       ["Always", "IfNotPresent", "Never"])
        for j, port in enumerate(c.get("ports") or []):
            cp = port.get("containerPort")
            if not isinstance(cp, int) or not 1 <= cp <= 65535:
                errs.append((f"{p}.ports[{j}].containerPort", "Invalid value",
                             "must be between 1 and 65535, inclusive", cp))
            _supported(errs, f"{p}.ports[{j}].protocol", port.get("protocol", "TCP"),
                       ["SCTP", "TCP", "UDP"])
        r = c.get("resources") or {}
        for kind in ("requests", "limits"):
            for k, v in (r.get(kind) or {}).items():
                q = parse_quantity(v)
                if q is None:
                    errs.append((f"{p}.resources.{kind}[{k}]", "Invalid value",
                                 "quantities must match the regular expression "
                                 "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'", str(v)))
                elif q < 0:
                    errs.append((f"{p}.resources.{kind}[{k}]", "Invalid value",
                                 "must be greater than or equal to 0", str(v)))
        for k, v in (r.get("requests") or {}).items():
            lim = (r.get("limits") or {}).get(k)
            if lim is not None and (parse_quantity(v) or 0) > (parse_quantity(lim) or 0):
                errs.append((f"{p}.resources.requests", "Invalid value",
                             f"must be less than or equal to {k} limit of {lim}", str(v)))


def validate_pod(pod, errs):
    spec = pod.get("spec") or {}
    if not spec.get("containers"):
        errs.append(("spec.containers", "Required value", None, _NOVALUE))
    names = set()
    _validate_containers(errs, spec, "initContainers", names)
    _validate_containers(errs, spec, "containers", names)
    _supported(errs, "spec.restartPolicy", spec.get("restartPolicy"),
               ["Always", "OnFailure", "Never"])
    _supported(errs, "spec.dnsPolicy", spec.get("dnsPolicy"),
               ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"])
    _nonneg(errs, "spec.terminationGracePeriodSeconds", spec.get("terminationGracePeriodSeconds"))
    ads = spec.get("activeDeadlineSeconds")
    if ads is not None and (not isinstance(ads, int) or not 1 <= ads <= 2147483647):
        errs.append(("spec.activeDeadlineSeconds", "Invalid value",
                     "must be between 1 and 2147483647, inclusive", ads))
    vols = set()
    for i, v in enumerate(spec.get("volumes") or []):
        n = v.get("name") or ""
        if not n:
            errs.append((f"spec.volumes[{i}].name", "Required value", None, _NOVALUE))
        elif n in vols:
            errs.append((f"spec.volumes[{i}].name", "Duplicate value", None, n))
        vols.add(n)
    for i, t in enumerate(spec.get("tolerations") or []):
        _validate_toleration(errs, f"spec.tolerations[{i}]", t)
    _validate_sysctls(errs, spec)
    _validate_pod_resources(errs, spec)


STANDARD_RESOURCES = {
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage",
    "pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
    "persistentvolumeclaims", "storage", "requests.storage", "services.nodeports",
    "services.loadbalancers"}
_QUALIFIED_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def _pod_resource_name(errs, field, name):
    """validatePodResourceName: validateResourceName, then only the names
    supported at pod level."""
    prefix, _, base = name.rpartition("/")
    if not base or len(base) > 63 or not _QUALIFIED_RE.match(base) or \
            (prefix and not DNS1123_SUBDOMAIN_RE.match(prefix)):
        errs.append((field, "Invalid value", "name part must consist of alphanumeric "
                     "characters, '-', '_' or '.', and must start and end with an "
                     "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
                     "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                     name))
        return
    if "/" not in name and name not in STANDARD_RESOURCES and \
            not name.startswith(("hugepages-", "requests.hugepages-")):
        errs.append((field, "Invalid value", "must be a standard resource type or fully "
                     "qualified", name))
        return
    if not pod_level_supported(name):
        errs.append((field, "Unsupported value",
                     'supported values: "cpu", "hugepages-", "memory"', name))


def _pod_resource_quantity(errs, field, name, v):
    q = parse_quantity(v)
    if q is None:
        errs.append((field, "Invalid value", "quantities must match the regular expression "
                     "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'", str(v)))
        return None
    if q < 0:
        errs.append((field, "Invalid value", "must be greater than or equal to 0", str(v)))
    if name.startswith("hugepages-"):
        page = parse_quantity(name[len("hugepages-"):])
        if not page or page <= 0 or q % page != 0:
            errs.append((field, "Invalid value",
                         f"{format_quantity(q, _is_binary(v))} is not positive integer "
                         f"multiple of {name}", format_quantity(q, _is_binary(v))))
    return q


def _validate_pod_resources(errs, spec):
    """validatePodResources (PodLevelResources, beta and on in 1.34/1.35):
    validatePodResourceRequirements, then validatePodResourceConsistency."""
    res = spec.get("resources")
    if res is None:
        return
    path = "spec.resources"
    if not isinstance(res, dict):
        errs.append((path, "Invalid value", "must be an object", _NOVALUE))
        return
    if res.get("claims") is not None:
        errs.append((f"{path}.claims", "Forbidden",
                     "claims cannot be set for Resources at pod-level", _NOVALUE))
    reqs = res.get("requests") if isinstance(res.get("requests"), dict) else {}
    lims = res.get("limits") if isinstance(res.get("limits"), dict) else {}
    cpu_mem = huge = False
    for k in sorted(lims):
        f = f"{path}.limits[{k}]"
        _pod_resource_name(errs, f, k)
        _pod_resource_quantity(errs, f, k, lims[k])
        huge |= k.startswith("hugepages-")
        cpu_mem |= k in ("cpu", "memory")
    for k in sorted(reqs):
        f = f"{path}.requests[{k}]"
        _pod_resource_name(errs, f, k)
        q = _pod_resource_quantity(errs, f, k, reqs[k])
        if k in lims:
            lim = parse_quantity(lims[k])
            if q is not None and lim is not None:
                if k.startswith("hugepages-") and q != lim:  # not overcommittable
                    errs.append((f"{path}.requests", "Invalid value",
                                 f"must be equal to {k} limit of "
                                 f"{format_quantity(lim, _is_binary(lims[k]))}",
                                 format_quantity(q, _is_binary(reqs[k]))))
                elif q > lim:
                    errs.append((f"{path}.requests", "Invalid value",
                                 f"must be less than or equal to {k} limit of "
                                 f"{format_quantity(lim, _is_binary(lims[k]))}",
                                 format_quantity(q, _is_binary(reqs[k]))))
        elif k.startswith("hugepages-"):
            errs.append((f"{path}.limits", "Required value",
                         "Limit must be set for non overcommitable resources", _NOVALUE))
        huge |= k.startswith("hugepages-")
        cpu_mem |= k in ("cpu", "memory")
    if huge and not cpu_mem:
        errs.append((path, "Forbidden", "HugePages require cpu or memory", _NOVALUE))

    # validatePodResourceConsistency: the containers' aggregate request of
    # each resource supported at pod level is covered by the pod-level
    # request (an unset one counts as 0); the pod-level hugepage limit
    # covers the containers' aggregate; no regular container's limit is
    # above the pod-level one.
    pod_reqs, pod_lims = _res_list(reqs), _res_list(lims)
    for k, (q, b) in sorted(aggregate_containers(spec, "requests").items()):
        if not pod_level_supported(k):
            continue
        have, hb = pod_reqs.get(k, (Decimal(0), False))
        if q > have:
            errs.append((f"{path}.requests[{k}]", "Invalid value",
                         f"must be greater than or equal to aggregate container requests of "
                         f"{format_quantity(q, b)}", format_quantity(have, hb)))
    for k, (q, b) in sorted(aggregate_containers(spec, "limits").items()):
        if k.startswith("hugepages-") and k in pod_lims and q > pod_lims[k][0]:
            errs.append((f"{path}.limits[{k}]", "Invalid value",
                         f"must be greater than or equal to aggregate container limits of "
                         f"{format_quantity(q, b)}", format_quantity(*pod_lims[k])))
    for i, c in enumerate(spec.get("containers") or []):
        if not isinstance(c, dict):
            continue
        for k, (q, b) in sorted(_res_list((c.get("resources") or {}).get("limits")).items()):
            if k in pod_lims and q > pod_lims[k][0]:
                errs.append((f"{path}.containers[{i}][{k}].limits", "Invalid value",
                             f"must be less than or equal to pod limits of "
                             f"{format_quantity(*pod_lims[k])}", format_quantity(q, b)))


_SYSCTL_SEG = "[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
_SYSCTL_FMT = "(" + _SYSCTL_SEG + "[\\./])*" + _SYSCTL_SEG
_SYSCTL_RE = re.compile("^" + _SYSCTL_FMT + "$")


def _sysctl_ns(name):
    """component-helpers' GetNamespace, on the name with '.' separators
    (ConvertSysctlVariableToDotsSeparator: '/' first means '.' and '/' swap)."""
    sep = re.search(r"[./]", name)
    if sep and sep.group() == "/":
        name = name.translate(str.maketrans("./", "/."))
    if name == "kernel.sem" or name.startswith(("kernel.shm", "kernel.msg", "fs.mqueue.")):
        return "ipc"
    return "net" if name.startswith("net.") else None


def _validate_sysctls(errs, spec):
    """validateSysctls and ValidateHostSysctl: names, duplicates, and no
    namespaced sysctl of a namespace the pod shares with the host."""
    sc = spec.get("securityContext") or {}
    seen = set()
    for i, s in enumerate(sc.get("sysctls") or []):
        p = f"spec.securityContext.sysctls[{i}].name"
        n = (s or {}).get("name") or ""
        if not n:
            errs.append((p, "Required value", None, _NOVALUE))
            continue
        if len(n) > 253 or not _SYSCTL_RE.match(n):
            errs.append((p, "Invalid value", "must have at most 253 characters and match regex "
                         + _SYSCTL_FMT, n))
            continue
        if n in seen:
            errs.append((p, "Duplicate value", None, n))
        seen.add(n)
        ns = _sysctl_ns(n)
        if spec.get("hostNetwork") and ns == "net":
            errs.append((p, "Invalid value", "may not be specified when 'hostNetwork' is true", n))
        elif spec.get("hostIPC") and ns == "ipc":
            errs.append((p, "Invalid value", "may not be specified when 'hostIPC' is true", n))


def _validate_toleration(errs, p, t):
    if t.get("effect"):
        _supported(errs, f"{p}.effect", t["effect"], ["NoSchedule", "PreferNoSchedule",
                                                      "NoExecute"])
    op = t.get("operator") or "Equal"
    _supported(errs, f"{p}.operator", op, ["Equal", "Exists"])
    if op == "Exists" and t.get("value"):
        errs.append((f"{p}.operator", "Invalid value",
                     "value must be empty when `operator` is 'Exists'", t.get("value")))
    if t.get("tolerationSeconds") is not None and t.get("effect") != "NoExecute":
        errs.append((f"{p}.effect", "Invalid value",
                     "effect must be 'NoExecute' when `tolerationSeconds` is set",
                     t.get("effect", "")))


def validate_node(node, errs):
    seen = set()
    for i, t in enumerate((node.get("spec") or {}).get("taints") or []):
        p = f"spec.taints[{i}]"
        if not t.get("key"):
            errs.append((f"{p}.key", "Required value", None, _NOVALUE))
        _supported(errs, f"{p}.effect", t.get("effect"), ["NoSchedule", "PreferNoSchedule",
                                                          "NoExecute"])
        k = (t.get("key"), t.get("effect"))
        if k in seen:
            errs.append((f"{p}", "Duplicate value", "taints must be unique by key and effect "
                         "pair", json.dumps(t)))
        seen.add(k)


# Validation and update strategies of resources defined in other modules
# (csr.py): resource name -> function.
VALIDATE_HOOKS = {}
UPDATE_HOOKS = {}


def install_resource(res, validate_fn, update_fn, default_fn=None):
    """Registers a resource defined in another module: storage, discovery,
    its validation (after its defaulting) and its update strategy."""
    if find_resource(res.group, res.version, res.name) is None:
        RESOURCES.append(res)
    GROUPS[res.group] = res.version
    VALIDATE_HOOKS[res.name] = validate_fn if default_fn is None else \
        (lambda obj: (default_fn(obj), validate_fn(obj))[1])
    UPDATE_HOOKS[res.name] = update_fn


def validate(res, obj):
    if res.name in VALIDATE_HOOKS:
        errs = VALIDATE_HOOKS[res.name](obj)
        if errs:
            raise invalid(res, (obj.get("metadata") or {}).get("name", ""), errs)
        return
    errs = []
    validate_meta(res, obj, errs)
    if res.name == "pods":
        validate_pod(obj, errs)
    elif res.name == "nodes":
        validate_node(obj, errs)
    elif res.name == "services":
        validate_service(obj, errs)
    elif res.name == "leases":
        d = (obj.get("spec") or {}).get("leaseDurationSeconds")
        if d is not None and (not isinstance(d, int) or d <= 0):
            errs.append(("spec.leaseDurationSeconds", "Invalid value", "must be greater than 0",
                         d))
    if errs:
        raise invalid(res, (obj.get("metadata") or {}).get("name", ""), errs)


SERVICE_TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]


def validate_service(svc, errs):
    spec = svc.get("spec")
    if not isinstance(spec, dict):
        errs.append(("spec", "Required value", None, _NOVALUE))
        return
    _supported(errs, "spec.type", spec.get("type"), SERVICE_TYPES)
    ports = spec.get("ports") or []
    if not ports and spec.get("type") != "ExternalName" and spec.get("clusterIP") != "None":
        errs.append(("spec.ports", "Required value", None, _NOVALUE))
    names = set()
    for i, p in enumerate(ports):
        f = f"spec.ports[{i}]"
        if not isinstance(p, dict):
            errs.append((f, "Invalid value", "must be an object", _NOVALUE))
            continue
        if len(ports) > 1 and not p.get("name"):
            errs.append((f"{f}.name", "Required value", None, _NOVALUE))
        if p.get("name"):
            if p["name"] in names:
                errs.append((f"{f}.name", "Duplicate value", None, p["name"]))
            names.add(p["name"])
        port = p.get("port")
        if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
            if port is None:
                errs.append((f"{f}.port", "Required value", None, _NOVALUE))
            else:
                errs.append((f"{f}.port", "Invalid value", "must be between 1 and 65535, "
                             "inclusive", port))
        _supported(errs, f"{f}.protocol", p.get("protocol"), ["SCTP", "TCP", "UDP"])
    _supported(errs, "spec.sessionAffinity", spec.get("sessionAffinity"), ["ClientIP", "None"])


POD_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
    "(allow it to be set to 1 if it was previously negative)")


def _mutable_view(spec):
    s = clone(spec)
    for f in ("containers", "initContainers"):
        for c in s.get(f) or []:
            c.pop("image", None)
    s.pop("activeDeadlineSeconds", None)
    s.pop("tolerations", None)
    s.pop("serviceAccount", None)  # the deprecated alias, kept in step on read
    s.pop("terminationGracePeriodSeconds", None)
    return s


def validate_pod_update(new, old):
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    name = new["metadata"]["name"]
    res = find_resource("", "v1", "pods")
    if _mutable_view(ns) != _mutable_view(os_):
        raise invalid(res, name, [("spec", "Forbidden", POD_UPDATE_FORBIDDEN, _NOVALUE)])
    new_ads, old_ads = ns.get("activeDeadlineSeconds"), os_.get("activeDeadlineSeconds")
    if new_ads is not None:
        if not isinstance(new_ads, int) or isinstance(new_ads, bool) or \
                not 0 <= new_ads <= 2**31 - 1:
            raise invalid(res, name, [("spec.activeDeadlineSeconds", "Invalid value",
                                       "must be between 0 and 2147483647, inclusive", new_ads)])
        if old_ads is not None and old_ads < new_ads:
            raise invalid(res, name, [("spec.activeDeadlineSeconds", "Invalid value",
                                       "must be less than or equal to previous value",
                                       new_ads)])
    elif old_ads is not None:
        raise invalid(res, name, [("spec.activeDeadlineSeconds", "Invalid value",
                                   "must not update from a positive integer to nil value",
                                   "null")])
    old_tols = os_.get("tolerations") or []
    if any(t not in (ns.get("tolerations") or []) for t in old_tols):
        raise invalid(res, name, [("spec.tolerations", "Forbidden",
                                   "existing toleration can not be modified except its "
                                   "tolerationSeconds", _NOVALUE)])


# ---------------------------------------------------------------- pod status

CONTAINER_STATUS_LISTS = ("containerStatuses", "initContainerStatuses",
                          "ephemeralContainerStatuses")
MAX_ID = 2147483647  # apimachinery util/validation maxUserID/maxGroupID (math.MaxInt32)


def _status_lists(status):
    for key in CONTAINER_STATUS_LISTS:
        lst = status.get(key)
        if isinstance(lst, list):
            yield key, lst


def drop_disabled_pod_status_fields(status):
    """podStatusStrategy.PrepareForUpdate's DropDisabledPodFields
    (kubernetes pkg/api/pod/util.go dropDisabledPodStatusFields) with
    kube-apiserver 1.33-1.35's default gates: ResourceHealthStatus is alpha
    (off), so every container status loses `allocatedResourcesStatus`
    before validation and storage (the stand-in has no gates to turn it on).
    SupplementalGroupsPolicy (beta 1.33, GA 1.35) and RecursiveReadOnlyMounts
    (GA 1.33) are on: `user` and `volumeMounts` are kept."""
    for _, lst in _status_lists(status):
        for cs in lst:
            if isinstance(cs, dict):
                cs.pop("allocatedResourcesStatus", None)


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _id_range(errs, field, v):
    """validation.IsValidUserID / IsValidGroupID."""
    if _is_int(v) and not 0 <= v <= MAX_ID:
        errs.append((field, "Invalid value", f"must be between 0 and {MAX_ID}, inclusive", v))


def validate_pod_status_update(pod):
    """What ValidatePodStatusUpdate (kubernetes pkg/apis/core/validation/
    validation.go, the versions read: about v1.31-1.32 and v1.33-1.34) checks of the container statuses' fields the
    kubelet reports beyond state: validateContainerStatusUsers on
    containerStatuses, initContainerStatuses and ephemeralContainerStatuses
    (pod OS from spec.os.name, Linux when unset): on Linux each of
    `user.linux` uid, gid and supplementalGroups[g] must be in 0..2147483647
    (validateLinuxContainerUser); on Windows `user.linux` is Forbidden. The
    field path is the source's, without `user`: fldPath.Index(i).Child("linux"),
    e.g. `status.containerStatuses[0].linux.uid`. Nothing else of a
    container status is validated there: `resources`, `allocatedResources`
    and `volumeMounts` are stored as given (any resource name, negative
    quantities too; only the quantity syntax is checked, by the decoder,
    which the stand-in does not do). Non-integer ids (a decoding error on
    the real server) are not checked here either."""
    status = pod.get("status") or {}
    os_name = ((pod.get("spec") or {}).get("os") or {}).get("name") or "linux"
    errs = []
    for key, lst in _status_lists(status):
        for i, cs in enumerate(lst):
            user = cs.get("user") if isinstance(cs, dict) else None
            if not isinstance(user, dict):
                continue
            p = f"status.{key}[{i}].linux"
            lin = user.get("linux")
            if os_name == "windows":
                if lin is not None:
                    errs.append((p, "Forbidden", "cannot be set for a windows pod", _NOVALUE))
            elif os_name == "linux" and isinstance(lin, dict):
                _id_range(errs, f"{p}.uid", lin.get("uid", 0))
                _id_range(errs, f"{p}.gid", lin.get("gid", 0))
                groups = lin.get("supplementalGroups")
                for g, gid in enumerate(groups if isinstance(groups, list) else []):
                    _id_range(errs, f"{p}.supplementalGroups[{g}]", gid)
    return errs


# ---------------------------------------------------------------- update rules

IMMUTABLE_META = ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp",
                  "deletionGracePeriodSeconds", "generation")


def prepare_update(res, sub, old, new):
    """Merge the user's new object onto the stored one like the apiserver's
    update strategies: the main resource cannot change status, the status
    subresource can change only status, and system metadata is kept."""
    new = clone(new)
    new["kind"], new["apiVersion"] = res.kind, res.api_version
    nm, om = new.setdefault("metadata", {}), old["metadata"]
    if nm.get("uid") and nm["uid"] != om.get("uid"):
        raise conflict(res, om["name"], f"Precondition failed: UID in precondition: "
                       f"{nm['uid']}, UID in object meta: {om.get('uid')}")
    if nm.get("name") and nm["name"] != om["name"]:
        raise bad_request(f"the name of the object ({nm['name']}) does not match the name on "
                          f"the URL ({om['name']})")
    for k in IMMUTABLE_META:
        if k in om:
            nm[k] = om[k]
        else:
            nm.pop(k, None)
    if res.name in UPDATE_HOOKS:
        return UPDATE_HOOKS[res.name](sub, old, new)
    has_status = "status" in res.subresources
    if sub == "status":
        out = clone(old)
        out["status"] = new.get("status") or {}
        if res.name == "pods" and "qosClass" in old.get("status", {}):
            out["status"]["qosClass"] = old["status"]["qosClass"]  # immutable
        if res.name == "pods":
            drop_disabled_pod_status_fields(out["status"])
            errs = validate_pod_status_update(out)
            if errs:
                raise invalid(res, om["name"], errs)
        return out
    if has_status:
        if "status" in old:
            new["status"] = clone(old["status"])
        else:
            new.pop("status", None)
    if res.name == "pods":
        validate_pod_update(new, old)
    if res.name == "secrets":
        string_data_into_data(new)
    if res.name in ("configmaps", "secrets"):
        validate_keyed_data_update(res, new, old)
    return new


def validate_keyed_data_update(res, new, old):
    """ValidateConfigMapUpdate / ValidateSecretUpdate: a Secret's type never
    changes; once `immutable` is set, neither it nor the data may change."""
    name = old["metadata"]["name"]
    errs = []
    if res.name == "secrets" and new.get("type", "Opaque") != old.get("type", "Opaque"):
        errs.append(("type", "Invalid value", "field is immutable", new.get("type")))
    if old.get("immutable") is True:
        msg = "field is immutable when `immutable` is set"
        if new.get("immutable") is not True:
            errs.append(("immutable", "Forbidden", msg, _NOVALUE))
        for f in ("data",) + (("binaryData",) if res.name == "configmaps" else ()):
            if (new.get(f) or {}) != (old.get(f) or {}):
                errs.append((f, "Forbidden", msg, _NOVALUE))
    if errs:
        raise invalid(res, name, errs)


# ---------------------------------------------------------------- graceful deletion


def precondition_check(res, obj, opts):
    pre = (opts or {}).get("preconditions") or {}
    meta = obj["metadata"]
    if pre.get("uid") and pre["uid"] != meta.get("uid"):
        raise conflict(res, meta["name"], f"Precondition failed: UID in precondition: "
                       f"{pre['uid']}, UID in object meta: {meta.get('uid')}")
    if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
        raise conflict(res, meta["name"], "Precondition failed: ResourceVersion in "
                       f"precondition: {pre['resourceVersion']}, ResourceVersion in object "
                       f"meta: {meta.get('resourceVersion')}")


def deletion_plan(res, obj, opts):
    """Decide a DELETE: ("now", None) removes at once, ("pending", None)
    leaves the object as is, ("update", new_obj) stores new_obj, then removes
    it if its grace reached 0 and no finalizers remain
    (should_delete_after_update)."""
    opts = opts or {}
    meta = obj["metadata"]
    grace = opts.get("gracePeriodSeconds")
    if grace is not None and int(grace) < 0:
        grace = 1  # like BeforeDelete: a negative grace period means 1 s
    if res.name == "namespaces":
        if meta["name"] in IMMORTAL_NAMESPACES:
            raise ApiError(403, "Forbidden", f'namespaces "{meta["name"]}" is forbidden: this '
                           'namespace may not be deleted', _details(res, meta["name"]))
        if meta.get("deletionTimestamp"):
            return "pending", None
        # The namespace controller (server.py) empties it, then removes it.
        new = clone(obj)
        new["metadata"]["deletionTimestamp"] = fmt_time(now())
        new["metadata"]["deletionGracePeriodSeconds"] = 0
        new.setdefault("status", {})["phase"] = "Terminating"
        return "update", new
    if res.name != "pods":
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return "pending", None
            new = clone(obj)
            new["metadata"]["deletionTimestamp"] = fmt_time(now())
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            return "update", new
        return "now", None
    # Pods delete gracefully (rest.BeforeDelete): every delete that is not
    # pending stores deletionTimestamp/deletionGracePeriodSeconds first, and
    # the store then removes the object if the grace is 0 and no finalizers
    # remain, so watchers see MODIFIED (grace 0) then DELETED, as on the real
    # apiserver.
    if meta.get("deletionTimestamp"):
        cur = meta.get("deletionGracePeriodSeconds")
        if not cur:  # already at 0 (or never set): remove, unless finalized
            return ("pending", None) if meta.get("finalizers") else ("now", None)
        if grace is None or int(grace) >= cur:
            return "pending", None
        grace = int(grace)
        new = clone(obj)
        ts = parse_time(meta["deletionTimestamp"]) or now()
        ts = ts - datetime.timedelta(seconds=cur) + datetime.timedelta(seconds=grace)
        new["metadata"]["deletionTimestamp"] = fmt_time(ts)
        new["metadata"]["deletionGracePeriodSeconds"] = grace
        return "update", new
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if grace is None:
        grace = spec.get("terminationGracePeriodSeconds", 30)
    grace = int(grace)
    if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
        grace = 0
    if grace < 0:
        grace = 1
    new = clone(obj)
    new["metadata"]["deletionTimestamp"] = fmt_time(now() + datetime.timedelta(seconds=grace))
    new["metadata"]["deletionGracePeriodSeconds"] = grace
    return "update", new


IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def set_pod_condition(pod, cond):
    """podutil.UpdatePodCondition: add or replace the condition of that type;
    lastTransitionTime moves only when the status changes."""
    conds = pod.setdefault("status", {}).setdefault("conditions", [])
    cond = dict({"type": cond["type"], "status": cond["status"], "lastProbeTime": None,
                 "lastTransitionTime": fmt_time(now())}, **cond)
    for i, c in enumerate(conds):
        if c.get("type") == cond["type"]:
            if c.get("status") == cond["status"] and c.get("lastTransitionTime"):
                cond["lastTransitionTime"] = c["lastTransitionTime"]
            conds[i] = cond
            return
    conds.append(cond)


def should_delete_after_update(obj):
    meta = obj.get("metadata") or {}
    if obj.get("kind") == "Namespace" and (obj.get("spec") or {}).get("finalizers"):
        return False
    return bool(meta.get("deletionTimestamp")) and not meta.get("finalizers") and \
        meta.get("deletionGracePeriodSeconds", 0) == 0


# ---------------------------------------------------------------- scheduling


def tolerates(tol, taint):
    if tol.get("effect") and tol["effect"] != taint.get("effect"):
        return False
    op = tol.get("operator") or "Equal"
    if not tol.get("key"):
        return op == "Exists"
    if tol["key"] != taint.get("key"):
        return False
    return op == "Exists" or (tol.get("value") or "") == (taint.get("value") or "")


def _node_term_matches(term, labels):
    for e in term.get("matchExpressions") or []:
        k, op, vals = e.get("key"), e.get("operator"), e.get("values") or []
        conv = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!exists",
                "Gt": ">", "Lt": "<"}.get(op)
        if conv is None or not labels_match([(k, conv, vals)], labels):
            return False
    return True


def node_fits(pod, node):
    """Whether the binder may place pod on node (Ready, schedulable, taints
    tolerated, nodeSelector and required node affinity matched)."""
    spec, nspec = pod.get("spec") or {}, node.get("spec") or {}
    conds = (node.get("status") or {}).get("conditions") or []
    if not any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds):
        return False
    tols = spec.get("tolerations") or []
    taints = [t for t in nspec.get("taints") or [] if t.get("effect") in ("NoSchedule",
                                                                        "NoExecute")]
    if nspec.get("unschedulable"):
        taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
    if not all(any(tolerates(t, taint) for t in tols) for taint in taints):
        return False
    labels = (node.get("metadata") or {}).get("labels") or {}
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    req = ((((spec.get("affinity") or {}).get("nodeAffinity") or {})
            .get("requiredDuringSchedulingIgnoredDuringExecution")) or {})
    terms = req.get("nodeSelectorTerms") or []
    if terms and not any(_node_term_matches(t, labels) for t in terms):
        return False
    return True
