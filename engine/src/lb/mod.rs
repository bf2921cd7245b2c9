//! The selection core: which service gets a new flow.
//!
//! The control plane builds an immutable [`Pool`] per vserver (members in bind order, weights,
//! hash seeds); each worker keeps its own mutable [`PoolState`] (round-robin position, the
//! previously chosen member, the startup round-robin budget). A decision reads the services'
//! published state through a [`ServiceView`], allocates nothing and takes no lock.
//!
//! Rules (SPEC §3): least-X methods minimise `Nw = N × 10000 / weight`, compared exactly by
//! cross-multiplying; ties go to the first tied member after the previous choice in bind
//! order; LRTM and CUSTOMLOAD use round robin until every candidate has a sample; hash
//! methods use weighted rendezvous hashing and never round robin.

mod hash;
mod least;
mod rr;
pub mod spill;
mod view;

use std::fmt;

pub(crate) use hash::mix as mix64;
pub use hash::{FlowKey, member_seed};
pub use view::{
    ColumnView, Columns, Entry, Sample, ServiceSnapshot, ServiceView, SnapshotView, Stat,
};

use least::{LeastX, Metric};

/// Index of a service in the runtime tables.
pub type ServiceId = u32;

/// Which fields of a flow a hash method hashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HashKey {
    SourceIp,
    DestinationIp,
    SrcIpDestIp,
    SrcIpSrcPort,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    RoundRobin,
    LeastConnection,
    Lrtm,
    /// LRTM's rule on response times the data path measures (see [`Stat::MeasuredResponseTime`]).
    LeastResponseTime,
    LeastPackets,
    LeastBandwidth,
    CustomLoad,
    Hash(HashKey),
}

impl Method {
    /// The statistic a least-X method minimises; `None` for round robin and the hashes.
    pub fn least_stat(self) -> Option<Stat> {
        match self {
            Self::LeastConnection => Some(least::LeastConnection::STAT),
            Self::LeastPackets => Some(least::LeastPackets::STAT),
            Self::LeastBandwidth => Some(least::LeastBandwidth::STAT),
            Self::Lrtm => Some(least::Lrtm::STAT),
            Self::LeastResponseTime => Some(least::LeastResponseTime::STAT),
            Self::CustomLoad => Some(least::CustomLoad::STAT),
            Self::RoundRobin | Self::Hash(_) => None,
        }
    }
}

/// A service bound to a vserver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    pub service: ServiceId,
    /// 1..=100 (`bind lb vserver -weight`).
    pub weight: u32,
    /// Identity in hash methods (from the service's IP:port or `-hashId`).
    pub seed: u64,
}

/// Why a vserver is using round robin instead of its configured method; `show lb vserver`
/// prints it as `Current Method: Round Robin, Reason: …`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RoundRobinReason {
    /// Startup round robin after the vserver was created.
    VserverCreated,
    ServiceBound,
    ServiceUp,
    MethodChanged,
    /// LRTM: a candidate has no response time from an LRTM-enabled monitor yet.
    ResponseTimeMissing,
    /// CUSTOMLOAD: a candidate has no load from a LOAD monitor yet.
    LoadMissing,
}

impl fmt::Display for RoundRobinReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::VserverCreated => "Vserver is newly created",
            Self::ServiceBound => "A new service is bound",
            Self::ServiceUp => "Bound service's state changed to UP",
            Self::MethodChanged => "LB method has changed",
            Self::ResponseTimeMissing => "Response time not yet known for a bound service",
            Self::LoadMissing => "Load monitor is not active on a service",
        })
    }
}

/// The outcome of one decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    /// Position in the pool (bind order).
    pub member: usize,
    pub service: ServiceId,
    /// Set when round robin decided instead of the configured method.
    pub round_robin: Option<RoundRobinReason>,
}

/// The immutable part of a vserver's selection, built by the control plane.
#[derive(Clone, Debug)]
pub struct Pool {
    method: Method,
    members: Box<[Member]>,
    equal_weights: bool,
    /// `L / weight` per member for exact ranking without cross-multiplying (see `least`).
    scales: Option<least::Scales>,
    /// The largest member's service id: the columns a view offers must reach it.
    largest_service: usize,
    /// Applied to IPv4 addresses before hashing (`-netmask`).
    hash_mask: u32,
}

/// A worker's mutable selection state for one pool.
#[derive(Clone, Debug)]
pub struct PoolState {
    last: Option<usize>,
    rr_current: Box<[i64]>,
    startup_rr_left: u64,
    startup_reason: RoundRobinReason,
    /// The reason of the latest decision made by round robin, for `show`.
    pub current_reason: Option<RoundRobinReason>,
}

impl Pool {
    pub fn new(method: Method, mut members: Vec<Member>) -> Self {
        for m in &mut members {
            m.weight = m.weight.clamp(1, 100);
        }
        let equal_weights = members.windows(2).all(|w| w[0].weight == w[1].weight);
        let scales = least::scales(&members);
        let largest_service = members
            .iter()
            .map(|m| m.service as usize)
            .max()
            .unwrap_or(0);
        Self {
            largest_service,
            method,
            members: members.into_boxed_slice(),
            equal_weights,
            scales,
            hash_mask: u32::MAX,
        }
    }

    /// Masks IPv4 addresses before hashing (`add lb vserver … -netmask`).
    pub fn with_hash_mask(mut self, mask: u32) -> Self {
        self.hash_mask = mask;
        self
    }

    pub fn method(&self) -> Method {
        self.method
    }

    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// Whether [`Pool::select`] reads its `flow` argument (hash methods only): a caller may
    /// pass [`FlowKey::default`] otherwise and skip building the key.
    #[inline]
    pub fn reads_flow_key(&self) -> bool {
        matches!(self.method, Method::Hash(_))
    }

    /// A fresh per-worker state for this pool.
    pub fn new_state(&self) -> PoolState {
        PoolState {
            last: None,
            rr_current: vec![0; self.members.len()].into_boxed_slice(),
            startup_rr_left: 0,
            startup_reason: RoundRobinReason::VserverCreated,
            current_reason: None,
        }
    }

    /// Starts startup round robin for `factor × members` new flows (`-startupRRFactor`).
    /// Hash methods never use it.
    pub fn start_round_robin(&self, state: &mut PoolState, factor: u64, reason: RoundRobinReason) {
        if !matches!(self.method, Method::Hash(_)) && factor > 0 {
            state.startup_rr_left = factor.saturating_mul(self.members.len() as u64);
            state.startup_reason = reason;
        }
    }

    /// Chooses the member for a new flow, or `None` when no member is a candidate.
    pub fn select<V: ServiceView>(
        &self,
        state: &mut PoolState,
        view: &V,
        flow: &FlowKey,
    ) -> Option<Choice> {
        let (member, reason) = match self.method {
            Method::Hash(key) => {
                let m = hash::select(
                    &self.members,
                    self.equal_weights,
                    view,
                    flow.hash(key, self.hash_mask),
                )?;
                (m, None)
            }
            _ if state.startup_rr_left > 0 => {
                let m = rr::select(&self.members, &mut state.rr_current, view)?;
                state.startup_rr_left -= 1;
                (m, Some(state.startup_reason))
            }
            Method::RoundRobin => (
                rr::select(&self.members, &mut state.rr_current, view)?,
                None,
            ),
            Method::LeastConnection => self.least::<_, least::LeastConnection>(state, view)?,
            Method::LeastPackets => self.least::<_, least::LeastPackets>(state, view)?,
            Method::LeastBandwidth => self.least::<_, least::LeastBandwidth>(state, view)?,
            Method::Lrtm => self.least_or_rr::<_, least::Lrtm>(
                state,
                view,
                RoundRobinReason::ResponseTimeMissing,
            )?,
            Method::LeastResponseTime => self.least_or_rr::<_, least::LeastResponseTime>(
                state,
                view,
                RoundRobinReason::ResponseTimeMissing,
            )?,
            // While any candidate has no active transaction, only those compete (tier 0).
            Method::CustomLoad => self.least_or_rr::<_, least::CustomLoad>(
                state,
                view,
                RoundRobinReason::LoadMissing,
            )?,
        };
        state.last = Some(member);
        state.current_reason = reason;
        Some(Choice {
            member,
            service: self.members[member].service,
            round_robin: reason,
        })
    }

    /// The least-X decision: over the view's columns when it has them, else service by
    /// service (and exactly, when a rank would not fit in 63 bits).
    #[inline(always)]
    fn pick_least<V: ServiceView, M: LeastX>(&self, state: &PoolState, view: &V) -> least::Pick {
        let scales = self.scales.as_ref();
        if let Some(columns) = view.columns(M::STAT)
            && let Some(pick) = least::select_columns(
                &self.members,
                self.largest_service,
                scales,
                state.last,
                &columns,
            )
        {
            return pick;
        }
        least::select(&self.members, scales, state.last, |s| {
            match view.sample(s, M::STAT) {
                Sample::Value(value) => {
                    let active = if M::RULE.needs_active() {
                        view.active(s)
                    } else {
                        0
                    };
                    let (tier, n) = M::RULE.apply(value, active);
                    Metric::Value(tier as u8, n)
                }
                other => other.into(),
            }
        })
    }

    fn least<V: ServiceView, M: LeastX>(
        &self,
        state: &PoolState,
        view: &V,
    ) -> Option<(usize, Option<RoundRobinReason>)> {
        match self.pick_least::<V, M>(state, view) {
            least::Pick::Chosen(m) => Some((m, None)),
            least::Pick::NoCandidate | least::Pick::MissingSample => None,
        }
    }

    fn least_or_rr<V: ServiceView, M: LeastX>(
        &self,
        state: &mut PoolState,
        view: &V,
        reason: RoundRobinReason,
    ) -> Option<(usize, Option<RoundRobinReason>)> {
        match self.pick_least::<V, M>(state, view) {
            least::Pick::Chosen(m) => Some((m, None)),
            least::Pick::NoCandidate => None,
            least::Pick::MissingSample => Some((
                rr::select(&self.members, &mut state.rr_current, view)?,
                Some(reason),
            )),
        }
    }
}
