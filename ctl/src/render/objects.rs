//! `show` for the objects without runtime state: monitors, metric tables, IPs, servers,
//! routes, `lb parameter`, persistence sessions and the running configuration.

use serde_json::{Value, json};

use crate::conf::model::*;
use crate::conf::{Config, render as render_conf};
use crate::grammar::Object;
use crate::settings::Settings;
use crate::value::ArgValue;

use super::view::vip;
use super::{Output, PersistentSession, Runtime, no_such, pick};

pub fn show(
    config: &Config,
    object: Object,
    name: Option<&str>,
    json: bool,
    rt: &dyn Runtime,
) -> Output {
    let mut out = String::new();
    match object {
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
                super::stored_line(&ip.settings, stored_only::NS_IP, &mut out);
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
            if json {
                let v: Vec<Value> = list.iter().map(|s| server_json(config, s)).collect();
                return Ok(Value::from(v).to_string());
            }
            for (i, s) in list.iter().enumerate() {
                out.push_str(&format!(
                    "{})\t{} ({})\tState: {}\n",
                    i + 1,
                    s.name,
                    s.addr,
                    s.settings.state
                ));
                if s.domain().is_some() {
                    out.push_str(&format!("\t{}\n", resolution_line(config, s)));
                }
                super::stored_line(&s.settings, stored_only::SERVER, &mut out);
            }
        }
        Object::NsEvents => {
            let events = rt.events();
            if json {
                let v: Vec<Value> = events.iter().map(|e| json!({"time": e.unix_s, "level": e.level, "source": e.target, "text": e.message})).collect();
                return Ok(Value::from(v).to_string());
            }
            out.push_str(&format!(
                "{:>6}  {:<12} {:<6} {:<12} {}\n",
                "No.", "Time (UTC s)", "Level", "Source", "Text"
            ));
            for (i, e) in events.iter().enumerate() {
                out.push_str(&format!(
                    "{:>6}  {:<12} {:<6} {:<12} {}\n",
                    i + 1,
                    e.unix_s,
                    e.level,
                    e.target,
                    e.message.replace('\n', " ")
                ));
            }
        }
        Object::NsVersion => {
            if json {
                return Ok(json!([{"version": crate::VERSION, "product": "Fulcrum"}]).to_string());
            }
            out.push_str(&format!("\tFulcrum {}\n", crate::VERSION));
        }
        Object::SystemUser => {
            let users: Vec<&crate::conf::users::SystemUser> = match name {
                None => config.system_users.values().collect(),
                Some(n) => vec![
                    config
                        .system_users
                        .get(n)
                        .ok_or_else(|| no_such("userName", n))?,
                ],
            };
            if json {
                let v: Vec<Value> = users
                    .iter()
                    .map(|u| {
                        json!({
                            "username": u.name.as_str(),
                            "policies": u.policies.iter().map(|b| json!({"policyname": b.policy.keyword(), "priority": b.priority})).collect::<Vec<_>>(),
                            "timeout": u.settings.timeout.map(|t| t.get()),
                            "maxsession": u.settings.max_session.get(),
                            "checkable": u.password.checkable(),
                        })
                    })
                    .collect();
                return Ok(Value::from(v).to_string());
            }
            for (i, u) in users.iter().enumerate() {
                let policies: Vec<String> = u
                    .policies
                    .iter()
                    .map(|b| format!("{} ({})", b.policy, b.priority))
                    .collect();
                out.push_str(&format!(
                    "{})\tUser name: {}\n\tCommand policies: {}\n",
                    i + 1,
                    u.name,
                    if policies.is_empty() {
                        "none (the user cannot log in)".to_owned()
                    } else {
                        policies.join(", ")
                    }
                ));
                if !u.password.checkable() {
                    out.push_str(
                        "\tPassword: a NetScaler hash Fulcrum cannot check; set a new password\n",
                    );
                }
            }
        }
        Object::DnsNameServer => {
            if json {
                let v: Vec<Value> = config.name_servers.values().map(|n| json!({"ip": n.addr.to_string(), "state": n.settings.state.keyword(), "type": n.settings.transport.keyword()})).collect();
                return Ok(Value::from(v).to_string());
            }
            for (i, n) in config.name_servers.values().enumerate() {
                out.push_str(&format!(
                    "{})\t{}  -  State: {}\tProtocol: {}\n",
                    i + 1,
                    n.addr,
                    n.settings.state,
                    n.settings.transport
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
                super::stored_line(&r.settings, stored_only::ROUTE, &mut out);
            }
        }
        Object::LbParameter => {
            let p = &config.lb_parameter;
            out.push_str(&format!("\tStartup RR factor: {}\n\tConsolidated Least Conn: {}\n\tUse port for hash LB: {}\n", p.startup_rr_factor.get(), p.consolidated_lconn, p.use_port_for_hash_lb));
            out.push_str(&format!(
                "\tSessions threshold: {}\tDomain-based server TTL (dbsTtl): {} s\n",
                p.sessions_threshold.get(),
                p.dbs_ttl.get()
            ));
            super::stored_line(p, stored_only::LB_PARAMETER, &mut out);
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
        Object::NsConfig
        | Object::NsMode
        | Object::Ns
        | Object::LbVserver
        | Object::Service
        | Object::ServiceGroup => {}
    }
    Ok(out)
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
                | "deviation"
                | "devno"
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
    super::stored_line(&m.settings, stored_only::MONITOR, out);
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

/// What a domain-based server resolved to, or why it has no address.
fn resolution_line(config: &Config, s: &Server) -> String {
    let list = |r: &Resolution| {
        r.addrs
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    match config.resolution(s) {
        Some(r) if r.addrs.is_empty() => format!(
            "Not resolved: {}",
            r.error.as_deref().unwrap_or("no address in the answer")
        ),
        Some(r) => match &r.error {
            None => format!("Resolved: {} (TTL {} s)", list(r), r.ttl_s),
            Some(e) => format!("Resolved: {} (last query failed: {e})", list(r)),
        },
        None if config
            .name_servers
            .values()
            .all(|n| !n.settings.state.is_enabled()) =>
        {
            "Not resolved: no name server (add dns nameServer <IP>)".to_owned()
        }
        None => "Not resolved yet: waiting for the name server's answer".to_owned(),
    }
}

fn server_json(config: &Config, s: &Server) -> Value {
    let resolution = config.resolution(s);
    json!({
        "name": s.name.as_str(),
        "ipaddress": s.addr.ip().map(|a| a.to_string()),
        "domain": s.domain().map(|d| d.as_str()),
        "state": s.settings.state.keyword(),
        "resolved": resolution.map(|r| r.addrs.iter().map(ToString::to_string).collect::<Vec<_>>()),
        "ttl": resolution.map(|r| r.ttl_s),
        "resolution": s.domain().map(|_| resolution_line(config, s)),
    })
}
