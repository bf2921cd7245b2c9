//! A monitor bound to a service, as the engine describes it to the monitor core: where and
//! how to probe, and how the results count. The monitor core's own settings types: the
//! engine converts its configuration into them.

use std::net::Ipv4Addr;

use crate::health::Timers;
use crate::probe::ProbeKind;
use crate::publish::ServiceId;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub service: ServiceId,
    /// The service's name, for the log.
    pub service_name: String,
    /// Identifies the binding across configuration generations.
    pub monitor: String,
    pub addr: Ipv4Addr,
    pub port: u16,
    pub kind: ProbeKind,
    pub timers: Timers,
    pub weight: u32,
    pub enabled: bool,
    pub lrtm: bool,
    /// The service's `-monThreshold`.
    pub mon_threshold: u32,
    /// `-secure YES`: TCP, HTTP, TCP-ECV and HTTP-ECV run over TLS (TCPS, HTTPS, HTTPS-ECV).
    pub secure: bool,
}
