//! HTTP (and HTTPS): a request on the established connection; the status code of the
//! answer's status line must be in `-respCode`.

use std::net::Ipv4Addr;

use super::exchange::Exchange;
use super::{Connection, Failure, Outcome, StatusCodes, first_line};

#[derive(Debug)]
pub struct HttpProbe {
    exchange: Exchange,
    codes: StatusCodes,
}

impl HttpProbe {
    /// `request_line` is the monitor's `-httpRequest` (`GET /health`).
    pub fn new(request_line: &str, codes: StatusCodes, headers: &[u8], host: Ipv4Addr) -> Self {
        Self {
            exchange: Exchange::new(request(request_line.as_bytes(), host, headers)),
            codes,
        }
    }

    pub fn step(&mut self, now: u64, conn: &mut dyn Connection) -> Option<Outcome> {
        let codes = &self.codes;
        self.exchange.step(now, conn, |reply| {
            let line = String::from_utf8_lossy(first_line(reply)?);
            let code = line
                .split_whitespace()
                .nth(1)
                .and_then(|c| c.parse::<u16>().ok());
            Some(match code {
                Some(c) if codes.contains(c) => Ok(()),
                Some(c) => Err(Failure::Status(c)),
                None => Err(Failure::NoMatch),
            })
        })
    }
}

/// An HTTP/1.1 request for a monitor: the request line (`GET /health`), the operator's
/// `-customHeaders` lines, a `Host` header with the service's address unless those carry one,
/// and `Connection: close`.
pub fn request(line: &[u8], host: Ipv4Addr, custom: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(line.len() + custom.len() + 64);
    out.extend_from_slice(line);
    out.extend_from_slice(b" HTTP/1.1\r\n");
    out.extend_from_slice(custom);
    if !custom.is_empty() && !custom.ends_with(b"\r\n") {
        out.extend_from_slice(b"\r\n");
    }
    let has_host = custom
        .split(|b| *b == b'\n')
        .any(|l| l.len() >= 5 && l[..5].eq_ignore_ascii_case(b"host:"));
    if !has_host {
        out.extend_from_slice(format!("Host: {host}\r\n").as_bytes());
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::FakeConnection;
    use super::*;

    const HOST: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 11);

    #[test]
    fn requests_carry_the_custom_headers() {
        assert_eq!(
            request(b"GET /health", HOST, b""),
            b"GET /health HTTP/1.1\r\nHost: 198.18.0.11\r\nConnection: close\r\n\r\n"
        );
        assert_eq!(
            request(b"HEAD /", HOST, b"host: www.svc.test\r\nX-Probe: 1"),
            b"HEAD / HTTP/1.1\r\nhost: www.svc.test\r\nX-Probe: 1\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn the_status_line_decides_and_the_request_starts_the_clock() {
        let mut p = HttpProbe::new("GET /", StatusCodes::default(), b"", HOST);
        let mut conn = FakeConnection::established();
        assert_eq!(p.step(100, &mut conn), None);
        assert!(conn.sent.starts_with(b"GET / HTTP/1.1\r\n"));
        conn.incoming = b"HTTP/1.1 200".to_vec();
        assert_eq!(p.step(200, &mut conn), None, "no full line yet");
        conn.incoming = b" OK\r\n".to_vec();
        assert_eq!(
            p.step(350, &mut conn),
            Some(Outcome::Passed { response_us: 250 })
        );
        let mut p = HttpProbe::new("GET /", StatusCodes::default(), b"", HOST);
        p.step(0, &mut conn);
        conn.incoming = b"HTTP/1.1 503 Busy\r\n".to_vec();
        assert_eq!(
            p.step(1, &mut conn),
            Some(Outcome::Failed(Failure::Status(503)))
        );
        let mut p = HttpProbe::new("GET /", StatusCodes::default(), b"", HOST);
        p.step(0, &mut conn);
        conn.open = false;
        assert_eq!(p.step(1, &mut conn), Some(Outcome::Failed(Failure::Closed)));
    }
}
