//! The worker's loop, the same over AF_XDP and in memory: per round, pick up a new
//! configuration generation, housekeeping, then per port reclaim, receive, process in bursts,
//! transmit, refill; then the monitor core's frames and the worker's own.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use arc_swap::ArcSwap;
use crossbeam_channel::{Receiver, Sender};

use crate::profile::Poll;
use crate::tables::Tables;
use crate::verdict::{DropReason, Verdict};

use super::handoff::{Handed, Lanes};
use super::waker::{Waker, poll_readable};
use super::{BURST, DeviceDrops, FrameBuf, Port, PortError, Worker};

/// Frames taken from or given to a ring per call.
const BATCH: usize = 64;
/// Calls in a row a port may refuse as busy before it counts as broken.
const BUSY_LIMIT: u32 = 100_000;
/// Rounds without a frame before the loop starts sleeping between rounds.
const IDLE_SPIN_ROUNDS: u32 = 64;
/// `poll = "wait"`: idle rounds before sleeping in `poll(2)` on the ports' sockets and the
/// worker's waker, for at most this long (housekeeping and a new generation wait no longer).
const WAIT_SPIN_ROUNDS: u32 = 8;
const WAIT_LONGEST_MS: i32 = 50;
/// The longest wait while the flow sweep is behind (a table with more flows than one
/// housekeeping call examines): 2,048 flows a millisecond go over a million in half a second.
const WAIT_BEHIND_MS: i32 = 1;
/// Ports without a descriptor (in memory): sleeps that double from the first to the longest.
const WAIT_FIRST_SLEEP_US: u64 = 250;
const WAIT_LONGEST_SLEEP_US: u64 = 8_000;

/// A worker's ends of the monitor core's rings; `from` only on the worker that transmits
/// for the monitor core.
#[derive(Debug, Clone, Default)]
pub struct MonitorRings {
    pub to: Option<Sender<Vec<u8>>>,
    pub from: Option<Receiver<Vec<u8>>>,
}

impl MonitorRings {
    /// Copies a frame into the ring to the monitor core (its traffic is light: a copy is
    /// fine); `false` when the ring is full or no monitor core runs.
    fn hand_over(&self, frame: &[u8]) -> bool {
        self.to
            .as_ref()
            .is_some_and(|to| to.try_send(frame.to_vec()).is_ok())
    }
}

/// A worker and its ports (one queue of each), driven round by round.
#[derive(Debug)]
pub struct Runner<P: Port> {
    worker: Worker,
    ports: Vec<P>,
    monitor: MonitorRings,
    lanes: Lanes,
    poll: Poll,
    /// Per port: calls refused as busy in a row.
    busy_in_a_row: Vec<u32>,
    /// Why the loop must stop: a port that broke.
    fault: Option<String>,
    burst: Vec<P::Frame>,
    /// Frames other workers handed over, with the lane each came by.
    handed: Vec<(usize, Box<Handed>)>,
    /// `poll = "wait"`: what wakes this worker, and the descriptors it sleeps on (its
    /// ports' sockets, then the waker).
    waker: Option<Arc<Waker>>,
    sleep_on: Vec<libc::pollfd>,
    /// Per port: the device's drop totals last read, and the second they were read in.
    device_drops: Vec<DeviceDrops>,
    device_drops_read: u64,
    verdicts: [Verdict; BURST],
}

impl FrameBuf for (usize, Box<Handed>) {
    fn bytes(&mut self) -> &mut [u8] {
        self.1.bytes()
    }
}

impl<P: Port> Runner<P> {
    pub fn new(worker: Worker, ports: Vec<P>, monitor: MonitorRings) -> Self {
        let busy_in_a_row = vec![0; ports.len()];
        let ports_len = ports.len();
        Self {
            worker,
            ports,
            monitor,
            lanes: Lanes::default(),
            poll: Poll::Busy,
            busy_in_a_row,
            fault: None,
            burst: Vec::with_capacity(BURST),
            handed: Vec::with_capacity(BURST),
            waker: None,
            sleep_on: Vec::new(),
            device_drops: vec![DeviceDrops::default(); ports_len],
            device_drops_read: 0,
            verdicts: [Verdict::Consumed; BURST],
        }
    }

    /// How the loop waits when no frame comes (`[io] poll`).
    pub fn with_poll(mut self, poll: Poll) -> Self {
        self.poll = poll;
        self
    }

    /// Sleeps in `poll(2)` when idle (`poll = "wait"` and ports with descriptors), woken by
    /// `waker` for frames that come another way (lanes, the monitor core).
    pub fn with_waker(mut self, waker: Arc<Waker>) -> Self {
        let fds: Option<Vec<_>> = self.ports.iter().map(Port::wait_fd).collect();
        if let Some(fds) = fds {
            self.sleep_on = fds
                .into_iter()
                .chain([waker.fd()])
                .map(|fd| libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect();
            self.waker = Some(waker);
        }
        self
    }

    /// Frames of flows other workers own go to them over `lanes`, and theirs come back
    /// (the worker steers to owners).
    pub fn with_lanes(mut self, lanes: Lanes) -> Self {
        self.worker.steer_to_owners();
        self.lanes = lanes;
        self
    }

    pub fn worker(&self) -> &Worker {
        &self.worker
    }

    pub fn worker_mut(&mut self) -> &mut Worker {
        &mut self.worker
    }

    pub fn port_mut(&mut self, i: usize) -> Option<&mut P> {
        self.ports.get_mut(i)
    }

    pub fn into_parts(self) -> (Worker, Vec<P>) {
        (self.worker, self.ports)
    }

    /// Switches to the published generation if it is new (between two rounds).
    pub fn follow(&mut self, published: &ArcSwap<Tables>) {
        let current = published.load();
        if !Arc::ptr_eq(&current, self.worker.tables()) {
            self.worker.set_tables(Arc::clone(&current));
        }
    }

    /// One round at `now_ms`; returns how many frames arrived.
    pub fn poll(&mut self, now_ms: u64) -> usize {
        self.worker.housekeeping(now_ms);
        self.count_device_drops(now_ms);
        let mut received = 0;
        for i in 0..self.ports.len() {
            let r = self.ports[i].reclaim(BATCH * 2);
            self.check(i, r);
            let r = self.ports[i].receive(BATCH);
            received += self.check(i, r).unwrap_or(0);
            while self.next_burst(i) {
                self.worker
                    .process_burst(now_ms, i, &mut self.burst, &mut self.verdicts);
                self.dispatch(i);
            }
            let r = self.ports[i].flush(BATCH);
            self.check(i, r);
            let r = self.ports[i].refill(BATCH);
            self.check(i, r);
        }
        P::balance(&mut self.ports);
        self.serve_handed(now_ms);
        self.send_monitor_frames();
        self.send_own_frames();
        for i in 0..self.ports.len() {
            let r = self.ports[i].flush(BATCH);
            self.check(i, r);
        }
        received
    }

    /// Once a second: what the devices dropped since the last reading, counted with the
    /// engine's own drops (a system call per port, not per frame).
    fn count_device_drops(&mut self, now_ms: u64) {
        let second = now_ms / 1000;
        if second == self.device_drops_read {
            return;
        }
        self.device_drops_read = second;
        self.read_device_drops();
    }

    /// Adds what each device dropped since the last reading to the worker's drops.
    fn read_device_drops(&mut self) {
        for (port, last) in self.ports.iter().zip(self.device_drops.iter_mut()) {
            let Some(now) = port.device_drops() else {
                continue;
            };
            let drops = &mut self.worker.drops;
            drops.add(
                DropReason::KernelNoFrame,
                now.no_frame.saturating_sub(last.no_frame),
            );
            drops.add(
                DropReason::KernelRxRingFull,
                now.rx_ring_full.saturating_sub(last.rx_ring_full),
            );
            drops.add(
                DropReason::KernelInvalidDescriptor,
                now.invalid.saturating_sub(last.invalid),
            );
            *last = now;
        }
    }

    /// Why the loop stopped or must stop: a port that broke (`None` while all is well).
    pub fn fault(&self) -> Option<&str> {
        self.fault.as_deref()
    }

    /// Counts a busy port (broken once it stays busy) and keeps the first fault.
    fn check<T>(&mut self, port: usize, result: Result<T, PortError>) -> Option<T> {
        match result {
            Ok(v) => {
                if let Some(n) = self.busy_in_a_row.get_mut(port) {
                    *n = 0;
                }
                Some(v)
            }
            Err(PortError::Busy) => {
                self.worker.stats.port_busy += 1;
                let n = self.busy_in_a_row.get_mut(port)?;
                *n += 1;
                if *n >= BUSY_LIMIT && self.fault.is_none() {
                    self.fault = Some(format!("port {port} refused {BUSY_LIMIT} calls in a row"));
                }
                None
            }
            Err(PortError::Broken(why)) => {
                if self.fault.is_none() {
                    self.fault = Some(format!("port {port}: {why}"));
                }
                None
            }
        }
    }

    /// Rounds until `stop` or a port breaks (see [`Runner::fault`]), reading the clock once
    /// per round (`now_ms`). Idle, it backs off to short sleeps so a machine sharing its cores
    /// stays usable. Returns the worker, its ports and the fault, if one stopped it.
    pub fn run(
        mut self,
        stop: &AtomicBool,
        published: &ArcSwap<Tables>,
        now_ms: impl Fn() -> u64,
    ) -> (Worker, Vec<P>, Option<String>) {
        let mut idle_rounds = 0u32;
        while !stop.load(Ordering::Relaxed) && self.fault.is_none() {
            self.follow(published);
            if self.poll(now_ms()) > 0 {
                idle_rounds = 0;
                continue;
            }
            idle_rounds = idle_rounds.saturating_add(1);
            match self.poll {
                Poll::Busy if idle_rounds > IDLE_SPIN_ROUNDS => {
                    let pause = if idle_rounds > 10_000 { 500 } else { 50 };
                    std::thread::sleep(Duration::from_micros(pause));
                }
                Poll::Wait if idle_rounds > WAIT_SPIN_ROUNDS => self.sleep(idle_rounds),
                Poll::Busy | Poll::Wait => {}
            }
        }
        // The last second's device drops, so the summary has them all.
        self.read_device_drops();
        let fault = self.fault.take();
        let (worker, ports) = self.into_parts();
        (worker, ports, fault)
    }

    /// Sleeps until a frame arrives: on the sockets and the waker where there are, in short
    /// growing sleeps where there are not.
    fn sleep(&mut self, idle_rounds: u32) {
        let behind = self.worker.sweep_behind();
        let Some(waker) = &self.waker else {
            let doublings = (idle_rounds - WAIT_SPIN_ROUNDS).min(16);
            let longest = if behind {
                WAIT_BEHIND_MS as u64 * 1000
            } else {
                WAIT_LONGEST_SLEEP_US
            };
            let us = (WAIT_FIRST_SLEEP_US << doublings).min(longest);
            std::thread::sleep(Duration::from_micros(us));
            return;
        };
        waker.going_to_sleep();
        let queued =
            self.lanes.has_inbound() || self.monitor.from.as_ref().is_some_and(|f| !f.is_empty());
        if !queued {
            let longest = if behind {
                WAIT_BEHIND_MS
            } else {
                WAIT_LONGEST_MS
            };
            poll_readable(&mut self.sleep_on, longest);
        }
        waker.awake();
    }

    /// Fills the burst from port `i`'s received frames; `false` when there were none.
    fn next_burst(&mut self, i: usize) -> bool {
        while self.burst.len() < BURST {
            match self.ports[i].next_rx() {
                Some(frame) => self.burst.push(frame),
                None => break,
            }
        }
        !self.burst.is_empty()
    }

    /// Sends, hands over or recycles each frame of the burst received on port `i`.
    fn dispatch(&mut self, i: usize) {
        let verdicts = self.verdicts;
        let mut lost = 0u64;
        let mut to_monitor_lost = 0u64;
        for (mut frame, verdict) in self.burst.drain(..).zip(verdicts) {
            match verdict {
                Verdict::Handoff { worker } => {
                    match self.lanes.send(worker as usize, i, frame.bytes()) {
                        Ok(()) => self.worker.stats.handoff_out += 1,
                        Err(_) => self.worker.drops.count(DropReason::HandoffFailed),
                    }
                    self.ports[i].recycle(frame);
                }
                Verdict::Tx { port: out } if out as usize == i => {
                    if !self.ports[i].queue_tx(frame) {
                        lost += 1;
                    }
                }
                Verdict::Tx { port: out } => {
                    // Two-arm: ports sharing their frames' memory forward without a copy.
                    let Some(port) = self.ports.get_mut(out as usize) else {
                        lost += 1;
                        self.ports[i].recycle(frame);
                        continue;
                    };
                    match port.forward(frame) {
                        Ok(sent) => lost += u64::from(!sent),
                        Err(mut frame) => {
                            lost += u64::from(!port.send_copy(frame.bytes()));
                            self.ports[i].recycle(frame);
                        }
                    }
                }
                Verdict::ToMonitor => {
                    to_monitor_lost += u64::from(!self.monitor.hand_over(frame.bytes()));
                    self.ports[i].recycle(frame);
                }
                Verdict::Consumed | Verdict::Drop(_) => self.ports[i].recycle(frame),
            }
        }
        self.worker.drops.add(DropReason::TxFull, lost);
        self.worker
            .drops
            .add(DropReason::MonitorRingFull, to_monitor_lost);
        self.lanes.wake_receivers();
    }

    /// Frames other workers handed over: processed here, sent from this worker's queues, the
    /// buffers given back. Runs of frames from one port make one burst.
    fn serve_handed(&mut self, now_ms: u64) {
        if self.lanes.is_empty() {
            return;
        }
        self.lanes.receive(BURST, &mut self.handed);
        let mut start = 0;
        while start < self.handed.len() {
            let port = self.handed[start].1.port;
            let run = self.handed[start..]
                .iter()
                .take_while(|(_, f)| f.port == port)
                .count();
            let frames = &mut self.handed[start..start + run];
            self.worker
                .process_handed(now_ms, port, frames, &mut self.verdicts);
            for k in 0..run {
                let verdict = self.verdicts[k];
                let frame = self.handed[start + k].1.bytes();
                match verdict {
                    Verdict::Tx { port: out } => {
                        let sent = self
                            .ports
                            .get_mut(out as usize)
                            .is_some_and(|p| p.send_copy(frame));
                        if !sent {
                            self.worker.drops.count(DropReason::TxFull);
                        }
                    }
                    Verdict::ToMonitor => {
                        if !self.monitor.hand_over(frame) {
                            self.worker.drops.count(DropReason::MonitorRingFull);
                        }
                    }
                    // Every worker computes the same owner: a frame handed twice is lost.
                    Verdict::Handoff { .. } => self.worker.drops.count(DropReason::HandoffFailed),
                    Verdict::Consumed | Verdict::Drop(_) => {}
                }
            }
            start += run;
        }
        for (lane, buffer) in self.handed.drain(..) {
            self.lanes.give_back(lane, buffer);
        }
    }

    /// Frames the monitor core built: toward the port of their destination's neighbour, or
    /// every port for broadcasts and unknown destinations.
    fn send_monitor_frames(&mut self) {
        let Some(from) = &self.monitor.from else {
            return;
        };
        let mut lost = 0u64;
        for mut frame in from.try_iter().take(BATCH) {
            match self.worker.route_monitor_frame(&mut frame, None) {
                Some(out) => {
                    let sent = self.ports.get_mut(out).is_some_and(|p| p.send_copy(&frame));
                    lost += u64::from(!sent);
                }
                None => {
                    for (out, port) in self.ports.iter_mut().enumerate() {
                        self.worker.route_monitor_frame(&mut frame, Some(out));
                        lost += u64::from(!port.send_copy(&frame));
                    }
                }
            }
        }
        self.worker.drops.add(DropReason::TxFull, lost);
    }

    /// The worker's own frames: ARP requests, RSTs, probes of flushed flows.
    fn send_own_frames(&mut self) {
        let ports = &mut self.ports;
        let mut lost = 0u64;
        self.worker.drain_outbox(|out, bytes| {
            let sent = ports.get_mut(out).is_some_and(|p| p.send_copy(bytes));
            lost += u64::from(!sent);
        });
        self.worker.drops.add(DropReason::TxFull, lost);
    }
}
