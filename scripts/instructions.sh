#!/usr/bin/env bash
# Instructions per frame through a worker (callgrind), for the new-flow and established paths
# of the datapath bench, with checksums verified and trusted. Unlike ns/packet on a shared VM,
# the counts repeat exactly: run it at two commits to compare them.
#
#   bash scripts/instructions.sh [BURSTS]      (default 3000 bursts of 64 frames a row)
set -euo pipefail
cd "$(dirname "$0")/.."
bursts=${1:-3000}
bash scripts/install-deps.sh
cargo build --release --locked -q -p fulcrum-benches --example instructions
bin=target/release/examples/instructions
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "| path | checksums | instructions/frame |"
echo "|---|---|---|"
for mode in new-flow new-flow-linux established established-timestamps; do
    for sums in verified trusted; do
        frames=$(valgrind --tool=callgrind --callgrind-out-file="$out/cg" \
            --toggle-collect='*measured_burst*' "$bin" "$mode" "$sums" "$bursts" 2>"$out/log")
        total=$(grep -oE 'Collected : [0-9]+' "$out/log" | grep -oE '[0-9]+$')
        echo "| $mode | $sums | $(( (total + frames / 2) / frames )) |"
    done
done
