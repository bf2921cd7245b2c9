//! When each binding probes next: a due-time heap of the idle bindings and the list of those
//! with a probe running. The work per round is proportional to the probes due and running,
//! not to the bindings.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Debug, Default)]
pub struct Scheduler {
    /// Idle bindings by the millisecond their next probe is due (entries whose binding has
    /// moved on are skipped by the caller when popped).
    due: BinaryHeap<Reverse<(u64, usize)>>,
    /// Bindings with a probe or script running.
    running: Vec<usize>,
}

impl Scheduler {
    pub fn clear(&mut self) {
        self.due.clear();
        self.running.clear();
    }

    /// Binding `i` is idle until `at_ms`.
    pub fn due_at(&mut self, at_ms: u64, i: usize) {
        self.due.push(Reverse((at_ms, i)));
    }

    /// The next entry due by `now_ms`, as (due time, binding).
    pub fn pop_due(&mut self, now_ms: u64) -> Option<(u64, usize)> {
        let &Reverse((when, i)) = self.due.peek()?;
        if when > now_ms {
            return None;
        }
        self.due.pop();
        Some((when, i))
    }

    /// When the earliest idle binding is due (ms), if any; entries may be stale (then the
    /// caller wakes a little early, never late).
    pub fn next_due(&self) -> Option<u64> {
        self.due.peek().map(|Reverse((when, _))| *when)
    }

    /// Whether any probe is running.
    pub fn any_running(&self) -> bool {
        !self.running.is_empty()
    }

    pub fn start_running(&mut self, i: usize) {
        self.running.push(i);
    }

    /// The running bindings, for one pass: those still running after it are put back
    /// with [`Scheduler::start_running`].
    pub fn take_running(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.running)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earliest_due_comes_first_and_only_when_due() {
        let mut s = Scheduler::default();
        s.due_at(30, 0);
        s.due_at(10, 1);
        s.due_at(20, 2);
        assert_eq!(s.pop_due(5), None);
        assert_eq!(s.pop_due(25), Some((10, 1)));
        assert_eq!(s.pop_due(25), Some((20, 2)));
        assert_eq!(s.pop_due(25), None);
        s.start_running(1);
        s.start_running(2);
        assert_eq!(s.take_running(), [1, 2]);
        assert!(s.take_running().is_empty());
    }
}
