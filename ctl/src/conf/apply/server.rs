//! `server`: backend hosts by name.

use super::super::Config;
use super::super::model::*;
use super::{exists, in_use, rename_in, require_ipv4, state};
use crate::command::ServerCmd;
use crate::error::Result;
use crate::error::{CliError, ErrorKind};
use crate::settings::Settings;
use crate::value::{ServerAddress, YesNo};

/// A domain-based server resolves A records: the data path is IPv4.
fn check_resolvable(settings: &ServerSettings) -> Result<()> {
    if settings.query_type != ServerQueryType::A {
        return Err(CliError::arg_value(
            ErrorKind::NotSupported,
            "queryType",
            settings.query_type.to_string(),
        )
        .with_detail("Domain-based servers resolve A records: Fulcrum's data path is IPv4"));
    }
    if settings.ipv6_address == YesNo::Yes {
        return Err(
            CliError::arg_value(ErrorKind::NotSupported, "IPv6Address", "YES")
                .with_detail("Domain-based servers resolve A records: Fulcrum's data path is IPv4"),
        );
    }
    Ok(())
}

fn not_domain_rule(name: &crate::value::Name, why: &str) -> CliError {
    CliError::new(ErrorKind::ArgumentNotApplicable).with_detail(format!("Server {name} {why}"))
}

impl Config {
    pub(super) fn apply_server(&mut self, cmd: &ServerCmd) -> Result<()> {
        match cmd {
            ServerCmd::Add {
                name,
                addr,
                settings,
            } => {
                if self.servers.contains_key(name.as_str()) {
                    return Err(exists("name", name.as_str()));
                }
                let settings = ServerSettings::default().with(settings);
                match addr {
                    ServerAddress::Ip(ip) => require_ipv4("IPAddress", *ip)?,
                    ServerAddress::Domain(_) => check_resolvable(&settings)?,
                }
                let server = Server::new(name.clone(), addr.clone(), settings);
                self.servers.insert(name.0.clone(), server);
            }
            ServerCmd::Set {
                name,
                addr,
                resolve_now,
                settings,
            } => {
                let current = self.server("name", name.as_str())?;
                let domain_based = current.domain().is_some();
                if let Some(addr) = addr {
                    if domain_based {
                        return Err(not_domain_rule(
                            name,
                            "is domain-based: DNS gives its address",
                        ));
                    }
                    require_ipv4("IPAddress", *addr)?;
                }
                if *resolve_now && !domain_based {
                    return Err(not_domain_rule(
                        name,
                        "has an IP address: nothing to resolve",
                    ));
                }
                let next = current.settings.clone().with(settings);
                if domain_based {
                    check_resolvable(&next)?;
                }
                let server = &mut self.servers[name.as_str()];
                if let Some(addr) = addr {
                    server.addr = ServerAddress::Ip(*addr);
                }
                server.settings = next;
                if *resolve_now {
                    server.resolve_requests = server.resolve_requests.wrapping_add(1);
                }
            }
            ServerCmd::Unset { name, keys } => {
                self.server("name", name.as_str())?;
                for k in keys {
                    self.servers[name.as_str()].settings.reset(*k);
                }
            }
            ServerCmd::Rm { name } => {
                self.server("name", name.as_str())?;
                if let Some(user) = self.server_user(name) {
                    return Err(in_use("name", name, "Server", "used by", user));
                }
                self.servers.shift_remove(name.as_str());
            }
            ServerCmd::Rename { name, new_name } => {
                rename_in(&mut self.servers, name, new_name, false)?;
                for svc in self.services.values_mut().filter(|s| s.server == *name) {
                    svc.server = new_name.clone();
                }
                self.rename_member_server(name, new_name);
            }
            ServerCmd::Enable { name } | ServerCmd::Disable { name, .. } => {
                self.server("name", name.as_str())?;
                let enable = matches!(cmd, ServerCmd::Enable { .. });
                self.servers[name.as_str()].settings.state = state(enable);
            }
        }
        Ok(())
    }
}
