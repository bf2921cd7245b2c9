//! GET of the configuration resources: each object as NITRO writes it, from the running
//! configuration and the engine's live state. Attribute names are the command language's
//! option names in lower case (NITRO's own spelling); every option is listed with its value,
//! default or not.

use ctl::Config;
use ctl::conf::model::{Monitor, Vserver};
use ctl::render::Runtime;
use ctl::render::view::{ServiceView, VserverView};
use ctl::settings::Settings;
use ctl::value::{Name, Port};
use serde_json::{Map, Value, json};

pub type Object = Map<String, Value>;

pub fn port_json(p: Port) -> Value {
    match p {
        Port::Any => json!(65535),
        Port::Number(n) => json!(n),
    }
}

fn object(pairs: Value) -> Object {
    match pairs {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn with_settings(mut o: Object, settings: &impl Settings) -> Object {
    let mut s = Map::new();
    settings.to_nitro(&mut s);
    // The object's own attributes win over an option of the same name.
    for (k, v) in s {
        o.entry(k).or_insert(v);
    }
    o
}

pub fn lbvserver(config: &Config, v: &Vserver, rt: &dyn Runtime) -> Object {
    let view = VserverView::new(config, v, rt);
    let (ip, port) = match v.vip {
        Some((ip, port)) => (ip.to_string(), port_json(port)),
        None => ("0.0.0.0".to_owned(), json!(0)),
    };
    let total = view.members.len();
    let active = view.members.iter().filter(|(s, _)| s.is_up()).count();
    let up_weight: u64 = view
        .members
        .iter()
        .filter(|(s, _)| s.is_up())
        .map(|(_, w)| u64::from(*w))
        .sum();
    let all_weight: u64 = view
        .members
        .iter()
        .filter(|(s, _)| s.in_service)
        .map(|(_, w)| u64::from(*w))
        .sum();
    let health = (up_weight * 100).checked_div(all_weight).unwrap_or(0);
    let o = object(json!({
        "name": v.name.as_str(),
        "servicetype": v.service_type.to_string(),
        "ipv46": ip,
        "ip": ip,
        "port": port,
        "curstate": view.state,
        "effectivestate": view.state,
        "health": health.to_string(),
        "totalservices": total.to_string(),
        "activeservices": active.to_string(),
        "type": "ADDRESS",
        "range": "1",
    }));
    with_settings(o, &v.settings)
}

pub fn service(config: &Config, view: &ServiceView<'_>) -> Object {
    let s = view.service;
    let o = object(json!({
        "name": s.name.as_str(),
        "servername": s.server.as_str(),
        "ipaddress": view.addr.map_or_else(String::new, |a| a.to_string()),
        "servicetype": s.service_type.to_string(),
        "port": port_json(s.port),
        "svrstate": view.state,
        "numofconnections": view.stats.active,
        "monitor_state": if view.stats.up { "UP" } else { "DOWN" },
        "serviceconftype2": "Configured",
    }));
    let _ = config;
    with_settings(o, &s.settings)
}

pub fn services(config: &Config, rt: &dyn Runtime) -> Vec<Object> {
    config
        .services
        .values()
        .filter(|s| s.group.is_none())
        .map(|s| service(config, &ServiceView::new(config, s, rt)))
        .collect()
}

pub fn server(config: &Config, name: &str) -> Option<Object> {
    let s = config.servers.get(name)?;
    let mut o = object(json!({"name": s.name.as_str()}));
    match s.addr.ip() {
        Some(ip) => {
            o.insert("ipaddress".into(), json!(ip.to_string()));
        }
        None => {
            let mut d = String::new();
            ctl::value::ArgValue::render(&s.addr, &mut d);
            o.insert("domain".into(), json!(d));
        }
    }
    Some(with_settings(o, &s.settings))
}

pub fn servicegroup(config: &Config, name: &str, rt: &dyn Runtime) -> Option<Object> {
    let g = config.service_groups.get(name)?;
    let view = ctl::render::view::GroupView::new(config, g, rt);
    let up = view.members.iter().filter(|(_, s)| s.is_up()).count();
    let state = match (up, view.members.len()) {
        (_, 0) => "DOWN",
        (0, _) => "DOWN",
        (u, n) if u == n => "UP",
        _ => "PARTIAL-UP",
    };
    let o = object(json!({
        "servicegroupname": g.name.as_str(),
        "servicetype": g.service_type.to_string(),
        "servicegroupeffectivestate": state,
        "svrstate": if g.settings.state.is_enabled() { "ENABLED" } else { "DISABLED" },
    }));
    Some(with_settings(o, &g.settings))
}

/// `interval` as NITRO splits it: the number, and its unit in `units3`.
fn split_units(o: &mut Object) {
    for (attr, units) in [
        ("deviation", "units1"),
        ("downtime", "units2"),
        ("interval", "units3"),
        ("resptimeout", "units4"),
    ] {
        let Some(Value::String(text)) = o.get(attr).cloned() else {
            if o.contains_key(attr) {
                o.insert(units.into(), json!("SEC"));
            }
            continue;
        };
        let mut words = text.split_whitespace();
        let (n, unit) = (words.next().unwrap_or("0"), words.next().unwrap_or("SEC"));
        o.insert(attr.into(), n.parse::<u64>().map_or(json!(n), |v| json!(v)));
        o.insert(units.into(), json!(unit));
    }
}

pub fn lbmonitor(m: &Monitor) -> Object {
    let mut o = with_settings(
        object(json!({
            "monitorname": m.name.as_str(),
            "type": m.monitor_type.to_string(),
        })),
        &m.settings,
    );
    split_units(&mut o);
    o
}

pub fn nsips(config: &Config) -> Vec<Object> {
    config
        .ns_ips
        .values()
        .map(|ip| {
            with_settings(
                object(json!({
                    "ipaddress": ip.addr.to_string(),
                    "netmask": ctl::value::ArgValue::to_json(&ip.netmask),
                })),
                &ip.settings,
            )
        })
        .collect()
}

/// `systemuser`: the users and their options; the password never leaves the appliance.
pub fn systemusers(config: &Config) -> Vec<Object> {
    config
        .system_users
        .values()
        .map(|u| with_settings(object(json!({"username": named(&u.name)})), &u.settings))
        .collect()
}

pub fn routes(config: &Config) -> Vec<Object> {
    config
        .routes
        .iter()
        .map(|r| {
            with_settings(
                object(json!({
                    "network": r.network.to_string(),
                    "netmask": ctl::value::ArgValue::to_json(&r.netmask),
                    "gateway": r.gateway.to_string(),
                    "type": "STATIC",
                })),
                &r.settings,
            )
        })
        .collect()
}

pub fn lbparameter(config: &Config) -> Object {
    with_settings(Map::new(), &config.lb_parameter)
}

pub fn metrictables(config: &Config) -> Vec<Object> {
    config
        .metric_tables
        .values()
        .map(|t| object(json!({"metrictable": t.name.as_str(), "metrictype": "CONFIGURED"})))
        .collect()
}

fn named(name: &Name) -> &str {
    name.as_str()
}

/// A monitor bound to a service (`key` = `name`) or a group (`servicegroupname`).
fn monitor_binding(key: &str, owner: &Name, b: &ctl::conf::model::MonitorBinding) -> Object {
    let mut o = object(json!({
        "monitor_name": named(&b.monitor),
        "monstate": b.settings.mon_state.to_string(),
        "weight": b.settings.weight.get(),
        "passive": b.settings.passive,
    }));
    o.insert(key.to_owned(), json!(named(owner)));
    o
}

/// The bindings of one kind: `(primary name, binding)` pairs, every primary's.
pub fn bindings(config: &Config, kind: &str, rt: &dyn Runtime) -> Option<Vec<(String, Object)>> {
    let mut out = Vec::new();
    match kind {
        "lbvserver_service_binding" | "lbvserver_servicegroup_binding" => {
            let groups = kind == "lbvserver_servicegroup_binding";
            for v in config.vservers.values() {
                for b in &v.bindings {
                    let is_group = config.service_groups.contains_key(b.service.as_str());
                    if is_group != groups {
                        continue;
                    }
                    let mut o =
                        object(json!({"name": named(&v.name), "weight": b.settings.weight.get()}));
                    if groups {
                        o.insert("servicegroupname".into(), json!(named(&b.service)));
                    } else {
                        o.insert("servicename".into(), json!(named(&b.service)));
                        if let Some(s) = config.services.get(b.service.as_str()) {
                            let view = ServiceView::new(config, s, rt);
                            o.insert("curstate".into(), json!(view.state));
                            o.insert("servicetype".into(), json!(s.service_type.to_string()));
                            o.insert("port".into(), port_json(s.port));
                            o.insert(
                                "ipv46".into(),
                                json!(view.addr.map_or_else(String::new, |a| a.to_string())),
                            );
                        }
                    }
                    out.push((v.name.0.clone(), o));
                }
            }
        }
        "service_lbmonitor_binding" => {
            for s in config.services.values().filter(|s| s.group.is_none()) {
                for b in &s.monitors {
                    out.push((s.name.0.clone(), monitor_binding("name", &s.name, b)));
                }
            }
        }
        "lbmonitor_service_binding" => {
            for s in config.services.values().filter(|s| s.group.is_none()) {
                for b in &s.monitors {
                    let o = object(
                        json!({"monitorname": named(&b.monitor), "servicename": named(&s.name)}),
                    );
                    out.push((b.monitor.0.clone(), o));
                }
            }
        }
        "servicegroup_servicegroupmember_binding" => {
            for g in config.service_groups.values() {
                for (m, s) in config.group_members(g) {
                    let view = ServiceView::new(config, s, rt);
                    let o = object(json!({
                        "servicegroupname": named(&g.name),
                        "servername": named(&m.server),
                        "ip": view.addr.map_or_else(String::new, |a| a.to_string()),
                        "port": port_json(m.port),
                        "weight": m.weight.get(),
                        "state": m.state.to_string(),
                        "svrstate": view.state,
                    }));
                    out.push((g.name.0.clone(), o));
                }
            }
        }
        "servicegroup_lbmonitor_binding" => {
            for g in config.service_groups.values() {
                for b in &g.monitors {
                    out.push((
                        g.name.0.clone(),
                        monitor_binding("servicegroupname", &g.name, b),
                    ));
                }
            }
        }
        "lbmonitor_metric_binding" => {
            for m in config.monitors.values() {
                for b in &m.metrics {
                    let o = object(json!({
                        "monitorname": named(&m.name),
                        "metric": named(&b.metric),
                        "metricthreshold": b.threshold,
                        "metricweight": b.weight,
                    }));
                    out.push((m.name.0.clone(), o));
                }
            }
        }
        "lbmetrictable_metric_binding" => {
            for t in config.metric_tables.values() {
                for (metric, oid) in &t.metrics {
                    let o = object(json!({
                        "metrictable": named(&t.name),
                        "metric": named(metric),
                        "snmpoid": oid.to_string(),
                    }));
                    out.push((t.name.0.clone(), o));
                }
            }
        }
        "systemuser_systemcmdpolicy_binding" => {
            for u in config.system_users.values() {
                for b in &u.policies {
                    let o = object(json!({
                        "username": named(&u.name),
                        "policyname": b.policy.to_string(),
                        "priority": b.priority,
                    }));
                    out.push((u.name.0.clone(), o));
                }
            }
        }
        _ => return None,
    }
    Some(out)
}
