//! `service`: a server's port of one type, its settings and monitor bindings.

use super::super::Config;
use super::super::model::*;
use super::{
    bind_monitor, check_port, exists, no_such, rename_in, require_ipv4, set_in, state, unset_in,
};
use crate::command::{Common, ServiceCmd};
use crate::error::{CliError, ErrorKind, Result};
use crate::settings::Settings;

impl Config {
    pub(super) fn apply_service(&mut self, cmd: &ServiceCmd) -> Result<()> {
        if let ServiceCmd::Add { settings, .. }
        | ServiceCmd::Common(Common::Set { settings, .. })
        | ServiceCmd::Readdress { settings, .. } = cmd
        {
            settings
                .iter()
                .try_for_each(ServiceSetting::check_supported)?;
            if settings
                .iter()
                .any(|s| matches!(s, ServiceSetting::AutoScale(_)))
            {
                return Err(CliError::arg(ErrorKind::ArgumentNotApplicable, "autoScale")
                    .with_detail("-autoScale applies to service groups"));
            }
        }
        match cmd {
            ServiceCmd::Add {
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
                    pinned: None,
                };
                if let Some(s) = new_server {
                    self.servers.insert(s.name.0.clone(), s);
                }
                self.services.insert(name.0.clone(), service);
            }
            ServiceCmd::Readdress {
                name,
                addr,
                settings,
            } => {
                require_ipv4("IPAddress", *addr)?;
                let server = self.service("name", name.as_str())?.server.clone();
                if self
                    .servers
                    .get(server.as_str())
                    .is_some_and(|s| s.domain().is_some())
                {
                    return Err(CliError::new(ErrorKind::ArgumentNotApplicable).with_detail(
                        format!("Server {server} is domain-based: DNS gives its address"),
                    ));
                }
                // Another service on the same server would move too: that is `set server`'s.
                if let Some(other) = self
                    .services
                    .values()
                    .find(|s| s.server == server && s.name != *name)
                {
                    return Err(CliError::arg_value(
                        ErrorKind::InvalidArgumentValue,
                        "IPAddress",
                        addr.to_string(),
                    )
                    .with_detail(format!(
                        "Server {server} is shared with service {}; use set server {server} -IPAddress",
                        other.name
                    )));
                }
                if let Some(sv) = self.servers.get_mut(server.as_str()) {
                    sv.addr = crate::value::ServerAddress::Ip(*addr);
                }
                set_in(&mut self.services, name, settings, no_such("name", name))?;
            }
            ServiceCmd::Common(Common::Set { name, settings }) => {
                set_in(&mut self.services, name, settings, no_such("name", name))?;
            }
            ServiceCmd::Common(Common::Unset { name, keys }) => {
                unset_in(&mut self.services, name, keys, no_such("name", name))?;
            }
            ServiceCmd::Common(Common::Rm { name }) => {
                self.service("name", name.as_str())?;
                for vs in self.vservers.values_mut() {
                    vs.bindings.retain(|b| b.service != *name);
                }
                self.services.shift_remove(name.as_str());
            }
            ServiceCmd::Common(Common::Rename { name, new_name }) => {
                let taken = self.service_groups.contains_key(new_name.as_str());
                rename_in(&mut self.services, name, new_name, taken)?;
                for b in self
                    .vservers
                    .values_mut()
                    .flat_map(|v| v.bindings.iter_mut())
                    .filter(|b| b.service == *name)
                {
                    b.service = new_name.clone();
                }
            }
            ServiceCmd::Enable { name } | ServiceCmd::Disable { name, .. } => {
                self.service("name", name.as_str())?;
                let enable = matches!(cmd, ServiceCmd::Enable { .. });
                self.services[name.as_str()].settings.state = state(enable);
            }
            ServiceCmd::BindMonitor {
                service,
                monitor,
                settings,
            } => {
                self.service("name", service.as_str())?;
                // Bound under the monitor's own spelling, so `save` writes that one.
                let monitor = self.monitor("monitorName", monitor.as_str())?.name.clone();
                let bindings = &mut self.services[service.as_str()].monitors;
                bind_monitor(bindings, &monitor, settings)?;
            }
            ServiceCmd::UnbindMonitor { service, monitor } => {
                let monitor = &self.monitor_spelling(monitor);
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
        }
        Ok(())
    }
}
