//! The engine's errors: one typed enum for the daemon, its ports, the profile, the control
//! plane's setup and replay. Each prints as one line an operator can act on; nothing is
//! recognised by matching its text.

use std::fmt;
use std::path::PathBuf;

#[derive(Debug)]
pub enum EngineError {
    /// A file, directory or socket that could not be used.
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A hardware profile that does not load or does not hold together.
    Profile(String),
    /// A configuration that does not load (every failing line, one per line).
    Config(String),
    /// More than the profile allows (services, SNIPs, queues).
    Capacity(String),
    /// Another fulcrumd (or AF_XDP program) owns this port or queue.
    PortBusy {
        ifname: String,
        detail: String,
    },
    /// An AF_XDP socket, UMEM or XDP program that could not be set up.
    Xsk {
        ifname: String,
        queue: u32,
        what: &'static str,
        detail: String,
    },
    NoSuchInterface(String),
    /// The control socket answers: another fulcrumd serves it.
    SocketBusy(PathBuf),
    /// A group given to `--admin-group` that does not exist or cannot be read.
    Group(String),
    /// A thread that could not be started.
    Thread {
        what: String,
        source: std::io::Error,
    },
    /// Threads that stopped unexpectedly (the daemon stopped with them).
    Stopped(Vec<String>),
    /// A pcap file that could not be read or written.
    Pcap(String),
}

impl EngineError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Self::Profile(m)
            | Self::Config(m)
            | Self::Capacity(m)
            | Self::Pcap(m)
            | Self::Group(m) => f.write_str(m),
            Self::PortBusy { ifname, detail } => write!(f, "port {ifname} {detail}"),
            Self::Xsk {
                ifname,
                queue,
                what,
                detail,
            } => write!(f, "{ifname} queue {queue}: {what}: {detail}"),
            Self::NoSuchInterface(ifname) => write!(f, "{ifname}: no such interface"),
            Self::SocketBusy(path) => write!(f, "{} is served by another fulcrumd", path.display()),
            Self::Thread { what, source } => write!(f, "cannot start {what}: {source}"),
            Self::Stopped(threads) => write!(
                f,
                "{} stopped unexpectedly; fulcrumd stopped too",
                threads.join(", ")
            ),
        }
    }
}

impl std::error::Error for EngineError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } | Self::Thread { source, .. } => Some(source),
            _ => None,
        }
    }
}
