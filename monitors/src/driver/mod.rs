//! The monitor core's driver: the only part that does I/O. It owns the smoltcp interface
//! holding the SNIPs, the sockets, the script processes and the schedule; it is handed the
//! time (`now`, microseconds) and frames, starts the probes that are due, feeds each running
//! probe's state machine ([`crate::probe`]) what arrived, fails the overdue ones, and
//! publishes service state, LRTM response times and CUSTOMLOAD loads.

mod io;
mod resolver;

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::Arc;

use smoltcp::iface::{Config, Interface, SocketSet};
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, IpAddress, IpCidr};

use crate::device::ChannelDevice;
use crate::health::{BindingHealth, MonitorState, service_up};
use crate::load::Load;
use crate::probe::dns::DnsProbe;
use crate::probe::ecv::EcvProbe;
use crate::probe::ftp::FtpProbe;
use crate::probe::http::HttpProbe;
use crate::probe::load::LoadProbe;
use crate::probe::ping::PingProbe;
use crate::probe::tcp::TcpProbe;
use crate::probe::udp_ecv::UdpEcvProbe;
use crate::probe::user::UserProbe;
use crate::probe::{Connection, Failure, Outcome, ProbeKind};
use crate::publish::{ServiceHealth, ServiceId};
use crate::schedule::Scheduler;
use crate::target::Target;

use io::Io;
use resolver::Resolver;

/// Most addresses (SNIPs) the monitor core's interface holds: smoltcp's build-time limit
/// (`iface-max-addr-count-8`, its largest).
pub const MAX_ADDRESSES: usize = 8;

/// More SNIPs than the monitor core's interface can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooManyAddresses {
    pub given: usize,
}

impl std::fmt::Display for TooManyAddresses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} SNIPs: the monitor core holds at most {MAX_ADDRESSES}",
            self.given
        )
    }
}

impl std::error::Error for TooManyAddresses {}

/// A running probe's state machine.
#[derive(Debug)]
pub enum Machine {
    Ping(PingProbe),
    Tcp(TcpProbe),
    Http(HttpProbe),
    Ecv(EcvProbe),
    Ftp(FtpProbe),
    UdpEcv(UdpEcvProbe),
    Dns(DnsProbe),
    Load(LoadProbe),
    User(UserProbe),
}

impl Machine {
    fn on_connection(&mut self, now: u64, conn: &mut dyn Connection) -> Option<Outcome> {
        match self {
            Self::Tcp(p) => p.step(now, conn),
            Self::Http(p) => p.step(now, conn),
            Self::Ecv(p) => p.step(now, conn),
            Self::Ftp(p) => p.step(now, conn),
            _ => None,
        }
    }

    fn on_datagram(&mut self, data: &[u8], now: u64) -> Option<Outcome> {
        match self {
            Self::UdpEcv(p) => p.on_datagram(data, now),
            Self::Dns(p) => Some(p.on_datagram(data, now)),
            Self::Load(p) => p.on_datagram(data, now),
            _ => None,
        }
    }

    fn on_echo_reply(&mut self, seq: u16, now: u64) -> Option<Outcome> {
        match self {
            Self::Ping(p) => p.on_reply(seq, now),
            _ => None,
        }
    }

    fn on_exit(&mut self, success: bool, now: u64) -> Option<Outcome> {
        match self {
            Self::User(p) => Some(p.on_exit(success, now)),
            _ => None,
        }
    }
}

#[derive(Debug)]
struct Running {
    deadline: u64,
    machine: Machine,
    io: Io,
}

#[derive(Debug)]
struct Binding {
    target: Target,
    health: BindingHealth,
    /// LOAD: the load computed from the last reply, `None` while the agent does not answer.
    load: Option<Load>,
    running: Option<Running>,
    last_response_us: Option<u64>,
    last_outcome: Option<Outcome>,
}

impl Binding {
    fn new(target: Target, now_ms: u64) -> Self {
        Self {
            health: BindingHealth::new(target.timers, now_ms),
            target,
            load: None,
            running: None,
            last_response_us: None,
            last_outcome: None,
        }
    }
}

/// The monitor core's state; [`MonitorCore::poll`] is called in its loop.
pub struct MonitorCore {
    iface: Interface,
    device: ChannelDevice,
    sockets: SocketSet<'static>,
    bindings: Vec<Binding>,
    health: Arc<ServiceHealth>,
    next_port: u16,
    ports: std::ops::Range<u16>,
    tls_config: Arc<rustls::ClientConfig>,
    schedule: Scheduler,
    resolver: Resolver,
}

impl std::fmt::Debug for MonitorCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MonitorCore({} bindings)", self.bindings.len())
    }
}

/// The next local port of `ports` (wrapping), advancing `next`.
fn take_port(next: &mut u16, ports: &std::ops::Range<u16>) -> u16 {
    let p = *next;
    *next = if p + 1 >= ports.end {
        ports.start
    } else {
        p + 1
    };
    p
}

/// smoltcp's time from the core's (microseconds).
fn at(us: u64) -> Instant {
    Instant::from_micros(us as i64)
}

impl MonitorCore {
    /// A monitor core answering for `snips` (address, prefix length), probing from local
    /// ports in `ports`.
    pub fn new(
        mac: [u8; 6],
        snips: &[(Ipv4Addr, u8)],
        mut device: ChannelDevice,
        health: Arc<ServiceHealth>,
        ports: std::ops::Range<u16>,
        now: u64,
    ) -> Result<Self, TooManyAddresses> {
        let config = Config::new(EthernetAddress(mac).into());
        let iface = Interface::new(config, &mut device, at(now));
        let mut core = Self {
            iface,
            device,
            sockets: SocketSet::new(Vec::new()),
            bindings: Vec::new(),
            health,
            next_port: ports.start,
            ports,
            tls_config: crate::tls::client_config(),
            schedule: Scheduler::default(),
            resolver: Resolver::new(Arc::default()),
        };
        core.set_addresses(snips)?;
        Ok(core)
    }

    /// The SNIPs (address, prefix length) the interface answers for; more than
    /// [`MAX_ADDRESSES`] are refused and the addresses stay as they were.
    pub fn set_addresses(&mut self, snips: &[(Ipv4Addr, u8)]) -> Result<(), TooManyAddresses> {
        if snips.len() > MAX_ADDRESSES {
            return Err(TooManyAddresses { given: snips.len() });
        }
        let mut full = false;
        self.iface.update_ip_addrs(|addrs| {
            addrs.clear();
            for (ip, prefix) in snips {
                full |= addrs
                    .push(IpCidr::new(IpAddress::Ipv4(*ip), *prefix))
                    .is_err();
            }
        });
        match full {
            true => Err(TooManyAddresses { given: snips.len() }),
            false => Ok(()),
        }
    }

    /// Where the resolver's results go (the control plane takes them from there).
    pub fn with_resolutions(mut self, out: Arc<crate::publish::Resolutions>) -> Self {
        self.resolver = Resolver::new(out);
        self
    }

    /// The domain-based servers to keep resolved and the name servers to ask (a new
    /// configuration generation).
    pub fn set_lookups(
        &mut self,
        lookups: Vec<crate::resolve::Lookup>,
        name_servers: Vec<Ipv4Addr>,
        now: u64,
    ) {
        self.resolver
            .set(lookups, name_servers, &mut self.sockets, now / 1000);
    }

    /// Replaces the probe targets (a new configuration generation); bindings that stay keep
    /// their state and counts.
    pub fn set_targets(&mut self, targets: Vec<Target>, now: u64) {
        let mut old: HashMap<(ServiceId, String), Binding> = self
            .bindings
            .drain(..)
            .map(|b| ((b.target.service, b.target.monitor.clone()), b))
            .collect();
        for target in targets {
            let binding = match old.remove(&(target.service, target.monitor.clone())) {
                Some(mut b) if b.target.addr == target.addr && b.target.port == target.port => {
                    b.health.set_timers(target.timers, now / 1000);
                    b.target = target;
                    b
                }
                _ => Binding::new(target, now / 1000),
            };
            self.bindings.push(binding);
        }
        for (_, b) in old {
            if let Some(mut r) = b.running {
                r.io.abort(&mut self.sockets);
                r.io.release(&mut self.sockets);
            }
        }
        // Indices changed: schedule every binding afresh.
        self.schedule.clear();
        for i in 0..self.bindings.len() {
            self.reschedule(i);
        }
        let services: Vec<ServiceId> = self.bindings.iter().map(|b| b.target.service).collect();
        for s in services {
            self.publish(s);
        }
    }

    /// Sockets the core holds now (probes running and their ICMP error sockets): flat over
    /// time, or probes leak them.
    pub fn sockets_in_use(&self) -> usize {
        self.sockets.iter().count()
    }

    pub fn state_of(&self, service: ServiceId, monitor: &str) -> Option<MonitorState> {
        self.binding(service, monitor).map(|b| b.health.state())
    }

    /// How the binding's last probe ended.
    pub fn last_outcome(&self, service: ServiceId, monitor: &str) -> Option<Outcome> {
        self.binding(service, monitor)?.last_outcome
    }

    fn binding(&self, service: ServiceId, monitor: &str) -> Option<&Binding> {
        self.bindings
            .iter()
            .find(|b| b.target.service == service && b.target.monitor == monitor)
    }

    fn local_port(&mut self) -> u16 {
        take_port(&mut self.next_port, &self.ports)
    }

    /// One round at `now` (microseconds): exchange frames, start the probes that are due,
    /// advance the running ones. The work is proportional to the probes due and running, not
    /// to the bindings.
    pub fn poll(&mut self, now: u64) {
        self.iface
            .poll(at(now), &mut self.device, &mut self.sockets);
        while let Some((when, i)) = self.schedule.pop_due(now / 1000) {
            let Some(b) = self.bindings.get(i) else {
                continue;
            };
            // A stale entry, or a disabled binding (`-monState DISABLED`) waiting for a
            // configuration that enables it (which reschedules everything).
            if b.running.is_some() || b.health.poll_timeout() != when || !b.target.enabled {
                continue;
            }
            self.start(i, now);
        }
        for i in self.schedule.take_running() {
            match self.step(i, now) {
                Some(outcome) => self.finish(i, now, outcome),
                None => self.schedule.start_running(i),
            }
        }
        let (ports, next) = (&self.ports, &mut self.next_port);
        self.resolver
            .poll(now, &mut self.sockets, &mut || take_port(next, ports));
        self.iface
            .poll(at(now), &mut self.device, &mut self.sockets);
        self.health.count_lost_frames(self.device.take_lost());
    }

    /// Waits up to `max` for a frame from the workers, so replies are timed when they
    /// arrive rather than at the next round.
    pub fn wait(&mut self, max: std::time::Duration) {
        self.device.wait(max);
    }

    /// How long the core may sleep at `now` (µs) before its next round: a millisecond while
    /// probes run (their timers), otherwise until the next probe is due, at most `max`. A
    /// frame from the workers ends the wait early.
    pub fn idle_for(&self, now: u64, max: std::time::Duration) -> std::time::Duration {
        let ms = std::time::Duration::from_millis(1);
        if self.schedule.any_running() || self.resolver.busy() {
            return ms;
        }
        let next_due = match (self.schedule.next_due(), self.resolver.next_due_ms()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let until_due = next_due.map_or(max, |due_ms| {
            std::time::Duration::from_micros((due_ms * 1000).saturating_sub(now))
        });
        until_due.clamp(ms, max.max(ms))
    }

    /// Running again when a probe runs, otherwise idle until its next probe is due.
    fn reschedule(&mut self, i: usize) {
        let b = &self.bindings[i];
        if b.running.is_some() {
            self.schedule.start_running(i);
        } else {
            self.schedule.due_at(b.health.poll_timeout(), i);
        }
    }

    /// Starts binding `i`'s probe: its state machine and the I/O it runs over. A probe that
    /// cannot start fails at once.
    fn start(&mut self, i: usize, now: u64) {
        let local = self.local_port();
        let b = &self.bindings[i];
        let (addr, port, secure) = (b.target.addr, b.target.port, b.target.secure);
        let to = (addr, port);
        let deadline = now + b.health.resp_timeout() * 1000;
        let kind = b.target.kind.clone();
        let started: Result<(Machine, Io), Failure> = match &kind {
            ProbeKind::Ping => Io::send_echo(&mut self.sockets, addr, local)
                .map(|io| (Machine::Ping(PingProbe::new(local, now)), io)),
            ProbeKind::Tcp => self
                .connect(to, local, b.target.secure)
                .map(|io| (Machine::Tcp(TcpProbe::new(now)), io)),
            ProbeKind::Http {
                request,
                codes,
                headers,
            } => {
                let p = HttpProbe::new(request, codes.clone(), headers, addr);
                self.connect(to, local, secure)
                    .map(|io| (Machine::Http(p), io))
            }
            ProbeKind::Ecv {
                send,
                recv,
                http,
                headers,
            } => {
                let p = EcvProbe::new(send, recv, *http, headers, addr);
                self.connect(to, local, secure)
                    .map(|io| (Machine::Ecv(p), io))
            }
            ProbeKind::Ftp { user, password } => self
                .connect(to, local, false)
                .map(|io| (Machine::Ftp(FtpProbe::new(user, password)), io)),
            ProbeKind::UdpEcv { send, recv } => {
                let p = UdpEcvProbe::new(send, recv, now);
                Io::send_datagram(&mut self.sockets, to, local, p.request())
                    .map(|io| (Machine::UdpEcv(p), io))
            }
            ProbeKind::Dns { name, aaaa, expect } => {
                let p = DnsProbe::new(local, name, *aaaa, expect, now);
                p.request()
                    .ok_or(Failure::NotStarted)
                    .and_then(|q| Io::send_datagram(&mut self.sockets, to, local, &q))
                    .map(|io| (Machine::Dns(p), io))
            }
            ProbeKind::Load {
                v1,
                community,
                metrics,
                ..
            } => {
                let p = LoadProbe::new(i32::from(local), *v1, community, metrics, now);
                p.request()
                    .ok_or(Failure::NotStarted)
                    .and_then(|q| Io::send_datagram(&mut self.sockets, to, local, &q))
                    .map(|io| (Machine::Load(p), io))
            }
            ProbeKind::User { script, args } => {
                let p = UserProbe::new(script, args, now);
                p.command(addr, port)
                    .spawn()
                    .map(|child| (Machine::User(p), Io::Process(child)))
                    .map_err(|_| Failure::NotStarted)
            }
        };
        match started {
            Ok((machine, io)) => {
                self.bindings[i].running = Some(Running {
                    deadline,
                    machine,
                    io,
                });
                self.schedule.start_running(i);
            }
            Err(failure) => self.finish(i, now, Outcome::Failed(failure)),
        }
    }

    fn connect(&mut self, to: (Ipv4Addr, u16), local: u16, secure: bool) -> Result<Io, Failure> {
        Io::connect(&mut self.iface, &mut self.sockets, to, local, secure)
    }

    /// Binding `i`'s outcome, once its probe has one (a timeout included).
    fn step(&mut self, i: usize, now: u64) -> Option<Outcome> {
        let b = &mut self.bindings[i];
        let addr = b.target.addr;
        let r = b.running.as_mut()?;
        let outcome = r.io.step(
            &mut r.machine,
            &mut self.sockets,
            &self.tls_config,
            addr,
            now,
        );
        if let (Machine::Load(p), Some(_)) = (&r.machine, outcome) {
            b.load = p.load;
        }
        // No answer: a LOAD binding's last load stays until the monitor goes DOWN.
        outcome.or_else(|| (now >= r.deadline).then_some(Outcome::Failed(Failure::Timeout)))
    }

    /// Ends binding `i`'s probe with `outcome` (the caller has taken it off the running
    /// list): counts it, updates the monitor's state, schedules the next probe, publishes.
    fn finish(&mut self, i: usize, now: u64, outcome: Outcome) {
        let b = &mut self.bindings[i];
        if let Some(mut r) = b.running.take() {
            r.io.abort(&mut self.sockets);
            // Let the RST leave before the socket goes away.
            self.iface
                .poll(at(now), &mut self.device, &mut self.sockets);
            r.io.release(&mut self.sockets);
        }
        let b = &mut self.bindings[i];
        let passed = outcome.is_passed();
        self.health.count_probe(passed);
        if let Outcome::Passed { response_us } = outcome {
            b.last_response_us = Some(response_us.max(1));
        }
        b.last_outcome = Some(outcome);
        let changed = b.health.record(now / 1000, passed).is_some();
        // A LOAD monitor that went DOWN is not active any more: no load for its service.
        if b.health.state() == MonitorState::Down {
            b.load = None;
        }
        let service = b.target.service;
        self.schedule.due_at(b.health.poll_timeout(), i);
        if changed || passed {
            let was_up = self.health.is_up(service);
            self.publish(service);
            let up = self.health.is_up(service);
            if up != was_up {
                let t = &self.bindings[i].target;
                let why = match outcome {
                    Outcome::Passed { .. } => "probe passed".to_owned(),
                    Outcome::Failed(f) => f.to_string(),
                };
                log::info!(
                    target: "service",
                    "service {} {}: monitor {} ({}:{}): {why}",
                    t.service_name,
                    if up { "UP" } else { "DOWN" },
                    t.monitor,
                    t.addr,
                    t.port
                );
            }
        }
    }

    /// Publishes a service's state (from all its bindings) and LRTM response time.
    fn publish(&self, service: ServiceId) {
        let mine: Vec<&Binding> = self
            .bindings
            .iter()
            .filter(|b| b.target.service == service)
            .collect();
        let Some(first) = mine.first() else { return };
        // LOAD bindings feed the load only, never the state.
        let states: Vec<(u32, bool, MonitorState)> = mine
            .iter()
            .filter(|b| !matches!(b.target.kind, ProbeKind::Load { .. }))
            .map(|b| (b.target.weight, b.target.enabled, b.health.state()))
            .collect();
        let up = service_up(&states, first.target.mon_threshold);
        self.health.set_up(service, up);
        // DOWN for downStateFlush only once every enabled monitor has decided: a monitor just
        // bound (UNKNOWN) keeps new flows away but does not flush the established ones.
        let decided = states
            .iter()
            .all(|(_, enabled, s)| !enabled || *s != MonitorState::Unknown);
        self.health.set_down(service, !up && decided);
        if let Some(b) = mine
            .iter()
            .find(|b| matches!(b.target.kind, ProbeKind::Load { .. }))
        {
            let passive = matches!(b.target.kind, ProbeKind::Load { passive: true, .. });
            self.health
                .set_load(service, b.load.map(|l| l.milli_percent));
            self.health.set_load_excluded(
                service,
                b.load.is_some_and(|l| !crate::load::eligible(&l, passive)),
            );
        }
        let samples: Vec<Option<u64>> = mine
            .iter()
            .filter(|b| b.target.lrtm)
            .map(|b| b.last_response_us)
            .collect();
        self.health
            .set_response_time(service, crate::load::mean_response(&samples));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_scripts_decide_by_exit_status_and_are_killed_at_the_timeout() {
        use super::MonitorCore;
        use crate::health::{MonitorState, Timers};
        use crate::publish::ServiceHealth;
        use crate::{ChannelDevice, ProbeKind, Target};
        use std::sync::Arc;
        let (_in_tx, rx) = crossbeam_channel::bounded(8);
        let (tx, _out_rx) = crossbeam_channel::bounded(8);
        let health = Arc::new(ServiceHealth::new(4));
        let mut core = MonitorCore::new(
            [2, 0, 0, 0, 0, 1],
            &[],
            ChannelDevice::new(rx, tx),
            Arc::clone(&health),
            1024..2000,
            0,
        )
        .unwrap();
        let timers = Timers {
            interval: 1000,
            resp_timeout: 300,
            down_time: 1000,
            retries: 1,
            failure_retries: 0,
            success_retries: 1,
            reverse: false,
        };
        let target = |service, script: &str, args: &[&str]| Target {
            service,
            service_name: format!("s{service}"),
            monitor: "user".into(),
            addr: "198.18.0.11".parse().unwrap(),
            port: 80,
            kind: ProbeKind::User {
                script: script.into(),
                args: args.iter().map(|a| a.to_string()).collect(),
            },
            timers,
            weight: 1,
            enabled: true,
            lrtm: false,
            mon_threshold: 0,
            secure: false,
        };
        core.set_targets(
            vec![
                target(0, "/bin/true", &[]),
                target(1, "/bin/false", &[]),
                target(2, "/bin/sleep", &["5"]),
            ],
            0,
        );
        // Real processes, virtual time: poll until the two quick scripts exited.
        let mut now = 0;
        for _ in 0..200 {
            core.poll(now);
            if core.state_of(0, "user") != Some(MonitorState::Unknown)
                && core.state_of(1, "user") != Some(MonitorState::Unknown)
            {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(core.state_of(0, "user"), Some(MonitorState::Up));
        assert_eq!(core.state_of(1, "user"), Some(MonitorState::Down));
        assert!(health.is_up(0) && !health.is_up(1));
        now += 400_000; // past the sleeping script's timeout (µs)
        core.poll(now);
        assert_eq!(
            core.state_of(2, "user"),
            Some(MonitorState::Down),
            "killed at the response timeout"
        );
    }

    #[test]
    fn more_addresses_than_the_interface_holds_are_refused() {
        let (_in_tx, rx) = crossbeam_channel::bounded(1);
        let (tx, _out_rx) = crossbeam_channel::bounded(1);
        let health = Arc::new(ServiceHealth::new(1));
        let snips: Vec<(Ipv4Addr, u8)> = (0..9u8)
            .map(|i| (Ipv4Addr::new(198, 18, i, 2), 24))
            .collect();
        let device = || ChannelDevice::new(rx.clone(), tx.clone());
        let refused =
            MonitorCore::new([2; 6], &snips, device(), Arc::clone(&health), 1024..2000, 0);
        assert_eq!(refused.err(), Some(TooManyAddresses { given: 9 }));
        let mut core =
            MonitorCore::new([2; 6], &snips[..8], device(), health, 1024..2000, 0).unwrap();
        assert_eq!(core.iface.ip_addrs().len(), 8, "every SNIP is held");
        assert!(core.set_addresses(&snips).is_err());
        assert_eq!(
            core.iface.ip_addrs().len(),
            8,
            "a refused change changes nothing"
        );
        core.set_addresses(&snips[..3]).unwrap();
        assert_eq!(core.iface.ip_addrs().len(), 3);
    }
}
