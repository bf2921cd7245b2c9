#!/usr/bin/env bash
# Two builds of the datapath bench timed alternately, so both see the same spells of this
# shared VM (its speed swings by up to 2× within minutes, which no single run of either shows).
# Builds the bench of each git revision in a worktree of its own, then runs every ROW once per
# round, BASE then NEW, ROUNDS times, and prints per row the lowest and the median criterion
# estimate in ns a frame (bursts of 64), the Mpps of the median, and NEW/BASE.
#
#   bash scripts/datapath-ab.sh BASE NEW [ROUNDS] [ROW...]
#     BASE, NEW   git revisions (NEW may be "." for the working tree)
#     ROUNDS      default 6
#     ROW         datapath bench names; default: new-flow-syn new-flow-syn-steady
#                 established-128B-trusted established-128B-verified
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n 2,12p "$0"; exit 2; }
base=$1
new=$2
rounds=${3:-6}
shift $(( $# < 3 ? $# : 3 ))
rows=("$@")
[ ${#rows[@]} -gt 0 ] || rows=(new-flow-syn new-flow-syn-steady established-128B-trusted
    established-128B-verified)
bash scripts/install-deps.sh
work=$(mktemp -d /tmp/fl-ab.XXXXXX)
target=$PWD/target
worktrees=()
cleanup() {
    for w in "${worktrees[@]}"; do git worktree remove --force "$w" >/dev/null 2>&1 || true; done
    rm -rf "$work"
}
trap cleanup EXIT

# The bench binary of revision $1, copied to $work/$2.
build() {
    local rev=$1 name=$2 src
    if [ "$rev" = . ]; then
        src=.
    else
        src=$work/tree-$name
        git worktree add --detach -q "$src" "$rev"
        worktrees+=("$src")
    fi
    # One target directory for both: the dependencies they share are built once.
    local bin
    bin=$(cd "$src" && CARGO_TARGET_DIR=$target cargo bench --locked -q -p fulcrum-benches \
        --bench datapath --no-run --message-format=json 2>/dev/null |
        python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "datapath" and m.get("executable"):
        print(m["executable"])')
    cp "$bin" "$work/$name"
}
build "$base" base
build "$new" new

# Criterion's saved estimates go to the scratch directory: target/criterion keeps what the
# last `cargo bench` measured, which benches/report.py reads.
export CRITERION_HOME=$work/criterion

# One criterion run of row $2 by binary $1: its middle estimate in ns a frame.
run() {
    "$1" --bench "datapath/$2\$" --warm-up-time 1 --measurement-time 2 --noplot 2>/dev/null |
        python3 -c 'import re,sys
done = False
for l in sys.stdin:  # read to the end: a bench cut off by a closed pipe fails the script
    m = re.search(r"time:\s+\[\S+ \S+ (\S+) (\S+) ", l)
    if m and not done:
        scale = {"ps": 1e-3, "ns": 1, "µs": 1e3, "us": 1e3, "ms": 1e6}[m.group(2)]
        print(float(m.group(1)) * scale / 64)
        done = True'
}

echo "| row | runs | lowest $base | lowest $new | median $base | median $new | Mpps (median) | new / base (median) |"
echo "|---|---|---|---|---|---|---|---|"
for row in "${rows[@]}"; do
    : > "$work/$row.base"
    : > "$work/$row.new"
    for _ in $(seq "$rounds"); do
        run "$work/base" "$row" >> "$work/$row.base"
        run "$work/new" "$row" >> "$work/$row.new"
    done
    python3 - "$row" "$rounds" "$work/$row.base" "$work/$row.new" <<'PY'
import statistics, sys
row, rounds, fb, fn = sys.argv[1:5]
b = [float(x) for x in open(fb) if x.strip()]
n = [float(x) for x in open(fn) if x.strip()]
if not b or not n:
    sys.exit(f"{row}: no estimate (does the row exist in both revisions?)")
mb, mn = statistics.median(b), statistics.median(n)
print(f"| {row} | {rounds} | {min(b):.1f} | {min(n):.1f} | {mb:.1f} | {mn:.1f} "
      f"| {1e3 / mb:.2f} → {1e3 / mn:.2f} | {mn / mb:.3f} |")
PY
done
