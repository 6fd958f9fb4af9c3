#!/usr/bin/env bash
# Installs the Debian packages cubelet needs to build and test.
# Idempotent and quiet when nothing is missing.
set -euo pipefail

pkgs=(
  cmake pkg-config gcc make clang libclang-rt-14-dev clang-format
  libcurl4-openssl-dev libcjson-dev libyaml-dev libseccomp-dev libcap-dev
  libcgroup-dev libarchive-dev libssl-dev libsystemd-dev libmicrohttpd-dev libhttp-parser-dev libwslay-dev zlib1g-dev check
  python3 openssl iproute2 util-linux jq curl
)
# Components the integration tests and the demo drive for real.
pkgs+=(etcd-server etcd-client containernetworking-plugins busybox-static
  docker-registry skopeo umoci)
# htpasswd -B for the private registry test (tests/integration/private_registry.sh).
pkgs+=(apache2-utils)
# The stand-in apiserver signs service-account tokens (RS256) with it.
pkgs+=(python3-cryptography)
# ... and serves HTTP/2 (ALPN h2) as kube-apiserver does (tests/apiserver/h2serve.py).
pkgs+=(python3-h2)
# Graceful node shutdown's test (tests/integration/node_shutdown.sh): a
# private dbus-daemon and a fake systemd-logind in Python (lib/fake_logind.py).
pkgs+=(dbus-daemon dbus-bin python3-dbus python3-gi)
# Pod networking: portmap (CNI) drives iptables.
pkgs+=(iptables)
# The browser test of the live timeline page (tests/integration/timeline.sh
# drives headless Chromium over the DevTools protocol). Measured on a fresh
# Debian 12: 23 packages, 122 MB downloaded, 290 MB installed, 32 s.
pkgs+=(chromium)
# scripts/soak.sh plots its samples (docs/reliability.md).
pkgs+=(gnuplot-nox)
# The cgroup v2 test VM (tests/integration/cgroupv2_qemu.sh): qemu under
# software emulation, a Debian kernel to boot and cpio for its initramfs.
pkgs+=(qemu-system-x86 linux-image-amd64 cpio)
# The benchmark's peers (scripts/bench.sh): podman kube play on runc, and
# containerd (ctr) with runc; strace for its counts per pod (figure 7).
if [ "${1:-}" = "--bench" ]; then
  pkgs+=(podman runc catatonit containerd strace)
fi

# The SPDY interop test (tests/unit/test_spdy_interop.c) runs an independent
# SPDY/3.1 implementation, the npm package spdy-transport, under node. Only
# where node and npm are already installed; the test skips itself without it.
spdy_transport=${HOME:-/root}/.cache/cubelet-npm
if command -v node >/dev/null && command -v npm >/dev/null &&
    [ ! -f "$spdy_transport/node_modules/spdy-transport/package.json" ]; then
  mkdir -p "$spdy_transport"
  (cd "$spdy_transport" && npm install --no-audit --no-fund --silent spdy-transport@3.0.0 >/dev/null 2>&1) ||
    echo "deps.sh: could not install spdy-transport (npm); the SPDY interop test will be skipped" >&2
fi

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "deps.sh: missing Debian packages: ${missing[*]}; run as root or install them" >&2
  exit 1
fi
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
