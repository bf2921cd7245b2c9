//! Stage 3's new flows between being placed in the table and entering its index: a chosen
//! flow enters a few choices later, so the index bucket of its server-side key (known only
//! once its SNAT port is) has loaded from memory by then instead of stalling the insert.

use crate::flow::KeyHashes;

/// A new flow placed in the table but not yet entered, and its keys' hashes.
#[derive(Clone, Copy)]
pub(super) struct Chosen {
    pub(super) slot: u32,
    pub(super) hashes: KeyHashes,
}

/// A new flow of a burst placed in the table but not yet entered (stage 3); its server key's
/// index bucket is loading.
#[derive(Clone, Copy)]
pub(super) struct Placed {
    pub(super) frame: usize,
    pub(super) chosen: Chosen,
}

/// How many chosen flows wait to enter the table: enough choices in between for a server-side
/// bucket of a big table to load from memory.
const IN_FLIGHT: usize = 4;

/// The flows of a burst placed but not entered yet, oldest first.
#[derive(Default)]
pub(super) struct InFlight {
    placed: [Option<Placed>; IN_FLIGHT],
    /// Where the oldest is, and how many there are.
    first: usize,
    len: usize,
}

impl InFlight {
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Adds `placed`; the oldest comes back when it makes room.
    #[inline]
    pub(super) fn push(&mut self, placed: Placed) -> Option<Placed> {
        let oldest = if self.len == IN_FLIGHT {
            self.oldest()
        } else {
            None
        };
        self.placed[(self.first + self.len) % IN_FLIGHT] = Some(placed);
        self.len += 1;
        oldest
    }

    /// Takes the oldest out.
    #[inline]
    pub(super) fn oldest(&mut self) -> Option<Placed> {
        if self.len == 0 {
            return None;
        }
        let oldest = self.placed[self.first].take();
        self.first = (self.first + 1) % IN_FLIGHT;
        self.len -= 1;
        oldest
    }

    /// Whether a flow in flight was placed for a frame whose key hashes to `hash` (its
    /// client key's). A place not in flight is empty, so all are looked at, without the ring's
    /// arithmetic.
    #[inline]
    pub(super) fn holds(&self, hash: u64) -> bool {
        self.placed
            .iter()
            .any(|p| p.is_some_and(|p| p.chosen.hashes.client == hash))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placed(frame: usize) -> Placed {
        Placed {
            frame,
            chosen: Chosen {
                slot: frame as u32,
                hashes: KeyHashes {
                    client: 10 + frame as u64,
                    server: 0,
                },
            },
        }
    }

    #[test]
    fn flows_enter_oldest_first_once_four_wait() {
        let mut f = InFlight::default();
        for frame in 0..IN_FLIGHT {
            assert!(f.push(placed(frame)).is_none());
        }
        assert_eq!(f.len(), IN_FLIGHT);
        for frame in IN_FLIGHT..3 * IN_FLIGHT {
            let out = f.push(placed(frame)).map(|p| p.frame);
            assert_eq!(out, Some(frame - IN_FLIGHT));
        }
        let rest: Vec<usize> = std::iter::from_fn(|| f.oldest().map(|p| p.frame)).collect();
        assert_eq!(rest, (2 * IN_FLIGHT..3 * IN_FLIGHT).collect::<Vec<_>>());
        assert_eq!(f.len(), 0);
    }

    #[test]
    fn holds_looks_at_the_flows_waiting_only() {
        let mut f = InFlight::default();
        for frame in 0..6 {
            f.push(placed(frame));
        }
        // Frames 0 and 1 (hashes 10 and 11) entered when 4 and 5 came.
        assert!(!f.holds(10) && !f.holds(11));
        assert!((12..16).all(|h| f.holds(h)));
        assert!(!f.holds(99));
        // Taken out, a flow is no longer in flight.
        f.oldest();
        assert!(!f.holds(12) && f.holds(13));
    }
}
