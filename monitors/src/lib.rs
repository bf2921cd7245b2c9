//! # monitors — health and load probes
//!
//! * [`health`] — probe results → monitor state (retries, failureRetries, successRetries,
//!   downTime, reverse) and monitor states → service state (monThreshold, weights).
//! * [`load`] — the CUSTOMLOAD load formula and threshold exclusion; the LRTM mean.
//! * [`publish`] — what the monitor core publishes to the workers, lock-free.
//! * [`core`] — the monitor core: a smoltcp interface over frame channels running every probe
//!   (PING, TCP, HTTP, ECV, DNS, FTP, USER, LOAD and the TLS variants) against virtual time.
//! * [`tls`] — the rustls session of the secure probes, pumped over a smoltcp socket.
//! * [`snmp`] — SNMP v1/v2c GET requests and responses for LOAD monitors.
#![forbid(unsafe_code)]

pub mod core;
pub mod health;
pub mod load;
pub mod publish;
pub mod snmp;
pub mod tls;
