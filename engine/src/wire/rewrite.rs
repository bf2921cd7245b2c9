//! In-place edits of parsed frames: full NAT with incremental checksum updates (RFC 1624),
//! the completion of partial transport checksums, echo and ARP replies, readdressing.
//!
//! Every function takes a frame [`parse`](super::parse) accepted; a frame too short for the
//! edit is left as it is rather than indexed out of bounds.

use std::net::Ipv4Addr;

use super::checksum::Delta;
use super::ipv4::MIN_HEADER_LEN;
use super::tcp::MIN_HEADER_LEN as TCP_HEADER_LEN;
use super::tcp::{USUAL_TIMESTAMPS_END, USUAL_TSVAL_AT, has_usual_timestamps};
use super::udp::HEADER_LEN as UDP_HEADER_LEN;
use super::{
    Arp, ArpPacket, ETH_LEN, ETHERTYPE_ARP, EthernetFrame, IcmpPacket, Ipv4, Ipv4Packet, Mac,
    OPERATION_REPLY, OPERATION_REQUEST, Proto, TcpPacket, UdpPacket, checksum, icmp,
};

/// The state of a TCP or UDP checksum as received.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransportChecksum {
    /// Verifies (or is not checked: ICMP, ports that trust their frames).
    Valid,
    /// Holds only the pseudo-header's sum: the sender left the rest to checksum offload
    /// (`CHECKSUM_PARTIAL` on veth and other virtual devices). It must be completed.
    Partial,
    /// A UDP datagram sent without a checksum.
    Absent,
    /// Neither complete nor partial: corrupted.
    Bad,
}

pub fn set_macs(frame: &mut [u8], src: Mac, dst: Mac) {
    if let Ok(mut eth) = EthernetFrame::new_checked(frame) {
        eth.set_src_addr(src);
        eth.set_dst_addr(dst);
    }
}

/// Sends a frame back where it came from: its source and destination MACs swapped.
pub fn swap_macs(frame: &mut [u8]) {
    if let Ok(mut eth) = EthernetFrame::new_checked(frame) {
        let (src, dst) = (eth.src_addr(), eth.dst_addr());
        eth.set_src_addr(dst);
        eth.set_dst_addr(src);
    }
}

/// The sender's MAC address (zero for a frame too short to have one).
pub fn src_mac(frame: &[u8]) -> Mac {
    EthernetFrame::new_checked(frame).map_or([0; 6], |eth| eth.src_addr())
}

/// The address an ARP request asks for.
pub fn arp_target(frame: &[u8]) -> Option<Ipv4Addr> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    let arp = ArpPacket::new_checked(eth.payload()).ok()?;
    (eth.ethertype() == ETHERTYPE_ARP && arp.operation() == OPERATION_REQUEST)
        .then(|| arp.target_protocol_addr())
}

/// Sets the Ethernet `source` or `destination` of a frame, and the matching hardware address
/// of an ARP packet in it (sender or target).
pub fn readdress(frame: &mut [u8], mac: Mac, source: bool) {
    let Ok(mut eth) = EthernetFrame::new_checked(frame) else {
        return;
    };
    if source {
        eth.set_src_addr(mac);
    } else {
        eth.set_dst_addr(mac);
    }
    if eth.ethertype() != ETHERTYPE_ARP {
        return;
    }
    if let Ok(mut arp) = ArpPacket::new_checked(eth.payload_mut()) {
        if source {
            arp.set_sender_hardware_addr(mac);
        } else {
            arp.set_target_hardware_addr(mac);
        }
    }
}

fn ip_view(frame: &mut [u8]) -> Option<Ipv4Packet<&mut [u8]>> {
    Ipv4Packet::new_checked(frame.get_mut(ETH_LEN..)?).ok()
}

/// The bytes of a parsed packet's segment (transport header and payload) in its frame, as
/// [`parse`](super::parse) bounded them.
#[inline]
fn segment_range(frame: &[u8], p: &Ipv4) -> Option<std::ops::Range<usize>> {
    (p.l4 <= p.len && p.len <= frame.len()).then_some(p.l4..p.len)
}

/// The sum of the pseudo-header of a `proto` segment from `src` to `dst`, and of `segment`.
#[inline]
fn transport_sums(src: Ipv4Addr, dst: Ipv4Addr, proto: Proto, segment: &[u8]) -> (u64, u64) {
    let pseudo = checksum::pseudo_header(src, dst, proto.number(), segment.len() as u16);
    (pseudo, checksum::sum(segment))
}

/// Checks the transport checksum of a parsed frame (the cost is one pass over the segment):
/// from the parse's own bounds and addresses, not a second reading of the headers.
pub fn transport_checksum(frame: &[u8], p: &Ipv4) -> TransportChecksum {
    let Some(segment) = segment_range(frame, p).map(|r| &frame[r]) else {
        return TransportChecksum::Bad;
    };
    let field = match p.proto {
        Proto::Icmp => return TransportChecksum::Valid,
        Proto::Tcp => TcpPacket::new_checked(segment).map(|t| t.checksum()),
        Proto::Udp => UdpPacket::new_checked(segment).map(|u| u.checksum()),
    };
    let Ok(field) = field else {
        return TransportChecksum::Bad;
    };
    if p.proto == Proto::Udp && field == 0 {
        return TransportChecksum::Absent;
    }
    let (pseudo, sum) = transport_sums(p.src, p.dst, p.proto, segment);
    if checksum::fold(pseudo + sum) == 0xffff {
        TransportChecksum::Valid
    } else if checksum::same(field, checksum::fold(pseudo)) {
        TransportChecksum::Partial
    } else {
        TransportChecksum::Bad
    }
}

/// Computes a TCP or UDP checksum afresh (for partial checksums, after the rewrite).
pub fn complete_checksum(frame: &mut [u8], p: &Ipv4) {
    let Some(range) = segment_range(frame, p) else {
        return;
    };
    // The addresses the frame has now: a rewrite changed them since the parse.
    let Some(header) = frame
        .get(ETH_LEN..)
        .and_then(|b| b.first_chunk::<MIN_HEADER_LEN>())
    else {
        return;
    };
    let ip = Ipv4Packet::new_unchecked(header);
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    let segment = &mut frame[range];
    let cleared = match p.proto {
        Proto::Tcp => TcpPacket::new_checked(&mut *segment).map(|mut t| t.set_checksum(0)),
        Proto::Udp => UdpPacket::new_checked(&mut *segment).map(|mut u| u.clear_checksum()),
        Proto::Icmp => return,
    };
    if cleared.is_err() {
        return;
    }
    let (pseudo, sum) = transport_sums(src, dst, p.proto, segment);
    let sum = !checksum::fold(pseudo + sum);
    // The views were checked just above: these succeed.
    match p.proto {
        Proto::Tcp => {
            if let Ok(mut t) = TcpPacket::new_checked(segment) {
                t.set_checksum(sum);
            }
        }
        Proto::Udp => {
            if let Ok(mut u) = UdpPacket::new_checked(segment) {
                u.set_checksum(sum);
            }
        }
        Proto::Icmp => {}
    }
}

/// The checksum change of a flow's full NAT toward its service, worked out once when the
/// flow is made instead of from every frame's old addresses: `addrs` for the two addresses
/// (both checksums), `ports` for the two ports (the transport's only). Frames coming back
/// undo the same change ([`NatDelta::reversed`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NatDelta {
    addrs: u16,
    ports: u16,
}

impl NatDelta {
    /// Source and destination `from` become those `to`.
    #[inline(always)]
    pub fn new(from: [(Ipv4Addr, u16); 2], to: [(Ipv4Addr, u16); 2]) -> Self {
        let [(src, src_port), (dst, dst_port)] = from;
        let [(new_src, new_src_port), (new_dst, new_dst_port)] = to;
        let addrs = Delta::double(u32::from(src), u32::from(new_src))
            .plus(Delta::double(u32::from(dst), u32::from(new_dst)));
        let ports = Delta::word(src_port, new_src_port).plus(Delta::word(dst_port, new_dst_port));
        Self {
            addrs: checksum::fold(addrs.sum()),
            ports: checksum::fold(ports.sum()),
        }
    }

    /// The change back (the service's frames to the client): its negation in one's
    /// complement.
    #[inline]
    pub fn reversed(self) -> Self {
        Self {
            addrs: !self.addrs,
            ports: !self.ports,
        }
    }
}

/// What a flow adds (wrapping) to the numbers of its TCP frames on one way: to the sequence
/// and acknowledgement numbers the SYN proxy's translation between the numbers its cookie
/// gave the client and those the service chose, or a renumbered flow's; to the timestamps
/// (TSval toward the service, TSecr back) the shift that keeps every SNAT tuple's clock
/// growing. All 0 for a flow left alone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpShift {
    pub seq: u32,
    pub ack: u32,
    pub tsval: u32,
    pub tsecr: u32,
}

impl TcpShift {
    /// Nothing moves.
    pub const NONE: Self = Self {
        seq: 0,
        ack: 0,
        tsval: 0,
        tsecr: 0,
    };
}

/// Full NAT rewrite of a frame of a flow whose checksum change is `delta`: new source and
/// destination address and port, TTL decremented, a TCP segment's numbers (and timestamps,
/// if it carries them) moved by `numbers`; the IP checksum adjusted incrementally, and the
/// transport checksum too when `state` says it was complete; a partial one is completed. `p`'s addresses and ports are
/// the ones `delta` was made from (the flow's key matched them). The headers are taken as
/// fixed-size arrays once, so no field access checks a bound again, and the transport
/// checksum is adjusted once for every change: this runs for every forwarded frame.
#[inline(always)]
pub fn rewrite_flow(
    frame: &mut [u8],
    p: &Ipv4,
    src: (Ipv4Addr, u16),
    dst: (Ipv4Addr, u16),
    delta: NatDelta,
    numbers: TcpShift,
    state: TransportChecksum,
) {
    const HEADER_END: usize = ETH_LEN + MIN_HEADER_LEN;
    if p.l4 < HEADER_END || p.l4 > frame.len() {
        return;
    }
    let (head, segment) = frame.split_at_mut(p.l4);
    let Some(header) = head
        .get_mut(ETH_LEN..)
        .and_then(|h| h.first_chunk_mut::<MIN_HEADER_LEN>())
    else {
        return;
    };
    let mut ip = Ipv4Packet::new_unchecked(header);
    let addrs = Delta::from_folded(delta.addrs);
    ip.set_src_addr(src.0);
    ip.set_dst_addr(dst.0);
    // The TTL shares a word with the protocol, which stays: the word goes down by 0x100.
    let header = if p.ttl > 0 {
        ip.set_ttl(p.ttl - 1);
        addrs.plus(Delta::word(0x100, 0))
    } else {
        addrs
    };
    ip.set_checksum(header.apply(ip.checksum()));
    let transport = addrs.plus(Delta::from_folded(delta.ports));
    let incremental = state == TransportChecksum::Valid || state == TransportChecksum::Bad;
    match p.proto {
        Proto::Icmp => return,
        Proto::Tcp => {
            let transport = if numbers.tsval | numbers.tsecr == 0 {
                transport
            } else {
                transport.plus(shift_timestamps(segment, numbers.tsval, numbers.tsecr))
            };
            let Some(h) = segment.first_chunk_mut::<TCP_HEADER_LEN>() else {
                return;
            };
            let transport = if numbers.seq | numbers.ack == 0 {
                transport
            } else {
                transport
                    .plus(add_to_u32(h, TCP_SEQ, numbers.seq))
                    .plus(add_to_u32(h, TCP_ACK, numbers.ack))
            };
            let mut t = TcpPacket::new_unchecked(h);
            t.set_src_port(src.1);
            t.set_dst_port(dst.1);
            if incremental {
                t.set_checksum(transport.apply(t.checksum()));
            }
        }
        Proto::Udp => {
            let Some(h) = segment.first_chunk_mut::<UDP_HEADER_LEN>() else {
                return;
            };
            let mut u = UdpPacket::new_unchecked(h);
            u.set_src_port(src.1);
            u.set_dst_port(dst.1);
            if incremental && u.checksum() != 0 {
                // 0 would say "no checksum"; its other form in one's complement is sent
                // instead (RFC 768).
                let sum = transport.apply(u.checksum());
                u.set_checksum(if sum == 0 { 0xffff } else { sum });
            }
        }
    }
    if state == TransportChecksum::Partial {
        complete_checksum(frame, p);
    }
}

/// The TSval of a TCP segment with the timestamps option.
#[inline]
pub fn tcp_tsval(frame: &[u8], p: &Ipv4) -> Option<u32> {
    if p.proto != Proto::Tcp {
        return None;
    }
    let tcp = TcpPacket::new_checked(frame.get(p.l4..)?).ok()?;
    let at = tcp.timestamps_at()?;
    let b = tcp.into_inner();
    Some(u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]))
}

/// Adds `tsval` and `tsecr` (wrapping) to a TCP segment's timestamps, if it carries the
/// option, and returns the checksum's change. A segment without it, or too short, is left
/// as it is. The usual layout is handled inline with no bound checked twice; any other
/// walks the options.
#[inline(always)]
fn shift_timestamps(segment: &mut [u8], tsval: u32, tsecr: u32) -> Delta {
    if let Some(header) = segment.first_chunk_mut::<USUAL_TIMESTAMPS_END>()
        && has_usual_timestamps(header)
    {
        return add_to_u32(header, USUAL_TSVAL_AT, tsval).plus(add_to_u32(
            header,
            USUAL_TSVAL_AT + 4,
            tsecr,
        ));
    }
    shift_timestamps_found(segment, tsval, tsecr)
}

/// [`shift_timestamps`] for the options in any other order: a SYN's (the MSS first), or
/// another stack's. Kept out of line, away from the established path.
#[inline(never)]
fn shift_timestamps_found(segment: &mut [u8], tsval: u32, tsecr: u32) -> Delta {
    let Some(at) = TcpPacket::new_checked(&*segment)
        .ok()
        .and_then(|tcp| tcp.timestamps_at())
    else {
        return Delta::default();
    };
    let Some(field) = segment.get_mut(at..).and_then(|f| f.first_chunk_mut::<8>()) else {
        return Delta::default();
    };
    let change = add_to_u32(field, 0, tsval).plus(add_to_u32(field, 4, tsecr));
    // At an odd offset every byte counts in the other half of its word: the change's
    // bytes swap (times 256 modulo 0xffff).
    if at % 2 == 0 {
        change
    } else {
        change.swapped()
    }
}

/// Adds `shift` (wrapping) to both edges of every block of a TCP segment's SACK option,
/// adjusting its (complete) checksum: the blocks acknowledge sequence numbers of the other
/// side, which a renumbered flow moves.
pub fn shift_sack(frame: &mut [u8], p: &Ipv4, shift: u32) {
    if p.proto != Proto::Tcp {
        return;
    }
    let Some(segment) = frame.get_mut(p.l4..) else {
        return;
    };
    let Ok(tcp) = TcpPacket::new_checked(segment) else {
        return;
    };
    let Some((at, blocks)) = tcp.sack_blocks_at() else {
        return;
    };
    let mut sum = tcp.checksum();
    let b = tcp.into_inner();
    for edge in 0..blocks * 2 {
        match add_to_option_u32(b, at + 4 * edge, shift, sum) {
            Some(s) => sum = s,
            None => return,
        }
    }
    TcpPacket::new_unchecked(b).set_checksum(sum);
}

/// Adds `shift` to the big-endian 32-bit number at `at` of a TCP segment (an option's, so
/// not necessarily at an even offset) and returns the checksum `sum` adjusted for it.
fn add_to_option_u32(b: &mut [u8], at: usize, shift: u32, sum: u16) -> Option<u16> {
    let field = b.get_mut(at..at + 4)?;
    let old = [field[0], field[1], field[2], field[3]];
    let new = u32::from_be_bytes(old).wrapping_add(shift).to_be_bytes();
    field.copy_from_slice(&new);
    // Options start at even offsets after NOPs in practice, but not always: adjust over the
    // aligned words that hold the four bytes.
    let start = at & !1;
    // (`get_mut` above proved `at + 4 <= len`; a last odd byte is summed as padded.)
    let end = ((at + 4 + 1) & !1).min(b.len());
    let mut before = [0u8; 6];
    let mut after = [0u8; 6];
    let n = end - start;
    after[..n].copy_from_slice(&b[start..end]);
    before[..n].copy_from_slice(&b[start..end]);
    before[at - start..at - start + 4].copy_from_slice(&old);
    Some(checksum::adjust(sum, &before[..n], &after[..n]))
}

/// The MSS option of a TCP segment (a SYN's offer).
pub fn tcp_mss(frame: &[u8], p: &Ipv4) -> Option<u16> {
    if p.proto != Proto::Tcp {
        return None;
    }
    TcpPacket::new_checked(frame.get(p.l4..)?).ok()?.mss()
}

/// Where a TCP header holds its sequence and acknowledgement numbers.
const TCP_SEQ: usize = 4;
const TCP_ACK: usize = 8;

/// Adds `shift` (wrapping) to the big-endian number at `at` of a header and returns the
/// checksum's change.
#[inline(always)]
fn add_to_u32<const N: usize>(header: &mut [u8; N], at: usize, shift: u32) -> checksum::Delta {
    let Some(field) = header.get_mut(at..at + 4) else {
        return checksum::Delta::default();
    };
    let old = u32::from_be_bytes([field[0], field[1], field[2], field[3]]);
    let new = old.wrapping_add(shift);
    field.copy_from_slice(&new.to_be_bytes());
    checksum::Delta::double(old, new)
}

/// A TCP segment's sequence number (`None` if it is not TCP or too short).
#[inline]
pub fn tcp_seq(frame: &[u8], p: &Ipv4) -> Option<u32> {
    if p.proto != Proto::Tcp {
        return None;
    }
    let header = frame.get(p.l4..)?.first_chunk::<TCP_HEADER_LEN>()?;
    Some(u32::from_be_bytes([
        header[4], header[5], header[6], header[7],
    ]))
}

/// A TCP segment's sequence and acknowledgement numbers and the sequence space it uses
/// (payload, plus one each for SYN and FIN).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpNumbers {
    pub seq: u32,
    pub ack: u32,
    pub len: u32,
    /// The window it advertises (unscaled).
    pub window: u16,
}

/// The numbers of the TCP segment `p` parsed from `frame` (`None` if it is not TCP).
pub fn tcp_numbers(frame: &[u8], p: &Ipv4) -> Option<TcpNumbers> {
    if p.proto != Proto::Tcp {
        return None;
    }
    let ip = Ipv4Packet::new_checked(frame.get(ETH_LEN..)?).ok()?;
    let tcp = TcpPacket::new_checked(ip.payload()).ok()?;
    let payload = ip.payload().len().saturating_sub(tcp.header_len()) as u32;
    Some(TcpNumbers {
        seq: tcp.seq_number(),
        ack: tcp.ack_number(),
        len: payload + u32::from(p.tcp.syn) + u32::from(p.tcp.fin),
        window: tcp.window_len(),
    })
}

/// Turns an ARP request for `our_ip` into the reply from `our_mac`, in place.
pub fn arp_reply_in_place(frame: &mut [u8], arp: &Arp, our_mac: Mac) {
    set_macs(frame, our_mac, arp.sender_mac);
    let Ok(mut eth) = EthernetFrame::new_checked(frame) else {
        return;
    };
    let Ok(mut a) = ArpPacket::new_checked(eth.payload_mut()) else {
        return;
    };
    a.set_operation(OPERATION_REPLY);
    a.set_sender_hardware_addr(our_mac);
    a.set_sender_protocol_addr(arp.target_ip);
    a.set_target_hardware_addr(arp.sender_mac);
    a.set_target_protocol_addr(arp.sender_ip);
}

/// Turns an ICMP echo request into its reply, in place (addresses swapped, type 0).
pub fn echo_reply_in_place(frame: &mut [u8], our_mac: Mac, peer_mac: Mac) {
    set_macs(frame, our_mac, peer_mac);
    let Some(mut ip) = ip_view(frame) else { return };
    // Swapping the addresses leaves the IP checksum unchanged (same words, other order).
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    ip.set_src_addr(dst);
    ip.set_dst_addr(src);
    ip.set_ttl_adjusting(64);
    let Ok(mut icmp) = IcmpPacket::new_checked(ip.payload_mut()) else {
        return;
    };
    let old = [icmp.msg_type(), icmp.msg_code()];
    icmp.set_msg_type(icmp::TYPE_ECHO_REPLY);
    let sum = checksum::adjust(icmp.checksum(), &old, &[icmp::TYPE_ECHO_REPLY, old[1]]);
    icmp.set_checksum(sum);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::parse;

    /// An Ethernet/IPv4/TCP or UDP frame with every checksum complete.
    fn frame(
        proto: u8,
        from: (Ipv4Addr, u16),
        to: (Ipv4Addr, u16),
        ttl: u8,
        data: &[u8],
    ) -> Vec<u8> {
        with_options(proto, from, to, ttl, &[], data)
    }

    /// [`frame`] with TCP `options` (a multiple of 4 bytes long).
    fn with_options(
        proto: u8,
        from: (Ipv4Addr, u16),
        to: (Ipv4Addr, u16),
        ttl: u8,
        options: &[u8],
        data: &[u8],
    ) -> Vec<u8> {
        let l4 = if proto == 6 { 20 + options.len() } else { 8 };
        let mut f = vec![0u8; 14 + 20 + l4 + data.len()];
        f[12..14].copy_from_slice(&[8, 0]);
        let total = (20 + l4 + data.len()) as u16;
        let ip = &mut f[14..34];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        ip[8] = ttl;
        ip[9] = proto;
        ip[12..16].copy_from_slice(&from.0.octets());
        ip[16..20].copy_from_slice(&to.0.octets());
        let sum = checksum::checksum(ip);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        let seg = &mut f[34..];
        seg[0..2].copy_from_slice(&from.1.to_be_bytes());
        seg[2..4].copy_from_slice(&to.1.to_be_bytes());
        if proto == 6 {
            seg[12] = ((l4 / 4) as u8) << 4;
            seg[13] = 0x10; // ACK
            seg[20..l4].copy_from_slice(options);
        } else {
            seg[4..6].copy_from_slice(&((8 + data.len()) as u16).to_be_bytes());
        }
        seg[l4..].copy_from_slice(data);
        let pseudo = checksum::pseudo_header(from.0, to.0, proto, seg.len() as u16);
        let sum = match !checksum::fold(pseudo + checksum::sum(seg)) {
            0 if proto == 17 => 0xffff,
            sum => sum,
        };
        let at = if proto == 6 { 16 } else { 6 };
        seg[at..at + 2].copy_from_slice(&sum.to_be_bytes());
        f
    }

    fn parsed(f: &[u8]) -> Ipv4 {
        match parse(f) {
            Ok(parse::Packet::Ipv4(ip)) => ip,
            other => panic!("not an IPv4 frame: {other:?}"),
        }
    }

    fn addr(a: u32) -> Ipv4Addr {
        Ipv4Addr::from(a)
    }

    /// Payload that looks like the usual timestamps option is payload all the same: a header
    /// without options keeps every data byte.
    #[test]
    fn data_that_looks_like_timestamps_is_left_alone() {
        let (client, vip) = ((addr(0xc612_0032), 40_000), (addr(0xc612_0064), 80));
        let (snip, service) = ((addr(0xc612_0002), 41_000), (addr(0xc612_000b), 80));
        let data = [1, 1, 8, 10, 0, 0, 0, 7, 0, 0, 0, 9];
        let mut f = frame(6, client, vip, 64, &data);
        let p = parsed(&f);
        let numbers = TcpShift {
            tsval: 1000,
            tsecr: 2000,
            ..TcpShift::NONE
        };
        let delta = NatDelta::new([client, vip], [snip, service]);
        rewrite_flow(
            &mut f,
            &p,
            snip,
            service,
            delta,
            numbers,
            TransportChecksum::Valid,
        );
        assert_eq!(&f[54..], &data);
        assert_eq!(
            transport_checksum(&f, &parsed(&f)),
            TransportChecksum::Valid
        );
    }

    proptest::proptest! {
        /// A flow's change worked out once leaves the frame as a rewrite from scratch would,
        /// with both checksums verifying, toward the service and back.
        #[test]
        fn a_flows_delta_keeps_every_checksum_valid(
            udp: bool,
            client: (u32, u16), vip: (u32, u16), snip: (u32, u16), service: (u32, u16),
            ttl in 2u8..=255,
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
        ) {
            let proto = if udp { 17 } else { 6 };
            let (client, vip) = ((addr(client.0), client.1), (addr(vip.0), vip.1));
            let (snip, service) = ((addr(snip.0), snip.1), (addr(service.0), service.1));
            let delta = NatDelta::new([client, vip], [snip, service]);
            let mut f = frame(proto, client, vip, ttl, &data);
            let p = parsed(&f);
            rewrite_flow(&mut f, &p, snip, service, delta, TcpShift::NONE, TransportChecksum::Valid);
            let out = parsed(&f);
            proptest::prop_assert_eq!((out.src, out.src_port, out.dst, out.dst_port), (snip.0, snip.1, service.0, service.1));
            proptest::prop_assert_eq!(out.ttl, ttl - 1);
            proptest::prop_assert_eq!(checksum::checksum(&f[14..34]), 0, "IP checksum");
            proptest::prop_assert_eq!(transport_checksum(&f, &out), TransportChecksum::Valid);
            let mut back = frame(proto, service, snip, ttl, &data);
            let p = parsed(&back);
            rewrite_flow(&mut back, &p, vip, client, delta.reversed(), TcpShift::NONE, TransportChecksum::Valid);
            let out = parsed(&back);
            proptest::prop_assert_eq!((out.src, out.src_port, out.dst, out.dst_port), (vip.0, vip.1, client.0, client.1));
            proptest::prop_assert_eq!(checksum::checksum(&back[14..34]), 0, "IP checksum back");
            proptest::prop_assert_eq!(transport_checksum(&back, &out), TransportChecksum::Valid);
        }

        /// Sequence and acknowledgement numbers moved in the same rewrite land where they
        /// should, and the one adjustment of the checksum covers them with the addresses.
        #[test]
        fn numbers_moved_in_the_rewrite_keep_the_checksum_valid(
            client: (u32, u16), vip: (u32, u16), snip: (u32, u16), service: (u32, u16),
            seq_shift: u32, ack_shift: u32,
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
        ) {
            let (client, vip) = ((addr(client.0), client.1), (addr(vip.0), vip.1));
            let (snip, service) = ((addr(snip.0), snip.1), (addr(service.0), service.1));
            let delta = NatDelta::new([client, vip], [snip, service]);
            let mut f = frame(6, client, vip, 64, &data);
            let p = parsed(&f);
            let before = tcp_numbers(&f, &p).expect("TCP");
            let numbers = TcpShift { seq: seq_shift, ack: ack_shift, ..TcpShift::NONE };
            rewrite_flow(&mut f, &p, snip, service, delta, numbers, TransportChecksum::Valid);
            let out = parsed(&f);
            let after = tcp_numbers(&f, &out).expect("TCP");
            proptest::prop_assert_eq!(after.seq, before.seq.wrapping_add(seq_shift));
            proptest::prop_assert_eq!(after.ack, before.ack.wrapping_add(ack_shift));
            proptest::prop_assert_eq!(transport_checksum(&f, &out), TransportChecksum::Valid);
        }

        /// Timestamps moved in the rewrite, where every stack puts them (after two NOPs, at an
        /// even offset) or one byte further (an odd one), keep the checksum valid.
        #[test]
        fn timestamps_moved_in_the_rewrite_keep_the_checksum_valid(
            client: (u32, u16), service: (u32, u16),
            tsval: u32, tsecr: u32, tsval_shift: u32, tsecr_shift: u32, seq_shift: u32,
            odd: bool,
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
        ) {
            let (client, service) = ((addr(client.0), client.1), (addr(service.0), service.1));
            let (vip, snip) = ((addr(0xc612_0064), 80), (addr(0xc612_0002), 40_000));
            let delta = NatDelta::new([client, vip], [snip, service]);
            let mut options = if odd { vec![1, 8, 10] } else { vec![1, 1, 8, 10] };
            options.extend_from_slice(&tsval.to_be_bytes());
            options.extend_from_slice(&tsecr.to_be_bytes());
            options.resize(12, 0);
            let mut f = with_options(6, client, vip, 64, &options, &data);
            let p = parsed(&f);
            let numbers = TcpShift { seq: seq_shift, ack: 0, tsval: tsval_shift, tsecr: tsecr_shift };
            rewrite_flow(&mut f, &p, snip, service, delta, numbers, TransportChecksum::Valid);
            let out = parsed(&f);
            let tcp = TcpPacket::new_checked(&f[34..]).expect("TCP");
            let at = tcp.timestamps_at().expect("timestamps");
            proptest::prop_assert_eq!(at, if odd { 23 } else { 24 });
            let word = |at: usize| u32::from_be_bytes([f[34 + at], f[35 + at], f[36 + at], f[37 + at]]);
            proptest::prop_assert_eq!(word(at), tsval.wrapping_add(tsval_shift));
            proptest::prop_assert_eq!(word(at + 4), tsecr.wrapping_add(tsecr_shift));
            proptest::prop_assert_eq!(transport_checksum(&f, &out), TransportChecksum::Valid);
        }
    }
}
