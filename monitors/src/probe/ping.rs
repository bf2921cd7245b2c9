//! PING: an ICMP echo request whose identifier is the probe's local port; its echo reply
//! passes.

use super::Outcome;

/// The echo request's sequence number and payload.
pub const SEQUENCE: u16 = 1;
pub const PAYLOAD: &[u8] = b"fulcrum monitor";

#[derive(Debug)]
pub struct PingProbe {
    pub ident: u16,
    started: u64,
}

impl PingProbe {
    pub fn new(ident: u16, now: u64) -> Self {
        Self {
            ident,
            started: now,
        }
    }

    /// An echo reply (to this probe's identifier) with sequence number `seq` arrived.
    pub fn on_reply(&self, seq: u16, now: u64) -> Option<Outcome> {
        (seq == SEQUENCE).then(|| Outcome::passed(self.started, now))
    }
}
