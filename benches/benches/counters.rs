//! Cost of one counter update (one packet for one service) on the owning core, with one
//! writer thread and with two writer threads updating concurrently (each its own core slots).
//!
//! `cargo bench -p fulcrum-benches --bench counters`

use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use engine::counters::Counters;

const SERVICES: usize = 16;

fn bench_counters(c: &mut Criterion) {
    let mut group = c.benchmark_group("counters/update");
    group.throughput(Throughput::Elements(1));
    for threads in [1usize, 2] {
        group.bench_function(format!("{threads}-thread"), |b| {
            b.iter_custom(|iters| {
                let (_counters, mut writers) = Counters::new(threads, SERVICES);
                let barrier = Barrier::new(threads);
                let elapsed: Vec<Duration> = std::thread::scope(|s| {
                    let handles: Vec<_> = writers
                        .iter_mut()
                        .map(|w| {
                            let barrier = &barrier;
                            s.spawn(move || {
                                barrier.wait();
                                let start = Instant::now();
                                for i in 0..iters {
                                    // A new second every 2^20 packets exercises bucket rotation.
                                    w.count(
                                        black_box((i % SERVICES as u64) as u32),
                                        1000 + (i >> 20),
                                        1,
                                        64,
                                    );
                                }
                                start.elapsed()
                            })
                        })
                        .collect();
                    handles
                        .into_iter()
                        .map(|h| h.join().unwrap_or_default())
                        .collect()
                });
                elapsed.into_iter().max().unwrap_or_default()
            })
        });
    }
    group.finish();

    let (counters, _w) = Counters::new(2, SERVICES);
    c.bench_function("counters/read-window-16-services-2-cores", |b| {
        b.iter(|| {
            (0..SERVICES as u32)
                .map(|s| counters.window_packets(black_box(s)))
                .sum::<u64>()
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1)).sample_size(30);
    targets = bench_counters
}
criterion_main!(benches);
