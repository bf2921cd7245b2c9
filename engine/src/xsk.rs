//! AF_XDP ports: one socket on one NIC queue, its UMEM, fill/completion/RX/TX rings.
//!
//! The ring protocol lives in the `afxdp` crate (over libbpf); this module keeps frames
//! accounted for (every UMEM frame is always in exactly one place: the kernel's rings, the
//! free list, or one of our RX/TX queues) and detaches the XDP program on shutdown, which
//! libbpf does not do.

use std::ffi::CString;
use std::fmt;
use std::sync::Arc;

use afxdp::PENDING_LEN;
use afxdp::buf::Buf;
use afxdp::buf_mmap::BufMmap;
use afxdp::mmap_area::{MmapArea, MmapAreaOptions};
use afxdp::socket::{Socket, SocketNewError, SocketOptions, SocketRx, SocketTx};
use afxdp::umem::{Umem, UmemCompletionQueue, UmemFillQueue};
use arraydeque::{ArrayDeque, Wrapping};

use crate::error::EngineError;
use crate::profile::XdpMode;
use crate::worker::{FrameBuf, Port, PortError};

pub type Frame = BufMmap<'static, ()>;

/// Frames the kernel sends per wakeup of a copy-mode socket (`TX_BATCH_SIZE` in xsk.c).
const COPY_MODE_TX_BATCH: usize = 32;
type Queue = ArrayDeque<[Frame; PENDING_LEN], Wrapping>;

/// One AF_XDP socket with its own UMEM. Fields drop in order: sockets before the UMEM,
/// the UMEM before the memory it maps.
pub struct XskPort {
    pub ifname: String,
    pub queue: u32,
    rx_queue: Box<Queue>,
    tx_queue: Box<Queue>,
    free: Vec<Frame>,
    rx: SocketRx<'static, ()>,
    tx: SocketTx<'static, ()>,
    fill: UmemFillQueue<'static, ()>,
    completion: UmemCompletionQueue<'static, ()>,
    _socket: Arc<Socket<'static, ()>>,
    _umem: Arc<Umem<'static, ()>>,
    _area: Arc<MmapArea<'static, ()>>,
    fill_target: usize,
}

impl fmt::Debug for XskPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "XskPort({} queue {}, {} free)",
            self.ifname,
            self.queue,
            self.free.len()
        )
    }
}

/// How a port is opened.
#[derive(Clone, Debug)]
pub struct XskConfig {
    pub ifname: String,
    pub queue: u32,
    pub mode: XdpMode,
    pub zero_copy: bool,
    pub frames: usize,
    pub frame_size: usize,
    pub ring_size: u32,
}

impl XskPort {
    pub fn open(c: &XskConfig) -> Result<Self, EngineError> {
        let fail = |what: &'static str, e: &dyn fmt::Debug| EngineError::Xsk {
            ifname: c.ifname.clone(),
            queue: c.queue,
            what,
            detail: format!("{e:?}"),
        };
        let (area, frames) = MmapArea::<'static, ()>::new(
            c.frames,
            c.frame_size,
            MmapAreaOptions { huge_tlb: false },
        )
        .map_err(|e| fail("cannot map the UMEM", &e))?;
        let (umem, completion, fill) = Umem::new(Arc::clone(&area), c.ring_size, c.ring_size)
            .map_err(|e| fail("cannot register the UMEM", &e))?;
        // The afxdp crate attaches the XDP program in the driver's mode when it has one (veth
        // does), falling back to generic; `skb` profiles get copy mode for the socket.
        let options = SocketOptions {
            zero_copy_mode: c.zero_copy,
            copy_mode: c.mode == XdpMode::Skb || !c.zero_copy,
            ..SocketOptions::default()
        };
        let (socket, rx, tx) = Socket::new(
            Arc::clone(&umem),
            &c.ifname,
            c.queue as usize,
            c.ring_size,
            c.ring_size,
            options,
        )
        .map_err(|e| match &e {
            // libbpf returns negative errno values.
            SocketNewError::Create(io) if io.raw_os_error().map(i32::abs) == Some(libc::EBUSY) => {
                EngineError::PortBusy {
                    ifname: c.ifname.clone(),
                    detail: format!(
                        "queue {} is already in use (another fulcrumd or AF_XDP program?)",
                        c.queue
                    ),
                }
            }
            _ => fail("cannot create the AF_XDP socket", &e),
        })?;
        let mut port = Self {
            ifname: c.ifname.clone(),
            queue: c.queue,
            rx_queue: Box::new(ArrayDeque::new()),
            tx_queue: Box::new(ArrayDeque::new()),
            free: frames,
            rx,
            tx,
            fill,
            completion,
            _socket: socket,
            _umem: umem,
            _area: area,
            fill_target: c.ring_size as usize,
        };
        let target = port.fill_target;
        if let Err(e) = port.refill(target) {
            return Err(fail("cannot fill the ring", &e));
        }
        Ok(port)
    }
}

/// The data of a received frame, as long as the frame is.
pub fn frame_bytes(f: &mut Frame) -> &mut [u8] {
    let len = usize::from(f.get_len());
    let data = f.get_data_mut();
    let len = len.min(data.len());
    &mut data[..len]
}

/// Removes the XDP program from `ifname` (libbpf leaves it attached when sockets close).
pub fn detach_xdp(ifname: &str) -> Result<(), EngineError> {
    let name = CString::new(ifname).map_err(|_| EngineError::NoSuchInterface(ifname.to_owned()))?;
    // SAFETY: `name` is a valid NUL-terminated string that outlives the call.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if index == 0 {
        return Err(EngineError::NoSuchInterface(ifname.to_owned()));
    }
    // SAFETY: plain netlink request through libbpf; fd -1 means "detach"; no memory is shared.
    let rc = unsafe { libbpf_sys::bpf_set_link_xdp_fd(index as i32, -1, 0) };
    if rc != 0 {
        return Err(EngineError::Xsk {
            ifname: ifname.to_owned(),
            queue: 0,
            what: "cannot detach the XDP program",
            detail: std::io::Error::from_raw_os_error(rc.abs()).to_string(),
        });
    }
    Ok(())
}

/// The MAC address of an interface.
pub fn mac_of(ifname: &str) -> Result<crate::wire::Mac, EngineError> {
    let path = format!("/sys/class/net/{ifname}/address");
    let text = std::fs::read_to_string(&path).map_err(|e| EngineError::io(&path, e))?;
    let unreadable = || EngineError::io(&path, std::io::ErrorKind::InvalidData.into());
    let mut mac = [0u8; 6];
    let parts: Vec<&str> = text.trim().split(':').collect();
    if parts.len() != 6 {
        return Err(unreadable());
    }
    for (m, p) in mac.iter_mut().zip(parts) {
        *m = u8::from_str_radix(p, 16).map_err(|_| unreadable())?;
    }
    Ok(mac)
}

/// Whether frames received on `ifname` can hold partial checksums: on virtual devices (veth
/// and the like, which have no `device` in sysfs) a local sender's checksum offload leaves
/// them to the receiver, and so can a virtio host; frames from a physical NIC's wire always
/// carry complete ones.
pub fn may_carry_partial_checksums(ifname: &str) -> bool {
    let driver = std::fs::read_link(format!("/sys/class/net/{ifname}/device/driver"));
    match driver {
        Ok(link) => link.file_name().is_some_and(|d| d == "virtio_net"),
        Err(_) => true,
    }
}

impl Port for XskPort {
    type Frame = Frame;

    /// Takes back frames the kernel finished sending.
    fn reclaim(&mut self, budget: usize) -> Result<(), PortError> {
        let room = self.free.capacity() - self.free.len();
        self.completion
            .service(&mut self.free, budget.min(room))
            .map(drop)
            .map_err(|_| PortError::Busy)
    }

    /// Receives up to `budget` frames into the RX queue; returns how many.
    fn receive(&mut self, budget: usize) -> Result<usize, PortError> {
        self.rx
            .try_recv(&mut self.rx_queue, budget, ())
            .map_err(|_| PortError::Busy)
    }

    /// The next received frame.
    fn next_rx(&mut self) -> Option<Frame> {
        self.rx_queue.pop_front()
    }

    /// Queues a frame (received on this port) for transmission.
    fn queue_tx(&mut self, frame: Frame) -> bool {
        // A full (wrapping) queue hands back its oldest frame: that one is dropped, but the
        // frame itself is never lost to the UMEM.
        match self.tx_queue.push_back(frame) {
            Some(oldest) => {
                self.free.push(oldest);
                false
            }
            None => true,
        }
    }

    /// Returns a frame to the free list.
    fn recycle(&mut self, frame: Frame) {
        self.free.push(frame);
    }

    /// Copies `bytes` into a free frame of this port and queues it; false when none is free.
    fn send_copy(&mut self, bytes: &[u8]) -> bool {
        let Some(mut f) = self.free.pop() else {
            return false;
        };
        let data = f.get_data_mut();
        if bytes.len() > data.len() {
            self.free.push(f);
            return false;
        }
        data[..bytes.len()].copy_from_slice(bytes);
        f.set_len(bytes.len() as u16);
        self.queue_tx(f)
    }

    /// Hands queued frames to the kernel.
    fn flush(&mut self, budget: usize) -> Result<(), PortError> {
        let sent = self
            .tx
            .try_send(&mut self.tx_queue, budget)
            .map_err(|_| PortError::Busy)?;
        // In copy mode the kernel transmits at most 32 descriptors per wakeup (TX_BATCH_SIZE)
        // and `try_send` wakes it once; a poll drives transmission too, so add one per 32 more.
        for _ in 0..sent / COPY_MODE_TX_BATCH {
            self.rx.wake();
        }
        Ok(())
    }

    /// Tops the fill ring up so the kernel has frames to receive into (frames that do not
    /// fit stay on the free list for the next call).
    fn refill(&mut self, budget: usize) -> Result<(), PortError> {
        self.fill
            .fill(&mut self.free, budget.min(self.fill_target))
            .map_err(|_| PortError::Busy)?;
        // The poll behind `wake` also drives copy-mode transmission: keep it every round the
        // kernel asks for it, not only after new fill descriptors.
        if self.fill.needs_wakeup() {
            self.rx.wake();
        }
        Ok(())
    }
}

impl FrameBuf for Frame {
    fn bytes(&mut self) -> &mut [u8] {
        frame_bytes(self)
    }
}

/// `ETHTOOL_GRXFH`, `ETHTOOL_GRSSH` and what they carry (linux/ethtool.h).
const ETHTOOL_GRXFH: u32 = 0x29;
const ETHTOOL_GRSSH: u32 = 0x46;
const TCP_V4_FLOW: u32 = 0x01;
const UDP_V4_FLOW: u32 = 0x02;
/// Source and destination address, and both ports: the 4-tuple.
const RXH_FOUR_TUPLE: u64 = (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7);
const ETH_RSS_HASH_TOP: u8 = 1;
/// `struct ethtool_rxfh` up to its `rss_config[]`.
const RXFH_HEADER: usize = 24;

/// One ethtool request on `ifname`; `data` holds the command's struct (its first four bytes
/// the command) and receives the answer.
fn ethtool(ifname: &str, data: &mut [u8]) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let name = ifname.as_bytes();
    if name.len() >= libc::IFNAMSIZ {
        return Err(std::io::ErrorKind::InvalidInput.into());
    }
    // Any socket of the namespace carries ethtool requests; this one sends nothing.
    let socket = std::net::UdpSocket::bind("0.0.0.0:0")?;
    // SAFETY: `ifreq` is plain old data; all zeroes is a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in request.ifr_name.iter_mut().zip(name) {
        *dst = *src as libc::c_char;
    }
    request.ifr_ifru.ifru_data = data.as_mut_ptr().cast();
    // SAFETY: SIOCETHTOOL reads `request` and the command struct `ifru_data` points to,
    // which is `data`: alive and exclusively borrowed for the call, as large as the command
    // the caller wrote into it says.
    let rc = unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCETHTOOL, &mut request) };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Whether the NIC hashes `flow_type` frames over their 4-tuple.
fn hashes_four_tuple(ifname: &str, flow_type: u32) -> std::io::Result<bool> {
    // struct ethtool_rxnfc: cmd, flow_type, data (u64), then fields GRXFH leaves alone.
    let mut rxnfc = [0u8; 192];
    rxnfc[..4].copy_from_slice(&ETHTOOL_GRXFH.to_ne_bytes());
    rxnfc[4..8].copy_from_slice(&flow_type.to_ne_bytes());
    ethtool(ifname, &mut rxnfc)?;
    let mut fields = [0u8; 8];
    fields.copy_from_slice(&rxnfc[8..16]);
    Ok(u64::from_ne_bytes(fields) & RXH_FOUR_TUPLE == RXH_FOUR_TUPLE)
}

/// The RSS of an `ETHTOOL_GRSSH` answer: Toeplitz, its indirection table and key.
pub fn rss_from_rxfh(answer: &[u8]) -> Option<crate::rss::Rss> {
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(answer.get(at..at + 4)?.try_into().ok()?))
    };
    let (indir, key) = (word(8)? as usize, word(12)? as usize);
    if *answer.get(16)? != ETH_RSS_HASH_TOP || indir == 0 {
        return None;
    }
    let table = answer.get(RXFH_HEADER..RXFH_HEADER + indir * 4)?;
    let indirection = table
        .chunks_exact(4)
        .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let key = answer.get(RXFH_HEADER + indir * 4..RXFH_HEADER + indir * 4 + key)?;
    Some(crate::rss::Rss {
        toeplitz: crate::rss::Toeplitz::new(key)?,
        indirection,
    })
}

/// The NIC's RSS, when the engine can compute it for every TCP and UDP frame: Toeplitz over
/// the 4-tuple. `Ok(None)` when the device has no RSS (veth) or hashes otherwise.
pub fn read_rss(ifname: &str) -> Result<Option<crate::rss::Rss>, EngineError> {
    let unsupported = |e: &std::io::Error| {
        matches!(
            e.raw_os_error(),
            Some(libc::EOPNOTSUPP) | Some(libc::EINVAL)
        )
    };
    let fail = |e: std::io::Error| EngineError::Xsk {
        ifname: ifname.to_owned(),
        queue: 0,
        what: "cannot read the RSS configuration",
        detail: e.to_string(),
    };
    for flow in [TCP_V4_FLOW, UDP_V4_FLOW] {
        match hashes_four_tuple(ifname, flow) {
            Ok(true) => {}
            Ok(false) => return Ok(None),
            Err(e) if unsupported(&e) => return Ok(None),
            Err(e) => return Err(fail(e)),
        }
    }
    let mut sizes = [0u8; RXFH_HEADER];
    sizes[..4].copy_from_slice(&ETHTOOL_GRSSH.to_ne_bytes());
    match ethtool(ifname, &mut sizes) {
        Ok(()) => {}
        Err(e) if unsupported(&e) => return Ok(None),
        Err(e) => return Err(fail(e)),
    }
    let word =
        |at: usize| u32::from_ne_bytes([sizes[at], sizes[at + 1], sizes[at + 2], sizes[at + 3]]);
    let (indir, key) = (word(8) as usize, word(12) as usize);
    let mut answer = vec![0u8; RXFH_HEADER + indir * 4 + key];
    answer[..4].copy_from_slice(&ETHTOOL_GRSSH.to_ne_bytes());
    answer[8..12].copy_from_slice(&(indir as u32).to_ne_bytes());
    answer[12..16].copy_from_slice(&(key as u32).to_ne_bytes());
    ethtool(ifname, &mut answer).map_err(fail)?;
    Ok(rss_from_rxfh(&answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_rxfh_answer_becomes_the_rss() {
        let key = crate::rss::MICROSOFT_KEY;
        let mut answer = vec![0u8; RXFH_HEADER + 4 * 4 + key.len()];
        answer[8..12].copy_from_slice(&4u32.to_ne_bytes());
        answer[12..16].copy_from_slice(&(key.len() as u32).to_ne_bytes());
        answer[16] = ETH_RSS_HASH_TOP;
        for (i, q) in [0u32, 1, 0, 1].iter().enumerate() {
            answer[RXFH_HEADER + i * 4..RXFH_HEADER + i * 4 + 4].copy_from_slice(&q.to_ne_bytes());
        }
        answer[RXFH_HEADER + 16..].copy_from_slice(&key);
        let rss = rss_from_rxfh(&answer).unwrap();
        assert_eq!(rss.indirection, [0, 1, 0, 1]);
        assert_eq!(rss.toeplitz, crate::rss::Toeplitz::new(&key).unwrap());
        answer[16] = 2; // XOR, not Toeplitz
        assert!(rss_from_rxfh(&answer).is_none());
        assert!(rss_from_rxfh(&answer[..20]).is_none(), "truncated");
    }

    #[test]
    fn a_veth_has_no_rss_and_says_so() {
        // The loopback device stands in for any device without RSS.
        assert!(matches!(read_rss("lo"), Ok(None)), "{:?}", read_rss("lo"));
    }
}
