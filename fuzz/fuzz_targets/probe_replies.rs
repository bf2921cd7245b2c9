//! What backends answer to the monitor core's probes: HTTP, HTTP-ECV and FTP replies in
//! arbitrary pieces over a connection, DNS, UDP-ECV and SNMP datagrams. Never a panic; a
//! probe that ends says passed or failed, never anything else.
#![no_main]

use std::net::{IpAddr, Ipv4Addr};

use libfuzzer_sys::fuzz_target;
use monitors::probe::Connection;
use monitors::probe::dns::DnsProbe;
use monitors::probe::ecv::EcvProbe;
use monitors::probe::ftp::FtpProbe;
use monitors::probe::http::HttpProbe;
use monitors::probe::udp_ecv::UdpEcvProbe;
use monitors::{Outcome, StatusCodes};

const SERVICE: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 11);

/// A backend's answer arriving in pieces (sizes from `sizes`), then the peer closing.
struct Backend<'a> {
    data: &'a [u8],
    sizes: &'a [u8],
}

impl Connection for Backend<'_> {
    fn ready(&self) -> bool {
        true
    }
    fn may_recv(&self) -> bool {
        !self.data.is_empty()
    }
    fn send(&mut self, _: &[u8]) -> bool {
        true
    }
    fn recv_into(&mut self, buf: &mut Vec<u8>) {
        let (&size, rest) = self.sizes.split_first().unwrap_or((&255, &[]));
        self.sizes = rest;
        let n = usize::from(size).max(1).min(self.data.len());
        buf.extend_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        buf.truncate(monitors::probe::REPLY_LIMIT);
    }
}

/// Steps a connection probe until it ends (or the answer runs out).
fn run(mut step: impl FnMut(u64, &mut dyn Connection) -> Option<Outcome>, data: &[u8]) {
    let split = data
        .first()
        .map_or(0, |&b| usize::from(b) % 8)
        .min(data.len());
    let (sizes, data) = data.split_at(split);
    let mut backend = Backend { data, sizes };
    for now in 0..2_000 {
        if step(now, &mut backend).is_some() || (backend.data.is_empty() && now > 4) {
            return;
        }
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((&which, data)) = input.split_first() else {
        return;
    };
    match which % 6 {
        0 => {
            let mut p = HttpProbe::new("GET /health", StatusCodes::default(), b"", SERVICE);
            run(|now, c| p.step(now, c), data);
        }
        1 => {
            let mut p = EcvProbe::new(b"GET /", b"backend-", true, b"", SERVICE);
            run(|now, c| p.step(now, c), data);
        }
        2 => {
            let mut p = FtpProbe::new("anonymous", "fulcrum@");
            run(|now, c| p.step(now, c), data);
        }
        3 => {
            let expect = [IpAddr::V4(SERVICE)];
            let mut p = DnsProbe::new(7, "www.svc.test", false, &expect, 0);
            let _ = p.on_datagram(data, 5);
        }
        4 => {
            let mut p = UdpEcvProbe::new(b"hello", b"backend-", 0);
            let _ = p.on_datagram(data, 5);
        }
        _ => {
            let _ =
                monitors::snmp::parse_response(data.first().is_some_and(|b| b & 1 == 1), 7, data);
        }
    }
});
