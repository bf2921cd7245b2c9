//! ns per packet through the worker on the in-memory port: established-flow forwarding and new
//! flows (SYN → selection → flow → NAT), in a running worker and in a fresh one. Established
//! flows are measured at 128 and 1514 bytes, on a port whose checksums are verified (virtual
//! devices: veth, virtio), on one that trusts them (physical NICs), and with partial checksums
//! (a sender's offload) that are completed.
//! Frames are built outside the timed part; each timed iteration processes a burst of 64.
//!
//! `cargo bench -p fulcrum-benches --bench datapath`

use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use engine::verdict::Verdict;
use engine::worker::{Lanes, MemPort, MonitorRings, Runner};
use fulcrum_benches::{
    CONFIG, Segment, client_segment, client_segment_timestamped, config, worker, workers_for,
};

const BURST: usize = 64;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Checksums {
    Verified,
    Trusted,
    Partial,
}

/// The TCP checksum field as a sender with checksum offload leaves it: the folded sum of the
/// pseudo-header only.
fn make_partial(frame: &mut [u8]) {
    let tcp_len = frame.len() - 34;
    let mut pseudo = [0u8; 12];
    pseudo[..8].copy_from_slice(&frame[26..34]);
    pseudo[9] = 6;
    pseudo[10..].copy_from_slice(&(tcp_len as u16).to_be_bytes());
    let folded = !engine::wire::checksum(&pseudo);
    frame[50..52].copy_from_slice(&folded.to_be_bytes());
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("datapath");
    g.throughput(Throughput::Elements(BURST as u64));

    // Established flows, client → service: 64 flows open, then data segments on them. Those
    // of clients without TCP timestamps are renumbered toward their service (sequence and
    // acknowledgement numbers moved); those with timestamps (Linux's default) keep their
    // numbers and have their TSval moved instead.
    for (name, payload, checksums, timestamps) in [
        ("established-128B-verified", 74, Checksums::Verified, false),
        ("established-128B-trusted", 74, Checksums::Trusted, false),
        (
            "established-128B-verified-timestamps",
            62,
            Checksums::Verified,
            true,
        ),
        (
            "established-128B-trusted-timestamps",
            62,
            Checksums::Trusted,
            true,
        ),
        (
            "established-1514B-verified",
            1460,
            Checksums::Verified,
            false,
        ),
        ("established-1514B-trusted", 1460, Checksums::Trusted, false),
        (
            "established-1514B-partial-completed",
            1460,
            Checksums::Partial,
            false,
        ),
    ] {
        let segment = |port: u16, kind: Segment, payload: &[u8]| {
            if timestamps {
                client_segment_timestamped(port, kind, payload, 1_000_000)
            } else {
                client_segment(port, kind, payload)
            }
        };
        let mut w = worker(1 << 16);
        if checksums == Checksums::Trusted {
            w.trust_checksums(0);
        }
        for p in 0..BURST as u16 {
            assert!(matches!(
                w.process(1, 0, &mut segment(20_000 + p, Segment::Syn, b"")),
                Verdict::Tx { .. }
            ));
        }
        let template: Vec<Vec<u8>> = (0..BURST as u16)
            .map(|p| {
                let mut f = segment(20_000 + p, Segment::Ack, &vec![0x41; payload]);
                if checksums == Checksums::Partial {
                    make_partial(&mut f);
                }
                f
            })
            .collect();
        // The burst's buffers are allocated once; each iteration writes the frames into them
        // again (a memcpy, as a NIC's DMA would have), so the figure holds no allocation.
        let mut burst = template.clone();
        g.bench_function(name, |b| {
            b.iter(|| {
                for (frame, original) in burst.iter_mut().zip(&template) {
                    frame.copy_from_slice(original);
                }
                let mut verdicts = [Verdict::Consumed; BURST];
                std::hint::black_box(w.process_burst(2, 0, &mut burst, &mut verdicts));
            })
        });
    }

    // Handoff: two workers; 64 established flows owned by worker 1 whose frames reach worker
    // 0's queue (handed over, then processed and sent by worker 1), against the same frames
    // reaching worker 1 directly, in the same run. Both through the run loop and the
    // in-memory port.
    {
        let mut pair = workers_for(CONFIG, 3, 1 << 16, 2);
        let w1 = pair.pop().expect("two workers");
        let w0 = pair.pop().expect("two workers");
        let mut lanes = Lanes::mesh(2, 256).into_iter();
        let mut r0 = Runner::new(w0, vec![MemPort::new(4096)], MonitorRings::default())
            .with_lanes(lanes.next().expect("lanes"));
        let mut r1 = Runner::new(w1, vec![MemPort::new(4096)], MonitorRings::default())
            .with_lanes(lanes.next().expect("lanes"));
        let owned: Vec<u16> = (20_000..40_000u16)
            .filter(|&p| {
                let f = client_segment(p, Segment::Syn, b"");
                matches!(engine::wire::parse(&f), Ok(engine::wire::Packet::Ipv4(ip))
                    if engine::worker::steer::Steering::ranges(0, 2).owner(&ip, false) == 1)
            })
            .take(BURST)
            .collect();
        for &p in &owned {
            r1.port_mut(0)
                .expect("port")
                .inject(client_segment(p, Segment::Syn, b""));
        }
        r1.poll(1);
        r1.port_mut(0).expect("port").take_sent();
        let data: Vec<Vec<u8>> = owned
            .iter()
            .map(|&p| client_segment(p, Segment::Ack, &[0x41; 64]))
            .collect();
        g.bench_function("established-128B-at-its-owner-run-loop", |b| {
            b.iter(|| {
                for f in &data {
                    r1.port_mut(0).expect("port").inject(f.clone());
                }
                r1.poll(2);
                std::hint::black_box(r1.port_mut(0).expect("port").take_sent());
            })
        });
        g.bench_function("established-128B-handed-off-run-loop", |b| {
            b.iter(|| {
                for f in &data {
                    r0.port_mut(0).expect("port").inject(f.clone());
                }
                r0.poll(2);
                r1.poll(2);
                std::hint::black_box(r1.port_mut(0).expect("port").take_sent());
            })
        });
    }

    // Established flows in a big table: 50,000 open flows in a table sized for a million (as
    // the lab profile's), each burst 64 frames of flows picked at random, so the flow table's
    // index and slots are mostly out of cache, as on a loaded appliance.
    {
        let mut w = worker(1 << 20);
        let flows = 50_000u16;
        for p in 0..flows {
            assert!(matches!(
                w.process(1, 0, &mut client_segment(1024 + p, Segment::Syn, b"")),
                Verdict::Tx { .. }
            ));
        }
        let mut r = 0x9e37_79b9_7f4a_7c15u64;
        let bursts: Vec<Vec<Vec<u8>>> = (0..256)
            .map(|_| {
                (0..BURST)
                    .map(|_| {
                        r = r
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        client_segment(
                            1024 + ((r >> 33) % u64::from(flows)) as u16,
                            Segment::Ack,
                            &[0x41; 74],
                        )
                    })
                    .collect()
            })
            .collect();
        let mut burst = bursts[0].clone();
        let mut next = 0;
        g.bench_function("established-128B-50k-flows-out-of-cache", |b| {
            b.iter(|| {
                next = (next + 1) % bursts.len();
                for (frame, original) in burst.iter_mut().zip(&bursts[next]) {
                    frame.copy_from_slice(original);
                }
                let mut verdicts = [Verdict::Consumed; BURST];
                std::hint::black_box(w.process_burst(2, 0, &mut burst, &mut verdicts));
            })
        });
    }

    // New flows in a worker that has been running: a table sized for a million flows, its
    // services, counters and SNAT ports warm, flows ending and swept as they would be. Each
    // burst brings 64 SYNs of fresh client tuples, the clock 25 ms on (2,560 new connections
    // a second over 3 services: each below what one SNIP sustains per service without
    // reusing a tuple the service still holds in TIME_WAIT); only that burst is timed. The
    // client then resets each connection and the worker's housekeeping runs, untimed, so
    // ended flows leave the table and free their ports as they do in the run loop. The other
    // new-flow benchmarks below build a fresh worker for every burst instead (its first
    // touches of a small table, all else cold).
    {
        let mut w = worker(1 << 20);
        let mut now = 10u64;
        let mut client_port = 0u16;
        let mut syns: Vec<Vec<u8>> = vec![client_segment(1024, Segment::Syn, b""); BURST];
        let mut resets: Vec<Vec<u8>> = syns.clone();
        g.bench_function("new-flow-syn-steady", |b| {
            b.iter_custom(|iters| {
                let mut timed = Duration::ZERO;
                for _ in 0..iters {
                    now += 25;
                    for (syn, reset) in syns.iter_mut().zip(resets.iter_mut()) {
                        client_port = (client_port + 1) % 60_000;
                        *syn = client_segment(1024 + client_port, Segment::Syn, b"");
                        *reset = client_segment(1024 + client_port, Segment::Reset, b"");
                    }
                    let mut verdicts = [Verdict::Consumed; BURST];
                    let start = std::time::Instant::now();
                    std::hint::black_box(w.process_burst(now, 0, &mut syns, &mut verdicts));
                    timed += start.elapsed();
                    assert!(
                        verdicts.iter().all(|v| matches!(v, Verdict::Tx { .. })),
                        "every SYN opens a flow: {verdicts:?}"
                    );
                    w.process_burst(now, 0, &mut resets, &mut verdicts);
                    // Housekeeping rounds as the run loop's: the sweep, paced by the clock,
                    // goes over 25 ms worth of the table (a fortieth) in the first of them.
                    for _ in 0..16 {
                        w.housekeeping(now);
                    }
                }
                timed
            })
        });
        let flows = w.flows().len();
        assert!(flows < 100_000, "ended flows leave the table: {flows} open");
    }

    // New flows: each SYN is a selection, a flow insert and a NAT port; over the three
    // services of CONFIG and over 16 by each least-X method that reads the data path's
    // own counters.
    let setups = [
        ("new-flow-syn", CONFIG.to_owned(), 3),
        (
            "new-flow-syn-16-services-leastconnection",
            config(16, "LEASTCONNECTION"),
            16,
        ),
        (
            "new-flow-syn-16-services-leastpackets",
            config(16, "LEASTPACKETS"),
            16,
        ),
        (
            "new-flow-syn-16-services-roundrobin",
            config(16, "ROUNDROBIN"),
            16,
        ),
    ];
    for (name, config, services) in setups {
        let mut port = 0u16;
        g.bench_function(name, |b| {
            b.iter_batched_ref(
                || {
                    let frames: Vec<Vec<u8>> = (0..BURST)
                        .map(|_| {
                            port = port.wrapping_add(1);
                            client_segment(1024 + port % 60_000, Segment::Syn, b"")
                        })
                        .collect();
                    let mut w = workers_for(&config, services, 4096, 1).remove(0);
                    // Past the startup round robin (the method decides), clock at 3 ms.
                    for p in 0..200u16 {
                        w.process(2, 0, &mut client_segment(60_000 + p, Segment::Syn, b""));
                    }
                    (w, frames)
                },
                |(w, burst)| {
                    let mut verdicts = [Verdict::Consumed; BURST];
                    std::hint::black_box(w.process_burst(3, 0, burst, &mut verdicts));
                },
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2)).sample_size(30);
    targets = bench
}
criterion_main!(benches);
