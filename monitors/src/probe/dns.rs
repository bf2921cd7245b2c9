//! DNS: a query for `-query` (A or AAAA); the answer must be NOERROR with records and hold
//! every `-IPAddress` listed. The first datagram back decides.

use std::net::IpAddr;

use simple_dns::rdata::RData;
use simple_dns::{CLASS, Name, Packet, PacketFlag, QCLASS, QTYPE, Question, RCODE, TYPE};

use super::{Failure, Outcome};

#[derive(Debug)]
pub struct DnsProbe {
    id: u16,
    name: String,
    aaaa: bool,
    expect: Vec<IpAddr>,
    started: u64,
}

impl DnsProbe {
    /// A probe whose query carries `id` (the driver uses its local port).
    pub fn new(id: u16, name: &str, aaaa: bool, expect: &[IpAddr], now: u64) -> Self {
        Self {
            id,
            name: name.to_owned(),
            aaaa,
            expect: expect.to_vec(),
            started: now,
        }
    }

    /// The query; `None` for a name DNS cannot carry.
    pub fn request(&self) -> Option<Vec<u8>> {
        let mut packet = Packet::new_query(self.id);
        packet.set_flags(PacketFlag::RECURSION_DESIRED);
        let qtype = if self.aaaa { TYPE::AAAA } else { TYPE::A };
        packet.questions.push(Question::new(
            Name::new(&self.name).ok()?,
            QTYPE::TYPE(qtype),
            QCLASS::CLASS(CLASS::IN),
            false,
        ));
        packet.build_bytes_vec().ok()
    }

    pub fn on_datagram(&mut self, data: &[u8], now: u64) -> Outcome {
        if answer_ok(data, self.id, &self.expect) {
            Outcome::passed(self.started, now)
        } else {
            Outcome::Failed(Failure::NoMatch)
        }
    }
}

/// Whether a DNS answer to query `id` passes: NOERROR, records, every expected address.
fn answer_ok(data: &[u8], id: u16, expect: &[IpAddr]) -> bool {
    let Ok(packet) = Packet::parse(data) else {
        return false;
    };
    if packet.id() != id || packet.rcode() != RCODE::NoError || packet.answers.is_empty() {
        return false;
    }
    let got: Vec<IpAddr> = packet
        .answers
        .iter()
        .filter_map(|rr| match &rr.rdata {
            RData::A(a) => Some(IpAddr::V4(a.address.into())),
            RData::AAAA(a) => Some(IpAddr::V6(a.address.into())),
            _ => None,
        })
        .collect();
    expect.iter().all(|e| got.contains(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use simple_dns::ResourceRecord;
    use simple_dns::rdata::A;

    #[test]
    fn queries_and_answers() {
        let q = DnsProbe::new(77, "www.svc.test", false, &[], 0)
            .request()
            .unwrap();
        let mut reply = Packet::parse(&q).unwrap().into_reply();
        let addr: std::net::Ipv4Addr = "198.18.0.10".parse().unwrap();
        reply.answers.push(ResourceRecord::new(
            Name::new_unchecked("www.svc.test"),
            CLASS::IN,
            5,
            RData::A(A {
                address: addr.into(),
            }),
        ));
        let bytes = reply.build_bytes_vec().unwrap();
        assert!(answer_ok(&bytes, 77, &[addr.into()]));
        assert!(answer_ok(&bytes, 77, &[]));
        assert!(!answer_ok(&bytes, 78, &[]), "another query's answer");
        assert!(
            !answer_ok(&bytes, 77, &["198.18.0.11".parse().unwrap()]),
            "a listed address is missing"
        );
        assert!(!answer_ok(b"garbage", 77, &[]));
        let mut p = DnsProbe::new(77, "www.svc.test", false, &[addr.into()], 5);
        assert_eq!(p.on_datagram(&bytes, 9), Outcome::Passed { response_us: 4 });
    }
}
