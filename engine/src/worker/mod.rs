//! A worker: frames in, verdicts out. It owns its flow-table shard, its NAT port range, its
//! neighbour table and its per-vserver selection state; it shares only the per-core counters
//! (its own slots), the published service health and the immutable configuration tables.
//!
//! The same code runs over AF_XDP rings and over the in-memory port (tests, `fulcrumd
//! replay`): [`run`] is the loop, generic over a [`Port`]. Time is passed in (milliseconds);
//! nothing here reads a clock.
//!
//! * `burst` — a burst in stages: parse, look up, select, rewrite; `in_flight` — the new
//!   flows of a burst placed but not yet entered in the index.
//! * `flush` — downStateFlush and the RSTs toward a flow's peers.
//! * `arp` — answering ARP, learning neighbours, asking for next hops.
//! * `monitor` — readdressing frames to and from the monitor core.
//! * `housekeeping` — the sweep, counter windows, periodic ARP, the outbox.
//! * `view` — what selection reads about services; `columns` — the worker's copy of it in
//!   columns, for the least-X methods.
//! * [`port`] — the [`Port`] trait and the in-memory port; [`run`] — the loop.

mod arp;
mod burst;
mod columns;
mod crew;
mod flush;
pub mod handoff;
mod housekeeping;
mod in_flight;
mod monitor;
pub mod port;
pub mod run;
pub mod steer;
mod sweep_pace;
mod synproxy;
mod view;
pub mod waker;

use std::net::Ipv4Addr;
use std::sync::Arc;

use crate::counters::{CoreWriter, Counters};
use crate::flow::{Flow, FlowTable, ResolvedHop};
use crate::health::ServiceHealth;
use crate::lb::{PoolState, RoundRobinReason};
use crate::nat::Snat;
use crate::neigh::{NeighbourView, Neighbours};
use crate::tables::Tables;
use crate::verdict::{DropCounters, SharedDrops, Verdict};
use crate::wire::Mac;

pub use crew::Crew;
pub use handoff::Lanes;
pub use port::{DeviceDrops, FrameBuf, MemPort, Port, PortError};
pub use run::{MonitorRings, Runner};
pub use waker::Waker;

/// Most frames one call of [`Worker::process_burst`] takes.
pub const BURST: usize = 64;
/// Neighbours a table holds.
pub const NEIGHBOURS: usize = 4096;
/// Most frames the worker originates (ARP requests, RSTs) between two drains.
const OUTBOX: usize = 256;
/// Outbox places SYN cookies leave free for everything else (a flood's cookies must not
/// crowd out the frames that join real clients to their services).
const OUTBOX_RESERVED: usize = 64;

/// One frame the worker built itself (an ARP request, an RST), padded to the Ethernet
/// minimum.
#[derive(Clone, Copy, Debug)]
pub struct OwnFrame {
    pub port: usize,
    pub len: usize,
    pub data: [u8; 60],
}

/// Totals a worker keeps for `stat` and the lab scripts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkerStats {
    pub rx: u64,
    pub tx: u64,
    pub flows_created: u64,
    pub flows_expired: u64,
    /// Flows ended by downStateFlush.
    pub flows_flushed: u64,
    /// Frames passed to the worker owning their flow, and received from other workers.
    pub handoff_out: u64,
    pub handoff_in: u64,
    /// Port calls the device could not take (retried the next round).
    pub port_busy: u64,
    /// SNAT ports passed over for a SYN without timestamps (their service may still hold
    /// the tuple in TIME_WAIT), and ports reused although it may (none was free of it).
    pub snat_skipped: u64,
    pub snat_time_wait: u64,
    /// Flows that gave way to new ones: embryonic flows past the budget, closed or unanswered
    /// flows in a full table.
    pub flows_given_way: u64,
    /// SYNs answered with a cookie, ACKs whose cookie proved the handshake, and ACKs whose
    /// cookie did not (while cookies were being sent).
    pub syn_cookies_sent: u64,
    pub syn_cookies_valid: u64,
    pub syn_cookies_failed: u64,
}

#[derive(Debug)]
pub struct Worker {
    id: usize,
    macs: Vec<Mac>,
    /// Per port: verify TCP and UDP checksums (and complete partial ones) before rewriting.
    verify_checksums: Vec<bool>,
    tables: Arc<Tables>,
    pools: Vec<PoolState>,
    flows: FlowTable,
    /// Embryonic TCP flows held before the oldest gives way to a new SYN.
    embryonic_limit: usize,
    snat: Snat,
    neigh: NeighbourView,
    /// By service id: the neighbour its next hop resolved to for the last new flow (see
    /// `burst::hop_toward`).
    hops: Vec<(Ipv4Addr, ResolvedHop)>,
    flush_rules: flush::FlushRules,
    writer: CoreWriter,
    counters: Arc<Counters>,
    health: Arc<ServiceHealth>,
    /// What the least-X methods read, copied into columns (see `columns`).
    columns: columns::SelectionColumns,
    /// The burst's parsed headers and stages, kept between bursts (filling them afresh for
    /// every burst cost more than the stages' work).
    scratch: Option<burst::Scratch>,
    outbox: Vec<OwnFrame>,
    /// Flows the last sweep flushed, awaiting their probes (capacity: one sweep's most).
    flushed: Vec<Flow>,
    /// How far the next sweep goes.
    sweep_pace: sweep_pace::SweepPace,
    /// The last sweep stopped at its most flows with slots still owed.
    sweep_behind: bool,
    last_arp_round: Option<u64>,
    pub drops: DropCounters,
    pub stats: WorkerStats,
    shared_drops: Option<Arc<SharedDrops>>,
    /// A monitor core runs: its frames are handed over instead of dropped.
    monitor: bool,
    /// Set when frames of flows other workers own are handed to them.
    steering: Option<steer::Steering>,
    workers: usize,
    /// Which of a service's SNIPs the next new flow tries first (they take turns).
    next_source: usize,
    /// When this worker last answered a SYN with a cookie (seconds): until two cookie
    /// lifetimes later, an ACK of no flow is checked for one. From the start (the daemon's
    /// clock at 0), as the daemon this one replaced may have given cookies.
    last_cookie_s: u64,
    /// SYN cookies under pressure go on until then (seconds).
    cookies_until_s: u64,
    /// The wall clock (ms) at the daemon clock's zero: the TCP timestamps toward services
    /// count from it, so they keep growing across restarts (see `burst::ts_base`).
    timestamp_origin_ms: u64,
}

/// A quarter of the table: a SYN flood churns through that part, and the rest stays for
/// connections that were answered.
fn default_embryonic_limit(capacity: usize) -> usize {
    (capacity / 4).max(1)
}

/// What a worker needs at creation.
#[derive(Debug)]
pub struct WorkerSetup {
    pub id: usize,
    pub workers: usize,
    /// MAC address of each port, by port index.
    pub macs: Vec<Mac>,
    pub flow_capacity: usize,
    pub writer: CoreWriter,
    pub counters: Arc<Counters>,
    pub health: Arc<ServiceHealth>,
    pub tables: Arc<Tables>,
}

impl Worker {
    pub fn new(setup: WorkerSetup) -> Self {
        let mut w = Self {
            id: setup.id,
            verify_checksums: vec![true; setup.macs.len()],
            macs: setup.macs,
            tables: Arc::new(Tables::default()),
            pools: Vec::new(),
            flows: FlowTable::new(setup.flow_capacity),
            embryonic_limit: default_embryonic_limit(setup.flow_capacity),
            snat: Snat::new(setup.id, setup.workers),
            neigh: NeighbourView::new(Arc::new(Neighbours::new(NEIGHBOURS))),
            hops: Vec::new(),
            flush_rules: flush::FlushRules::default(),
            writer: setup.writer,
            counters: setup.counters,
            health: setup.health,
            columns: columns::SelectionColumns::default(),
            scratch: Some(burst::Scratch::new()),
            outbox: Vec::with_capacity(OUTBOX),
            flushed: Vec::with_capacity(sweep_pace::SWEEP_MOST_FLOWS_PER_CALL),
            sweep_pace: sweep_pace::SweepPace::default(),
            sweep_behind: false,
            last_arp_round: None,
            drops: DropCounters::default(),
            stats: WorkerStats::default(),
            shared_drops: None,
            monitor: false,
            steering: None,
            workers: setup.workers,
            next_source: 0,
            last_cookie_s: 0,
            cookies_until_s: 0,
            timestamp_origin_ms: 0,
        };
        w.set_tables(setup.tables);
        w
    }

    pub fn id(&self) -> usize {
        self.id
    }

    pub fn tables(&self) -> &Arc<Tables> {
        &self.tables
    }

    pub fn flows(&self) -> &FlowTable {
        &self.flows
    }

    /// Embryonic TCP flows to hold before the oldest gives way to a new SYN (the profile's
    /// `[flows] embryonic`; a quarter of the table unless set).
    pub fn set_embryonic_limit(&mut self, limit: usize) {
        self.embryonic_limit = limit.max(1);
    }

    /// The wall clock (ms since 1970) at the zero of the clock `now_ms` is read from (the
    /// daemon's [`crate::clock::Clock::wall_ms_at_zero`]). The TCP timestamps a new flow
    /// carries toward its service count from there: a restarted daemon goes on above where
    /// the last one stopped (counting from its own start, it began below, and services still
    /// holding its tuples in TIME_WAIT refused its SYNs for a minute), and so does another
    /// node whose clock agrees.
    pub fn set_timestamp_origin(&mut self, wall_ms_at_zero: u64) {
        self.timestamp_origin_ms = wall_ms_at_zero;
    }

    /// The wall clock (ms) at the daemon's `now_ms`: what outlives the daemon counts in it
    /// (timestamps and ISNs toward services, SYN cookies).
    #[inline(always)]
    fn wall_ms(&self, now_ms: u64) -> u64 {
        self.timestamp_origin_ms.wrapping_add(now_ms)
    }

    pub fn ports(&self) -> usize {
        self.macs.len()
    }

    /// Hands frames whose flow another worker owns to that worker (see [`steer`]) instead of
    /// processing them here: with several workers, the queue a frame arrives on says nothing
    /// of its flow.
    pub fn steer_to_owners(&mut self) {
        if self.steering.is_none() {
            self.steering = Some(steer::Steering::ranges(self.id, self.workers));
        }
    }

    /// RSS-aware steering: the NIC's `rss` brings each frame to the worker of its queue
    /// (queue `w` is worker `w`'s), and this worker picks SNAT ports (from the whole range)
    /// whose replies hash to its own queue. Call before any flow exists.
    pub fn steer_by_rss(&mut self, rss: Arc<crate::rss::Rss>) {
        self.steering = Some(steer::Steering {
            id: self.id,
            workers: self.workers,
            rss: Some(rss),
        });
        self.snat = Snat::new(0, 1);
        let snips: Vec<Ipv4Addr> = self.tables.snips().map(|s| s.addr).collect();
        for s in snips {
            self.snat.add_snip(s);
        }
    }

    /// Shares `neighbours` with the other workers (instead of a table of its own), so an
    /// ARP answer that reached another queue serves this worker too.
    pub fn share_neighbours(&mut self, neighbours: Arc<Neighbours>) {
        self.neigh = NeighbourView::new(neighbours);
    }

    /// Frames received on `port` carry complete checksums (a physical NIC's: a frame from
    /// the wire cannot hold a partial one), so the per-frame verification is skipped there.
    pub fn trust_checksums(&mut self, port: usize) {
        if let Some(v) = self.verify_checksums.get_mut(port) {
            *v = false;
        }
    }

    /// Applies a new configuration generation between bursts. Selection state is kept for
    /// vservers whose pool did not change; a new or changed pool starts over (with startup
    /// round robin when configured). Established flows are untouched.
    pub fn set_tables(&mut self, tables: Arc<Tables>) {
        let old = std::mem::replace(&mut self.tables, tables);
        self.writer.set_generation(self.tables.generation);
        self.columns.reset(&self.tables);
        let mut pools = Vec::with_capacity(self.tables.vservers.len());
        for v in &self.tables.vservers {
            let previous = old.vservers.iter().position(|o| o.name == v.name);
            let kept = previous.filter(|&i| {
                old.vservers[i].pool.members() == v.pool.members()
                    && old.vservers[i].pool.method() == v.pool.method()
            });
            let state = match kept.and_then(|i| self.pools.get(i)) {
                Some(s) => s.clone(),
                None => {
                    let mut s = v.pool.new_state();
                    let reason = match previous {
                        None => RoundRobinReason::VserverCreated,
                        Some(i) if old.vservers[i].pool.method() != v.pool.method() => {
                            RoundRobinReason::MethodChanged
                        }
                        Some(_) => RoundRobinReason::ServiceBound,
                    };
                    v.pool
                        .start_round_robin(&mut s, self.tables.startup_rr_factor, reason);
                    s
                }
            };
            pools.push(state);
        }
        self.pools = pools;
        // Generation 0 is no neighbour table's: every entry is resolved afresh first.
        self.hops =
            vec![(Ipv4Addr::UNSPECIFIED, ResolvedHop::default()); self.tables.services.len()];
        self.flush_rules = flush::FlushRules::new(&self.tables);
        let snips: Vec<Ipv4Addr> = self.tables.snips().map(|s| s.addr).collect();
        for s in snips {
            self.snat.add_snip(s);
        }
    }

    /// Processes one received frame in place (a burst of one).
    #[inline]
    pub fn process(&mut self, now_ms: u64, in_port: usize, frame: &mut [u8]) -> Verdict {
        let mut verdict = [Verdict::Consumed];
        self.process_burst(now_ms, in_port, &mut [frame], &mut verdict);
        verdict[0]
    }
}
