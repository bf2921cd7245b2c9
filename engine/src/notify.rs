//! systemd's readiness protocol (sd_notify(3)): `READY=1` once the ports are attached and
//! the configuration applied, `STATUS=` with what is UP, `RELOADING=1`/`READY=1` around a
//! SIGHUP, `STOPPING=1` at the end. Without `$NOTIFY_SOCKET` (not under systemd) nothing is
//! sent. A datagram that cannot be sent is not an error of the daemon's: systemd then says
//! the service did not become ready.

use std::os::unix::net::{SocketAddr, UnixDatagram};

/// Where systemd listens, if it does.
#[derive(Debug)]
pub struct Notifier {
    socket: Option<(UnixDatagram, SocketAddr)>,
}

/// `$NOTIFY_SOCKET`'s address: a path, or an abstract name after `@`.
fn address(value: &str) -> Option<SocketAddr> {
    match value.strip_prefix('@') {
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            SocketAddr::from_abstract_name(name.as_bytes()).ok()
        }
        None => SocketAddr::from_pathname(value).ok(),
    }
}

impl Notifier {
    /// From `$NOTIFY_SOCKET`.
    pub fn from_env() -> Self {
        let socket = std::env::var("NOTIFY_SOCKET")
            .ok()
            .and_then(|v| address(&v))
            .and_then(|addr| Some((UnixDatagram::unbound().ok()?, addr)));
        Self { socket }
    }

    fn send(&self, state: &str) {
        if let Some((socket, addr)) = &self.socket
            && let Err(e) = socket.send_to_addr(state.as_bytes(), addr)
        {
            log::warn!(target: "control", "systemd notification not sent: {e}");
        }
    }

    pub fn ready(&self, status: &str) {
        self.send(&format!("READY=1\nSTATUS={status}"));
    }

    pub fn status(&self, status: &str) {
        self.send(&format!("STATUS={status}"));
    }

    /// A reload begins (systemd ≥ 253 wants the monotonic time with it).
    pub fn reloading(&self) {
        let usec = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).map_or(0, |t| {
            t.tv_sec() as u64 * 1_000_000 + t.tv_nsec() as u64 / 1000
        });
        self.send(&format!("RELOADING=1\nMONOTONIC_USEC={usec}"));
    }

    pub fn stopping(&self) {
        self.send("STOPPING=1");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_and_status_reach_the_socket() {
        let dir = std::env::temp_dir().join(format!("fl-notify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("notify");
        let listener = UnixDatagram::bind(&path).unwrap();
        let n = Notifier {
            socket: Some((
                UnixDatagram::unbound().unwrap(),
                address(path.to_str().unwrap()).unwrap(),
            )),
        };
        n.ready("2 vservers UP");
        let mut buf = [0u8; 256];
        let len = listener.recv(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"READY=1\nSTATUS=2 vservers UP");
        assert!(address("@fulcrum-test").is_some());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
