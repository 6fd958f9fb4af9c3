"""Bootstrap tokens (see README.md, "TLS bootstrap"): kube-apiserver's
`--enable-bootstrap-token-auth` authenticator
(plugin/pkg/auth/authenticator/token/bootstrap) over Secrets of type
`bootstrap.kubernetes.io/token` in kube-system, as `kubeadm token create`
makes them."""

import base64
import datetime
import hmac
import re
import secrets

import authz
import registry as reg
from registry import ApiError

TOKEN_RE = re.compile(r"^([a-z0-9]{6})\.([a-z0-9]{16})$")
SECRET_TYPE = "bootstrap.kubernetes.io/token"
SECRET_PREFIX = "bootstrap-token-"
GROUP = "system:bootstrappers"
USER_PREFIX = "system:bootstrap:"
EXTRA_GROUP_RE = re.compile(r"^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$")
# kubeadm's NodeBootstrapTokenAuthGroup: what `kubeadm token create` puts in
# auth-extra-groups and what its RBAC bindings name.
KUBEADM_GROUP = "system:bootstrappers:kubeadm:default-node-token"
SECRETS = reg.find_resource("", "v1", "secrets")


def _data(secret, key):
    v = (secret.get("data") or {}).get(key)
    if v is None:
        return ""
    try:
        return base64.b64decode(v).decode()
    except (ValueError, UnicodeDecodeError):
        return ""


def expired(secret, now=None):
    """bootstrapsecretutil.HasExpired: an unparsable expiration counts as
    expired."""
    exp = _data(secret, "expiration")
    if not exp:
        return False
    t = reg.parse_time(exp)
    if t is None:
        return True
    return (now or reg.utc_now()) > t


def groups(secret):
    """bootstrapsecretutil.GetGroups: system:bootstrappers plus the valid
    auth-extra-groups; an invalid one makes the token unusable (None)."""
    out = [GROUP]
    extra = _data(secret, "auth-extra-groups")
    if not extra:
        return out
    for g in extra.split(","):
        g = g.strip()
        if not EXTRA_GROUP_RE.match(g):
            return None
        if g not in out:
            out.append(g)
    return out


def authenticate(api, token):
    """(User or None, reason). None with reason "" means the token is not a
    bootstrap token (the next authenticator may know it)."""
    m = TOKEN_RE.match(token or "")
    if not m:
        return None, ""
    tid, tsecret = m.group(1), m.group(2)
    try:
        s = api.get(SECRETS, "kube-system", SECRET_PREFIX + tid)
    except ApiError:
        return None, ""
    if s["metadata"].get("deletionTimestamp"):
        return None, f"Bootstrap secret kube-system/{SECRET_PREFIX}{tid} is deleted and " \
            "awaiting removal"
    if s.get("type") != SECRET_TYPE or not s.get("data"):
        return None, f"Bootstrap secret kube-system/{SECRET_PREFIX}{tid} has invalid type, " \
            f"expected {SECRET_TYPE}."
    if not hmac.compare_digest(_data(s, "token-secret").encode(), tsecret.encode()):
        return None, f"Bootstrap secret kube-system/{SECRET_PREFIX}{tid} has invalid value " \
            "for key token-secret."
    if _data(s, "token-id") != tid:
        return None, f"Bootstrap secret kube-system/{SECRET_PREFIX}{tid} has invalid value " \
            "for key token-id."
    if expired(s):
        return None, f"Bootstrap secret kube-system/{SECRET_PREFIX}{tid} has expired."
    if _data(s, "usage-bootstrap-authentication") != "true":
        return None, f"Bootstrap secret kube-system/{SECRET_PREFIX}{tid} not marked " \
            "usage-bootstrap-authentication=true."
    gs = groups(s)
    if gs is None:
        return None, f"Bootstrap secret kube-system/{SECRET_PREFIX}{tid} has invalid value " \
            "for key auth-extra-groups."
    name = USER_PREFIX + tid
    return authz.User(name, authz.with_authenticated(name, gs)), ""


def secret_for(token, ttl=86400, extra_groups=KUBEADM_GROUP, now=None, description=None):
    """The Secret `kubeadm token create TOKEN --ttl` stores (usages
    authentication and signing, its description)."""
    m = TOKEN_RE.match(token)
    if not m:
        raise ValueError(f"the bootstrap token {token!r} was not of the form "
                         "[a-z0-9]{6}.[a-z0-9]{16}")
    tid, tsecret = m.group(1), m.group(2)
    data = {"token-id": tid, "token-secret": tsecret,
            "usage-bootstrap-authentication": "true", "usage-bootstrap-signing": "true",
            "auth-extra-groups": extra_groups}
    if description is not None:
        data["description"] = description
    if ttl:
        t = (now or reg.utc_now()) + \
            datetime.timedelta(seconds=ttl)
        data["expiration"] = t.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"apiVersion": "v1", "kind": "Secret", "type": SECRET_TYPE,
            "metadata": {"name": SECRET_PREFIX + tid, "namespace": "kube-system"},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


def new_token():
    """A token as `kubeadm token generate` makes it."""
    alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
    pick = lambda n: "".join(secrets.choice(alphabet) for _ in range(n))  # noqa: E731
    return f"{pick(6)}.{pick(16)}"
