"""Authorization as kube-apiserver's --authorization-mode=Node,RBAC does it,
and the NodeRestriction admission plugin (see README.md, "Authorization").

Behaviour and texts follow plugin/pkg/auth/authorizer/node,
plugin/pkg/auth/authorizer/rbac, plugin/pkg/admission/noderestriction and the
apiserver's forbidden responses (endpoints/handlers/responsewriters). The
node graph is not kept in memory: each decision reads the pods bound to the
node from the store."""

import registry as reg
from registry import ApiError

NODE_PREFIX = "system:node:"
MIRROR = "kubernetes.io/config.mirror"


class User:
    __slots__ = ("name", "groups", "uid", "extra")

    def __init__(self, name, groups=(), uid="", extra=None):
        self.name, self.groups, self.uid = name, list(groups), uid
        self.extra = dict(extra or {})

    def info(self):
        """The user as TokenReview/SubjectAccessReview spell it."""
        u = {"username": self.name}
        if self.uid:
            u["uid"] = self.uid
        u["groups"] = list(self.groups)
        if self.extra:
            u["extra"] = {k: list(v) for k, v in self.extra.items()}
        return u


def with_authenticated(name, groups):
    gs = list(groups)
    if name != "system:anonymous" and "system:authenticated" not in gs:
        gs.append("system:authenticated")
    return gs


def node_name(user):
    """The default NodeIdentifier: system:node:<name> in group system:nodes."""
    if user is None or "system:nodes" not in user.groups:
        return None
    if not user.name.startswith(NODE_PREFIX):
        return None
    return user.name[len(NODE_PREFIX):]


class Attrs:
    """authorizer.Attributes of one request."""

    def __init__(self, user, verb, resource="", group="", namespace="", name="",
                 subresource="", path="", fields=None, is_resource=True):
        self.user, self.verb, self.resource, self.group = user, verb, resource, group
        self.namespace, self.name, self.subresource = namespace or "", name or "", \
            subresource or ""
        self.path, self.fields, self.is_resource = path, fields or [], is_resource


def field_reqs(sel):
    """[(field, op, value)] of a fieldSelector string (= and == are Equals)."""
    out = []
    for part in reg._split_top(sel or ""):
        part = part.strip()
        if not part:
            continue
        for op in ("!=", "==", "="):
            if op in part:
                k, v = part.split(op, 1)
                out.append((k.strip(), "!=" if op == "!=" else "=", v.strip()))
                break
    return out


def request_attrs(user, method, res, ns, name, sub, q):
    """The RequestInfo of a resource request, as the apiserver's
    RequestInfoFactory derives it."""
    watch = q.get("watch") in ("true", "1")
    fields = []
    try:
        fields = field_reqs(q.get("fieldSelector", ""))
    except Exception:
        fields = []
    if method in ("GET", "HEAD"):
        verb = "watch" if watch else ("get" if name else "list")
    elif method == "POST":
        verb = "create"
    elif method == "PUT":
        verb = "update"
    elif method == "PATCH":
        verb = "patch"
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = method.lower()
    if verb in ("list", "watch", "deletecollection") and not name:
        for f, op, v in fields:  # a metadata.name selector names the object
            if f == "metadata.name" and op == "=":
                name = v
    return Attrs(user, verb, res.name, res.group, ns or "", name or "", sub or "",
                 fields=fields)


def forbidden_message(a, reason):
    u = a.user.name if a.user else ""
    if not a.is_resource:
        msg = f'User "{u}" cannot {a.verb} path "{a.path}"'
    else:
        r = a.resource + (f"/{a.subresource}" if a.subresource else "")
        if a.namespace:
            msg = (f'User "{u}" cannot {a.verb} resource "{r}" in API group "{a.group}" '
                   f'in the namespace "{a.namespace}"')
        else:
            msg = (f'User "{u}" cannot {a.verb} resource "{r}" in API group "{a.group}" '
                   "at the cluster scope")
    return msg + (f": {reason}" if reason else "")


def forbidden(a, reason):
    """The 403 Status of a refused request (responsewriters.Forbidden)."""
    msg = forbidden_message(a, reason)
    if not a.is_resource:
        return ApiError(403, "Forbidden", f"forbidden: {msg}", {})
    qual = a.resource + (f".{a.group}" if a.group else "")
    details = {"kind": a.resource}
    if a.group:
        details["group"] = a.group
    if a.name:
        details = dict({"name": a.name}, **details)
        return ApiError(403, "Forbidden", f'{qual} "{a.name}" is forbidden: {msg}', details)
    return ApiError(403, "Forbidden", f"{qual} is forbidden: {msg}", details)


def admission_forbidden(res, name, why):
    """admission.NewForbidden: `<resource> "<name>" is forbidden: <why>`."""
    qual = reg._qualified(res)
    if name:
        return ApiError(403, "Forbidden", f'{qual} "{name}" is forbidden: {why}',
                        reg._details(res, name))
    return ApiError(403, "Forbidden", f"{qual} is forbidden: {why}", {"kind": res.name})


# ------------------------------------------------------------------ RBAC


def rule(verbs, groups=("",), resources=(), names=(), urls=()):
    return {"verbs": list(verbs), "apiGroups": list(groups), "resources": list(resources),
            "resourceNames": list(names), "nonResourceURLs": list(urls)}


DISCOVERY_URLS = ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
                  "/openapi/*", "/readyz", "/version", "/version/"]
PUBLIC_INFO_URLS = ["/healthz", "/livez", "/readyz", "/version", "/version/"]

# The bootstrap ClusterRoles a fresh cluster binds to everyone (plus the
# stand-in's own for its extra identities); they are built in, not stored.
BOOTSTRAP_ROLES = {
    "cluster-admin": [rule(["*"], ["*"], ["*"]), rule(["*"], [], urls=["*"])],
    "system:discovery": [rule(["get"], [], urls=DISCOVERY_URLS)],
    "system:public-info-viewer": [rule(["get"], [], urls=PUBLIC_INFO_URLS)],
    "system:basic-user": [
        rule(["create"], ["authorization.k8s.io"],
             ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]),
        rule(["create"], ["authentication.k8s.io"], ["selfsubjectreviews"])],
    "system:kubelet-api-admin": [
        rule(["get", "list", "watch"], [""], ["nodes"]),
        rule(["proxy"], [""], ["nodes"]),
        rule(["*"], [""], ["nodes/log", "nodes/metrics", "nodes/proxy", "nodes/stats"])],
    "stand-in:stats-reader": [
        rule(["get", "list", "watch", "create"], [""], ["nodes/stats"])],
    # TLS bootstrap: the bootstrap ClusterRoles kubeadm binds (issue 19).
    "system:node-bootstrapper": [
        rule(["create", "get", "list", "watch"], ["certificates.k8s.io"],
             ["certificatesigningrequests"])],
    "system:certificates.k8s.io:certificatesigningrequests:nodeclient": [
        rule(["create"], ["certificates.k8s.io"], ["certificatesigningrequests/nodeclient"])],
    "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient": [
        rule(["create"], ["certificates.k8s.io"],
             ["certificatesigningrequests/selfnodeclient"])],
    "kubeadm:get-nodes": [rule(["get"], [""], ["nodes"])],
}
# kubeadm init's bindings for joining nodes (phases bootstrap-token and
# kubelet-finalize): the default node token's group may create CSRs, have
# them auto-approved and get Nodes; nodes may renew their own certificate.
KUBEADM_NODE_TOKEN_GROUP = "system:bootstrappers:kubeadm:default-node-token"
KUBEADM_BINDINGS = [
    ("kubeadm:kubelet-bootstrap", "system:node-bootstrapper", KUBEADM_NODE_TOKEN_GROUP),
    ("kubeadm:node-autoapprove-bootstrap",
     "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
     KUBEADM_NODE_TOKEN_GROUP),
    ("kubeadm:node-autoapprove-certificate-rotation",
     "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", "system:nodes"),
    ("kubeadm:get-nodes", "kubeadm:get-nodes", KUBEADM_NODE_TOKEN_GROUP),
]


def bootstrap_bindings(stats_users):
    subj = [{"kind": "Group", "name": "system:authenticated"}]
    b = [("cluster-admin", "cluster-admin", [{"kind": "Group", "name": "system:masters"}]),
         ("system:discovery", "system:discovery", subj),
         ("system:basic-user", "system:basic-user", subj),
         ("system:public-info-viewer", "system:public-info-viewer",
          subj + [{"kind": "Group", "name": "system:unauthenticated"}]),
         ("system:kube-apiserver-kubelet-client", "system:kubelet-api-admin",
          [{"kind": "User", "name": "kube-apiserver-kubelet-client"}]),
         ("stand-in:stats-reader", "stand-in:stats-reader",
          [{"kind": "User", "name": u} for u in sorted(stats_users)] +
          [{"kind": "Group", "name": "test:stats-readers"}])]
    b += [(n, r, [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": g}])
          for n, r, g in KUBEADM_BINDINGS]
    return [{"metadata": {"name": n}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                  "kind": "ClusterRole", "name": r},
             "subjects": s} for n, r, s in b]


def _subject_matches(s, user, ns):
    kind, name = s.get("kind"), s.get("name")
    if kind == "User":
        return user.name == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        return user.name == f"system:serviceaccount:{s.get('namespace') or ns}:{name}"
    return False


def _has(lst, v):
    return "*" in (lst or []) or v in (lst or [])


def rule_allows(r, a):
    if not _has(r.get("verbs"), a.verb):
        return False
    if not a.is_resource:
        for u in r.get("nonResourceURLs") or []:
            if u == "*" or u == a.path or (u.endswith("*") and a.path.startswith(u[:-1])):
                return True
        return False
    if not _has(r.get("apiGroups"), a.group):
        return False
    res = a.resource + (f"/{a.subresource}" if a.subresource else "")
    ok = False
    for x in r.get("resources") or []:
        if x == "*" or x == res or (a.subresource and x == f"*/{a.subresource}"):
            ok = True
    if not ok:
        return False
    names = r.get("resourceNames") or []
    return not names or a.name in names


class Rbac:
    def __init__(self, api, stats_users=()):
        self.api = api
        self.bindings = bootstrap_bindings(set(stats_users) or {"stand-in-no-stats-user"})

    def _stored(self, resname, ns=None):
        r = reg.find_resource("rbac.authorization.k8s.io", "v1", resname)
        try:
            return self.api.list(r, ns, {})[0]
        except ApiError:
            return []

    def _role_rules(self, ref, ns):
        kind, name = ref.get("kind"), ref.get("name")
        if kind == "ClusterRole" and name in BOOTSTRAP_ROLES:
            return BOOTSTRAP_ROLES[name], None
        res = reg.find_resource("rbac.authorization.k8s.io", "v1",
                                "clusterroles" if kind == "ClusterRole" else "roles")
        try:
            obj = self.api.get(res, None if kind == "ClusterRole" else ns, name)
        except ApiError:
            what = "clusterrole" if kind == "ClusterRole" else "role"
            return [], f'{what}.rbac.authorization.k8s.io "{name}" not found'
        return obj.get("rules") or [], None

    def authorize(self, a):
        """(allowed, reason)."""
        user, errs = a.user, []
        # The stored bindings are read only when the bootstrap ones (checked
        # first, as before) do not allow: the same answer without an etcd
        # list per request for the admin and the nodes.
        def crbs():
            yield from self.bindings
            yield from self._stored("clusterrolebindings")
        for b in crbs():
            if not any(_subject_matches(s, user, "") for s in b.get("subjects") or []):
                continue
            rules, err = self._role_rules(b.get("roleRef") or {}, None)
            if err:
                errs.append(err)
            for r in rules:
                if rule_allows(r, a):
                    return True, (f'RBAC: allowed by ClusterRoleBinding "{b["metadata"]["name"]}"'
                                  f' of ClusterRole "{b["roleRef"]["name"]}" to '
                                  f'{self._who(b, user, "")}')
        if a.namespace:
            for b in self._stored("rolebindings", a.namespace):
                if not any(_subject_matches(s, user, a.namespace)
                           for s in b.get("subjects") or []):
                    continue
                rules, err = self._role_rules(b.get("roleRef") or {}, a.namespace)
                if err:
                    errs.append(err)
                for r in rules:
                    if rule_allows(r, a):
                        return True, (f'RBAC: allowed by RoleBinding "{b["metadata"]["name"]}/'
                                      f'{a.namespace}" of {b["roleRef"].get("kind")} '
                                      f'"{b["roleRef"]["name"]}" to '
                                      f'{self._who(b, user, a.namespace)}')
        if errs:
            return False, "RBAC: " + (errs[0] if len(errs) == 1 else
                                      "[" + ", ".join(errs) + "]")
        return False, ""

    @staticmethod
    def _who(b, user, ns):
        for s in b.get("subjects") or []:
            if _subject_matches(s, user, ns):
                if s.get("kind") == "ServiceAccount":
                    return f'ServiceAccount "{s["name"]}/{s.get("namespace") or ns}"'
                return f'{s.get("kind")} "{s.get("name")}"'
        return ""


# ------------------------------------------------------------------ Node authorizer

# bootstrappolicy.NodeRules(): what every node may do regardless of the graph.
NODE_RULES = [
    rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
    rule(["create"], ["authorization.k8s.io"],
         ["subjectaccessreviews", "localsubjectaccessreviews"]),
    rule(["get", "list", "watch"], [""], ["services"]),
    rule(["create", "get", "list", "watch"], [""], ["nodes"]),
    rule(["update", "patch"], [""], ["nodes/status"]),
    rule(["update", "patch"], [""], ["nodes"]),
    rule(["create", "update", "patch"], [""], ["events"]),
    rule(["create", "update", "patch"], ["events.k8s.io"], ["events"]),
    rule(["get", "list", "watch"], [""], ["pods"]),
    rule(["create", "delete"], [""], ["pods"]),
    rule(["update", "patch"], [""], ["pods/status"]),
    rule(["create"], [""], ["pods/eviction"]),
    rule(["get", "list", "watch"], [""], ["secrets", "configmaps"]),
    rule(["get"], [""], ["persistentvolumeclaims", "persistentvolumes"]),
    rule(["get"], [""], ["endpoints"]),
    rule(["create", "get", "list", "watch"], ["certificates.k8s.io"],
         ["certificatesigningrequests"]),
    rule(["get", "create", "update", "patch", "delete"], ["coordination.k8s.io"], ["leases"]),
    rule(["get"], ["storage.k8s.io"], ["volumeattachments"]),
    rule(["create"], [""], ["serviceaccounts/token"]),
    rule(["get", "list", "watch"], ["node.k8s.io"], ["runtimeclasses"]),
    rule(["get", "list", "watch"], ["storage.k8s.io"], ["csidrivers"]),
    rule(["get", "create", "update", "patch", "delete"], ["storage.k8s.io"], ["csinodes"]),
]


def pod_references(pod):
    """{kind: set(names)} of the objects a pod's graph edges point at
    (secrets, configmaps, persistentvolumeclaims, serviceaccounts), as
    podutil.VisitPodSecretNames/VisitPodConfigmapNames walk them."""
    spec = pod.get("spec") or {}
    out = {"secrets": set(), "configmaps": set(), "persistentvolumeclaims": set(),
           "serviceaccounts": set()}
    if spec.get("serviceAccountName"):
        out["serviceaccounts"].add(spec["serviceAccountName"])
    for s in spec.get("imagePullSecrets") or []:
        if isinstance(s, dict) and s.get("name"):
            out["secrets"].add(s["name"])
    conts = [c for f in ("initContainers", "containers", "ephemeralContainers")
             for c in spec.get(f) or [] if isinstance(c, dict)]
    for c in conts:
        for ef in c.get("envFrom") or []:
            if (ef.get("secretRef") or {}).get("name"):
                out["secrets"].add(ef["secretRef"]["name"])
            if (ef.get("configMapRef") or {}).get("name"):
                out["configmaps"].add(ef["configMapRef"]["name"])
        for e in c.get("env") or []:
            vf = e.get("valueFrom") or {}
            if (vf.get("secretKeyRef") or {}).get("name"):
                out["secrets"].add(vf["secretKeyRef"]["name"])
            if (vf.get("configMapKeyRef") or {}).get("name"):
                out["configmaps"].add(vf["configMapKeyRef"]["name"])
    for v in spec.get("volumes") or []:
        if not isinstance(v, dict):
            continue
        if (v.get("secret") or {}).get("secretName"):
            out["secrets"].add(v["secret"]["secretName"])
        if (v.get("configMap") or {}).get("name"):
            out["configmaps"].add(v["configMap"]["name"])
        if (v.get("persistentVolumeClaim") or {}).get("claimName"):
            out["persistentvolumeclaims"].add(v["persistentVolumeClaim"]["claimName"])
        if (v.get("ephemeral") or {}).get("volumeClaimTemplate") is not None:
            out["persistentvolumeclaims"].add(f"{pod['metadata']['name']}-{v.get('name')}")
        for src in (v.get("projected") or {}).get("sources") or []:
            if (src.get("secret") or {}).get("name"):
                out["secrets"].add(src["secret"]["name"])
            if (src.get("configMap") or {}).get("name"):
                out["configmaps"].add(src["configMap"]["name"])
        for k in ("azureFile", "cephfs", "cinder", "flexVolume", "iscsi", "rbd",
                  "scaleIO", "storageos", "csi"):
            d = v.get(k) or {}
            for ref in ("secretRef", "nodePublishSecretRef"):
                if (d.get(ref) or {}).get("name"):
                    out["secrets"].add(d[ref]["name"])
            if k == "azureFile" and d.get("secretName"):
                out["secrets"].add(d["secretName"])
    return out


class NodeAuthorizer:
    def __init__(self, api):
        self.api = api

    def _pods_on(self, node):
        pods = reg.find_resource("", "v1", "pods")
        return self.api.list(pods, None, {"fieldSelector": f"spec.nodeName={node}"})[0]

    def related(self, node, kind, ns, name):
        """Is there a path kind/ns/name -> node in the node graph?"""
        if kind == "configmaps":
            try:
                n = self.api.get(reg.find_resource("", "v1", "nodes"), None, node)
                cs = ((n.get("spec") or {}).get("configSource") or {}).get("configMap") or {}
                if cs.get("name") == name and cs.get("namespace") == ns:
                    return True
            except ApiError:
                pass
        if kind == "persistentvolumes":
            # pv -> pvc from the PV's claimRef (graph_populator AddPV), then
            # the claim's edge to the node's pods
            try:
                pv = self.api.get(reg.find_resource("", "v1", "persistentvolumes"), None, name)
            except ApiError:
                return False
            ref = (pv.get("spec") or {}).get("claimRef") or {}
            return bool(ref.get("name")) and self.related(
                node, "persistentvolumeclaims", ref.get("namespace") or "", ref["name"])
        for p in self._pods_on(node):
            if p["metadata"].get("namespace") != ns:
                continue
            if kind == "pods":
                if p["metadata"]["name"] == name:
                    return True
                continue
            if name in pod_references(p)[kind]:
                return True
        return False

    def authorize(self, a):
        """(decision, reason): decision True allows, None is no opinion."""
        node = node_name(a.user)
        if node is None:
            return None, ""
        if node == "":
            return None, f'unknown node for user "{a.user.name}"'
        if a.is_resource:
            g, r = a.group, a.resource
            if g == "" and r in ("secrets", "configmaps"):
                return self._read_namespaced(node, r, a)
            if g == "" and r == "persistentvolumeclaims":
                if a.subresource == "status":
                    if a.verb not in ("update", "patch"):
                        return None, "can only get/update/patch this type"
                    return self._graph(node, r, a)
                return self._get(node, r, a)
            if g == "" and r == "persistentvolumes":
                return self._get(node, r, a)
            if g == "" and r == "serviceaccounts":
                if a.verb != "create" or not a.name:
                    return None, "can only create tokens for individual service accounts"
                if a.subresource != "token":
                    return None, "can only create token subresource of serviceaccount"
                return self._graph(node, r, a)
            if g == "coordination.k8s.io" and r == "leases":
                if a.verb not in ("get", "create", "update", "patch", "delete"):
                    return None, "can only get, create, update, patch, or delete a node lease"
                if a.namespace != "kube-node-lease":
                    return None, 'can only access leases in the "kube-node-lease" system namespace'
                if a.verb != "create" and a.name != node:
                    return None, ("can only access node lease with the same name as the "
                                  "requesting node")
                return True, ""
            if g == "" and r == "nodes":
                return self._node(node, a)
            if g == "" and r == "pods":
                return self._pod(node, a)
        if any(rule_allows(x, a) for x in NODE_RULES):
            return True, ""
        return None, ""

    def _graph(self, node, kind, a):
        if not a.name:
            return None, "No Object name found"
        if self.related(node, kind, a.namespace, a.name):
            return True, ""
        return None, f"no relationship found between node '{node}' and this object"

    def _get(self, node, kind, a):
        if a.verb != "get":
            return None, "can only get individual resources of this type"
        if a.subresource:
            return None, "cannot get subresource"
        return self._graph(node, kind, a)

    def _read_namespaced(self, node, kind, a):
        if a.verb not in ("get", "list", "watch"):
            return None, "can only read resources of this type"
        if a.subresource:
            return None, "cannot read subresource"
        if not a.namespace:
            return None, "can only read namespaced object of this type"
        return self._graph(node, kind, a)

    def _node(self, node, a):
        if a.subresource == "":
            if a.verb in ("create", "update", "patch"):
                return True, ""
            if a.verb in ("get", "list", "watch"):
                if a.name == node:
                    return True, ""
                if a.name == "":
                    return None, (f"node '{node}' cannot read all nodes, only its own Node "
                                  "object")
                return None, f"node '{node}' cannot read '{a.name}', only its own Node object"
        elif a.subresource == "status" and a.verb in ("update", "patch"):
            return True, ""
        return None, ""

    def _pod(self, node, a):
        if a.subresource == "":
            if a.verb == "get":
                return self._get(node, "pods", a)
            if a.verb in ("list", "watch"):
                for f, op, v in a.fields:
                    if f == "spec.nodeName" and op == "=" and v == node:
                        return True, ""
                if a.name:
                    return self._graph(node, "pods", a)
                return None, "can only list/watch pods with spec.nodeName field selector"
            if a.verb in ("create", "delete"):
                return True, ""
        elif a.subresource == "status" and a.verb in ("update", "patch"):
            return True, ""
        elif a.subresource == "eviction" and a.verb == "create":
            return True, ""
        return None, ""


class Authorizer:
    """The union Node,RBAC; an allow from either wins, reasons of both are
    joined with a newline (the union authorizer)."""

    def __init__(self, api, stats_users=()):
        self.node = NodeAuthorizer(api)
        self.rbac = Rbac(api, stats_users)

    def authorize(self, a):
        reasons = []
        d, why = self.node.authorize(a)
        if d:
            return True, why
        if why:
            reasons.append(why)
        ok, why = self.rbac.authorize(a)
        if ok:
            return True, why
        if why:
            reasons.append(why)
        return False, "\n".join(reasons)


# ------------------------------------------------------------------ NodeRestriction

KUBELET_LABELS = {"kubernetes.io/hostname", "kubernetes.io/instance-type", "kubernetes.io/os",
                  "kubernetes.io/arch", "beta.kubernetes.io/instance-type",
                  "beta.kubernetes.io/os", "beta.kubernetes.io/arch",
                  "failure-domain.beta.kubernetes.io/zone",
                  "failure-domain.beta.kubernetes.io/region", "topology.kubernetes.io/zone",
                  "topology.kubernetes.io/region", "node.kubernetes.io/instance-type"}
KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")


def _label_ns(k):
    return k.split("/", 1)[0] if "/" in k else ""


def _is_kubelet_label(k):
    if k in KUBELET_LABELS:
        return True
    ns = _label_ns(k)
    return any(ns == n or ns.endswith("." + n) for n in KUBELET_LABEL_NAMESPACES)


def forbidden_labels(new, old):
    new, old = new or {}, old or {}
    mod = {k for k in set(new) | set(old) if new.get(k) != old.get(k) or (k in new) != (k in old)}
    out = set()
    for k in mod:
        ns = _label_ns(k)
        if ns == "node-restriction.kubernetes.io" or ns.endswith(".node-restriction.kubernetes.io"):
            out.add(k)
        kube = ns in ("kubernetes.io", "k8s.io") or ns.endswith(".kubernetes.io") or \
            ns.endswith(".k8s.io")
        if kube and not _is_kubelet_label(k):
            out.add(k)
    return sorted(out)


class NodeRestriction:
    """Checks of the NodeRestriction admission plugin for requests of node
    identities; each raises the plugin's 403 (or the lookup's 404)."""

    def __init__(self, api):
        self.api = api
        self.pods = reg.find_resource("", "v1", "pods")
        self.nodes = reg.find_resource("", "v1", "nodes")

    def pod_create(self, node, pod):
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        name = meta.get("name") or ""
        f = lambda why: admission_forbidden(self.pods, name, why)  # noqa: E731
        if MIRROR not in (meta.get("annotations") or {}):
            raise f(f'pod does not have "{MIRROR}" annotation, node "{node}" can only create '
                    "mirror pods")
        if spec.get("nodeName") != node:
            raise f(f'node "{node}" can only create pods with spec.nodeName set to itself')
        owners = meta.get("ownerReferences") or []
        if len(owners) > 1:
            raise f(f'node "{node}" can only create pods with a single owner reference set '
                    "to itself")
        if not owners:
            raise f(f'node "{node}" can only create pods with an owner reference set to itself')
        o = owners[0]
        if o.get("apiVersion") != "v1" or o.get("kind") != "Node" or o.get("name") != node:
            raise f(f'node "{node}" can only create pods with an owner reference set to itself')
        if not o.get("controller"):
            raise f(f'node "{node}" can only create pods with a controller owner reference set '
                    "to itself")
        if o.get("blockOwnerDeletion"):
            raise f(f'node "{node}" must not set blockOwnerDeletion on an owner reference')
        n = self.api.get(self.nodes, None, node)
        if o.get("uid") != n["metadata"].get("uid"):
            raise f(f"node {node} UID mismatch: expected {o.get('uid')} got "
                    f"{n['metadata'].get('uid')}")
        refs = pod_references(pod)
        if spec.get("serviceAccountName"):
            raise f(f'node "{node}" can not create pods that reference a service account')
        if refs["secrets"]:
            raise f(f'node "{node}" can not create pods that reference secrets')
        if refs["configmaps"]:
            raise f(f'node "{node}" can not create pods that reference configmaps')
        for v in spec.get("volumes") or []:
            for src in (v.get("projected") or {}).get("sources") or []:
                if src.get("clusterTrustBundle") is not None:
                    raise f(f'node "{node}" can not create pods that reference '
                            "clustertrustbundles")
        if refs["persistentvolumeclaims"]:
            raise f(f'node "{node}" can not create pods that reference persistentvolumeclaims')

    def _existing_pod(self, ns, name):
        return self.api.get(self.pods, ns, name)  # NotFound passes through

    def pod_delete(self, node, ns, name):
        if (self._existing_pod(ns, name).get("spec") or {}).get("nodeName") != node:
            raise admission_forbidden(self.pods, name, f'node "{node}" can only delete pods '
                                      "with spec.nodeName set to itself")

    def pod_evict(self, node, ns, name):
        if (self._existing_pod(ns, name).get("spec") or {}).get("nodeName") != node:
            raise admission_forbidden(self.pods, name, f"node {node} can only evict pods with "
                                      "spec.nodeName set to itself")

    def pod_status(self, node, old, new):
        name = old["metadata"]["name"]
        if (old.get("spec") or {}).get("nodeName") != node:
            raise admission_forbidden(self.pods, name, f'node "{node}" can only update pod '
                                      "status for pods with spec.nodeName set to itself")
        if (old["metadata"].get("labels") or {}) != (new["metadata"].get("labels") or {}):
            raise admission_forbidden(self.pods, name, f'node "{node}" cannot update labels '
                                      "through pod status")

    def node_write(self, node, verb, name, new, old):
        if name != node:
            raise admission_forbidden(self.nodes, name, f'node "{node}" is not allowed to '
                                      f'modify node "{name}"')
        if verb == "create":
            if (new.get("spec") or {}).get("configSource") is not None:
                raise admission_forbidden(self.nodes, name, f'node "{node}" is not allowed to '
                                          "create pods with a non-nil configSource")
            bad = forbidden_labels((new.get("metadata") or {}).get("labels"), None)
            if bad:
                raise admission_forbidden(self.nodes, name, f'node "{node}" is not allowed to '
                                          f"set the following labels: {', '.join(bad)}")
        elif old is not None:
            ncs = (new.get("spec") or {}).get("configSource")
            if ncs is not None and ncs != (old.get("spec") or {}).get("configSource"):
                raise admission_forbidden(self.nodes, name, f'node "{node}" is not allowed to '
                                          "update configSource to a new non-nil configSource")
            if ((new.get("spec") or {}).get("taints") or []) != \
                    ((old.get("spec") or {}).get("taints") or []):
                raise admission_forbidden(self.nodes, name, f'node "{node}" is not allowed to '
                                          "modify taints")
            bad = forbidden_labels((new.get("metadata") or {}).get("labels"),
                                   (old.get("metadata") or {}).get("labels"))
            if bad:
                raise admission_forbidden(self.nodes, name, "is not allowed to modify labels: "
                                          + ", ".join(bad))

    def lease(self, node, verb, ns, name, obj):
        leases = reg.find_resource("coordination.k8s.io", "v1", "leases")
        if ns != "kube-node-lease":
            raise admission_forbidden(leases, name, 'can only access leases in the '
                                      '"kube-node-lease" system namespace')
        n = ((obj or {}).get("metadata") or {}).get("name") if verb == "create" else name
        if n != node:
            raise admission_forbidden(leases, name, "can only access node lease with the same "
                                      "name as the requesting node")

    def token_request(self, node, ns, sa_name, tr):
        sas = reg.find_resource("", "v1", "serviceaccounts")
        ref = ((tr or {}).get("spec") or {}).get("boundObjectRef") or {}
        if not ref or ref.get("apiVersion") != "v1" or ref.get("kind") != "Pod" or \
                not ref.get("name"):
            raise admission_forbidden(sas, sa_name, "node requested token not bound to a pod")
        if not ref.get("uid"):
            raise admission_forbidden(sas, sa_name, "node requested token with a pod binding "
                                      "without a uid")
        pod = self._existing_pod(ns, ref["name"])
        if ref["uid"] != pod["metadata"].get("uid"):
            raise admission_forbidden(sas, sa_name, f"the UID in the bound object reference "
                                      f"({ref['uid']}) does not match the UID in record. The "
                                      "object might have been deleted and then recreated")
        if (pod.get("spec") or {}).get("nodeName") != node:
            raise admission_forbidden(sas, sa_name, "node requested token bound to a pod "
                                      "scheduled on a different node")
