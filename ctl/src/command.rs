//! The typed commands the grammar produces. Every line of the command language, typed in the
//! shell or replayed from ns.conf, becomes one [`Command`].

use std::net::{IpAddr, Ipv4Addr};

use crate::conf::model::{
    LbParameterKey, LbParameterSetting, MonitorBindSetting, MonitorKey, MonitorSetting,
    MonitorType, NsIpSetting, OutputFormat, Seconds, ServerSetting, ServiceKey, ServiceSetting,
    ServiceType, VsBindSetting, VserverKey, VserverSetting,
};
use crate::grammar::Object;
use crate::value::{Bounded, Name, Netmask, Oid, Port, YesNo};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    AddNsIp {
        addr: Ipv4Addr,
        netmask: Netmask,
        settings: Vec<NsIpSetting>,
    },
    RmNsIp {
        addr: Ipv4Addr,
    },
    AddRoute {
        network: Ipv4Addr,
        netmask: Netmask,
        gateway: Ipv4Addr,
    },
    RmRoute {
        network: Ipv4Addr,
        netmask: Netmask,
        gateway: Ipv4Addr,
    },

    AddServer {
        name: Name,
        addr: IpAddr,
        settings: Vec<ServerSetting>,
    },
    RmServer {
        name: Name,
    },
    RenameServer {
        name: Name,
        new_name: Name,
    },
    EnableServer {
        name: Name,
    },
    DisableServer {
        name: Name,
    },

    AddService {
        name: Name,
        server: Name,
        service_type: ServiceType,
        port: Port,
        settings: Vec<ServiceSetting>,
    },
    SetService {
        name: Name,
        settings: Vec<ServiceSetting>,
    },
    UnsetService {
        name: Name,
        keys: Vec<ServiceKey>,
    },
    RmService {
        name: Name,
    },
    RenameService {
        name: Name,
        new_name: Name,
    },
    EnableService {
        name: Name,
    },
    /// `delay` and `graceful` drive the runtime drain; the configuration records DISABLED.
    DisableService {
        name: Name,
        delay: Option<Seconds>,
        graceful: YesNo,
    },
    AddServiceGroup {
        name: Name,
        service_type: ServiceType,
        settings: Vec<ServiceSetting>,
    },
    SetServiceGroup {
        name: Name,
        settings: Vec<ServiceSetting>,
    },
    UnsetServiceGroup {
        name: Name,
        keys: Vec<ServiceKey>,
    },
    RmServiceGroup {
        name: Name,
    },
    RenameServiceGroup {
        name: Name,
        new_name: Name,
    },
    /// `bind serviceGroup <sg> <server|IP> <port> [-weight N]`.
    BindServiceGroupMember {
        group: Name,
        server: Name,
        port: Port,
        weight: Option<Bounded<1, 100>>,
    },
    UnbindServiceGroupMember {
        group: Name,
        server: Name,
        port: Port,
    },
    BindServiceGroupMonitor {
        group: Name,
        monitor: Name,
        settings: Vec<MonitorBindSetting>,
    },
    UnbindServiceGroupMonitor {
        group: Name,
        monitor: Name,
    },
    /// `enable serviceGroup <sg> [<server> <port>]`: the group or one member.
    EnableServiceGroup {
        name: Name,
        member: Option<(Name, Port)>,
    },
    /// `disable serviceGroup <sg> [<server> <port>] [-delay N] [-graceFul YES]`.
    DisableServiceGroup {
        name: Name,
        member: Option<(Name, Port)>,
        delay: Option<Seconds>,
        graceful: YesNo,
    },
    BindServiceMonitor {
        service: Name,
        monitor: Name,
        settings: Vec<MonitorBindSetting>,
    },
    UnbindServiceMonitor {
        service: Name,
        monitor: Name,
    },

    AddLbVserver {
        name: Name,
        service_type: ServiceType,
        vip: Option<(IpAddr, Port)>,
        settings: Vec<VserverSetting>,
    },
    SetLbVserver {
        name: Name,
        settings: Vec<VserverSetting>,
    },
    UnsetLbVserver {
        name: Name,
        keys: Vec<VserverKey>,
    },
    RmLbVserver {
        name: Name,
    },
    RenameLbVserver {
        name: Name,
        new_name: Name,
    },
    EnableLbVserver {
        name: Name,
    },
    DisableLbVserver {
        name: Name,
    },
    BindLbVserver {
        vserver: Name,
        service: Name,
        settings: Vec<VsBindSetting>,
    },
    UnbindLbVserver {
        vserver: Name,
        service: Name,
    },

    AddLbMonitor {
        name: Name,
        monitor_type: MonitorType,
        settings: Vec<MonitorSetting>,
    },
    SetLbMonitor {
        name: Name,
        monitor_type: MonitorType,
        settings: Vec<MonitorSetting>,
    },
    UnsetLbMonitor {
        name: Name,
        monitor_type: MonitorType,
        keys: Vec<MonitorKey>,
    },
    RmLbMonitor {
        name: Name,
        monitor_type: Option<MonitorType>,
    },
    RenameLbMonitor {
        name: Name,
        new_name: Name,
    },
    BindLbMonitorMetric {
        monitor: Name,
        metric: Name,
        threshold: u64,
        weight: u64,
    },
    UnbindLbMonitorMetric {
        monitor: Name,
        metric: Name,
    },
    /// `enable lb monitor <service> [<monitor>]`: the per-binding state; no monitor = all.
    EnableLbMonitor {
        service: Name,
        monitor: Option<Name>,
    },
    DisableLbMonitor {
        service: Name,
        monitor: Option<Name>,
    },

    AddLbMetricTable {
        name: Name,
    },
    RmLbMetricTable {
        name: Name,
    },
    BindLbMetricTable {
        table: Name,
        metric: Name,
        oid: Oid,
    },
    SetLbMetricTable {
        table: Name,
        metric: Name,
        oid: Oid,
    },
    UnbindLbMetricTable {
        table: Name,
        metric: Name,
    },

    SetLbParameter {
        settings: Vec<LbParameterSetting>,
    },
    UnsetLbParameter {
        keys: Vec<LbParameterKey>,
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

impl Command {
    /// Whether the command changes the configuration (and so may appear in ns.conf).
    pub fn changes_config(&self) -> bool {
        !matches!(
            self,
            Self::SaveNsConfig | Self::Show { .. } | Self::Stat { .. } | Self::Help { .. }
        )
    }
}

/// The weight a metric binding takes when `-metricWeight` is absent.
pub const DEFAULT_METRIC_WEIGHT: Bounded<1, 100> = Bounded::new(1);
