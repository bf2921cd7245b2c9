#!/usr/bin/env python3
"""Garbage frames at the VIP for the lab, through a packet socket on the client's interface:
each kind is a frame the engine must drop and count by its reason (or, VLAN-tagged, one its
XDP program leaves to the kernel). The source is the client's own address (SOURCE); nothing
goes anywhere but the VIP's MAC.

usage: garbage.py IFACE SOURCE VIP PER_KIND SECONDS

Sends PER_KIND frames of every kind, round robin, stopping after SECONDS at the latest, and
prints one line `sent KIND N` per kind.
"""

import random
import socket
import sys
import time

from packets import ipv4, tcp


def kinds(src, dst, rng):
    """The frames, by the reason the engine drops them for (after the Ethernet header)."""
    port = rng.randrange(1024, 65536)
    syn = tcp(src, dst, port, 80, 0x02)
    return {
        # The IP header says 1,000 bytes; 40 came.
        "truncated": ipv4(src, dst, 6, syn, total=1000),
        # IHL 4: shorter than an IPv4 header.
        "malformed": ipv4(src, dst, 6, syn, ihl=4),
        # More fragments.
        "fragment": ipv4(src, dst, 6, syn, flags_frag=0x2000),
        "TTL expired": ipv4(src, dst, 6, syn, ttl=1),
        # GRE.
        "unsupported protocol": ipv4(src, dst, 47, b"\0" * 24),
        # An ACK whose checksum is wrong (neither complete nor an offload's partial one).
        "bad checksum": ipv4(src, dst, 6, tcp(src, dst, port, 80, 0x10, good_sum=False)),
    }


def mac_of(ip):
    with open("/proc/net/arp") as table:
        for line in table.read().splitlines()[1:]:
            fields = line.split()
            if fields[0] == ip:
                return bytes.fromhex(fields[3].replace(":", ""))
    sys.exit(f"no ARP entry for {ip}")


def main():
    iface, source, vip = sys.argv[1:4]
    per_kind, seconds = int(sys.argv[4]), float(sys.argv[5])
    with open(f"/sys/class/net/{iface}/address") as f:
        our_mac = bytes.fromhex(f.read().strip().replace(":", ""))
    their_mac = mac_of(vip)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    src = socket.inet_aton(source)
    dst = socket.inet_aton(vip)
    rng = random.Random(3)
    sent = {}
    ipv4_header = their_mac + our_mac + b"\x08\x00"
    vlan_header = their_mac + our_mac + b"\x81\x00\x00\x07\x08\x00"
    start = time.monotonic()
    for _ in range(per_kind):
        if time.monotonic() - start > seconds:
            break
        for kind, packet in kinds(src, dst, rng).items():
            s.send((ipv4_header + packet).ljust(60, b"\0"))
            sent[kind] = sent.get(kind, 0) + 1
        s.send((vlan_header + ipv4(src, dst, 6, tcp(src, dst, 9, 80, 0x02))).ljust(60, b"\0"))
        sent["VLAN-tagged"] = sent.get("VLAN-tagged", 0) + 1
    elapsed = time.monotonic() - start
    for kind, n in sent.items():
        print(f"sent {kind}: {n}", flush=True)
    print(f"in {elapsed:.2f} s", flush=True)


if __name__ == "__main__":
    main()
