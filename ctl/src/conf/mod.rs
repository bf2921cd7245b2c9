//! The configuration: every object an operator created, with references kept valid.
//!
//! [`Config::apply`] validates a command against the whole configuration before it changes
//! anything, so a rejected command leaves the configuration exactly as it was.
//! [`save`] writes it back as ns.conf; [`load`] replays such a file through the same parser.

mod apply;
mod groups;
pub mod model;
pub mod save;
pub mod users;

use std::net::{IpAddr, Ipv4Addr};

use indexmap::IndexMap;

use crate::error::{CliError, ErrorKind, Result};
use crate::value::ServerAddress;
pub use model::*;
pub use save::{
    Replayed, SaveError, Unsupported, load, load_with, render, replay, replay_text, save_atomic,
};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub lb_parameter: LbParameterSettings,
    /// `enable ns mode …`, in [`NsMode::ALL`]'s order.
    pub ns_modes: Vec<NsMode>,
    pub ns_ips: IndexMap<Ipv4Addr, NsIp>,
    pub routes: Vec<Route>,
    pub servers: IndexMap<String, Server>,
    /// `add dns nameServer`: asked in turn for domain-based servers.
    pub name_servers: IndexMap<IpAddr, NameServer>,
    /// What the resolver found for domain-based servers, by server name (run-time state:
    /// never saved; see [`Resolution`]).
    pub resolutions: IndexMap<String, Resolution>,
    pub metric_tables: IndexMap<String, MetricTable>,
    pub monitors: IndexMap<String, Monitor>,
    pub services: IndexMap<String, Service>,
    pub service_groups: IndexMap<String, ServiceGroup>,
    pub vservers: IndexMap<String, Vserver>,
    /// `add system user`: who may use the management API, by name.
    pub system_users: IndexMap<String, users::SystemUser>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            lb_parameter: LbParameterSettings::default(),
            ns_modes: Vec::new(),
            ns_ips: IndexMap::new(),
            routes: Vec::new(),
            servers: IndexMap::new(),
            name_servers: IndexMap::new(),
            resolutions: IndexMap::new(),
            metric_tables: IndexMap::new(),
            monitors: builtin_monitors()
                .into_iter()
                .map(|m| (m.name.0.clone(), m))
                .collect(),
            services: IndexMap::new(),
            service_groups: IndexMap::new(),
            vservers: IndexMap::new(),
            system_users: IndexMap::new(),
        }
    }
}

/// Counts printed by `fulcrumd --check-config`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Summary {
    pub vservers: usize,
    pub services: usize,
    pub monitors: usize,
    pub bindings: usize,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} vservers, {} services, {} monitors, {} bindings",
            self.vservers, self.services, self.monitors, self.bindings
        )
    }
}

fn no_such(arg: &str, name: &str) -> CliError {
    CliError::arg_value(ErrorKind::NoSuchResource, arg, name)
}

impl Config {
    /// User-defined objects (built-in monitors are not counted); bindings are service↔vserver
    /// and monitor↔service bindings.
    pub fn summary(&self) -> Summary {
        Summary {
            vservers: self.vservers.len(),
            services: self.services.len(),
            monitors: self.monitors.values().filter(|m| !m.builtin).count(),
            bindings: self
                .vservers
                .values()
                .map(|v| v.bindings.len())
                .sum::<usize>()
                + self
                    .services
                    .values()
                    .map(|s| s.monitors.len())
                    .sum::<usize>(),
        }
    }

    pub fn service(&self, arg: &str, name: &str) -> Result<&Service> {
        self.services.get(name).ok_or_else(|| no_such(arg, name))
    }

    pub fn vserver(&self, arg: &str, name: &str) -> Result<&Vserver> {
        self.vservers.get(name).ok_or_else(|| no_such(arg, name))
    }

    /// Whether the client's own address is the service's source: its `-usip`, else the
    /// `USIP` mode.
    pub fn uses_client_ip(&self, s: &Service) -> bool {
        s.settings
            .usip
            .map_or(self.ns_modes.contains(&NsMode::Usip), |u| u.is_yes())
    }

    /// Whether a service is in service: enabled itself, and its server enabled
    /// (`disable server` takes every service of the server out).
    pub fn in_service(&self, s: &Service) -> bool {
        s.settings.state.is_enabled()
            && self
                .servers
                .get(s.server.as_str())
                .is_none_or(|sv| sv.settings.state.is_enabled())
    }

    /// A monitor by name; a name that matches none exactly finds the one monitor it matches
    /// ignoring case, as NetScaler's configurations spell the built-ins (`-monitorName HTTP`).
    pub fn monitor(&self, arg: &str, name: &str) -> Result<&Monitor> {
        if let Some(m) = self.monitors.get(name) {
            return Ok(m);
        }
        let mut alike = self
            .monitors
            .values()
            .filter(|m| m.name.as_str().eq_ignore_ascii_case(name));
        match (alike.next(), alike.next()) {
            (Some(m), None) => Ok(m),
            _ => Err(no_such(arg, name)),
        }
    }

    /// The configuration's spelling of a monitor name (see [`Self::monitor`]); the name as
    /// given when no monitor has it.
    pub fn monitor_spelling(&self, name: &crate::value::Name) -> crate::value::Name {
        self.monitor("monitorName", name.as_str())
            .map_or_else(|_| name.clone(), |m| m.name.clone())
    }

    pub fn server(&self, arg: &str, name: &str) -> Result<&Server> {
        self.servers.get(name).ok_or_else(|| no_such(arg, name))
    }

    pub fn metric_table(&self, arg: &str, name: &str) -> Result<&MetricTable> {
        self.metric_tables
            .get(name)
            .ok_or_else(|| no_such(arg, name))
    }

    /// The address of a service (through its server): a domain-based server's first
    /// resolved address, `None` while it has none.
    pub fn service_addr(&self, service: &Service) -> Option<IpAddr> {
        if let Some(pinned) = service.pinned {
            return Some(IpAddr::V4(pinned));
        }
        self.server_addr(self.servers.get(service.server.as_str())?)
    }

    /// A server's address: its own, or the first its domain resolved to.
    pub fn server_addr(&self, server: &Server) -> Option<IpAddr> {
        match &server.addr {
            ServerAddress::Ip(ip) => Some(*ip),
            ServerAddress::Domain(_) => self
                .resolution(server)
                .and_then(|r| r.addrs.first())
                .map(|a| IpAddr::V4(*a)),
        }
    }

    /// What the resolver found for a domain-based server's current name.
    pub fn resolution(&self, server: &Server) -> Option<&Resolution> {
        let domain = server.domain()?;
        self.resolutions
            .get(server.name.as_str())
            .filter(|r| r.domain == *domain)
    }

    /// Keeps the resolutions of `earlier` that still apply to this configuration's servers
    /// (same server, same name): for a configuration read again from a file.
    pub fn keep_resolutions(&mut self, earlier: &Config) {
        let kept: IndexMap<String, Resolution> = self
            .servers
            .values()
            .filter_map(|s| Some((s.name.0.clone(), earlier.resolution(s)?.clone())))
            .collect();
        self.resolutions = kept;
        self.sync_scaled_groups();
    }

    /// The monitors that decide a service's state: the bound ones, or the default monitor,
    /// or none with `-healthMonitor NO`.
    pub fn effective_monitors<'a>(
        &'a self,
        service: &'a Service,
    ) -> Vec<(&'a Monitor, MonitorBindSettings)> {
        if !service.settings.health_monitor.is_yes() {
            return Vec::new();
        }
        if service.monitors.is_empty() {
            return self
                .monitors
                .get(service.default_monitor())
                .map(|m| (m, MonitorBindSettings::default()))
                .into_iter()
                .collect();
        }
        service
            .monitors
            .iter()
            .filter_map(|b| {
                self.monitors
                    .get(b.monitor.as_str())
                    .map(|m| (m, b.settings.clone()))
            })
            .collect()
    }
}
