//! Applying a command to the configuration, one file per object. Each handler checks
//! everything first and changes the configuration only once the command is known to be
//! valid; the verbs objects share (rename, enable/disable) and the checks of who refers to
//! an object ([`references`]) are written once here.

mod group;
mod ip;
mod metric_table;
mod monitor;
mod name_server;
mod parameter;
mod references;
mod server;
mod service;
mod system_user;
mod vserver;

use std::net::IpAddr;

use indexmap::IndexMap;

use super::Config;
use super::model::*;
use crate::command::Command;
use crate::error::{CliError, ErrorKind, Result};
use crate::settings::Settings;
use crate::value::{EnabledDisabled, Name, Port};

pub(super) use references::User;

fn exists(arg: &str, name: &str) -> CliError {
    CliError::arg_value(ErrorKind::ResourceAlreadyExists, arg, name)
}

/// `ERROR: Resource is in use [<arg>, <name>]`, saying who uses it ("Server is used by
/// service s1", "Monitor is bound to service group g").
fn in_use(arg: &str, name: &Name, what: &str, relation: &str, user: User<'_>) -> CliError {
    CliError::arg_value(ErrorKind::ResourceInUse, arg, name.as_str())
        .with_detail(format!("{what} is {relation} {user}"))
}

/// The state `enable` (or `disable`) gives.
fn state(enable: bool) -> EnabledDisabled {
    if enable {
        EnabledDisabled::Enabled
    } else {
        EnabledDisabled::Disabled
    }
}

/// An object the configuration keys by its name.
pub(super) trait Named {
    fn set_name(&mut self, name: Name);
}

macro_rules! named {
    ($($t:ty),*) => {
        $(impl Named for $t {
            fn set_name(&mut self, name: Name) {
                self.name = name;
            }
        })*
    };
}
named!(Server, Service, ServiceGroup, Vserver, Monitor);

/// `rename <object> <name> <newName>` over the object's map: it must exist (`[name, …]`),
/// the new name must be free in the map and not `taken` elsewhere (`[newName, …]`), and the
/// object keeps its place in creation order (the order `save` writes).
pub(super) fn rename_in<V: Named>(
    map: &mut IndexMap<String, V>,
    name: &Name,
    new_name: &Name,
    taken: bool,
) -> Result<()> {
    if !map.contains_key(name.as_str()) {
        return Err(no_such("name", name)());
    }
    if taken || map.contains_key(new_name.as_str()) {
        return Err(exists("newName", new_name.as_str()));
    }
    if let Some((index, _, mut value)) = map.shift_remove_full(name.as_str()) {
        value.set_name(new_name.clone());
        map.shift_insert(index, new_name.0.clone(), value);
    }
    Ok(())
}

/// An object with an option set, changed by `set`/`unset <object> <name> -option …`.
pub(super) trait Configurable {
    type Options: Settings;
    fn options(&mut self) -> &mut Self::Options;
}

macro_rules! configurable {
    ($($t:ty => $s:ty),*) => {
        $(impl Configurable for $t {
            type Options = $s;
            fn options(&mut self) -> &mut $s {
                &mut self.settings
            }
        })*
    };
}
configurable!(Service => ServiceSettings, ServiceGroup => ServiceSettings, Vserver => VserverSettings);

/// `set <object> <name> -option value …`; `missing` is the error for an unknown name.
pub(super) fn set_in<V: Configurable>(
    map: &mut IndexMap<String, V>,
    name: &Name,
    settings: &[<V::Options as Settings>::Setting],
    missing: impl FnOnce() -> CliError,
) -> Result<()> {
    let object = map.get_mut(name.as_str()).ok_or_else(missing)?;
    for s in settings {
        object.options().apply(s);
    }
    Ok(())
}

/// `unset <object> <name> -option …`: the options go back to their defaults.
pub(super) fn unset_in<V: Configurable>(
    map: &mut IndexMap<String, V>,
    name: &Name,
    keys: &[<V::Options as Settings>::Key],
    missing: impl FnOnce() -> CliError,
) -> Result<()> {
    let object = map.get_mut(name.as_str()).ok_or_else(missing)?;
    for k in keys {
        object.options().reset(*k);
    }
    Ok(())
}

fn no_such<'a>(arg: &'static str, name: &'a Name) -> impl FnOnce() -> CliError + 'a {
    move || CliError::arg_value(ErrorKind::NoSuchResource, arg, name.as_str())
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
    for b in bindings
        .iter_mut()
        .filter(|b| monitor.is_none_or(|m| b.monitor == *m))
    {
        b.settings.mon_state = state(enable);
    }
    Ok(())
}

impl Config {
    /// Applies one configuration command. On error nothing has changed.
    pub fn apply(&mut self, cmd: &Command) -> Result<()> {
        match cmd {
            Command::NsIp(c) => self.apply_ns_ip(c),
            Command::Route(c) => self.apply_route(c),
            Command::DnsNameServer(c) => self.apply_name_server(c),
            Command::Server(c) => self.apply_server(c),
            Command::Service(c) => self.apply_service(c),
            Command::ServiceGroup(c) => self.apply_group(c),
            Command::LbVserver(c) => self.apply_vserver(c),
            Command::LbMonitor(c) => self.apply_monitor(c),
            Command::LbMetricTable(c) => self.apply_metric_table(c),
            Command::LbParameter(c) => self.apply_parameter(c),
            Command::SystemUser(c) => self.apply_system_user(c),
            Command::NsMode { enable, modes } => {
                if *enable && modes.contains(&NsMode::L2) {
                    return Err(CliError::arg_value(ErrorKind::NotSupported, "mode", "L2")
                        .with_detail("L2 mode (bridging) is not implemented"));
                }
                for m in modes {
                    self.ns_modes.retain(|x| x != m);
                    if *enable {
                        self.ns_modes.push(*m);
                    }
                }
                self.ns_modes
                    .sort_by_key(|m| NsMode::ALL.iter().position(|x| x == m));
                Ok(())
            }
            Command::ClearNsConfig { level } => {
                self.clear(*level);
                Ok(())
            }
            Command::SaveNsConfig
            | Command::Show { .. }
            | Command::Stat { .. }
            | Command::Help { .. } => {
                Err(CliError::new(ErrorKind::NotSupported)
                    .with_detail("Not a configuration command"))
            }
        }
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
}
