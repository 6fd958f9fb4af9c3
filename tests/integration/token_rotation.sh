#!/usr/bin/env bash
# Service-account token rotation end to end (issue 14, Tests), on test
# clocks: the agent's wall clock (CUBELET_TEST_WALL_OFFSET_FILE) and the
# stand-in's (--test-clock, PUT /debug/clock) are advanced together, so a
# 600 s token ages in seconds. A pod with a projected serviceAccountToken of
# expirationSeconds 600:
#   1. the first token is bound to the pod, the container reads it, it works
#      against the stand-in (curl with it as the bearer token);
#   2. at 73 % of its TTL (+440 s) the agent keeps it (the kubelet's
#      requiresRefresh: 80 % of the TTL less a jitter of at most 10 s);
#   3. past 80 % (+490 s) the agent gets a new one: the file in the
#      container changes through the atomic writer (a new ..data), the new
#      token is issued on the advanced clock and works; the old one still
#      works until its expiry;
#   4. past the old token's expiry and the apiserver's 60 s leeway (+670 s)
#      the old token gets 401, the new one 200, and the young one is kept;
#   5. the clocks back to the host's time: the token is kept (a wall jump
#      back is no reason to refresh), nothing restarted.
# Exit 77 when not root or a tool is missing.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
need_root
need_tools jq umoci ip iptables busybox kubectl openssl python3 md5sum curl /usr/bin/etcd
need_cni bridge host-local
harness_init token_rotation
export CUBELET_STANDIN_DISABLE_ADMISSION_PLUGINS=${CUBELET_STANDIN_DISABLE_ADMISSION_PLUGINS-}

offset_file=$tmp/wall-offset
# set_clocks SECONDS: both clocks SECONDS ahead of the host's; the stand-in's
# first (the agent asks for a token as soon as its clock moves), then the
# agent's file, replaced by rename, which its inotify watch sees.
set_clocks() {
        k replace --raw /debug/clock -f - <<<"{\"offsetSeconds\": $1}" >/dev/null ||
                die "PUT /debug/clock $1 failed"
        { echo "$1" >"$offset_file.tmp" && mv "$offset_file.tmp" "$offset_file"; } ||
                die "cannot write $offset_file"
}
claims() {
        python3 -c 'import sys,base64; p=sys.argv[1].split(".")[1]; p+="="*(-len(p)%4); print(base64.urlsafe_b64decode(p).decode())' "$1"
}
# code TOKEN: the stand-in's HTTP status for GET /api with TOKEN as the bearer.
code() { curl -sS -m 20 -o /dev/null -w '%{http_code}' --cacert "$data/ca.crt" -H "Authorization: Bearer $1" "$standin_url/api"; }
uid_of() { pj "$1" '{.metadata.uid}'; }
plog() { cut -d' ' -f4- "$logs"/default_"$1"_"$(uid_of "$1")"/main/0.log 2>/dev/null; }
tok() { cat "$vdir/token" 2>/dev/null; }
changed() { [ "$(tok)" != "$1" ]; }
md5() { printf %s "$1" | md5sum | cut -c1-32; }
seen() { plog rot | qgrep "token $(md5 "$1")"; }
# the agent's TokenRequests for the pod (its -v 2 line per token received)
reqs() { grep -c 'serviceaccount default/default: token for pod default/rot,' "$tmp/agent.log"; }

echo 0 >"$offset_file"
import_busybox
write_cni_conf
start_standin --test-clock
CUBELET_TEST_WALL_OFFSET_FILE=$offset_file start_agent -v 2 --kubeconfig "$data/node.kubeconfig" \
        --healthz-port "$(free_port)" --node-status-update-frequency 1s
node_ready
grep -q "test hook CUBELET_TEST_WALL_OFFSET_FILE is set" "$tmp/agent.log" ||
        fail "the agent does not warn that the test clock hook is on"
pass "node Ready (test clocks at +0 s)"

T=/var/run/secrets/tokens/token
mkpod rot <<PODEOF
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'old=; while :; do n=\$(md5sum < $T | cut -c1-32); [ "\$n" = "\$old" ] || { echo "token \$n"; old=\$n; }; sleep 0.3; done']
    volumeMounts: [{name: tok, mountPath: /var/run/secrets/tokens, readOnly: true}]
  volumes:
  - name: tok
    projected:
      sources:
      - serviceAccountToken: {path: token, expirationSeconds: 600}
PODEOF
wait_running rot 60
puid=$(uid_of rot)
vdir=$root/pods/$puid/volumes/kubernetes.io~projected/tok

# ---- 1. the first token ------------------------------------------------------------
t1=$(tok)
[ -n "$t1" ] || die "rot: no token in $vdir"
c1=$(claims "$t1")
iat1=$(jq -r .iat <<<"$c1") exp1=$(jq -r .exp <<<"$c1")
[ $((exp1 - iat1)) -eq 600 ] || fail "1 token: exp-iat $((exp1 - iat1)), want 600"
[ "$(jq -r '."kubernetes.io".pod.name' <<<"$c1")" = rot ] || fail "1 token not bound to the pod: $c1"
poll 10 seen "$t1" || fail "1 the container does not see the volume's token: $(plog rot | head -3)"
[ "$(code "$t1")" = 200 ] || fail "1 the first token is refused: $(code "$t1")"
data1=$(readlink "$vdir/..data")
pass "1 token exp-iat 600 s bound to rot, read in the container, GET /api 200 with it"

# ---- 2. 73 % of the TTL: kept --------------------------------------------------------
r0=$(reqs)
set_clocks 440
wait_log 'wall clock is now offset by 440 s' 10
sleep 3
[ "$(tok)" = "$t1" ] || fail "2 the token was refreshed at 73 % of its TTL"
[ "$(reqs)" -eq "$r0" ] || fail "2 the agent asked for a token at 73 % of the TTL"
pass "2 at +440 s (73 % of the TTL) the token is kept"

# ---- 3. past 80 %: refreshed through the atomic writer --------------------------------
t_adv=$(date +%s)
set_clocks 490
poll 10 changed "$t1" || fail "3 the token file did not change within 10 s at +490 s (82 % of the TTL)"
took=$(($(date +%s) - t_adv))
t2=$(tok)
iat2=$(claims "$t2" | jq -r .iat)
[ "$iat2" -ge $((t_adv + 490)) ] ||
        fail "3 the new token's iat $iat2 is not on the advanced clock (>= $((t_adv + 490)))"
[ "$(readlink "$vdir/..data")" != "$data1" ] || fail "3 ..data still names $data1"
[ "$(readlink "$vdir/token")" = ..data/token ] || fail "3 token is not a symlink into ..data"
poll 10 seen "$t2" || fail "3 the container still reads the old token: $(plog rot | tail -3)"
[ "$(code "$t2")" = 200 ] || fail "3 the new token is refused: $(code "$t2")"
[ "$(code "$t1")" = 200 ] || fail "3 the old token stopped working before its expiry"
pass "3 at +490 s a new token within ${took} s, ..data $data1 -> $(readlink "$vdir/..data"), read in the container; both tokens work"

# ---- 4. past the old token's expiry ----------------------------------------------------
set_clocks 670
poll 10 eval '[ "$(code "$t1")" = 401 ]' || fail "4 the old token still works past exp + 60 s: $(code "$t1")"
[ "$(code "$t2")" = 200 ] || fail "4 the new token is refused: $(code "$t2")"
sleep 2
[ "$(tok)" = "$t2" ] || fail "4 the young token was refreshed again"
r1=$(reqs)
pass "4 at +670 s the old token gets 401, the new one 200 and is kept"

# ---- 5. the clocks back to the host's ---------------------------------------------------
set_clocks 0
wait_log 'wall clock is now offset by 0 s' 10
sleep 3
[ "$(tok)" = "$t2" ] || fail "5 the token changed when the clock went back"
[ "$(reqs)" -eq "$r1" ] || fail "5 the agent asked for a token when the clock went back"
[ "$(pj rot '{.status.containerStatuses[0].restartCount}')" = 0 ] || fail "5 rot restarted"
grep -E 'eyJ[A-Za-z0-9_-]{20,}' "$tmp/agent.log" >/dev/null && fail "a token in the agent log"
pass "5 back at +0 s: the token is kept, no restart, no token in the log"

k delete pod rot --wait=false >/dev/null
poll 30 gone rot || fail "rot not gone after delete"
stop_agent
finish
