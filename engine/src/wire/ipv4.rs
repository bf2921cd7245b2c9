//! The IPv4 header (RFC 791).

use std::net::Ipv4Addr;

use super::{DropReason, be16, checksum, ipv4_at, set_be16};

mod field {
    use super::super::Field;
    pub const VER_IHL: usize = 0;
    pub const LENGTH: Field = 2..4;
    pub const FLG_OFF: Field = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Field = 10..12;
    pub const SRC_ADDR: Field = 12..16;
    pub const DST_ADDR: Field = 16..20;
    pub const MIN_HEADER_END: usize = 20;
}

/// Length of a header without options.
pub const MIN_HEADER_LEN: usize = field::MIN_HEADER_END;
const DONT_FRAGMENT: u16 = 0x4000;
const MORE_FRAGMENTS: u16 = 0x2000;
const FRAGMENT_OFFSET: u16 = 0x1fff;

super::view!(
    /// A byte view of an IPv4 packet.
    Ipv4Packet
);

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// `Malformed` for a header length below 20 bytes or a total length below it;
    /// `Truncated` when the buffer holds less than either says.
    pub fn check_len(&self) -> Result<(), DropReason> {
        let len = self.buffer.as_ref().len();
        if len < field::MIN_HEADER_END {
            return Err(DropReason::Truncated);
        }
        let header = self.header_len();
        let total = usize::from(self.total_len());
        if header < MIN_HEADER_LEN || total < header {
            return Err(DropReason::Malformed);
        }
        if len < header || len < total {
            return Err(DropReason::Truncated);
        }
        Ok(())
    }

    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }

    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// A fragment of a larger datagram: more follow, or this one starts past offset 0.
    pub fn is_fragment(&self) -> bool {
        be16(self.buffer.as_ref(), field::FLG_OFF) & (MORE_FRAGMENTS | FRAGMENT_OFFSET) != 0
    }

    pub fn total_len(&self) -> u16 {
        be16(self.buffer.as_ref(), field::LENGTH)
    }

    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    pub fn protocol(&self) -> u8 {
        self.buffer.as_ref()[field::PROTOCOL]
    }

    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM)
    }

    pub fn src_addr(&self) -> Ipv4Addr {
        ipv4_at(self.buffer.as_ref(), field::SRC_ADDR)
    }

    pub fn dst_addr(&self) -> Ipv4Addr {
        ipv4_at(self.buffer.as_ref(), field::DST_ADDR)
    }

    /// The transport bytes: from the end of the header to the total length.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..usize::from(self.total_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Writes a 20-byte header without options: version 4, don't fragment, `ttl`.
    pub fn set_header(&mut self, total_len: u16, protocol: u8, ttl: u8) {
        let b = self.buffer.as_mut();
        b[field::VER_IHL] = 0x45;
        set_be16(b, field::LENGTH, total_len);
        set_be16(b, field::FLG_OFF, DONT_FRAGMENT);
        b[field::TTL] = ttl;
        b[field::PROTOCOL] = protocol;
    }

    pub fn set_src_addr(&mut self, ip: Ipv4Addr) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&ip.octets());
    }

    pub fn set_dst_addr(&mut self, ip: Ipv4Addr) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&ip.octets());
    }

    pub fn set_checksum(&mut self, sum: u16) {
        set_be16(self.buffer.as_mut(), field::CHECKSUM, sum);
    }

    /// Sets the TTL (the checksum is the caller's).
    pub fn set_ttl(&mut self, ttl: u8) {
        self.buffer.as_mut()[field::TTL] = ttl;
    }

    /// Sets the TTL, adjusting the header checksum for it.
    pub fn set_ttl_adjusting(&mut self, ttl: u8) {
        let b = self.buffer.as_mut();
        let old = [b[field::TTL], b[field::PROTOCOL]];
        b[field::TTL] = ttl;
        let sum = checksum::adjust(self.checksum(), &old, &[ttl, old[1]]);
        self.set_checksum(sum);
    }

    /// Sets both addresses, adjusting the header checksum for them.
    pub fn set_addrs_adjusting(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        let (old, new) = (
            addr_pair(self.src_addr(), self.dst_addr()),
            addr_pair(src, dst),
        );
        self.set_src_addr(src);
        self.set_dst_addr(dst);
        let sum = checksum::adjust(self.checksum(), &old, &new);
        self.set_checksum(sum);
    }

    /// Computes the header checksum afresh.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let header = self.header_len();
        let sum = checksum::checksum(&self.buffer.as_ref()[..header]);
        self.set_checksum(sum);
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (header, total) = (self.header_len(), usize::from(self.total_len()));
        &mut self.buffer.as_mut()[header..total]
    }
}

/// Source and destination as the 8 bytes they occupy in the header (and pseudo-header).
pub fn addr_pair(src: Ipv4Addr, dst: Ipv4Addr) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&src.octets());
    b[4..].copy_from_slice(&dst.octets());
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> [u8; 20] {
        let mut b = [0u8; 20];
        let mut p = Ipv4Packet::new_unchecked(&mut b[..]);
        p.set_header(20, 6, 64);
        p.set_src_addr(Ipv4Addr::new(198, 18, 0, 1));
        p.set_dst_addr(Ipv4Addr::new(198, 18, 0, 2));
        p.fill_checksum();
        b
    }

    #[test]
    fn a_filled_header_sums_to_zero() {
        assert_eq!(checksum::checksum(&header()), 0);
    }

    #[test]
    fn adjusted_rewrites_keep_the_header_valid() {
        let mut b = header();
        let mut p = Ipv4Packet::new_checked(&mut b[..]).unwrap();
        p.set_addrs_adjusting(Ipv4Addr::new(198, 19, 7, 7), Ipv4Addr::new(198, 18, 255, 1));
        p.set_ttl_adjusting(63);
        assert_eq!((p.ttl(), p.protocol()), (63, 6));
        assert_eq!(p.dst_addr(), Ipv4Addr::new(198, 18, 255, 1));
        assert!(checksum::same(checksum::checksum(&b), 0));
    }

    #[test]
    fn lengths_are_checked() {
        let mut b = header();
        b[0] = 0x44; // IHL 16 bytes
        assert_eq!(
            Ipv4Packet::new_checked(&b[..]).err(),
            Some(DropReason::Malformed)
        );
        let mut b = header();
        b[3] = 40; // total length beyond the buffer
        assert_eq!(
            Ipv4Packet::new_checked(&b[..]).err(),
            Some(DropReason::Truncated)
        );
        assert_eq!(
            Ipv4Packet::new_checked(&b[..10]).err(),
            Some(DropReason::Truncated)
        );
    }
}
