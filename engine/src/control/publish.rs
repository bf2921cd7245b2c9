//! Publishing configuration generations: a new configuration becomes immutable tables that
//! replace the running ones with one atomic swap (workers pick them up between bursts), with
//! the drains in progress, the persistence sessions kept, and ids freed once nothing refers
//! to them.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use ctl::conf::Config;
use ctl::error::{CliError, ErrorKind};

use crate::drain::Drain;
use crate::persist::SESSIONS_PER_VSERVER;
use crate::tables::{ServiceIds, Tables};

use super::{Control, State};

/// What a generation may hold: the profile's services, the SNIPs the monitor core holds.
pub(super) fn check_capacity(tables: &Tables, max_services: usize) -> Result<(), String> {
    if tables.services.len() > max_services {
        return Err(format!(
            "More services than the profile's max_services {max_services}"
        ));
    }
    let snips = tables.snips().count();
    if snips > monitors::MAX_ADDRESSES {
        return Err(format!(
            "More SNIPs than the monitor core holds ({})",
            monitors::MAX_ADDRESSES
        ));
    }
    Ok(())
}

impl Control {
    /// Makes `next` the running configuration and publishes its tables, with the drains in
    /// progress (only those of services still disabled are kept).
    pub(super) fn publish(
        &self,
        state: &mut State,
        next: Config,
        mut drains: HashMap<String, Drain>,
    ) -> Result<(), CliError> {
        // A drain lasts while its service is out of service, by its own state or its server's.
        drains.retain(|name, _| {
            next.services
                .get(name.as_str())
                .is_some_and(|s| !next.in_service(s))
        });
        let mut ids = state.ids.clone();
        self.recycle_ids(&mut ids);
        let mut tables = Tables::build(&next, &mut ids, state.generation + 1);
        tables.sessions_full = std::sync::Arc::clone(&self.sessions_full);
        tables.apply_drains(&drains);
        let mut persist = state.persist.clone();
        tables.attach_persistence(&mut persist, SESSIONS_PER_VSERVER);
        let mut fallbacks = state.fallbacks.clone();
        tables.attach_fallback_state(&mut fallbacks, SESSIONS_PER_VSERVER);
        check_capacity(&tables, self.max_services)
            .map_err(|e| CliError::new(ErrorKind::NotSupported).with_detail(e))?;
        self.tell_owners(state, &tables)?;
        state.generation += 1;
        state.ids = ids;
        state.config = next;
        state.drains = drains;
        state.persist = persist;
        state.fallbacks = fallbacks;
        self.published.store(Arc::new(tables));
        Ok(())
    }

    /// Tells every owner the new generation's addresses; if one refuses, those told already
    /// get the running addresses back and the generation is refused.
    fn tell_owners(&self, state: &State, tables: &Tables) -> Result<(), CliError> {
        for (told, owner) in state.owners.iter().enumerate() {
            if let Err(e) = owner.publish(tables.locals(), &tables.usip_sources) {
                let running = self.published.load();
                for earlier in &state.owners[..told] {
                    // Telling them what they held already cannot run out of room.
                    let _ = earlier.publish(running.locals(), &running.usip_sources);
                }
                return Err(CliError::new(ErrorKind::NotSupported).with_detail(e));
            }
        }
        Ok(())
    }

    /// Frees the ids of services and vservers gone from the configuration once nothing can
    /// refer to them: every worker and the monitor core moved past the generation that
    /// dropped them, and no flow (nor counter window) of the service is left. A freed id
    /// starts from zero counters and no health.
    fn recycle_ids(&self, ids: &mut ServiceIds) {
        let workers = self.counters.oldest_generation();
        let monitor = self.monitor_generation.load(Ordering::Relaxed);
        let moved_past = |retired: u64| workers > retired && monitor > retired;
        let recycled = ids.recycle(
            |id, retired| moved_past(retired) && self.counters.service_idle(id),
            |_, retired| moved_past(retired),
        );
        for id in recycled.services {
            self.counters.reset_service(id);
            self.health.reset(id);
        }
        for id in recycled.vservers {
            self.counters.reset_vserver(id);
        }
    }

    /// The monitor core works with `generation` now (it follows every published one).
    pub fn monitor_follows(&self, generation: u64) {
        self.monitor_generation.store(generation, Ordering::Relaxed);
    }
}
