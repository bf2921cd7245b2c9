//! Hash methods: weighted rendezvous (highest random weight) hashing. Each member scores
//! every key; the highest score wins. Removing a member moves only the keys it held, and a
//! member of weight 2 holds twice the keys of a member of weight 1.

use std::net::IpAddr;

use super::{HashKey, Member, ServiceView};

/// The fields of a new flow that hash methods read. Addresses are kept as 128-bit values
/// (IPv4 mapped) so IPv6 needs no new type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FlowKey {
    pub src: u128,
    pub dst: u128,
    pub src_port: u16,
    pub dst_port: u16,
}

impl FlowKey {
    pub fn new(src: IpAddr, src_port: u16, dst: IpAddr, dst_port: u16) -> Self {
        let wide = |ip: IpAddr| match ip {
            IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
            IpAddr::V6(v6) => u128::from(v6),
        };
        Self {
            src: wide(src),
            dst: wide(dst),
            src_port,
            dst_port,
        }
    }

    /// The key's hash for a method, with IPv4 addresses masked by `mask`.
    pub fn hash(&self, key: HashKey, mask: u32) -> u64 {
        let masked = |a: u128| {
            if a >> 32 == 0xffff {
                a & !u128::from(!mask)
            } else {
                a
            }
        };
        let ip = |a: u128| mix(a as u64 ^ mix((a >> 64) as u64));
        match key {
            HashKey::SourceIp => ip(masked(self.src)),
            HashKey::DestinationIp => ip(masked(self.dst)),
            HashKey::SrcIpDestIp => {
                mix(ip(masked(self.src)) ^ ip(masked(self.dst)).rotate_left(32))
            }
            HashKey::SrcIpSrcPort => mix(ip(masked(self.src)) ^ u64::from(self.src_port)),
        }
    }
}

/// A 64-bit finalizer (splitmix64): every input bit affects every output bit.
#[inline]
pub(crate) fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The hash identity of a service: its address and (with `usePortForHashLb`) port, or its
/// `-hashId`.
pub fn member_seed(addr: IpAddr, port: Option<u16>, hash_id: Option<u64>) -> u64 {
    if let Some(id) = hash_id {
        return mix(id ^ 0x5eed);
    }
    let a = FlowKey::new(addr, 0, addr, 0).src;
    mix(mix(a as u64 ^ mix((a >> 64) as u64)) ^ u64::from(port.unwrap_or(0)))
}

pub(super) fn select<V: ServiceView>(
    members: &[Member],
    equal_weights: bool,
    view: &V,
    key: u64,
) -> Option<usize> {
    let mut best: Option<(usize, f64, u64)> = None;
    for (i, m) in members.iter().enumerate() {
        if !view.is_candidate(m.service) {
            continue;
        }
        let h = mix(key ^ m.seed);
        // Equal weights: the raw hash orders members exactly as the weighted score would.
        let score = if equal_weights {
            0.0
        } else {
            // u in (0, 1]; score = w / -ln(u) gives each member a share proportional to w.
            let u = ((h >> 11) + 1) as f64 / (1u64 << 53) as f64;
            f64::from(m.weight.max(1)) / (-u.ln()).max(f64::MIN_POSITIVE)
        };
        let better = match best {
            None => true,
            Some((_, bs, bh)) => score > bs || (score == bs && h > bh),
        };
        if better {
            best = Some((i, score, h));
        }
    }
    best.map(|(i, ..)| i)
}
