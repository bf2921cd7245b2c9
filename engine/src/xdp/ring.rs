//! The four AF_XDP rings as the kernel lays them out (single producer, single consumer,
//! indices that only grow, masked on access), driven from Rust with acquire/release atomics
//! where libbpf uses its inline functions.

use std::sync::atomic::{AtomicU32, Ordering};

use libbpf_sys::{XDP_RING_NEED_WAKEUP, xdp_desc, xsk_ring_cons, xsk_ring_prod};

/// A ring this side produces into: fill (UMEM addresses) or TX (descriptors).
#[derive(Debug)]
pub struct Producer<T> {
    pub(super) raw: Box<xsk_ring_prod>,
    _entry: std::marker::PhantomData<T>,
}

/// A ring this side consumes from: completion (UMEM addresses) or RX (descriptors).
#[derive(Debug)]
pub struct Consumer<T> {
    pub(super) raw: Box<xsk_ring_cons>,
    _entry: std::marker::PhantomData<T>,
}

/// What a ring entry may be: an address (fill, completion) or a descriptor (RX, TX).
pub trait Entry: Copy {}
impl Entry for u64 {}
impl Entry for xdp_desc {}

// SAFETY: the rings are memory shared with the kernel only; each one is driven by the one
// thread that owns it (the struct moves between threads, it is never shared).
unsafe impl<T> Send for Producer<T> {}
// SAFETY: as for `Producer`.
unsafe impl<T> Send for Consumer<T> {}

/// Reads a ring index the kernel writes.
///
/// # Safety
/// `at` points to a live, aligned ring index of a mapped ring.
unsafe fn load(at: *mut u32, order: Ordering) -> u32 {
    // SAFETY: the caller's contract; the kernel updates the index atomically.
    unsafe { AtomicU32::from_ptr(at) }.load(order)
}

/// Publishes a ring index to the kernel.
///
/// # Safety
/// As for [`load`].
unsafe fn store(at: *mut u32, value: u32) {
    // SAFETY: the caller's contract.
    unsafe { AtomicU32::from_ptr(at) }.store(value, Ordering::Release)
}

impl<T: Entry> Producer<T> {
    /// A ring libbpf has not set up yet (it fills `raw` in when the socket is created).
    pub(super) fn unmapped() -> Self {
        Self {
            raw: Box::default(),
            _entry: std::marker::PhantomData,
        }
    }

    /// Whether libbpf mapped this ring.
    pub(super) fn is_mapped(&self) -> bool {
        !self.raw.ring.is_null()
    }

    /// Room for up to `wanted` entries: how many the kernel has consumed.
    fn free(&mut self, wanted: u32) -> u32 {
        let r = &mut *self.raw;
        let free = r.cached_cons.wrapping_sub(r.cached_prod);
        if free >= wanted {
            return free;
        }
        // SAFETY: `consumer` points into the ring libbpf mapped for this socket.
        r.cached_cons = unsafe { load(r.consumer, Ordering::Acquire) }.wrapping_add(r.size);
        r.cached_cons.wrapping_sub(r.cached_prod)
    }

    /// Writes up to `entries.len()` entries taken from `next` and publishes them; returns
    /// how many went in (`next` is called exactly that many times).
    pub fn produce(&mut self, max: usize, mut next: impl FnMut() -> Option<T>) -> usize {
        if !self.is_mapped() {
            return 0;
        }
        let room = self.free(max as u32).min(max as u32);
        let mut written = 0u32;
        while written < room {
            let Some(entry) = next() else { break };
            let r = &mut *self.raw;
            let slot = (r.cached_prod.wrapping_add(written) & r.mask) as usize;
            // SAFETY: `slot` is masked into the ring's `size` entries of type `T` (libbpf
            // mapped `ring` for this ring kind), and slots between the cached producer and
            // consumer belong to this side until published.
            unsafe { r.ring.cast::<T>().add(slot).write(entry) };
            written += 1;
        }
        if written > 0 {
            let r = &mut *self.raw;
            r.cached_prod = r.cached_prod.wrapping_add(written);
            // SAFETY: `producer` points into this ring's mapping; the release store makes the
            // entries written above visible before the index.
            unsafe { store(r.producer, r.cached_prod) };
        }
        written as usize
    }

    /// Whether the kernel asks to be woken to process this ring (`need_wakeup`).
    pub fn needs_wakeup(&self) -> bool {
        if !self.is_mapped() {
            return false;
        }
        // SAFETY: `flags` points into this ring's mapping.
        unsafe { load(self.raw.flags, Ordering::Relaxed) & XDP_RING_NEED_WAKEUP != 0 }
    }

    /// Entries published and not yet consumed by the kernel.
    pub fn outstanding(&mut self) -> u32 {
        let size = self.raw.size;
        size - self.free(size)
    }
}

impl<T: Entry> Consumer<T> {
    pub(super) fn unmapped() -> Self {
        Self {
            raw: Box::default(),
            _entry: std::marker::PhantomData,
        }
    }

    /// Takes up to `max` entries the kernel produced, handing each to `take`, and gives the
    /// slots back; returns how many.
    pub fn consume(&mut self, max: usize, mut take: impl FnMut(T)) -> usize {
        let r = &mut *self.raw;
        if r.ring.is_null() {
            return 0;
        }
        let mut available = r.cached_prod.wrapping_sub(r.cached_cons);
        if available == 0 {
            // SAFETY: `producer` points into the ring libbpf mapped for this socket; the
            // acquire load orders the entries' reads after it.
            r.cached_prod = unsafe { load(r.producer, Ordering::Acquire) };
            available = r.cached_prod.wrapping_sub(r.cached_cons);
        }
        let n = available.min(max as u32);
        for i in 0..n {
            let slot = (r.cached_cons.wrapping_add(i) & r.mask) as usize;
            // SAFETY: `slot` is masked into the ring; entries up to the producer index were
            // published by the kernel before it (acquire above).
            take(unsafe { r.ring.cast::<T>().add(slot).read() });
        }
        if n > 0 {
            r.cached_cons = r.cached_cons.wrapping_add(n);
            // SAFETY: `consumer` points into this ring's mapping; the release store hands
            // the slots back after they were read.
            unsafe { store(r.consumer, r.cached_cons) };
        }
        n as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ring in plain memory, both ends driven here: `prod` and `cons` share the indices.
    struct Memory {
        producer: Box<u32>,
        consumer: Box<u32>,
        flags: Box<u32>,
        entries: Vec<u64>,
    }

    impl Memory {
        fn new(size: u32) -> Self {
            Self {
                producer: Box::new(u32::MAX - 5), // indices wrap during the test
                consumer: Box::new(u32::MAX - 5),
                flags: Box::new(0),
                entries: vec![0; size as usize],
            }
        }

        fn ends(&mut self) -> (Producer<u64>, Consumer<u64>) {
            let size = self.entries.len() as u32;
            let mut p = Producer::<u64>::unmapped();
            let mut c = Consumer::<u64>::unmapped();
            let (producer, consumer, flags) = (
                &raw mut *self.producer,
                &raw mut *self.consumer,
                &raw mut *self.flags,
            );
            let (ring, mask) = (self.entries.as_mut_ptr().cast(), size - 1);
            *p.raw = xsk_ring_prod {
                cached_prod: *self.producer,
                cached_cons: self.consumer.wrapping_add(size),
                mask,
                size,
                producer,
                consumer,
                ring,
                flags,
            };
            *c.raw = xsk_ring_cons {
                cached_prod: *self.producer,
                cached_cons: *self.consumer,
                mask,
                size,
                producer,
                consumer,
                ring,
                flags,
            };
            (p, c)
        }
    }

    #[test]
    fn entries_come_out_in_order_across_index_wraps_and_a_full_ring_takes_no_more() {
        let mut memory = Memory::new(8);
        let (mut prod, mut cons) = memory.ends();
        let mut next = 0u64;
        let mut seen = Vec::new();
        for round in 0..20 {
            let wanted = 1 + round % 7;
            let wrote = prod.produce(wanted, || {
                next += 1;
                Some(next)
            });
            assert_eq!(wrote, wanted.min(8 - (next as usize - wrote - seen.len())));
            cons.consume(round % 5, |e| seen.push(e));
        }
        cons.consume(8, |e| seen.push(e));
        assert_eq!(seen, (1..=next).collect::<Vec<_>>());
        // Full: eight in, the ninth refused until one is consumed.
        assert_eq!(prod.produce(9, || Some(0)), 8);
        assert_eq!(prod.produce(1, || Some(0)), 0);
        assert_eq!(prod.outstanding(), 8);
        assert_eq!(cons.consume(1, |_| {}), 1);
        assert_eq!(prod.produce(1, || Some(0)), 1);
    }

    #[test]
    fn need_wakeup_is_read_from_the_flags() {
        let mut memory = Memory::new(4);
        let (prod, _) = memory.ends();
        assert!(!prod.needs_wakeup());
        *memory.flags = XDP_RING_NEED_WAKEUP;
        assert!(prod.needs_wakeup());
    }

    #[test]
    fn an_unmapped_ring_moves_nothing() {
        let mut prod = Producer::<u64>::unmapped();
        assert_eq!(prod.produce(4, || Some(1)), 0);
        let mut cons = Consumer::<u64>::unmapped();
        assert_eq!(cons.consume(4, |_| panic!("nothing to take")), 0);
    }
}
