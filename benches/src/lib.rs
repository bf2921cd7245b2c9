//! Benchmarks live in `benches/`; run them with `cargo bench -p fulcrum-benches`. This is
//! what they share: the bench vserver, workers that know its services' MACs, and the client's
//! segments.

use std::net::Ipv4Addr;
use std::sync::Arc;

use engine::tables::{ServiceIds, Tables};
use engine::worker::{Crew, Worker};
use etherparse::PacketBuilder;

pub const LB_MAC: [u8; 6] = [2, 0xf1, 0, 0, 0, 1];
pub const CLIENT_MAC: [u8; 6] = [2, 0xc1, 0, 0, 0, 1];

/// The vserver `web` (198.18.0.100:80) over three services by LEASTCONNECTION.
pub const CONFIG: &str = "add ns ip 198.18.0.2 255.255.255.0 -type SNIP
add service s1 198.18.0.11 TCP 80
add service s2 198.18.0.12 TCP 80
add service s3 198.18.0.13 TCP 80
add lb vserver web TCP 198.18.0.100 80 -lbMethod LEASTCONNECTION
bind lb vserver web s1
bind lb vserver web s2
bind lb vserver web s3
";

/// The vserver `web` balancing over `services` services s1… (198.18.0.11…) by `method`.
pub fn config(services: u8, method: &str) -> String {
    let mut c = String::from("add ns ip 198.18.0.2 255.255.255.0 -type SNIP\n");
    c += &format!("add lb vserver web TCP 198.18.0.100 80 -lbMethod {method}\n");
    for i in 1..=services {
        c += &format!("add service s{i} 198.18.0.{} TCP 80\n", 10 + i);
        c += &format!("bind lb vserver web s{i}\n");
    }
    c
}

/// `n` workers for `config` with room for `flows` each, sharing counters, health and
/// neighbours as the daemon's do; the services (198.18.0.11 to 198.18.0.(10 + `services`))
/// answered the first worker's ARP.
pub fn workers_for(config: &str, services: u8, flows: usize, n: usize) -> Vec<Worker> {
    let (cfg, errors) = ctl::conf::replay_text(config);
    assert!(errors.is_empty(), "{errors:?}");
    let tables = Arc::new(Tables::build(&cfg, &mut ServiceIds::default(), 1));
    let mut all = Crew::new(n, &[LB_MAC], flows, 64, &tables).workers;
    if let Some(w) = all.first_mut() {
        for i in 1..=services {
            w.process(0, 0, &mut arp_reply(i));
        }
    }
    all
}

/// One worker for [`CONFIG`] with room for `flows`.
pub fn worker(flows: usize) -> Worker {
    workers_for(CONFIG, 3, flows, 1).remove(0)
}

/// Service `i`'s ARP reply to the SNIP.
pub fn arp_reply(i: u8) -> Vec<u8> {
    let mut arp = vec![0u8; 42];
    arp[0..6].copy_from_slice(&LB_MAC);
    arp[6..12].copy_from_slice(&[2, 0xbe, 0, 0, 0, i]);
    arp[12..22].copy_from_slice(&[8, 6, 0, 1, 8, 0, 6, 4, 0, 2]);
    arp[22..28].copy_from_slice(&[2, 0xbe, 0, 0, 0, i]);
    arp[28..32].copy_from_slice(&Ipv4Addr::new(198, 18, 0, 10 + i).octets());
    arp[38..42].copy_from_slice(&[198, 18, 0, 2]);
    arp
}

/// What a client segment carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Segment {
    Syn,
    Ack,
    Reset,
}

/// A segment of the client 198.18.0.50 from `src_port` to the vserver, with `payload` (a
/// reset comes after the SYN: its sequence number one higher).
pub fn client_segment(src_port: u16, kind: Segment, payload: &[u8]) -> Vec<u8> {
    segment_with_options(src_port, kind, payload, &[])
}

/// [`client_segment`] with the TCP timestamps option as Linux sends it (two NOPs, then
/// TSval `tsval` and an echo), as most clients' segments carry it.
pub fn client_segment_timestamped(
    src_port: u16,
    kind: Segment,
    payload: &[u8],
    tsval: u32,
) -> Vec<u8> {
    let mut options = vec![1, 1, 8, 10];
    options.extend_from_slice(&tsval.to_be_bytes());
    options.extend_from_slice(&(tsval / 2).to_be_bytes());
    segment_with_options(src_port, kind, payload, &options)
}

/// A client's SYN as Linux sends it (MSS, SACK permitted, timestamps with TSval `tsval`, NOP,
/// window scale), from `src_port` to the vserver.
pub fn client_syn_linux(src_port: u16, tsval: u32) -> Vec<u8> {
    let mut options = vec![2, 4, 0x05, 0xb4, 4, 2, 8, 10];
    options.extend_from_slice(&tsval.to_be_bytes());
    options.extend_from_slice(&[0, 0, 0, 0, 1, 3, 3, 7]);
    segment_with_options(src_port, Segment::Syn, b"", &options)
}

fn segment_with_options(src_port: u16, kind: Segment, payload: &[u8], options: &[u8]) -> Vec<u8> {
    let seq = if kind == Segment::Reset { 2 } else { 1 };
    let b = PacketBuilder::ethernet2(CLIENT_MAC, LB_MAC)
        .ipv4([198, 18, 0, 50], [198, 18, 0, 100], 64)
        .tcp(src_port, 80, seq, 65535);
    let b = match kind {
        Segment::Syn => b.syn(),
        Segment::Ack => b.ack(1),
        Segment::Reset => b.rst(),
    };
    let b = b.options_raw(options).expect("options fit");
    let mut v = Vec::new();
    b.write(&mut v, payload).expect("frame builds");
    v
}
