"""PersistentVolumes (cluster-scoped) and PersistentVolumeClaims
(namespaced) as kube-apiserver v1.32 serves them: defaulting, the
validation of the fields listed in README.md, the update strategies (spec
immutable but for what the binder and a resize may change, status only
through the status subresource), the printers, and a minimal
PersistentVolume binder (kube-controller-manager's persistentvolume
controller, pkg/controller/volume/persistentvolume: static binding only, no
provisioning, no recycling)."""

import copy
import sys

import registry as reg
import tables
from registry import ApiError, _NOVALUE

PV = reg.Resource("persistentvolumes", "PersistentVolume", False, short=["pv"],
                  subresources=["status"])
PVC = reg.Resource("persistentvolumeclaims", "PersistentVolumeClaim", True, short=["pvc"],
                   subresources=["status"])

ACCESS_MODES = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"]
VOLUME_MODES = ["Block", "Filesystem"]
RECLAIM = ["Delete", "Recycle", "Retain"]
HOST_PATH_TYPES = ["", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File",
                   "FileOrCreate", "Socket"]
# PersistentVolumeSource's members (the keys of a PV's spec that are a source)
PV_SOURCES = ["awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "csi", "fc",
              "flexVolume", "flocker", "gcePersistentDisk", "glusterfs", "hostPath", "iscsi",
              "local", "nfs", "photonPersistentDisk", "portworxVolume", "quobyte", "rbd",
              "scaleIO", "storageos", "vsphereVolume"]
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"


def _creating(obj):
    # Api.create validates before the object has a resourceVersion
    return not (obj.get("metadata") or {}).get("resourceVersion")


def default_pv(pv):
    spec = pv.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
    spec.setdefault("volumeMode", "Filesystem")
    if isinstance(spec.get("hostPath"), dict):
        spec["hostPath"].setdefault("type", "")
    if _creating(pv):  # PrepareForCreate: the status is the controller's
        pv["status"] = {"phase": "Pending", "lastPhaseTransitionTime": reg.fmt_time(reg.now())}


def default_pvc(pvc):
    spec = pvc.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    spec.setdefault("volumeMode", "Filesystem")
    if _creating(pvc):
        pvc["status"] = {"phase": "Pending"}


def _access_modes(errs, field, modes, required_msg):
    if not modes:
        errs.append((field, "Required value", required_msg, _NOVALUE))
        return
    for m in modes:
        reg._supported(errs, field, m, ACCESS_MODES)
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        errs.append((field, "Forbidden", "may not use ReadWriteOncePod with other access modes",
                     _NOVALUE))


def _no_backsteps(errs, field, p):
    if ".." in p.split("/"):
        errs.append((field, "Invalid value", "must not contain '..'", p))


def validate_pv(pv):
    """ValidatePersistentVolume for what cubelet and the tests use."""
    errs = []
    reg.validate_meta(PV, pv, errs)
    spec = pv.get("spec")
    if not isinstance(spec, dict):
        return errs + [("spec", "Required value", None, _NOVALUE)]
    _access_modes(errs, "spec.accessModes", spec.get("accessModes"), None)
    cap = spec.get("capacity") or {}
    if not cap:
        errs.append(("spec.capacity", "Required value", None, _NOVALUE))
    elif "storage" not in cap or len(cap) > 1:
        errs.append(("spec.capacity", "Unsupported value", 'supported values: "storage"',
                     _NOVALUE))
    else:
        q = reg.parse_quantity(cap["storage"]) if isinstance(cap["storage"], str) else None
        if q is None or q <= 0:
            errs.append(("spec.capacity[storage]", "Invalid value", "must be greater than zero",
                         cap["storage"]))
    reg._supported(errs, "spec.persistentVolumeReclaimPolicy",
                   spec.get("persistentVolumeReclaimPolicy"), RECLAIM)
    reg._supported(errs, "spec.volumeMode", spec.get("volumeMode"), VOLUME_MODES)
    present = [k for k in PV_SOURCES if spec.get(k) is not None]
    if not present:
        errs.append(("spec", "Required value", "must specify a volume type", _NOVALUE))
    for k in present[1:]:
        errs.append((f"spec.{k}", "Forbidden", "may not specify more than 1 volume type",
                     _NOVALUE))
    hp = spec.get("hostPath")
    if isinstance(hp, dict) and present[:1] == ["hostPath"]:
        if not hp.get("path"):
            errs.append(("spec.hostPath.path", "Required value", None, _NOVALUE))
        else:
            _no_backsteps(errs, "spec.hostPath.path", hp["path"])
        reg._supported(errs, "spec.hostPath.type", hp.get("type", ""), HOST_PATH_TYPES)
    loc = spec.get("local")
    if isinstance(loc, dict) and present[:1] == ["local"]:
        p = loc.get("path") or ""
        if not p:
            errs.append(("spec.local.path", "Required value", None, _NOVALUE))
        else:
            if not p.startswith("/"):
                errs.append(("spec.local.path", "Invalid value", "must be an absolute path", p))
            _no_backsteps(errs, "spec.local.path", p)
        if spec.get("nodeAffinity") is None:
            errs.append(("spec.nodeAffinity", "Required value",
                         "Local volume requires node affinity", _NOVALUE))
    na = spec.get("nodeAffinity")
    if na is not None:
        req = (na or {}).get("required")
        if req is None:
            errs.append(("spec.nodeAffinity.required", "Required value",
                         "must specify required node constraints", _NOVALUE))
        elif not (req or {}).get("nodeSelectorTerms"):
            errs.append(("spec.nodeAffinity.required.nodeSelectorTerms", "Required value",
                         "must have at least one node selector term", _NOVALUE))
    ref = spec.get("claimRef")
    if ref is not None and not isinstance(ref, dict):
        errs.append(("spec.claimRef", "Invalid value", "must be an object", _NOVALUE))
    return errs


def validate_pvc(pvc):
    """ValidatePersistentVolumeClaim for what cubelet and the tests use."""
    errs = []
    reg.validate_meta(PVC, pvc, errs)
    spec = pvc.get("spec")
    if not isinstance(spec, dict):
        return errs + [("spec", "Required value", None, _NOVALUE)]
    _access_modes(errs, "spec.accessModes", spec.get("accessModes"),
                  "at least 1 access mode is required")
    req = ((spec.get("resources") or {}).get("requests")) or {}
    if "storage" not in req:
        errs.append(("spec.resources[storage]", "Required value", None, _NOVALUE))
    else:
        q = reg.parse_quantity(req["storage"]) if isinstance(req["storage"], str) else None
        if q is None or q <= 0:
            errs.append(("spec.resources[storage]", "Invalid value",
                         "must be greater than zero", req["storage"]))
    reg._supported(errs, "spec.volumeMode", spec.get("volumeMode"), VOLUME_MODES)
    return errs


def _source(spec):
    return {k: spec.get(k) for k in PV_SOURCES if spec.get(k) is not None}


def update_pv(sub, old, new):
    """persistentvolumeStrategy / ValidatePersistentVolumeUpdate."""
    if sub == "status":
        out = copy.deepcopy(old)
        out["status"] = new.get("status") or {}
        if out["status"].get("phase") != (old.get("status") or {}).get("phase"):
            out["status"]["lastPhaseTransitionTime"] = reg.fmt_time(reg.now())
        return out
    new["status"] = copy.deepcopy(old.get("status") or {})
    os_, ns_ = old.get("spec") or {}, new.get("spec") or {}
    errs = []
    if _source(os_) != _source(ns_):
        errs.append(("spec.persistentvolumesource", "Forbidden",
                     "spec.persistentvolumesource is immutable after creation", _NOVALUE))
    if os_.get("volumeMode") != ns_.get("volumeMode"):
        errs.append(("spec.volumeMode", "Invalid value", "field is immutable",
                     ns_.get("volumeMode")))
    if os_.get("nodeAffinity") is not None and os_.get("nodeAffinity") != ns_.get("nodeAffinity"):
        errs.append(("spec.nodeAffinity", "Invalid value", "field is immutable", _NOVALUE))
    if errs:
        raise reg.invalid(PV, old["metadata"]["name"], errs)
    return new


def update_pvc(sub, old, new):
    """persistentvolumeclaimStrategy / ValidatePersistentVolumeClaimUpdate:
    the spec is immutable but for resources.requests (a bound claim), and
    volumeName may be set once."""
    if sub == "status":
        out = copy.deepcopy(old)
        out["status"] = new.get("status") or {}
        return out
    new["status"] = copy.deepcopy(old.get("status") or {})
    o, n = copy.deepcopy(old.get("spec") or {}), copy.deepcopy(new.get("spec") or {})
    if not o.get("volumeName"):
        o["volumeName"] = n.get("volumeName")
    if (old.get("status") or {}).get("phase") == "Bound":
        o.setdefault("resources", {})["requests"] = (n.get("resources") or {}).get("requests")
    for spec in (o, n):
        if spec.get("volumeName") is None:
            spec.pop("volumeName", None)
    if o != n:
        raise reg.invalid(PVC, old["metadata"]["name"], [
            ("spec", "Forbidden", "spec is immutable after creation except resources.requests "
             "and volumeAttributesClassName for bound claims", _NOVALUE)])
    return new


# ------------------------------------------------------------------ printers

_ABBREV = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX",
           "ReadWriteOncePod": "RWOP"}


def _modes(ms):
    return ",".join(_ABBREV.get(m, m) for m in ms or [])


PV_COLUMNS = [
    tables.NAME,
    tables._col("Capacity", "capacity is the description of the persistent volume's resources "
                "and capacity."),
    tables._col("Access Modes", "accessModes contains all ways the volume can be mounted."),
    tables._col("Reclaim Policy", "persistentVolumeReclaimPolicy defines what happens to a "
                "persistent volume when released from its claim."),
    tables._col("Status", "phase indicates if a volume is available, bound to a claim, or "
                "released by a claim."),
    tables._col("Claim", "claimRef is part of a bi-directional binding between "
                "PersistentVolume and PersistentVolumeClaim."),
    tables._col("StorageClass", "storageClassName is the name of StorageClass to which this "
                "persistent volume belongs."),
    tables._col("VolumeAttributesClass", "Name of VolumeAttributesClass to which this "
                "persistent volume belongs."),
    tables._col("Reason", "reason is a brief CamelCase string that describes any failure."),
    tables._col("Age", "CreationTimestamp is a timestamp representing the server time when "
                "this object was created."),
    tables._col("VolumeMode", "volumeMode defines if a volume is intended to be used with a "
                "formatted filesystem or to remain in raw block state.", 1),
]

PVC_COLUMNS = [
    tables.NAME,
    tables._col("Status", "phase represents the current phase of PersistentVolumeClaim."),
    tables._col("Volume", "volumeName is the binding reference to the PersistentVolume backing "
                "this claim."),
    tables._col("Capacity", "capacity represents the actual resources of the underlying "
                "volume."),
    tables._col("Access Modes", "accessModes contains all ways the volume can be mounted."),
    tables._col("StorageClass", "storageClassName is the name of the StorageClass required by "
                "the claim."),
    tables._col("VolumeAttributesClass", "volumeAttributesClassName may be used to set the "
                "VolumeAttributesClass used by this claim."),
    tables._col("Age", "CreationTimestamp is a timestamp representing the server time when "
                "this object was created."),
    tables._col("VolumeMode", "volumeMode defines what type of volume is required by the "
                "claim.", 1),
]


def pv_row(o):
    spec, st = o.get("spec") or {}, o.get("status") or {}
    ref = spec.get("claimRef") or {}
    claim = f"{ref.get('namespace', '')}/{ref.get('name', '')}" if ref else ""
    return {"cells": [o["metadata"]["name"], (spec.get("capacity") or {}).get("storage", ""),
                      _modes(spec.get("accessModes")),
                      spec.get("persistentVolumeReclaimPolicy", ""), st.get("phase", ""), claim,
                      spec.get("storageClassName", ""),
                      spec.get("volumeAttributesClassName") or "<unset>", st.get("reason", ""),
                      tables.since(o["metadata"].get("creationTimestamp")),
                      spec.get("volumeMode", "Filesystem")]}


def pvc_row(o):
    spec, st = o.get("spec") or {}, o.get("status") or {}
    bound = st.get("phase") == "Bound"
    return {"cells": [o["metadata"]["name"], st.get("phase", ""), spec.get("volumeName", ""),
                      (st.get("capacity") or {}).get("storage", "") if bound else "",
                      _modes(st.get("accessModes")) if bound else "",
                      spec.get("storageClassName") or "",
                      spec.get("volumeAttributesClassName") or "<unset>",
                      tables.since(o["metadata"].get("creationTimestamp")),
                      spec.get("volumeMode", "Filesystem")]}


def install():
    reg.install_resource(PV, validate_pv, update_pv, default_pv)
    reg.install_resource(PVC, validate_pvc, update_pvc, default_pvc)
    tables.PRINTERS[PV.name] = (PV_COLUMNS, pv_row)
    tables.PRINTERS[PVC.name] = (PVC_COLUMNS, pvc_row)


# ------------------------------------------------------------------ the binder


def _fits(pv, pvc):
    """findMatchingVolume's checks for one PV and a claim that names none."""
    ps, cs = pv.get("spec") or {}, pvc.get("spec") or {}
    if (ps.get("storageClassName") or "") != (cs.get("storageClassName") or ""):
        return False
    if ps.get("volumeMode", "Filesystem") != cs.get("volumeMode", "Filesystem"):
        return False
    if not set(cs.get("accessModes") or []) <= set(ps.get("accessModes") or []):
        return False
    want = reg.parse_quantity(((cs.get("resources") or {}).get("requests") or {})
                              .get("storage", "0")) or 0
    have = reg.parse_quantity((ps.get("capacity") or {}).get("storage", "0")) or 0
    if have < want:
        return False
    sel = (cs.get("selector") or {})
    labels = pv["metadata"].get("labels") or {}
    if sel.get("matchExpressions"):
        return False  # not implemented: such a claim stays Pending
    return all(labels.get(k) == v for k, v in (sel.get("matchLabels") or {}).items())


def _claim_ref(pvc):
    m = pvc["metadata"]
    return {"kind": "PersistentVolumeClaim", "namespace": m["namespace"], "name": m["name"],
            "uid": m["uid"], "apiVersion": "v1", "resourceVersion": m["resourceVersion"]}


def _bind(api, pv, pvc):
    """bindVolumeToClaim, then bindClaimToVolume, then their statuses."""
    by_ctl = not ((pv.get("spec") or {}).get("claimRef") or {}).get("uid")

    def fix_pv(o):
        o["spec"]["claimRef"] = _claim_ref(pvc)
        if by_ctl and not ((pv.get("spec") or {}).get("claimRef")):
            o["metadata"].setdefault("annotations", {})[BOUND_BY_CONTROLLER] = "yes"
        if (o.get("status") or {}).get("phase") != "Bound":
            o["status"] = {"phase": "Bound",
                           "lastPhaseTransitionTime": reg.fmt_time(reg.now())}
        return o
    api.update(PV, None, pv["metadata"]["name"], fix_pv)
    named = bool((pvc.get("spec") or {}).get("volumeName"))

    def fix_pvc(o):
        ann = o["metadata"].setdefault("annotations", {})
        ann[BIND_COMPLETED] = "yes"
        if not named:
            ann[BOUND_BY_CONTROLLER] = "yes"
        o["spec"]["volumeName"] = pv["metadata"]["name"]
        o["status"] = {"phase": "Bound", "accessModes": list(pv["spec"].get("accessModes") or []),
                       "capacity": dict(pv["spec"].get("capacity") or {})}
        return o
    api.update(PVC, pvc["metadata"]["namespace"], pvc["metadata"]["name"], fix_pvc)


def sync_volumes(api):
    pvs = {p["metadata"]["name"]: p for p in api.list(PV, None, {})[0]}
    claims = api.list(PVC, None, {})[0]
    by_key = {(c["metadata"]["namespace"], c["metadata"]["name"]): c for c in claims}
    taken = set()
    for c in claims:
        if c["metadata"].get("deletionTimestamp"):
            continue
        st = (c.get("status") or {}).get("phase")
        vn = (c.get("spec") or {}).get("volumeName")
        if st == "Bound":
            if vn and vn not in pvs:  # syncBoundClaim: the PV is gone
                def lost(o):
                    o["status"]["phase"] = "Lost"
                    return o
                api.update(PVC, c["metadata"]["namespace"], c["metadata"]["name"], lost)
            taken.add(vn)
            continue
        key = (c["metadata"]["namespace"], c["metadata"]["name"])
        if vn:  # pre-bound to a PV by the user
            pv = pvs.get(vn)
            ref = ((pv or {}).get("spec") or {}).get("claimRef") or {}
            if pv is None or (ref and ((ref.get("namespace"), ref.get("name")) != key or
                                       ref.get("uid") not in (None, "", c["metadata"]["uid"]))):
                continue  # waits for its PV (or the PV is another claim's)
            _bind(api, pv, c)
            taken.add(vn)
            continue
        pre = [p for p in pvs.values() if (((p.get("spec") or {}).get("claimRef") or {})
               .get("name"), ((p.get("spec") or {}).get("claimRef") or {}).get("namespace")) ==
               (key[1], key[0]) and not p["spec"]["claimRef"].get("uid")]
        free = [p for p in pvs.values() if not (p.get("spec") or {}).get("claimRef") and
                (p.get("status") or {}).get("phase") in ("Available", "Pending") and
                p["metadata"]["name"] not in taken and _fits(p, c)]
        cands = pre or sorted(free, key=lambda p: (
            reg.parse_quantity(p["spec"]["capacity"]["storage"]) or 0, p["metadata"]["name"]))
        if cands:
            _bind(api, cands[0], c)
            taken.add(cands[0]["metadata"]["name"])
    for name, p in pvs.items():
        if name in taken:
            continue  # bound (this pass, or before)
        ref = (p.get("spec") or {}).get("claimRef")
        phase = (p.get("status") or {}).get("phase")
        want = phase
        if not ref:
            want = "Available"
        elif ref.get("uid"):
            c = by_key.get((ref.get("namespace"), ref.get("name")))
            if c is None or c["metadata"]["uid"] != ref["uid"]:
                want = "Released"  # Retain: kept until an admin clears it
        if want != phase and phase not in ("Failed",):
            def set_phase(o, want=want):
                o["status"] = {"phase": want, "lastPhaseTransitionTime": reg.fmt_time(reg.now())}
                return o
            api.update(PV, None, name, set_phase)


def binder(api, stopping, interval=0.5):
    while not stopping.wait(interval):
        try:
            sync_volumes(api)
        except ApiError as e:  # a conflict: the next pass sees the newer object
            if e.code != 409:
                sys.stderr.write(f"apiserver: persistentvolume binder: {e}\n")
        except Exception as e:  # etcd hiccup: retry on next tick
            sys.stderr.write(f"apiserver: persistentvolume binder: {e}\n")
