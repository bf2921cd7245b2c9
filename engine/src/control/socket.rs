//! The control socket: one thread per client, one command per line, NetScaler's replies;
//! who may connect is checked from the peer's credentials (SO_PEERCRED and /proc).

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use ctl::proto::{BATCH, MAX_BATCH_BYTES, MAX_BATCH_LINES, MAX_LINE};

use crate::error::EngineError;

use super::Control;
use super::lines::{LINE_TIMEOUT, Line, LineReader};

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

/// Most clients served at once; one more is told so and closed. Each holds a thread (with a
/// 256 KB stack) and at most [`MAX_LINE`] bytes of an unfinished line.
pub const MAX_CLIENTS: usize = 1024;
/// A client thread's stack: commands are parsed and applied without deep recursion.
const CLIENT_STACK: usize = 256 * 1024;

/// Counts a client while it is served.
struct ClientSlot(Arc<AtomicUsize>);

impl ClientSlot {
    fn take(count: &Arc<AtomicUsize>) -> Option<Self> {
        let taken = count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_CLIENTS).then_some(n + 1)
            })
            .is_ok();
        taken.then(|| Self(Arc::clone(count)))
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

fn serve_client(control: &Control, admins: &Admins, mut stream: UnixStream) {
    if !admins.admits(&stream) {
        let mut s = &stream;
        // A peer that already left needs no answer.
        let _ = writeln!(s, "{}", admins.refusal());
        return;
    }
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut lines = LineReader::default();
    loop {
        // A peer that left needs no answer: write errors end the connection quietly.
        let line = match lines.next(&mut stream) {
            Line::Text(line) => line,
            Line::NotUtf8 => {
                if writeln!(writer, "ERROR: Command line is not valid UTF-8").is_err() {
                    return;
                }
                continue;
            }
            Line::Closed => return,
            Line::TooLong => {
                let _ = writeln!(writer, "ERROR: Command line longer than {MAX_LINE} bytes");
                return;
            }
            Line::Unfinished => {
                let _ = writeln!(
                    writer,
                    "ERROR: Command line not finished within {} s",
                    LINE_TIMEOUT.as_secs()
                );
                return;
            }
        };
        let reply = match line.strip_prefix(BATCH) {
            Some(count) => match read_batch(&mut lines, &mut stream, count) {
                Ok(batch) => control.execute_batch(&batch),
                Err(error) => {
                    let _ = writeln!(writer, "{error}");
                    return;
                }
            },
            None => control.execute(&line),
        };
        let mut text = reply.join("\n");
        text.push('\n');
        if writer.write_all(text.as_bytes()).is_err() {
            return;
        }
    }
}

/// The lines of a batch announced with `count`; an error line (and the connection closes)
/// when the batch is too big or its lines do not arrive.
fn read_batch(
    lines: &mut LineReader,
    stream: &mut UnixStream,
    count: &str,
) -> Result<Vec<Option<String>>, String> {
    let n: usize = count
        .trim()
        .parse()
        .ok()
        .filter(|n| *n <= MAX_BATCH_LINES)
        .ok_or_else(|| format!("ERROR: A batch holds 1 to {MAX_BATCH_LINES} lines"))?;
    let mut batch = Vec::with_capacity(n);
    let mut bytes = 0;
    while batch.len() < n {
        match lines.next(stream) {
            Line::Text(l) => {
                bytes += l.len() + 1;
                batch.push(Some(l));
            }
            Line::NotUtf8 => batch.push(None),
            Line::Closed | Line::Unfinished => {
                return Err("ERROR: The batch ended before its last line".to_owned());
            }
            Line::TooLong => {
                return Err(format!("ERROR: Command line longer than {MAX_LINE} bytes"));
            }
        }
        if bytes > MAX_BATCH_BYTES {
            return Err(format!(
                "ERROR: A batch holds at most {MAX_BATCH_BYTES} bytes"
            ));
        }
    }
    Ok(batch)
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
    let clients = Arc::new(AtomicUsize::new(0));
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
                        let Some(slot) = ClientSlot::take(&clients) else {
                            let mut s = &stream;
                            let _ = writeln!(
                                s,
                                "ERROR: Too many control connections ({MAX_CLIENTS} open); try again later"
                            );
                            continue;
                        };
                        let control = Arc::clone(&control);
                        let admins = Arc::clone(&admins);
                        let spawned = std::thread::Builder::new()
                            .name("fulcrum-client".into())
                            .stack_size(CLIENT_STACK)
                            .spawn(move || {
                                let _slot = slot;
                                serve_client(&control, &admins, stream)
                            });
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
