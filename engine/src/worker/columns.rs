//! The worker's copy of what the least-X methods read, in dense columns (one [`Entry`] per
//! service and statistic), so a decision scans its members without a call, a branch or a
//! read of another core's counter lines per member.
//!
//! Freshness: other cores' counters and the monitors' samples are copied when a decision
//! needs them and the copy is older than `interval_ms` (1 ms, more for configurations whose
//! copy costs more); a new configuration generation or a change of a service's UP state or
//! load exclusion rebuilds the copy before the next decision. This worker's own flows count at
//! once ([`SelectionColumns::opened`], [`SelectionColumns::closed`]), so a burst of new
//! connections spreads as the method says. A service with `-maxClient` is left to the
//! service-by-service path, whose limit check needs the exact count: its entries carry no
//! sample, which hands the decision there.

use super::view::LiveView;
use crate::lb::{Columns, Entry, Sample, ServiceId, ServiceView, Stat};
use crate::tables::Tables;

const STATS: usize = 6;
/// The statistic of each column.
const STAT_AT: [Stat; STATS] = [
    Stat::Active,
    Stat::Packets,
    Stat::Bytes,
    Stat::ResponseTime,
    Stat::MeasuredResponseTime,
    Stat::Load,
];

fn index(stat: Stat) -> usize {
    match stat {
        Stat::Active => 0,
        Stat::Packets => 1,
        Stat::Bytes => 2,
        Stat::ResponseTime => 3,
        Stat::MeasuredResponseTime => 4,
        Stat::Load => 5,
    }
}

/// How long a copy serves: 1 ms, plus 1 ms per 2,048 counter lines it reads, so refreshing
/// a large configuration on many cores stays a small share of a worker's time.
fn interval_ms(services: usize, cores: usize) -> u64 {
    1 + (services.saturating_mul(cores) / 2_048) as u64
}

#[derive(Debug, Default)]
pub(super) struct SelectionColumns {
    columns: [Vec<Entry>; STATS],
    /// The statistics as sampled, beside the entries (which hold them weighed by the rule), so
    /// that a flow opened or closed here derives an entry again.
    samples: [Vec<u64>; STATS],
    /// The columns some vserver's method reads (the others are left empty).
    wanted: [bool; STATS],
    /// The health's change count the copy was made at; `None`: rebuild before use.
    health_changes: Option<u64>,
    /// When the copy is due again even without a health change (its counters age).
    due_ms: u64,
}

impl SelectionColumns {
    /// A new configuration generation: the columns its methods read, rebuilt before the
    /// next decision.
    pub(super) fn reset(&mut self, tables: &Tables) {
        self.wanted = [false; STATS];
        for v in &tables.vservers {
            if let Some(stat) = v.pool.method().least_stat() {
                self.wanted[index(stat)] = true;
            }
        }
        for k in 0..STATS {
            self.columns[k].clear();
            self.samples[k].clear();
            if self.wanted[k] {
                self.columns[k].resize(tables.services.len(), Entry::default());
                self.samples[k].resize(tables.services.len(), 0);
            }
        }
        self.health_changes = None;
    }

    /// Brings the columns up to date for a decision at `now_ms` from `rows`, the services
    /// read one by one (see the module's doc).
    #[inline]
    pub(super) fn refresh(&mut self, now_ms: u64, rows: &LiveView) {
        let changes = rows.health.state_changes();
        if now_ms < self.due_ms && self.health_changes == Some(changes) {
            return;
        }
        self.rebuild(now_ms, changes, rows);
    }

    /// [`SelectionColumns::refresh`] when the copy is due or stale.
    fn rebuild(&mut self, now_ms: u64, changes: u64, rows: &LiveView) {
        // With no column wanted there is nothing to copy, only the check to settle.
        let services = if self.wanted.contains(&true) {
            rows.tables.services.len()
        } else {
            0
        };
        for s in 0..services {
            let id = s as ServiceId;
            let active = rows.active(id);
            // A `-maxClient` service goes without a sample, which hands every decision it
            // could win to the exact path.
            let capped = rows.capped(id);
            for (k, &stat) in STAT_AT.iter().enumerate() {
                if !self.wanted[k] {
                    continue;
                }
                let (pickable, value) = match rows.sample(id, stat) {
                    _ if capped => (rows.serves(id), None),
                    Sample::Skip => (false, None),
                    Sample::Missing => (true, None),
                    Sample::Value(v) => (true, Some(v)),
                };
                if let (Some(e), Some(sample)) =
                    (self.columns[k].get_mut(s), self.samples[k].get_mut(s))
                {
                    *e = Entry::new(stat, pickable, value, active);
                    *sample = value.unwrap_or(0);
                }
            }
        }
        self.health_changes = Some(changes);
        self.due_ms = now_ms.saturating_add(interval_ms(services, rows.counters.cores()));
    }

    /// The columns of `stat`, when they are kept.
    #[inline]
    pub(super) fn get(&self, stat: Stat) -> Option<Columns<'_>> {
        let k = index(stat);
        (self.wanted[k] && self.health_changes.is_some()).then(|| Columns::new(&self.columns[k]))
    }

    /// This worker opened a flow to `service`.
    #[inline]
    pub(super) fn opened(&mut self, service: ServiceId) {
        self.adjust(service, |n| n.saturating_add(1));
    }

    /// A flow of this worker's to `service` stopped being an active transaction.
    #[inline]
    pub(super) fn closed(&mut self, service: ServiceId) {
        self.adjust(service, |n| n.saturating_sub(1));
    }

    #[inline]
    fn adjust(&mut self, service: ServiceId, by: impl Fn(u32) -> u32) {
        let s = service as usize;
        for (k, &stat) in STAT_AT.iter().enumerate() {
            let (Some(e), Some(sample)) = (self.columns[k].get_mut(s), self.samples[k].get_mut(s))
            else {
                continue;
            };
            let active = u64::from(by(e.active));
            if stat == Stat::Active {
                *sample = active;
            }
            *e = e.with_active(stat, *sample, active);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::counters::Counters;
    use crate::health::ServiceHealth;

    fn refresh(
        c: &mut SelectionColumns,
        now_ms: u64,
        tables: &Tables,
        health: &ServiceHealth,
        counters: &Counters,
    ) {
        let rows = LiveView {
            tables,
            health,
            counters,
            columns: None,
        };
        c.refresh(now_ms, &rows);
    }

    const CONFIG: &str = "add ns ip 198.18.0.2 255.255.255.0 -type SNIP
add service s1 198.18.0.11 TCP 80
add service s2 198.18.0.12 TCP 80 -maxClient 5
add service s3 198.18.0.13 TCP 80
add lb vserver web TCP 198.18.0.100 80 -lbMethod LEASTCONNECTION
bind lb vserver web s1
bind lb vserver web s2
bind lb vserver web s3
";

    fn setup() -> (
        Tables,
        ServiceHealth,
        Arc<Counters>,
        Vec<crate::counters::CoreWriter>,
    ) {
        setup_with(CONFIG)
    }

    fn setup_with(
        config: &str,
    ) -> (
        Tables,
        ServiceHealth,
        Arc<Counters>,
        Vec<crate::counters::CoreWriter>,
    ) {
        let tables = crate::tables::of_text(config);
        let services = tables.services.len();
        let (counters, writers) = Counters::new(2, services);
        (tables, ServiceHealth::new(services), counters, writers)
    }

    fn active_column(c: &SelectionColumns) -> Vec<(u64, u32)> {
        let columns = c.get(Stat::Active).expect("kept for LEASTCONNECTION");
        (0..3)
            .map(|s| {
                columns
                    .entry(s)
                    .map(|e| (e.value, e.flags))
                    .expect("three services")
            })
            .collect()
    }

    #[test]
    fn every_statistic_has_its_own_column() {
        for (k, &stat) in STAT_AT.iter().enumerate() {
            assert_eq!(index(stat), k);
        }
    }

    #[test]
    fn own_flows_count_at_once_and_other_cores_at_the_next_refresh() {
        let (tables, health, counters, writers) = setup();
        let mut c = SelectionColumns::default();
        c.reset(&tables);
        assert!(
            c.get(Stat::Active).is_none(),
            "nothing before the first refresh"
        );
        assert!(c.get(Stat::Packets).is_none(), "no method reads packets");
        refresh(&mut c, 10, &tables, &health, &counters);
        let both = Entry::PICKABLE | Entry::SAMPLED;
        // s2 has -maxClient: no sample, so its decisions take the exact path.
        assert_eq!(
            active_column(&c),
            [(0, both), (0, Entry::PICKABLE | Entry::UNRANKED), (0, both)]
        );
        c.opened(0);
        c.opened(0);
        c.closed(0);
        writers[1].flow_opened(2);
        assert_eq!(active_column(&c)[0].0, 1, "own flows at once");
        refresh(&mut c, 10, &tables, &health, &counters);
        assert_eq!(active_column(&c)[2].0, 0, "the copy is fresh within 1 ms");
        refresh(&mut c, 11, &tables, &health, &counters);
        assert_eq!(
            active_column(&c)[2].0,
            1,
            "another core's flow a millisecond later"
        );
    }

    #[test]
    fn an_lrtm_entry_weighs_the_response_time_with_the_flows_opened_here() {
        let config = CONFIG.replace("LEASTCONNECTION", "LRTM");
        let (tables, health, counters, _writers) = setup_with(&config);
        let mut c = SelectionColumns::default();
        c.reset(&tables);
        health.set_response_time(0, Some(700));
        refresh(&mut c, 10, &tables, &health, &counters);
        let value = |c: &SelectionColumns| {
            c.get(Stat::ResponseTime)
                .and_then(|x| x.entry(0))
                .map(|e| e.value)
        };
        assert_eq!(value(&c), Some(0), "no active transaction yet");
        c.opened(0);
        c.opened(0);
        assert_eq!(value(&c), Some(1_400));
        c.closed(0);
        assert_eq!(value(&c), Some(700));
    }

    #[test]
    fn a_service_going_down_leaves_the_columns_before_the_next_decision() {
        let (tables, health, counters, _writers) = setup();
        let mut c = SelectionColumns::default();
        c.reset(&tables);
        refresh(&mut c, 10, &tables, &health, &counters);
        health.set_up(2, false);
        refresh(&mut c, 10, &tables, &health, &counters);
        assert_eq!(active_column(&c)[2].1 & Entry::PICKABLE, 0);
    }
}
