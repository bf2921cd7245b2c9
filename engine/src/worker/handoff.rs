//! Frames handed from the worker that received them to the worker that owns their flow: one
//! lane per (sender, receiver) pair, each a bounded single-producer single-consumer ring of
//! buffers and a ring that returns the empty buffers. Buffers are allocated once, when the
//! lanes are made; a full lane (or no free buffer) is a counted drop, never a wait.

use std::cell::Cell;
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender, bounded};

use super::FrameBuf;
use super::waker::Waker;

/// The largest frame a lane carries (an untagged or single-tagged Ethernet frame of a
/// 1500-byte MTU, without FCS).
pub const MAX_FRAME: usize = 1536;

/// One handed-off frame and the port it arrived on.
#[derive(Debug)]
pub struct Handed {
    pub port: usize,
    len: usize,
    data: [u8; MAX_FRAME],
}

impl FrameBuf for Box<Handed> {
    fn bytes(&mut self) -> &mut [u8] {
        &mut self.data[..self.len]
    }
}

/// The frames of one sender for one receiver.
#[derive(Debug)]
struct Lane {
    frames: (Sender<Box<Handed>>, Receiver<Box<Handed>>),
    free: (Sender<Box<Handed>>, Receiver<Box<Handed>>),
}

impl Lane {
    fn new(capacity: usize) -> Self {
        let frames = bounded(capacity);
        let free = bounded(capacity);
        for _ in 0..capacity {
            // The free ring has room for every buffer: this cannot fail.
            let buffer = Box::new(Handed {
                port: 0,
                len: 0,
                data: [0; MAX_FRAME],
            });
            if free.0.try_send(buffer).is_err() {
                break;
            }
        }
        Self { frames, free }
    }
}

/// Why a frame could not be handed over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandoffError {
    /// The owner's lane is full (it is behind).
    Full,
    /// Longer than [`MAX_FRAME`].
    TooLong,
    /// No lane to that worker.
    NoLane,
}

/// One worker's ends of the lanes: toward each other worker, and from each.
#[derive(Debug, Default)]
pub struct Lanes {
    out: Vec<Option<Arc<Lane>>>,
    inbound: Vec<Arc<Lane>>,
    /// Each worker's waker (`poll = "wait"`), by worker index; empty when none sleeps.
    wakers: Vec<Arc<Waker>>,
    /// Workers sent to since the last [`Lanes::wake_receivers`] (bit per worker).
    sent_to: Cell<u64>,
}

impl Lanes {
    /// The lanes between `workers` workers, each `capacity` frames deep; entry `w` is worker
    /// `w`'s ends.
    pub fn mesh(workers: usize, capacity: usize) -> Vec<Lanes> {
        let lanes: Vec<Vec<Option<Arc<Lane>>>> = (0..workers)
            .map(|from| {
                (0..workers)
                    .map(|to| (from != to).then(|| Arc::new(Lane::new(capacity))))
                    .collect()
            })
            .collect();
        (0..workers)
            .map(|w| Lanes {
                out: lanes[w].clone(),
                inbound: lanes.iter().filter_map(|row| row[w].clone()).collect(),
                wakers: Vec::new(),
                sent_to: Cell::new(0),
            })
            .collect()
    }

    /// Copies `bytes` (received on `port`) into a buffer of the lane to worker `to`.
    pub fn send(&self, to: usize, port: usize, bytes: &[u8]) -> Result<(), HandoffError> {
        let lane = self
            .out
            .get(to)
            .and_then(Option::as_ref)
            .ok_or(HandoffError::NoLane)?;
        if bytes.len() > MAX_FRAME {
            return Err(HandoffError::TooLong);
        }
        let mut buffer = lane.free.1.try_recv().map_err(|_| HandoffError::Full)?;
        buffer.port = port;
        buffer.len = bytes.len();
        buffer.data[..bytes.len()].copy_from_slice(bytes);
        self.sent_to
            .set(self.sent_to.get() | 1u64.checked_shl(to as u32).unwrap_or(0));
        lane.frames.0.try_send(buffer).map_err(|e| {
            // Cannot happen (as many buffers as slots), but the buffer is never lost.
            let _ = lane.free.0.try_send(e.into_inner());
            HandoffError::Full
        })
    }

    /// Moves up to `budget` handed frames into `into`, with the lane each came from.
    pub fn receive(&self, budget: usize, into: &mut Vec<(usize, Box<Handed>)>) {
        for (i, lane) in self.inbound.iter().enumerate() {
            while into.len() < budget {
                match lane.frames.1.try_recv() {
                    Ok(frame) => into.push((i, frame)),
                    Err(_) => break,
                }
            }
        }
    }

    /// Gives a processed buffer back to the lane it came from.
    pub fn give_back(&self, lane: usize, buffer: Box<Handed>) {
        if let Some(l) = self.inbound.get(lane) {
            // The free ring has room for every buffer of its lane.
            let _ = l.free.0.try_send(buffer);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.inbound.is_empty()
    }

    /// Whether a frame waits in a lane toward this worker.
    pub fn has_inbound(&self) -> bool {
        self.inbound.iter().any(|l| !l.frames.1.is_empty())
    }

    /// Lets the workers that sleep when idle be woken by what is sent to them.
    pub fn set_wakers(&mut self, wakers: Vec<Arc<Waker>>) {
        self.wakers = wakers;
    }

    /// Wakes the workers sent to since the last call, if they sleep (once per burst, not
    /// per frame).
    pub fn wake_receivers(&self) {
        let mut sent = self.sent_to.replace(0);
        while sent != 0 {
            let w = sent.trailing_zeros() as usize;
            sent &= sent - 1;
            if let Some(waker) = self.wakers.get(w) {
                waker.wake();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_cross_from_each_worker_to_each_other_and_buffers_come_back() {
        let lanes = Lanes::mesh(3, 2);
        assert_eq!(lanes[0].send(0, 0, b"self"), Err(HandoffError::NoLane));
        lanes[0].send(2, 1, b"from 0").unwrap();
        lanes[1].send(2, 0, b"from 1").unwrap();
        lanes[1].send(2, 0, b"again").unwrap();
        assert_eq!(lanes[1].send(2, 0, b"full"), Err(HandoffError::Full));
        assert_eq!(
            lanes[0].send(1, 0, &[0; MAX_FRAME + 1]),
            Err(HandoffError::TooLong)
        );
        let mut got = Vec::new();
        lanes[2].receive(8, &mut got);
        let texts: Vec<(usize, Vec<u8>)> = got
            .iter_mut()
            .map(|(_, f)| (f.port, f.bytes().to_vec()))
            .collect();
        assert_eq!(
            texts,
            [
                (1, b"from 0".to_vec()),
                (0, b"from 1".to_vec()),
                (0, b"again".to_vec())
            ]
        );
        for (lane, buffer) in got {
            lanes[2].give_back(lane, buffer);
        }
        lanes[1].send(2, 0, b"room again").unwrap();
    }
}
