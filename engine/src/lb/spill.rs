//! Backup vservers and spillover: whether a vserver takes a new connection itself or hands
//! it to its backup (`-backupVServer`, `-soMethod`, `-soThreshold`, `-soBackupAction`).
//!
//! The decision is made per new connection; established flows never move. A vserver is
//! *usable* when it is enabled and one of its services is a candidate; it *spills* when its
//! spillover rule is met. An unusable or spilling vserver passes the connection down its
//! backup chain; if the chain ends without a vserver that takes it, a spilling one serves it
//! anyway unless its action is DROP.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use super::{Member, ServiceId, ServiceView};
use crate::persist::PersistTable;

/// `-soMethod` with its threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spill {
    /// Open flows of the vserver's services at or over this many.
    Connection(u64),
    /// Open flows at or over the sum of the services' `-maxClient` (never while one of them
    /// is unlimited).
    DynamicConnection,
    /// Traffic of the vserver's services over the last 14 s at or over this many kbit/s.
    Bandwidth(u64),
    /// The UP services' share of the bind weights below this percentage.
    Health(u64),
}

/// `-soBackupAction`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SpillAction {
    /// Refuse the connection.
    Drop,
    /// Serve it on the spilling vserver (also when no action is configured).
    #[default]
    Accept,
}

/// A vserver's backup and spillover settings, with its backup as an index in the tables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fallback {
    pub backup: Option<usize>,
    pub spill: Option<Spill>,
    pub action: SpillAction,
    /// `-disablePrimaryOnDown ENABLED`: once DOWN, out until `enable lb vserver`.
    pub disable_primary_on_down: bool,
    /// `-soPersistence ENABLED`: how long a client that spilled over keeps going to the
    /// backup after its last such connection, in seconds.
    pub so_persistence_s: Option<u64>,
}

/// A vserver's fallback state at run time, kept across configuration generations (by the
/// control plane, by vserver name) and shared by the workers.
#[derive(Debug)]
pub struct FallbackState {
    /// `-disablePrimaryOnDown`: the vserver went DOWN; it takes no new connection until an
    /// operator enables it again.
    pub out: AtomicBool,
    /// `-soPersistence`: clients that spilled over, with the id of the vserver that took
    /// them.
    pub spilled: PersistTable,
}

impl FallbackState {
    pub fn new(sessions: usize) -> Self {
        Self {
            out: AtomicBool::new(false),
            spilled: PersistTable::new(sessions),
        }
    }

    pub fn is_out(&self) -> bool {
        self.out.load(Relaxed)
    }

    pub fn set_out(&self, out: bool) {
        self.out.store(out, Relaxed);
    }
}

impl Fallback {
    /// Nothing configured: the vserver always serves its own connections.
    pub fn is_none(&self) -> bool {
        self.backup.is_none() && self.spill.is_none()
    }
}

/// The window the bandwidth rule averages over (the counters' window).
const WINDOW_S: u64 = 14;

impl Spill {
    /// Whether the rule sends new connections elsewhere. `max_client` gives a service's
    /// `-maxClient` (0 = unlimited).
    pub fn exceeded<V: ServiceView>(
        self,
        members: &[Member],
        view: &V,
        max_client: impl Fn(ServiceId) -> u64,
    ) -> bool {
        let active = || members.iter().map(|m| view.active(m.service)).sum::<u64>();
        match self {
            Self::Connection(threshold) => active() >= threshold,
            Self::DynamicConnection => {
                let limits: Option<u64> = members
                    .iter()
                    .map(|m| Some(max_client(m.service)).filter(|&l| l > 0))
                    .sum();
                limits.is_some_and(|limit| active() >= limit)
            }
            Self::Bandwidth(kbps) => {
                let bytes: u64 = members.iter().map(|m| view.bytes(m.service)).sum();
                bytes.saturating_mul(8) / WINDOW_S / 1000 >= kbps
            }
            Self::Health(percent) => {
                let total: u64 = members.iter().map(|m| u64::from(m.weight)).sum();
                let up: u64 = members
                    .iter()
                    .filter(|m| view.is_candidate(m.service))
                    .map(|m| u64::from(m.weight))
                    .sum();
                up * 100 < percent * total
            }
        }
    }
}

/// What [`serving`] reads of each vserver of a chain.
pub trait Vservers {
    fn enabled(&self, vs: usize) -> bool;
    fn members(&self, vs: usize) -> &[Member];
    fn fallback(&self, vs: usize) -> Fallback;
    fn max_client(&self, service: ServiceId) -> u64;
    /// Kept out after going DOWN (`-disablePrimaryOnDown`).
    fn is_out(&self, _vs: usize) -> bool {
        false
    }
}

/// Whether `vs` could take a connection itself: enabled, not kept out, a candidate service.
pub fn usable<T: Vservers, V: ServiceView>(vservers: &T, vs: usize, view: &V) -> bool {
    vservers.enabled(vs)
        && !vservers.is_out(vs)
        && vservers
            .members(vs)
            .iter()
            .any(|m| view.is_candidate(m.service))
}

/// Why no vserver of the chain takes the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No vserver of the chain is usable.
    NoService,
    /// The vserver spills over, no backup takes it, and its action is DROP.
    SpilledOver,
}

/// Longest backup chain followed (the configuration refuses loops; this bounds the walk).
pub const MAX_CHAIN: usize = 16;

/// The vserver that serves a new connection arriving at `primary`.
pub fn serving<T: Vservers, V: ServiceView>(
    vservers: &T,
    primary: usize,
    view: &V,
) -> Result<usize, Refusal> {
    let mut vs = primary;
    // The first usable vserver that spilled, and its action.
    let mut spilled: Option<(usize, SpillAction)> = None;
    for _ in 0..MAX_CHAIN {
        let fallback = vservers.fallback(vs);
        let members = vservers.members(vs);
        let usable = usable(vservers, vs, view);
        let spills = usable
            && fallback
                .spill
                .is_some_and(|s| s.exceeded(members, view, |id| vservers.max_client(id)));
        if usable && !spills {
            return Ok(vs);
        }
        if spills && spilled.is_none() {
            spilled = Some((vs, fallback.action));
        }
        match fallback.backup {
            Some(b) => vs = b,
            None => break,
        }
    }
    match spilled {
        Some((vs, SpillAction::Accept)) => Ok(vs),
        Some((_, SpillAction::Drop)) => Err(Refusal::SpilledOver),
        None => Err(Refusal::NoService),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lb::{ServiceSnapshot, SnapshotView};

    /// Vservers as (enabled, member services, fallback); every weight 1.
    struct Table(Vec<(bool, Vec<Member>, Fallback)>, Vec<u64>);

    impl Vservers for Table {
        fn enabled(&self, vs: usize) -> bool {
            self.0[vs].0
        }
        fn members(&self, vs: usize) -> &[Member] {
            &self.0[vs].1
        }
        fn fallback(&self, vs: usize) -> Fallback {
            self.0[vs].2
        }
        fn max_client(&self, service: ServiceId) -> u64 {
            self.1[service as usize]
        }
    }

    fn members(ids: &[u32]) -> Vec<Member> {
        ids.iter()
            .map(|&service| Member {
                service,
                weight: 1,
                seed: 0,
            })
            .collect()
    }

    fn view(up: &[bool], active: &[u64]) -> SnapshotView {
        SnapshotView {
            services: up
                .iter()
                .zip(active)
                .map(|(&candidate, &active)| ServiceSnapshot {
                    candidate,
                    active,
                    ..Default::default()
                })
                .collect(),
        }
    }

    fn chain(primary: Fallback) -> Table {
        Table(
            vec![
                (true, members(&[0, 1]), primary),
                (true, members(&[2]), Fallback::default()),
            ],
            vec![5, 5, 0],
        )
    }

    #[test]
    fn a_down_primary_hands_new_connections_to_its_backup() {
        let t = chain(Fallback {
            backup: Some(1),
            ..Default::default()
        });
        assert_eq!(serving(&t, 0, &view(&[true, false, true], &[0; 3])), Ok(0));
        assert_eq!(serving(&t, 0, &view(&[false, false, true], &[0; 3])), Ok(1));
        assert_eq!(
            serving(&t, 0, &view(&[false, false, false], &[0; 3])),
            Err(Refusal::NoService)
        );
    }

    #[test]
    fn each_spillover_rule_sends_connections_to_the_backup_at_its_threshold() {
        let with = |spill| {
            chain(Fallback {
                backup: Some(1),
                spill: Some(spill),
                action: SpillAction::Accept,
                ..Default::default()
            })
        };
        let up = [true, true, true];
        let t = with(Spill::Connection(4));
        assert_eq!(serving(&t, 0, &view(&up, &[1, 2, 0])), Ok(0));
        assert_eq!(serving(&t, 0, &view(&up, &[2, 2, 0])), Ok(1));
        // Sum of maxClient 5 + 5.
        let t = with(Spill::DynamicConnection);
        assert_eq!(serving(&t, 0, &view(&up, &[5, 4, 0])), Ok(0));
        assert_eq!(serving(&t, 0, &view(&up, &[5, 5, 0])), Ok(1));
        // Half the weight must be UP.
        let t = with(Spill::Health(50));
        assert_eq!(serving(&t, 0, &view(&[true, false, true], &[0; 3])), Ok(0));
        let t = with(Spill::Health(51));
        assert_eq!(serving(&t, 0, &view(&[true, false, true], &[0; 3])), Ok(1));
    }

    #[test]
    fn a_spill_with_no_usable_backup_is_served_or_dropped_as_its_action_says() {
        let with = |action| {
            chain(Fallback {
                backup: Some(1),
                spill: Some(Spill::Connection(1)),
                action,
                ..Default::default()
            })
        };
        let backup_down = view(&[true, true, false], &[1, 0, 0]);
        assert_eq!(serving(&with(SpillAction::Accept), 0, &backup_down), Ok(0));
        assert_eq!(
            serving(&with(SpillAction::Drop), 0, &backup_down),
            Err(Refusal::SpilledOver)
        );
    }

    #[test]
    fn a_dynamic_rule_never_spills_while_a_service_is_unlimited() {
        let mut t = chain(Fallback {
            backup: Some(1),
            spill: Some(Spill::DynamicConnection),
            action: SpillAction::Accept,
            ..Default::default()
        });
        t.1 = vec![5, 0, 0];
        assert_eq!(serving(&t, 0, &view(&[true; 3], &[100, 100, 0])), Ok(0));
    }
}
