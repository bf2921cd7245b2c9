//! The control protocol's line reader over a client sending arbitrary bytes in arbitrary
//! pieces: never a panic, every line bounded by the protocol's limit.
#![no_main]

use std::io::Read;
use std::time::Duration;

use engine::control::lines::{Line, LineReader, TimedRead};
use libfuzzer_sys::fuzz_target;

/// The client: `data` in pieces whose sizes the first bytes choose.
struct Client<'a> {
    data: &'a [u8],
    sizes: &'a [u8],
}

impl Read for Client<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let (&size, rest) = self.sizes.split_first().unwrap_or((&255, &[]));
        self.sizes = rest;
        let n = usize::from(size).max(1).min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

impl TimedRead for Client<'_> {
    fn set_timeout(&mut self, _: Duration) -> std::io::Result<()> {
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    let split = data
        .first()
        .map_or(0, |&b| usize::from(b) % 16)
        .min(data.len());
    let (sizes, data) = data.split_at(split);
    let mut client = Client { data, sizes };
    let mut reader = LineReader::default();
    for _ in 0..10_000 {
        match reader.next(&mut client) {
            Line::Text(line) => assert!(line.len() <= ctl::proto::MAX_LINE + 4096),
            Line::NotUtf8 => {}
            Line::Closed | Line::TooLong | Line::Unfinished => break,
        }
    }
});
