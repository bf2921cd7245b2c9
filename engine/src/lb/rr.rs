//! Smooth weighted round robin (nginx's interleaving): each pick adds every candidate's
//! weight to its credit, takes the highest credit (the first in bind order on a tie) and
//! charges it the total. Weights 5/1/1 give a a b a c a a, not a a a a a b c.

use super::{Member, ServiceView};

pub(super) fn select<V: ServiceView>(
    members: &[Member],
    credit: &mut [i64],
    view: &V,
) -> Option<usize> {
    let mut total = 0i64;
    let mut best: Option<(usize, i64)> = None;
    for (i, (m, c)) in members.iter().zip(credit.iter_mut()).enumerate() {
        if !view.is_candidate(m.service) {
            continue;
        }
        let w = i64::from(m.weight.max(1));
        *c += w;
        total += w;
        if best.is_none_or(|(_, bc)| *c > bc) {
            best = Some((i, *c));
        }
    }
    let (b, _) = best?;
    credit[b] -= total;
    Some(b)
}
