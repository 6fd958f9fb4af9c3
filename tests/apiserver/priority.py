"""PriorityClasses (scheduling.k8s.io/v1) and kube-apiserver's Priority
admission plugin (plugin/pkg/admission/priority): a pod's spec.priority is
computed from its priorityClassName (or the global default class) at create,
never taken from the client; the two system classes exist from the start, as
the scheduling/bootstrap-system-priority-classes post-start hook makes them.
The kubelet relies on the result: critical pods (priority >= 2000000000) are
the last to be evicted and get the critical share of a graceful node shutdown.
"""
import copy

import registry as reg
import tables
from registry import ApiError, _NOVALUE

GROUP = "scheduling.k8s.io"
RESOURCE = reg.Resource("priorityclasses", "PriorityClass", False, short=["pc"], group=GROUP)

HIGHEST_USER_DEFINABLE = 1000000000
SYSTEM_CRITICAL = 2 * HIGHEST_USER_DEFINABLE
SYSTEM_PREFIX = "system-"
SYSTEM_CLASSES = [
    ("system-node-critical", SYSTEM_CRITICAL + 1000,
     "Used for system critical pods that must not be moved from their current node."),
    ("system-cluster-critical", SYSTEM_CRITICAL,
     "Used for system critical pods that must run in the cluster, but can be moved to "
     "another node if necessary."),
]
POLICIES = ("Never", "PreemptLowerPriority")


def _default(obj):
    """SetDefaults_PriorityClass."""
    obj.setdefault("preemptionPolicy", "PreemptLowerPriority")


def validate(obj):
    """ValidatePriorityClass."""
    errs = []
    reg.validate_meta(RESOURCE, obj, errs)
    name = (obj.get("metadata") or {}).get("name") or ""
    value = obj.get("value")
    if not isinstance(value, int) or isinstance(value, bool):
        errs.append(("value", "Required value", None, _NOVALUE))
        return errs
    gd = bool(obj.get("globalDefault"))
    if name.startswith(SYSTEM_PREFIX):
        why = None
        for n, v, _ in SYSTEM_CLASSES:
            if n == name:
                if v != value:
                    why = f"value of {n} PriorityClass must be {v}"
                elif gd:
                    why = f"globalDefault of {n} PriorityClass must be false"
                break
        else:
            why = f"{name} is not a known system priority class"
        if why:
            errs.append(("metadata.name", "Forbidden", "priority class names with 'system-' "
                         "prefix are reserved for system use only. error: " + why, _NOVALUE))
    elif value > HIGHEST_USER_DEFINABLE:
        errs.append(("value", "Forbidden", "maximum allowed value of a user defined priority "
                     f"is {HIGHEST_USER_DEFINABLE}", _NOVALUE))
    pp = obj.get("preemptionPolicy")
    if pp not in POLICIES:
        errs.append(("preemptionPolicy", "Unsupported value",
                     'supported values: "Never", "PreemptLowerPriority"', pp))
    return errs


def prepare_update(sub, old, new):
    """ValidatePriorityClassUpdate: value and preemptionPolicy are immutable."""
    new = copy.deepcopy(new)
    _default(new)
    errs = []
    if new.get("value") != old.get("value"):
        errs.append(("value", "Forbidden", "may not be changed in an update.", _NOVALUE))
    if new.get("preemptionPolicy") != old.get("preemptionPolicy"):
        errs.append(("preemptionPolicy", "Invalid value", "field is immutable",
                     new.get("preemptionPolicy")))
    if errs:
        raise reg.invalid(RESOURCE, old["metadata"]["name"], errs)
    return new


def _forbidden(res, name, why):
    return ApiError(403, "Forbidden", f'{reg._qualified(res)} "{name}" is forbidden: {why}',
                    reg._details(res, name))


def _classes(api):
    items, _ = api.list(RESOURCE, None, {})
    return items


def _default_class(api):
    """getDefaultPriorityClass: of several global defaults, the lowest value."""
    best = None
    for pc in _classes(api):
        if pc.get("globalDefault") and (best is None or pc["value"] < best["value"]):
            best = pc
    return best


def admit_class(api, obj, old_name=None):
    """The plugin's Validate on create (old_name None) and update: one global
    default only."""
    if not isinstance(obj, dict) or not obj.get("globalDefault"):
        return
    name = (obj.get("metadata") or {}).get("name") or ""
    dpc = _default_class(api)
    if dpc is not None and (old_name is None or dpc["metadata"]["name"] != old_name):
        raise _forbidden(RESOURCE, name, f"PriorityClass {dpc['metadata']['name']} is already "
                         "marked as default. Only one default can exist")


def admit_pod(api, pod):
    """The plugin's Admit on a pod create (mutates pod)."""
    if not isinstance(pod, dict) or not isinstance(pod.get("spec"), dict):
        return
    spec = pod["spec"]
    name = (pod.get("metadata") or {}).get("name") or ""
    pods = reg.find_resource("", "v1", "pods")
    cls = spec.get("priorityClassName") or ""
    if not cls:
        dpc = _default_class(api)
        cls, value, policy = (dpc["metadata"]["name"], dpc["value"],
                              dpc.get("preemptionPolicy")) if dpc else ("", 0, None)
        if dpc is None:
            policy = "PreemptLowerPriority"
    else:
        try:
            pc = api.get(RESOURCE, None, cls)
        except ApiError as e:
            if e.code == 404:
                raise _forbidden(pods, name, f"no PriorityClass with name {cls} was found")
            raise
        value, policy = pc["value"], pc.get("preemptionPolicy")
    if cls:
        spec["priorityClassName"] = cls
    given = spec.get("priority")
    if given is not None and given != value:
        raise _forbidden(pods, name, f"the integer value of priority ({given}) must not be "
                         "provided in pod spec; priority admission controller computed "
                         f"{value} from the given PriorityClass name")
    spec["priority"] = value
    if policy is not None:
        if spec.get("preemptionPolicy") is not None and spec["preemptionPolicy"] != policy:
            raise _forbidden(pods, name, "the string value of PreemptionPolicy "
                             f"({spec['preemptionPolicy']}) must not be provided in pod spec; "
                             f"priority admission controller computed {policy} from the "
                             "given PriorityClass name")
        spec["preemptionPolicy"] = policy


def ensure_system_classes(api):
    """The post-start hook: the system classes, made when missing."""
    for name, value, desc in SYSTEM_CLASSES:
        try:
            api.create(RESOURCE, None, {"metadata": {"name": name}, "value": value,
                                        "description": desc})
        except ApiError as e:
            if e.code != 409:
                raise


COLUMNS = [
    tables.NAME,
    tables._col("Value", "value represents the integer value of this priority class. This is "
                "the actual priority that pods receive when they have the name of this class "
                "in their pod spec.", typ="integer"),
    tables._col("Global-Default", "globalDefault specifies whether this PriorityClass should "
                "be considered as the default priority for pods that do not have any priority "
                "class.", typ="boolean"),
    tables.POD_COLUMNS[4],
    tables._col("PreemptionPolicy", "preemptionPolicy is the Policy for preempting pods with "
                "lower priority.", priority=1),
]


def row(o):
    return {"cells": [o["metadata"]["name"], o.get("value", 0), bool(o.get("globalDefault")),
                      tables.since(o["metadata"].get("creationTimestamp")),
                      o.get("preemptionPolicy") or ""]}


def install():
    """Register the resource with the registry, discovery and the printers."""
    reg.install_resource(RESOURCE, validate, prepare_update, _default)
    tables.PRINTERS[RESOURCE.name] = (COLUMNS, row)
