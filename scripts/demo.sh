#!/usr/bin/env bash
# The main job: a real client reaches real nginx backends through fulcrumd on an AF_XDP
# socket, in a namespace lab (scripts/lab.sh), with the seeds' three services.
#   1. validate the shipped configurations (fulcrumd --check-config)
#   2. bring the lab up, start fulcrumd on hw-profiles/lab-veth.toml with examples/lab-demo.conf
#   3. drive HTTP from the client namespace: curl (new connections) and wrk (keep-alive)
#   4. print how many requests each service got and the engine's counters; tear down
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cargo build --release --locked -q --bin fulcrumd --bin fulcrumctl
FULCRUMD=$PWD/target/release/fulcrumd
FULCRUMCTL=$PWD/target/release/fulcrumctl

echo "== configurations"
for f in examples/*.conf; do "$FULCRUMD" --check-config "$f"; done

tag=demo$$
daemon=""
cleanup() {
  [ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null || true
  bash scripts/lab.sh down "$tag"
}
trap cleanup EXIT
echo
echo "== lab $tag: client 198.18.0.50, VIP 198.18.0.100, SNIP 198.18.0.2, backends 198.18.0.11-13"
bash scripts/lab.sh up "$tag" 3
cli() { ip netns exec "fl-$tag-cli" "$@"; }

sock=/tmp/fl-lab-$tag/ctl.sock
cp examples/lab-demo.conf "/tmp/fl-lab-$tag/ns.conf"
ip netns exec "fl-$tag-lb" "$FULCRUMD" --profile hw-profiles/lab-veth.toml --config "/tmp/fl-lab-$tag/ns.conf" \
  --socket "$sock" > "/tmp/fl-lab-$tag/fulcrumd.out" 2> "/tmp/fl-lab-$tag/fulcrumd.err" &
daemon=$!
for _ in $(seq 1 100); do
  cli curl -s -m 1 -o /dev/null http://198.18.0.100/ && break
  sleep 0.1
done

distribution() { # distribution PORT N
  local urls=()
  for _ in $(seq 1 "$2"); do urls+=("http://198.18.0.100:$1/"); done
  cli curl -s -m 30 -H 'Connection: close' "${urls[@]}" | sort | uniq -c | sed 's/^/    /'
}
echo
echo "== 300 new connections to Vserver-LB-RR (ROUNDROBIN, weights 2/1/1)"
distribution 8080 300
echo "== 300 new connections to Vserver-LB-1 (LEASTCONNECTION)"
distribution 80 300
echo "== wrk, 5 s, 20 keep-alive connections to Vserver-LB-1"
cli wrk -t1 -c20 -d5s http://198.18.0.100/ | sed 's/^/    /'

echo
echo "== fulcrumctl show lb vserver Vserver-LB-1"
"$FULCRUMCTL" --socket "$sock" show lb vserver Vserver-LB-1 | sed 's/^/    /'
echo "== fulcrumctl stat lb vserver"
"$FULCRUMCTL" --socket "$sock" stat lb vserver | sed 's/^/    /'
echo "== fulcrumctl stat service Service-HTTP-1"
"$FULCRUMCTL" --socket "$sock" stat service Service-HTTP-1 | sed 's/^/    /'

kill "$daemon"
wait "$daemon" || true
daemon=""
echo
echo "== fulcrumd's counters at shutdown"
sed 's/^/    /' "/tmp/fl-lab-$tag/fulcrumd.out"
