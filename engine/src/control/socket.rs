//! The control socket: one thread per client, one command per line, NetScaler's replies;
//! who may connect is checked from the peer's credentials (SO_PEERCRED and /proc).

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ctl::proto::MAX_LINE;

use crate::error::EngineError;

use super::Control;

/// Who may administer the daemon: root, the daemon's own user, and members (primary or
/// supplementary) of the configured admin group.
#[derive(Clone, Debug, Default)]
pub struct Admins {
    group: Option<(String, nix::unistd::Gid)>,
}

impl Admins {
    /// Root and the daemon's user, plus the group `name` when given (it must exist).
    pub fn new(group: Option<&str>) -> Result<Self, EngineError> {
        let Some(name) = group else {
            return Ok(Self::default());
        };
        match nix::unistd::Group::from_name(name) {
            Ok(Some(g)) => Ok(Self {
                group: Some((name.to_owned(), g.gid)),
            }),
            Ok(None) => Err(EngineError::Group(format!(
                "--admin-group: no such group: {name}"
            ))),
            Err(e) => Err(EngineError::Group(format!(
                "--admin-group: group {name}: {e}"
            ))),
        }
    }

    fn admits(&self, stream: &UnixStream) -> bool {
        let Ok(cred) =
            nix::sys::socket::getsockopt(stream, nix::sys::socket::sockopt::PeerCredentials)
        else {
            return false;
        };
        if cred.uid() == 0 || cred.uid() == nix::unistd::geteuid().as_raw() {
            return true;
        }
        let Some((_, gid)) = &self.group else {
            return false;
        };
        // SO_PEERCRED carries the primary group only; the supplementary ones are in /proc.
        cred.gid() == gid.as_raw() || supplementary_groups(cred.pid()).contains(&gid.as_raw())
    }

    fn refusal(&self) -> String {
        match &self.group {
            None => "ERROR: Not authorized (the control socket admits root and the daemon's user)"
                .to_owned(),
            Some((name, _)) => format!(
                "ERROR: Not authorized (the control socket admits root, the daemon's user and group {name})"
            ),
        }
    }
}

/// The supplementary groups of process `pid` (empty when it cannot be read).
fn supplementary_groups(pid: i32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| l.strip_prefix("Groups:")).map(|g| {
                g.split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect()
            })
        })
        .unwrap_or_default()
}

fn serve_client(control: &Control, admins: &Admins, stream: UnixStream) {
    if !admins.admits(&stream) {
        let mut s = &stream;
        // A peer that already left needs no answer.
        let _ = writeln!(s, "{}", admins.refusal());
        return;
    }
    // Without a timeout an idle client would hold its thread for ever.
    if stream
        .set_read_timeout(Some(Duration::from_secs(600)))
        .is_err()
    {
        return;
    }
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        match (&mut reader).take(MAX_LINE as u64 + 1).read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line.len() > MAX_LINE && !line.ends_with('\n') {
            // The connection closes either way; a peer that left needs no answer.
            let _ = writeln!(writer, "ERROR: Command line longer than {MAX_LINE} bytes");
            return;
        }
        let reply = control.execute(line.trim_end_matches(['\n', '\r']));
        let mut text = reply.join("\n");
        text.push('\n');
        if writer.write_all(text.as_bytes()).is_err() {
            return;
        }
    }
}

/// Serves the control socket until `stop`, one thread per client: mode 0600, or 0660 owned by
/// the admin group when there is one.
pub fn serve(
    control: Arc<Control>,
    path: &Path,
    admins: Admins,
    stop: Arc<AtomicBool>,
) -> Result<std::thread::JoinHandle<()>, EngineError> {
    let io = |e| EngineError::io(path, e);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| EngineError::io(dir, e))?;
    }
    if path.exists() {
        if UnixStream::connect(path).is_ok() {
            return Err(EngineError::SocketBusy(path.to_owned()));
        }
        std::fs::remove_file(path).map_err(io)?;
    }
    let listener = UnixListener::bind(path).map_err(io)?;
    let mode = if let Some((_, gid)) = &admins.group {
        nix::unistd::chown(path, None, Some(*gid)).map_err(|e| io(e.into()))?;
        0o660
    } else {
        0o600
    };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(io)?;
    listener.set_nonblocking(true).map_err(io)?;
    let path = path.to_owned();
    let admins = Arc::new(admins);
    std::thread::Builder::new()
        .name("fulcrum-control".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                control.sample_rates();
                match listener.accept() {
                    Ok((stream, _)) => {
                        if let Err(e) = stream.set_nonblocking(false) {
                            log::warn!(target: "control", "control client refused: {e}");
                            continue;
                        }
                        let control = Arc::clone(&control);
                        let admins = Arc::clone(&admins);
                        let spawned = std::thread::Builder::new()
                            .name("fulcrum-client".into())
                            .spawn(move || serve_client(&control, &admins, stream));
                        if let Err(e) = spawned {
                            log::warn!(target: "control", "control client refused: {e}");
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(50)),
                }
            }
            // Gone already (removed by hand): nothing is left to clean.
            let _ = std::fs::remove_file(&path);
        })
        .map_err(|source| EngineError::Thread {
            what: "the control socket's server".into(),
            source,
        })
}
