//! What the monitor core publishes per service, read lock-free by the workers: UP/DOWN,
//! the LRTM response time and the CUSTOMLOAD load. A service is UP until a monitor says
//! otherwise (services without monitors, `-healthMonitor NO`).

use std::sync::atomic::{
    AtomicBool, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};

/// Index of a service in the engine's runtime tables.
pub type ServiceId = u32;

const NONE: u64 = u64::MAX;

#[derive(Debug)]
pub struct ServiceHealth {
    up: Box<[AtomicBool]>,
    /// Monitors decided DOWN (not merely "no decision yet"): downStateFlush applies.
    down: Box<[AtomicBool]>,
    response_us: Box<[AtomicU64]>,
    load: Box<[AtomicU64]>,
    /// A metric crossed its threshold on a non-passive LOAD binding: out of CUSTOMLOAD.
    load_excluded: Box<[AtomicBool]>,
    /// Probes the monitor core completed, passed and failed (before `-reverse`).
    probes_passed: AtomicU64,
    probes_failed: AtomicU64,
    /// Frames the monitor core built but could not hand to the workers (ring full).
    frames_lost: AtomicU64,
    /// Bumped whenever a service's UP state or load exclusion changes: a worker's copy of
    /// what selection reads is rebuilt at once, not at its next periodic refresh.
    state_changes: AtomicU64,
}

impl ServiceHealth {
    pub fn new(services: usize) -> Self {
        Self {
            up: (0..services).map(|_| AtomicBool::new(true)).collect(),
            down: (0..services).map(|_| AtomicBool::new(false)).collect(),
            response_us: (0..services).map(|_| AtomicU64::new(NONE)).collect(),
            load: (0..services).map(|_| AtomicU64::new(NONE)).collect(),
            load_excluded: (0..services).map(|_| AtomicBool::new(false)).collect(),
            probes_passed: AtomicU64::new(0),
            probes_failed: AtomicU64::new(0),
            frames_lost: AtomicU64::new(0),
            state_changes: AtomicU64::new(0),
        }
    }

    /// Back to a new service's state (UP without monitors, no samples): for an id the
    /// engine gives to another service once nothing refers to the old one.
    pub fn reset(&self, s: ServiceId) {
        self.set_up(s, true);
        self.set_down(s, false);
        self.set_response_time(s, None);
        self.set_load(s, None);
        self.set_load_excluded(s, false);
    }

    /// Frames of the monitor core's were lost: the ring to the workers was full.
    pub fn count_lost_frames(&self, n: u64) {
        if n > 0 {
            self.frames_lost.fetch_add(n, Relaxed);
        }
    }

    /// Frames the monitor core lost to a full ring.
    pub fn frames_lost(&self) -> u64 {
        self.frames_lost.load(Relaxed)
    }

    pub fn count_probe(&self, passed: bool) {
        let c = if passed {
            &self.probes_passed
        } else {
            &self.probes_failed
        };
        c.fetch_add(1, Relaxed);
    }

    /// Probes completed so far: (passed, failed).
    pub fn probes(&self) -> (u64, u64) {
        (
            self.probes_passed.load(Relaxed),
            self.probes_failed.load(Relaxed),
        )
    }

    #[inline]
    pub fn is_up(&self, s: ServiceId) -> bool {
        self.up.get(s as usize).is_some_and(|u| u.load(Relaxed))
    }

    pub fn set_up(&self, s: ServiceId, up: bool) {
        if let Some(u) = self.up.get(s as usize)
            && u.swap(up, Relaxed) != up
        {
            self.state_changes.fetch_add(1, Release);
        }
    }

    /// How many times a service's UP state, DOWN decision or load exclusion changed so far.
    #[inline]
    pub fn state_changes(&self) -> u64 {
        self.state_changes.load(Acquire)
    }

    /// The service went DOWN by its monitors' decision (not UNKNOWN, not UP).
    #[inline]
    pub fn is_down(&self, s: ServiceId) -> bool {
        self.down.get(s as usize).is_some_and(|d| d.load(Relaxed))
    }

    pub fn set_down(&self, s: ServiceId, down: bool) {
        if let Some(d) = self.down.get(s as usize)
            && d.swap(down, Relaxed) != down
        {
            self.state_changes.fetch_add(1, Release);
        }
    }

    #[inline]
    pub fn response_time(&self, s: ServiceId) -> Option<u64> {
        self.response_us
            .get(s as usize)
            .map(|r| r.load(Relaxed))
            .filter(|v| *v != NONE)
    }

    pub fn set_response_time(&self, s: ServiceId, micros: Option<u64>) {
        if let Some(r) = self.response_us.get(s as usize) {
            r.store(micros.map_or(NONE, |v| v.min(NONE - 1)), Relaxed);
        }
    }

    #[inline]
    pub fn load(&self, s: ServiceId) -> Option<u64> {
        self.load
            .get(s as usize)
            .map(|r| r.load(Relaxed))
            .filter(|v| *v != NONE)
    }

    #[inline]
    pub fn load_excluded(&self, s: ServiceId) -> bool {
        self.load_excluded
            .get(s as usize)
            .is_some_and(|x| x.load(Relaxed))
    }

    pub fn set_load_excluded(&self, s: ServiceId, excluded: bool) {
        if let Some(x) = self.load_excluded.get(s as usize)
            && x.swap(excluded, Relaxed) != excluded
        {
            self.state_changes.fetch_add(1, Release);
        }
    }

    pub fn set_load(&self, s: ServiceId, load: Option<u64>) {
        if let Some(r) = self.load.get(s as usize) {
            r.store(load.map_or(NONE, |v| v.min(NONE - 1)), Relaxed);
        }
    }
}

/// What the resolver found, waiting for the control plane: it takes the results, turns
/// them into a configuration generation when an address changed, and publishes that.
#[derive(Debug, Default)]
pub struct Resolutions {
    results: std::sync::Mutex<Vec<crate::resolve::Resolved>>,
    waiting: AtomicBool,
}

impl Resolutions {
    pub fn push(&self, r: crate::resolve::Resolved) {
        let mut results = self
            .results
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Only the newest result of a server matters.
        results.retain(|x| x.server != r.server);
        results.push(r);
        self.waiting.store(true, Relaxed);
    }

    /// The results since the last call (cheap when there are none: no lock).
    pub fn take(&self) -> Vec<crate::resolve::Resolved> {
        if !self.waiting.swap(false, Relaxed) {
            return Vec::new();
        }
        std::mem::take(
            &mut *self
                .results
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_sample_reads_back_as_none() {
        let h = ServiceHealth::new(2);
        assert!(h.is_up(0) && !h.is_up(7));
        h.set_response_time(0, Some(1500));
        assert_eq!(h.response_time(0), Some(1500));
        h.set_response_time(0, None);
        assert_eq!(h.response_time(0), None);
        h.set_load(1, Some(u64::MAX));
        assert_eq!(h.load(1), Some(u64::MAX - 1), "a huge load stays a load");
        h.set_load(1, None);
        assert_eq!(h.load(1), None);
    }

    #[test]
    fn a_down_decision_counts_as_a_state_change_once() {
        let h = ServiceHealth::new(2);
        let before = h.state_changes();
        h.set_down(1, true);
        assert!(h.is_down(1));
        assert_eq!(h.state_changes(), before + 1);
        h.set_down(1, true);
        assert_eq!(
            h.state_changes(),
            before + 1,
            "the same decision again is no change"
        );
        h.set_down(1, false);
        assert_eq!(h.state_changes(), before + 2);
    }
}
