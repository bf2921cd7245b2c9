//! What selection reads about services: configuration, health from the monitor core,
//! counters summed over all cores.

use crate::counters::Counters;
use crate::health::ServiceHealth;
use crate::lb::{Columns, ServiceId, ServiceView, Stat};

use super::columns::SelectionColumns;
use crate::tables::Tables;

pub(super) struct LiveView<'a> {
    pub tables: &'a Tables,
    pub health: &'a ServiceHealth,
    pub counters: &'a Counters,
    /// The worker's copy in columns; `None`: service by service only (what the copy itself is
    /// made from).
    pub columns: Option<&'a SelectionColumns>,
}

impl LiveView<'_> {
    /// Enabled, routable and UP: a candidate unless its `-maxClient` is reached.
    #[inline]
    pub(super) fn serves(&self, s: ServiceId) -> bool {
        self.tables
            .service(s)
            .is_some_and(|x| x.enabled && x.path.is_some())
            && self.health.is_up(s)
    }

    /// Has a `-maxClient` limit.
    #[inline]
    pub(super) fn capped(&self, s: ServiceId) -> bool {
        self.tables.service(s).is_some_and(|x| x.max_client != 0)
    }
}

impl ServiceView for LiveView<'_> {
    #[inline]
    fn is_candidate(&self, s: ServiceId) -> bool {
        self.serves(s)
            && self
                .tables
                .service(s)
                .is_some_and(|x| x.max_client == 0 || self.counters.active(s) < x.max_client)
    }
    #[inline]
    fn load_excluded(&self, s: ServiceId) -> bool {
        self.health.load_excluded(s)
    }
    #[inline]
    fn active(&self, s: ServiceId) -> u64 {
        self.counters.active(s)
    }
    #[inline]
    fn packets(&self, s: ServiceId) -> u64 {
        self.counters.window_packets(s)
    }
    #[inline]
    fn bytes(&self, s: ServiceId) -> u64 {
        self.counters.window_bytes(s)
    }
    #[inline]
    fn response_time(&self, s: ServiceId) -> Option<u64> {
        self.health.response_time(s)
    }
    #[inline]
    fn load(&self, s: ServiceId) -> Option<u64> {
        self.health.load(s)
    }
    #[inline]
    fn measured_response_time(&self, s: ServiceId) -> Option<u64> {
        self.counters.response_time_us(s)
    }
    #[inline]
    fn columns(&self, stat: Stat) -> Option<Columns<'_>> {
        self.columns?.get(stat)
    }
}
