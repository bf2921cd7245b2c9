//! What a backend answers to a secure probe's TLS session (the probes' own client
//! configuration), in arbitrary pieces: never a panic; a bad record is an error, which fails
//! the probe.
#![no_main]

use std::net::Ipv4Addr;

use libfuzzer_sys::fuzz_target;
use monitors::tls::{TlsStream, client_config};

fuzz_target!(|data: &[u8]| {
    let Ok(mut session) = TlsStream::new(&client_config(), Ipv4Addr::new(198, 18, 0, 11)) else {
        return;
    };
    let (&size, mut data) = data.split_first().unwrap_or((&64, &[]));
    let size = usize::from(size).max(1);
    while !data.is_empty() {
        let (piece, rest) = data.split_at(size.min(data.len()));
        data = rest;
        if session.receive(piece).is_err() {
            return;
        }
        let mut plaintext = Vec::new();
        session.read_into(&mut plaintext);
    }
});
