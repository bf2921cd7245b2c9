//! Per-second rates for `stat`, next to the totals as NetScaler shows them: the control plane
//! samples the counters' totals about once a second and a rate is the change over the last
//! [`RATE_WINDOW_MS`] (or over what has been sampled so far). Nothing here touches the hot path.

use std::collections::{HashMap, VecDeque};

/// How far back a rate looks.
pub const RATE_WINDOW_MS: u64 = 7_000;

/// Counter totals of one object: hits, packets, bytes.
pub type Totals = [u64; 3];

/// Samples of every object's totals, newest last.
#[derive(Debug, Default)]
pub struct RateBook {
    /// (milliseconds on the daemon's clock, totals by object)
    samples: VecDeque<(u64, HashMap<String, Totals>)>,
}

impl RateBook {
    /// Whether a new sample is due at `now` (one a second).
    pub fn due(&self, now_ms: u64) -> bool {
        self.samples
            .back()
            .is_none_or(|(t, _)| now_ms.saturating_sub(*t) >= 1000)
    }

    /// Records the totals of every object at `now`, forgetting samples older than the window.
    pub fn record(&mut self, now_ms: u64, totals: HashMap<String, Totals>) {
        self.samples.push_back((now_ms, totals));
        while self
            .samples
            .front()
            .is_some_and(|(t, _)| now_ms.saturating_sub(*t) > RATE_WINDOW_MS)
        {
            self.samples.pop_front();
        }
    }

    /// Per-second rates of `key` whose totals are `current` at `now`: the change since the
    /// oldest sample in the window. Zero without a sample at least 0.5 s old.
    pub fn rates(&self, key: &str, current: Totals, now_ms: u64) -> Totals {
        let Some((t, old)) = self
            .samples
            .iter()
            .find_map(|(t, m)| m.get(key).map(|o| (*t, *o)))
        else {
            return [0; 3];
        };
        let secs = now_ms.saturating_sub(t) as f64 / 1000.0;
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
        let t0 = 5_000;
        let mut book = RateBook::default();
        let at = |s: u64| t0 + s * 1000;
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
