//! The control protocol between `fulcrumctl` and `fulcrumd`, over a Unix stream socket.
//!
//! A request is one line: a command of the language. The reply is zero or more output lines,
//! then exactly one final line: ` Done` on success, or `ERROR: …`. Several requests may follow
//! each other on one connection.

use std::io::{self, BufRead, Write};

/// The final line of a successful reply (NetScaler prints it with a leading space).
pub const DONE: &str = " Done";
/// Longest request line the daemon reads.
pub const MAX_LINE: usize = 64 * 1024;
/// Where `fulcrumd` listens unless told otherwise.
pub const DEFAULT_SOCKET: &str = "/run/fulcrum/ctl.sock";

/// Whether a reply line ends the reply.
pub fn is_final(line: &str) -> bool {
    line == DONE || line.starts_with("ERROR:")
}

/// Sends one command and collects its reply; the last element is the final line.
pub fn request(
    reader: &mut impl BufRead,
    writer: &mut impl Write,
    command: &str,
) -> io::Result<Vec<String>> {
    writeln!(writer, "{}", command.replace(['\n', '\r'], " "))?;
    writer.flush()?;
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "fulcrumd closed the connection",
            ));
        }
        let line = line.trim_end_matches(['\n', '\r']).to_owned();
        let done = is_final(&line);
        lines.push(line);
        if done {
            return Ok(lines);
        }
    }
}
