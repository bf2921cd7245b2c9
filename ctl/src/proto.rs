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
/// A batch: `#batch N` (a comment to the command language, so a daemon without batches runs
/// the N lines after it one by one) announces N configuration lines applied as one
/// generation; the reply is ` Done`, or `#failed K` (the K-th line, counted from 1) and its
/// `ERROR:`. Lines before K stay applied, as they would one by one.
pub const BATCH: &str = "#batch ";
/// The line of a batch's reply that names the line that failed.
pub const FAILED: &str = "#failed ";
/// Most lines and bytes in one batch (fulcrumctl sends bigger files as several).
pub const MAX_BATCH_LINES: usize = 10_000;
pub const MAX_BATCH_BYTES: usize = 8 << 20;
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
    request_reply(reader)
}

/// Sends `lines` as one batch and collects the reply (see [`BATCH`]).
pub fn request_batch(
    reader: &mut impl BufRead,
    writer: &mut impl Write,
    lines: &[&str],
) -> io::Result<Vec<String>> {
    let mut text = format!("{BATCH}{}\n", lines.len());
    for l in lines {
        text.push_str(&l.replace(['\n', '\r'], " "));
        text.push('\n');
    }
    writer.write_all(text.as_bytes())?;
    // The reply is read as one request's: the final line ends it.
    request_reply(reader)
}

fn request_reply(reader: &mut impl BufRead) -> io::Result<Vec<String>> {
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
