//! SYN cookies: the initial sequence number of the SYN+ACK the engine answers a client's SYN
//! with, made so that the client's ACK proves the handshake without any state kept for it.
//!
//! A cookie is 32 bits: a 5-bit time counter (64-second steps), a 3-bit index into
//! [`MSS_STEPS`] (the MSS the client offered, rounded down), and 24 bits of a keyed hash
//! (SipHash-2-4) over the 4-tuple, the client's ISN and the full
//! counter. A cookie is good for 64 to 128 seconds; a forged ACK passes with odds of 2^-24.
//!
//! Both the cookies and the sequence numbers toward services ([`service_isn`]) are keyed with
//! the secret the daemon keeps across restarts ([`keep_secret`]): a client whose SYN the old
//! daemon answered finishes its handshake with the new one, and each SNAT tuple's numbers
//! continue above its predecessor's.

use std::hash::BuildHasher;
use std::net::Ipv4Addr;
use std::sync::OnceLock;

/// The MSS values a cookie can carry (the common ones: minimum, IPv6 tunnels, PPPoE,
/// Ethernet, jumbo frames).
pub const MSS_STEPS: [u16; 8] = [536, 1220, 1360, 1400, 1440, 1452, 1460, 8960];

const STEP_S: u64 = 64;
const HASH_BITS: u32 = 24;

/// Client address and port, VIP and port.
pub type Tuple = ((Ipv4Addr, u16), (Ipv4Addr, u16));

fn mac(keys: &Keys, tuple: Tuple, client_isn: u32, counter: u64) -> u32 {
    let ((client, client_port), (vip, vip_port)) = tuple;
    let addrs = u64::from(u32::from(client)) << 32 | u64::from(u32::from(vip));
    let rest = u64::from(client_port) << 48 | u64::from(vip_port) << 32 | u64::from(client_isn);
    let (k0, k1) = keys.cookie;
    (crate::siphash::hash(k0, k1, &[addrs, rest, counter]) as u32) & ((1 << HASH_BITS) - 1)
}

/// The ISN toward a service of a SNAT tuple (`(SNIP, SNAT port)`, service), RFC 6528's: a
/// 4-µs clock (`now_ms` is the wall clock) plus a keyed hash of the tuple. One tuple's SYNs are
/// numbered ever higher, so a service still holding the tuple in TIME_WAIT takes the next one
/// (a SYN above the old connection's last sequence number is accepted, RFC 9293 §3.6.1): the
/// engine's own SYNs of the SYN proxy, and the SYNs of clients without timestamps, which are
/// renumbered. The hash is two multiplies folded (ahash's construction) rather than SipHash, as
/// every renumbered new flow pays it: it hides the tuple's offset from an off-path guesser, and
/// the numbers are seen only between the SNIP and the service. Its secret is the one the
/// daemon keeps across restarts ([`keep_secret`]), so a new daemon continues above.
#[inline(always)]
pub fn service_isn(tuple: Tuple, now_ms: u64) -> u32 {
    let ((snip, snat_port), (service, service_port)) = tuple;
    use crate::flow::folded_multiply;
    let k = &keys().isn;
    let a = u64::from(u32::from(snip)) << 32 | u64::from(u32::from(service));
    let b = u64::from(snat_port) << 16 | u64::from(service_port);
    let h = folded_multiply(folded_multiply(a ^ k[0], b ^ k[1]) ^ k[2], k[3]);
    (h as u32).wrapping_add((now_ms.wrapping_mul(250)) as u32)
}

/// What the daemon's secret keys: the sequence numbers toward services (odd words, as a
/// multiplier wants) and the cookies' SipHash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Keys {
    isn: [u64; 4],
    cookie: (u64, u64),
}

impl Keys {
    /// Both sets from one secret; the cookie's are the secret's SipHash under fixed labels,
    /// so neither use tells anything of the other.
    fn from_secret(secret: [u64; 4]) -> Keys {
        const COOKIE_LABEL: u64 = u64::from_le_bytes(*b"fl-cooki");
        Keys {
            isn: secret.map(|k| k | 1),
            cookie: (
                crate::siphash::hash(secret[0], secret[1], &[COOKIE_LABEL, 0]),
                crate::siphash::hash(secret[2], secret[3], &[COOKIE_LABEL, 1]),
            ),
        }
    }
}

/// One set for every worker: a client's ACK may be checked by another worker than the one
/// that answered its SYN when steering changed.
static KEYS: OnceLock<Keys> = OnceLock::new();

/// Keys the cookies and [`service_isn`] with `secret` (the daemon's, kept across restarts
/// by [`crate::isn_secret`]). Only before the first cookie or ISN is made: `false` if keys
/// were already in use, which then stay.
pub fn keep_secret(secret: [u64; 4]) -> bool {
    KEYS.set(Keys::from_secret(secret)).is_ok()
}

/// The keys in use: the kept secret's, or those of four random words drawn once per process.
fn keys() -> &'static Keys {
    KEYS.get_or_init(|| {
        let state = std::collections::hash_map::RandomState::new();
        Keys::from_secret(std::array::from_fn(|i| state.hash_one(i)))
    })
}

/// The cookie for a SYN from `tuple.0` to `tuple.1` with sequence number `client_isn`,
/// offering `mss` (none: 536).
pub fn make(tuple: Tuple, client_isn: u32, mss: Option<u16>, now_s: u64) -> u32 {
    let mss = mss.unwrap_or(536);
    let index = MSS_STEPS.iter().rposition(|&m| m <= mss).unwrap_or(0) as u32;
    let counter = now_s / STEP_S;
    cookie(keys(), tuple, client_isn, index, counter)
}

fn cookie(keys: &Keys, tuple: Tuple, client_isn: u32, mss_index: u32, counter: u64) -> u32 {
    let mac = mac(keys, tuple, client_isn, counter);
    ((counter as u32 & 0x1f) << 27) | (mss_index << HASH_BITS) | mac
}

/// The MSS a cookie carries (whether or not it is good).
pub fn mss_of(cookie: u32) -> u16 {
    MSS_STEPS[((cookie >> HASH_BITS) & 0x7) as usize]
}

/// The MSS a cookie carries, if `cookie` (the client's ACK number minus one) is one made
/// under this daemon's secret for `tuple` and `client_isn` (its sequence number minus one)
/// within the last two steps.
pub fn check(tuple: Tuple, client_isn: u32, cookie: u32, now_s: u64) -> Option<u16> {
    check_with(keys(), tuple, client_isn, cookie, now_s)
}

fn check_with(keys: &Keys, tuple: Tuple, client_isn: u32, cookie: u32, now_s: u64) -> Option<u16> {
    let now = now_s / STEP_S;
    let stamp = u64::from(cookie >> 27);
    let counter = [Some(now), now.checked_sub(1)]
        .into_iter()
        .flatten()
        .find(|c| c & 0x1f == stamp)?;
    (mac(keys, tuple, client_isn, counter) == cookie & ((1 << HASH_BITS) - 1))
        .then(|| mss_of(cookie))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TUPLE: Tuple = (
        (Ipv4Addr::new(198, 18, 1, 5), 40_000),
        (Ipv4Addr::new(198, 18, 0, 100), 80),
    );

    #[test]
    fn a_cookie_proves_its_own_handshake_only() {
        let c = make(TUPLE, 1000, Some(1460), 10_000);
        assert_eq!(check(TUPLE, 1000, c, 10_000), Some(1460));
        assert_eq!(check(TUPLE, 1000, c, 10_000 + 100), Some(1460), "next step");
        assert_eq!(check(TUPLE, 1000, c, 10_000 + 200), None, "too old");
        assert_eq!(check(TUPLE, 1001, c, 10_000), None, "another ISN");
        let other = ((Ipv4Addr::new(198, 18, 1, 6), 40_000), TUPLE.1);
        assert_eq!(check(other, 1000, c, 10_000), None, "another client");
        assert_eq!(check(TUPLE, 1000, c ^ 1, 10_000), None, "a changed bit");
    }

    /// A restarted daemon reads the same secret and takes the cookies its predecessor gave;
    /// a daemon with another secret refuses them.
    #[test]
    fn cookies_hold_under_the_same_secret_only() {
        let secret = [1, 2, 3, 4];
        let before = Keys::from_secret(secret);
        let c = cookie(&before, TUPLE, 1000, 6, 10_000 / STEP_S);
        let restarted = Keys::from_secret(secret);
        assert_eq!(check_with(&restarted, TUPLE, 1000, c, 10_000), Some(1460));
        let other = Keys::from_secret([1, 2, 3, 5]);
        assert_eq!(check_with(&other, TUPLE, 1000, c, 10_000), None);
        assert_ne!(
            before.cookie,
            (secret[0], secret[1]),
            "the secret itself is not a key"
        );
    }

    #[test]
    fn the_mss_is_rounded_down_to_a_step() {
        for (offered, carried) in [
            (None, 536),
            (Some(100), 536),
            (Some(1459), 1452),
            (Some(1460), 1460),
            (Some(9000), 8960),
        ] {
            let c = make(TUPLE, 7, offered, 500);
            assert_eq!(check(TUPLE, 7, c, 500), Some(carried), "{offered:?}");
        }
    }

    #[test]
    fn random_guesses_fail() {
        let mut r = 99u64;
        let passed = (0..100_000)
            .filter(|_| {
                r = r.wrapping_mul(6364136223846793005).wrapping_add(1);
                check(TUPLE, 1000, (r >> 32) as u32, 10_000).is_some()
            })
            .count();
        assert!(passed <= 2, "{passed} of 100,000 random cookies passed");
    }

    #[test]
    fn service_isns_of_one_tuple_grow_with_the_clock() {
        let a = (
            (Ipv4Addr::new(198, 18, 0, 2), 40_000),
            (Ipv4Addr::new(198, 18, 0, 11), 80),
        );
        let b = (
            (Ipv4Addr::new(198, 18, 0, 2), 40_001),
            (Ipv4Addr::new(198, 18, 0, 11), 80),
        );
        let first = service_isn(a, 1_000);
        // 250 per millisecond: a second later the tuple's ISN is 250,000 higher.
        assert_eq!(service_isn(a, 2_000).wrapping_sub(first), 250_000);
        assert_ne!(
            service_isn(b, 1_000),
            first,
            "another tuple, another offset"
        );
    }
}
