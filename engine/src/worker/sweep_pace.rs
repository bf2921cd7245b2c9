//! How far the expiry sweep goes per housekeeping call: paced by the clock, not by the
//! rounds. A busy worker runs hundreds of thousands of rounds a second; a fixed budget per
//! round walked a million-flow table every few milliseconds, every slot a cache miss, and
//! took a sixth of the worker's time in the lab. Paced, the whole table is gone over once
//! per [`SWEEP_PERIOD_MS`] however often the rounds come; a call examines at most
//! [`SWEEP_MOST_FLOWS_PER_CALL`] flows, so no burst waits behind a long sweep.

/// Every slot is gone over at least once in this long while rounds come (timeouts are whole
/// seconds, so a flow leaves at most this late).
pub const SWEEP_PERIOD_MS: u64 = 1000;
/// Most flows one call examines (empty slots cost next to nothing: the table's bitmap skips
/// 64 at a time). A full table is then caught up over several calls.
pub const SWEEP_MOST_FLOWS_PER_CALL: usize = 2048;

/// The slots owed to the sweep, accrued with the clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SweepPace {
    /// The clock when the sweep last accrued.
    last_ms: Option<u64>,
    /// Slot-milliseconds owed: `capacity` per elapsed millisecond, a slot per period.
    owed: u64,
}

impl SweepPace {
    /// Slots owed now in a table of `capacity` slots (at most the whole table); the sweep
    /// reports what it went over with [`SweepPace::paid`].
    pub fn owed(&mut self, now_ms: u64, capacity: usize) -> usize {
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
        (self.owed / SWEEP_PERIOD_MS) as usize
    }

    /// The sweep went over `slots` of what was owed.
    pub fn paid(&mut self, slots: usize) {
        self.owed = self
            .owed
            .saturating_sub((slots as u64).saturating_mul(SWEEP_PERIOD_MS));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pays in full, as a sweep over a table with few flows does.
    fn take(pace: &mut SweepPace, now_ms: u64, capacity: usize) -> usize {
        let slots = pace.owed(now_ms, capacity);
        pace.paid(slots);
        slots
    }

    #[test]
    fn a_table_is_swept_once_a_period_however_often_the_rounds_come() {
        let capacity = 1 << 20;
        for rounds_per_ms in [1, 7, 300] {
            let mut pace = SweepPace::default();
            take(&mut pace, 0, capacity);
            let mut swept = 0;
            for ms in 1..=SWEEP_PERIOD_MS {
                for _ in 0..rounds_per_ms {
                    swept += take(&mut pace, ms, capacity);
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
        assert_eq!(take(&mut pace, 0, 64), 64, "the first call owes the table");
        let swept: usize = (1..=SWEEP_PERIOD_MS)
            .map(|ms| take(&mut pace, ms, 64))
            .sum();
        assert_eq!(swept, 64);
        let mut pace = SweepPace::default();
        take(&mut pace, 10, 1 << 20);
        assert_eq!(take(&mut pace, 10, 1 << 20), 0);
        assert!(take(&mut pace, 11, 1 << 20) > 0);
    }

    #[test]
    fn a_long_sleep_owes_one_table_and_what_a_sweep_leaves_stays_owed() {
        let mut pace = SweepPace::default();
        take(&mut pace, 0, 10_000);
        assert_eq!(pace.owed(60_000, 10_000), 10_000, "one table, not sixty");
        pace.paid(2_048);
        assert_eq!(pace.owed(60_000, 10_000), 10_000 - 2_048);
        pace.paid(10_000);
        assert_eq!(pace.owed(60_000, 10_000), 0);
        assert_eq!(
            pace.owed(59_000, 10_000),
            0,
            "a clock going back owes nothing"
        );
    }
}
