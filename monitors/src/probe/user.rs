//! USER: a script run as `script <service IP> <port> <-scriptArgs…>`; exit status 0 within
//! the response timeout passes. The driver runs the command and kills an overdue script.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::{Failure, Outcome};

#[derive(Debug)]
pub struct UserProbe {
    script: PathBuf,
    args: Vec<String>,
    started: u64,
}

impl UserProbe {
    pub fn new(script: &std::path::Path, args: &[String], now: u64) -> Self {
        Self {
            script: script.to_owned(),
            args: args.to_vec(),
            started: now,
        }
    }

    /// The command to run for the service at `addr:port` (silent: no terminal, no output).
    pub fn command(&self, addr: Ipv4Addr, port: u16) -> Command {
        let mut c = Command::new(&self.script);
        c.arg(addr.to_string())
            .arg(port.to_string())
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    }

    /// The script exited (`success`: status 0).
    pub fn on_exit(&self, success: bool, now: u64) -> Outcome {
        if success {
            Outcome::passed(self.started, now)
        } else {
            Outcome::Failed(Failure::ScriptFailed)
        }
    }
}
