//! `/nitro/v1/stat/…`: the engine's counters under NITRO's names. As appliances write them,
//! 64-bit counters and gauges are strings and per-second rates numbers; the rates are the
//! ones `stat` prints (the same sampling).

use ctl::Config;
use ctl::render::Runtime;
use ctl::render::view::{GroupView, ServiceView, VserverView};
use serde_json::{Value, json};

use crate::read::{Object, port_json};

fn object(v: Value) -> Object {
    match v {
        Value::Object(m) => m,
        _ => Object::new(),
    }
}

/// NetScaler's state words in stat objects.
fn stat_state(state: &str) -> &'static str {
    match state {
        "UP" => "UP",
        "OUT OF SERVICE" => "OUT OF SERVICE",
        "GOING OUT OF SERVICE" => "GOING OUT OF SERVICE",
        _ => "DOWN",
    }
}

/// The object named, or every one when no name is given; `None` for a name that is not there.
fn one_or_all<'a, T: 'a>(
    name: Option<&str>,
    find: impl FnOnce(&str) -> Option<&'a T>,
    all: impl Iterator<Item = &'a T>,
) -> Option<Vec<&'a T>> {
    match name {
        Some(n) => Some(vec![find(n)?]),
        None => Some(all.collect()),
    }
}

pub fn lbvserver(config: &Config, rt: &dyn Runtime, name: Option<&str>) -> Option<Vec<Object>> {
    let pick = one_or_all(name, |n| config.vservers.get(n), config.vservers.values())?;
    Some(
        pick.into_iter()
            .map(|v| {
                let view = VserverView::new(config, v, rt);
                let (ip, port) = match v.vip {
                    Some((ip, port)) => (ip.to_string(), port_json(port)),
                    None => ("0.0.0.0".to_owned(), json!(0)),
                };
                let up = view.members.iter().filter(|(s, _)| s.is_up()).count();
                let total = view.members.len();
                let active = view.sum(|s| s.active);
                let packets = view.sum(|s| s.packets);
                let bytes = view.sum(|s| s.bytes);
                let rate_packets: u64 = view.members.iter().map(|(s, _)| s.stats.rates.packets).sum();
                let rate_bytes: u64 = view.members.iter().map(|(s, _)| s.stats.rates.bytes).sum();
                object(json!({
                    "name": v.name.as_str(),
                    "primaryipaddress": ip,
                    "primaryport": port,
                    "type": v.service_type.to_string(),
                    "state": stat_state(view.state),
                    "vslbhealth": (up * 100).checked_div(total).unwrap_or(0).to_string(),
                    "actsvcs": up.to_string(),
                    "inactsvcs": (total - up).to_string(),
                    "tothits": view.stats.hits.to_string(),
                    "hitsrate": view.stats.rates.hits,
                    "curclntconnections": active.to_string(),
                    "cursrvrconnections": active.to_string(),
                    "establishedconn": active.to_string(),
                    // The engine counts packets and bytes of both directions together.
                    "totalpktsrecvd": packets.to_string(),
                    "pktsrecvdrate": rate_packets,
                    "totalpktssent": packets.to_string(),
                    "pktssentrate": rate_packets,
                    "totalrequestbytes": bytes.to_string(),
                    "requestbytesrate": rate_bytes,
                    "totalresponsebytes": bytes.to_string(),
                    "responsebytesrate": rate_bytes,
                    "totalrequests": "0",
                    "requestsrate": 0,
                    "totalresponses": "0",
                    "responsesrate": 0,
                    "curpersistencesessions": view.stats.persistent_sessions.unwrap_or(0).to_string(),
                    "totspillovers": "0",
                    "sortorder": "descending",
                }))
            })
            .collect(),
    )
}

fn service_object(view: &ServiceView<'_>) -> Object {
    let s = view.service;
    let st = &view.stats;
    // Mbit/s over the rate window, as NetScaler's `throughput`.
    let mbits = st.rates.bytes * 8 / 1_000_000;
    object(json!({
        "name": s.name.as_str(),
        "primaryipaddress": view.addr.map_or_else(String::new, |a| a.to_string()),
        "primaryport": port_json(s.port),
        "servicetype": s.service_type.to_string(),
        "state": stat_state(view.state),
        "throughput": mbits.to_string(),
        "throughputrate": mbits,
        // Fulcrum's own: the monitor's last response time, in microseconds (`avgsvrttfb`
        // is whole milliseconds).
        "monitorresponsetimeus": st.response_time_us.unwrap_or(0).to_string(),
        "avgsvrttfb": st.response_time_us.or(st.measured_response_time_us).map_or(0, |us| us / 1000).to_string(),
        "curclntconnections": st.active.to_string(),
        "cursrvrconnections": st.active.to_string(),
        "svrestablishedconn": st.active.to_string(),
        "vsvrservicehits": st.hits.to_string(),
        "vsvrservicehitsrate": st.rates.hits,
        "totalpktsrecvd": st.packets.to_string(),
        "totalrequestbytes": st.bytes.to_string(),
        "requestbytesrate": st.rates.bytes,
        "totalresponsebytes": st.bytes.to_string(),
        "responsebytesrate": st.rates.bytes,
        "totalrequests": "0",
        "requestsrate": 0,
        "totalresponses": "0",
        "responsesrate": 0,
        "curload": st.load.unwrap_or(0).to_string(),
        "activetransactions": st.active.to_string(),
        "maxclients": s.settings.max_client.get().to_string(),
        "surgecount": "0",
    }))
}

pub fn service(config: &Config, rt: &dyn Runtime, name: Option<&str>) -> Option<Vec<Object>> {
    // A group's members are `servicegroupmember`s, not services.
    let pick = one_or_all(
        name,
        |n| config.services.get(n).filter(|s| s.group.is_none()),
        config.services.values().filter(|s| s.group.is_none()),
    )?;
    Some(
        pick.into_iter()
            .map(|s| service_object(&ServiceView::new(config, s, rt)))
            .collect(),
    )
}

pub fn servicegroup(config: &Config, rt: &dyn Runtime, name: Option<&str>) -> Option<Vec<Object>> {
    let pick = one_or_all(
        name,
        |n| config.service_groups.get(n),
        config.service_groups.values(),
    )?;
    Some(
        pick.into_iter()
            .map(|g| {
                let view = GroupView::new(config, g, rt);
                object(json!({
                    "servicegroupname": g.name.as_str(),
                    "servicetype": g.service_type.to_string(),
                    "state": if view.any_up() { "UP" } else { "DOWN" },
                }))
            })
            .collect(),
    )
}

/// `stat servicegroupmember?args=servicegroupname:g,servername:s,port:p`.
pub fn servicegroupmember(
    config: &Config,
    rt: &dyn Runtime,
    group: &str,
    server: Option<&str>,
    port: Option<&str>,
) -> Option<Vec<Object>> {
    let g = config.service_groups.get(group)?;
    Some(
        config
            .group_members(g)
            .into_iter()
            .filter(|(m, _)| server.is_none_or(|s| m.server.as_str() == s))
            .filter(|(m, _)| port.is_none_or(|p| m.port.to_string() == p))
            .map(|(m, s)| {
                let mut o = service_object(&ServiceView::new(config, s, rt));
                o.insert("servicegroupname".into(), json!(g.name.as_str()));
                o.insert("servername".into(), json!(m.server.as_str()));
                o.remove("name");
                o
            })
            .collect(),
    )
}

/// `stat nsdropreason` (Fulcrum's own resource): frames the workers dropped, by reason, as
/// `stat ns` lists them; reasons that never happened are left out.
pub fn dropreasons(rt: &dyn Runtime) -> Vec<Object> {
    rt.drops()
        .into_iter()
        .map(|(reason, frames)| object(json!({"reason": reason, "frames": frames.to_string()})))
        .collect()
}

/// Frames dropped for these reasons (the engine's names, as `stat ns` prints them).
fn dropped(drops: &[(String, u64)], reasons: &[&str]) -> u64 {
    drops
        .iter()
        .filter(|(r, _)| reasons.contains(&r.as_str()))
        .map(|(_, n)| n)
        .sum()
}

fn is_tcp(t: ctl::conf::model::ServiceType) -> bool {
    t.transport() == ctl::conf::model::Transport::Tcp
}

/// `stat protocolip`, as far as the engine counts: frames in and out (every frame the
/// workers handled, IPv4 and ARP), and the IPv4 drops that have a NetScaler counter.
pub fn protocolip(rt: &dyn Runtime) -> Object {
    let workers = rt.workers();
    let drops = rt.drops();
    let n = |reasons: &[&str]| dropped(&drops, reasons).to_string();
    object(json!({
        "iptotrxpkts": workers.iter().map(|w| w.rx).sum::<u64>().to_string(),
        "iptottxpkts": workers.iter().map(|w| w.tx).sum::<u64>().to_string(),
        "iptotfragments": n(&["fragment"]),
        "iptotttlexpired": n(&["TTL expired"]),
        "iptottruncatedpackets": n(&["truncated"]),
        "iptotinvalidheadersz": n(&["malformed"]),
        "iptotunknownsvcs": n(&["no vserver"]),
        "iptotvipdown": n(&["no service UP", "vserver disabled"]),
        "iptotunknownprotos": n(&["unsupported protocol"]),
    }))
}

/// `stat protocoltcp`, as far as the engine counts: TCP flows now (clients and services
/// are the two sides of one flow), half-open ones, new ones, and the drops and SYN-cookie
/// failures NetScaler counts for TCP. `tcperrbadchecksum` counts UDP checksums too.
pub fn protocoltcp(config: &Config, rt: &dyn Runtime) -> Object {
    let workers = rt.workers();
    let drops = rt.drops();
    let active: u64 = config
        .services
        .values()
        .filter(|s| is_tcp(s.service_type))
        .map(|s| rt.service(s.name.as_str()).active)
        .sum();
    let active = active.to_string();
    let opened: u64 = config
        .vservers
        .values()
        .filter(|v| is_tcp(v.service_type))
        .map(|v| rt.vserver(v.name.as_str()).hits)
        .sum();
    object(json!({
        "tcpcurclientconn": active,
        "tcpcurclientconnestablished": active,
        "tcpcurserverconn": active,
        "tcpcurserverconnestablished": active,
        "tcpcurclientconnopening": workers.iter().map(|w| w.embryonic).sum::<u64>().to_string(),
        "tcptotclientconnopened": opened.to_string(),
        "tcptotserverconnopened": opened.to_string(),
        "tcperrbadchecksum": dropped(&drops, &["bad checksum"]).to_string(),
        "tcperrstraypkt": dropped(&drops, &["no flow"]).to_string(),
        "tcperrcookiepktsigreject": workers.iter().map(|w| w.syn_cookies_failed).sum::<u64>().to_string(),
    }))
}

/// The resources that are one object (`ns`, `protocolip`, `protocoltcp`), or `None`.
pub fn singleton(resource: &str, config: &Config, rt: &dyn Runtime) -> Option<Object> {
    match resource {
        "ns" => Some(ns(config, rt)),
        "protocolip" => Some(protocolip(rt)),
        "protocoltcp" => Some(protocoltcp(config, rt)),
        _ => None,
    }
}

/// `stat ns`: the system as a whole (a singleton: an object, as appliances send it).
pub fn ns(config: &Config, rt: &dyn Runtime) -> Object {
    let workers = rt.workers();
    let rx: u64 = workers.iter().map(|w| w.rx).sum();
    let tx: u64 = workers.iter().map(|w| w.tx).sum();
    let drops: u64 = workers.iter().map(|w| w.drops).sum();
    let active: u64 = config
        .services
        .values()
        .map(|s| rt.service(s.name.as_str()).active)
        .sum();
    object(json!({
        "numcpus": workers.len().to_string(),
        "totrxpkts": rx.to_string(),
        "tottxpkts": tx.to_string(),
        "totdroppkts": drops.to_string(),
        "tcpcurclientconn": active.to_string(),
        "tcpcurclientconnestablished": active.to_string(),
        "tcpcurserverconn": active.to_string(),
        "tcpcurserverconnestablished": active.to_string(),
        "flows": workers.iter().map(|w| w.flows).sum::<u64>().to_string(),
        "syncookiessent": workers.iter().map(|w| w.syn_cookies_sent).sum::<u64>().to_string(),
    }))
}
