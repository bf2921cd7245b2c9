//! Per-second rates for `stat`, next to the totals as NetScaler shows them: the control plane
//! samples the counters' totals about once a second and a rate is the change over the last
//! [`RATE_WINDOW`] (or over what has been sampled so far). Nothing here touches the hot path.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// How far back a rate looks.
pub const RATE_WINDOW: Duration = Duration::from_secs(7);

/// Counter totals of one object: hits, packets, bytes.
pub type Totals = [u64; 3];

/// Samples of every object's totals, newest last.
#[derive(Debug, Default)]
pub struct RateBook {
    samples: VecDeque<(Instant, HashMap<String, Totals>)>,
}

impl RateBook {
    /// Whether a new sample is due at `now` (one a second).
    pub fn due(&self, now: Instant) -> bool {
        self.samples
            .back()
            .is_none_or(|(t, _)| now.duration_since(*t) >= Duration::from_secs(1))
    }

    /// Records the totals of every object at `now`, forgetting samples older than the window.
    pub fn record(&mut self, now: Instant, totals: HashMap<String, Totals>) {
        self.samples.push_back((now, totals));
        while self
            .samples
            .front()
            .is_some_and(|(t, _)| now.duration_since(*t) > RATE_WINDOW)
        {
            self.samples.pop_front();
        }
    }

    /// Per-second rates of `key` whose totals are `current` at `now`: the change since the
    /// oldest sample in the window. Zero without a sample at least 0.5 s old.
    pub fn rates(&self, key: &str, current: Totals, now: Instant) -> Totals {
        let Some((t, old)) = self
            .samples
            .iter()
            .find_map(|(t, m)| m.get(key).map(|o| (*t, *o)))
        else {
            return [0; 3];
        };
        let secs = now.duration_since(t).as_secs_f64();
        if secs < 0.5 {
            return [0; 3];
        }
        std::array::from_fn(|i| (current[i].saturating_sub(old[i]) as f64 / secs).round() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_is_the_change_over_the_window() {
        let t0 = Instant::now();
        let mut book = RateBook::default();
        let at = |s: u64| t0 + Duration::from_secs(s);
        assert!(book.due(t0));
        for s in 0..=10u64 {
            // 100 hits, 1000 packets, 64000 bytes a second.
            let totals = [100 * s, 1000 * s, 64_000 * s];
            book.record(at(s), HashMap::from([("s:web1".to_owned(), totals)]));
        }
        assert!(!book.due(at(10)));
        assert_eq!(
            book.rates("s:web1", [1000, 10_000, 640_000], at(10)),
            [100, 1000, 64_000]
        );
        assert_eq!(book.rates("s:nosuch", [5, 5, 5], at(10)), [0; 3]);
        // The window forgets what is older than 7 s.
        assert!(book.samples.len() <= 8);
    }
}
