//! A selection decision allocates nothing: counted by a global allocator wrapper over every
//! method, after the pool and its per-worker state were built.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use engine::counters::Counters;
use engine::lb::{
    ColumnView, FlowKey, HashKey, Member, Method, Pool, ServiceSnapshot, SnapshotView,
};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards every call unchanged to the system allocator; it only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|a| a.set(a.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|a| a.set(a.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

#[test]
fn decisions_and_counter_updates_do_not_allocate() {
    let methods = [
        Method::RoundRobin,
        Method::LeastConnection,
        Method::Lrtm,
        Method::LeastPackets,
        Method::LeastBandwidth,
        Method::CustomLoad,
        Method::Hash(HashKey::SourceIp),
        Method::Hash(HashKey::SrcIpSrcPort),
    ];
    let view = SnapshotView {
        services: (0..64)
            .map(|i| ServiceSnapshot {
                candidate: i % 7 != 0,
                active: i,
                packets: i * 3,
                bytes: i * 1000,
                response_time: Some(5 + i % 3),
                load: Some(i % 11),
            })
            .collect(),
    };
    let columns = ColumnView::from(&view);
    let (_counters, mut writers) = Counters::new(1, 64);
    // The counter sees allocations at all (else the assertions below would prove nothing).
    let probe = allocations();
    drop(std::hint::black_box(Vec::<u8>::with_capacity(16)));
    assert!(allocations() > probe);
    for method in methods {
        for weights in [1u32, 7] {
            let members = (0..64u32)
                .map(|i| Member {
                    service: i,
                    weight: 1 + (i % weights),
                    seed: u64::from(i),
                })
                .collect();
            let pool = Pool::new(method, members);
            let mut state = pool.new_state();
            pool.start_round_robin(&mut state, 1, engine::lb::RoundRobinReason::VserverCreated);
            let mut columns_state = state.clone();
            let before = allocations();
            for i in 0..1000u32 {
                let key = FlowKey {
                    src: u128::from(i),
                    dst: 1,
                    src_port: i as u16,
                    dst_port: 80,
                };
                let c = pool
                    .select(&mut state, &view, &key)
                    .expect("candidates exist");
                let by_columns = pool.select(&mut columns_state, &columns, &key);
                assert!(by_columns.is_some(), "{method:?} over columns");
                writers[0].flow_opened(c.service);
                writers[0].count(c.service, u64::from(i / 100), 1, 64);
                writers[0].tick(u64::from(i / 100));
            }
            assert_eq!(allocations(), before, "{method:?} allocated");
        }
    }
}
