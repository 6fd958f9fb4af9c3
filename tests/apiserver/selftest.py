#!/usr/bin/python3
"""Table-driven checks of the pure parts of the stand-in apiserver (patches,
selectors, defaulting, validation, graceful deletion, printers, protobuf).
Run: /usr/bin/python3 tests/apiserver/selftest.py (the integration test
tests/integration/apiserver_kubectl.sh runs it first)."""

import datetime
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import patch  # noqa: E402
import proto  # noqa: E402
import registry as reg  # noqa: E402
import tables  # noqa: E402


def pod(**spec):
    return {"metadata": {"name": "p", "namespace": "default", "uid": "u1"},
            "spec": dict({"containers": [{"name": "c", "image": "busybox"}]}, **spec),
            "status": {"phase": "Pending"}}


class Patches(unittest.TestCase):
    def test_strategic(self):
        cases = [
            ("conditions merge by type", {"status": {"conditions": [
                {"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "False"}]}},
             {"status": {"$setElementOrder/conditions": [{"type": "PodScheduled"},
                                                         {"type": "Ready"}],
                         "conditions": [{"type": "Ready", "status": "True"}]}},
             {"status": {"conditions": [{"type": "PodScheduled", "status": "True"},
                                        {"type": "Ready", "status": "True"}]}}),
            ("containers merge by name", {"spec": {"containers": [
                {"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}},
             {"spec": {"containers": [{"name": "b", "image": "z"}]}},
             {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "z"}]}}),
            ("element $patch delete", {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}},
             {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}},
             {"spec": {"containers": [{"name": "b"}]}}),
            ("tolerations replaced whole", {"spec": {"tolerations": [{"key": "a"}]}},
             {"spec": {"tolerations": [{"key": "b"}]}}, {"spec": {"tolerations": [{"key": "b"}]}}),
            ("taints removed with null", {"spec": {"taints": [{"key": "a"}], "x": 1}},
             {"spec": {"taints": None}}, {"spec": {"x": 1}}),
            ("map $patch replace", {"metadata": {"labels": {"a": "1", "b": "2"}}},
             {"metadata": {"labels": {"$patch": "replace", "c": "3"}}},
             {"metadata": {"labels": {"c": "3"}}}),
            ("podIPs by ip", {"status": {"podIPs": [{"ip": "10.0.0.1"}]}},
             {"status": {"podIPs": [{"ip": "fd00::1"}]}},
             {"status": {"podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}]}}),
            ("finalizers as a set", {"metadata": {"finalizers": ["a"]}},
             {"metadata": {"finalizers": ["a", "b"]}}, {"metadata": {"finalizers": ["a", "b"]}}),
            ("deleteFromPrimitiveList", {"metadata": {"finalizers": ["a", "b"]}},
             {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}},
             {"metadata": {"finalizers": ["b"]}}),
            ("list $patch replace", {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}},
             {"spec": {"containers": [{"name": "c"}, {"$patch": "replace"}]}},
             {"spec": {"containers": [{"name": "c"}]}}),
        ]
        for name, orig, p, want in cases:
            with self.subTest(name):
                self.assertEqual(patch.strategic_merge_patch(orig, p), want)
        with self.assertRaises(patch.PatchError):
            patch.strategic_merge_patch({}, {"spec": {"containers": [{"image": "x"}]}})

    def test_merge(self):
        self.assertEqual(patch.merge_patch({"a": "b", "c": {"d": "e", "f": "g"}},
                                           {"a": "z", "c": {"f": None}}),
                         {"a": "z", "c": {"d": "e"}})
        self.assertEqual(patch.merge_patch({"a": [1, 2]}, {"a": [3]}), {"a": [3]})

    def test_json_patch(self):
        doc = {"a": {"b": [1, 2]}, "c": "x"}
        out = patch.json_patch(doc, [{"op": "add", "path": "/a/b/-", "value": 3},
                                     {"op": "replace", "path": "/c", "value": "y"},
                                     {"op": "copy", "from": "/c", "path": "/d"},
                                     {"op": "move", "from": "/d", "path": "/e~1f"},
                                     {"op": "remove", "path": "/a/b/0"},
                                     {"op": "test", "path": "/c", "value": "y"}])
        self.assertEqual(out, {"a": {"b": [2, 3]}, "c": "y", "e/f": "y"})
        self.assertEqual(doc["c"], "x")
        for bad in ([{"op": "test", "path": "/c", "value": "nope"}],
                    [{"op": "remove", "path": "/missing"}],
                    [{"op": "replace", "path": "/missing", "value": 1}]):
            with self.assertRaises(patch.PatchError):
                patch.json_patch(doc, bad)


class Selectors(unittest.TestCase):
    def test_labels(self):
        labels = {"app": "web", "tier": "front", "n": "5"}
        cases = [("app=web", True), ("app==web", True), ("app!=web", False),
                 ("app in (web,db)", True), ("app notin (web)", False), ("tier", True),
                 ("!tier", False), ("missing!=x", True), ("!missing", True),
                 ("app=web,tier in (back)", False), ("n>4", True), ("n<5", False), ("", True)]
        for sel, want in cases:
            with self.subTest(sel):
                self.assertEqual(reg.labels_match(reg.parse_label_selector(sel), labels), want)

    def test_fields(self):
        pods = reg.find_resource("", "v1", "pods")
        p = pod(nodeName="n1")
        for sel, want in [("spec.nodeName=n1", True), ("spec.nodeName!=n1", False),
                          ("spec.nodeName=", False), ("status.phase=Pending,metadata.name=p", True),
                          ("metadata.namespace==default", True)]:
            with self.subTest(sel):
                self.assertEqual(reg.fields_match(reg.parse_field_selector(pods, sel), p), want)
        with self.assertRaises(reg.ApiError) as e:
            reg.parse_field_selector(pods, "spec.foo=bar")
        self.assertIn("field label not supported: spec.foo", e.exception.message)

    def test_continue_roundtrip(self):
        self.assertEqual(reg.decode_continue(reg.encode_continue(42, "web\0")), (42, "web\0"))
        with self.assertRaises(reg.ApiError):
            reg.decode_continue("garbage")


class Defaulting(unittest.TestCase):
    def test_pull_policy(self):
        for image, want in [("nginx", "Always"), ("nginx:latest", "Always"),
                            ("nginx:1.25", "IfNotPresent"), ("reg:5000/img", "Always"),
                            ("reg:5000/img:v1", "IfNotPresent"),
                            ("img@sha256:" + "0" * 64, "IfNotPresent")]:
            p = pod()
            p["spec"]["containers"][0]["image"] = image
            reg.default_pod(p)
            with self.subTest(image):
                self.assertEqual(p["spec"]["containers"][0]["imagePullPolicy"], want)

    def test_qos_and_requests(self):
        def res(**r):
            return {"containers": [{"name": "c", "image": "i", "resources": r}]}
        self.assertEqual(reg.qos_class(res()), "BestEffort")
        self.assertEqual(reg.qos_class(res(requests={"cpu": "1"})), "Burstable")
        self.assertEqual(reg.qos_class(res(limits={"cpu": "1", "memory": "1Gi"},
                                           requests={"cpu": "1000m", "memory": "1Gi"})),
                         "Guaranteed")
        self.assertEqual(reg.qos_class(res(limits={"cpu": "1", "memory": "1Gi"},
                                           requests={"cpu": "500m", "memory": "1Gi"})),
                         "Burstable")
        p = pod()
        p["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1", "memory": "64Mi"}}
        reg.default_pod(p)
        self.assertEqual(p["spec"]["containers"][0]["resources"]["requests"],
                         {"cpu": "1", "memory": "64Mi"})
        self.assertEqual(p["status"]["qosClass"], "Guaranteed")

    def test_default_tolerations(self):
        p = pod(tolerations=[{"operator": "Exists"}])
        reg.default_pod(p)
        self.assertEqual(p["spec"]["tolerations"], [{"operator": "Exists"}])
        p = pod(tolerations=[{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                              "effect": "NoExecute", "tolerationSeconds": 5}])
        reg.default_pod(p)
        self.assertEqual([t.get("tolerationSeconds") for t in p["spec"]["tolerations"]], [5, 300])


class Validation(unittest.TestCase):
    def test_pod_causes(self):
        pods = reg.find_resource("", "v1", "pods")
        cases = [
            ({"spec": {}}, "spec.containers: Required value"),
            ({"spec": {"containers": [{"image": "x"}]}}, "spec.containers[0].name: Required value"),
            ({"spec": {"containers": [{"name": "Bad"}]}},
             'spec.containers[0].name: Invalid value: "Bad": a lowercase RFC 1123 label'),
            ({"spec": {"containers": [{"name": "a", "image": "x"}], "restartPolicy": "X"}},
             'spec.restartPolicy: Unsupported value: "X": supported values: "Always", '
             '"OnFailure", "Never"'),
            ({"spec": {"containers": [{"name": "a", "image": "x"}],
                       "terminationGracePeriodSeconds": -1}},
             "spec.terminationGracePeriodSeconds: Invalid value: -1: must be greater than or "
             "equal to 0"),
            ({"spec": {"containers": [{"name": "a", "image": "x",
                                       "resources": {"requests": {"cpu": "-1"}}}]}},
             'spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater'),
        ]
        for body, want in cases:
            obj = dict({"metadata": {"name": "p"}}, **body)
            obj["spec"].setdefault("restartPolicy", "Always")
            obj["spec"].setdefault("dnsPolicy", "ClusterFirst")
            with self.subTest(want), self.assertRaises(reg.ApiError) as e:
                reg.validate(pods, obj)
            self.assertEqual(e.exception.code, 422)
            self.assertIn(want, e.exception.message)
        self.assertTrue(e.exception.message.startswith('Pod "p" is invalid: '))


class Deletion(unittest.TestCase):
    pods = reg.find_resource("", "v1", "pods")

    def plan(self, obj, **opts):
        return reg.deletion_plan(self.pods, obj, opts)

    def test_first_delete(self):
        bound = pod(nodeName="n1", terminationGracePeriodSeconds=30)
        kind, new = self.plan(bound)
        self.assertEqual(kind, "update")
        self.assertEqual(new["metadata"]["deletionGracePeriodSeconds"], 30)
        ts = reg.parse_time(new["metadata"]["deletionTimestamp"])
        self.assertAlmostEqual((ts - reg.now()).total_seconds(), 30, delta=2)
        # Grace 0 (asked, unbound, terminal): stored with grace 0 and the
        # deletionTimestamp of now, then removed (MODIFIED, then DELETED).
        done = pod(nodeName="n1")
        done["status"]["phase"] = "Succeeded"
        for name, obj, opts in [("grace 0", bound, {"gracePeriodSeconds": 0}),
                                ("unbound", pod(terminationGracePeriodSeconds=30), {}),
                                ("terminal", done, {})]:
            with self.subTest(name):
                kind, new = self.plan(obj, **opts)
                self.assertEqual((kind, new["metadata"]["deletionGracePeriodSeconds"]),
                                 ("update", 0))
                ts = reg.parse_time(new["metadata"]["deletionTimestamp"])
                self.assertAlmostEqual((ts - reg.now()).total_seconds(), 0, delta=2)
                self.assertTrue(reg.should_delete_after_update(new))
        fin = pod(nodeName="n1")
        fin["metadata"]["finalizers"] = ["x/y"]
        kind, new = self.plan(fin, gracePeriodSeconds=0)
        self.assertFalse(reg.should_delete_after_update(new))
        self.assertEqual(self.plan(new)[0], "pending")  # finalizers keep it
        del new["metadata"]["finalizers"]
        self.assertEqual(self.plan(new)[0], "now")
        kind, new = self.plan(bound, gracePeriodSeconds=-5)
        self.assertEqual(new["metadata"]["deletionGracePeriodSeconds"], 1)

    def test_second_delete_only_shortens(self):
        _, marked = self.plan(pod(nodeName="n1", terminationGracePeriodSeconds=30))
        self.assertEqual(self.plan(marked, gracePeriodSeconds=60)[0], "pending")
        self.assertEqual(self.plan(marked)[0], "pending")
        kind, new = self.plan(marked, gracePeriodSeconds=10)
        self.assertEqual((kind, new["metadata"]["deletionGracePeriodSeconds"]), ("update", 10))
        delta = reg.parse_time(marked["metadata"]["deletionTimestamp"]) - \
            reg.parse_time(new["metadata"]["deletionTimestamp"])
        self.assertEqual(delta, datetime.timedelta(seconds=20))
        kind, new = self.plan(marked, gracePeriodSeconds=-3)
        self.assertEqual(new["metadata"]["deletionGracePeriodSeconds"], 1)
        kind, new = self.plan(marked, gracePeriodSeconds=0)
        self.assertTrue(reg.should_delete_after_update(new))

    def test_pod_condition(self):
        p = pod()
        cond = {"type": "DisruptionTarget", "status": "True",
                "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting"}
        p["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]
        reg.set_pod_condition(p, cond)
        c = p["status"]["conditions"][1]
        self.assertEqual({k: c[k] for k in cond}, cond)
        self.assertIsNone(c["lastProbeTime"])
        c["lastTransitionTime"] = "2020-01-01T00:00:00Z"
        reg.set_pod_condition(p, dict(cond, message="again"))
        self.assertEqual(len(p["status"]["conditions"]), 2)
        self.assertEqual(p["status"]["conditions"][1]["message"], "again")
        self.assertEqual(p["status"]["conditions"][1]["lastTransitionTime"],
                         "2020-01-01T00:00:00Z")  # same status: no transition
        reg.set_pod_condition(p, dict(cond, status="False"))
        self.assertNotEqual(p["status"]["conditions"][1]["lastTransitionTime"],
                            "2020-01-01T00:00:00Z")

    def test_preconditions(self):
        with self.assertRaises(reg.ApiError) as e:
            reg.precondition_check(self.pods, pod(), {"preconditions": {"uid": "x"}})
        self.assertEqual(e.exception.message, 'Operation cannot be fulfilled on pods "p": '
                         'Precondition failed: UID in precondition: x, UID in object meta: u1')


class Printers(unittest.TestCase):
    def status_of(self, status, spec=None, deleting=False):
        p = pod(**(spec or {}))
        p["status"] = status
        if deleting:
            p["metadata"]["deletionTimestamp"] = "2030-01-01T00:00:00Z"
        return tables.pod_row(p)["cells"]

    def test_pod_status(self):
        def cs(state, ready=False, restarts=0):
            return {"name": "c", "ready": ready, "restartCount": restarts, "state": state}
        init = {"initContainers": [{"name": "i", "image": "x"}]}
        cases = [
            ({"phase": "Pending"}, None, False, "Pending"),
            ({"phase": "Running", "containerStatuses": [cs({"running": {}}, True)]}, None, False,
             "Running"),
            ({"phase": "Running", "containerStatuses": [
                cs({"waiting": {"reason": "CrashLoopBackOff"}})]}, None, False,
             "CrashLoopBackOff"),
            ({"phase": "Succeeded", "containerStatuses": [
                cs({"terminated": {"exitCode": 0, "reason": "Completed"}})]}, None, False,
             "Completed"),
            ({"phase": "Failed", "containerStatuses": [
                cs({"terminated": {"exitCode": 137, "reason": "OOMKilled"}})]}, None, False,
             "OOMKilled"),
            ({"phase": "Failed", "containerStatuses": [cs({"terminated": {"exitCode": 3}})]},
             None, False, "ExitCode:3"),
            ({"phase": "Failed", "reason": "Evicted"}, None, False, "Evicted"),
            ({"phase": "Failed", "reason": "OutOfcpu", "message": "Pod was rejected"}, None,
             False, "OutOfcpu"),
            ({"phase": "Failed", "reason": "DeadlineExceeded"}, None, False, "DeadlineExceeded"),
            ({"phase": "Failed", "reason": "Evicted", "containerStatuses": [
                cs({"terminated": {"exitCode": 137, "reason": "Error"}})]}, None, False, "Error"),
            ({"phase": "Failed", "reason": "OutOfcpu"}, None, True, "OutOfcpu"),
            ({"phase": "Failed"}, None, False, "Failed"),
            ({"phase": "Running", "containerStatuses": [
                cs({"terminated": {"exitCode": 1, "reason": "Error"}})]}, None, False, "Error"),
            ({"phase": "Running", "containerStatuses": [
                cs({"terminated": {"exitCode": 0, "reason": "Completed"}})]}, None, False,
             "Completed"),
            ({"phase": "Running", "containerStatuses": [
                cs({"terminated": {"exitCode": 137, "signal": 9}})]}, None, False, "Signal:9"),
            ({"phase": "Running", "containerStatuses": [
                cs({"waiting": {"reason": "CrashLoopBackOff"}}, restarts=4)]}, None, True,
             "Terminating"),
            ({"phase": "Pending", "containerStatuses": [
                cs({"waiting": {"reason": "ContainerCreating"}})]}, None, False,
             "ContainerCreating"),
            ({"phase": "Pending"}, None, True, "Terminating"),
            ({"phase": "Running", "containerStatuses": [
                cs({"running": {}}, True), cs({"terminated": {"exitCode": 0,
                                                             "reason": "Completed"}})]},
             None, False, "NotReady"),
            ({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
              "containerStatuses": [cs({"running": {}}, True), cs({"terminated": {
                  "exitCode": 0, "reason": "Completed"}})]}, None, False, "Running"),
            ({"phase": "Pending", "initContainerStatuses": [
                {"name": "i", "state": {"running": {}}}]}, init, False, "Init:0/1"),
            ({"phase": "Pending", "initContainerStatuses": [
                {"name": "i", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}, init,
             False, "Init:CrashLoopBackOff"),
            ({"phase": "Pending", "initContainerStatuses": [
                {"name": "i", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]},
             init, False, "Init:Error"),
            ({"phase": "Running", "containerStatuses": [cs({"running": {}}, True)]}, None, True,
             "Terminating"),
            ({"phase": "Succeeded"}, None, True, "Succeeded"),
        ]
        for status, spec, deleting, want in cases:
            with self.subTest(want):
                self.assertEqual(self.status_of(status, spec, deleting)[2], want)
        cells = self.status_of({"phase": "Running", "podIPs": [{"ip": "10.1.1.1"}],
                                "containerStatuses": [dict(cs({"running": {}}, True, 3),
                                                           lastState={"terminated": {
                                                               "finishedAt": reg.fmt_time(
                                                                   reg.now())}})]},
                               {"nodeName": "n1"})
        self.assertEqual(cells[1], "1/1")
        self.assertRegex(cells[3], r"^3 \([0-9]+s ago\)$")
        self.assertEqual(cells[5:9], ["10.1.1.1", "n1", "<none>", "<none>"])

    def test_node_status(self):
        def node(conds, unsched=False, labels=None):
            return tables.node_row({"metadata": {"name": "n", "labels": labels or {}},
                                    "spec": {"unschedulable": unsched},
                                    "status": {"conditions": conds}})["cells"]
        self.assertEqual(node([])[1:3], ["Unknown", "<none>"])
        self.assertEqual(node([{"type": "Ready", "status": "False"}])[1], "NotReady")
        self.assertEqual(node([{"type": "Ready", "status": "Unknown"}])[1], "NotReady")
        self.assertEqual(node([{"type": "Ready", "status": "True"}], True,
                              {"node-role.kubernetes.io/control-plane": "",
                               "kubernetes.io/role": "worker"})[1:3],
                         ["Ready,SchedulingDisabled", "control-plane,worker"])

    def test_human_duration(self):
        for secs, want in [(-5, "<invalid>"), (0, "0s"), (119, "119s"), (125, "2m5s"),
                           (600, "10m"), (3 * 3600 + 60, "3h1m"), (9 * 3600, "9h"),
                           (3 * 86400 + 3600, "3d1h"), (10 * 86400, "10d"),
                           (3 * 365 * 86400, "3y")]:
            self.assertEqual(tables.human_duration(secs), want)


class Scheduling(unittest.TestCase):
    def test_node_fits(self):
        ready = {"metadata": {"name": "n", "labels": {"disk": "ssd"}}, "spec": {},
                 "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
        self.assertTrue(reg.node_fits(pod(), ready))
        self.assertFalse(reg.node_fits(pod(nodeSelector={"disk": "hdd"}), ready))
        tainted = dict(ready, spec={"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]})
        self.assertFalse(reg.node_fits(pod(), tainted))
        self.assertTrue(reg.node_fits(pod(tolerations=[{"key": "k", "value": "v"}]), tainted))
        self.assertTrue(reg.node_fits(pod(tolerations=[{"key": "k", "operator": "Exists"}]),
                                      tainted))
        self.assertFalse(reg.node_fits(pod(), dict(ready, spec={"unschedulable": True})))
        self.assertFalse(reg.node_fits(pod(), dict(ready, status={})))


class Protobuf(unittest.TestCase):
    @staticmethod
    def field(num, payload):
        if isinstance(payload, int):
            return bytes([num << 3 | 0, payload])
        return bytes([num << 3 | 2, len(payload)]) + payload

    def test_configmap(self):
        f = self.field
        meta = f(1, b"cm") + f(2, b"") + f(7, 0) + f(11, f(1, b"a") + f(2, b"b"))
        raw = f(1, meta) + f(2, f(1, b"k") + f(2, b"v")) + f(4, 0)
        body = b"k8s\0" + f(1, f(1, b"v1") + f(2, b"ConfigMap")) + f(2, raw)
        self.assertEqual(proto.decode(body), {
            "kind": "ConfigMap", "apiVersion": "v1", "immutable": False,
            "metadata": {"name": "cm", "labels": {"a": "b"}}, "data": {"k": "v"}})
        with self.assertRaises(proto.ProtoError):
            proto.decode(b"k8s\0" + f(1, f(1, b"v1") + f(2, b"Pod")))


if __name__ == "__main__":
    unittest.main(verbosity=1)
