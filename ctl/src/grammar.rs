//! The command table: every command of the language declared once — verb, object, positional
//! arguments, options, help and how it becomes a [`Command`]. The parser, `help` and shell
//! completion all read this table.

use crate::command::{
    Command, Common, DEFAULT_METRIC_WEIGHT, MetricTableCmd, MonitorCmd, NameServerCmd, NsIpCmd,
    ParameterCmd, RouteCmd, ServerCmd, ServiceCmd, ServiceGroupCmd, VserverCmd,
};
use crate::conf::model::{
    LbParameterSettings, MonitorBindSettings, MonitorSettings, NameServerSettings, NsIpSettings,
    OutputFormat, RouteSettings, ServerSettings, ServiceSettings, VsBindSettings, VserverSettings,
};
use crate::error::{CliError, ErrorKind, Result};
use crate::keywords;
use crate::lex::{Token, expand_ranges, tokenize};
use crate::settings;
use crate::settings::{OptSpec, Settings};
use crate::value::{ArgValue, Arity, Bounded, Name, YesNo, match_keyword};

keywords! {
    pub enum Verb {
        Add = "add",
        Rm = "rm",
        Set = "set",
        Unset = "unset",
        Bind = "bind",
        Unbind = "unbind",
        Enable = "enable",
        Disable = "disable",
        Rename = "rename",
        Save = "save",
        Show = "show",
        Stat = "stat",
        Help = "help",
        Clear = "clear",
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Object {
    NsIp,
    Route,
    DnsNameServer,
    Server,
    Service,
    ServiceGroup,
    LbVserver,
    LbMonitor,
    LbMetricTable,
    LbParameter,
    LbPersistentSessions,
    NsConfig,
    NsRunningConfig,
    NsMode,
    /// `stat ns`: the engine itself (per-worker figures).
    Ns,
    /// `show ns version`: the daemon's build.
    NsVersion,
    /// `show ns events`: the daemon's recent events.
    NsEvents,
    SystemUser,
}

/// The words that name each object; several spellings may name one object.
const OBJECT_WORDS: &[(&[&str], Object)] = &[
    (&["ns", "ip"], Object::NsIp),
    (&["route"], Object::Route),
    (&["dns", "nameServer"], Object::DnsNameServer),
    (&["server"], Object::Server),
    (&["service"], Object::Service),
    (&["serviceGroup"], Object::ServiceGroup),
    (&["lb", "vserver"], Object::LbVserver),
    (&["lb", "monitor"], Object::LbMonitor),
    (&["monitor"], Object::LbMonitor),
    // NetScaler 9's spelling, still in old scripts (`rm vserver`, `disable vserver`).
    (&["vserver"], Object::LbVserver),
    (&["lb", "metricTable"], Object::LbMetricTable),
    (&["lb", "parameter"], Object::LbParameter),
    (&["lb", "persistentSessions"], Object::LbPersistentSessions),
    (&["ns", "config"], Object::NsConfig),
    (&["ns", "mode"], Object::NsMode),
    (&["ns", "runningConfig"], Object::NsRunningConfig),
    (&["ns", "version"], Object::NsVersion),
    (&["ns", "events"], Object::NsEvents),
    (&["ns"], Object::Ns),
    (&["system", "user"], Object::SystemUser),
];

impl Object {
    /// The canonical words (`lb vserver`).
    pub fn words(self) -> &'static [&'static str] {
        OBJECT_WORDS
            .iter()
            .find(|(_, o)| *o == self)
            .map_or(&[], |(w, _)| w)
    }
}

/// A positional argument.
#[derive(Clone, Copy, Debug)]
pub struct PosSpec {
    pub name: &'static str,
    pub required: bool,
    pub value_help: fn() -> String,
}

const fn req<T: ArgValue>(name: &'static str) -> PosSpec {
    PosSpec {
        name,
        required: true,
        value_help: T::help,
    }
}

const fn opt<T: ArgValue>(name: &'static str) -> PosSpec {
    PosSpec {
        name,
        required: false,
        value_help: T::help,
    }
}

/// One command of the language.
#[derive(Debug)]
pub struct CommandSpec {
    pub verb: Verb,
    pub object: Object,
    pub positionals: &'static [PosSpec],
    /// Option tables; `unset` commands take the names without values.
    pub options: &'static [&'static [OptSpec]],
    pub names_only: bool,
    pub help: &'static str,
    pub build: fn(&Args) -> Result<Command>,
}

impl CommandSpec {
    pub fn all_options(&self) -> impl Iterator<Item = &'static OptSpec> + Clone {
        self.options.iter().flat_map(|t| t.iter())
    }

    /// `add service <name> <IP | serverName> <serviceType> <port> [-maxClient <0-…>] …`
    pub fn synopsis(&self) -> String {
        let mut s = format!("{} {}", self.verb, self.object.words().join(" "));
        for p in self.positionals {
            if p.required {
                s.push_str(&format!(" <{}>", p.name));
            } else {
                s.push_str(&format!(" [<{}>]", p.name));
            }
        }
        for o in self.all_options() {
            s.push_str(&format!(" [-{}", o.name));
            let v = (o.value_help)();
            if !self.names_only && !v.is_empty() {
                s.push(' ');
                s.push_str(&v);
            }
            s.push(']');
        }
        s
    }
}

settings! {
    /// `-monitorName` of `bind/unbind service`.
    pub struct MonitorNameOpt / MonitorNameSetting / MonitorNameKey {
        monitor_name: Option<Name> = None, "monitorName", MonitorName, "Monitor to bind";
    }
}

settings! {
    /// `bind/unbind lb monitor <mon> -metric …`.
    pub struct MetricBindOpts / MetricBindSetting / MetricBindKey {
        metric: Option<Name> = None, "metric", Metric, "Metric of the monitor's metric table";
        metric_threshold: Option<Bounded<0, 4_294_967_295>> = None, "metricThreshold", MetricThreshold, "Threshold (0 = metric ignored)";
        metric_weight: Bounded<1, 100> = DEFAULT_METRIC_WEIGHT, "metricWeight", MetricWeight, "Weight of the metric in the load";
    }
}

settings! {
    /// `set server <name> -IPAddress <ip>` and `set service <name> -IPAddress <ip>`.
    pub struct ServerAddressOpt / ServerAddressSetting / ServerAddressKey {
        ip_address: Option<std::net::IpAddr> = None, "IPAddress", IpAddress, "New address";
    }
}

settings! {
    /// `set server <name> -domainResolveNow`.
    pub struct ResolveNowOpt / ResolveNowSetting / ResolveNowKey {
        domain_resolve_now: bool = false, "domainResolveNow", DomainResolveNow, "Resolve the domain again now";
    }
}

settings! {
    /// `add dns nameServer <ip> -local`: NetScaler's own resolver, refused here.
    pub struct NameServerLocalOpt / NameServerLocalSetting / NameServerLocalKey {
        local: bool = false, "local", Local, "The appliance's own recursive resolver (not supported)";
    }
}

/// A name server's address; a DNS vserver in its place is refused by name.
fn name_server_addr(a: &Args) -> Result<std::net::IpAddr> {
    let given: Name = a.pos(0)?;
    given.as_str().parse().map_err(|_| {
        CliError::new(ErrorKind::NotSupported).with_detail(format!(
            "{given}: a DNS vserver as name server is not supported; give the name server's IP address"
        ))
    })
}

settings! {
    /// `bind serviceGroup <sg> <server> <port> -state DISABLED`: the member's initial state.
    pub struct MemberStateOpt / MemberStateSetting / MemberStateKey {
        state: crate::value::EnabledDisabled = crate::value::EnabledDisabled::Enabled, "state", State, "Initial state of the member";
    }
}

settings! {
    /// `disable service <name> [<delay>] -graceFul`.
    pub struct DisableServiceOpts / DisableServiceSetting / DisableServiceKey {
        graceful: YesNo = YesNo::No, "graceFul", Graceful, "Wait for existing connections to close";
    }
}

settings! {
    /// `disable serviceGroup <sg> [<server> <port>] [-delay <s>] [-graceFul YES]`.
    pub struct DisableGroupOpts / DisableGroupSetting / DisableGroupKey {
        delay: Option<crate::conf::model::Seconds> = None, "delay", Delay, "Seconds before the members go out of service";
        graceful: YesNo = YesNo::No, "graceFul", Graceful, "Wait for existing connections to close";
    }
}

/// The optional `<server> <port>` of a service-group command: both or neither.
fn group_member(a: &Args) -> Result<Option<(Name, crate::value::Port)>> {
    match (a.pos_opt::<Name>(1)?, a.pos_opt::<crate::value::Port>(2)?) {
        (Some(server), Some(port)) => Ok(Some((server, port))),
        (None, None) => Ok(None),
        (Some(_), None) => Err(missing("port")),
        (None, Some(_)) => Err(missing("serverName")),
    }
}

/// `enable ns mode FR L3 Edge USNIP PMTUD`: one or more modes.
const NS_MODES: &[PosSpec] = &[
    req::<crate::conf::model::NsMode>("mode"),
    opt::<crate::conf::model::NsMode>("mode"),
    opt::<crate::conf::model::NsMode>("mode"),
    opt::<crate::conf::model::NsMode>("mode"),
    opt::<crate::conf::model::NsMode>("mode"),
    opt::<crate::conf::model::NsMode>("mode"),
    opt::<crate::conf::model::NsMode>("mode"),
    opt::<crate::conf::model::NsMode>("mode"),
    opt::<crate::conf::model::NsMode>("mode"),
    opt::<crate::conf::model::NsMode>("mode"),
    opt::<crate::conf::model::NsMode>("mode"),
    opt::<crate::conf::model::NsMode>("mode"),
];

fn ns_modes(a: &Args, enable: bool) -> Result<Command> {
    let mut modes = Vec::new();
    for i in 0..NS_MODES.len() {
        if let Some(m) = a.pos_opt::<crate::conf::model::NsMode>(i)? {
            modes.push(m);
        }
    }
    Ok(Command::NsMode { enable, modes })
}

const ROUTE: &[PosSpec] = &[
    req::<std::net::Ipv4Addr>("network"),
    req::<crate::value::Netmask>("netmask"),
    req::<std::net::Ipv4Addr>("gateway"),
];

const GROUP_MEMBER: &[PosSpec] = &[
    req::<Name>("serviceGroupName"),
    opt::<Name>("IP | serverName"),
    opt::<crate::value::Port>("port"),
];

settings! {
    /// `clear ns config -force`.
    pub struct ClearOpts / ClearSetting / ClearKey {
        force: bool = false, "force", Force, "Clear without asking";
    }
}

settings! {
    /// `show` and `stat` output format.
    pub struct OutputOpts / OutputSetting / OutputKey {
        format: OutputFormat = OutputFormat::Text, "format", Format, "TEXT (NetScaler layout) or JSON";
    }
}

settings! {
    /// `add system user <name> <hash> -encrypted`: the password is a hash already.
    pub struct EncryptedOpt / EncryptedSetting / EncryptedKey {
        encrypted: bool = false, "encrypted", Encrypted, "The password is a crypt(3) hash (as `save` writes it)";
    }
}

settings! {
    /// `set system user <name> -password <p>`.
    pub struct PasswordOpt / PasswordSetting / PasswordKey {
        password: Option<crate::value::Text> = None, "password", Password, "New password";
    }
}

const SYSTEM_USER_ADD: &[PosSpec] = &[
    req::<Name>("userName"),
    req::<crate::value::Text>("password"),
];
const SYSTEM_USER_SET: &[PosSpec] = &[
    req::<Name>("userName"),
    opt::<crate::value::Text>("password"),
];
const SYSTEM_USER_BIND: &[PosSpec] = &[
    req::<Name>("userName"),
    req::<crate::conf::users::CommandPolicy>("policyName"),
    req::<Bounded<0, 4_294_967_295>>("priority"),
];

/// The password of `add system user`: in clear, or a hash with `-encrypted`.
fn given_password(a: &Args) -> Result<crate::command::Password> {
    let text: crate::value::Text = a.pos(1)?;
    if EncryptedOpt::default()
        .with(&a.settings::<EncryptedOpt>()?)
        .encrypted
    {
        return crate::conf::users::PasswordHash::stored(&text.0)
            .map(crate::command::Password::Encrypted);
    }
    Ok(crate::command::Password::Plain(text.0))
}

/// The new password of `set system user`: positional, or `-password`.
fn new_password(a: &Args) -> Result<Option<crate::command::Password>> {
    let positional: Option<crate::value::Text> = a.pos_opt(1)?;
    let option = PasswordOpt::default()
        .with(&a.settings::<PasswordOpt>()?)
        .password;
    match (positional, option) {
        (Some(_), Some(_)) => Err(CliError::arg(ErrorKind::DuplicateArgument, "-password")),
        (p, o) => Ok(p.or(o).map(|t| crate::command::Password::Plain(t.0))),
    }
}

const NONE: &[&[OptSpec]] = &[];
const NAME: &[PosSpec] = &[req::<Name>("name")];
const NAME_USER: &[PosSpec] = &[req::<Name>("userName")];
const RENAME: &[PosSpec] = &[req::<Name>("name"), req::<Name>("newName")];
const SHOW_NAME: &[PosSpec] = &[opt::<Name>("name")];
const OUTPUT: &[&[OptSpec]] = &[OutputOpts::OPTIONS];

fn missing(arg: &str) -> CliError {
    CliError::arg(ErrorKind::RequiredArgumentMissing, arg)
}

fn output(a: &Args) -> Result<OutputFormat> {
    Ok(OutputOpts::default()
        .with(&a.settings::<OutputOpts>()?)
        .format)
}

macro_rules! cmd {
    (unset $obj:ident, $pos:expr, $opts:expr, $help:literal, $build:expr) => {
        CommandSpec {
            verb: Verb::Unset,
            object: Object::$obj,
            positionals: $pos,
            options: $opts,
            names_only: true,
            help: $help,
            build: $build,
        }
    };
    ($verb:ident $obj:ident, $pos:expr, $opts:expr, $help:literal, $build:expr) => {
        CommandSpec {
            verb: Verb::$verb,
            object: Object::$obj,
            positionals: $pos,
            options: $opts,
            names_only: false,
            help: $help,
            build: $build,
        }
    };
}

/// Every command of the language.
pub static COMMANDS: &[CommandSpec] = &[
    // ns ip, route
    cmd!(Add NsIp, &[req::<std::net::Ipv4Addr>("IPAddress"), req::<crate::value::Netmask>("netmask")],
        &[NsIpSettings::OPTIONS], "Add a SNIP or VIP",
        |a| Ok(Command::NsIp(NsIpCmd::Add { addr: a.pos(0)?, netmask: a.pos(1)?, settings: a.settings::<NsIpSettings>()? }))),
    cmd!(Rm NsIp, &[req::<std::net::Ipv4Addr>("IPAddress")], NONE, "Remove a SNIP or VIP",
        |a| Ok(Command::NsIp(NsIpCmd::Rm { addr: a.pos(0)? }))),
    cmd!(Set NsIp, &[req::<std::net::Ipv4Addr>("IPAddress")], &[NsIpSettings::OPTIONS], "Change a SNIP's or VIP's options",
        |a| Ok(Command::NsIp(NsIpCmd::Set { addr: a.pos(0)?, settings: a.settings::<NsIpSettings>()? }))),
    cmd!(unset NsIp, &[req::<std::net::Ipv4Addr>("IPAddress")], &[NsIpSettings::OPTIONS], "Return a SNIP's or VIP's options to their defaults",
        |a| Ok(Command::NsIp(NsIpCmd::Unset { addr: a.pos(0)?, keys: a.keys::<NsIpSettings>()? }))),
    cmd!(Enable NsIp, &[req::<std::net::Ipv4Addr>("IPAddress")], NONE, "Enable a SNIP or VIP",
        |a| Ok(Command::NsIp(NsIpCmd::Enable { addr: a.pos(0)? }))),
    cmd!(Disable NsIp, &[req::<std::net::Ipv4Addr>("IPAddress")], NONE, "Disable a SNIP or VIP",
        |a| Ok(Command::NsIp(NsIpCmd::Disable { addr: a.pos(0)? }))),
    cmd!(Show NsIp, &[], OUTPUT, "Show the SNIPs and VIPs",
        |a| Ok(Command::Show { object: Object::NsIp, name: None, format: output(a)? })),
    cmd!(Enable NsMode, NS_MODES, NONE, "Enable modes (USIP: services without -usip see clients' own addresses)",
        |a| ns_modes(a, true)),
    cmd!(Disable NsMode, NS_MODES, NONE, "Disable modes",
        |a| ns_modes(a, false)),
    cmd!(Add Route, ROUTE, &[RouteSettings::OPTIONS], "Add a static route",
        |a| Ok(Command::Route(RouteCmd::Add { network: a.pos(0)?, netmask: a.pos(1)?, gateway: a.pos(2)?, settings: a.settings::<RouteSettings>()? }))),
    cmd!(Set Route, ROUTE, &[RouteSettings::OPTIONS], "Change a static route's options",
        |a| Ok(Command::Route(RouteCmd::Set { network: a.pos(0)?, netmask: a.pos(1)?, gateway: a.pos(2)?, settings: a.settings::<RouteSettings>()? }))),
    cmd!(unset Route, ROUTE, &[RouteSettings::OPTIONS], "Return a static route's options to their defaults",
        |a| Ok(Command::Route(RouteCmd::Unset { network: a.pos(0)?, netmask: a.pos(1)?, gateway: a.pos(2)?, keys: a.keys::<RouteSettings>()? }))),
    cmd!(Rm Route, ROUTE, NONE, "Remove a static route",
        |a| Ok(Command::Route(RouteCmd::Rm { network: a.pos(0)?, netmask: a.pos(1)?, gateway: a.pos(2)? }))),
    cmd!(Show Route, &[], OUTPUT, "Show the routes",
        |a| Ok(Command::Show { object: Object::Route, name: None, format: output(a)? })),
    // dns nameServer
    cmd!(Add DnsNameServer, &[req::<Name>("IP | dnsVserverName")], &[NameServerLocalOpt::OPTIONS, NameServerSettings::OPTIONS],
    "Add a name server for domain-based servers (asked in turn, over UDP from a SNIP)",
    |a| Ok(Command::DnsNameServer(NameServerCmd::Add {
        addr: name_server_addr(a)?,
        settings: {
            if NameServerLocalOpt::default().with(&a.settings::<NameServerLocalOpt>()?).local {
                return Err(CliError::new(ErrorKind::NotSupported)
                    .with_detail("-local (the appliance's own recursive resolver) is not supported: give a name server's IP address"));
            }
            a.settings::<NameServerSettings>()?
        },
    }))),
    cmd!(Rm DnsNameServer, &[req::<Name>("IP | dnsVserverName")], NONE, "Remove a name server",
        |a| Ok(Command::DnsNameServer(NameServerCmd::Rm { addr: name_server_addr(a)? }))),
    cmd!(Enable DnsNameServer, &[req::<Name>("IP | dnsVserverName")], NONE, "Ask a name server again",
        |a| Ok(Command::DnsNameServer(NameServerCmd::Enable { addr: name_server_addr(a)? }))),
    cmd!(Disable DnsNameServer, &[req::<Name>("IP | dnsVserverName")], NONE, "Stop asking a name server",
        |a| Ok(Command::DnsNameServer(NameServerCmd::Disable { addr: name_server_addr(a)? }))),
    cmd!(Show NsVersion, &[], OUTPUT, "Show the daemon's version, commit and build",
        |a| Ok(Command::Show { object: Object::NsVersion, name: None, format: output(a)? })),
    cmd!(Show NsEvents, &[], OUTPUT, "Show the daemon's recent events (state changes, generations, errors)",
        |a| Ok(Command::Show { object: Object::NsEvents, name: None, format: output(a)? })),
    cmd!(Show DnsNameServer, &[], OUTPUT, "Show the name servers",
        |a| Ok(Command::Show { object: Object::DnsNameServer, name: None, format: output(a)? })),
    // server
    cmd!(Add Server, &[req::<Name>("name"), req::<crate::value::ServerAddress>("IPAddress | domain")], &[ServerSettings::OPTIONS],
        "Add a server, by address or by domain name (resolved through the name servers)",
        |a| Ok(Command::Server(ServerCmd::Add { name: a.pos(0)?, addr: a.pos(1)?, settings: a.settings::<ServerSettings>()? }))),
    cmd!(Set Server, NAME, &[ServerAddressOpt::OPTIONS, ResolveNowOpt::OPTIONS, ServerSettings::OPTIONS],
    "Change a server (its services follow a new -IPAddress; -domainResolveNow asks DNS again)",
    |a| Ok(Command::Server(ServerCmd::Set {
        name: a.pos(0)?,
        addr: ServerAddressOpt::default().with(&a.settings::<ServerAddressOpt>()?).ip_address,
        resolve_now: ResolveNowOpt::default().with(&a.settings::<ResolveNowOpt>()?).domain_resolve_now,
        settings: a.settings::<ServerSettings>()?,
    }))),
    cmd!(unset Server, NAME, &[ServerSettings::OPTIONS], "Return server options to their defaults",
        |a| Ok(Command::Server(ServerCmd::Unset { name: a.pos(0)?, keys: a.keys::<ServerSettings>()? }))),
    cmd!(Rm Server, NAME, NONE, "Remove a server (no service may use it)", |a| Ok(Command::Server(ServerCmd::Rm { name: a.pos(0)? }))),
    cmd!(Rename Server, RENAME, NONE, "Rename a server", |a| Ok(Command::Server(ServerCmd::Rename { name: a.pos(0)?, new_name: a.pos(1)? }))),
    cmd!(Enable Server, NAME, NONE, "Enable a server", |a| Ok(Command::Server(ServerCmd::Enable { name: a.pos(0)? }))),
    cmd!(Disable Server, &[req::<Name>("name"), opt::<crate::conf::model::Seconds>("delay")], &[DisableServiceOpts::OPTIONS],
    "Take every service of a server out of service, at once, after a delay, or gracefully",
    |a| Ok(Command::Server(ServerCmd::Disable {
        name: a.pos(0)?,
        delay: a.pos_opt(1)?,
        graceful: DisableServiceOpts::default().with(&a.settings::<DisableServiceOpts>()?).graceful,
    }))),
    cmd!(Show Server, SHOW_NAME, OUTPUT, "Show servers",
        |a| Ok(Command::Show { object: Object::Server, name: a.pos_opt(0)?, format: output(a)? })),
    // service
    cmd!(Add Service, &[req::<Name>("name"), req::<Name>("IP | serverName"), req::<crate::conf::model::ServiceType>("serviceType"), req::<crate::value::Port>("port")],
    &[ServiceSettings::OPTIONS], "Add a service",
    |a| Ok(Command::Service(ServiceCmd::Add {
        name: a.pos(0)?,
        server: a.pos(1)?,
        service_type: a.pos(2)?,
        port: a.pos(3)?,
        settings: a.settings::<ServiceSettings>()?,
    }))),
    cmd!(Set Service, NAME, &[ServerAddressOpt::OPTIONS, ServiceSettings::OPTIONS], "Change a service (-IPAddress moves its server)",
    |a| {
        let (name, settings) = (a.pos(0)?, a.settings::<ServiceSettings>()?);
        Ok(Command::Service(match ServerAddressOpt::default().with(&a.settings::<ServerAddressOpt>()?).ip_address {
            Some(addr) => ServiceCmd::Readdress { name, addr, settings },
            None => ServiceCmd::Common(Common::Set { name, settings }),
        }))
    }),
    cmd!(unset Service, NAME, &[ServiceSettings::OPTIONS], "Return service options to their defaults",
        |a| Ok(Command::Service(ServiceCmd::Common(Common::Unset { name: a.pos(0)?, keys: a.keys::<ServiceSettings>()? })))),
    cmd!(Rm Service, NAME, NONE, "Remove a service (and its bindings)", |a| Ok(Command::Service(ServiceCmd::Common(Common::Rm { name: a.pos(0)? })))),
    cmd!(Rename Service, RENAME, NONE, "Rename a service", |a| Ok(Command::Service(ServiceCmd::Common(Common::Rename { name: a.pos(0)?, new_name: a.pos(1)? })))),
    cmd!(Enable Service, NAME, NONE, "Enable a service", |a| Ok(Command::Service(ServiceCmd::Enable { name: a.pos(0)? }))),
    cmd!(Disable Service, &[req::<Name>("name"), opt::<crate::conf::model::Seconds>("delay")], &[DisableServiceOpts::OPTIONS],
    "Take a service out of service, at once, after a delay, or gracefully",
    |a| Ok(Command::Service(ServiceCmd::Disable {
        name: a.pos(0)?,
        delay: a.pos_opt(1)?,
        graceful: DisableServiceOpts::default().with(&a.settings::<DisableServiceOpts>()?).graceful,
    }))),
    cmd!(Bind Service, NAME, &[MonitorNameOpt::OPTIONS, MonitorBindSettings::OPTIONS], "Bind a monitor to a service",
    |a| Ok(Command::Service(ServiceCmd::BindMonitor {
        service: a.pos(0)?,
        monitor: MonitorNameOpt::default().with(&a.settings::<MonitorNameOpt>()?).monitor_name.ok_or_else(|| missing("monitorName"))?,
        settings: a.settings::<MonitorBindSettings>()?,
    }))),
    cmd!(Unbind Service, NAME, &[MonitorNameOpt::OPTIONS], "Unbind a monitor from a service",
    |a| Ok(Command::Service(ServiceCmd::UnbindMonitor {
        service: a.pos(0)?,
        monitor: MonitorNameOpt::default().with(&a.settings::<MonitorNameOpt>()?).monitor_name.ok_or_else(|| missing("monitorName"))?,
    }))),
    cmd!(Show Service, SHOW_NAME, OUTPUT, "Show services",
        |a| Ok(Command::Show { object: Object::Service, name: a.pos_opt(0)?, format: output(a)? })),
    cmd!(Stat Service, SHOW_NAME, OUTPUT, "Service statistics",
        |a| Ok(Command::Stat { object: Object::Service, name: a.pos_opt(0)?, format: output(a)? })),
    // serviceGroup
    cmd!(Add ServiceGroup, &[req::<Name>("serviceGroupName"), req::<crate::conf::model::ServiceType>("serviceType")],
        &[ServiceSettings::OPTIONS], "Add a service group (its members share type, settings and monitors)",
        |a| Ok(Command::ServiceGroup(ServiceGroupCmd::Add { name: a.pos(0)?, service_type: a.pos(1)?, settings: a.settings::<ServiceSettings>()? }))),
    cmd!(Set ServiceGroup, NAME, &[ServiceSettings::OPTIONS], "Change a service group (all its members)",
        |a| Ok(Command::ServiceGroup(ServiceGroupCmd::Common(Common::Set { name: a.pos(0)?, settings: a.settings::<ServiceSettings>()? })))),
    cmd!(unset ServiceGroup, NAME, &[ServiceSettings::OPTIONS], "Return service group options to their defaults",
        |a| Ok(Command::ServiceGroup(ServiceGroupCmd::Common(Common::Unset { name: a.pos(0)?, keys: a.keys::<ServiceSettings>()? })))),
    cmd!(Rm ServiceGroup, NAME, NONE, "Remove a service group (its members and bindings)",
        |a| Ok(Command::ServiceGroup(ServiceGroupCmd::Common(Common::Rm { name: a.pos(0)? })))),
    cmd!(Rename ServiceGroup, RENAME, NONE, "Rename a service group",
        |a| Ok(Command::ServiceGroup(ServiceGroupCmd::Common(Common::Rename { name: a.pos(0)?, new_name: a.pos(1)? })))),
    cmd!(Bind ServiceGroup, GROUP_MEMBER, &[MonitorNameOpt::OPTIONS, MonitorBindSettings::OPTIONS, MemberStateOpt::OPTIONS],
    "Bind a member (server and port, -weight, -state) or a monitor (-monitorName) to a service group",
    |a| {
        let group = a.pos(0)?;
        let monitor = MonitorNameOpt::default().with(&a.settings::<MonitorNameOpt>()?).monitor_name;
        let settings = a.settings::<MonitorBindSettings>()?;
        let member_state = a.settings::<MemberStateOpt>()?;
        if monitor.is_some() && !member_state.is_empty() {
            return Err(CliError::arg(ErrorKind::InvalidArgumentValue, "state")
                .with_detail("-state is a member's option; a monitor binding takes -monState"));
        }
        let state = MemberStateOpt::default().with(&member_state).state;
        match (group_member(a)?, monitor) {
            (Some((server, port)), None) => {
                // A member takes -weight only; the other options are a monitor binding's.
                let mut weight = None;
                for s in settings {
                    match s {
                        crate::conf::model::MonitorBindSetting::Weight(w) => weight = Some(w),
                        _ => return Err(CliError::arg(ErrorKind::InvalidArgumentValue, "monitorName")
                            .with_detail("Monitor options need -monitorName")),
                    }
                }
                Ok(Command::ServiceGroup(ServiceGroupCmd::BindMember { group, server, port, weight, state }))
            }
            (None, Some(monitor)) => Ok(Command::ServiceGroup(ServiceGroupCmd::BindMonitor { group, monitor, settings })),
            (None, None) => Err(missing("serverName")),
            (Some(_), Some(_)) => Err(CliError::arg(ErrorKind::InvalidArgumentValue, "monitorName")
                .with_detail("Bind a member or a monitor, not both")),
        }
    }),
    cmd!(Unbind ServiceGroup, GROUP_MEMBER, &[MonitorNameOpt::OPTIONS],
    "Unbind a member or a monitor from a service group",
    |a| {
        let group = a.pos(0)?;
        let monitor = MonitorNameOpt::default().with(&a.settings::<MonitorNameOpt>()?).monitor_name;
        match (group_member(a)?, monitor) {
            (Some((server, port)), None) => Ok(Command::ServiceGroup(ServiceGroupCmd::UnbindMember { group, server, port })),
            (None, Some(monitor)) => Ok(Command::ServiceGroup(ServiceGroupCmd::UnbindMonitor { group, monitor })),
            (None, None) => Err(missing("serverName")),
            (Some(_), Some(_)) => Err(CliError::arg(ErrorKind::InvalidArgumentValue, "monitorName")
                .with_detail("Unbind a member or a monitor, not both")),
        }
    }),
    cmd!(Enable ServiceGroup, GROUP_MEMBER, NONE, "Enable a service group or one member",
        |a| Ok(Command::ServiceGroup(ServiceGroupCmd::Enable { name: a.pos(0)?, member: group_member(a)? }))),
    cmd!(Disable ServiceGroup, GROUP_MEMBER, &[DisableGroupOpts::OPTIONS],
    "Take a service group or one member out of service, at once, after -delay, or gracefully",
    |a| {
        let o = DisableGroupOpts::default().with(&a.settings::<DisableGroupOpts>()?);
        Ok(Command::ServiceGroup(ServiceGroupCmd::Disable { name: a.pos(0)?, member: group_member(a)?, delay: o.delay, graceful: o.graceful }))
    }),
    cmd!(Show ServiceGroup, SHOW_NAME, OUTPUT, "Show service groups",
        |a| Ok(Command::Show { object: Object::ServiceGroup, name: a.pos_opt(0)?, format: output(a)? })),
    cmd!(Stat ServiceGroup, SHOW_NAME, OUTPUT, "Service group statistics",
        |a| Ok(Command::Stat { object: Object::ServiceGroup, name: a.pos_opt(0)?, format: output(a)? })),
    // lb vserver
    cmd!(Add LbVserver, &[req::<Name>("name"), req::<crate::conf::model::ServiceType>("serviceType"), opt::<std::net::IpAddr>("IPAddress"), opt::<crate::value::VserverPort>("port")],
    &[VserverSettings::OPTIONS], "Add a load-balancing virtual server",
    |a| {
        let vip = match (a.pos_opt::<std::net::IpAddr>(2)?, a.pos_opt::<crate::value::VserverPort>(3)?) {
            (Some(ip), Some(crate::value::VserverPort(Some(port)))) => Some((ip, port)),
            // `0.0.0.0 0`: how `save` writes a vserver without an address.
            (Some(ip), Some(crate::value::VserverPort(None))) if ip.is_unspecified() => None,
            (Some(_), Some(crate::value::VserverPort(None))) => {
                return Err(CliError::arg_value(ErrorKind::ValueOutOfRange, "port", "0"));
            }
            (None, None) => None,
            (Some(_), None) => return Err(missing("port")),
            (None, Some(_)) => return Err(missing("IPAddress")),
        };
        Ok(Command::LbVserver(VserverCmd::Add { name: a.pos(0)?, service_type: a.pos(1)?, vip, settings: a.settings::<VserverSettings>()? }))
    }),
    cmd!(Set LbVserver, NAME, &[VserverSettings::OPTIONS], "Change a virtual server",
        |a| Ok(Command::LbVserver(VserverCmd::Common(Common::Set { name: a.pos(0)?, settings: a.settings::<VserverSettings>()? })))),
    cmd!(unset LbVserver, NAME, &[VserverSettings::OPTIONS], "Return virtual server options to their defaults",
        |a| Ok(Command::LbVserver(VserverCmd::Common(Common::Unset { name: a.pos(0)?, keys: a.keys::<VserverSettings>()? })))),
    cmd!(Rm LbVserver, NAME, NONE, "Remove a virtual server", |a| Ok(Command::LbVserver(VserverCmd::Common(Common::Rm { name: a.pos(0)? })))),
    cmd!(Rename LbVserver, RENAME, NONE, "Rename a virtual server", |a| Ok(Command::LbVserver(VserverCmd::Common(Common::Rename { name: a.pos(0)?, new_name: a.pos(1)? })))),
    cmd!(Enable LbVserver, NAME, NONE, "Enable a virtual server", |a| Ok(Command::LbVserver(VserverCmd::Enable { name: a.pos(0)? }))),
    cmd!(Disable LbVserver, NAME, NONE, "Disable a virtual server", |a| Ok(Command::LbVserver(VserverCmd::Disable { name: a.pos(0)? }))),
    cmd!(Bind LbVserver, &[req::<Name>("name"), req::<Name>("serviceName")], &[VsBindSettings::OPTIONS],
        "Bind a service to a virtual server",
        |a| Ok(Command::LbVserver(VserverCmd::Bind { vserver: a.pos(0)?, service: a.pos(1)?, settings: a.settings::<VsBindSettings>()? }))),
    cmd!(Unbind LbVserver, &[req::<Name>("name"), req::<Name>("serviceName")], NONE,
        "Unbind a service from a virtual server",
        |a| Ok(Command::LbVserver(VserverCmd::Unbind { vserver: a.pos(0)?, service: a.pos(1)? }))),
    cmd!(Show LbVserver, SHOW_NAME, OUTPUT, "Show virtual servers",
        |a| Ok(Command::Show { object: Object::LbVserver, name: a.pos_opt(0)?, format: output(a)? })),
    cmd!(Stat Ns, &[], OUTPUT, "The engine's figures: frames received, sent, handed between workers and dropped, per worker",
        |a| Ok(Command::Stat { object: Object::Ns, name: None, format: output(a)? })),
    cmd!(Stat LbVserver, SHOW_NAME, OUTPUT, "Virtual server statistics",
        |a| Ok(Command::Stat { object: Object::LbVserver, name: a.pos_opt(0)?, format: output(a)? })),
    // lb monitor
    cmd!(Add LbMonitor, &[req::<Name>("monitorName"), req::<crate::conf::model::MonitorType>("type")], &[MonitorSettings::OPTIONS],
        "Add a monitor",
        |a| Ok(Command::LbMonitor(MonitorCmd::Add { name: a.pos(0)?, monitor_type: a.pos(1)?, settings: a.settings::<MonitorSettings>()? }))),
    cmd!(Set LbMonitor, &[req::<Name>("monitorName"), req::<crate::conf::model::MonitorType>("type")], &[MonitorSettings::OPTIONS],
        "Change a monitor",
        |a| Ok(Command::LbMonitor(MonitorCmd::Set { name: a.pos(0)?, monitor_type: a.pos(1)?, settings: a.settings::<MonitorSettings>()? }))),
    cmd!(unset LbMonitor, &[req::<Name>("monitorName"), req::<crate::conf::model::MonitorType>("type")], &[MonitorSettings::OPTIONS],
        "Return monitor options to their defaults",
        |a| Ok(Command::LbMonitor(MonitorCmd::Unset { name: a.pos(0)?, monitor_type: a.pos(1)?, keys: a.keys::<MonitorSettings>()? }))),
    cmd!(Rm LbMonitor, &[req::<Name>("monitorName"), opt::<crate::conf::model::MonitorType>("type")], NONE,
        "Remove a monitor (it must not be bound)",
        |a| Ok(Command::LbMonitor(MonitorCmd::Rm { name: a.pos(0)?, monitor_type: a.pos_opt(1)? }))),
    cmd!(Rename LbMonitor, RENAME, NONE, "Rename a monitor",
        |a| Ok(Command::LbMonitor(MonitorCmd::Rename { name: a.pos(0)?, new_name: a.pos(1)? }))),
    cmd!(Bind LbMonitor, &[req::<Name>("monitorName"), opt::<Name>("serviceName")], &[MetricBindOpts::OPTIONS, MonitorBindSettings::OPTIONS],
    "Bind a metric to a LOAD monitor, or the monitor to a service or service group",
    |a| {
        let o = MetricBindOpts::default().with(&a.settings::<MetricBindOpts>()?);
        if let Some(target) = a.pos_opt::<Name>(1)? {
            if o.metric.is_some() {
                return Err(CliError::arg(ErrorKind::NoSuchArgument, "-metric"));
            }
            return Ok(Command::LbMonitor(MonitorCmd::BindTo {
                monitor: a.pos(0)?,
                target,
                settings: a.settings::<MonitorBindSettings>()?,
            }));
        }
        Ok(Command::LbMonitor(MonitorCmd::BindMetric {
            monitor: a.pos(0)?,
            metric: o.metric.ok_or_else(|| missing("metric"))?,
            threshold: o.metric_threshold.ok_or_else(|| missing("metricThreshold"))?.get(),
            weight: o.metric_weight.get(),
        }))
    }),
    cmd!(Unbind LbMonitor, &[req::<Name>("monitorName"), opt::<Name>("serviceName")], &[MetricBindOpts::OPTIONS],
    "Unbind a metric from a LOAD monitor, or the monitor from a service or service group",
    |a| {
        if let Some(target) = a.pos_opt::<Name>(1)? {
            return Ok(Command::LbMonitor(MonitorCmd::UnbindFrom { monitor: a.pos(0)?, target }));
        }
        Ok(Command::LbMonitor(MonitorCmd::UnbindMetric {
            monitor: a.pos(0)?,
            metric: MetricBindOpts::default().with(&a.settings::<MetricBindOpts>()?).metric.ok_or_else(|| missing("metric"))?,
        }))
    }),
    cmd!(Enable LbMonitor, &[req::<Name>("serviceName"), opt::<Name>("monitorName")], NONE,
        "Enable monitor bindings of a service",
        |a| Ok(Command::LbMonitor(MonitorCmd::Enable { service: a.pos(0)?, monitor: a.pos_opt(1)? }))),
    cmd!(Disable LbMonitor, &[req::<Name>("serviceName"), opt::<Name>("monitorName")], NONE,
        "Disable monitor bindings of a service",
        |a| Ok(Command::LbMonitor(MonitorCmd::Disable { service: a.pos(0)?, monitor: a.pos_opt(1)? }))),
    cmd!(Show LbMonitor, SHOW_NAME, OUTPUT, "Show monitors",
        |a| Ok(Command::Show { object: Object::LbMonitor, name: a.pos_opt(0)?, format: output(a)? })),
    // lb metricTable
    cmd!(Add LbMetricTable, &[req::<Name>("metricTable")], NONE, "Add a metric table",
        |a| Ok(Command::LbMetricTable(MetricTableCmd::Add { name: a.pos(0)? }))),
    cmd!(Rm LbMetricTable, &[req::<Name>("metricTable")], NONE, "Remove a metric table (no monitor may use it)",
        |a| Ok(Command::LbMetricTable(MetricTableCmd::Rm { name: a.pos(0)? }))),
    cmd!(Bind LbMetricTable, &[req::<Name>("metricTable"), req::<Name>("metric"), req::<crate::value::Oid>("SNMPOID")], NONE,
        "Add a metric (name and SNMP OID) to a table",
        |a| Ok(Command::LbMetricTable(MetricTableCmd::Bind { table: a.pos(0)?, metric: a.pos(1)?, oid: a.pos(2)? }))),
    cmd!(Set LbMetricTable, &[req::<Name>("metricTable"), req::<Name>("metric"), req::<crate::value::Oid>("SNMPOID")], NONE,
        "Change the OID of a metric",
        |a| Ok(Command::LbMetricTable(MetricTableCmd::Set { table: a.pos(0)?, metric: a.pos(1)?, oid: a.pos(2)? }))),
    cmd!(Unbind LbMetricTable, &[req::<Name>("metricTable"), req::<Name>("metric")], NONE,
        "Remove a metric from a table",
        |a| Ok(Command::LbMetricTable(MetricTableCmd::Unbind { table: a.pos(0)?, metric: a.pos(1)? }))),
    cmd!(Show LbMetricTable, SHOW_NAME, OUTPUT, "Show metric tables",
        |a| Ok(Command::Show { object: Object::LbMetricTable, name: a.pos_opt(0)?, format: output(a)? })),
    // lb parameter, ns config
    cmd!(Set LbParameter, &[], &[LbParameterSettings::OPTIONS], "Change global load-balancing parameters",
        |a| Ok(Command::LbParameter(ParameterCmd::Set { settings: a.settings::<LbParameterSettings>()? }))),
    cmd!(unset LbParameter, &[], &[LbParameterSettings::OPTIONS], "Return global parameters to their defaults",
        |a| Ok(Command::LbParameter(ParameterCmd::Unset { keys: a.keys::<LbParameterSettings>()? }))),
    cmd!(Show LbPersistentSessions, &[opt::<Name>("vServer")], OUTPUT, "Show the live SOURCEIP persistence sessions",
        |a| Ok(Command::Show { object: Object::LbPersistentSessions, name: a.pos_opt(0)?, format: output(a)? })),
    cmd!(Show LbParameter, &[], OUTPUT, "Show global load-balancing parameters",
        |a| Ok(Command::Show { object: Object::LbParameter, name: None, format: output(a)? })),
    cmd!(Save NsConfig, &[], NONE, "Write the running configuration to ns.conf", |_| Ok(Command::SaveNsConfig)),
    cmd!(Clear NsConfig, &[req::<crate::conf::model::ClearLevel>("level")], &[ClearOpts::OPTIONS],
    "Clear the configuration: basic (keeps IPs, routes, lb parameter), extended (keeps IPs, routes) or full",
    |a| {
        // Nobody can answer NetScaler's "Are you sure?" over the socket: -force says it.
        if !ClearOpts::default().with(&a.settings::<ClearOpts>()?).force {
            return Err(missing("force").with_detail("Clearing the configuration needs -force"));
        }
        Ok(Command::ClearNsConfig { level: a.pos(0)? })
    }),
    // system user
    cmd!(Add SystemUser, SYSTEM_USER_ADD, &[EncryptedOpt::OPTIONS, crate::conf::users::SystemUserSettings::OPTIONS],
        "Add a user of the management API (NITRO); bind a command policy to let it in",
        |a| Ok(Command::SystemUser(crate::command::SystemUserCmd::Add { name: a.pos(0)?, password: given_password(a)?, settings: a.settings::<crate::conf::users::SystemUserSettings>()? }))),
    cmd!(Set SystemUser, SYSTEM_USER_SET, &[PasswordOpt::OPTIONS, crate::conf::users::SystemUserSettings::OPTIONS],
        "Change a user's password or options",
        |a| Ok(Command::SystemUser(crate::command::SystemUserCmd::Set { name: a.pos(0)?, password: new_password(a)?, settings: a.settings::<crate::conf::users::SystemUserSettings>()? }))),
    cmd!(unset SystemUser, NAME_USER, &[crate::conf::users::SystemUserSettings::OPTIONS], "Return a user's options to their defaults",
        |a| Ok(Command::SystemUser(crate::command::SystemUserCmd::Unset { name: a.pos(0)?, keys: a.keys::<crate::conf::users::SystemUserSettings>()? }))),
    cmd!(Rm SystemUser, NAME_USER, NONE, "Remove a user (its sessions end)",
        |a| Ok(Command::SystemUser(crate::command::SystemUserCmd::Rm { name: a.pos(0)? }))),
    cmd!(Bind SystemUser, SYSTEM_USER_BIND, NONE,
        "Give a user a command policy: superuser, sysadmin or network (everything), operator (read, enable, disable), read-only",
        |a| Ok(Command::SystemUser(crate::command::SystemUserCmd::Bind { name: a.pos(0)?, policy: a.pos(1)?, priority: u32::try_from(a.pos::<Bounded<0, 4_294_967_295>>(2)?.get()).unwrap_or(u32::MAX) }))),
    cmd!(Unbind SystemUser, &[req::<Name>("userName"), req::<crate::conf::users::CommandPolicy>("policyName")], NONE,
        "Take a command policy from a user",
        |a| Ok(Command::SystemUser(crate::command::SystemUserCmd::Unbind { name: a.pos(0)?, policy: a.pos(1)? }))),
    cmd!(Show SystemUser, SHOW_NAME, OUTPUT, "Show the management API's users and their policies",
        |a| Ok(Command::Show { object: Object::SystemUser, name: a.pos_opt(0)?, format: output(a)? })),
    cmd!(Show NsRunningConfig, &[], NONE, "Show the running configuration as commands",
        |_| Ok(Command::Show { object: Object::NsRunningConfig, name: None, format: OutputFormat::Text })),
];

/// A command line split into its arguments, ready for the command's `build`.
#[derive(Debug)]
pub struct Args {
    pub spec: &'static CommandSpec,
    pub positionals: Vec<Token>,
    pub options: Vec<(&'static OptSpec, Vec<Token>)>,
}

impl Args {
    /// A required positional argument (presence was checked when splitting).
    pub fn pos<T: ArgValue>(&self, i: usize) -> Result<T> {
        let spec = &self.spec.positionals[i];
        let tok = self.positionals.get(i).ok_or_else(|| missing(spec.name))?;
        T::parse(spec.name, std::slice::from_ref(tok))
    }

    pub fn pos_opt<T: ArgValue>(&self, i: usize) -> Result<Option<T>> {
        match self.positionals.get(i) {
            None => Ok(None),
            Some(tok) => {
                T::parse(self.spec.positionals[i].name, std::slice::from_ref(tok)).map(Some)
            }
        }
    }

    /// The options that belong to `S`, typed.
    pub fn settings<S: Settings>(&self) -> Result<Vec<S::Setting>> {
        self.options
            .iter()
            .filter(|(o, _)| S::key_of(o.name).is_some())
            .map(|(o, toks)| S::parse_setting(o.name, toks))
            .collect()
    }

    /// `unset`: the option names given, as keys of `S`.
    pub fn keys<S: Settings>(&self) -> Result<Vec<S::Key>> {
        let keys: Vec<S::Key> = self
            .options
            .iter()
            .filter_map(|(o, _)| S::key_of(o.name))
            .collect();
        if keys.is_empty() {
            return Err(missing("option to unset"));
        }
        Ok(keys)
    }
}

/// Parses one line into the commands it stands for (several when it holds `[a-b]` ranges;
/// none for a blank or comment line).
pub fn parse_line(line: &str) -> Result<Vec<Command>> {
    let tokens = tokenize(line)?;
    if tokens.is_empty() {
        return Ok(Vec::new());
    }
    expand_ranges(tokens)?
        .into_iter()
        .map(|t| parse_tokens(&t))
        .collect()
}

fn find_spec(tokens: &[Token]) -> Result<(&'static CommandSpec, usize)> {
    let first = &tokens[0].text;
    let verb = match_keyword(first, Verb::ALL.iter().map(|v| (v.keyword(), *v)))
        .ok_or_else(|| CliError::arg(ErrorKind::NoSuchCommand, first.clone()))?;
    // (object words, spec) for every spelling of every object this verb takes.
    let mut candidates: Vec<(&[&str], &'static CommandSpec)> = COMMANDS
        .iter()
        .filter(|c| c.verb == verb)
        .flat_map(|c| {
            OBJECT_WORDS
                .iter()
                .filter(move |(_, o)| *o == c.object)
                .map(move |(w, _)| (*w, c))
        })
        .collect();
    let mut depth = 0;
    while candidates.iter().any(|(w, _)| w.len() > depth) {
        let Some(tok) = tokens.get(1 + depth) else {
            return Err(CliError::arg(ErrorKind::NoSuchCommand, tokens_text(tokens))
                .with_detail("Incomplete command"));
        };
        let words = candidates
            .iter()
            .filter(|(w, _)| w.len() > depth)
            .map(|(w, _)| (w[depth], w[depth]));
        let word = match_keyword(&tok.text, words).ok_or_else(|| {
            CliError::arg(ErrorKind::NoSuchCommand, tokens_text(&tokens[..=1 + depth]))
        })?;
        candidates.retain(|(w, _)| w.get(depth) == Some(&word));
        depth += 1;
    }
    let spec = candidates
        .first()
        .map(|(_, s)| *s)
        .ok_or_else(|| CliError::arg(ErrorKind::NoSuchCommand, first.clone()))?;
    Ok((spec, 1 + depth))
}

fn tokens_text(tokens: &[Token]) -> String {
    tokens
        .iter()
        .map(|t| t.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Splits the arguments after the object words into positionals and options.
fn split_args(spec: &'static CommandSpec, rest: &[Token]) -> Result<Args> {
    let mut positionals = Vec::new();
    let mut options: Vec<(&'static OptSpec, Vec<Token>)> = Vec::new();
    let mut i = 0;
    while i < rest.len() {
        let tok = &rest[i];
        i += 1;
        if !tok.is_option() {
            if positionals.len() >= spec.positionals.len() {
                return Err(CliError::arg(ErrorKind::NoSuchArgument, tok.text.clone()));
            }
            positionals.push(tok.clone());
            continue;
        }
        let name = &tok.text[1..];
        let opt =
            match_keyword(name, spec.all_options().map(|o| (o.name, o))).ok_or_else(|| {
                crate::absent::option(name)
                    .unwrap_or_else(|| CliError::arg(ErrorKind::NoSuchArgument, tok.text.clone()))
            })?;
        if options.iter().any(|(o, _)| o.name == opt.name) {
            return Err(CliError::arg(
                ErrorKind::DuplicateArgument,
                format!("-{}", opt.name),
            ));
        }
        let mut values = Vec::new();
        let arity = if spec.names_only {
            Arity::Flag
        } else {
            opt.arity
        };
        match arity {
            Arity::Flag => {}
            Arity::One | Arity::WithUnit(_) => {
                match rest.get(i) {
                    Some(v) if !v.is_option() => values.push(v.clone()),
                    _ => return Err(missing(opt.name)),
                }
                i += 1;
                if let (Arity::WithUnit(units), Some(u)) = (arity, rest.get(i))
                    && !u.quoted
                    && match_keyword(&u.text, units.iter().map(|w| (*w, ()))).is_some()
                {
                    values.push(u.clone());
                    i += 1;
                }
            }
            Arity::Many => {
                while let Some(v) = rest.get(i).filter(|v| !v.is_option()) {
                    values.push(v.clone());
                    i += 1;
                }
                if values.is_empty() {
                    return Err(missing(opt.name));
                }
            }
        }
        options.push((opt, values));
    }
    if let Some(p) = spec
        .positionals
        .get(positionals.len())
        .filter(|p| p.required)
    {
        return Err(missing(p.name));
    }
    Ok(Args {
        spec,
        positionals,
        options,
    })
}

/// Parses one already tokenized and range-expanded command.
pub fn parse_tokens(tokens: &[Token]) -> Result<Command> {
    if tokens.first().is_some_and(|t| {
        match_keyword(&t.text, Verb::ALL.iter().map(|v| (v.keyword(), *v))) == Some(Verb::Help)
    }) {
        let topic = (tokens.len() > 1).then(|| tokens_text(&tokens[1..]));
        return Ok(Command::Help { topic });
    }
    let (spec, used) = find_spec(tokens)?;
    let args = split_args(spec, &tokens[used..])?;
    (spec.build)(&args)
}

/// `help` and `help <verb> [<object>]`: synopses and option descriptions from the table.
pub fn help(topic: Option<&str>) -> String {
    let mut out = String::new();
    let tokens = topic
        .map(tokenize)
        .transpose()
        .ok()
        .flatten()
        .unwrap_or_default();
    let specs: Vec<&CommandSpec> = match tokens.first() {
        None => COMMANDS.iter().collect(),
        Some(_) => match find_spec(&tokens) {
            Ok((spec, _)) => vec![spec],
            Err(_) => {
                let verb =
                    match_keyword(&tokens[0].text, Verb::ALL.iter().map(|v| (v.keyword(), *v)));
                COMMANDS.iter().filter(|c| Some(c.verb) == verb).collect()
            }
        },
    };
    if specs.len() == 1 {
        let spec = specs[0];
        out.push_str(&format!("{}\n  {}\n", spec.synopsis(), spec.help));
        for o in spec.all_options() {
            out.push_str(&format!("  -{:<20} {}\n", o.name, o.help));
        }
    } else {
        for spec in specs {
            let mut line = format!("{} {}", spec.verb, spec.object.words().join(" "));
            for p in spec.positionals {
                line.push_str(&if p.required {
                    format!(" <{}>", p.name)
                } else {
                    format!(" [<{}>]", p.name)
                });
            }
            out.push_str(&format!("{line:<60} {}\n", spec.help));
        }
    }
    out
}

/// Completions for the last word of `line` (verbs, object words, option names).
pub fn complete(line: &str) -> Vec<String> {
    let Ok(mut tokens) = tokenize(line) else {
        return Vec::new();
    };
    let partial = if line.ends_with(char::is_whitespace) || tokens.is_empty() {
        String::new()
    } else {
        tokens.pop().map(|t| t.text).unwrap_or_default()
    };
    let starts =
        |w: &str| w.len() >= partial.len() && w[..partial.len()].eq_ignore_ascii_case(&partial);
    if tokens.is_empty() {
        return Verb::ALL
            .iter()
            .map(|v| v.keyword().to_owned())
            .filter(|w| starts(w))
            .collect();
    }
    // Object words that continue what was typed so far.
    let verb = match_keyword(&tokens[0].text, Verb::ALL.iter().map(|v| (v.keyword(), *v)));
    let mut words: Vec<String> = Vec::new();
    for c in COMMANDS.iter().filter(|c| Some(c.verb) == verb) {
        for (w, _) in OBJECT_WORDS.iter().filter(|(_, o)| *o == c.object) {
            let typed = &tokens[1..];
            if typed.len() < w.len()
                && typed
                    .iter()
                    .zip(w.iter())
                    .all(|(t, w)| match_keyword(&t.text, [(*w, ())].into_iter()).is_some())
            {
                words.push(w[typed.len()].to_owned());
            }
        }
    }
    // Past the object words: complete option names.
    if words.is_empty()
        && (partial.starts_with('-') || partial.is_empty())
        && let Ok((spec, _)) = find_spec(&tokens)
    {
        let p = partial.trim_start_matches('-');
        return spec
            .all_options()
            .filter(|o| o.name.len() >= p.len() && o.name[..p.len()].eq_ignore_ascii_case(p))
            .map(|o| format!("-{}", o.name))
            .collect();
    }
    words.sort();
    words.dedup();
    words.into_iter().filter(|w| starts(w)).collect()
}
