//! What selection reads about services.

use super::ServiceId;

/// The published state of services, as selection sees it. The engine implements it over the
/// per-core counters and the monitor core's published state; [`SnapshotView`] is a plain
/// table for scenarios, replay and benchmarks.
pub trait ServiceView {
    /// UP and enabled.
    fn is_candidate(&self, service: ServiceId) -> bool;
    /// Over a LOAD monitor's metric threshold: left out of CUSTOMLOAD decisions only.
    #[inline]
    fn load_excluded(&self, _service: ServiceId) -> bool {
        false
    }
    /// Active transactions (open flows), summed over cores.
    fn active(&self, service: ServiceId) -> u64;
    /// Packets in the last 14 s.
    fn packets(&self, service: ServiceId) -> u64;
    /// Bytes in the last 14 s.
    fn bytes(&self, service: ServiceId) -> u64;
    /// Mean response time of the LRTM-enabled monitors, `None` until one has a sample.
    fn response_time(&self, service: ServiceId) -> Option<u64>;
    /// CUSTOMLOAD load, `None` until the LOAD monitor has a sample.
    fn load(&self, service: ServiceId) -> Option<u64>;
    /// The response time the data path measured on real traffic (LEASTRESPONSETIME), `None`
    /// until one was timed. A plain table has one response-time column for both methods.
    #[inline]
    fn measured_response_time(&self, service: ServiceId) -> Option<u64> {
        self.response_time(service)
    }

    /// The candidate check and one statistic, for the selection loop. Implementations
    /// provide the parts; this one rule combines them.
    #[inline]
    fn sample(&self, service: ServiceId, stat: Stat) -> Sample {
        if !self.is_candidate(service) || (stat == Stat::Load && self.load_excluded(service)) {
            return Sample::Skip;
        }
        let value = match stat {
            Stat::Active => Some(self.active(service)),
            Stat::Packets => Some(self.packets(service)),
            Stat::Bytes => Some(self.bytes(service)),
            Stat::ResponseTime => self.response_time(service),
            Stat::MeasuredResponseTime => self.measured_response_time(service),
            Stat::Load => self.load(service),
        };
        value.map_or(Sample::Missing, Sample::Value)
    }
}

/// The statistic a least-X method minimises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stat {
    Active,
    Packets,
    Bytes,
    ResponseTime,
    /// Measured by the data path (LEASTRESPONSETIME).
    MeasuredResponseTime,
    Load,
}

/// What [`ServiceView::sample`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sample {
    /// Not a candidate (DOWN, disabled, over a load threshold).
    Skip,
    /// A candidate without a sample yet.
    Missing,
    Value(u64),
}

/// One service's values in a [`SnapshotView`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServiceSnapshot {
    pub candidate: bool,
    pub active: u64,
    pub packets: u64,
    pub bytes: u64,
    pub response_time: Option<u64>,
    pub load: Option<u64>,
}

/// Services' values held in a table indexed by [`ServiceId`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SnapshotView {
    pub services: Vec<ServiceSnapshot>,
}

impl SnapshotView {
    #[inline]
    fn get(&self, s: ServiceId) -> Option<&ServiceSnapshot> {
        self.services.get(s as usize)
    }
}

impl ServiceView for SnapshotView {
    #[inline]
    fn is_candidate(&self, s: ServiceId) -> bool {
        self.get(s).is_some_and(|x| x.candidate)
    }
    #[inline]
    fn active(&self, s: ServiceId) -> u64 {
        self.get(s).map_or(0, |x| x.active)
    }
    #[inline]
    fn packets(&self, s: ServiceId) -> u64 {
        self.get(s).map_or(0, |x| x.packets)
    }
    #[inline]
    fn bytes(&self, s: ServiceId) -> u64 {
        self.get(s).map_or(0, |x| x.bytes)
    }
    #[inline]
    fn response_time(&self, s: ServiceId) -> Option<u64> {
        self.get(s).and_then(|x| x.response_time)
    }
    #[inline]
    fn load(&self, s: ServiceId) -> Option<u64> {
        self.get(s).and_then(|x| x.load)
    }
}
