//! The Internet checksum (RFC 1071): sums, the full checksum, incremental updates (RFC 1624)
//! and the IPv4 pseudo-header of TCP and UDP.

use std::net::Ipv4Addr;

/// One's-complement sum of `data` as 16-bit big-endian words (an odd last byte padded with
/// zero), folded to 16 bits. The sum is independent of byte order (RFC 1071 §2(B)): words are
/// added in the machine's order, four bytes at a time, and the result swapped once.
#[inline]
pub fn sum(data: &[u8]) -> u64 {
    let (even, odd) = data.split_at(data.len() & !1);
    let mut acc: u64 = 0;
    // Four bytes a step, widened to 64 bits: a plain reduction the compiler vectorizes.
    let mut words = even.chunks_exact(4);
    for w in &mut words {
        acc += u64::from(u32::from_ne_bytes([w[0], w[1], w[2], w[3]]));
    }
    for w in words.remainder().chunks_exact(2) {
        acc += u64::from(u16::from_ne_bytes([w[0], w[1]]));
    }
    let big_endian = u16::from_be(fold(acc));
    u64::from(big_endian) + odd.first().map_or(0, |b| u64::from(*b) << 8)
}

/// Folds a sum to 16 bits (end-around carry). Four fixed steps, enough for any 64-bit sum
/// (2^32 and 2^16 are both 1 modulo 0xffff): a loop's varying trip count was a mispredicted
/// branch on every forwarded frame.
#[inline]
pub fn fold(s: u64) -> u16 {
    let s = (s & 0xffff_ffff) + (s >> 32); // < 2^33
    let s = (s & 0xffff) + (s >> 16); // < 2^18
    let s = (s & 0xffff) + (s >> 16); // <= 0x10002
    let s = (s & 0xffff) + (s >> 16); // <= 0xffff
    s as u16
}

/// The checksum of `data`: the complement of its folded sum.
#[inline]
pub fn checksum(data: &[u8]) -> u16 {
    !fold(sum(data))
}

/// The sum of the IPv4 pseudo-header TCP and UDP checksums cover, unfolded: its 16-bit
/// words added as numbers (what [`sum`] of the 12 header bytes folds to).
#[inline]
pub fn pseudo_header(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, length: u16) -> u64 {
    let (src, dst) = (u64::from(u32::from(src)), u64::from(u32::from(dst)));
    (src >> 16)
        + (src & 0xffff)
        + (dst >> 16)
        + (dst & 0xffff)
        + u64::from(protocol)
        + u64::from(length)
}

/// RFC 1624 eq. 3, `HC' = ~(~HC + ~m + m')`, word by word: the checksum after the `old`
/// bytes (even length) became `new`.
#[inline]
pub fn adjust(checksum: u16, old: &[u8], new: &[u8]) -> u16 {
    let word = |c: &[u8]| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]);
    let mut s = u64::from(!checksum);
    for (o, n) in old.chunks(2).zip(new.chunks(2)) {
        s += u64::from(!word(o)) + u64::from(word(n));
    }
    !fold(s)
}

/// What a change of header words does to a checksum (RFC 1624 eq. 3): `Σ(~m + m')` over the
/// 16-bit words changed. Deltas add, so one rewrite of several fields adjusts each checksum
/// once; the pseudo-header's addresses count toward both the IP and the transport checksum.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Delta(u64);

impl Delta {
    /// A 16-bit word `old` became `new`.
    #[inline]
    pub fn word(old: u16, new: u16) -> Self {
        Self(u64::from(!old) + u64::from(new))
    }

    /// A 32-bit field (two words, network order) `old` became `new`. Added whole: a 32-bit
    /// number is the sum of its two words modulo 0xffff (2^16 is 1), which is all a fold keeps,
    /// and `!old` is the two words' complements side by side.
    #[inline]
    pub fn double(old: u32, new: u32) -> Self {
        Self(u64::from(!old) + u64::from(new))
    }

    /// A change already summed and folded to 16 bits (kept where 16 bits are dear).
    #[inline]
    pub fn from_folded(folded: u16) -> Self {
        Self(u64::from(folded))
    }

    /// The change's sum, to fold and keep ([`Delta::from_folded`] takes it back).
    #[inline]
    pub fn sum(self) -> u64 {
        self.0
    }

    #[inline]
    pub fn plus(self, other: Self) -> Self {
        Self(self.0 + other.0)
    }

    /// The change of the same bytes one position further (at an odd offset): each moved to
    /// the other half of its word, which multiplies the sum by 256 modulo 0xffff.
    #[inline]
    pub fn swapped(self) -> Self {
        Self(u64::from(fold(self.0).swap_bytes()))
    }

    /// The checksum after the change.
    #[inline]
    pub fn apply(self, checksum: u16) -> u16 {
        !fold(u64::from(!checksum) + self.0)
    }
}

/// Whether two checksums are the same number in one's complement (0x0000 and 0xffff are
/// both zero).
#[inline]
pub fn same(a: u16, b: u16) -> bool {
    a == b || (a | b == 0xffff && (a == 0 || b == 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delta_adjusts_as_recomputing_would() {
        let mut header = [
            0x45u8, 0, 0, 60, 0x1c, 0x46, 0x40, 0, 64, 6, 0, 0, 198, 18, 0, 50, 198, 18, 0, 100,
        ];
        let sum = checksum(&header);
        let old_src = u32::from_be_bytes([198, 18, 0, 50]);
        let new_src = u32::from_be_bytes([198, 18, 0, 2]);
        let d = Delta::double(old_src, new_src).plus(Delta::word(0x4006, 0x3f06));
        header[12..16].copy_from_slice(&new_src.to_be_bytes());
        header[8] = 63;
        assert_eq!(d.apply(sum), checksum(&header));
        assert_eq!(Delta::default().apply(sum), sum, "no change, same checksum");
    }

    /// The example of RFC 1071 §3.
    #[test]
    fn sums_the_rfc_1071_example() {
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(sum(&data)), 0xddf2);
        assert_eq!(checksum(&data), !0xddf2);
    }

    proptest::proptest! {
        #[test]
        fn folds_as_end_around_carry_does(s: u64) {
            let mut looped = s;
            while looped >> 16 != 0 {
                looped = (looped & 0xffff) + (looped >> 16);
            }
            proptest::prop_assert_eq!(fold(s), looped as u16);
        }
    }

    proptest::proptest! {
        #[test]
        fn the_pseudo_header_sums_as_its_twelve_bytes_do(
            src: u32,
            dst: u32,
            protocol: u8,
            length: u16,
        ) {
            let mut header = [0u8; 12];
            header[..4].copy_from_slice(&src.to_be_bytes());
            header[4..8].copy_from_slice(&dst.to_be_bytes());
            header[9] = protocol;
            header[10..].copy_from_slice(&length.to_be_bytes());
            let pseudo = pseudo_header(src.into(), dst.into(), protocol, length);
            proptest::prop_assert_eq!(fold(pseudo), naive(&header));
        }
    }

    proptest::proptest! {
        /// A 32-bit field's change added whole adjusts a checksum as its two words' changes do.
        #[test]
        fn a_double_word_change_is_its_two_words_changes(old: u32, new: u32, sum: u16) {
            let words = Delta::word((old >> 16) as u16, (new >> 16) as u16)
                .plus(Delta::word(old as u16, new as u16));
            proptest::prop_assert_eq!(Delta::double(old, new).apply(sum), words.apply(sum));
        }
    }

    #[test]
    fn folds_the_extremes() {
        for s in [
            0,
            1,
            0xffff,
            0x1_0000,
            0x1_fffe,
            u64::MAX,
            u64::MAX - 1,
            0xffff_ffff,
        ] {
            let mut looped = s;
            while looped >> 16 != 0 {
                looped = (looped & 0xffff) + (looped >> 16);
            }
            assert_eq!(fold(s), looped as u16, "{s:#x}");
        }
    }

    /// The textbook sum, word by word.
    fn naive(data: &[u8]) -> u16 {
        let mut s: u64 = 0;
        for c in data.chunks(2) {
            s += u64::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
        }
        fold(s)
    }

    #[test]
    fn eight_bytes_at_a_time_equals_word_by_word() {
        let mut x: u32 = 0x1234_5678;
        let data: Vec<u8> = (0..3000)
            .map(|_| {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (x >> 24) as u8
            })
            .collect();
        for len in (0..64).chain([1459, 1460, 1461, 2999, 3000]) {
            assert_eq!(fold(sum(&data[..len])), naive(&data[..len]), "{len} bytes");
        }
        assert_eq!(fold(sum(&[0xff; 1500])), naive(&[0xff; 1500]));
    }

    #[test]
    fn odd_lengths_pad_with_zero() {
        assert_eq!(fold(sum(&[0x12, 0x34, 0x56])), 0x1234 + 0x5600);
        assert_eq!(fold(sum(&[0xab])), 0xab00);
        assert_eq!(fold(sum(&[])), 0);
    }

    #[test]
    fn adjusting_equals_recomputing() {
        let mut data =
            *b"\x45\x00\x00\x3c\x1c\x46\x40\x00\x40\x06\x00\x00\xac\x10\x0a\x63\xac\x10\x0a\x0c";
        let before = checksum(&data);
        let old = [data[12], data[13], data[14], data[15]];
        data[12..16].copy_from_slice(&[198, 18, 0, 2]);
        let adjusted = adjust(before, &old, &data[12..16]);
        assert!(same(adjusted, checksum(&data)));
    }

    #[test]
    fn both_zeros_are_zero() {
        assert!(same(0, 0xffff) && same(0xffff, 0) && same(7, 7));
        assert!(!same(0, 7) && !same(0xfffe, 0));
    }
}
