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
    ArgValue, Bounded, ClientIpHeader, DomainName, Duration, EnabledDisabled, IpList, Name,
    Netmask, Oid, OnOff, Port, RespCodes, ServerAddress, Text, YesNo, single_token,
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
        LeastResponseTime = "LEASTRESPONSETIME",
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
            Self::LeastResponseTime => "Least Response Time",
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
    /// `-gslb`: written by `save` on every service; only ordinary LB services exist here.
    pub enum GslbOption { None = "NONE" }
}

keywords! {
    /// `-RHIstate` of a vserver: how its state counts toward the VIP's route advertisement.
    pub enum RhiState { Passive = "PASSIVE", Active = "ACTIVE" }
}

keywords! {
    /// `enable/disable ns mode`: USIP is applied (the default of services without `-usip`);
    /// the others are stored and saved (L2, bridging, is refused).
    pub enum NsMode {
        Fr = "FR", L2 = "L2", Usip = "USIP", Cka = "CKA", Tcpb = "TCPB", Mbf = "MBF",
        Edge = "Edge", Usnip = "USNIP", L3 = "L3", Pmtud = "PMTUD",
        MediaClassification = "MediaClassification", Sradv = "SRADV", Dradv = "DRADV",
        Iradv = "IRADV", Sradv6 = "SRADV6", Dradv6 = "DRADV6", Iradv6 = "IRADV6",
        BridgeBpdus = "BridgeBPDUs", Ulfd = "ULFD", RiseApbr = "RISE_APBR", RiseRhi = "RISE_RHI",
    }
}

keywords! {
    /// `-soMethod` of a vserver.
    pub enum SpilloverMethod {
        None = "NONE", Connection = "CONNECTION", DynamicConnection = "DYNAMICCONNECTION",
        Bandwidth = "BANDWIDTH", Health = "HEALTH",
    }
}

keywords! {
    /// `-soBackupAction`: what a vserver that should spill over does without a usable
    /// backup (REDIRECT, an HTTP redirection, is refused as L7).
    pub enum SpilloverAction { Drop = "DROP", Accept = "ACCEPT" }
}

keywords! {
    /// `-gui` of `add ns ip`.
    pub enum GuiAccess { Enabled = "ENABLED", SecureOnly = "SECUREONLY", Disabled = "DISABLED" }
}

keywords! {
    /// `-arpResponse`, `-icmpResponse` and `-vserverRHILevel` of `add ns ip`.
    pub enum VserverResponse {
        None = "NONE", OneVserver = "ONE_VSERVER", AllVservers = "ALL_VSERVERS",
        VsvrCntrld = "VSVR_CNTRLD",
    }
}

keywords! {
    /// `set lb parameter -monitorConnectionClose`.
    pub enum ConnectionClose { Reset = "RESET", Fin = "FIN" }
}

keywords! {
    /// `set lb parameter -synCookie`: when the engine answers SYNs itself with SYN cookies.
    pub enum SynCookie { Enabled = "ENABLED", Disabled = "DISABLED", Always = "ALWAYS" }
}

keywords! {
    /// `set lb parameter -lbHashAlgorithm`.
    pub enum HashAlgorithm { Default = "DEFAULT", Prac = "PRAC", Jarh = "JARH" }
}

keywords! {
    pub enum DnsQueryType { Address = "Address", Aaaa = "AAAA" }
}

keywords! {
    /// `add server <name> <domain> -queryType`: the records a domain-based server resolves to.
    pub enum ServerQueryType { A = "A", Aaaa = "AAAA", Srv = "SRV" }
}

keywords! {
    /// `add serviceGroup -autoScale`: where members come from besides `bind`.
    pub enum AutoScale { Disabled = "DISABLED", Dns = "DNS", Policy = "POLICY", Cloud = "CLOUD", Api = "API" }
}

keywords! {
    /// `add dns nameServer <ip> -type`: how the name server is asked.
    pub enum NameServerTransport { Udp = "UDP", Tcp = "TCP", UdpTcp = "UDP_TCP" }
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
            crate::absent::value("serviceType", word).unwrap_or_else(|| {
                CliError::arg_value(ErrorKind::InvalidArgumentValue, arg, word).with_detail(
                    "Service type not supported by an L4 engine (use HTTP, TCP, UDP, SSL_BRIDGE, DNS or ANY)",
                )
            })
        })
    }
    fn render(&self, out: &mut String) {
        out.push_str(self.keyword());
    }
}

pub type Weight = Bounded<1, 100>;
/// `-devno`: NetScaler's internal device number, written by `save` on many lines.
pub type DevNo = Option<Bounded<0, 4_294_967_295>>;
pub type Seconds = Bounded<0, 31_536_000>;
pub type TcpPort = Bounded<1, 65535>;

settings! {
    /// `add ns ip` options.
    pub struct NsIpSettings / NsIpSetting / NsIpKey {
        kind: IpType = IpType::Snip, "type", Type, "SNIP (source of traffic to services) or VIP";
        vserver: EnabledDisabled = EnabledDisabled::Enabled, "vServer", Vserver, "May host vservers (stored; no effect: VIPs come from vservers)";
        arp: EnabledDisabled = EnabledDisabled::Enabled, "arp", Arp, "Answer ARP for this address";
        icmp: EnabledDisabled = EnabledDisabled::Enabled, "icmp", Icmp, "Answer ping for this address";
        arp_response: VserverResponse = VserverResponse::None, "arpResponse", ArpResponse, "VIP: ARP tied to vserver state (stored; no effect)";
        icmp_response: VserverResponse = VserverResponse::None, "icmpResponse", IcmpResponse, "VIP: ping tied to vserver state (stored; no effect)";
        mgmt_access: EnabledDisabled = EnabledDisabled::Disabled, "mgmtAccess", MgmtAccess, "Management access (stored; no effect: management is on the kernel's stack)";
        telnet: EnabledDisabled = EnabledDisabled::Enabled, "telnet", Telnet, "Telnet management access (stored; no effect)";
        ftp: EnabledDisabled = EnabledDisabled::Enabled, "ftp", Ftp, "FTP management access (stored; no effect)";
        gui: GuiAccess = GuiAccess::Enabled, "gui", Gui, "GUI management access (stored; no effect)";
        ssh: EnabledDisabled = EnabledDisabled::Enabled, "ssh", Ssh, "SSH management access (stored; no effect)";
        snmp: EnabledDisabled = EnabledDisabled::Enabled, "snmp", Snmp, "SNMP management access (stored; no effect)";
        restrict_access: EnabledDisabled = EnabledDisabled::Disabled, "restrictAccess", RestrictAccess, "Block non-management applications (stored; no effect)";
        dynamic_routing: EnabledDisabled = EnabledDisabled::Disabled, "dynamicRouting", DynamicRouting, "Routing protocols on this SNIP (stored; no effect)";
        host_route: EnabledDisabled = EnabledDisabled::Disabled, "hostRoute", HostRoute, "Advertise a host route for this VIP (stored; no effect without route health injection)";
        host_rt_gw: Option<Ipv4Addr> = None, "hostRtGw", HostRtGw, "Next hop of the advertised host route (stored; no effect)";
        metric: Option<crate::value::SignedBounded<-16_777_215, 16_777_215>> = None, "metric", Metric, "Added to the advertised route's cost (stored; no effect)";
        tag: Option<Bounded<0, 4_294_967_295>> = None, "tag", Tag, "Tag of the advertised route (stored; no effect)";
        network_route: EnabledDisabled = EnabledDisabled::Disabled, "networkRoute", NetworkRoute, "Advertise this SNIP's subnet (stored; no effect)";
        vserver_rhi_level: VserverResponse = VserverResponse::OneVserver, "vserverRHILevel", VserverRhiLevel, "When the VIP route is advertised (stored; no effect)";
        state: EnabledDisabled = EnabledDisabled::Enabled, "state", State, "Administrative state";
    }
}

settings! {
    pub struct ServerSettings / ServerSetting / ServerKey {
        state: EnabledDisabled = EnabledDisabled::Enabled, "state", State, "Initial state";
        comment: Option<Text> = None, "comment", Comment, "Free text";
        devno: DevNo = None, "devno", Devno, "NetScaler's internal device number (stored; no effect)";
        domain_resolve_retry: Bounded<5, 20939> = Bounded::new(5), "domainResolveRetry", DomainResolveRetry, "Domain-based: seconds before asking again after a failed resolution";
        query_type: ServerQueryType = ServerQueryType::A, "queryType", QueryType, "Domain-based: the records asked for (A)";
        ipv6_address: YesNo = YesNo::No, "IPv6Address", Ipv6Address, "Domain-based: resolve to IPv6 addresses (NO)";
    }
}

settings! {
    /// `add dns nameServer <ip>`.
    pub struct NameServerSettings / NameServerSetting / NameServerKey {
        state: EnabledDisabled = EnabledDisabled::Enabled, "state", State, "Administrative state";
        transport: NameServerTransport = NameServerTransport::Udp, "type", Type, "Transport of the queries (UDP)";
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
        gslb: GslbOption = GslbOption::None, "gslb", Gslb, "GSLB option (only NONE: ordinary LB services)";
        cip: ClientIpHeader = ClientIpHeader::DISABLED, "cip", Cip, "Client IP in an HTTP header (stored; no effect at L4)";
        usip: Option<YesNo> = None, "usip", Usip, "The client's address as source toward the service";
        use_proxy_port: YesNo = YesNo::Yes, "useproxyport", UseProxyPort, "With USIP: NO keeps the client's source port";
        sp: OnOff = OnOff::Off, "sp", Sp, "Surge protection (stored; no effect: over maxClient new flows go to other services)";
        cka: YesNo = YesNo::No, "CKA", Cka, "Client keep-alive (stored; no effect at L4)";
        tcpb: YesNo = YesNo::No, "TCPB", Tcpb, "TCP buffering (stored; no effect at L4)";
        cmp: YesNo = YesNo::No, "CMP", Cmp, "HTTP compression (stored; no effect at L4)";
        access_down: YesNo = YesNo::No, "accessDown", AccessDown, "Bridge traffic to a DOWN service (only NO)";
        tcp_profile_name: Option<Name> = None, "tcpProfileName", TcpProfileName, "TCP profile of a proxy's connections (stored; no effect)";
        devno: DevNo = None, "devno", Devno, "NetScaler's internal device number (stored; no effect)";
        auto_scale: AutoScale = AutoScale::Disabled, "autoScale", AutoScale, "Service groups: DNS makes every address of a domain member a member";
        auto_disable_graceful: YesNo = YesNo::No, "autoDisablegraceful", AutoDisableGraceful, "Service groups: drain autoscale members that disappear (stored; they always drain: their flows run to their end)";
        auto_disable_delay: Option<Seconds> = None, "autoDisabledelay", AutoDisableDelay, "Service groups: how long such members drain (stored; no effect)";
        appflow_log: EnabledDisabled = EnabledDisabled::Enabled, "appflowLog", AppflowLog, "AppFlow (IPFIX) records (stored; no effect: no flow export)";
    }
}

/// A refusal naming a feature Fulcrum does not have.
fn absent(option: &str, value: &str, why: &str) -> CliError {
    CliError::arg_value(ErrorKind::NotSupported, option, value).with_detail(why.to_owned())
}

impl ServiceSetting {
    /// Refuses values that name a feature the engine does not have, before anything changes.
    pub fn check_supported(&self) -> Result<()> {
        match self {
            Self::AccessDown(YesNo::Yes) => Err(absent(
                "accessDown",
                "YES",
                "Bridging traffic to a DOWN service needs L2 mode, which Fulcrum does not have",
            )),
            Self::AutoScale(a @ (AutoScale::Policy | AutoScale::Cloud | AutoScale::Api)) => {
                Err(absent(
                    "autoScale",
                    a.keyword(),
                    "Fulcrum scales service groups by DNS only (-autoScale DNS)",
                ))
            }
            _ => Ok(()),
        }
    }
}

impl NsIpSetting {
    /// Refuses values that name a feature the engine does not have, before anything changes.
    pub fn check_supported(&self) -> Result<()> {
        let disabled = EnabledDisabled::Disabled;
        match self {
            Self::Arp(d) if *d == disabled => Err(absent(
                "arp",
                "DISABLED",
                "The engine answers ARP for every address it owns",
            )),
            Self::Icmp(d) if *d == disabled => Err(absent(
                "icmp",
                "DISABLED",
                "The engine answers ping for every address it owns",
            )),
            Self::State(d) if *d == disabled => Err(absent(
                "state",
                "DISABLED",
                "Disabled addresses are not implemented; remove the address instead",
            )),
            _ => Ok(()),
        }
    }
}

settings! {
    pub struct VserverSettings / VserverSetting / VserverKey {
        lb_method: LbMethod = LbMethod::LeastConnection, "lbMethod", LbMethod, "Load-balancing method";
        netmask: Option<Netmask> = None, "netmask", Netmask, "Mask applied to IPs before hashing";
        persistence_type: Persistence = Persistence::None, "persistenceType", PersistenceType, "Persistence (NONE, SOURCEIP)";
        timeout: Bounded<0, 1440> = Bounded::new(2), "timeout", Timeout, "Persistence timeout (minutes; 2-1440 for SOURCEIP)";
        clt_timeout: Option<Seconds> = None, "cltTimeout", CltTimeout, "Client idle timeout (s)";
        down_state_flush: EnabledDisabled = EnabledDisabled::Enabled, "downStateFlush", DownStateFlush, "Flush flows when the vserver goes DOWN";
        state: EnabledDisabled = EnabledDisabled::Enabled, "state", State, "Administrative state";
        comment: Option<Text> = None, "comment", Comment, "Free text";
        backup_vserver: Option<Name> = None, "backupVServer", BackupVserver, "Vserver for new connections while this one is DOWN or spills over";
        so_method: SpilloverMethod = SpilloverMethod::None, "soMethod", SoMethod, "Spillover: CONNECTION, DYNAMICCONNECTION, BANDWIDTH or HEALTH";
        so_threshold: Option<Bounded<1, 4_294_967_287>> = None, "soThreshold", SoThreshold, "Spillover threshold (connections, kbit/s, or percent of UP weight)";
        so_backup_action: Option<SpilloverAction> = None, "soBackupAction", SoBackupAction, "When spilling over with no usable backup: DROP or ACCEPT";
        so_persistence: EnabledDisabled = EnabledDisabled::Disabled, "soPersistence", SoPersistence, "Clients that spilled over keep going to the backup";
        so_persistence_timeout: Bounded<2, 1440> = Bounded::new(2), "soPersistenceTimeOut", SoPersistenceTimeout, "How long after its last spilled connection a client keeps going to the backup (minutes)";
        disable_primary_on_down: EnabledDisabled = EnabledDisabled::Disabled, "disablePrimaryOnDown", DisablePrimaryOnDown, "A vserver that went DOWN stays out (its backup serves) until enabled";
        backup_lb_method: LbMethod = LbMethod::RoundRobin, "backupLBMethod", BackupLbMethod, "Method while LRTM/CUSTOMLOAD lack samples (stored; round robin applies)";
        tcp_profile_name: Option<Name> = None, "tcpProfileName", TcpProfileName, "TCP profile of a proxy's connections (stored; no effect)";
        rhi_state: RhiState = RhiState::Passive, "RHIstate", RhiState, "Route health injection state (stored; no effect)";
        devno: DevNo = None, "devno", Devno, "NetScaler's internal device number (stored; no effect)";
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
        deviation: Option<Duration<0, 20939>> = None, "deviation", Deviation, "Dynamic response-time deviation (stored; no effect, 0 = off)";
        devno: DevNo = None, "devno", Devno, "NetScaler's internal device number (stored; no effect)";
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
        sessions_threshold: Bounded<0, 4_294_967_294> = Bounded::new(0), "sessionsThreshold", SessionsThreshold, "Most persistence sessions of all vservers; beyond, new clients get none (0 = only the tables' size)";
        prefer_direct_route: YesNo = YesNo::Yes, "preferDirectRoute", PreferDirectRoute, "Route lookup for directly connected destinations (stored; no effect)";
        allow_bound_svc_removal: EnabledDisabled = EnabledDisabled::Enabled, "AllowBoundSvcRemoval", AllowBoundSvcRemoval, "rm of a bound service (stored; no effect)";
        retain_service_state: OnOff = OnOff::Off, "retainServiceState", RetainServiceState, "Keep services' own state on enable server (stored; no effect)";
        dbs_ttl: Bounded<0, 2_147_483_647> = Bounded::new(0), "dbsTtl", DbsTtl, "Seconds a domain-based server's answer is used (0 = the answer's TTL)";
        max_pipeline_nat: Bounded<0, 65535> = Bounded::new(0), "maxPipelineNat", MaxPipelineNat, "UDP/ANY pipelined requests (stored; no effect)";
        monitor_skip_max_client: EnabledDisabled = EnabledDisabled::Disabled, "monitorSkipMaxClient", MonitorSkipMaxClient, "Monitor probes skip maxClient (stored; no effect: probes never count)";
        monitor_connection_close: ConnectionClose = ConnectionClose::Fin, "monitorConnectionClose", MonitorConnectionClose, "How monitor connections close (stored; no effect)";
        vserver_specific_mac: EnabledDisabled = EnabledDisabled::Disabled, "vServerSpecificMac", VserverSpecificMac, "MAC-mode vserver chains (stored; no effect)";
        lb_hash_algorithm: HashAlgorithm = HashAlgorithm::Default, "lbHashAlgorithm", LbHashAlgorithm, "Hash algorithm (stored; rendezvous hashing applies)";
        lb_hash_fingers: Bounded<1, 1024> = Bounded::new(256), "lbHashFingers", LbHashFingers, "PRAC/JARH fingers (stored; no effect)";
        syn_cookie: SynCookie = SynCookie::Enabled, "synCookie", SynCookie, "SYN cookies: ENABLED under a SYN flood (half the embryonic budget spent), ALWAYS, or DISABLED";
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

settings! {
    /// `add/set route` options. One static gateway per route serves here: the dynamic-routing
    /// and ECMP options are stored and saved but change nothing.
    pub struct RouteSettings / RouteSetting / RouteKey {
        distance: Bounded<1, 255> = Bounded::new(1), "distance", Distance, "Administrative distance (stored; no effect)";
        cost: Bounded<0, 65535> = Bounded::new(0), "cost", Cost, "Route cost (stored; no effect)";
        weight: Bounded<1, 65535> = Bounded::new(1), "weight", Weight, "ECMP weight (stored; no effect)";
        advertise: EnabledDisabled = EnabledDisabled::Disabled, "advertise", Advertise, "Advertise through routing protocols (stored; no effect)";
        msr: EnabledDisabled = EnabledDisabled::Disabled, "msr", Msr, "Monitored static route (stored; no effect)";
        monitor: Option<Name> = None, "monitor", Monitor, "Monitor of a monitored static route (stored; no effect)";
    }
}

/// `add route <network> <netmask> <gateway>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub network: Ipv4Addr,
    pub netmask: Netmask,
    pub gateway: Ipv4Addr,
    pub settings: RouteSettings,
}

impl Route {
    /// The same route (network, mask, gateway), whatever its options.
    pub fn is(&self, network: Ipv4Addr, netmask: Netmask, gateway: Ipv4Addr) -> bool {
        (self.network, self.netmask, self.gateway) == (network, netmask, gateway)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Server {
    pub name: Name,
    pub addr: ServerAddress,
    pub settings: ServerSettings,
    /// `set server <name> -domainResolveNow` requests so far: each asks the resolver to
    /// query at once (run-time only, never saved).
    pub resolve_requests: u32,
}

impl Server {
    pub fn new(name: Name, addr: ServerAddress, settings: ServerSettings) -> Self {
        Self {
            name,
            addr,
            settings,
            resolve_requests: 0,
        }
    }

    /// The domain of a domain-based server.
    pub fn domain(&self) -> Option<&DomainName> {
        self.addr.domain()
    }
}

/// `add dns nameServer <ip>`: where domain-based servers are resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameServer {
    pub addr: IpAddr,
    pub settings: NameServerSettings,
}

/// What the resolver last found for a domain-based server: run-time state, kept beside the
/// configuration (never saved) so that the tables are built from one value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolution {
    /// The name the answer is for: an answer for a name the server no longer has is unused.
    pub domain: DomainName,
    /// In the answer's order; the first is the one a service uses.
    pub addrs: Vec<Ipv4Addr>,
    /// Seconds the answer stays good (the records' TTL, or `-dbsTtl`).
    pub ttl_s: u32,
    /// Why the last query failed, if it did; the last good addresses stay in use.
    pub error: Option<String>,
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
    /// `-autoScale DNS` members: the one address of the domain member's answer this
    /// service stands for (named `<group>?<server>?<port>?<address>`).
    pub pinned: Option<Ipv4Addr>,
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

    /// `-autoScale DNS`: domain members stand for every address their name resolves to.
    pub fn scales_by_dns(&self) -> bool {
        self.settings.auto_scale == AutoScale::Dns
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

/// The options an L4 engine stores and saves back but does not apply, per object: `show`
/// prints those that are set, with a note saying so.
pub mod stored_only {
    use super::*;

    pub const SERVICE: &[ServiceKey] = &[
        ServiceKey::AutoDisableGraceful,
        ServiceKey::AutoDisableDelay,
        ServiceKey::AppflowLog,
        ServiceKey::MaxReq,
        ServiceKey::TcpProfileName,
        ServiceKey::Gslb,
        ServiceKey::Cip,
        ServiceKey::UseProxyPort,
        ServiceKey::Sp,
        ServiceKey::Cka,
        ServiceKey::Tcpb,
        ServiceKey::Cmp,
        ServiceKey::Devno,
    ];
    pub const SERVER: &[ServerKey] = &[ServerKey::Devno];
    pub const VSERVER: &[VserverKey] = &[
        VserverKey::TcpProfileName,
        VserverKey::RhiState,
        VserverKey::BackupLbMethod,
        VserverKey::Devno,
    ];
    pub const MONITOR: &[MonitorKey] = &[MonitorKey::Deviation, MonitorKey::Devno];
    pub const NS_IP: &[NsIpKey] = &[
        NsIpKey::Vserver,
        NsIpKey::ArpResponse,
        NsIpKey::IcmpResponse,
        NsIpKey::MgmtAccess,
        NsIpKey::Telnet,
        NsIpKey::Ftp,
        NsIpKey::Gui,
        NsIpKey::Ssh,
        NsIpKey::Snmp,
        NsIpKey::RestrictAccess,
        NsIpKey::DynamicRouting,
        NsIpKey::HostRoute,
        NsIpKey::HostRtGw,
        NsIpKey::Metric,
        NsIpKey::Tag,
        NsIpKey::NetworkRoute,
        NsIpKey::VserverRhiLevel,
    ];
    pub const LB_PARAMETER: &[LbParameterKey] = &[
        LbParameterKey::PreferDirectRoute,
        LbParameterKey::AllowBoundSvcRemoval,
        LbParameterKey::RetainServiceState,
        LbParameterKey::MaxPipelineNat,
        LbParameterKey::MonitorSkipMaxClient,
        LbParameterKey::MonitorConnectionClose,
        LbParameterKey::VserverSpecificMac,
        LbParameterKey::LbHashAlgorithm,
        LbParameterKey::LbHashFingers,
    ];
    pub const ROUTE: &[RouteKey] = &[
        RouteKey::Distance,
        RouteKey::Cost,
        RouteKey::Weight,
        RouteKey::Advertise,
        RouteKey::Msr,
        RouteKey::Monitor,
    ];
}
