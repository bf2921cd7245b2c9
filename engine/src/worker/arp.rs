//! ARP: answering for our addresses, learning neighbours, asking for next hops.

use std::net::Ipv4Addr;

use crate::verdict::{DropReason, Verdict};
use crate::wire::{self, Arp};

use super::{OUTBOX, OwnFrame, Worker};

impl Worker {
    pub(super) fn arp(&mut self, in_port: usize, frame: &mut [u8], arp: &Arp) -> Verdict {
        // Anyone on a SNIP subnet who speaks ARP is a neighbour worth remembering.
        if self.tables.snip_toward(arp.sender_ip).is_some() {
            self.neigh.learn(arp.sender_ip, arp.sender_mac, in_port);
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
                Verdict::tx(in_port)
            }
            _ => Verdict::Drop(DropReason::Ignored),
        }
    }

    /// Queues an ARP request for `target` on every port (see [`crate::tables`]), once per
    /// port until the outbox is drained.
    pub(super) fn ask_for(&mut self, target: Ipv4Addr, from: Ipv4Addr) {
        for (port, &mac) in self.macs.iter().enumerate() {
            if self.outbox.len() >= OUTBOX
                || self
                    .outbox
                    .iter()
                    .any(|f| f.port == port && wire::arp_target(&f.data) == Some(target))
            {
                continue;
            }
            let mut data = [0u8; 60];
            let len = wire::arp_request(&mut data, mac, from, target);
            self.outbox.push(OwnFrame { port, len, data });
        }
    }
}
