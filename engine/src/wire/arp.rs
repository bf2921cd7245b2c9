//! ARP for IPv4 over Ethernet (RFC 826).

use std::net::Ipv4Addr;

use super::{DropReason, Mac, be16, ipv4_at, mac_at, set_be16};

mod field {
    use super::super::Field;
    pub const HTYPE: Field = 0..2;
    pub const PTYPE: Field = 2..4;
    pub const HLEN: usize = 4;
    pub const PLEN: usize = 5;
    pub const OPER: Field = 6..8;
    pub const SHA: Field = 8..14;
    pub const SPA: Field = 14..18;
    pub const THA: Field = 18..24;
    pub const TPA: Field = 24..28;
}

/// Length of an ARP packet for IPv4 over Ethernet.
pub const PACKET_LEN: usize = field::TPA.end;
pub const OPERATION_REQUEST: u16 = 1;
pub const OPERATION_REPLY: u16 = 2;
const HTYPE_ETHERNET: u16 = 1;

super::view!(
    /// A byte view of an ARP packet (IPv4 over Ethernet).
    ArpPacket,
    fixed PACKET_LEN
);

impl<T: AsRef<[u8]>> ArpPacket<T> {
    pub fn operation(&self) -> u16 {
        be16(self.buffer.as_ref(), field::OPER)
    }

    pub fn sender_hardware_addr(&self) -> Mac {
        mac_at(self.buffer.as_ref(), field::SHA)
    }

    pub fn sender_protocol_addr(&self) -> Ipv4Addr {
        ipv4_at(self.buffer.as_ref(), field::SPA)
    }

    pub fn target_hardware_addr(&self) -> Mac {
        mac_at(self.buffer.as_ref(), field::THA)
    }

    pub fn target_protocol_addr(&self) -> Ipv4Addr {
        ipv4_at(self.buffer.as_ref(), field::TPA)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ArpPacket<T> {
    /// Writes the fixed part: Ethernet hardware, IPv4 protocol, their address sizes.
    pub fn set_ethernet_ipv4(&mut self) {
        let b = self.buffer.as_mut();
        set_be16(b, field::HTYPE, HTYPE_ETHERNET);
        set_be16(b, field::PTYPE, super::ETHERTYPE_IPV4);
        b[field::HLEN] = 6;
        b[field::PLEN] = 4;
    }

    pub fn set_operation(&mut self, operation: u16) {
        set_be16(self.buffer.as_mut(), field::OPER, operation);
    }

    pub fn set_sender_hardware_addr(&mut self, mac: Mac) {
        self.buffer.as_mut()[field::SHA].copy_from_slice(&mac);
    }

    pub fn set_sender_protocol_addr(&mut self, ip: Ipv4Addr) {
        self.buffer.as_mut()[field::SPA].copy_from_slice(&ip.octets());
    }

    pub fn set_target_hardware_addr(&mut self, mac: Mac) {
        self.buffer.as_mut()[field::THA].copy_from_slice(&mac);
    }

    pub fn set_target_protocol_addr(&mut self, ip: Ipv4Addr) {
        self.buffer.as_mut()[field::TPA].copy_from_slice(&ip.octets());
    }
}
