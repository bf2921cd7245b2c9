//! Validated parsing into the fields the data plane decides on: IPv4 and its transports
//! through the crate's own header views (every frame passes here), ARP and ICMP's lengths
//! through etherparse.

use std::net::Ipv4Addr;

use etherparse::{ArpOperation, ArpPacketSlice, EtherType, Icmpv4Slice};

use super::ipv4::MIN_HEADER_LEN;
use super::tcp::{self, MIN_HEADER_LEN as TCP_HEADER_LEN};
use super::udp::HEADER_LEN as UDP_HEADER_LEN;
use super::{
    DropReason, ETH_LEN, ETHERTYPE_ARP, ETHERTYPE_IPV4, EthernetFrame, IcmpPacket, Ipv4Packet, Mac,
    Proto, TcpPacket, UdpPacket, icmp,
};

const PROTOCOL_ICMP: u8 = Proto::Icmp.number();
const PROTOCOL_TCP: u8 = Proto::Tcp.number();
const PROTOCOL_UDP: u8 = Proto::Udp.number();

/// TCP flags the flow tracker reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpFlags {
    pub syn: bool,
    pub ack: bool,
    pub fin: bool,
    pub rst: bool,
    /// The segment carries payload (data, not only flags).
    pub data: bool,
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

impl Default for Ipv4 {
    /// An all-zero header set: what a burst's slots hold before parsing fills them.
    fn default() -> Self {
        Self {
            src: Ipv4Addr::UNSPECIFIED,
            dst: Ipv4Addr::UNSPECIFIED,
            proto: Proto::Tcp,
            ttl: 0,
            l4: 0,
            src_port: 0,
            dst_port: 0,
            tcp: TcpFlags::default(),
            echo_request: false,
            len: 0,
        }
    }
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
    let mut ip = Ipv4::default();
    Ok(match parse_into(frame, &mut ip)? {
        Parsed::Ipv4 => Packet::Ipv4(ip),
        Parsed::Arp(arp) => Packet::Arp(arp),
    })
}

/// What [`parse_into`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parsed {
    /// IPv4, its fields written to the caller's [`Ipv4`].
    Ipv4,
    Arp(Arp),
}

/// [`parse`], writing an IPv4 packet's fields into `ip` (the burst's slot for the frame):
/// built in place, they are not copied through a returned value whose byte-sized stores
/// would be read back as wider loads (a stalled store-to-load forward per frame).
#[inline(always)]
pub fn parse_into(frame: &[u8], ip: &mut Ipv4) -> Result<Parsed, DropReason> {
    let eth = EthernetFrame::new_checked(frame)?;
    let payload = eth.payload();
    match eth.ethertype() {
        ETHERTYPE_IPV4 => parse_ipv4(payload, ip).map(|()| Parsed::Ipv4),
        ETHERTYPE_ARP => parse_arp(payload).map(Parsed::Arp),
        _ => Err(DropReason::NotIpv4),
    }
}

#[inline(never)]
fn parse_arp(payload: &[u8]) -> Result<Arp, DropReason> {
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
    Ok(Arp {
        request,
        sender_mac: mac(arp.sender_hw_addr()),
        sender_ip: ipv4(arp.sender_protocol_addr()),
        target_ip: ipv4(arp.target_protocol_addr()),
    })
}

/// Every frame the engine forwards passes here: the header views' own checks, over a
/// fixed-size copy of the header's first 20 bytes where that saves the bound checks. A
/// header that cannot be what it says (version, lengths) is `Malformed`; a datagram longer
/// than the frame is `Truncated`.
#[inline(always)]
fn parse_ipv4(payload: &[u8], p: &mut Ipv4) -> Result<(), DropReason> {
    let fixed = payload
        .first_chunk::<MIN_HEADER_LEN>()
        .ok_or(DropReason::Malformed)?;
    let ip = Ipv4Packet::new_unchecked(fixed);
    let header_len = ip.header_len();
    if ip.version() != 4 || header_len < MIN_HEADER_LEN || payload.len() < header_len {
        return Err(DropReason::Malformed);
    }
    let total = usize::from(ip.total_len());
    if total > payload.len() {
        return Err(DropReason::Truncated);
    }
    if ip.is_fragment() {
        return Err(DropReason::Fragment);
    }
    if total < header_len {
        return Err(DropReason::Malformed);
    }
    let body = &payload[header_len..total];
    *p = Ipv4 {
        src: ip.src_addr(),
        dst: ip.dst_addr(),
        proto: Proto::Tcp,
        ttl: ip.ttl(),
        l4: ETH_LEN + header_len,
        src_port: 0,
        dst_port: 0,
        tcp: TcpFlags::default(),
        echo_request: false,
        len: ETH_LEN + total,
    };
    match ip.protocol() {
        PROTOCOL_TCP => {
            let fixed = body
                .first_chunk::<TCP_HEADER_LEN>()
                .ok_or(DropReason::Malformed)?;
            let tcp = TcpPacket::new_unchecked(fixed);
            let tcp_len = tcp.header_len();
            if tcp_len < TCP_HEADER_LEN || body.len() < tcp_len {
                return Err(DropReason::Malformed);
            }
            let flags = tcp.flags();
            p.src_port = tcp.src_port();
            p.dst_port = tcp.dst_port();
            p.tcp = TcpFlags {
                syn: flags & tcp::FLAG_SYN != 0,
                ack: flags & tcp::FLAG_ACK != 0,
                fin: flags & tcp::FLAG_FIN != 0,
                rst: flags & tcp::FLAG_RST != 0,
                data: body.len() > tcp_len,
            };
        }
        PROTOCOL_UDP => {
            let fixed = body
                .first_chunk::<UDP_HEADER_LEN>()
                .ok_or(DropReason::Malformed)?;
            let udp = UdpPacket::new_unchecked(fixed);
            p.proto = Proto::Udp;
            p.src_port = udp.src_port();
            p.dst_port = udp.dst_port();
        }
        PROTOCOL_ICMP => {
            // etherparse knows each message type's length (not a hot path).
            Icmpv4Slice::from_slice(body).map_err(|_| DropReason::Malformed)?;
            let icmp = IcmpPacket::new_checked(body).map_err(|_| DropReason::Malformed)?;
            p.proto = Proto::Icmp;
            p.echo_request = icmp.msg_type() == icmp::TYPE_ECHO_REQUEST && icmp.msg_code() == 0;
            p.src_port = icmp.echo_ident();
            p.dst_port = p.src_port;
        }
        _ => return Err(DropReason::UnsupportedProtocol),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use etherparse::{
        Ethernet2HeaderSlice, IpNumber, Ipv4HeaderSlice, PacketBuilder, TcpHeaderSlice,
        UdpHeaderSlice,
    };
    use proptest::prelude::*;

    use super::*;

    /// The parser as etherparse's header slices see the frame: an independent reading the
    /// crate's own must agree with, drop reason included.
    fn by_etherparse(frame: &[u8]) -> Result<Packet, DropReason> {
        let eth = Ethernet2HeaderSlice::from_slice(frame).map_err(|_| DropReason::Truncated)?;
        let payload = &frame[ETH_LEN..];
        match eth.ether_type().0 {
            ETHERTYPE_ARP => return parse_arp(payload).map(Packet::Arp),
            ETHERTYPE_IPV4 => {}
            _ => return Err(DropReason::NotIpv4),
        }
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
        let body = &payload[header_len..total];
        let mut p = Ipv4 {
            src: ip.source_addr(),
            dst: ip.destination_addr(),
            ttl: ip.ttl(),
            l4: ETH_LEN + header_len,
            len: ETH_LEN + total,
            ..Ipv4::default()
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
                    data: body.len() > tcp.slice().len(),
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
                let raw = icmp.slice();
                p.proto = Proto::Icmp;
                p.echo_request = raw[0] == icmp::TYPE_ECHO_REQUEST && raw[1] == 0;
                p.src_port = u16::from_be_bytes([raw[4], raw[5]]);
                p.dst_port = p.src_port;
            }
            _ => return Err(DropReason::UnsupportedProtocol),
        }
        Ok(Packet::Ipv4(p))
    }

    fn frame(kind: u8, payload: usize) -> Vec<u8> {
        let b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]).ipv4(
            [198, 18, 0, 50],
            [198, 18, 0, 100],
            64,
        );
        let data = vec![0x41; payload];
        let mut v = Vec::new();
        let written = match kind % 3 {
            0 => b.tcp(40_000, 80, 7, 1024).syn().write(&mut v, &data),
            1 => b.udp(40_000, 53).write(&mut v, &data),
            _ => b.icmpv4_echo_request(9, 1).write(&mut v, &data),
        };
        written.expect("frame builds");
        v
    }

    proptest! {
        #[test]
        fn agrees_with_etherparse_on_damaged_frames(
            kind in 0u8..3,
            payload in 0usize..64,
            damage in proptest::collection::vec((0usize..80, any::<u8>()), 0..4),
            keep in 0usize..140,
        ) {
            let mut f = frame(kind, payload);
            for (at, byte) in damage {
                if let Some(b) = f.get_mut(at) {
                    *b = byte;
                }
            }
            f.truncate(keep);
            prop_assert_eq!(parse(&f), by_etherparse(&f));
        }
    }

    #[test]
    fn reads_what_was_built() {
        for kind in 0..3 {
            let f = frame(kind, 10);
            assert!(matches!(parse(&f), Ok(Packet::Ipv4(_))), "kind {kind}");
            assert_eq!(parse(&f), by_etherparse(&f));
        }
    }
}
