#!/usr/bin/env bash
# Lab throughput, all paths measured in one run on the same lab (scripts/lab.sh):
#   direct    client → backend 1 (no load balancer; the upper bound of this lab)
#   fulcrumd  client → fulcrumd (AF_XDP, full NAT), ROUNDROBIN over 3 backends
#   nftables  client → the kernel's nftables DNAT + SNAT (numgen round robin), same 3 backends
#   haproxy   client → HAProxy 2.6, mode tcp, roundrobin, same 3 backends
# For each: wrk with keep-alive and with a new connection per request (requests/s, p50, p99),
# and packets/s through the balancer (counted on its switch port, so every path is measured
# the same way). Everything shares this machine's cores: compare ratios, not absolutes.
#
#   bash scripts/lab-bench.sh [SECONDS] [CONNECTIONS] [QUEUES] [ROUNDS]
# QUEUES 2: the engine's veth has two queues and fulcrumd runs two workers
# (hw-profiles/lab-veth-mq.toml); the other paths run on the same two-queue lab.
# ROUNDS > 1 measures every path once a round, in turn, and ends with the median of each
# figure over the rounds and the median of each round's ratios to nftables and to direct:
# on a shared VM one run's ratio swings (its neighbours' load moves the paths measured early
# and late in it apart), the median over alternating rounds much less.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
conns=${2:-50}
queues=${3:-1}
rounds=${4:-1}
profile=hw-profiles/lab-veth.toml
[ "$queues" = 1 ] || profile=hw-profiles/lab-veth-mq.toml
bash scripts/install-deps.sh
cargo build --release --locked -q --bin fulcrumd
FULCRUMD=$PWD/target/release/fulcrumd
tag=bench$$
dir=/tmp/fl-lab-$tag
# The one server process of a path running now (fulcrumd or HAProxy), ended by its PID.
running=""
stop_running() {
  if [ -n "$running" ]; then kill "$running" 2>/dev/null || true; wait "$running" 2>/dev/null || true; fi
  running=""
}
cleanup() {
  stop_running
  bash scripts/lab.sh down "$tag"
}
trap cleanup EXIT
bash scripts/lab.sh up "$tag" 3 onearm "$queues" >/dev/null
lb=fl-$tag-lb
cli() { ip netns exec "fl-$tag-cli" "$@"; }
port_packets() { # packets through a switch port (both directions)
  ip -n "fl-$tag-sw" -s -j link show "$1" | python3 -c 'import json,sys; s=json.load(sys.stdin)[0]["stats64"]; print(s["rx"]["packets"]+s["tx"]["packets"])'
}
wait_http() {
  for _ in $(seq 1 100); do cli curl -s -m 1 -o /dev/null "$1" && return 0; sleep 0.1; done
  echo "lab-bench: $1 does not answer" >&2
  return 1
}
to_ms() { awk '{v=$1; if (v ~ /us$/) {sub("us","",v); v/=1000} else if (v ~ /ms$/) {sub("ms","",v)} else if (v ~ /s$/) {sub("s","",v); v*=1000}; printf "%.2f", v}'; }

results=$dir/results.tsv
: > "$results"
client_host=50
round=1
measure() { # measure NAME URL SWITCHPORT
  local name=$1 url=$2 swport=$3
  # Each path gets a client address of its own: wrk closes connections itself, and the
  # TIME_WAIT sockets one path leaves on the client must not slow the next path's connects.
  client_host=$((client_host + 1))
  ip -n "fl-$tag-cli" addr add "198.18.0.$client_host/24" dev eth0 2>/dev/null || true
  ip -n "fl-$tag-cli" route replace 198.18.0.0/24 dev eth0 src "198.18.0.$client_host"
  for mode in keepalive close; do
    local extra=() before after out rps p50 p99 errors
    [ "$mode" = close ] && extra=(-H "Connection: close")
    before=$(port_packets "$swport")
    out=$(cli wrk -t1 -c"$conns" -d"${secs}s" --latency "${extra[@]}" "$url")
    after=$(port_packets "$swport")
    rps=$(echo "$out" | awk '/Requests\/sec/ {printf "%.0f", $2}')
    p50=$(echo "$out" | awk '$1=="50%" {print $2}' | to_ms)
    p99=$(echo "$out" | awk '$1=="99%" {print $2}' | to_ms)
    errors=$(echo "$out" | grep -cE 'Socket errors|Non-2xx' || true)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$name" "$mode" "$rps" "$p50" "$p99" \
      "$(( (after - before) / secs ))" "$errors" >> "$results"
  done
  echo "lab-bench: round $round: $name done" >&2
}

cat > "$dir/rr.conf" <<CONF
add ns ip 198.18.0.2 255.255.255.0 -type SNIP
add service s1 198.18.0.11 HTTP 80
add service s2 198.18.0.12 HTTP 80
add service s3 198.18.0.13 HTTP 80
add lb vserver web HTTP 198.18.0.100 80 -lbMethod ROUNDROBIN
bind lb vserver web s1
bind lb vserver web s2
bind lb vserver web s3
CONF

bench_fulcrumd() {
  ip netns exec "$lb" "$FULCRUMD" --profile "$profile" --config "$dir/rr.conf" --socket "$dir/ctl.sock" \
    >> "$dir/fulcrumd.out" 2>&1 &
  running=$!
  wait_http http://198.18.0.100/
  measure fulcrumd http://198.18.0.100/ lb
  stop_running
}

# The kernel's paths answer for the VIP on the engine's interface (one-arm) while the engine
# is stopped, each from source addresses of its own, new every round: the TIME_WAIT sockets
# the backends keep for one path's tuples must not meet the next path's SYNs.
kernel_vip() { ip -n "$lb" addr "$1" 198.18.0.100/24 dev fl-lb0; }
bench_nftables() {
  local snat=198.18.0.$((150 + 2 * round))
  kernel_vip add
  ip -n "$lb" addr add "$snat/24" dev fl-lb0
  ip netns exec "$lb" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.send_redirects=0 net.ipv4.conf.fl-lb0.send_redirects=0
  cat > "$dir/lb.nft" <<NFT
table ip fl_bench {
  chain pre {
    type nat hook prerouting priority dstnat; policy accept;
    ip daddr 198.18.0.100 tcp dport 80 dnat to numgen inc mod 3 map { 0 : 198.18.0.11, 1 : 198.18.0.12, 2 : 198.18.0.13 }
  }
  chain post {
    type nat hook postrouting priority srcnat; policy accept;
    ip daddr { 198.18.0.11, 198.18.0.12, 198.18.0.13 } tcp dport 80 snat to $snat
  }
}
NFT
  ip netns exec "$lb" nft -f "$dir/lb.nft"
  wait_http http://198.18.0.100/
  measure nftables http://198.18.0.100/ lb
  ip netns exec "$lb" nft delete table ip fl_bench
  ip netns exec "$lb" sysctl -qw net.ipv4.ip_forward=0
  ip -n "$lb" addr del "$snat/24" dev fl-lb0
  kernel_vip del
}

bench_haproxy() {
  local source=198.18.0.$((151 + 2 * round))
  kernel_vip add
  ip -n "$lb" addr add "$source/24" dev fl-lb0
  cat > "$dir/haproxy.cfg" <<CFG
global
  maxconn 8000
  nbthread 1
defaults
  mode tcp
  timeout connect 2s
  timeout client 30s
  timeout server 30s
frontend fe
  bind 198.18.0.100:80
  default_backend be
backend be
  balance roundrobin
  source $source
  server s1 198.18.0.11:80
  server s2 198.18.0.12:80
  server s3 198.18.0.13:80
CFG
  ip netns exec "$lb" haproxy -db -f "$dir/haproxy.cfg" >> "$dir/haproxy.out" 2>&1 &
  running=$!
  wait_http http://198.18.0.100/
  measure haproxy http://198.18.0.100/ lb
  stop_running
  ip -n "$lb" addr del "$source/24" dev fl-lb0
  kernel_vip del
}

bench_direct() { measure direct http://198.18.0.11/ b1; }
# Odd rounds in one order, even rounds in the other: a trend over the run (the neighbours'
# load, the backends' TIME_WAIT) falls on every path alike.
for round in $(seq 1 "$rounds"); do
  order=(direct fulcrumd nftables haproxy)
  [ $((round % 2)) = 0 ] && order=(haproxy nftables fulcrumd direct)
  for path in "${order[@]}"; do "bench_$path"; done
done

echo
echo "wrk -t1 -c$conns -d${secs}s; ms; packets/s through the balancer's switch port"
python3 - "$results" "$rounds" <<'PY'
import csv, statistics, sys
rows = list(csv.reader(open(sys.argv[1]), delimiter="\t"))
rounds = int(sys.argv[2])
paths = ["direct", "fulcrumd", "nftables", "haproxy"]
fig = {}  # (round, path, mode) -> (rps, p50, p99, pkts, errors)
for r, path, mode, rps, p50, p99, pkts, errors in rows:
    fig[(int(r), path, mode)] = (float(rps or 0), float(p50 or 0), float(p99 or 0), int(pkts), int(errors))
def line(label, get):
    cells = []
    for mode in ("keepalive", "close"):
        rps, p50, p99, pkts, errors = get(mode)
        cells += [f"{rps:.0f}", f"{p50:.2f}", f"{p99:.2f}", f"{pkts:.0f}" + (" (errors!)" if errors else "")]
    print(f"| {label} | " + " | ".join(cells) + " |")
header = "| path | req/s keep-alive | p50 | p99 | pkt/s | req/s new conn | p50 | p99 | pkt/s |\n|---|---|---|---|---|---|---|---|---|"
print(header)
for r in range(1, rounds + 1):
    for p in paths:
        line(p if rounds == 1 else f"{p}, round {r}", lambda mode: fig[(r, p, mode)])
if rounds == 1:
    sys.exit(0)
med = statistics.median
print(f"\nMedians over {rounds} rounds:\n")
print(header)
for p in paths:
    line(p, lambda mode: tuple(med([fig[(r, p, mode)][k] for r in range(1, rounds + 1)]) for k in range(4))
         + (sum(fig[(r, p, mode)][4] for r in range(1, rounds + 1)),))
def ratios(num, den, mode, k):
    return [fig[(r, num, mode)][k] / max(fig[(r, den, mode)][k], 1e-9) for r in range(1, rounds + 1)]
print("\n| ratio (per round → median) | keep-alive req/s | new conn req/s | keep-alive p99 |")
print("|---|---|---|---|")
for num, den in (("fulcrumd", "nftables"), ("fulcrumd", "haproxy"), ("fulcrumd", "direct")):
    cells = []
    for mode, k in (("keepalive", 0), ("close", 0), ("keepalive", 2)):
        rs = ratios(num, den, mode, k)
        cells.append(" ".join(f"{x:.2f}" for x in rs) + f" → **{med(rs):.2f}**")
    print(f"| {num} / {den} | " + " | ".join(cells) + " |")
PY
