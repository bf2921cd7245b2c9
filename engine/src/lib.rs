//! # engine — Fulcrum's data plane
//!
//! * [`lb`] — the selection core: NetScaler's methods over immutable pools, per-worker state.
//! * [`counters`] — per-core, lock-free service counters with 14-second windows.
//! * [`profile`] — hardware profiles (cores, ports, queues, UMEM, flow table sizes).
//!
//! The AF_XDP workers, flow tables and NAT build on these.

pub mod control;
pub mod counters;
pub mod daemon;
pub mod drain;
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
