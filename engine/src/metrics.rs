//! `fulcrumd --metrics ADDR:PORT`: the counters in OpenMetrics text for Prometheus — services
//! (with their state as a label), vservers, drops by reason, monitor response times.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::control::Control;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServiceLabels {
    service: String,
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VserverLabels {
    vserver: String,
    method: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WorkerLabels {
    worker: String,
    core: String,
    kind: String,
}

/// The current counters as OpenMetrics text.
pub fn render(control: &Control) -> String {
    let config = control.config();
    let tables = control.published.load_full();
    let mut registry = Registry::with_prefix("fulcrum");
    let hits = Family::<ServiceLabels, Counter>::default();
    let packets = Family::<ServiceLabels, Counter>::default();
    let bytes = Family::<ServiceLabels, Counter>::default();
    let active = Family::<ServiceLabels, Gauge>::default();
    let up = Family::<ServiceLabels, Gauge>::default();
    let response = Family::<ServiceLabels, Gauge<f64, AtomicU64>>::default();
    let vs_hits = Family::<VserverLabels, Counter>::default();
    let drops = Family::<ReasonLabels, Counter>::default();
    for (id, svc) in tables.services.iter().enumerate() {
        let Some(svc) = svc else { continue };
        let id = id as u32;
        let t = control.counters.totals(id);
        let is_up = control.health.is_up(id) && svc.enabled;
        let labels = ServiceLabels {
            service: svc.name.clone(),
            state: if is_up { "UP" } else { "DOWN" }.into(),
        };
        hits.get_or_create(&labels).inc_by(t.hits);
        packets.get_or_create(&labels).inc_by(t.packets);
        bytes.get_or_create(&labels).inc_by(t.bytes);
        active.get_or_create(&labels).set(t.active as i64);
        up.get_or_create(&labels).set(i64::from(is_up));
        if let Some(us) = control.health.response_time(id) {
            response.get_or_create(&labels).set(us as f64 / 1e6);
        }
    }
    for v in &tables.vservers {
        let Some(conf) = config.vservers.get(v.name.as_str()) else {
            continue;
        };
        vs_hits
            .get_or_create(&VserverLabels {
                vserver: v.name.clone(),
                method: conf.settings.lb_method.keyword().into(),
            })
            .inc_by(control.counters.vserver_hits(v.id));
    }
    for (reason, n) in control.drops.totals().nonzero() {
        drops
            .get_or_create(&ReasonLabels {
                reason: reason.to_string(),
            })
            .inc_by(n);
    }
    let lost = control.health.frames_lost();
    if lost > 0 {
        drops
            .get_or_create(&ReasonLabels {
                reason: "monitor core ring full".to_owned(),
            })
            .inc_by(lost);
    }
    registry.register("service_hits", "New connections sent to the service", hits);
    registry.register(
        "service_packets",
        "Frames forwarded for the service, both directions",
        packets,
    );
    registry.register(
        "service_bytes",
        "Bytes forwarded for the service, both directions",
        bytes,
    );
    registry.register(
        "service_active_transactions",
        "Open connections of the service",
        active,
    );
    registry.register("service_up", "1 when the service is UP and enabled", up);
    registry.register(
        "service_response_time_seconds",
        "Mean response time of the LRTM monitors",
        response,
    );
    registry.register(
        "vserver_hits",
        "New connections of the vserver's services",
        vs_hits,
    );
    registry.register(
        "drops",
        "Frames dropped by the data plane, by reason",
        drops,
    );
    let frames = Family::<WorkerLabels, Counter>::default();
    for (w, f) in control.drops.workers().iter().enumerate() {
        for (kind, n) in [
            ("rx", f.rx),
            ("tx", f.tx),
            ("handoff_in", f.handoff_in),
            ("handoff_out", f.handoff_out),
            ("drops", f.drops),
        ] {
            frames
                .get_or_create(&WorkerLabels {
                    worker: w.to_string(),
                    core: f.core.to_string(),
                    kind: kind.into(),
                })
                .inc_by(n);
        }
    }
    registry.register(
        "worker_frames",
        "Frames per worker: received, sent, handed to and from other workers, dropped",
        frames,
    );
    let snat = Family::<WorkerLabels, Counter>::default();
    for (w, f) in control.drops.workers().iter().enumerate() {
        for (kind, n) in [
            ("skipped", f.snat_skipped),
            ("time_wait_reused", f.snat_time_wait),
        ] {
            snat.get_or_create(&WorkerLabels {
                worker: w.to_string(),
                core: f.core.to_string(),
                kind: kind.into(),
            })
            .inc_by(n);
        }
    }
    registry.register(
        "worker_snat_ports",
        "SNAT ports for SYNs without timestamps: passed over (the service may hold the tuple in TIME_WAIT), reused although it may",
        snat,
    );
    let (table, given_way, cookies) = (
        Family::<WorkerLabels, Gauge>::default(),
        Family::<WorkerLabels, Counter>::default(),
        Family::<WorkerLabels, Counter>::default(),
    );
    for (w, f) in control.drops.workers().iter().enumerate() {
        let labels = |kind: &str| WorkerLabels {
            worker: w.to_string(),
            core: f.core.to_string(),
            kind: kind.into(),
        };
        for (kind, n) in [
            ("flows", f.flows),
            ("capacity", f.flow_capacity),
            ("embryonic", f.embryonic),
        ] {
            table.get_or_create(&labels(kind)).set(n as i64);
        }
        given_way
            .get_or_create(&labels("given_way"))
            .inc_by(f.flows_given_way);
        for (kind, n) in [
            ("sent", f.syn_cookies_sent),
            ("valid", f.syn_cookies_valid),
            ("failed", f.syn_cookies_failed),
        ] {
            cookies.get_or_create(&labels(kind)).inc_by(n);
        }
    }
    registry.register(
        "worker_flow_table",
        "Flow table per worker: flows held, capacity, TCP flows not answered yet",
        table,
    );
    registry.register(
        "worker_flows_evicted",
        "Half-open or closed flows that gave way to new ones (embryonic budget spent or table full)",
        given_way,
    );
    registry.register(
        "worker_syn_cookies",
        "SYN cookies: SYNs answered with one, ACKs that proved one, ACKs that did not",
        cookies,
    );
    let probes = Family::<ResultLabels, Counter>::default();
    let (passed, failed) = control.health.probes();
    for (result, n) in [("passed", passed), ("failed", failed)] {
        probes
            .get_or_create(&ResultLabels {
                result: result.into(),
            })
            .inc_by(n);
    }
    registry.register(
        "monitor_probes",
        "Probes the monitor core completed, by result",
        probes,
    );
    let mut out = String::new();
    if encode(&mut out, &registry).is_err() {
        out.clear();
    }
    out
}

/// Serves `GET /metrics` (any path) on `addr` until `stop`; returns the bound address.
pub fn serve(
    control: Arc<Control>,
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
) -> Result<SocketAddr, String> {
    let listener = TcpListener::bind(addr).map_err(|e| format!("metrics {addr}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    std::thread::Builder::new()
        .name("fulcrum-metrics".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let Ok((mut stream, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                };
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                let mut request = [0u8; 1024];
                let _ = stream.read(&mut request);
                let body = render(&control);
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body.as_bytes()));
            }
        })
        .map_err(|e| e.to_string())?;
    Ok(bound)
}
