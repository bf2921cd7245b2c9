//! `ns ip` (the engine's addresses) and `route` (gateways toward services).

use super::super::Config;
use super::super::model::*;
use super::exists;
use crate::command::{NsIpCmd, RouteCmd};
use crate::error::{CliError, ErrorKind, Result};
use crate::settings::Settings;
use crate::value::Netmask;
use std::net::Ipv4Addr;

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
            NsIpCmd::Set { addr, settings } => {
                if settings.iter().any(|s| matches!(s, NsIpSetting::Type(_))) {
                    return Err(CliError::arg(ErrorKind::InvalidArgumentValue, "type")
                        .with_detail("The type of an address cannot change once it is added"));
                }
                settings.iter().try_for_each(NsIpSetting::check_supported)?;
                let ip = self.ns_ip_mut(*addr)?;
                for s in settings {
                    ip.settings.apply(s);
                }
            }
            NsIpCmd::Unset { addr, keys } => {
                if keys.contains(&NsIpKey::Type) {
                    return Err(CliError::arg(ErrorKind::InvalidArgumentValue, "type")
                        .with_detail("The type of an address cannot change once it is added"));
                }
                let ip = self.ns_ip_mut(*addr)?;
                for k in keys {
                    ip.settings.reset(*k);
                }
            }
            // Addresses are always enabled (disabling one is refused, as `-state DISABLED`).
            NsIpCmd::Enable { addr } => {
                self.ns_ip_mut(*addr)?;
            }
            NsIpCmd::Disable { addr } => {
                self.ns_ip_mut(*addr)?;
                NsIpSetting::State(crate::value::EnabledDisabled::Disabled).check_supported()?;
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
                settings,
            } => {
                if u32::from(*network) & !netmask.bits() != 0 {
                    return Err(CliError::arg_value(
                        ErrorKind::InvalidArgumentValue,
                        "network",
                        network.to_string(),
                    )
                    .with_detail("Network address has host bits set"));
                }
                if self
                    .routes
                    .iter()
                    .any(|r| r.is(*network, *netmask, *gateway))
                {
                    return Err(exists("network", &network.to_string()));
                }
                let route = Route {
                    network: *network,
                    netmask: *netmask,
                    gateway: *gateway,
                    settings: RouteSettings::default().with(settings),
                };
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
                let i = self.route_index(*network, *netmask, *gateway)?;
                self.routes.remove(i);
            }
            RouteCmd::Set {
                network,
                netmask,
                gateway,
                settings,
            } => {
                let i = self.route_index(*network, *netmask, *gateway)?;
                for s in settings {
                    self.routes[i].settings.apply(s);
                }
            }
            RouteCmd::Unset {
                network,
                netmask,
                gateway,
                keys,
            } => {
                let i = self.route_index(*network, *netmask, *gateway)?;
                for k in keys {
                    self.routes[i].settings.reset(*k);
                }
            }
        }
        Ok(())
    }
}

impl Config {
    fn ns_ip_mut(&mut self, addr: Ipv4Addr) -> Result<&mut NsIp> {
        self.ns_ips.get_mut(&addr).ok_or_else(|| {
            CliError::arg_value(ErrorKind::NoSuchResource, "IPAddress", addr.to_string())
        })
    }

    fn route_index(&self, network: Ipv4Addr, netmask: Netmask, gateway: Ipv4Addr) -> Result<usize> {
        self.routes
            .iter()
            .position(|r| r.is(network, netmask, gateway))
            .ok_or_else(|| {
                CliError::arg_value(ErrorKind::NoSuchResource, "network", network.to_string())
            })
    }
}
