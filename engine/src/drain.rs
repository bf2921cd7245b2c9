//! Taking a service out of service as NetScaler does (`disable service <s> [<delay>]
//! [-graceFul YES]`): no new flows at once; the established ones are flushed (with
//! `-downStateFlush ENABLED`) at once, after the delay, or never for a graceful disable without
//! delay, whose flows end by themselves. Until then the service is GOING OUT OF SERVICE.
//!
//! Time is the daemon's clock in milliseconds, the one the workers get.

/// A disable in progress, kept by the control plane across configuration generations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Drain {
    pub since_ms: u64,
    /// The delay given (0 counts as none).
    pub delay_ms: Option<u64>,
    pub graceful: bool,
}

/// What `show service` says about a service going out of service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Going {
    pub graceful: bool,
    /// Seconds left before it is OUT OF SERVICE, when a delay bounds it.
    pub remaining_s: Option<u64>,
}

impl Drain {
    pub fn new(now_ms: u64, delay_s: Option<u64>, graceful: bool) -> Self {
        Self {
            since_ms: now_ms,
            delay_ms: delay_s.filter(|d| *d > 0).map(|d| d * 1000),
            graceful,
        }
    }

    /// From when on the service's remaining flows are flushed; `None`: never (graceful
    /// without a delay waits for them, however long).
    pub fn flush_from(&self) -> Option<u64> {
        match (self.delay_ms, self.graceful) {
            (Some(d), _) => Some(self.since_ms + d),
            (None, true) => None,
            (None, false) => Some(self.since_ms),
        }
    }

    /// `Some` while the service is still GOING OUT OF SERVICE at `now_ms` with `active`
    /// transactions: a delay not yet over, or a graceful disable with connections left.
    pub fn going(&self, now_ms: u64, active: u64) -> Option<Going> {
        let deadline = self.flush_from();
        let before_deadline = deadline.is_some_and(|t| now_ms < t);
        let going = match (self.delay_ms, self.graceful) {
            (Some(_), false) => before_deadline,
            (Some(_), true) => before_deadline && active > 0,
            (None, true) => active > 0,
            (None, false) => false,
        };
        going.then(|| Going {
            graceful: self.graceful,
            remaining_s: deadline.map(|t| (t.saturating_sub(now_ms)).div_ceil(1000)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_four_forms_of_disable() {
        // disable service s: out of service and flushed at once.
        let d = Drain::new(1000, None, false);
        assert_eq!(d.flush_from(), Some(1000));
        assert_eq!(d.going(1000, 5), None);
        // disable service s 0: the same.
        assert_eq!(Drain::new(1000, Some(0), false), d);
        // disable service s 60: going for 60 s whatever the connections, then flushed.
        let d = Drain::new(1000, Some(60), false);
        assert_eq!(d.flush_from(), Some(61_000));
        assert_eq!(
            d.going(2000, 0),
            Some(Going {
                graceful: false,
                remaining_s: Some(59)
            })
        );
        assert_eq!(d.going(61_000, 3), None);
        // disable service s -graceFul YES: going while connections remain, never flushed.
        let d = Drain::new(1000, None, true);
        assert_eq!(d.flush_from(), None);
        assert!(d.going(999_999, 1).is_some());
        assert_eq!(d.going(2000, 0), None);
        // disable service s 30 -graceFul YES: going until the connections end or 30 s pass.
        let d = Drain::new(0, Some(30), true);
        assert_eq!(d.going(10_000, 2).unwrap().remaining_s, Some(20));
        assert_eq!(d.going(10_000, 0), None);
        assert_eq!(d.going(30_000, 2), None);
        assert_eq!(d.flush_from(), Some(30_000));
    }
}
