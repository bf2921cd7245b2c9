//! Source NAT ports: each worker owns a disjoint range of every SNIP's ports, so the server
//! side of a flow (service → SNIP:port) is unique across workers without coordination, and a
//! NIC steering rule on the port range can bring replies back to the owning queue.
//!
//! Ports below [`FIRST_WORKER_PORT`] belong to the monitor core's probes.

use std::collections::VecDeque;
use std::net::Ipv4Addr;

/// The monitor core probes from SNIP ports `MONITOR_PORTS`; workers share the rest.
pub const MONITOR_PORTS: std::ops::Range<u16> = 1024..10_000;
pub const FIRST_WORKER_PORT: u16 = 10_000;

/// How long a service may hold a tuple in TIME_WAIT after a connection on it closed (Linux's
/// `TCP_TIMEWAIT_LEN`; stacks use 30 s to RFC 793's 4 minutes).
pub const TIME_WAIT_MS: u64 = 60_000;

/// A free port and the last connection it carried: toward which service, ended when. The
/// record travels with the port through the free queue, so choosing a port reads the queue's
/// front (memory the CPU streams) instead of a table indexed by port (a cache miss a
/// connection once releases have shuffled the queue).
#[derive(Clone, Copy, Debug)]
struct FreePort {
    ended_ms: u64,
    service: u32,
    port: u16,
}

/// `FreePort::service` of a port that never carried a connection.
const NO_SERVICE: u32 = u32::MAX;
/// `FreePort::service` of a port taken and given back unused: its earlier record is gone, so
/// it counts as held in TIME_WAIT by every service until `ended_ms + TIME_WAIT_MS`.
const ANY_SERVICE: u32 = u32::MAX - 1;

impl FreePort {
    /// Whether `service` may still hold this port's tuple in TIME_WAIT at `now_ms`.
    #[inline]
    fn waits_for(&self, service: u32, now_ms: u64) -> bool {
        (self.service == service || self.service == ANY_SERVICE)
            && now_ms < self.ended_ms + TIME_WAIT_MS
    }
}

/// The free ports of one SNIP for one worker, used oldest-released first: a port comes back
/// into use as late as possible, long after the service's TIME_WAIT for it ended.
#[derive(Debug)]
struct PortPool {
    snip: Ipv4Addr,
    free: VecDeque<FreePort>,
}

/// A port for a new connection that cannot make its service's TIME_WAIT good for it (a SYN
/// without timestamps: the service accepts it over TIME_WAIT only if its sequence number
/// happens to be higher than the old connection's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allocation {
    pub port: u16,
    /// Ports passed over: their tuple toward the service may still be in its TIME_WAIT.
    pub skipped: u32,
    /// Every port looked at was such a one: this one (the oldest) is reused anyway.
    pub in_time_wait: bool,
}

#[derive(Debug)]
pub struct Snat {
    pools: Vec<PortPool>,
    range: std::ops::Range<u16>,
}

impl Snat {
    /// The port range of `worker` among `workers`.
    pub fn range_of(worker: usize, workers: usize) -> std::ops::Range<u16> {
        let span = (u32::from(u16::MAX) + 1 - u32::from(FIRST_WORKER_PORT)) / workers.max(1) as u32;
        let lo = u32::from(FIRST_WORKER_PORT) + span * worker as u32;
        lo as u16..(lo + span).min(u32::from(u16::MAX)) as u16
    }

    /// The worker whose range holds `port` (`None` below the workers' ports).
    pub fn owner_of(port: u16, workers: usize) -> Option<usize> {
        if port < FIRST_WORKER_PORT {
            return None;
        }
        let span = (u32::from(u16::MAX) + 1 - u32::from(FIRST_WORKER_PORT)) / workers.max(1) as u32;
        let owner = (u32::from(port) - u32::from(FIRST_WORKER_PORT)) / span.max(1);
        Some((owner as usize).min(workers.max(1) - 1))
    }

    pub fn new(worker: usize, workers: usize) -> Self {
        Self {
            pools: Vec::new(),
            range: Self::range_of(worker, workers),
        }
    }

    /// Makes sure `snip` has a pool (done when a configuration generation is applied, not per
    /// packet).
    pub fn add_snip(&mut self, snip: Ipv4Addr) {
        if !self.pools.iter().any(|p| p.snip == snip) {
            let free = self
                .range
                .clone()
                .map(|port| FreePort {
                    ended_ms: 0,
                    service: NO_SERVICE,
                    port,
                })
                .collect();
            self.pools.push(PortPool { snip, free });
        }
    }

    #[inline]
    pub fn allocate(&mut self, snip: Ipv4Addr) -> Option<u16> {
        self.pools
            .iter_mut()
            .find(|p| p.snip == snip)?
            .free
            .pop_front()
            .map(|f| f.port)
    }

    /// The oldest free port `fits` accepts, looking at no more than `budget` ports (those
    /// passed over go to the back, in order). For RSS-aware steering: a port whose replies
    /// reach this worker's queue.
    #[inline]
    pub fn allocate_where(
        &mut self,
        snip: Ipv4Addr,
        budget: usize,
        mut fits: impl FnMut(u16) -> bool,
    ) -> Option<u16> {
        let pool = self.pools.iter_mut().find(|p| p.snip == snip)?;
        for _ in 0..budget.min(pool.free.len()) {
            let free = pool.free.pop_front()?;
            if fits(free.port) {
                return Some(free.port);
            }
            pool.free.push_back(free);
        }
        None
    }

    /// The oldest free port whose tuple toward `service` cannot be in the service's
    /// TIME_WAIT at `now_ms`, looking at no more than `budget` ports (those passed over go to
    /// the back); when all are, the oldest of them.
    pub fn allocate_for(
        &mut self,
        snip: Ipv4Addr,
        service: u32,
        now_ms: u64,
        budget: usize,
    ) -> Option<Allocation> {
        let pool = self.pools.iter_mut().find(|p| p.snip == snip)?;
        let looked = budget.clamp(1, pool.free.len().max(1));
        let mut skipped = 0;
        for _ in 0..looked {
            let free = *pool.free.front()?;
            if !free.waits_for(service, now_ms) {
                pool.free.pop_front();
                return Some(Allocation {
                    port: free.port,
                    skipped,
                    in_time_wait: false,
                });
            }
            // To the back, in order (`rotate_left` copies through its general wrap case).
            pool.free.pop_front();
            pool.free.push_back(free);
            skipped += 1;
        }
        // All young: take the oldest of those looked at (the first sent to the back).
        let free = pool.free.remove(pool.free.len().checked_sub(looked)?)?;
        Some(Allocation {
            port: free.port,
            skipped: skipped.saturating_sub(1),
            in_time_wait: true,
        })
    }

    /// Gives back the port of a connection to `service` that ended at `ended_ms`.
    #[inline]
    pub fn release_after(&mut self, snip: Ipv4Addr, port: u16, service: u32, ended_ms: u64) {
        self.give_back(
            snip,
            FreePort {
                ended_ms,
                service,
                port,
            },
        );
    }

    /// Gives back at `now_ms` a port taken for a connection that never started (its flow was
    /// refused): what it carried before is not known any more, so every service is taken to
    /// hold it in TIME_WAIT for a while.
    #[inline]
    pub fn release(&mut self, snip: Ipv4Addr, port: u16, now_ms: u64) {
        let ended_ms = now_ms;
        self.give_back(
            snip,
            FreePort {
                ended_ms,
                service: ANY_SERVICE,
                port,
            },
        );
    }

    fn give_back(&mut self, snip: Ipv4Addr, free: FreePort) {
        if let Some(p) = self.pools.iter_mut().find(|p| p.snip == snip)
            && self.range.contains(&free.port)
            && p.free.len() < self.range.len()
        {
            p.free.push_back(free);
        }
    }

    pub fn available(&self, snip: Ipv4Addr) -> usize {
        self.pools
            .iter()
            .find(|p| p.snip == snip)
            .map_or(0, |p| p.free.len())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_port_of_a_range_belongs_to_its_worker() {
        for workers in [1, 2, 3, 7, 14] {
            for w in 0..workers {
                for port in super::Snat::range_of(w, workers) {
                    assert_eq!(
                        super::Snat::owner_of(port, workers),
                        Some(w),
                        "{port} of {workers}"
                    );
                }
            }
            assert_eq!(
                super::Snat::owner_of(super::FIRST_WORKER_PORT - 1, workers),
                None
            );
        }
    }

    use super::*;

    #[test]
    fn worker_ranges_are_disjoint_and_above_the_monitor_range() {
        let r: Vec<_> = (0..3).map(|w| Snat::range_of(w, 3)).collect();
        assert_eq!(r[0].start, FIRST_WORKER_PORT);
        assert!(r[0].end <= r[1].start && r[1].end <= r[2].start);
        assert!(!r[0].contains(&(MONITOR_PORTS.end - 1)));
    }

    #[test]
    fn ports_are_reused_after_release_and_run_out_cleanly() {
        let snip = Ipv4Addr::new(198, 18, 0, 2);
        let mut s = Snat::new(0, 1);
        assert_eq!(s.allocate(snip), None, "no pool for an unknown SNIP");
        s.add_snip(snip);
        let n = s.available(snip);
        let first = s.allocate(snip).unwrap();
        assert_eq!(first, FIRST_WORKER_PORT);
        s.release(snip, first, 0);
        assert_eq!(s.available(snip), n);
        assert_ne!(
            s.allocate(snip),
            Some(first),
            "a released port waits for the others"
        );
        for _ in 0..n - 1 {
            s.allocate(snip).unwrap();
        }
        assert_eq!(s.allocate(snip), None);
    }

    /// A worker's ports of one SNIP, every one taken (in the order they were given).
    fn every_port_taken() -> (Snat, Ipv4Addr, Vec<u16>) {
        let snip = Ipv4Addr::new(198, 18, 0, 2);
        let mut s = Snat::new(0, 1);
        s.add_snip(snip);
        let ports: Vec<u16> = (0..s.available(snip))
            .map(|_| s.allocate(snip).unwrap())
            .collect();
        (s, snip, ports)
    }

    #[test]
    fn a_port_a_service_may_hold_in_time_wait_is_passed_over_and_counted() {
        let (mut s, snip, ports) = every_port_taken();
        // Every port once toward service 7, ended at 1 s; then port A toward service 8.
        for &p in &ports {
            s.release_after(snip, p, 7, 1_000);
        }
        // Service 8 has never seen these tuples: the oldest port serves, nothing skipped.
        let a = s.allocate_for(snip, 8, 2_000, 8).unwrap();
        assert_eq!(
            a,
            Allocation {
                port: ports[0],
                skipped: 0,
                in_time_wait: false
            }
        );
        s.release_after(snip, a.port, 8, 2_000);
        // Service 7 within TIME_WAIT: eight looked at, all young, the oldest reused, counted.
        let b = s.allocate_for(snip, 7, 30_000, 8).unwrap();
        assert!(b.in_time_wait);
        assert_eq!((b.port, b.skipped), (ports[1], 7));
        // Past TIME_WAIT they are free again.
        let c = s.allocate_for(snip, 7, 1_000 + TIME_WAIT_MS, 8).unwrap();
        assert!(!c.in_time_wait && c.skipped == 0);
        // A port young for service 7 but not for 8 is passed over for 7 only.
        let d = s.allocate_for(snip, 8, 2_500, 1).unwrap();
        assert!(!d.in_time_wait);
    }

    #[test]
    fn a_port_given_back_unused_counts_as_held_by_every_service() {
        let (mut s, snip, ports) = every_port_taken();
        let n = ports.len();
        // The first given back unused at 5 s (its flow was refused), the others after
        // connections toward service 7 that ended at 1 s.
        s.release(snip, ports[0], 5_000);
        for &p in &ports[1..] {
            s.release_after(snip, p, 7, 1_000);
        }
        // Within TIME_WAIT of 5 s it is passed over even for a service it never went to.
        let a = s
            .allocate_for(snip, 9, 5_000 + TIME_WAIT_MS - 1, 2)
            .unwrap();
        assert_eq!((a.port, a.skipped, a.in_time_wait), (ports[1], 1, false));
        // Past it, it is an ordinary free port, the last of the queue.
        let rest: Vec<Allocation> = (0..n - 1)
            .map(|_| s.allocate_for(snip, 9, 5_000 + TIME_WAIT_MS, 1).unwrap())
            .collect();
        assert!(rest.iter().all(|a| !a.in_time_wait && a.skipped == 0));
        assert_eq!(rest.last().map(|a| a.port), Some(ports[0]));
    }
}
