//! `lb vserver`: VIPs, their methods and their bound services.

use std::net::IpAddr;

use super::super::Config;
use super::super::model::*;
use super::{
    check_port, exists, in_use, no_such, rename_in, require_ipv4, set_in, state, unset_in,
};
use crate::command::{Common, VserverCmd};
use crate::error::{CliError, ErrorKind, Result};
use crate::settings::Settings;
use crate::value::{Name, Port};

/// Whether two types' transports can collide on one address and port.
fn transports_overlap(a: ServiceType, b: ServiceType) -> bool {
    let (a, b) = (a.transport(), b.transport());
    a == b || a == Transport::Any || b == Transport::Any
}

impl Config {
    pub(super) fn apply_vserver(&mut self, cmd: &VserverCmd) -> Result<()> {
        match cmd {
            VserverCmd::Add {
                name,
                service_type,
                vip,
                settings,
            } => {
                if self.vservers.contains_key(name.as_str()) {
                    return Err(exists("name", name.as_str()));
                }
                if let Some((ip, port)) = vip {
                    require_ipv4("IPAddress", *ip)?;
                    check_port(*service_type, *port)?;
                    self.check_vip_free(None, *service_type, *ip, *port)?;
                }
                let vs = Vserver {
                    name: name.clone(),
                    service_type: *service_type,
                    vip: *vip,
                    settings: VserverSettings::default().with(settings),
                    bindings: Vec::new(),
                };
                self.vservers.insert(name.0.clone(), vs);
                if let Err(e) = self.check_vserver(name) {
                    self.vservers.shift_remove(name.as_str());
                    return Err(e);
                }
            }
            VserverCmd::Common(Common::Set { name, settings }) => {
                let before = self.vserver("name", name.as_str())?.settings.clone();
                set_in(&mut self.vservers, name, settings, no_such("name", name))?;
                if let Err(e) = self.check_vserver(name) {
                    self.vservers[name.as_str()].settings = before;
                    return Err(e);
                }
            }
            VserverCmd::Common(Common::Unset { name, keys }) => {
                unset_in(&mut self.vservers, name, keys, no_such("name", name))?;
            }
            VserverCmd::Common(Common::Rm { name }) => {
                self.vserver("name", name.as_str())?;
                if let Some(user) = self
                    .vservers
                    .values()
                    .find(|v| v.settings.backup_vserver.as_ref() == Some(name))
                {
                    return Err(in_use(
                        "name",
                        name,
                        "Vserver",
                        "the backup of",
                        super::User::Vserver(&user.name),
                    ));
                }
                self.vservers.shift_remove(name.as_str());
            }
            VserverCmd::Common(Common::Rename { name, new_name }) => {
                rename_in(&mut self.vservers, name, new_name, false)?;
                for v in self.vservers.values_mut() {
                    if v.settings.backup_vserver.as_ref() == Some(name) {
                        v.settings.backup_vserver = Some(new_name.clone());
                    }
                }
            }
            VserverCmd::Enable { name } | VserverCmd::Disable { name } => {
                self.vserver("name", name.as_str())?;
                let enable = matches!(cmd, VserverCmd::Enable { .. });
                self.vservers[name.as_str()].settings.state = state(enable);
            }
            VserverCmd::Bind {
                vserver,
                service,
                settings,
            } => {
                let vs = self.vserver("name", vserver.as_str())?;
                let service_type = match self.service_groups.get(service.as_str()) {
                    // A group's members carry their own weights (NetScaler refuses one here).
                    Some(_) if !settings.is_empty() => {
                        return Err(CliError::arg_value(
                            ErrorKind::InvalidArgumentValue,
                            "weight",
                            service.as_str(),
                        )
                        .with_detail(
                            "Argument pre-requisite missing: set weights on the service group's members",
                        ));
                    }
                    Some(g) => g.service_type,
                    None => self.service("serviceName", service.as_str())?.service_type,
                };
                if vs.bindings.iter().any(|b| b.service == *service) {
                    return Err(CliError::arg_value(
                        ErrorKind::ResourceAlreadyBound,
                        "serviceName",
                        service.as_str(),
                    ));
                }
                if vs.service_type.transport() != service_type.transport() {
                    return Err(CliError::arg_value(
                        ErrorKind::TypeMismatch,
                        "serviceName",
                        service.as_str(),
                    )
                    .with_detail(format!(
                        "Service type {} cannot be bound to a {} vserver",
                        service_type, vs.service_type
                    )));
                }
                let binding = ServiceBinding {
                    service: service.clone(),
                    settings: VsBindSettings::default().with(settings),
                };
                self.vservers[vserver.as_str()].bindings.push(binding);
            }
            VserverCmd::Unbind { vserver, service } => {
                let vs = self.vserver("name", vserver.as_str())?;
                let i = vs
                    .bindings
                    .iter()
                    .position(|b| b.service == *service)
                    .ok_or_else(|| {
                        CliError::arg_value(
                            ErrorKind::ResourceNotBound,
                            "serviceName",
                            service.as_str(),
                        )
                    })?;
                self.vservers[vserver.as_str()].bindings.remove(i);
            }
        }
        Ok(())
    }

    /// A vserver's persistence timeout fits its type; its backup exists, carries the same
    /// transport, and the chain of backups from it never comes back to it.
    fn check_vserver(&self, name: &Name) -> Result<()> {
        let vs = self.vserver("name", name.as_str())?;
        // NetScaler bounds the timeout per persistence type: 0 exists only for cookie
        // insertion (an L7 type, refused); the L4 types take 2-1440 minutes.
        let timeout = vs.settings.timeout.get();
        if vs.settings.persistence_type == Persistence::SourceIp && timeout < 2 {
            return Err(CliError::arg_value(
                ErrorKind::ValueOutOfRange,
                "timeout",
                timeout.to_string(),
            )
            .with_detail("SOURCEIP persistence lasts 2-1440 minutes"));
        }
        let Some(first) = &vs.settings.backup_vserver else {
            return Ok(());
        };
        let mut next = Some(first);
        let mut seen = vec![name];
        while let Some(b) = next {
            let backup = self.vserver("backupVServer", b.as_str())?;
            if seen.contains(&b) {
                return Err(CliError::arg_value(
                    ErrorKind::InvalidArgumentValue,
                    "backupVServer",
                    first.as_str(),
                )
                .with_detail("The chain of backup vservers comes back to this vserver"));
            }
            if !transports_overlap(vs.service_type, backup.service_type) {
                return Err(CliError::arg_value(
                    ErrorKind::TypeMismatch,
                    "backupVServer",
                    b.as_str(),
                )
                .with_detail(format!(
                    "A {} vserver cannot back up a {} vserver",
                    backup.service_type, vs.service_type
                )));
            }
            seen.push(b);
            next = backup.settings.backup_vserver.as_ref();
        }
        Ok(())
    }

    /// No two vservers may listen on the same address, port and transport.
    fn check_vip_free(
        &self,
        except: Option<&str>,
        service_type: ServiceType,
        ip: IpAddr,
        port: Port,
    ) -> Result<()> {
        let clash = self
            .vservers
            .values()
            .filter(|v| Some(v.name.as_str()) != except)
            .find(|v| {
                v.vip.is_some_and(|(vip, vport)| {
                    vip == ip
                        && (vport == port || vport == Port::Any || port == Port::Any)
                        && transports_overlap(v.service_type, service_type)
                })
            });
        match clash {
            Some(v) => Err(CliError::arg_value(
                ErrorKind::AddressInUse,
                "IPAddress",
                format!("{ip}:{port}"),
            )
            .with_detail(format!(
                "IP address and port combination already in use by vserver {}",
                v.name
            ))),
            None => Ok(()),
        }
    }
}
