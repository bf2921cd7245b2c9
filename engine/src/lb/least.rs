//! The least-X methods: the candidate with the smallest weighted value wins.
//!
//! `Nw = N × 10000 / weight` is compared exactly. When the least common multiple `L` of the
//! pool's weights is small enough (any pool whose weights share small factors, and every
//! equal-weight pool), the control plane gives each member the integer `L / weight` and a
//! member's rank is the exact integer `N × L / weight`: ranks are independent of each other,
//! so the scan is one multiply per member off the critical path and a running minimum.
//! Otherwise members are compared pairwise by cross-multiplying (`N_a × w_b < N_b × w_a`).

use super::{Columns, Entry, Member, Sample, ServiceId, Stat};

pub(super) enum Pick {
    Chosen(usize),
    NoCandidate,
    /// A candidate has no sample yet (LRTM response time, CUSTOMLOAD load).
    MissingSample,
}

/// `L / weight` per member, and the largest `N` whose rank fits in 63 bits for every member.
#[derive(Clone, Debug)]
pub(super) struct Scales {
    per_member: Box<[u64]>,
    /// `N ≤ limit` ⇒ `N × scale < 2^63` for every scale: one compare per member instead of a
    /// widening multiply.
    limit: u64,
}

impl Scales {
    #[cfg(test)]
    fn per_member(&self) -> &[u64] {
        &self.per_member
    }
}

/// The pool's [`Scales`], or `None` when `L` does not fit in 63 bits.
pub(super) fn scales(members: &[Member]) -> Option<Scales> {
    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 { a } else { gcd(b, a % b) }
    }
    let mut lcm: u64 = 1;
    for m in members {
        let w = u64::from(m.weight);
        lcm = (lcm / gcd(lcm, w))
            .checked_mul(w)
            .filter(|l| *l < 1 << 63)?;
    }
    let per_member: Box<[u64]> = members.iter().map(|m| lcm / u64::from(m.weight)).collect();
    let largest = per_member.iter().copied().max().unwrap_or(1).max(1);
    Some(Scales {
        // One below the largest 63-bit value, so a tiered rank stays below the initial `u64::MAX`.
        limit: (TIER_BIT - 2) / largest,
        per_member,
    })
}

/// How a least-X method turns a member's statistic (and its active transactions) into
/// `(tier, N)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Rule {
    /// `N` is the statistic (LEASTCONNECTION, LEASTPACKETS, LEASTBANDWIDTH).
    Plain,
    /// `N = active × statistic` (LRTM, LEASTRESPONSETIME).
    TimesActive,
    /// Services without active transactions first (tier 0), then `N` is the statistic
    /// (CUSTOMLOAD).
    TierByActive,
}

impl Rule {
    /// The rule of the method that minimises `stat`.
    pub(super) const fn of(stat: Stat) -> Self {
        match stat {
            Stat::Active | Stat::Packets | Stat::Bytes => Self::Plain,
            Stat::ResponseTime | Stat::MeasuredResponseTime => Self::TimesActive,
            Stat::Load => Self::TierByActive,
        }
    }

    pub(super) fn needs_active(self) -> bool {
        self != Self::Plain
    }

    #[inline(always)]
    pub(super) fn apply(self, value: u64, active: u64) -> (u64, u64) {
        match self {
            Self::Plain => (0, value),
            // Both factors capped at 2^32 so the product fits 64 bits exactly.
            Self::TimesActive => {
                let cap = u64::from(u32::MAX);
                (0, active.min(cap) * value.min(cap))
            }
            // `active != 0` as arithmetic (the top bit of `x | -x`): as a comparison it
            // becomes a branch.
            Self::TierByActive => ((active | active.wrapping_neg()) >> 63, value),
        }
    }
}

/// A least-X method's statistic and rule as constants, so that each method's scan is compiled
/// for it alone (no test of the method per member).
pub(super) trait LeastX {
    const STAT: Stat;
    const RULE: Rule = Rule::of(Self::STAT);
}

macro_rules! least_x {
    ($($name:ident: $stat:ident;)*) => {$(
        pub(super) struct $name;
        impl LeastX for $name {
            const STAT: Stat = Stat::$stat;
        }
    )*};
}

least_x! {
    LeastConnection: Active;
    LeastPackets: Packets;
    LeastBandwidth: Bytes;
    Lrtm: ResponseTime;
    LeastResponseTime: MeasuredResponseTime;
    CustomLoad: Load;
}

/// What a least-X method reads for one member: skip it, no sample yet, or `(tier, N)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Metric {
    Skip,
    Missing,
    Value(u8, u64),
}

impl From<Sample> for Metric {
    #[inline(always)]
    fn from(s: Sample) -> Self {
        match s {
            Sample::Skip => Self::Skip,
            Sample::Missing => Self::Missing,
            Sample::Value(v) => Self::Value(0, v),
        }
    }
}

/// Scans the members once, starting after `last` and wrapping, so that among equal weighted
/// values the first one met is the tie rule's choice. `metric` gives `(tier, N)`; a lower tier
/// always wins (CUSTOMLOAD's idle services), then the smaller `N / weight`.
pub(super) fn select(
    members: &[Member],
    scales: Option<&Scales>,
    last: Option<usize>,
    mut metric: impl FnMut(ServiceId) -> Metric,
) -> Pick {
    let start = match last {
        Some(l) if l + 1 < members.len() => l + 1,
        _ => 0,
    };
    let (head, tail) = members.split_at(start);
    let (complete, index) = match scales {
        Some(scales) => {
            let limit = scales.limit;
            let per_member = &scales.per_member[..];
            let (scale_head, scale_tail) = per_member.split_at(start.min(per_member.len()));
            let mut best = Ranked {
                index: usize::MAX,
                rank: u64::MAX,
            };
            let mut scan = scan_ranked(tail, scale_tail, start, limit, &mut metric, &mut best);
            if scan == Scan::Complete {
                scan = scan_ranked(head, scale_head, 0, limit, &mut metric, &mut best);
            }
            match scan {
                Scan::Complete => (true, best.index),
                Scan::Missing => (false, best.index),
                // A rank past 63 bits (never with real counts): compare exactly instead.
                Scan::Overflow => crossed(head, tail, start, &mut metric),
            }
        }
        None => crossed(head, tail, start, &mut metric),
    };
    match (complete, index) {
        (false, _) => Pick::MissingSample,
        (true, usize::MAX) => Pick::NoCandidate,
        (true, i) => Pick::Chosen(i),
    }
}

/// The cross-multiplying scan over the members after `start`, then those before.
#[inline(always)]
fn crossed(
    head: &[Member],
    tail: &[Member],
    start: usize,
    metric: &mut impl FnMut(ServiceId) -> Metric,
) -> (bool, usize) {
    let mut best = Crossed {
        index: usize::MAX,
        tier: u8::MAX,
        value: u64::MAX,
        weight: 1,
    };
    let complete =
        scan_crossed(tail, start, metric, &mut best) && scan_crossed(head, 0, metric, &mut best);
    (complete, best.index)
}

/// How a ranked scan ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scan {
    Complete,
    /// A candidate has no sample yet.
    Missing,
    /// A rank does not fit in 63 bits.
    Overflow,
}

struct Ranked {
    index: usize,
    /// The tier in bit 63, `N × L / weight` below it.
    rank: u64,
}

/// The tier's bit in a rank.
const TIER_BIT: u64 = 1 << 63;

/// Moves [`Entry::SECOND_TIER`] to [`TIER_BIT`].
const SECOND_TIER_TO_RANK: u32 = 63 - Entry::SECOND_TIER.trailing_zeros();

/// One contiguous run of members with precomputed scales.
#[inline(always)]
fn scan_ranked(
    members: &[Member],
    scales: &[u64],
    offset: usize,
    limit: u64,
    metric: &mut impl FnMut(ServiceId) -> Metric,
    best: &mut Ranked,
) -> Scan {
    for (k, (m, &scale)) in members.iter().zip(scales).enumerate() {
        let (tier, value) = match metric(m.service) {
            Metric::Skip => continue,
            Metric::Missing => return Scan::Missing,
            Metric::Value(tier, value) => (tier, value),
        };
        if value > limit {
            return Scan::Overflow;
        }
        let scaled = value * scale;
        let rank = if tier > 0 { TIER_BIT | scaled } else { scaled };
        // Strictly smaller only: an equal rank met later loses the tie. Selects, not a
        // branch: which member wins is data, not something to predict.
        let better = rank < best.rank;
        best.index = if better { offset + k } else { best.index };
        best.rank = if better { rank } else { best.rank };
    }
    Scan::Complete
}

#[derive(Clone, Copy)]
struct Crossed {
    index: usize,
    tier: u8,
    value: u64,
    weight: u64,
}

/// The general path: compare against the best so far by cross-multiplying.
#[inline(always)]
fn scan_crossed(
    members: &[Member],
    offset: usize,
    metric: &mut impl FnMut(ServiceId) -> Metric,
    best: &mut Crossed,
) -> bool {
    for (k, m) in members.iter().enumerate() {
        let (tier, value) = match metric(m.service) {
            Metric::Skip => continue,
            Metric::Missing => return false,
            Metric::Value(tier, value) => (tier, value),
        };
        let weight = u64::from(m.weight);
        let smaller = u128::from(value) * u128::from(best.weight)
            < u128::from(best.value) * u128::from(weight);
        if (tier < best.tier) | ((tier == best.tier) & smaller) {
            *best = Crossed {
                index: offset + k,
                tier,
                value,
                weight,
            };
        }
    }
    true
}

/// [`select`] over dense columns: the same pick, with loads and selects per member and no
/// branch. The entries hold `N` and the tier with the method's rule already applied, so every
/// least-X method scans alike. `None` when [`select`] must decide: a candidate has no sample yet (rare: LRTM and
/// CUSTOMLOAD before the monitors answer), a rank would not fit in 63 bits, or a member's
/// service is past the columns' end (`largest` is the largest service id).
#[inline(always)]
pub(super) fn select_columns(
    members: &[Member],
    largest: usize,
    scales: Option<&Scales>,
    last: Option<usize>,
    columns: &Columns,
) -> Option<Pick> {
    if largest >= columns.services() && !members.is_empty() {
        return None;
    }
    let start = match last {
        Some(l) if l + 1 < members.len() => l + 1,
        _ => 0,
    };
    let (head, tail) = members.split_at(start);
    let mut scan = ColumnScan {
        index: usize::MAX,
        rank: u64::MAX,
        flags: 0,
        values: 0,
    };
    let index = match scales {
        Some(scales) => {
            let (scale_head, scale_tail) = scales.per_member.split_at(start);
            let limit = scales.limit;
            scan_ranked_columns(tail, scale_tail, start, columns, &mut scan);
            scan_ranked_columns(head, scale_head, 0, columns, &mut scan);
            // Every value at most `limit` if their OR is (the OR is at least the largest; past
            // `limit` without one being, the exact path decides: the same pick, slower).
            if scan.values > limit {
                return None;
            }
            scan.index
        }
        None => {
            let mut best = Crossed {
                index: usize::MAX,
                tier: u8::MAX,
                value: u64::MAX,
                weight: 1,
            };
            scan_crossed_columns(tail, start, columns, &mut best, &mut scan.flags);
            scan_crossed_columns(head, 0, columns, &mut best, &mut scan.flags);
            best.index
        }
    };
    match (scan.flags & Entry::UNRANKED != 0, index) {
        (true, _) => None,
        (false, usize::MAX) => Some(Pick::NoCandidate),
        (false, i) => Some(Pick::Chosen(i)),
    }
}

struct ColumnScan {
    index: usize,
    rank: u64,
    /// The OR of the members' flags: [`Entry::UNRANKED`] in it sends the pick to the exact path.
    flags: u32,
    /// The OR of the members' values, to check them against the scales' limit once.
    values: u64,
}

#[inline(always)]
fn scan_ranked_columns(
    members: &[Member],
    scales: &[u64],
    offset: usize,
    columns: &Columns,
    scan: &mut ColumnScan,
) {
    for (k, (m, &scale)) in members.iter().zip(scales).enumerate() {
        // SAFETY: `select_columns` checked every member's service against the columns.
        let e = unsafe { columns.read(m.service as usize) };
        let pickable = e.flags & Entry::PICKABLE != 0;
        let n = e.value;
        scan.flags |= e.flags;
        scan.values |= n;
        let rank = (u64::from(e.flags & Entry::SECOND_TIER) << SECOND_TIER_TO_RANK)
            | n.wrapping_mul(scale);
        // Strictly smaller only, as in `scan_ranked`; a member that cannot be picked ranks
        // at `u64::MAX` and never wins.
        let rank = if pickable { rank } else { u64::MAX };
        let better = rank < scan.rank;
        scan.index = if better { offset + k } else { scan.index };
        scan.rank = if better { rank } else { scan.rank };
    }
}

#[inline(always)]
fn scan_crossed_columns(
    members: &[Member],
    offset: usize,
    columns: &Columns,
    best: &mut Crossed,
    flags: &mut u32,
) {
    for (k, m) in members.iter().enumerate() {
        // SAFETY: `select_columns` checked every member's service against the columns.
        let e = unsafe { columns.read(m.service as usize) };
        let pickable = e.flags & Entry::PICKABLE != 0;
        let value = e.value;
        let tier = u8::from(e.flags & Entry::SECOND_TIER != 0);
        *flags |= e.flags;
        let weight = u64::from(m.weight);
        let smaller = u128::from(value) * u128::from(best.weight)
            < u128::from(best.value) * u128::from(weight);
        let better = pickable & ((tier < best.tier) | ((tier == best.tier) & smaller));
        if better {
            *best = Crossed {
                index: offset + k,
                tier,
                value,
                weight,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(weights: &[u32]) -> Vec<Member> {
        weights
            .iter()
            .enumerate()
            .map(|(i, &w)| Member {
                service: i as u32,
                weight: w,
                seed: 0,
            })
            .collect()
    }

    #[test]
    fn scales_are_lcm_over_weight() {
        assert_eq!(
            scales(&members(&[2, 3, 4])).unwrap().per_member(),
            &[6, 4, 3]
        );
        assert_eq!(scales(&members(&[1, 1])).unwrap().per_member(), &[1, 1]);
        let all: Vec<u32> = (1..=100).collect();
        assert!(
            scales(&members(&all)).is_none(),
            "lcm(1..=100) needs the cross-multiplying path"
        );
    }

    #[test]
    fn ranks_past_63_bits_fall_back_to_exact_comparison() {
        let m = members(&[2, 3]);
        let sc = scales(&m).unwrap();
        // N × L / w overflows 63 bits for both; N/w: 2^62/2 > (2^62 - 9)/3, so member 1 wins.
        let values = [1u64 << 62, (1u64 << 62) - 9];
        let metric = |s: ServiceId| Metric::Value(0, values[s as usize]);
        let ranked = select(&m, Some(&sc), None, metric);
        assert!(matches!(ranked, Pick::Chosen(1)));
        assert!(matches!(select(&m, None, None, metric), Pick::Chosen(1)));
    }

    #[test]
    fn a_busy_member_at_the_largest_rank_is_still_chosen() {
        let m = members(&[1]);
        let sc = scales(&m).unwrap();
        let metric = |_| Metric::Value(1, sc.limit);
        assert!(matches!(
            select(&m, Some(&sc), None, metric),
            Pick::Chosen(0)
        ));
    }

    /// Both paths agree on every pick over random pools (the scenario files cover the seeds).
    #[test]
    fn ranked_and_crossed_paths_agree() {
        use crate::lb::{ServiceSnapshot, ServiceView, SnapshotView};
        let mut r = 7u64;
        let mut next = || {
            r = r
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            r >> 33
        };
        for _ in 0..2000 {
            let n = 1 + (next() % 12) as usize;
            let weights: Vec<u32> = (0..n).map(|_| 1 + (next() % 8) as u32).collect();
            let m = members(&weights);
            let view = SnapshotView {
                services: (0..n)
                    .map(|_| ServiceSnapshot {
                        candidate: next() % 5 != 0,
                        active: next() % 4,
                        load: Some(next() % 6),
                        ..Default::default()
                    })
                    .collect(),
            };
            let last = (next() % 2 == 0).then(|| (next() as usize) % n);
            let metric = |s: ServiceId| {
                if view.is_candidate(s) {
                    Metric::Value(u8::from(view.active(s) > 0), view.load(s).unwrap_or(0))
                } else {
                    Metric::Skip
                }
            };
            let a = select(&m, scales(&m).as_ref(), last, metric);
            let b = select(&m, None, last, metric);
            let idx = |p: Pick| match p {
                Pick::Chosen(i) => Some(i),
                _ => None,
            };
            assert_eq!(
                idx(a),
                idx(b),
                "weights {weights:?} view {view:?} last {last:?}"
            );
        }
    }
}
