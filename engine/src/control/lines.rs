//! Reading request lines from a control client that may misbehave: a line longer than
//! [`MAX_LINE`], a line that never ends, bytes that are not UTF-8. Each gets a clear
//! `ERROR:`; the daemon's memory per client stays bounded by the line limit.

use std::io::Read;
use std::time::{Duration, Instant};

use ctl::proto::MAX_LINE;

/// How long a client may stay silent between commands.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a line may take to arrive once its first byte has.
pub const LINE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the next read gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A whole line, without its end.
    Text(String),
    /// A line that is not UTF-8 (answered with an error; the connection goes on).
    NotUtf8,
    /// The client left, or stayed silent past [`IDLE_TIMEOUT`].
    Closed,
    /// Longer than [`MAX_LINE`] (the connection then closes: the rest cannot be read as
    /// commands).
    TooLong,
    /// Started but not finished within [`LINE_TIMEOUT`].
    Unfinished,
}

/// A stream whose read timeout can be set: the socket, or a test's stand-in.
pub trait TimedRead: Read {
    fn set_timeout(&mut self, timeout: Duration) -> std::io::Result<()>;
}

impl TimedRead for std::os::unix::net::UnixStream {
    fn set_timeout(&mut self, timeout: Duration) -> std::io::Result<()> {
        self.set_read_timeout(Some(timeout.max(Duration::from_millis(1))))
    }
}

/// Splits a client's bytes into lines, with the bytes after a line kept for the next.
#[derive(Debug, Default)]
pub struct LineReader {
    buf: Vec<u8>,
}

impl LineReader {
    pub fn next(&mut self, stream: &mut impl TimedRead) -> Line {
        let mut started: Option<Instant> = (!self.buf.is_empty()).then(Instant::now);
        loop {
            if let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
                let rest = self.buf.split_off(end + 1);
                let mut line = std::mem::replace(&mut self.buf, rest);
                line.truncate(end);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return match String::from_utf8(line) {
                    Ok(text) => Line::Text(text),
                    Err(_) => Line::NotUtf8,
                };
            }
            if self.buf.len() > MAX_LINE {
                return Line::TooLong;
            }
            let timeout = match started {
                None => IDLE_TIMEOUT,
                Some(t) => match LINE_TIMEOUT.checked_sub(t.elapsed()) {
                    Some(left) => left,
                    None => return Line::Unfinished,
                },
            };
            if stream.set_timeout(timeout).is_err() {
                return Line::Closed;
            }
            let mut chunk = [0u8; 4096];
            match stream.read(&mut chunk) {
                Ok(0) => return Line::Closed,
                Ok(n) => {
                    started.get_or_insert_with(Instant::now);
                    self.buf.extend_from_slice(&chunk[..n]);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) if started.is_some() => return Line::Unfinished,
                Err(_) => return Line::Closed,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Chunks handed out one per read; an empty chunk is a timeout.
    struct Script(Vec<Vec<u8>>);

    impl Read for Script {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            if self.0.is_empty() {
                return Ok(0);
            }
            let chunk = self.0.remove(0);
            if chunk.is_empty() {
                return Err(std::io::ErrorKind::WouldBlock.into());
            }
            out[..chunk.len()].copy_from_slice(&chunk);
            Ok(chunk.len())
        }
    }

    impl TimedRead for Script {
        fn set_timeout(&mut self, _: Duration) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn lines_bad_bytes_and_unfinished_lines() {
        let mut s = Script(vec![
            b"show lb vserver\r\nsta".to_vec(),
            b"t ns\n\xff\xfe\n".to_vec(),
            b"half a line".to_vec(),
            Vec::new(),
        ]);
        let mut r = LineReader::default();
        assert_eq!(r.next(&mut s), Line::Text("show lb vserver".into()));
        assert_eq!(r.next(&mut s), Line::Text("stat ns".into()));
        assert_eq!(r.next(&mut s), Line::NotUtf8);
        assert_eq!(r.next(&mut s), Line::Unfinished);
        let mut idle = Script(vec![Vec::new()]);
        assert_eq!(LineReader::default().next(&mut idle), Line::Closed);
        let mut long = Script(vec![vec![b'a'; 4096]; MAX_LINE / 4096 + 2]);
        assert_eq!(LineReader::default().next(&mut long), Line::TooLong);
    }
}
