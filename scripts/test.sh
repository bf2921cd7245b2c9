#!/usr/bin/env bash
# Runs every test of the workspace (unit, property, scenario and integration tests), then
# the Debian package's.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/check-layers.sh
cargo test --workspace --locked
# The Debian package: builds, lintian-clean, installs and removes on this machine.
bash scripts/package-test.sh
