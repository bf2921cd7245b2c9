//! Periodic work between bursts: the flow sweep (idle flows, downStateFlush), counter
//! windows, drop counters published for `stat`, next hops asked for once a second, and the
//! outbox of frames the worker built.

use std::sync::Arc;

use crate::verdict::{SharedDrops, WorkerFigures};

use super::Worker;
use super::sweep_pace::SWEEP_MOST_FLOWS_PER_CALL;

const ARP_INTERVAL_MS: u64 = 1000;
const EMBRYONIC_UNDER_PRESSURE_MS: u64 = 1000;

impl Worker {
    /// Publishes this worker's drop counters there at every housekeeping call.
    pub fn share_drops(&mut self, shared: Arc<SharedDrops>) {
        self.shared_drops = Some(shared);
    }

    pub fn housekeeping(&mut self, now_ms: u64) {
        self.writer.tick(now_ms / 1000);
        self.neigh.refresh();
        if let Some(shared) = &self.shared_drops {
            shared.publish(self.id, &self.drops);
            let s = &self.stats;
            shared.publish_figures(
                self.id,
                WorkerFigures {
                    core: self.id,
                    rx: s.rx,
                    tx: s.tx,
                    handoff_in: s.handoff_in,
                    handoff_out: s.handoff_out,
                    drops: 0,
                    snat_skipped: s.snat_skipped,
                    snat_time_wait: s.snat_time_wait,
                    flows: self.flows.len() as u64,
                    flow_capacity: self.flows.capacity() as u64,
                    embryonic: self.flows.embryonic() as u64,
                    flows_given_way: s.flows_given_way,
                    syn_cookies_sent: s.syn_cookies_sent,
                    syn_cookies_valid: s.syn_cookies_valid,
                    syn_cookies_failed: s.syn_cookies_failed,
                },
            );
        }
        // An empty table needs no sweep (an idle worker's rounds stay cheap).
        self.sweep_behind = false;
        if !self.flows.is_empty() {
            self.sweep(now_ms);
        }
        self.ask_for_next_hops(now_ms);
    }

    /// The last housekeeping's sweep had more flows to examine than one call takes: a
    /// sleeping run loop comes back soon instead of after its longest wait, or a full table
    /// idle in `poll = "wait"` would be gone over in tens of seconds, not one.
    pub fn sweep_behind(&self) -> bool {
        self.sweep_behind
    }

    /// One sweep ends idle flows and flushes those of DOWN or disabled services, idle ones
    /// included (their next frame would too, but an idle peer might wait a long time).
    fn sweep(&mut self, now_ms: u64) {
        let owed = self.sweep_pace.owed(now_ms, self.flows.capacity());
        if owed == 0 {
            return;
        }
        self.flush_rules.follow(&self.health);
        // Under a SYN flood's pressure half-open flows get one second, not the embryonic
        // timeout, so its flows leave as fast as they come.
        let cap = self.under_pressure().then_some(EMBRYONIC_UNDER_PRESSURE_MS);
        let (writer, snat, stats) = (&self.writer, &mut self.snat, &mut self.stats);
        let columns = &mut self.columns;
        let (rules, health, flushed) = (&self.flush_rules, &self.health, &mut self.flushed);
        flushed.clear();
        let swept = self.flows.sweep(
            owed,
            SWEEP_MOST_FLOWS_PER_CALL,
            |f| f.deadline_under(cap) <= now_ms || rules.due(health, now_ms, f.service),
            |f| {
                if f.active {
                    writer.flow_closed(f.service);
                    columns.closed(f.service);
                }
                writer.flow_removed(f.service);
                snat.release_after(f.pool, f.snip.1, f.service, f.last_seen);
                if f.deadline_under(cap) <= now_ms {
                    stats.flows_expired += 1;
                } else {
                    stats.flows_flushed += 1;
                    flushed.push(f);
                }
            },
        );
        self.sweep_pace.paid(swept);
        self.sweep_behind = swept < owed;
        self.probe_flushed();
    }

    /// Once a second: ARP requests for the next hops of services not resolved yet.
    fn ask_for_next_hops(&mut self, now_ms: u64) {
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

    /// Hands out the frames the worker built (ARP requests, RSTs, probes).
    pub fn drain_outbox(&mut self, mut send: impl FnMut(usize, &[u8])) {
        for f in self.outbox.drain(..) {
            send(f.port, &f.data[..f.len]);
        }
    }
}
