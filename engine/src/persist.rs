//! SOURCEIP persistence: which service a client IP went to, shared by every worker (a client's
//! connections reach different workers, since the NIC spreads them by their ports).
//!
//! One table per vserver, lock-free: each slot is one `AtomicU64` packing the client address,
//! the service and when the entry expires, so a reader never sees half an entry. A client
//! lives in one of the four slots after its hash; a new one takes a free or expired slot, or
//! else the one expiring first. Like NetScaler's persistence table it is bounded: when it is
//! full, the oldest sessions go first. Two workers recording different clients into the same
//! slot at once keep the last one; the other client is simply balanced afresh next time.

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::lb::ServiceId;

/// Slots probed per client.
const WAYS: usize = 4;
/// Expiry is kept in units of this many seconds (16 bits: 72 hours, above the 24 h maximum
/// timeout).
const TICK_S: u64 = 4;

/// Sessions a vserver with SOURCEIP persistence keeps (8 bytes each).
pub const SESSIONS_PER_VSERVER: usize = 1 << 16;

/// The persistence sessions of one vserver.
#[derive(Debug)]
pub struct PersistTable {
    slots: Box<[AtomicU64]>,
}

/// `[client address: 32][service: 16][expiry tick: 16]`; 0 is an empty slot.
fn pack(client: Ipv4Addr, service: ServiceId, expiry_tick: u16) -> u64 {
    (u64::from(u32::from(client)) << 32)
        | (u64::from(service as u16) << 16)
        | u64::from(expiry_tick)
}

fn client_of(entry: u64) -> u32 {
    (entry >> 32) as u32
}

fn service_of(entry: u64) -> ServiceId {
    ServiceId::from((entry >> 16) as u16)
}

/// Whether an entry expiring at `expiry` has expired at tick `now` (16-bit wrapping time: an
/// expiry up to half the range ahead is in the future).
fn expired(expiry: u16, now: u16) -> bool {
    expiry.wrapping_sub(now) == 0 || expiry.wrapping_sub(now) > u16::MAX / 2
}

fn tick(now_s: u64) -> u16 {
    (now_s / TICK_S) as u16
}

impl PersistTable {
    /// A table of at least `capacity` sessions (rounded up to a power of two).
    pub fn new(capacity: usize) -> Self {
        let n = capacity.max(WAYS).next_power_of_two();
        Self {
            slots: (0..n).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Services are kept in 16 bits: a table only serves ids below this.
    pub const MAX_SERVICES: usize = 1 << 16;

    fn home(&self, client: Ipv4Addr) -> usize {
        // Fibonacci hashing spreads neighbouring addresses over the table.
        let h = u64::from(u32::from(client)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> 32) as usize & (self.slots.len() - 1)
    }

    fn ways(&self, client: Ipv4Addr) -> impl Iterator<Item = &AtomicU64> {
        let home = self.home(client);
        let mask = self.slots.len() - 1;
        (0..WAYS).map(move |k| &self.slots[(home + k) & mask])
    }

    /// The service `client` persists to at `now_s`, if its session has not expired.
    #[inline]
    pub fn lookup(&self, client: Ipv4Addr, now_s: u64) -> Option<ServiceId> {
        let now = tick(now_s);
        self.ways(client)
            .map(|s| s.load(Relaxed))
            .find(|&e| e != 0 && client_of(e) == u32::from(client))
            .filter(|&e| !expired(e as u16, now))
            .map(service_of)
    }

    /// Records (or renews) `client` → `service` until `now_s + timeout_s`.
    #[inline]
    pub fn record(&self, client: Ipv4Addr, service: ServiceId, now_s: u64, timeout_s: u64) {
        if service as usize >= Self::MAX_SERVICES {
            return;
        }
        let now = tick(now_s);
        // Round up so an entry lives at least its timeout (and at least one tick).
        let expiry = tick(now_s + timeout_s.max(1) + TICK_S - 1);
        let entry = pack(client, service, expiry);
        let mut victim: Option<(&AtomicU64, u16)> = None;
        for slot in self.ways(client) {
            let e = slot.load(Relaxed);
            if e != 0 && client_of(e) == u32::from(client) {
                slot.store(entry, Relaxed);
                return;
            }
            // Free or expired slots first, else the one whose session ends soonest.
            let left = if e == 0 || expired(e as u16, now) {
                0
            } else {
                (e as u16).wrapping_sub(now)
            };
            if victim.is_none_or(|(_, l)| left < l) {
                victim = Some((slot, left));
            }
        }
        if let Some((slot, _)) = victim {
            slot.store(entry, Relaxed);
        }
    }

    /// The sessions alive at `now_s`: client, service, seconds left (for `show`).
    pub fn sessions(&self, now_s: u64) -> Vec<(Ipv4Addr, ServiceId, u64)> {
        let now = tick(now_s);
        self.slots
            .iter()
            .map(|s| s.load(Relaxed))
            .filter(|&e| e != 0 && !expired(e as u16, now))
            .map(|e| {
                let left = u64::from((e as u16).wrapping_sub(now)) * TICK_S;
                (Ipv4Addr::from(client_of(e)), service_of(e), left)
            })
            .collect()
    }

    /// Sessions that have not expired at `now_s` (for `show`).
    pub fn live(&self, now_s: u64) -> usize {
        let now = tick(now_s);
        self.slots
            .iter()
            .map(|s| s.load(Relaxed))
            .filter(|&e| e != 0 && !expired(e as u16, now))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(n: u32) -> Ipv4Addr {
        Ipv4Addr::from(0xC613_0000 + n)
    }

    #[test]
    fn a_client_keeps_its_service_until_the_timeout() {
        let t = PersistTable::new(64);
        assert_eq!(t.lookup(ip(1), 100), None);
        t.record(ip(1), 7, 100, 120);
        assert_eq!(t.lookup(ip(1), 100), Some(7));
        assert_eq!(t.lookup(ip(1), 219), Some(7));
        assert_eq!(t.lookup(ip(1), 100 + 120 + TICK_S), None, "expired");
        assert_eq!(t.lookup(ip(2), 150), None, "another client");
        // Renewing moves the expiry on and may change the service.
        t.record(ip(1), 9, 200, 120);
        assert_eq!(t.lookup(ip(1), 310), Some(9));
        assert_eq!(t.live(310), 1);
        let sessions = t.sessions(310);
        assert_eq!(sessions.len(), 1);
        assert_eq!((sessions[0].0, sessions[0].1), (ip(1), 9));
        assert!((8..=16).contains(&sessions[0].2), "{sessions:?}");
    }

    #[test]
    fn a_full_table_keeps_the_newest_sessions_and_every_client_its_own() {
        let t = PersistTable::new(256);
        for n in 0..1000u32 {
            t.record(ip(n), n % 50, 1000 + u64::from(n), 600);
        }
        // The newest clients are all there with their own services; nobody got another's.
        for n in 900..1000u32 {
            assert_eq!(t.lookup(ip(n), 2000), Some(n % 50), "client {n}");
        }
        for n in 0..1000u32 {
            assert!(t.lookup(ip(n), 2000).is_none_or(|s| s == n % 50));
        }
        assert!(t.live(2000) <= 256);
    }

    #[test]
    fn expiry_survives_the_wrap_of_its_16_bit_clock() {
        let t = PersistTable::new(16);
        let near_wrap = (u64::from(u16::MAX) - 2) * TICK_S;
        t.record(ip(3), 4, near_wrap, 60);
        assert_eq!(t.lookup(ip(3), near_wrap + 30), Some(4));
        assert_eq!(t.lookup(ip(3), near_wrap + 60 + TICK_S), None);
    }
}
