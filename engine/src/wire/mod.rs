//! Frames on the wire, in smoltcp's two views:
//!
//! * **Byte views** — [`EthernetFrame`], [`ArpPacket`], [`Ipv4Packet`], [`TcpPacket`],
//!   [`UdpPacket`], [`IcmpPacket`]: `new_checked` validates the length once, after which no
//!   accessor panics; getters read and `set_*` setters write fields in place, each header's
//!   offsets private to its module. The hot path reads and rewrites frames through them.
//! * **Parsed fields** — [`parse`] validates a frame (through the views; ARP through
//!   etherparse) into the few fields the data plane decides on ([`Packet`]: [`Arp`] or
//!   [`Ipv4`]); every malformed frame maps to a [`DropReason`], never a panic.
//!
//! Around them: [`checksum`](mod@checksum) (sums, RFC 1624 adjustments, the pseudo-header),
//! `rewrite` (full NAT, echo and ARP replies, the transport checksum's completion) and `build`
//! (frames the engine originates: RSTs, probes, ARP requests).
//!
//! No code outside this module indexes header bytes.

mod arp;
mod build;
pub mod checksum;
mod ethernet;
mod icmp;
mod ipv4;
mod parse;
mod rewrite;
mod tcp;
mod udp;

use std::net::Ipv4Addr;

pub use arp::{ArpPacket, OPERATION_REPLY, OPERATION_REQUEST};
pub use build::{arp_request, tcp_ack, tcp_handshake, tcp_probe, tcp_rst};
pub use checksum::checksum;
pub use ethernet::{ETHERTYPE_ARP, ETHERTYPE_IPV4, EthernetFrame, HEADER_LEN as ETH_LEN};
pub use icmp::IcmpPacket;
pub use ipv4::Ipv4Packet;
pub use parse::{Arp, Ipv4, Packet, Parsed, TcpFlags, parse, parse_into};
pub use rewrite::{
    NatDelta, TcpNumbers, TcpShift, TransportChecksum, arp_reply_in_place, arp_target,
    complete_checksum, echo_reply_in_place, readdress, rewrite_flow, set_macs, shift_sack, src_mac,
    swap_macs, tcp_mss, tcp_numbers, tcp_seq, tcp_tsval, transport_checksum,
};
pub use tcp::TcpPacket;
pub use udp::UdpPacket;

use crate::verdict::DropReason;

pub type Mac = [u8; 6];
pub const BROADCAST: Mac = [0xff; 6];

/// Transport protocols the engine balances.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Proto {
    Tcp,
    Udp,
    Icmp,
}

impl Proto {
    pub const fn number(self) -> u8 {
        match self {
            Self::Tcp => 6,
            Self::Udp => 17,
            Self::Icmp => 1,
        }
    }
}

/// A field's byte range inside its header.
type Field = std::ops::Range<usize>;

/// The shared part of every byte view: construction, the length check, the buffer back.
macro_rules! view {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> $name<T> {
            /// A view without a length check: accessors may panic on a short buffer.
            pub const fn new_unchecked(buffer: T) -> Self {
                Self { buffer }
            }

            /// A view whose accessors cannot panic (see `check_len`).
            pub fn new_checked(buffer: T) -> Result<Self, DropReason> {
                let view = Self::new_unchecked(buffer);
                view.check_len()?;
                Ok(view)
            }

            pub fn into_inner(self) -> T {
                self.buffer
            }
        }
    };
    // A header of fixed length: `Truncated` when the buffer cannot hold `$len` bytes.
    ($(#[$doc:meta])* $name:ident, fixed $len:expr) => {
        super::view!($(#[$doc])* $name);

        impl<T: AsRef<[u8]>> $name<T> {
            pub fn check_len(&self) -> Result<(), DropReason> {
                if self.buffer.as_ref().len() < $len {
                    return Err(DropReason::Truncated);
                }
                Ok(())
            }
        }
    };
}
use view;

fn be16(b: &[u8], f: Field) -> u16 {
    u16::from_be_bytes([b[f.start], b[f.start + 1]])
}

fn set_be16(b: &mut [u8], f: Field, v: u16) {
    b[f].copy_from_slice(&v.to_be_bytes());
}

fn be32(b: &[u8], f: Field) -> u32 {
    u32::from_be_bytes([b[f.start], b[f.start + 1], b[f.start + 2], b[f.start + 3]])
}

fn set_be32(b: &mut [u8], f: Field, v: u32) {
    b[f].copy_from_slice(&v.to_be_bytes());
}

fn mac_at(b: &[u8], f: Field) -> Mac {
    let mut m = [0u8; 6];
    m.copy_from_slice(&b[f]);
    m
}

fn ipv4_at(b: &[u8], f: Field) -> Ipv4Addr {
    Ipv4Addr::new(b[f.start], b[f.start + 1], b[f.start + 2], b[f.start + 3])
}
