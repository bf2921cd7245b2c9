//! `show` and `stat` output in NetScaler's layouts and as JSON, rendered from the
//! configuration plus what the running engine reports ([`Runtime`]).
//!
//! * [`view`] — one view value per vserver, service and service group, gathered once;
//! * `text` and `json` — the two renderings of those views;
//! * `objects` — the objects that have no runtime state (monitors, metric tables, IPs,
//!   servers, routes, parameters, persistence sessions, the running configuration).

mod json;
mod objects;
mod text;
pub mod view;

use serde_json::Value;

use crate::conf::Config;
use crate::conf::model::*;
use crate::grammar::Object;

use view::{GroupView, ServiceView, VserverView};

/// What the running engine knows about one service.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceStats {
    pub up: bool,
    pub hits: u64,
    pub active: u64,
    pub packets: u64,
    pub bytes: u64,
    pub window_packets: u64,
    pub window_bytes: u64,
    pub response_time_us: Option<u64>,
    /// Measured by the data path on real traffic (LEASTRESPONSETIME).
    pub measured_response_time_us: Option<u64>,
    pub load: Option<u64>,
    /// Disabled with a delay or gracefully, and not out of service yet.
    pub going_out: Option<GoingOut>,
    /// Per second, over the last few seconds.
    pub rates: Rates,
}

/// One line listing the options of `settings` among `keys` (stored, saved back, not
/// applied by an L4 engine) that are set; nothing when none is.
pub fn stored_line<S: crate::settings::Settings>(settings: &S, keys: &[S::Key], out: &mut String) {
    let mut only = settings.clone();
    for k in settings.explicit() {
        if !keys.contains(&k) {
            only.reset(k);
        }
    }
    let mut options = String::new();
    only.render_non_default(&mut options);
    if !options.is_empty() {
        out.push_str(&format!(
            "\tStored and saved, no effect in an L4 engine:{options}\n"
        ));
    }
}

/// Per-second rates of hits, packets and bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rates {
    pub hits: u64,
    pub packets: u64,
    pub bytes: u64,
}

/// A service GOING OUT OF SERVICE (`disable service <s> [<delay>] [-graceFul YES]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GoingOut {
    pub graceful: bool,
    pub active: u64,
    /// Seconds until OUT OF SERVICE when a delay bounds it.
    pub remaining_s: Option<u64>,
}

impl std::fmt::Display for GoingOut {
    /// NetScaler's wording: `Graceful (number of active clients: 1), Out Of Service in 1998
    /// seconds`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if self.graceful {
            parts.push(format!(
                "Graceful (number of active clients: {})",
                self.active
            ));
        }
        if let Some(s) = self.remaining_s {
            parts.push(format!("Out Of Service in {s} seconds"));
        }
        f.write_str(&parts.join(", "))
    }
}

/// What the running engine knows about one vserver.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VserverStats {
    /// Why round robin decides instead of the configured method, when it does.
    pub round_robin_reason: Option<String>,
    /// New connections the vserver received (its own counter: a service bound to several
    /// vservers counts in each).
    pub hits: u64,
    pub rates: Rates,
    /// Live SOURCEIP sessions, for a vserver with persistence.
    pub persistent_sessions: Option<u64>,
    /// Kept out after going DOWN (`-disablePrimaryOnDown`) until enabled.
    pub kept_out: bool,
    /// Clients that spilled over and stick to the backup (`-soPersistence`).
    pub spilled_clients: Option<u64>,
}

/// What one worker did (`stat ns`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkerRow {
    pub core: usize,
    pub rx: u64,
    pub tx: u64,
    pub handoff_in: u64,
    pub handoff_out: u64,
    pub drops: u64,
    /// SNAT ports passed over for SYNs without timestamps (their service may hold the tuple
    /// in TIME_WAIT), and ports reused although it may.
    pub snat_skipped: u64,
    pub snat_time_wait: u64,
    /// The flow table: flows held, its size, TCP flows not answered yet, and flows that gave
    /// way to new ones (embryonic budget spent or table full).
    pub flows: u64,
    pub flow_capacity: u64,
    pub embryonic: u64,
    pub flows_given_way: u64,
    /// SYNs answered with a cookie; ACKs whose cookie proved the handshake; ACKs whose
    /// cookie did not.
    pub syn_cookies_sent: u64,
    pub syn_cookies_valid: u64,
    pub syn_cookies_failed: u64,
}

/// The engine's live state, as `show`/`stat` read it.
pub trait Runtime {
    /// Each worker's figures.
    fn workers(&self) -> Vec<WorkerRow> {
        Vec::new()
    }
    fn service(&self, name: &str) -> ServiceStats;
    fn vserver(&self, name: &str) -> VserverStats;
    /// Frames dropped, by reason, summed over the workers.
    fn drops(&self) -> Vec<(String, u64)>;
    /// A vserver's live persistence sessions.
    fn persistent_sessions(&self, _vserver: &str) -> Vec<PersistentSession> {
        Vec::new()
    }
    /// The daemon's recent events (state changes, generations, errors), oldest first.
    fn events(&self) -> Vec<EventRow> {
        Vec::new()
    }
}

/// Nothing running: every counter zero, no health, no events. For rendering a configuration
/// on its own (a file checked offline, tests of configuration-only objects).
#[derive(Clone, Copy, Debug, Default)]
pub struct NothingRunning;

impl Runtime for NothingRunning {
    fn service(&self, _: &str) -> ServiceStats {
        ServiceStats::default()
    }
    fn vserver(&self, _: &str) -> VserverStats {
        VserverStats::default()
    }
    fn drops(&self) -> Vec<(String, u64)> {
        Vec::new()
    }
}

/// One event of `show ns events`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventRow {
    /// Seconds since 1970 (UTC).
    pub unix_s: u64,
    pub level: String,
    pub target: String,
    pub message: String,
}

/// One SOURCEIP session: the client, the service it persists to, seconds left.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PersistentSession {
    pub client: std::net::Ipv4Addr,
    pub service: String,
    pub remaining_s: u64,
}

/// The rendered output (without the final ` Done`), or a NetScaler error message.
pub type Output = Result<String, crate::error::CliError>;

fn no_such(arg: &str, name: &str) -> crate::error::CliError {
    crate::error::CliError::arg_value(crate::error::ErrorKind::NoSuchResource, arg, name)
}

/// The services operators add themselves (not the members of service groups).
fn own_services(config: &Config) -> impl Iterator<Item = &Service> + Clone {
    config.services.values().filter(|s| s.group.is_none())
}

fn pick<'a, T>(
    items: impl Iterator<Item = &'a T>,
    name: Option<&str>,
    key: impl Fn(&T) -> &str,
    arg: &str,
) -> Result<Vec<&'a T>, crate::error::CliError>
where
    T: 'a,
{
    let all: Vec<&T> = items.filter(|x| name.is_none_or(|n| key(x) == n)).collect();
    match name {
        Some(n) if all.is_empty() => Err(no_such(arg, n)),
        _ => Ok(all),
    }
}

fn pick_groups<'a>(
    config: &'a Config,
    name: Option<&str>,
) -> Result<Vec<&'a ServiceGroup>, crate::error::CliError> {
    pick(
        config.service_groups.values(),
        name,
        |g| g.name.as_str(),
        "serviceGroupName",
    )
}

/// The views of the named objects (all of them without a name).
fn vserver_views<'a>(
    config: &'a Config,
    name: Option<&str>,
    rt: &dyn Runtime,
) -> Result<Vec<VserverView<'a>>, crate::error::CliError> {
    let list = pick(config.vservers.values(), name, |v| v.name.as_str(), "name")?;
    Ok(list
        .into_iter()
        .map(|v| VserverView::new(config, v, rt))
        .collect())
}

fn service_views<'a>(
    config: &'a Config,
    name: Option<&str>,
    rt: &dyn Runtime,
) -> Result<Vec<ServiceView<'a>>, crate::error::CliError> {
    let list = pick(own_services(config), name, |s| s.name.as_str(), "name")?;
    Ok(list
        .into_iter()
        .map(|s| ServiceView::new(config, s, rt))
        .collect())
}

fn group_views<'a>(
    config: &'a Config,
    name: Option<&str>,
    rt: &dyn Runtime,
) -> Result<Vec<GroupView<'a>>, crate::error::CliError> {
    let list = pick_groups(config, name)?;
    Ok(list
        .into_iter()
        .map(|g| GroupView::new(config, g, rt))
        .collect())
}

/// A JSON array of `f` over the views.
fn json_list<T>(items: &[T], f: impl Fn(&T) -> Value) -> String {
    Value::from(items.iter().map(f).collect::<Vec<_>>()).to_string()
}

/// Views as JSON, or as text written by `text` for each (with its position).
fn render<V>(
    views: &[V],
    json: bool,
    to_json: fn(&V) -> Value,
    mut text: impl FnMut(usize, &V, &mut String),
) -> String {
    if json {
        return json_list(views, to_json);
    }
    let mut out = String::new();
    for (i, v) in views.iter().enumerate() {
        text(i, v, &mut out);
    }
    out
}

/// `(n)` before each object of a list (`show lb vserver` without a name).
fn number(i: usize, name: Option<&str>, out: &mut String) {
    if name.is_none() {
        out.push_str(&format!("{})", i + 1));
    }
}

/// `show <object> [name] [-format json]`.
pub fn show(
    config: &Config,
    object: Object,
    name: Option<&str>,
    json: bool,
    rt: &dyn Runtime,
) -> Output {
    Ok(match object {
        Object::LbVserver => {
            let views = vserver_views(config, name, rt)?;
            render(&views, json, json::vserver, |i, v, out| {
                number(i, name, out);
                text::show_vserver(v, out);
            })
        }
        Object::Service => {
            let views = service_views(config, name, rt)?;
            render(&views, json, json::service, |i, s, out| match name {
                Some(_) => text::show_service(s, out),
                None => text::service_line(i, s, out),
            })
        }
        Object::ServiceGroup => {
            let views = group_views(config, name, rt)?;
            render(&views, json, json::group, |i, g, out| {
                number(i, name, out);
                text::show_group(g, out);
            })
        }
        other => return objects::show(config, other, name, json, rt),
    })
}

/// `stat lb vserver|service|serviceGroup [name] [-format json]`.
pub fn stat(
    config: &Config,
    object: Object,
    name: Option<&str>,
    json: bool,
    rt: &dyn Runtime,
) -> Output {
    Ok(match object {
        Object::LbVserver => {
            let views = vserver_views(config, name, rt)?;
            let mut out = String::new();
            if name.is_none() && !json {
                text::stat_vservers_header(&mut out);
            }
            out.push_str(&render(
                &views,
                json,
                json::vserver,
                |_, v, out| match name {
                    Some(_) => text::stat_vserver(v, out),
                    None => text::stat_vserver_row(v, out),
                },
            ));
            let drops = rt.drops();
            if name.is_none() && !json && !drops.is_empty() {
                out.push_str("\nDropped frames\n");
                for (reason, n) in drops {
                    out.push_str(&format!("\t{reason:<28} {n}\n"));
                }
            }
            out
        }
        Object::ServiceGroup => {
            let views = group_views(config, name, rt)?;
            render(&views, json, json::group, |_, g, out| {
                text::stat_group(g, out)
            })
        }
        Object::Service => {
            let views = service_views(config, name, rt)?;
            render(&views, json, json::service, |_, s, out| {
                text::stat_service(s, out)
            })
        }
        Object::Ns => {
            let workers = rt.workers();
            if json {
                json::workers(&workers).to_string()
            } else {
                text::workers(&workers)
            }
        }
        _ => {
            return Err(
                crate::error::CliError::new(crate::error::ErrorKind::NotSupported)
                    .with_detail("No statistics for this object"),
            );
        }
    })
}
