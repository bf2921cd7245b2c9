//! The TCP header (RFC 9293).

use super::{DropReason, be16, be32, set_be16, set_be32};

mod field {
    use super::super::Field;
    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    /// Both ports, as they appear in checksum adjustments.
    pub const PORTS: Field = 0..4;
    pub const SEQ_NUM: Field = 4..8;
    pub const ACK_NUM: Field = 8..12;
    pub const DATA_OFFSET: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WINDOW: Field = 14..16;
    pub const CHECKSUM: Field = 16..18;
    pub const MIN_HEADER_END: usize = 20;
}

pub const MIN_HEADER_LEN: usize = field::MIN_HEADER_END;
pub const FLAG_FIN: u8 = 0x01;
pub const FLAG_SYN: u8 = 0x02;
pub const FLAG_RST: u8 = 0x04;
pub const FLAG_ACK: u8 = 0x10;
const OPTION_END: u8 = 0;
const OPTION_NOP: u8 = 1;
pub const OPTION_MSS: u8 = 2;
const OPTION_SACK_PERMITTED: u8 = 4;
const OPTION_SACK: u8 = 5;
const OPTION_TIMESTAMPS: u8 = 8;

/// Where every common stack puts the timestamps option once connected: first, after two
/// NOPs, so TSval and TSecr are aligned. Taken without walking the options.
const USUAL_TIMESTAMPS: [u8; 4] = [OPTION_NOP, OPTION_NOP, OPTION_TIMESTAMPS, 10];
/// The TSval's offset in that layout (TSecr follows).
pub const USUAL_TSVAL_AT: usize = field::MIN_HEADER_END + 4;
/// Where that layout's option ends: the header is at least this long.
pub const USUAL_TIMESTAMPS_END: usize = USUAL_TSVAL_AT + 8;

/// Whether a TCP header's options start with the timestamps in their usual layout.
#[inline(always)]
pub fn has_usual_timestamps(header: &[u8; USUAL_TIMESTAMPS_END]) -> bool {
    usize::from(header[field::DATA_OFFSET] >> 4) * 4 >= USUAL_TIMESTAMPS_END
        && header[field::MIN_HEADER_END..USUAL_TSVAL_AT] == USUAL_TIMESTAMPS
}

/// Where Linux puts the timestamps in its SYN and SYN+ACK: after the MSS (4 bytes) and SACK
/// permitted (2), so a new flow's SYN is read without walking the options either.
const LINUX_SYN_TSVAL_AT: usize = field::MIN_HEADER_END + 8;
const LINUX_SYN_TIMESTAMPS_END: usize = LINUX_SYN_TSVAL_AT + 8;

/// Whether a TCP header's options start as Linux's SYN does: MSS, SACK permitted, timestamps.
#[inline(always)]
fn has_linux_syn_timestamps(header: &[u8; LINUX_SYN_TIMESTAMPS_END]) -> bool {
    const AFTER_MSS: [u8; 4] = [OPTION_SACK_PERMITTED, 2, OPTION_TIMESTAMPS, 10];
    let at = field::MIN_HEADER_END;
    usize::from(header[field::DATA_OFFSET] >> 4) * 4 >= LINUX_SYN_TIMESTAMPS_END
        && header[at..at + 2] == [OPTION_MSS, 4]
        && header[at + 4..at + 8] == AFTER_MSS
}

super::view!(
    /// A byte view of a TCP segment.
    TcpPacket
);

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// `Truncated` when the buffer cannot hold the header its data offset gives;
    /// `Malformed` for a data offset below 20 bytes.
    pub fn check_len(&self) -> Result<(), DropReason> {
        let len = self.buffer.as_ref().len();
        if len < field::MIN_HEADER_END {
            return Err(DropReason::Truncated);
        }
        let header = self.header_len();
        if header < MIN_HEADER_LEN {
            return Err(DropReason::Malformed);
        }
        if len < header {
            return Err(DropReason::Truncated);
        }
        Ok(())
    }

    pub fn src_port(&self) -> u16 {
        be16(self.buffer.as_ref(), field::SRC_PORT)
    }

    pub fn dst_port(&self) -> u16 {
        be16(self.buffer.as_ref(), field::DST_PORT)
    }

    /// Both ports as they stand in the header.
    pub fn ports_bytes(&self) -> [u8; 4] {
        let b = &self.buffer.as_ref()[field::PORTS];
        [b[0], b[1], b[2], b[3]]
    }

    pub fn seq_number(&self) -> u32 {
        be32(self.buffer.as_ref(), field::SEQ_NUM)
    }

    pub fn ack_number(&self) -> u32 {
        be32(self.buffer.as_ref(), field::ACK_NUM)
    }

    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::DATA_OFFSET] >> 4) * 4
    }

    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    pub fn window_len(&self) -> u16 {
        be16(self.buffer.as_ref(), field::WINDOW)
    }

    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// Where the timestamps option's TSval starts (TSecr follows it), if the segment has the
    /// option (kind 8, length 10).
    pub fn timestamps_at(&self) -> Option<usize> {
        let b = self.buffer.as_ref();
        if let Some(header) = b.first_chunk::<USUAL_TIMESTAMPS_END>()
            && has_usual_timestamps(header)
        {
            return Some(USUAL_TSVAL_AT);
        }
        if let Some(header) = b.first_chunk::<LINUX_SYN_TIMESTAMPS_END>()
            && has_linux_syn_timestamps(header)
        {
            return Some(LINUX_SYN_TSVAL_AT);
        }
        self.option_at(OPTION_TIMESTAMPS, 10)
    }

    /// The maximum segment size a SYN offers (option kind 2).
    pub fn mss(&self) -> Option<u16> {
        let at = self.option_at(OPTION_MSS, 4)?;
        let b = self.buffer.as_ref();
        Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
    }

    /// Where the SACK option's blocks start (kind 5; each block two 32-bit sequence numbers,
    /// left and right edge) and how many it holds, if the segment has one.
    pub fn sack_blocks_at(&self) -> Option<(usize, usize)> {
        let (at, len) = self.find_option(OPTION_SACK, |len| len >= 10 && (len - 2) % 8 == 0)?;
        Some((at, (len - 2) / 8))
    }

    /// Where the value of option `kind` of length `want` starts, if the segment has it.
    fn option_at(&self, want_kind: u8, want_len: usize) -> Option<usize> {
        self.find_option(want_kind, |len| len == want_len)
            .map(|(at, _)| at)
    }

    /// Where the value of option `want_kind` starts and its whole length, for the first
    /// such option whose length `fits`.
    fn find_option(&self, want_kind: u8, fits: impl Fn(usize) -> bool) -> Option<(usize, usize)> {
        let b = self.buffer.as_ref();
        let end = self.header_len().min(b.len());
        let mut at = field::MIN_HEADER_END;
        while at < end {
            match b[at] {
                OPTION_END => return None,
                OPTION_NOP => at += 1,
                kind => {
                    let len = usize::from(*b.get(at + 1)?);
                    if len < 2 || at + len > end {
                        return None;
                    }
                    if kind == want_kind && fits(len) {
                        return Some((at + 2, len));
                    }
                    at += len;
                }
            }
        }
        None
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
    pub fn set_src_port(&mut self, port: u16) {
        set_be16(self.buffer.as_mut(), field::SRC_PORT, port);
    }

    pub fn set_dst_port(&mut self, port: u16) {
        set_be16(self.buffer.as_mut(), field::DST_PORT, port);
    }

    pub fn set_seq_number(&mut self, n: u32) {
        set_be32(self.buffer.as_mut(), field::SEQ_NUM, n);
    }

    pub fn set_ack_number(&mut self, n: u32) {
        set_be32(self.buffer.as_mut(), field::ACK_NUM, n);
    }

    /// Header length in bytes (a multiple of 4, at most 60).
    pub fn set_header_len(&mut self, len: usize) {
        self.buffer.as_mut()[field::DATA_OFFSET] = ((len / 4) as u8) << 4;
    }

    pub fn set_flags(&mut self, flags: u8) {
        self.buffer.as_mut()[field::FLAGS] = flags;
    }

    pub fn set_window_len(&mut self, window: u16) {
        set_be16(self.buffer.as_mut(), field::WINDOW, window);
    }

    pub fn set_checksum(&mut self, sum: u16) {
        set_be16(self.buffer.as_mut(), field::CHECKSUM, sum);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The layouts found without a walk are found where the walk finds them, and no
        /// header is read otherwise than the walk reads it.
        #[test]
        fn timestamps_are_found_where_walking_the_options_finds_them(
            layout in 0usize..3,
            words in 0usize..=10,
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 40),
        ) {
            let mut b = vec![0u8; 20];
            b[12] = ((5 + words) as u8) << 4;
            b.extend_from_slice(&bytes);
            let prefix: &[u8] = match layout {
                0 => &[OPTION_NOP, OPTION_NOP, OPTION_TIMESTAMPS, 10],
                1 => &[OPTION_MSS, 4, 5, 0xb4, OPTION_SACK_PERMITTED, 2, OPTION_TIMESTAMPS, 10],
                _ => &[],
            };
            b[20..20 + prefix.len()].copy_from_slice(prefix);
            let tcp = TcpPacket::new_unchecked(&b[..]);
            proptest::prop_assert_eq!(tcp.timestamps_at(), tcp.option_at(OPTION_TIMESTAMPS, 10));
        }
    }
}
