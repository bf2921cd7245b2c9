//! The daemon's one clock. Workers, the monitor core and the control plane (drains, rates)
//! read the same time, passed down as numbers; nothing below the daemon reads a clock of its
//! own. Tests set the time by hand.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

#[derive(Clone, Debug)]
enum Source {
    Monotonic(Instant),
    /// Microseconds, moved by [`Clock::advance`].
    Manual(Arc<AtomicU64>),
}

/// Time since the daemon started (or since a test's clock was made).
#[derive(Clone, Debug)]
pub struct Clock(Source);

impl Clock {
    /// The system's monotonic clock, from now.
    pub fn monotonic() -> Self {
        Self(Source::Monotonic(Instant::now()))
    }

    /// A clock at 0 that moves only when told to.
    pub fn manual() -> Self {
        Self(Source::Manual(Arc::new(AtomicU64::new(0))))
    }

    /// Moves a manual clock forward by `ms` (a monotonic clock moves by itself).
    pub fn advance(&self, ms: u64) {
        if let Source::Manual(us) = &self.0 {
            us.fetch_add(ms * 1000, Ordering::Relaxed);
        }
    }

    pub fn now_us(&self) -> u64 {
        match &self.0 {
            Source::Monotonic(start) => start.elapsed().as_micros() as u64,
            Source::Manual(us) => us.load(Ordering::Relaxed),
        }
    }

    pub fn now_ms(&self) -> u64 {
        self.now_us() / 1000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clocks_move_when_told_and_copies_share_the_time() {
        let clock = Clock::manual();
        let copy = clock.clone();
        assert_eq!(clock.now_ms(), 0);
        clock.advance(1500);
        assert_eq!((copy.now_ms(), copy.now_us()), (1500, 1_500_000));
        let real = Clock::monotonic();
        real.advance(10_000);
        assert!(
            real.now_ms() < 10_000,
            "a monotonic clock is not moved by hand"
        );
    }
}
