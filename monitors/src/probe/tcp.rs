//! TCP (and TCPS over TLS): the connection established — for TCPS the handshake complete —
//! is the answer.

use super::{Connection, Outcome};

#[derive(Debug)]
pub struct TcpProbe {
    started: u64,
}

impl TcpProbe {
    pub fn new(now: u64) -> Self {
        Self { started: now }
    }

    pub fn step(&mut self, now: u64, conn: &mut dyn Connection) -> Option<Outcome> {
        conn.ready().then(|| Outcome::passed(self.started, now))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::FakeConnection;
    use super::*;

    #[test]
    fn passes_once_established_timed_from_the_start() {
        let mut p = TcpProbe::new(1_000);
        let mut conn = FakeConnection::default();
        assert_eq!(p.step(1_500, &mut conn), None);
        conn.ready = true;
        assert_eq!(
            p.step(2_200, &mut conn),
            Some(Outcome::Passed { response_us: 1_200 })
        );
    }
}
