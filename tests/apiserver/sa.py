"""ServiceAccounts as kube-apiserver and kube-controller-manager keep them
(see README.md, "Service accounts"): bound tokens (TokenRequest, RS256 JWTs
signed with a key kept in DATA/sa.key), their authentication, and the
ServiceAccount admission plugin.

Behaviour and texts follow pkg/serviceaccount (claims, validation),
pkg/registry/core/serviceaccount/storage/token.go,
pkg/apis/authentication/validation and plugin/pkg/admission/serviceaccount."""

import base64
import copy
import hashlib
import json
import os
import random
import time
import uuid

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

import registry as reg
from authz import User
from registry import ApiError

ISSUER = "https://kubernetes.default.svc.cluster.local"
API_AUDIENCES = [ISSUER]
WARN_ONLY_EXPIRATION = 60 * 60 + 7          # the projected volume's 3607 s
EXTENDED_EXPIRATION = 24 * 365 * 60 * 60    # --service-account-extend-token-expiration
LEEWAY = 60                                 # jwt.DefaultLeeway
MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
VOLUME_PREFIX = "kube-api-access-"
ROOT_CA = "kube-root-ca.crt"
ROOT_CA_DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters.")


def _b64(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def _unb64(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


class TokenError(Exception):
    pass


class Issuer:
    """The service-account signing key (--service-account-signing-key-file),
    made once in DATA/sa.key and reused on every restart."""

    def __init__(self, data):
        path = os.path.join(data, "sa.key")
        try:
            with open(path, "rb") as f:
                self.key = serialization.load_pem_private_key(f.read(), None)
        except FileNotFoundError:
            self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            pem = self.key.private_bytes(serialization.Encoding.PEM,
                                         serialization.PrivateFormat.PKCS8,
                                         serialization.NoEncryption())
            tmp = path + ".tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(pem)
            os.replace(tmp, path)
        self.pub = self.key.public_key()
        der = self.pub.public_bytes(serialization.Encoding.DER,
                                    serialization.PublicFormat.SubjectPublicKeyInfo)
        self.kid = _b64(hashlib.sha256(der).digest())  # as keyIDFromPublicKey

    def sign(self, claims):
        head = _b64(json.dumps({"alg": "RS256", "kid": self.kid}, separators=(",", ":")).encode())
        body = _b64(json.dumps(claims, separators=(",", ":"), sort_keys=True).encode())
        sig = self.key.sign(f"{head}.{body}".encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{head}.{body}.{_b64(sig)}"

    def claims(self, token):
        """The verified claims of one of our JWTs, None if it is not a JWT
        from this issuer, TokenError if it is ours but invalid."""
        parts = token.split(".")
        if len(parts) != 3:
            return None
        try:
            head = json.loads(_unb64(parts[0]))
            claims = json.loads(_unb64(parts[1]))
            sig = _unb64(parts[2])
        except (ValueError, TypeError):
            return None
        if not isinstance(claims, dict) or not isinstance(head, dict):
            return None
        if claims.get("iss") != ISSUER:
            return None
        if head.get("alg") != "RS256":
            raise TokenError("invalid bearer token")
        try:
            self.pub.verify(sig, f"{parts[0]}.{parts[1]}".encode(), padding.PKCS1v15(),
                            hashes.SHA256())
        except InvalidSignature:
            raise TokenError("invalid bearer token")
        return claims


def _ref(o):
    return {"name": o["metadata"]["name"], "uid": o["metadata"].get("uid", "")}


def _res(name, group="", version="v1"):
    return reg.find_resource(group, version, name)


def _json_type(v):
    return {str: "string", bool: "bool", list: "array", dict: "object"}.get(
        type(v), "number")


def _undecodable(field, v, gotype):
    """The decoder's 400 for a TokenRequest field of the wrong JSON type."""
    return ('TokenRequest in version "v1" cannot be handled as a TokenRequest: json: cannot '
            f"unmarshal {_json_type(v)} into Go struct field TokenRequestSpec.{field} of type "
            f"{gotype}")


def token_request(api, issuer, ns, name, body, now=None):
    """POST serviceaccounts/NAME/token: the TokenRequest with its status."""
    tr_kind = "TokenRequest.authentication.k8s.io"
    if not isinstance(body, dict):
        raise reg.bad_request("the body of the request must be a JSON object")
    if body.get("kind") not in (None, "", "TokenRequest") or \
            body.get("apiVersion") not in (None, "", "authentication.k8s.io/v1"):
        raise reg.bad_request(f"the API version in the data ({body.get('apiVersion')}) does "
                              "not match the expected API version (authentication.k8s.io/v1)"
                              if body.get("kind") in (None, "", "TokenRequest") else
                              f"Kind={body.get('kind')} does not match the expected kind "
                              "TokenRequest")
    meta = body.get("metadata") or {}
    spec = body.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, dict) or not isinstance(meta, dict):
        raise reg.bad_request("the body of the request must be a TokenRequest")
    if meta.get("namespace") and meta["namespace"] != ns:
        raise reg.bad_request("the namespace of the provided object does not match the "
                              "namespace sent on the request")
    auds = spec.get("audiences")
    if auds is not None and (not isinstance(auds, list) or
                             not all(isinstance(a, str) for a in auds)):
        raise reg.bad_request(_undecodable("spec.audiences", auds, "[]string"))
    exp = spec.get("expirationSeconds", 3600)
    if exp is None:
        exp = 3600
    if isinstance(exp, bool) or not isinstance(exp, int):
        raise reg.bad_request(_undecodable("spec.expirationSeconds", exp, "int64"))
    errs = []
    if exp < 600:
        errs.append(("spec.expirationSeconds", "Invalid value",
                     "may not specify a duration less than 10 minutes", exp))
    if exp > 1 << 32:
        errs.append(("spec.expirationSeconds", "Invalid value",
                     "may not specify a duration larger than 2^32 seconds", exp))
    if errs:
        e = reg.invalid(_res("serviceaccounts"), name, errs)
        e.message = e.message.replace('ServiceAccount "', 'TokenRequest.authentication.k8s.io "',
                                      1)
        if e.details:
            e.details["group"], e.details["kind"] = "authentication.k8s.io", "TokenRequest"
        raise e
    sa = api.get(_res("serviceaccounts"), ns, name)
    pod = secret = node = None
    ref = spec.get("boundObjectRef")
    if ref is not None and not isinstance(ref, dict):
        raise reg.bad_request("boundObjectRef must be an object")
    if ref:
        av, kind = ref.get("apiVersion") or "", ref.get("kind") or ""
        group = av.split("/", 1)[0] if "/" in av else ""
        version = av.split("/", 1)[1] if "/" in av else av
        if group == "" and kind == "Pod":
            pod = api.get(_res("pods"), ns, ref.get("name") or "")
            if (pod.get("spec") or {}).get("serviceAccountName") != name:
                raise reg.bad_request(f'cannot bind token for serviceaccount "{name}" to pod '
                                      "running with different serviceaccount name.")
            obj = pod
            if (pod.get("spec") or {}).get("nodeName"):
                try:
                    node = api.get(_res("nodes"), None, pod["spec"]["nodeName"])
                except ApiError:
                    node = None
        elif group == "" and kind == "Secret":
            obj = secret = api.get(_res("secrets"), ns, ref.get("name") or "")
        elif group == "" and kind == "Node":
            obj = node = api.get(_res("nodes"), None, ref.get("name") or "")
        else:
            raise reg.bad_request(f"cannot bind token to object of type {group}/{version}, "
                                  f"Kind={kind}")
        if ref.get("uid") and ref["uid"] != obj["metadata"].get("uid"):
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {kind} '
                           f'"{ref.get("name")}": the UID in the bound object reference '
                           f'({ref["uid"]}) does not match the UID in record. The object '
                           "might have been deleted and then recreated",
                           {"name": ref.get("name"), "kind": kind})
    if not auds:
        auds = list(API_AUDIENCES)
    t = int(now if now is not None else reg.wall_time())
    token_exp, warn = exp, 0
    if pod is not None and exp == WARN_ONLY_EXPIRATION and \
            all(a in API_AUDIENCES for a in auds):
        token_exp, warn = EXTENDED_EXPIRATION, exp
    priv = {"namespace": ns, "serviceaccount": _ref(sa)}
    if pod is not None:
        priv["pod"] = _ref(pod)
    if secret is not None:
        priv["secret"] = _ref(secret)
    if node is not None:
        priv["node"] = _ref(node)
    if warn:
        priv["warnafter"] = t + warn
    claims = {"aud": auds, "exp": t + token_exp, "iat": t, "iss": ISSUER,
              "jti": str(uuid.uuid4()), "kubernetes.io": priv, "nbf": t,
              "sub": f"system:serviceaccount:{ns}:{name}"}
    out_spec = {"audiences": auds, "expirationSeconds": exp,
                "boundObjectRef": copy.deepcopy(ref) if ref else None}
    return {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": name, "namespace": ns,
                         "creationTimestamp": reg.fmt_time(reg.now())},
            "spec": out_spec,
            "status": {"token": issuer.sign(claims),
                       "expirationTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                            time.gmtime(t + exp))}}


def _deleted_before(obj, t):
    ts = reg.parse_time((obj.get("metadata") or {}).get("deletionTimestamp") or "")
    return ts is not None and ts.timestamp() < t


def authenticate(api, issuer, token, audiences=None, now=None):
    """(User, audiences) of a valid service-account token; None if the token
    is not one of ours; TokenError with the validator's message otherwise."""
    claims = issuer.claims(token)
    if claims is None:
        return None
    want = audiences or API_AUDIENCES
    aud = claims.get("aud")
    aud = [aud] if isinstance(aud, str) else (aud or [])
    ok_auds = [a for a in want if a in aud]
    if not ok_auds:
        raise TokenError(f"token audiences {json.dumps(aud)} is invalid for the target "
                         f"audiences {json.dumps(want)}")
    t = now if now is not None else reg.wall_time()
    if not isinstance(claims.get("exp"), (int, float)) or t > claims["exp"] + LEEWAY:
        raise TokenError("service account token has expired")
    if isinstance(claims.get("nbf"), (int, float)) and t < claims["nbf"] - LEEWAY:
        raise TokenError("service account token is not valid yet")
    priv = claims.get("kubernetes.io") or {}
    ns = priv.get("namespace") or ""
    saref = priv.get("serviceaccount") or {}
    try:
        sa = api.get(_res("serviceaccounts"), ns, saref.get("name") or "")
    except ApiError as e:
        raise TokenError(e.message)
    if _deleted_before(sa, t - LEEWAY):
        raise TokenError(f"service account {ns}/{saref.get('name')} has been deleted")
    if sa["metadata"].get("uid") != saref.get("uid"):
        raise TokenError(f"service account UID ({sa['metadata'].get('uid')}) does not match "
                         f"claim ({saref.get('uid')})")
    extra = {}
    for kind, key in (("secret", "secrets"), ("pod", "pods"), ("node", "nodes")):
        ref = priv.get(kind)
        if not ref:
            continue
        if kind == "node" and priv.get("pod"):
            extra["authentication.kubernetes.io/node-name"] = [ref.get("name", "")]
            extra["authentication.kubernetes.io/node-uid"] = [ref.get("uid", "")]
            continue
        try:
            o = api.get(_res(key), None if kind == "node" else ns, ref.get("name") or "")
        except ApiError:
            raise TokenError("service account token has been invalidated")
        if _deleted_before(o, t - LEEWAY):
            raise TokenError("service account token has been invalidated")
        if o["metadata"].get("uid") != ref.get("uid"):
            raise TokenError(f"{kind} UID ({o['metadata'].get('uid')}) does not match service "
                             f"account {kind} ref claim ({ref.get('uid')})")
        if kind == "pod":
            extra["authentication.kubernetes.io/pod-name"] = [ref.get("name", "")]
            extra["authentication.kubernetes.io/pod-uid"] = [ref.get("uid", "")]
        if kind == "node":
            extra["authentication.kubernetes.io/node-name"] = [ref.get("name", "")]
            extra["authentication.kubernetes.io/node-uid"] = [ref.get("uid", "")]
    if claims.get("jti"):
        extra["authentication.kubernetes.io/credential-id"] = [f"JTI={claims['jti']}"]
    name = saref.get("name") or ""
    user = User(f"system:serviceaccount:{ns}:{name}",
                ["system:serviceaccounts", f"system:serviceaccounts:{ns}",
                 "system:authenticated"], uid=saref.get("uid") or "", extra=extra)
    return user, ok_auds


# ------------------------------------------------------------------ admission

def _gen_name(prefix):
    return prefix + "".join(random.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))


def api_access_volume(name):
    return {"name": name, "projected": {
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": WARN_ONLY_EXPIRATION,
                                     "path": "token"}},
            {"configMap": {"name": ROOT_CA, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}],
        "defaultMode": 420}}


def _get_sa(api, ns, name, retries):
    for i in range(retries):
        try:
            return api.get(_res("serviceaccounts"), ns, name)
        except ApiError as e:
            if e.code != 404:
                raise
            if i + 1 < retries:
                time.sleep(0.1 + random.random() * 0.1)
    return None


def admit_pod(api, ns, pod):
    """The ServiceAccount admission plugin on a pod create (mutates pod)."""
    pods = _res("pods")
    meta = pod.setdefault("metadata", {}) if isinstance(pod, dict) else {}
    if not isinstance(pod, dict):
        return
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    name = meta.get("name") or meta.get("generateName") or ""
    forbid = lambda why: ApiError(403, "Forbidden", f'pods "{name}" is forbidden: {why}',  # noqa
                                  reg._details(pods, name))
    if reg.MIRROR_ANNOTATION in (meta.get("annotations") or {}):
        if spec.get("serviceAccountName") or spec.get("serviceAccount"):
            raise forbid("a mirror pod may not reference service accounts")
        import authz
        refs = authz.pod_references(pod)
        if refs["secrets"]:
            raise forbid("a mirror pod may not reference secrets")
        if refs["configmaps"]:
            raise forbid("a mirror pod may not reference configmaps")
        return
    if not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = spec.get("serviceAccount") or "default"
    sa_name = spec["serviceAccountName"]
    sa = _get_sa(api, ns, sa_name, 10 if sa_name == "default" else 1)
    if sa is None:
        raise forbid(f'error looking up service account {ns}/{sa_name}: serviceaccount '
                     f'"{sa_name}" not found')
    auto = spec.get("automountServiceAccountToken")
    if auto is None:
        auto = sa.get("automountServiceAccountToken")
    if auto is None or auto:
        vols = spec.get("volumes") or []
        vname = None
        for v in vols:
            if isinstance(v, dict) and (v.get("name") or "").startswith(VOLUME_PREFIX):
                vname = v["name"]
                break
        has = vname is not None
        if vname is None:
            vname = _gen_name(VOLUME_PREFIX)
        needs = False
        for f in ("initContainers", "containers"):
            for c in spec.get(f) or []:
                if not isinstance(c, dict):
                    continue
                mounts = c.get("volumeMounts") or []
                if any(isinstance(m, dict) and m.get("mountPath") == MOUNT_PATH for m in mounts):
                    continue
                c["volumeMounts"] = mounts + [{"name": vname, "readOnly": True,
                                               "mountPath": MOUNT_PATH}]
                needs = True
        if needs and not has:
            spec["volumes"] = vols + [api_access_volume(vname)]
    if not spec.get("imagePullSecrets") and sa.get("imagePullSecrets"):
        spec["imagePullSecrets"] = copy.deepcopy(sa["imagePullSecrets"])


# ------------------------------------------------------------------ controllers

def ensure_namespace_objects(api, ns, ca_pem):
    """The serviceaccount controller's `default` ServiceAccount and the
    root-ca-cert-publisher's kube-root-ca.crt ConfigMap in namespace ns."""
    sas, cms = _res("serviceaccounts"), _res("configmaps")
    try:
        api.get(sas, ns, "default")
    except ApiError as e:
        if e.code != 404:
            raise
        try:
            api.create(sas, ns, {"metadata": {"name": "default"}})
        except ApiError as e2:
            if e2.code not in (403, 404, 409):
                raise
    want_data = {"ca.crt": ca_pem}
    want_ann = {"kubernetes.io/description": ROOT_CA_DESCRIPTION}
    try:
        cm = api.get(cms, ns, ROOT_CA)
    except ApiError as e:
        if e.code != 404:
            raise
        try:
            api.create(cms, ns, {"metadata": {"name": ROOT_CA, "annotations": want_ann},
                                 "data": want_data})
        except ApiError as e2:
            if e2.code not in (403, 404, 409):
                raise
        return
    ann = cm["metadata"].get("annotations") or {}
    if cm.get("data") != want_data or cm.get("binaryData") or \
            ann.get("kubernetes.io/description") != ROOT_CA_DESCRIPTION:
        def fix(cur):
            cur["data"] = dict(want_data)
            cur.pop("binaryData", None)
            cur["metadata"].setdefault("annotations", {}).update(want_ann)
            return cur
        try:
            api.update(cms, ns, ROOT_CA, fix)
        except ApiError:
            pass


def namespace_objects_controller(api, ca_pem, stopping, interval=0.5):
    nsr = _res("namespaces")
    import sys
    while not stopping.wait(interval):
        try:
            for n in api.list(nsr, None, {})[0]:
                if n["metadata"].get("deletionTimestamp"):
                    continue
                ensure_namespace_objects(api, n["metadata"]["name"], ca_pem)
        except Exception as e:  # etcd hiccup: retry on next tick
            sys.stderr.write(f"apiserver: serviceaccount/root-ca controller: {e}\n")
