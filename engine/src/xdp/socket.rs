//! An AF_XDP socket bound to one queue of one device, on a (possibly shared) UMEM, with its
//! four rings, and the two system calls of the data path: the TX kick and the RX wakeup.

use std::ffi::CString;
use std::os::fd::RawFd;
use std::sync::Arc;

use libbpf_sys::{
    XDP_COPY, XDP_USE_NEED_WAKEUP, XDP_ZEROCOPY, XSK_LIBBPF_FLAGS__INHIBIT_PROG_LOAD, xdp_desc,
    xsk_socket, xsk_socket__create_shared, xsk_socket__delete, xsk_socket__fd, xsk_socket_config,
};

use super::ring::{Consumer, Producer};
use super::umem::Umem;

/// How a socket is bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Copying {
    /// The kernel copies frames between its buffers and the UMEM (any driver).
    Copy,
    /// The driver DMAs straight into the UMEM (drivers with AF_XDP zero-copy support).
    ZeroCopy,
}

/// What a system call on the data path came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kick {
    /// Done (or nothing for the kernel to do now).
    Done,
    /// The kernel has more to process than one call does (copy mode sends 32 per call).
    More,
    /// The device cannot take it now (ENOBUFS, EBUSY): try again next round.
    Busy,
    /// Anything else (the errno): the socket is unusable.
    Failed(i32),
}

/// Sorts the errno of a kick or wakeup: the errors the kernel returns in normal operation
/// are retried, the rest break the port.
pub fn classify(errno: i32) -> Kick {
    match errno {
        libc::EAGAIN | libc::EINTR => Kick::More,
        libc::ENOBUFS | libc::EBUSY => Kick::Busy,
        // The link is down: frames wait in the ring until it is up again.
        libc::ENETDOWN | libc::ENXIO => Kick::Done,
        e => Kick::Failed(e),
    }
}

/// A bound AF_XDP socket. Drops before its rings (libbpf unmaps them through pointers to the
/// ring structs) and before its UMEM.
#[derive(Debug)]
pub struct Socket {
    raw: *mut xsk_socket,
    fd: RawFd,
    pub rx: Consumer<xdp_desc>,
    pub tx: Producer<xdp_desc>,
    pub fill: Producer<u64>,
    pub completion: Consumer<u64>,
    umem: Arc<Umem>,
}

// SAFETY: the socket and its rings are used by one thread at a time (the worker that owns the
// port); libbpf's socket struct is only touched at creation and deletion.
unsafe impl Send for Socket {}

impl Socket {
    /// Binds queue `queue` of `ifname` on `umem`. The first socket of a UMEM decides the
    /// copy mode; the others share it (XDP_SHARED_UMEM). The XDP program is the engine's own
    /// (see `program`): libbpf loads none.
    pub fn bind(
        ifname: &str,
        queue: u32,
        umem: &Arc<Umem>,
        ring_size: u32,
        copying: Copying,
    ) -> std::io::Result<Self> {
        let name = CString::new(ifname).map_err(|_| std::io::ErrorKind::InvalidInput)?;
        let mode = match copying {
            Copying::Copy => XDP_COPY,
            Copying::ZeroCopy => XDP_ZEROCOPY,
        };
        let config = xsk_socket_config {
            rx_size: ring_size,
            tx_size: ring_size,
            libbpf_flags: XSK_LIBBPF_FLAGS__INHIBIT_PROG_LOAD,
            xdp_flags: 0,
            bind_flags: (XDP_USE_NEED_WAKEUP | mode) as u16,
        };
        let mut handle = umem.handle.lock().unwrap_or_else(|e| e.into_inner());
        let (mut fill, mut completion) = match handle.first.take() {
            Some(first) => (first.fill, first.completion),
            None => (Producer::unmapped(), Consumer::unmapped()),
        };
        let mut rx = Consumer::unmapped();
        let mut tx = Producer::unmapped();
        let mut raw: *mut xsk_socket = std::ptr::null_mut();
        // SAFETY: every pointer is to a live value: the name and config for the call, the
        // boxed ring structs for the socket's life (they move into `Socket`, whose drop
        // deletes the socket first), the UMEM handle under its lock.
        let rc = unsafe {
            xsk_socket__create_shared(
                &mut raw,
                name.as_ptr(),
                queue,
                handle.raw,
                &mut *rx.raw,
                &mut *tx.raw,
                &mut *fill.raw,
                &mut *completion.raw,
                &config,
            )
        };
        if rc != 0 {
            // libbpf may still point at the first rings (it had not used them yet): they stay
            // with the UMEM for the next socket.
            handle.first = Some(super::umem::FirstRings { fill, completion });
            return Err(std::io::Error::from_raw_os_error(-rc));
        }
        drop(handle);
        // SAFETY: `raw` is the socket libbpf just created.
        let fd = unsafe { xsk_socket__fd(raw) };
        Ok(Self {
            raw,
            fd,
            rx,
            tx,
            fill,
            completion,
            umem: Arc::clone(umem),
        })
    }

    pub fn fd(&self) -> RawFd {
        self.fd
    }

    pub fn umem(&self) -> &Arc<Umem> {
        &self.umem
    }

    /// Asks the kernel to send what the TX ring holds.
    pub fn kick_tx(&self) -> Kick {
        // SAFETY: a zero-length send on our socket: no buffer is read.
        let rc = unsafe {
            libc::sendto(
                self.fd,
                std::ptr::null(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null(),
                0,
            )
        };
        if rc >= 0 {
            return Kick::Done;
        }
        classify(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }

    /// The kernel's counts for this socket (`XDP_STATISTICS`): frames it dropped, descriptors
    /// it refused. `None` if the kernel does not say.
    pub fn statistics(&self) -> Option<libc::xdp_statistics> {
        // SAFETY: all-zero is a valid `xdp_statistics` (plain integers).
        let mut stats: libc::xdp_statistics = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::xdp_statistics>() as libc::socklen_t;
        // SAFETY: the kernel writes at most `len` bytes into `stats`, which is that large and
        // exclusively borrowed for the call.
        let rc = unsafe {
            libc::getsockopt(
                self.fd,
                libc::SOL_XDP,
                libc::XDP_STATISTICS,
                (&raw mut stats).cast(),
                &mut len,
            )
        };
        (rc == 0).then_some(stats)
    }

    /// Wakes the kernel to receive into the fill ring's frames (`need_wakeup`).
    pub fn wake_rx(&self) -> Kick {
        // SAFETY: a zero-length receive on our socket: no buffer is written.
        let rc = unsafe {
            libc::recvfrom(
                self.fd,
                std::ptr::null_mut(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        if rc >= 0 {
            return Kick::Done;
        }
        match classify(std::io::Error::last_os_error().raw_os_error().unwrap_or(0)) {
            // Nothing to receive yet is the usual answer.
            Kick::More => Kick::Done,
            other => other,
        }
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        let _handle = self.umem.handle.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: `raw` is our socket, deleted once; its ring structs are still alive (fields
        // drop after this), and the UMEM's lock is held as libbpf updates its count.
        unsafe { xsk_socket__delete(self.raw) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_of_normal_operation_are_retried_and_the_rest_break_the_port() {
        assert_eq!(classify(libc::EAGAIN), Kick::More);
        assert_eq!(classify(libc::EINTR), Kick::More);
        assert_eq!(classify(libc::ENOBUFS), Kick::Busy);
        assert_eq!(classify(libc::EBUSY), Kick::Busy);
        assert_eq!(classify(libc::ENETDOWN), Kick::Done);
        assert_eq!(classify(libc::EBADF), Kick::Failed(libc::EBADF));
        assert_eq!(classify(libc::EFAULT), Kick::Failed(libc::EFAULT));
    }
}
