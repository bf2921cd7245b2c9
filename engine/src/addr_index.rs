//! A fixed map from IPv4 addresses to small indexes, read once per frame (is the destination
//! one of ours?). Built once per configuration; open addressing over a power-of-two table at
//! most half full, so a lookup is one multiply and, nearly always, one cache line — where a
//! scan of the configured addresses grew with every vserver.

use std::net::Ipv4Addr;

#[derive(Clone, Debug)]
pub struct AddrIndex {
    /// `(address, index + 1)`; 0 marks a free bucket.
    buckets: Box<[(u32, u32)]>,
    shift: u32,
}

impl Default for AddrIndex {
    fn default() -> Self {
        Self::new(std::iter::empty())
    }
}

impl AddrIndex {
    /// Maps each address to its position in `addrs`; an address given twice keeps its first.
    pub fn new(addrs: impl IntoIterator<Item = Ipv4Addr>) -> Self {
        let addrs: Vec<u32> = addrs.into_iter().map(u32::from).collect();
        let size = (addrs.len() * 2).next_power_of_two().max(2);
        let mut index = Self {
            buckets: vec![(0, 0); size].into_boxed_slice(),
            shift: 64 - size.trailing_zeros(),
        };
        for (at, &addr) in addrs.iter().enumerate() {
            let Ok(value) = u32::try_from(at + 1) else {
                break;
            };
            let mut i = index.home(addr);
            loop {
                match index.buckets[i] {
                    (_, 0) => {
                        index.buckets[i] = (addr, value);
                        break;
                    }
                    (a, _) if a == addr => break,
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

    /// Fibonacci hashing: the top bits of the address times 2^64/φ.
    #[inline]
    fn home(&self, addr: u32) -> usize {
        (u64::from(addr).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    /// The position `addr` had in the addresses the index was built from.
    #[inline]
    pub fn get(&self, addr: Ipv4Addr) -> Option<usize> {
        let addr = u32::from(addr);
        let mut i = self.home(addr);
        loop {
            let (a, value) = *self.buckets.get(i)?;
            if value == 0 {
                return None;
            }
            if a == addr {
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

    #[test]
    fn an_empty_index_finds_nothing() {
        let index = AddrIndex::default();
        assert_eq!(index.get(Ipv4Addr::UNSPECIFIED), None);
        assert_eq!(index.get(Ipv4Addr::new(198, 18, 0, 1)), None);
    }
}
