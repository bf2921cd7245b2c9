//! Instructions per frame through the worker, counted by callgrind: a figure that does not move
//! with the other guests of a VM, as nanoseconds do, so two builds compare exactly. Each mode
//! runs the datapath bench's loop; only the bursts inside `measured_burst` are counted
//! (`--toggle-collect`), and the frame count goes to stdout.
//!
//! `bash scripts/instructions.sh` (builds this, runs it under callgrind, divides).
//!
//! Modes: `new-flow` (SYNs of new connections in a running worker, then their resets and its
//! housekeeping, uncounted; `new-flow-linux`: the SYNs with Linux's options), `established` (128-byte frames of open flows of clients without
//! TCP timestamps, renumbered), `established-timestamps` (the same with timestamps, whose
//! TSval is moved instead), each on a port
//! whose checksums are verified (`verified`) or trusted (`trusted`). The vserver is the datapath
//! bench's (three services by LEASTCONNECTION).

use engine::verdict::Verdict;
use engine::worker::Worker;
use fulcrum_benches::{
    Segment, client_segment, client_segment_timestamped, client_syn_linux, worker,
};

const BURST: usize = 64;

/// The only frames callgrind counts.
#[inline(never)]
fn measured_burst(w: &mut Worker, now: u64, frames: &mut [Vec<u8>]) -> [Verdict; BURST] {
    let mut verdicts = [Verdict::Consumed; BURST];
    w.process_burst(now, 0, frames, &mut verdicts);
    verdicts
}

/// SYN bursts of new connections in a running worker (SYNs as Linux sends them, with
/// options, or bare); returns the frames counted.
fn new_flows(w: &mut Worker, bursts: u64, linux: bool) -> u64 {
    let (mut now, mut client_port) = (10u64, 0u16);
    for _ in 0..bursts {
        now += 25;
        let ports: Vec<u16> = (0..BURST)
            .map(|_| {
                client_port = (client_port + 1) % 60_000;
                1024 + client_port
            })
            .collect();
        let mut syns: Vec<Vec<u8>> = ports
            .iter()
            .map(|&p| {
                if linux {
                    client_syn_linux(p, 1_000_000)
                } else {
                    client_segment(p, Segment::Syn, b"")
                }
            })
            .collect();
        let verdicts = measured_burst(w, now, &mut syns);
        assert!(
            verdicts.iter().all(|v| matches!(v, Verdict::Tx { .. })),
            "every SYN opens a flow"
        );
        let mut resets: Vec<Vec<u8>> = ports
            .iter()
            .map(|&p| client_segment(p, Segment::Reset, b""))
            .collect();
        let mut verdicts = [Verdict::Consumed; BURST];
        w.process_burst(now, 0, &mut resets, &mut verdicts);
        for _ in 0..16 {
            w.housekeeping(now);
        }
    }
    bursts * BURST as u64
}

/// Bursts of 128-byte frames of 64 open flows, with TCP timestamps or without; returns the
/// frames counted.
fn established(w: &mut Worker, bursts: u64, timestamps: bool) -> u64 {
    let segment = |port: u16, kind: Segment, payload: &[u8]| {
        if timestamps {
            client_segment_timestamped(port, kind, payload, 1_000_000)
        } else {
            client_segment(port, kind, payload)
        }
    };
    for p in 0..BURST as u16 {
        w.process(1, 0, &mut segment(20_000 + p, Segment::Syn, b""));
    }
    let payload = if timestamps { 62 } else { 74 };
    let template: Vec<Vec<u8>> = (0..BURST as u16)
        .map(|p| segment(20_000 + p, Segment::Ack, &[0x41; 128][..payload]))
        .collect();
    for _ in 0..bursts {
        let mut burst = template.clone();
        let verdicts = measured_burst(w, 2, &mut burst);
        assert!(verdicts.iter().all(|v| matches!(v, Verdict::Tx { .. })));
    }
    bursts * BURST as u64
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or_else(|| default.into());
    let (mode, checksums, bursts) = (arg(0, "new-flow"), arg(1, "verified"), arg(2, "3000"));
    let usage = "usage: instructions [new-flow|new-flow-linux|established|established-timestamps] \
                 [verified|trusted] [BURSTS]";
    let Ok(bursts) = bursts.parse::<u64>() else {
        eprintln!("ERROR: bursts must be a number, not {bursts:?}\n{usage}");
        std::process::exit(2);
    };
    let mut w = worker(1 << 16);
    match checksums.as_str() {
        "verified" => {}
        "trusted" => w.trust_checksums(0),
        other => {
            eprintln!("ERROR: checksums are verified or trusted, not {other:?}\n{usage}");
            std::process::exit(2);
        }
    }
    let frames = match mode.as_str() {
        "new-flow" => new_flows(&mut w, bursts, false),
        "new-flow-linux" => new_flows(&mut w, bursts, true),
        "established" => established(&mut w, bursts, false),
        "established-timestamps" => established(&mut w, bursts, true),
        other => {
            eprintln!(
                "ERROR: the mode is new-flow, new-flow-linux, established or \
                 established-timestamps, not {other:?}\n{usage}"
            );
            std::process::exit(2);
        }
    };
    println!("{frames}");
}
