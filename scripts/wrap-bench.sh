#!/usr/bin/env bash
# Sustained new connections past wraps of the SNAT ports at full rate (the lab test
# `new_connections_keep_their_rate_past_wraps_of_the_snat_ports` is its paced form, at a
# steady 2,000/s to one service, which this shared VM holds however busy): RUNS runs of wrk -c50 with
# `Connection: close` for SECONDS each through fulcrumd (release build, one worker, round robin
# over 3 backends, one SNIP), each run from a client address of its own (a lone client's own
# TIME_WAIT sockets would otherwise slow its connects). Prints connections per run, the TIME_WAIT
# tuples backend 1 holds after each, and the last run's ratio to the first, raw and as a share of
# a 2 s gauge straight to backend 1 before each run (this shared VM's own rate swings by a factor
# of three within a minute). At 10 k/s one
# worker's 55,000 ports wrap every ~6 s; the default (6 × 10 s) wraps them ten times.
#
#   bash scripts/wrap-bench.sh [RUNS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-6}
secs=${2:-10}
tag=wrap$$
dir=/tmp/fl-lab-$tag
cargo build --release -q -p engine --bin fulcrumd
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  bash scripts/lab.sh down "$tag" >/dev/null
}
trap cleanup EXIT
bash scripts/lab.sh up "$tag" 3 >/dev/null
cat > "$dir/ns.conf" <<CONF
add ns ip 198.18.0.2 255.255.255.0
add service s1 198.18.0.11 HTTP 80
add service s2 198.18.0.12 HTTP 80
add service s3 198.18.0.13 HTTP 80
add lb vserver web HTTP 198.18.0.100 80 -lbMethod ROUNDROBIN
bind lb vserver web s1
bind lb vserver web s2
bind lb vserver web s3
CONF
ip netns exec "fl-$tag-lb" target/release/fulcrumd --profile hw-profiles/lab-veth.toml \
  --config "$dir/ns.conf" --socket "$dir/ctl.sock" > "$dir/fulcrumd.out" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  ip netns exec "fl-$tag-cli" curl -s -m 1 -o /dev/null http://198.18.0.100/ && break
  sleep 0.1
done
rates=()
shares=()
direct() {
  ip netns exec "fl-$tag-cli" wrk -t1 -c50 -d"$1s" --timeout 5s -H 'Connection: close' "$2" |
    awk '/requests in/{print $1}'
}
echo "| run | connections in ${secs} s | gauge (direct, per s) | share | backend 1 TIME_WAIT tuples |"
echo "|---|---|---|---|---|"
for run in $(seq 1 "$runs"); do
  addr=198.18.0.$((60 + run))
  ip -n "fl-$tag-cli" addr add "$addr/24" dev eth0
  ip -n "fl-$tag-cli" route replace 198.18.0.0/24 dev eth0 src "$addr"
  g=$(($(direct 2 http://198.18.0.11/) / 2))
  n=$(direct "$secs" http://198.18.0.100/)
  tw=$(ip netns exec "fl-$tag-b1" ss -tan state time-wait | tail -n +2 | wc -l)
  share=$(python3 -c "print(f'{$n / $secs / max($g, 1):.2f}')")
  rates+=("$n")
  shares+=("$share")
  echo "| $run | $n | $g | $share | $tw |"
done
python3 -c "r=[int(x) for x in '${rates[*]}'.split()]; s=[float(x) for x in '${shares[*]}'.split()]; print(f'last / first = {r[-1] / max(r[0], 1):.2f} raw, {s[-1] / max(s[0], 0.01):.2f} as a share of the gauge (goal >= 0.90)')"
