//! The neighbour table: IPv4 address → MAC and port, learned from ARP.
//!
//! Until the monitor core owns neighbour resolution (SPEC §1), each worker keeps its own and
//! asks with ARP requests when a next hop is unknown.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use crate::wire::Mac;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Neighbour {
    pub mac: Mac,
    pub port: usize,
    pub seen: u64,
}

#[derive(Debug)]
pub struct NeighbourTable {
    entries: HashMap<Ipv4Addr, Neighbour>,
    capacity: usize,
}

impl NeighbourTable {
    pub fn new(capacity: usize) -> Self {
        Self {
            entries: HashMap::with_capacity(capacity),
            capacity,
        }
    }

    #[inline]
    pub fn get(&self, ip: Ipv4Addr) -> Option<Neighbour> {
        self.entries.get(&ip).copied()
    }

    /// Learns or refreshes an entry; a full table keeps its entries (no eviction storm).
    pub fn learn(&mut self, ip: Ipv4Addr, mac: Mac, port: usize, now: u64) {
        if self.entries.len() < self.capacity || self.entries.contains_key(&ip) {
            self.entries.insert(
                ip,
                Neighbour {
                    mac,
                    port,
                    seen: now,
                },
            );
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
