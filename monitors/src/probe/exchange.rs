//! The request/answer shape HTTP and ECV probes share: once the connection is ready, send
//! the request; then read until the answer decides (or the peer closes). The response time
//! runs from the request to the deciding byte.

use super::{Connection, Failure, Outcome};

#[derive(Debug)]
enum State {
    Connecting,
    Sent { at: u64, reply: Vec<u8> },
}

#[derive(Debug)]
pub struct Exchange {
    request: Vec<u8>,
    state: State,
}

impl Exchange {
    pub fn new(request: Vec<u8>) -> Self {
        Self {
            request,
            state: State::Connecting,
        }
    }

    /// Advances at `now`; `judge` reads the answer so far and says `Some(Ok)` (passes),
    /// `Some(Err)` (fails) or `None` (needs more).
    pub fn step(
        &mut self,
        now: u64,
        conn: &mut dyn Connection,
        judge: impl Fn(&[u8]) -> Option<Result<(), Failure>>,
    ) -> Option<Outcome> {
        match &mut self.state {
            State::Connecting if conn.ready() => {
                if !conn.send(&self.request) {
                    return Some(Outcome::Failed(Failure::SendFailed));
                }
                self.state = State::Sent {
                    at: now,
                    reply: Vec::new(),
                };
                None
            }
            State::Connecting => None,
            State::Sent { at, reply } => {
                conn.recv_into(reply);
                match judge(reply) {
                    Some(Ok(())) => Some(Outcome::passed(*at, now)),
                    Some(Err(f)) => Some(Outcome::Failed(f)),
                    None if !conn.may_recv() => Some(Outcome::Failed(Failure::Closed)),
                    None => None,
                }
            }
        }
    }
}
