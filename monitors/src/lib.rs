//! # monitors — health and load probes
//!
//! Probes (PING, TCP, HTTP, TCP-ECV, HTTP-ECV, UDP-ECV, DNS, FTP, USER, LOAD and their TLS
//! variants) will live here as sans-IO state machines driven by the monitor core over smoltcp.
//! Their configuration — every `add lb monitor` parameter with NetScaler's defaults and the
//! per-type validation — is already modelled in `ctl::conf::MonitorSettings`.
#![forbid(unsafe_code)]
