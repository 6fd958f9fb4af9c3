#!/usr/bin/env python3
"""Real pods from real clusters, made runnable on the test node (used by
tests/integration/real_pods.sh).

    realpods.py NODE HOSTROOT FIXTURE...

prints a JSON object: "pods", a List of the fixtures' pods that were bound
to a node and are API pods (not a node's static mirror pods), each with its
metadata name/namespace/labels/annotations and its spec kept, except what a
test node cannot give it as-is:
  * spec.nodeName -> NODE (and a DaemonSet's matchFields metadata.name term),
  * spec.priority dropped (the Priority admission plugin computes it),
  * every image -> busybox:1.36, probes dropped (busybox serves nothing),
    the command made to end as the pod ended on its cluster: exit 0 for a
    Succeeded pod, exit 1 for a Failed one, else it sleeps,
  * hostPath paths moved under HOSTROOT (the test writes nothing of the
    host's own); "hostdirs" lists what a node has there before any pod
    (a Directory's path, a File's parent: FileOrCreate makes no parent, as
    the kubelet's), for the test to make;
  * a container that must run as non-root without a uid of its own gets
    runAsUser 65534: its real image names a USER, the test image none;
"expect", the phase each pod had on its cluster; "objects", the
ServiceAccounts, ConfigMaps and Secrets the pods refer to (name -> the keys
their volumes and env use) and their PersistentVolumeClaims, which the test
creates first."""
import json
import sys

import yaml


def load(path):
    with open(path) as f:
        doc = yaml.safe_load(f) if path.endswith((".yaml", ".yml")) else json.load(f)
    return doc.get("items") or []


def command_for(phase):
    if phase == "Succeeded":
        return ["sh", "-c", "echo done; exit 0"]
    if phase == "Failed":
        return ["sh", "-c", "echo failing; exit 1"]
    return ["sh", "-c", 'trap "exit 0" TERM; while :; do sleep 1; done']


def main():
    node, hostroot, files = sys.argv[1], sys.argv[2].rstrip("/"), sys.argv[3:]
    pods, expect, hostdirs = [], {}, set()
    objs = {"serviceaccounts": set(), "configmaps": {}, "secrets": {}, "claims": set()}
    for path in files:
        for p in load(path):
            md, spec = p["metadata"], p["spec"]
            if not spec.get("nodeName"):
                continue  # never bound: nothing a node ever saw
            if "kubernetes.io/config.mirror" in (md.get("annotations") or {}):
                continue  # a node's static pod: its node makes the mirror
            ns = md.get("namespace", "default")
            phase = (p.get("status") or {}).get("phase", "Running")
            spec["nodeName"] = node
            spec.pop("priority", None)
            aff = ((spec.get("affinity") or {}).get("nodeAffinity") or {})
            for t in ((aff.get("requiredDuringSchedulingIgnoredDuringExecution") or {})
                      .get("nodeSelectorTerms") or []):
                for f in t.get("matchFields") or []:
                    if f.get("key") == "metadata.name":
                        f["values"] = [node]
            for c in (spec.get("initContainers") or []) + spec["containers"]:
                c["image"] = "busybox:1.36"
                c["imagePullPolicy"] = "IfNotPresent"
                c.pop("args", None)
                for pr in ("livenessProbe", "readinessProbe", "startupProbe"):
                    c.pop(pr, None)
                c["command"] = command_for(phase) if c in spec["containers"] else \
                    ["sh", "-c", "exit 0"]
                for e in c.get("env") or []:
                    ref = (e.get("valueFrom") or {})
                    for kind, key in (("configMapKeyRef", "configmaps"),
                                      ("secretKeyRef", "secrets")):
                        if kind in ref and not ref[kind].get("optional"):
                            objs[key].setdefault((ns, ref[kind]["name"]), set()).add(
                                ref[kind]["key"])
            psc = spec.get("securityContext") or {}
            for c in (spec.get("initContainers") or []) + spec["containers"]:
                csc = c.get("securityContext") or {}
                nonroot = csc.get("runAsNonRoot", psc.get("runAsNonRoot"))
                if nonroot and csc.get("runAsUser", psc.get("runAsUser")) is None:
                    c.setdefault("securityContext", {})["runAsUser"] = 65534
            for v in spec.get("volumes") or []:
                if (v.get("persistentVolumeClaim") or {}).get("claimName"):
                    objs["claims"].add((ns, v["persistentVolumeClaim"]["claimName"]))
                if "hostPath" in v:
                    hp = v["hostPath"]
                    path = hp["path"].rstrip("/") or "/"
                    typ = hp.get("type") or ""
                    if typ in ("", "Directory"):
                        hostdirs.add(path)
                    elif typ in ("File", "FileOrCreate", "Socket", "DirectoryOrCreate"):
                        hostdirs.add(path.rsplit("/", 1)[0] or "/")
                    hp["path"] = hostroot + path
                for kind, key, name in (("configMap", "configmaps", "name"),
                                        ("secret", "secrets", "secretName")):
                    src = v.get(kind)
                    if src and not src.get("optional"):
                        keys = objs[key].setdefault((ns, src[name]), set())
                        keys.update(i["key"] for i in src.get("items") or [])
            sa = spec.get("serviceAccountName")
            if sa and sa != "default":
                objs["serviceaccounts"].add((ns, sa))
            pods.append({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {k: md[k] for k in ("name", "namespace", "labels",
                                                         "annotations") if k in md},
                         "spec": spec})
            expect[f"{ns}/{md['name']}"] = phase
    out = {"pods": {"apiVersion": "v1", "kind": "List", "items": pods}, "expect": expect,
           "hostdirs": sorted(hostdirs),
           "objects": {"serviceaccounts": sorted(objs["serviceaccounts"]),
                       "persistentvolumeclaims": sorted(objs["claims"]),
                       "configmaps": sorted([ns, n, sorted(k)] for (ns, n), k in
                                            objs["configmaps"].items()
                                            if n != "kube-root-ca.crt"),
                       "secrets": sorted([ns, n, sorted(k)] for (ns, n), k in
                                         objs["secrets"].items())}}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
