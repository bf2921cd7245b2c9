//! Fixed maps from IPv4 addresses (is a frame's destination one of ours?) and from an address,
//! protocol and port (which vserver listens there?) to small indexes, read per frame and per
//! new flow. Built once per configuration; open addressing over a power-of-two table at
//! most half full, so a lookup is one multiply and, nearly always, one cache line — where a
//! scan of the configured addresses grew with every vserver.

use std::net::Ipv4Addr;

#[derive(Clone, Debug, Default)]
pub struct AddrIndex(KeyIndex);

impl AddrIndex {
    /// Maps each address to its position in `addrs`; an address given twice keeps its first.
    pub fn new(addrs: impl IntoIterator<Item = Ipv4Addr>) -> Self {
        Self(KeyIndex::new(
            addrs
                .into_iter()
                .enumerate()
                .map(|(at, a)| (u64::from(u32::from(a)), at)),
        ))
    }

    /// The position `addr` had in the addresses the index was built from.
    #[inline]
    pub fn get(&self, addr: Ipv4Addr) -> Option<usize> {
        self.0.get(u64::from(u32::from(addr)))
    }
}

/// A fixed map from 64-bit keys (an address, or an address with a protocol and port) to
/// small values.
#[derive(Clone, Debug)]
pub struct KeyIndex {
    /// `(key, value + 1)`; 0 marks a free bucket.
    buckets: Box<[(u64, u32)]>,
    shift: u32,
}

impl Default for KeyIndex {
    fn default() -> Self {
        Self::new(std::iter::empty())
    }
}

impl KeyIndex {
    /// Maps each key to its value; a key given twice keeps its first. Values past
    /// `u32::MAX - 1` are left out.
    pub fn new(entries: impl IntoIterator<Item = (u64, usize)>) -> Self {
        let entries: Vec<(u64, u32)> = entries
            .into_iter()
            .filter_map(|(key, value)| Some((key, u32::try_from(value).ok()?.checked_add(1)?)))
            .collect();
        let size = (entries.len() * 2).next_power_of_two().max(2);
        let mut index = Self {
            buckets: vec![(0, 0); size].into_boxed_slice(),
            shift: 64 - size.trailing_zeros(),
        };
        for (key, value) in entries {
            let mut i = index.home(key);
            loop {
                match index.buckets[i] {
                    (_, 0) => {
                        index.buckets[i] = (key, value);
                        break;
                    }
                    (k, _) if k == key => break,
                    _ => i = (i + 1) & index.mask(),
                }
            }
        }
        index
    }

    #[inline]
    fn mask(&self) -> usize {
        self.buckets.len() - 1
    }

    /// Fibonacci hashing: the top bits of the key times 2^64/φ.
    #[inline]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    /// The value `key` was given.
    #[inline]
    pub fn get(&self, key: u64) -> Option<usize> {
        let mut i = self.home(key);
        loop {
            let (k, value) = *self.buckets.get(i)?;
            if value == 0 {
                return None;
            }
            if k == key {
                return Some(value as usize - 1);
            }
            i = (i + 1) & self.mask();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn finds_what_a_scan_finds(
            addrs in prop::collection::vec(0u32..64, 0..40),
            probes in prop::collection::vec(0u32..80, 0..40),
        ) {
            let addrs: Vec<Ipv4Addr> = addrs.into_iter().map(Ipv4Addr::from).collect();
            let index = AddrIndex::new(addrs.iter().copied());
            for probe in probes.into_iter().map(Ipv4Addr::from).chain(addrs.iter().copied()) {
                prop_assert_eq!(index.get(probe), addrs.iter().position(|&a| a == probe));
            }
        }
    }

    proptest! {
        /// Wide keys (an address with a protocol and port above bit 32) hash and compare
        /// whole, and a value of 0 is stored like any other.
        #[test]
        fn finds_wide_keys_a_scan_finds(
            keys in prop::collection::vec((0u64..8, 0u64..4).prop_map(|(h, l)| h << 40 | l), 0..40),
            probes in prop::collection::vec((0u64..10, 0u64..6).prop_map(|(h, l)| h << 40 | l), 0..40),
        ) {
            let index = KeyIndex::new(keys.iter().copied().enumerate().map(|(at, k)| (k, at)));
            for probe in probes.into_iter().chain(keys.iter().copied()) {
                prop_assert_eq!(index.get(probe), keys.iter().position(|&k| k == probe));
            }
        }
    }

    #[test]
    fn an_empty_index_finds_nothing() {
        let index = AddrIndex::default();
        assert_eq!(index.get(Ipv4Addr::UNSPECIFIED), None);
        assert_eq!(index.get(Ipv4Addr::new(198, 18, 0, 1)), None);
    }
}
