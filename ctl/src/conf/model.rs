//! The configuration model: the objects an operator creates, with their settings.
//!
//! Objects refer to each other by name (as NetScaler's commands do); [`super::Config`] keeps
//! every reference valid. Settings structs come from [`crate::settings!`], so their defaults,
//! option names and help are declared once.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};

use crate::error::{CliError, ErrorKind, Result};
use crate::keywords;
use crate::lex::Token;
use crate::settings;
use crate::value::{
    ArgValue, Bounded, Duration, EnabledDisabled, IpList, Name, Netmask, Oid, Port, RespCodes,
    Text, YesNo, single_token,
};

keywords! {
    /// `add ns ip -type`.
    pub enum IpType { Snip = "SNIP", Vip = "VIP" }
}

keywords! {
    /// `-lbMethod`: the methods an L4 engine can apply (NetScaler's L7 methods are refused).
    pub enum LbMethod {
        RoundRobin = "ROUNDROBIN",
        LeastConnection = "LEASTCONNECTION",
        Lrtm = "LRTM",
        LeastPackets = "LEASTPACKETS",
        LeastBandwidth = "LEASTBANDWIDTH",
        CustomLoad = "CUSTOMLOAD",
        SourceIpHash = "SOURCEIPHASH",
        DestinationIpHash = "DESTINATIONIPHASH",
        SrcIpDestIpHash = "SRCIPDESTIPHASH",
        SrcIpSrcPortHash = "SRCIPSRCPORTHASH",
    }
}

impl LbMethod {
    pub const fn is_hash(self) -> bool {
        matches!(
            self,
            Self::SourceIpHash
                | Self::DestinationIpHash
                | Self::SrcIpDestIpHash
                | Self::SrcIpSrcPortHash
        )
    }

    /// The words `show lb vserver` uses (`Current Method: Round Robin`).
    pub const fn display_name(self) -> &'static str {
        match self {
            Self::RoundRobin => "Round Robin",
            Self::LeastConnection => "Least Connection",
            Self::Lrtm => "Least Response Time using Monitors",
            Self::LeastPackets => "Least Packets",
            Self::LeastBandwidth => "Least Bandwidth",
            Self::CustomLoad => "Custom Load",
            Self::SourceIpHash => "Source IP Hash",
            Self::DestinationIpHash => "Destination IP Hash",
            Self::SrcIpDestIpHash => "Source IP Destination IP Hash",
            Self::SrcIpSrcPortHash => "Source IP Source Port Hash",
        }
    }
}

keywords! {
    /// `clear ns config <level>`: basic keeps the IPs, routes and `lb parameter`; extended
    /// keeps the IPs and routes; full keeps nothing.
    pub enum ClearLevel { Basic = "basic", Extended = "extended", Full = "full" }
}

keywords! {
    /// `-persistenceType`: NONE, or SOURCEIP (a client IP keeps its service for `-timeout`
    /// minutes after its last new connection).
    pub enum Persistence { None = "NONE", SourceIp = "SOURCEIP" }
}

keywords! {
    pub enum MonitorType {
        Ping = "PING", Tcp = "TCP", Http = "HTTP", TcpEcv = "TCP-ECV", HttpEcv = "HTTP-ECV",
        UdpEcv = "UDP-ECV", Dns = "DNS", Ftp = "FTP", User = "USER", Load = "LOAD",
    }
}

keywords! {
    pub enum DnsQueryType { Address = "Address", Aaaa = "AAAA" }
}

keywords! {
    pub enum SnmpVersion { V1 = "V1", V2 = "V2" }
}

keywords! {
    pub enum OutputFormat { Text = "TEXT", Json = "JSON" }
}

/// The transport a service type is balanced on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transport {
    Tcp,
    Udp,
    Any,
}

/// Service and vserver types. Matched exactly (no prefixes): `SSL` must not silently become
/// `SSL_BRIDGE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ServiceType {
    Http,
    Tcp,
    Udp,
    SslBridge,
    Dns,
    Any,
}

impl ServiceType {
    pub const ALL: &'static [ServiceType] = &[
        Self::Http,
        Self::Tcp,
        Self::Udp,
        Self::SslBridge,
        Self::Dns,
        Self::Any,
    ];

    pub const fn keyword(self) -> &'static str {
        match self {
            Self::Http => "HTTP",
            Self::Tcp => "TCP",
            Self::Udp => "UDP",
            Self::SslBridge => "SSL_BRIDGE",
            Self::Dns => "DNS",
            Self::Any => "ANY",
        }
    }

    pub const fn transport(self) -> Transport {
        match self {
            Self::Http | Self::Tcp | Self::SslBridge => Transport::Tcp,
            Self::Udp | Self::Dns => Transport::Udp,
            Self::Any => Transport::Any,
        }
    }

    /// Idle timeouts (client, server) in seconds when none is configured: NetScaler's observed
    /// 180/360 for HTTP and 9000 for TCP; UDP sessions live 120 s (our choice).
    pub const fn default_timeouts(self) -> (u64, u64) {
        match self {
            Self::Http => (180, 360),
            Self::Tcp | Self::SslBridge | Self::Any => (9000, 9000),
            Self::Udp | Self::Dns => (120, 120),
        }
    }
}

impl fmt::Display for ServiceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.keyword())
    }
}

impl ArgValue for ServiceType {
    fn help() -> String {
        let words: Vec<&str> = Self::ALL.iter().map(|t| t.keyword()).collect();
        format!("( {} )", words.join(" | "))
    }
    fn parse(arg: &str, tokens: &[Token]) -> Result<Self> {
        let word = single_token(arg, tokens)?;
        Self::ALL.iter().copied().find(|t| t.keyword().eq_ignore_ascii_case(word)).ok_or_else(|| {
            CliError::arg_value(ErrorKind::InvalidArgumentValue, arg, word).with_detail(
                "Service type not supported by an L4 engine (use HTTP, TCP, UDP, SSL_BRIDGE, DNS or ANY)",
            )
        })
    }
    fn render(&self, out: &mut String) {
        out.push_str(self.keyword());
    }
}

pub type Weight = Bounded<1, 100>;
pub type Seconds = Bounded<0, 31_536_000>;
pub type TcpPort = Bounded<1, 65535>;

settings! {
    /// `add ns ip` options.
    pub struct NsIpSettings / NsIpSetting / NsIpKey {
        kind: IpType = IpType::Snip, "type", Type, "SNIP (source of traffic to services) or VIP";
    }
}

settings! {
    pub struct ServerSettings / ServerSetting / ServerKey {
        state: EnabledDisabled = EnabledDisabled::Enabled, "state", State, "Initial state";
        comment: Option<Text> = None, "comment", Comment, "Free text";
    }
}

settings! {
    pub struct ServiceSettings / ServiceSetting / ServiceKey {
        max_client: Bounded<0, 4_294_967_294> = Bounded::new(0), "maxClient", MaxClient, "Most open connections (0 = unlimited)";
        max_req: Bounded<0, 65535> = Bounded::new(0), "maxReq", MaxReq, "Most requests per connection (0 = unlimited)";
        health_monitor: YesNo = YesNo::Yes, "healthMonitor", HealthMonitor, "NO: never probed, always UP";
        mon_threshold: Bounded<0, 65535> = Bounded::new(0), "monThreshold", MonThreshold, "Sum of UP monitor weights needed for UP (0 = all monitors UP)";
        state: EnabledDisabled = EnabledDisabled::Enabled, "state", State, "Administrative state";
        down_state_flush: EnabledDisabled = EnabledDisabled::Enabled, "downStateFlush", DownStateFlush, "Flush existing flows when the service goes DOWN";
        clt_timeout: Option<Seconds> = None, "cltTimeout", CltTimeout, "Client idle timeout (s)";
        svr_timeout: Option<Seconds> = None, "svrTimeout", SvrTimeout, "Server idle timeout (s)";
        hash_id: Option<Bounded<1, 4_294_967_295>> = None, "hashId", HashId, "Identity in hash methods instead of IP:port";
        comment: Option<Text> = None, "comment", Comment, "Free text";
    }
}

settings! {
    pub struct VserverSettings / VserverSetting / VserverKey {
        lb_method: LbMethod = LbMethod::LeastConnection, "lbMethod", LbMethod, "Load-balancing method";
        netmask: Option<Netmask> = None, "netmask", Netmask, "Mask applied to IPs before hashing";
        persistence_type: Persistence = Persistence::None, "persistenceType", PersistenceType, "Persistence (NONE, SOURCEIP)";
        timeout: Bounded<1, 1440> = Bounded::new(2), "timeout", Timeout, "Persistence timeout (minutes)";
        clt_timeout: Option<Seconds> = None, "cltTimeout", CltTimeout, "Client idle timeout (s)";
        down_state_flush: EnabledDisabled = EnabledDisabled::Enabled, "downStateFlush", DownStateFlush, "Flush flows when the vserver goes DOWN";
        state: EnabledDisabled = EnabledDisabled::Enabled, "state", State, "Administrative state";
        comment: Option<Text> = None, "comment", Comment, "Free text";
    }
}

settings! {
    /// `add/set lb monitor` options, with NetScaler's defaults and units.
    pub struct MonitorSettings / MonitorSetting / MonitorKey {
        interval: Duration<1, 20940> = Duration::secs(5), "interval", Interval, "Time between probes";
        resp_timeout: Duration<1, 20939> = Duration::secs(2), "resptimeout", RespTimeout, "Probe fails after this long (less than interval)";
        retries: Bounded<1, 127> = Bounded::new(3), "retries", Retries, "Consecutive failures that mark DOWN";
        failure_retries: Bounded<0, 32> = Bounded::new(0), "failureRetries", FailureRetries, "Failures among the last retries that mark DOWN (0 = all)";
        alert_retries: Bounded<0, 32> = Bounded::new(0), "alertRetries", AlertRetries, "Failures before an alert";
        success_retries: Bounded<1, 32> = Bounded::new(1), "successRetries", SuccessRetries, "Consecutive successes that mark UP";
        down_time: Duration<1, 20939> = Duration::secs(30), "downTime", DownTime, "Probe period while DOWN";
        dest_ip: Option<IpAddr> = None, "destIP", DestIp, "Probe this IP instead of the service's";
        dest_port: Option<TcpPort> = None, "destPort", DestPort, "Probe this port instead of the service's";
        state: EnabledDisabled = EnabledDisabled::Enabled, "state", State, "Administrative state";
        reverse: YesNo = YesNo::No, "reverse", Reverse, "Success marks DOWN, failure marks UP";
        lrtm: EnabledDisabled = EnabledDisabled::Disabled, "LRTM", Lrtm, "Feed response times to LRTM";
        secure: YesNo = YesNo::No, "secure", Secure, "Probe over TLS (TCPS, HTTPS, HTTPS-ECV)";
        send: Option<Text> = None, "send", Send, "String sent (ECV monitors)";
        recv: Option<Text> = None, "recv", Recv, "String expected back (ECV monitors)";
        resp_code: Option<RespCodes> = None, "respCode", RespCode, "HTTP codes meaning UP (default 200)";
        http_request: Option<Text> = None, "httpRequest", HttpRequest, "HTTP request line (default \"HEAD /\")";
        custom_headers: Option<Text> = None, "customHeaders", CustomHeaders, "Extra HTTP headers";
        query: Option<Text> = None, "query", Query, "DNS name to resolve";
        query_type: DnsQueryType = DnsQueryType::Address, "queryType", QueryType, "DNS query type";
        ip_address: Option<IpList> = None, "IPAddress", IpAddress, "Addresses the DNS answer must hold";
        user_name: Option<Text> = None, "userName", UserName, "FTP user";
        password: Option<Text> = None, "password", Password, "FTP password";
        script_name: Option<Text> = None, "scriptName", ScriptName, "USER monitor script";
        script_args: Option<Text> = None, "scriptArgs", ScriptArgs, "Arguments for the script";
        dispatcher_ip: Option<IpAddr> = None, "dispatcherIP", DispatcherIp, "Script dispatcher IP";
        dispatcher_port: Option<TcpPort> = None, "dispatcherPort", DispatcherPort, "Script dispatcher port";
        snmp_community: Option<Text> = None, "snmpCommunity", SnmpCommunity, "SNMP community (default public)";
        snmp_version: SnmpVersion = SnmpVersion::V1, "snmpVersion", SnmpVersion, "SNMP version";
        metric_table: Option<Name> = None, "metricTable", MetricTable, "Metric table of a LOAD monitor";
    }
}

impl MonitorType {
    /// Whether `-key` means anything for this monitor type. Common timer and state options
    /// apply to every type.
    pub fn accepts(self, key: MonitorKey) -> bool {
        use MonitorKey as K;
        use MonitorType as T;
        match key {
            K::Secure => matches!(self, T::Tcp | T::Http | T::TcpEcv | T::HttpEcv),
            K::Send | K::Recv => matches!(self, T::TcpEcv | T::HttpEcv | T::UdpEcv),
            K::RespCode | K::HttpRequest => self == T::Http,
            K::CustomHeaders => matches!(self, T::Http | T::HttpEcv),
            K::Query | K::QueryType | K::IpAddress => self == T::Dns,
            K::UserName | K::Password => self == T::Ftp,
            K::ScriptName | K::ScriptArgs | K::DispatcherIp | K::DispatcherPort => self == T::User,
            K::SnmpCommunity | K::SnmpVersion | K::MetricTable => self == T::Load,
            K::DestPort => self != T::Ping,
            _ => true,
        }
    }
}

settings! {
    /// `bind service <svc> -monitorName <mon>` options.
    pub struct MonitorBindSettings / MonitorBindSetting / MonitorBindKey {
        mon_state: EnabledDisabled = EnabledDisabled::Enabled, "monState", MonState, "Probe with this monitor";
        weight: Weight = Bounded::new(1), "weight", Weight, "Weight toward monThreshold";
        passive: bool = false, "passive", Passive, "LOAD monitor: a crossed threshold does not exclude the service";
    }
}

settings! {
    /// `bind lb vserver <vs> <svc>` options.
    pub struct VsBindSettings / VsBindSetting / VsBindKey {
        weight: Weight = Bounded::new(1), "weight", Weight, "Share of new connections (1-100)";
    }
}

settings! {
    /// `set lb parameter` options.
    pub struct LbParameterSettings / LbParameterSetting / LbParameterKey {
        startup_rr_factor: Bounded<0, 4_294_967_295> = Bounded::new(0), "startupRRFactor", StartupRrFactor, "Round robin for N x bound services new flows after a change (0 = off)";
        consolidated_lconn: YesNo = YesNo::Yes, "consolidatedLConn", ConsolidatedLConn, "Least-X methods use counts summed over all cores";
        use_port_for_hash_lb: YesNo = YesNo::Yes, "usePortForHashLb", UsePortForHashLb, "Hash methods include the service port";
    }
}

/// `add ns ip`: a SNIP or VIP owned by the engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NsIp {
    pub addr: Ipv4Addr,
    pub netmask: Netmask,
    pub settings: NsIpSettings,
}

impl NsIp {
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        let m = self.netmask.bits();
        u32::from(self.addr) & m == u32::from(ip) & m
    }
}

/// `add route <network> <netmask> <gateway>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub network: Ipv4Addr,
    pub netmask: Netmask,
    pub gateway: Ipv4Addr,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Server {
    pub name: Name,
    pub addr: IpAddr,
    pub settings: ServerSettings,
}

/// A monitor bound to a service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MonitorBinding {
    pub monitor: Name,
    pub settings: MonitorBindSettings,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Service {
    pub name: Name,
    pub server: Name,
    pub service_type: ServiceType,
    pub port: Port,
    pub settings: ServiceSettings,
    /// Explicitly bound monitors; empty means the default monitor (see [`Self::default_monitor`]).
    pub monitors: Vec<MonitorBinding>,
    /// The service group this service is a member of. Members are made from their group
    /// (named `<group>?<server>?<port>`, which no command can spell) and saved as the group.
    pub group: Option<Name>,
}

impl Service {
    /// `tcp-default` for TCP services, `ping-default` for the rest (NetScaler's rule).
    pub fn default_monitor(&self) -> &'static str {
        match self.service_type.transport() {
            Transport::Tcp => TCP_DEFAULT,
            Transport::Udp | Transport::Any => PING_DEFAULT,
        }
    }
}

/// A member of a service group: `bind serviceGroup <sg> <server|IP> <port> [-weight N]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupMember {
    pub server: Name,
    pub port: Port,
    pub weight: Weight,
    pub state: EnabledDisabled,
}

/// `add serviceGroup <name> <type>`: members share the type, settings and monitors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceGroup {
    pub name: Name,
    pub service_type: ServiceType,
    pub settings: ServiceSettings,
    pub members: Vec<GroupMember>,
    pub monitors: Vec<MonitorBinding>,
}

impl ServiceGroup {
    /// The name of the service that stands for a member.
    pub fn member_service(&self, server: &Name, port: Port) -> String {
        format!("{}?{}?{}", self.name, server, port)
    }
}

/// A service (or service group) bound to a vserver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceBinding {
    pub service: Name,
    pub settings: VsBindSettings,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vserver {
    pub name: Name,
    pub service_type: ServiceType,
    /// `None` for a non-addressable vserver.
    pub vip: Option<(IpAddr, Port)>,
    pub settings: VserverSettings,
    /// In bind order: the tie rule of the least-X methods walks this order.
    pub bindings: Vec<ServiceBinding>,
}

/// `bind lb monitor <mon> -metric <m> -metricThreshold <t> -metricWeight <w>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricBinding {
    pub metric: Name,
    pub threshold: u64,
    pub weight: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Monitor {
    pub name: Name,
    pub monitor_type: MonitorType,
    pub settings: MonitorSettings,
    pub metrics: Vec<MetricBinding>,
    /// Built-in monitors exist from the start, are never removed and are not saved unless
    /// their settings were changed.
    pub builtin: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricTable {
    pub name: Name,
    /// Metric name → OID, in bind order.
    pub metrics: Vec<(Name, Oid)>,
}

pub const TCP_DEFAULT: &str = "tcp-default";
pub const PING_DEFAULT: &str = "ping-default";

/// The monitors every appliance has before any command.
pub fn builtin_monitors() -> Vec<Monitor> {
    let secure = MonitorSettings {
        secure: YesNo::Yes,
        ..MonitorSettings::default()
    };
    [
        (PING_DEFAULT, MonitorType::Ping, MonitorSettings::default()),
        (TCP_DEFAULT, MonitorType::Tcp, MonitorSettings::default()),
        ("ping", MonitorType::Ping, MonitorSettings::default()),
        ("tcp", MonitorType::Tcp, MonitorSettings::default()),
        ("http", MonitorType::Http, MonitorSettings::default()),
        ("tcps", MonitorType::Tcp, secure.clone()),
        ("https", MonitorType::Http, secure),
    ]
    .into_iter()
    .map(|(name, monitor_type, settings)| Monitor {
        name: Name(name.to_owned()),
        monitor_type,
        settings,
        metrics: Vec::new(),
        builtin: true,
    })
    .collect()
}

impl MonitorSettings {
    /// Response timeout must stay below the interval (NetScaler's rule), compared in ms.
    pub fn check_timers(&self) -> Result<()> {
        if self.resp_timeout.millis() >= self.interval.millis() {
            let mut v = String::new();
            self.resp_timeout.render(&mut v);
            return Err(
                CliError::arg_value(ErrorKind::InvalidArgumentValue, "resptimeout", v)
                    .with_detail("Response timeout must be less than the interval"),
            );
        }
        Ok(())
    }
}
