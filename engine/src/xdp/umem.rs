//! A UMEM: the memory AF_XDP sockets receive into and send from, in chunks of one frame,
//! registered once and shared by every socket of one worker (a frame received on one port
//! is sent on another without a copy).

use std::ptr::NonNull;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use libbpf_sys::{xsk_umem, xsk_umem__create, xsk_umem__delete, xsk_umem_config};

use super::ring::{Consumer, Producer};

/// A frame of a UMEM: where its data starts and how long it is. Holding one is the only
/// claim on its chunk (each chunk is in exactly one place: a kernel ring, a free list, a
/// queue, or one `Frame`).
#[derive(Debug)]
pub struct Frame {
    base: NonNull<u8>,
    /// Offset of the data in the UMEM.
    addr: u64,
    len: u32,
    /// Bytes from `addr` to the end of its chunk.
    room: u32,
    umem: u32,
}

// SAFETY: a frame is an exclusive claim on its chunk of a mapping that is never unmapped
// (see `Area`); moving it to another thread moves the claim.
unsafe impl Send for Frame {}

impl Frame {
    pub fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: `addr + room` lies within the area (checked when the frame was made), the
        // area is mapped for the life of the process, and this frame is the only claim on
        // its chunk; `len <= room`.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.base.as_ptr().add(self.addr as usize),
                self.len as usize,
            )
        }
    }

    /// Its bytes, at most its chunk's room (for a frame built in place).
    pub fn set_len(&mut self, len: usize) -> bool {
        if len > self.room as usize {
            return false;
        }
        self.len = len as u32;
        true
    }

    pub fn addr(&self) -> u64 {
        self.addr
    }

    pub fn len(&self) -> u32 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The UMEM this frame belongs to.
    pub fn umem(&self) -> u32 {
        self.umem
    }
}

/// Memory mapped for a UMEM. It is never unmapped: a frame may be held past its port (the
/// API cannot stop a caller keeping one), and fulcrumd maps its UMEMs once, at start.
#[derive(Debug)]
struct Area {
    base: NonNull<u8>,
    len: usize,
}

impl Area {
    fn map(len: usize) -> std::io::Result<Self> {
        // SAFETY: an anonymous private mapping at an address the kernel picks; no existing
        // memory is touched.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let base = NonNull::new(ptr.cast::<u8>()).ok_or(std::io::ErrorKind::OutOfMemory)?;
        Ok(Self { base, len })
    }
}

// SAFETY: the mapping is never unmapped and the struct only hands out its base address;
// who may touch which bytes is decided by the frames' claims on their chunks.
unsafe impl Send for Area {}
// SAFETY: as above.
unsafe impl Sync for Area {}

/// Distinguishes UMEMs, so a port knows whether a frame is its own memory.
static NEXT_UMEM: AtomicU32 = AtomicU32::new(1);

/// The rings libbpf made with the UMEM, for the first socket that binds it.
#[derive(Debug)]
pub(super) struct FirstRings {
    pub fill: Producer<u64>,
    pub completion: Consumer<u64>,
}

/// libbpf's handle; only touched to create and delete sockets (a cold path, serialised).
#[derive(Debug)]
pub(super) struct Handle {
    pub raw: *mut xsk_umem,
    pub first: Option<FirstRings>,
}

// SAFETY: libbpf's UMEM struct is only used under the `Umem`'s mutex.
unsafe impl Send for Handle {}

/// A registered UMEM of `frames` chunks of `frame_size` bytes.
#[derive(Debug)]
pub struct Umem {
    area: Area,
    frame_size: u32,
    frames: u32,
    id: u32,
    pub(super) handle: Mutex<Handle>,
}

impl Umem {
    /// Maps and registers `frames` frames; `ring_size` sizes the first socket's fill and
    /// completion rings.
    pub fn new(frames: u32, frame_size: u32, ring_size: u32) -> std::io::Result<Self> {
        let len = frames as usize * frame_size as usize;
        let area = Area::map(len)?;
        let mut first = FirstRings {
            fill: Producer::unmapped(),
            completion: Consumer::unmapped(),
        };
        let config = xsk_umem_config {
            fill_size: ring_size,
            comp_size: ring_size,
            frame_size,
            frame_headroom: 0,
            flags: 0,
        };
        let mut raw: *mut xsk_umem = std::ptr::null_mut();
        // SAFETY: `area` is `len` bytes, page aligned (mmap); the ring structs are boxed, so
        // the addresses libbpf keeps stay valid while `Handle` holds them; `config` outlives
        // the call.
        let rc = unsafe {
            xsk_umem__create(
                &mut raw,
                area.base.as_ptr().cast(),
                len as u64,
                &mut *first.fill.raw,
                &mut *first.completion.raw,
                &config,
            )
        };
        if rc != 0 {
            return Err(std::io::Error::from_raw_os_error(-rc));
        }
        Ok(Self {
            area,
            frame_size,
            frames,
            id: NEXT_UMEM.fetch_add(1, Ordering::Relaxed),
            handle: Mutex::new(Handle {
                raw,
                first: Some(first),
            }),
        })
    }

    pub fn id(&self) -> u32 {
        self.id
    }

    pub fn frames(&self) -> u32 {
        self.frames
    }

    pub fn frame_size(&self) -> u32 {
        self.frame_size
    }

    /// The start of every chunk.
    pub fn chunks(&self) -> impl Iterator<Item = u64> + use<> {
        let size = u64::from(self.frame_size);
        (0..u64::from(self.frames)).map(move |i| i * size)
    }

    /// The chunk `addr` falls in.
    pub fn chunk_of(&self, addr: u64) -> u64 {
        addr & !(u64::from(self.frame_size) - 1)
    }

    /// The frame of `len` bytes at `addr` (from a ring); `None` when the kernel handed an
    /// address or length outside the UMEM's chunks.
    pub fn frame(&self, addr: u64, len: u32) -> Option<Frame> {
        let chunk = self.chunk_of(addr);
        let end = chunk.checked_add(u64::from(self.frame_size))?;
        let room = end - addr;
        if end > self.area.len as u64 || u64::from(len) > room {
            return None;
        }
        Some(Frame {
            base: self.area.base,
            addr,
            len,
            room: room as u32,
            umem: self.id,
        })
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        let handle = self.handle.get_mut().unwrap_or_else(|e| e.into_inner());
        // SAFETY: every socket of this UMEM holds an `Arc` to it, so none is left; libbpf
        // frees its struct and the fill/completion rings it still holds.
        unsafe { xsk_umem__delete(handle.raw) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_stay_inside_their_chunk_and_the_umem() {
        // Registering a UMEM needs an AF_XDP socket, not a device.
        let umem = Umem::new(4, 2048, 4).expect("AF_XDP UMEM (tests run as root)");
        assert_eq!(umem.chunks().collect::<Vec<_>>(), [0, 2048, 4096, 6144]);
        let mut f = umem.frame(2048 + 256, 1000).unwrap();
        assert_eq!(umem.chunk_of(f.addr()), 2048);
        assert_eq!(f.bytes().len(), 1000);
        assert!(f.set_len(2048 - 256));
        assert!(!f.set_len(2048 - 255), "past its chunk");
        assert!(
            umem.frame(2048 + 256, 1793).is_none(),
            "longer than its chunk"
        );
        assert!(umem.frame(8192, 60).is_none(), "outside the UMEM");
        assert!(umem.frame(u64::MAX - 10, 60).is_none());
    }
}
