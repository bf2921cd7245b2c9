//! `dns nameServer`: where domain-based servers are resolved.

use super::super::Config;
use super::super::model::*;
use super::{exists, state};
use crate::command::NameServerCmd;
use crate::error::{CliError, ErrorKind, Result};
use crate::settings::Settings;

fn no_such_name_server(addr: std::net::IpAddr) -> CliError {
    CliError::arg_value(ErrorKind::NoSuchResource, "IP", addr.to_string())
}

impl Config {
    pub(super) fn apply_name_server(&mut self, cmd: &NameServerCmd) -> Result<()> {
        match cmd {
            NameServerCmd::Add { addr, settings } => {
                if self.name_servers.contains_key(addr) {
                    return Err(exists("IP", &addr.to_string()));
                }
                super::require_ipv4("IP", *addr)?;
                let settings = NameServerSettings::default().with(settings);
                if settings.transport != NameServerTransport::Udp {
                    return Err(CliError::arg_value(
                        ErrorKind::NotSupported,
                        "type",
                        settings.transport.to_string(),
                    )
                    .with_detail("Name servers are asked over UDP only"));
                }
                self.name_servers.insert(
                    *addr,
                    NameServer {
                        addr: *addr,
                        settings,
                    },
                );
            }
            NameServerCmd::Rm { addr } => {
                self.name_servers
                    .shift_remove(addr)
                    .ok_or_else(|| no_such_name_server(*addr))?;
            }
            NameServerCmd::Enable { addr } | NameServerCmd::Disable { addr } => {
                let enable = matches!(cmd, NameServerCmd::Enable { .. });
                self.name_servers
                    .get_mut(addr)
                    .ok_or_else(|| no_such_name_server(*addr))?
                    .settings
                    .state = state(enable);
            }
        }
        Ok(())
    }
}
