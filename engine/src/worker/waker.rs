//! Waking a worker that sleeps in `poll(2)` (`[io] poll = "wait"`) when frames reach it by
//! another way than its sockets: a lane from another worker, the monitor core's ring.
//!
//! The worker says it sleeps, looks at its rings once more, then polls its sockets and the
//! eventfd; a sender pushes, then writes the eventfd only if the worker said it sleeps. With
//! both sides ordered (SeqCst), either the worker sees the frame or the sender sees it
//! asleep: no frame waits for a timeout.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering, fence};

#[derive(Debug)]
pub struct Waker {
    event: OwnedFd,
    sleeping: AtomicBool,
}

impl Waker {
    pub fn new() -> std::io::Result<Self> {
        // SAFETY: creates a new descriptor; no memory is passed.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Self {
            // SAFETY: `fd` is a new descriptor that nothing else owns.
            event: unsafe { OwnedFd::from_raw_fd(fd) },
            sleeping: AtomicBool::new(false),
        })
    }

    /// Called by a sender after it pushed a frame for this worker.
    pub fn wake(&self) {
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::Relaxed) {
            self.signal();
        }
    }

    fn signal(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: writes 8 bytes from a live buffer to our eventfd. A full counter (EAGAIN)
        // means a wakeup is pending already.
        unsafe { libc::write(self.event.as_raw_fd(), one.as_ptr().cast(), one.len()) };
    }

    /// The worker is about to sleep; it checks its rings after this.
    pub fn going_to_sleep(&self) {
        self.sleeping.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
    }

    /// The worker woke up: clears the flag and the eventfd.
    pub fn awake(&self) {
        self.sleeping.store(false, Ordering::Relaxed);
        let mut count = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a live buffer from our nonblocking eventfd.
        unsafe {
            libc::read(
                self.event.as_raw_fd(),
                count.as_mut_ptr().cast(),
                count.len(),
            )
        };
    }

    pub fn fd(&self) -> RawFd {
        self.event.as_raw_fd()
    }
}

/// Sleeps until one of `fds` is readable or `timeout_ms` passes (EINTR ends it early too).
pub fn poll_readable(fds: &mut [libc::pollfd], timeout_ms: i32) {
    for p in fds.iter_mut() {
        p.events = libc::POLLIN;
        p.revents = 0;
    }
    // SAFETY: `fds` is a live, exclusively borrowed array of `fds.len()` pollfd structs.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sleeping_worker_is_woken_and_an_awake_one_is_not_signalled() {
        let waker = Waker::new().unwrap();
        waker.wake();
        let mut fds = [libc::pollfd {
            fd: waker.fd(),
            events: 0,
            revents: 0,
        }];
        poll_readable(&mut fds, 0);
        assert_eq!(fds[0].revents & libc::POLLIN, 0, "awake: no signal");
        waker.going_to_sleep();
        waker.wake();
        let start = std::time::Instant::now();
        poll_readable(&mut fds, 5_000);
        assert_ne!(fds[0].revents & libc::POLLIN, 0);
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
        waker.awake();
        poll_readable(&mut fds, 0);
        assert_eq!(fds[0].revents & libc::POLLIN, 0, "cleared");
    }
}
