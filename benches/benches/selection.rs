//! ns per selection decision, per method and pool size: over the services' values in columns
//! (`select/…`, `ColumnView`) and, as the baseline of the same run, service by service from a
//! table of rows (`select-rows/…`, `SnapshotView`).
//!
//! `cargo bench -p fulcrum-benches --bench selection`

use std::hint::black_box;
use std::net::Ipv4Addr;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use engine::lb::{
    ColumnView, FlowKey, HashKey, Member, Method, Pool, ServiceSnapshot, ServiceView, SnapshotView,
    member_seed,
};

const SIZES: [usize; 4] = [3, 16, 256, 4096];

/// Deterministic pseudo-random values so every run measures the same inputs.
fn lcg(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *state >> 33
}

/// Bind weights of the generated pools.
#[derive(Clone, Copy)]
enum Weights {
    Equal,
    /// 1..=5: the least common multiple is small, so least-X ranks members exactly without
    /// cross-multiplying.
    Small,
    /// 1..=100: the general, cross-multiplying path.
    Wide,
}

fn setup(method: Method, n: usize, weights: Weights) -> (Pool, SnapshotView) {
    let mut r = 42u64;
    let members = (0..n)
        .map(|i| Member {
            service: i as u32,
            weight: match weights {
                Weights::Equal => 1,
                Weights::Small => 1 + (lcg(&mut r) % 5) as u32,
                Weights::Wide => 1 + (lcg(&mut r) % 100) as u32,
            },
            seed: member_seed(
                Ipv4Addr::from(0xC612_0000 + i as u32).into(),
                Some(80),
                None,
            ),
        })
        .collect();
    let view = SnapshotView {
        services: (0..n)
            .map(|_| ServiceSnapshot {
                candidate: true,
                active: 1 + lcg(&mut r) % 1000,
                packets: lcg(&mut r) % 1_000_000,
                bytes: lcg(&mut r) % 1_000_000_000,
                response_time: Some(100 + lcg(&mut r) % 10_000),
                load: Some(lcg(&mut r) % 100_000),
            })
            .collect(),
    };
    (Pool::new(method, members), view)
}

fn bench_selection(c: &mut Criterion) {
    let methods: [(&str, Method, Weights); 12] = [
        ("ROUNDROBIN", Method::RoundRobin, Weights::Small),
        ("LEASTCONNECTION", Method::LeastConnection, Weights::Small),
        (
            "LEASTCONNECTION-weights1to100",
            Method::LeastConnection,
            Weights::Wide,
        ),
        ("LRTM", Method::Lrtm, Weights::Small),
        ("LEASTPACKETS", Method::LeastPackets, Weights::Small),
        ("LEASTBANDWIDTH", Method::LeastBandwidth, Weights::Small),
        ("CUSTOMLOAD", Method::CustomLoad, Weights::Small),
        (
            "CUSTOMLOAD-weights1to100",
            Method::CustomLoad,
            Weights::Wide,
        ),
        (
            "SOURCEIPHASH",
            Method::Hash(HashKey::SourceIp),
            Weights::Equal,
        ),
        (
            "SOURCEIPHASH-weighted",
            Method::Hash(HashKey::SourceIp),
            Weights::Small,
        ),
        (
            "SRCIPSRCPORTHASH",
            Method::Hash(HashKey::SrcIpSrcPort),
            Weights::Equal,
        ),
        (
            "SRCIPDESTIPHASH",
            Method::Hash(HashKey::SrcIpDestIp),
            Weights::Equal,
        ),
    ];
    let keys: Vec<FlowKey> = (0..1024u32)
        .map(|i| {
            FlowKey::new(
                Ipv4Addr::from(0xC613_0000 + i * 13).into(),
                (i * 7) as u16,
                Ipv4Addr::new(198, 19, 0, 1).into(),
                80,
            )
        })
        .collect();
    for (name, method, weights) in methods {
        bench_method(
            c,
            &format!("select/{name}"),
            method,
            weights,
            &keys,
            |rows| ColumnView::from(&rows),
        );
        let least = !matches!(method, Method::RoundRobin | Method::Hash(_));
        if least {
            bench_method(
                c,
                &format!("select-rows/{name}"),
                method,
                weights,
                &keys,
                |r| r,
            );
        }
    }
}

fn bench_method<V: ServiceView>(
    c: &mut Criterion,
    group_name: &str,
    method: Method,
    weights: Weights,
    keys: &[FlowKey],
    view_of: impl Fn(SnapshotView) -> V,
) {
    let mut group = c.benchmark_group(group_name);
    group.throughput(Throughput::Elements(1));
    for n in SIZES {
        let (pool, rows) = setup(method, n, weights);
        let view = view_of(rows);
        let mut state = pool.new_state();
        let mut i = 0usize;
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                i = (i + 1) & 1023;
                black_box(pool.select(&mut state, black_box(&view), &keys[i]))
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1)).sample_size(30);
    targets = bench_selection
}
criterion_main!(benches);
