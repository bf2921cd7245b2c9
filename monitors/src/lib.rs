//! # monitors — health and load probes
//!
//! Layers, each depending only on those above it:
//! * [`probe`] — one sans-IO state machine per monitor type (PING, TCP, HTTP, ECV, UDP-ECV,
//!   DNS, FTP, LOAD, USER): given `now` and what arrived, the bytes to send and a typed
//!   [`probe::Outcome`]. No clock, no socket, no process.
//! * [`health`] — probe results → monitor state (retries, failureRetries, successRetries,
//!   downTime, reverse) and monitor states → service state (monThreshold, weights).
//! * [`load`] — the CUSTOMLOAD load formula and threshold exclusion; the LRTM mean.
//! * [`snmp`] — SNMP v1/v2c GET requests and responses for LOAD monitors; [`tls`] — the
//!   rustls session of the secure probes, pumped over a smoltcp socket.
//! * [`resolve`] — the A query of a domain-based server and what its answer says.
//! * [`target`] — a monitor bound to a service, in this crate's own settings types (the
//!   engine converts its configuration into them; this crate knows no command language).
//! * [`schedule`] — the due-time heap; [`device`] — the frame channels to the workers.
//! * [`driver`] — the monitor core ([`MonitorCore`]): the only part that does I/O (the
//!   smoltcp interface, sockets, scripts), driven with the time passed in.
//! * [`publish`] — what the monitor core publishes to the workers, lock-free.
#![forbid(unsafe_code)]

pub mod device;
pub mod driver;
pub mod health;
pub mod load;
pub mod probe;
pub mod publish;
pub mod resolve;
pub mod schedule;
pub mod snmp;
pub mod target;
pub mod tls;

pub use device::ChannelDevice;
pub use driver::{MAX_ADDRESSES, MonitorCore, TooManyAddresses};
pub use probe::{Outcome, ProbeKind, StatusCodes};
pub use target::Target;
