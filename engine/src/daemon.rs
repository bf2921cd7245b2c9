//! `fulcrumd --profile … --config …`: opens the profile's AF_XDP ports, runs one pinned
//! worker per listed core until SIGINT/SIGTERM, then detaches its XDP programs and prints
//! what it carried.

use std::fmt;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::clock::Clock;
use crate::control::{self, Control, ControlSetup};
use crate::counters::Counters;
use crate::error::EngineError;
use crate::health::ServiceHealth;
use crate::neigh::Neighbours;
use crate::nic;
use crate::portset::{Programs, open_worker_ports};
use crate::profile::{HwProfile, Steering};
use crate::rss::Rss;
use crate::verdict::{DropCounters, SharedDrops};
use crate::worker::{Lanes, MonitorRings, Runner, Waker, Worker, WorkerSetup, WorkerStats};
use crate::xsk::XskConfig;

const LOCK_DIR: &str = "/run/fulcrum";
/// Frames a lane between two workers holds (1.5 KB each).
const HANDOFF_LANE_FRAMES: usize = 1024;

/// What the daemon carried, printed when it stops.
#[derive(Debug, Default)]
pub struct RunSummary {
    pub services: Vec<(String, crate::counters::ServiceTotals)>,
    pub stats: WorkerStats,
    pub drops: DropCounters,
}

impl fmt::Display for RunSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.stats;
        writeln!(
            f,
            "frames received {}, sent {}, flows created {}, expired {}, flushed {}, handed off {}",
            s.rx, s.tx, s.flows_created, s.flows_expired, s.flows_flushed, s.handoff_out
        )?;
        for (name, t) in &self.services {
            writeln!(
                f,
                "service {name}: hits {}, active {}, packets {}, bytes {}",
                t.hits, t.active, t.packets, t.bytes
            )?;
        }
        for (reason, n) in self.drops.nonzero() {
            writeln!(f, "dropped ({reason}): {n}")?;
        }
        Ok(())
    }
}

/// Holds `/run/fulcrum/<ifname>@<netns>.lock` so a second daemon on the same port fails
/// clearly. The network namespace is part of the name: an interface name is only unique
/// within one.
fn lock_port(ifname: &str) -> Result<File, EngineError> {
    std::fs::create_dir_all(LOCK_DIR).map_err(|e| EngineError::io(LOCK_DIR, e))?;
    let netns = std::fs::read_link("/proc/self/ns/net")
        .map(|l| {
            l.to_string_lossy()
                .chars()
                .filter(char::is_ascii_digit)
                .collect::<String>()
        })
        .unwrap_or_default();
    let path = Path::new(LOCK_DIR).join(format!("{ifname}@{netns}.lock"));
    let file = File::create(&path).map_err(|e| EngineError::io(&path, e))?;
    file.try_lock().map_err(|_| EngineError::PortBusy {
        ifname: ifname.to_owned(),
        detail: format!(
            "is already owned by another fulcrumd (lock {} is held)",
            path.display()
        ),
    })?;
    Ok(file)
}

/// Raises the soft limit of open files to the hard one (systemd's default soft limit, 1024,
/// would cap the control clients and sockets long before the daemon's own bounds); returns
/// the limit in force.
pub fn raise_fd_limit() -> u64 {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, hard)) if soft < hard => match setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
            Ok(()) => hard,
            Err(_) => soft,
        },
        Ok((soft, _)) => soft,
        Err(_) => 0,
    }
}

/// The signals the daemon reacts to, as flags its threads poll.
#[derive(Debug, Clone, Default)]
pub struct Signals {
    /// SIGINT/SIGTERM: stop.
    pub stop: Arc<AtomicBool>,
    /// SIGHUP: replay the configuration file and publish it if it loads.
    pub reload: Arc<AtomicBool>,
}

/// Where the daemon finds and serves things.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// ns.conf: replayed at start and on SIGHUP, written by `save ns config`.
    pub config: std::path::PathBuf,
    /// The control socket.
    pub socket: std::path::PathBuf,
    /// `--metrics ADDR:PORT`: OpenMetrics text for Prometheus.
    pub metrics: Option<std::net::SocketAddr>,
    /// `--admin-group NAME`: its members may use the control socket too.
    pub admin_group: Option<String>,
    /// `--skip-unsupported`: lines of objects and features Fulcrum lacks are reported and
    /// skipped instead of refusing the file.
    pub unsupported: ctl::conf::Unsupported,
    /// `--nitro` / `--nitro-tls`: NITRO's listeners.
    pub nitro: Vec<nitro::http::Listen>,
}

/// Keys the sequence numbers toward services and the SYN cookies with the secret kept beside
/// the configuration, so that they continue above this daemon's predecessor's over the
/// tuples services still hold in TIME_WAIT, and the cookies it gave still prove their
/// handshakes. Without it (a directory the daemon cannot write) the engine runs with a
/// secret of its own, and says what that costs.
fn keep_secret(config: &std::path::Path) {
    let path = crate::isn_secret::path_for(config);
    match crate::isn_secret::load_or_make(&path) {
        Ok(secret) => {
            crate::syncookie::keep_secret(secret);
        }
        Err(e) => log::warn!(target: "control",
            "cannot keep the sequence-number secret in {}: {e}; for a minute after a \
             restart, SYNs toward services of clients without TCP timestamps may be \
             resent once, and handshakes answered with a SYN cookie before it redone",
            path.display()
        ),
    }
}

pub fn run(
    profile: &HwProfile,
    options: &RunOptions,
    signals: Signals,
) -> Result<RunSummary, EngineError> {
    let config_path = options.config.as_path();
    let socket = options.socket.as_path();
    let files = raise_fd_limit();
    log::debug!(target: "control", "open files limit {files}");
    let admins = control::Admins::new(options.admin_group.as_deref())?;
    let loaded = ctl::conf::load_with(config_path, options.unsupported).map_err(|e| {
        EngineError::Config(format!(
            "refusing to start with a configuration that does not load:\n{e}"
        ))
    })?;
    for s in &loaded.skipped {
        log::warn!(target: "config",
            "{}:{}: skipped (unsupported): {}",
            config_path.display(),
            s.line,
            s.error
        );
    }
    let (config, kept_lines) = (loaded.config, loaded.skipped_lines);
    keep_secret(config_path);
    let stop = Arc::clone(&signals.stop);
    let _locks = profile
        .ports
        .iter()
        .map(|p| lock_port(&p.ifname))
        .collect::<Result<Vec<_>, _>>()?;
    check_every_queue_served(profile)?;
    let services = profile.max_services as usize;
    let workers = profile.cores.workers.len();
    let (counters, writers) = Counters::new(workers, services);
    let health = Arc::new(ServiceHealth::new(services));
    let drops = Arc::new(SharedDrops::with_cores(&profile.cores.workers));
    let control = Arc::new(Control::new(ControlSetup {
        config,
        config_path: config_path.to_owned(),
        unsupported: options.unsupported,
        kept_lines,
        max_services: services,
        counters: Arc::clone(&counters),
        health: Arc::clone(&health),
        drops: Arc::clone(&drops),
        clock: Clock::monotonic(),
    })?);
    // Workers pick up a new generation between bursts (RCU-style: one atomic swap).
    let published = Arc::clone(&control.published);
    let tables = published.load_full();
    let macs = profile
        .ports
        .iter()
        .map(|p| nic::mac_of(&p.ifname))
        .collect::<Result<Vec<_>, _>>()?;

    // Queues are spread over the workers; each worker gets one queue of every port.
    let mut plans = Vec::new();
    for (w, writer) in writers.into_iter().enumerate() {
        let mut ports = Vec::new();
        for p in &profile.ports {
            // Port indices are the profile's: a worker needs a queue on every port.
            let Some(&queue) = p.queues.get(w) else {
                return Err(EngineError::Profile(format!(
                    "port {} has {} queue(s) for {workers} workers: every worker needs a queue on every port",
                    p.ifname,
                    p.queues.len()
                )));
            };
            ports.push(XskConfig {
                ifname: p.ifname.clone(),
                queue,
                zero_copy: p.zero_copy,
                ring_size: p.ring_size,
            });
        }
        plans.push((w, writer, ports));
    }

    // The engine's XDP program on every device: frames to its VIPs and SNIPs (and ARP about
    // them) come to the workers' sockets, all else goes on to the kernel. Detached when
    // `programs` drops, on every way out of this function.
    let programs = Programs::attach(profile)?;
    control.add_owner(programs.owners())?;

    // One clock for the workers, the monitor core and the control plane's drains.
    let clock = control.clock.clone();
    let mut handles = Vec::new();
    // Rings between the workers and the monitor core (SPEC §1): frames for it, frames from it.
    let (to_monitor, monitor_rx) = crossbeam_channel::bounded::<Vec<u8>>(4096);
    let (monitor_tx, from_monitor) = crossbeam_channel::bounded::<Vec<u8>>(4096);
    let mut from_monitor = Some(from_monitor);
    // One neighbour table for every worker; lanes between them for frames of flows another
    // worker owns (the queue a frame arrives on says nothing of its flow).
    let neighbours = Arc::new(Neighbours::new(crate::worker::NEIGHBOURS));
    let poll = profile.io.poll;
    let rss = choose_steering(profile)?;
    // Idle, each worker sleeps in poll(2) (`poll = "busy"`: at most a millisecond), woken
    // by its sockets and by its waker (frames handed over by other workers, the monitor
    // core's frames).
    let wakers: Vec<Arc<Waker>> = (0..workers)
        .map(|_| Waker::new().map(Arc::new))
        .collect::<Result<_, _>>()
        .map_err(|source| EngineError::Thread {
            what: "a worker's waker (eventfd)".into(),
            source,
        })?;
    let mut lanes = Lanes::mesh(workers, HANDOFF_LANE_FRAMES).into_iter();
    for (w, writer, port_configs) in plans {
        let ports = open_worker_ports(
            &port_configs,
            profile.umem.frames as usize,
            profile.umem.frame_size,
            &programs,
        )?;
        let mut worker = Worker::new(WorkerSetup {
            id: w,
            workers,
            macs: macs.clone(),
            flow_capacity: profile.flows.per_worker as usize,
            writer,
            counters: Arc::clone(&counters),
            health: Arc::clone(&health),
            tables: Arc::clone(&tables),
        });
        if let Some(n) = profile.flows.embryonic {
            worker.set_embryonic_limit(n as usize);
        }
        worker.set_timestamp_origin(clock.wall_ms_at_zero());
        worker.share_drops(Arc::clone(&drops));
        worker.share_neighbours(Arc::clone(&neighbours));
        if let Some(rss) = &rss {
            worker.steer_by_rss(Arc::clone(rss));
        }
        worker.attach_monitor();
        let mut lanes = lanes.next().unwrap_or_default();
        lanes.set_wakers(wakers.clone());
        let waker = wakers.get(w).cloned();
        for (i, c) in port_configs.iter().enumerate() {
            if !nic::may_carry_partial_checksums(&c.ifname) {
                worker.trust_checksums(i);
            }
        }
        let core = profile.cores.workers[w];
        let stop = Arc::clone(&stop);
        let published = Arc::clone(&published);
        let clock = clock.clone();
        let monitor = MonitorRings {
            to: Some(to_monitor.clone()),
            from: from_monitor.take(),
        };
        let handle = std::thread::Builder::new()
            .name(format!("fulcrum-w{w}"))
            .spawn(move || {
                if !core_affinity::set_for_current(core_affinity::CoreId { id: core }) {
                    log::warn!(target: "worker",
                        "worker {w} could not be pinned to CPU {core}; running unpinned"
                    );
                }
                let _guard = StopOnPanic::new(&stop, format!("worker {w}"));
                let mut runner = Runner::new(worker, ports, monitor).with_poll(poll);
                if let Some(waker) = waker {
                    runner = runner.with_waker(waker);
                }
                if workers > 1 {
                    runner = runner.with_lanes(lanes);
                }
                let (worker, ports, fault) = runner.run(&stop, &published, || clock.now_ms());
                if let Some(fault) = fault {
                    // The daemon stops cleanly (XDP detached) rather than serve with a dead
                    // queue; the summary names the fault.
                    log::error!(target: "worker", "worker {w}: {fault}; stopping");
                    stop.store(true, Ordering::Relaxed);
                    drop(ports);
                    return Err(fault);
                }
                if worker.stats.port_busy > 0 {
                    log::info!(target: "worker",
                        "worker {w}: {} port calls were busy and retried",
                        worker.stats.port_busy
                    );
                }
                Ok(worker)
            })
            .map_err(|source| EngineError::Thread {
                what: format!("worker {w}"),
                source,
            })?;
        handles.push(handle);
    }
    log::info!(target: "worker",
        "{} worker(s) running on {}",
        handles.len(),
        profile.name
    );

    let mac = macs.first().copied().unwrap_or_default();
    let mut device = monitors::ChannelDevice::new(monitor_rx, monitor_tx);
    // Worker 0 sends the monitor core's frames: wake it when they come.
    if let Some(waker) = wakers.first().cloned() {
        device = device.with_notify(Box::new(move || waker.wake()));
    }
    let monitor_thread = crate::monitoring::spawn(
        Arc::clone(&control),
        device,
        mac,
        profile.cores.monitor,
        Arc::clone(&stop),
        clock,
    )
    .map_err(|source| EngineError::Thread {
        what: "the monitor core".into(),
        source,
    })?;
    let server = control::serve(Arc::clone(&control), socket, admins, Arc::clone(&stop));
    let server = match server {
        Ok(s) => Some(s),
        Err(e) => {
            stop.store(true, Ordering::Relaxed);
            log::error!(target: "control", "control socket: {e}");
            None
        }
    };
    if let Some(addr) = options.metrics {
        match crate::metrics::serve(Arc::clone(&control), addr, Arc::clone(&stop)) {
            Ok(bound) => log::info!(target: "metrics", "metrics on http://{bound}/metrics"),
            Err(e) => log::error!(target: "metrics", "{e}"),
        }
    }
    if !options.nitro.is_empty() {
        let api = std::sync::Arc::new(nitro::Nitro::new(control::NitroApi(Arc::clone(&control))));
        if let Err(e) = nitro::http::spawn(api, &options.nitro) {
            stop.store(true, Ordering::Relaxed);
            log::error!(target: "nitro", "{e}");
        }
    }
    // Ports attached, workers and the monitor core running, the configuration applied, the
    // control socket listening: ready.
    let notifier = crate::notify::Notifier::from_env();
    let mut status = control.status_line();
    notifier.ready(&status);
    let mut ticks = 0u32;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50));
        control.apply_resolutions();
        control.watch_primaries();
        control.watch_sessions();
        control.watch_drops();
        ticks = ticks.wrapping_add(1);
        if ticks.is_multiple_of(20) {
            let now = control.status_line();
            if now != status {
                notifier.status(&now);
                status = now;
            }
        }
        if signals.reload.swap(false, Ordering::Relaxed) {
            notifier.reloading();
            let result = control.reload_file();
            notifier.ready(&control.status_line());
            match result {
                Ok(generation) => {
                    log::info!(target: "config", "configuration generation {generation} applied")
                }
                Err(e) => {
                    log::error!(target: "config", "reload refused, the running configuration stays:\n{e}")
                }
            }
        }
    }
    notifier.stopping();
    let mut failed = Vec::new();
    if server.is_some_and(|s| s.join().is_err()) {
        failed.push("the control socket".to_owned());
    }
    if monitor_thread.join().is_err() {
        failed.push("the monitor core".to_owned());
    }
    let mut summary = RunSummary::default();
    for (id, h) in handles.into_iter().enumerate() {
        let w = match h.join() {
            Ok(Ok(w)) => w,
            Ok(Err(fault)) => {
                failed.push(format!("worker {id} ({fault})"));
                continue;
            }
            Err(_) => {
                failed.push(format!("worker {id}"));
                continue;
            }
        };
        let s = w.stats;
        summary.stats.rx += s.rx;
        summary.stats.tx += s.tx;
        summary.stats.flows_created += s.flows_created;
        summary.stats.flows_expired += s.flows_expired;
        summary.stats.flows_flushed += s.flows_flushed;
        summary.stats.handoff_out += s.handoff_out;
        summary.stats.handoff_in += s.handoff_in;
        for (reason, n) in w.drops.nonzero() {
            summary.drops.add(reason, n);
        }
    }
    for e in programs.detach() {
        log::error!(target: "xdp", "{e}");
    }
    if !failed.is_empty() {
        // XDP is detached: the kernel carries the traffic again until a supervisor restarts us.
        return Err(EngineError::Stopped(failed));
    }
    for (id, s) in tables.services.iter().enumerate() {
        if let Some(s) = s {
            summary
                .services
                .push((s.name.clone(), counters.totals(id as u32)));
        }
    }
    Ok(summary)
}

/// The XDP program sends a queue's frames to the engine only if a worker's socket serves
/// that queue; frames the NIC spreads to other queues would reach the kernel instead, and
/// their connections fail. So every receive queue of a port must be the profile's.
fn check_every_queue_served(profile: &HwProfile) -> Result<(), EngineError> {
    for p in &profile.ports {
        let Some(queues) = nic::rx_queues(&p.ifname) else {
            continue;
        };
        let unserved: Vec<u32> = (0..queues).filter(|q| !p.queues.contains(q)).collect();
        if !unserved.is_empty() {
            return Err(EngineError::Profile(format!(
                "port {} has {queues} receive queues and the profile serves {:?}: frames the NIC puts on {unserved:?} would miss the engine; list every queue in `queues` (with workers for them), or lower the NIC's queues (ethtool -L {} combined {})",
                p.ifname,
                p.queues,
                p.ifname,
                p.queues.len()
            )));
        }
    }
    Ok(())
}

/// RSS-aware steering when the profile allows it and every port's NIC hashes TCP and UDP
/// over their 4-tuple with one Toeplitz key and table whose queues are the workers' (the
/// table is rewritten from queue numbers to worker indices); `None`: handoff.
fn choose_steering(profile: &HwProfile) -> Result<Option<Arc<Rss>>, EngineError> {
    if profile.cores.workers.len() < 2 || profile.io.steering == Steering::Handoff {
        return Ok(None);
    }
    let mut found: Option<Rss> = None;
    let mut why = String::new();
    for p in &profile.ports {
        match nic::read_rss(&p.ifname)? {
            None => why = format!("{} has no RSS the engine can compute", p.ifname),
            Some(mut rss) => {
                let worker_of = |q: u32| p.queues.iter().position(|&x| x == q).map(|w| w as u32);
                let mapped: Option<Vec<u32>> =
                    rss.indirection.iter().map(|&q| worker_of(q)).collect();
                match mapped {
                    Some(table) => rss.indirection = table,
                    None => why = format!("{}'s RSS spreads over queues no worker owns", p.ifname),
                }
                match &found {
                    Some(first) if *first != rss => {
                        why = "the ports' RSS configurations differ".into();
                    }
                    _ => found = Some(rss),
                }
            }
        }
    }
    match (why.is_empty(), profile.io.steering) {
        (true, _) => {
            log::info!(target: "steering", "steering: RSS-aware (frames arrive at their flow's worker)");
            Ok(found.map(Arc::new))
        }
        (false, Steering::Rss) => Err(EngineError::Profile(format!(
            "io.steering = \"rss\": {why}; use \"auto\" or \"handoff\""
        ))),
        (false, _) => {
            log::info!(target: "steering", "steering: handoff between workers ({why})");
            Ok(None)
        }
    }
}

/// Stops the whole daemon when the thread holding it panics: a dead worker would leave its
/// queue unserved (traffic silently lost) while the rest looked healthy.
pub(crate) struct StopOnPanic {
    stop: Arc<AtomicBool>,
    what: String,
}

impl StopOnPanic {
    pub(crate) fn new(stop: &Arc<AtomicBool>, what: String) -> Self {
        Self {
            stop: Arc::clone(stop),
            what,
        }
    }
}

impl Drop for StopOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            log::error!(target: "worker", "{} failed; stopping", self.what);
            self.stop.store(true, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_that_panics_stops_the_daemon() {
        let stop = Arc::new(AtomicBool::new(false));
        let calm = Arc::clone(&stop);
        std::thread::spawn(move || {
            let _guard = StopOnPanic::new(&calm, "worker 0".into());
        })
        .join()
        .unwrap();
        assert!(!stop.load(Ordering::Relaxed), "a clean end stops nothing");
        let failing = Arc::clone(&stop);
        let joined = std::thread::spawn(move || {
            let _guard = StopOnPanic::new(&failing, "worker 1".into());
            panic!("a sendto error the socket layer does not expect");
        })
        .join();
        assert!(joined.is_err());
        assert!(stop.load(Ordering::Relaxed));
    }
}
