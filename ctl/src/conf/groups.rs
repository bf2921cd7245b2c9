//! Service groups (`add serviceGroup`, `bind serviceGroup <sg> <server> <port>`, …). A group's
//! members are ordinary services in the configuration, made from the group after every change
//! (type, settings and monitors from the group, state from the group and the member), so the
//! data plane, the monitors and the counters need nothing of their own for groups. They are
//! named `<group>?<server>?<port>`, which no command can spell, and saved as the group.

use std::net::IpAddr;

use super::Config;
use super::model::*;
use crate::error::{CliError, ErrorKind, Result};
use crate::value::{EnabledDisabled, Name, Port};

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
        Ok(
            match self.servers.values().find(|s| s.addr.ip() == Some(addr)) {
                Some(s) => (s.name.clone(), None),
                None => (
                    server.clone(),
                    Some(Server::new(
                        server.clone(),
                        crate::value::ServerAddress::Ip(addr),
                        ServerSettings::default(),
                    )),
                ),
            },
        )
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
    pub(super) fn sync_group(&mut self, name: &str) {
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

    pub(super) fn member_index(&self, group: &str, server: &Name, port: Port) -> Result<usize> {
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
}
