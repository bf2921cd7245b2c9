//! The views in NetScaler's text layouts.

use crate::conf::model::*;
use crate::value::YesNo;

use super::WorkerRow;
use super::view::{GroupView, ServiceView, VserverView};

fn timeout(t: Option<Seconds>, default: u64) -> u64 {
    t.map_or(default, |t| t.get())
}

/// NetScaler's statistics table: a rate column (per second; `-` where a rate means nothing)
/// and a total column.
pub fn rate_table(rows: &[(&str, Option<u64>, u64)]) -> String {
    let mut out = format!("\t{:<32}{:>12}{:>20}\n", "", "Rate (/s)", "Total");
    for (label, rate, total) in rows {
        let rate = rate.map_or_else(|| "-".to_owned(), |r| r.to_string());
        out.push_str(&format!("\t{label:<32}{rate:>12}{total:>20}\n"));
    }
    out
}

fn response_time(us: Option<u64>, out: &mut String) {
    if let Some(rt) = us {
        out.push_str(&format!(
            "\t\tResponse Time: {:.1} millisec\n",
            rt as f64 / 1000.0
        ));
    }
}

pub fn show_vserver(view: &VserverView, out: &mut String) {
    let v = view.vserver;
    let (ip, port, state) = (&view.ip, &view.port, view.state);
    let active = view.members.iter().filter(|(s, _)| s.is_up()).count();
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
        view.members.len()
    ));
    out.push_str(&format!("\tConfigured Method: {}\n", v.settings.lb_method));
    if let Some(b) = &v.settings.backup_vserver {
        out.push_str(&format!("\tBackup: {b}\n"));
    }
    if view.stats.kept_out {
        out.push_str(&format!(
            "\tKept out after going DOWN (-disablePrimaryOnDown): enable lb vserver {} to restore\n",
            v.name
        ));
    }
    if let Some(n) = view.stats.spilled_clients {
        out.push_str(&format!("\tSpilled-over clients kept on the backup: {n}\n"));
    }
    if v.settings.so_method != SpilloverMethod::None {
        out.push_str(&format!(
            "\tSpillover: {} threshold {} backup action {}\n",
            v.settings.so_method,
            v.settings
                .so_threshold
                .map_or("-".into(), |t| t.get().to_string()),
            v.settings
                .so_backup_action
                .map_or("ACCEPT", |a| a.keyword())
        ));
    }
    super::stored_line(&v.settings, stored_only::VSERVER, out);
    if let Some(reason) = &view.stats.round_robin_reason {
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
    if !view.members.is_empty() {
        out.push('\n');
    }
    // A group's members are listed under the group's name, as NetScaler does.
    for (i, (s, weight)) in view.members.iter().enumerate() {
        out.push_str(&format!(
            "{}) {} ({}) - {} State: {}\tWeight: {}\n",
            i + 1,
            s.service.group.as_ref().unwrap_or(&s.service.name),
            s.endpoint.replace(':', ": "),
            s.service.service_type,
            s.state,
            weight
        ));
    }
}

/// One line of `show service` without a name.
pub fn service_line(i: usize, view: &ServiceView, out: &mut String) {
    let s = view.service;
    out.push_str(&format!(
        "{})\t{} ({}) - {}\tState: {}\n",
        i + 1,
        s.name,
        view.endpoint,
        s.service_type,
        view.state
    ));
}

pub fn show_service(view: &ServiceView, out: &mut String) {
    let s = view.service;
    let (clt, svr) = s.service_type.default_timeouts();
    out.push_str(&format!(
        "\t{} ({}) - {}\n",
        s.name, view.endpoint, s.service_type
    ));
    out.push_str(&format!("\tState: {}\n", view.long_state()));
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
    out.push_str(&format!(
        "\tUse Source IP: {}\tUse Proxy Port: {}\n",
        s.settings.usip.unwrap_or(YesNo::No),
        s.settings.use_proxy_port
    ));
    super::stored_line(&s.settings, stored_only::SERVICE, out);
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
    if let Some(rt) = view.stats.measured_response_time_us {
        out.push_str(&format!(
            "\tMeasured Response Time (data path): {:.1} millisec\n",
            rt as f64 / 1000.0
        ));
    }
    for (i, m) in view.monitors.iter().enumerate() {
        out.push_str(&format!("\n{})\tMonitor Name: {}\n", i + 1, m.name));
        out.push_str(&format!(
            "\t\tState: {}\tWeight: {}\tPassive: {}\n",
            m.state,
            m.weight,
            u8::from(m.passive)
        ));
        response_time(view.stats.response_time_us, out);
    }
}

/// `stat service <s>`: its counters.
pub fn stat_service(view: &ServiceView, out: &mut String) {
    let (s, st) = (view.service, &view.stats);
    out.push_str(&format!(
        "Service: {} ({}) - {}\tState: {}\n",
        s.name, view.endpoint, s.service_type, view.state
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

/// The header of `stat lb vserver` without a name.
pub fn stat_vservers_header(out: &mut String) {
    out.push_str("Virtual Server(s) Summary\n");
    out.push_str(&format!(
        "{:<20} {:>16} {:>6} {:>12} {:>10} {:>10} {:>10}\n",
        "", "vsvrIP", "port", "Protocol", "State", "Hits", "ActvTrans"
    ));
}

/// One row of `stat lb vserver` without a name.
pub fn stat_vserver_row(view: &VserverView, out: &mut String) {
    let v = view.vserver;
    out.push_str(&format!(
        "{:<20} {:>16} {:>6} {:>12} {:>10} {:>10} {:>10}\n",
        v.name.as_str(),
        view.ip,
        view.port,
        v.service_type.keyword(),
        view.state,
        view.stats.hits,
        view.sum(|s| s.active)
    ));
}

/// `stat lb vserver <v>`. Packets and bytes are its services' (a service shared with another
/// vserver counts in both); hits are its own.
pub fn stat_vserver(view: &VserverView, out: &mut String) {
    let v = view.vserver;
    out.push_str(&format!(
        "Virtual Server Summary\n\t{} ({}:{}) - {}\tState: {}\n",
        v.name, view.ip, view.port, v.service_type, view.state
    ));
    let vstats = &view.stats;
    let mut rows = vec![
        ("Vserver hits", Some(vstats.rates.hits), vstats.hits),
        (
            "Packets",
            Some(view.sum(|s| s.rates.packets)),
            view.sum(|s| s.packets),
        ),
        (
            "Bytes",
            Some(view.sum(|s| s.rates.bytes)),
            view.sum(|s| s.bytes),
        ),
        ("Active transactions", None, view.sum(|s| s.active)),
    ];
    if let Some(n) = vstats.persistent_sessions {
        rows.push(("Persistent sessions", None, n));
    }
    out.push_str(&rate_table(&rows));
    if let Some(reason) = &vstats.round_robin_reason {
        out.push_str(&format!(
            "\tCurrent Method: Round Robin, Reason: {reason}\n"
        ));
    }
}

/// `show serviceGroup <sg>`: the group's state and settings, then one block per member.
pub fn show_group(view: &GroupView, out: &mut String) {
    let g = view.group;
    out.push_str(&format!("\t{} - {}\n", g.name, g.service_type));
    out.push_str(&format!(
        "\tState: {}\tEffective State: {}\tMonitor Threshold : {}\n",
        g.settings.state,
        if view.any_up() { "UP" } else { "DOWN" },
        g.settings.mon_threshold.get()
    ));
    out.push_str(&format!(
        "\tMax Conn: {}\tMax Req: {}\n\tDown state flush: {}\n\tHealth monitoring: {}\n",
        g.settings.max_client.get(),
        g.settings.max_req.get(),
        g.settings.down_state_flush,
        g.settings.health_monitor
    ));
    super::stored_line(&g.settings, stored_only::SERVICE, out);
    for (i, (m, s)) in view.members.iter().enumerate() {
        out.push_str(&format!(
            "\n{})\t{}\tState: {}\tServer Name: {}\tServer ID: None\tWeight: {}\n",
            i + 1,
            s.endpoint,
            s.long_state(),
            m.server,
            m.weight.get()
        ));
        for monitor in &s.monitors {
            out.push_str(&format!(
                "\t\tMonitor Name: {}\tState: {}\tWeight: {}\n",
                monitor.name, monitor.state, monitor.weight
            ));
        }
        response_time(s.stats.response_time_us, out);
    }
}

/// `stat serviceGroup <sg>`: each member's counters.
pub fn stat_group(view: &GroupView, out: &mut String) {
    let g = view.group;
    out.push_str(&format!(
        "ServiceGroup: {} - {}\tState: {}\n",
        g.name, g.service_type, g.settings.state
    ));
    for (_, s) in &view.members {
        let st = &s.stats;
        out.push_str(&format!("  Member {}\tState: {}\n", s.endpoint, s.state));
        out.push_str(&rate_table(&[
            ("Hits", Some(st.rates.hits), st.hits),
            ("Packets", Some(st.rates.packets), st.packets),
            ("Bytes", Some(st.rates.bytes), st.bytes),
            ("Active transactions", None, st.active),
        ]));
    }
}

/// `stat ns`: one line per worker.
pub fn workers(rows: &[WorkerRow]) -> String {
    let mut out = format!(
        "Workers\n\t{:<8}{:>6}{:>16}{:>16}{:>14}{:>14}{:>12}\n",
        "worker", "core", "rx", "tx", "handoff in", "handoff out", "drops"
    );
    for (i, w) in rows.iter().enumerate() {
        out.push_str(&format!(
            "\t{i:<8}{:>6}{:>16}{:>16}{:>14}{:>14}{:>12}\n",
            w.core, w.rx, w.tx, w.handoff_in, w.handoff_out, w.drops
        ));
    }
    out.push_str(&format!(
        "Flow tables\n\t{:<8}{:>12}{:>12}{:>12}{:>12}\n",
        "worker", "flows", "capacity", "embryonic", "given way"
    ));
    for (i, w) in rows.iter().enumerate() {
        out.push_str(&format!(
            "\t{i:<8}{:>12}{:>12}{:>12}{:>12}\n",
            w.flows, w.flow_capacity, w.embryonic, w.flows_given_way
        ));
    }
    let cookies = rows.iter().fold([0; 3], |[s, v, f], w| {
        [
            s + w.syn_cookies_sent,
            v + w.syn_cookies_valid,
            f + w.syn_cookies_failed,
        ]
    });
    out.push_str(&format!(
        "SYN cookies: {} sent, {} valid, {} failed\n",
        cookies[0], cookies[1], cookies[2]
    ));
    let (skipped, reused) = rows.iter().fold((0, 0), |(s, r), w| {
        (s + w.snat_skipped, r + w.snat_time_wait)
    });
    out.push_str(&format!(
        "SNAT ports for SYNs without timestamps: {skipped} passed over (their service may hold the tuple in TIME_WAIT), {reused} reused although it may\n"
    ));
    out
}
