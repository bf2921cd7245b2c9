//! The probes, one sans-IO state machine per monitor type. A probe reads no clock and owns
//! no socket: the driver hands it `now` and what arrived (a [`Connection`] for the TCP
//! family, a datagram, an echo reply, a script's exit) and it answers with the bytes to send
//! and, once it knows, an [`Outcome`]. Timeouts are the driver's: it fails a probe whose
//! deadline passed.
//!
//! * [`ping`] PING · [`tcp`] TCP and TCPS · [`http`] HTTP and HTTPS · [`ecv`] TCP-ECV,
//!   HTTP-ECV and HTTPS-ECV · [`ftp`] FTP · [`udp_ecv`] UDP-ECV · [`dns`] DNS ·
//!   [`load`] LOAD (SNMP) · [`user`] USER scripts.

pub mod dns;
pub mod ecv;
mod exchange;
pub mod ftp;
pub mod http;
pub mod load;
pub mod ping;
pub mod tcp;
pub mod udp_ecv;
pub mod user;

use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;

/// Most of an answer a probe keeps: enough for any status line or receive string.
pub const REPLY_LIMIT: usize = 64 * 1024;

/// HTTP status codes a probe accepts (`-respCode 200 301-302`), as inclusive ranges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusCodes(pub Vec<(u16, u16)>);

impl StatusCodes {
    pub fn contains(&self, code: u16) -> bool {
        self.0.iter().any(|&(lo, hi)| (lo..=hi).contains(&code))
    }
}

impl Default for StatusCodes {
    /// NetScaler's default: 200.
    fn default() -> Self {
        Self(vec![(200, 200)])
    }
}

/// What a probe checks: a monitor's type and the settings that type uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProbeKind {
    /// ICMP echo request → echo reply.
    Ping,
    /// Connection established (SYN+ACK received).
    Tcp,
    /// `request` sent on the connection with the `-customHeaders` lines; the status code
    /// must be in `codes`.
    Http {
        request: String,
        codes: StatusCodes,
        headers: Vec<u8>,
    },
    /// `send` written on the connection (HTTP-ECV: an HTTP request line, sent with the
    /// `-customHeaders` lines); the answer must contain `recv`.
    Ecv {
        send: Vec<u8>,
        recv: Vec<u8>,
        http: bool,
        headers: Vec<u8>,
    },
    /// `send` in one datagram; a datagram back must contain `recv`.
    UdpEcv { send: Vec<u8>, recv: Vec<u8> },
    /// A DNS query (UDP); the answer must be NOERROR with records, holding every `expect`.
    Dns {
        name: String,
        aaaa: bool,
        expect: Vec<IpAddr>,
    },
    /// USER: runs `script <service IP> <port> <args…>`; exit status 0 within the response
    /// timeout passes.
    User { script: PathBuf, args: Vec<String> },
    /// FTP: log in with `user` and `password`; the response time runs from the user name to
    /// the 230 reply.
    Ftp { user: String, password: String },
    /// LOAD: an SNMP GET of the metric table's OIDs; feeds the service's load, never its state.
    Load {
        v1: bool,
        community: String,
        /// OID, threshold, weight of each bound metric.
        metrics: Vec<(Vec<u32>, u64, u64)>,
        passive: bool,
    },
}

/// How a probe ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The check held; the response time of the exchange it measures, in microseconds.
    Passed {
        response_us: u64,
    },
    Failed(Failure),
}

impl Outcome {
    /// Passed, timed from `since` to `now` (microseconds).
    pub fn passed(since: u64, now: u64) -> Self {
        Self::Passed {
            response_us: now.saturating_sub(since),
        }
    }

    pub fn is_passed(&self) -> bool {
        matches!(self, Self::Passed { .. })
    }
}

/// Why a probe failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// No answer within the response timeout.
    Timeout,
    /// The connection was refused or reset before it was established.
    Refused,
    /// An ICMP destination unreachable for the probe's port, host or network.
    Unreachable,
    /// The peer closed before the answer was complete.
    Closed,
    /// The request could not be sent (the connection took no more bytes).
    SendFailed,
    /// An HTTP status outside `-respCode`.
    Status(u16),
    /// The answer did not contain the receive string (or was not an answer at all).
    NoMatch,
    /// An FTP reply refusing the login.
    LoginRefused(u16),
    /// A TLS alert, bad record or bad handshake signature.
    Tls,
    /// The probe could not start (no socket, no script).
    NotStarted,
    /// A USER script exited with a non-zero status.
    ScriptFailed,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Timeout => f.write_str("Probe timed out"),
            Self::Refused => f.write_str("Connection refused"),
            Self::Unreachable => f.write_str("Destination unreachable"),
            Self::Closed => f.write_str("Connection closed before the answer"),
            Self::SendFailed => f.write_str("Request could not be sent"),
            Self::Status(code) => write!(f, "Response code {code} not expected"),
            Self::NoMatch => f.write_str("Expected response not received"),
            Self::LoginRefused(code) => write!(f, "Login refused ({code})"),
            Self::Tls => f.write_str("TLS handshake or record failed"),
            Self::NotStarted => f.write_str("Probe could not be started"),
            Self::ScriptFailed => f.write_str("Script exited with an error"),
        }
    }
}

/// What a TCP-family probe sees of its connection; the driver implements it over a smoltcp
/// socket, with a TLS session for secure probes.
pub trait Connection {
    /// Established, and for a secure probe the TLS handshake complete.
    fn ready(&self) -> bool;
    /// The peer may still send.
    fn may_recv(&self) -> bool;
    /// Queues `bytes`; `false` when the connection cannot take them all.
    fn send(&mut self, bytes: &[u8]) -> bool;
    /// Appends what arrived to `buf`, keeping at most [`REPLY_LIMIT`] bytes there.
    fn recv_into(&mut self, buf: &mut Vec<u8>);
}

/// The bytes of the first complete line of `buf` (without CR LF), if there is one.
pub fn first_line(buf: &[u8]) -> Option<&[u8]> {
    let end = buf.windows(2).position(|w| w == b"\r\n")?;
    Some(&buf[..end])
}

/// Whether `haystack` holds `needle` (an empty needle never matches: NetScaler requires a
/// receive string).
pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// The escapes operators type in send/receive strings (`\r\n`, `\t`, `\\`).
pub fn unescape(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut chars = text.chars();
    let push = |out: &mut Vec<u8>, c: char| {
        let mut b = [0; 4];
        out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
    };
    while let Some(c) = chars.next() {
        if c != '\\' {
            push(&mut out, c);
            continue;
        }
        match chars.next() {
            Some('r') => out.push(b'\r'),
            Some('n') => out.push(b'\n'),
            Some('t') => out.push(b'\t'),
            Some('\\') | None => out.push(b'\\'),
            Some(other) => {
                out.push(b'\\');
                push(&mut out, other);
            }
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A connection in memory: what the peer sent, what the probe sent.
    #[derive(Debug, Default)]
    pub struct FakeConnection {
        pub ready: bool,
        pub open: bool,
        pub incoming: Vec<u8>,
        pub sent: Vec<u8>,
    }

    impl FakeConnection {
        pub fn established() -> Self {
            Self {
                ready: true,
                open: true,
                ..Self::default()
            }
        }
    }

    impl Connection for FakeConnection {
        fn ready(&self) -> bool {
            self.ready
        }
        fn may_recv(&self) -> bool {
            self.open
        }
        fn send(&mut self, bytes: &[u8]) -> bool {
            self.sent.extend_from_slice(bytes);
            true
        }
        fn recv_into(&mut self, buf: &mut Vec<u8>) {
            buf.append(&mut self.incoming);
            buf.truncate(REPLY_LIMIT);
        }
    }

    #[test]
    fn operators_escapes_become_bytes() {
        assert_eq!(unescape(r"PING\r\n"), b"PING\r\n");
        assert_eq!(unescape(r"a\tb\\c\q"), b"a\tb\\c\\q");
        assert_eq!(unescape("trailing\\"), b"trailing\\");
    }

    #[test]
    fn status_codes_are_ranges() {
        let codes = StatusCodes(vec![(200, 200), (301, 302)]);
        assert!(codes.contains(302) && codes.contains(200) && !codes.contains(303));
        assert_eq!(StatusCodes::default(), StatusCodes(vec![(200, 200)]));
    }
}
