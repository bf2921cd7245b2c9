//! downStateFlush, and the frames the engine sends a flow's peers on its own: an RST in each
//! peer's sequence space, or a probe whose answer reveals that space.

use std::net::Ipv4Addr;

use crate::flow::{Flow, Side};
use crate::health::ServiceHealth;
use crate::lb::ServiceId;
use crate::tables::Tables;
use crate::verdict::{DropReason, Verdict};
use crate::wire::{self, Ipv4, Mac, Proto};

use super::{OUTBOX, OwnFrame, Worker};

/// One side of a flow as the engine sees it: where the peer is and which addresses each end
/// uses on that side.
#[derive(Clone, Copy, Debug)]
pub(super) struct Leg {
    pub(super) port: usize,
    pub(super) mac: Mac,
    pub(super) ours: (Ipv4Addr, u16),
    pub(super) theirs: (Ipv4Addr, u16),
}

/// downStateFlush by service id, taken from the tables when they are applied: a forwarded
/// frame reads one word beside the worker instead of its service's entry in the tables, and
/// none at all while no service can be due (no drain with an end, none DOWN).
#[derive(Debug, Default)]
pub(super) struct FlushRules {
    from: Box<[u64]>,
    /// Some service may be due: one's drain has an end, or one with the rule is DOWN as of
    /// the health's `seen_changes`th state change.
    possible: bool,
    seen_changes: Option<u64>,
}

/// downStateFlush is disabled: the service's flows are never flushed.
const NEVER: u64 = u64::MAX;
/// Enabled, no drain ending: flushed once the monitors decide DOWN.
const WHEN_DOWN: u64 = u64::MAX - 1;

impl FlushRules {
    pub(super) fn new(tables: &Tables) -> Self {
        let rule = |id: usize| match tables.service(id as ServiceId) {
            Some(s) if s.down_state_flush => s.flush_from_ms.unwrap_or(WHEN_DOWN),
            _ => NEVER,
        };
        Self {
            from: (0..tables.services.len()).map(rule).collect(),
            possible: true,
            seen_changes: None,
        }
    }

    /// Catches up with the monitors' decisions (one shared load while they stand still):
    /// the health's change count is read before its DOWN flags, so a decision whose count
    /// this sees is seen too; one made meanwhile is seen at the next call.
    #[inline]
    pub(super) fn follow(&mut self, health: &ServiceHealth) {
        let changes = health.state_changes();
        if self.seen_changes == Some(changes) {
            return;
        }
        self.seen_changes = Some(changes);
        self.possible = self.from.iter().enumerate().any(|(s, &from)| {
            from != NEVER && (from != WHEN_DOWN || health.is_down(s as ServiceId))
        });
    }

    /// downStateFlush: the service's monitors decided DOWN, or it was disabled and its drain
    /// (if any) is over.
    #[inline]
    pub(super) fn due(&self, health: &ServiceHealth, now_ms: u64, service: ServiceId) -> bool {
        self.possible
            && self
                .from
                .get(service as usize)
                .is_some_and(|&from| from != NEVER && (now_ms >= from || health.is_down(service)))
    }
}

impl Worker {
    /// See [`FlushRules::due`].
    #[inline]
    pub(super) fn flush_due(&self, now_ms: u64, service: ServiceId) -> bool {
        self.flush_rules.due(&self.health, now_ms, service)
    }

    /// Ends a flushed flow on its next frame: the frame is dropped and, for TCP, both peers
    /// get an RST in their own sequence space (the sender's from the numbers it just used,
    /// the other's from what the sender has sent), so neither waits on a dead connection.
    pub(super) fn flush(&mut self, frame: &[u8], ip: &Ipv4, slot: u32, side: Side) -> Verdict {
        let Some(flow) = self.flows.get(slot).copied() else {
            return Verdict::Drop(DropReason::NoFlow);
        };
        self.retire(slot);
        self.stats.flows_flushed += 1;
        if let Some(n) = wire::tcp_numbers(frame, ip)
            && !ip.tcp.rst
        {
            let (client, server) = self.legs(&flow);
            // The sender's numbers as its peer counts them (a renumbered or proxied flow's
            // two sides number the same bytes differently).
            let to_peer = flow.shift(side).seq;
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
                self.queue_rst(leg, n.seq.wrapping_add(to_peer), None);
            }
        }
        Verdict::Drop(DropReason::Flushed)
    }

    /// A flow's two sides: toward the client, and toward the service (when its next hop's
    /// MAC is known).
    pub(super) fn legs(&self, f: &Flow) -> (Leg, Option<Leg>) {
        let client = Leg {
            port: usize::from(f.client_port),
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
    pub(super) fn reset_unknown(&mut self, in_port: usize, frame: &[u8], ip: &Ipv4) {
        let Some(n) = wire::tcp_numbers(frame, ip) else {
            return;
        };
        if ip.tcp.rst {
            return;
        }
        let leg = Leg {
            port: in_port,
            mac: wire::src_mac(frame),
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
    pub(super) fn probe_flushed(&mut self) {
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
    pub(super) fn queue_frame(
        &mut self,
        leg: Leg,
        build: impl FnOnce(&mut [u8], (Mac, Mac), &Leg) -> usize,
    ) {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = "add ns ip 198.18.0.2 255.255.255.0 -type SNIP
add service s1 198.18.0.11 TCP 80
add service s2 198.18.0.12 TCP 80 -downStateFlush DISABLED
add lb vserver web TCP 198.18.0.100 80
bind lb vserver web s1
bind lb vserver web s2
";

    #[test]
    fn a_down_decision_is_due_from_the_next_follow_and_only_with_the_rule() {
        let tables = crate::tables::of_text(CONFIG);
        let health = ServiceHealth::new(tables.services.len());
        let mut rules = FlushRules::new(&tables);
        rules.follow(&health);
        assert!(!rules.due(&health, 0, 0), "UP: nothing due");
        assert!(
            !rules.possible,
            "no service can be due: the per-frame check is skipped"
        );
        health.set_down(0, true);
        health.set_down(1, true);
        rules.follow(&health);
        assert!(rules.due(&health, 0, 0), "DOWN with downStateFlush");
        assert!(!rules.due(&health, 0, 1), "DOWN without it");
        health.set_down(0, false);
        rules.follow(&health);
        assert!(!rules.due(&health, 0, 0));
        assert!(!rules.possible, "s2's DOWN never flushes");
    }

    #[test]
    fn new_rules_check_every_frame_until_they_follow_the_health() {
        let tables = crate::tables::of_text(CONFIG);
        let health = ServiceHealth::new(tables.services.len());
        health.set_down(0, true);
        // Built after the decision (new tables while a service is DOWN): due at once.
        let rules = FlushRules::new(&tables);
        assert!(rules.due(&health, 0, 0));
    }
}
