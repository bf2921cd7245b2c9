//! Scaling over worker threads on the in-memory port: K workers, each on its own thread with
//! its own flows, forward established-flow bursts of 64 128-byte frames for a fixed time;
//! total Mpps and the ratio to K × one worker (measured in the same run). The workers share
//! what the daemon's share (counters, health, tables, neighbours), so false sharing shows.
//!
//! `cargo bench -p fulcrum-benches --bench scaling -- [SECONDS] [K…]` (default: 3 s, K = 1 2)

use std::sync::Barrier;
use std::time::{Duration, Instant};

use engine::verdict::Verdict;
use engine::worker::BURST;
use fulcrum_benches::{CONFIG, Segment, client_segment, workers_for};

/// Packets per second forwarded by `k` workers together for `secs`.
fn run(k: usize, secs: f64) -> f64 {
    let workers = workers_for(CONFIG, 3, 1 << 16, k);
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
                        w.process(1, 0, &mut client_segment(base + p, Segment::Syn, b""));
                    }
                    let template: Vec<Vec<u8>> = (0..BURST as u16)
                        .map(|p| client_segment(base + p, Segment::Ack, &[0x41; 74]))
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
