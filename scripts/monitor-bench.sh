#!/usr/bin/env bash
# Monitor core throughput: how many probes per second the one monitor core completes, and
# what it costs in CPU. The lab (scripts/lab.sh) with 2 backends; each backend's nftables
# redirects ports 10000-10999 to its nginx, so 2,000 services are 2,000 distinct endpoints:
# 1,000 with a TCP monitor (backend 1) and 1,000 with an HTTP monitor (backend 2). The probes
# run through the real path: monitor core → ring → AF_XDP worker → veth → backend kernel.
# For each monitor interval the script measures, over a window, the probes completed
# (fulcrum_monitor_probes_total from --metrics), the failures, the services UP, and the
# monitor thread's CPU time (/proc/PID/task/TID/stat).
#
#   bash scripts/monitor-bench.sh [SERVICES_PER_BACKEND] [WINDOW_SECONDS] [INTERVALS_MS...]
set -euo pipefail
cd "$(dirname "$0")/.."
per=${1:-1000}
window=${2:-10}
shift 2 2>/dev/null || shift $#
intervals=("${@:-1000 500 250 150 100}")
read -r -a intervals <<< "${intervals[*]}"
[ "$per" -ge 1 ] && [ "$per" -le 1000 ] || { echo "1..1000 services per backend" >&2; exit 2; }
bash scripts/install-deps.sh
cargo build --release --locked -q --bin fulcrumd --bin fulcrumctl
FULCRUMD=$PWD/target/release/fulcrumd
FULCRUMCTL=$PWD/target/release/fulcrumctl
tag=mb$$
dir=/tmp/fl-lab-$tag
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  bash scripts/lab.sh down "$tag"
}
trap cleanup EXIT
bash scripts/lab.sh up "$tag" 2 >/dev/null
lb=fl-$tag-lb
for b in 1 2; do
  ip netns exec "fl-$tag-b$b" nft -f - <<NFT
table ip fl_bench {
  chain prerouting {
    type nat hook prerouting priority dstnat;
    tcp dport 10000-10999 redirect to :80
  }
}
NFT
done

conf=$dir/ns.conf
{
  echo "add ns ip 198.18.0.2 255.255.255.0 -type SNIP"
  echo "add lb monitor mt TCP -interval 1 -resptimeout 500 MSEC -retries 3"
  echo "add lb monitor mh HTTP -httpRequest \"GET /\" -interval 1 -resptimeout 500 MSEC -retries 3"
  for i in $(seq 0 $((per - 1))); do
    echo "add service t$i 198.18.0.11 TCP $((10000 + i))"
    echo "bind service t$i -monitorName mt"
    echo "add service h$i 198.18.0.12 HTTP $((10000 + i))"
    echo "bind service h$i -monitorName mh"
  done
} > "$conf"
sock=$dir/ctl.sock
ip netns exec "$lb" "$FULCRUMD" --profile hw-profiles/lab-veth.toml --config "$conf" \
  --socket "$sock" --metrics 127.0.0.1:9464 > "$dir/fulcrumd.log" 2>&1 &
pid=$!
ctl() { "$FULCRUMCTL" --socket "$sock" "$@" > /dev/null; }
metrics() { ip netns exec "$lb" curl -s -m 2 http://127.0.0.1:9464/metrics; }
probes() { metrics | awk '/^fulcrum_monitor_probes_total\{result="passed"\}/ {p=$2} /^fulcrum_monitor_probes_total\{result="failed"\}/ {f=$2} END {print p+0, f+0}'; }
services_up() { metrics | awk '/^fulcrum_service_up\{/ {n+=$2} END {print n+0}'; }
for _ in $(seq 1 100); do [ -S "$sock" ] && break; sleep 0.1; done
tid=""
for t in /proc/$pid/task/*; do
  [ "$(cat "$t/comm")" = fulcrum-monitor ] && tid=${t##*/}
done
[ -n "$tid" ] || { echo "monitor-bench: no monitor thread" >&2; cat "$dir/fulcrumd.log" >&2; exit 1; }
ticks() { awk '{print $14 + $15}' "/proc/$pid/task/$tid/stat"; }
hz=$(getconf CLK_TCK)

echo "| interval | services | probes/s offered | probes/s completed | failed/s | services UP | monitor core CPU | µs CPU per probe |"
echo "|---|---|---|---|---|---|---|---|"
for ms in "${intervals[@]}"; do
  # A DOWN service is probed every downTime: set it to the interval so the offered rate stays
  # the same when probes fail.
  timeout=$((ms * 4 / 5))
  for m in "mt TCP" "mh HTTP"; do
    # shellcheck disable=SC2086
    ctl set lb monitor $m -interval "$ms" MSEC -resptimeout "$timeout" MSEC -downTime "$ms" MSEC
  done
  sleep 4 # settle: every binding has probed at the new interval
  read -r p0 f0 < <(probes)
  c0=$(ticks)
  sleep "$window"
  read -r p1 f1 < <(probes)
  c1=$(ticks)
  up=$(services_up)
  python3 - "$ms" "$per" "$window" "$p0" "$f0" "$p1" "$f1" "$c0" "$c1" "$hz" "$up" <<'PY'
import sys
ms, per, window, p0, f0, p1, f1, c0, c1, hz, up = map(float, sys.argv[1:])
services = 2 * per
done = (p1 - p0 + f1 - f0) / window
failed = (f1 - f0) / window
cpu = (c1 - c0) / hz / window
per_probe = cpu / done * 1e6 if done else float("nan")
print(f"| {ms:.0f} ms | {services:.0f} | {services * 1000 / ms:.0f} | {done:.0f} | {failed:.0f} | "
      f"{up:.0f} | {cpu * 100:.0f} % | {per_probe:.1f} |")
PY
done
