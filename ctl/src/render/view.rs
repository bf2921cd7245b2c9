//! One view value per object: what `show` and `stat` print, gathered once from the
//! configuration and the running engine (each service's runtime state is asked for once),
//! and rendered as text (`text`) or JSON (`json`).

use crate::conf::Config;
use crate::conf::model::*;
use crate::value::Name;

use super::{Runtime, ServiceStats, VserverStats};

/// A service (or a group's member) with its live state.
#[derive(Debug)]
pub struct ServiceView<'a> {
    pub service: &'a Service,
    /// `ip:port` (`?` for an address that cannot be found).
    pub endpoint: String,
    pub addr: Option<std::net::IpAddr>,
    /// Enabled, and its server too.
    pub in_service: bool,
    /// UP, DOWN, OUT OF SERVICE or GOING OUT OF SERVICE.
    pub state: &'static str,
    pub stats: ServiceStats,
    pub monitors: Vec<MonitorRow<'a>>,
}

/// A monitor deciding a service's state, as `show service` lists it.
#[derive(Debug)]
pub struct MonitorRow<'a> {
    pub name: &'a Name,
    /// UP, DOWN or DISABLED.
    pub state: &'static str,
    pub weight: u64,
    pub passive: bool,
}

impl<'a> ServiceView<'a> {
    pub fn new(config: &'a Config, s: &'a Service, rt: &dyn Runtime) -> Self {
        let stats = rt.service(s.name.as_str());
        let effective = config.effective_monitors(s);
        let in_service = config.in_service(s);
        let state = if !in_service {
            if stats.going_out.is_some() {
                "GOING OUT OF SERVICE"
            } else {
                "OUT OF SERVICE"
            }
        } else if stats.up || !s.settings.health_monitor.is_yes() || effective.is_empty() {
            "UP"
        } else {
            "DOWN"
        };
        let monitors = effective
            .into_iter()
            .map(|(m, b)| MonitorRow {
                name: &m.name,
                state: match (b.mon_state.is_enabled(), stats.up) {
                    (false, _) => "DISABLED",
                    (true, true) => "UP",
                    (true, false) => "DOWN",
                },
                weight: b.weight.get(),
                passive: b.passive,
            })
            .collect();
        let addr = config.service_addr(s);
        let ip = addr.map_or_else(|| "?".into(), |a| a.to_string());
        Self {
            service: s,
            endpoint: format!("{ip}:{}", s.port),
            addr,
            in_service,
            state,
            stats,
            monitors,
        }
    }

    pub fn is_up(&self) -> bool {
        self.state == "UP"
    }

    /// The state with its drain's details while it goes out of service.
    pub fn long_state(&self) -> String {
        match self.stats.going_out {
            Some(going) if !self.in_service => {
                format!("GOING OUT OF SERVICE ({going})")
            }
            _ => self.state.to_owned(),
        }
    }
}

/// A vserver with its bound services (groups as their members) and live state.
#[derive(Debug)]
pub struct VserverView<'a> {
    pub vserver: &'a Vserver,
    pub ip: String,
    pub port: String,
    pub state: &'static str,
    pub stats: VserverStats,
    /// Bound services in bind order, with the weight each is balanced with.
    pub members: Vec<(ServiceView<'a>, u32)>,
}

impl<'a> VserverView<'a> {
    pub fn new(config: &'a Config, v: &'a Vserver, rt: &dyn Runtime) -> Self {
        let (ip, port) = vip(v);
        let members: Vec<(ServiceView, u32)> = config
            .bound_services(v)
            .into_iter()
            .map(|(s, w)| (ServiceView::new(config, s, rt), w))
            .collect();
        let state = if !v.settings.state.is_enabled() {
            "OUT OF SERVICE"
        } else if members.iter().any(|(s, _)| s.is_up()) {
            "UP"
        } else {
            "DOWN"
        };
        Self {
            vserver: v,
            ip,
            port,
            state,
            stats: rt.vserver(v.name.as_str()),
            members,
        }
    }

    /// The sum of one counter over the bound services.
    pub fn sum(&self, f: impl Fn(&ServiceStats) -> u64) -> u64 {
        self.members.iter().map(|(s, _)| f(&s.stats)).sum()
    }
}

/// A vserver's address and port as printed (`0.0.0.0`, `0` when it has none).
pub fn vip(v: &Vserver) -> (String, String) {
    match v.vip {
        Some((ip, port)) => (ip.to_string(), port.to_string()),
        None => ("0.0.0.0".into(), "0".into()),
    }
}

/// A service group with its members' views.
#[derive(Debug)]
pub struct GroupView<'a> {
    pub group: &'a ServiceGroup,
    pub members: Vec<(&'a GroupMember, ServiceView<'a>)>,
}

impl<'a> GroupView<'a> {
    pub fn new(config: &'a Config, g: &'a ServiceGroup, rt: &dyn Runtime) -> Self {
        let members = config
            .group_members(g)
            .into_iter()
            .map(|(m, s)| (m, ServiceView::new(config, s, rt)))
            .collect();
        Self { group: g, members }
    }

    pub fn any_up(&self) -> bool {
        self.members.iter().any(|(_, s)| s.is_up())
    }
}
