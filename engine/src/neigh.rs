//! Neighbours: IPv4 address → MAC and port, learned from ARP. One table for all workers
//! (SPEC §1: resolved in one place and published): an ARP answer reaches one queue, and every
//! worker must be able to send to that neighbour. Writers (a worker that saw an ARP packet
//! with news) publish a new immutable map with one atomic swap; each worker reads a snapshot
//! it refreshes once per round, so a lookup is a plain hash-map read; each snapshot carries a
//! generation, so a flow keeps the neighbour it resolved until the table changes.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::Arc;

use arc_swap::ArcSwap;

use crate::wire::Mac;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Neighbour {
    pub mac: Mac,
    pub port: usize,
}

type Map = HashMap<Ipv4Addr, Neighbour, AddrHashing>;

/// One published state of the table. Its generation grows with each change, so a flow can
/// keep the neighbour it resolved and know when to look again.
#[derive(Clone, Debug)]
struct Published {
    generation: u32,
    map: Map,
}

/// Hashing for per-packet lookups of addresses (neighbours, the vserver of a new flow): a keyed
/// multiply-xorshift (SipHash, std's default, cost a lookup some 15 ns). The key is drawn once per process, so
/// addresses an attacker picks do not collide by design; the table is bounded anyway.
#[derive(Clone, Debug)]
pub struct AddrHashing {
    key: u64,
}

impl Default for AddrHashing {
    fn default() -> Self {
        static KEY: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        let key = *KEY.get_or_init(|| {
            use std::hash::BuildHasher;
            std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64) | 1
        });
        Self { key }
    }
}

impl std::hash::BuildHasher for AddrHashing {
    type Hasher = AddrHasher;
    fn build_hasher(&self) -> AddrHasher {
        AddrHasher { state: self.key }
    }
}

#[derive(Debug)]
pub struct AddrHasher {
    state: u64,
}

impl std::hash::Hasher for AddrHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u8(b);
        }
    }

    fn write_u8(&mut self, b: u8) {
        self.state = (self.state ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn write_u16(&mut self, v: u16) {
        self.write_u32(u32::from(v));
    }

    fn write_u32(&mut self, v: u32) {
        self.state = (self.state ^ u64::from(v)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn finish(&self) -> u64 {
        let x = self.state;
        (x ^ (x >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ (x >> 32)
    }
}

/// The neighbours every worker shares.
#[derive(Debug)]
pub struct Neighbours {
    map: ArcSwap<Published>,
    capacity: usize,
}

impl Neighbours {
    pub fn new(capacity: usize) -> Self {
        Self {
            map: ArcSwap::from_pointee(Published {
                generation: 1,
                map: Map::default(),
            }),
            capacity,
        }
    }

    /// Learns or changes an entry; a full table keeps its entries (no eviction storm). An
    /// answer that changes nothing publishes nothing.
    pub fn learn(&self, ip: Ipv4Addr, mac: Mac, port: usize) {
        let entry = Neighbour { mac, port };
        self.map.rcu(|current| {
            let known = current.map.get(&ip);
            if known == Some(&entry) || (known.is_none() && current.map.len() >= self.capacity) {
                return Arc::clone(current);
            }
            let mut map = Map::clone(&current.map);
            map.insert(ip, entry);
            Arc::new(Published {
                // Never 0, which a flow's cache holds before its first lookup.
                generation: current.generation.wrapping_add(1).max(1),
                map,
            })
        });
    }

    fn snapshot(&self) -> Arc<Published> {
        self.map.load_full()
    }

    pub fn len(&self) -> usize {
        self.map.load().map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A worker's view of the shared table: a snapshot, refreshed between rounds and after
/// the worker's own changes.
#[derive(Debug)]
pub struct NeighbourView {
    shared: Arc<Neighbours>,
    current: Arc<Published>,
}

impl NeighbourView {
    pub fn new(shared: Arc<Neighbours>) -> Self {
        let current = shared.snapshot();
        Self { shared, current }
    }

    #[inline]
    pub fn get(&self, ip: Ipv4Addr) -> Option<Neighbour> {
        self.current.map.get(&ip).copied()
    }

    /// The generation of the snapshot this view reads: what [`NeighbourView::get`] answers
    /// changes only with it (never 0).
    #[inline]
    pub fn generation(&self) -> u32 {
        self.current.generation
    }

    /// Learns through the shared table; the change is visible here at once.
    pub fn learn(&mut self, ip: Ipv4Addr, mac: Mac, port: usize) {
        if self.get(ip) != Some(Neighbour { mac, port }) {
            self.shared.learn(ip, mac, port);
            self.refresh();
        }
    }

    /// Picks up what other workers learned.
    pub fn refresh(&mut self) {
        if !Arc::ptr_eq(&self.current, &self.shared.map.load()) {
            self.current = self.shared.snapshot();
        }
    }

    pub fn shared(&self) -> &Arc<Neighbours> {
        &self.shared
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 11);
    const B: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 12);

    #[test]
    fn what_one_worker_learns_the_others_see_after_a_refresh() {
        let shared = Arc::new(Neighbours::new(1));
        let mut w0 = NeighbourView::new(Arc::clone(&shared));
        let mut w1 = NeighbourView::new(Arc::clone(&shared));
        w0.learn(A, [1; 6], 0);
        assert_eq!(
            w0.get(A),
            Some(Neighbour {
                mac: [1; 6],
                port: 0
            })
        );
        assert_eq!(w1.get(A), None, "until its next round");
        w1.refresh();
        assert_eq!(w1.get(A).map(|n| n.mac), Some([1; 6]));
        // Full: a new neighbour is not learned, a known one still moves.
        w1.learn(B, [2; 6], 1);
        assert_eq!(w1.get(B), None);
        w1.learn(A, [3; 6], 1);
        w0.refresh();
        assert_eq!(
            w0.get(A),
            Some(Neighbour {
                mac: [3; 6],
                port: 1
            })
        );
        assert_eq!(shared.len(), 1);
    }
}
