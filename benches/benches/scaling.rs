//! Scaling over worker threads on the in-memory port: K workers, each on its own thread with
//! its own flows, forward established-flow bursts of 64 128-byte frames for a fixed time;
//! total Mpps and the ratio to K × one worker (measured in the same run). The workers share
//! what the daemon's share (counters, health, tables, neighbours), so false sharing shows.
//!
//! `cargo bench -p fulcrum-benches --bench scaling -- [SECONDS] [K…]` (default: 3 s, K = 1 2)

use std::net::Ipv4Addr;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use engine::tables::{ServiceIds, Tables};
use engine::verdict::Verdict;
use engine::worker::{BURST, Crew, Worker};
use etherparse::PacketBuilder;

const LB_MAC: [u8; 6] = [2, 0xf1, 0, 0, 0, 1];
const CLIENT_MAC: [u8; 6] = [2, 0xc1, 0, 0, 0, 1];
const CONFIG: &str = "add ns ip 198.18.0.2 255.255.255.0 -type SNIP
add service s1 198.18.0.11 TCP 80
add service s2 198.18.0.12 TCP 80
add service s3 198.18.0.13 TCP 80
add lb vserver web TCP 198.18.0.100 80 -lbMethod LEASTCONNECTION
bind lb vserver web s1
bind lb vserver web s2
bind lb vserver web s3
";

fn segment(src_port: u16, syn: bool) -> Vec<u8> {
    let b = PacketBuilder::ethernet2(CLIENT_MAC, LB_MAC)
        .ipv4([198, 18, 0, 50], [198, 18, 0, 100], 64)
        .tcp(src_port, 80, 1, 65535);
    let b = if syn { b.syn() } else { b.ack(1) };
    let mut v = Vec::new();
    let payload: &[u8] = if syn { b"" } else { &[0x41; 74] };
    b.write(&mut v, payload).expect("frame builds");
    v
}

fn arp_reply(i: u8) -> Vec<u8> {
    let mut arp = Vec::with_capacity(42);
    arp.extend_from_slice(&LB_MAC);
    arp.extend_from_slice(&[2, 0xbe, 0, 0, 0, i]);
    arp.extend_from_slice(&[8, 6, 0, 1, 8, 0, 6, 4, 0, 2, 2, 0xbe, 0, 0, 0, i]);
    arp.extend_from_slice(&Ipv4Addr::new(198, 18, 0, 10 + i).octets());
    arp.extend_from_slice(&[0; 6]);
    arp.extend_from_slice(&[198, 18, 0, 2]);
    arp
}

/// Packets per second forwarded by `k` workers together for `secs`.
fn run(k: usize, secs: f64) -> f64 {
    let (cfg, _) = ctl::conf::replay_text(CONFIG);
    let tables = Arc::new(Tables::build(&cfg, &mut ServiceIds::default(), 1));
    let workers: Vec<Worker> = Crew::new(k, &[LB_MAC], 1 << 16, 16, &tables)
        .workers
        .into_iter()
        .map(|mut w| {
            for i in 1..=3 {
                w.process(0, 0, &mut arp_reply(i));
            }
            w
        })
        .collect();
    let start = Barrier::new(k);
    let total: u64 = std::thread::scope(|scope| {
        let handles: Vec<_> = workers
            .into_iter()
            .enumerate()
            .map(|(id, mut w)| {
                let start = &start;
                scope.spawn(move || {
                    let base = 10_000 + (id as u16) * 1_000;
                    for p in 0..BURST as u16 {
                        w.process(1, 0, &mut segment(base + p, true));
                    }
                    let template: Vec<Vec<u8>> = (0..BURST as u16)
                        .map(|p| segment(base + p, false))
                        .collect();
                    let mut burst = template.clone();
                    let mut verdicts = [Verdict::Consumed; BURST];
                    start.wait();
                    let deadline = Instant::now() + Duration::from_secs_f64(secs);
                    let mut packets = 0u64;
                    while Instant::now() < deadline {
                        for _ in 0..64 {
                            for (f, t) in burst.iter_mut().zip(&template) {
                                f.copy_from_slice(t);
                            }
                            packets += w.process_burst(2, 0, &mut burst, &mut verdicts) as u64;
                        }
                    }
                    packets
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or(0)).sum()
    });
    total as f64 / secs
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let secs: f64 = args.first().and_then(|s| s.parse().ok()).unwrap_or(3.0);
    let ks: Vec<usize> = match args.get(1..) {
        Some(rest) if !rest.is_empty() => rest.iter().filter_map(|s| s.parse().ok()).collect(),
        _ => vec![1, 2],
    };
    let one = run(1, secs);
    println!("| workers | Mpps | ns/packet/worker | vs K × one worker |");
    println!("|---|---|---|---|");
    for &k in &ks {
        let pps = if k == 1 { one } else { run(k, secs) };
        println!(
            "| {k} | {:.2} | {:.1} | {:.2} |",
            pps / 1e6,
            1e9 * k as f64 / pps,
            pps / (one * k as f64)
        );
    }
}
