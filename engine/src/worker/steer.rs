//! Which worker owns a frame's flow, decided from its headers alone so every worker computes
//! the same answer without looking into another's table: a reply to a SNIP by its SNAT port
//! (each worker owns a range), a client's frame by a hash of its 5-tuple (the owner creates
//! the flow, whichever queue the SYN reached). A frame that lands elsewhere is handed to its
//! owner ([`super::handoff`]).

use crate::nat::Snat;
use crate::wire::Ipv4;

/// One worker's place among the workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Steering {
    pub id: usize,
    pub workers: usize,
}

impl Steering {
    /// The owner of a frame that needs a flow lookup; `snip_bound`: addressed to a SNIP.
    /// Frames for the monitor core's ports belong to whichever worker has them.
    #[inline]
    pub fn owner(&self, ip: &Ipv4, snip_bound: bool) -> usize {
        if self.workers <= 1 {
            return self.id;
        }
        if snip_bound {
            return Snat::owner_of(ip.dst_port, self.workers).unwrap_or(self.id);
        }
        (client_hash(ip) % self.workers as u64) as usize
    }
}

/// The 5-tuple of a client's frame, mixed: the same for every frame of a flow.
#[inline]
pub fn client_hash(ip: &Ipv4) -> u64 {
    let addrs = (u64::from(u32::from(ip.src)) << 32) | u64::from(u32::from(ip.dst));
    let ports = (u64::from(ip.src_port) << 24)
        | (u64::from(ip.dst_port) << 8)
        | u64::from(ip.proto.number());
    crate::lb::mix64(addrs ^ crate::lb::mix64(ports))
}
