//! What selection reads about services.

use super::ServiceId;
use super::least::Rule;

/// The published state of services, as selection sees it. The engine implements it over the
/// per-core counters and the monitor core's published state; [`SnapshotView`] is a plain
/// table for scenarios, replay and benchmarks, [`ColumnView`] the same values in columns.
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

    /// The statistic in dense columns, when this view keeps it so: the least-X methods then
    /// scan without a call or a branch per member. `None`: they ask service by service.
    #[inline]
    fn columns(&self, _stat: Stat) -> Option<Columns<'_>> {
        None
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

/// One statistic of every service, indexed by [`ServiceId`]: what a least-X scan reads of a
/// member in one 16-byte load, so the scan keeps its state in registers and has no branch.
#[derive(Clone, Copy, Debug)]
pub struct Columns<'a> {
    entries: &'a [Entry],
}

/// One service in [`Columns`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(16))]
pub struct Entry {
    /// `N`: the statistic as the method weighs it (times the active transactions for LRTM),
    /// so the scan reads one value and multiplies once.
    pub value: u64,
    /// Active transactions (capped), from which `value` and the tier were derived.
    pub active: u32,
    /// [`Entry::PICKABLE`], [`Entry::SAMPLED`], [`Entry::SECOND_TIER`], [`Entry::UNRANKED`].
    pub flags: u32,
}

impl Entry {
    /// A candidate (and, for loads, not over its threshold).
    pub const PICKABLE: u32 = 1;
    /// Has a sample of the statistic.
    pub const SAMPLED: u32 = 2;
    /// Ranks after every member without it (CUSTOMLOAD's services with active transactions).
    pub const SECOND_TIER: u32 = 4;
    /// [`Entry::PICKABLE`] without [`Entry::SAMPLED`]: a candidate the columns cannot rank,
    /// told apart by one OR a member in the scan.
    pub const UNRANKED: u32 = 8;

    /// The entry of a service whose `stat` is `sample` (`None`: not measured yet), with the
    /// rule of the method that minimises `stat` applied.
    pub fn new(stat: Stat, pickable: bool, sample: Option<u64>, active: u64) -> Self {
        let (tier, value) = Rule::of(stat).apply(sample.unwrap_or(0), active);
        Self {
            value,
            active: u32::try_from(active).unwrap_or(u32::MAX),
            flags: if pickable { Self::PICKABLE } else { 0 }
                | if sample.is_some() { Self::SAMPLED } else { 0 }
                | if tier > 0 { Self::SECOND_TIER } else { 0 }
                | if pickable && sample.is_none() {
                    Self::UNRANKED
                } else {
                    0
                },
        }
    }

    /// The same entry with `active` transactions: `value` and the tier derived again from the
    /// statistic's `sample`; the flags of the candidate check kept.
    pub fn with_active(self, stat: Stat, sample: u64, active: u64) -> Self {
        let fresh = Self::new(stat, true, Some(sample), active);
        Self {
            flags: (self.flags & !Self::SECOND_TIER) | (fresh.flags & Self::SECOND_TIER),
            ..fresh
        }
    }
}

impl<'a> Columns<'a> {
    pub fn new(entries: &'a [Entry]) -> Self {
        Self { entries }
    }

    /// Services `0..services()` have an entry.
    #[inline(always)]
    pub(super) fn services(&self) -> usize {
        self.entries.len()
    }

    /// Service `s`'s entry, checked.
    pub fn entry(&self, s: ServiceId) -> Option<Entry> {
        self.entries.get(s as usize).copied()
    }

    /// # Safety
    /// `s < self.services()`.
    #[inline(always)]
    pub(super) unsafe fn read(&self, s: usize) -> Entry {
        debug_assert!(s < self.entries.len());
        // SAFETY: the caller keeps `s` below `services()`, the entries' length.
        unsafe { *self.entries.get_unchecked(s) }
    }
}

/// The values of a [`SnapshotView`] as [`Columns`], one per statistic, so a least-X scan
/// over 16 services reads four cache lines and predicts no branch. Built once; selection only
/// reads it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ColumnView {
    rows: SnapshotView,
    active: Box<[Entry]>,
    packets: Box<[Entry]>,
    bytes: Box<[Entry]>,
    response_time: Box<[Entry]>,
    load: Box<[Entry]>,
}

impl From<&SnapshotView> for ColumnView {
    fn from(rows: &SnapshotView) -> Self {
        let column = |stat, f: fn(&ServiceSnapshot) -> Option<u64>| {
            rows.services
                .iter()
                .map(|x| Entry::new(stat, x.candidate, f(x), x.active))
                .collect()
        };
        Self {
            rows: rows.clone(),
            active: column(Stat::Active, |x| Some(x.active)),
            packets: column(Stat::Packets, |x| Some(x.packets)),
            bytes: column(Stat::Bytes, |x| Some(x.bytes)),
            response_time: column(Stat::ResponseTime, |x| x.response_time),
            load: column(Stat::Load, |x| x.load),
        }
    }
}

/// Service by service, a column view answers from its rows.
impl ServiceView for ColumnView {
    #[inline]
    fn is_candidate(&self, s: ServiceId) -> bool {
        self.rows.is_candidate(s)
    }
    #[inline]
    fn active(&self, s: ServiceId) -> u64 {
        self.rows.active(s)
    }
    #[inline]
    fn packets(&self, s: ServiceId) -> u64 {
        self.rows.packets(s)
    }
    #[inline]
    fn bytes(&self, s: ServiceId) -> u64 {
        self.rows.bytes(s)
    }
    #[inline]
    fn response_time(&self, s: ServiceId) -> Option<u64> {
        self.rows.response_time(s)
    }
    #[inline]
    fn load(&self, s: ServiceId) -> Option<u64> {
        self.rows.load(s)
    }
    #[inline]
    fn columns(&self, stat: Stat) -> Option<Columns<'_>> {
        Some(Columns::new(match stat {
            Stat::Active => &self.active,
            Stat::Packets => &self.packets,
            Stat::Bytes => &self.bytes,
            Stat::ResponseTime | Stat::MeasuredResponseTime => &self.response_time,
            Stat::Load => &self.load,
        }))
    }
}
