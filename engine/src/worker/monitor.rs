//! Frames between the workers and the monitor core, which has one MAC (port 0's) but sends
//! and receives on every port.

use crate::wire::{self, Packet};

use super::Worker;

impl Worker {
    /// Hands the monitor core its frames (SNIP traffic on the monitor ports, ICMP to the
    /// SNIP, ARP replies) as [`crate::verdict::Verdict::ToMonitor`].
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
        if let Some(&mac) = chosen.and_then(|p| self.macs.get(p)) {
            wire::readdress(frame, mac, true);
        }
        chosen
    }

    /// Frames that reached another port than 0 are readdressed to port 0's MAC (the monitor
    /// core's), so its stack accepts them.
    pub(super) fn address_to_monitor(&self, frame: &mut [u8]) {
        if let Some(&mac) = self.macs.first() {
            wire::readdress(frame, mac, false);
        }
    }
}
