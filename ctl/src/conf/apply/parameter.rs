//! `set/unset lb parameter` and `clear ns config`.

use super::super::Config;
use super::super::model::*;
use crate::command::ParameterCmd;
use crate::error::Result;
use crate::settings::Settings;

impl Config {
    pub(super) fn apply_parameter(&mut self, cmd: &ParameterCmd) -> Result<()> {
        match cmd {
            ParameterCmd::Set { settings } => {
                self.lb_parameter = self.lb_parameter.clone().with(settings);
            }
            ParameterCmd::Unset { keys } => {
                for k in keys {
                    self.lb_parameter.reset(*k);
                }
            }
        }
        Ok(())
    }

    /// `clear ns config -force <level>`: basic keeps the IPs, routes and `lb parameter`,
    /// extended the IPs and routes, full nothing.
    pub(super) fn clear(&mut self, level: ClearLevel) {
        let name_servers = std::mem::take(&mut self.name_servers);
        // The management API's users stay at every level (NetScaler keeps nsroot): clearing
        // must not lock the operator out of the API that asked for it.
        let users = std::mem::take(&mut self.system_users);
        let (ips, routes, parameter, modes) = (
            std::mem::take(&mut self.ns_ips),
            std::mem::take(&mut self.routes),
            self.lb_parameter.clone(),
            std::mem::take(&mut self.ns_modes),
        );
        *self = Config::default();
        self.system_users = users;
        if level != ClearLevel::Full {
            self.ns_ips = ips;
            self.routes = routes;
            self.name_servers = name_servers;
        }
        if level == ClearLevel::Basic {
            self.lb_parameter = parameter;
            self.ns_modes = modes;
        }
    }
}
