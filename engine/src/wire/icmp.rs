//! ICMPv4 (RFC 792): the header, and the identifier of echo messages.

use super::{DropReason, be16, set_be16};

mod field {
    use super::super::Field;
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Field = 2..4;
    pub const IDENT: Field = 4..6;
    pub const HEADER_END: usize = 8;
}

pub const TYPE_ECHO_REPLY: u8 = 0;
pub const TYPE_ECHO_REQUEST: u8 = 8;

super::view!(
    /// A byte view of an ICMPv4 message.
    IcmpPacket,
    fixed field::HEADER_END
);

impl<T: AsRef<[u8]>> IcmpPacket<T> {
    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE]
    }

    pub fn msg_code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }

    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// The identifier of an echo request or reply.
    pub fn echo_ident(&self) -> u16 {
        be16(self.buffer.as_ref(), field::IDENT)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> IcmpPacket<T> {
    pub fn set_msg_type(&mut self, t: u8) {
        self.buffer.as_mut()[field::TYPE] = t;
    }

    pub fn set_checksum(&mut self, sum: u16) {
        set_be16(self.buffer.as_mut(), field::CHECKSUM, sum);
    }
}
