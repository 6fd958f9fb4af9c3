"""Services: ClusterIP allocation in the service CIDR, the `kubernetes`
Service with its Endpoints and EndpointSlice (the apiserver's own
controller), and the endpoints/endpointslice controllers of
kube-controller-manager (see README.md, "Services")."""

import ipaddress
import random
import sys

import registry as reg
from registry import ApiError

SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror"
SERVICE_NAME = "kubernetes.io/service-name"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
CONTROLLER = "endpointslice-controller.k8s.io"


def _r(name, group=""):
    return reg.find_resource(group, "v1", name)


class Allocator:
    def __init__(self, api, cidr):
        self.api = api
        self.net = ipaddress.ip_network(cidr, strict=False)

    def first(self):
        return str(self.net.network_address + 1)

    def used(self):
        out = set()
        for s in self.api.list(_r("services"), None, {})[0]:
            for ip in (s.get("spec") or {}).get("clusterIPs") or \
                    [(s.get("spec") or {}).get("clusterIP")]:
                if ip and ip != "None":
                    out.add(ip)
        return out

    def assign(self, svc):
        """Set spec.clusterIP(s) of a Service about to be created; 422 as the
        real allocator for an address outside the range or already taken."""
        spec = svc.get("spec")
        if not isinstance(spec, dict) or spec.get("type") == "ExternalName":
            return
        name = (svc.get("metadata") or {}).get("name") or ""
        want = spec.get("clusterIP") or ((spec.get("clusterIPs") or [None])[0])
        if want == "None":
            spec["clusterIP"], spec["clusterIPs"] = "None", ["None"]
        else:
            used = self.used()
            if want:
                try:
                    ip = ipaddress.ip_address(want)
                except ValueError:
                    raise reg.invalid(_r("services"), name, [(
                        "spec.clusterIPs[0]", "Invalid value",
                        "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)", want)])
                if ip not in self.net or ip in (self.net.network_address,
                                                self.net.broadcast_address):
                    raise reg.invalid(_r("services"), name, [(
                        "spec.clusterIPs", "Invalid value",
                        f"failed to allocate IP {want}: the provided IP ({want}) is not in the "
                        f"valid range. The range of valid IPs is {self.net}", [want])])
                if want in used:
                    raise reg.invalid(_r("services"), name, [(
                        "spec.clusterIPs", "Invalid value",
                        f"failed to allocate IP {want}: provided IP is already allocated",
                        [want])])
                ip = want
            else:
                size = self.net.num_addresses - 2
                ip = None
                for _ in range(64):
                    cand = str(self.net.network_address + 1 + random.randrange(size))
                    if cand not in used and cand != self.first():
                        ip = cand
                        break
                if ip is None:
                    for k in range(2, size + 1):
                        cand = str(self.net.network_address + k)
                        if cand not in used:
                            ip = cand
                            break
                if ip is None:
                    raise ApiError(500, "InternalError", "Internal error occurred: failed to "
                                   "allocate a serviceIP: range is full")
            spec["clusterIP"], spec["clusterIPs"] = ip, [ip]
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")


def keep_cluster_ip(new, old):
    """Service update: an unset clusterIP keeps the allocated one; changing
    it is refused (ValidateServiceUpdate)."""
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    if not isinstance(new.get("spec"), dict):
        return
    for k in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
        if k in os_ and not ns.get(k):
            ns[k] = os_[k]
    if os_.get("clusterIP") and ns.get("clusterIP") != os_.get("clusterIP") and \
            ns.get("type") != "ExternalName":
        raise reg.invalid(_r("services"), new["metadata"]["name"], [(
            "spec.clusterIPs[0]", "Invalid value", "may not change once set",
            [ns.get("clusterIP")])])


def ensure_kubernetes_service(api, alloc, port):
    """The `kubernetes` Service, Endpoints and EndpointSlice in default, as
    the apiserver's controller keeps them (the fixtures' shape)."""
    svcs, eps, slices = _r("services"), _r("endpoints"), _r("endpointslices", "discovery.k8s.io")
    want_ports = [{"name": "https", "protocol": "TCP", "port": 443, "targetPort": port}]
    try:
        cur = api.get(svcs, "default", "kubernetes")
        if (cur.get("spec") or {}).get("ports") != want_ports:
            def fix(o):
                o["spec"]["ports"] = want_ports
                return o
            api.update(svcs, "default", "kubernetes", fix)
    except ApiError as e:
        if e.code != 404:
            raise
        ip = alloc.first()
        api.create(svcs, "default", {
            "metadata": {"name": "kubernetes",
                         "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"ports": want_ports, "clusterIP": ip, "clusterIPs": [ip],
                     "type": "ClusterIP", "sessionAffinity": "None", "ipFamilies": ["IPv4"],
                     "ipFamilyPolicy": "SingleStack", "internalTrafficPolicy": "Cluster"}})
    put(api, eps, "default", "kubernetes", {
        "metadata": {"name": "kubernetes", "labels": {SKIP_MIRROR: "true"}},
        "subsets": [{"addresses": [{"ip": "127.0.0.1"}],
                     "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]})
    put(api, slices, "default", "kubernetes", {
        "metadata": {"name": "kubernetes", "labels": {SERVICE_NAME: "kubernetes"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}],
        "ports": [{"name": "https", "protocol": "TCP", "port": port}]})


def put(api, res, ns, name, want):
    """Create or converge an object's content (labels and the non-metadata
    fields of want)."""
    try:
        cur = api.get(res, ns, name)
    except ApiError as e:
        if e.code != 404:
            raise
        try:
            api.create(res, ns, want)
        except ApiError as e2:
            if e2.code not in (403, 404, 409):
                raise
        return

    def same(o):
        if (o["metadata"].get("labels") or {}) != want["metadata"].get("labels", {}):
            return False
        return all(o.get(k) == v for k, v in want.items() if k != "metadata") and \
            not any(k not in want for k in o if k not in ("metadata", "kind", "apiVersion"))
    if same(cur):
        return

    def fix(o):
        for k in [k for k in o if k not in ("metadata", "kind", "apiVersion")]:
            del o[k]
        o.update({k: v for k, v in want.items() if k != "metadata"})
        o["metadata"]["labels"] = dict(want["metadata"].get("labels", {}))
        if res.name == "endpointslices":
            o["metadata"]["generation"] = o["metadata"].get("generation", 1) + 1
        return o
    try:
        api.update(res, ns, name, fix)
    except ApiError:
        pass


def _ready(pod):
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def _target_port(sp, pod):
    tp = sp.get("targetPort", sp.get("port"))
    if isinstance(tp, int):
        return tp
    for c in (pod.get("spec") or {}).get("containers") or []:
        for p in c.get("ports") or []:
            if p.get("name") == tp and (p.get("protocol") or "TCP") == sp.get("protocol", "TCP"):
                return p.get("containerPort")
    return None


def endpoints_for(svc, pods):
    """(Endpoints subsets, EndpointSlice endpoints, slice ports) of a Service
    with a selector, from the pods that match it (the endpoints controller:
    Ready pods with an IP are addresses, others notReadyAddresses; terminal
    and deleting pods are left out)."""
    spec = svc.get("spec") or {}
    sel = spec.get("selector") or {}
    addrs, not_ready, slice_eps, port_sets = [], [], [], None
    for p in pods:
        labels = p["metadata"].get("labels") or {}
        if any(labels.get(k) != v for k, v in sel.items()):
            continue
        st = p.get("status") or {}
        if not st.get("podIP") or st.get("phase") in ("Succeeded", "Failed"):
            continue
        deleting = bool(p["metadata"].get("deletionTimestamp"))
        ready = _ready(p) and not deleting
        if deleting:
            continue
        ports = []
        for sp in spec.get("ports") or []:
            tp = _target_port(sp, p)
            if tp is None:
                continue
            e = {"port": tp, "protocol": sp.get("protocol", "TCP")}
            if sp.get("name"):
                e = dict({"name": sp["name"]}, **e)
            ports.append(e)
        if port_sets is None:
            port_sets = ports
        a = {"ip": st["podIP"]}
        if p["spec"].get("nodeName"):
            a["nodeName"] = p["spec"]["nodeName"]
        a["targetRef"] = {"kind": "Pod", "namespace": p["metadata"]["namespace"],
                          "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]}
        (addrs if ready else not_ready).append(a)
        se = {"addresses": [st["podIP"]],
              "conditions": {"ready": ready, "serving": ready, "terminating": False}}
        if p["spec"].get("nodeName"):
            se["nodeName"] = p["spec"]["nodeName"]
        se["targetRef"] = a["targetRef"]
        slice_eps.append(se)
    subsets = []
    if addrs or not_ready:
        ss = {}
        if addrs:
            ss["addresses"] = sorted(addrs, key=lambda a: a["ip"])
        if not_ready:
            ss["notReadyAddresses"] = sorted(not_ready, key=lambda a: a["ip"])
        ss["ports"] = port_sets or []
        subsets.append(ss)
    sports = [{"name": x.get("name", ""), "protocol": x["protocol"], "port": x["port"]}
              for x in (port_sets or [])]
    return subsets, slice_eps, sports


def sync_endpoints(api):
    svcs, eps, slices = _r("services"), _r("endpoints"), _r("endpointslices", "discovery.k8s.io")
    services = api.list(svcs, None, {})[0]
    pods_by_ns = {}
    # the pods only for Services that select some (every second, a list of
    # a 110-pod burst decoded for none was 6 % of the stand-in's CPU)
    if any((s.get("spec") or {}).get("selector") and
           (s.get("spec") or {}).get("type") != "ExternalName" for s in services):
        for p in api.list(_r("pods"), None, {})[0]:
            pods_by_ns.setdefault(p["metadata"]["namespace"], []).append(p)
    keep = set()
    for s in services:
        ns, name = s["metadata"]["namespace"], s["metadata"]["name"]
        if not (s.get("spec") or {}).get("selector") or \
                (s.get("spec") or {}).get("type") == "ExternalName":
            continue
        keep.add((ns, name))
        subsets, seps, sports = endpoints_for(s, pods_by_ns.get(ns, []))
        labels = dict(s["metadata"].get("labels") or {})
        ep = {"metadata": {"name": name, "labels": labels}}
        if subsets:
            ep["subsets"] = subsets
        put(api, eps, ns, name, ep)
        sl_labels = dict(labels, **{SERVICE_NAME: name, MANAGED_BY: CONTROLLER})
        sl = {"metadata": {"name": f"{name}-stand-in", "labels": sl_labels},
              "addressType": "IPv4", "endpoints": seps or None, "ports": sports or None}
        sl = {k: v for k, v in sl.items() if v is not None}
        put(api, slices, ns, f"{name}-stand-in", sl)
    # Endpoints and slices of Services that are gone
    for e in api.list(eps, None, {})[0]:
        k = (e["metadata"]["namespace"], e["metadata"]["name"])
        if k not in keep and k != ("default", "kubernetes") and \
                (e["metadata"].get("labels") or {}).get(SKIP_MIRROR) != "true" and \
                not any(s["metadata"]["namespace"] == k[0] and s["metadata"]["name"] == k[1]
                        for s in services):
            try:
                api.delete(eps, k[0], k[1], {})
            except ApiError:
                pass
    for e in api.list(slices, None, {})[0]:
        lab = e["metadata"].get("labels") or {}
        if lab.get(MANAGED_BY) != CONTROLLER:
            continue
        k = (e["metadata"]["namespace"], lab.get(SERVICE_NAME))
        if k not in keep:
            try:
                api.delete(slices, k[0], e["metadata"]["name"], {})
            except ApiError:
                pass


def services_controller(api, alloc, port, stopping, interval=1.0):
    while True:
        try:
            ensure_kubernetes_service(api, alloc, port)
            sync_endpoints(api)
        except Exception as e:  # etcd hiccup: retry on next tick
            sys.stderr.write(f"apiserver: endpoints controller: {e}\n")
        if stopping.wait(interval):
            return
