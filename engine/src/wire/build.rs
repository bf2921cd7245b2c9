//! Frames the engine originates: TCP resets and probes toward a flow's peers, ARP requests.
//! Each is written into a caller-owned buffer of at least [`MIN_FRAME`] bytes.

use std::net::Ipv4Addr;

use super::{
    ArpPacket, BROADCAST, ETH_LEN, ETHERTYPE_ARP, ETHERTYPE_IPV4, EthernetFrame, Ipv4Packet, Mac,
    OPERATION_REQUEST, Proto, TcpPacket, checksum, ipv4, tcp,
};

/// The Ethernet minimum (without FCS): shorter frames are padded to it.
pub const MIN_FRAME: usize = 60;

/// Writes a TCP RST from `src` to `dst` into `buf` and returns the frame length (the 60-byte
/// Ethernet minimum; 0 when `buf` is shorter). With `ack`, it is RST+ACK acknowledging `ack`.
pub fn tcp_rst(
    buf: &mut [u8],
    macs: (Mac, Mac),
    src: (Ipv4Addr, u16),
    dst: (Ipv4Addr, u16),
    seq: u32,
    ack: Option<u32>,
) -> usize {
    let flags = match ack {
        Some(_) => tcp::FLAG_RST | tcp::FLAG_ACK,
        None => tcp::FLAG_RST,
    };
    let segment = Segment {
        numbers: (seq, ack.unwrap_or(0)),
        flags,
        window: NO_WINDOW,
        mss: None,
    };
    tcp_control(buf, macs, (src, dst), segment)
}

/// A probe and a reset need no window; a zero one looks odd.
const NO_WINDOW: u16 = 1024;

/// Writes a SYN (`ack` None) or SYN+ACK from `src` to `dst` with `window`, offering `mss`
/// and no other option (the SYN proxy's: window scaling, SACK and timestamps are not
/// negotiated); returns the frame length.
pub fn tcp_handshake(
    buf: &mut [u8],
    macs: (Mac, Mac),
    addrs: ((Ipv4Addr, u16), (Ipv4Addr, u16)),
    (seq, ack): (u32, Option<u32>),
    window: u16,
    mss: u16,
) -> usize {
    let flags = match ack {
        Some(_) => tcp::FLAG_SYN | tcp::FLAG_ACK,
        None => tcp::FLAG_SYN,
    };
    let segment = Segment {
        numbers: (seq, ack.unwrap_or(0)),
        flags,
        window,
        mss: Some(mss),
    };
    tcp_control(buf, macs, addrs, segment)
}

/// Writes a bare ACK from `src` to `dst` advertising `window`: the one that completes a
/// handshake, or a window update.
pub fn tcp_ack(
    buf: &mut [u8],
    macs: (Mac, Mac),
    addrs: ((Ipv4Addr, u16), (Ipv4Addr, u16)),
    numbers: (u32, u32),
    window: u16,
) -> usize {
    let segment = Segment {
        numbers,
        flags: tcp::FLAG_ACK,
        window,
        mss: None,
    };
    tcp_control(buf, macs, addrs, segment)
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
    tcp_ack(buf, macs, (src, dst), (0, 0), NO_WINDOW)
}

/// What a control segment says.
struct Segment {
    /// Sequence and acknowledgement numbers.
    numbers: (u32, u32),
    flags: u8,
    window: u16,
    mss: Option<u16>,
}

/// A TCP header without payload (20 bytes, or 24 with an MSS option), in a minimum-size
/// frame.
fn tcp_control(
    buf: &mut [u8],
    (our_mac, peer_mac): (Mac, Mac),
    (src, dst): ((Ipv4Addr, u16), (Ipv4Addr, u16)),
    Segment {
        numbers: (seq, ack),
        flags,
        window,
        mss,
    }: Segment,
) -> usize {
    let tcp_len = tcp::MIN_HEADER_LEN + if mss.is_some() { 4 } else { 0 };
    let ip_len = ipv4::MIN_HEADER_LEN + tcp_len;
    let Some(buf) = buf.get_mut(..MIN_FRAME) else {
        return 0;
    };
    buf.fill(0);
    let mut eth = EthernetFrame::new_unchecked(&mut *buf);
    eth.set_src_addr(our_mac);
    eth.set_dst_addr(peer_mac);
    eth.set_ethertype(ETHERTYPE_IPV4);
    let mut ip = Ipv4Packet::new_unchecked(&mut buf[ETH_LEN..]);
    ip.set_header(ip_len as u16, Proto::Tcp.number(), 64);
    ip.set_src_addr(src.0);
    ip.set_dst_addr(dst.0);
    ip.fill_checksum();
    let mut t = TcpPacket::new_unchecked(ip.payload_mut());
    t.set_src_port(src.1);
    t.set_dst_port(dst.1);
    t.set_seq_number(seq);
    t.set_ack_number(ack);
    t.set_header_len(tcp_len);
    t.set_flags(flags);
    t.set_window_len(window);
    let segment = &mut t.into_inner()[..tcp_len];
    if let Some(mss) = mss {
        let [hi, lo] = mss.to_be_bytes();
        segment[tcp::MIN_HEADER_LEN..].copy_from_slice(&[tcp::OPTION_MSS, 4, hi, lo]);
    }
    let pseudo = checksum::pseudo_header(src.0, dst.0, Proto::Tcp.number(), tcp_len as u16);
    let sum = !checksum::fold(pseudo + checksum::sum(segment));
    TcpPacket::new_unchecked(segment).set_checksum(sum);
    MIN_FRAME
}

/// Writes an ARP request for `target` into `buf`; returns the frame length (padded to the
/// Ethernet minimum; 0 when `buf` is shorter).
pub fn arp_request(buf: &mut [u8], our_mac: Mac, our_ip: Ipv4Addr, target: Ipv4Addr) -> usize {
    let Some(buf) = buf.get_mut(..MIN_FRAME) else {
        return 0;
    };
    buf.fill(0);
    let mut eth = EthernetFrame::new_unchecked(&mut *buf);
    eth.set_src_addr(our_mac);
    eth.set_dst_addr(BROADCAST);
    eth.set_ethertype(ETHERTYPE_ARP);
    let mut arp = ArpPacket::new_unchecked(eth.payload_mut());
    arp.set_ethernet_ipv4();
    arp.set_operation(OPERATION_REQUEST);
    arp.set_sender_hardware_addr(our_mac);
    arp.set_sender_protocol_addr(our_ip);
    arp.set_target_hardware_addr([0; 6]);
    arp.set_target_protocol_addr(target);
    MIN_FRAME
}

#[cfg(test)]
mod tests {
    use super::super::{Packet, parse, tcp_numbers};
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

    #[test]
    fn arp_requests_parse_back() {
        let mut buf = [0u8; 60];
        let (ours, target) = (Ipv4Addr::new(198, 18, 0, 2), Ipv4Addr::new(198, 18, 0, 11));
        assert_eq!(arp_request(&mut buf, [2; 6], ours, target), 60);
        let Ok(Packet::Arp(arp)) = parse(&buf) else {
            panic!("not ARP")
        };
        assert!(arp.request);
        assert_eq!(
            (arp.sender_ip, arp.target_ip, arp.sender_mac),
            (ours, target, [2; 6])
        );
        assert_eq!(super::super::arp_target(&buf), Some(target));
        assert_eq!(arp_request(&mut [0u8; 59], [2; 6], ours, target), 0);
    }
}
