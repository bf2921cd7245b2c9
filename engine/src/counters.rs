//! Per-service counters, sharded per core and lock-free.
//!
//! Each core owns one cache-line-aligned `Slot` per service and is its only writer, so
//! updates are plain relaxed load-then-store (no atomic read-modify-write, no shared line);
//! readers sum the slots of all cores. Packets and bytes are also kept in a sliding window of
//! [`WINDOW_SECS`] one-second buckets, for LEASTPACKETS and LEASTBANDWIDTH. Time is passed
//! in as whole seconds; nothing here reads a clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};

/// The window of LEASTPACKETS and LEASTBANDWIDTH, in seconds.
pub const WINDOW_SECS: usize = 14;

#[derive(Debug, Default)]
struct Bucket {
    packets: AtomicU64,
    bytes: AtomicU64,
}

/// One core's counters for one service. 128-byte alignment keeps neighbouring slots off
/// each other's cache lines (and off the adjacent-line prefetcher's pair).
#[derive(Debug, Default)]
#[repr(align(128))]
struct Slot {
    active: AtomicI64,
    /// Flows in this core's table that name the service (open or lingering after close):
    /// its id may go to another service only when every core's count is zero.
    flows: AtomicI64,
    /// New flows sent to the service (NetScaler's "hits").
    hits: AtomicU64,
    packets: AtomicU64,
    bytes: AtomicU64,
    window_packets: AtomicU64,
    window_bytes: AtomicU64,
    /// Moving average (1/8 per sample) of the responses timed on this core, µs
    /// (LEASTRESPONSETIME), and how many were timed.
    response_us: AtomicU64,
    responses: AtomicU64,
    /// The second the newest bucket belongs to.
    head: AtomicU64,
    buckets: [Bucket; WINDOW_SECS],
}

/// Single-writer increment: only the owning core writes a slot.
#[inline]
fn bump(a: &AtomicU64, by: u64) {
    a.store(a.load(Relaxed).wrapping_add(by), Relaxed);
}

#[inline]
fn drop_by(a: &AtomicU64, by: u64) {
    a.store(a.load(Relaxed).wrapping_sub(by), Relaxed);
}

impl Slot {
    /// Moves the window forward to `now`, emptying the buckets that fell out of it.
    #[inline]
    fn advance(&self, now: u64) {
        let head = self.head.load(Relaxed);
        if now <= head {
            return;
        }
        let steps = (now - head).min(WINDOW_SECS as u64);
        for k in 1..=steps {
            let b = &self.buckets[((head + k) % WINDOW_SECS as u64) as usize];
            drop_by(&self.window_packets, b.packets.load(Relaxed));
            drop_by(&self.window_bytes, b.bytes.load(Relaxed));
            b.packets.store(0, Relaxed);
            b.bytes.store(0, Relaxed);
        }
        self.head.store(now, Relaxed);
    }

    #[inline]
    fn add(&self, now: u64, packets: u64, bytes: u64) {
        self.advance(now);
        // A late timestamp (now < head) counts in the newest bucket.
        let b = &self.buckets[(self.head.load(Relaxed) % WINDOW_SECS as u64) as usize];
        bump(&b.packets, packets);
        bump(&b.bytes, bytes);
        bump(&self.window_packets, packets);
        bump(&self.window_bytes, bytes);
        bump(&self.packets, packets);
        bump(&self.bytes, bytes);
    }
}

#[derive(Debug)]
struct CoreSlots {
    slots: Box<[Slot]>,
    /// New flows per vserver id (a service bound to several vservers counts in each).
    vserver_hits: Box<[AtomicU64]>,
    /// The configuration generation this core works with.
    generation: AtomicU64,
}

/// What a service's (or vserver's) cumulative counters stood at when its id was given to
/// it: a reused id starts from zero. Written by the control plane only.
#[derive(Debug, Default)]
struct Base {
    hits: AtomicU64,
    packets: AtomicU64,
    bytes: AtomicU64,
    responses: AtomicU64,
}

/// The counters of every service on every core.
#[derive(Debug)]
pub struct Counters {
    cores: Box<[CoreSlots]>,
    services: usize,
    base: Box<[Base]>,
    vserver_base: Box<[AtomicU64]>,
}

/// Summed counters of one service.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServiceTotals {
    pub active: u64,
    pub hits: u64,
    pub packets: u64,
    pub bytes: u64,
    pub window_packets: u64,
    pub window_bytes: u64,
}

impl Counters {
    /// Counters for `services` services on `cores` cores, and the one writer of each core.
    pub fn new(cores: usize, services: usize) -> (Arc<Self>, Vec<CoreWriter>) {
        let counters = Arc::new(Self {
            cores: (0..cores)
                .map(|_| CoreSlots {
                    slots: (0..services).map(|_| Slot::default()).collect(),
                    // As many vservers as services at most: a vserver without one serves nothing.
                    vserver_hits: (0..services).map(|_| AtomicU64::new(0)).collect(),
                    generation: AtomicU64::new(0),
                })
                .collect(),
            services,
            base: (0..services).map(|_| Base::default()).collect(),
            vserver_base: (0..services).map(|_| AtomicU64::new(0)).collect(),
        });
        let writers = (0..cores)
            .map(|core| CoreWriter {
                counters: Arc::clone(&counters),
                core,
                last_tick: 0,
                tally: vec![Tally::default(); services].into_boxed_slice(),
                tallied: Vec::with_capacity(services),
            })
            .collect();
        (counters, writers)
    }

    pub fn services(&self) -> usize {
        self.services
    }

    /// The cores counting (each has a slot per service).
    pub fn cores(&self) -> usize {
        self.cores.len()
    }

    fn sum(&self, service: u32, f: impl Fn(&Slot) -> u64) -> u64 {
        self.cores
            .iter()
            .filter_map(|c| c.slots.get(service as usize))
            .map(f)
            .fold(0, u64::wrapping_add)
    }

    /// Open flows of a service, over all cores.
    #[inline]
    pub fn active(&self, service: u32) -> u64 {
        let sum: i64 = self
            .cores
            .iter()
            .filter_map(|c| c.slots.get(service as usize))
            .map(|s| s.active.load(Relaxed))
            .sum();
        sum.max(0) as u64
    }

    /// Packets in the window, as of each core's last update or tick.
    #[inline]
    pub fn window_packets(&self, service: u32) -> u64 {
        self.sum(service, |s| s.window_packets.load(Relaxed))
    }

    #[inline]
    pub fn window_bytes(&self, service: u32) -> u64 {
        self.sum(service, |s| s.window_bytes.load(Relaxed))
    }

    fn raw_vserver_hits(&self, vserver: u32) -> u64 {
        self.cores
            .iter()
            .filter_map(|c| c.vserver_hits.get(vserver as usize))
            .map(|h| h.load(Relaxed))
            .fold(0, u64::wrapping_add)
    }

    /// New flows of a vserver, over all cores.
    pub fn vserver_hits(&self, vserver: u32) -> u64 {
        let base = self
            .vserver_base
            .get(vserver as usize)
            .map_or(0, |b| b.load(Relaxed));
        self.raw_vserver_hits(vserver).wrapping_sub(base)
    }

    pub fn totals(&self, service: u32) -> ServiceTotals {
        let base = |f: fn(&Base) -> &AtomicU64| {
            self.base
                .get(service as usize)
                .map_or(0, |b| f(b).load(Relaxed))
        };
        ServiceTotals {
            active: self.active(service),
            hits: self
                .sum(service, |s| s.hits.load(Relaxed))
                .wrapping_sub(base(|b| &b.hits)),
            packets: self
                .sum(service, |s| s.packets.load(Relaxed))
                .wrapping_sub(base(|b| &b.packets)),
            bytes: self
                .sum(service, |s| s.bytes.load(Relaxed))
                .wrapping_sub(base(|b| &b.bytes)),
            window_packets: self.window_packets(service),
            window_bytes: self.window_bytes(service),
        }
    }

    /// The service's response time as the data path measured it (LEASTRESPONSETIME): the
    /// cores' moving averages, each weighted by its samples (up to 16); `None` until one
    /// was timed since the id was given to the service.
    pub fn response_time_us(&self, service: u32) -> Option<u64> {
        let base = self
            .base
            .get(service as usize)
            .map_or(0, |b| b.responses.load(Relaxed));
        let timed = self.sum(service, |s| s.responses.load(Relaxed));
        if timed.wrapping_sub(base) == 0 {
            return None;
        }
        let (weighted, weights) = self
            .cores
            .iter()
            .filter_map(|c| c.slots.get(service as usize))
            .map(|s| {
                let w = s.responses.load(Relaxed).min(16);
                (
                    u128::from(s.response_us.load(Relaxed)) * u128::from(w),
                    u128::from(w),
                )
            })
            .fold((0u128, 0u128), |(a, b), (x, y)| (a + x, b + y));
        (weights > 0).then(|| (weighted / weights) as u64)
    }

    /// Flows naming `service` in any core's table.
    pub fn flows(&self, service: u32) -> u64 {
        let sum: i64 = self
            .cores
            .iter()
            .filter_map(|c| c.slots.get(service as usize))
            .map(|s| s.flows.load(Relaxed))
            .sum();
        sum.max(0) as u64
    }

    /// The oldest configuration generation a core still works with.
    pub fn oldest_generation(&self) -> u64 {
        self.cores
            .iter()
            .map(|c| c.generation.load(Relaxed))
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Whether `service`'s id can go to another service: no flow names it and its window
    /// is empty (selection would read stale packets and bytes otherwise).
    pub fn service_idle(&self, service: u32) -> bool {
        self.flows(service) == 0
            && self.window_packets(service) == 0
            && self.window_bytes(service) == 0
    }

    /// Starts a reused service id from zero (the control plane, for an idle id).
    pub fn reset_service(&self, service: u32) {
        if let Some(b) = self.base.get(service as usize) {
            b.hits
                .store(self.sum(service, |s| s.hits.load(Relaxed)), Relaxed);
            b.packets
                .store(self.sum(service, |s| s.packets.load(Relaxed)), Relaxed);
            b.bytes
                .store(self.sum(service, |s| s.bytes.load(Relaxed)), Relaxed);
            b.responses
                .store(self.sum(service, |s| s.responses.load(Relaxed)), Relaxed);
        }
    }

    /// Starts a reused vserver id from zero.
    pub fn reset_vserver(&self, vserver: u32) {
        if let Some(b) = self.vserver_base.get(vserver as usize) {
            b.store(self.raw_vserver_hits(vserver), Relaxed);
        }
    }
}

/// The only writer of one core's slots. Not `Clone`: one per core.
#[derive(Debug)]
pub struct CoreWriter {
    counters: Arc<Counters>,
    core: usize,
    last_tick: u64,
    /// Frames of the current burst per service, written to the slots once per burst by
    /// [`CoreWriter::settle`]: six shared counters a frame cost more than the rewrite.
    tally: Box<[Tally]>,
    /// The services with a non-zero tally, each once (never more than `tally.len()`, so
    /// pushing never allocates).
    tallied: Vec<u32>,
}

#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    packets: u64,
    bytes: u64,
}

impl CoreWriter {
    pub fn core(&self) -> usize {
        self.core
    }

    #[inline]
    fn slot(&self, service: u32) -> Option<&Slot> {
        self.counters
            .cores
            .get(self.core)?
            .slots
            .get(service as usize)
    }

    /// A new flow entered the table for `service`: one more active transaction and hit.
    #[inline]
    pub fn flow_opened(&self, service: u32) {
        if let Some(s) = self.slot(service) {
            s.active.store(s.active.load(Relaxed) + 1, Relaxed);
            s.flows.store(s.flows.load(Relaxed) + 1, Relaxed);
            bump(&s.hits, 1);
        }
    }

    /// A flow counted by [`CoreWriter::flow_opened`] and [`CoreWriter::vserver_hit`] that
    /// did not enter the table after all: both taken back.
    #[inline]
    pub fn flow_refused(&self, service: u32, vserver: u32) {
        if let Some(s) = self.slot(service) {
            s.active.store(s.active.load(Relaxed) - 1, Relaxed);
            s.flows.store(s.flows.load(Relaxed) - 1, Relaxed);
            drop_by(&s.hits, 1);
        }
        if let Some(h) = self.vserver_hits(vserver) {
            drop_by(h, 1);
        }
    }

    /// A flow of `service` left the table (see [`Counters::flows`]).
    #[inline]
    pub fn flow_removed(&self, service: u32) {
        if let Some(s) = self.slot(service) {
            s.flows.store(s.flows.load(Relaxed) - 1, Relaxed);
        }
    }

    /// This core now works with configuration `generation`.
    pub fn set_generation(&self, generation: u64) {
        if let Some(core) = self.counters.cores.get(self.core) {
            core.generation.store(generation, Relaxed);
        }
    }

    #[inline]
    pub fn vserver_hit(&self, vserver: u32) {
        if let Some(h) = self.vserver_hits(vserver) {
            bump(h, 1);
        }
    }

    /// This core's hit counter of `vserver`.
    #[inline]
    fn vserver_hits(&self, vserver: u32) -> Option<&AtomicU64> {
        self.counters
            .cores
            .get(self.core)
            .and_then(|c| c.vserver_hits.get(vserver as usize))
    }

    #[inline]
    pub fn flow_closed(&self, service: u32) {
        if let Some(s) = self.slot(service) {
            s.active.store(s.active.load(Relaxed) - 1, Relaxed);
        }
    }

    /// A response of `service` timed at `ms` (see [`Counters::response_time_us`]).
    #[inline]
    pub fn response(&self, service: u32, ms: u64) {
        if let Some(s) = self.slot(service) {
            let sample = ms.saturating_mul(1000);
            let n = s.responses.load(Relaxed);
            let avg = s.response_us.load(Relaxed);
            let next = if n == 0 {
                sample
            } else {
                // avg + (sample - avg) / 8, in signed arithmetic.
                (avg as i128 + (sample as i128 - avg as i128) / 8).max(0) as u64
            };
            s.response_us.store(next, Relaxed);
            s.responses.store(n.wrapping_add(1), Relaxed);
        }
    }

    /// Counts `packets` frames of `bytes` in total for `service` at second `now`.
    #[inline]
    pub fn count(&self, service: u32, now: u64, packets: u64, bytes: u64) {
        if let Some(s) = self.slot(service) {
            s.add(now, packets, bytes);
        }
    }

    /// Counts one frame of `bytes` for `service` in the current burst; it reaches the shared
    /// counters at the next [`CoreWriter::settle`].
    #[inline]
    pub fn tally(&mut self, service: u32, bytes: u64) {
        if let Some(t) = self.tally.get_mut(service as usize) {
            if t.packets == 0 {
                self.tallied.push(service);
            }
            t.packets += 1;
            t.bytes += bytes;
        }
    }

    /// Writes the burst's tallies to the shared counters, at second `now`.
    pub fn settle(&mut self, now: u64) {
        for i in 0..self.tallied.len() {
            let service = self.tallied[i];
            let Some(t) = self.tally.get_mut(service as usize) else {
                continue;
            };
            let Tally { packets, bytes } = std::mem::take(t);
            self.count(service, now, packets, bytes);
        }
        self.tallied.clear();
    }

    /// Expires old buckets of every service of this core. The worker calls it once per
    /// burst; it does work only when the second changed, so windows of idle services shrink
    /// on time too.
    pub fn tick(&mut self, now: u64) {
        if now == self.last_tick {
            return;
        }
        self.last_tick = now;
        if let Some(core) = self.counters.cores.get(self.core) {
            for s in core.slots.iter() {
                s.advance(now);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_threads_hammering_give_exact_totals() {
        const PER_THREAD: u64 = 200_000;
        let (counters, writers) = Counters::new(4, 3);
        let handles: Vec<_> = writers
            .into_iter()
            .map(|mut w| {
                std::thread::spawn(move || {
                    for i in 0..PER_THREAD {
                        let now = 1000 + i / 50_000; // crosses a few seconds
                        w.tick(now);
                        let service = (i % 3) as u32;
                        w.count(service, now, 1, 100);
                        if i % 2 == 0 {
                            w.flow_opened(service);
                        }
                    }
                    w
                })
            })
            .collect();
        let writers: Vec<CoreWriter> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let all: u64 = (0..3).map(|s| counters.totals(s).packets).sum();
        assert_eq!(all, 4 * PER_THREAD);
        assert_eq!(
            (0..3).map(|s| counters.totals(s).bytes).sum::<u64>(),
            4 * PER_THREAD * 100
        );
        assert_eq!(
            (0..3).map(|s| counters.active(s)).sum::<u64>(),
            4 * PER_THREAD / 2
        );
        // Every count happened within 4 s, inside the window.
        assert_eq!(
            (0..3).map(|s| counters.window_packets(s)).sum::<u64>(),
            4 * PER_THREAD
        );
        for w in &writers {
            for s in 0..3 {
                w.flow_closed(s);
            }
        }
    }

    #[test]
    fn a_bursts_tallies_reach_the_counters_when_settled() {
        let (c, mut w) = Counters::new(1, 3);
        for (service, bytes) in [(2, 100), (0, 60), (2, 40), (7, 1)] {
            w[0].tally(service, bytes); // 7: no such service, ignored
        }
        assert_eq!(c.totals(2).packets, 0, "not before the burst settles");
        w[0].settle(100);
        assert_eq!((c.totals(2).packets, c.totals(2).bytes), (2, 140));
        assert_eq!((c.totals(0).packets, c.window_bytes(0)), (1, 60));
        assert_eq!(c.totals(1).packets, 0);
        w[0].tally(2, 10);
        w[0].settle(101);
        assert_eq!((c.totals(2).packets, c.window_packets(2)), (3, 3));
    }

    #[test]
    fn window_forgets_after_fourteen_seconds() {
        let (c, mut w) = Counters::new(2, 1);
        w[0].count(0, 100, 5, 500); // t=100
        w[1].count(0, 103, 7, 700); // t=103, other core
        assert_eq!(c.window_packets(0), 12);
        for t in [110, 113] {
            w[0].tick(t);
            w[1].tick(t);
        }
        assert_eq!(
            c.window_packets(0),
            12,
            "t=113: both still inside (100..=113)"
        );
        w[0].tick(114);
        w[1].tick(114);
        assert_eq!(c.window_packets(0), 7, "t=114: the t=100 bucket left");
        assert_eq!(c.window_bytes(0), 700);
        w[0].tick(117);
        w[1].tick(117);
        assert_eq!(c.window_packets(0), 0);
        assert_eq!(c.totals(0).packets, 12, "totals never expire");
        // A jump longer than the window empties it without walking every second.
        w[0].count(0, 118, 1, 1);
        w[0].tick(1_000_000);
        assert_eq!(c.window_packets(0), 0);
    }

    #[test]
    fn late_timestamps_count_in_the_newest_bucket() {
        let (c, w) = Counters::new(1, 1);
        w[0].count(0, 50, 1, 10);
        w[0].count(0, 49, 1, 10);
        assert_eq!(c.window_packets(0), 2);
        assert_eq!(c.totals(0).window_bytes, 20);
    }

    #[test]
    fn unknown_services_are_ignored() {
        let (c, w) = Counters::new(1, 2);
        w[0].count(7, 1, 1, 1);
        w[0].flow_opened(7);
        assert_eq!(c.active(7), 0);
        assert_eq!(c.totals(7), ServiceTotals::default());
    }
}
