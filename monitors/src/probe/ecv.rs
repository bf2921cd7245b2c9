//! TCP-ECV, HTTP-ECV (and HTTPS-ECV): the send string (for HTTP-ECV an HTTP request line, with
//! the `-customHeaders` lines) on the connection; the answer must contain the receive string.

use std::net::Ipv4Addr;

use super::exchange::Exchange;
use super::{Connection, Outcome, contains};

#[derive(Debug)]
pub struct EcvProbe {
    exchange: Exchange,
    recv: Vec<u8>,
}

impl EcvProbe {
    pub fn new(send: &[u8], recv: &[u8], http: bool, headers: &[u8], host: Ipv4Addr) -> Self {
        let request = if http {
            super::http::request(send, host, headers)
        } else {
            send.to_vec()
        };
        Self {
            exchange: Exchange::new(request),
            recv: recv.to_vec(),
        }
    }

    pub fn step(&mut self, now: u64, conn: &mut dyn Connection) -> Option<Outcome> {
        let recv = &self.recv;
        self.exchange
            .step(now, conn, |reply| contains(reply, recv).then_some(Ok(())))
    }
}

#[cfg(test)]
mod tests {
    use super::super::Failure;
    use super::super::tests::FakeConnection;
    use super::*;

    #[test]
    fn the_receive_string_anywhere_in_the_answer_passes() {
        let host = Ipv4Addr::new(198, 18, 0, 11);
        let mut p = EcvProbe::new(b"ping", b"pong", false, b"", host);
        let mut conn = FakeConnection::established();
        p.step(10, &mut conn);
        assert_eq!(conn.sent, b"ping");
        conn.incoming = b"...po".to_vec();
        assert_eq!(p.step(20, &mut conn), None);
        conn.incoming = b"ng\n".to_vec();
        assert_eq!(
            p.step(30, &mut conn),
            Some(Outcome::Passed { response_us: 20 })
        );
        let mut p = EcvProbe::new(b"ping", b"pong", false, b"", host);
        p.step(0, &mut conn);
        conn.incoming = b"garbage".to_vec();
        conn.open = false;
        assert_eq!(p.step(5, &mut conn), Some(Outcome::Failed(Failure::Closed)));
    }
}
