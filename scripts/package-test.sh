#!/usr/bin/env bash
# The Debian package as an operator meets it: it builds, lintian finds no error, it installs
# on this machine (user, group, conffile, unit, man pages, completions), the unit passes
# `systemd-analyze verify` and scores as the README says under `systemd-analyze security`,
# and it removes (conffile kept) and purges (conffile gone) cleanly. Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "package-test: $*" >&2; exit 1; }

bash scripts/package.sh
deb=$(ls -t target/debian/fulcrum_*.deb | head -1)
status=0
report=$(lintian --fail-on error "$deb" 2>&1) || status=$?
grep -v 'running with root privileges' <<< "$report" || true
[ "$status" -eq 0 ] || fail "lintian reports errors on $deb"

dpkg -i "$deb"
version=$(dpkg-deb -f "$deb" Version | sed 's/-[0-9]*$//')
/usr/sbin/fulcrumd --version | grep "^fulcrumd $version (commit " > /dev/null || fail "fulcrumd --version"
/usr/bin/fulcrumctl --version | grep "^fulcrumctl $version (commit " > /dev/null || fail "fulcrumctl --version"
getent passwd fulcrum >/dev/null || fail "no user fulcrum"
getent group fulcrum-admins >/dev/null || fail "no group fulcrum-admins"
[ "$(stat -c %U:%G:%a /etc/fulcrum/ns.conf)" = "fulcrum:fulcrum-admins:640" ] || fail "ns.conf owner/mode"
/usr/sbin/fulcrumd --check-config /etc/fulcrum/ns.conf >/dev/null || fail "the default ns.conf does not load"
unit=/usr/lib/systemd/system/fulcrumd.service
systemd-analyze verify "$unit" || fail "systemd-analyze verify"
exposure=$(systemd-analyze security --offline=yes "$unit" 2>/dev/null |
  sed -n 's/.*Overall exposure level for fulcrumd.service: \([0-9.]*\).*/\1/p')
echo "package-test: systemd-analyze security exposure $exposure"
awk -v e="$exposure" 'BEGIN { exit !(e != "" && e <= 3.0) }' || fail "exposure $exposure above 3.0"
MANWIDTH=200 man -P cat fulcrum.conf 2>/dev/null | grep "add lb vserver <name>" > /dev/null || fail "man fulcrum.conf"
MANWIDTH=200 man -P cat fulcrumctl 2>/dev/null | grep -- "--socket" > /dev/null || fail "man fulcrumctl"
MANWIDTH=200 man -P cat fulcrumd 2>/dev/null | grep -- "--log-level" > /dev/null || fail "man fulcrumd"
[ -f /usr/share/bash-completion/completions/fulcrumctl ] || fail "bash completion"
[ -f /usr/share/zsh/vendor-completions/_fulcrumctl ] || fail "zsh completion"

echo "# changed by the operator" >> /etc/fulcrum/ns.conf
dpkg -r fulcrum
[ ! -e /usr/sbin/fulcrumd ] || fail "fulcrumd left after dpkg -r"
grep -q "changed by the operator" /etc/fulcrum/ns.conf || fail "dpkg -r dropped the operator's ns.conf"
dpkg -P fulcrum
[ ! -e /etc/fulcrum/ns.conf ] || fail "ns.conf left after purge"
[ ! -e "$unit" ] || fail "unit left after purge"
[ ! -e /etc/systemd/system/multi-user.target.wants/fulcrumd.service ] || fail "unit still enabled after purge"
echo "package-test: OK ($deb)"
