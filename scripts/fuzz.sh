#!/usr/bin/env bash
# Coverage-guided fuzzing of every target in fuzz/ for SECONDS each (default 30), on the
# stable toolchain without a sanitizer (`-s none`; cargo-fuzz's default needs nightly). The
# committed corpus (fuzz/corpus/TARGET) seeds each run; what the run finds goes to a
# scratch directory, crashes to fuzz/artifacts/TARGET (and the script fails).
#   bash scripts/fuzz.sh [SECONDS] [TARGET…]
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs=${1:-30}
shift || true
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --version 0.13.2 --locked
targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
  mapfile -t targets < <(cargo fuzz list)
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cargo fuzz build -s none -O
for t in "${targets[@]}"; do
  mkdir -p "$scratch/$t"
  echo "fuzz: $t for ${secs} s"
  status=0
  cargo fuzz run -s none -O "$t" "$scratch/$t" "corpus/$t" -- \
    -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    > "$scratch/$t.log" 2>&1 || status=$?
  grep -E "^stat::(number_of_executed_units|new_units_added)" "$scratch/$t.log" || true
  if [ "$status" -ne 0 ]; then
    tail -40 "$scratch/$t.log" >&2
    echo "fuzz: $t failed (status $status); the input is in fuzz/artifacts/$t" >&2
    exit 1
  fi
done
