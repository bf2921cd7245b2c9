//! Which worker owns a frame's flow, decided from its headers alone so every worker computes
//! the same answer without looking into another's table. Two ways:
//!
//! * **Ranges** (any NIC): a reply to a SNIP by its SNAT port (each worker owns a range), a
//!   client's frame by a hash of its 5-tuple (the owner creates the flow, whichever queue
//!   the SYN reached). Frames land anywhere and are handed to their owner
//!   ([`super::handoff`]).
//! * **RSS** (a NIC whose Toeplitz key and indirection table the engine knows): the owner is
//!   the worker of the queue the NIC picks, and a worker chooses SNAT ports whose reply
//!   4-tuple hashes to its own queue, so every frame arrives at its owner.

use std::net::Ipv4Addr;
use std::sync::Arc;

use crate::nat::{MONITOR_PORTS, Snat};
use crate::rss::Rss;
use crate::wire::Ipv4;

/// One worker's place among the workers, and how owners are found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Steering {
    pub id: usize,
    pub workers: usize,
    /// The NIC's RSS (queue `w` is worker `w`'s), for RSS-aware steering.
    pub rss: Option<Arc<Rss>>,
}

impl Steering {
    /// Steering by SNAT port ranges and a 5-tuple hash.
    pub fn ranges(id: usize, workers: usize) -> Self {
        Self {
            id,
            workers,
            rss: None,
        }
    }

    /// The owner of a frame that needs a flow lookup; `snip_bound`: addressed to a SNIP.
    /// Frames for the monitor core's ports belong to whichever worker has them.
    #[inline]
    pub fn owner(&self, ip: &Ipv4, snip_bound: bool) -> usize {
        if self.workers <= 1 || (snip_bound && MONITOR_PORTS.contains(&ip.dst_port)) {
            return self.id;
        }
        if let Some(rss) = &self.rss {
            return rss
                .queue_of(ip.src, ip.dst, ip.src_port, ip.dst_port)
                .map_or(self.id, |q| q as usize % self.workers);
        }
        if snip_bound {
            return Snat::owner_of(ip.dst_port, self.workers).unwrap_or(self.id);
        }
        (client_hash(ip) % self.workers as u64) as usize
    }

    /// With RSS: whether a reply from `service` to `snip:port` reaches this worker's queue
    /// (always true without RSS: the port ranges decide).
    #[inline]
    pub fn reply_comes_here(&self, service: (Ipv4Addr, u16), snip: Ipv4Addr, port: u16) -> bool {
        self.rss.as_ref().is_none_or(|rss| {
            rss.queue_of(service.0, snip, service.1, port)
                .is_some_and(|q| q as usize % self.workers == self.id)
        })
    }
}

impl Steering {
    /// Whether a reply from `service` to `dst:port` is this worker's, by the same rule
    /// [`Steering::owner`] applies to replies (USIP keeping a client's port asks this).
    #[inline]
    pub fn reply_is_mine(&self, service: (Ipv4Addr, u16), dst: Ipv4Addr, port: u16) -> bool {
        if self.workers <= 1 {
            return true;
        }
        if self.rss.is_some() {
            return self.reply_comes_here(service, dst, port);
        }
        Snat::owner_of(port, self.workers) == Some(self.id)
    }
}

/// The 5-tuple of a client's frame, mixed: the same for every frame of a flow. It must not be
/// the flow index's hash ([`crate::flow::FlowKey::hash`]): the owner is this modulo the
/// workers, so with the same hash every key a worker owns would start in 1/K of its index's
/// buckets (all even ones, with two workers). The index hashes with folded multiplies since
/// 5fc656a; this keeps splitmix64 (the tests below check the two stay independent).
#[inline]
pub fn client_hash(ip: &Ipv4) -> u64 {
    let addrs = (u64::from(u32::from(ip.src)) << 32) | u64::from(u32::from(ip.dst));
    let ports = (u64::from(ip.src_port) << 24)
        | (u64::from(ip.dst_port) << 8)
        | u64::from(ip.proto.number());
    crate::lb::mix64(addrs ^ crate::lb::mix64(ports))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::FlowKey;
    use crate::wire::Proto;

    fn client_frame(src: Ipv4Addr, src_port: u16) -> Ipv4 {
        Ipv4 {
            src,
            dst: Ipv4Addr::new(198, 18, 0, 100),
            src_port,
            dst_port: 80,
            ..Ipv4::default()
        }
    }

    /// The keys one worker owns start all over its flow index, not in a fraction of it: the
    /// owner's hash and the index's are independent. Were they the same hash, the keys of
    /// worker `w` of `k` would all start in buckets `w` modulo `k`.
    #[test]
    fn a_workers_keys_start_in_every_part_of_its_index() {
        // A grid as real clients make: 256 addresses, 64 ports each.
        let frames: Vec<Ipv4> = (0..=255u8)
            .flat_map(|host| {
                (0..64u16).map(move |p| client_frame(Ipv4Addr::new(198, 19, 7, host), 30_000 + p))
            })
            .collect();
        for workers in [2u64, 3, 4, 8] {
            let mut starts = vec![vec![0usize; workers as usize]; workers as usize];
            for ip in &frames {
                let owner = (client_hash(ip) % workers) as usize;
                let key = FlowKey::new(ip.src, ip.src_port, ip.dst, ip.dst_port, Proto::Tcp);
                starts[owner][(key.hash() % workers) as usize] += 1;
            }
            let fair = frames.len() / (workers * workers) as usize;
            for (owner, parts) in starts.iter().enumerate() {
                assert!(
                    parts.iter().all(|&n| n > fair * 3 / 4),
                    "{workers} workers: worker {owner}'s keys start {parts:?} (fair {fair})"
                );
            }
        }
    }
}
