//! From probe results to monitor state, and from monitor states to service state (SPEC §4,
//! NetScaler's retries / failureRetries / successRetries / downTime / reverse / monThreshold).
//!
//! Sans-IO: time is passed in (milliseconds); nothing here reads a clock or owns a socket.

use std::fmt;

/// A monitor binding's state, as `show service` prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MonitorState {
    /// No decision yet: not enough probes. Selection treats it as not UP.
    Unknown,
    Up,
    Down,
}

impl fmt::Display for MonitorState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Unknown => "UNKNOWN",
            Self::Up => "UP",
            Self::Down => "DOWN",
        })
    }
}

/// The timing and counting parameters of a monitor, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timers {
    pub interval: u64,
    pub resp_timeout: u64,
    pub down_time: u64,
    pub retries: u32,
    pub failure_retries: u32,
    pub success_retries: u32,
    pub reverse: bool,
}

/// One monitor bound to one service: counts probe results and schedules the next probe.
#[derive(Clone, Debug)]
pub struct BindingHealth {
    timers: Timers,
    state: MonitorState,
    /// The last results, newest in bit 0; 1 = failure.
    failures: u128,
    successes_in_a_row: u32,
    failures_in_a_row: u32,
    next_probe: u64,
    pub probes: u64,
    pub failed_probes: u64,
}

impl BindingHealth {
    /// A binding whose first probe is due at `now`.
    pub fn new(timers: Timers, now: u64) -> Self {
        Self {
            timers,
            state: MonitorState::Unknown,
            failures: 0,
            successes_in_a_row: 0,
            failures_in_a_row: 0,
            next_probe: now,
            probes: 0,
            failed_probes: 0,
        }
    }

    /// New parameters (`set lb monitor`): state and counts stay; the next probe keeps its
    /// time unless the new interval brings it closer.
    pub fn set_timers(&mut self, timers: Timers, now: u64) {
        if timers != self.timers {
            self.timers = timers;
            self.next_probe = self.next_probe.min(now + timers.interval);
        }
    }

    pub fn state(&self) -> MonitorState {
        self.state
    }

    /// When the next probe is due: `interval` after the last one, `downTime` while DOWN.
    pub fn poll_timeout(&self) -> u64 {
        self.next_probe
    }

    /// How long a probe started now may take before it counts as failed.
    pub fn resp_timeout(&self) -> u64 {
        self.timers.resp_timeout
    }

    /// Records the result of a probe that ended at `now` (`passed`: the monitor's check held,
    /// before `-reverse`). Returns the new state when it changed.
    pub fn record(&mut self, now: u64, passed: bool) -> Option<MonitorState> {
        let ok = passed != self.timers.reverse;
        self.probes += 1;
        self.failed_probes += u64::from(!ok);
        self.failures = (self.failures << 1) | u128::from(!ok);
        if ok {
            self.successes_in_a_row += 1;
            self.failures_in_a_row = 0;
        } else {
            self.failures_in_a_row += 1;
            self.successes_in_a_row = 0;
        }
        let before = self.state;
        let retries = self.timers.retries.max(1);
        let down = if self.timers.failure_retries == 0 {
            self.failures_in_a_row >= retries
        } else {
            // At least failureRetries failures among the last `retries` probes.
            let mask = (1u128 << retries.min(127)) - 1;
            (self.failures & mask).count_ones() >= self.timers.failure_retries
        };
        if self.successes_in_a_row >= self.timers.success_retries.max(1) {
            self.state = MonitorState::Up;
        } else if down && before != MonitorState::Down {
            self.state = MonitorState::Down;
        }
        // While DOWN a failing service is probed every downTime; once a probe passes, the next
        // ones come at the interval so successRetries can bring it back without waiting
        // downTime each time.
        let wait = if self.state == MonitorState::Down && !ok {
            self.timers.down_time
        } else {
            self.timers.interval
        };
        self.next_probe = now + wait;
        (self.state != before).then_some(self.state)
    }
}

/// A service's state from its monitor bindings: `(weight, enabled, state)` of each, LOAD
/// monitors left out by the caller. With `monThreshold` 0 every enabled monitor must be UP;
/// otherwise the weights of the UP ones must reach it. No enabled monitor: UP.
pub fn service_up(bindings: &[(u32, bool, MonitorState)], mon_threshold: u32) -> bool {
    let enabled = bindings.iter().filter(|(_, on, _)| *on);
    if mon_threshold == 0 {
        return enabled.clone().all(|(_, _, s)| *s == MonitorState::Up);
    }
    enabled
        .filter(|(_, _, s)| *s == MonitorState::Up)
        .map(|(w, _, _)| *w)
        .sum::<u32>()
        >= mon_threshold
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timers() -> Timers {
        Timers {
            interval: 5000,
            resp_timeout: 2000,
            down_time: 30_000,
            retries: 3,
            failure_retries: 0,
            success_retries: 1,
            reverse: false,
        }
    }

    fn run(h: &mut BindingHealth, results: &str) -> Vec<MonitorState> {
        let mut states = Vec::new();
        for c in results.chars() {
            let now = h.poll_timeout();
            h.record(now, c == 'S');
            states.push(h.state());
        }
        states
    }

    #[test]
    fn three_consecutive_failures_mark_down_and_down_probes_every_downtime() {
        let mut h = BindingHealth::new(timers(), 0);
        use MonitorState::*;
        assert_eq!(run(&mut h, "SFFSFFF"), [Up, Up, Up, Up, Up, Up, Down]);
        // PF PS PF is not DOWN (KB CTX132937); three in a row is.
        let t = h.poll_timeout();
        assert_eq!(
            t,
            30_000 + 30_000,
            "first probe at 0, then every 5 s; DOWN at 30 s waits downTime"
        );
        assert_eq!(h.record(t, true), Some(Up));
        assert_eq!(h.poll_timeout(), t + 5000);
        assert_eq!((h.probes, h.failed_probes), (8, 5));
    }

    #[test]
    fn recovery_probes_at_the_interval_once_a_probe_passes() {
        let mut h = BindingHealth::new(
            Timers {
                success_retries: 2,
                ..timers()
            },
            0,
        );
        use MonitorState::*;
        run(&mut h, "SSFFF");
        assert_eq!(h.state(), Down);
        let t = h.poll_timeout();
        h.record(t, true);
        assert_eq!(
            (h.state(), h.poll_timeout()),
            (Down, t + 5000),
            "one success: still DOWN, next at the interval"
        );
        h.record(t + 5000, true);
        assert_eq!(h.state(), Up);
    }

    #[test]
    fn failure_retries_count_failures_among_the_last_retries() {
        let mut h = BindingHealth::new(
            Timers {
                retries: 10,
                failure_retries: 6,
                ..timers()
            },
            0,
        );
        use MonitorState::*;
        let states = run(&mut h, "SFSFSFSFSF");
        assert_eq!(*states.last().unwrap(), Up, "5 of 10 failed");
        let states = run(&mut h, "F");
        assert_eq!(*states.last().unwrap(), Down, "6 of the last 10 failed");
    }

    #[test]
    fn success_retries_and_reverse() {
        let mut h = BindingHealth::new(
            Timers {
                success_retries: 3,
                ..timers()
            },
            0,
        );
        use MonitorState::*;
        assert_eq!(
            run(&mut h, "SSFSSS"),
            [Unknown, Unknown, Unknown, Unknown, Unknown, Up]
        );
        let mut r = BindingHealth::new(
            Timers {
                reverse: true,
                ..timers()
            },
            0,
        );
        assert_eq!(
            run(&mut r, "FSSS"),
            [Up, Up, Up, Down],
            "reverse: a passing check is a failure"
        );
    }

    #[test]
    fn service_state_from_weights_and_threshold() {
        use MonitorState::*;
        // NetScaler's example: weights 1, 3, 1 and monThreshold 3.
        assert!(service_up(
            &[(1, true, Down), (3, true, Up), (1, true, Down)],
            3
        ));
        assert!(!service_up(
            &[(1, true, Up), (3, true, Down), (1, true, Up)],
            3
        ));
        assert!(
            !service_up(&[(1, true, Up), (1, true, Down)], 0),
            "threshold 0: all must be UP"
        );
        assert!(
            service_up(&[(1, true, Up), (1, false, Down)], 0),
            "disabled bindings do not count"
        );
        assert!(service_up(&[], 0));
        assert!(!service_up(&[(1, true, Unknown)], 0));
    }
}
