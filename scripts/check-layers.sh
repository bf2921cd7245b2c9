#!/usr/bin/env bash
# The layering rules the crate docs state, checked on the tree:
#  - no code outside engine/src/wire indexes header bytes;
#  - the data path and the selection core name nothing of ctl;
#  - monitors depends on no crate of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
indexed=$(grep -rnE '(data|bytes|frame|buf)[a-z_]*(\(\))?\[[0-9]+' engine/src | grep -v '^engine/src/wire/' || true)
if [ -n "$indexed" ]; then
  echo "check-layers: header bytes indexed outside engine::wire:" >&2
  echo "$indexed" >&2
  fail=1
fi
named=$(grep -rln 'ctl::' engine/src/worker engine/src/wire engine/src/lb \
  engine/src/flow.rs engine/src/nat.rs engine/src/neigh.rs engine/src/rss.rs engine/src/verdict.rs \
  engine/src/counters.rs engine/src/persist.rs || true)
if [ -n "$named" ]; then
  echo "check-layers: the data path names ctl in: $named" >&2
  fail=1
fi
if cargo tree -p monitors --locked --prefix none -e normal,build,dev | grep -E '^(ctl|engine) ' > /dev/null; then
  echo "check-layers: monitors depends on a crate of the workspace" >&2
  fail=1
fi
if [ "$fail" -eq 0 ]; then
  echo "check-layers: OK"
fi
exit "$fail"
