//! Service groups (`add serviceGroup`, `bind serviceGroup <sg> <server> <port>`, …). A group's
//! members are ordinary services in the configuration, made from the group after every change
//! (type, settings and monitors from the group, state from the group and the member), so the
//! data plane, the monitors and the counters need nothing of their own for groups. They are
//! named `<group>?<server>?<port>`, which no command can spell, and saved as the group.

use std::net::IpAddr;

use super::Config;
use super::model::*;
use crate::command::Command;
use crate::error::{CliError, ErrorKind, Result};
use crate::settings::Settings;
use crate::value::{Bounded, EnabledDisabled, Name, Port};

fn no_such_group(name: &str) -> CliError {
    CliError::arg_value(ErrorKind::NoSuchResource, "serviceGroupName", name)
}

impl Config {
    pub fn service_group(&self, name: &str) -> Result<&ServiceGroup> {
        self.service_groups
            .get(name)
            .ok_or_else(|| no_such_group(name))
    }

    /// The server a service or member names: an existing server (by name or address), or a
    /// new one named after a bare IP, as NetScaler does.
    pub fn server_for(&self, server: &Name) -> Result<(Name, Option<Server>)> {
        if let Some(s) = self.servers.get(server.as_str()) {
            return Ok((s.name.clone(), None));
        }
        let addr: IpAddr = server.as_str().parse().map_err(|_| {
            CliError::arg_value(ErrorKind::NoSuchResource, "serverName", server.as_str())
        })?;
        super::apply::require_ipv4("IPAddress", addr)?;
        Ok(match self.servers.values().find(|s| s.addr == addr) {
            Some(s) => (s.name.clone(), None),
            None => (
                server.clone(),
                Some(Server {
                    name: server.clone(),
                    addr,
                    settings: ServerSettings::default(),
                }),
            ),
        })
    }

    /// The services a vserver sends new flows to, with their weights: bound services as they
    /// are, bound groups as their members (each with its member weight), in bind order.
    pub fn bound_services<'a>(&'a self, v: &'a Vserver) -> Vec<(&'a Service, u32)> {
        let mut out = Vec::new();
        for b in &v.bindings {
            if let Some(s) = self.services.get(b.service.as_str()) {
                out.push((s, b.settings.weight.get() as u32));
            } else if let Some(g) = self.service_groups.get(b.service.as_str()) {
                for m in &g.members {
                    if let Some(s) = self.services.get(&g.member_service(&m.server, m.port)) {
                        out.push((s, m.weight.get() as u32));
                    }
                }
            }
        }
        out
    }

    /// The services standing for a group's members, in member order.
    pub fn group_members<'a>(&'a self, g: &'a ServiceGroup) -> Vec<(&'a GroupMember, &'a Service)> {
        g.members
            .iter()
            .filter_map(|m| {
                let s = self.services.get(&g.member_service(&m.server, m.port))?;
                Some((m, s))
            })
            .collect()
    }

    /// Makes the member services of group `name` match the group (or removes them when the
    /// group is gone).
    fn sync_group(&mut self, name: &str) {
        self.services
            .retain(|_, s| s.group.as_ref().is_none_or(|g| g.as_str() != name));
        let Some(g) = self.service_groups.get(name) else {
            return;
        };
        let members: Vec<Service> = g
            .members
            .iter()
            .map(|m| {
                let mut settings = g.settings.clone();
                if m.state == EnabledDisabled::Disabled {
                    settings.state = EnabledDisabled::Disabled;
                }
                Service {
                    name: Name(g.member_service(&m.server, m.port)),
                    server: m.server.clone(),
                    service_type: g.service_type,
                    port: m.port,
                    settings,
                    monitors: g.monitors.clone(),
                    group: Some(g.name.clone()),
                }
            })
            .collect();
        for s in members {
            self.services.insert(s.name.0.clone(), s);
        }
    }

    /// `rename server`: members follow their server (their services are renamed with it).
    pub(super) fn rename_member_server(&mut self, old: &Name, new: &Name) {
        let mut touched = Vec::new();
        for g in self.service_groups.values_mut() {
            for m in g.members.iter_mut().filter(|m| m.server == *old) {
                m.server = new.clone();
                touched.push(g.name.0.clone());
            }
        }
        for g in touched {
            self.sync_group(&g);
        }
    }

    fn member_index(&self, group: &str, server: &Name, port: Port) -> Result<usize> {
        let g = self.service_group(group)?;
        let (server, _) = self.server_for(server)?;
        g.members
            .iter()
            .position(|m| m.server == server && m.port == port)
            .ok_or_else(|| {
                CliError::arg_value(
                    ErrorKind::ResourceNotBound,
                    "serverName",
                    format!("{server} {port}"),
                )
            })
    }

    /// Applies a service-group command; on error nothing has changed.
    pub(super) fn apply_group(&mut self, cmd: &Command) -> Result<()> {
        let group = match cmd {
            Command::AddServiceGroup {
                name,
                service_type,
                settings,
            } => {
                if self.service_groups.contains_key(name.as_str())
                    || self.services.contains_key(name.as_str())
                {
                    return Err(CliError::arg_value(
                        ErrorKind::ResourceAlreadyExists,
                        "serviceGroupName",
                        name.as_str(),
                    ));
                }
                let g = ServiceGroup {
                    name: name.clone(),
                    service_type: *service_type,
                    settings: ServiceSettings::default().with(settings),
                    members: Vec::new(),
                    monitors: Vec::new(),
                };
                self.service_groups.insert(name.0.clone(), g);
                name.0.clone()
            }
            Command::SetServiceGroup { name, settings } => {
                let g = self.service_group(name.as_str())?;
                let new = g.settings.clone().with(settings);
                self.service_groups[name.as_str()].settings = new;
                name.0.clone()
            }
            Command::UnsetServiceGroup { name, keys } => {
                self.service_group(name.as_str())?;
                let g = &mut self.service_groups[name.as_str()];
                for k in keys {
                    g.settings.reset(*k);
                }
                name.0.clone()
            }
            Command::RmServiceGroup { name } => {
                self.service_group(name.as_str())?;
                for vs in self.vservers.values_mut() {
                    vs.bindings.retain(|b| b.service != *name);
                }
                self.service_groups.shift_remove(name.as_str());
                name.0.clone()
            }
            Command::RenameServiceGroup { name, new_name } => {
                self.service_group(name.as_str())?;
                if self.service_groups.contains_key(new_name.as_str())
                    || self.services.contains_key(new_name.as_str())
                {
                    return Err(CliError::arg_value(
                        ErrorKind::ResourceAlreadyExists,
                        "newName",
                        new_name.as_str(),
                    ));
                }
                let (i, _, mut g) = self
                    .service_groups
                    .shift_remove_full(name.as_str())
                    .ok_or_else(|| no_such_group(name.as_str()))?;
                g.name = new_name.clone();
                self.service_groups.shift_insert(i, new_name.0.clone(), g);
                for b in self
                    .vservers
                    .values_mut()
                    .flat_map(|v| v.bindings.iter_mut())
                    .filter(|b| b.service == *name)
                {
                    b.service = new_name.clone();
                }
                self.sync_group(name.as_str());
                new_name.0.clone()
            }
            Command::BindServiceGroupMember {
                group,
                server,
                port,
                weight,
            } => {
                let g = self.service_group(group.as_str())?;
                super::apply::check_port(g.service_type, *port)?;
                let (server, new_server) = self.server_for(server)?;
                if g.members
                    .iter()
                    .any(|m| m.server == server && m.port == *port)
                {
                    return Err(CliError::arg_value(
                        ErrorKind::ResourceAlreadyExists,
                        "serverName",
                        format!("{server} {port}"),
                    ));
                }
                if let Some(s) = new_server {
                    self.servers.insert(s.name.0.clone(), s);
                }
                self.service_groups[group.as_str()]
                    .members
                    .push(GroupMember {
                        server,
                        port: *port,
                        weight: weight.unwrap_or(Bounded::new(1)),
                        state: EnabledDisabled::Enabled,
                    });
                group.0.clone()
            }
            Command::UnbindServiceGroupMember {
                group,
                server,
                port,
            } => {
                let i = self.member_index(group.as_str(), server, *port)?;
                self.service_groups[group.as_str()].members.remove(i);
                group.0.clone()
            }
            Command::BindServiceGroupMonitor {
                group,
                monitor,
                settings,
            } => {
                self.service_group(group.as_str())?;
                self.monitor("monitorName", monitor.as_str())?;
                let bindings = &mut self.service_groups[group.as_str()].monitors;
                super::apply::bind_monitor(bindings, monitor, settings)?;
                group.0.clone()
            }
            Command::UnbindServiceGroupMonitor { group, monitor } => {
                let g = self.service_group(group.as_str())?;
                let i = g
                    .monitors
                    .iter()
                    .position(|b| b.monitor == *monitor)
                    .ok_or_else(|| {
                        CliError::arg_value(
                            ErrorKind::ResourceNotBound,
                            "monitorName",
                            monitor.as_str(),
                        )
                    })?;
                self.service_groups[group.as_str()].monitors.remove(i);
                group.0.clone()
            }
            Command::EnableServiceGroup { name, member }
            | Command::DisableServiceGroup { name, member, .. } => {
                let state = if matches!(cmd, Command::EnableServiceGroup { .. }) {
                    EnabledDisabled::Enabled
                } else {
                    EnabledDisabled::Disabled
                };
                match member {
                    Some((server, port)) => {
                        let i = self.member_index(name.as_str(), server, *port)?;
                        self.service_groups[name.as_str()].members[i].state = state;
                    }
                    None => {
                        self.service_group(name.as_str())?;
                        self.service_groups[name.as_str()].settings.state = state;
                    }
                }
                name.0.clone()
            }
            Command::EnableLbMonitor { service, monitor }
            | Command::DisableLbMonitor { service, monitor } => {
                self.service_group(service.as_str())?;
                let enable = matches!(cmd, Command::EnableLbMonitor { .. });
                let bindings = &mut self.service_groups[service.as_str()].monitors;
                super::apply::set_monitor_states(bindings, monitor.as_ref(), enable)?;
                service.0.clone()
            }
            _ => return Ok(()),
        };
        self.sync_group(&group);
        Ok(())
    }
}
