#!/usr/bin/env bash
# cubelet image pull/import/ls/inspect/rm against a registry on loopback.
#
# Builds the test busybox image (tests/images/build-busybox.sh), serves it
# from Debian's docker-registry on a free 127.0.0.1 port (pushed with
# skopeo), pulls it over plain HTTP as an insecure registry, imports it as
# an oci-archive and as a docker-archive, checks that a tampered blob is
# refused with nothing stored, and removes it again. Nothing from the
# internet. Needs root; exits 77 when not root or when docker-registry,
# skopeo, umoci or busybox-static are missing.
#
# Environment: CUBELET (the binary), SOURCE_DIR (the repo).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
H_FAIL_FAST=1
need_root
for tool in docker-registry skopeo umoci python3 curl; do
  command -v "$tool" >/dev/null || skip "$tool not installed (scripts/deps.sh)"
done
[ -x /bin/busybox ] || skip "busybox-static not installed (scripts/deps.sh)"
"$CUBELET" image --help >/dev/null 2>&1 || fail "$CUBELET has no 'image' command"
harness_init image-registry

cub() { "$CUBELET" --root-dir "$1" image "${@:2}"; }

echo "== build the busybox image"
bash "$SOURCE_DIR/tests/images/build-busybox.sh" "$tmp/img" >/dev/null
layout=$tmp/img/layout
manifest_digest=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"])' "$layout/index.json")
config_digest=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["config"]["digest"])' "$layout/blobs/sha256/${manifest_digest#sha256:}")

echo "== start docker-registry on loopback"
port=$(free_port)
reg=127.0.0.1:$port
cat >"$tmp/registry.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $tmp/registry
  delete:
    enabled: true
http:
  addr: $reg
EOF
docker-registry serve "$tmp/registry.yml" >"$tmp/registry.log" 2>&1 &
reg_pid=$!
track "$reg_pid"
for _ in $(seq 1 100); do
  curl -fsS "http://$reg/v2/" >/dev/null 2>&1 && break
  kill -0 "$reg_pid" 2>/dev/null || { cat "$tmp/registry.log" >&2; fail "docker-registry exited"; }
  sleep 0.1
done
curl -fsS "http://$reg/v2/" >/dev/null || fail "docker-registry did not come up on $reg"

cat >"$tmp/policy.json" <<'EOF'
{"default": [{"type": "insecureAcceptAnything"}]}
EOF
sk() { skopeo --policy "$tmp/policy.json" "$@"; }
sk copy -q --dest-tls-verify=false "oci:$layout:1.36" "docker://$reg/busybox:1.36"

echo "== pull"
r1=$tmp/root1
out=$(cub "$r1" pull --insecure-registry "$reg" "$reg/busybox:1.36")
[ "$out" = "$reg/busybox:1.36" ] || fail "pull printed '$out'"
cub "$r1" ls | tee "$tmp/ls"
grep -q "^$reg/busybox:1.36 .* ${config_digest:7:12} " "$tmp/ls" || fail "image ls lacks the image with ID ${config_digest:7:12}"
ls "$r1"/images/layers/sha256/*/bin/busybox >/dev/null || fail "no unpacked bin/busybox"
[ -x "$(ls "$r1"/images/layers/sha256/*/bin/busybox | head -1)" ] || fail "bin/busybox not executable"
wh=$(ls -d "$r1"/images/layers/sha256/*/etc/removed-later)
[ "$(echo "$wh" | wc -l)" -eq 2 ] || fail "expected etc/removed-later in two layers"
while read -r f; do [ -f "$f" ] || [ -c "$f" ] || fail "$f neither file nor whiteout"; done <<<"$wh"
[ "$(for f in $wh; do [ -c "$f" ] && echo c; done | wc -l)" -eq 1 ] || fail "no overlay whiteout for etc/removed-later"
cub "$r1" inspect "$reg/busybox:1.36" >"$tmp/inspect"
grep -q '^Cmd: *"sh"$' "$tmp/inspect" || fail "inspect lacks Cmd sh"
grep -q '^StopSignal: *SIGTERM$' "$tmp/inspect" || fail "inspect lacks StopSignal"
grep -q "^Manifest: *$manifest_digest$" "$tmp/inspect" || fail "manifest digest differs"

echo "== pull by digest; TLS is required unless the registry is named insecure"
cub "$r1" pull --insecure-registry "$reg" "$reg/busybox@$manifest_digest" >/dev/null
cub "$r1" ls | qgrep "^$reg/busybox@$manifest_digest " || fail "pull by digest not listed"
if cub "$r1" pull "$reg/busybox:1.36" 2>"$tmp/err"; then
  fail "pull over plain HTTP without --insecure-registry succeeded"
fi
grep -q "https://$reg" "$tmp/err" || fail "TLS pull error does not name the https URL: $(cat "$tmp/err")"
if cub "$r1" pull --insecure-registry "$reg" "$reg/BusyBox" 2>"$tmp/err"; then
  fail "an invalid reference was accepted"
fi
grep -q "invalid image reference" "$tmp/err" || fail "bad reference error: $(cat "$tmp/err")"

echo "== anonymous bearer-token challenge (a token-checking proxy in front)"
cat >"$tmp/authproxy.py" <<'PYEOF'
import http.server, json, sys, urllib.error, urllib.parse, urllib.request
upstream, port_file = sys.argv[1], sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
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
            ok = q.get("service") == ["test-svc"] and q.get("scope") == ["repository:busybox:pull"]
            body = json.dumps({"token": "good-token"} if ok else {}).encode()
            return self.reply(200 if ok else 400, body, [("Content-Type", "application/json")])
        if self.headers.get("Authorization") != "Bearer good-token":
            ch = 'Bearer realm="http://%s/token",service="test-svc",scope="repository:busybox:pull"'
            return self.reply(401, b"", [("WWW-Authenticate", ch % self.headers["Host"])])
        req = urllib.request.Request(upstream + self.path,
                                     headers={"Accept": self.headers.get("Accept", "*/*")})
        try:
            r = urllib.request.urlopen(req)
            code = r.status
        except urllib.error.HTTPError as e:
            r, code = e, e.code
        hs = [(h, r.headers[h]) for h in ("Content-Type", "Docker-Content-Digest") if r.headers.get(h)]
        self.reply(code, r.read(), hs)
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(port_file + ".tmp", "w").write(str(s.server_address[1]))
import os; os.rename(port_file + ".tmp", port_file)
s.serve_forever()
PYEOF
python3 "$tmp/authproxy.py" "http://$reg" "$tmp/proxy.port" &
proxy_pid=$!
track "$proxy_pid"
for _ in $(seq 1 50); do [ -s "$tmp/proxy.port" ] && break; sleep 0.1; done
[ -s "$tmp/proxy.port" ] || fail "the token proxy did not start"
proxy=127.0.0.1:$(cat "$tmp/proxy.port")
rt=$tmp/root-token
out=$(cub "$rt" pull --insecure-registry "$proxy" "$proxy/busybox:1.36") || fail "pull through the token proxy failed"
[ "$out" = "$proxy/busybox:1.36" ] || fail "token pull printed '$out'"
ls "$rt"/images/layers/sha256/*/bin/busybox >/dev/null || fail "no bin/busybox after the token pull"
kill "$proxy_pid"
wait "$proxy_pid" 2>/dev/null || true
proxy_pid=""

echo "== rm removes the references and garbage-collects"
cub "$r1" rm "$reg/busybox:1.36" >/dev/null
cub "$r1" ls | qgrep "busybox:1.36" && fail "rm left the reference"
[ -n "$(ls "$r1/images/blobs/sha256")" ] || fail "rm of one ref removed blobs still used by the digest ref"
cub "$r1" rm "$reg/busybox@$manifest_digest" >/dev/null
[ -z "$(ls -A "$r1/images/blobs/sha256")" ] || fail "blobs left after rm: $(ls "$r1/images/blobs/sha256")"
[ -z "$(ls -A "$r1/images/layers/sha256")" ] || fail "layer dirs left after rm"
if cub "$r1" rm "$reg/busybox:1.36" 2>/dev/null; then fail "rm of a missing image succeeded"; fi

echo "== import an oci-archive"
r2=$tmp/root2
if cub "$r2" import "$tmp/img/busybox.oci.tar" 2>"$tmp/err"; then
  fail "import of a tag-only archive without --name succeeded"
fi
grep -q -- "--name" "$tmp/err" || fail "import error does not suggest --name"
out=$(cub "$r2" import --name "$reg/busybox:1.36" "$tmp/img/busybox.oci.tar")
[ "$out" = "$reg/busybox:1.36" ] || fail "import printed '$out'"
cub "$r2" ls | qgrep "^$reg/busybox:1.36 .* ${config_digest:7:12} " || fail "imported image not listed"
ls "$r2"/images/layers/sha256/*/bin/busybox >/dev/null || fail "no bin/busybox after import"

echo "== import a docker-archive"
r3=$tmp/root3
sk copy -q "oci:$layout:1.36" "docker-archive:$tmp/busybox.docker.tar:busybox:docker"
out=$(cub "$r3" import "$tmp/busybox.docker.tar")
[ "$out" = "docker.io/library/busybox:docker" ] || fail "docker import printed '$out'"
cub "$r3" ls | qgrep "^docker.io/library/busybox:docker " || fail "docker-archive image not listed"
ls "$r3"/images/layers/sha256/*/bin/busybox >/dev/null || fail "no bin/busybox after docker import"
cub "$r3" inspect busybox:docker | qgrep '^Cmd: *"sh"$' || fail "docker import lost Cmd"

echo "== a tampered blob is refused and nothing is stored"
data=$(find "$tmp/registry" -path '*/blobs/sha256/*/data' -printf '%s %p\n' | sort -n | tail -1 | cut -d' ' -f2)
hex=$(basename "$(dirname "$data")")
printf 'X' | dd of="$data" bs=1 seek=4096 conv=notrunc status=none
r4=$tmp/root4
if cub "$r4" pull --insecure-registry "$reg" "$reg/busybox:1.36" 2>"$tmp/err"; then
  fail "pull of a tampered blob succeeded"
fi
cat "$tmp/err"
grep -q "digest mismatch: expected sha256:$hex, got sha256:" "$tmp/err" || fail "error does not name the digests"
[ -z "$(ls -A "$r4/images/blobs/sha256")" ] || fail "blobs stored after a mismatch"
[ -z "$(ls -A "$r4/images/layers/sha256")" ] || fail "layers stored after a mismatch"
[ -z "$(ls -A "$r4/images/tmp")" ] || fail "staging left after a mismatch"
[ "$(cub "$r4" ls | wc -l)" -eq 1 ] || fail "image ls is not empty after a mismatch"

echo "== stop the registry"
kill "$reg_pid"
wait "$reg_pid" 2>/dev/null || true
kill -0 "$reg_pid" 2>/dev/null && fail "docker-registry still running"
reg_pid=""
finish
