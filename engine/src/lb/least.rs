//! The least-X methods: the candidate with the smallest weighted value wins.

use super::{Member, ServiceId, ServiceView};

pub(super) enum Pick {
    Chosen(usize),
    NoCandidate,
    /// A candidate has no sample yet (LRTM response time, CUSTOMLOAD load).
    MissingSample,
}

/// Scans the members once, starting after `last` and wrapping, so that among equal weighted
/// values the first one met is the tie rule's choice. `metric` gives `(tier, N)`; a lower tier
/// always wins (CUSTOMLOAD's idle services), then the smaller `N / weight`, compared as
/// `N_a × w_b < N_b × w_a` so no rounding can reorder services.
pub(super) fn select<V: ServiceView>(
    members: &[Member],
    last: Option<usize>,
    view: &V,
    mut metric: impl FnMut(ServiceId) -> Option<(u8, u128)>,
) -> Pick {
    let n = members.len();
    let start = match last {
        Some(l) if l + 1 < n => l + 1,
        _ => 0,
    };
    let mut best: Option<(usize, u8, u128, u128)> = None;
    for j in 0..n {
        let i = if start + j >= n {
            start + j - n
        } else {
            start + j
        };
        let m = members[i];
        if !view.is_candidate(m.service) {
            continue;
        }
        let Some((tier, value)) = metric(m.service) else {
            return Pick::MissingSample;
        };
        let weight = u128::from(m.weight.max(1));
        let better = match best {
            None => true,
            Some((_, best_tier, best_value, best_weight)) => {
                tier < best_tier
                    || (tier == best_tier
                        && value.saturating_mul(best_weight) < best_value.saturating_mul(weight))
            }
        };
        if better {
            best = Some((i, tier, value, weight));
        }
    }
    best.map_or(Pick::NoCandidate, |(i, ..)| Pick::Chosen(i))
}
