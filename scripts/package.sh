#!/usr/bin/env bash
# Builds the Debian package target/debian/fulcrum_<version>_<arch>.deb with cargo-deb:
# release binaries, the man pages and completions generated from the clap definitions and
# the command table (packaging/docgen), the unit packaging/fulcrumd.service.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! cargo deb --version >/dev/null 2>&1; then
  echo "package: installing cargo-deb"
  cargo install cargo-deb --locked --version 3.8.0 --quiet
fi
cargo build --release --locked -p engine -p ctl -p docgen
doc=target/release/fulcrum-doc
rm -rf "$doc"
target/release/fulcrum-docgen "$doc"
gzip -9n "$doc"/man/*.[0-9]
cargo deb -p engine --no-build --locked --strip
ls target/debian/*.deb
