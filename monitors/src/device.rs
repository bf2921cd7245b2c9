//! The monitor core's network device: frames from the workers arrive on one bounded
//! channel, frames for them leave on another. A full ring drops the frame (counted): probes
//! time out and retry, nothing blocks.

use std::cell::Cell;

use crossbeam_channel::{Receiver, Sender};
use smoltcp::phy::{Device, DeviceCapabilities, Medium, RxToken, TxToken};
use smoltcp::time::Instant;

/// Called after a frame was put on the ring toward the workers (wakes a sleeping worker).
pub type Notify = Box<dyn Fn() + Send>;

/// Frames between the workers and the monitor core.
pub struct ChannelDevice {
    rx: Receiver<Vec<u8>>,
    tx: Sender<Vec<u8>>,
    notify: Option<Notify>,
    /// A frame taken while waiting, handed to the stack first.
    pending: Option<Vec<u8>>,
    /// Frames lost to a full ring since the last [`ChannelDevice::take_lost`].
    lost: Cell<u64>,
}

impl ChannelDevice {
    pub fn new(rx: Receiver<Vec<u8>>, tx: Sender<Vec<u8>>) -> Self {
        Self {
            rx,
            tx,
            notify: None,
            pending: None,
            lost: Cell::new(0),
        }
    }

    /// Calls `notify` after each frame sent toward the workers.
    pub fn with_notify(mut self, notify: Notify) -> Self {
        self.notify = Some(notify);
        self
    }

    /// Blocks until a frame arrives or `max` passes.
    pub fn wait(&mut self, max: std::time::Duration) {
        if self.pending.is_none() {
            self.pending = self.rx.recv_timeout(max).ok();
        }
    }

    /// Frames lost to a full ring since the last call.
    pub fn take_lost(&self) -> u64 {
        self.lost.take()
    }

    fn sender(&self) -> FrameTx<'_> {
        FrameTx {
            tx: &self.tx,
            lost: &self.lost,
            notify: self.notify.as_ref(),
        }
    }
}

#[derive(Debug)]
pub struct FrameRx(Vec<u8>);

pub struct FrameTx<'a> {
    tx: &'a Sender<Vec<u8>>,
    lost: &'a Cell<u64>,
    notify: Option<&'a Notify>,
}

impl std::fmt::Debug for ChannelDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ChannelDevice({} waiting)", self.rx.len())
    }
}

impl std::fmt::Debug for FrameTx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FrameTx({} lost)", self.lost.get())
    }
}

impl RxToken for FrameRx {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.0)
    }
}

impl TxToken for FrameTx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut frame = vec![0; len];
        let r = f(&mut frame);
        if self.tx.try_send(frame).is_err() {
            self.lost.set(self.lost.get() + 1);
        } else if let Some(notify) = self.notify {
            notify();
        }
        r
    }
}

impl Device for ChannelDevice {
    type RxToken<'a> = FrameRx;
    type TxToken<'a> = FrameTx<'a>;

    fn receive(&mut self, _: Instant) -> Option<(FrameRx, FrameTx<'_>)> {
        let frame = self.pending.take().or_else(|| self.rx.try_recv().ok())?;
        Some((FrameRx(frame), self.sender()))
    }

    fn transmit(&mut self, _: Instant) -> Option<FrameTx<'_>> {
        Some(self.sender())
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut c = DeviceCapabilities::default();
        c.medium = Medium::Ethernet;
        c.max_transmission_unit = 1514;
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_ring_loses_the_frame_and_counts_it() {
        let (_to_core, rx) = crossbeam_channel::bounded(1);
        let (tx, from_core) = crossbeam_channel::bounded(1);
        let mut device = ChannelDevice::new(rx, tx);
        for _ in 0..3 {
            let token = device.transmit(Instant::ZERO).unwrap();
            token.consume(60, |f| f.fill(1));
        }
        assert_eq!(from_core.try_iter().count(), 1);
        assert_eq!(device.take_lost(), 2);
        assert_eq!(device.take_lost(), 0);
    }
}
