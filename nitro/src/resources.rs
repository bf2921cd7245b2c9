//! The configuration resources under `/nitro/v1/config/`: what each is called, its key, how
//! it is listed, and which command each verb and action stands for.

use ctl::Config;
use ctl::command::Command;
use ctl::grammar::{Object, Verb};
use ctl::render::Runtime;
use ctl::render::view::ServiceView;
use serde_json::Value;

use crate::read::{self, Object as Attrs};
use crate::reply::{Reply, errors};
use crate::request::Query;
use crate::write::{Line, required, text, unit_keys};

/// `ip` or `servername`, never both (NetScaler's 1092); `missing` names the one asked for.
fn ip_or_server(o: &Attrs, missing: &str) -> Result<String, Reply> {
    match (text(o, "ip")?, text(o, "servername")?) {
        (Some(_), Some(_)) => Err(Reply::error(
            400,
            1092,
            "Arguments cannot both be specified [serverName, IP]",
        )),
        (Some(t), None) | (None, Some(t)) => Ok(t),
        (None, None) => Err(errors::missing(missing)),
    }
}

/// A resource that holds objects (not a binding).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    LbVserver,
    Service,
    Server,
    ServiceGroup,
    LbMonitor,
    LbMetricTable,
    NsIp,
    Route,
    LbParameter,
    /// Users of the API and the CLI; never read back with their password.
    SystemUser,
}

impl Kind {
    pub fn named(resource: &str) -> Option<Self> {
        Some(match resource {
            "lbvserver" => Self::LbVserver,
            "service" => Self::Service,
            "server" => Self::Server,
            "servicegroup" => Self::ServiceGroup,
            "lbmonitor" => Self::LbMonitor,
            "lbmetrictable" => Self::LbMetricTable,
            "nsip" => Self::NsIp,
            "route" => Self::Route,
            "lbparameter" => Self::LbParameter,
            "systemuser" => Self::SystemUser,
            _ => return None,
        })
    }

    /// The attribute that names an object.
    pub fn key(self) -> &'static str {
        match self {
            Self::LbVserver | Self::Service | Self::Server => "name",
            Self::ServiceGroup => "servicegroupname",
            Self::LbMonitor => "monitorname",
            Self::LbMetricTable => "metrictable",
            Self::NsIp => "ipaddress",
            Self::Route => "network",
            Self::LbParameter => "",
            Self::SystemUser => "username",
        }
    }

    fn object(self) -> Object {
        match self {
            Self::LbVserver => Object::LbVserver,
            Self::Service => Object::Service,
            Self::Server => Object::Server,
            Self::ServiceGroup => Object::ServiceGroup,
            Self::LbMonitor => Object::LbMonitor,
            Self::LbMetricTable => Object::LbMetricTable,
            Self::NsIp => Object::NsIp,
            Self::Route => Object::Route,
            Self::LbParameter => Object::LbParameter,
            Self::SystemUser => Object::SystemUser,
        }
    }

    /// A singleton (one object, no name: `lbparameter`).
    pub fn singleton(self) -> bool {
        self == Self::LbParameter
    }

    /// Every object, as GET lists them.
    pub fn list(self, config: &Config, rt: &dyn Runtime) -> Vec<Attrs> {
        match self {
            Self::LbVserver => config
                .vservers
                .values()
                .map(|v| read::lbvserver(config, v, rt))
                .collect(),
            Self::Service => read::services(config, rt),
            Self::Server => config
                .servers
                .keys()
                .filter_map(|n| read::server(config, n))
                .collect(),
            Self::ServiceGroup => config
                .service_groups
                .keys()
                .filter_map(|n| read::servicegroup(config, n, rt))
                .collect(),
            Self::LbMonitor => config.monitors.values().map(read::lbmonitor).collect(),
            Self::LbMetricTable => read::metrictables(config),
            Self::NsIp => read::nsips(config),
            Self::Route => read::routes(config),
            Self::LbParameter => vec![read::lbparameter(config)],
            Self::SystemUser => read::systemusers(config),
        }
    }

    /// Attributes that cannot change after `add` (NITRO's immutable keys): an update may
    /// repeat them unchanged (Ansible sends the whole object), never change them.
    fn immutable(self) -> &'static [&'static str] {
        match self {
            Self::LbVserver => &["servicetype", "port", "ipv46", "ip", "range", "td"],
            Self::Service => &["servicetype", "port", "servername", "ip", "td"],
            Self::Server => &["domain", "td"],
            Self::ServiceGroup => &["servicetype", "td"],
            Self::LbMonitor => &["type"],
            Self::NsIp => &["type", "netmask", "td"],
            Self::Route => &["netmask", "gateway", "td"],
            Self::LbMetricTable | Self::LbParameter | Self::SystemUser => &[],
        }
    }

    /// Read-only attributes a client may send back from a GET: ignored on input.
    fn read_only(self) -> &'static [&'static str] {
        &[
            "curstate",
            "effectivestate",
            "svrstate",
            "health",
            "totalservices",
            "activeservices",
            "numofconnections",
            "monitor_state",
            "serviceconftype2",
            "servicegroupeffectivestate",
            "metrictype",
            "type_readonly",
        ]
    }

    /// `add`: the command for one posted object.
    pub fn add_one(self, o: &Attrs) -> Result<Vec<Command>, Reply> {
        let line = Line::new(Verb::Add, self.object());
        let mut skip: Vec<&str> = vec![self.key()];
        skip.extend(self.read_only());
        let line = match self {
            Self::LbVserver => {
                skip.extend(["servicetype", "ipv46", "ip", "port"]);
                let ip = text(o, "ipv46")?.or(text(o, "ip")?);
                let port = text(o, "port")?;
                line.arg(required(o, "name")?)
                    .arg(required(o, "servicetype")?)
                    .opt_arg(ip)
                    .opt_arg(port)
            }
            Self::Service => {
                skip.extend(["servicetype", "ip", "servername", "port"]);
                let target = ip_or_server(o, "ip")?;
                line.arg(required(o, "name")?)
                    .arg(target)
                    .arg(required(o, "servicetype")?)
                    .arg(required(o, "port")?)
            }
            Self::Server => {
                skip.extend(["ipaddress", "domain"]);
                let addr = text(o, "ipaddress")?
                    .or(text(o, "domain")?)
                    .ok_or_else(|| errors::missing("ipaddress"))?;
                line.arg(required(o, "name")?).arg(addr)
            }
            Self::ServiceGroup => {
                skip.push("servicetype");
                line.arg(required(o, "servicegroupname")?)
                    .arg(required(o, "servicetype")?)
            }
            Self::LbMonitor => {
                skip.push("type");
                skip.extend(unit_keys());
                line.arg(required(o, "monitorname")?)
                    .arg(required(o, "type")?)
            }
            Self::LbMetricTable => line.arg(required(o, "metrictable")?),
            Self::NsIp => {
                skip.push("netmask");
                line.arg(required(o, "ipaddress")?)
                    .arg(required(o, "netmask")?)
            }
            Self::Route => {
                skip.extend(["netmask", "gateway"]);
                line.arg(required(o, "network")?)
                    .arg(required(o, "netmask")?)
                    .arg(required(o, "gateway")?)
            }
            Self::SystemUser => {
                skip.push("password");
                line.arg(required(o, "username")?)
                    .arg(required(o, "password")?)
            }
            Self::LbParameter => return Err(errors::unsupported_action("add")),
        };
        line.options(o, &skip)?.build()
    }

    /// `update` (PUT): `set` with the attributes given; immutable ones must be unchanged.
    pub fn update(
        self,
        config: &Config,
        rt: &dyn Runtime,
        o: &Attrs,
    ) -> Result<Vec<Command>, Reply> {
        let mut skip: Vec<&str> = vec![self.key()];
        skip.extend(self.read_only());
        if !self.singleton() {
            let name = required(o, self.key())?;
            let current = self
                .find(config, rt, &name)
                .ok_or_else(|| errors::no_such(self.key(), &name))?;
            for attr in self.immutable() {
                if let Some(given) = text(o, attr)? {
                    let now = text(&current, attr)?.unwrap_or_default();
                    if !given.eq_ignore_ascii_case(&now) {
                        return Err(Reply::error(
                            400,
                            278,
                            format!(
                                "Invalid argument [{attr}: cannot be changed once added; remove and add the object]"
                            ),
                        ));
                    }
                }
                skip.push(attr);
            }
        }
        let line = Line::new(Verb::Set, self.object());
        let line = match self {
            Self::LbParameter => line,
            Self::LbMonitor => {
                skip.extend(unit_keys());
                line.arg(required(o, "monitorname")?)
                    .arg(required(o, "type")?)
            }
            Self::Route => line
                .arg(required(o, "network")?)
                .arg(required(o, "netmask")?)
                .arg(required(o, "gateway")?),
            Self::LbMetricTable => return Err(errors::unsupported_action("update")),
            _ => line.arg(required(o, self.key())?),
        };
        line.options(o, &skip)?.build()
    }

    /// One object by name (`GET /config/<resource>/<name>`).
    pub fn find(self, config: &Config, rt: &dyn Runtime, name: &str) -> Option<Attrs> {
        match self {
            Self::LbVserver => config
                .vservers
                .get(name)
                .map(|v| read::lbvserver(config, v, rt)),
            Self::Service => config
                .services
                .get(name)
                .filter(|s| s.group.is_none())
                .map(|s| read::service(config, &ServiceView::new(config, s, rt))),
            Self::Server => read::server(config, name),
            Self::ServiceGroup => read::servicegroup(config, name, rt),
            Self::LbMonitor => config
                .monitor("monitorName", name)
                .ok()
                .map(read::lbmonitor),
            _ => self
                .list(config, rt)
                .into_iter()
                .find(|o| o.get(self.key()).and_then(Value::as_str) == Some(name)),
        }
    }

    /// DELETE `/config/<resource>/<name>[?args=…]`.
    pub fn delete(self, name: &str, q: &Query) -> Result<Vec<Command>, Reply> {
        let line = Line::new(Verb::Rm, self.object()).arg(name);
        let line = match self {
            Self::LbMonitor => line.opt_arg(q.arg("type").map(str::to_owned)),
            Self::Route => line
                .arg(q.arg("netmask").ok_or_else(|| errors::missing("netmask"))?)
                .arg(q.arg("gateway").ok_or_else(|| errors::missing("gateway"))?),
            Self::LbParameter => return Err(errors::unsupported_action("delete")),
            _ => line,
        };
        line.build()
    }

    /// `POST ?action=enable|disable|rename|unset`.
    pub fn action(self, action: &str, o: &Attrs) -> Result<Vec<Command>, Reply> {
        let object = self.object();
        match action {
            "enable" | "disable" if self == Self::LbMonitor => {
                // A monitor on one service: `enable lb monitor <service> <monitor>`.
                let verb = if action == "enable" {
                    Verb::Enable
                } else {
                    Verb::Disable
                };
                let service = text(o, "servicename")?
                    .or(text(o, "servicegroupname")?)
                    .ok_or_else(|| errors::missing("servicename"))?;
                Line::new(verb, object)
                    .arg(service)
                    .arg(required(o, "monitorname")?)
                    .build()
            }
            "enable" => {
                let line = Line::new(Verb::Enable, object).arg(required(o, self.key())?);
                match self {
                    Self::ServiceGroup => line
                        .opt_arg(text(o, "servername")?)
                        .opt_arg(text(o, "port")?)
                        .build(),
                    _ => line.build(),
                }
            }
            "disable" => {
                let line = Line::new(Verb::Disable, object).arg(required(o, self.key())?);
                let graceful = text(o, "graceful")?;
                let line = match self {
                    Self::Service | Self::Server => {
                        let line = line.opt_arg(text(o, "delay")?);
                        match graceful {
                            Some(g) => line.word("-graceFul").arg(g),
                            None => line,
                        }
                    }
                    Self::ServiceGroup => {
                        let mut line = line
                            .opt_arg(text(o, "servername")?)
                            .opt_arg(text(o, "port")?);
                        if let Some(d) = text(o, "delay")? {
                            line = line.word("-delay").arg(d);
                        }
                        match graceful {
                            Some(g) => line.word("-graceFul").arg(g),
                            None => line,
                        }
                    }
                    _ => line,
                };
                line.build()
            }
            "rename" => Line::new(Verb::Rename, object)
                .arg(required(o, self.key())?)
                .arg(required(o, "newname")?)
                .build(),
            "unset" => {
                let line = Line::new(Verb::Unset, object);
                let mut skip: Vec<&str> = vec![self.key()];
                let line = match self {
                    Self::LbParameter => line,
                    Self::LbMonitor => {
                        skip.push("type");
                        line.arg(required(o, "monitorname")?)
                            .arg(required(o, "type")?)
                    }
                    Self::Route => {
                        skip.extend(["netmask", "gateway"]);
                        line.arg(required(o, "network")?)
                            .arg(required(o, "netmask")?)
                            .arg(required(o, "gateway")?)
                    }
                    _ => line.arg(required(o, self.key())?),
                };
                line.options(o, &skip)?.build()
            }
            other => Err(errors::unsupported_action(other)),
        }
    }
}

/// A binding resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binding {
    VserverService,
    VserverGroup,
    ServiceMonitor,
    MonitorService,
    GroupMember,
    GroupMonitor,
    MonitorMetric,
    TableMetric,
    /// A command policy bound to a user.
    UserPolicy,
}

impl Binding {
    pub fn named(resource: &str) -> Option<Self> {
        Some(match resource {
            "lbvserver_service_binding" => Self::VserverService,
            "lbvserver_servicegroup_binding" => Self::VserverGroup,
            "service_lbmonitor_binding" => Self::ServiceMonitor,
            "lbmonitor_service_binding" => Self::MonitorService,
            "servicegroup_servicegroupmember_binding" => Self::GroupMember,
            "servicegroup_lbmonitor_binding" => Self::GroupMonitor,
            "lbmonitor_metric_binding" => Self::MonitorMetric,
            "lbmetrictable_metric_binding" => Self::TableMetric,
            "systemuser_systemcmdpolicy_binding" => Self::UserPolicy,
            _ => return None,
        })
    }

    /// The attribute naming the primary object.
    pub fn primary(self) -> &'static str {
        match self {
            Self::VserverService | Self::VserverGroup | Self::ServiceMonitor => "name",
            Self::MonitorService | Self::MonitorMetric => "monitorname",
            Self::GroupMember | Self::GroupMonitor => "servicegroupname",
            Self::TableMetric => "metrictable",
            Self::UserPolicy => "username",
        }
    }

    /// Bind (POST or PUT).
    pub fn bind(self, o: &Attrs) -> Result<Vec<Command>, Reply> {
        let p = required(o, self.primary())?;
        let ro = [
            "curstate",
            "ipv46",
            "port_readonly",
            "servicetype",
            "svrstate",
            "ip_readonly",
        ];
        match self {
            Self::VserverService | Self::VserverGroup => {
                let second = if self == Self::VserverService {
                    "servicename"
                } else {
                    "servicegroupname"
                };
                let mut skip = vec!["name", second];
                skip.extend(ro);
                if self == Self::VserverService {
                    skip.push("port");
                }
                Line::new(Verb::Bind, Object::LbVserver)
                    .arg(p)
                    .arg(required(o, second)?)
                    .options(o, &skip)?
                    .build()
            }
            Self::ServiceMonitor | Self::GroupMonitor => {
                let object = if self == Self::ServiceMonitor {
                    Object::Service
                } else {
                    Object::ServiceGroup
                };
                Line::new(Verb::Bind, object)
                    .arg(p)
                    .word("-monitorName")
                    .arg(required(o, "monitor_name")?)
                    .options(o, &[self.primary(), "monitor_name", "monweight"])?
                    .build()
            }
            Self::MonitorService => {
                let target = text(o, "servicename")?
                    .or(text(o, "servicegroupname")?)
                    .ok_or_else(|| errors::missing("servicename"))?;
                Line::new(Verb::Bind, Object::LbMonitor)
                    .arg(p)
                    .arg(target)
                    .options(o, &["monitorname", "servicename", "servicegroupname"])?
                    .build()
            }
            Self::GroupMember => {
                let server = ip_or_server(o, "servername")?;
                let mut skip = vec!["servicegroupname", "ip", "servername", "port"];
                skip.extend(["svrstate", "delay", "graceful"]);
                Line::new(Verb::Bind, Object::ServiceGroup)
                    .arg(p)
                    .arg(server)
                    .arg(required(o, "port")?)
                    .options(o, &skip)?
                    .build()
            }
            Self::MonitorMetric => Line::new(Verb::Bind, Object::LbMonitor)
                .arg(p)
                .options(o, &["monitorname", "metrictable", "metric_unit"])?
                .build(),
            Self::TableMetric => Line::new(Verb::Bind, Object::LbMetricTable)
                .arg(p)
                .arg(required(o, "metric")?)
                .arg(
                    text(o, "snmpoid")?
                        .or(text(o, "Snmpoid")?)
                        .ok_or_else(|| errors::missing("snmpoid"))?,
                )
                .build(),
            Self::UserPolicy => Line::new(Verb::Bind, Object::SystemUser)
                .arg(p)
                .arg(required(o, "policyname")?)
                .arg(required(o, "priority")?)
                .build(),
        }
    }

    /// Unbind: `DELETE /config/<binding>/<primary>?args=<secondary>:<value>`.
    pub fn unbind(self, primary: &str, q: &Query) -> Result<Vec<Command>, Reply> {
        let arg = |k: &str| q.arg(k).map(str::to_owned);
        let need = |k: &'static str| arg(k).ok_or_else(|| errors::missing(k));
        match self {
            Self::VserverService => Line::new(Verb::Unbind, Object::LbVserver)
                .arg(primary)
                .arg(need("servicename")?)
                .build(),
            Self::VserverGroup => Line::new(Verb::Unbind, Object::LbVserver)
                .arg(primary)
                .arg(need("servicegroupname")?)
                .build(),
            Self::ServiceMonitor | Self::GroupMonitor => {
                let object = if self == Self::ServiceMonitor {
                    Object::Service
                } else {
                    Object::ServiceGroup
                };
                Line::new(Verb::Unbind, object)
                    .arg(primary)
                    .word("-monitorName")
                    .arg(need("monitor_name")?)
                    .build()
            }
            Self::MonitorService => Line::new(Verb::Unbind, Object::LbMonitor)
                .arg(primary)
                .arg(
                    arg("servicename")
                        .or(arg("servicegroupname"))
                        .ok_or_else(|| errors::missing("servicename"))?,
                )
                .build(),
            Self::GroupMember => Line::new(Verb::Unbind, Object::ServiceGroup)
                .arg(primary)
                .arg(
                    arg("servername")
                        .or(arg("ip"))
                        .ok_or_else(|| errors::missing("servername"))?,
                )
                .arg(need("port")?)
                .build(),
            Self::MonitorMetric => Line::new(Verb::Unbind, Object::LbMonitor)
                .arg(primary)
                .word("-metric")
                .arg(need("metric")?)
                .build(),
            Self::TableMetric => Line::new(Verb::Unbind, Object::LbMetricTable)
                .arg(primary)
                .arg(need("metric")?)
                .build(),
            Self::UserPolicy => Line::new(Verb::Unbind, Object::SystemUser)
                .arg(primary)
                .arg(need("policyname")?)
                .build(),
        }
    }

    pub fn list(self, config: &Config, rt: &dyn Runtime, resource: &str) -> Vec<(String, Attrs)> {
        read::bindings(config, resource, rt).unwrap_or_default()
    }
}
