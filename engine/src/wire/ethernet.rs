//! The Ethernet II header.

use super::{DropReason, Mac, be16, mac_at, set_be16};

mod field {
    use super::super::Field;
    pub const DESTINATION: Field = 0..6;
    pub const SOURCE: Field = 6..12;
    pub const ETHERTYPE: Field = 12..14;
    pub const PAYLOAD: usize = 14;
}

/// Length of the Ethernet II header.
pub const HEADER_LEN: usize = field::PAYLOAD;
pub const ETHERTYPE_IPV4: u16 = 0x0800;
pub const ETHERTYPE_ARP: u16 = 0x0806;

super::view!(
    /// A byte view of an Ethernet II frame.
    EthernetFrame,
    fixed HEADER_LEN
);

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    pub fn dst_addr(&self) -> Mac {
        mac_at(self.buffer.as_ref(), field::DESTINATION)
    }

    pub fn src_addr(&self) -> Mac {
        mac_at(self.buffer.as_ref(), field::SOURCE)
    }

    pub fn ethertype(&self) -> u16 {
        be16(self.buffer.as_ref(), field::ETHERTYPE)
    }

    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    pub fn set_dst_addr(&mut self, mac: Mac) {
        self.buffer.as_mut()[field::DESTINATION].copy_from_slice(&mac);
    }

    pub fn set_src_addr(&mut self, mac: Mac) {
        self.buffer.as_mut()[field::SOURCE].copy_from_slice(&mac);
    }

    pub fn set_ethertype(&mut self, ethertype: u16) {
        set_be16(self.buffer.as_mut(), field::ETHERTYPE, ethertype);
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_the_header() {
        let mut bytes = [0u8; 16];
        bytes[12] = 0x08;
        bytes[13] = 0x06;
        let mut f = EthernetFrame::new_checked(&mut bytes[..]).unwrap();
        assert_eq!(f.ethertype(), ETHERTYPE_ARP);
        f.set_dst_addr([1, 2, 3, 4, 5, 6]);
        f.set_src_addr([7, 8, 9, 10, 11, 12]);
        f.set_ethertype(ETHERTYPE_IPV4);
        assert_eq!(f.payload().len(), 2);
        assert_eq!(bytes[..14], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 8, 0]);
    }

    #[test]
    fn short_buffers_are_refused() {
        assert_eq!(
            EthernetFrame::new_checked(&[0u8; 13][..]).err(),
            Some(DropReason::Truncated)
        );
    }
}
