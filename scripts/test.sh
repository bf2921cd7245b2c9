#!/usr/bin/env bash
# Runs every test of the workspace (unit, property, scenario and integration tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/check-layers.sh
cargo test --workspace --locked
