//! Properties of the selection core over generated pools.

use engine::lb::{
    ColumnView, FlowKey, HashKey, Member, Method, Pool, ServiceSnapshot, SnapshotView,
};
use proptest::prelude::*;

fn view(n: usize) -> SnapshotView {
    SnapshotView {
        services: (0..n)
            .map(|_| ServiceSnapshot {
                candidate: true,
                ..ServiceSnapshot::default()
            })
            .collect(),
    }
}

fn pool(method: Method, weights: &[u32]) -> Pool {
    let members = weights
        .iter()
        .enumerate()
        .map(|(i, &w)| Member {
            service: i as u32,
            weight: w,
            seed: engine::lb::member_seed(
                format!("198.18.0.{}", i + 1).parse().unwrap(),
                Some(80),
                None,
            ),
        })
        .collect();
    Pool::new(method, members)
}

/// Services with random values: some not candidates, some without a response time or a load,
/// and counts near the 63-bit rank limit where `huge` says so.
fn random_view() -> impl Strategy<Value = SnapshotView> {
    let service = (
        any::<bool>(),
        prop_oneof![0u64..50, Just(u64::MAX / 3)],
        0u64..1000,
        prop::option::weighted(0.9, 0u64..100),
        prop::option::weighted(0.9, 0u64..100),
    )
        .prop_map(
            |(candidate, active, packets, response_time, load)| ServiceSnapshot {
                candidate: candidate || active % 3 == 0,
                active,
                packets,
                bytes: packets * 100,
                response_time,
                load,
            },
        );
    prop::collection::vec(service, 1..40).prop_map(|services| SnapshotView { services })
}

proptest! {
    /// The column scan and the service-by-service scan make the same decisions, in order,
    /// for every least-X method, with small or wide weights (ranked or cross-multiplied).
    #[test]
    fn columns_and_rows_choose_alike(
        rows in random_view(),
        weights in prop::collection::vec(prop_oneof![1u32..=5, 1u32..=100], 40),
        decisions in 1usize..20,
    ) {
        let columns = ColumnView::from(&rows);
        let n = rows.services.len();
        for method in [Method::LeastConnection, Method::LeastPackets, Method::LeastBandwidth, Method::Lrtm, Method::LeastResponseTime, Method::CustomLoad] {
            let p = pool(method, &weights[..n]);
            let (mut by_rows, mut by_columns) = (p.new_state(), p.new_state());
            for _ in 0..decisions {
                let a = p.select(&mut by_rows, &rows, &FlowKey::default());
                let b = p.select(&mut by_columns, &columns, &FlowKey::default());
                prop_assert_eq!(a, b, "{:?}", method);
            }
        }
    }

    /// Over every cycle (the sum of the weights) each service is chosen exactly `weight` times.
    #[test]
    fn weighted_round_robin_gives_each_its_weight_per_cycle(weights in prop::collection::vec(1u32..=100, 1..12), cycles in 1usize..4) {
        let p = pool(Method::RoundRobin, &weights);
        let v = view(weights.len());
        let mut state = p.new_state();
        let total: u32 = weights.iter().sum();
        for _ in 0..cycles {
            let mut counts = vec![0u32; weights.len()];
            for _ in 0..total {
                let c = p.select(&mut state, &v, &FlowKey::default()).unwrap();
                counts[c.member] += 1;
            }
            prop_assert_eq!(&counts, &weights);
        }
    }

    /// Removing one service from a hash pool moves only the keys it held.
    #[test]
    fn removing_a_service_from_a_hash_pool_moves_only_its_keys(
        weights in prop::collection::vec(1u32..=100, 2..10),
        removed in any::<prop::sample::Index>(),
        key in prop_oneof![Just(HashKey::SourceIp), Just(HashKey::SrcIpSrcPort), Just(HashKey::SrcIpDestIp)],
    ) {
        let p = pool(Method::Hash(key), &weights);
        let mut v = view(weights.len());
        let gone = removed.index(weights.len());
        let clients: Vec<FlowKey> = (0..500u32)
            .map(|i| FlowKey::new(std::net::Ipv4Addr::from(0xC612_0000 + i * 7919).into(), (i * 31) as u16, "198.19.0.1".parse().unwrap(), 80))
            .collect();
        let mut state = p.new_state();
        let before: Vec<u32> = clients.iter().map(|k| p.select(&mut state, &v, k).unwrap().service).collect();
        v.services[gone].candidate = false;
        for (k, was) in clients.iter().zip(&before) {
            let now = p.select(&mut state, &v, k).unwrap().service;
            if *was != gone as u32 {
                prop_assert_eq!(now, *was, "a key not held by the removed service moved");
            } else {
                prop_assert_ne!(now, gone as u32);
            }
        }
    }

    /// With equal weights, LEASTCONNECTION never widens the spread of active counts, and once
    /// they are within 1 of each other they stay so.
    #[test]
    fn least_connection_keeps_equal_weight_services_within_one(start in prop::collection::vec(0u64..20, 2..10), opens in 1usize..300) {
        let weights = vec![1; start.len()];
        let p = pool(Method::LeastConnection, &weights);
        let mut v = view(start.len());
        for (s, a) in v.services.iter_mut().zip(&start) {
            s.active = *a;
        }
        let spread = |v: &SnapshotView| {
            let a: Vec<u64> = v.services.iter().map(|s| s.active).collect();
            a.iter().max().unwrap() - a.iter().min().unwrap()
        };
        let mut state = p.new_state();
        let mut last = spread(&v);
        for _ in 0..opens {
            let c = p.select(&mut state, &v, &FlowKey::default()).unwrap();
            v.services[c.service as usize].active += 1;
            let now = spread(&v);
            prop_assert!(now <= last.max(1), "spread grew from {} to {}", last, now);
            last = now;
        }
    }

    /// Weighted hashing spreads keys roughly in proportion to the weights.
    #[test]
    fn weighted_hash_shares_follow_weights(heavy in 2u32..6) {
        let p = pool(Method::Hash(HashKey::SrcIpSrcPort), &[1, heavy]);
        let v = view(2);
        let mut state = p.new_state();
        let mut counts = [0u32; 2];
        for i in 0..20_000u32 {
            let k = FlowKey::new(std::net::Ipv4Addr::from(0xC612_0000 + i).into(), (i % 50_000) as u16, "198.19.0.1".parse().unwrap(), 80);
            counts[p.select(&mut state, &v, &k).unwrap().member] += 1;
        }
        let ratio = f64::from(counts[1]) / f64::from(counts[0]);
        prop_assert!((ratio / f64::from(heavy) - 1.0).abs() < 0.15, "ratio {} for weight {}", ratio, heavy);
    }
}

#[test]
fn no_candidate_means_no_choice() {
    let p = pool(Method::LeastConnection, &[1, 1]);
    let mut v = view(2);
    v.services.iter_mut().for_each(|s| s.candidate = false);
    let mut state = p.new_state();
    assert!(p.select(&mut state, &v, &FlowKey::default()).is_none());
    let h = pool(Method::Hash(HashKey::SourceIp), &[1, 1]);
    assert!(
        h.select(&mut h.new_state(), &v, &FlowKey::default())
            .is_none()
    );
}
