//! Runs the monitor core (monitors crate) for the daemon: builds its probe targets from the
//! configuration and the tables' service ids, and follows configuration generations.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ctl::conf::{Config, MonitorSettings, MonitorType};
use ctl::value::Port;
use monitors::health::Timers;
use monitors::resolve::Lookup;
use monitors::{ChannelDevice, MonitorCore, ProbeKind, StatusCodes, Target};

use crate::clock::Clock;
use crate::control::Control;
use crate::tables::Tables;

/// A send/receive string as bytes, the operator's escapes (`\r\n`) applied.
fn escaped(text: &Option<ctl::value::Text>) -> Vec<u8> {
    text.as_ref()
        .map(|t| monitors::probe::unescape(&t.0))
        .unwrap_or_default()
}

/// A monitor's timing and counting settings, in the monitor core's terms (milliseconds).
fn timers(s: &MonitorSettings) -> Timers {
    Timers {
        interval: s.interval.millis(),
        resp_timeout: s.resp_timeout.millis(),
        down_time: s.down_time.millis(),
        retries: s.retries.get() as u32,
        failure_retries: s.failure_retries.get() as u32,
        success_retries: s.success_retries.get() as u32,
        reverse: s.reverse.is_yes(),
    }
}

/// The probe targets of a configuration: every PING, TCP, HTTP, TCP-ECV, HTTP-ECV, UDP-ECV, DNS, FTP, USER or LOAD monitor bound
/// (or defaulted) to a service the tables know.
pub fn targets(config: &Config, tables: &Tables) -> Vec<Target> {
    let mut out = Vec::new();
    for (id, rt) in tables.services.iter().enumerate() {
        let Some(rt) = rt else { continue };
        let Some(svc) = config.services.get(rt.name.as_str()) else {
            continue;
        };
        for (monitor, binding) in config.effective_monitors(svc) {
            let st = &monitor.settings;
            let kind = match monitor.monitor_type {
                MonitorType::Ping => ProbeKind::Ping,
                MonitorType::Tcp => ProbeKind::Tcp,
                MonitorType::Http => ProbeKind::Http {
                    request: st
                        .http_request
                        .as_ref()
                        .map_or_else(|| "HEAD /".to_owned(), |t| t.0.clone()),
                    codes: st
                        .resp_code
                        .as_ref()
                        .map_or_else(StatusCodes::default, |c| StatusCodes(c.0.clone())),
                    headers: escaped(&st.custom_headers),
                },
                MonitorType::TcpEcv | MonitorType::HttpEcv => ProbeKind::Ecv {
                    send: escaped(&st.send),
                    recv: escaped(&st.recv),
                    http: monitor.monitor_type == MonitorType::HttpEcv,
                    headers: escaped(&st.custom_headers),
                },
                MonitorType::Dns => ProbeKind::Dns {
                    name: st.query.as_ref().map(|t| t.0.clone()).unwrap_or_default(),
                    aaaa: st.query_type == ctl::conf::DnsQueryType::Aaaa,
                    expect: st
                        .ip_address
                        .as_ref()
                        .map(|l| l.0.clone())
                        .unwrap_or_default(),
                },
                MonitorType::Load => {
                    let Some(table) = st
                        .metric_table
                        .as_ref()
                        .and_then(|t| config.metric_tables.get(t.as_str()))
                    else {
                        continue;
                    };
                    let metrics = monitor
                        .metrics
                        .iter()
                        .filter_map(|m| {
                            let (_, oid) =
                                table.metrics.iter().find(|(name, _)| *name == m.metric)?;
                            Some((oid.0.clone(), m.threshold, m.weight))
                        })
                        .collect();
                    ProbeKind::Load {
                        v1: st.snmp_version == ctl::conf::SnmpVersion::V1,
                        community: st
                            .snmp_community
                            .as_ref()
                            .map_or_else(|| "public".to_owned(), |c| c.0.clone()),
                        metrics,
                        passive: binding.passive,
                    }
                }
                MonitorType::Ftp => ProbeKind::Ftp {
                    user: st
                        .user_name
                        .as_ref()
                        .map(|t| t.0.clone())
                        .unwrap_or_default(),
                    password: st
                        .password
                        .as_ref()
                        .map(|t| t.0.clone())
                        .unwrap_or_default(),
                },
                MonitorType::User => ProbeKind::User {
                    script: st
                        .script_name
                        .as_ref()
                        .map(|t| t.0.clone().into())
                        .unwrap_or_default(),
                    args: st
                        .script_args
                        .as_ref()
                        .map(|t| t.0.split_whitespace().map(str::to_owned).collect())
                        .unwrap_or_default(),
                },
                MonitorType::UdpEcv => ProbeKind::UdpEcv {
                    send: escaped(&st.send),
                    recv: escaped(&st.recv),
                },
            };
            let port = match (st.dest_port, svc.port) {
                (Some(p), _) => p.get() as u16,
                (None, _) if monitor.monitor_type == MonitorType::Load => 161,
                (None, Port::Number(p)) => p,
                (None, Port::Any) if kind == ProbeKind::Ping => 0,
                (None, Port::Any) => continue,
            };
            let addr = match st.dest_ip {
                Some(IpAddr::V4(a)) => a,
                Some(IpAddr::V6(_)) => continue,
                None => rt.addr,
            };
            out.push(Target {
                service: id as u32,
                service_name: rt.name.clone(),
                monitor: monitor.name.0.clone(),
                addr,
                port,
                kind,
                timers: timers(st),
                weight: binding.weight.get() as u32,
                enabled: binding.mon_state.is_enabled() && st.state.is_enabled(),
                lrtm: st.lrtm.is_enabled(),
                mon_threshold: svc.settings.mon_threshold.get() as u32,
                secure: st.secure.is_yes(),
            });
        }
    }
    out
}

/// The domain-based servers to keep resolved, and the enabled IPv4 name servers to ask.
pub fn lookups(config: &Config) -> (Vec<Lookup>, Vec<Ipv4Addr>) {
    let ttl_override_s = u32::try_from(config.lb_parameter.dbs_ttl.get()).unwrap_or(u32::MAX);
    let lookups = config
        .servers
        .values()
        .filter_map(|s| {
            Some(Lookup {
                server: s.name.0.clone(),
                domain: s.domain()?.0.clone(),
                retry_ms: s.settings.domain_resolve_retry.get() * 1000,
                ttl_override_s,
                requests: s.resolve_requests,
            })
        })
        .collect();
    let name_servers = config
        .name_servers
        .values()
        .filter(|n| n.settings.state.is_enabled())
        .filter_map(|n| match n.addr {
            IpAddr::V4(a) => Some(a),
            IpAddr::V6(_) => None,
        })
        .collect();
    (lookups, name_servers)
}

/// Gives the monitor core a configuration generation: probe targets and lookups.
fn follow(core: &mut MonitorCore, config: &Config, tables: &Tables, now: u64) {
    core.set_targets(targets(config, tables), now);
    let (lookups, name_servers) = lookups(config);
    core.set_lookups(lookups, name_servers, now);
}

fn snips(tables: &Tables) -> Vec<(Ipv4Addr, u8)> {
    tables
        .snips()
        .map(|s| (s.addr, s.mask.count_ones() as u8))
        .collect()
}

/// The monitor core's thread: probes, follows new generations, stops with the daemon.
pub fn spawn(
    control: Arc<Control>,
    device: ChannelDevice,
    mac: [u8; 6],
    cpu: usize,
    stop: Arc<AtomicBool>,
    clock: Clock,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("fulcrum-monitor".into())
        .spawn(move || {
            let _guard = crate::daemon::StopOnPanic::new(&stop, "the monitor core".into());
            if !core_affinity::set_for_current(core_affinity::CoreId { id: cpu }) {
                log::warn!(target: "monitor", "the monitor core could not be pinned to CPU {cpu}");
            }
            // The monitor core counts in microseconds (response times); timers in ms.
            let now = || clock.now_us();
            let mut tables = control.published.load_full();
            // The control plane refuses more SNIPs than the interface holds.
            let core = match MonitorCore::new(
                mac,
                &snips(&tables),
                device,
                Arc::clone(&control.health),
                crate::nat::MONITOR_PORTS,
                now(),
            ) {
                Ok(core) => core,
                Err(e) => {
                    log::error!(target: "monitor", "the monitor core cannot start: {e}");
                    stop.store(true, Ordering::Relaxed);
                    return;
                }
            };
            let mut core = core.with_resolutions(Arc::clone(&control.resolutions));
            follow(&mut core, &control.config(), &tables, now());
            control.monitor_follows(tables.generation);
            while !stop.load(Ordering::Relaxed) {
                let current = control.published.load_full();
                if !Arc::ptr_eq(&current, &tables) {
                    tables = current;
                    if let Err(e) = core.set_addresses(&snips(&tables)) {
                        log::warn!(target: "monitor", "the monitor core keeps its SNIPs: {e}");
                    }
                    follow(&mut core, &control.config(), &tables, now());
                    control.monitor_follows(tables.generation);
                }
                core.poll(now());
                // Wake for the next frame (a reply is timed on arrival), a running probe's
                // timers, or the next probe due (at most 50 ms: configuration changes).
                let pause = core.idle_for(now(), Duration::from_millis(50));
                core.wait(pause);
            }
        })
}
