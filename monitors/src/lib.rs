//! # monitors — health and load probes
//!
//! * [`health`] — probe results → monitor state (retries, failureRetries, successRetries,
//!   downTime, reverse) and monitor states → service state (monThreshold, weights).
//! * [`load`] — the CUSTOMLOAD load formula and threshold exclusion; the LRTM mean.
//! * [`publish`] — what the monitor core publishes to the workers, lock-free.
//! * [`core`] — the monitor core: a smoltcp interface over frame channels, TCP and HTTP probes.
//!
//! The probes themselves (PING, TCP, HTTP, ECV, DNS, FTP, USER, LOAD and their TLS variants)
//! come next as sans-IO state machines driven by the monitor core over smoltcp; their
//! configuration is already modelled in `ctl::conf::MonitorSettings`.
#![forbid(unsafe_code)]

pub mod core;
pub mod health;
pub mod load;
pub mod publish;
pub mod snmp;
