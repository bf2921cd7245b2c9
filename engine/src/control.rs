//! The control plane: validates commands against the running configuration, publishes each
//! accepted change as a new immutable generation of the tables (one atomic swap; workers pick
//! it up between bursts), answers `show`/`stat`, saves ns.conf, and serves the Unix socket.
//!
//! A rejected command changes nothing: it is applied to a copy, and the copy replaces the
//! running configuration only when every part of it (all members of a `[a-b]` range) applied.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use ctl::command::{Command, ServiceCmd, ServiceGroupCmd};
use ctl::conf::{self, Config, LbMethod};
use ctl::error::{CliError, ErrorKind};
use ctl::grammar::{help, parse_line};
use ctl::proto::{DONE, MAX_LINE};
use ctl::render::{self, PersistentSession, Rates, Runtime, ServiceStats, VserverStats};

use crate::counters::Counters;
use crate::drain::Drain;
use crate::error::EngineError;
use crate::health::ServiceHealth;
use crate::lb::RoundRobinReason;
use crate::persist::{PersistTable, SESSIONS_PER_VSERVER};
use crate::rates::{RateBook, Totals};
use crate::tables::{ServiceIds, Tables};
use crate::verdict::SharedDrops;

struct State {
    config: Config,
    ids: ServiceIds,
    generation: u64,
    /// Services being taken out of service (`disable service` with a delay or -graceFul), by
    /// name; kept across generations while the service stays disabled.
    drains: HashMap<String, Drain>,
    /// SOURCEIP session tables by vserver name, kept across generations.
    persist: HashMap<String, Arc<PersistTable>>,
}

/// The control plane of one daemon.
pub struct Control {
    state: Mutex<State>,
    config_path: PathBuf,
    max_services: usize,
    pub published: Arc<ArcSwap<Tables>>,
    pub counters: Arc<Counters>,
    pub health: Arc<ServiceHealth>,
    pub drops: Arc<SharedDrops>,
    /// The daemon's clock: the workers' milliseconds count from here.
    pub clock: Instant,
    /// The generation the monitor core works with (`u64::MAX` while none runs).
    monitor_generation: std::sync::atomic::AtomicU64,
    rates: Mutex<RateBook>,
}

fn service_key(name: &str) -> String {
    format!("s:{name}")
}

fn vserver_key(name: &str) -> String {
    format!("v:{name}")
}

impl std::fmt::Debug for Control {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Control({})", self.config_path.display())
    }
}

/// Everything `Control::new` needs.
#[derive(Debug)]
pub struct ControlSetup {
    pub config: Config,
    pub config_path: PathBuf,
    pub max_services: usize,
    pub counters: Arc<Counters>,
    pub health: Arc<ServiceHealth>,
    pub drops: Arc<SharedDrops>,
}

fn now_stamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("{secs} (seconds since 1970, UTC)")
}

impl Control {
    pub fn new(setup: ControlSetup) -> Result<Self, EngineError> {
        let mut ids = ServiceIds::default();
        let mut tables = Tables::build(&setup.config, &mut ids, 1);
        let mut persist = HashMap::new();
        tables.attach_persistence(&mut persist, SESSIONS_PER_VSERVER);
        if tables.services.len() > setup.max_services {
            return Err(EngineError::Capacity(format!(
                "{} services exceed the profile's max_services {}",
                tables.services.len(),
                setup.max_services
            )));
        }
        let snips = tables.snips().count();
        if snips > monitors::MAX_ADDRESSES {
            return Err(EngineError::Capacity(format!(
                "{snips} SNIPs exceed what the monitor core holds ({})",
                monitors::MAX_ADDRESSES
            )));
        }
        Ok(Self {
            state: Mutex::new(State {
                config: setup.config,
                ids,
                generation: 1,
                drains: HashMap::new(),
                persist,
            }),
            config_path: setup.config_path,
            max_services: setup.max_services,
            published: Arc::new(ArcSwap::new(Arc::new(tables))),
            counters: setup.counters,
            health: setup.health,
            drops: setup.drops,
            clock: Instant::now(),
            monitor_generation: std::sync::atomic::AtomicU64::new(u64::MAX),
            rates: Mutex::new(RateBook::default()),
        })
    }

    /// Samples the counters for `stat`'s rates, once a second at most.
    pub fn sample_rates(&self) {
        let now = Instant::now();
        let mut book = self.rates.lock().unwrap_or_else(PoisonError::into_inner);
        if !book.due(now) {
            return;
        }
        let tables = self.published.load_full();
        let mut totals = HashMap::new();
        for (id, s) in tables.services.iter().enumerate() {
            if let Some(s) = s {
                let t = self.counters.totals(id as u32);
                totals.insert(service_key(&s.name), [t.hits, t.packets, t.bytes]);
            }
        }
        for v in &tables.vservers {
            let hits = self.counters.vserver_hits(v.id);
            totals.insert(vserver_key(&v.name), [hits, 0, 0]);
        }
        book.record(now, totals);
    }

    fn rates_of(&self, key: &str, current: Totals) -> Rates {
        let book = self.rates.lock().unwrap_or_else(PoisonError::into_inner);
        let [hits, packets, bytes] = book.rates(key, current, Instant::now());
        Rates {
            hits,
            packets,
            bytes,
        }
    }

    /// Milliseconds on the workers' clock.
    pub fn now_ms(&self) -> u64 {
        self.clock.elapsed().as_millis() as u64
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes `next` the running configuration and publishes its tables, with the drains in
    /// progress (only those of services still disabled are kept).
    fn publish(
        &self,
        state: &mut State,
        next: Config,
        mut drains: HashMap<String, Drain>,
    ) -> Result<(), CliError> {
        drains.retain(|name, _| {
            next.services
                .get(name.as_str())
                .is_some_and(|s| !s.settings.state.is_enabled())
        });
        let mut ids = state.ids.clone();
        self.recycle_ids(&mut ids);
        let mut tables = Tables::build(&next, &mut ids, state.generation + 1);
        tables.apply_drains(&drains);
        let mut persist = state.persist.clone();
        tables.attach_persistence(&mut persist, SESSIONS_PER_VSERVER);
        if tables.services.len() > self.max_services {
            return Err(CliError::new(ErrorKind::NotSupported).with_detail(format!(
                "More services than the profile's max_services {}",
                self.max_services
            )));
        }
        if tables.snips().count() > monitors::MAX_ADDRESSES {
            return Err(CliError::new(ErrorKind::NotSupported).with_detail(format!(
                "More SNIPs than the monitor core holds ({})",
                monitors::MAX_ADDRESSES
            )));
        }
        state.generation += 1;
        state.ids = ids;
        state.config = next;
        state.drains = drains;
        state.persist = persist;
        self.published.store(Arc::new(tables));
        Ok(())
    }

    /// Frees the ids of services and vservers gone from the configuration once nothing can
    /// refer to them: every worker and the monitor core moved past the generation that
    /// dropped them, and no flow (nor counter window) of the service is left. A freed id
    /// starts from zero counters and no health.
    fn recycle_ids(&self, ids: &mut ServiceIds) {
        let workers = self.counters.oldest_generation();
        let monitor = self.monitor_generation.load(Ordering::Relaxed);
        let moved_past = |retired: u64| workers > retired && monitor > retired;
        let recycled = ids.recycle(
            |id, retired| moved_past(retired) && self.counters.service_idle(id),
            |_, retired| moved_past(retired),
        );
        for id in recycled.services {
            self.counters.reset_service(id);
            self.health.reset(id);
        }
        for id in recycled.vservers {
            self.counters.reset_vserver(id);
        }
    }

    /// The monitor core works with `generation` now (it follows every published one).
    pub fn monitor_follows(&self, generation: u64) {
        self.monitor_generation.store(generation, Ordering::Relaxed);
    }

    /// Validates and applies configuration commands, all or nothing.
    pub fn apply(&self, cmds: &[Command]) -> Result<(), CliError> {
        let mut state = self.lock();
        let mut next = state.config.clone();
        next.apply_all(cmds)?;
        let drains = drains_after(&state.drains, cmds, &next, self.now_ms());
        self.publish(&mut state, next, drains)
    }

    /// SIGHUP: replays the configuration file; a file that does not load changes nothing.
    pub fn reload_file(&self) -> Result<u64, EngineError> {
        let next = conf::load(&self.config_path).map_err(|e| EngineError::Config(e.to_string()))?;
        let mut state = self.lock();
        let drains = state.drains.clone();
        self.publish(&mut state, next, drains)
            .map_err(|e| EngineError::Config(e.to_string()))?;
        Ok(state.generation)
    }

    /// The running configuration (a copy).
    pub fn config(&self) -> Config {
        self.lock().config.clone()
    }

    /// Runs one line of the command language and returns the reply lines, the last one
    /// being ` Done` or `ERROR: …`.
    pub fn execute(&self, line: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let result = parse_line(line).and_then(|cmds| {
            if cmds.is_empty() {
                return Ok(());
            }
            if cmds.iter().all(Command::changes_config) {
                return self.apply(&cmds);
            }
            for cmd in &cmds {
                let text = self.query(cmd)?;
                out.extend(text.lines().map(str::to_owned));
            }
            Ok(())
        });
        match result {
            Ok(()) => out.push(DONE.to_owned()),
            Err(e) => out.push(e.to_string()),
        }
        out
    }

    fn query(&self, cmd: &Command) -> Result<String, CliError> {
        let state = self.lock();
        let rt = LiveRuntime {
            control: self,
            config: &state.config,
            drains: &state.drains,
            tables: self.published.load_full(),
        };
        match cmd {
            Command::Show {
                object,
                name,
                format,
            } => render::show(
                &state.config,
                *object,
                name.as_ref().map(|n| n.as_str()),
                *format == conf::OutputFormat::Json,
                &rt,
            ),
            Command::Stat {
                object,
                name,
                format,
            } => render::stat(
                &state.config,
                *object,
                name.as_ref().map(|n| n.as_str()),
                *format == conf::OutputFormat::Json,
                &rt,
            ),
            Command::Help { topic } => Ok(help(topic.as_deref())),
            Command::SaveNsConfig => {
                let text = conf::render(&state.config, &now_stamp());
                conf::save_atomic(&self.config_path, &text).map_err(|e| {
                    CliError::new(ErrorKind::Io)
                        .with_detail(format!("Cannot save the configuration: {e}"))
                })?;
                Ok(String::new())
            }
            _ => Err(CliError::new(ErrorKind::NotSupported)
                .with_detail("Mixed configuration and query commands")),
        }
    }
}

/// The services standing for a group's members, or for one of them.
fn group_services(
    config: &Config,
    group: &ctl::value::Name,
    member: Option<&(ctl::value::Name, ctl::value::Port)>,
) -> Vec<String> {
    let Some(g) = config.service_groups.get(group.as_str()) else {
        return Vec::new();
    };
    // The member's server as the configuration names it (the command may give its IP).
    let member = member.map(|(server, port)| {
        let name = config.server_for(server).map_or(server.clone(), |(n, _)| n);
        (name, *port)
    });
    config
        .group_members(g)
        .into_iter()
        .filter(|(m, _)| {
            member
                .as_ref()
                .is_none_or(|(server, port)| m.server == *server && m.port == *port)
        })
        .map(|(_, s)| s.name.0.clone())
        .collect()
}

/// The drains once `cmds` (already validated) have run at `now_ms` on `config`.
fn drains_after(
    drains: &HashMap<String, Drain>,
    cmds: &[Command],
    config: &Config,
    now_ms: u64,
) -> HashMap<String, Drain> {
    let mut next = drains.clone();
    for cmd in cmds {
        match cmd {
            Command::Service(ServiceCmd::Disable {
                name,
                delay,
                graceful,
            }) => {
                let drain = Drain::new(now_ms, delay.map(|d| d.get()), graceful.is_yes());
                next.insert(name.0.clone(), drain);
            }
            Command::Service(ServiceCmd::Enable { name })
            | Command::Service(ServiceCmd::Rm { name }) => {
                next.remove(name.as_str());
            }
            Command::ServiceGroup(ServiceGroupCmd::Disable {
                name,
                member,
                delay,
                graceful,
            }) => {
                let drain = Drain::new(now_ms, delay.map(|d| d.get()), graceful.is_yes());
                for service in group_services(config, name, member.as_ref()) {
                    next.insert(service, drain);
                }
            }
            Command::ServiceGroup(ServiceGroupCmd::Enable { name, member }) => {
                for service in group_services(config, name, member.as_ref()) {
                    next.remove(&service);
                }
            }
            Command::Service(ServiceCmd::Rename { name, new_name }) => {
                if let Some(d) = next.remove(name.as_str()) {
                    next.insert(new_name.0.clone(), d);
                }
            }
            _ => {}
        }
    }
    next
}

struct LiveRuntime<'a> {
    control: &'a Control,
    /// The running configuration, borrowed from the locked state.
    config: &'a Config,
    drains: &'a HashMap<String, Drain>,
    tables: Arc<Tables>,
}

impl LiveRuntime<'_> {
    fn id(&self, name: &str) -> Option<u32> {
        self.tables
            .services
            .iter()
            .position(|s| s.as_ref().is_some_and(|s| s.name == name))
            .map(|i| i as u32)
    }
}

impl Runtime for LiveRuntime<'_> {
    fn service(&self, name: &str) -> ServiceStats {
        let Some(id) = self.id(name) else {
            return ServiceStats::default();
        };
        let t = self.control.counters.totals(id);
        ServiceStats {
            up: self.control.health.is_up(id),
            hits: t.hits,
            active: t.active,
            packets: t.packets,
            bytes: t.bytes,
            window_packets: t.window_packets,
            window_bytes: t.window_bytes,
            response_time_us: self.control.health.response_time(id),
            load: self.control.health.load(id),
            going_out: self.drains.get(name).and_then(|d| {
                let going = d.going(self.control.now_ms(), t.active)?;
                Some(ctl::render::GoingOut {
                    graceful: going.graceful,
                    active: t.active,
                    remaining_s: going.remaining_s,
                })
            }),
            rates: self
                .control
                .rates_of(&service_key(name), [t.hits, t.packets, t.bytes]),
        }
    }

    fn vserver(&self, name: &str) -> VserverStats {
        let Some(v) = self.tables.vservers.iter().find(|v| v.name == name) else {
            return VserverStats::default();
        };
        let members = v.pool.members();
        let missing = |f: &dyn Fn(u32) -> bool| {
            members
                .iter()
                .any(|m| self.control.health.is_up(m.service) && !f(m.service))
        };
        let method = self.config.vservers.get(name).map(|c| c.settings.lb_method);
        let reason = match method {
            Some(LbMethod::Lrtm)
                if missing(&|s| self.control.health.response_time(s).is_some()) =>
            {
                Some(RoundRobinReason::ResponseTimeMissing)
            }
            Some(LbMethod::CustomLoad) if missing(&|s| self.control.health.load(s).is_some()) => {
                Some(RoundRobinReason::LoadMissing)
            }
            _ => None,
        };
        let hits = self.control.counters.vserver_hits(v.id);
        VserverStats {
            round_robin_reason: reason.map(|r| r.to_string()),
            hits,
            rates: self.control.rates_of(&vserver_key(name), [hits, 0, 0]),
            persistent_sessions: v
                .persist
                .as_ref()
                .map(|t| t.live(self.control.now_ms() / 1000) as u64),
        }
    }

    fn persistent_sessions(&self, vserver: &str) -> Vec<PersistentSession> {
        let Some(table) = self
            .tables
            .vservers
            .iter()
            .find(|v| v.name == vserver)
            .and_then(|v| v.persist.as_ref())
        else {
            return Vec::new();
        };
        let mut sessions: Vec<PersistentSession> = table
            .sessions(self.control.now_ms() / 1000)
            .into_iter()
            .map(|(client, service, remaining_s)| PersistentSession {
                client,
                service: self
                    .tables
                    .service(service)
                    .map_or_else(|| service.to_string(), |s| s.name.clone()),
                remaining_s,
            })
            .collect();
        sessions.sort_by_key(|s| s.client);
        sessions
    }

    fn drops(&self) -> Vec<(String, u64)> {
        let mut drops: Vec<(String, u64)> = self
            .control
            .drops
            .totals()
            .nonzero()
            .map(|(r, n)| (r.to_string(), n))
            .collect();
        let lost = self.control.health.frames_lost();
        if lost > 0 {
            drops.push(("monitor core ring full".to_owned(), lost));
        }
        drops
    }
}

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
        let _ = writeln!(s, "{}", admins.refusal());
        return;
    }
    let _ = stream.set_read_timeout(Some(Duration::from_secs(600)));
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
                        let _ = stream.set_nonblocking(false);
                        let control = Arc::clone(&control);
                        let admins = Arc::clone(&admins);
                        let _ = std::thread::Builder::new()
                            .name("fulcrum-client".into())
                            .spawn(move || serve_client(&control, &admins, stream));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(50)),
                }
            }
            let _ = std::fs::remove_file(&path);
        })
        .map_err(|source| EngineError::Thread {
            what: "the control socket's server".into(),
            source,
        })
}
