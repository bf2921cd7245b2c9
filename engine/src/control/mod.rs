//! The control plane: validates commands against the running configuration, publishes each
//! accepted change as a new immutable generation of the tables (one atomic swap; workers pick
//! it up between bursts), answers `show`/`stat`, saves ns.conf, and serves the Unix socket.
//!
//! A rejected command changes nothing: it is applied to a copy, and the copy replaces the
//! running configuration only when every part of it (all members of a `[a-b]` range) applied.
//!
//! * `publish` — generations: tables built, capacity checked, ids recycled, one swap;
//! * `drains` — `disable service` delays and `-graceFul` across commands;
//! * `resolved` — domain-based servers' addresses from the monitor core's resolver;
//! * `runtime` — the running engine as `show`/`stat` read it (counters, health, rates);
//! * `socket` — the Unix socket server and who may use it; `lines` — a client's request
//!   lines, bounded in length and time;
//! * `watch` — what the daemon's loop looks at: vservers that went DOWN, the session count.

mod drains;
pub mod lines;
mod nitro_api;
mod owned;
mod publish;
mod resolved;
mod runtime;
mod socket;
mod watch;

pub use nitro_api::NitroApi;
pub use owned::OwnedAddresses;
pub use socket::{Admins, MAX_CLIENTS, serve};

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use arc_swap::ArcSwap;
use ctl::command::Command;
use ctl::conf::{self, Config};
use ctl::error::{CliError, ErrorKind};
use ctl::grammar::{help, parse_line};
use ctl::proto::DONE;
use ctl::render;

use crate::clock::Clock;
use crate::counters::Counters;
use crate::drain::Drain;
use crate::error::EngineError;
use crate::health::ServiceHealth;
use crate::persist::{PersistTable, SESSIONS_PER_VSERVER};
use crate::rates::RateBook;
use crate::tables::{ServiceIds, Tables};
use crate::verdict::SharedDrops;

use drains::drains_after;
use runtime::LiveRuntime;

struct State {
    config: Config,
    ids: ServiceIds,
    generation: u64,
    /// Services being taken out of service (`disable service` with a delay or -graceFul), by
    /// name; kept across generations while the service stays disabled.
    drains: HashMap<String, Drain>,
    /// SOURCEIP session tables by vserver name, kept across generations.
    persist: HashMap<String, Arc<PersistTable>>,
    /// Backup-chain state by vserver name (`-disablePrimaryOnDown`, `-soPersistence`).
    fallbacks: HashMap<String, Arc<crate::lb::spill::FallbackState>>,
    /// Told the owned addresses of every generation before it is published.
    owners: Vec<Arc<dyn OwnedAddresses>>,
}

/// The control plane of one daemon.
pub struct Control {
    state: Mutex<State>,
    config_path: PathBuf,
    /// `--skip-unsupported`: how the file is replayed on SIGHUP.
    unsupported: conf::Unsupported,
    /// The lines skipped as unsupported, written back by `save ns config` so that saving
    /// never drops what the operator's file held.
    kept_lines: Mutex<Vec<String>>,
    max_services: usize,
    pub published: Arc<ArcSwap<Tables>>,
    pub counters: Arc<Counters>,
    pub health: Arc<ServiceHealth>,
    pub drops: Arc<SharedDrops>,
    /// The daemon's one clock (workers, monitor core, drains, rates).
    pub clock: Clock,
    /// The generation the monitor core works with (`u64::MAX` while none runs).
    monitor_generation: std::sync::atomic::AtomicU64,
    rates: Mutex<RateBook>,
    /// The monitor core's resolver puts what it found here (see `resolved`).
    pub resolutions: Arc<monitors::publish::Resolutions>,
    /// `set lb parameter -sessionsThreshold` reached: no new persistence session (see
    /// `watch`); every generation's tables share it.
    sessions_full: Arc<std::sync::atomic::AtomicBool>,
    /// When `watch` last counted the sessions (ms).
    sessions_counted_ms: std::sync::atomic::AtomicU64,
    /// When `watch` last summed up the drops in the log (ms), and the totals then.
    drops_logged: Mutex<(u64, Vec<(String, u64)>)>,
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
    pub unsupported: conf::Unsupported,
    /// The lines of the file skipped as unsupported (see [`Control`]).
    pub kept_lines: Vec<String>,
    pub max_services: usize,
    pub counters: Arc<Counters>,
    pub health: Arc<ServiceHealth>,
    pub drops: Arc<SharedDrops>,
    pub clock: Clock,
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
        let mut fallbacks = HashMap::new();
        tables.attach_fallback_state(&mut fallbacks, SESSIONS_PER_VSERVER);
        let sessions_full = Arc::clone(&tables.sessions_full);
        publish::check_capacity(&tables, setup.max_services).map_err(EngineError::Capacity)?;
        Ok(Self {
            state: Mutex::new(State {
                config: setup.config,
                ids,
                generation: 1,
                drains: HashMap::new(),
                persist,
                fallbacks,
                owners: Vec::new(),
            }),
            config_path: setup.config_path,
            unsupported: setup.unsupported,
            kept_lines: Mutex::new(setup.kept_lines),
            max_services: setup.max_services,
            published: Arc::new(ArcSwap::new(Arc::new(tables))),
            counters: setup.counters,
            health: setup.health,
            drops: setup.drops,
            clock: setup.clock,
            monitor_generation: std::sync::atomic::AtomicU64::new(u64::MAX),
            rates: Mutex::new(RateBook::default()),
            resolutions: Arc::default(),
            sessions_full,
            sessions_counted_ms: std::sync::atomic::AtomicU64::new(0),
            drops_logged: Mutex::new((0, Vec::new())),
        })
    }

    /// Milliseconds on the workers' clock.
    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// Adds `owner` to those told the owned addresses, telling it the running ones first.
    pub fn add_owner(&self, owner: Arc<dyn OwnedAddresses>) -> Result<(), EngineError> {
        let mut state = self.lock();
        let running = self.published.load();
        owner
            .publish(running.locals(), &running.usip_sources)
            .map_err(EngineError::Capacity)?;
        state.owners.push(owner);
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Validates and applies configuration commands, all or nothing.
    pub fn apply(&self, cmds: &[Command]) -> Result<(), CliError> {
        let mut state = self.lock();
        let mut next = state.config.clone();
        next.apply_all(cmds)?;
        self.commit(&mut state, next, cmds)
    }

    /// A batch of configuration lines (`None`: a line that was not UTF-8), applied one by one
    /// to one copy and published as one generation: the reply is ` Done`, or `#failed K` and
    /// the error of line K, the lines before it applied (as they would be one by one). A
    /// batch never holds queries (fulcrumctl sends them on their own).
    pub fn execute_batch(&self, lines: &[Option<String>]) -> Vec<String> {
        let mut state = self.lock();
        let mut next = state.config.clone();
        let mut applied: Vec<Command> = Vec::new();
        let mut failure = None;
        for (i, line) in lines.iter().enumerate() {
            let result = match line {
                None => Err(CliError::new(ErrorKind::InvalidArgumentValue)
                    .with_detail("Command line is not valid UTF-8")),
                Some(line) => parse_line(line).and_then(|cmds| {
                    if !cmds.iter().all(Command::changes_config) {
                        return Err(CliError::new(ErrorKind::NotSupported)
                            .with_detail("A batch holds configuration commands only"));
                    }
                    next.apply_all(&cmds)?;
                    applied.extend(cmds);
                    Ok(())
                }),
            };
            if let Err(e) = result {
                failure = Some((i + 1, e));
                break;
            }
        }
        if !applied.is_empty()
            && let Err(e) = self.commit(&mut state, next, &applied)
        {
            return vec![
                format!("{}1", ctl::proto::FAILED),
                format!("{e} (nothing of the batch was applied)"),
            ];
        }
        match failure {
            None => vec![DONE.to_owned()],
            Some((line, e)) => vec![format!("{}{line}", ctl::proto::FAILED), e.to_string()],
        }
    }

    /// Publishes `next`, the configuration after `cmds`, with what those commands start.
    fn commit(
        &self,
        state: &mut std::sync::MutexGuard<'_, State>,
        next: Config,
        cmds: &[Command],
    ) -> Result<(), CliError> {
        let drains = drains_after(&state.drains, cmds, &next, self.now_ms());
        self.publish(state, next, drains)?;
        // `enable lb vserver` brings back a vserver kept out by -disablePrimaryOnDown.
        for cmd in cmds {
            if let Command::LbVserver(ctl::command::VserverCmd::Enable { name }) = cmd
                && let Some(f) = state.fallbacks.get(name.as_str())
            {
                f.set_out(false);
            }
        }
        Ok(())
    }

    /// Groups of commands (one per object of a NITRO request) applied to one copy, all or
    /// nothing, published as one generation; on refusal, the group that failed.
    pub fn apply_groups(&self, groups: &[Vec<Command>]) -> Result<(), (usize, CliError)> {
        let mut state = self.lock();
        let mut next = state.config.clone();
        for (i, g) in groups.iter().enumerate() {
            next.apply_all(g).map_err(|e| (i, e))?;
        }
        let all: Vec<Command> = groups.iter().flatten().cloned().collect();
        self.commit(&mut state, next, &all).map_err(|e| (0, e))
    }

    /// The live engine as `show`/`stat` read it, beside `state`'s configuration.
    fn live<'a>(&'a self, state: &'a State) -> LiveRuntime<'a> {
        LiveRuntime {
            control: self,
            config: &state.config,
            drains: &state.drains,
            tables: self.published.load_full(),
        }
    }

    /// Calls `f` with the running configuration and the live engine, under the lock (the
    /// two agree).
    pub fn with_view(&self, f: &mut dyn FnMut(&Config, &dyn render::Runtime)) {
        let state = self.lock();
        let rt = self.live(&state);
        f(&state.config, &rt);
    }

    /// `save ns config`, `show ns runningConfig`: the queries NITRO runs.
    pub fn run_query(&self, cmd: &Command) -> Result<String, CliError> {
        self.query(cmd)
    }

    /// Whether the running configuration differs from the saved file (NITRO's
    /// `nsconfig.configchanged`): both written out as `save ns config` would. A file that
    /// does not load counts as changed.
    pub fn unsaved_changes(&self) -> bool {
        let saved = match conf::load_with(&self.config_path, self.unsupported) {
            Ok(l) => l.config,
            Err(_) => return true,
        };
        let stamp = "";
        conf::render(&self.lock().config, stamp) != conf::render(&saved, stamp)
    }

    /// SIGHUP: replays the configuration file; a file that does not load changes nothing.
    pub fn reload_file(&self) -> Result<u64, EngineError> {
        let loaded = conf::load_with(&self.config_path, self.unsupported)
            .map_err(|e| EngineError::Config(e.to_string()))?;
        let mut state = self.lock();
        let drains = state.drains.clone();
        let mut next = loaded.config;
        next.keep_resolutions(&state.config);
        self.publish(&mut state, next, drains)
            .map_err(|e| EngineError::Config(e.to_string()))?;
        *self
            .kept_lines
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = loaded.skipped_lines;
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
        let rt = self.live(&state);
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
                let mut text = conf::render(&state.config, &now_stamp());
                let kept = self
                    .kept_lines
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if !kept.is_empty() {
                    text.push_str("# Lines fulcrumd skipped as unsupported (--skip-unsupported), kept as they were\n");
                    for l in kept.iter() {
                        text.push_str(l);
                        text.push('\n');
                    }
                }
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
