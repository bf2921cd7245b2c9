//! The addresses the engine owns (VIPs and SNIPs), told to whoever must know them before the
//! workers do: the XDP programs, which send the engine frames to these addresses only.

use crate::tables::LocalIp;

/// Told every generation's addresses before the generation is published; a refusal (a map
/// that is full) refuses the generation, and the previous addresses stay.
pub trait OwnedAddresses: Send + Sync {
    fn publish(&self, local: &[LocalIp]) -> Result<(), String>;
}
