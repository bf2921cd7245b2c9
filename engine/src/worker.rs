//! A worker: frames in, verdicts out. It owns its flow-table shard, its NAT port range, its
//! neighbour table and its per-vserver selection state; it shares only the per-core counters
//! (its own slots), the published service health and the immutable configuration tables.
//!
//! The same code runs over AF_XDP rings and over the in-memory port (tests, `fulcrumd
//! replay`). Time is passed in (milliseconds); nothing here reads a clock.

use std::net::Ipv4Addr;
use std::sync::Arc;

use crate::counters::{CoreWriter, Counters};
use crate::flow::{Flow, FlowKey, FlowTable, InsertError, Side, TcpProgress};
use crate::health::ServiceHealth;
use crate::lb::{self, PoolState, RoundRobinReason, ServiceId, ServiceView};
use crate::nat::Snat;
use crate::neigh::NeighbourTable;
use crate::tables::Tables;
use crate::verdict::{DropCounters, DropReason, SharedDrops, Verdict};
use crate::wire::{self, Arp, Ipv4, Mac, Packet, Proto};

/// Most frames one call of [`Worker::process_burst`] takes.
pub const BURST: usize = 64;
/// Flows examined for expiry per housekeeping call.
const SWEEP_BUDGET: usize = 256;
/// Most frames the worker originates (ARP requests) between two drains.
const OUTBOX: usize = 64;
const ARP_INTERVAL_MS: u64 = 1000;

/// A received frame's bytes, whatever holds them (a UMEM frame, a buffer in a test).
pub trait FrameBuf {
    fn bytes(&mut self) -> &mut [u8];
}

impl FrameBuf for &mut [u8] {
    fn bytes(&mut self) -> &mut [u8] {
        self
    }
}

impl FrameBuf for Vec<u8> {
    fn bytes(&mut self) -> &mut [u8] {
        self
    }
}

/// Where a frame of a burst stands between the stages.
#[derive(Clone, Copy, Debug)]
enum Stage {
    Done(Verdict),
    /// Needs a flow lookup; `true` when addressed to a SNIP (replies, or the monitor core's).
    Lookup(Ipv4, bool),
    New(Ipv4),
    Forward(Ipv4, u32, Side),
}

fn flow_key(ip: &Ipv4) -> FlowKey {
    FlowKey::new(ip.src, ip.src_port, ip.dst, ip.dst_port, ip.proto)
}

/// One frame the worker built itself (an ARP request), padded to the Ethernet minimum.
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
}

/// Selection reads live state: configuration, health from the monitor core, counters summed
/// over all cores.
struct LiveView<'a> {
    tables: &'a Tables,
    health: &'a ServiceHealth,
    counters: &'a Counters,
}

impl ServiceView for LiveView<'_> {
    #[inline]
    fn is_candidate(&self, s: ServiceId) -> bool {
        self.tables
            .service(s)
            .is_some_and(|x| x.enabled && x.path.is_some())
            && self.health.is_up(s)
    }
    #[inline]
    fn active(&self, s: ServiceId) -> u64 {
        self.counters.active(s)
    }
    #[inline]
    fn packets(&self, s: ServiceId) -> u64 {
        self.counters.window_packets(s)
    }
    #[inline]
    fn bytes(&self, s: ServiceId) -> u64 {
        self.counters.window_bytes(s)
    }
    #[inline]
    fn response_time(&self, s: ServiceId) -> Option<u64> {
        self.health.response_time(s)
    }
    #[inline]
    fn load(&self, s: ServiceId) -> Option<u64> {
        self.health.load(s)
    }
    #[inline]
    fn sample(&self, s: ServiceId, stat: lb::Stat) -> lb::Sample {
        // A service whose metric crossed its threshold leaves CUSTOMLOAD decisions.
        if !self.is_candidate(s) || (stat == lb::Stat::Load && self.health.load_excluded(s)) {
            return lb::Sample::Skip;
        }
        let value = match stat {
            lb::Stat::Active => Some(self.active(s)),
            lb::Stat::Packets => Some(self.packets(s)),
            lb::Stat::Bytes => Some(self.bytes(s)),
            lb::Stat::ResponseTime => self.response_time(s),
            lb::Stat::Load => self.load(s),
        };
        value.map_or(lb::Sample::Missing, lb::Sample::Value)
    }
}

#[derive(Debug)]
pub struct Worker {
    id: usize,
    macs: Vec<Mac>,
    tables: Arc<Tables>,
    pools: Vec<PoolState>,
    flows: FlowTable,
    snat: Snat,
    neigh: NeighbourTable,
    writer: CoreWriter,
    counters: Arc<Counters>,
    health: Arc<ServiceHealth>,
    outbox: Vec<OwnFrame>,
    /// Flows the last sweep flushed, awaiting their probes (capacity: one sweep's budget).
    flushed: Vec<Flow>,
    last_arp_round: Option<u64>,
    pub drops: DropCounters,
    pub stats: WorkerStats,
    shared_drops: Option<Arc<SharedDrops>>,
    /// A monitor core runs: its frames are handed over instead of dropped.
    monitor: bool,
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
            macs: setup.macs,
            tables: Arc::new(Tables::default()),
            pools: Vec::new(),
            flows: FlowTable::new(setup.flow_capacity),
            snat: Snat::new(setup.id, setup.workers),
            neigh: NeighbourTable::new(4096),
            writer: setup.writer,
            counters: setup.counters,
            health: setup.health,
            outbox: Vec::with_capacity(OUTBOX),
            flushed: Vec::with_capacity(SWEEP_BUDGET),
            last_arp_round: None,
            drops: DropCounters::default(),
            stats: WorkerStats::default(),
            shared_drops: None,
            monitor: false,
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

    /// Applies a new configuration generation between bursts. Selection state is kept for
    /// vservers whose pool did not change; a new or changed pool starts over (with startup
    /// round robin when configured). Established flows are untouched.
    pub fn set_tables(&mut self, tables: Arc<Tables>) {
        let old = std::mem::replace(&mut self.tables, tables);
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

    /// Processes a burst received on one port, in stages: parse all (ARP and ICMP are answered
    /// there), look all up in the flow table, select services for the misses, rewrite all.
    /// `verdicts[i]` says what to do with `frames[i]`; at most [`BURST`] frames are taken.
    pub fn process_burst<F: FrameBuf>(
        &mut self,
        now_ms: u64,
        in_port: usize,
        frames: &mut [F],
        verdicts: &mut [Verdict],
    ) -> usize {
        let n = frames.len().min(verdicts.len()).min(BURST);
        let mut stage = [Stage::Done(Verdict::Consumed); BURST];
        // 1. Parse.
        for i in 0..n {
            let frame = frames[i].bytes();
            stage[i] = match wire::parse(frame) {
                Err(reason) => Stage::Done(Verdict::Drop(reason)),
                Ok(Packet::Arp(arp)) => Stage::Done(self.arp(now_ms, in_port, frame, &arp)),
                Ok(Packet::Ipv4(ip)) => self.classify(in_port, frame, &ip),
            };
        }
        // 2. Look up.
        for i in 0..n {
            if let Stage::Lookup(ip, snip_bound) = stage[i] {
                let monitor_port = crate::nat::MONITOR_PORTS.contains(&ip.dst_port);
                stage[i] = match self.flows.lookup(&flow_key(&ip)) {
                    Some((slot, side)) if self.reopens(now_ms, &ip, slot, side) => {
                        self.retire(slot);
                        Stage::New(ip)
                    }
                    Some((slot, side)) => {
                        // A FIN or RST ends its transaction before this burst's new flows are
                        // balanced (stage 3), so least-X methods see the count it leaves.
                        if ip.tcp.fin || ip.tcp.rst {
                            self.track(slot, side, ip.tcp);
                        }
                        Stage::Forward(ip, slot, side)
                    }
                    // Replies to the SNIP that match no flow are the monitor core's (SPEC §1).
                    None if snip_bound && monitor_port && self.monitor => {
                        Stage::Done(Verdict::ToMonitor)
                    }
                    None if snip_bound && monitor_port => {
                        Stage::Done(Verdict::Drop(DropReason::NoMonitorCore))
                    }
                    None if snip_bound => {
                        self.reset_unknown(in_port, frames[i].bytes(), &ip);
                        Stage::Done(Verdict::Drop(DropReason::NoFlow))
                    }
                    None => Stage::New(ip),
                };
            }
        }
        // 3. Select for the misses. An earlier frame of this burst may have created the flow.
        for i in 0..n {
            if let Stage::New(ip) = stage[i] {
                stage[i] = match self.flows.lookup(&flow_key(&ip)) {
                    Some((slot, side)) => Stage::Forward(ip, slot, side),
                    None => match self.new_flow(now_ms, in_port, frames[i].bytes(), &ip) {
                        Ok(slot) => Stage::Forward(ip, slot, Side::Client),
                        Err(reason) => {
                            if reason == DropReason::NoFlow {
                                self.reset_unknown(in_port, frames[i].bytes(), &ip);
                            }
                            Stage::Done(Verdict::Drop(reason))
                        }
                    },
                };
            }
        }
        // 4. Rewrite.
        for i in 0..n {
            let verdict = match stage[i] {
                Stage::Forward(ip, slot, side) => {
                    self.forward(now_ms, frames[i].bytes(), &ip, slot, side)
                }
                Stage::Done(v) => v,
                Stage::Lookup(..) | Stage::New(_) => Verdict::Drop(DropReason::Malformed),
            };
            match verdict {
                Verdict::Drop(r) => self.drops.count(r),
                Verdict::Tx { .. } => self.stats.tx += 1,
                Verdict::ToMonitor => self.address_to_monitor(frames[i].bytes()),
                Verdict::Consumed => {}
            }
            verdicts[i] = verdict;
        }
        self.stats.rx += n as u64;
        n
    }

    fn arp(&mut self, now_ms: u64, in_port: usize, frame: &mut [u8], arp: &Arp) -> Verdict {
        // Anyone on a SNIP subnet who speaks ARP is a neighbour worth remembering.
        if self.tables.snip_toward(arp.sender_ip).is_some() {
            self.neigh
                .learn(arp.sender_ip, arp.sender_mac, in_port, now_ms);
        }
        if !arp.request {
            return if self.monitor {
                Verdict::ToMonitor
            } else {
                Verdict::Consumed
            };
        }
        match (self.tables.local(arp.target_ip), self.macs.get(in_port)) {
            (Some(_), Some(&mac)) => {
                wire::arp_reply_in_place(frame, arp, mac);
                Verdict::Tx { port: in_port }
            }
            _ => Verdict::Drop(DropReason::Ignored),
        }
    }

    /// Stage 1 for IPv4: answer ICMP echo, drop what is not ours; the rest needs a lookup.
    fn classify(&mut self, in_port: usize, frame: &mut [u8], ip: &Ipv4) -> Stage {
        let Some(local) = self.tables.local(ip.dst).copied() else {
            return Stage::Done(Verdict::Drop(DropReason::NotForUs));
        };
        if ip.proto == Proto::Icmp {
            if !ip.echo_request && self.monitor && local.kind == ctl::conf::IpType::Snip {
                return Stage::Done(Verdict::ToMonitor); // echo replies to PING monitors
            }
            return Stage::Done(match (ip.echo_request, self.macs.get(in_port)) {
                (true, Some(&mac)) => {
                    let peer = src_mac(frame);
                    wire::echo_reply_in_place(frame, ip, mac, peer);
                    Verdict::Tx { port: in_port }
                }
                _ => Verdict::Drop(DropReason::Ignored),
            });
        }
        if ip.ttl <= 1 {
            return Stage::Done(Verdict::Drop(DropReason::TtlExpired));
        }
        Stage::Lookup(*ip, local.kind == ctl::conf::IpType::Snip)
    }

    fn new_flow(
        &mut self,
        now_ms: u64,
        in_port: usize,
        frame: &[u8],
        ip: &Ipv4,
    ) -> Result<u32, DropReason> {
        let vs = self
            .tables
            .vserver_for(ip.dst, ip.proto, ip.dst_port)
            .ok_or(DropReason::NoVserver)? as usize;
        let vserver = &self.tables.vservers[vs];
        let vserver_id = vserver.id;
        if !vserver.enabled {
            return Err(DropReason::VserverDisabled);
        }
        let opens_connection = ip.tcp.syn && !ip.tcp.ack;
        if ip.proto == Proto::Tcp && !opens_connection {
            return Err(DropReason::NoFlow);
        }
        let view = LiveView {
            tables: &self.tables,
            health: &self.health,
            counters: &self.counters,
        };
        let hash_key = lb::FlowKey::new(ip.src.into(), ip.src_port, ip.dst.into(), ip.dst_port);
        // SOURCEIP persistence: the client's service while its session lasts, if that service
        // is still a candidate of this vserver; otherwise the method decides.
        let now_s = now_ms / 1000;
        let persisted = vserver
            .persist
            .as_ref()
            .and_then(|t| t.lookup(ip.src, now_s))
            .filter(|&s| {
                vserver.pool.members().iter().any(|m| m.service == s) && view.is_candidate(s)
            });
        let service = match persisted {
            Some(s) => s,
            None => {
                let state = self.pools.get_mut(vs).ok_or(DropReason::NoVserver)?;
                vserver
                    .pool
                    .select(state, &view, &hash_key)
                    .ok_or(DropReason::NoService)?
                    .service
            }
        };
        if let (Some(table), Some(timeout)) = (&vserver.persist, vserver.persist_timeout_s) {
            table.record(ip.src, service, now_s, timeout);
        }
        let svc = self.tables.service(service).ok_or(DropReason::NoService)?;
        let (snip, hop) = svc.path.ok_or(DropReason::NoRoute)?;
        if self.neigh.get(hop).is_none() {
            self.ask_for(hop, snip);
            return Err(DropReason::NoNeighbour);
        }
        let nat_port = self
            .snat
            .allocate(snip)
            .ok_or(DropReason::NatPortsExhausted)?;
        let flow = Flow {
            proto: ip.proto,
            client: (ip.src, ip.src_port),
            vip: (ip.dst, ip.dst_port),
            snip: (snip, nat_port),
            service_addr: (svc.addr, svc.port.unwrap_or(ip.dst_port)),
            service,
            vserver: vserver_id,
            hop,
            client_port: in_port,
            client_mac: src_mac(frame),
            tcp: TcpProgress::default(),
            active: true,
            timeouts: svc.timeouts,
            last_seen: now_ms,
        };
        match self.flows.insert(flow) {
            Ok(slot) => {
                self.writer.flow_opened(service);
                self.writer.vserver_hit(vserver_id);
                self.stats.flows_created += 1;
                Ok(slot)
            }
            Err(e) => {
                self.snat.release(snip, nat_port);
                Err(match e {
                    InsertError::Full => DropReason::FlowTableFull,
                    InsertError::Duplicate => DropReason::Malformed,
                })
            }
        }
    }

    fn forward(
        &mut self,
        now_ms: u64,
        frame: &mut [u8],
        ip: &Ipv4,
        slot: u32,
        side: Side,
    ) -> Verdict {
        if let Some(f) = self.flows.get(slot)
            && self.flush_due(now_ms, f.service)
        {
            return self.flush(frame, ip, slot, side);
        }
        let Some(flow) = self.flows.get_mut(slot) else {
            return Verdict::Drop(DropReason::NoFlow);
        };
        flow.last_seen = now_ms;
        note_progress(&self.writer, flow, side, ip.tcp);
        let flow = *flow;
        let (port, dst_mac) = match side {
            Side::Client => {
                let Some(n) = self.neigh.get(flow.hop) else {
                    self.ask_for(flow.hop, flow.snip.0);
                    return Verdict::Drop(DropReason::NoNeighbour);
                };
                wire::rewrite(frame, ip, flow.snip, flow.service_addr);
                (n.port, n.mac)
            }
            Side::Server => {
                wire::rewrite(frame, ip, flow.vip, flow.client);
                (flow.client_port, flow.client_mac)
            }
        };
        let Some(&our_mac) = self.macs.get(port) else {
            return Verdict::Drop(DropReason::NoRoute);
        };
        wire::set_macs(frame, our_mac, dst_mac);
        self.writer
            .count(flow.service, now_ms / 1000, 1, ip.len as u64);
        Verdict::Tx { port }
    }

    /// [`note_progress`] for the flow in `slot`.
    fn track(&mut self, slot: u32, side: Side, flags: wire::TcpFlags) {
        if let Some(flow) = self.flows.get_mut(slot) {
            note_progress(&self.writer, flow, side, flags);
        }
    }

    /// A client's SYN on the 4-tuple of a flow that is over (closed, or flushed): a new
    /// connection reusing the port, balanced afresh rather than reset or sent to the old
    /// service.
    fn reopens(&self, now_ms: u64, ip: &Ipv4, slot: u32, side: Side) -> bool {
        side == Side::Client
            && ip.tcp.syn
            && !ip.tcp.ack
            && self
                .flows
                .get(slot)
                .is_some_and(|f| f.tcp.is_closed() || self.flush_due(now_ms, f.service))
    }

    /// Ends a flow without a word to its peers (it is over, or its port is reused).
    fn retire(&mut self, slot: u32) {
        if let Some(flow) = self.flows.remove(slot) {
            if flow.active {
                self.writer.flow_closed(flow.service);
            }
            self.snat.release(flow.snip.0, flow.snip.1);
        }
    }

    /// downStateFlush: the service's monitors decided DOWN, or it was disabled and its drain
    /// (if any) is over.
    fn flush_due(&self, now_ms: u64, service: ServiceId) -> bool {
        flush_due(&self.tables, &self.health, now_ms, service)
    }

    /// Ends a flushed flow on its next frame: the frame is dropped and, for TCP, both peers
    /// get an RST in their own sequence space (the sender's from the numbers it just used,
    /// the other's from what the sender has sent), so neither waits on a dead connection.
    fn flush(&mut self, frame: &[u8], ip: &Ipv4, slot: u32, side: Side) -> Verdict {
        let Some(flow) = self.flows.get(slot).copied() else {
            return Verdict::Drop(DropReason::NoFlow);
        };
        self.retire(slot);
        self.stats.flows_flushed += 1;
        if let Some(n) = wire::tcp_numbers(frame, ip)
            && !ip.tcp.rst
        {
            let (client, server) = self.legs(&flow);
            let (sender, peer) = match side {
                Side::Client => (Some(client), server),
                Side::Server => (server, Some(client)),
            };
            if let Some(leg) = sender {
                let (seq, ack) = if ip.tcp.ack {
                    (n.ack, None)
                } else {
                    (0, Some(n.seq.wrapping_add(n.len)))
                };
                self.queue_rst(leg, seq, ack);
            }
            if let Some(leg) = peer {
                self.queue_rst(leg, n.seq, None);
            }
        }
        Verdict::Drop(DropReason::Flushed)
    }

    /// A flow's two sides: toward the client, and toward the service (when its next hop's
    /// MAC is known).
    fn legs(&self, f: &Flow) -> (Leg, Option<Leg>) {
        let client = Leg {
            port: f.client_port,
            mac: f.client_mac,
            ours: f.vip,
            theirs: f.client,
        };
        let server = self.neigh.get(f.hop).map(|nb| Leg {
            port: nb.port,
            mac: nb.mac,
            ours: f.snip,
            theirs: f.service_addr,
        });
        (client, server)
    }

    /// Answers a TCP segment of no connection we know (a flushed or expired flow, a
    /// restarted engine) with an RST, as a host does for a closed port (RFC 793): its peer
    /// stops at once instead of retrying into silence.
    fn reset_unknown(&mut self, in_port: usize, frame: &[u8], ip: &Ipv4) {
        let Some(n) = wire::tcp_numbers(frame, ip) else {
            return;
        };
        if ip.tcp.rst {
            return;
        }
        let leg = Leg {
            port: in_port,
            mac: src_mac(frame),
            ours: (ip.dst, ip.dst_port),
            theirs: (ip.src, ip.src_port),
        };
        if ip.tcp.ack {
            self.queue_rst(leg, n.ack, None);
        } else {
            self.queue_rst(leg, 0, Some(n.seq.wrapping_add(n.len)));
        }
    }

    /// Asks both peers of each TCP flow the sweep flushed for their sequence numbers (see
    /// [`wire::tcp_probe`]); their answers meet no flow and get exact RSTs.
    fn probe_flushed(&mut self) {
        for k in 0..self.flushed.len() {
            let f = self.flushed[k];
            if f.proto != Proto::Tcp || f.tcp.is_closed() {
                continue;
            }
            let (client, server) = self.legs(&f);
            for leg in std::iter::once(client).chain(server) {
                self.queue_frame(leg, |buf, macs, leg| {
                    wire::tcp_probe(buf, macs, leg.ours, leg.theirs)
                });
            }
        }
    }

    fn queue_rst(&mut self, leg: Leg, seq: u32, ack: Option<u32>) {
        self.queue_frame(leg, |buf, macs, leg| {
            wire::tcp_rst(buf, macs, leg.ours, leg.theirs, seq, ack)
        });
    }

    /// Queues a frame the engine builds toward one side of a flow (dropped when the outbox
    /// is full: the peer's next segment is answered then).
    fn queue_frame(&mut self, leg: Leg, build: impl FnOnce(&mut [u8], (Mac, Mac), &Leg) -> usize) {
        let Some(&our_mac) = self.macs.get(leg.port) else {
            return;
        };
        if self.outbox.len() >= OUTBOX {
            return; // the peer's next segment is answered instead
        }
        let mut data = [0u8; 60];
        let len = build(&mut data, (our_mac, leg.mac), &leg);
        self.outbox.push(OwnFrame {
            port: leg.port,
            len,
            data,
        });
    }

    /// Queues an ARP request for `target` on every port (see [`crate::tables`]).
    fn ask_for(&mut self, target: Ipv4Addr, from: Ipv4Addr) {
        for (port, &mac) in self.macs.iter().enumerate() {
            if self.outbox.len() >= OUTBOX
                || self
                    .outbox
                    .iter()
                    .any(|f| f.port == port && f.data[38..42] == target.octets())
            {
                continue;
            }
            let mut data = [0u8; 60];
            let len = wire::arp_request(&mut data, mac, from, target);
            self.outbox.push(OwnFrame {
                port,
                len: len.max(60),
                data,
            });
        }
    }

    /// Periodic work between bursts: expire idle flows, rotate counter windows, ask for the
    /// next hops of services not resolved yet (once a second).
    /// Hands the monitor core its frames (SNIP traffic on the monitor ports, ICMP to the
    /// SNIP, ARP replies) as [`Verdict::ToMonitor`].
    pub fn attach_monitor(&mut self) {
        self.monitor = true;
    }

    /// The port a frame built by the monitor core leaves on: toward the neighbour that holds
    /// its destination, or every port (`None`) for broadcasts and unknown destinations. Sets
    /// the Ethernet (and ARP sender) address to that port's MAC.
    pub fn route_monitor_frame(&self, frame: &mut [u8], port: Option<usize>) -> Option<usize> {
        let chosen = port.or_else(|| match wire::parse(frame) {
            Ok(Packet::Ipv4(ip)) => self.neigh.get(ip.dst).map(|n| n.port),
            _ => None,
        });
        if let (Some(p), true) = (chosen, frame.len() >= 14)
            && let Some(mac) = self.macs.get(p)
        {
            frame[6..12].copy_from_slice(mac);
            if frame[12..14] == [0x08, 0x06] && frame.len() >= 28 {
                frame[22..28].copy_from_slice(mac);
            }
        }
        chosen
    }

    /// The monitor core has one MAC (port 0's): frames that reached another port are
    /// readdressed to it, so its stack accepts them.
    fn address_to_monitor(&self, frame: &mut [u8]) {
        let Some(mac) = self.macs.first() else { return };
        if frame.len() >= 14 {
            frame[0..6].copy_from_slice(mac);
            if frame[12..14] == [0x08, 0x06] && frame.len() >= 38 {
                frame[32..38].copy_from_slice(mac);
            }
        }
    }

    pub fn ports(&self) -> usize {
        self.macs.len()
    }

    /// Publishes this worker's drop counters there at every housekeeping call.
    pub fn share_drops(&mut self, shared: Arc<SharedDrops>) {
        self.shared_drops = Some(shared);
    }

    pub fn housekeeping(&mut self, now_ms: u64) {
        self.writer.tick(now_ms / 1000);
        if let Some(shared) = &self.shared_drops {
            shared.publish(self.id, &self.drops);
        }
        // One sweep ends idle flows and flushes those of DOWN or disabled services, idle ones
        // included (their next frame would too, but an idle peer might wait a long time).
        let (writer, snat, stats) = (&self.writer, &mut self.snat, &mut self.stats);
        let (tables, health, flushed) = (&self.tables, &self.health, &mut self.flushed);
        flushed.clear();
        self.flows.sweep(
            SWEEP_BUDGET,
            |f| f.deadline() <= now_ms || flush_due(tables, health, now_ms, f.service),
            |f| {
                if f.active {
                    writer.flow_closed(f.service);
                }
                snat.release(f.snip.0, f.snip.1);
                if f.deadline() <= now_ms {
                    stats.flows_expired += 1;
                } else {
                    stats.flows_flushed += 1;
                    flushed.push(f);
                }
            },
        );
        self.probe_flushed();
        let round = now_ms / ARP_INTERVAL_MS;
        if self.last_arp_round != Some(round) {
            self.last_arp_round = Some(round);
            let tables = Arc::clone(&self.tables);
            for svc in tables.services.iter().flatten() {
                if let Some((snip, hop)) = svc.path
                    && self.neigh.get(hop).is_none()
                {
                    self.ask_for(hop, snip);
                }
            }
        }
    }

    /// Hands out the frames the worker built (ARP requests).
    pub fn drain_outbox(&mut self, mut send: impl FnMut(usize, &[u8])) {
        for f in self.outbox.drain(..) {
            send(f.port, &f.data[..f.len]);
        }
    }
}

/// One side of a flow as the engine sees it: where the peer is and which addresses each end
/// uses on that side.
#[derive(Clone, Copy, Debug)]
struct Leg {
    port: usize,
    mac: Mac,
    ours: (Ipv4Addr, u16),
    theirs: (Ipv4Addr, u16),
}

/// Follows a flow's TCP progress. A closed connection is no longer an active transaction,
/// though its entry lingers for the last ACK and retransmissions.
#[inline]
fn note_progress(writer: &CoreWriter, flow: &mut Flow, side: Side, flags: wire::TcpFlags) {
    flow.tcp.update(side, flags);
    if flow.active && flow.tcp.is_closed() {
        flow.active = false;
        writer.flow_closed(flow.service);
    }
}

/// See [`Worker::flush_due`].
fn flush_due(tables: &Tables, health: &ServiceHealth, now_ms: u64, service: ServiceId) -> bool {
    tables.service(service).is_some_and(|s| {
        s.down_state_flush
            && (health.is_down(service) || s.flush_from_ms.is_some_and(|t| now_ms >= t))
    })
}

fn src_mac(frame: &[u8]) -> Mac {
    let mut m = [0u8; 6];
    m.copy_from_slice(&frame[6..12]);
    m
}
