//! AF_XDP ports: one socket on one NIC queue, on its worker's UMEM, driven as a
//! [`Port`]. Every UMEM frame is always in exactly one place: a kernel ring, a port's free
//! list or queues, or the run loop's burst. Nothing here panics on what the kernel answers:
//! errors become [`PortError`]s with the port and queue named.

use std::collections::VecDeque;
use std::fmt;
use std::os::fd::RawFd;
use std::sync::Arc;

use libbpf_sys::xdp_desc;

use crate::error::EngineError;
use crate::worker::{DeviceDrops, FrameBuf, Port, PortError};
use crate::xdp::{Copying, Kick, Socket, Umem};

pub use crate::xdp::Frame;

/// Kicks per flush at most: copy mode sends 32 frames per kick (`TX_BATCH_SIZE`).
const MAX_KICKS: usize = 64;

/// One AF_XDP socket on one queue.
pub struct XskPort {
    pub ifname: String,
    pub queue: u32,
    socket: Socket,
    umem: Arc<Umem>,
    /// Chunks this port may fill or send from (room for every chunk of the UMEM: frames of
    /// a shared UMEM move between its ports).
    free: Vec<u64>,
    received: VecDeque<xdp_desc>,
    pending: VecDeque<xdp_desc>,
    pending_limit: usize,
    fill_target: usize,
    copying: Copying,
    /// Descriptors from the kernel that named no frame of the UMEM (never seen; counted).
    pub bad_descriptors: u64,
}

impl fmt::Debug for XskPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "XskPort({} queue {}, umem {}, {} free)",
            self.ifname,
            self.queue,
            self.umem.id(),
            self.free.len()
        )
    }
}

/// How a port is opened.
#[derive(Clone, Debug)]
pub struct XskConfig {
    pub ifname: String,
    pub queue: u32,
    pub zero_copy: bool,
    pub ring_size: u32,
}

impl XskPort {
    /// Binds the queue on `umem`, taking `frames` of its chunks from `chunks` (the UMEM's
    /// unclaimed chunks) for this port.
    pub fn open(
        c: &XskConfig,
        umem: &Arc<Umem>,
        chunks: &mut Vec<u64>,
        frames: usize,
    ) -> Result<Self, EngineError> {
        let copying = if c.zero_copy {
            Copying::ZeroCopy
        } else {
            Copying::Copy
        };
        let socket = Socket::bind(&c.ifname, c.queue, umem, c.ring_size, copying)
            .map_err(|e| open_error(c, &e))?;
        let mut free = Vec::with_capacity(umem.frames() as usize);
        free.extend(chunks.drain(chunks.len().saturating_sub(frames)..));
        let ring = c.ring_size as usize;
        let mut port = Self {
            ifname: c.ifname.clone(),
            queue: c.queue,
            socket,
            umem: Arc::clone(umem),
            free,
            received: VecDeque::with_capacity(ring),
            pending: VecDeque::with_capacity(ring),
            pending_limit: ring,
            fill_target: ring,
            copying,
            bad_descriptors: 0,
        };
        let target = port.fill_target;
        if let Err(e) = port.refill(target) {
            return Err(EngineError::Xsk {
                ifname: c.ifname.clone(),
                queue: c.queue,
                what: "cannot fill the ring",
                detail: format!("{e:?}"),
            });
        }
        Ok(port)
    }

    /// The socket's descriptor, to wait on.
    pub fn fd(&self) -> RawFd {
        self.socket.fd()
    }

    fn broken(&self, call: &str, errno: i32) -> PortError {
        let e = std::io::Error::from_raw_os_error(errno);
        PortError::Broken(format!("{} queue {}: {call}: {e}", self.ifname, self.queue))
    }

    /// Puts back the chunk of a frame of this port's UMEM.
    fn give_back(&mut self, frame: &Frame) {
        if frame.umem() == self.umem.id() && self.free.len() < self.free.capacity() {
            self.free.push(self.umem.chunk_of(frame.addr()));
        }
    }
}

/// What a failed bind means for the operator.
fn open_error(c: &XskConfig, e: &std::io::Error) -> EngineError {
    match e.raw_os_error() {
        Some(libc::EBUSY) => EngineError::PortBusy {
            ifname: c.ifname.clone(),
            detail: format!(
                "queue {} is already in use (another fulcrumd or AF_XDP program?)",
                c.queue
            ),
        },
        Some(libc::EOPNOTSUPP | libc::EPROTONOSUPPORT | libc::EINVAL) if c.zero_copy => {
            EngineError::Xsk {
                ifname: c.ifname.clone(),
                queue: c.queue,
                what: "zero-copy is not supported here",
                detail: format!(
                    "the driver ({}) has no AF_XDP zero-copy on this queue ({e}); set zero_copy = false in the profile",
                    crate::nic::driver_of(&c.ifname)
                ),
            }
        }
        _ => EngineError::Xsk {
            ifname: c.ifname.clone(),
            queue: c.queue,
            what: "cannot create the AF_XDP socket",
            detail: e.to_string(),
        },
    }
}

impl Port for XskPort {
    type Frame = Frame;

    /// Takes back frames the kernel finished sending.
    fn reclaim(&mut self, budget: usize) -> Result<(), PortError> {
        let room = self.free.capacity() - self.free.len();
        let umem = &self.umem;
        let free = &mut self.free;
        self.socket
            .completion
            .consume(budget.min(room), |addr| free.push(umem.chunk_of(addr)));
        Ok(())
    }

    /// Receives up to `budget` frames; returns how many.
    fn receive(&mut self, budget: usize) -> Result<usize, PortError> {
        let room = self.received.capacity() - self.received.len();
        let received = &mut self.received;
        let n = self
            .socket
            .rx
            .consume(budget.min(room), |d| received.push_back(d));
        Ok(n)
    }

    fn next_rx(&mut self) -> Option<Frame> {
        while let Some(d) = self.received.pop_front() {
            match self.umem.frame(d.addr, d.len) {
                Some(frame) => return Some(frame),
                None => {
                    // Never seen from a kernel; if it happens the chunk is lost, not reused.
                    self.bad_descriptors += 1;
                }
            }
        }
        None
    }

    fn queue_tx(&mut self, frame: Frame) -> bool {
        if frame.umem() != self.umem.id() || self.pending.len() >= self.pending_limit {
            self.give_back(&frame);
            return false;
        }
        self.pending.push_back(xdp_desc {
            addr: frame.addr(),
            len: frame.len(),
            options: 0,
        });
        true
    }

    fn forward(&mut self, frame: Frame) -> Result<bool, Frame> {
        if frame.umem() != self.umem.id() {
            return Err(frame);
        }
        Ok(self.queue_tx(frame))
    }

    fn recycle(&mut self, frame: Frame) {
        self.give_back(&frame);
    }

    fn send_copy(&mut self, bytes: &[u8]) -> bool {
        let Some(chunk) = self.free.pop() else {
            return false;
        };
        let Some(mut frame) = self.umem.frame(chunk, 0) else {
            return false;
        };
        if !frame.set_len(bytes.len()) {
            self.give_back(&frame);
            return false;
        }
        frame.bytes().copy_from_slice(bytes);
        self.queue_tx(frame)
    }

    /// Hands queued frames to the kernel and kicks it while it has more to send.
    fn flush(&mut self, budget: usize) -> Result<(), PortError> {
        let pending = &mut self.pending;
        self.socket.tx.produce(budget, || pending.pop_front());
        // Copy mode transmits only when kicked (the kernel leaves the TX ring's need_wakeup
        // flag clear there); zero-copy drivers say when they need it.
        if self.copying == Copying::ZeroCopy && !self.socket.tx.needs_wakeup() {
            return Ok(());
        }
        for _ in 0..MAX_KICKS {
            if self.socket.tx.outstanding() == 0 {
                break;
            }
            match self.socket.kick_tx() {
                Kick::Done => break,
                Kick::More => {}
                Kick::Busy => return Err(PortError::Busy),
                Kick::Failed(e) => return Err(self.broken("sendto", e)),
            }
        }
        Ok(())
    }

    /// Tops the fill ring up so the kernel has frames to receive into.
    fn refill(&mut self, budget: usize) -> Result<(), PortError> {
        let free = &mut self.free;
        self.socket
            .fill
            .produce(budget.min(self.fill_target), || free.pop());
        if self.socket.fill.needs_wakeup() {
            match self.socket.wake_rx() {
                Kick::Done | Kick::More => {}
                Kick::Busy => return Err(PortError::Busy),
                Kick::Failed(e) => return Err(self.broken("recvfrom", e)),
            }
        }
        Ok(())
    }

    /// Frames of a shared UMEM drift toward the ports that send the most (their
    /// completions come back there): move free chunks from the richest port to one that
    /// runs low.
    fn balance(ports: &mut [Self]) {
        let low = BALANCE_LOW;
        for i in 0..ports.len() {
            if ports[i].free.len() >= low {
                continue;
            }
            let umem = ports[i].umem.id();
            let richest = (0..ports.len())
                .filter(|&j| j != i && ports[j].umem.id() == umem)
                .max_by_key(|&j| ports[j].free.len());
            let Some(j) = richest else { continue };
            let surplus = ports[j].free.len().saturating_sub(ports[i].free.len()) / 2;
            let moved = surplus.min(ports[i].free.capacity() - ports[i].free.len());
            if moved == 0 {
                continue;
            }
            for _ in 0..moved {
                let Some(chunk) = ports[j].free.pop() else {
                    break;
                };
                ports[i].free.push(chunk);
            }
        }
    }

    fn wait_fd(&self) -> Option<RawFd> {
        Some(self.socket.fd())
    }

    fn device_drops(&self) -> Option<DeviceDrops> {
        self.socket.statistics().map(|s| DeviceDrops {
            no_frame: s.rx_dropped,
            rx_ring_full: s.rx_ring_full,
            invalid: s.rx_invalid_descs + s.tx_invalid_descs,
        })
    }
}

/// A port with fewer free frames than this borrows from the other ports of its UMEM.
const BALANCE_LOW: usize = 256;

impl FrameBuf for Frame {
    fn bytes(&mut self) -> &mut [u8] {
        Frame::bytes(self)
    }
}
