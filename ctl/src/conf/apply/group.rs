//! `serviceGroup`: the group's own commands. Its members are services made from the group
//! (see `conf::groups`), so every change ends by making them again.

use super::super::Config;
use super::super::model::*;
use super::{
    bind_monitor, check_port, no_such, rename_in, set_in, set_monitor_states, state, unset_in,
};
use crate::command::{Common, ServiceGroupCmd};
use crate::error::{CliError, ErrorKind, Result};
use crate::settings::Settings;
use crate::value::{Bounded, Name};

impl Config {
    /// Applies a service-group command; on error nothing has changed.
    pub(super) fn apply_group(&mut self, cmd: &ServiceGroupCmd) -> Result<()> {
        if let ServiceGroupCmd::Add { settings, .. }
        | ServiceGroupCmd::Common(Common::Set { settings, .. }) = cmd
        {
            settings
                .iter()
                .try_for_each(ServiceSetting::check_supported)?;
        }
        let group = match cmd {
            ServiceGroupCmd::Add {
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
                name
            }
            ServiceGroupCmd::Common(Common::Set { name, settings }) => {
                let missing = no_such("serviceGroupName", name);
                set_in(&mut self.service_groups, name, settings, missing)?;
                name
            }
            ServiceGroupCmd::Common(Common::Unset { name, keys }) => {
                let missing = no_such("serviceGroupName", name);
                unset_in(&mut self.service_groups, name, keys, missing)?;
                name
            }
            ServiceGroupCmd::Common(Common::Rm { name }) => {
                self.service_group(name.as_str())?;
                for vs in self.vservers.values_mut() {
                    vs.bindings.retain(|b| b.service != *name);
                }
                self.service_groups.shift_remove(name.as_str());
                name
            }
            ServiceGroupCmd::Common(Common::Rename { name, new_name }) => {
                self.service_group(name.as_str())?;
                let taken = self.services.contains_key(new_name.as_str());
                rename_in(&mut self.service_groups, name, new_name, taken)?;
                for b in self
                    .vservers
                    .values_mut()
                    .flat_map(|v| v.bindings.iter_mut())
                    .filter(|b| b.service == *name)
                {
                    b.service = new_name.clone();
                }
                self.sync_group(name.as_str());
                new_name
            }
            ServiceGroupCmd::BindMember {
                group,
                server,
                port,
                weight,
                state,
            } => {
                let g = self.service_group(group.as_str())?;
                check_port(g.service_type, *port)?;
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
                        state: *state,
                    });
                group
            }
            ServiceGroupCmd::UnbindMember {
                group,
                server,
                port,
            } => {
                let i = self.member_index(group.as_str(), server, *port)?;
                self.service_groups[group.as_str()].members.remove(i);
                group
            }
            ServiceGroupCmd::BindMonitor {
                group,
                monitor,
                settings,
            } => {
                self.service_group(group.as_str())?;
                // Bound under the monitor's own spelling, so `save` writes that one.
                let monitor = self.monitor("monitorName", monitor.as_str())?.name.clone();
                let bindings = &mut self.service_groups[group.as_str()].monitors;
                bind_monitor(bindings, &monitor, settings)?;
                group
            }
            ServiceGroupCmd::UnbindMonitor { group, monitor } => {
                let monitor = &self.monitor_spelling(monitor);
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
                group
            }
            ServiceGroupCmd::Enable { name, member }
            | ServiceGroupCmd::Disable { name, member, .. } => {
                let state = state(matches!(cmd, ServiceGroupCmd::Enable { .. }));
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
                name
            }
        };
        self.sync_group(group.as_str());
        Ok(())
    }

    /// `enable/disable lb monitor <group> [<monitor>]`: the group's bindings, for every member.
    pub(super) fn set_group_monitor_states(
        &mut self,
        group: &Name,
        monitor: Option<&Name>,
        enable: bool,
    ) -> Result<()> {
        self.service_group(group.as_str())?;
        let bindings = &mut self.service_groups[group.as_str()].monitors;
        set_monitor_states(bindings, monitor, enable)?;
        self.sync_group(group.as_str());
        Ok(())
    }
}
