//! A burst in stages (SPEC §1, DPDK's manner): parse all (ARP and ICMP echo are answered
//! there), look all up in the flow table, select services for the misses, rewrite all. Each
//! stage works over the whole burst in fixed-size arrays on the stack.

use std::net::Ipv4Addr;

use crate::flow::{
    Flow, FlowKey, GiveWay, InsertError, KeyHashes, Numbering, ResolvedHop, Side, TcpProgress,
};
use crate::lb::{self, ServiceView, spill};
use crate::tables::{LocalIp, LocalKind};
use crate::verdict::{DropReason, Verdict};
use crate::wire::{self, Ipv4, Parsed, Proto, TransportChecksum};

use super::in_flight::{Chosen, InFlight, Placed};
use super::view::LiveView;
use super::{BURST, FrameBuf, Worker};

/// Where a frame of a burst stands between the stages. Eight bytes, built in a register: a
/// wider one was assembled on the stack and read back whole, a store-forwarding stall a frame.
/// The frame's parsed headers stay in one array beside the stages (moving them from stage to
/// stage cost more than the stages' work).
#[derive(Clone, Copy, Debug)]
enum Stage {
    /// The frame's verdict is in the burst's verdicts already.
    Done,
    /// Needs a flow lookup; `true` when addressed to a SNIP (replies, or the monitor core's).
    Lookup(bool),
    New,
    Forward(u32, Side),
}

const _: () = assert!(std::mem::size_of::<Stage>() == 8);

/// Decides a frame's verdict in an early stage.
#[inline(always)]
fn done(slot: &mut Verdict, verdict: Verdict) -> Stage {
    *slot = verdict;
    Stage::Done
}

/// Each frame's parsed headers, stage and checksum state during a burst. Only the first `n`
/// entries of a burst are meaningful; each is written before it is read (stage 1 writes every
/// frame's stage and header, and the checksum state of each frame that goes on to a lookup).
#[derive(Debug)]
pub(super) struct Scratch {
    stage: Box<[Stage; BURST]>,
    sums: Box<[TransportChecksum; BURST]>,
    ips: Box<[Ipv4; BURST]>,
    /// Each looked-up frame's flow key hash: computed once, for the index prefetch and the
    /// lookup.
    hashes: Box<[u64; BURST]>,
}

impl Scratch {
    pub(super) fn new() -> Self {
        Self {
            stage: Box::new([Stage::Done; BURST]),
            sums: Box::new([TransportChecksum::Valid; BURST]),
            ips: Box::new([Ipv4::default(); BURST]),
            hashes: Box::new([0; BURST]),
        }
    }
}

fn flow_key(ip: &Ipv4) -> FlowKey {
    FlowKey::new(ip.src, ip.src_port, ip.dst, ip.dst_port, ip.proto)
}

/// A frame that opens a flow, as it arrived: its port, bytes and parsed headers, and the
/// hash of its key (the new flow's client key), computed once for the lookup that missed.
#[derive(Clone, Copy)]
struct Arrival<'a> {
    in_port: usize,
    frame: &'a [u8],
    ip: &'a Ipv4,
    key_hash: u64,
}

impl Worker {
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
        let n = self.stages(now_ms, in_port, frames, verdicts);
        self.stats.rx += n as u64;
        n
    }

    /// [`Worker::process_burst`] for frames another worker received and handed over (they
    /// count as handed in, not as received).
    pub fn process_handed<F: FrameBuf>(
        &mut self,
        now_ms: u64,
        in_port: usize,
        frames: &mut [F],
        verdicts: &mut [Verdict],
    ) -> usize {
        let n = self.stages(now_ms, in_port, frames, verdicts);
        self.stats.handoff_in += n as u64;
        n
    }

    fn stages<F: FrameBuf>(
        &mut self,
        now_ms: u64,
        in_port: usize,
        frames: &mut [F],
        verdicts: &mut [Verdict],
    ) -> usize {
        let n = frames.len().min(verdicts.len()).min(BURST);
        self.flush_rules.follow(&self.health);
        // Taken out for the burst (three pointers move; nothing is allocated or filled), so
        // the stages can call `&mut self` methods beside them. It is always there: put back
        // below, and bursts do not nest.
        let Scratch {
            mut stage,
            mut sums,
            mut ips,
            mut hashes,
        } = self.scratch.take().unwrap_or_else(Scratch::new);
        // 0. Every frame's headers start loading before the first is parsed (a NIC writes
        // frames to memory, not to this core's cache).
        for frame in frames[..n].iter_mut() {
            let bytes = frame.bytes();
            if let Some(first) = bytes.first() {
                crate::flow::prefetch(first);
            }
            if let Some(second) = bytes.get(64) {
                crate::flow::prefetch(second);
            }
        }
        // 1. Parse; a frame of another worker's flow goes to it as it came (its owner checks
        // the checksum, once). A burst's frames mostly go to one or two of our addresses:
        // the last one looked up is remembered.
        let mut last_local: Option<(Ipv4Addr, Option<LocalIp>)> = None;
        for i in 0..n {
            let frame = frames[i].bytes();
            let verdict = &mut verdicts[i];
            stage[i] = match wire::parse_into(frame, &mut ips[i]) {
                Err(reason) => done(verdict, Verdict::Drop(reason)),
                Ok(Parsed::Arp(arp)) => done(verdict, self.arp(in_port, frame, &arp)),
                Ok(Parsed::Ipv4) => match self.classify(in_port, frame, &ips[i], &mut last_local) {
                    Err(early) => done(verdict, early),
                    Ok(snip) => match self.owner(&ips[i], snip) {
                        Some(worker) => done(verdict, Verdict::handoff(worker)),
                        None => {
                            sums[i] = self.check_transport(in_port, frame, &ips[i]);
                            match sums[i] {
                                TransportChecksum::Bad => {
                                    done(verdict, Verdict::Drop(DropReason::BadChecksum))
                                }
                                _ => Stage::Lookup(snip),
                            }
                        }
                    },
                },
            };
        }
        // 2. Look up, all index buckets loading before the first is read.
        for i in 0..n {
            if let Stage::Lookup(_) = stage[i] {
                hashes[i] = flow_key(&ips[i]).hash();
                self.flows.prefetch_bucket(hashes[i]);
            }
        }
        for i in 0..n {
            if let Stage::Lookup(snip_bound) = stage[i] {
                let ip = &ips[i];
                let monitor_port = crate::nat::MONITOR_PORTS.contains(&ip.dst_port);
                let verdict = &mut verdicts[i];
                stage[i] = match self.flows.lookup_hashed(&flow_key(ip), hashes[i]) {
                    Some((slot, side)) if self.reopens(now_ms, ip, slot, side) => {
                        self.retire(slot);
                        Stage::New
                    }
                    Some((slot, side)) => {
                        // A FIN or RST ends its transaction before this burst's new flows are
                        // balanced (stage 3), so least-X methods see the count it leaves.
                        if ip.tcp.fin || ip.tcp.rst {
                            self.track(slot, side, ip.tcp);
                        }
                        self.flows.prefetch_flow(slot);
                        Stage::Forward(slot, side)
                    }
                    // Replies to the SNIP that match no flow are the monitor core's (SPEC §1);
                    // its stack checks checksums, so a partial one is completed first.
                    None if snip_bound && monitor_port && self.monitor => {
                        if sums[i] == TransportChecksum::Partial {
                            wire::complete_checksum(frames[i].bytes(), ip);
                        }
                        done(verdict, Verdict::ToMonitor)
                    }
                    None if snip_bound && monitor_port => {
                        done(verdict, Verdict::Drop(DropReason::NoMonitorCore))
                    }
                    // A USIP service's own traffic to other hosts is not ours to answer.
                    None if snip_bound && self.tables.local(ip.dst).is_none() => {
                        done(verdict, Verdict::Drop(DropReason::NotForUs))
                    }
                    None if snip_bound => {
                        self.reset_unknown(in_port, frames[i].bytes(), ip);
                        done(verdict, Verdict::Drop(DropReason::NoFlow))
                    }
                    None => Stage::New,
                };
            }
        }
        // 3. Select for the misses. An earlier frame of this burst may have created the flow
        // (looked up again only then). A chosen flow enters the table a few choices later:
        // its server-side index bucket, known only once the SNAT port is, loads meanwhile
        // instead of stalling the insert.
        let missed_at = self.flows.insertions();
        let mut in_flight = InFlight::default();
        for i in 0..n {
            if let Stage::New = stage[i] {
                let ip = &ips[i];
                let key = flow_key(ip);
                // A flow in flight may be this frame's (a SYN sent twice): all enter first.
                if in_flight.holds(hashes[i]) {
                    while let Some(placed) = in_flight.oldest() {
                        stage[placed.frame] = self.admitted(placed, verdicts);
                    }
                }
                let created = if self.flows.insertions() == missed_at {
                    None
                } else {
                    self.flows.lookup_hashed(&key, hashes[i])
                };
                stage[i] = match created {
                    Some((slot, side)) => Stage::Forward(slot, side),
                    None => match self.syn_proxy(now_ms, in_port, frames[i].bytes(), ip) {
                        Some(verdict) => done(&mut verdicts[i], verdict),
                        None => {
                            let waiting = in_flight.len();
                            let frame = frames[i].bytes();
                            let at = Arrival {
                                in_port,
                                frame,
                                ip,
                                key_hash: hashes[i],
                            };
                            match self.choose_flow(now_ms, at, None, waiting) {
                                Ok(chosen) => {
                                    let placed = self.placed(i, chosen);
                                    if let Some(earlier) = in_flight.push(placed) {
                                        stage[earlier.frame] = self.admitted(earlier, verdicts);
                                    }
                                    Stage::New
                                }
                                Err(reason) => {
                                    if reason == DropReason::NoFlow {
                                        self.reset_unknown(in_port, frame, ip);
                                    }
                                    done(&mut verdicts[i], Verdict::Drop(reason))
                                }
                            }
                        }
                    },
                };
            }
        }
        while let Some(placed) = in_flight.oldest() {
            stage[placed.frame] = self.admitted(placed, verdicts);
        }
        // 4. Rewrite.
        for i in 0..n {
            let verdict = match stage[i] {
                Stage::Forward(slot, side) => {
                    self.forward(now_ms, frames[i].bytes(), &ips[i], sums[i], slot, side)
                }
                Stage::Done => verdicts[i],
                Stage::Lookup(..) | Stage::New => Verdict::Drop(DropReason::Malformed),
            };
            match verdict {
                Verdict::Drop(r) => self.drops.count(r),
                Verdict::Tx { .. } => self.stats.tx += 1,
                Verdict::ToMonitor => self.address_to_monitor(frames[i].bytes()),
                Verdict::Consumed | Verdict::Handoff { .. } => {}
            }
            verdicts[i] = verdict;
        }
        self.writer.settle(now_ms / 1000);
        self.scratch = Some(Scratch {
            stage,
            sums,
            ips,
            hashes,
        });
        n
    }

    /// A flow placed for frame `frame`, its server-side index bucket starting to load.
    #[inline]
    fn placed(&self, frame: usize, chosen: Chosen) -> Placed {
        self.flows.prefetch_bucket(chosen.hashes.server);
        Placed { frame, chosen }
    }

    /// The stage of the frame whose placed flow enters the table now.
    #[inline]
    fn admitted(&mut self, placed: Placed, verdicts: &mut [Verdict]) -> Stage {
        match self.admit(placed.chosen) {
            Ok(()) => Stage::Forward(placed.chosen.slot, Side::Client),
            Err(reason) => done(&mut verdicts[placed.frame], Verdict::Drop(reason)),
        }
    }

    /// The worker that owns the frame's flow, when it is another one.
    #[inline]
    fn owner(&self, ip: &Ipv4, snip_bound: bool) -> Option<usize> {
        let owner = self.steering.as_ref()?.owner(ip, snip_bound);
        (owner != self.id).then_some(owner)
    }

    /// The transport checksum as received on `port` (not verified where the port's frames
    /// are trusted).
    #[inline]
    fn check_transport(&self, port: usize, frame: &[u8], ip: &Ipv4) -> TransportChecksum {
        if self.verify_checksums.get(port).copied().unwrap_or(true) {
            wire::transport_checksum(frame, ip)
        } else {
            TransportChecksum::Valid
        }
    }

    /// Stage 1 for IPv4: answer ICMP echo, drop what is not ours; the rest needs a lookup
    /// (`Ok(true)` when addressed to a SNIP).
    #[inline(always)]
    fn classify(
        &mut self,
        in_port: usize,
        frame: &mut [u8],
        ip: &Ipv4,
        last: &mut Option<(Ipv4Addr, Option<LocalIp>)>,
    ) -> Result<bool, Verdict> {
        let local = match *last {
            Some((addr, local)) if addr == ip.dst => local,
            _ => {
                let local = self.tables.local(ip.dst).copied();
                *last = Some((ip.dst, local));
                local
            }
        };
        let Some(local) = local else {
            // A USIP service's reply, to the client's own address.
            if ip.proto != Proto::Icmp && self.tables.is_usip_source(ip.src) {
                return Ok(true);
            }
            return Err(Verdict::Drop(DropReason::NotForUs));
        };
        let snip = local.kind == LocalKind::Snip;
        if ip.proto == Proto::Icmp {
            if !ip.echo_request && self.monitor && snip {
                return Err(Verdict::ToMonitor); // echo replies to PING monitors
            }
            return Err(match (ip.echo_request, self.macs.get(in_port)) {
                (true, Some(&mac)) => {
                    let peer = wire::src_mac(frame);
                    wire::echo_reply_in_place(frame, mac, peer);
                    Verdict::tx(in_port)
                }
                _ => Verdict::Drop(DropReason::Ignored),
            });
        }
        if ip.ttl <= 1 {
            return Err(Verdict::Drop(DropReason::TtlExpired));
        }
        Ok(snip)
    }

    /// The vserver of `primary`'s backup chain that takes a new connection from `client`
    /// (see [`spill::serving`]); with `-soPersistence`, a client that spilled over goes back
    /// to the vserver that took it while its session lasts and that vserver is usable.
    fn fallen_back(
        &self,
        primary: usize,
        client: Ipv4Addr,
        now_s: u64,
        view: &LiveView<'_>,
    ) -> Result<usize, DropReason> {
        let tables = &*self.tables;
        let v = &tables.vservers[primary];
        let sticky = v.fallback.so_persistence_s.zip(v.fallback_state.as_deref());
        if let Some((_, state)) = sticky
            && let Some(to) = state.spilled.lookup(client, now_s)
            && let Some(to) = tables.vserver_index(to)
            && spill::usable(tables, to, view)
        {
            return Ok(to);
        }
        let vs = spill::serving(tables, primary, view).map_err(|r| match r {
            spill::Refusal::NoService => DropReason::NoService,
            spill::Refusal::SpilledOver => DropReason::SpilledOver,
        })?;
        // Spilled over (the primary could have served): the client sticks to where it went.
        if let Some((timeout_s, state)) = sticky
            && vs != primary
            && spill::usable(tables, primary, view)
        {
            state
                .spilled
                .record(client, tables.vservers[vs].id, now_s, timeout_s);
        }
        Ok(vs)
    }

    /// A flow for a client's SYN, or (`proxied`) for its ACK that proved a SYN cookie.
    pub(super) fn new_flow(
        &mut self,
        now_ms: u64,
        in_port: usize,
        frame: &[u8],
        ip: &Ipv4,
        proxied: Option<Numbering>,
    ) -> Result<u32, DropReason> {
        let at = Arrival {
            in_port,
            frame,
            ip,
            key_hash: flow_key(ip).hash(),
        };
        let chosen = self.choose_flow(now_ms, at, proxied, 0)?;
        self.admit(chosen).map(|()| chosen.slot)
    }

    /// The flow a new connection gets (service, SNAT port, next hop), counted as opened so
    /// the next decision sees it, placed in a slot but not yet visible to lookups:
    /// [`Worker::admit`] enters it. `in_flight` flows placed but not admitted yet hold a place
    /// in the table's budgets.
    fn choose_flow(
        &mut self,
        now_ms: u64,
        at: Arrival<'_>,
        proxied: Option<Numbering>,
        in_flight: usize,
    ) -> Result<Chosen, DropReason> {
        let Arrival {
            in_port,
            frame,
            ip,
            key_hash,
        } = at;
        let vs = self
            .tables
            .vserver_for(ip.dst, ip.proto, ip.dst_port)
            .ok_or(DropReason::NoVserver)? as usize;
        let fallback = self.tables.vservers[vs].fallback;
        // Without a backup a disabled vserver refuses; with one, its backup may serve.
        if fallback.is_none() && !self.tables.vservers[vs].enabled {
            return Err(DropReason::VserverDisabled);
        }
        let opens_connection = ip.tcp.syn && !ip.tcp.ack;
        if ip.proto == Proto::Tcp && !opens_connection && proxied.is_none() {
            return Err(DropReason::NoFlow);
        }
        self.make_room(ip.proto == Proto::Tcp, in_flight)?;
        let mut view = LiveView {
            tables: &self.tables,
            health: &self.health,
            counters: &self.counters,
            columns: None,
        };
        self.columns.refresh(now_ms, &view);
        view.columns = Some(&self.columns);
        let vs = if fallback.is_none() {
            vs
        } else {
            self.fallen_back(vs, ip.src, now_ms / 1000, &view)?
        };
        let vserver = &self.tables.vservers[vs];
        let vserver_id = vserver.id;
        // Built (addresses widened to 128 bits) only for the methods that read it.
        let hash_key = if vserver.pool.reads_flow_key() {
            lb::FlowKey::new(ip.src.into(), ip.src_port, ip.dst.into(), ip.dst_port)
        } else {
            lb::FlowKey::default()
        };
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
        // At -sessionsThreshold a client without a session gets none.
        let may_record = persisted.is_some()
            || !self
                .tables
                .sessions_full
                .load(std::sync::atomic::Ordering::Relaxed);
        if let (Some(table), Some(timeout), true) =
            (&vserver.persist, vserver.persist_timeout_s, may_record)
        {
            table.record(ip.src, service, now_s, timeout);
        }
        let svc = self.tables.service(service).ok_or(DropReason::NoService)?;
        let (snip, hop) = svc.path.ok_or(DropReason::NoRoute)?;
        let Some(resolved_hop) = hop_toward(&mut self.hops, &self.neigh, service, hop) else {
            self.ask_for(hop, snip);
            return Err(DropReason::NoNeighbour);
        };
        let client_port = u16::try_from(in_port).map_err(|_| DropReason::NoRoute)?;
        let service_addr = (svc.addr, svc.port.unwrap_or(ip.dst_port));
        // The SNIPs of the subnet take turns; one out of ports lets the next serve.
        let sources: &[Ipv4Addr] = if svc.sources.is_empty() {
            std::slice::from_ref(&snip)
        } else {
            &svc.sources
        };
        self.next_source = self.next_source.wrapping_add(1);
        // A proxied connection has no timestamps: the engine's SYN+ACK offered none.
        let tsval = wire::tcp_tsval(frame, ip).filter(|_| proxied.is_none());
        // A SYN without timestamps is accepted over the service's TIME_WAIT only by luck (its
        // sequence number above the old connection's): give it a tuple the service cannot
        // hold, where there is one among the oldest.
        let avoid_time_wait = ip.proto == Proto::Tcp && tsval.is_none();
        // USIP: the client's own address toward the service, and its own port too with
        // `-useproxyport NO` where the reply to it comes to this worker (otherwise a port of
        // ours, from a SNIP's pool as ever: its replies must reach this worker).
        let reply_to = |source: Ipv4Addr| if svc.usip { ip.src } else { source };
        let keeps_client_port = svc.usip
            && !svc.proxy_port
            && self
                .steering
                .as_ref()
                .is_none_or(|s| s.reply_is_mine(service_addr, ip.src, ip.src_port));
        let (pool, nat_port) = if keeps_client_port {
            (Ipv4Addr::UNSPECIFIED, ip.src_port)
        } else {
            allocate_source(
                &mut self.snat,
                self.steering.as_ref(),
                &mut self.stats,
                Want {
                    sources,
                    first: self.next_source,
                    service,
                    service_addr,
                    now_ms,
                    avoid_time_wait,
                },
                reply_to,
            )?
        };
        let snip = if svc.usip { ip.src } else { pool };
        let wall_ms = self.wall_ms(now_ms);
        // Without timestamps, a SYN on a tuple the service holds in TIME_WAIT is accepted only
        // if its sequence number is above the old connection's: the engine numbers it from
        // the tuple's own clock, which only grows. (With USIP the tuple is the client's own,
        // numbered by the client as on a direct connection.)
        let numbering = match proxied {
            Some(p) => p,
            None if avoid_time_wait && !svc.usip => match wire::tcp_seq(frame, ip) {
                Some(seq) => Numbering::Renumbered {
                    toward_service: crate::syncookie::service_isn(
                        ((snip, nat_port), service_addr),
                        wall_ms,
                    )
                    .wrapping_sub(seq),
                },
                None => Numbering::AsSent,
            },
            None => Numbering::AsSent,
        };
        let flow = Flow {
            proto: ip.proto,
            client: (ip.src, ip.src_port),
            vip: (ip.dst, ip.dst_port),
            snip: (snip, nat_port),
            pool,
            service_addr,
            service,
            vserver: vserver_id,
            hop,
            resolved_hop,
            client_port,
            client_mac: wire::src_mac(frame),
            tcp: TcpProgress::default(),
            active: true,
            timeouts: svc.timeouts,
            last_seen: now_ms,
            ts_shift: tsval.map_or(0, |tsval| ts_base(wall_ms).wrapping_sub(tsval)),
            nat_delta: wire::NatDelta::new(
                [(ip.src, ip.src_port), (ip.dst, ip.dst_port)],
                [(snip, nat_port), service_addr],
            ),
            numbering,
        };
        let hashes = KeyHashes {
            client: key_hash,
            server: flow.server_key().hash(),
        };
        debug_assert_eq!(hashes, flow.key_hashes());
        let slot = self.flows.place(flow).map_err(|_| {
            self.snat.release(pool, nat_port, now_ms);
            DropReason::FlowTableFull
        })?;
        self.writer.flow_opened(service);
        self.columns.opened(service);
        self.writer.vserver_hit(vserver_id);
        self.stats.flows_created += 1;
        Ok(Chosen { slot, hashes })
    }

    /// Makes a chosen flow visible to lookups; one that cannot enter is taken back from the
    /// counters and gives its SNAT port back.
    fn admit(&mut self, chosen: Chosen) -> Result<(), DropReason> {
        let Some(f) = self.flows.get(chosen.slot) else {
            return Err(DropReason::Malformed);
        };
        // A flow not entered yet was chosen at its last_seen.
        let (service, vserver, pool, nat_port, chosen_at) =
            (f.service, f.vserver, f.pool, f.snip.1, f.last_seen);
        self.flows.enter(chosen.slot, chosen.hashes).map_err(|e| {
            self.writer.flow_refused(service, vserver);
            self.columns.closed(service);
            self.stats.flows_created -= 1;
            self.snat.release(pool, nat_port, chosen_at);
            match e {
                InsertError::Full => DropReason::FlowTableFull,
                InsertError::Duplicate => DropReason::Malformed,
            }
        })
    }

    /// Room for a new flow, before anything is chosen for it: past the embryonic budget the
    /// oldest embryonic flow gives way to a new SYN; in a full table a closed or unanswered
    /// flow does (oldest first), and with none the new flow is refused. Established flows are
    /// never evicted.
    fn make_room(&mut self, embryonic: bool, in_flight: usize) -> Result<(), DropReason> {
        if embryonic
            && self.flows.embryonic() + in_flight >= self.embryonic_limit
            && let Some(slot) = self.flows.give_way(GiveWay::Embryonic)
        {
            self.retire(slot);
            self.stats.flows_given_way += 1;
        }
        if self.flows.len() + in_flight < self.flows.capacity() {
            return Ok(());
        }
        let slot = self
            .flows
            .give_way(GiveWay::Any)
            .ok_or(DropReason::FlowTableFull)?;
        self.retire(slot);
        self.stats.flows_given_way += 1;
        Ok(())
    }

    fn forward(
        &mut self,
        now_ms: u64,
        frame: &mut [u8],
        ip: &Ipv4,
        sum: TransportChecksum,
        slot: u32,
        side: Side,
    ) -> Verdict {
        let Some(flow) = self.flows.get(slot) else {
            return Verdict::Drop(DropReason::NoFlow);
        };
        if self.flush_due(now_ms, flow.service) {
            return self.flush(frame, ip, slot, side);
        }
        if matches!(flow.numbering, Numbering::AwaitingService { .. })
            && let Some(verdict) = self.proxy_step(frame, ip, slot, side)
        {
            return verdict;
        }
        let Some(flow) = self.flows.progress(slot, side, ip.tcp) else {
            return Verdict::Drop(DropReason::NoFlow);
        };
        flow.last_seen = now_ms;
        close_if_over(&self.writer, &mut self.columns, flow);
        if let Some(ms) = flow.tcp.response(side, ip.tcp, now_ms) {
            self.writer.response(flow.service, ms);
        }
        let (port, dst_mac) = match side {
            Side::Client => {
                if flow.resolved_hop.generation != self.neigh.generation() {
                    match resolve(&self.neigh, flow.hop) {
                        Some(hop) => flow.resolved_hop = hop,
                        None => {
                            let (hop, snip) = (flow.hop, flow.snip.0);
                            self.ask_for(hop, snip);
                            return Verdict::Drop(DropReason::NoNeighbour);
                        }
                    }
                }
                let numbers = flow.shift(side);
                let (snip, service) = (flow.snip, flow.service_addr);
                wire::rewrite_flow(frame, ip, snip, service, flow.nat_delta, numbers, sum);
                if numbers.ack != 0 {
                    wire::shift_sack(frame, ip, numbers.ack);
                }
                (flow.resolved_hop.port, flow.resolved_hop.mac)
            }
            Side::Server => {
                let numbers = flow.shift(side);
                let delta = flow.nat_delta.reversed();
                wire::rewrite_flow(frame, ip, flow.vip, flow.client, delta, numbers, sum);
                if numbers.ack != 0 {
                    wire::shift_sack(frame, ip, numbers.ack);
                }
                (flow.client_port, flow.client_mac)
            }
        };
        let service = flow.service;
        let port = usize::from(port);
        let Some(&our_mac) = self.macs.get(port) else {
            return Verdict::Drop(DropReason::NoRoute);
        };
        wire::set_macs(frame, our_mac, dst_mac);
        self.writer.tally(service, ip.len as u64);
        Verdict::tx(port)
    }

    /// Follows the TCP progress of the flow in `slot`.
    pub(super) fn track(&mut self, slot: u32, side: Side, flags: wire::TcpFlags) {
        if let Some(flow) = self.flows.progress(slot, side, flags) {
            close_if_over(&self.writer, &mut self.columns, flow);
        }
    }

    /// A client's SYN on the 4-tuple of a flow that is over (closed, or flushed): a new
    /// connection reusing the port, balanced afresh rather than reset or sent to the old
    /// service.
    #[inline]
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
    pub(super) fn retire(&mut self, slot: u32) {
        if let Some(flow) = self.flows.remove(slot) {
            if flow.active {
                self.writer.flow_closed(flow.service);
                self.columns.closed(flow.service);
            }
            self.writer.flow_removed(flow.service);
            self.snat
                .release_after(flow.pool, flow.snip.1, flow.service, flow.last_seen);
        }
    }
}

/// The neighbour toward `hop` as the flow keeps it, when known.
#[inline]
fn resolve(neigh: &crate::neigh::NeighbourView, hop: Ipv4Addr) -> Option<ResolvedHop> {
    let n = neigh.get(hop)?;
    Some(ResolvedHop {
        generation: neigh.generation(),
        port: u16::try_from(n.port).ok()?,
        mac: n.mac,
    })
}

/// The neighbour toward `hop` for a new flow to `service`: the one resolved for its last
/// new flow while the neighbour table has not changed since (a hash lookup otherwise).
#[inline]
fn hop_toward(
    hops: &mut [(Ipv4Addr, ResolvedHop)],
    neigh: &crate::neigh::NeighbourView,
    service: crate::lb::ServiceId,
    hop: Ipv4Addr,
) -> Option<ResolvedHop> {
    let known = hops.get_mut(service as usize);
    if let Some((was, resolved)) = &known
        && *was == hop
        && resolved.generation == neigh.generation()
    {
        return Some(*resolved);
    }
    let resolved = resolve(neigh, hop)?;
    if let Some(entry) = known {
        *entry = (hop, resolved);
    }
    Some(resolved)
}

/// What a new flow needs of a SNAT port.
struct Want<'a> {
    /// The SNIPs of the service's subnet; they take turns from `first` (one out of ports
    /// lets the next serve).
    sources: &'a [Ipv4Addr],
    first: usize,
    service: u32,
    service_addr: (Ipv4Addr, u16),
    now_ms: u64,
    avoid_time_wait: bool,
}

/// A SNAT port for a new flow, and the SNIP pool it came from. `reply_to` is where the
/// service's replies go for a SNIP (the SNIP, or with USIP the client), for RSS-aware choice.
#[inline(always)]
fn allocate_source(
    snat: &mut crate::nat::Snat,
    steering: Option<&super::steer::Steering>,
    stats: &mut super::WorkerStats,
    want: Want<'_>,
    reply_to: impl Fn(Ipv4Addr) -> Ipv4Addr,
) -> Result<(Ipv4Addr, u16), DropReason> {
    let sources = want.sources;
    // Most subnets have one SNIP: no division to find where the turn starts.
    let mut at = match sources.len() {
        0 => return Err(DropReason::NatPortsExhausted),
        1 => 0,
        n => want.first % n,
    };
    for _ in 0..sources.len() {
        let source = sources[at];
        at = if at + 1 == sources.len() { 0 } else { at + 1 };
        let port = match steering {
            // A port whose replies the NIC brings to this worker: one in `workers`.
            Some(s) if s.rss.is_some() => {
                let budget = 64 * s.workers;
                let dst = reply_to(source);
                snat.allocate_where(source, budget, |p| {
                    s.reply_comes_here(want.service_addr, dst, p)
                })
            }
            _ if want.avoid_time_wait => snat
                .allocate_for(source, want.service, want.now_ms, TIME_WAIT_LOOKS)
                .map(|a| {
                    stats.snat_skipped += u64::from(a.skipped);
                    stats.snat_time_wait += u64::from(a.in_time_wait);
                    a.port
                }),
            _ => snat.allocate(source),
        };
        if let Some(port) = port {
            return Ok((source, port));
        }
    }
    Err(DropReason::NatPortsExhausted)
}

/// Free ports looked at for a SYN without timestamps before one its service may hold in
/// TIME_WAIT is reused anyway.
const TIME_WAIT_LOOKS: usize = 8;

/// The timestamp a new flow's first segment carries toward its service: the wall clock as the
/// daemon started plus the daemon's time since (`wall_ms`), at 4 ticks a millisecond. Clients
/// tick at most 1 kHz (RFC 7323 recommends 1 ms to 1 s), so every later flow on a SNAT tuple
/// starts above where the previous one ended, also after a restart, and a service holding the
/// tuple in TIME_WAIT accepts its SYN. 32 bits wrap every 12.4 days; PAWS compares halves of
/// that (RFC 7323 §5.2), far beyond any TIME_WAIT.
#[inline]
fn ts_base(wall_ms: u64) -> u32 {
    (wall_ms.wrapping_mul(4) as u32).wrapping_add(1)
}

/// After a flow's TCP progress: a closed connection is no longer an active transaction,
/// though its entry lingers for the last ACK and retransmissions.
#[inline]
fn close_if_over(
    writer: &crate::counters::CoreWriter,
    columns: &mut super::columns::SelectionColumns,
    flow: &mut Flow,
) {
    if flow.active && flow.tcp.is_closed() {
        flow.active = false;
        writer.flow_closed(flow.service);
        columns.closed(flow.service);
    }
}
