//! # engine — Fulcrum's data plane and daemon
//!
//! Per packet (the workers):
//! * [`wire`] — parsing and in-place rewrites with incremental checksums; RSTs and probes.
//! * [`flow`] — the flow table (two keys per flow, TCP progress, idle timeouts, sweeps).
//! * [`nat`] — SNAT ports per worker; [`neigh`] — ARP neighbours.
//! * [`worker`] — bursts in stages: parse, look up, select, rewrite; every drop counted
//!   ([`verdict`]); downStateFlush.
//! * [`lb`] — the selection core: NetScaler's methods over immutable pools.
//! * [`persist`] — SOURCEIP persistence sessions shared by the workers.
//! * [`counters`] — per-core, lock-free service and vserver counters with 14-second windows.
//!
//! Around them:
//! * [`tables`] — what the control plane builds from the configuration for the workers.
//! * [`control`] — the control socket: commands applied atomically, `show`/`stat`, save.
//! * [`drain`] — `disable service` with a delay or `-graceFul`; [`rates`] — `stat` rates.
//! * [`monitoring`] — runs the monitor core (the `monitors` crate) beside the workers.
//! * [`daemon`], [`profile`], [`xsk`] (AF_XDP ports), [`metrics`], [`replay`].

pub mod clock;
pub mod control;
pub mod counters;
pub mod daemon;
pub mod drain;
pub mod error;
pub mod flow;
/// What the monitor core publishes (lives in the monitors crate).
pub use monitors::publish as health;
pub mod lb;
pub mod metrics;
pub mod monitoring;
pub mod nat;
pub mod neigh;
pub mod persist;
pub mod profile;
pub mod rates;
pub mod replay;
pub mod tables;
pub mod verdict;
pub mod wire;
pub mod worker;
pub mod xsk;
