//! What the run loop needs of a port, and the in-memory port (tests, `fulcrumd replay`).
//!
//! A port owns its frames: each is always in exactly one place (the port's rings or free
//! list, or the loop's burst). Frames received on a port go back to it, sent or recycled.

use std::collections::VecDeque;

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

/// Frames a device dropped before the loop saw them, as it counts them (totals since the
/// port opened).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceDrops {
    /// No free frame to receive into, or a frame longer than one.
    pub no_frame: u64,
    /// The receive ring was full.
    pub rx_ring_full: u64,
    /// Descriptors refused as invalid.
    pub invalid: u64,
}

/// A port call that did not go through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PortError {
    /// The device cannot take the call now (EAGAIN, ENOBUFS, EBUSY, a ring without room):
    /// the next round tries again. Counted.
    Busy,
    /// The port is broken: the loop stops, and the daemon with it, saying this.
    Broken(String),
}

/// One queue of one NIC port, as the run loop drives it: reclaim, receive, transmit, refill.
pub trait Port {
    type Frame: FrameBuf;

    /// Takes back up to `budget` frames the device finished sending.
    fn reclaim(&mut self, budget: usize) -> Result<(), PortError>;
    /// Receives up to `budget` frames; returns how many arrived.
    fn receive(&mut self, budget: usize) -> Result<usize, PortError>;
    /// The next received frame.
    fn next_rx(&mut self) -> Option<Self::Frame>;
    /// Queues a frame received on this port for transmission on it; `false` when a frame
    /// was dropped for lack of room (counted by the caller).
    fn queue_tx(&mut self, frame: Self::Frame) -> bool;
    /// Queues a frame received on another port of the same worker for transmission on
    /// this one, without copying it when both share their frames' memory (a UMEM);
    /// otherwise hands it back (the caller copies it with [`Port::send_copy`]).
    fn forward(&mut self, frame: Self::Frame) -> Result<bool, Self::Frame> {
        Err(frame)
    }
    /// Gives a frame back without sending it.
    fn recycle(&mut self, frame: Self::Frame);
    /// Copies `bytes` into a frame of this port and queues it; `false` when none is free.
    fn send_copy(&mut self, bytes: &[u8]) -> bool;
    /// Hands up to `budget` queued frames to the device.
    fn flush(&mut self, budget: usize) -> Result<(), PortError>;
    /// Gives the device frames to receive into.
    fn refill(&mut self, budget: usize) -> Result<(), PortError>;
    /// Evens out what the ports of one worker hold when they share their frames (once a
    /// round).
    fn balance(_ports: &mut [Self])
    where
        Self: Sized,
    {
    }
    /// What the device itself dropped so far (cumulative), where it says.
    fn device_drops(&self) -> Option<DeviceDrops> {
        None
    }
    /// A descriptor that becomes readable when frames arrive (`poll = "wait"` sleeps on it).
    fn wait_fd(&self) -> Option<std::os::fd::RawFd> {
        None
    }
}

/// A port in memory: frames injected by a test (or read from a pcap) are received, frames
/// sent are kept until taken. Its transmit queue holds `tx_capacity` frames, like a ring.
#[derive(Debug)]
pub struct MemPort {
    rx: VecDeque<Vec<u8>>,
    arrived: VecDeque<Vec<u8>>,
    tx_queue: Vec<Vec<u8>>,
    sent: Vec<Vec<u8>>,
    tx_capacity: usize,
}

impl Default for MemPort {
    fn default() -> Self {
        Self::new(4096)
    }
}

impl MemPort {
    pub fn new(tx_capacity: usize) -> Self {
        Self {
            rx: VecDeque::new(),
            arrived: VecDeque::new(),
            tx_queue: Vec::new(),
            sent: Vec::new(),
            tx_capacity,
        }
    }

    /// A frame arrives on the wire; the next [`Port::receive`] takes it.
    pub fn inject(&mut self, frame: Vec<u8>) {
        self.rx.push_back(frame);
    }

    /// The frames sent since the last call, in order.
    pub fn take_sent(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.sent)
    }

    fn push_tx(&mut self, frame: Vec<u8>) -> bool {
        if self.tx_queue.len() >= self.tx_capacity {
            return false;
        }
        self.tx_queue.push(frame);
        true
    }
}

impl Port for MemPort {
    type Frame = Vec<u8>;

    fn reclaim(&mut self, _budget: usize) -> Result<(), PortError> {
        Ok(())
    }

    fn receive(&mut self, budget: usize) -> Result<usize, PortError> {
        let n = budget.min(self.rx.len());
        self.arrived.extend(self.rx.drain(..n));
        Ok(n)
    }

    fn next_rx(&mut self) -> Option<Vec<u8>> {
        self.arrived.pop_front()
    }

    fn queue_tx(&mut self, frame: Vec<u8>) -> bool {
        self.push_tx(frame)
    }

    fn forward(&mut self, frame: Vec<u8>) -> Result<bool, Vec<u8>> {
        Ok(self.push_tx(frame))
    }

    fn recycle(&mut self, _frame: Vec<u8>) {}

    fn send_copy(&mut self, bytes: &[u8]) -> bool {
        self.push_tx(bytes.to_vec())
    }

    fn flush(&mut self, budget: usize) -> Result<(), PortError> {
        let n = budget.min(self.tx_queue.len());
        self.sent.extend(self.tx_queue.drain(..n));
        Ok(())
    }

    fn refill(&mut self, _budget: usize) -> Result<(), PortError> {
        Ok(())
    }
}
