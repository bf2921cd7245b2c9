//! How many flow slots the expiry sweep examines per housekeeping call: paced by the clock,
//! not by the rounds. A busy worker runs hundreds of thousands of rounds a second; a fixed
//! budget per round walked a million-flow table every few milliseconds, every slot a cache
//! miss, and took a sixth of the worker's time in the lab. Paced, the whole table is
//! examined once per [`SWEEP_PERIOD_MS`] however often the rounds come.

/// Every slot is examined at least once in this long while rounds come (timeouts are whole
/// seconds, so a flow leaves at most this late).
pub const SWEEP_PERIOD_MS: u64 = 1000;
/// Most slots one call examines (a round after a long sleep catches up over several calls,
/// so no burst waits behind a long sweep).
pub const SWEEP_MOST_PER_CALL: usize = 2048;

/// The slots owed to the sweep, accrued with the clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SweepPace {
    /// The clock when the sweep was last paid for.
    last_ms: Option<u64>,
    /// Slot-milliseconds owed: `capacity` per elapsed millisecond, a slot per period.
    owed: u64,
}

impl SweepPace {
    /// Slots to examine now in a table of `capacity` slots (zero within the same millisecond).
    pub fn budget(&mut self, now_ms: u64, capacity: usize) -> usize {
        let capacity = capacity as u64;
        // The first call owes a whole table; a clock that goes back owes nothing.
        let elapsed = self
            .last_ms
            .map_or(SWEEP_PERIOD_MS, |last| now_ms.saturating_sub(last));
        self.last_ms = Some(self.last_ms.map_or(now_ms, |last| last.max(now_ms)));
        // More than a whole table is never owed: one full sweep finds every expired flow.
        let full = capacity.saturating_mul(SWEEP_PERIOD_MS);
        self.owed = self
            .owed
            .saturating_add(capacity.saturating_mul(elapsed))
            .min(full);
        let slots = (self.owed / SWEEP_PERIOD_MS).min(SWEEP_MOST_PER_CALL as u64);
        self.owed -= slots * SWEEP_PERIOD_MS;
        slots as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_is_swept_once_a_period_however_often_the_rounds_come() {
        let capacity = 1 << 20;
        for rounds_per_ms in [1, 7, 300] {
            let mut pace = SweepPace::default();
            while pace.budget(0, capacity) > 0 {}
            let mut swept = 0;
            for ms in 1..=SWEEP_PERIOD_MS {
                for _ in 0..rounds_per_ms {
                    swept += pace.budget(ms, capacity);
                }
            }
            // One table, give or take a millisecond's share.
            let per_ms = capacity / SWEEP_PERIOD_MS as usize;
            assert!(
                swept.abs_diff(capacity) <= per_ms,
                "{rounds_per_ms} rounds/ms swept {swept}"
            );
        }
    }

    #[test]
    fn a_small_table_is_swept_too_and_rounds_within_a_millisecond_sweep_nothing_more() {
        let mut pace = SweepPace::default();
        assert_eq!(
            pace.budget(0, 64),
            64,
            "the first call sweeps the whole table"
        );
        let swept: usize = (1..=SWEEP_PERIOD_MS).map(|ms| pace.budget(ms, 64)).sum();
        assert_eq!(swept, 64);
        let mut pace = SweepPace::default();
        while pace.budget(10, 1 << 20) > 0 {}
        assert_eq!(pace.budget(10, 1 << 20), 0);
        assert!(pace.budget(11, 1 << 20) > 0);
    }

    #[test]
    fn a_long_sleep_owes_one_table_paid_over_several_calls() {
        let mut pace = SweepPace::default();
        while pace.budget(0, 10_000) > 0 {}
        let first = pace.budget(60_000, 10_000);
        assert_eq!(first, SWEEP_MOST_PER_CALL);
        let rest: usize = (0..100).map(|_| pace.budget(60_000, 10_000)).sum();
        assert_eq!(first + rest, 10_000, "one table, not sixty");
        assert_eq!(
            pace.budget(59_000, 10_000),
            0,
            "a clock going back owes nothing"
        );
    }
}
