//! Service groups (`add serviceGroup`, `bind serviceGroup <sg> <server> <port>`, …). A group's
//! members are ordinary services in the configuration, made from the group after every change
//! (type, settings and monitors from the group, state from the group and the member), so the
//! data plane, the monitors and the counters need nothing of their own for groups. They are
//! named `<group>?<server>?<port>`, which no command can spell, and saved as the group.

use std::net::{IpAddr, Ipv4Addr};

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
                    for (name, _) in self.member_names(g, m) {
                        if let Some(s) = self.services.get(&name) {
                            out.push((s, m.weight.get() as u32));
                        }
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
            .flat_map(|m| {
                self.member_names(g, m)
                    .into_iter()
                    .filter_map(move |(name, _)| Some((m, self.services.get(&name)?)))
            })
            .collect()
    }

    /// The services that stand for member `m`, with the address each is pinned to: one
    /// named after the member, or with `-autoScale DNS` and a domain-based server, one per
    /// address its name resolved to (none before the first answer).
    pub fn member_names(
        &self,
        g: &ServiceGroup,
        m: &GroupMember,
    ) -> Vec<(String, Option<Ipv4Addr>)> {
        let base = g.member_service(&m.server, m.port);
        let server = self.servers.get(m.server.as_str());
        match server.filter(|s| g.scales_by_dns() && s.domain().is_some()) {
            Some(server) => self
                .resolution(server)
                .map(|r| {
                    r.addrs
                        .iter()
                        .map(|a| (format!("{base}?{a}"), Some(*a)))
                        .collect()
                })
                .unwrap_or_default(),
            None => vec![(base, None)],
        }
    }

    /// Makes the members of `-autoScale DNS` groups match what their names resolved to
    /// (after the resolutions changed).
    pub fn sync_scaled_groups(&mut self) {
        let scaled: Vec<String> = self
            .service_groups
            .values()
            .filter(|g| g.scales_by_dns())
            .map(|g| g.name.0.clone())
            .collect();
        for g in scaled {
            self.sync_group(&g);
        }
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
            .flat_map(|m| {
                let mut settings = g.settings.clone();
                if m.state == EnabledDisabled::Disabled {
                    settings.state = EnabledDisabled::Disabled;
                }
                self.member_names(g, m)
                    .into_iter()
                    .map(move |(name, pinned)| Service {
                        name: Name(name),
                        server: m.server.clone(),
                        service_type: g.service_type,
                        port: m.port,
                        settings: settings.clone(),
                        monitors: g.monitors.clone(),
                        group: Some(g.name.clone()),
                        pinned,
                    })
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
