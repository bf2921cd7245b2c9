//! NITRO, NetScaler's REST API, for Fulcrum: the tools operators already run (Terraform's
//! citrixadc provider, the Ansible collection, Nagios checks, exporters) drive the engine
//! unchanged.
//!
//! Every change is the command of the language it stands for (see [`mod@write`]): parsed by the
//! same grammar, applied all or nothing by the same control plane, saved by `save ns config`
//! the same way. This crate knows nothing of the engine; [`Appliance`] is what it needs.
//!
//! * `request` — URLs, query parameters, names encoded twice;
//! * `reply` — status lines with NetScaler's reason phrases, the error envelope and codes;
//! * `auth` — sessions, per-request credentials, command policies, failed-login limits;
//! * `resources`, `read`, `write` — the configuration resources; `stat` — statistics;
//! * `bulk` — several objects in one request, `X-NITRO-ONERROR`;
//! * `http` — the HTTP and HTTPS listeners (hyper, rustls); `dashboard` — the page at `/`.

pub mod auth;
pub mod bulk;
pub mod dashboard;
pub mod http;
pub mod read;
pub mod reply;
pub mod request;
pub mod resources;
pub mod stat;
pub mod write;

use ctl::Config;
use ctl::command::Command;
use ctl::error::CliError;
use ctl::render::Runtime;
use serde_json::{Value, json};

use auth::{Auth, Caller};
use bulk::OnError;
use read::Object;
use reply::{Reply, errors};
use request::{Api, Query, Request, Target};
use resources::{Binding, Kind};

/// What the API needs of the running daemon.
pub trait Appliance: Send + Sync {
    /// Calls `f` with the running configuration and the engine's live state.
    fn read(&self, f: &mut dyn FnMut(&Config, &dyn Runtime));
    /// Applies the groups of commands (one per object of the request) all or nothing, as one
    /// generation; on refusal, which group failed and why.
    fn apply(&self, groups: &[Vec<Command>]) -> Result<(), (usize, CliError)>;
    /// `save ns config`.
    fn save(&self) -> Result<(), CliError>;
    /// `show ns runningConfig`.
    fn running_config(&self) -> String;
    /// Whether the running configuration differs from the saved one.
    fn config_changed(&self) -> bool;
}

/// The API: an [`Appliance`] and the sessions of its callers.
pub struct Nitro<A: Appliance> {
    pub appliance: A,
    pub auth: Auth,
}

impl<A: Appliance> std::fmt::Debug for Nitro<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Nitro({} sessions)", self.auth.sessions())
    }
}

/// Largest request body taken (a bulk add of a few thousand objects).
pub const MAX_BODY: usize = 4 << 20;

fn config_copy(a: &impl Appliance) -> Config {
    let mut out = None;
    a.read(&mut |c, _| out = Some(c.clone()));
    out.unwrap_or_default()
}

/// The objects of a request body: `{"<resource>": {…}}` or `{"<resource>": [{…}, …]}`.
fn objects(body: &[u8], resource: &str) -> Result<Vec<Object>, Reply> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(errors::invalid_json("empty body"));
    }
    let v: Value =
        serde_json::from_slice(body).map_err(|e| errors::invalid_json(&e.to_string()))?;
    let inner = v
        .as_object()
        .and_then(|m| {
            m.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(resource))
                .map(|(_, v)| v.clone())
        })
        .ok_or_else(|| errors::invalid_json(&format!("no \"{resource}\" object")))?;
    match inner {
        Value::Object(m) => Ok(vec![m]),
        Value::Array(items) => items
            .into_iter()
            .map(|i| match i {
                Value::Object(m) => Ok(m),
                other => Err(Reply::error(
                    400,
                    1234,
                    format!("Invalid JSON data type [{other}]"),
                )),
            })
            .collect(),
        other => Err(Reply::error(
            400,
            1234,
            format!("Invalid JSON data type [{other}]"),
        )),
    }
}

/// `?filter=` (equality, case-insensitive), `?attrs=`, `?count=yes` over listed objects.
fn shape(resource: &str, mut items: Vec<Object>, q: &Query) -> Reply {
    items.retain(|o| {
        q.filter.iter().all(|(k, v)| {
            o.get(k.as_str()).is_some_and(|have| match have {
                Value::String(s) => s.eq_ignore_ascii_case(v),
                other => other.to_string().eq_ignore_ascii_case(v),
            })
        })
    });
    if q.count {
        return Reply::done(200, Some((resource, json!([{"__count": items.len()}]))));
    }
    if !q.attrs.is_empty() {
        for o in &mut items {
            o.retain(|k, _| q.attrs.iter().any(|a| a == k));
        }
    }
    if items.is_empty() {
        return Reply::done(200, None);
    }
    Reply::done(
        200,
        Some((
            resource,
            Value::from(items.into_iter().map(Value::Object).collect::<Vec<_>>()),
        )),
    )
}

impl<A: Appliance> Nitro<A> {
    pub fn new(appliance: A) -> Self {
        Self {
            appliance,
            auth: Auth::default(),
        }
    }

    /// Answers one request.
    pub fn handle(&self, req: &Request) -> Reply {
        let Some(target) = request::parse_target(&req.path, &req.query) else {
            return Reply::error(404, 1232, format!("Invalid object name [{}]", req.path));
        };
        let method = req.method.to_ascii_uppercase();
        if target.api == Api::Config && target.resource == "login" {
            return match method.as_str() {
                "POST" => self.login(req),
                m => errors::method(m),
            };
        }
        if target.api == Api::Config && target.resource == "logout" {
            self.auth.logout(req);
            return Reply::done(200, None);
        }
        let config = config_copy(&self.appliance);
        let caller = match self.auth.caller(&config, req) {
            Ok(c) => c,
            Err(r) => return r,
        };
        drop(config);
        if let Err(r) = Self::allowed(&caller, &method, &target) {
            log::info!(target: "nitro", "{} refused {method} {}: not authorized", caller.user, target.resource);
            return r;
        }
        let Some(onerror) = OnError::parse(req.header("x-nitro-onerror")) else {
            return Reply::error(
                400,
                1097,
                "Invalid value [X-NITRO-ONERROR, expected exit, continue or rollback]",
            );
        };
        let reply = match (target.api, method.as_str()) {
            (Api::Stat, "GET") => self.stat(&target),
            (Api::Stat, m) => errors::method(m),
            (Api::Config, "GET") => self.get(&target),
            (Api::Config, "POST") => self.post(&target, &req.body, onerror),
            (Api::Config, "PUT") => self.put(&target, &req.body, onerror),
            (Api::Config, "DELETE") => self.delete(&target),
            (_, m) => errors::method(m),
        };
        if reply.status < 300 && method != "GET" {
            log::info!(target: "nitro", "{} {method} {}{} done", caller.user, target.resource,
                target.query.action.as_deref().map(|a| format!(" ?action={a}")).unwrap_or_default());
        }
        reply
    }

    fn allowed(caller: &Caller, method: &str, target: &Target) -> Result<(), Reply> {
        let r = caller.rights;
        // Users and their policies are a superuser's alone, reading them too.
        if target.resource.starts_with("systemuser") {
            return if r.superuser {
                Ok(())
            } else {
                Err(errors::not_authorized())
            };
        }
        let ok = match method {
            "GET" => r.read,
            "POST" if matches!(target.query.action.as_deref(), Some("enable" | "disable")) => {
                r.operate
            }
            _ => r.write,
        };
        if ok {
            Ok(())
        } else {
            Err(errors::not_authorized())
        }
    }

    fn login(&self, req: &Request) -> Reply {
        let objects = match objects(&req.body, "login") {
            Ok(o) => o,
            Err(r) => return r,
        };
        let Some(o) = objects.first() else {
            return errors::invalid_json("no login object");
        };
        let (Some(user), Some(pass)) = (
            o.get("username").and_then(Value::as_str),
            o.get("password").and_then(Value::as_str),
        ) else {
            return Reply::error(400, 278, "Invalid argument [username, password]");
        };
        let timeout = o.get("timeout").and_then(|t| match t {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.parse().ok(),
            _ => None,
        });
        let config = config_copy(&self.appliance);
        match self.auth.login(&config, req.peer, user, pass, timeout) {
            Ok(token) => {
                let mut r = Reply::done(201, Some(("sessionid", json!(token))));
                r.cookie = Some(format!(
                    "NITRO_AUTH_TOKEN={}; path=/nitro/v1; HttpOnly; SameSite=Strict",
                    token.replace('#', "%23")
                ));
                r
            }
            Err(r) => {
                log::warn!(target: "nitro", "login of {user:?} refused ({})", r.body["message"]);
                r
            }
        }
    }

    fn get(&self, t: &Target) -> Reply {
        let (r, a) = (t.resource.as_str(), &self.appliance);
        // These two ask the appliance themselves: not inside `read`, which holds its state.
        match r {
            "nsrunningconfig" => {
                return Reply::done(200, Some((r, json!({"response": a.running_config()}))));
            }
            "nsconfig" => {
                let changed = a.config_changed();
                return Reply::done(
                    200,
                    Some((r, json!({"message": "", "configchanged": changed}))),
                );
            }
            _ => {}
        }
        let mut reply = None;
        a.read(&mut |config, rt| reply = Some(Self::get_in(config, rt, t)));
        reply.unwrap_or_else(|| Reply::error(599, 278, "The configuration could not be read"))
    }

    fn get_in(config: &Config, rt: &dyn Runtime, t: &Target) -> Reply {
        let r = t.resource.as_str();
        if let Some(kind) = Kind::named(r) {
            if kind.singleton() {
                return Reply::done(200, Some((r, Value::Object(read::lbparameter(config)))));
            }
            return match &t.name {
                Some(n) => match kind.find(config, rt, n) {
                    Some(o) => shape(r, vec![o], &t.query),
                    None => errors::no_such(kind.key(), n),
                },
                None => shape(r, kind.list(config, rt), &t.query),
            };
        }
        if let Some(b) = Binding::named(r) {
            let items: Vec<Object> = b
                .list(config, rt, r)
                .into_iter()
                .filter(|(p, _)| t.name.as_ref().is_none_or(|n| n == p))
                .map(|(_, o)| o)
                .collect();
            return shape(r, items, &t.query);
        }
        match r {
            "lbvserver_binding" => {
                let Some(name) = &t.name else {
                    return errors::missing("name");
                };
                if !config.vservers.contains_key(name.as_str()) {
                    return errors::no_such("name", name);
                }
                let mut o = Object::new();
                o.insert("name".into(), json!(name));
                for kind in [
                    "lbvserver_service_binding",
                    "lbvserver_servicegroup_binding",
                ] {
                    let items: Vec<Value> = read::bindings(config, kind, rt)
                        .unwrap_or_default()
                        .into_iter()
                        .filter(|(p, _)| p == name)
                        .map(|(_, o)| Value::Object(o))
                        .collect();
                    if !items.is_empty() {
                        o.insert(kind.into(), Value::from(items));
                    }
                }
                Reply::done(200, Some((r, json!([o]))))
            }
            other => errors::unknown_resource(other),
        }
    }

    fn stat(&self, t: &Target) -> Reply {
        let mut reply = None;
        self.appliance
            .read(&mut |config, rt| reply = Some(Self::stat_in(config, rt, t)));
        reply.unwrap_or_else(|| Reply::error(599, 278, "The statistics could not be read"))
    }

    fn stat_in(config: &Config, rt: &dyn Runtime, t: &Target) -> Reply {
        let r = t.resource.as_str();
        // `ns`, `protocolip`, `protocoltcp`: one object, as appliances send them.
        if let Some(o) = stat::singleton(r, config, rt) {
            return Reply::done(200, Some((r, Value::Object(o))));
        }
        let name = t.name.as_deref().or(t.query.arg("name"));
        let items = match r {
            "lbvserver" => stat::lbvserver(config, rt, name),
            "service" => stat::service(config, rt, name),
            "servicegroup" => stat::servicegroup(
                config,
                rt,
                t.name.as_deref().or(t.query.arg("servicegroupname")),
            ),
            "servicegroupmember" => {
                let Some(g) = t.query.arg("servicegroupname") else {
                    return errors::missing("servicegroupname");
                };
                let server = t.query.arg("servername").or(t.query.arg("ip"));
                stat::servicegroupmember(config, rt, g, server, t.query.arg("port"))
            }
            "nsdropreason" => Some(stat::dropreasons(rt)),
            other => return errors::unknown_resource(other),
        };
        match items {
            Some(items) => shape(r, items, &t.query),
            None => errors::no_such("name", name.unwrap_or("")),
        }
    }

    /// Applies one group of commands per object as `mode` says; `status` on success.
    fn apply(&self, groups: Vec<bulk::Group>, mode: OnError, status: u16) -> Reply {
        bulk::run(groups, mode, status, &|g| self.appliance.apply(g))
    }

    fn post(&self, t: &Target, body: &[u8], mode: OnError) -> Reply {
        let r = t.resource.as_str();
        if r == "nsconfig" {
            return match t.query.action.as_deref() {
                Some("save") => match self.appliance.save() {
                    Ok(()) => Reply::done(200, None),
                    Err(e) => Reply::refused(&e),
                },
                Some("clear") => {
                    let level = objects(body, r).ok().and_then(|o| {
                        o.first()
                            .and_then(|o| write::text(o, "level").ok().flatten())
                    });
                    let Some(level) = level else {
                        return errors::missing("level");
                    };
                    let cmds =
                        write::Line::new(ctl::grammar::Verb::Clear, ctl::grammar::Object::NsConfig)
                            .arg(level)
                            .word("-force")
                            .build();
                    self.apply(vec![cmds], mode, 200)
                }
                other => errors::unsupported_action(other.unwrap_or("")),
            };
        }
        let items = match objects(body, r) {
            Ok(i) => i,
            Err(e) => return e,
        };
        if let Some(kind) = Kind::named(r) {
            if let Some(action) = t.query.action.as_deref() {
                let groups = items.iter().map(|o| kind.action(action, o)).collect();
                return self.apply(groups, mode, 200);
            }
            let mut groups = Vec::new();
            self.appliance.read(&mut |c, rt| {
                groups = items
                    .iter()
                    .map(|o| {
                        // `?idempotent=yes` (the Go SDK's default): an object that exists
                        // already is updated instead.
                        let exists = write::text(o, kind.key())
                            .ok()
                            .flatten()
                            .is_some_and(|n| kind.find(c, rt, &n).is_some());
                        if t.query.idempotent && exists {
                            kind.update(c, rt, o)
                        } else {
                            kind.add_one(o)
                        }
                    })
                    .collect();
            });
            return self.apply(groups, mode, 201);
        }
        if let Some(b) = Binding::named(r) {
            let groups = items.iter().map(|o| b.bind(o)).collect();
            return self.apply(groups, mode, 201);
        }
        errors::unknown_resource(r)
    }

    fn put(&self, t: &Target, body: &[u8], mode: OnError) -> Reply {
        let r = t.resource.as_str();
        let mut items = match objects(body, r) {
            Ok(i) => i,
            Err(e) => return e,
        };
        if let Some(kind) = Kind::named(r) {
            // The name may be in the URL only.
            if let (Some(n), [one]) = (&t.name, items.as_mut_slice())
                && !kind.singleton()
            {
                one.entry(kind.key().to_owned()).or_insert_with(|| json!(n));
            }
            let mut groups = Vec::new();
            self.appliance.read(&mut |c, rt| {
                groups = items.iter().map(|o| kind.update(c, rt, o)).collect();
            });
            return self.apply(groups, mode, 200);
        }
        if let Some(b) = Binding::named(r) {
            let groups = items.iter().map(|o| b.bind(o)).collect();
            return self.apply(groups, mode, 200);
        }
        errors::unknown_resource(r)
    }

    fn delete(&self, t: &Target) -> Reply {
        let r = t.resource.as_str();
        // The name in the URL, or among `?args=` under its key (`name`, `servicegroupname`…),
        // as Ansible's `delete_by_args` sends it.
        let key = Kind::named(r)
            .map(Kind::key)
            .or_else(|| Binding::named(r).map(Binding::primary));
        let name = t
            .name
            .clone()
            .or_else(|| key.and_then(|k| t.query.arg(k)).map(str::to_owned));
        let Some(name) = name else {
            return errors::missing("name");
        };
        if let Some(kind) = Kind::named(r) {
            let group = kind.delete(&name, &t.query);
            return self.apply(vec![group], OnError::Rollback, 200);
        }
        if let Some(b) = Binding::named(r) {
            let group = b.unbind(&name, &t.query);
            return self.apply(vec![group], OnError::Rollback, 200);
        }
        errors::unknown_resource(r)
    }
}
