//! Applying a command to the configuration. Each handler checks everything first and changes
//! the configuration only once the command is known to be valid.

use std::net::IpAddr;

use indexmap::IndexMap;

use super::Config;
use super::model::*;
use crate::command::Command;
use crate::error::{CliError, ErrorKind, Result};
use crate::settings::Settings;
use crate::value::{EnabledDisabled, Name, Port};

fn exists(arg: &str, name: &str) -> CliError {
    CliError::arg_value(ErrorKind::ResourceAlreadyExists, arg, name)
}

/// Renames the key `old` to `new` in place, keeping its position (creation order is the order
/// `save` writes).
fn rename_key<'m, V>(map: &'m mut IndexMap<String, V>, old: &str, new: &str) -> Option<&'m mut V> {
    let (index, _, value) = map.shift_remove_full(old)?;
    map.shift_insert(index, new.to_owned(), value);
    map.get_mut(new)
}

pub(super) fn check_port(service_type: ServiceType, port: Port) -> Result<()> {
    if port == Port::Any
        && service_type.transport() == Transport::Tcp
        && service_type != ServiceType::Tcp
    {
        return Err(
            CliError::arg_value(ErrorKind::InvalidArgumentValue, "port", "*")
                .with_detail("Port * needs service type ANY, TCP or UDP"),
        );
    }
    Ok(())
}

/// The data plane speaks IPv4 only: an IPv6 address would be accepted and never served, so
/// it is refused where it enters (VIPs, servers, monitor destinations).
pub(super) fn require_ipv4(arg: &str, ip: IpAddr) -> Result<()> {
    if ip.is_ipv6() {
        return Err(
            CliError::arg_value(ErrorKind::NotSupported, arg, ip.to_string())
                .with_detail("IPv6 addresses are not supported yet"),
        );
    }
    Ok(())
}

/// `bind service|serviceGroup <name> -monitorName <monitor>`: a monitor binds once.
pub(super) fn bind_monitor(
    bindings: &mut Vec<MonitorBinding>,
    monitor: &Name,
    settings: &[MonitorBindSetting],
) -> Result<()> {
    if bindings.iter().any(|b| b.monitor == *monitor) {
        return Err(CliError::arg_value(
            ErrorKind::ResourceAlreadyBound,
            "monitorName",
            monitor.as_str(),
        ));
    }
    bindings.push(MonitorBinding {
        monitor: monitor.clone(),
        settings: MonitorBindSettings::default().with(settings),
    });
    Ok(())
}

/// `enable/disable lb monitor <service|group> [<monitor>]`: the state of one binding, or of
/// all of them; an unbound monitor is an error and changes nothing.
pub(super) fn set_monitor_states(
    bindings: &mut [MonitorBinding],
    monitor: Option<&Name>,
    enable: bool,
) -> Result<()> {
    if let Some(mon) = monitor
        && !bindings.iter().any(|b| b.monitor == *mon)
    {
        return Err(CliError::arg_value(
            ErrorKind::ResourceNotBound,
            "monitorName",
            mon.as_str(),
        ));
    }
    let state = if enable {
        EnabledDisabled::Enabled
    } else {
        EnabledDisabled::Disabled
    };
    for b in bindings
        .iter_mut()
        .filter(|b| monitor.is_none_or(|m| b.monitor == *m))
    {
        b.settings.mon_state = state;
    }
    Ok(())
}

fn transports_overlap(a: ServiceType, b: ServiceType) -> bool {
    let (a, b) = (a.transport(), b.transport());
    a == b || a == Transport::Any || b == Transport::Any
}

impl Config {
    /// Applies one configuration command. On error nothing has changed.
    pub fn apply(&mut self, cmd: &Command) -> Result<()> {
        match cmd {
            Command::AddNsIp {
                addr,
                netmask,
                settings,
            } => {
                if self.ns_ips.contains_key(addr) {
                    return Err(exists("IPAddress", &addr.to_string()));
                }
                let ip = NsIp {
                    addr: *addr,
                    netmask: *netmask,
                    settings: NsIpSettings::default().with(settings),
                };
                self.ns_ips.insert(*addr, ip);
            }
            Command::RmNsIp { addr } => {
                let ip = self.ns_ips.get(addr).ok_or_else(|| {
                    CliError::arg_value(ErrorKind::NoSuchResource, "IPAddress", addr.to_string())
                })?;
                let still_reached = |gw| {
                    self.ns_ips.values().any(|o| {
                        o.addr != ip.addr && o.settings.kind == IpType::Snip && o.contains(gw)
                    })
                };
                if let Some(r) = self.routes.iter().find(|r| {
                    ip.settings.kind == IpType::Snip
                        && ip.contains(r.gateway)
                        && !still_reached(r.gateway)
                }) {
                    return Err(CliError::arg_value(
                        ErrorKind::ResourceInUse,
                        "IPAddress",
                        addr.to_string(),
                    )
                    .with_detail(format!(
                        "The route to {} uses this address's subnet",
                        r.network
                    )));
                }
                self.ns_ips.shift_remove(addr);
            }
            Command::AddRoute {
                network,
                netmask,
                gateway,
            } => {
                if u32::from(*network) & !netmask.bits() != 0 {
                    return Err(CliError::arg_value(
                        ErrorKind::InvalidArgumentValue,
                        "network",
                        network.to_string(),
                    )
                    .with_detail("Network address has host bits set"));
                }
                let route = Route {
                    network: *network,
                    netmask: *netmask,
                    gateway: *gateway,
                };
                if self.routes.contains(&route) {
                    return Err(exists("network", &network.to_string()));
                }
                if !self
                    .ns_ips
                    .values()
                    .any(|ip| ip.settings.kind == IpType::Snip && ip.contains(*gateway))
                {
                    return Err(CliError::arg_value(
                        ErrorKind::InvalidArgumentValue,
                        "gateway",
                        gateway.to_string(),
                    )
                    .with_detail("Gateway is not in the subnet of any SNIP"));
                }
                self.routes.push(route);
            }
            Command::RmRoute {
                network,
                netmask,
                gateway,
            } => {
                let route = Route {
                    network: *network,
                    netmask: *netmask,
                    gateway: *gateway,
                };
                let i = self
                    .routes
                    .iter()
                    .position(|r| *r == route)
                    .ok_or_else(|| {
                        CliError::arg_value(
                            ErrorKind::NoSuchResource,
                            "network",
                            network.to_string(),
                        )
                    })?;
                self.routes.remove(i);
            }

            Command::AddServer {
                name,
                addr,
                settings,
            } => {
                if self.servers.contains_key(name.as_str()) {
                    return Err(exists("name", name.as_str()));
                }
                require_ipv4("IPAddress", *addr)?;
                let server = Server {
                    name: name.clone(),
                    addr: *addr,
                    settings: ServerSettings::default().with(settings),
                };
                self.servers.insert(name.0.clone(), server);
            }
            Command::RmServer { name } => {
                self.server("name", name.as_str())?;
                if let Some(s) = self.services.values().find(|s| s.server == *name) {
                    return Err(CliError::arg_value(
                        ErrorKind::ResourceInUse,
                        "name",
                        name.as_str(),
                    )
                    .with_detail(match &s.group {
                        Some(g) => format!("Server is used by service group {g}"),
                        None => format!("Server is used by service {}", s.name),
                    }));
                }
                self.servers.shift_remove(name.as_str());
            }
            Command::RenameServer { name, new_name } => {
                self.server("name", name.as_str())?;
                if self.servers.contains_key(new_name.as_str()) {
                    return Err(exists("newName", new_name.as_str()));
                }
                if let Some(s) = rename_key(&mut self.servers, name.as_str(), new_name.as_str()) {
                    s.name = new_name.clone();
                }
                for svc in self.services.values_mut().filter(|s| s.server == *name) {
                    svc.server = new_name.clone();
                }
                self.rename_member_server(name, new_name);
            }
            Command::EnableServer { name } | Command::DisableServer { name } => {
                self.server("name", name.as_str())?;
                let state = if matches!(cmd, Command::EnableServer { .. }) {
                    EnabledDisabled::Enabled
                } else {
                    EnabledDisabled::Disabled
                };
                if let Some(s) = self.servers.get_mut(name.as_str()) {
                    s.settings.state = state;
                }
            }

            Command::AddService {
                name,
                server,
                service_type,
                port,
                settings,
            } => {
                if self.services.contains_key(name.as_str())
                    || self.service_groups.contains_key(name.as_str())
                {
                    return Err(exists("name", name.as_str()));
                }
                if !name
                    .as_str()
                    .starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                {
                    return Err(CliError::arg_value(
                        ErrorKind::InvalidArgumentValue,
                        "name",
                        name.as_str(),
                    )
                    .with_detail("Service names must start with a letter or _"));
                }
                check_port(*service_type, *port)?;
                // A bare IP creates (or reuses) a server, as NetScaler does.
                let (server_name, new_server) = self.server_for(server)?;
                let service = Service {
                    name: name.clone(),
                    server: server_name,
                    service_type: *service_type,
                    port: *port,
                    settings: ServiceSettings::default().with(settings),
                    monitors: Vec::new(),
                    group: None,
                };
                if let Some(s) = new_server {
                    self.servers.insert(s.name.0.clone(), s);
                }
                self.services.insert(name.0.clone(), service);
            }
            Command::SetService { name, settings } => {
                let svc = self.service("name", name.as_str())?;
                let new = svc.settings.clone().with(settings);
                self.services[name.as_str()].settings = new;
            }
            Command::UnsetService { name, keys } => {
                self.service("name", name.as_str())?;
                let svc = &mut self.services[name.as_str()];
                for k in keys {
                    svc.settings.reset(*k);
                }
            }
            Command::RmService { name } => {
                self.service("name", name.as_str())?;
                for vs in self.vservers.values_mut() {
                    vs.bindings.retain(|b| b.service != *name);
                }
                self.services.shift_remove(name.as_str());
            }
            Command::RenameService { name, new_name } => {
                self.service("name", name.as_str())?;
                if self.services.contains_key(new_name.as_str())
                    || self.service_groups.contains_key(new_name.as_str())
                {
                    return Err(exists("newName", new_name.as_str()));
                }
                if let Some(s) = rename_key(&mut self.services, name.as_str(), new_name.as_str()) {
                    s.name = new_name.clone();
                }
                for b in self
                    .vservers
                    .values_mut()
                    .flat_map(|v| v.bindings.iter_mut())
                    .filter(|b| b.service == *name)
                {
                    b.service = new_name.clone();
                }
            }
            Command::EnableService { name } | Command::DisableService { name, .. } => {
                self.service("name", name.as_str())?;
                let state = if matches!(cmd, Command::EnableService { .. }) {
                    EnabledDisabled::Enabled
                } else {
                    EnabledDisabled::Disabled
                };
                self.services[name.as_str()].settings.state = state;
            }
            Command::BindServiceMonitor {
                service,
                monitor,
                settings,
            } => {
                self.service("name", service.as_str())?;
                self.monitor("monitorName", monitor.as_str())?;
                let bindings = &mut self.services[service.as_str()].monitors;
                bind_monitor(bindings, monitor, settings)?;
            }
            Command::UnbindServiceMonitor { service, monitor } => {
                let svc = self.service("name", service.as_str())?;
                match svc.monitors.iter().position(|b| b.monitor == *monitor) {
                    Some(i) => {
                        self.services[service.as_str()].monitors.remove(i);
                    }
                    None if svc.monitors.is_empty()
                        && monitor.as_str() == svc.default_monitor() =>
                    {
                        return Err(CliError::new(ErrorKind::DefaultMonitorUnbind));
                    }
                    None => {
                        return Err(CliError::arg_value(
                            ErrorKind::ResourceNotBound,
                            "monitorName",
                            monitor.as_str(),
                        ));
                    }
                }
            }

            Command::AddLbVserver {
                name,
                service_type,
                vip,
                settings,
            } => {
                if self.vservers.contains_key(name.as_str()) {
                    return Err(exists("name", name.as_str()));
                }
                if let Some((ip, port)) = vip {
                    require_ipv4("IPAddress", *ip)?;
                    check_port(*service_type, *port)?;
                    self.check_vip_free(None, *service_type, *ip, *port)?;
                }
                let vs = Vserver {
                    name: name.clone(),
                    service_type: *service_type,
                    vip: *vip,
                    settings: VserverSettings::default().with(settings),
                    bindings: Vec::new(),
                };
                self.vservers.insert(name.0.clone(), vs);
            }
            Command::SetLbVserver { name, settings } => {
                let vs = self.vserver("name", name.as_str())?;
                let new = vs.settings.clone().with(settings);
                self.vservers[name.as_str()].settings = new;
            }
            Command::UnsetLbVserver { name, keys } => {
                self.vserver("name", name.as_str())?;
                let vs = &mut self.vservers[name.as_str()];
                for k in keys {
                    vs.settings.reset(*k);
                }
            }
            Command::RmLbVserver { name } => {
                self.vserver("name", name.as_str())?;
                self.vservers.shift_remove(name.as_str());
            }
            Command::RenameLbVserver { name, new_name } => {
                self.vserver("name", name.as_str())?;
                if self.vservers.contains_key(new_name.as_str()) {
                    return Err(exists("newName", new_name.as_str()));
                }
                if let Some(v) = rename_key(&mut self.vservers, name.as_str(), new_name.as_str()) {
                    v.name = new_name.clone();
                }
            }
            Command::EnableLbVserver { name } | Command::DisableLbVserver { name } => {
                self.vserver("name", name.as_str())?;
                let state = if matches!(cmd, Command::EnableLbVserver { .. }) {
                    EnabledDisabled::Enabled
                } else {
                    EnabledDisabled::Disabled
                };
                self.vservers[name.as_str()].settings.state = state;
            }
            Command::BindLbVserver {
                vserver,
                service,
                settings,
            } => {
                let vs = self.vserver("name", vserver.as_str())?;
                let service_type = match self.service_groups.get(service.as_str()) {
                    // A group's members carry their own weights (NetScaler refuses one here).
                    Some(_) if !settings.is_empty() => {
                        return Err(CliError::arg_value(
                            ErrorKind::InvalidArgumentValue,
                            "weight",
                            service.as_str(),
                        )
                        .with_detail(
                            "Argument pre-requisite missing: set weights on the service group's members",
                        ));
                    }
                    Some(g) => g.service_type,
                    None => self.service("serviceName", service.as_str())?.service_type,
                };
                if vs.bindings.iter().any(|b| b.service == *service) {
                    return Err(CliError::arg_value(
                        ErrorKind::ResourceAlreadyBound,
                        "serviceName",
                        service.as_str(),
                    ));
                }
                if vs.service_type.transport() != service_type.transport() {
                    return Err(CliError::arg_value(
                        ErrorKind::TypeMismatch,
                        "serviceName",
                        service.as_str(),
                    )
                    .with_detail(format!(
                        "Service type {} cannot be bound to a {} vserver",
                        service_type, vs.service_type
                    )));
                }
                let binding = ServiceBinding {
                    service: service.clone(),
                    settings: VsBindSettings::default().with(settings),
                };
                self.vservers[vserver.as_str()].bindings.push(binding);
            }
            Command::UnbindLbVserver { vserver, service } => {
                let vs = self.vserver("name", vserver.as_str())?;
                let i = vs
                    .bindings
                    .iter()
                    .position(|b| b.service == *service)
                    .ok_or_else(|| {
                        CliError::arg_value(
                            ErrorKind::ResourceNotBound,
                            "serviceName",
                            service.as_str(),
                        )
                    })?;
                self.vservers[vserver.as_str()].bindings.remove(i);
            }

            Command::AddLbMonitor {
                name,
                monitor_type,
                settings,
            } => {
                if self.monitors.contains_key(name.as_str()) {
                    return Err(exists("monitorName", name.as_str()));
                }
                let monitor = Monitor {
                    name: name.clone(),
                    monitor_type: *monitor_type,
                    settings: MonitorSettings::default().with(settings),
                    metrics: Vec::new(),
                    builtin: false,
                };
                self.check_monitor(&monitor, settings)?;
                self.monitors.insert(name.0.clone(), monitor);
            }
            Command::SetLbMonitor {
                name,
                monitor_type,
                settings,
            } => {
                let mut monitor = self.typed_monitor(name, Some(*monitor_type))?.clone();
                monitor.settings = monitor.settings.clone().with(settings);
                self.check_monitor(&monitor, settings)?;
                self.monitors[name.as_str()] = monitor;
            }
            Command::UnsetLbMonitor {
                name,
                monitor_type,
                keys,
            } => {
                let mut monitor = self.typed_monitor(name, Some(*monitor_type))?.clone();
                for k in keys {
                    monitor.settings.reset(*k);
                }
                self.check_monitor(&monitor, &[])?;
                self.monitors[name.as_str()] = monitor;
            }
            Command::RmLbMonitor { name, monitor_type } => {
                let monitor = self.typed_monitor(name, *monitor_type)?;
                if monitor.builtin {
                    return Err(CliError::arg_value(
                        ErrorKind::BuiltinMonitor,
                        "monitorName",
                        name.as_str(),
                    ));
                }
                // A group holds its monitors even while it has no members.
                if let Some(g) = self
                    .service_groups
                    .values()
                    .find(|g| g.monitors.iter().any(|b| b.monitor == *name))
                {
                    return Err(CliError::arg_value(
                        ErrorKind::ResourceInUse,
                        "monitorName",
                        name.as_str(),
                    )
                    .with_detail(format!("Monitor is bound to service group {}", g.name)));
                }
                if let Some(s) = self
                    .services
                    .values()
                    .find(|s| s.monitors.iter().any(|b| b.monitor == *name))
                {
                    return Err(CliError::arg_value(
                        ErrorKind::ResourceInUse,
                        "monitorName",
                        name.as_str(),
                    )
                    .with_detail(format!("Monitor is bound to service {}", s.name)));
                }
                self.monitors.shift_remove(name.as_str());
            }
            Command::RenameLbMonitor { name, new_name } => {
                if self.monitor("name", name.as_str())?.builtin {
                    return Err(CliError::arg_value(
                        ErrorKind::BuiltinMonitor,
                        "name",
                        name.as_str(),
                    ));
                }
                if self.monitors.contains_key(new_name.as_str()) {
                    return Err(exists("newName", new_name.as_str()));
                }
                if let Some(m) = rename_key(&mut self.monitors, name.as_str(), new_name.as_str()) {
                    m.name = new_name.clone();
                }
                let groups = self
                    .service_groups
                    .values_mut()
                    .flat_map(|g| g.monitors.iter_mut());
                for b in self
                    .services
                    .values_mut()
                    .flat_map(|s| s.monitors.iter_mut())
                    .chain(groups)
                    .filter(|b| b.monitor == *name)
                {
                    b.monitor = new_name.clone();
                }
            }
            Command::BindLbMonitorMetric {
                monitor,
                metric,
                threshold,
                weight,
            } => {
                let m = self.monitor("monitorName", monitor.as_str())?;
                let table = self.load_monitor_table(m)?;
                if !table.metrics.iter().any(|(n, _)| n == metric) {
                    return Err(CliError::arg_value(
                        ErrorKind::NoSuchResource,
                        "metric",
                        metric.as_str(),
                    ));
                }
                if m.metrics.iter().any(|b| b.metric == *metric) {
                    return Err(CliError::arg_value(
                        ErrorKind::ResourceAlreadyBound,
                        "metric",
                        metric.as_str(),
                    ));
                }
                let binding = MetricBinding {
                    metric: metric.clone(),
                    threshold: *threshold,
                    weight: *weight,
                };
                self.monitors[monitor.as_str()].metrics.push(binding);
            }
            Command::UnbindLbMonitorMetric { monitor, metric } => {
                let m = self.monitor("monitorName", monitor.as_str())?;
                let i = m
                    .metrics
                    .iter()
                    .position(|b| b.metric == *metric)
                    .ok_or_else(|| {
                        CliError::arg_value(ErrorKind::ResourceNotBound, "metric", metric.as_str())
                    })?;
                self.monitors[monitor.as_str()].metrics.remove(i);
            }
            Command::EnableLbMonitor { service, .. }
            | Command::DisableLbMonitor { service, .. }
                if self.service_groups.contains_key(service.as_str()) =>
            {
                self.apply_group(cmd)?;
            }
            Command::EnableLbMonitor { service, monitor }
            | Command::DisableLbMonitor { service, monitor } => {
                self.service("serviceName", service.as_str())?;
                let enable = matches!(cmd, Command::EnableLbMonitor { .. });
                let bindings = &mut self.services[service.as_str()].monitors;
                set_monitor_states(bindings, monitor.as_ref(), enable)?;
            }

            Command::ClearNsConfig { level } => {
                let (ips, routes, parameter) = (
                    std::mem::take(&mut self.ns_ips),
                    std::mem::take(&mut self.routes),
                    self.lb_parameter.clone(),
                );
                *self = Config::default();
                if *level != ClearLevel::Full {
                    self.ns_ips = ips;
                    self.routes = routes;
                }
                if *level == ClearLevel::Basic {
                    self.lb_parameter = parameter;
                }
            }
            Command::AddServiceGroup { .. }
            | Command::SetServiceGroup { .. }
            | Command::UnsetServiceGroup { .. }
            | Command::RmServiceGroup { .. }
            | Command::RenameServiceGroup { .. }
            | Command::BindServiceGroupMember { .. }
            | Command::UnbindServiceGroupMember { .. }
            | Command::BindServiceGroupMonitor { .. }
            | Command::UnbindServiceGroupMonitor { .. }
            | Command::EnableServiceGroup { .. }
            | Command::DisableServiceGroup { .. } => self.apply_group(cmd)?,

            Command::AddLbMetricTable { name } => {
                if self.metric_tables.contains_key(name.as_str()) {
                    return Err(exists("metricTable", name.as_str()));
                }
                if name.as_str().len() > 31 {
                    return Err(CliError::arg_value(
                        ErrorKind::InvalidArgumentValue,
                        "metricTable",
                        name.as_str(),
                    )
                    .with_detail("Metric table names are at most 31 characters"));
                }
                self.metric_tables.insert(
                    name.0.clone(),
                    MetricTable {
                        name: name.clone(),
                        metrics: Vec::new(),
                    },
                );
            }
            Command::RmLbMetricTable { name } => {
                self.metric_table("metricTable", name.as_str())?;
                if let Some(m) = self
                    .monitors
                    .values()
                    .find(|m| m.settings.metric_table.as_ref() == Some(name))
                {
                    return Err(CliError::arg_value(
                        ErrorKind::ResourceInUse,
                        "metricTable",
                        name.as_str(),
                    )
                    .with_detail(format!("Metric table is used by monitor {}", m.name)));
                }
                self.metric_tables.shift_remove(name.as_str());
            }
            Command::BindLbMetricTable { table, metric, oid } => {
                let t = self.metric_table("metricTable", table.as_str())?;
                if t.metrics.iter().any(|(n, _)| n == metric) {
                    return Err(exists("metric", metric.as_str()));
                }
                self.metric_tables[table.as_str()]
                    .metrics
                    .push((metric.clone(), oid.clone()));
            }
            Command::SetLbMetricTable { table, metric, oid } => {
                let t = self.metric_table("metricTable", table.as_str())?;
                let i = t
                    .metrics
                    .iter()
                    .position(|(n, _)| n == metric)
                    .ok_or_else(|| {
                        CliError::arg_value(ErrorKind::NoSuchResource, "metric", metric.as_str())
                    })?;
                self.metric_tables[table.as_str()].metrics[i].1 = oid.clone();
            }
            Command::UnbindLbMetricTable { table, metric } => {
                let t = self.metric_table("metricTable", table.as_str())?;
                let i = t
                    .metrics
                    .iter()
                    .position(|(n, _)| n == metric)
                    .ok_or_else(|| {
                        CliError::arg_value(ErrorKind::NoSuchResource, "metric", metric.as_str())
                    })?;
                let user = self.monitors.values().find(|m| {
                    m.settings.metric_table.as_ref() == Some(table)
                        && m.metrics.iter().any(|b| b.metric == *metric)
                });
                if let Some(m) = user {
                    return Err(CliError::arg_value(
                        ErrorKind::ResourceInUse,
                        "metric",
                        metric.as_str(),
                    )
                    .with_detail(format!("Metric is bound to monitor {}", m.name)));
                }
                self.metric_tables[table.as_str()].metrics.remove(i);
            }

            Command::SetLbParameter { settings } => {
                self.lb_parameter = self.lb_parameter.clone().with(settings);
            }
            Command::UnsetLbParameter { keys } => {
                for k in keys {
                    self.lb_parameter.reset(*k);
                }
            }

            Command::SaveNsConfig
            | Command::Show { .. }
            | Command::Stat { .. }
            | Command::Help { .. } => {
                return Err(CliError::new(ErrorKind::NotSupported)
                    .with_detail("Not a configuration command"));
            }
        }
        Ok(())
    }

    /// Applies several commands (a `[a-b]` range) all or nothing.
    pub fn apply_all(&mut self, cmds: &[Command]) -> Result<()> {
        match cmds {
            [] => Ok(()),
            [one] => self.apply(one),
            many => {
                let mut next = self.clone();
                for c in many {
                    next.apply(c)?;
                }
                *self = next;
                Ok(())
            }
        }
    }

    fn typed_monitor(&self, name: &Name, monitor_type: Option<MonitorType>) -> Result<&Monitor> {
        let m = self.monitor("monitorName", name.as_str())?;
        match monitor_type {
            Some(t) if t != m.monitor_type => {
                Err(
                    CliError::arg_value(ErrorKind::InvalidArgumentValue, "type", t.keyword())
                        .with_detail(format!("Monitor {} is of type {}", m.name, m.monitor_type)),
                )
            }
            _ => Ok(m),
        }
    }

    fn load_monitor_table(&self, m: &Monitor) -> Result<&MetricTable> {
        if m.monitor_type != MonitorType::Load {
            return Err(CliError::arg_value(
                ErrorKind::ArgumentNotApplicable,
                "metric",
                m.name.as_str(),
            )
            .with_detail("Metrics can only be bound to LOAD monitors"));
        }
        let table = m
            .settings
            .metric_table
            .as_ref()
            .ok_or_else(|| CliError::arg(ErrorKind::RequiredArgumentMissing, "metricTable"))?;
        self.metric_table("metricTable", table.as_str())
    }

    /// Whole-monitor checks: options valid for the type, timers, the strings each type needs.
    fn check_monitor(&self, m: &Monitor, given: &[MonitorSetting]) -> Result<()> {
        for s in given {
            let key = MonitorSettings::setting_key(s);
            if !m.monitor_type.accepts(key) {
                return Err(CliError::arg_value(
                    ErrorKind::ArgumentNotApplicable,
                    format!("-{}", MonitorSettings::key_name(key)),
                    m.monitor_type.keyword(),
                ));
            }
        }
        m.settings.check_timers()?;
        let st = &m.settings;
        if let Some(ip) = st.dest_ip {
            require_ipv4("destIP", ip)?;
        }
        let misconfigured = |arg: &str, what: &str| {
            Err(CliError::arg(ErrorKind::Misconfigured, arg)
                .with_detail(format!("{} monitor needs {what}", m.monitor_type)))
        };
        match m.monitor_type {
            MonitorType::TcpEcv if st.send.is_none() || st.recv.is_none() => {
                return misconfigured(
                    if st.send.is_none() { "send" } else { "recv" },
                    "both -send and -recv",
                );
            }
            MonitorType::UdpEcv if st.recv.is_none() => return misconfigured("recv", "-recv"),
            MonitorType::Dns if st.query.is_none() => return misconfigured("query", "-query"),
            MonitorType::Ftp if st.user_name.is_none() || st.password.is_none() => {
                return misconfigured(
                    if st.user_name.is_none() {
                        "userName"
                    } else {
                        "password"
                    },
                    "-userName and -password",
                );
            }
            MonitorType::User if st.script_name.is_none() => {
                return misconfigured("scriptName", "-scriptName");
            }
            MonitorType::Load => {
                let table = match &st.metric_table {
                    None => return misconfigured("metricTable", "-metricTable"),
                    Some(t) => self.metric_table("metricTable", t.as_str())?,
                };
                if let Some(b) = m
                    .metrics
                    .iter()
                    .find(|b| !table.metrics.iter().any(|(n, _)| *n == b.metric))
                {
                    return Err(CliError::arg_value(
                        ErrorKind::NoSuchResource,
                        "metric",
                        b.metric.as_str(),
                    )
                    .with_detail(format!(
                        "Metric table {} has no metric {}",
                        table.name, b.metric
                    )));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// No two vservers may listen on the same address, port and transport.
    fn check_vip_free(
        &self,
        except: Option<&str>,
        service_type: ServiceType,
        ip: IpAddr,
        port: Port,
    ) -> Result<()> {
        let clash = self
            .vservers
            .values()
            .filter(|v| Some(v.name.as_str()) != except)
            .find(|v| {
                v.vip.is_some_and(|(vip, vport)| {
                    vip == ip
                        && (vport == port || vport == Port::Any || port == Port::Any)
                        && transports_overlap(v.service_type, service_type)
                })
            });
        match clash {
            Some(v) => Err(CliError::arg_value(
                ErrorKind::AddressInUse,
                "IPAddress",
                format!("{ip}:{port}"),
            )
            .with_detail(format!(
                "IP address and port combination already in use by vserver {}",
                v.name
            ))),
            None => Ok(()),
        }
    }
}
