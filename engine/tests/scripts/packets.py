"""IPv4 and TCP headers built by hand for the lab's raw senders (syn_flood.py, garbage.py):
the internet checksum, an IPv4 header that can be made wrong on purpose, a TCP segment with
its pseudo-header checksum."""

import socket
import struct


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def ipv4(src, dst, proto, payload, ttl=64, ihl=5, flags_frag=0, total=None):
    """`payload` behind an IPv4 header; `ihl`, `flags_frag` and `total` can lie."""
    total = 20 + len(payload) if total is None else total
    header = struct.pack(
        "!BBHHHBBH4s4s", 0x40 | ihl, 0, total, 0, flags_frag, ttl, proto, 0, src, dst
    )
    header = header[:10] + struct.pack("!H", checksum(header)) + header[12:]
    return header + payload


def tcp(src, dst, sport, dport, flags, seq=1, ack=1, window=1024, options=b"", good_sum=True):
    """A TCP segment without payload; `good_sum=False` spoils its checksum."""
    offset = (20 + len(options)) // 4
    header = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, offset << 4, flags, window, 0, 0)
    segment = header + options
    pseudo = src + dst + struct.pack("!BBH", 0, socket.IPPROTO_TCP, len(segment))
    value = checksum(pseudo + segment)
    if not good_sum:
        value ^= 0x5A5A
    return segment[:16] + struct.pack("!H", value) + segment[18:]
