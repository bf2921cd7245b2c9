//! A worker's flow table: fixed capacity, no allocation after creation, no locks.
//!
//! Each flow is reachable by two keys: the client side (client → VIP) and the server side
//! (service → SNIP:NAT port). Flows live in a slab; an open-addressing index (linear probing,
//! backward-shift deletion) maps keys to slab slots.
//!
//! Under pressure, flows that are not established give way: when the slab is full, a new flow
//! takes the slot of a closed or unanswered one (oldest first), and embryonic TCP flows (SYN
//! seen, no answer) are counted so the worker can budget them apart. An established flow is
//! never evicted: with none to give way, the new flow is refused.
use std::collections::VecDeque;

use std::net::Ipv4Addr;

use crate::lb::ServiceId;
use crate::wire::{Mac, NatDelta, Proto, TcpFlags, TcpShift};

/// The addresses, ports and protocol a packet is looked up by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FlowKey {
    pub src: u32,
    pub dst: u32,
    pub src_port: u16,
    pub dst_port: u16,
    pub proto: u8,
}

impl FlowKey {
    pub fn new(src: Ipv4Addr, src_port: u16, dst: Ipv4Addr, dst_port: u16, proto: Proto) -> Self {
        Self {
            src: src.into(),
            dst: dst.into(),
            src_port,
            dst_port,
            proto: proto.number(),
        }
    }

    /// The index's hash: two folded multiplies (a 128-bit product's halves XORed, as foldhash
    /// does), the first of the addresses by the ports, the second of that by a constant. Every
    /// input bit reaches the low bits the index takes, in two multiplies' latency where two
    /// splitmix64 rounds took four in a row. One multiply alone spread grids of addresses and
    /// ports worse than a random hash would (72 probes where random keys need 26–38); two
    /// spread them as evenly (test `hash_spreads_keys_as_evenly_as_a_random_one`).
    #[inline(always)]
    pub fn hash(&self) -> u64 {
        const ADDRESSES: u64 = 0x243f_6a88_85a3_08d3;
        const PORTS: u64 = 0x1319_8a2e_0370_7344;
        const ROUND: u64 = 0xa409_3822_299f_31d0;
        const FACTOR: u64 = 0x4528_21e6_38d0_1377;
        let a = (u64::from(self.src) << 32) | u64::from(self.dst);
        let b = (u64::from(self.src_port) << 24)
            | (u64::from(self.dst_port) << 8)
            | u64::from(self.proto);
        folded_multiply(folded_multiply(a ^ ADDRESSES, b ^ PORTS) ^ ROUND, FACTOR)
    }
}

/// The 128-bit product of `x` and `y`, its two halves XORed.
#[inline]
pub(crate) fn folded_multiply(x: u64, y: u64) -> u64 {
    let product = u128::from(x) * u128::from(y);
    (product as u64) ^ ((product >> 64) as u64)
}

/// Which way a packet travels relative to its flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// From the client to the VIP.
    Client,
    /// From the service back to the SNIP.
    Server,
}

/// TCP progress, enough for idle timeouts (NetScaler-like zombie cleanup, not a full stack).
/// The events are bits of one byte: every frame updates them and asks whether the flow is
/// embryonic or closed, a mask each instead of a load per event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpProgress {
    seen: u8,
    /// Timing the first response; see [`TcpProgress::response`].
    pub timing: Timing,
}

/// The service answered (a SYN+ACK, or anything else it sent).
const SERVER_ANSWERED: u8 = 1;
/// The client acknowledged the service's answer: the three-way handshake is complete. (A
/// spoofed SYN's service answers too, but nobody acknowledges it.) Set only after
/// `SERVER_ANSWERED`, so on its own it means established.
const CLIENT_ACKED: u8 = 1 << 1;
const CLIENT_FIN: u8 = 1 << 2;
const SERVER_FIN: u8 = 1 << 3;
/// A reset, or both FINs: the connection is over.
const CLOSED: u8 = 1 << 4;

/// Where a connection's response timing stands. Compact: flows are many.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Timing {
    /// No data from the client yet.
    #[default]
    Idle,
    /// The client's first data went to the service at this time (the worker's clock, ms,
    /// wrapping: responses take far less than 49 days).
    Awaiting(u32),
    /// Timed, or not to be timed: later requests would measure the client's pauses too.
    Done,
}

impl TcpProgress {
    #[inline(always)]
    pub fn update(&mut self, side: Side, flags: TcpFlags) {
        let fin = u8::from(flags.fin);
        let seen = self.seen
            | match side {
                // The ACK counts once the service has answered.
                Side::Client => {
                    (u8::from(flags.ack & (self.seen & SERVER_ANSWERED != 0)) * CLIENT_ACKED)
                        | (fin * CLIENT_FIN)
                }
                Side::Server => SERVER_ANSWERED | (fin * SERVER_FIN),
            };
        let both_fins = seen & (CLIENT_FIN | SERVER_FIN) == CLIENT_FIN | SERVER_FIN;
        self.seen = seen | (u8::from(flags.rst | both_fins) * CLOSED);
    }

    /// The response time of the connection's first request, once: from the client's first
    /// data segment forwarded to the service's first data segment back (LEASTRESPONSETIME).
    pub fn response(&mut self, side: Side, flags: TcpFlags, now_ms: u64) -> Option<u64> {
        if !flags.data {
            return None;
        }
        match (side, self.timing) {
            (_, Timing::Done) | (Side::Client, Timing::Awaiting(_)) => None,
            (Side::Client, Timing::Idle) => {
                self.timing = Timing::Awaiting(now_ms as u32);
                None
            }
            (Side::Server, Timing::Awaiting(at)) => {
                self.timing = Timing::Done;
                Some(u64::from((now_ms as u32).wrapping_sub(at)))
            }
            // A server that speaks first (SMTP, FTP banners) is no request's answer.
            (Side::Server, Timing::Idle) => {
                self.timing = Timing::Done;
                None
            }
        }
    }

    #[inline]
    pub fn is_closed(&self) -> bool {
        self.seen & CLOSED != 0
    }

    /// The service answered and the client acknowledged it.
    #[inline]
    pub fn is_established(&self) -> bool {
        self.seen & CLIENT_ACKED != 0
    }

    /// Neither established nor closed: a handshake under way.
    #[inline]
    pub fn is_opening(&self) -> bool {
        self.seen & (CLIENT_ACKED | CLOSED) == 0
    }

    /// The service has answered.
    #[inline]
    pub fn server_answered(&self) -> bool {
        self.seen & SERVER_ANSWERED != 0
    }

    /// One side has sent a FIN.
    #[inline]
    pub fn half_closed(&self) -> bool {
        self.seen & (CLIENT_FIN | SERVER_FIN) != 0
    }
}

/// Idle timeouts in seconds (NetScaler's unit; 32 bits keep a flow small and still hold
/// "never", 136 years).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// A SYN the service never answered.
    pub embryonic_s: u32,
    /// Established TCP and UDP sessions (the service's client idle timeout).
    pub idle_s: u32,
    /// After one FIN.
    pub half_closed_s: u32,
    /// After both FINs or a RST: long enough for the last ACK and retransmissions.
    pub closed_s: u32,
}

/// The neighbour a flow's frames toward its service go to, as resolved when the shared
/// neighbour table was at `generation` (0: not resolved yet). Kept in the flow, whose cache
/// lines the frame touches anyway, instead of a hash lookup per frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResolvedHop {
    pub generation: u32,
    pub port: u16,
    pub mac: Mac,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flow {
    pub proto: Proto,
    pub client: (Ipv4Addr, u16),
    pub vip: (Ipv4Addr, u16),
    /// The source toward the service: a SNIP and a port of ours, or with USIP the client's
    /// own address (and port, or a port of ours).
    pub snip: (Ipv4Addr, u16),
    /// The SNIP whose port pool `snip`'s port came from; unspecified when the client's own
    /// port is kept (nothing to give back).
    pub pool: Ipv4Addr,
    pub service_addr: (Ipv4Addr, u16),
    pub service: ServiceId,
    /// The vserver's stable id (see [`crate::tables::RtVserver::id`]).
    pub vserver: u32,
    /// The next hop toward the service (the service itself, or a gateway).
    pub hop: Ipv4Addr,
    pub resolved_hop: ResolvedHop,
    /// Where replies to the client go: the port and MAC the client's first packet came from.
    pub client_port: u16,
    pub client_mac: Mac,
    pub tcp: TcpProgress,
    /// Counted in the service's active transactions (until closed or expired).
    pub active: bool,
    pub timeouts: Timeouts,
    pub last_seen: u64,
    /// Added to the client's TCP timestamps toward the service (and taken off the echoes
    /// coming back), so every SNAT tuple sees timestamps that only grow: a service still
    /// holding the tuple in TIME_WAIT accepts the next SYN on it (RFC 7323 §5, PAWS).
    /// 0 when the client sent none: a shift of 0 changes nothing, so frames skip the option
    /// search (and the flow stays 128 bytes).
    pub ts_shift: u32,
    /// The checksum change of the rewrite toward the service (and, undone, back).
    pub nat_delta: NatDelta,
    /// How the flow's sequence numbers toward its service relate to its client's: the
    /// same, moved by the SYN proxy (SYN cookies), or renumbered; see [`Numbering`].
    pub numbering: Numbering,
}

/// How a flow's sequence numbers on its two sides relate. Most flows keep the client's
/// (`AsSent`). For a connection the SYN proxy opened, the client's handshake was with the
/// engine (its SYN+ACK carried a cookie as sequence number) and the service's is the engine's
/// SYN, so the two sides' numbers differ by what the service chose minus the cookie. A client
/// without timestamps is renumbered toward its service.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Numbering {
    /// An ordinary flow: the client's handshake went through to the service.
    #[default]
    AsSent,
    /// The client's ACK proved `cookie`; the engine's SYN to the service, numbered
    /// `service_isn`, awaits its answer.
    AwaitingService {
        cookie: u32,
        client_isn: u32,
        service_isn: u32,
    },
    /// Established on both sides. `toward_client`: the service's sequence numbers minus the
    /// client's view of them (the cookie's); `toward_service`: the engine's ISN toward the
    /// service minus the client's. Each side's numbers are moved into the other's space.
    Shifted {
        toward_client: u32,
        toward_service: u32,
    },
    /// An ordinary flow whose client sent no TCP timestamps: its sequence numbers toward the
    /// service are moved by `toward_service` onto a clock of the SNAT tuple's own (see
    /// `syncookie::service_isn`), so each connection on a tuple starts above the last and a
    /// service still holding the tuple in TIME_WAIT accepts its SYN (RFC 9293 §3.6.1).
    Renumbered { toward_service: u32 },
}

impl Numbering {
    /// What the flow's frames add to sequence numbers: `(toward_client, toward_service)`, 0
    /// where nothing moves.
    fn shifts(self) -> (u32, u32) {
        match self {
            Self::Shifted {
                toward_client,
                toward_service,
            } => (toward_client, toward_service),
            Self::Renumbered { toward_service } => (0, toward_service),
            Self::AsSent | Self::AwaitingService { .. } => (0, 0),
        }
    }
}

/// The hashes ([`FlowKey::hash`]) of a flow's two keys, computed once where the flow is made
/// and carried to where it enters the table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyHashes {
    pub client: u64,
    pub server: u64,
}

impl Flow {
    /// What the rewrite adds to the numbers of the flow's TCP frames coming `from` one side
    /// (the SYN proxy's or the renumbering's sequence shift, and the timestamps' shift), in
    /// the other side's terms. Its `ack` also moves the SACK blocks, which acknowledge the
    /// other side's numbers.
    #[inline(always)]
    pub fn shift(&self, from: Side) -> TcpShift {
        let (toward_client, toward_service) = self.numbering.shifts();
        match from {
            Side::Client => TcpShift {
                seq: toward_service,
                ack: toward_client,
                tsval: self.ts_shift,
                tsecr: 0,
            },
            Side::Server => TcpShift {
                seq: toward_client.wrapping_neg(),
                ack: toward_service.wrapping_neg(),
                tsval: 0,
                tsecr: self.ts_shift.wrapping_neg(),
            },
        }
    }

    /// Both keys' hashes.
    #[inline]
    pub fn key_hashes(&self) -> KeyHashes {
        KeyHashes {
            client: self.client_key().hash(),
            server: self.server_key().hash(),
        }
    }

    pub fn client_key(&self) -> FlowKey {
        FlowKey::new(
            self.client.0,
            self.client.1,
            self.vip.0,
            self.vip.1,
            self.proto,
        )
    }

    pub fn server_key(&self) -> FlowKey {
        FlowKey::new(
            self.service_addr.0,
            self.service_addr.1,
            self.snip.0,
            self.snip.1,
            self.proto,
        )
    }

    /// When this flow expires if nothing more is seen.
    pub fn deadline(&self) -> u64 {
        self.deadline_under(None)
    }

    /// [`Flow::deadline`], with embryonic flows held no longer than `embryonic_ms` when given
    /// (the worker's budget of embryonic flows is running out).
    pub fn deadline_under(&self, embryonic_ms: Option<u64>) -> u64 {
        let t = &self.timeouts;
        let ms = |s: u32| u64::from(s) * 1000;
        let idle = match self.proto {
            Proto::Tcp if self.tcp.is_closed() => ms(t.closed_s),
            Proto::Tcp if self.tcp.half_closed() => ms(t.half_closed_s),
            Proto::Tcp if !self.tcp.is_established() => {
                let embryonic = ms(t.embryonic_s);
                embryonic_ms.map_or(embryonic, |cap| cap.min(embryonic))
            }
            _ => ms(t.idle_s),
        };
        self.last_seen.saturating_add(idle)
    }

    /// A TCP flow whose three-way handshake is not complete and was not ended: a handshake
    /// reset (or closed) waits for nothing and no longer counts against the embryonic budget.
    pub fn is_embryonic(&self) -> bool {
        self.proto == Proto::Tcp && self.tcp.is_opening()
    }

    /// May give way to a new flow in a full table: a TCP connection that is over, a SYN
    /// nobody has answered yet, a UDP flow its service never answered. Not a handshake the
    /// service answered (its client may count the connection open already, its ACK on the
    /// way) nor one the SYN proxy completed with the client: those finish or expire.
    pub fn gives_way(&self) -> bool {
        match self.proto {
            Proto::Tcp => {
                self.tcp.is_closed()
                    || (!self.tcp.server_answered()
                        && matches!(
                            self.numbering,
                            Numbering::AsSent | Numbering::Renumbered { .. }
                        ))
            }
            _ => !self.tcp.server_answered(),
        }
    }
}

/// A table of `n` copies of `value` in memory the kernel is asked to back with huge pages
/// (transparent huge pages, `madvise` mode on Debian): a flow table of a million flows spans
/// hundreds of megabytes, and with 4 KB pages nearly every lookup of a busy appliance missed
/// the TLB as well as the cache. The advice comes before the first write, so the pages are
/// huge from the start; where the kernel says no, the table works the same.
fn huge_table<T: Clone>(n: usize, value: T) -> Box<[T]> {
    let mut table: Vec<T> = Vec::with_capacity(n);
    let bytes = n * std::mem::size_of::<T>();
    let start = table.as_mut_ptr() as usize;
    let (first_page, end_page) = ((start + 4095) & !4095, (start + bytes) & !4095);
    if end_page > first_page {
        // SAFETY: the range lies inside this vector's allocation (page-aligned inwards), which
        // nothing has touched yet; MADV_HUGEPAGE only changes how the kernel backs it.
        unsafe {
            libc::madvise(
                first_page as *mut libc::c_void,
                end_page - first_page,
                libc::MADV_HUGEPAGE,
            )
        };
    }
    table.resize(n, value);
    table.into_boxed_slice()
}

/// A hint to the CPU to load `value`'s cache line; nothing on targets without one.
#[inline(always)]
pub(crate) fn prefetch<T>(value: &T) {
    prefetch_line((value as *const T).cast());
}

/// A hint to the CPU to load the cache line at `addr`; nothing on targets without one.
#[inline(always)]
fn prefetch_line(addr: *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: SSE is part of the x86_64 baseline, and a prefetch never faults nor changes
        // anything but the cache, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(addr.cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}

/// A flow's place in the table, aligned to a cache line so that a flow spans two lines, not
/// three (a big table's allocation starts 16 bytes into a page).
#[derive(Clone, Debug)]
#[repr(align(64))]
struct Slot(Option<Flow>);

const _: () = assert!(
    std::mem::size_of::<Slot>() == 128,
    "a slot is two cache lines"
);

/// An index bucket: a key and the flow's slot packed in 16 bytes, four to a cache line and
/// none across two (a plain key, slot and side took 24). `tag` holds the slot in its low
/// [`SLOT_BITS`] bits, the side above them and the protocol in the top four.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(16))]
struct Entry {
    src: u32,
    dst: u32,
    /// Source port in the high half, destination port in the low.
    ports: u32,
    tag: u32,
}

const SLOT_BITS: u32 = 27;
const SLOT_MASK: u32 = (1 << SLOT_BITS) - 1;
const SERVER_SIDE: u32 = 1 << SLOT_BITS;
const PROTO_SHIFT: u32 = SLOT_BITS + 1;

/// Most flows a table holds: every slot number fits the 27 bits a bucket keeps for it, and
/// the highest is kept for a free bucket's.
pub const MOST_FLOWS: usize = SLOT_MASK as usize;

/// A free bucket.
const EMPTY: Entry = Entry {
    src: 0,
    dst: 0,
    ports: 0,
    tag: u32::MAX,
};

/// The protocol of a key in four bits: a flow's are TCP, UDP or ICMP.
fn proto_code(proto: u8) -> u32 {
    match proto {
        6 => 0,
        17 => 1,
        1 => 2,
        _ => 3,
    }
}

fn proto_number(code: u32) -> u8 {
    match code {
        0 => 6,
        1 => 17,
        2 => 1,
        _ => 0,
    }
}

impl Entry {
    #[inline]
    fn new(key: &FlowKey, slot: u32, side: Side) -> Self {
        let side = match side {
            Side::Client => 0,
            Side::Server => SERVER_SIDE,
        };
        Self {
            tag: (proto_code(key.proto) << PROTO_SHIFT) | side | (slot & SLOT_MASK),
            ..Self::probe(key)
        }
    }

    /// `key` packed as a bucket holds it, slot and side zero: what [`Entry::holds`] compares.
    #[inline]
    fn probe(key: &FlowKey) -> Self {
        Self {
            src: key.src,
            dst: key.dst,
            ports: (u32::from(key.src_port) << 16) | u32::from(key.dst_port),
            tag: proto_code(key.proto) << PROTO_SHIFT,
        }
    }

    #[inline]
    fn is_empty(&self) -> bool {
        self.tag == EMPTY.tag
    }

    /// Whether this bucket holds the key `probe` was made of.
    #[inline]
    fn holds(&self, probe: &Self) -> bool {
        self.src == probe.src
            && self.dst == probe.dst
            && self.ports == probe.ports
            && self.tag >> PROTO_SHIFT == probe.tag >> PROTO_SHIFT
    }

    #[inline]
    fn slot(&self) -> u32 {
        self.tag & SLOT_MASK
    }

    #[inline]
    fn side(&self) -> Side {
        if self.tag & SERVER_SIDE == 0 {
            Side::Client
        } else {
            Side::Server
        }
    }

    fn key(&self) -> FlowKey {
        FlowKey {
            src: self.src,
            dst: self.dst,
            src_port: (self.ports >> 16) as u16,
            dst_port: self.ports as u16,
            proto: proto_number(self.tag >> PROTO_SHIFT),
        }
    }
}

/// Why a flow could not be added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InsertError {
    Full,
    /// One of its keys is already in the table.
    Duplicate,
}

#[derive(Debug)]
pub struct FlowTable {
    slots: Box<[Slot]>,
    /// One bit per slot, set while it holds a flow: the sweep steps over empty slots without
    /// touching them (a million-slot table mostly empty costs it 128 KB, not 128 MB).
    occupied: Box<[u64]>,
    free: Vec<u32>,
    index: Box<[Entry]>,
    mask: usize,
    len: usize,
    /// Where the incremental expiry sweep continues.
    sweep: usize,
    /// TCP flows whose service has not answered yet.
    embryonic: usize,
    /// Flows ever inserted (wrapping): whether a lookup's miss may be stale.
    insertions: u64,
    /// Slots in the order their flows became embryonic, and in the order they became closed or
    /// were created unanswered (UDP): who gives way first. An entry is checked when taken (the
    /// flow may have been answered, or its slot reused since), so stale ones cost one look;
    /// each queue is bounded by the capacity (the oldest entry makes room).
    embryonic_order: VecDeque<u32>,
    closed_order: VecDeque<u32>,
}

/// The queues [`FlowTable::give_way`] takes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GiveWay {
    /// Embryonic flows only (the embryonic budget is spent).
    Embryonic,
    /// Closed or unanswered flows first, then embryonic ones (the table is full).
    Any,
}

/// Entries [`FlowTable::give_way`] looks at before it gives up: stale entries are taken off
/// for good, so the looks are paid once per entry pushed.
const GIVE_WAY_LOOKS: usize = 64;

/// Bytes a flow costs: its slot, two index buckets per key at most half full (four buckets
/// per flow), and its entries in the give-way queues. `README.md` quotes it.
pub const BYTES_PER_FLOW: usize =
    std::mem::size_of::<Slot>() + 4 * std::mem::size_of::<Entry>() + 3 * 4;
// README.md ("Reliability") quotes 204 bytes: a million flows per worker in 204 MB.
const _: () = assert!(BYTES_PER_FLOW <= 204, "update README.md's memory per flow");

impl FlowTable {
    /// A table for `capacity` flows (both keys of each, at most half full), at most
    /// [`MOST_FLOWS`].
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.clamp(1, MOST_FLOWS);
        let buckets = (capacity * 4).next_power_of_two();
        Self {
            slots: huge_table(capacity, Slot(None)),
            occupied: vec![0; capacity.div_ceil(64)].into_boxed_slice(),
            free: (0..capacity as u32).rev().collect(),
            index: huge_table(buckets, EMPTY),
            mask: buckets - 1,
            len: 0,
            sweep: 0,
            embryonic: 0,
            insertions: 0,
            embryonic_order: VecDeque::with_capacity(capacity),
            closed_order: VecDeque::with_capacity(capacity),
        }
    }

    /// TCP flows whose service has not answered yet.
    pub fn embryonic(&self) -> usize {
        self.embryonic
    }

    /// Queues `slot` at the back, making room from the front: never a reallocation.
    fn enqueue(queue: &mut VecDeque<u32>, slot: u32) {
        if queue.len() == queue.capacity() {
            queue.pop_front();
        }
        queue.push_back(slot);
    }

    /// The oldest flow that may give way to a new one, by `which` rule; its slot, for the
    /// worker to retire. Never an established flow.
    pub fn give_way(&mut self, which: GiveWay) -> Option<u32> {
        let mut looks = GIVE_WAY_LOOKS;
        let slots = &self.slots;
        let mut take = |queue: &mut VecDeque<u32>, fits: fn(&Flow) -> bool| {
            while looks > 0 {
                looks -= 1;
                let slot = queue.pop_front()?;
                if slots.get(slot as usize)?.0.as_ref().is_some_and(fits) {
                    return Some(slot);
                }
            }
            None
        };
        match which {
            GiveWay::Embryonic => take(&mut self.embryonic_order, Flow::is_embryonic),
            GiveWay::Any => take(&mut self.closed_order, Flow::gives_way)
                .or_else(|| take(&mut self.embryonic_order, Flow::gives_way)),
        }
    }

    /// Follows a flow's TCP progress (see [`TcpProgress::update`]), keeping the embryonic
    /// count and the give-way queues, and returns the flow.
    #[inline(always)]
    pub fn progress(&mut self, slot: u32, side: Side, flags: TcpFlags) -> Option<&mut Flow> {
        let flow = self.slots.get_mut(slot as usize)?.0.as_mut()?;
        let (embryonic, closed) = (flow.is_embryonic(), flow.tcp.is_closed());
        flow.tcp.update(side, flags);
        if embryonic && !flow.is_embryonic() {
            self.embryonic -= 1;
        }
        if !closed && flow.tcp.is_closed() && flow.proto == Proto::Tcp {
            Self::enqueue(&mut self.closed_order, slot);
        }
        Some(flow)
    }

    /// How the flow in `slot` is numbered from now on (the SYN proxy moving it on).
    pub fn set_numbering(&mut self, slot: u32, numbering: Numbering) {
        if let Some(Slot(Some(f))) = self.slots.get_mut(slot as usize) {
            f.numbering = numbering;
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// How many flows were ever inserted (wrapping): a key that missed stays missing while
    /// this is unchanged.
    pub fn insertions(&self) -> u64 {
        self.insertions
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    fn find(&self, key: &FlowKey) -> Result<usize, usize> {
        self.find_hashed(key, key.hash())
    }

    /// [`FlowTable::find`] with `key`'s hash computed already.
    #[inline]
    fn find_hashed(&self, key: &FlowKey, hash: u64) -> Result<usize, usize> {
        let probe = Entry::probe(key);
        let mut i = hash as usize & self.mask;
        loop {
            let e = &self.index[i];
            if e.is_empty() {
                return Err(i);
            }
            if e.holds(&probe) {
                return Ok(i);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Starts loading the index bucket of a key with this hash ([`FlowKey::hash`]). A burst
    /// does this for all its frames before looking any up, so the misses of a big table's
    /// index overlap instead of coming one after the other.
    #[inline]
    pub fn prefetch_bucket(&self, hash: u64) {
        if let Some(e) = self.index.get(hash as usize & self.mask) {
            prefetch(e);
        }
    }

    /// [`FlowTable::lookup`] with the key's hash computed already.
    #[inline]
    pub fn lookup_hashed(&self, key: &FlowKey, hash: u64) -> Option<(u32, Side)> {
        self.find_hashed(key, hash)
            .ok()
            .map(|i| (self.index[i].slot(), self.index[i].side()))
    }

    /// Starts loading a flow (looked up, to be forwarded later in the burst).
    #[inline]
    pub fn prefetch_flow(&self, slot: u32) {
        if let Some(f) = self.slots.get(slot as usize) {
            let start: *const u8 = (f as *const Slot).cast();
            prefetch_line(start);
            prefetch_line(start.wrapping_add(64));
        }
    }

    /// The flow slot and the side a packet with `key` travels.
    #[inline]
    pub fn lookup(&self, key: &FlowKey) -> Option<(u32, Side)> {
        self.lookup_hashed(key, key.hash())
    }

    pub fn get(&self, slot: u32) -> Option<&Flow> {
        self.slots.get(slot as usize)?.0.as_ref()
    }

    pub fn insert(&mut self, flow: Flow) -> Result<u32, InsertError> {
        let hashes = flow.key_hashes();
        let slot = self.place(flow)?;
        self.enter(slot, hashes).map(|()| slot)
    }

    /// Puts a flow in a free slot without making it visible to lookups yet: [`FlowTable::enter`]
    /// does, before the table is swept or the slot given way. A worker places a new flow as
    /// soon as it is chosen and enters it a little later, its index buckets loaded meanwhile.
    #[inline(always)]
    pub fn place(&mut self, flow: Flow) -> Result<u32, InsertError> {
        let slot = self.free.pop().ok_or(InsertError::Full)?;
        self.slots[slot as usize] = Slot(Some(flow));
        self.mark(slot, true);
        Ok(slot)
    }

    /// Makes the flow placed in `slot` visible by both its keys (`hashes`: theirs, from
    /// [`Flow::key_hashes`]). With a key already in the table the slot is freed again and the
    /// flow dropped.
    pub fn enter(&mut self, slot: u32, hashes: KeyHashes) -> Result<(), InsertError> {
        let Some(Slot(Some(flow))) = self.slots.get(slot as usize) else {
            return Err(InsertError::Duplicate);
        };
        let (embryonic, gives_way) = (flow.is_embryonic(), flow.gives_way());
        let (ck, sk) = (flow.client_key(), flow.server_key());
        let (Err(ci), Err(si)) = (
            self.find_hashed(&ck, hashes.client),
            self.find_hashed(&sk, hashes.server),
        ) else {
            self.slots[slot as usize] = Slot(None);
            self.mark(slot, false);
            self.free.push(slot);
            return Err(InsertError::Duplicate);
        };
        if embryonic {
            self.embryonic += 1;
            Self::enqueue(&mut self.embryonic_order, slot);
        } else if gives_way {
            Self::enqueue(&mut self.closed_order, slot);
        }
        self.index[ci] = Entry::new(&ck, slot, Side::Client);
        // The client key took the server's free bucket only if both probes ended there (every
        // bucket before `si` on the server's chain is taken, so `ci` is not among them).
        let si = if si == ci {
            self.find_hashed(&sk, hashes.server)
        } else {
            Err(si)
        };
        if let Err(si) = si {
            self.index[si] = Entry::new(&sk, slot, Side::Server);
        }
        self.len += 1;
        self.insertions = self.insertions.wrapping_add(1);
        Ok(())
    }

    /// Removes a flow and returns it.
    pub fn remove(&mut self, slot: u32) -> Option<Flow> {
        let flow = self.slots.get_mut(slot as usize)?.0.take()?;
        if flow.is_embryonic() {
            self.embryonic -= 1;
        }
        self.unindex(&flow.client_key());
        self.unindex(&flow.server_key());
        self.mark(slot, false);
        self.free.push(slot);
        self.len -= 1;
        Some(flow)
    }

    /// Keeps `occupied` in step with the slot.
    #[inline]
    fn mark(&mut self, slot: u32, taken: bool) {
        let (word, bit) = (slot as usize / 64, 1u64 << (slot % 64));
        if let Some(w) = self.occupied.get_mut(word) {
            if taken {
                *w |= bit;
            } else {
                *w &= !bit;
            }
        }
    }

    /// Backward-shift deletion keeps every probe chain unbroken without tombstones.
    fn unindex(&mut self, key: &FlowKey) {
        let Ok(mut hole) = self.find(key) else { return };
        let mut i = hole;
        loop {
            i = (i + 1) & self.mask;
            let e = self.index[i];
            if e.is_empty() {
                break;
            }
            let home = e.key().hash() as usize & self.mask;
            // Move e into the hole if its home is not in (hole, i] cyclically.
            let between = if hole <= i {
                hole < home && home <= i
            } else {
                hole < home || home <= i
            };
            if !between {
                self.index[hole] = e;
                hole = i;
            }
        }
        self.index[hole] = EMPTY;
    }

    /// Examines up to `budget` slots from where the last sweep stopped and removes the flows
    /// whose deadline passed, handing each to `expired`.
    pub fn expire(&mut self, now: u64, budget: usize, expired: impl FnMut(Flow)) {
        self.sweep(budget, budget, |f| f.deadline() <= now, expired);
    }

    /// Goes on from where the last sweep stopped over up to `slots` slots, examining at most
    /// `most_flows` flows, removes the ones `remove_if` picks, handing each to `removed`, and
    /// returns how many slots it went over. Empty slots are stepped over by the occupancy
    /// bitmap, 64 at a time, so only flows cost.
    pub fn sweep(
        &mut self,
        slots: usize,
        most_flows: usize,
        mut remove_if: impl FnMut(&Flow) -> bool,
        mut removed: impl FnMut(Flow),
    ) -> usize {
        let n = self.slots.len();
        let (mut left, mut flows_left) = (slots.min(n), most_flows);
        while left > 0 && flows_left > 0 {
            let at = self.sweep;
            let word = self.occupied.get(at / 64).map_or(0, |w| w >> (at % 64));
            // Empty slots up to the next occupied one (or the word's end).
            let empty = (word.trailing_zeros() as usize).min(64 - at % 64);
            let step = empty.max(1).min(left).min(n - at);
            if empty == 0 {
                flows_left -= 1;
                if self.get(at as u32).is_some_and(&mut remove_if)
                    && let Some(f) = self.remove(at as u32)
                {
                    removed(f);
                }
            }
            left -= step;
            self.sweep = if at + step >= n { 0 } else { at + step };
        }
        slots.min(n) - left
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// TCP progress as five flags of its own: what the packed bits must answer alike.
    #[derive(Default)]
    struct ProgressModel {
        server_answered: bool,
        client_acked: bool,
        client_fin: bool,
        server_fin: bool,
        reset: bool,
    }

    proptest::proptest! {
        #[test]
        fn packed_progress_answers_as_separate_flags(
            segments in proptest::collection::vec((proptest::bool::ANY, 0u8..16), 0..12),
        ) {
            let (mut packed, mut model) = (TcpProgress::default(), ProgressModel::default());
            for (from_server, bits) in segments {
                let flags = TcpFlags {
                    syn: false,
                    ack: bits & 1 != 0,
                    fin: bits & 2 != 0,
                    rst: bits & 4 != 0,
                    data: bits & 8 != 0,
                };
                if from_server {
                    packed.update(Side::Server, flags);
                    model.server_answered = true;
                    model.server_fin |= flags.fin;
                } else {
                    packed.update(Side::Client, flags);
                    model.client_fin |= flags.fin;
                    model.client_acked |= model.server_answered && flags.ack;
                }
                model.reset |= flags.rst;
                let m = &model;
                let (established, closed) = (
                    m.server_answered && m.client_acked,
                    m.reset || (m.client_fin && m.server_fin),
                );
                proptest::prop_assert_eq!(packed.is_closed(), closed);
                proptest::prop_assert_eq!(packed.is_established(), established);
                proptest::prop_assert_eq!(packed.is_opening(), !established && !closed);
                proptest::prop_assert_eq!(packed.server_answered(), m.server_answered);
                proptest::prop_assert_eq!(packed.half_closed(), m.client_fin || m.server_fin);
            }
        }
    }

    /// The mean and the longest probe when `keys` enter a linear-probing index twice their
    /// number (half full, as the flow index is at most) by the low bits of their hash.
    fn probes(keys: &[FlowKey]) -> (f64, usize) {
        let mask = (2 * keys.len()).next_power_of_two() - 1;
        let mut taken = vec![false; mask + 1];
        let (mut total, mut longest) = (0, 0);
        for k in keys {
            let mut i = k.hash() as usize & mask;
            let mut probes = 1;
            while taken[i] {
                i = (i + 1) & mask;
                probes += 1;
            }
            taken[i] = true;
            total += probes;
            longest = longest.max(probes);
        }
        (total as f64 / keys.len() as f64, longest)
    }

    #[test]
    fn hash_spreads_keys_as_evenly_as_a_random_one() {
        let vip = Ipv4Addr::new(198, 18, 0, 100);
        let tcp = Proto::Tcp;
        let sets: [(&str, Vec<FlowKey>); 5] = [
            // One client's ports, one after the other.
            (
                "one client's ports",
                (0..65_536u32)
                    .map(|i| {
                        let client = Ipv4Addr::new(198, 18, 0, 50 + (i >> 16) as u8);
                        FlowKey::new(client, i as u16, vip, 80, tcp)
                    })
                    .collect(),
            ),
            // Many clients on the same port.
            (
                "many clients",
                (0..65_536u32)
                    .map(|i| FlowKey::new(Ipv4Addr::from(0xc613_0000 + i), 40_000, vip, 443, tcp))
                    .collect(),
            ),
            // The SNAT tuples toward three services, the server side of flows.
            (
                "SNAT tuples",
                (0..65_536u32)
                    .map(|i| {
                        let service = Ipv4Addr::new(198, 18, 0, 11 + (i % 3) as u8);
                        let port = 1024 + (i / 3) as u16;
                        FlowKey::new(service, 80, Ipv4Addr::new(198, 18, 0, 2), port, tcp)
                    })
                    .collect(),
            ),
            // Grids of addresses and ports, where a single multiply clustered.
            (
                "clients by VIPs",
                (0..65_536u32)
                    .map(|i| {
                        let client = Ipv4Addr::new(198, 18, 2, (i >> 8) as u8);
                        let vip = Ipv4Addr::new(198, 18, 0, i as u8);
                        FlowKey::new(client, 5000, vip, 80, tcp)
                    })
                    .collect(),
            ),
            (
                "SNAT tuples of 4 SNIPs toward 16 services",
                (0..65_536u32)
                    .map(|i| {
                        let service = Ipv4Addr::new(198, 18, 1, (i >> 12) as u8);
                        let snip = Ipv4Addr::new(198, 18, 0, 2 + ((i >> 10) & 3) as u8);
                        FlowKey::new(service, 80, snip, 1024 + (i & 1023) as u16, tcp)
                    })
                    .collect(),
            ),
        ];
        for (name, keys) in sets {
            // A random hash needs 1.5 probes on average half full (Knuth), and the longest
            // of 65,536 is a few dozen.
            let (mean, longest) = probes(&keys);
            eprintln!("{name}: {mean:.3} probes on average, {longest} at most");
            assert!(
                mean <= 1.6 && longest <= 64,
                "{name}: {mean:.3} probes on average, {longest} at most"
            );
        }
    }

    fn flow(i: u16) -> Flow {
        Flow {
            proto: Proto::Tcp,
            client: (Ipv4Addr::new(198, 18, 9, (i % 250) as u8), 10_000 + i),
            vip: (Ipv4Addr::new(198, 18, 0, 100), 80),
            snip: (Ipv4Addr::new(198, 18, 0, 2), 20_000 + i),
            pool: Ipv4Addr::new(198, 18, 0, 2),
            service_addr: (Ipv4Addr::new(198, 18, 0, 11), 80),
            service: 0,
            vserver: 0,
            hop: Ipv4Addr::new(198, 18, 0, 11),
            resolved_hop: ResolvedHop::default(),
            client_port: 0,
            client_mac: [2, 0, 0, 0, 0, 1],
            tcp: TcpProgress::default(),
            active: true,
            timeouts: Timeouts {
                embryonic_s: 10,
                idle_s: 100,
                half_closed_s: 50,
                closed_s: 5,
            },
            last_seen: 0,
            ts_shift: 0,
            nat_delta: NatDelta::default(),
            numbering: Numbering::AsSent,
        }
    }

    #[test]
    fn both_keys_find_the_flow_and_removal_keeps_chains() {
        let mut t = FlowTable::new(64);
        let mut slots: Vec<u32> = (0..63).map(|i| t.insert(flow(i)).unwrap()).collect();
        assert_eq!(t.insert(flow(3)).unwrap_err(), InsertError::Duplicate);
        slots.push(t.insert(flow(63)).unwrap());
        assert_eq!(t.insert(flow(100)), Err(InsertError::Full));
        for i in (0..64).step_by(2) {
            t.remove(slots[i]).unwrap();
        }
        for i in 0..64u16 {
            let f = flow(i);
            let hit = t.lookup(&f.client_key());
            if i % 2 == 0 {
                assert!(hit.is_none() && t.lookup(&f.server_key()).is_none());
            } else {
                assert_eq!(hit, Some((slots[i as usize], Side::Client)));
                assert_eq!(
                    t.lookup(&f.server_key()),
                    Some((slots[i as usize], Side::Server))
                );
            }
        }
        assert_eq!(t.len(), 32);
    }

    #[test]
    fn the_first_response_of_a_connection_is_timed_once() {
        let data = TcpFlags {
            ack: true,
            data: true,
            ..TcpFlags::default()
        };
        let ack = TcpFlags {
            ack: true,
            ..TcpFlags::default()
        };
        let mut p = TcpProgress::default();
        assert_eq!(
            p.response(Side::Client, ack, 1),
            None,
            "the handshake's ACK"
        );
        assert_eq!(p.response(Side::Client, data, 10), None);
        assert_eq!(
            p.response(Side::Client, data, 12),
            None,
            "more of the request"
        );
        assert_eq!(
            p.response(Side::Server, ack, 20),
            None,
            "an ACK is no answer"
        );
        assert_eq!(p.response(Side::Server, data, 35), Some(25));
        assert_eq!(p.response(Side::Client, data, 40), None);
        assert_eq!(
            p.response(Side::Server, data, 90),
            None,
            "only the first request"
        );
        let mut banner = TcpProgress::default();
        assert_eq!(banner.response(Side::Server, data, 5), None);
        assert_eq!(banner.response(Side::Client, data, 6), None);
        assert_eq!(banner.response(Side::Server, data, 9), None);
    }

    #[test]
    fn expiry_follows_tcp_progress() {
        let mut t = FlowTable::new(8);
        let a = t.insert(flow(1)).unwrap(); // embryonic: 10 s
        let b = t.insert(flow(2)).unwrap();
        answered(&mut t, b);
        let mut gone = Vec::new();
        t.expire(10_000, 8, |f| gone.push(f.client.1));
        assert_eq!(gone, [10_001]);
        assert!(t.get(a).is_none() && t.get(b).is_some());
        t.progress(
            b,
            Side::Client,
            TcpFlags {
                rst: true,
                ..TcpFlags::default()
            },
        );
        t.expire(10_000, 8, |f| gone.push(f.client.1));
        assert_eq!(
            gone.len(),
            2,
            "a reset flow lingers only the closed timeout (5 s)"
        );
    }

    #[test]
    fn a_sweep_steps_over_empty_slots_and_a_table_size_not_a_multiple_of_64() {
        let mut t = FlowTable::new(200);
        let slots: Vec<u32> = (0..200).map(|i| t.insert(flow(i)).unwrap()).collect();
        // Keep a sparse few, on both sides of word boundaries and the last slot.
        let kept = [0usize, 63, 64, 130, 199];
        for (i, &slot) in slots.iter().enumerate() {
            if !kept.contains(&i) {
                t.remove(slot);
            }
        }
        let mut seen = Vec::new();
        // Budgets that end inside words and across the table's end: three full turns, each
        // flow seen once per turn.
        for budget in [1, 62, 2, 70, 65, 200, 200] {
            t.sweep(
                budget,
                budget,
                |f| {
                    seen.push(f.client.1);
                    false
                },
                |_| {},
            );
        }
        let mut counted = seen.clone();
        counted.sort_unstable();
        counted.dedup();
        assert_eq!(seen.len(), 3 * kept.len(), "{seen:?}");
        let by_port: Vec<u16> = kept.iter().map(|&i| 10_000 + i as u16).collect();
        assert_eq!(counted, by_port);
        assert_eq!(t.len(), kept.len());
        // A limit on flows stops the sweep right after the last one it examined.
        assert_eq!(t.sweep(200, 2, |_| false, |_| {}), 64, "slots 0 and 63");
        assert_eq!(t.sweep(200, 3, |_| false, |_| {}), 136, "64, 130, 199");
        t.sweep(200, 200, |_| true, |_| {});
        assert!(
            t.is_empty(),
            "one budget of the table's size reaches every slot"
        );
    }

    /// The service's SYN+ACK and the client's ACK.
    fn answered(t: &mut FlowTable, slot: u32) {
        let synack = TcpFlags {
            syn: true,
            ack: true,
            ..TcpFlags::default()
        };
        t.progress(slot, Side::Server, synack).unwrap();
        let ack = TcpFlags {
            ack: true,
            ..TcpFlags::default()
        };
        t.progress(slot, Side::Client, ack).unwrap();
    }

    fn reset(t: &mut FlowTable, slot: u32) {
        let rst = TcpFlags {
            rst: true,
            ..TcpFlags::default()
        };
        t.progress(slot, Side::Client, rst).unwrap();
    }

    #[test]
    fn the_oldest_embryonic_flow_gives_way_and_never_an_established_one() {
        let mut t = FlowTable::new(8);
        let slots: Vec<u32> = (0..4).map(|i| t.insert(flow(i)).unwrap()).collect();
        assert_eq!(t.embryonic(), 4);
        answered(&mut t, slots[0]);
        answered(&mut t, slots[2]);
        assert_eq!(t.embryonic(), 2);
        assert_eq!(t.give_way(GiveWay::Embryonic), Some(slots[1]));
        t.remove(slots[1]).unwrap();
        assert_eq!(t.give_way(GiveWay::Embryonic), Some(slots[3]));
        t.remove(slots[3]).unwrap();
        assert_eq!(t.embryonic(), 0);
        assert_eq!(t.give_way(GiveWay::Embryonic), None);
        assert_eq!(t.give_way(GiveWay::Any), None, "both left are established");
    }

    #[test]
    fn a_reset_handshake_no_longer_counts_as_embryonic() {
        let mut t = FlowTable::new(8);
        let slots: Vec<u32> = (0..3).map(|i| t.insert(flow(i)).unwrap()).collect();
        reset(&mut t, slots[1]);
        assert_eq!(t.embryonic(), 2);
        t.remove(slots[1]).unwrap();
        assert_eq!(t.embryonic(), 2, "removing it takes nothing more off");
        assert_eq!(t.give_way(GiveWay::Embryonic), Some(slots[0]));
    }

    #[test]
    fn closed_flows_give_way_before_embryonic_ones() {
        let mut t = FlowTable::new(8);
        let slots: Vec<u32> = (0..3).map(|i| t.insert(flow(i)).unwrap()).collect();
        answered(&mut t, slots[1]);
        answered(&mut t, slots[2]);
        reset(&mut t, slots[2]);
        assert_eq!(t.give_way(GiveWay::Any), Some(slots[2]), "the closed one");
        t.remove(slots[2]).unwrap();
        assert_eq!(
            t.give_way(GiveWay::Any),
            Some(slots[0]),
            "then the embryonic"
        );
    }

    #[test]
    fn a_handshake_the_service_answered_does_not_give_way_in_a_full_table() {
        let mut t = FlowTable::new(8);
        let unanswered = t.insert(flow(1)).unwrap();
        let half = t.insert(flow(2)).unwrap();
        let synack = TcpFlags {
            syn: true,
            ack: true,
            ..TcpFlags::default()
        };
        // The SYN+ACK went to the client; its ACK has not come back yet.
        t.progress(half, Side::Server, synack).unwrap();
        assert_eq!(t.embryonic(), 2);
        assert_eq!(t.give_way(GiveWay::Any), Some(unanswered));
        t.remove(unanswered).unwrap();
        assert_eq!(t.give_way(GiveWay::Any), None, "the answered one stays");
        // Past the embryonic budget (a flood) the oldest half-open flow still goes.
        let mut t = FlowTable::new(8);
        let half = t.insert(flow(2)).unwrap();
        t.progress(half, Side::Server, synack).unwrap();
        assert_eq!(t.give_way(GiveWay::Embryonic), Some(half));
    }

    #[test]
    fn a_reused_slot_is_not_taken_for_its_old_flow() {
        let mut t = FlowTable::new(2);
        let a = t.insert(flow(1)).unwrap();
        t.remove(a).unwrap();
        let b = t.insert(flow(2)).unwrap();
        answered(&mut t, b);
        assert_eq!(b, a, "the slot came back");
        assert_eq!(t.give_way(GiveWay::Any), None);
    }

    #[test]
    fn the_embryonic_count_and_give_way_stay_right_over_random_operations() {
        let mut t = FlowTable::new(64);
        let mut live: Vec<u32> = Vec::new();
        let mut r = 7u64;
        for n in 0..50_000u32 {
            r = r.wrapping_mul(6364136223846793005).wrapping_add(1);
            let pick = (r >> 33) as usize;
            match pick % 5 {
                0 | 1 => {
                    if let Ok(slot) = t.insert(flow((n % 20_000) as u16)) {
                        live.push(slot);
                    }
                }
                2 if !live.is_empty() => answered(&mut t, live[pick % live.len()]),
                3 if !live.is_empty() => reset(&mut t, live[pick % live.len()]),
                _ if !live.is_empty() => {
                    let which = if pick.is_multiple_of(2) {
                        GiveWay::Any
                    } else {
                        GiveWay::Embryonic
                    };
                    if let Some(slot) = t.give_way(which) {
                        let f = t.get(slot).unwrap();
                        assert!(f.gives_way(), "never an established flow");
                        assert!(which == GiveWay::Any || f.is_embryonic());
                        t.remove(slot).unwrap();
                        live.retain(|s| *s != slot);
                    }
                }
                _ => {}
            }
            let embryonic = live
                .iter()
                .filter(|s| t.get(**s).unwrap().is_embryonic())
                .count();
            assert_eq!(t.embryonic(), embryonic);
            assert_eq!(t.len(), live.len());
        }
    }

    #[test]
    fn a_bucket_gives_back_the_key_slot_and_side_it_packs() {
        for proto in [Proto::Tcp, Proto::Udp, Proto::Icmp] {
            let key = FlowKey::new(
                Ipv4Addr::new(198, 18, 0, 50),
                65535,
                Ipv4Addr::new(198, 19, 255, 255),
                1,
                proto,
            );
            for (slot, side) in [(0, Side::Client), (MOST_FLOWS as u32 - 1, Side::Server)] {
                let e = Entry::new(&key, slot, side);
                assert!(!e.is_empty());
                assert_eq!((e.key(), e.slot(), e.side()), (key, slot, side));
                assert!(e.holds(&Entry::probe(&key)));
            }
            let other = Entry::probe(&FlowKey {
                proto: if proto == Proto::Tcp { 17 } else { 6 },
                ..key
            });
            assert!(!Entry::new(&key, 7, Side::Client).holds(&other));
        }
        assert_eq!(std::mem::size_of::<Entry>(), 16);
    }

    #[test]
    fn random_insert_remove_matches_a_model() {
        let mut t = FlowTable::new(200);
        let mut model = std::collections::HashMap::new();
        let mut r = 1u64;
        for _ in 0..20_000 {
            r = r.wrapping_mul(6364136223846793005).wrapping_add(1);
            let i = ((r >> 33) % 400) as u16;
            let f = flow(i);
            if let Some(slot) = model.remove(&i) {
                assert_eq!(t.remove(slot).map(|f| f.client.1), Some(f.client.1));
            } else if let Ok(slot) = t.insert(f) {
                model.insert(i, slot);
            }
            assert_eq!(t.len(), model.len());
        }
        for (i, slot) in &model {
            assert_eq!(
                t.lookup(&flow(*i).server_key()),
                Some((*slot, Side::Server))
            );
        }
    }
}
