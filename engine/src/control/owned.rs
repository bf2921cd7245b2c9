//! The addresses the engine owns (VIPs and SNIPs), told to whoever must know them before the
//! workers do: the XDP programs, which send the engine frames to these addresses only (and
//! the replies of USIP services).

use crate::tables::LocalIp;

/// Told every generation's addresses before the generation is published; a refusal (a map
/// that is full) refuses the generation, and the previous addresses stay.
pub trait OwnedAddresses: Send + Sync {
    /// `local`: the VIPs and SNIPs; `usip_sources`: the addresses of services that see
    /// clients' own addresses, whose replies the engine takes by their source.
    fn publish(&self, local: &[LocalIp], usip_sources: &[std::net::Ipv4Addr])
    -> Result<(), String>;
}
