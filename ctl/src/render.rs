//! `show` and `stat` output in NetScaler's layouts (and the same data as JSON), rendered from
//! the configuration plus what the running engine reports ([`Runtime`]).

use serde_json::{Value, json};

use crate::conf::model::*;
use crate::conf::{Config, render as render_conf};
use crate::grammar::Object;
use crate::settings::Settings;
use crate::value::{ArgValue, Port};

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
    pub load: Option<u64>,
    /// Disabled with a delay or gracefully, and not out of service yet.
    pub going_out: Option<GoingOut>,
    /// Per second, over the last few seconds.
    pub rates: Rates,
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
}

/// The engine's live state, as `show`/`stat` read it.
pub trait Runtime {
    fn service(&self, name: &str) -> ServiceStats;
    fn vserver(&self, name: &str) -> VserverStats;
    /// Frames dropped, by reason, summed over the workers.
    fn drops(&self) -> Vec<(String, u64)>;
    /// A vserver's live persistence sessions.
    fn persistent_sessions(&self, _vserver: &str) -> Vec<PersistentSession> {
        Vec::new()
    }
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

fn endpoint(config: &Config, s: &Service) -> String {
    let ip = config
        .service_addr(s)
        .map_or_else(|| "?".into(), |a| a.to_string());
    format!("{ip}:{}", s.port)
}

fn service_state(config: &Config, s: &Service, rt: &dyn Runtime) -> &'static str {
    if !s.settings.state.is_enabled() {
        if rt.service(s.name.as_str()).going_out.is_some() {
            "GOING OUT OF SERVICE"
        } else {
            "OUT OF SERVICE"
        }
    } else if rt.service(s.name.as_str()).up
        || !s.settings.health_monitor.is_yes()
        || config.effective_monitors(s).is_empty()
    {
        "UP"
    } else {
        "DOWN"
    }
}

/// The services operators add themselves (not the members of service groups).
fn own_services(config: &Config) -> impl Iterator<Item = &Service> + Clone {
    config.services.values().filter(|s| s.group.is_none())
}

fn vserver_state(config: &Config, v: &Vserver, rt: &dyn Runtime) -> &'static str {
    if !v.settings.state.is_enabled() {
        return "OUT OF SERVICE";
    }
    let any_up = config
        .bound_services(v)
        .into_iter()
        .any(|(s, _)| service_state(config, s, rt) == "UP");
    if any_up { "UP" } else { "DOWN" }
}

fn vip(v: &Vserver) -> (String, String) {
    match v.vip {
        Some((ip, port)) => (ip.to_string(), port.to_string()),
        None => ("0.0.0.0".into(), "0".into()),
    }
}

fn timeout(t: Option<Seconds>, default: u64) -> u64 {
    t.map_or(default, |t| t.get())
}

fn show_vserver(config: &Config, v: &Vserver, rt: &dyn Runtime, out: &mut String) {
    let (ip, port) = vip(v);
    let state = vserver_state(config, v, rt);
    let bound = config.bound_services(v);
    let active = bound
        .iter()
        .filter(|(s, _)| service_state(config, s, rt) == "UP")
        .count();
    out.push_str(&format!(
        "\t{} ({ip}:{port}) - {}\tType: ADDRESS\n",
        v.name, v.service_type
    ));
    out.push_str(&format!("\tState: {state}\n\tEffective State: {state}\n"));
    out.push_str(&format!(
        "\tClient Idle Timeout: {} sec\n",
        timeout(v.settings.clt_timeout, v.service_type.default_timeouts().0)
    ));
    out.push_str(&format!(
        "\tDown state flush: {}\n",
        v.settings.down_state_flush
    ));
    out.push_str(&format!(
        "\tNo. of Bound Services :  {} (Total) \t {active} (Active)\n",
        bound.len()
    ));
    out.push_str(&format!("\tConfigured Method: {}\n", v.settings.lb_method));
    if let Some(reason) = rt.vserver(v.name.as_str()).round_robin_reason {
        out.push_str(&format!(
            "\tCurrent Method: Round Robin, Reason: {reason}\n"
        ));
    }
    out.push_str(&format!(
        "\tMode: IP\n\tPersistence: {}",
        v.settings.persistence_type
    ));
    if v.settings.persistence_type != Persistence::None {
        out.push_str(&format!(
            "\tPersistence Timeout: {} min",
            v.settings.timeout.get()
        ));
    }
    out.push('\n');
    if !bound.is_empty() {
        out.push('\n');
    }
    // A group's members are listed under the group's name, as NetScaler does.
    for (i, (s, weight)) in bound.iter().enumerate() {
        out.push_str(&format!(
            "{}) {} ({}) - {} State: {}\tWeight: {}\n",
            i + 1,
            s.group.as_ref().unwrap_or(&s.name),
            endpoint(config, s).replace(':', ": "),
            s.service_type,
            service_state(config, s, rt),
            weight
        ));
    }
}

fn show_service(config: &Config, s: &Service, rt: &dyn Runtime, out: &mut String) {
    let (clt, svr) = s.service_type.default_timeouts();
    out.push_str(&format!(
        "\t{} ({}) - {}\n",
        s.name,
        endpoint(config, s),
        s.service_type
    ));
    match rt.service(s.name.as_str()).going_out {
        Some(going) if !s.settings.state.is_enabled() => {
            out.push_str(&format!("\tState: GOING OUT OF SERVICE ({going})\n"));
        }
        _ => out.push_str(&format!("\tState: {}\n", service_state(config, s, rt))),
    }
    out.push_str(&format!("\tServer Name: {}\n", s.server));
    out.push_str(&format!(
        "\tServer ID : None \tMonitor Threshold : {}\n",
        s.settings.mon_threshold.get()
    ));
    out.push_str(&format!(
        "\tMax Conn: {}\tMax Req: {}\n",
        s.settings.max_client.get(),
        s.settings.max_req.get()
    ));
    out.push_str("\tUse Source IP: NO\n");
    out.push_str(&format!(
        "\tIdle timeout: Client: {} sec\tServer: {} sec\n",
        timeout(s.settings.clt_timeout, clt),
        timeout(s.settings.svr_timeout, svr)
    ));
    out.push_str(&format!(
        "\tDown state flush: {}\n",
        s.settings.down_state_flush
    ));
    out.push_str(&format!(
        "\tHealth monitoring: {}\n",
        s.settings.health_monitor
    ));
    let stats = rt.service(s.name.as_str());
    for (i, (m, b)) in config.effective_monitors(s).iter().enumerate() {
        out.push_str(&format!("\n{})\tMonitor Name: {}\n", i + 1, m.name));
        out.push_str(&format!(
            "\t\tState: {}\tWeight: {}\tPassive: {}\n",
            if b.mon_state.is_enabled() {
                if stats.up { "UP" } else { "DOWN" }
            } else {
                "DISABLED"
            },
            b.weight.get(),
            u8::from(b.passive)
        ));
        if let Some(rt) = stats.response_time_us {
            out.push_str(&format!(
                "\t\tResponse Time: {:.1} millisec\n",
                rt as f64 / 1000.0
            ));
        }
    }
}

fn show_monitor(m: &Monitor, out: &mut String) {
    let st = &m.settings;
    let t = |v: &dyn Fn(&mut String)| {
        let mut s = String::new();
        v(&mut s);
        s
    };
    out.push_str(&format!(
        "\tName.......: {}  Type......: {}  State....: {}\n",
        m.name, m.monitor_type, st.state
    ));
    out.push_str("Standard parameters:\n");
    out.push_str(&format!(
        "  Interval.........: {:>12}    Retries...........: {:>8}\n",
        t(&|s| st.interval.render(s)),
        st.retries.get()
    ));
    out.push_str(&format!(
        "  Response timeout.: {:>12}    Down time.........: {:>8}\n",
        t(&|s| st.resp_timeout.render(s)),
        t(&|s| st.down_time.render(s))
    ));
    out.push_str(&format!(
        "  Reverse..........: {:>12}    Secure............: {:>8}\n",
        st.reverse.keyword(),
        st.secure.keyword()
    ));
    out.push_str(&format!(
        "  LRTM.............: {:>12}    Success Retries...: {:>8}\n",
        st.lrtm.keyword(),
        st.success_retries.get()
    ));
    out.push_str(&format!(
        "  Failure Retries..: {:>12}\n",
        st.failure_retries.get()
    ));
    out.push_str(&format!(
        "  Destination IP...: {:>12}\n  Destination port.: {:>12}\n",
        st.dest_ip.map_or("Bound service".into(), |i| i.to_string()),
        st.dest_port
            .map_or("Bound service".into(), |p| p.get().to_string())
    ));
    let mut special = String::new();
    for key in m.settings.explicit() {
        let name = MonitorSettings::key_name(key);
        if matches!(
            name,
            "interval"
                | "resptimeout"
                | "retries"
                | "downTime"
                | "reverse"
                | "secure"
                | "LRTM"
                | "successRetries"
                | "failureRetries"
                | "destIP"
                | "destPort"
                | "state"
        ) {
            continue;
        }
        let mut line = String::new();
        render_one(&m.settings, key, &mut line);
        special.push_str(&format!("  {name}: {line}\n"));
    }
    for b in &m.metrics {
        special.push_str(&format!(
            "  Metric: {}  Threshold: {}  Weight: {}\n",
            b.metric, b.threshold, b.weight
        ));
    }
    if !special.is_empty() {
        out.push_str("Special parameters:\n");
        out.push_str(&special);
    }
}

/// The value of one monitor option as it would be typed.
fn render_one(settings: &MonitorSettings, key: MonitorKey, out: &mut String) {
    let mut line = String::new();
    settings.render_non_default(&mut line);
    let flag = format!(" -{} ", MonitorSettings::key_name(key));
    if let Some(start) = line.find(&flag) {
        let rest = &line[start + flag.len()..];
        let end = MonitorSettings::OPTIONS
            .iter()
            .filter_map(|o| rest.find(&format!(" -{} ", o.name)))
            .min()
            .unwrap_or(rest.len());
        out.push_str(rest[..end].trim());
    }
}

fn json_service(config: &Config, s: &Service, rt: &dyn Runtime) -> Value {
    let st = rt.service(s.name.as_str());
    json!({
        "name": s.name.as_str(),
        "ipaddress": config.service_addr(s).map(|a| a.to_string()),
        "port": match s.port { Port::Any => Value::from("*"), Port::Number(p) => Value::from(p) },
        "servicetype": s.service_type.keyword(),
        "state": service_state(config, s, rt),
        "hits": st.hits,
        "activetransactions": st.active,
        "packets": st.packets,
        "bytes": st.bytes,
        "packets14s": st.window_packets,
        "bytes14s": st.window_bytes,
        "hitsrate": st.rates.hits,
        "packetsrate": st.rates.packets,
        "bytesrate": st.rates.bytes,
        "responsetime_us": st.response_time_us,
        "load": st.load,
    })
}

fn json_vserver(config: &Config, v: &Vserver, rt: &dyn Runtime) -> Value {
    let (ip, port) = vip(v);
    json!({
        "name": v.name.as_str(),
        "ipv46": ip,
        "port": port,
        "servicetype": v.service_type.keyword(),
        "state": vserver_state(config, v, rt),
        "lbmethod": v.settings.lb_method.keyword(),
        "currentmethod_reason": rt.vserver(v.name.as_str()).round_robin_reason,
        "services": v.bindings.iter().map(|b| json!({"servicename": b.service.as_str(), "weight": b.settings.weight.get()})).collect::<Vec<_>>(),
        "hits": rt.vserver(v.name.as_str()).hits,
        "hitsrate": rt.vserver(v.name.as_str()).rates.hits,
        "persistentsessions": rt.vserver(v.name.as_str()).persistent_sessions,
    })
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

/// A JSON array of `f` over the items.
fn json_list<T>(items: &[&T], f: impl Fn(&T) -> Value) -> String {
    Value::from(items.iter().map(|x| f(x)).collect::<Vec<_>>()).to_string()
}

/// `show <object> [name] [-format json]`.
pub fn show(
    config: &Config,
    object: Object,
    name: Option<&str>,
    json: bool,
    rt: &dyn Runtime,
) -> Output {
    let mut out = String::new();
    match object {
        Object::LbVserver => {
            let list = pick(config.vservers.values(), name, |v| v.name.as_str(), "name")?;
            if json {
                return Ok(json_list(&list, |v| json_vserver(config, v, rt)));
            }
            for (i, v) in list.iter().enumerate() {
                if name.is_none() {
                    out.push_str(&format!("{})", i + 1));
                }
                show_vserver(config, v, rt, &mut out);
            }
        }
        Object::Service => {
            let list = pick(own_services(config), name, |s| s.name.as_str(), "name")?;
            if json {
                return Ok(json_list(&list, |s| json_service(config, s, rt)));
            }
            if name.is_some() {
                for s in &list {
                    show_service(config, s, rt, &mut out);
                }
            } else {
                for (i, s) in list.iter().enumerate() {
                    out.push_str(&format!(
                        "{})\t{} ({}) - {}\tState: {}\n",
                        i + 1,
                        s.name,
                        endpoint(config, s),
                        s.service_type,
                        service_state(config, s, rt)
                    ));
                }
            }
        }
        Object::ServiceGroup => {
            let list = pick_groups(config, name)?;
            if json {
                return Ok(json_list(&list, |g| json_group(config, g, rt)));
            }
            for (i, g) in list.iter().enumerate() {
                if name.is_none() {
                    out.push_str(&format!("{})", i + 1));
                }
                show_group(config, g, rt, &mut out);
            }
        }
        Object::LbMonitor => {
            let list = pick(
                config.monitors.values(),
                name,
                |m| m.name.as_str(),
                "monitorName",
            )?;
            if json {
                let v: Vec<Value> = list.iter().map(|m| json!({"monitorname": m.name.as_str(), "type": m.monitor_type.keyword(), "state": m.settings.state.keyword(), "lrtm": m.settings.lrtm.keyword(), "builtin": m.builtin})).collect();
                return Ok(Value::from(v).to_string());
            }
            for (i, m) in list.iter().enumerate() {
                out.push_str(&format!("{})", i + 1));
                show_monitor(m, &mut out);
            }
        }
        Object::LbMetricTable => {
            let list = pick(
                config.metric_tables.values(),
                name,
                |t| t.name.as_str(),
                "metricTable",
            )?;
            if json {
                let v: Vec<Value> = list.iter().map(|t| json!({"metrictable": t.name.as_str(), "metrics": t.metrics.iter().map(|(m, o)| json!({"metric": m.as_str(), "snmpoid": o.to_string()})).collect::<Vec<_>>()})).collect();
                return Ok(Value::from(v).to_string());
            }
            for (i, t) in list.iter().enumerate() {
                out.push_str(&format!("{})\tName: {}\n", i + 1, t.name));
                for (m, oid) in &t.metrics {
                    out.push_str(&format!(
                        "\t\tMetric: {m}\tSNMP OID: {oid}\tType: CONFIGURED\n"
                    ));
                }
            }
        }
        Object::NsIp => {
            if json {
                let v: Vec<Value> = config.ns_ips.values().map(|i| json!({"ipaddress": i.addr.to_string(), "netmask": i.netmask.addr().to_string(), "type": i.settings.kind.keyword()})).collect::<Vec<_>>();
                return Ok(Value::from(v).to_string());
            }
            out.push_str("\tIpaddress        Traffic Domain  Type             Mode     Arp      Icmp     Vserver  State\n");
            out.push_str("\t---------        --------------  ----             ----     ---      ----     -------  ------\n");
            let mut i = 0;
            for ip in config.ns_ips.values() {
                i += 1;
                out.push_str(&format!("{i})\t{:<16} 0               {:<16} Active   ENABLED  ENABLED  NA       ENABLED\n", ip.addr, ip.settings.kind.keyword()));
            }
            for v in config.vservers.values() {
                if let Some((addr, _)) = v.vip
                    && !config
                        .ns_ips
                        .keys()
                        .any(|k| std::net::IpAddr::V4(*k) == addr)
                {
                    i += 1;
                    out.push_str(&format!("{i})\t{addr:<16} 0               VIP              Active   ENABLED  ENABLED  ENABLED  ENABLED\n"));
                }
            }
        }
        Object::Server => {
            let list = pick(config.servers.values(), name, |s| s.name.as_str(), "name")?;
            for (i, s) in list.iter().enumerate() {
                out.push_str(&format!(
                    "{})\t{} ({})\tState: {}\n",
                    i + 1,
                    s.name,
                    s.addr,
                    s.settings.state
                ));
            }
        }
        Object::Route => {
            for (i, r) in config.routes.iter().enumerate() {
                out.push_str(&format!(
                    "{})\t{}\t{}\t{}\tSTATIC\n",
                    i + 1,
                    r.network,
                    r.netmask.addr(),
                    r.gateway
                ));
            }
        }
        Object::LbParameter => {
            let p = &config.lb_parameter;
            out.push_str(&format!("\tStartup RR factor: {}\n\tConsolidated Least Conn: {}\n\tUse port for hash LB: {}\n", p.startup_rr_factor.get(), p.consolidated_lconn, p.use_port_for_hash_lb));
        }
        Object::LbPersistentSessions => {
            let list = pick(
                config.vservers.values(),
                name,
                |v| v.name.as_str(),
                "vServer",
            )?;
            let rows: Vec<(&Vserver, PersistentSession)> = list
                .iter()
                .flat_map(|v| {
                    rt.persistent_sessions(v.name.as_str())
                        .into_iter()
                        .map(move |s| (*v, s))
                })
                .collect();
            if json {
                let v: Vec<Value> = rows.iter().map(|(v, s)| json!({"type": "SOURCEIP", "srcip": s.client.to_string(), "vservername": v.name.as_str(), "servicename": s.service, "timeout": s.remaining_s})).collect();
                return Ok(Value::from(v).to_string());
            }
            out.push_str(&format!(
                "{:<10} {:<16} {:<16} {:<6} {:<20} {:<24} {}\n",
                "TYPE", "SRC IP", "DST IP", "PORT", "VSERVER NAME", "SERVICE", "TIMEOUT"
            ));
            for (v, s) in rows {
                let (ip, port) = vip(v);
                out.push_str(&format!(
                    "{:<10} {:<16} {:<16} {:<6} {:<20} {:<24} {}\n",
                    "SOURCEIP",
                    s.client,
                    ip,
                    port,
                    v.name.as_str(),
                    s.service,
                    s.remaining_s
                ));
            }
        }
        Object::NsRunningConfig => {
            let text = render_conf(config, "running");
            out.push_str(
                &text
                    .lines()
                    .skip(2)
                    .map(|l| format!("{l}\n"))
                    .collect::<String>(),
            );
        }
        Object::NsConfig => {}
    }
    Ok(out)
}

/// `stat lb vserver [name]` and `stat service [name]`.
/// NetScaler's statistics table: a rate column (per second; `-` where a rate means nothing)
/// and a total column.
fn rate_table(rows: &[(&str, Option<u64>, u64)]) -> String {
    let mut out = format!("\t{:<32}{:>12}{:>20}\n", "", "Rate (/s)", "Total");
    for (label, rate, total) in rows {
        let rate = rate.map_or_else(|| "-".to_owned(), |r| r.to_string());
        out.push_str(&format!("\t{label:<32}{rate:>12}{total:>20}\n"));
    }
    out
}

pub fn stat(
    config: &Config,
    object: Object,
    name: Option<&str>,
    json: bool,
    rt: &dyn Runtime,
) -> Output {
    let mut out = String::new();
    match object {
        Object::LbVserver => {
            let list = pick(config.vservers.values(), name, |v| v.name.as_str(), "name")?;
            if json {
                return Ok(json_list(&list, |v| json_vserver(config, v, rt)));
            }
            if name.is_none() {
                out.push_str("Virtual Server(s) Summary\n");
                out.push_str(&format!(
                    "{:<20} {:>16} {:>6} {:>12} {:>10} {:>10} {:>10}\n",
                    "", "vsvrIP", "port", "Protocol", "State", "Hits", "ActvTrans"
                ));
            }
            for v in &list {
                let (ip, port) = vip(v);
                let stats: Vec<ServiceStats> = config
                    .bound_services(v)
                    .into_iter()
                    .map(|(s, _)| rt.service(s.name.as_str()))
                    .collect();
                let vstats = rt.vserver(v.name.as_str());
                let hits = vstats.hits;
                let active: u64 = stats.iter().map(|s| s.active).sum();
                if name.is_none() {
                    out.push_str(&format!(
                        "{:<20} {:>16} {:>6} {:>12} {:>10} {:>10} {:>10}\n",
                        v.name.as_str(),
                        ip,
                        port,
                        v.service_type.keyword(),
                        vserver_state(config, v, rt),
                        hits,
                        active
                    ));
                } else {
                    out.push_str(&format!(
                        "Virtual Server Summary\n\t{} ({ip}:{port}) - {}\tState: {}\n",
                        v.name,
                        v.service_type,
                        vserver_state(config, v, rt)
                    ));
                    let sum = |f: fn(&ServiceStats) -> u64| stats.iter().map(f).sum::<u64>();
                    // Packets and bytes are its services' (a service shared with another
                    // vserver counts in both).
                    let mut rows = vec![
                        ("Vserver hits", Some(vstats.rates.hits), hits),
                        (
                            "Packets",
                            Some(sum(|s| s.rates.packets)),
                            sum(|s| s.packets),
                        ),
                        ("Bytes", Some(sum(|s| s.rates.bytes)), sum(|s| s.bytes)),
                        ("Active transactions", None, active),
                    ];
                    if let Some(n) = vstats.persistent_sessions {
                        rows.push(("Persistent sessions", None, n));
                    }
                    out.push_str(&rate_table(&rows));
                    if let Some(reason) = vstats.round_robin_reason {
                        out.push_str(&format!(
                            "\tCurrent Method: Round Robin, Reason: {reason}\n"
                        ));
                    }
                }
            }
            let drops = rt.drops();
            if name.is_none() && !drops.is_empty() {
                out.push_str("\nDropped frames\n");
                for (reason, n) in drops {
                    out.push_str(&format!("\t{reason:<28} {n}\n"));
                }
            }
        }
        Object::ServiceGroup => {
            let list = pick_groups(config, name)?;
            if json {
                return Ok(json_list(&list, |g| json_group(config, g, rt)));
            }
            for g in &list {
                stat_group(config, g, rt, &mut out);
            }
        }
        Object::Service => {
            let list = pick(own_services(config), name, |s| s.name.as_str(), "name")?;
            if json {
                return Ok(json_list(&list, |s| json_service(config, s, rt)));
            }
            for s in &list {
                let st = rt.service(s.name.as_str());
                out.push_str(&format!(
                    "Service: {} ({}) - {}\tState: {}\n",
                    s.name,
                    endpoint(config, s),
                    s.service_type,
                    service_state(config, s, rt)
                ));
                out.push_str(&rate_table(&[
                    ("Hits", Some(st.rates.hits), st.hits),
                    ("Packets", Some(st.rates.packets), st.packets),
                    ("Bytes", Some(st.rates.bytes), st.bytes),
                    ("Active transactions", None, st.active),
                    ("Packets (last 14 s)", None, st.window_packets),
                    ("Bytes (last 14 s)", None, st.window_bytes),
                ]));
                let rows: [(&str, String); 2] = [
                    (
                        "Response time (ms)",
                        st.response_time_us
                            .map_or("-".into(), |r| format!("{:.3}", r as f64 / 1000.0)),
                    ),
                    ("Load", st.load.map_or("-".into(), |l| l.to_string())),
                ];
                // Values without a rate, in the table's columns.
                for (label, value) in rows {
                    out.push_str(&format!("\t{label:<32}{:>12}{value:>20}\n", "-"));
                }
            }
        }
        _ => {
            return Err(
                crate::error::CliError::new(crate::error::ErrorKind::NotSupported)
                    .with_detail("No statistics for this object"),
            );
        }
    }
    Ok(out)
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

/// `show serviceGroup <sg>`: the group's state and settings, then one block per member.
fn show_group(config: &Config, g: &ServiceGroup, rt: &dyn Runtime, out: &mut String) {
    let members = config.group_members(g);
    let any_up = members
        .iter()
        .any(|(_, s)| service_state(config, s, rt) == "UP");
    out.push_str(&format!("\t{} - {}\n", g.name, g.service_type));
    out.push_str(&format!(
        "\tState: {}\tEffective State: {}\tMonitor Threshold : {}\n",
        g.settings.state,
        if any_up { "UP" } else { "DOWN" },
        g.settings.mon_threshold.get()
    ));
    out.push_str(&format!(
        "\tMax Conn: {}\tMax Req: {}\n\tDown state flush: {}\n\tHealth monitoring: {}\n",
        g.settings.max_client.get(),
        g.settings.max_req.get(),
        g.settings.down_state_flush,
        g.settings.health_monitor
    ));
    for (i, (m, s)) in members.iter().enumerate() {
        let stats = rt.service(s.name.as_str());
        let state = match stats.going_out {
            Some(going) if !s.settings.state.is_enabled() => {
                format!("GOING OUT OF SERVICE ({going})")
            }
            _ => service_state(config, s, rt).to_owned(),
        };
        out.push_str(&format!(
            "\n{})\t{}\tState: {state}\tServer Name: {}\tServer ID: None\tWeight: {}\n",
            i + 1,
            endpoint(config, s),
            m.server,
            m.weight.get()
        ));
        for (monitor, b) in config.effective_monitors(s) {
            out.push_str(&format!(
                "\t\tMonitor Name: {}\tState: {}\tWeight: {}\n",
                monitor.name,
                if !b.mon_state.is_enabled() {
                    "DISABLED"
                } else if stats.up {
                    "UP"
                } else {
                    "DOWN"
                },
                b.weight.get()
            ));
        }
        if let Some(rt) = stats.response_time_us {
            out.push_str(&format!(
                "\t\tResponse Time: {:.1} millisec\n",
                rt as f64 / 1000.0
            ));
        }
    }
}

/// `stat serviceGroup <sg>`: each member's counters.
fn stat_group(config: &Config, g: &ServiceGroup, rt: &dyn Runtime, out: &mut String) {
    out.push_str(&format!(
        "ServiceGroup: {} - {}\tState: {}\n",
        g.name, g.service_type, g.settings.state
    ));
    for (_, s) in config.group_members(g) {
        let st = rt.service(s.name.as_str());
        out.push_str(&format!(
            "  Member {}\tState: {}\n",
            endpoint(config, s),
            service_state(config, s, rt)
        ));
        out.push_str(&rate_table(&[
            ("Hits", Some(st.rates.hits), st.hits),
            ("Packets", Some(st.rates.packets), st.packets),
            ("Bytes", Some(st.rates.bytes), st.bytes),
            ("Active transactions", None, st.active),
        ]));
    }
}

fn json_group(config: &Config, g: &ServiceGroup, rt: &dyn Runtime) -> Value {
    let members: Vec<Value> = config
        .group_members(g)
        .into_iter()
        .map(|(m, s)| {
            let st = rt.service(s.name.as_str());
            json!({
                "servername": m.server.as_str(),
                "ip": config.service_addr(s).map(|a| a.to_string()),
                "port": match s.port { Port::Any => Value::from("*"), Port::Number(p) => Value::from(p) },
                "weight": m.weight.get(),
                "state": service_state(config, s, rt),
                "hits": st.hits,
                "activetransactions": st.active,
                "packets": st.packets,
                "bytes": st.bytes,
                "responsetime_us": st.response_time_us,
            })
        })
        .collect();
    json!({
        "servicegroupname": g.name.as_str(),
        "servicetype": g.service_type.keyword(),
        "state": g.settings.state.keyword(),
        "members": members,
        "monitors": g.monitors.iter().map(|b| b.monitor.as_str()).collect::<Vec<_>>(),
    })
}
