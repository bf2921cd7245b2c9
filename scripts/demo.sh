#!/usr/bin/env bash
# The main job. Until the AF_XDP data plane lands this demo shows what exists: the command
# language and configuration model (every shipped example validated by `fulcrumd
# --check-config`, one bad file rejected line by line) and the selection core replaying the
# NetScaler seed scenarios.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cargo build --release --locked -q --bin fulcrumd --bin fulcrumctl
FULCRUMD=target/release/fulcrumd

echo "== fulcrumd --check-config on the shipped examples"
for f in examples/*.conf; do
  "$FULCRUMD" --check-config "$f"
done

echo
echo "== a configuration with mistakes is refused, each error with its line"
bad=$(mktemp -d)
trap 'rm -rf "$bad"' EXIT
cat > "$bad/ns.conf" <<'CONF'
add service svc1 198.18.0.11 HTTP 80
bind lb vserver vs-missing svc1
add lb monitor m1 TCP-ECV -send hello
bind lb vserver vs1 svc1 -weight 200
CONF
if "$FULCRUMD" --check-config "$bad/ns.conf"; then
  echo "demo: the bad file was accepted" >&2
  exit 1
fi

echo
echo "== the selection core replaying the seed scenarios (engine/tests/scenarios/*.toml)"
cargo test --release --locked -q -p engine --test scenarios
