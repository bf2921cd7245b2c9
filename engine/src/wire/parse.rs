//! Validated parsing (etherparse) into the fields the data plane decides on.

use std::net::Ipv4Addr;

use etherparse::{
    ArpOperation, ArpPacketSlice, EtherType, Ethernet2HeaderSlice, Icmpv4Slice, IpNumber,
    Ipv4HeaderSlice, TcpHeaderSlice, UdpHeaderSlice,
};

use super::{DropReason, ETH_LEN, ETHERTYPE_ARP, ETHERTYPE_IPV4, IcmpPacket, Mac, Proto, icmp};

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
            Icmpv4Slice::from_slice(body).map_err(|_| DropReason::Malformed)?;
            let icmp = IcmpPacket::new_checked(body)?;
            p.proto = Proto::Icmp;
            p.echo_request = icmp.msg_type() == icmp::TYPE_ECHO_REQUEST && icmp.msg_code() == 0;
            p.src_port = icmp.echo_ident();
            p.dst_port = p.src_port;
        }
        _ => return Err(DropReason::UnsupportedProtocol),
    }
    Ok(Packet::Ipv4(p))
}
