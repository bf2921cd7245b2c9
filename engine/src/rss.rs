//! Receive-side scaling as NICs compute it: the Toeplitz hash of a frame's addresses and
//! ports (Microsoft's RSS specification) and the indirection table from hash to queue. With
//! the NIC's key and table the engine knows, from a frame's headers, which queue the NIC puts
//! it on — and picks SNAT ports whose replies come back to the worker that owns the flow.

use std::net::Ipv4Addr;

/// The key of Microsoft's verification suite (and many drivers' default).
pub const MICROSOFT_KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
    0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
    0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
];

/// The Toeplitz hash with one key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toeplitz {
    key: Vec<u8>,
}

impl Toeplitz {
    /// A key of at least 16 bytes (an IPv4 4-tuple is 12 bytes of input, which needs 12 + 4
    /// bytes of key; 40 is usual).
    pub fn new(key: &[u8]) -> Option<Self> {
        (key.len() >= 16).then(|| Self { key: key.to_vec() })
    }

    /// The hash of `input`: for every set bit of the input (most significant first), the XOR
    /// of the 32 key bits starting at that bit's position.
    pub fn hash(&self, input: &[u8]) -> u32 {
        let mut result = 0u32;
        // The key window: 32 bits starting at the current input bit, with 8 more bits below.
        let key_bit = |i: usize| -> u32 {
            self.key
                .get(i / 8)
                .map_or(0, |b| u32::from((b >> (7 - i % 8)) & 1))
        };
        let mut window: u32 = (0..32).fold(0, |w, i| (w << 1) | key_bit(i));
        for (n, byte) in input.iter().enumerate() {
            for bit in 0..8 {
                if byte & (0x80 >> bit) != 0 {
                    result ^= window;
                }
                window = (window << 1) | key_bit(n * 8 + bit + 32);
            }
        }
        result
    }

    /// The hash of an IPv4 TCP or UDP frame: source address, destination address, source
    /// port, destination port (network order).
    pub fn ipv4_ports(&self, src: Ipv4Addr, dst: Ipv4Addr, sport: u16, dport: u16) -> u32 {
        let mut input = [0u8; 12];
        input[..4].copy_from_slice(&src.octets());
        input[4..8].copy_from_slice(&dst.octets());
        input[8..10].copy_from_slice(&sport.to_be_bytes());
        input[10..].copy_from_slice(&dport.to_be_bytes());
        self.hash(&input)
    }

    /// The hash of the addresses alone (frames without ports).
    pub fn ipv4(&self, src: Ipv4Addr, dst: Ipv4Addr) -> u32 {
        let mut input = [0u8; 8];
        input[..4].copy_from_slice(&src.octets());
        input[4..].copy_from_slice(&dst.octets());
        self.hash(&input)
    }
}

/// A NIC's RSS: its key and its indirection table (hash → queue).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rss {
    pub toeplitz: Toeplitz,
    pub indirection: Vec<u32>,
}

impl Rss {
    /// The queue of a hash: the table entry its low bits select.
    #[inline]
    pub fn queue(&self, hash: u32) -> Option<u32> {
        let n = self.indirection.len();
        (n > 0).then(|| self.indirection[hash as usize % n])
    }

    /// The queue the NIC puts an IPv4 TCP/UDP frame on.
    #[inline]
    pub fn queue_of(&self, src: Ipv4Addr, dst: Ipv4Addr, sport: u16, dport: u16) -> Option<u32> {
        self.queue(self.toeplitz.ipv4_ports(src, dst, sport, dport))
    }

    /// A table spreading `queues` queues evenly over `entries` entries (drivers' default).
    pub fn spread(key: &[u8], queues: u32, entries: usize) -> Option<Self> {
        Some(Self {
            toeplitz: Toeplitz::new(key)?,
            indirection: (0..entries as u32).map(|i| i % queues.max(1)).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> Ipv4Addr {
        s.parse().unwrap()
    }

    /// Microsoft's "Verifying the RSS Hash Calculation", IPv4: (destination, source, hash of
    /// the addresses, hash with the ports).
    #[test]
    fn the_published_verification_vectors() {
        let t = Toeplitz::new(&MICROSOFT_KEY).unwrap();
        let vectors = [
            (
                "161.142.100.80",
                1766,
                "66.9.149.187",
                2794,
                0x323e_8fc2,
                0x51cc_c178,
            ),
            (
                "65.69.140.83",
                4739,
                "199.92.111.2",
                14230,
                0xd718_262a,
                0xc626_b0ea,
            ),
            (
                "12.22.207.184",
                38024,
                "24.19.198.95",
                12898,
                0xd2d0_a5de,
                0x5c2b_394a,
            ),
            (
                "209.142.163.6",
                2217,
                "38.27.205.30",
                48228,
                0x8298_9176,
                0xafc7_327f,
            ),
            (
                "202.188.127.2",
                1303,
                "153.39.163.191",
                44251,
                0x5d18_09c5,
                0x10e8_28a2,
            ),
        ];
        for (dst, dport, src, sport, addrs, ports) in vectors {
            assert_eq!(t.ipv4(ip(src), ip(dst)), addrs, "{src} → {dst}");
            assert_eq!(
                t.ipv4_ports(ip(src), ip(dst), sport, dport),
                ports,
                "{src}:{sport} → {dst}:{dport}"
            );
        }
    }

    #[test]
    fn a_table_spreads_hashes_over_the_queues() {
        let rss = Rss::spread(&MICROSOFT_KEY, 4, 128).unwrap();
        let mut seen = [0u32; 4];
        for port in 10_000..14_000u16 {
            let q = rss
                .queue_of(ip("198.18.0.11"), ip("198.18.0.2"), 80, port)
                .unwrap();
            seen[q as usize] += 1;
        }
        assert!(seen.iter().all(|&n| (800..1200).contains(&n)), "{seen:?}");
        assert_eq!(Rss::spread(&MICROSOFT_KEY, 4, 0).unwrap().queue(7), None);
    }
}
