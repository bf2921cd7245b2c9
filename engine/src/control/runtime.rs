//! The running engine as `show` and `stat` see it (ctl's [`Runtime`]): counters, health,
//! drains, rates, persistence sessions and drops, read for one query.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError};

use ctl::conf::{Config, LbMethod};
use ctl::render::{PersistentSession, Rates, Runtime, ServiceStats, VserverStats, WorkerRow};

use crate::drain::Drain;
use crate::lb::RoundRobinReason;
use crate::rates::Totals;
use crate::tables::Tables;

use super::{Control, service_key, vserver_key};

impl Control {
    /// Samples the counters for `stat`'s rates, once a second at most.
    pub fn sample_rates(&self) {
        let now = self.clock.now_ms();
        let mut book = self.rates.lock().unwrap_or_else(PoisonError::into_inner);
        if !book.due(now) {
            return;
        }
        let tables = self.published.load_full();
        let mut totals = HashMap::new();
        for (id, s) in tables.services.iter().enumerate() {
            if let Some(s) = s {
                let t = self.counters.totals(id as u32);
                totals.insert(service_key(&s.name), [t.hits, t.packets, t.bytes]);
            }
        }
        for v in &tables.vservers {
            let hits = self.counters.vserver_hits(v.id);
            totals.insert(vserver_key(&v.name), [hits, 0, 0]);
        }
        book.record(now, totals);
    }

    pub(super) fn rates_of(&self, key: &str, current: Totals) -> Rates {
        let book = self.rates.lock().unwrap_or_else(PoisonError::into_inner);
        let [hits, packets, bytes] = book.rates(key, current, self.clock.now_ms());
        Rates {
            hits,
            packets,
            bytes,
        }
    }
}

pub(super) struct LiveRuntime<'a> {
    pub control: &'a Control,
    /// The running configuration, borrowed from the locked state.
    pub config: &'a Config,
    pub drains: &'a HashMap<String, Drain>,
    pub tables: Arc<Tables>,
}

impl LiveRuntime<'_> {
    fn id(&self, name: &str) -> Option<u32> {
        self.tables
            .services
            .iter()
            .position(|s| s.as_ref().is_some_and(|s| s.name == name))
            .map(|i| i as u32)
    }
}

impl Runtime for LiveRuntime<'_> {
    fn workers(&self) -> Vec<WorkerRow> {
        // The data path's figures in the control plane's row (the data path names nothing
        // of ctl).
        self.control
            .drops
            .workers()
            .into_iter()
            .map(|w| WorkerRow {
                core: w.core,
                rx: w.rx,
                tx: w.tx,
                handoff_in: w.handoff_in,
                handoff_out: w.handoff_out,
                drops: w.drops,
                snat_skipped: w.snat_skipped,
                snat_time_wait: w.snat_time_wait,
                flows: w.flows,
                flow_capacity: w.flow_capacity,
                embryonic: w.embryonic,
                flows_given_way: w.flows_given_way,
                syn_cookies_sent: w.syn_cookies_sent,
                syn_cookies_valid: w.syn_cookies_valid,
                syn_cookies_failed: w.syn_cookies_failed,
            })
            .collect()
    }

    fn service(&self, name: &str) -> ServiceStats {
        let Some(id) = self.id(name) else {
            return ServiceStats::default();
        };
        let t = self.control.counters.totals(id);
        ServiceStats {
            up: self.control.health.is_up(id),
            hits: t.hits,
            active: t.active,
            packets: t.packets,
            bytes: t.bytes,
            window_packets: t.window_packets,
            window_bytes: t.window_bytes,
            response_time_us: self.control.health.response_time(id),
            measured_response_time_us: self.control.counters.response_time_us(id),
            load: self.control.health.load(id),
            going_out: self.drains.get(name).and_then(|d| {
                let going = d.going(self.control.now_ms(), t.active)?;
                Some(ctl::render::GoingOut {
                    graceful: going.graceful,
                    active: t.active,
                    remaining_s: going.remaining_s,
                })
            }),
            rates: self
                .control
                .rates_of(&service_key(name), [t.hits, t.packets, t.bytes]),
        }
    }

    fn vserver(&self, name: &str) -> VserverStats {
        let Some(index) = self.tables.vservers.iter().position(|v| v.name == name) else {
            return VserverStats::default();
        };
        let v = &self.tables.vservers[index];
        let members = v.pool.members();
        let missing = |f: &dyn Fn(u32) -> bool| {
            members
                .iter()
                .any(|m| self.control.health.is_up(m.service) && !f(m.service))
        };
        let method = self.config.vservers.get(name).map(|c| c.settings.lb_method);
        let reason = match method {
            Some(LbMethod::Lrtm)
                if missing(&|s| self.control.health.response_time(s).is_some()) =>
            {
                Some(RoundRobinReason::ResponseTimeMissing)
            }
            Some(LbMethod::LeastResponseTime)
                if missing(&|s| self.control.counters.response_time_us(s).is_some()) =>
            {
                Some(RoundRobinReason::ResponseTimeMissing)
            }
            Some(LbMethod::CustomLoad) if missing(&|s| self.control.health.load(s).is_some()) => {
                Some(RoundRobinReason::LoadMissing)
            }
            _ => None,
        };
        let hits = self.control.counters.vserver_hits(v.id);
        VserverStats {
            round_robin_reason: reason.map(|r| r.to_string()),
            hits,
            rates: self.control.rates_of(&vserver_key(name), [hits, 0, 0]),
            persistent_sessions: v
                .persist
                .as_ref()
                .map(|t| t.live(self.control.now_ms() / 1000) as u64),
            kept_out: crate::lb::spill::Vservers::is_out(&*self.tables, index),
            spilled_clients: v
                .fallback
                .so_persistence_s
                .and(v.fallback_state.as_ref())
                .map(|f| f.spilled.live(self.control.now_ms() / 1000) as u64),
        }
    }

    fn persistent_sessions(&self, vserver: &str) -> Vec<PersistentSession> {
        let Some(table) = self
            .tables
            .vservers
            .iter()
            .find(|v| v.name == vserver)
            .and_then(|v| v.persist.as_ref())
        else {
            return Vec::new();
        };
        let mut sessions: Vec<PersistentSession> = table
            .sessions(self.control.now_ms() / 1000)
            .into_iter()
            .map(|(client, service, remaining_s)| PersistentSession {
                client,
                service: self
                    .tables
                    .service(service)
                    .map_or_else(|| service.to_string(), |s| s.name.clone()),
                remaining_s,
            })
            .collect();
        sessions.sort_by_key(|s| s.client);
        sessions
    }

    fn events(&self) -> Vec<ctl::render::EventRow> {
        crate::logging::recent()
            .into_iter()
            .map(|e| ctl::render::EventRow {
                unix_s: e.unix_s,
                level: e.level.to_string(),
                target: e.target,
                message: e.message,
            })
            .collect()
    }

    fn drops(&self) -> Vec<(String, u64)> {
        let mut drops: Vec<(String, u64)> = self
            .control
            .drops
            .totals()
            .nonzero()
            .map(|(r, n)| (r.to_string(), n))
            .collect();
        let lost = self.control.health.frames_lost();
        if lost > 0 {
            drops.push(("monitor core ring full".to_owned(), lost));
        }
        drops
    }
}
