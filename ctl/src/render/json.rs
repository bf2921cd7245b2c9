//! The views as JSON (`-format json`), NITRO's attribute names where they exist.

use serde_json::{Value, json};

use crate::value::Port;

use super::WorkerRow;
use super::view::{GroupView, ServiceView, VserverView};

fn port(p: Port) -> Value {
    match p {
        Port::Any => Value::from("*"),
        Port::Number(p) => Value::from(p),
    }
}

pub fn service(v: &ServiceView) -> Value {
    let (s, st) = (v.service, &v.stats);
    json!({
        "name": s.name.as_str(),
        "ipaddress": v.addr.map(|a| a.to_string()),
        "port": port(s.port),
        "servicetype": s.service_type.keyword(),
        "state": v.state,
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
        "measuredresponsetime_us": st.measured_response_time_us,
        "load": st.load,
    })
}

pub fn vserver(v: &VserverView) -> Value {
    let vs = v.vserver;
    json!({
        "name": vs.name.as_str(),
        "ipv46": v.ip,
        "port": v.port,
        "servicetype": vs.service_type.keyword(),
        "state": v.state,
        "lbmethod": vs.settings.lb_method.keyword(),
        "currentmethod_reason": v.stats.round_robin_reason,
        "services": vs.bindings.iter().map(|b| json!({"servicename": b.service.as_str(), "weight": b.settings.weight.get()})).collect::<Vec<_>>(),
        "hits": v.stats.hits,
        "hitsrate": v.stats.rates.hits,
        "persistentsessions": v.stats.persistent_sessions,
        "keptout": v.stats.kept_out,
        "spilledclients": v.stats.spilled_clients,
    })
}

pub fn group(v: &GroupView) -> Value {
    let g = v.group;
    let members: Vec<Value> = v
        .members
        .iter()
        .map(|(m, s)| {
            let st = &s.stats;
            json!({
                "servername": m.server.as_str(),
                "ip": s.addr.map(|a| a.to_string()),
                "port": port(s.service.port),
                "weight": m.weight.get(),
                "state": s.state,
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

/// `stat ns -format json`: `{"workers": [{"core", "rx", "tx", "handoff_in", "handoff_out",
/// "drops", "snat_skipped", "snat_time_wait", "flows", "flow_capacity", "embryonic",
/// "flows_given_way", "syn_cookies_sent", "syn_cookies_valid", "syn_cookies_failed"}]}`
/// (SPEC §8, the SNAT ports of SYNs without timestamps, the flow table, the SYN proxy).
pub fn workers(rows: &[WorkerRow]) -> Value {
    let workers: Vec<Value> = rows
        .iter()
        .map(|w| {
            json!({
                "core": w.core,
                "rx": w.rx,
                "tx": w.tx,
                "handoff_in": w.handoff_in,
                "handoff_out": w.handoff_out,
                "drops": w.drops,
                "snat_skipped": w.snat_skipped,
                "snat_time_wait": w.snat_time_wait,
                "flows": w.flows,
                "flow_capacity": w.flow_capacity,
                "embryonic": w.embryonic,
                "flows_given_way": w.flows_given_way,
                "syn_cookies_sent": w.syn_cookies_sent,
                "syn_cookies_valid": w.syn_cookies_valid,
                "syn_cookies_failed": w.syn_cookies_failed,
            })
        })
        .collect();
    json!({ "workers": workers })
}
