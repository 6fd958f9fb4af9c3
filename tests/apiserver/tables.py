"""Server-side printing: meta.k8s.io/v1 Table rows with the columns of the
real apiserver's printers (pods, nodes, events, leases, namespaces; a
Name/Created At table for the rest). Cells are computed as if -o wide:
kubectl hides columns with priority > 0 unless asked for them."""

from registry import now, parse_time


def human_duration(secs):
    if secs < -1:
        return "<invalid>"
    if secs < 0:
        return "0s"
    if secs < 120:
        return f"{secs}s"
    minutes = secs // 60
    if minutes < 10:
        s = secs % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = secs // 3600
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


def since(ts):
    t = parse_time(ts)
    if t is None:
        return "<unknown>"
    return human_duration(int((now() - t).total_seconds()))


def _col(name, desc, priority=0, typ="string", fmt=""):
    return {"name": name, "type": typ, "format": fmt, "description": desc, "priority": priority}


NAME = _col("Name", "Name must be unique within a namespace. Is required when creating "
            "resources, although some resources may allow a client to request the generation "
            "of an appropriate name automatically.", fmt="name")

POD_COLUMNS = [
    NAME,
    _col("Ready", "The aggregate readiness state of this pod for accepting traffic."),
    _col("Status", "The aggregate status of the containers in this pod."),
    _col("Restarts", "The number of times the containers in this pod have been restarted and "
         "when the last container in this pod has restarted."),
    _col("Age", "CreationTimestamp is a timestamp representing the server time when this "
         "object was created."),
    _col("IP", "IP address allocated to the pod. Routable at least within the cluster.", 1),
    _col("Node", "NodeName is a request to schedule this pod onto a specific node.", 1),
    _col("Nominated Node", "nominatedNodeName is set only when this pod preempts other pods "
         "on the node.", 1),
    _col("Readiness Gates", "If specified, all readiness gates will be evaluated for pod "
         "readiness.", 1),
]


def _restartable(c):
    return (c or {}).get("restartPolicy") == "Always"


def pod_row(pod):
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    meta = pod.get("metadata") or {}
    restarts, sidecar_restarts = 0, 0
    last_restart, sidecar_last = "", ""
    total = len(spec.get("containers") or [])
    ready = 0
    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    for c in status.get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    inits = {c.get("name"): c for c in spec.get("initContainers") or []}
    total += sum(1 for c in inits.values() if _restartable(c))

    initializing = False
    n_init = len(spec.get("initContainers") or [])
    for i, cs in enumerate(status.get("initContainerStatuses") or []):
        restarts += cs.get("restartCount", 0)
        lt = ((cs.get("lastState") or {}).get("terminated") or {}).get("finishedAt") or ""
        last_restart = max(last_restart, lt)
        if _restartable(inits.get(cs.get("name"))):
            sidecar_restarts += cs.get("restartCount", 0)
            sidecar_last = max(sidecar_last, lt)
        state = cs.get("state") or {}
        term, wait = state.get("terminated"), state.get("waiting")
        if term is not None and term.get("exitCode", 0) == 0:
            continue
        if _restartable(inits.get(cs.get("name"))) and cs.get("started"):
            if cs.get("ready"):
                ready += 1
            continue
        if term is not None:
            if not term.get("reason"):
                reason = (f"Init:Signal:{term['signal']}" if term.get("signal")
                          else f"Init:ExitCode:{term.get('exitCode', 0)}")
            else:
                reason = "Init:" + term["reason"]
        elif wait is not None and wait.get("reason") and wait["reason"] != "PodInitializing":
            reason = "Init:" + wait["reason"]
        else:
            reason = f"Init:{i}/{n_init}"
        initializing = True
        break

    initialized = any(c.get("type") == "Initialized" and c.get("status") == "True"
                      for c in status.get("conditions") or [])
    if not initializing or initialized:
        restarts, last_restart = sidecar_restarts, sidecar_last
        running = False
        for cs in reversed(status.get("containerStatuses") or []):
            restarts += cs.get("restartCount", 0)
            lt = ((cs.get("lastState") or {}).get("terminated") or {}).get("finishedAt") or ""
            last_restart = max(last_restart, lt)
            state = cs.get("state") or {}
            term, wait = state.get("terminated"), state.get("waiting")
            if wait is not None and wait.get("reason"):
                reason = wait["reason"]
            elif term is not None and term.get("reason"):
                reason = term["reason"]
            elif term is not None:
                reason = (f"Signal:{term['signal']}" if term.get("signal")
                          else f"ExitCode:{term.get('exitCode', 0)}")
            elif cs.get("ready") and state.get("running") is not None:
                running = True
                ready += 1
        if reason == "Completed" and running:
            pod_ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                            for c in status.get("conditions") or [])
            reason = "Running" if pod_ready else "NotReady"

    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"

    restarts_s = str(restarts)
    if restarts and last_restart:
        restarts_s = f"{restarts} ({since(last_restart)} ago)"
    ips = status.get("podIPs") or []
    ip = (ips[0].get("ip") if ips else "") or "<none>"
    gates = spec.get("readinessGates") or []
    gates_s = "<none>"
    if gates:
        conds = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
        n = sum(1 for g in gates if conds.get(g.get("conditionType")) == "True")
        gates_s = f"{n}/{len(gates)}"
    cells = [meta.get("name", ""), f"{ready}/{total}", reason, restarts_s,
             since(meta.get("creationTimestamp")), ip, spec.get("nodeName") or "<none>",
             status.get("nominatedNodeName") or "<none>", gates_s]
    row = {"cells": cells}
    if phase == "Succeeded":
        row["conditions"] = [{"type": "Completed", "status": "True",
                              "reason": "Succeeded",
                              "message": "The pod has completed successfully."}]
    elif phase == "Failed":
        row["conditions"] = [{"type": "Completed", "status": "True",
                              "reason": "Failed", "message": "The pod failed."}]
    return row


NODE_COLUMNS = [
    NAME,
    _col("Status", "The status of the node"),
    _col("Roles", "The roles of the node"),
    _col("Age", "CreationTimestamp is a timestamp representing the server time when this "
         "object was created."),
    _col("Version", "Kubelet Version reported by the node."),
    _col("Internal-IP", "List of addresses reachable to the node. Queried from cloud provider, "
         "if available.", 1),
    _col("External-IP", "List of addresses reachable to the node. Queried from cloud provider, "
         "if available.", 1),
    _col("OS-Image", "OS Image reported by the node from /etc/os-release (e.g. Debian "
         "GNU/Linux 7 (wheezy)).", 1),
    _col("Kernel-Version", "Kernel Version reported by the node from 'uname -r' (e.g. "
         "3.16.0-0.bpo.4-amd64).", 1),
    _col("Container-Runtime", "ContainerRuntime Version reported by the node through runtime "
         "remote API (e.g. containerd://1.4.2).", 1),
]


def node_row(node):
    meta, spec, status = node.get("metadata") or {}, node.get("spec") or {}, \
        node.get("status") or {}
    st = []
    for c in status.get("conditions") or []:
        if c.get("type") == "Ready":
            st = ["Ready" if c.get("status") == "True" else "NotReady"]
    if not st:
        st = ["Unknown"]
    if spec.get("unschedulable"):
        st.append("SchedulingDisabled")
    roles = set()
    for k, v in (meta.get("labels") or {}).items():
        if k.startswith("node-role.kubernetes.io/") and k[len("node-role.kubernetes.io/"):]:
            roles.add(k[len("node-role.kubernetes.io/"):])
        elif k == "kubernetes.io/role" and v:
            roles.add(v)
    info = status.get("nodeInfo") or {}

    def addr(kind):
        for a in status.get("addresses") or []:
            if a.get("type") == kind:
                return a.get("address")
        return "<none>"

    return {"cells": [meta.get("name", ""), ",".join(st), ",".join(sorted(roles)) or "<none>",
                      since(meta.get("creationTimestamp")), info.get("kubeletVersion", ""),
                      addr("InternalIP"), addr("ExternalIP"),
                      info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
                      info.get("containerRuntimeVersion") or "<unknown>"]}


EVENT_COLUMNS = [
    _col("Last Seen", "Time when last this event was observed."),
    _col("Type", "Type of this event (Normal, Warning), new types could be added in the future."),
    _col("Reason", "This should be a short, machine understandable string that gives the reason "
         "for this event being generated."),
    _col("Object", "The object this Event is about."),
    _col("Subobject", "The subobject this Event is about.", 1),
    _col("Source", "The component reporting this event.", 1),
    _col("Message", "A human-readable description of the status of this operation."),
    _col("First Seen", "The time at which the event was first recorded.", 1),
    _col("Count", "The number of times this event has occurred.", 1),
    _col("Name", "Name of the event.", 1),
]


def event_row(ev):
    first = since(ev.get("firstTimestamp")) if ev.get("firstTimestamp") else \
        since(ev.get("eventTime"))
    last = since(ev.get("lastTimestamp")) if ev.get("lastTimestamp") else first
    count = ev.get("count") or 0
    if ev.get("series"):
        last = since(ev["series"].get("lastObservedTime"))
        count = ev["series"].get("count", 0)
    elif count == 0:
        count = 1
    io = ev.get("involvedObject") or {}
    target = (io.get("kind") or "").lower()
    if io.get("name"):
        target += "/" + io["name"]
    src = ev.get("source") or {}
    if src.get("component") or src.get("host"):
        source = src.get("component", "") + (", " + src["host"] if src.get("host") else "")
    else:
        source = ev.get("reportingComponent", "")
        if ev.get("reportingInstance"):
            source += ", " + ev["reportingInstance"]
    return {"cells": [last, ev.get("type", ""), ev.get("reason", ""), target,
                      io.get("fieldPath", ""), source, (ev.get("message") or "").strip(), first,
                      count, (ev.get("metadata") or {}).get("name", "")]}


LEASE_COLUMNS = [NAME, _col("Holder", "Name of the current holder of the lease."),
                 POD_COLUMNS[4]]


def lease_row(obj):
    return {"cells": [obj["metadata"]["name"], (obj.get("spec") or {}).get("holderIdentity", ""),
                      since(obj["metadata"].get("creationTimestamp"))]}


NS_COLUMNS = [NAME, _col("Status", "The status of the namespace"), POD_COLUMNS[4]]


def ns_row(obj):
    return {"cells": [obj["metadata"]["name"], (obj.get("status") or {}).get("phase", ""),
                      since(obj["metadata"].get("creationTimestamp"))]}


def _age(obj):
    return since(obj["metadata"].get("creationTimestamp"))


CM_COLUMNS = [NAME, _col("Data", "Number of data entries."), POD_COLUMNS[4]]
SECRET_COLUMNS = [NAME, _col("Type", "The type of the secret"),
                  _col("Data", "Number of data entries."), POD_COLUMNS[4]]
SA_COLUMNS = [NAME, _col("Secrets", "Secrets is a list of the secrets in the same namespace "
                         "that pods running using this ServiceAccount are allowed to use."),
              POD_COLUMNS[4]]


def cm_row(o):
    return {"cells": [o["metadata"]["name"],
                      len(o.get("data") or {}) + len(o.get("binaryData") or {}), _age(o)]}


def secret_row(o):
    return {"cells": [o["metadata"]["name"], o.get("type", ""),
                      len(o.get("data") or {}) + len(o.get("stringData") or {}), _age(o)]}


def sa_row(o):
    return {"cells": [o["metadata"]["name"], len(o.get("secrets") or []), _age(o)]}


SVC_COLUMNS = [NAME, _col("Type", "The type of the service."),
               _col("Cluster-IP", "The IP address of the service."),
               _col("External-IP", "The external IP address of the service."),
               _col("Port(s)", "The ports of the service."), POD_COLUMNS[4],
               _col("Selector", "The selector of the service.", priority=1)]
EP_COLUMNS = [NAME, _col("Endpoints", "Endpoints of the endpoints object."), POD_COLUMNS[4]]
SLICE_COLUMNS = [NAME, _col("AddressType", "The address type of the endpoint slice."),
                 _col("Ports", "The ports of the endpoint slice."),
                 _col("Endpoints", "The endpoints of the endpoint slice."), POD_COLUMNS[4]]


def _more(items, limit=3):
    if not items:
        return "<none>"
    out = ",".join(items[:limit])
    if len(items) > limit:
        out += f" + {len(items) - limit} more..."
    return out


def svc_row(o):
    spec = o.get("spec") or {}
    ports = []
    for p in spec.get("ports") or []:
        x = str(p.get("port"))
        if p.get("nodePort"):
            x += f":{p['nodePort']}"
        ports.append(f"{x}/{p.get('protocol', 'TCP')}")
    ext = ",".join(spec.get("externalIPs") or []) or (
        spec.get("externalName") if spec.get("type") == "ExternalName" else "<none>")
    sel = ",".join(f"{k}={v}" for k, v in sorted((spec.get("selector") or {}).items()))
    return {"cells": [o["metadata"]["name"], spec.get("type", ""),
                      spec.get("clusterIP") or "<none>", ext or "<none>",
                      ",".join(ports) or "<none>", _age(o), sel or "<none>"]}


def ep_row(o):
    eps = []
    for ss in o.get("subsets") or []:
        for a in ss.get("addresses") or []:
            for p in ss.get("ports") or [{}]:
                eps.append(f"{a['ip']}:{p['port']}" if p.get("port") else a["ip"])
    return {"cells": [o["metadata"]["name"], _more(eps), _age(o)]}


def slice_row(o):
    ports = [str(p.get("port")) for p in o.get("ports") or []]
    addrs = [a for e in o.get("endpoints") or [] for a in e.get("addresses") or []]
    return {"cells": [o["metadata"]["name"], o.get("addressType", ""),
                      ",".join(ports) or "<unset>", _more(addrs, 3) if addrs else "<unset>",
                      _age(o)]}


DEFAULT_COLUMNS = [NAME, _col("Created At", "CreationTimestamp is a timestamp representing the "
                              "server time when this object was created.", typ="date")]


def default_row(obj):
    return {"cells": [obj["metadata"]["name"], obj["metadata"].get("creationTimestamp")]}


PRINTERS = {"pods": (POD_COLUMNS, pod_row), "nodes": (NODE_COLUMNS, node_row),
            "events": (EVENT_COLUMNS, event_row), "leases": (LEASE_COLUMNS, lease_row),
            "namespaces": (NS_COLUMNS, ns_row), "configmaps": (CM_COLUMNS, cm_row),
            "secrets": (SECRET_COLUMNS, secret_row), "serviceaccounts": (SA_COLUMNS, sa_row),
            "services": (SVC_COLUMNS, svc_row), "endpoints": (EP_COLUMNS, ep_row),
            "endpointslices": (SLICE_COLUMNS, slice_row)}


def _partial(obj, include):
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata", {})}


def table(resource, objs, list_meta, include="Metadata", headers=True):
    cols, rowf = PRINTERS.get(resource.name, (DEFAULT_COLUMNS, default_row))
    rows = []
    for o in objs:
        r = rowf(o)
        p = _partial(o, include)
        if p is not None:
            r["object"] = p
        rows.append(r)
    out = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta,
           "columnDefinitions": cols if headers else [], "rows": rows}
    return out
