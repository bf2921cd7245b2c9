//! The daemon's one clock. Workers, the monitor core and the control plane (drains, rates)
//! read the same time, passed down as numbers; nothing below the daemon reads a clock of its
//! own. Tests set the time by hand.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime};

#[derive(Clone, Debug)]
enum Source {
    Monotonic(Instant),
    /// Microseconds, moved by [`Clock::advance`].
    Manual(Arc<AtomicU64>),
}

/// Time since the daemon started (or since a test's clock was made), and the wall clock at
/// that start.
#[derive(Clone, Debug)]
pub struct Clock(Source, u64);

impl Clock {
    /// The system's monotonic clock, from now.
    pub fn monotonic() -> Self {
        // Read together: the wall clock moves only this once into the daemon's time.
        let wall_ms = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        Self(Source::Monotonic(Instant::now()), wall_ms)
    }

    /// A clock at 0 that moves only when told to.
    pub fn manual() -> Self {
        Self(Source::Manual(Arc::new(AtomicU64::new(0))), 0)
    }

    /// The wall clock (milliseconds since 1970) when this clock was at 0; 0 for a manual
    /// clock. What must keep growing across restarts of the daemon, and agree between
    /// nodes, counts from here (the TCP timestamps toward services).
    pub fn wall_ms_at_zero(&self) -> u64 {
        self.1
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
        // 2020-01-01 in ms: the daemon's clock starts at the wall clock's now.
        assert!(real.wall_ms_at_zero() > 1_577_836_800_000);
        assert_eq!(clock.wall_ms_at_zero(), 0);
    }
}
