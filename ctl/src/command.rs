//! The typed commands the grammar produces. Every line of the command language, typed in the
//! shell or replayed from ns.conf, becomes one [`Command`].

use std::net::{IpAddr, Ipv4Addr};

use crate::conf::model::{
    LbParameterKey, LbParameterSetting, MonitorBindSetting, MonitorKey, MonitorSetting,
    MonitorType, NameServerSetting, NsIpSetting, OutputFormat, Seconds, ServerSetting, ServiceKey,
    ServiceSetting, ServiceType, VsBindSetting, VserverKey, VserverSetting,
};
use crate::grammar::Object;
use crate::value::{Bounded, Name, Netmask, Oid, Port, ServerAddress, YesNo};

/// One line of the command language, by the object it acts on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    NsIp(NsIpCmd),
    Route(RouteCmd),
    DnsNameServer(NameServerCmd),
    Server(ServerCmd),
    Service(ServiceCmd),
    ServiceGroup(ServiceGroupCmd),
    LbVserver(VserverCmd),
    LbMonitor(MonitorCmd),
    LbMetricTable(MetricTableCmd),
    LbParameter(ParameterCmd),
    SystemUser(SystemUserCmd),
    /// `enable ns mode …` / `disable ns mode …`.
    NsMode {
        enable: bool,
        modes: Vec<crate::conf::model::NsMode>,
    },
    SaveNsConfig,
    /// `clear ns config -force <level>`.
    ClearNsConfig {
        level: crate::conf::model::ClearLevel,
    },
    Show {
        object: Object,
        name: Option<Name>,
        format: OutputFormat,
    },
    Stat {
        object: Object,
        name: Option<Name>,
        format: OutputFormat,
    },
    Help {
        topic: Option<String>,
    },
}

/// `ns ip`: the engine's own addresses (SNIPs, VIPs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NsIpCmd {
    Add {
        addr: Ipv4Addr,
        netmask: Netmask,
        settings: Vec<NsIpSetting>,
    },
    Rm {
        addr: Ipv4Addr,
    },
    Set {
        addr: Ipv4Addr,
        settings: Vec<NsIpSetting>,
    },
    Unset {
        addr: Ipv4Addr,
        keys: Vec<crate::conf::model::NsIpKey>,
    },
    /// `enable ns ip` / `disable ns ip`: the address's `-state`.
    Enable {
        addr: Ipv4Addr,
    },
    Disable {
        addr: Ipv4Addr,
    },
}

/// `route`: static routes toward services behind a gateway.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RouteCmd {
    Add {
        network: Ipv4Addr,
        netmask: Netmask,
        gateway: Ipv4Addr,
        settings: Vec<crate::conf::model::RouteSetting>,
    },
    Rm {
        network: Ipv4Addr,
        netmask: Netmask,
        gateway: Ipv4Addr,
    },
    Set {
        network: Ipv4Addr,
        netmask: Netmask,
        gateway: Ipv4Addr,
        settings: Vec<crate::conf::model::RouteSetting>,
    },
    Unset {
        network: Ipv4Addr,
        netmask: Netmask,
        gateway: Ipv4Addr,
        keys: Vec<crate::conf::model::RouteKey>,
    },
}

/// `server`: a backend host by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerCmd {
    Add {
        name: Name,
        addr: ServerAddress,
        settings: Vec<ServerSetting>,
    },
    /// `set server <name> [-IPAddress <ip>] [-domainResolveNow] [options]`: its services
    /// follow a new address; a domain-based server is resolved again at once.
    Set {
        name: Name,
        addr: Option<IpAddr>,
        resolve_now: bool,
        settings: Vec<ServerSetting>,
    },
    Unset {
        name: Name,
        keys: Vec<crate::conf::model::ServerKey>,
    },
    Rm {
        name: Name,
    },
    Rename {
        name: Name,
        new_name: Name,
    },
    Enable {
        name: Name,
    },
    /// `disable server <name> [<delay>] [-graceFul YES]`: every service of the server goes
    /// out of service, at once, after `delay` seconds, or as its connections end.
    Disable {
        name: Name,
        delay: Option<Seconds>,
        graceful: YesNo,
    },
}

/// `dns nameServer`: the name servers domain-based servers are resolved with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NameServerCmd {
    Add {
        addr: IpAddr,
        settings: Vec<NameServerSetting>,
    },
    Rm {
        addr: IpAddr,
    },
    Enable {
        addr: IpAddr,
    },
    Disable {
        addr: IpAddr,
    },
}

/// `service`: a server's port of one type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServiceCmd {
    /// set, unset, rm, rename.
    Common(Common<ServiceSetting, ServiceKey>),
    Add {
        name: Name,
        server: Name,
        service_type: ServiceType,
        port: Port,
        settings: Vec<ServiceSetting>,
    },
    Enable {
        name: Name,
    },
    /// `delay` and `graceful` drive the runtime drain; the configuration records DISABLED.
    Disable {
        name: Name,
        delay: Option<Seconds>,
        graceful: YesNo,
    },
    BindMonitor {
        service: Name,
        monitor: Name,
        settings: Vec<MonitorBindSetting>,
    },
    /// `set service <name> -IPAddress <ip> [options]`: the service's own server moves.
    Readdress {
        name: Name,
        addr: IpAddr,
        settings: Vec<ServiceSetting>,
    },
    UnbindMonitor {
        service: Name,
        monitor: Name,
    },
}

/// `serviceGroup`: services made from one template, one per member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServiceGroupCmd {
    /// set, unset, rm, rename (members follow).
    Common(Common<ServiceSetting, ServiceKey>),
    Add {
        name: Name,
        service_type: ServiceType,
        settings: Vec<ServiceSetting>,
    },
    /// `bind serviceGroup <sg> <server|IP> <port> [-weight N]`.
    BindMember {
        group: Name,
        server: Name,
        port: Port,
        weight: Option<Bounded<1, 100>>,
        /// `-state DISABLED`: bound out of service.
        state: crate::value::EnabledDisabled,
    },
    UnbindMember {
        group: Name,
        server: Name,
        port: Port,
    },
    BindMonitor {
        group: Name,
        monitor: Name,
        settings: Vec<MonitorBindSetting>,
    },
    UnbindMonitor {
        group: Name,
        monitor: Name,
    },
    /// `enable serviceGroup <sg> [<server> <port>]`: the group or one member.
    Enable {
        name: Name,
        member: Option<(Name, Port)>,
    },
    /// `disable serviceGroup <sg> [<server> <port>] [-delay N] [-graceFul YES]`.
    Disable {
        name: Name,
        member: Option<(Name, Port)>,
        delay: Option<Seconds>,
        graceful: YesNo,
    },
}

/// `lb vserver`: a VIP, its method and its bound services.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VserverCmd {
    /// set, unset, rm, rename.
    Common(Common<VserverSetting, VserverKey>),
    Add {
        name: Name,
        service_type: ServiceType,
        vip: Option<(IpAddr, Port)>,
        settings: Vec<VserverSetting>,
    },
    Enable {
        name: Name,
    },
    Disable {
        name: Name,
    },
    Bind {
        vserver: Name,
        service: Name,
        settings: Vec<VsBindSetting>,
    },
    Unbind {
        vserver: Name,
        service: Name,
    },
}

/// `lb monitor`: health and load probes, and their bindings' states.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MonitorCmd {
    Add {
        name: Name,
        monitor_type: MonitorType,
        settings: Vec<MonitorSetting>,
    },
    Set {
        name: Name,
        monitor_type: MonitorType,
        settings: Vec<MonitorSetting>,
    },
    Unset {
        name: Name,
        monitor_type: MonitorType,
        keys: Vec<MonitorKey>,
    },
    Rm {
        name: Name,
        monitor_type: Option<MonitorType>,
    },
    Rename {
        name: Name,
        new_name: Name,
    },
    BindMetric {
        monitor: Name,
        metric: Name,
        threshold: u64,
        weight: u64,
    },
    UnbindMetric {
        monitor: Name,
        metric: Name,
    },
    /// `bind lb monitor <mon> <service | serviceGroup>`: the older spelling of `bind service
    /// <s> -monitorName <mon>`.
    BindTo {
        monitor: Name,
        target: Name,
        settings: Vec<MonitorBindSetting>,
    },
    UnbindFrom {
        monitor: Name,
        target: Name,
    },
    /// `enable lb monitor <service> [<monitor>]`: the per-binding state; no monitor = all.
    Enable {
        service: Name,
        monitor: Option<Name>,
    },
    Disable {
        service: Name,
        monitor: Option<Name>,
    },
}

/// `lb metricTable`: SNMP OIDs for LOAD monitors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MetricTableCmd {
    Add { name: Name },
    Rm { name: Name },
    Bind { table: Name, metric: Name, oid: Oid },
    Set { table: Name, metric: Name, oid: Oid },
    Unbind { table: Name, metric: Name },
}

/// `lb parameter`: engine-wide balancing settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParameterCmd {
    Set { settings: Vec<LbParameterSetting> },
    Unset { keys: Vec<LbParameterKey> },
}

/// What `set`, `unset`, `rm` and `rename` do to a named object whose options are `S` (and
/// their keys `K`): one shape for services, service groups and vservers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Common<S, K> {
    Set { name: Name, settings: Vec<S> },
    Unset { name: Name, keys: Vec<K> },
    Rm { name: Name },
    Rename { name: Name, new_name: Name },
}

impl Command {
    /// Whether the command changes the configuration (and so may appear in ns.conf).
    pub fn changes_config(&self) -> bool {
        !matches!(
            self,
            Self::SaveNsConfig | Self::Show { .. } | Self::Stat { .. } | Self::Help { .. }
        )
    }
}

/// A password as typed: in clear (hashed when applied), or a hash given with `-encrypted`.
#[derive(Clone, PartialEq, Eq)]
pub enum Password {
    Plain(String),
    Encrypted(crate::conf::users::PasswordHash),
}

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Plain(_) => "Password::Plain(…)",
            Self::Encrypted(_) => "Password::Encrypted(…)",
        })
    }
}

/// `system user`: the management API's users and their command policies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SystemUserCmd {
    Add {
        name: Name,
        password: Password,
        settings: Vec<crate::conf::users::SystemUserSetting>,
    },
    Set {
        name: Name,
        password: Option<Password>,
        settings: Vec<crate::conf::users::SystemUserSetting>,
    },
    Unset {
        name: Name,
        keys: Vec<crate::conf::users::SystemUserKey>,
    },
    Rm {
        name: Name,
    },
    Bind {
        name: Name,
        policy: crate::conf::users::CommandPolicy,
        priority: u32,
    },
    Unbind {
        name: Name,
        policy: crate::conf::users::CommandPolicy,
    },
}

/// The weight a metric binding takes when `-metricWeight` is absent.
pub const DEFAULT_METRIC_WEIGHT: Bounded<1, 100> = Bounded::new(1);
