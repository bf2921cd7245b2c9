//! A worker's flow table: fixed capacity, no allocation after creation, no locks.
//!
//! Each flow is reachable by two keys: the client side (client → VIP) and the server side
//! (service → SNIP:NAT port). Flows live in a slab; an open-addressing index (linear probing,
//! backward-shift deletion) maps keys to slab slots. When the slab is full, new flows are
//! refused; existing flows are never evicted early.

use std::net::Ipv4Addr;

use crate::lb::ServiceId;
use crate::wire::{Mac, Proto, TcpFlags};

/// The addresses, ports and protocol a packet is looked up by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FlowKey {
    pub src: u32,
    pub dst: u32,
    pub src_port: u16,
    pub dst_port: u16,
    pub proto: u8,
}

impl FlowKey {
    pub fn new(src: Ipv4Addr, src_port: u16, dst: Ipv4Addr, dst_port: u16, proto: Proto) -> Self {
        Self {
            src: src.into(),
            dst: dst.into(),
            src_port,
            dst_port,
            proto: proto.number(),
        }
    }

    #[inline]
    fn hash(&self) -> u64 {
        let a = (u64::from(self.src) << 32) | u64::from(self.dst);
        let b = (u64::from(self.src_port) << 24)
            | (u64::from(self.dst_port) << 8)
            | u64::from(self.proto);
        crate::lb::mix64(a ^ crate::lb::mix64(b))
    }
}

/// Which way a packet travels relative to its flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// From the client to the VIP.
    Client,
    /// From the service back to the SNIP.
    Server,
}

/// TCP progress, enough for idle timeouts (NetScaler-like zombie cleanup, not a full stack).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpProgress {
    pub server_answered: bool,
    pub client_fin: bool,
    pub server_fin: bool,
    pub reset: bool,
    /// Timing the first response; see [`TcpProgress::response`].
    pub timing: Timing,
}

/// Where a connection's response timing stands. Compact: flows are many.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Timing {
    /// No data from the client yet.
    #[default]
    Idle,
    /// The client's first data went to the service at this time (the worker's clock, ms,
    /// wrapping: responses take far less than 49 days).
    Awaiting(u32),
    /// Timed, or not to be timed: later requests would measure the client's pauses too.
    Done,
}

impl TcpProgress {
    pub fn update(&mut self, side: Side, flags: TcpFlags) {
        match side {
            Side::Client => self.client_fin |= flags.fin,
            Side::Server => {
                self.server_answered = true;
                self.server_fin |= flags.fin;
            }
        }
        self.reset |= flags.rst;
    }

    /// The response time of the connection's first request, once: from the client's first
    /// data segment forwarded to the service's first data segment back (LEASTRESPONSETIME).
    pub fn response(&mut self, side: Side, flags: TcpFlags, now_ms: u64) -> Option<u64> {
        if !flags.data {
            return None;
        }
        match (side, self.timing) {
            (_, Timing::Done) | (Side::Client, Timing::Awaiting(_)) => None,
            (Side::Client, Timing::Idle) => {
                self.timing = Timing::Awaiting(now_ms as u32);
                None
            }
            (Side::Server, Timing::Awaiting(at)) => {
                self.timing = Timing::Done;
                Some(u64::from((now_ms as u32).wrapping_sub(at)))
            }
            // A server that speaks first (SMTP, FTP banners) is no request's answer.
            (Side::Server, Timing::Idle) => {
                self.timing = Timing::Done;
                None
            }
        }
    }

    pub fn is_closed(&self) -> bool {
        self.reset || (self.client_fin && self.server_fin)
    }
}

/// Idle timeouts in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// A SYN the service never answered.
    pub embryonic: u64,
    /// Established TCP and UDP sessions (the service's client idle timeout).
    pub idle: u64,
    /// After one FIN.
    pub half_closed: u64,
    /// After both FINs or a RST: long enough for the last ACK and retransmissions.
    pub closed: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flow {
    pub proto: Proto,
    pub client: (Ipv4Addr, u16),
    pub vip: (Ipv4Addr, u16),
    /// The source toward the service: a SNIP and a port of ours, or with USIP the client's
    /// own address (and port, or a port of ours).
    pub snip: (Ipv4Addr, u16),
    /// The SNIP whose port pool `snip`'s port came from; unspecified when the client's own
    /// port is kept (nothing to give back).
    pub pool: Ipv4Addr,
    pub service_addr: (Ipv4Addr, u16),
    pub service: ServiceId,
    /// The vserver's stable id (see [`crate::tables::RtVserver::id`]).
    pub vserver: u32,
    /// The next hop toward the service (the service itself, or a gateway).
    pub hop: Ipv4Addr,
    /// Where replies to the client go: the port and MAC the client's first packet came from.
    pub client_port: usize,
    pub client_mac: Mac,
    pub tcp: TcpProgress,
    /// Counted in the service's active transactions (until closed or expired).
    pub active: bool,
    pub timeouts: Timeouts,
    pub last_seen: u64,
    /// Added to the client's TCP timestamps toward the service (and taken off the echoes
    /// coming back), so every SNAT tuple sees timestamps that only grow: a service still
    /// holding the tuple in TIME_WAIT accepts the next SYN on it (RFC 7323 §5, PAWS).
    /// `None` when the client sent none.
    pub ts_shift: Option<u32>,
}

impl Flow {
    pub fn client_key(&self) -> FlowKey {
        FlowKey::new(
            self.client.0,
            self.client.1,
            self.vip.0,
            self.vip.1,
            self.proto,
        )
    }

    pub fn server_key(&self) -> FlowKey {
        FlowKey::new(
            self.service_addr.0,
            self.service_addr.1,
            self.snip.0,
            self.snip.1,
            self.proto,
        )
    }

    /// When this flow expires if nothing more is seen.
    pub fn deadline(&self) -> u64 {
        let t = &self.timeouts;
        let idle = match self.proto {
            Proto::Tcp if self.tcp.is_closed() => t.closed,
            Proto::Tcp if self.tcp.client_fin || self.tcp.server_fin => t.half_closed,
            Proto::Tcp if !self.tcp.server_answered => t.embryonic,
            _ => t.idle,
        };
        self.last_seen.saturating_add(idle)
    }
}

/// A table of `n` copies of `value` in memory the kernel is asked to back with huge pages
/// (transparent huge pages, `madvise` mode on Debian): a flow table of a million flows spans
/// hundreds of megabytes, and with 4 KB pages nearly every lookup of a busy appliance missed
/// the TLB as well as the cache. The advice comes before the first write, so the pages are
/// huge from the start; where the kernel says no, the table works the same.
fn huge_table<T: Clone>(n: usize, value: T) -> Box<[T]> {
    let mut table: Vec<T> = Vec::with_capacity(n);
    let bytes = n * std::mem::size_of::<T>();
    let start = table.as_mut_ptr() as usize;
    let (first_page, end_page) = ((start + 4095) & !4095, (start + bytes) & !4095);
    if end_page > first_page {
        // SAFETY: the range lies inside this vector's allocation (page-aligned inwards), which
        // nothing has touched yet; MADV_HUGEPAGE only changes how the kernel backs it.
        unsafe {
            libc::madvise(
                first_page as *mut libc::c_void,
                end_page - first_page,
                libc::MADV_HUGEPAGE,
            )
        };
    }
    table.resize(n, value);
    table.into_boxed_slice()
}

/// A hint to the CPU to load `value`'s cache line; nothing on targets without one.
#[inline(always)]
fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: SSE is part of the x86_64 baseline, and a prefetch never faults nor changes
        // anything but the cache; the address is that of a live reference.
        unsafe { _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    key: FlowKey,
    /// `EMPTY` when the bucket is free.
    slot: u32,
    side: Side,
}

const EMPTY: u32 = u32::MAX;

/// Why a flow could not be added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InsertError {
    Full,
    /// One of its keys is already in the table.
    Duplicate,
}

#[derive(Debug)]
pub struct FlowTable {
    slots: Box<[Option<Flow>]>,
    free: Vec<u32>,
    index: Box<[Entry]>,
    mask: usize,
    len: usize,
    /// Where the incremental expiry sweep continues.
    sweep: usize,
}

impl FlowTable {
    /// A table for `capacity` flows (both keys of each, at most half full).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        let buckets = (capacity * 4).next_power_of_two();
        Self {
            slots: huge_table(capacity, None),
            free: (0..capacity as u32).rev().collect(),
            index: huge_table(
                buckets,
                Entry {
                    key: FlowKey::default(),
                    slot: EMPTY,
                    side: Side::Client,
                },
            ),
            mask: buckets - 1,
            len: 0,
            sweep: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    fn find(&self, key: &FlowKey) -> Result<usize, usize> {
        let mut i = key.hash() as usize & self.mask;
        loop {
            let e = &self.index[i];
            if e.slot == EMPTY {
                return Err(i);
            }
            if e.key == *key {
                return Ok(i);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Starts loading `key`'s index bucket into the cache. A burst does this for all its
    /// frames before looking any up, so the cache misses of a big table overlap instead of
    /// coming one after the other.
    #[inline]
    pub fn prefetch(&self, key: &FlowKey) {
        let i = key.hash() as usize & self.mask;
        if let Some(e) = self.index.get(i) {
            prefetch(e);
        }
    }

    /// Starts loading a flow (looked up, to be forwarded later in the burst).
    #[inline]
    pub fn prefetch_flow(&self, slot: u32) {
        if let Some(f) = self.slots.get(slot as usize) {
            prefetch(f);
        }
    }

    /// The flow slot and the side a packet with `key` travels.
    #[inline]
    pub fn lookup(&self, key: &FlowKey) -> Option<(u32, Side)> {
        self.find(key)
            .ok()
            .map(|i| (self.index[i].slot, self.index[i].side))
    }

    pub fn get(&self, slot: u32) -> Option<&Flow> {
        self.slots.get(slot as usize)?.as_ref()
    }

    pub fn get_mut(&mut self, slot: u32) -> Option<&mut Flow> {
        self.slots.get_mut(slot as usize)?.as_mut()
    }

    pub fn insert(&mut self, flow: Flow) -> Result<u32, InsertError> {
        let (ck, sk) = (flow.client_key(), flow.server_key());
        let (Err(ci), Err(_)) = (self.find(&ck), self.find(&sk)) else {
            return Err(InsertError::Duplicate);
        };
        let slot = self.free.pop().ok_or(InsertError::Full)?;
        self.slots[slot as usize] = Some(flow);
        self.index[ci] = Entry {
            key: ck,
            slot,
            side: Side::Client,
        };
        // Find the server bucket after placing the client key: it may have taken that bucket.
        if let Err(si) = self.find(&sk) {
            self.index[si] = Entry {
                key: sk,
                slot,
                side: Side::Server,
            };
        }
        self.len += 1;
        Ok(slot)
    }

    /// Removes a flow and returns it.
    pub fn remove(&mut self, slot: u32) -> Option<Flow> {
        let flow = self.slots.get_mut(slot as usize)?.take()?;
        self.unindex(&flow.client_key());
        self.unindex(&flow.server_key());
        self.free.push(slot);
        self.len -= 1;
        Some(flow)
    }

    /// Backward-shift deletion keeps every probe chain unbroken without tombstones.
    fn unindex(&mut self, key: &FlowKey) {
        let Ok(mut hole) = self.find(key) else { return };
        let mut i = hole;
        loop {
            i = (i + 1) & self.mask;
            let e = self.index[i];
            if e.slot == EMPTY {
                break;
            }
            let home = e.key.hash() as usize & self.mask;
            // Move e into the hole if its home is not in (hole, i] cyclically.
            let between = if hole <= i {
                hole < home && home <= i
            } else {
                hole < home || home <= i
            };
            if !between {
                self.index[hole] = e;
                hole = i;
            }
        }
        self.index[hole].slot = EMPTY;
    }

    /// Examines up to `budget` slots from where the last sweep stopped and removes the flows
    /// whose deadline passed, handing each to `expired`.
    pub fn expire(&mut self, now: u64, budget: usize, expired: impl FnMut(Flow)) {
        self.sweep(budget, |f| f.deadline() <= now, expired);
    }

    /// Examines up to `budget` slots from where the last sweep stopped and removes the flows
    /// `remove_if` picks, handing each to `removed`.
    pub fn sweep(
        &mut self,
        budget: usize,
        mut remove_if: impl FnMut(&Flow) -> bool,
        mut removed: impl FnMut(Flow),
    ) {
        let n = self.slots.len();
        for _ in 0..budget.min(n) {
            let slot = self.sweep as u32;
            self.sweep = (self.sweep + 1) % n;
            if self.get(slot).is_some_and(&mut remove_if)
                && let Some(f) = self.remove(slot)
            {
                removed(f);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(i: u16) -> Flow {
        Flow {
            proto: Proto::Tcp,
            client: (Ipv4Addr::new(198, 18, 9, (i % 250) as u8), 10_000 + i),
            vip: (Ipv4Addr::new(198, 18, 0, 100), 80),
            snip: (Ipv4Addr::new(198, 18, 0, 2), 20_000 + i),
            pool: Ipv4Addr::new(198, 18, 0, 2),
            service_addr: (Ipv4Addr::new(198, 18, 0, 11), 80),
            service: 0,
            vserver: 0,
            hop: Ipv4Addr::new(198, 18, 0, 11),
            client_port: 0,
            client_mac: [2, 0, 0, 0, 0, 1],
            tcp: TcpProgress::default(),
            active: true,
            timeouts: Timeouts {
                embryonic: 10,
                idle: 100,
                half_closed: 50,
                closed: 5,
            },
            last_seen: 0,
            ts_shift: None,
        }
    }

    #[test]
    fn both_keys_find_the_flow_and_removal_keeps_chains() {
        let mut t = FlowTable::new(64);
        let slots: Vec<u32> = (0..64).map(|i| t.insert(flow(i)).unwrap()).collect();
        assert_eq!(t.insert(flow(100)), Err(InsertError::Full));
        assert_eq!(t.insert(flow(3)).unwrap_err(), InsertError::Duplicate);
        for i in (0..64).step_by(2) {
            t.remove(slots[i]).unwrap();
        }
        for i in 0..64u16 {
            let f = flow(i);
            let hit = t.lookup(&f.client_key());
            if i % 2 == 0 {
                assert!(hit.is_none() && t.lookup(&f.server_key()).is_none());
            } else {
                assert_eq!(hit, Some((slots[i as usize], Side::Client)));
                assert_eq!(
                    t.lookup(&f.server_key()),
                    Some((slots[i as usize], Side::Server))
                );
            }
        }
        assert_eq!(t.len(), 32);
    }

    #[test]
    fn the_first_response_of_a_connection_is_timed_once() {
        let data = TcpFlags {
            ack: true,
            data: true,
            ..TcpFlags::default()
        };
        let ack = TcpFlags {
            ack: true,
            ..TcpFlags::default()
        };
        let mut p = TcpProgress::default();
        assert_eq!(
            p.response(Side::Client, ack, 1),
            None,
            "the handshake's ACK"
        );
        assert_eq!(p.response(Side::Client, data, 10), None);
        assert_eq!(
            p.response(Side::Client, data, 12),
            None,
            "more of the request"
        );
        assert_eq!(
            p.response(Side::Server, ack, 20),
            None,
            "an ACK is no answer"
        );
        assert_eq!(p.response(Side::Server, data, 35), Some(25));
        assert_eq!(p.response(Side::Client, data, 40), None);
        assert_eq!(
            p.response(Side::Server, data, 90),
            None,
            "only the first request"
        );
        let mut banner = TcpProgress::default();
        assert_eq!(banner.response(Side::Server, data, 5), None);
        assert_eq!(banner.response(Side::Client, data, 6), None);
        assert_eq!(banner.response(Side::Server, data, 9), None);
    }

    #[test]
    fn expiry_follows_tcp_progress() {
        let mut t = FlowTable::new(8);
        let a = t.insert(flow(1)).unwrap(); // embryonic: 10 ms
        let b = t.insert(flow(2)).unwrap();
        t.get_mut(b).unwrap().tcp.update(
            Side::Server,
            TcpFlags {
                syn: true,
                ack: true,
                ..TcpFlags::default()
            },
        );
        let mut gone = Vec::new();
        t.expire(10, 8, |f| gone.push(f.client.1));
        assert_eq!(gone, [10_001]);
        assert!(t.get(a).is_none() && t.get(b).is_some());
        t.get_mut(b).unwrap().tcp.update(
            Side::Client,
            TcpFlags {
                rst: true,
                ..TcpFlags::default()
            },
        );
        t.expire(10, 8, |f| gone.push(f.client.1));
        assert_eq!(
            gone.len(),
            2,
            "a reset flow lingers only the closed timeout (5 ms)"
        );
    }

    #[test]
    fn random_insert_remove_matches_a_model() {
        let mut t = FlowTable::new(200);
        let mut model = std::collections::HashMap::new();
        let mut r = 1u64;
        for _ in 0..20_000 {
            r = r.wrapping_mul(6364136223846793005).wrapping_add(1);
            let i = ((r >> 33) % 400) as u16;
            let f = flow(i);
            if let Some(slot) = model.remove(&i) {
                assert_eq!(t.remove(slot).map(|f| f.client.1), Some(f.client.1));
            } else if let Ok(slot) = t.insert(f) {
                model.insert(i, slot);
            }
            assert_eq!(t.len(), model.len());
        }
        for (i, slot) in &model {
            assert_eq!(
                t.lookup(&flow(*i).server_key()),
                Some((*slot, Side::Server))
            );
        }
    }
}
