#!/usr/bin/env bash
# The network lab (SPEC §7): network namespaces joined by veth pairs on one bridge, addresses
# from 198.18.0.0/15 only, names prefixed fl-<tag>-. Nothing leaves the namespaces.
#
#   lab.sh up TAG [BACKENDS] [twoarm|onearm] [QUEUES]
#                              build the lab, start one nginx per backend; the engine's
#                              veths get QUEUES transmit and receive queues (default 1)
#   lab.sh down TAG            stop what `up` started (by PID), detach XDP, delete namespaces
#   lab.sh pids TAG            the PIDs the lab started
#
# One-arm layout (default), all on 198.18.0.0/24 through the bridge br0 in fl-TAG-sw:
#   fl-TAG-cli   client         198.18.0.50   (eth0)
#   fl-TAG-lb    the engine     fl-lb0, no kernel address: fulcrumd answers for SNIP .2, VIP .100
#   fl-TAG-bN    backend N      198.18.0.(10+N), nginx on :80 and :443 (HTTPS, self-signed)
#                               answering "backend-N"
# Two-arm layout (`twoarm`): the client side is 198.19.0.0/24 on br0 (client 198.19.0.50,
# VIP 198.19.0.100, engine port fl-lb0); the server side is 198.18.0.0/24 on br1 (SNIP
# 198.18.0.2, engine port fl-lb1, backends as above).
#
# Backends' nginx serve (every answer carries the header X-Backend: backend-N):
#                        /            their name
#                        /sleep/S     their name after S seconds (echo module; fractions work)
#                        /whoami      the peer's address and port as the backend sees them
#                        /lrtm        their name after 5, 1, 2 ms (backends 1, 2, 3: the LRTM seed)
#                        /big.bin     50 MB of random bytes, different on every backend
#                        POST /upload the request body, echoed back
# a UDP service on port 7 (socat) answering every datagram with their name, DNS on port 53
# (dnsmasq) answering www.svc.test with 198.18.0.10, and FTP on port 21 (vsftpd; anonymous
# login on backend 1 only), and SNMP on port 161 (snmpd; .1.3.6.1.4.1.99999.2.0 = bN/load:
# 20, 70, 80). Each backend's PIDs are recorded in that order: nginx, socat, dnsmasq, vsftpd,
# snmpd.
set -euo pipefail
# A failing step names itself (the caller sees only the last error line otherwise).
trap 'echo "lab.sh: failed at line $LINENO: $BASH_COMMAND" >&2' ERR

cmd=${1:?usage: lab.sh up|down|pids TAG [BACKENDS]}
tag=${2:?tag}
backends=${3:-3}
arms=${4:-onearm}
queues=${5:-1}
dir=/tmp/fl-lab-$tag
ns() { echo "fl-$tag-$1"; }

guard() {
  # From the root namespace, 198.18/15 addresses that are not local would be routed out of the
  # machine; this route keeps them in (connected routes of the lab are more specific).
  # `replace` is idempotent: a check piped into `grep -q` could fail under pipefail (grep
  # leaves early, `ip` gets SIGPIPE) and the add then met "File exists".
  ip route replace unreachable 198.18.0.0/15
  # The same for the IPv6 documentation range the lab's IPv6 addresses come from.
  ip -6 route replace unreachable 2001:db8::/32
}

link() { # link NS1 IF1 NS2 IF2 [QUEUES]
  local q=${5:-1}
  ip link add "$2" netns "$1" numtxqueues "$q" numrxqueues "$q" type veth \
    peer name "$4" netns "$3" numtxqueues "$q" numrxqueues "$q"
  ip -n "$1" link set "$2" up
  ip -n "$3" link set "$4" up
}

nginx_conf() { # nginx_conf N ADDR
  local n=$1 addr=$2 d=$dir/b$1
  mkdir -p "$d/tmp" "$d/html"
  chmod 755 "$dir" "$d" "$d/html"
  head -c 52428800 /dev/urandom > "$d/html/big.bin"
  # A self-signed end-entity certificate for HTTPS (CA:FALSE: webpki refuses a CA as a server).
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -keyout "$d/key.pem" -out "$d/cert.pem" -subj "/CN=backend-$n" \
    -addext "subjectAltName=IP:$addr" -addext "basicConstraints=critical,CA:FALSE" \
    -addext "extendedKeyUsage=serverAuth" 2>/dev/null
  cat > "$d/nginx.conf" <<CONF
load_module /usr/lib/nginx/modules/ngx_http_echo_module.so;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $d/tmp; proxy_temp_path $d/tmp; fastcgi_temp_path $d/tmp;
  uwsgi_temp_path $d/tmp; scgi_temp_path $d/tmp;
  client_max_body_size 200m;
  keepalive_requests 100000;
  server {
    listen $addr:80 reuseport backlog=4096;
    listen $addr:443 ssl;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_certificate $d/cert.pem; ssl_certificate_key $d/key.pem;
    root $d/html;
    add_header X-Backend backend-$n always;
    location = / { return 200 "backend-$n\n"; }
    location ~ ^/sleep/([0-9.]+)$ { echo_sleep \$1; echo "backend-$n"; }
    location = /big.bin { }
    # Who the backend sees as its peer (USIP: the client's own address).
    location = /whoami { return 200 "\$remote_addr:\$remote_port\n"; }
    # The LRTM seed: backend 1 answers in 5 ms, backend 2 in 1 ms, backend 3 in 2 ms.
    location = /lrtm { echo_sleep $(case "$n" in 1) echo 0.005 ;; 2) echo 0.001 ;; *) echo 0.002 ;; esac); echo "backend-$n"; }
    location = /upload { client_body_buffer_size 64m; echo_read_request_body; echo_request_body; }
  }
}
CONF
}

ftp_conf() { # ftp_conf N ADDR: anonymous FTP on backend 1 only (the others refuse logins)
  local n=$1 addr=$2 d=$dir/b$1
  mkdir -p "$d/ftp" "$d/ftp-empty"
  chmod 555 "$d/ftp"
  cat > "$d/vsftpd.conf" <<CONF
listen=YES
listen_ipv6=NO
listen_address=$addr
listen_port=21
background=NO
anonymous_enable=$([ "$n" = 1 ] && echo YES || echo NO)
anon_root=$d/ftp
local_enable=NO
write_enable=NO
secure_chroot_dir=$d/ftp-empty
pasv_enable=NO
xferlog_enable=NO
vsftpd_log_file=$d/vsftpd.log
CONF
}

snmp_conf() { # snmp_conf N ADDR: INTEGER .1.3.6.1.4.1.99999.2.0 = the content of bN/load
  local n=$1 addr=$2 d=$dir/b$1
  mkdir -p "$d/snmp-persist"
  # The seed's memory example: 20, 70, 80 (then 80 for more backends).
  case "$n" in 1) echo 20 ;; 2) echo 70 ;; *) echo 80 ;; esac > "$d/load"
  cat > "$d/persist.sh" <<'SH'
#!/bin/sh
# net-snmp pass_persist: re-reads the value file on every request (no caching)
LEAF=.1.3.6.1.4.1.99999.2.0
VALF="$(dirname "$0")/load"
while read -r cmd; do
  case "$cmd" in
    PING) echo PONG ;;
    get) read -r oid; if [ "$oid" = "$LEAF" ]; then echo "$LEAF"; echo integer; cat "$VALF"; else echo NONE; fi ;;
    getnext) read -r oid; echo NONE ;;
    set) read -r oid; read -r val; echo not-writable ;;
    "") exit 0 ;;
  esac
done
SH
  chmod 755 "$d/persist.sh"
  cat > "$d/snmpd.conf" <<CONF
agentaddress udp:$addr:161
rocommunity public
pass_persist .1.3.6.1.4.1.99999.2 $d/persist.sh
[snmp] persistentDir $d/snmp-persist
CONF
}

up() {
  guard
  rm -rf "$dir"
  mkdir -p "$dir"
  for n in sw cli lb; do ip netns add "$(ns $n)"; done
  local server_br=br0 client_net=198.18.0
  ip -n "$(ns sw)" link add br0 type bridge
  ip -n "$(ns sw)" link set br0 up
  link "$(ns cli)" eth0 "$(ns sw)" cli
  link "$(ns lb)" fl-lb0 "$(ns sw)" lb "$queues"
  ip -n "$(ns sw)" link set cli master br0
  ip -n "$(ns sw)" link set lb master br0
  if [ "$arms" = twoarm ]; then
    server_br=br1 client_net=198.19.0
    ip -n "$(ns sw)" link add br1 type bridge
    ip -n "$(ns sw)" link set br1 up
    link "$(ns lb)" fl-lb1 "$(ns sw)" lb1 "$queues"
    ip -n "$(ns sw)" link set lb1 master br1
  fi
  ip -n "$(ns cli)" addr add "$client_net.50/24" dev eth0
  ip -n "$(ns cli)" link set lo up
  ip -n "$(ns lb)" link set lo up
  for i in $(seq 1 "$backends"); do
    local b; b=$(ns "b$i")
    ip netns add "$b"
    link "$b" eth0 "$(ns sw)" "b$i"
    ip -n "$(ns sw)" link set "b$i" master "$server_br"
    ip -n "$b" addr add "198.18.0.$((10 + i))/24" dev eth0
    ip -n "$b" link set lo up
    nginx_conf "$i" "198.18.0.$((10 + i))"
    # Background servers get their own output files: they must not hold the caller's pipes.
    ip netns exec "$b" nginx -e "$dir/b$i/error.log" -c "$dir/b$i/nginx.conf" -g 'daemon off;' \
      > "$dir/b$i/nginx.out" 2>&1 < /dev/null &
    echo $! >> "$dir/pids"
    # The child reads the datagram before answering: socat writes it to the command's stdin,
    # and a command gone before that write makes socat exit on EPIPE without the answer.
    ip netns exec "$b" socat -T2 "UDP4-RECVFROM:7,bind=198.18.0.$((10 + i)),fork" SYSTEM:"head -c 1 >/dev/null; echo backend-$i" \
      > "$dir/b$i/socat.out" 2>&1 < /dev/null &
    echo $! >> "$dir/pids"
    ip netns exec "$b" dnsmasq -k --conf-file=/dev/null --no-resolv --no-hosts --bind-interfaces \
      --listen-address="198.18.0.$((10 + i))" --port=53 --address=/www.svc.test/198.18.0.10 \
      --log-facility=- --pid-file= --user=nobody > "$dir/b$i/dnsmasq.out" 2>&1 < /dev/null &
    echo $! >> "$dir/pids"
    ftp_conf "$i" "198.18.0.$((10 + i))"
    ip netns exec "$b" vsftpd "$dir/b$i/vsftpd.conf" > "$dir/b$i/vsftpd.out" 2>&1 < /dev/null &
    echo $! >> "$dir/pids"
    snmp_conf "$i" "198.18.0.$((10 + i))"
    ip netns exec "$b" env MIBS= snmpd -f -Lo -C -c "$dir/b$i/snmpd.conf" -p "$dir/b$i/snmpd.pid" \
      > "$dir/b$i/snmpd.out" 2>&1 < /dev/null &
    echo $! >> "$dir/pids"
  done
  # Wait until every backend answers (bounded).
  for i in $(seq 1 "$backends"); do
    for _ in $(seq 1 100); do
      ip netns exec "$(ns "b$i")" curl -s -o /dev/null -m 1 "http://198.18.0.$((10 + i))/" && break
      sleep 0.05
    done
  done
  echo "lab $tag up: $backends backends"
}

down() {
  if [ -f "$dir/pids" ]; then
    # TERM lets nginx stop its own workers; KILL only what is still there after 5 s.
    while read -r pid; do kill "$pid" 2>/dev/null || true; done < "$dir/pids"
    for _ in $(seq 1 50); do
      alive=0
      while read -r pid; do kill -0 "$pid" 2>/dev/null && alive=1; done < "$dir/pids"
      [ "$alive" = 0 ] && break
      sleep 0.1
    done
    while read -r pid; do kill -9 "$pid" 2>/dev/null || true; done < "$dir/pids"
  fi
  ip -n "$(ns lb)" link set dev fl-lb0 xdp off 2>/dev/null || true
  ip -n "$(ns lb)" link set dev fl-lb1 xdp off 2>/dev/null || true
  for n in $(ip netns list | awk '{print $1}' | grep "^fl-$tag-" || true); do
    ip netns del "$n"
  done
  rm -rf "$dir"
  # The last lab out removes the guard route `up` added (others may still rely on it).
  if ! ip netns list | awk '{print $1}' | grep '^fl-' > /dev/null; then
    ip route del unreachable 198.18.0.0/15 2>/dev/null || true
    ip -6 route del unreachable 2001:db8::/32 2>/dev/null || true
  fi
}

case "$cmd" in
  up) up ;;
  down) down ;;
  pids) cat "$dir/pids" 2>/dev/null || true ;;
  *) echo "usage: lab.sh up|down|pids TAG [BACKENDS]" >&2; exit 2 ;;
esac
