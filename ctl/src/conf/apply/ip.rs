//! `ns ip` (the engine's addresses) and `route` (gateways toward services).

use super::super::Config;
use super::super::model::*;
use super::exists;
use crate::command::{NsIpCmd, RouteCmd};
use crate::error::{CliError, ErrorKind, Result};
use crate::settings::Settings;

impl Config {
    pub(super) fn apply_ns_ip(&mut self, cmd: &NsIpCmd) -> Result<()> {
        match cmd {
            NsIpCmd::Add {
                addr,
                netmask,
                settings,
            } => {
                settings.iter().try_for_each(NsIpSetting::check_supported)?;
                if self.ns_ips.contains_key(addr) {
                    return Err(exists("IPAddress", &addr.to_string()));
                }
                let ip = NsIp {
                    addr: *addr,
                    netmask: *netmask,
                    settings: NsIpSettings::default().with(settings),
                };
                self.ns_ips.insert(*addr, ip);
            }
            NsIpCmd::Rm { addr } => {
                let ip = self.ns_ips.get(addr).ok_or_else(|| {
                    CliError::arg_value(ErrorKind::NoSuchResource, "IPAddress", addr.to_string())
                })?;
                let still_reached = |gw| {
                    self.ns_ips.values().any(|o| {
                        o.addr != ip.addr && o.settings.kind == IpType::Snip && o.contains(gw)
                    })
                };
                if let Some(r) = self.routes.iter().find(|r| {
                    ip.settings.kind == IpType::Snip
                        && ip.contains(r.gateway)
                        && !still_reached(r.gateway)
                }) {
                    return Err(CliError::arg_value(
                        ErrorKind::ResourceInUse,
                        "IPAddress",
                        addr.to_string(),
                    )
                    .with_detail(format!(
                        "The route to {} uses this address's subnet",
                        r.network
                    )));
                }
                self.ns_ips.shift_remove(addr);
            }
        }
        Ok(())
    }

    pub(super) fn apply_route(&mut self, cmd: &RouteCmd) -> Result<()> {
        match cmd {
            RouteCmd::Add {
                network,
                netmask,
                gateway,
            } => {
                if u32::from(*network) & !netmask.bits() != 0 {
                    return Err(CliError::arg_value(
                        ErrorKind::InvalidArgumentValue,
                        "network",
                        network.to_string(),
                    )
                    .with_detail("Network address has host bits set"));
                }
                let route = Route {
                    network: *network,
                    netmask: *netmask,
                    gateway: *gateway,
                };
                if self.routes.contains(&route) {
                    return Err(exists("network", &network.to_string()));
                }
                if !self
                    .ns_ips
                    .values()
                    .any(|ip| ip.settings.kind == IpType::Snip && ip.contains(*gateway))
                {
                    return Err(CliError::arg_value(
                        ErrorKind::InvalidArgumentValue,
                        "gateway",
                        gateway.to_string(),
                    )
                    .with_detail("Gateway is not in the subnet of any SNIP"));
                }
                self.routes.push(route);
            }
            RouteCmd::Rm {
                network,
                netmask,
                gateway,
            } => {
                let route = Route {
                    network: *network,
                    netmask: *netmask,
                    gateway: *gateway,
                };
                let i = self
                    .routes
                    .iter()
                    .position(|r| *r == route)
                    .ok_or_else(|| {
                        CliError::arg_value(
                            ErrorKind::NoSuchResource,
                            "network",
                            network.to_string(),
                        )
                    })?;
                self.routes.remove(i);
            }
        }
        Ok(())
    }
}
