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

/// The free ports of one SNIP for one worker, used oldest-released first: a port comes back
/// into use as late as possible, long after the service's TIME_WAIT for it ended.
#[derive(Debug)]
struct PortPool {
    snip: Ipv4Addr,
    free: VecDeque<u16>,
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
            let free = self.range.clone().collect();
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
            let port = pool.free.pop_front()?;
            if fits(port) {
                return Some(port);
            }
            pool.free.push_back(port);
        }
        None
    }

    #[inline]
    pub fn release(&mut self, snip: Ipv4Addr, port: u16) {
        if let Some(p) = self.pools.iter_mut().find(|p| p.snip == snip)
            && self.range.contains(&port)
            && p.free.len() < self.range.len()
        {
            p.free.push_back(port);
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
        s.release(snip, first);
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
}
