#!/usr/bin/env bash
# Private registries through kubectl against the stand-in (issue 14): the
# busybox test image pushed with skopeo (--dest-creds) to Debian's
# docker-registry with htpasswd (bcrypt) auth on loopback (plain HTTP, named
# with --insecure-registry), and behind a token-auth realm (a python3 proxy:
# "WWW-Authenticate: Bearer realm=,service=,scope=", tokens for Basic auth
# at the realm) so that the bearer exchange is exercised too. Every pod has
# imagePullPolicy Always, so each one pulls:
#   1. an imagePullSecret made by `kubectl create secret docker-registry`:
#      Running; without it: Waiting ErrImagePull with containerd's "no basic
#      auth credentials" text, then ImagePullBackOff wrapping it;
#   2. a wrong password: ErrImagePull "... 401 Unauthorized"; a pull secret
#      that does not exist: the FailedToRetrieveImagePullSecret warning and
#      an anonymous pull; two secrets (a wrong one first): Running;
#   3. the node's own <root-dir>/config.json: Running without a secret;
#   4. the bearer realm: Running with the secret, "failed to authorize:
#      failed to fetch oauth token" with a wrong one;
#   5. no password, its base64 forms or a token in the agent's log (-v 4),
#      the events or the pod statuses.
# Exit 77 when not root or a tool is missing.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
need_root
need_tools jq umoci ip busybox kubectl openssl python3 curl docker-registry skopeo htpasswd /usr/bin/etcd
need_cni bridge host-local
harness_init private-registry

user=alice
good=s3cret-$$-good
bad=wrong-$$-pw
wait_reason() { pj "$1" '{.status.containerStatuses[0].state.waiting.reason}'; }
pod_log() { cat "$logs"/default_"$1"_"$(pj "$1" '{.metadata.uid}')"/main/0.log 2>/dev/null | cut -d' ' -f4-; }
# private_pod NAME IMAGE [SECRET...]: a pod that pulls IMAGE (Always) with
# the pull secrets named.
private_pod() {
        local name=$1 image=$2 s secrets=""
        shift 2
        for s in "$@"; do secrets+="{name: $s}, "; done
        mkpod "$name" <<EOF
  imagePullSecrets: [${secrets%, }]
  containers:
  - name: main
    image: $image
    imagePullPolicy: Always
    command: [sh, -c, 'echo pulled-and-running; sleep 3600']
EOF
}
# expect_waiting POD REASON SUBSTRING: the container waits with REASON and
# a message containing SUBSTRING (both from one read: ErrImagePull turns
# into ImagePullBackOff a second later); $got_message is the message.
got_message=""
waiting_is() {
        local rm
        rm=$(pj "$1" '{.status.containerStatuses[0].state.waiting.reason}|{.status.containerStatuses[0].state.waiting.message}')
        [ "${rm%%|*}" = "$2" ] || return 1
        got_message=${rm#*|}
}
expect_waiting() {
        poll 30 waiting_is "$1" "$2" || { fail "$1: waiting reason '$(wait_reason "$1")', want $2"; return; }
        if [[ "$got_message" == *"$3"* ]]; then
                pass "$1: $2: $got_message"
        else
                fail "$1: $2 message '$got_message', want it to contain '$3'"
        fi
}

echo "== the image on a registry with htpasswd auth"
bash "$SOURCE_DIR/tests/images/build-busybox.sh" "$tmp/img" >/dev/null || die "build-busybox.sh failed"
htpasswd -Bbc "$tmp/htpasswd" "$user" "$good" >/dev/null 2>&1 || die "htpasswd failed"
reg=127.0.0.1:$(free_port)
cat >"$tmp/registry.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $tmp/registry
http:
  addr: $reg
auth:
  htpasswd:
    realm: cubelet-test
    path: $tmp/htpasswd
EOF
docker-registry serve "$tmp/registry.yml" >"$tmp/registry.log" 2>&1 &
track $!
poll 10 eval '[ "$(curl -s -o /dev/null -w "%{http_code}" "http://$reg/v2/")" = 401 ]' ||
        die "docker-registry did not come up on $reg: $(tail -3 "$tmp/registry.log")"
cat >"$tmp/policy.json" <<'EOF'
{"default": [{"type": "insecureAcceptAnything"}]}
EOF
img=$reg/private/busybox:1.36
skopeo --policy "$tmp/policy.json" copy -q --dest-tls-verify=false --dest-creds "$user:$good" \
        "oci:$tmp/img/layout:1.36" "docker://$img" || die "skopeo could not push to $reg"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://$reg/v2/private/busybox/manifests/1.36")" = 401 ] ||
        die "the registry serves the image without credentials"

echo "== a token-auth realm in front of it"
cat >"$tmp/tokenproxy.py" <<'PYEOF'
# Test code: a registry front with Docker token auth. /token wants Basic
# auth with the registry's user and password and gives a random token for
# service "cubelet-test-registry" and scope repository:private/busybox:pull;
# every other request needs that token and is passed on to the htpasswd
# registry with its Basic credentials.
import base64, http.server, json, os, secrets, sys, urllib.error, urllib.parse, urllib.request
upstream, user, password, port_file = sys.argv[1:5]
tokens = set()
basic = "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, fmt, *a):
        sys.stderr.write("tokenproxy: " + (fmt % a) + "\n")
    def reply(self, code, body=b"", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        if u.path == "/token":
            q = urllib.parse.parse_qs(u.query)
            if self.headers.get("Authorization") != basic:
                return self.reply(401, b'{"details":"wrong credentials"}',
                                  [("WWW-Authenticate", 'Basic realm="token"')])
            if q.get("service") != ["cubelet-test-registry"] or \
               q.get("scope") != ["repository:private/busybox:pull"]:
                return self.reply(400, b'{"details":"unexpected service or scope"}')
            t = secrets.token_hex(16)
            tokens.add(t)
            open(port_file + ".tokens", "a").write(t + "\n")
            return self.reply(200, json.dumps({"token": t, "expires_in": 300}).encode(),
                              [("Content-Type", "application/json")])
        auth = self.headers.get("Authorization", "")
        if not (auth.startswith("Bearer ") and auth[7:] in tokens):
            ch = 'Bearer realm="http://%s/token",service="cubelet-test-registry",' \
                 'scope="repository:private/busybox:pull"' % self.headers["Host"]
            if auth:
                ch += ',error="invalid_token"'
            return self.reply(401, b'{"errors":[{"code":"UNAUTHORIZED"}]}', [("WWW-Authenticate", ch)])
        req = urllib.request.Request(upstream + self.path, headers={
            "Accept": self.headers.get("Accept", "*/*"), "Authorization": basic})
        try:
            r = urllib.request.urlopen(req)
            code = r.status
        except urllib.error.HTTPError as e:
            r, code = e, e.code
        hs = [(h, r.headers[h]) for h in ("Content-Type", "Docker-Content-Digest") if r.headers.get(h)]
        self.reply(code, r.read(), hs)
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(port_file + ".tmp", "w").write(str(s.server_address[1]))
os.rename(port_file + ".tmp", port_file)
s.serve_forever()
PYEOF
python3 "$tmp/tokenproxy.py" "http://$reg" "$user" "$good" "$tmp/proxy.port" 2>"$tmp/tokenproxy.log" &
track $!
poll 10 test -s "$tmp/proxy.port" || die "the token proxy did not start"
treg=127.0.0.1:$(cat "$tmp/proxy.port")
timg=$treg/private/busybox:1.36

write_cni_conf
start_standin
start_agent -v 4 --kubeconfig "$data/node.kubeconfig" --insecure-registry "$reg" --insecure-registry "$treg" \
        --healthz-port "$(free_port)" --node-status-update-frequency 1s
node_ready
pass "node Ready"

# ---- 1. an imagePullSecret; none ------------------------------------------------
k create secret docker-registry regcred --docker-server="$reg" --docker-username="$user" \
        --docker-password="$good" >/dev/null || die "kubectl create secret docker-registry failed"
k create secret docker-registry badcred --docker-server="$reg" --docker-username="$user" \
        --docker-password="$bad" >/dev/null || die "kubectl create secret docker-registry failed"
private_pod withsecret "$img" regcred
private_pod nosecret "$img"
wait_running withsecret 60
poll 10 eval 'pod_log withsecret | qgrep -x pulled-and-running' || fail "withsecret: no output"
[ -n "$(events_of Pod withsecret Pulled | grep "Successfully pulled image \"$img\"")" ] ||
        fail "withsecret: no Pulled event"
pass "1 withsecret: Running with the imagePullSecret"
no_basic="failed to pull and unpack image \"$img\": failed to resolve reference \"$img\": pull access denied, repository does not exist or may require authorization: authorization failed: no basic auth credentials"
expect_waiting nosecret ErrImagePull "$no_basic"
[ "$got_message" = "$no_basic" ] || fail "nosecret: message '$got_message', want '$no_basic'"
expect_waiting nosecret ImagePullBackOff "Back-off pulling image \"$img\": ErrImagePull: $no_basic"
[ -n "$(events_of Pod nosecret Failed | grep -F "Warning|Failed to pull image \"$img\": $no_basic")" ] ||
        fail "nosecret: no 'Failed to pull image' event with the message"
[ -n "$(events_of Pod nosecret BackOff | grep -F "Back-off pulling image \"$img\"")" ] ||
        fail "nosecret: no BackOff event"

# ---- 2. a wrong password; a missing secret; two secrets --------------------------
private_pod wrongpw "$img" badcred
expect_waiting wrongpw ErrImagePull "failed to pull and unpack image \"$img\": failed to resolve reference \"$img\": unexpected status from GET request to http://$reg/v2/private/busybox/manifests/1.36: 401 Unauthorized"
wrong_msg=$got_message
# two wrong ones: both tried, the same error once (the kubelet's aggregate
# drops repeated messages; distinct ones would be "[e1, e2]")
k create secret docker-registry badcred2 --docker-server="$reg" --docker-username=bob \
        --docker-password="$bad" >/dev/null || die "kubectl create secret docker-registry failed"
private_pod twobad "$img" badcred badcred2
expect_waiting twobad ErrImagePull "401 Unauthorized"
[ "$got_message" = "$wrong_msg" ] || fail "twobad: message '$got_message', want '$wrong_msg'"
private_pod missing "$img" nosuch
expect_waiting missing ErrImagePull "no basic auth credentials"
poll 10 eval '[ -n "$(events_of Pod missing FailedToRetrieveImagePullSecret)" ]' || true
got=$(events_of Pod missing FailedToRetrieveImagePullSecret | head -1)
[ "$got" = "Warning|Unable to retrieve some image pull secrets (nosuch); attempting to pull the image may not succeed." ] ||
        fail "missing: FailedToRetrieveImagePullSecret event '$got'"
private_pod twosecrets "$img" badcred nosuch regcred
wait_running twosecrets 60
pass "2 wrongpw, missing (event), twosecrets (wrong one first, then the good one): Running"

# ---- 3. the node's own config.json -----------------------------------------------
printf '{"auths":{"http://%s":{"auth":"%s"}}}\n' "$reg" "$(printf '%s:%s' "$user" "$good" | base64 -w0)" \
        >"$root/config.json"
private_pod nodecreds "$img"
wait_running nodecreds 60
grep -q "pull of \"$img\" with 1 credential(s); the node's from $root/config.json" "$tmp/agent.log" ||
        fail "nodecreds: the agent does not log that it used $root/config.json"
rm -f "$root/config.json"
pass "3 nodecreds: Running with $root/config.json"

# ---- 4. the bearer-token exchange ------------------------------------------------
k create secret docker-registry tokcred --docker-server="$treg" --docker-username="$user" \
        --docker-password="$good" >/dev/null || die "kubectl create secret failed"
k create secret docker-registry tokbad --docker-server="$treg" --docker-username="$user" \
        --docker-password="$bad" >/dev/null || die "kubectl create secret failed"
private_pod bearer "$timg" tokcred
private_pod bearerbad "$timg" tokbad
private_pod bearernone "$timg"
wait_running bearer 60
[ -s "$tmp/proxy.port.tokens" ] || fail "bearer: the realm gave no token"
pass "4 bearer: Running through the token realm"
expect_waiting bearerbad ErrImagePull "failed to pull and unpack image \"$timg\": failed to resolve reference \"$timg\": failed to authorize: failed to fetch oauth token: unexpected status from GET request to http://$treg/token?service=cubelet-test-registry&scope=repository%3Aprivate%2Fbusybox%3Apull: 401 Unauthorized"
expect_waiting bearernone ErrImagePull "failed to authorize: failed to fetch anonymous token: unexpected status from GET request to http://$treg/token?"

# ---- 5. no credential anywhere it can be read -------------------------------------
k get events -A -o json >"$tmp/events.json"
k get pods -A -o json >"$tmp/pods.json"
leaks=0
check_leak() { # WHAT STRING
        local f
        for f in "$tmp/agent.log" "$tmp/events.json" "$tmp/pods.json"; do
                if grep -qF -- "$2" "$f"; then
                        fail "5 $1 appears in $(basename "$f"): $(grep -F -- "$2" "$f" | head -1 | cut -c1-200)"
                        leaks=$((leaks + 1))
                fi
        done
}
check_leak "the password" "$good"
check_leak "the wrong password" "$bad"
check_leak "base64 user:password" "$(printf '%s:%s' "$user" "$good" | base64 -w0)"
check_leak "base64 user:wrong" "$(printf '%s:%s' "$user" "$bad" | base64 -w0)"
for s in regcred badcred tokcred; do
        v=$(k get secret "$s" -o jsonpath='{.data.\.dockerconfigjson}')
        [ -n "$v" ] || fail "secret $s has no .dockerconfigjson"
        check_leak "secret $s's data" "${v:0:40}"
done
while read -r t; do check_leak "a bearer token" "$t"; done <"$tmp/proxy.port.tokens"
[ "$leaks" -eq 0 ] && pass "5 no password, base64 auth, Secret data or token in the agent log (-v 4), events or pod statuses"
finish
