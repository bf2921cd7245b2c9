//! `fulcrumctl`: sends NetScaler commands to `fulcrumd` over its control socket.
//!
//! Commands are checked against the grammar before anything is sent, so a typo is reported
//! locally with the same `ERROR: …` the daemon would print.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use ctl::grammar::{help, parse_line};

const DEFAULT_SOCKET: &str = "/run/fulcrum/ctl.sock";

#[derive(Parser, Debug)]
#[command(
    name = "fulcrumctl",
    about = "Administer fulcrumd with NetScaler commands"
)]
struct Cli {
    /// Control socket of the daemon.
    #[arg(long, default_value = DEFAULT_SOCKET)]
    socket: PathBuf,
    /// Run the commands of FILE, stopping at the first error.
    #[arg(short = 'f')]
    file: Option<PathBuf>,
    /// One command, e.g. `show lb vserver`.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<String>,
}

/// Sends one line and prints the reply; true when it ended in ` Done`.
fn send(socket: &PathBuf, line: &str) -> Result<bool, String> {
    let mut stream = UnixStream::connect(socket)
        .map_err(|e| format!("ERROR: Cannot reach fulcrumd at {} ({e})", socket.display()))?;
    writeln!(stream, "{line}").map_err(|e| format!("ERROR: {e}"))?;
    let mut ok = false;
    for reply in BufReader::new(stream).lines() {
        let reply = reply.map_err(|e| format!("ERROR: {e}"))?;
        ok = reply == " Done";
        println!("{reply}");
    }
    Ok(ok)
}

fn run_line(socket: &PathBuf, line: &str) -> Result<bool, String> {
    match parse_line(line) {
        Err(e) => Err(e.to_string()),
        Ok(cmds) if cmds.is_empty() => Ok(true),
        Ok(cmds) => {
            if let Some(ctl::Command::Help { topic }) = cmds.first() {
                print!("{}", help(topic.as_deref()));
                return Ok(true);
            }
            send(socket, line)
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(file) = &cli.file {
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("ERROR: {}: {e}", file.display());
                return ExitCode::FAILURE;
            }
        };
        for (i, line) in text.lines().enumerate() {
            match run_line(&cli.socket, line) {
                Ok(true) => {}
                Ok(false) => {
                    eprintln!("{}:{}: stopped at this line", file.display(), i + 1);
                    return ExitCode::FAILURE;
                }
                Err(e) => {
                    eprintln!("{}:{}: {e}", file.display(), i + 1);
                    return ExitCode::FAILURE;
                }
            }
        }
        return ExitCode::SUCCESS;
    }
    if cli.command.is_empty() {
        eprintln!(
            "ERROR: the interactive shell needs a running fulcrumd; give a command or -f FILE"
        );
        return ExitCode::FAILURE;
    }
    let line = cli
        .command
        .iter()
        .map(|w| {
            let mut q = String::new();
            ctl::lex::quote(w, &mut q);
            if w.starts_with('-') { w.clone() } else { q }
        })
        .collect::<Vec<_>>()
        .join(" ");
    match run_line(&cli.socket, &line) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
