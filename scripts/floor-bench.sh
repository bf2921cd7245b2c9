#!/usr/bin/env bash
# The I/O floor against the engine, on one lab (scripts/lab.sh, one-arm) in one run:
#   l2fwd     `fulcrumd l2fwd`: frames to the VIP bounced back out of fl-lb0 with their MACs
#             swapped, through the engine's AF_XDP layer and XDP program, nothing else
#   fulcrumd  the engine forwarding established UDP flows: client -> VIP:9 -> backend 1
#             (full NAT, checksums verified and updated, counters), same profile
# trafgen (netsniff-ng) in the client namespace sends 64-byte UDP frames from 64 source ports
# to the VIP as fast as it can for SECONDS; what each forwarder sends out of fl-lb0 is counted
# on its switch port, the same way for both. Everything shares this machine's cores: compare
# the ratio, not the absolutes. Goal: fulcrumd >= 80 % of l2fwd.
#
#   bash scripts/floor-bench.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5}
tag=floor$$
dir=/tmp/fl-lab-$tag
bin=target/release/fulcrumd
cargo build --release -q -p engine --bin fulcrumd
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  bash scripts/lab.sh down "$tag" >/dev/null
}
trap cleanup EXIT
bash scripts/lab.sh up "$tag" 1 onearm >/dev/null
mkdir -p "$dir"
lb=fl-$tag-lb
sw=fl-$tag-sw
out_of_lb() { # frames fl-lb0 sent into the switch
  ip -n "$sw" -s -j link show lb | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["stats64"]["rx"]["packets"])'
}
lb_mac=$(ip -n "$lb" -j link show fl-lb0 | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["address"])')
cli_mac=$(ip -n "fl-$tag-cli" -j link show eth0 | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["address"])')
# One frame, its UDP source port counting through 64 values (64 flows).
cat > "$dir/udp.trafgen" <<CFG
{
  eth(da=$lb_mac, sa=$cli_mac, type=0x0800),
  ipv4(saddr=198.18.0.50, daddr=198.18.0.100, ttl=64, df),
  udp(sp=dinc(20000, 20063), dp=9),
  fill(0x41, 18),
}
CFG
blast() { # blast NAME: trafgen for $secs, prints NAME and the frames/s out of fl-lb0
  local before after
  before=$(out_of_lb)
  ip netns exec "fl-$tag-cli" timeout "$secs" trafgen --dev eth0 --conf "$dir/udp.trafgen" \
    --cpus 1 --qdisc-path -q >/dev/null 2>&1 || true
  sleep 0.5
  after=$(out_of_lb)
  echo "$1 $(( (after - before) / secs ))"
}

# l2fwd
ip netns exec "$lb" "$bin" --profile hw-profiles/lab-veth.toml l2fwd --address 198.18.0.100 \
  > "$dir/l2fwd.out" 2>&1 &
pids+=($!)
sleep 1
floor=$(blast l2fwd)
kill "${pids[-1]}" 2>/dev/null || true; wait "${pids[-1]}" || true
unset 'pids[-1]'

# fulcrumd: an established UDP flow per source port toward backend 1's discard port.
printf 'add ns ip 198.18.0.2 255.255.255.0\nadd service u1 198.18.0.11 UDP 9 -healthMonitor NO\nadd lb vserver sink UDP 198.18.0.100 9\nbind lb vserver sink u1\n' > "$dir/ns.conf"
ip netns exec "$lb" "$bin" --profile hw-profiles/lab-veth.toml --config "$dir/ns.conf" \
  --socket "$dir/ctl.sock" > "$dir/fulcrumd.out" 2>&1 &
pids+=($!)
sleep 2
engine=$(blast fulcrumd)
kill "${pids[-1]}" 2>/dev/null || true; wait "${pids[-1]}" || true
unset 'pids[-1]'

read -r _ floor_pps <<<"$floor"
read -r _ engine_pps <<<"$engine"
echo
echo "64-byte UDP frames out of fl-lb0, frames/s (trafgen ${secs}s, one worker, the lab profile: poll = wait)"
echo "| path | frames/s | ratio to l2fwd |"
echo "|---|---|---|"
echo "| l2fwd (I/O floor) | $floor_pps | 1.00 |"
python3 -c "print(f'| fulcrumd (full NAT) | $engine_pps | {$engine_pps / max($floor_pps, 1):.2f} |')"
tail -1 "$dir/l2fwd.out"
grep -E "frames received|drops" "$dir/fulcrumd.out" | head -3
