#!/usr/bin/env bash
# Installs what Fulcrum needs to build and test on a fresh Debian 12 machine of this kind.
# Idempotent: packages already present are not reinstalled, and apt-get runs only when
# something is missing. The Rust toolchain itself comes with the machine (rustup).
set -euo pipefail

# Debian packages.
#  build: a C compiler (mimalloc, libbpf), libelf and zlib (libbpf), clang (the engine's XDP
#         program, engine/bpf/steer.c, compiled for the BPF target)
#  lab:   iproute2 and ethtool (namespaces, veth, offloads), nginx with the echo module,
#         openssl (the backends' HTTPS certificates),
#         socat, dnsmasq, vsftpd and snmpd (backends), curl, wrk, hey (paced load), dig and ping
#         (clients), tcpdump (captures),
#         nftables and haproxy (the peers of scripts/lab-bench.sh), netsniff-ng (trafgen, the
#         frame generator of scripts/floor-bench.sh), valgrind (callgrind: the instruction
#         counts of scripts/instructions.sh)
#  NITRO clients: python3-venv (the venv below)
#  dashboard: chromium and chromium-driver (the NITRO dashboard's test in a real headless
#         browser, driven over WebDriver by engine/tests/scripts/dashboard.py)
#  packaging: man-db (the man pages render in the tests), lintian (checks the .deb),
#         systemd (systemd-analyze verify/security on the unit), adduser (the package's
#         user and group)
PACKAGES=(gcc make pkg-config libelf-dev zlib1g-dev clang man-db lintian systemd adduser
          iproute2 ethtool openssl nginx-light libnginx-mod-http-echo socat dnsmasq-base vsftpd snmpd snmp
          curl wrk hey bind9-dnsutils iputils-ping tcpdump nftables haproxy netsniff-ng valgrind python3
          python3-venv chromium chromium-driver)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "install-deps: cargo not found; this machine kind ships Rust through rustup" >&2
  exit 1
fi
# rustfmt and clippy are rustup components; add them if this toolchain lacks them.
for c in rustfmt clippy; do
  if ! cargo "${c/rustfmt/fmt}" --version >/dev/null 2>&1; then
    rustup component add "$c"
  fi
done
# Crates are fetched by cargo from crates.io (Cargo.lock pins them).
cargo fetch --locked -q
# cargo-fuzz runs the fuzz targets (scripts/fuzz.sh); built from crates.io once.
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  cargo install cargo-fuzz --version 0.13.2 --locked -q
fi

# NITRO clients the project did not write, driven by engine/tests/nitro.rs: Ansible's
# community.network.netscaler_nitro_request module (Citrix's own, in the ansible 8.7.0
# package with ansible-core 2.15) and the Nagios/Icinga plugin check_netscaler, from PyPI
# into a venv of Debian's Python (pinned: a test must not change under us).
NITRO_CLIENTS=/opt/fulcrum-test/nitro-clients
if [ ! -x "$NITRO_CLIENTS/bin/ansible-playbook" ] || [ ! -x "$NITRO_CLIENTS/bin/check_netscaler" ]; then
  echo "install-deps: installing the NITRO clients into $NITRO_CLIENTS"
  /usr/bin/python3 -m venv "$NITRO_CLIENTS"
  "$NITRO_CLIENTS/bin/pip" install -q --disable-pip-version-check \
    ansible==8.7.0 ansible-core==2.15.13 check_netscaler==2.7.0
fi
