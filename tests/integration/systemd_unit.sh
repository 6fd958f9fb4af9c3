#!/bin/bash
# The unit's lines name $CUBELET_*_ARGS literally (systemd expands them).
# shellcheck disable=SC2016
# SPDX-License-Identifier: Apache-2.0
#
# The installed tree, the systemd unit and the Debian package, from the build
# directory the test runs from ($CUBELET = <build>/agent/cubelet):
#   1. `cmake --install <build> --prefix /usr` into a DESTDIR: every file in
#      its place, the unit and /etc/default/cubelet generated for /usr, the
#      binary runs;
#   2. `systemd-analyze verify --root` on the installed unit (with the
#      host's units for sysinit.target & co.) passes without a single
#      warning, and fails on broken copies (an unknown key, a bad value, a
#      missing ExecStart binary), so the check can fail;
#   3. --prefix /usr/local puts everything under it, unit paths included;
#   4. `cpack -G DEB` makes a .deb with the files, the conffiles and the
#      dependencies.
# Needs no root. Exit 77 (skip) without systemd-analyze, cpack or dpkg-deb.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.sh"
H_FAIL_FAST=1

for tool in cmake systemd-analyze cpack dpkg-deb; do
        if ! command -v "$tool" >/dev/null; then
                echo "systemd_unit: $tool not found; skipped"
                exit 77
        fi
done
: "${CUBELET:?CUBELET must point at <build>/agent/cubelet}"
build=$(cd "$(dirname "$CUBELET")/.." && pwd)
[ -f "$build/CMakeCache.txt" ] || { echo "systemd_unit: $build is not a build dir" >&2; exit 1; }
hostunits=/usr/lib/systemd/system
if [ ! -f "$hostunits/sysinit.target" ]; then
        echo "systemd_unit: no systemd units in $hostunits to verify against; skipped"
        exit 77
fi

harness_init systemd-unit
# has FILE LINE: FILE has exactly this line
has() {
        grep -qxF -- "$2" "$1" || fail "$1 lacks the line: $2"
}

# --- 1. install with prefix /usr -------------------------------------------
root=$tmp/root
DESTDIR=$root cmake --install "$build" --prefix /usr >"$tmp/install.log" 2>&1 ||
        { cat "$tmp/install.log" >&2; fail "cmake --install --prefix /usr"; }

unit=$root/lib/systemd/system/cubelet.service
env=$root/etc/default/cubelet
for f in usr/bin/cubelet lib/systemd/system/cubelet.service etc/cubelet/config.yaml \
        etc/default/cubelet etc/cni/net.d/10-cubelet-bridge.conflist \
        usr/share/doc/cubelet/install.md usr/share/doc/cubelet/README.md \
        usr/share/doc/cubelet/architecture.md; do
        [ -f "$root/$f" ] || fail "/$f not installed"
done
[ -x "$root/usr/bin/cubelet" ] || fail "/usr/bin/cubelet is not executable"
[ ! -e "$root/usr/lib/systemd/system/cubelet.service" ] || fail "unit also in /usr/lib"
version=$("$root/usr/bin/cubelet" version)
[[ $version == "cubelet v"* ]] || fail "installed binary prints \"$version\""

# No template placeholder left in the generated files.
if grep -n '@[A-Z_]*@' "$unit" "$env"; then fail "unsubstituted @VAR@ in the generated files"; fi

for line in 'Type=notify' 'NotifyAccess=main' 'EnvironmentFile=-/etc/default/cubelet' \
        'ExecStart=/usr/bin/cubelet $CUBELET_CONFIG_ARGS $CUBELET_KUBECONFIG_ARGS $CUBELET_EXTRA_ARGS' \
        'Restart=always' 'RestartSec=10' 'Delegate=yes' 'KillMode=process' \
        'After=network-online.target' 'Wants=network-online.target' 'StartLimitIntervalSec=0' \
        'OOMScoreAdjust=-999' 'LimitNOFILE=1048576' 'TasksMax=infinity' \
        'Documentation=file:///usr/share/doc/cubelet/install.md' 'WantedBy=multi-user.target'; do
        has "$unit" "$line"
done
grep -q '^#WatchdogSec=' "$unit" || fail "the commented WatchdogSec example is missing"
if grep -q '^WatchdogSec=' "$unit"; then fail "WatchdogSec is set; it must stay off by default"; fi
# The documentation the unit points at is the installed file.
doc=$(sed -n 's|^Documentation=file://||p' "$unit")
[ -f "$root$doc" ] || fail "Documentation=$doc is not installed"

has "$env" 'CUBELET_CONFIG_ARGS="--config /etc/cubelet/config.yaml"'
has "$env" 'CUBELET_KUBECONFIG_ARGS="--kubeconfig /etc/cubelet/kubeconfig"'
has "$env" 'CUBELET_EXTRA_ARGS=""'
# The commented alternative, joining with a bootstrap token, names flags the
# agent has (docs/install.md, "Joining with a bootstrap token").
boot=$(sed -n 's/^#CUBELET_KUBECONFIG_ARGS="\(--bootstrap-kubeconfig .*\)"$/\1/p' "$env")
[ -n "$boot" ] || fail "$env has no commented --bootstrap-kubeconfig line"
# shellcheck disable=SC2086 # split as systemd splits $CUBELET_KUBECONFIG_ARGS
"$root/usr/bin/cubelet" $boot --help >/dev/null || fail "cubelet rejects the bootstrap line: $boot"

cfg=$root/etc/cubelet/config.yaml
has "$cfg" 'apiVersion: kubelet.config.k8s.io/v1beta1'
has "$cfg" 'kind: KubeletConfiguration'
for field in staticPodPath maxPods evictionHard nodeStatusUpdateFrequency \
        nodeStatusReportFrequency nodeLeaseDurationSeconds registerWithTaints cgroupRoot \
        crashLoopBackOff maxContainerRestartPeriod healthzBindAddress healthzPort rotateCertificates; do
        grep -qE "^#[ ]*$field:" "$cfg" || fail "config.yaml does not document $field"
done
# The installed binary loads the installed config, and the same file with
# every documented default uncommented (the documented values are valid).
"$root/usr/bin/cubelet" --config "$cfg" --help >/dev/null || fail "cubelet rejects $cfg"
sed -E 's/^#([a-zA-Z]|  |- )/\1/' "$cfg" >"$tmp/config-all.yaml"
grep -q '^staticPodPath:' "$tmp/config-all.yaml" || fail "uncommenting config.yaml failed"
"$root/usr/bin/cubelet" --config "$tmp/config-all.yaml" --help >/dev/null ||
        fail "cubelet rejects config.yaml with its documented defaults uncommented"

cni=$root/etc/cni/net.d/10-cubelet-bridge.conflist
if command -v python3 >/dev/null; then
        python3 - "$cni" "$cfg" <<'EOF' || fail "$cni or config.yaml has the wrong content"
import json, sys
c = json.load(open(sys.argv[1]))
types = [p["type"] for p in c["plugins"]]
assert c["cniVersion"] == "1.0.0", c["cniVersion"]
assert types == ["bridge", "portmap"], types
br = c["plugins"][0]
assert br["bridge"] == "cubelet0", br
assert br["ipam"]["type"] == "host-local", br["ipam"]
assert br["ipam"]["ranges"][0][0]["subnet"] == "10.88.0.0/16", br["ipam"]
assert c["plugins"][1]["capabilities"] == {"portMappings": True}
try:
    import yaml
except ImportError:
    sys.exit(0)
y = yaml.safe_load(open(sys.argv[2]))
assert y == {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration"}, y
EOF
fi

# --- 2. systemd-analyze verify ----------------------------------------------
# --root resolves ExecStart= and the units this one pulls in (sysinit.target,
# network-online.target, ...) below the root: a copy of the installed tree
# plus the host's units. verify exits 0 on warnings such as an unknown key,
# so the check is: exit 0 AND no output at all.
vroot=$tmp/vroot
cp -a "$root" "$vroot"
mkdir -p "$vroot/usr/lib/systemd"
cp -a "$hostunits" "$vroot/usr/lib/systemd/"
vunit=$vroot/lib/systemd/system/cubelet.service
verify() {
        local out rc=0
        out=$(cd "$tmp" && systemd-analyze verify --man=no --root="$vroot" \
                /lib/systemd/system/cubelet.service 2>&1) || rc=$?
        [ -n "$out" ] && echo "$out"
        [ "$rc" -eq 0 ] && [ -z "$out" ]
}
verify || fail "systemd-analyze verify of the installed unit"

# The same check must reject broken units.
cp "$vunit" "$tmp/good.service"
expect_broken() {
        local what=$1
        if verify >"$tmp/verify.out"; then fail "verify accepted a unit with $what"; fi
        echo "ok: verify rejects $what: $(head -n1 "$tmp/verify.out")"
        cp "$tmp/good.service" "$vunit"
}
sed -i 's/^Restart=always$/Restrt=always/' "$vunit"
expect_broken "a misspelt key (Restrt=)"
sed -i 's/^Type=notify$/Type=notfy/' "$vunit"
expect_broken "a bad value (Type=notfy)"
sed -i 's/^KillMode=process$/KillMode=proces/' "$vunit"
expect_broken "a bad value (KillMode=proces)"
sed -i 's/^\[Service\]$/[Servce]/' "$vunit"
expect_broken "a misspelt section ([Servce])"
mv "$vroot/usr/bin/cubelet" "$tmp/cubelet.moved"
expect_broken "a missing ExecStart binary"
mv "$tmp/cubelet.moved" "$vroot/usr/bin/cubelet"
verify || fail "verify of the restored unit"

# --- 3. another prefix --------------------------------------------------------
lroot=$tmp/local
DESTDIR=$lroot cmake --install "$build" --prefix /usr/local >"$tmp/install-local.log" 2>&1 ||
        { cat "$tmp/install-local.log" >&2; fail "cmake --install --prefix /usr/local"; }
lunit=$lroot/usr/local/lib/systemd/system/cubelet.service
[ -f "$lunit" ] || fail "/usr/local/lib/systemd/system/cubelet.service not installed"
has "$lunit" 'ExecStart=/usr/local/bin/cubelet $CUBELET_CONFIG_ARGS $CUBELET_KUBECONFIG_ARGS $CUBELET_EXTRA_ARGS'
has "$lunit" 'EnvironmentFile=-/usr/local/etc/default/cubelet'
has "$lroot/usr/local/etc/default/cubelet" \
        'CUBELET_KUBECONFIG_ARGS="--kubeconfig /usr/local/etc/cubelet/kubeconfig"'
has "$lroot/usr/local/etc/default/cubelet" 'CUBELET_CONFIG_ARGS="--config /usr/local/etc/cubelet/config.yaml"'
has "$lroot/usr/local/etc/default/cubelet" \
        'CUBELET_EXTRA_ARGS="--cni-conf-dir /usr/local/etc/cni/net.d"'
[ -f "$lroot/usr/local/etc/cni/net.d/10-cubelet-bridge.conflist" ] || fail "local CNI conf"
[ -x "$lroot/usr/local/bin/cubelet" ] || fail "/usr/local/bin/cubelet"
if [ -e "$lroot/etc" ] || [ -e "$lroot/lib" ]; then fail "--prefix /usr/local wrote outside it"; fi

# --- 4. the Debian package ----------------------------------------------------
(cd "$tmp" && cpack -G DEB -B "$tmp/pkg" --config "$build/CPackConfig.cmake") \
        >"$tmp/cpack.log" 2>&1 || { cat "$tmp/cpack.log" >&2; fail "cpack -G DEB"; }
debs=("$tmp"/pkg/cubelet_*.deb)
if [ ${#debs[@]} -ne 1 ] || [ ! -f "${debs[0]}" ]; then
        fail "cpack made no single cubelet_*.deb: ${debs[*]}"
fi
deb=${debs[0]}
dpkg-deb -c "$deb" | awk '{print $NF}' | sed 's|^\./|/|' >"$tmp/contents"
for f in /usr/bin/cubelet /lib/systemd/system/cubelet.service /etc/cubelet/config.yaml \
        /etc/default/cubelet /etc/cni/net.d/10-cubelet-bridge.conflist \
        /usr/share/doc/cubelet/install.md; do
        grep -qxF "$f" "$tmp/contents" || fail "$f is not in the package"
done
if grep -q '^/usr/local' "$tmp/contents"; then fail "the package installs under /usr/local"; fi
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./lib/systemd/system/cubelet.service >"$tmp/deb.service"
has "$tmp/deb.service" 'ExecStart=/usr/bin/cubelet $CUBELET_CONFIG_ARGS $CUBELET_KUBECONFIG_ARGS $CUBELET_EXTRA_ARGS'

[ "$(dpkg-deb -f "$deb" Package)" = cubelet ] || fail "package name"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
want=(libc6 libcurl4 libcjson1 libyaml-0-2 libseccomp2 libcap2 libcgroup2 libarchive13 libssl3
        containernetworking-plugins iptables)
# libsystemd0 once the binary links it (the sd_notify calls).
if command -v readelf >/dev/null &&
        readelf -d "$root/usr/bin/cubelet" | qgrep 'NEEDED.*libsystemd\.so'; then
        want+=(libsystemd0)
fi
for p in "${want[@]}"; do
        grep -qE "(^|, )$p( \(|,|$)" <<<"$depends" || fail "Depends lacks $p: $depends"
done
dpkg-deb -I "$deb" conffiles >"$tmp/conffiles" || fail "the package has no conffiles"
sort "$tmp/conffiles" >"$tmp/conffiles.sorted"
printf '%s\n' /etc/cni/net.d/10-cubelet-bridge.conflist /etc/cubelet/config.yaml \
        /etc/default/cubelet >"$tmp/conffiles.want"
diff -u "$tmp/conffiles.want" "$tmp/conffiles.sorted" || fail "conffiles differ"

finish
