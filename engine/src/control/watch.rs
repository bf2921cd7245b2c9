//! What the daemon's loop looks at between commands: vservers that went DOWN
//! (`-disablePrimaryOnDown`) and the number of persistence sessions (`-sessionsThreshold`).

use std::sync::atomic::Ordering::Relaxed;

use super::Control;

/// How often the persistence sessions are counted (a count walks every table).
const SESSIONS_EVERY_MS: u64 = 1000;
/// How often the drops are summed up in the log (when there were any).
pub const DROPS_EVERY_MS: u64 = 60_000;

impl Control {
    /// A service its monitors hold UP and that is in service (enabled, its server too): what
    /// makes a vserver UP.
    fn serving(&self, tables: &crate::tables::Tables, id: u32) -> bool {
        self.health.is_up(id) && tables.service(id).is_some_and(|s| s.enabled)
    }

    /// `-disablePrimaryOnDown`: a vserver none of whose services is UP and in service is kept out (its
    /// backup takes its connections) until an operator enables it. Called every 50 ms.
    pub fn watch_primaries(&self) {
        let tables = self.published.load();
        for v in &tables.vservers {
            let Some(state) = v.fallback_state.as_ref() else {
                continue;
            };
            let members = v.pool.members();
            // DOWN: no service UP and in service (monitors DOWN, or disabled).
            let down = v.enabled
                && !members.is_empty()
                && !members.iter().any(|m| self.serving(&tables, m.service));
            if v.fallback.disable_primary_on_down && down && !state.is_out() {
                log::warn!(target: "vserver",
                    "vserver {} went DOWN: kept out until `enable lb vserver {}` (-disablePrimaryOnDown)",
                    v.name, v.name
                );
                state.set_out(true);
            }
        }
    }

    /// `set lb parameter -sessionsThreshold N`: once the live persistence sessions of all
    /// vservers reach N, no new session is made (clients without one are balanced by the
    /// method; those with one keep it). Counted once a second, so the count may pass N by
    /// what a second of new clients adds.
    pub fn watch_sessions(&self) {
        let now = self.now_ms();
        let last = self.sessions_counted_ms.load(Relaxed);
        if now < last + SESSIONS_EVERY_MS {
            return;
        }
        self.sessions_counted_ms.store(now, Relaxed);
        let threshold = self.lock().config.lb_parameter.sessions_threshold.get();
        let full = threshold > 0 && {
            let tables = self.published.load();
            let live: u64 = tables
                .vservers
                .iter()
                .filter_map(|v| v.persist.as_ref())
                .map(|t| t.live(now / 1000) as u64)
                .sum();
            live >= threshold
        };
        if self.sessions_full.swap(full, Relaxed) != full {
            log::warn!(target: "persistence",
                "persistence sessions {} -sessionsThreshold {threshold}",
                if full { "reached" } else { "back under" }
            );
        }
    }

    /// Once a minute, one log line with the frames dropped since the last, by reason
    /// (nothing when none were).
    pub fn watch_drops(&self) {
        let now = self.now_ms();
        let mut last = self
            .drops_logged
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if now < last.0 + DROPS_EVERY_MS {
            return;
        }
        let totals: Vec<(String, u64)> = self
            .drops
            .totals()
            .nonzero()
            .map(|(r, n)| (r.to_string(), n))
            .collect();
        let since: Vec<String> = totals
            .iter()
            .filter_map(|(r, n)| {
                let before = last.1.iter().find(|(x, _)| x == r).map_or(0, |(_, b)| *b);
                (*n > before).then(|| format!("{r} {}", n - before))
            })
            .collect();
        if !since.is_empty() && last.0 > 0 {
            log::info!(
                target: "drops",
                "dropped in the last {} s: {}",
                (now - last.0) / 1000,
                since.join(", ")
            );
        }
        *last = (now.max(1), totals);
    }

    /// One line for systemd's `STATUS=`: how many vservers and services are UP.
    pub fn status_line(&self) -> String {
        let tables = self.published.load();
        let up = |id: u32| self.serving(&tables, id);
        let services: Vec<u32> = (0..tables.services.len() as u32)
            .filter(|&id| tables.service(id).is_some())
            .collect();
        let addressable = tables.vservers.iter().filter(|v| !v.vip.is_unspecified());
        let (mut vs_up, mut vs_all) = (0, 0);
        for v in addressable {
            vs_all += 1;
            if v.enabled && v.pool.members().iter().any(|m| up(m.service)) {
                vs_up += 1;
            }
        }
        format!(
            "{vs_up} of {vs_all} vservers UP, {} of {} services UP (generation {})",
            services.iter().filter(|&&id| up(id)).count(),
            services.len(),
            tables.generation
        )
    }
}
