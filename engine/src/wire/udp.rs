//! The UDP header (RFC 768).

use super::{DropReason, be16, set_be16};

mod field {
    use super::super::Field;
    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const PORTS: Field = 0..4;
    pub const CHECKSUM: Field = 6..8;
    pub const HEADER_END: usize = 8;
}

pub const HEADER_LEN: usize = field::HEADER_END;

super::view!(
    /// A byte view of a UDP datagram.
    UdpPacket,
    fixed HEADER_LEN
);

impl<T: AsRef<[u8]>> UdpPacket<T> {
    pub fn src_port(&self) -> u16 {
        be16(self.buffer.as_ref(), field::SRC_PORT)
    }

    pub fn dst_port(&self) -> u16 {
        be16(self.buffer.as_ref(), field::DST_PORT)
    }

    pub fn ports_bytes(&self) -> [u8; 4] {
        let b = &self.buffer.as_ref()[field::PORTS];
        [b[0], b[1], b[2], b[3]]
    }

    /// 0: sent without a checksum.
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    pub fn set_src_port(&mut self, port: u16) {
        set_be16(self.buffer.as_mut(), field::SRC_PORT, port);
    }

    pub fn set_dst_port(&mut self, port: u16) {
        set_be16(self.buffer.as_mut(), field::DST_PORT, port);
    }

    /// Leaves the checksum field zero (before summing the datagram afresh).
    pub fn clear_checksum(&mut self) {
        set_be16(self.buffer.as_mut(), field::CHECKSUM, 0);
    }

    /// A computed 0 is sent as 0xffff: 0 means "no checksum" in UDP.
    pub fn set_checksum(&mut self, sum: u16) {
        let sum = if sum == 0 { 0xffff } else { sum };
        set_be16(self.buffer.as_mut(), field::CHECKSUM, sum);
    }
}
