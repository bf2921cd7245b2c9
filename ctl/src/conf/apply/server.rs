//! `server`: backend hosts by name.

use super::super::Config;
use super::super::model::*;
use super::{exists, in_use, rename_in, require_ipv4, state};
use crate::command::ServerCmd;
use crate::error::Result;
use crate::settings::Settings;

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
                require_ipv4("IPAddress", *addr)?;
                let server = Server {
                    name: name.clone(),
                    addr: *addr,
                    settings: ServerSettings::default().with(settings),
                };
                self.servers.insert(name.0.clone(), server);
            }
            ServerCmd::Set {
                name,
                addr,
                settings,
            } => {
                self.server("name", name.as_str())?;
                if let Some(addr) = addr {
                    require_ipv4("IPAddress", *addr)?;
                }
                let server = &mut self.servers[name.as_str()];
                if let Some(addr) = addr {
                    server.addr = *addr;
                }
                for s in settings {
                    server.settings.apply(s);
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
