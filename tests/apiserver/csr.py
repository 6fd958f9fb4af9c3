"""certificates.k8s.io/v1 CertificateSigningRequests (see README.md, "TLS
bootstrap"): the resource with its `status` and `approval` subresources and
kube-apiserver v1.32's validation and strategies
(pkg/apis/certificates/validation, pkg/registry/certificates), the
CertificateApproval/CertificateSigning admission checks, and two
kube-controller-manager controllers: csrapproving (the SubjectAccessReview
approver of node client CSRs, `nodeclient` / `selfnodeclient`) and
csrsigning for `kubernetes.io/kube-apiserver-client-kubelet` and
`kubernetes.io/kubelet-serving` with the cluster CA."""

import base64
import copy
import datetime
import ipaddress
import json
import secrets
import sys
import time

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

import authz
import registry as reg
import tables
from registry import ApiError, _NOVALUE

GROUP = "certificates.k8s.io"
RESOURCE = reg.Resource("certificatesigningrequests", "CertificateSigningRequest", False,
                        group=GROUP, short=["csr"], subresources=["status", "approval"],
                        fields=["spec.signerName"])

CLIENT_KUBELET = "kubernetes.io/kube-apiserver-client-kubelet"
KUBELET_SERVING = "kubernetes.io/kubelet-serving"
LEGACY_UNKNOWN = "kubernetes.io/legacy-unknown"

# Every usage the API knows (certificates.KeyUsage), as validation lists them.
ALL_USAGES = sorted([
    "signing", "digital signature", "content commitment", "key encipherment",
    "key agreement", "data encipherment", "cert sign", "crl sign", "encipher only",
    "decipher only", "any", "server auth", "client auth", "code signing",
    "email protection", "s/mime", "ipsec end system", "ipsec tunnel", "ipsec user",
    "timestamping", "ocsp signing", "microsoft sgc", "netscape sgc"])
TRUE_ONLY = ("Approved", "Denied", "Failed")

# kube-controller-manager's signer (pkg/controller/certificates/signer).
BACKDATE = 5 * 60
SHORT = 8 * 3600
MIN_REQUESTED = 10 * 60


class GoBytes:
    """A []byte bad value, printed as field.Invalid prints it (%#v)."""

    def __init__(self, data):
        self.data = data

    def __str__(self):
        return "[]byte{" + ", ".join(f"0x{b:x}" for b in self.data) + "}"


def _request_bytes(obj):
    req = (obj.get("spec") or {}).get("request")
    if not isinstance(req, str):
        return b""
    try:
        return base64.b64decode(req, validate=True)
    except (ValueError, TypeError):
        return b""


def parse_csr(pem):
    """certificates.ParseCSR: (x509.CertificateSigningRequest, error text)."""
    start = pem.find(b"-----BEGIN ")
    if start < 0:
        return None, "PEM block type must be CERTIFICATE REQUEST"
    line_end = pem.find(b"-----", start + 11)
    if line_end < 0 or pem[start + 11:line_end] != b"CERTIFICATE REQUEST":
        return None, "PEM block type must be CERTIFICATE REQUEST"
    try:
        return x509.load_pem_x509_csr(pem[start:]), ""
    except ValueError as e:
        return None, f"x509: malformed certificate request ({e})"


def _check_certificate(data):
    """validateCertificate: status.certificate holds CERTIFICATE PEM blocks."""
    if not data:
        return None
    blocks = 0
    text = data
    while True:
        i = text.find(b"-----BEGIN ")
        if i < 0:
            break
        j = text.find(b"-----", i + 11)
        if j < 0:
            break
        typ = text[i + 11:j]
        end = text.find(b"-----END " + typ + b"-----", j)
        if end < 0:
            break
        if typ != b"CERTIFICATE":
            return f"only CERTIFICATE PEM blocks are allowed, found {json.dumps(typ.decode())}"
        body = text[j + 5:end]
        if b":" in body.split(b"\n\n")[0] and b"\n\n" in body:
            return "no PEM block headers are permitted"
        blocks += 1
        try:
            x509.load_pem_x509_certificate(text[i:end + len(typ) + 14])
        except ValueError as e:
            return f"x509: malformed certificate ({e})"
        text = text[end + len(typ) + 14:]
    if blocks == 0:
        return "must contain at least one CERTIFICATE PEM block"
    return None


def _validate_signer_name(errs, field, name):
    """apivalidation.ValidateSignerName."""
    if not name:
        errs.append((field, "Required value", None, _NOVALUE))
        return
    segs = name.split("/")
    if len(segs) != 2:
        errs.append((field, "Invalid value", "must be a fully qualified domain and path of "
                     "the form 'example.com/signer-name'", name))
        return
    labels = segs[0].split(".")
    for lbl in labels:
        if len(lbl) > 63:
            errs.append((field, "Invalid value", f"validating label {json.dumps(lbl)}: must "
                         "be no more than 63 characters", segs[0]))
            break
        if not reg.DNS1123_LABEL_RE.match(lbl):
            errs.append((field, "Invalid value", f"validating label {json.dumps(lbl)}: "
                         f"{reg.LABEL_MSG}", segs[0]))
            break
    if len(labels) < 2:
        errs.append((field, "Invalid value", "should be a domain with at least two segments "
                     "separated by dots", segs[0]))
    if not reg.DNS1123_SUBDOMAIN_RE.match(segs[1]):
        errs.append((field, "Invalid value", reg.SUBDOMAIN_MSG, segs[1]))


def _conditions(obj):
    return ((obj.get("status") or {}).get("conditions")) or []


def validate(obj):
    """validateCertificateSigningRequest with the options of an object this
    server stored itself (none of the legacy-data tolerances apply)."""
    errs = []
    meta = obj.get("metadata") or {}
    if not meta.get("name"):
        errs.append(("metadata.name", "Required value", "name or generateName is required",
                     _NOVALUE))
    spec = obj.get("spec") or {}
    raw = _request_bytes(obj)
    parsed, why = parse_csr(raw)
    if parsed is not None and not parsed.is_signature_valid:
        why = "x509: ECDSA verification failure" if isinstance(
            parsed.public_key(), ec.EllipticCurvePublicKey) else \
            "crypto/rsa: verification error"
    if why:
        errs.append(("spec.request", "Invalid value", why, GoBytes(raw)))
    usages = spec.get("usages") or []
    if not usages:
        errs.append(("spec.usages", "Required value", None, _NOVALUE))
    for i, u in enumerate(usages):
        if u not in ALL_USAGES:
            reg._supported(errs, f"spec.usages[{i}]", u, ALL_USAGES)
    seen = set()
    for i, u in enumerate(usages):
        if u in seen:
            errs.append((f"spec.usages[{i}]", "Duplicate value", None, u))
        seen.add(u)
    signer = spec.get("signerName") or ""
    if signer == LEGACY_UNKNOWN:
        errs.append(("spec.signerName", "Invalid value", "the legacy signerName is not "
                     "allowed via this API version", signer))
    else:
        _validate_signer_name(errs, "spec.signerName", signer)
    exp = spec.get("expirationSeconds")
    if exp is not None and (not isinstance(exp, int) or exp < 600):
        errs.append(("spec.expirationSeconds", "Invalid value",
                     "may not specify a duration less than 600 seconds (10 minutes)", exp))
    has_approved = has_denied = False
    seen_types = set()
    for i, c in enumerate(_conditions(obj)):
        f = f"status.conditions[{i}]"
        typ, st = c.get("type") or "", c.get("status") or ""
        if not typ:
            errs.append((f + ".type", "Required value", None, _NOVALUE))
        allowed = ["True"] if typ in TRUE_ONLY else ["False", "True", "Unknown"]
        if not st:
            errs.append((f + ".status", "Required value", None, _NOVALUE))
        elif st not in allowed:
            reg._supported(errs, f + ".status", st, allowed)
        if typ == "Approved":
            has_approved = True
            if has_denied:
                errs.append((f + ".type", "Invalid value",
                             "Approved and Denied conditions are mutually exclusive", typ))
        elif typ == "Denied":
            has_denied = True
            if has_approved:
                errs.append((f + ".type", "Invalid value",
                             "Approved and Denied conditions are mutually exclusive", typ))
        if typ in seen_types:
            errs.append((f + ".type", "Duplicate value", None, typ))
        seen_types.add(typ)
    cert = (obj.get("status") or {}).get("certificate")
    if cert:
        try:
            why = _check_certificate(base64.b64decode(cert, validate=True))
        except (ValueError, TypeError):
            why = "illegal base64 data"
        if why:
            errs.append(("status.certificate", "Invalid value", why, "<certificate data>"))
    return errs


def _default(obj):
    """v1 defaulting: a condition without status is True."""
    for c in _conditions(obj):
        if isinstance(c, dict) and not c.get("status"):
            c["status"] = "True"


def prepare_create(obj, user):
    """csrStrategy.PrepareForCreate: the requester's identity from the
    request, never from the body; no status."""
    if not isinstance(obj, dict):
        return
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    for k in ("username", "uid", "groups", "extra"):
        spec.pop(k, None)
    if user is not None:
        spec["username"] = user.name
        if user.uid:
            spec["uid"] = user.uid
        if user.groups:
            spec["groups"] = list(user.groups)
        if user.extra:
            spec["extra"] = copy.deepcopy(user.extra)
    obj["status"] = {}


def _find(obj, typ):
    return [c for c in _conditions(obj) if c.get("type") == typ]


def _populate_timestamps(new, old):
    now = reg.fmt_time(reg.now())
    for c in _conditions(new):
        if not c.get("lastUpdateTime"):
            c["lastUpdateTime"] = now
        if not c.get("lastTransitionTime"):
            t = now
            for oc in _conditions(old):
                if oc.get("type") == c.get("type") and oc.get("status") == c.get("status") \
                        and oc.get("lastTransitionTime"):
                    t = oc["lastTransitionTime"]
                    break
            c["lastTransitionTime"] = t


def prepare_update(sub, old, new):
    """The three update strategies plus the update rules of
    validateCertificateSigningRequestUpdate. new has the generic metadata
    handling done already."""
    new = copy.deepcopy(new)
    _default(new)
    if sub is None:  # csrStrategy: neither spec nor status change here
        new["spec"] = copy.deepcopy(old.get("spec"))
        new["status"] = copy.deepcopy(old.get("status") or {})
        return new
    out = copy.deepcopy(old)
    out["status"] = copy.deepcopy(new.get("status") or {})
    if sub == "approval":
        if (old.get("status") or {}).get("certificate"):
            out["status"]["certificate"] = old["status"]["certificate"]
        else:
            out["status"].pop("certificate", None)
    _populate_timestamps(out, old)
    errs = []
    for t in ("Approved", "Denied", "Failed"):
        if len(_find(out, t)) < len(_find(old, t)):
            errs.append(("status.conditions", "Forbidden",
                         f"updates may not remove a condition of type {json.dumps(t)}",
                         _NOVALUE))
    if sub != "approval":
        for t in ("Approved", "Denied"):
            o, n = _find(old, t), _find(out, t)
            if len(n) > len(o):
                errs.append(("status.conditions", "Forbidden",
                             f"updates may not add a condition of type {json.dumps(t)}",
                             _NOVALUE))
            elif len(n) == len(o) and n != o:
                errs.append(("status.conditions", "Forbidden",
                             f"updates may not modify a condition of type {json.dumps(t)}",
                             _NOVALUE))
    oc = (old.get("status") or {}).get("certificate") or ""
    nc = (out.get("status") or {}).get("certificate") or ""
    if oc != nc:
        if sub != "status":
            errs.append(("status.certificate", "Forbidden",
                         "updates may not set certificate content", _NOVALUE))
        elif oc:
            errs.append(("status.certificate", "Forbidden",
                         "updates may not modify existing certificate content", _NOVALUE))
    if errs:
        raise reg.invalid(RESOURCE, old["metadata"]["name"], errs)
    return out


# ------------------------------------------------------------------ admission


def admit_update(az, user, sub, old, new):
    """CertificateApproval (approval subresource: `approve` on the signer)
    and CertificateSigning (status with a new certificate: `sign`)."""
    if az is None:
        return
    signer = (old.get("spec") or {}).get("signerName") or ""
    if sub == "approval":
        verb, what = "approve", "approve"
    elif sub == "status" and ((old.get("status") or {}).get("certificate") !=
                              (new.get("status") or {}).get("certificate")):
        verb, what = "sign", "sign"
    else:
        return
    if signer_allowed(az, user, verb, signer):
        return
    raise authz.admission_forbidden(RESOURCE, old["metadata"]["name"],
                                    f"user not permitted to {what} requests with signerName "
                                    f"{json.dumps(signer)}")


def signer_allowed(az, user, verb, signer):
    """certificates.IsAuthorizedForSignerName: the exact signer name, else
    the `<domain>/*` wildcard."""
    for name in (signer, signer.split("/")[0] + "/*"):
        ok, _ = az.authorize(authz.Attrs(user, verb, "signers", GROUP, "", name))
        if ok:
            return True
    return False


# ------------------------------------------------------------------ signer checks

ORG_ERR = "subject organization is not system:nodes"
CN_ERR = "subject common name does not begin with system:node:"


def _subject(parsed, oid):
    return [a.value for a in parsed.subject.get_attributes_for_oid(oid)]


def _sans(parsed):
    try:
        ext = parsed.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return [], [], [], []
    return (ext.get_values_for_type(x509.DNSName), ext.get_values_for_type(x509.IPAddress),
            ext.get_values_for_type(x509.RFC822Name),
            ext.get_values_for_type(x509.UniformResourceIdentifier))


def validate_kubelet_client(parsed, usages):
    """certificates.ValidateKubeletClientCSR: the error text, or None."""
    if _subject(parsed, NameOID.ORGANIZATION_NAME) != ["system:nodes"]:
        return ORG_ERR
    dns, ips, emails, uris = _sans(parsed)
    if dns:
        return "DNS subjectAltNames are not allowed"
    if emails:
        return "Email subjectAltNames are not allowed"
    if ips:
        return "IP subjectAltNames are not allowed"
    if uris:
        return "URI subjectAltNames are not allowed"
    cn = _subject(parsed, NameOID.COMMON_NAME)
    if not cn or not cn[0].startswith("system:node:"):
        return CN_ERR
    u = set(usages)
    if u != {"digital signature", "key encipherment", "client auth"} and \
            u != {"digital signature", "client auth"}:
        return "usages did not match [client auth digital signature key encipherment]"
    return None


def validate_kubelet_serving(parsed, usages):
    """certificates.ValidateKubeletServingCSR."""
    if _subject(parsed, NameOID.ORGANIZATION_NAME) != ["system:nodes"]:
        return ORG_ERR
    dns, ips, emails, uris = _sans(parsed)
    if not dns and not ips:
        return "DNS or IP subjectAltName is required"
    if emails:
        return "Email subjectAltNames are not allowed"
    if uris:
        return "URI subjectAltNames are not allowed"
    u = set(usages)
    if u != {"digital signature", "key encipherment", "server auth"} and \
            u != {"digital signature", "server auth"}:
        return "usages did not match [digital signature key encipherment server auth]"
    cn = _subject(parsed, NameOID.COMMON_NAME)
    if not cn or not cn[0].startswith("system:node:"):
        return CN_ERR
    return None


SIGNERS = {CLIENT_KUBELET: validate_kubelet_client, KUBELET_SERVING: validate_kubelet_serving}


def duration(cert_ttl, expiration_seconds):
    """signer.duration: the requested lifetime, capped by
    --cluster-signing-duration, at least 10 minutes."""
    if expiration_seconds is None:
        return cert_ttl
    if expiration_seconds > cert_ttl:
        return cert_ttl
    if expiration_seconds < MIN_REQUESTED:
        return MIN_REQUESTED
    return expiration_seconds


def validity(now, ttl, ca_not_after):
    """PermissiveSigningPolicy: (notBefore, notAfter)."""
    nbf = now - datetime.timedelta(seconds=BACKDATE)
    if ttl < SHORT:
        naf = now + datetime.timedelta(seconds=ttl)
    else:
        naf = now + datetime.timedelta(seconds=ttl - BACKDATE)
    if naf >= ca_not_after:
        naf = ca_not_after
    return nbf, naf


KU = {"signing": "digital_signature", "digital signature": "digital_signature",
      "content commitment": "content_commitment", "key encipherment": "key_encipherment",
      "key agreement": "key_agreement", "data encipherment": "data_encipherment",
      "cert sign": "key_cert_sign", "crl sign": "crl_sign", "encipher only": "encipher_only",
      "decipher only": "decipher_only"}
EKU = {"any": x509.ObjectIdentifier("2.5.29.37.0"), "server auth": ExtendedKeyUsageOID.SERVER_AUTH,
       "client auth": ExtendedKeyUsageOID.CLIENT_AUTH,
       "code signing": ExtendedKeyUsageOID.CODE_SIGNING,
       "email protection": ExtendedKeyUsageOID.EMAIL_PROTECTION,
       "s/mime": ExtendedKeyUsageOID.EMAIL_PROTECTION,
       "ipsec end system": x509.ObjectIdentifier("1.3.6.1.5.5.7.3.5"),
       "ipsec tunnel": x509.ObjectIdentifier("1.3.6.1.5.5.7.3.6"),
       "ipsec user": x509.ObjectIdentifier("1.3.6.1.5.5.7.3.7"),
       "timestamping": ExtendedKeyUsageOID.TIME_STAMPING,
       "ocsp signing": ExtendedKeyUsageOID.OCSP_SIGNING,
       "microsoft sgc": x509.ObjectIdentifier("1.3.6.1.4.1.311.10.3.3"),
       "netscape sgc": x509.ObjectIdentifier("2.16.840.1.113730.4.1")}
# Go sorts the extended key usages by its enum order.
EKU_ORDER = ["any", "server auth", "client auth", "code signing", "email protection",
             "s/mime", "ipsec end system", "ipsec tunnel", "ipsec user", "timestamping",
             "ocsp signing", "microsoft sgc", "netscape sgc"]


class CA:
    def __init__(self, data_dir):
        with open(f"{data_dir}/ca.crt", "rb") as f:
            self.cert = x509.load_pem_x509_certificate(f.read())
        with open(f"{data_dir}/ca.key", "rb") as f:
            self.key = serialization.load_pem_private_key(f.read(), None)

    def sign(self, parsed, usages, ttl, now=None):
        """authority.CertificateAuthority.Sign with the permissive policy:
        subject and SANs from the request, usages from spec.usages, no
        other requested extension, CA:FALSE."""
        now = now or reg.utc_now()
        ca_naf = getattr(self.cert, "not_valid_after_utc", None) or \
            self.cert.not_valid_after.replace(tzinfo=datetime.timezone.utc)
        nbf, naf = validity(now, ttl, ca_naf)
        if nbf >= ca_naf:
            raise ValueError(f"the signer has expired: NotAfter={ca_naf}")
        if now >= ca_naf:
            raise ValueError("refusing to sign a certificate that expired in the past: "
                             f"NotAfter={ca_naf}")
        b = x509.CertificateBuilder().subject_name(parsed.subject).issuer_name(
            self.cert.subject).public_key(parsed.public_key()).serial_number(
            secrets.randbits(128) or 1).not_valid_before(nbf).not_valid_after(naf)
        kus = {v: False for v in set(KU.values())}
        for u in usages:
            if u in KU:
                kus[KU[u]] = True
        if any(kus.values()):
            b = b.add_extension(x509.KeyUsage(**kus), critical=True)
        ekus = [EKU[u] for u in EKU_ORDER if u in usages]
        if ekus:
            b = b.add_extension(x509.ExtendedKeyUsage(list(dict.fromkeys(ekus))),
                                critical=False)
        b = b.add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        try:
            aki = x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(
                self.cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value)
            b = b.add_extension(aki, critical=False)
        except x509.ExtensionNotFound:
            pass
        try:
            san = parsed.extensions.get_extension_for_class(x509.SubjectAlternativeName)
            b = b.add_extension(san.value, critical=False)
        except x509.ExtensionNotFound:
            pass
        algo = hashes.SHA256() if isinstance(self.key, (rsa.RSAPrivateKey,
                                                        ec.EllipticCurvePrivateKey)) else None
        cert = b.sign(self.key, algo)
        return cert.public_bytes(serialization.Encoding.PEM)


# ------------------------------------------------------------------ controllers

APPROVERS = [  # csrapproving's recognizers, in its order
    ("selfnodeclient", "Auto approving self kubelet client certificate after "
     "SubjectAccessReview.", True),
    ("nodeclient", "Auto approving kubelet client certificate after SubjectAccessReview.",
     False),
]


def _approved_or_denied(obj):
    return any(c.get("type") in ("Approved", "Denied") for c in _conditions(obj))


def approve_one(api, az, obj):
    """sarApprover.handle for one CSR; True if it approved it."""
    if (obj.get("status") or {}).get("certificate") or _approved_or_denied(obj):
        return False
    spec = obj.get("spec") or {}
    parsed, _ = parse_csr(_request_bytes(obj))
    if parsed is None:
        return False
    for sub, message, self_only in APPROVERS:
        if spec.get("signerName") != CLIENT_KUBELET:
            continue
        if validate_kubelet_client(parsed, spec.get("usages") or []) is not None:
            continue
        cn = _subject(parsed, NameOID.COMMON_NAME)
        if self_only and spec.get("username") != (cn[0] if cn else ""):
            continue
        user = authz.User(spec.get("username") or "", spec.get("groups") or [],
                          spec.get("uid") or "", spec.get("extra") or {})
        ok = True
        if az is not None:
            ok, _ = az.authorize(authz.Attrs(user, "create", RESOURCE.name, GROUP, "", "",
                                             sub))
        if not ok:
            continue

        def mutate(cur, message=message):
            if _approved_or_denied(cur):
                raise _Skip()
            new = copy.deepcopy(cur)
            new.setdefault("status", {}).setdefault("conditions", []).append(
                {"type": "Approved", "status": "True", "reason": "AutoApproved",
                 "message": message})
            return prepare_update("approval", cur, new)
        try:
            api.update(RESOURCE, None, obj["metadata"]["name"], mutate)
        except (_Skip, ApiError):
            return False
        return True
    return False


class _Skip(Exception):
    pass


def sign_one(api, ca, cert_ttl, obj):
    """signer.handle for one CSR."""
    st = obj.get("status") or {}
    if st.get("certificate"):
        return
    conds = _conditions(obj)
    if not any(c.get("type") == "Approved" and c.get("status") == "True" for c in conds) or \
            any(c.get("type") == "Failed" and c.get("status") == "True" for c in conds):
        return
    if any(c.get("type") == "Denied" for c in conds):
        return
    spec = obj.get("spec") or {}
    check = SIGNERS.get(spec.get("signerName"))
    if check is None:
        return
    parsed, _ = parse_csr(_request_bytes(obj))
    if parsed is None:
        return
    why = check(parsed, spec.get("usages") or [])
    if why is None:
        try:
            pem = ca.sign(parsed, spec.get("usages") or [],
                          duration(cert_ttl, spec.get("expirationSeconds")))
        except ValueError as e:
            sys.stderr.write(f"csrsigning: error auto signing csr: {e}\n")
            return

    def mutate(cur):
        if (cur.get("status") or {}).get("certificate"):
            raise _Skip()
        new = copy.deepcopy(cur)
        if why is not None:
            new.setdefault("status", {}).setdefault("conditions", []).append(
                {"type": "Failed", "status": "True", "reason": "SignerValidationFailure",
                 "message": why, "lastUpdateTime": reg.fmt_time(reg.now())})
        else:
            new.setdefault("status", {})["certificate"] = base64.b64encode(pem).decode()
        return prepare_update("status", cur, new)
    try:
        api.update(RESOURCE, None, obj["metadata"]["name"], mutate)
    except (_Skip, ApiError):
        pass


def controllers(api, az, ca, cert_ttl, stopping, interval=0.25):
    """csrapproving and csrsigning, each pass over every CSR (the real ones
    are informer driven; a quarter second poll is the stand-in's delay)."""
    while not stopping.wait(interval):
        try:
            items, _ = api.list(RESOURCE, None, {})
        except Exception:  # etcd restarting; the next pass retries
            continue
        for o in items:
            try:
                if approve_one(api, az, o):
                    o = api.get(RESOURCE, None, o["metadata"]["name"])
                sign_one(api, ca, cert_ttl, o)
            except Exception as e:  # keep the controllers running
                sys.stderr.write(f"csr controllers: {o['metadata'].get('name')}: {e!r}\n")


def parse_go_duration(s):
    """A Go time.Duration string (8760h0m0s, 90s, 1h30m) in seconds."""
    units = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}
    total, num = 0.0, ""
    i = 0
    if not s:
        raise ValueError("empty duration")
    while i < len(s):
        c = s[i]
        if c.isdigit() or c == ".":
            num += c
            i += 1
            continue
        u = "ms" if s[i:i + 2] == "ms" else c
        if u not in units or not num:
            raise ValueError(f"invalid duration {s!r}")
        total += float(num) * units[u]
        num = ""
        i += len(u)
    if num:
        raise ValueError(f"missing unit in duration {s!r}")
    return int(total)


# ------------------------------------------------------------------ printing

CSR_COLUMNS = [
    tables.NAME, tables.POD_COLUMNS[4],
    tables._col("SignerName", "signerName indicates the requested signer, and is a qualified "
                "name."),
    tables._col("Requestor", "request contains an x509 certificate signing request encoded "
                "in a \"CERTIFICATE REQUEST\" PEM block."),
    tables._col("RequestedDuration", "expirationSeconds is the requested duration of "
                "validity of the issued certificate."),
    tables._col("Condition", "conditions applied to the request. Known conditions are "
                "\"Approved\", \"Denied\", and \"Failed\"."),
]


def csr_status(obj):
    """extractCSRStatus of the printers."""
    types = {c.get("type") for c in _conditions(obj)}
    s = "Denied" if "Denied" in types else "Approved" if "Approved" in types else "Pending"
    if "Failed" in types:
        s += ",Failed"
    if (obj.get("status") or {}).get("certificate"):
        s += ",Issued"
    return s


def csr_row(o):
    spec = o.get("spec") or {}
    exp = spec.get("expirationSeconds")
    return {"cells": [o["metadata"]["name"], tables.since(o["metadata"].get(
        "creationTimestamp")), spec.get("signerName") or "", spec.get("username") or "",
        tables.human_duration(exp) if exp is not None else "<none>", csr_status(o)]}


def install():
    """Register the resource with the registry, discovery and the printers."""
    reg.install_resource(RESOURCE, validate, prepare_update, _default)
    tables.PRINTERS[RESOURCE.name] = (CSR_COLUMNS, csr_row)


# ------------------------------------------------------------------ helpers for tests


def make_request(cn, orgs, key=None, dns=(), ips=()):
    """A PEM CSR (and its key) as a client would make one."""
    key = key or ec.generate_private_key(ec.SECP256R1())
    name = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    name.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
    b = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(name))
    sans = [x509.DNSName(d) for d in dns] + [x509.IPAddress(ipaddress.ip_address(i))
                                             for i in ips]
    if sans:
        b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return b.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM), key


def wait(pred, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    return None
