//! SipHash-2-4 (Aumasson and Bernstein, 2012) over whole 64-bit words, with keys the caller
//! keeps: the SYN cookies' MAC, whose keys must outlive the process (std's `RandomState`
//! draws them per process and cannot be given any).

/// SipHash-2-4 under the key `(k0, k1)` of the message that is `words` in little-endian order
/// (`words.len() * 8` bytes).
pub fn hash(k0: u64, k1: u64, words: &[u64]) -> u64 {
    let mut v = [
        k0 ^ 0x736f_6d65_7073_6575,
        k1 ^ 0x646f_7261_6e64_6f6d,
        k0 ^ 0x6c79_6765_6e65_7261,
        k1 ^ 0x7465_6462_7974_6573,
    ];
    for &m in words {
        v[3] ^= m;
        rounds(&mut v, 2);
        v[0] ^= m;
    }
    // The last block: the message's length in bytes (mod 256) in its top byte, no tail.
    let last = ((words.len() as u64 * 8) & 0xff) << 56;
    v[3] ^= last;
    rounds(&mut v, 2);
    v[0] ^= last;
    v[2] ^= 0xff;
    rounds(&mut v, 4);
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

fn rounds(v: &mut [u64; 4], n: usize) {
    for _ in 0..n {
        v[0] = v[0].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(13) ^ v[0];
        v[0] = v[0].rotate_left(32);
        v[2] = v[2].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(16) ^ v[2];
        v[0] = v[0].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(21) ^ v[0];
        v[2] = v[2].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(17) ^ v[2];
        v[2] = v[2].rotate_left(32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key of the paper's test vectors: bytes 0 to 15.
    const K0: u64 = 0x0706_0504_0302_0100;
    const K1: u64 = 0x0f0e_0d0c_0b0a_0908;

    #[test]
    fn the_reference_vectors() {
        // The reference implementation's vectors for the messages 0..n (bytes), n = 0, 8, 16.
        assert_eq!(hash(K0, K1, &[]), 0x726f_db47_dd0e_0e31);
        assert_eq!(hash(K0, K1, &[K0]), 0x93f5_f579_9a93_2462);
        assert_eq!(hash(K0, K1, &[K0, K1]), 0x3f2a_cc7f_57c2_9bdb);
    }

    proptest::proptest! {
        /// The same function as std's (deprecated, unkeyable from outside) SipHasher.
        #[test]
        fn agrees_with_std(k0: u64, k1: u64, words in proptest::collection::vec(proptest::prelude::any::<u64>(), 0..6)) {
            #[allow(deprecated)]
            let mut std_hasher = std::hash::SipHasher::new_with_keys(k0, k1);
            for w in &words {
                std::hash::Hasher::write(&mut std_hasher, &w.to_le_bytes());
            }
            proptest::prop_assert_eq!(hash(k0, k1, &words), std::hash::Hasher::finish(&std_hasher));
        }
    }
}
