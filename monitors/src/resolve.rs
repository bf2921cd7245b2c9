//! Resolving domain-based servers (`add server web www.example.com`), sans IO: the A query
//! for a name and what its answer says. The driver ([`crate::driver`]) sends the queries to
//! the configured name servers from a SNIP, in turn, and schedules each name again when its
//! answer's TTL runs out, or `-domainResolveRetry` after a failure.

use std::net::Ipv4Addr;

use simple_dns::rdata::RData;
use simple_dns::{CLASS, Name, Packet, PacketFlag, QCLASS, QTYPE, Question, RCODE, TYPE};

/// One domain-based server to keep resolved, as the engine describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lookup {
    pub server: String,
    pub domain: String,
    /// `-domainResolveRetry`: how long after a failure to ask again.
    pub retry_ms: u64,
    /// `set lb parameter -dbsTtl`: seconds an answer is used instead of its TTL (0: the TTL).
    pub ttl_override_s: u32,
    /// `set server -domainResolveNow` requests: a new count asks at once.
    pub requests: u32,
}

/// What one resolution gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub server: String,
    pub domain: String,
    /// The addresses (answer order) and seconds they stay good, or why there are none.
    pub answer: Result<(Vec<Ipv4Addr>, u32), String>,
}

/// The A query for `domain` with `id`; `None` for a name DNS cannot carry.
pub fn query(id: u16, domain: &str) -> Option<Vec<u8>> {
    let mut packet = Packet::new_query(id);
    packet.set_flags(PacketFlag::RECURSION_DESIRED);
    packet.questions.push(Question::new(
        Name::new(domain).ok()?,
        QTYPE::TYPE(TYPE::A),
        QCLASS::CLASS(CLASS::IN),
        false,
    ));
    packet.build_bytes_vec().ok()
}

/// What a datagram says about query `id`: `None` when it is not its answer (another id,
/// not a response, not DNS: keep waiting), otherwise the addresses and the smallest TTL of
/// the records that led to them, or the name server's refusal.
pub fn answer(data: &[u8], id: u16) -> Option<Result<(Vec<Ipv4Addr>, u32), String>> {
    let packet = Packet::parse(data).ok()?;
    if packet.id() != id || !packet.has_flags(PacketFlag::RESPONSE) {
        return None;
    }
    Some(match packet.rcode() {
        RCODE::NoError => {
            let mut addrs = Vec::new();
            let mut ttl = u32::MAX;
            for rr in &packet.answers {
                match &rr.rdata {
                    RData::A(a) => {
                        addrs.push(Ipv4Addr::from(a.address));
                        ttl = ttl.min(rr.ttl);
                    }
                    // The CNAMEs of the chain count: the answer is as old as its oldest part.
                    RData::CNAME(_) => ttl = ttl.min(rr.ttl),
                    _ => {}
                }
            }
            // A truncated answer (no TCP retry here) may miss addresses; those it holds
            // are good.
            if addrs.is_empty() {
                Err("the name has no A record".to_owned())
            } else {
                Ok((addrs, ttl))
            }
        }
        RCODE::NameError => Err("no such name (NXDOMAIN)".to_owned()),
        RCODE::Refused => Err("the name server refused the query (REFUSED)".to_owned()),
        RCODE::ServerFailure => Err("the name server failed (SERVFAIL)".to_owned()),
        other => Err(format!("the name server answered {other:?}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use simple_dns::ResourceRecord;
    use simple_dns::rdata::{A, CNAME};

    fn reply_to(query: &[u8], rcode: RCODE, records: Vec<ResourceRecord<'static>>) -> Vec<u8> {
        let mut reply = Packet::parse(query).unwrap().into_reply();
        *reply.rcode_mut() = rcode;
        reply.answers = records;
        reply.build_bytes_vec().unwrap()
    }

    fn a(name: &'static str, ttl: u32, ip: &str) -> ResourceRecord<'static> {
        let addr: Ipv4Addr = ip.parse().unwrap();
        ResourceRecord::new(
            Name::new_unchecked(name),
            CLASS::IN,
            ttl,
            RData::A(A {
                address: addr.into(),
            }),
        )
    }

    #[test]
    fn addresses_in_answer_order_with_the_smallest_ttl() {
        let q = query(7, "www.svc.test").unwrap();
        let cname = ResourceRecord::new(
            Name::new_unchecked("www.svc.test"),
            CLASS::IN,
            3,
            RData::CNAME(CNAME(Name::new_unchecked("web.svc.test"))),
        );
        let bytes = reply_to(
            &q,
            RCODE::NoError,
            vec![
                cname,
                a("web.svc.test", 30, "198.18.0.12"),
                a("web.svc.test", 20, "198.18.0.11"),
            ],
        );
        assert_eq!(
            answer(&bytes, 7),
            Some(Ok((
                vec![
                    "198.18.0.12".parse().unwrap(),
                    "198.18.0.11".parse().unwrap()
                ],
                3
            )))
        );
        assert_eq!(answer(&bytes, 8), None, "another query's answer");
        assert_eq!(answer(&q, 7), None, "a query is not an answer");
        assert_eq!(answer(b"\x00\x07garbage", 7), None);
    }

    #[test]
    fn refusals_say_why() {
        let q = query(9, "nope.svc.test").unwrap();
        let said = |rcode| {
            answer(&reply_to(&q, rcode, Vec::new()), 9)
                .unwrap()
                .unwrap_err()
        };
        assert!(said(RCODE::NameError).contains("NXDOMAIN"));
        assert!(said(RCODE::Refused).contains("REFUSED"));
        assert!(said(RCODE::NoError).contains("no A record"));
        assert!(
            query(1, &format!("{}.test", "x".repeat(70))).is_none(),
            "a label over 63"
        );
    }
}
