//! Frames on the wire: validated parsing (etherparse) into the few fields the data plane
//! decides on, and in-place rewrites with incremental checksum updates (RFC 1624).
//!
//! Parsing never panics: every malformed frame maps to a [`DropReason`]. Rewrites take the
//! offsets that parsing validated, so they only touch bytes known to exist.

use std::net::Ipv4Addr;

use etherparse::{
    ArpOperation, ArpPacketSlice, EtherType, Ethernet2HeaderSlice, Icmpv4Slice, IpNumber,
    Ipv4HeaderSlice, TcpHeaderSlice, UdpHeaderSlice,
};

use crate::verdict::DropReason;

pub type Mac = [u8; 6];
pub const BROADCAST: Mac = [0xff; 6];
pub const ETH_LEN: usize = 14;
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_ARP: u16 = 0x0806;

/// Transport protocols the engine balances.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Proto {
    Tcp,
    Udp,
    Icmp,
}

impl Proto {
    pub const fn number(self) -> u8 {
        match self {
            Self::Tcp => 6,
            Self::Udp => 17,
            Self::Icmp => 1,
        }
    }
}

/// TCP flags the flow tracker reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpFlags {
    pub syn: bool,
    pub ack: bool,
    pub fin: bool,
    pub rst: bool,
}

/// An ARP packet for IPv4 over Ethernet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arp {
    pub request: bool,
    pub sender_mac: Mac,
    pub sender_ip: Ipv4Addr,
    pub target_ip: Ipv4Addr,
}

/// The fields of an IPv4 packet the data plane decides on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv4 {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub proto: Proto,
    pub ttl: u8,
    /// Offset of the transport header in the frame.
    pub l4: usize,
    /// Ports (TCP/UDP) or the echo identifier in both (ICMP echo).
    pub src_port: u16,
    pub dst_port: u16,
    pub tcp: TcpFlags,
    /// ICMP echo request (type 8).
    pub echo_request: bool,
    /// Frame bytes counted for the service (Ethernet header included).
    pub len: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packet {
    Arp(Arp),
    Ipv4(Ipv4),
}

fn mac(b: &[u8]) -> Mac {
    let mut m = [0; 6];
    if b.len() == 6 {
        m.copy_from_slice(b);
    }
    m
}

fn ipv4(b: &[u8]) -> Ipv4Addr {
    match <[u8; 4]>::try_from(b) {
        Ok(a) => Ipv4Addr::from(a),
        Err(_) => Ipv4Addr::UNSPECIFIED,
    }
}

/// Parses a frame. Drops: too short or non-Ethernet II, not IPv4/ARP, malformed headers,
/// fragments, unsupported protocols.
pub fn parse(frame: &[u8]) -> Result<Packet, DropReason> {
    let eth = Ethernet2HeaderSlice::from_slice(frame).map_err(|_| DropReason::Truncated)?;
    let payload = &frame[ETH_LEN..];
    match eth.ether_type().0 {
        ETHERTYPE_ARP => {
            let arp = ArpPacketSlice::from_slice(payload).map_err(|_| DropReason::Truncated)?;
            if arp.proto_addr_type() != EtherType::IPV4
                || arp.hw_addr_size() != 6
                || arp.proto_addr_size() != 4
            {
                return Err(DropReason::Malformed);
            }
            let request = match arp.operation() {
                ArpOperation::REQUEST => true,
                ArpOperation::REPLY => false,
                _ => return Err(DropReason::Malformed),
            };
            Ok(Packet::Arp(Arp {
                request,
                sender_mac: mac(arp.sender_hw_addr()),
                sender_ip: ipv4(arp.sender_protocol_addr()),
                target_ip: ipv4(arp.target_protocol_addr()),
            }))
        }
        ETHERTYPE_IPV4 => parse_ipv4(payload),
        _ => Err(DropReason::NotIpv4),
    }
}

fn parse_ipv4(payload: &[u8]) -> Result<Packet, DropReason> {
    let ip = Ipv4HeaderSlice::from_slice(payload).map_err(|_| DropReason::Malformed)?;
    let total = usize::from(ip.total_len());
    if total > payload.len() {
        return Err(DropReason::Truncated);
    }
    if ip.is_fragmenting_payload() {
        return Err(DropReason::Fragment);
    }
    let header_len = usize::from(ip.ihl()) * 4;
    if total < header_len {
        return Err(DropReason::Malformed);
    }
    let l4 = ETH_LEN + header_len;
    let body = &payload[header_len..total];
    let mut p = Ipv4 {
        src: ip.source_addr(),
        dst: ip.destination_addr(),
        proto: Proto::Tcp,
        ttl: ip.ttl(),
        l4,
        src_port: 0,
        dst_port: 0,
        tcp: TcpFlags::default(),
        echo_request: false,
        len: ETH_LEN + total,
    };
    match ip.protocol() {
        IpNumber::TCP => {
            let tcp = TcpHeaderSlice::from_slice(body).map_err(|_| DropReason::Malformed)?;
            p.src_port = tcp.source_port();
            p.dst_port = tcp.destination_port();
            p.tcp = TcpFlags {
                syn: tcp.syn(),
                ack: tcp.ack(),
                fin: tcp.fin(),
                rst: tcp.rst(),
            };
        }
        IpNumber::UDP => {
            let udp = UdpHeaderSlice::from_slice(body).map_err(|_| DropReason::Malformed)?;
            p.proto = Proto::Udp;
            p.src_port = udp.source_port();
            p.dst_port = udp.destination_port();
        }
        IpNumber::ICMP => {
            let icmp = Icmpv4Slice::from_slice(body).map_err(|_| DropReason::Malformed)?;
            p.proto = Proto::Icmp;
            p.echo_request = icmp.type_u8() == 8 && icmp.code_u8() == 0;
            if body.len() >= 8 {
                let id = u16::from_be_bytes([body[4], body[5]]);
                p.src_port = id;
                p.dst_port = id;
            }
        }
        _ => return Err(DropReason::UnsupportedProtocol),
    }
    Ok(Packet::Ipv4(p))
}

/// One's-complement sum of 16-bit big-endian words.
fn sum16(bytes: &[u8]) -> u32 {
    bytes
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum()
}

fn fold(mut s: u32) -> u16 {
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// RFC 1624 eq. 3, `HC' = ~(~HC + ~m + m')`, word by word: the checksum after the `old`
/// bytes (even length) became `new`.
pub fn checksum_adjust(checksum: u16, old: &[u8], new: &[u8]) -> u16 {
    let word = |c: &[u8]| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]);
    let mut s = u32::from(!checksum);
    for (o, n) in old.chunks(2).zip(new.chunks(2)) {
        s += u32::from(!word(o)) + u32::from(word(n));
    }
    !fold(s)
}

fn read16(f: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([f[at], f[at + 1]])
}

fn write16(f: &mut [u8], at: usize, v: u16) {
    f[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

pub fn set_macs(frame: &mut [u8], src: Mac, dst: Mac) {
    frame[0..6].copy_from_slice(&dst);
    frame[6..12].copy_from_slice(&src);
}

/// Offset of the transport checksum, or `None` for a UDP datagram sent without one.
fn l4_checksum_at(frame: &[u8], p: &Ipv4) -> Option<usize> {
    match p.proto {
        Proto::Tcp => Some(p.l4 + 16),
        Proto::Udp if read16(frame, p.l4 + 6) != 0 => Some(p.l4 + 6),
        Proto::Udp | Proto::Icmp => None,
    }
}

/// Full NAT rewrite: new source and destination address and port, TTL decremented; the IP and
/// transport checksums are adjusted for exactly the bytes that changed.
pub fn rewrite(frame: &mut [u8], p: &Ipv4, src: (Ipv4Addr, u16), dst: (Ipv4Addr, u16)) {
    let ip = ETH_LEN;
    let mut old_addrs = [0u8; 8];
    old_addrs.copy_from_slice(&frame[ip + 12..ip + 20]);
    let mut new_addrs = [0u8; 8];
    new_addrs[..4].copy_from_slice(&src.0.octets());
    new_addrs[4..].copy_from_slice(&dst.0.octets());
    // TTL shares its word with the protocol number.
    let old_ttl_word = [frame[ip + 8], frame[ip + 9]];
    let new_ttl = frame[ip + 8].saturating_sub(1);
    let new_ttl_word = [new_ttl, frame[ip + 9]];
    let ip_sum = read16(frame, ip + 10);
    let ip_sum = checksum_adjust(ip_sum, &old_addrs, &new_addrs);
    let ip_sum = checksum_adjust(ip_sum, &old_ttl_word, &new_ttl_word);
    frame[ip + 12..ip + 20].copy_from_slice(&new_addrs);
    frame[ip + 8] = new_ttl;
    write16(frame, ip + 10, ip_sum);
    if p.proto == Proto::Icmp {
        return;
    }
    let mut old_ports = [0u8; 4];
    old_ports.copy_from_slice(&frame[p.l4..p.l4 + 4]);
    let mut new_ports = [0u8; 4];
    new_ports[..2].copy_from_slice(&src.1.to_be_bytes());
    new_ports[2..].copy_from_slice(&dst.1.to_be_bytes());
    frame[p.l4..p.l4 + 4].copy_from_slice(&new_ports);
    if let Some(at) = l4_checksum_at(frame, p) {
        // The pseudo-header holds the addresses, so they count too.
        let s = checksum_adjust(read16(frame, at), &old_addrs, &new_addrs);
        let mut s = checksum_adjust(s, &old_ports, &new_ports);
        if p.proto == Proto::Udp && s == 0 {
            s = 0xffff; // 0 means "no checksum" in UDP
        }
        write16(frame, at, s);
    }
}

/// A TCP segment's sequence and acknowledgement numbers and the sequence space it uses
/// (payload, plus one each for SYN and FIN).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpNumbers {
    pub seq: u32,
    pub ack: u32,
    pub len: u32,
}

/// The numbers of the TCP segment `p` parsed from `frame` (`None` if it is not TCP).
pub fn tcp_numbers(frame: &[u8], p: &Ipv4) -> Option<TcpNumbers> {
    if p.proto != Proto::Tcp || frame.len() < p.l4 + 20 {
        return None;
    }
    let read32 =
        |at: usize| u32::from_be_bytes([frame[at], frame[at + 1], frame[at + 2], frame[at + 3]]);
    let total = usize::from(read16(frame, ETH_LEN + 2));
    let header = (p.l4 - ETH_LEN) + usize::from(frame[p.l4 + 12] >> 4) * 4;
    let payload = total.saturating_sub(header) as u32;
    Some(TcpNumbers {
        seq: read32(p.l4 + 4),
        ack: read32(p.l4 + 8),
        len: payload + u32::from(p.tcp.syn) + u32::from(p.tcp.fin),
    })
}

/// Writes a TCP RST from `src` to `dst` into `buf` (at least 60 bytes) and returns the frame
/// length (the 60-byte Ethernet minimum). With `ack`, it is RST+ACK acknowledging `ack`.
pub fn tcp_rst(
    buf: &mut [u8],
    macs: (Mac, Mac),
    src: (Ipv4Addr, u16),
    dst: (Ipv4Addr, u16),
    seq: u32,
    ack: Option<u32>,
) -> usize {
    let flags = if ack.is_some() { 0x14 } else { 0x04 }; // RST(+ACK)
    tcp_control(buf, macs, (src, dst), (seq, ack.unwrap_or(0)), flags)
}

/// Writes a bare ACK from `src` to `dst` whose sequence number (0) is almost surely outside
/// the peer's window: the peer answers with an ACK carrying the numbers it expects (RFC 793
/// §3.9), which the engine then answers with an exact RST. That is how an idle connection is
/// reset without knowing its sequence numbers.
pub fn tcp_probe(
    buf: &mut [u8],
    macs: (Mac, Mac),
    src: (Ipv4Addr, u16),
    dst: (Ipv4Addr, u16),
) -> usize {
    tcp_control(buf, macs, (src, dst), (0, 0), 0x10)
}

/// A 20-byte TCP header without payload, in a minimum-size frame.
fn tcp_control(
    buf: &mut [u8],
    macs: (Mac, Mac),
    (src, dst): ((Ipv4Addr, u16), (Ipv4Addr, u16)),
    (seq, ack): (u32, u32),
    flags: u8,
) -> usize {
    const LEN: usize = 60;
    buf[..LEN].fill(0);
    set_macs(buf, macs.0, macs.1);
    write16(buf, 12, ETHERTYPE_IPV4);
    let ip = ETH_LEN;
    buf[ip] = 0x45;
    write16(buf, ip + 2, 40);
    buf[ip + 6] = 0x40; // don't fragment
    buf[ip + 8] = 64;
    buf[ip + 9] = Proto::Tcp.number();
    buf[ip + 12..ip + 16].copy_from_slice(&src.0.octets());
    buf[ip + 16..ip + 20].copy_from_slice(&dst.0.octets());
    let s = checksum(&buf[ip..ip + 20]);
    write16(buf, ip + 10, s);
    let t = ip + 20;
    write16(buf, t, src.1);
    write16(buf, t + 2, dst.1);
    buf[t + 4..t + 8].copy_from_slice(&seq.to_be_bytes());
    buf[t + 8..t + 12].copy_from_slice(&ack.to_be_bytes());
    buf[t + 12] = 5 << 4;
    buf[t + 13] = flags;
    write16(buf, t + 14, 1024); // window: a probe and a reset need none, a zero one looks odd
    // The checksum covers the pseudo-header (addresses, protocol, TCP length) and the header.
    let mut pseudo = [0u8; 32];
    pseudo[..8].copy_from_slice(&buf[ip + 12..ip + 20]);
    pseudo[9] = Proto::Tcp.number();
    pseudo[11] = 20;
    pseudo[12..].copy_from_slice(&buf[t..t + 20]);
    let s = checksum(&pseudo);
    write16(buf, t + 16, s);
    LEN
}

/// Turns an ARP request for `our_ip` into the reply from `our_mac`, in place.
pub fn arp_reply_in_place(frame: &mut [u8], arp: &Arp, our_mac: Mac) {
    set_macs(frame, our_mac, arp.sender_mac);
    let a = ETH_LEN;
    write16(frame, a + 6, 2); // operation: reply
    frame[a + 8..a + 14].copy_from_slice(&our_mac);
    frame[a + 14..a + 18].copy_from_slice(&arp.target_ip.octets());
    frame[a + 18..a + 24].copy_from_slice(&arp.sender_mac);
    frame[a + 24..a + 28].copy_from_slice(&arp.sender_ip.octets());
}

/// Writes an ARP request for `target` into `buf`; returns the frame length (42).
pub fn arp_request(buf: &mut [u8], our_mac: Mac, our_ip: Ipv4Addr, target: Ipv4Addr) -> usize {
    const LEN: usize = ETH_LEN + 28;
    if buf.len() < LEN {
        return 0;
    }
    set_macs(buf, our_mac, BROADCAST);
    write16(buf, 12, ETHERTYPE_ARP);
    let a = ETH_LEN;
    write16(buf, a, 1); // Ethernet
    write16(buf, a + 2, ETHERTYPE_IPV4);
    buf[a + 4] = 6;
    buf[a + 5] = 4;
    write16(buf, a + 6, 1); // request
    buf[a + 8..a + 14].copy_from_slice(&our_mac);
    buf[a + 14..a + 18].copy_from_slice(&our_ip.octets());
    buf[a + 18..a + 24].copy_from_slice(&[0; 6]);
    buf[a + 24..a + 28].copy_from_slice(&target.octets());
    LEN
}

/// Turns an ICMP echo request into its reply, in place (addresses swapped, type 0).
pub fn echo_reply_in_place(frame: &mut [u8], p: &Ipv4, our_mac: Mac, peer_mac: Mac) {
    set_macs(frame, our_mac, peer_mac);
    let ip = ETH_LEN;
    let mut addrs = [0u8; 8];
    addrs[..4].copy_from_slice(&frame[ip + 16..ip + 20]);
    addrs[4..].copy_from_slice(&frame[ip + 12..ip + 16]);
    // Swapping the addresses leaves the IP checksum unchanged (same words, other order).
    frame[ip + 12..ip + 20].copy_from_slice(&addrs);
    frame[ip + 8] = 64;
    let old = [p.ttl, 1];
    let s = checksum_adjust(read16(frame, ip + 10), &old, &[64, 1]);
    write16(frame, ip + 10, s);
    let old_type = [frame[p.l4], frame[p.l4 + 1]];
    frame[p.l4] = 0;
    let s = checksum_adjust(read16(frame, p.l4 + 2), &old_type, &[0, old_type[1]]);
    write16(frame, p.l4 + 2, s);
}

/// The full checksum of `bytes` (for tests and for frames the engine builds).
pub fn checksum(bytes: &[u8]) -> u16 {
    !fold(sum16(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resets_are_valid_segments_with_the_numbers_asked_for() {
        let mut buf = [0u8; 60];
        let src = (Ipv4Addr::new(198, 18, 0, 100), 80);
        let dst = (Ipv4Addr::new(198, 18, 0, 50), 40000);
        for ack in [None, Some(7)] {
            let len = tcp_rst(&mut buf, ([2; 6], [4; 6]), src, dst, 123_456, ack);
            let eth = etherparse::SlicedPacket::from_ethernet(&buf[..len]).unwrap();
            let Some(etherparse::NetSlice::Ipv4(ip)) = eth.net else {
                panic!("not IPv4")
            };
            assert_eq!(ip.header().to_header().calc_header_checksum(), {
                ip.header().header_checksum()
            });
            let Some(etherparse::TransportSlice::Tcp(tcp)) = eth.transport else {
                panic!("not TCP")
            };
            assert!(tcp.rst() && tcp.ack() == ack.is_some());
            assert_eq!(tcp.sequence_number(), 123_456);
            assert_eq!(tcp.acknowledgment_number(), ack.unwrap_or(0));
            let expected = tcp
                .to_header()
                .calc_checksum_ipv4(&ip.header().to_header(), &[])
                .unwrap();
            assert_eq!(tcp.checksum(), expected);
            let Ok(Packet::Ipv4(p)) = parse(&buf[..len]) else {
                panic!("our parser refuses it")
            };
            let n = tcp_numbers(&buf[..len], &p).unwrap();
            assert_eq!((n.seq, n.len), (123_456, 0));
        }
    }
}
