//! `fulcrumctl`: administers `fulcrumd` with NetScaler commands over its control socket.
//!
//! ```text
//! fulcrumctl [--socket PATH] <command…>     one command; exit 0 on Done, 1 on ERROR
//! fulcrumctl [--socket PATH] -f cmds.conf   a batch; stops at the first error and names its line
//! fulcrumctl [--socket PATH]                interactive shell: history, help, completion
//! ```
//!
//! Commands are checked against the grammar before anything is sent, so a typo gets the same
//! `ERROR: …` locally; `help` is answered locally from the command table.

use std::io::{BufRead, BufReader, IsTerminal};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use ctl::cli::Cli;
use ctl::grammar::{complete, help, parse_line};
use ctl::proto::{DONE, FAILED, MAX_BATCH_BYTES, MAX_BATCH_LINES, request, request_batch};
use rustyline::Helper;
use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;

struct Session {
    socket: PathBuf,
    conn: Option<(BufReader<UnixStream>, UnixStream)>,
}

impl Session {
    fn connect(&mut self) -> Result<&mut (BufReader<UnixStream>, UnixStream), String> {
        if self.conn.is_none() {
            let stream = UnixStream::connect(&self.socket).map_err(|e| {
                format!(
                    "ERROR: Cannot reach fulcrumd at {} ({e})",
                    self.socket.display()
                )
            })?;
            let writer = stream.try_clone().map_err(|e| format!("ERROR: {e}"))?;
            self.conn = Some((BufReader::new(stream), writer));
        }
        self.conn
            .as_mut()
            .ok_or_else(|| "ERROR: not connected".to_owned())
    }

    /// Sends configuration lines (with their line numbers in the file) as one batch; the
    /// failing line's number and error otherwise.
    fn run_batch(&mut self, lines: &[(usize, &str)]) -> Result<(), (usize, String)> {
        let Some(&(first, _)) = lines.first() else {
            return Ok(());
        };
        let texts: Vec<&str> = lines.iter().map(|(_, l)| *l).collect();
        let (reader, writer) = self.connect().map_err(|e| (first, e))?;
        let reply = request_batch(reader, writer, &texts).map_err(|e| {
            self.conn = None;
            (first, format!("ERROR: {e}"))
        })?;
        let failed = reply
            .iter()
            .find_map(|l| l.strip_prefix(FAILED)?.parse::<usize>().ok());
        match reply.last() {
            Some(l) if l == DONE => Ok(()),
            last => {
                let at = failed
                    .and_then(|k| lines.get(k.checked_sub(1)?))
                    .map_or(first, |(i, _)| *i);
                Err((at, last.cloned().unwrap_or_default()))
            }
        }
    }

    /// Runs one line; prints the reply; Ok(true) when it ended in ` Done`.
    fn run(&mut self, line: &str) -> Result<bool, String> {
        let cmds = parse_line(line).map_err(|e| e.to_string())?;
        match cmds.first() {
            None => return Ok(true),
            Some(ctl::Command::Help { topic }) => {
                print!("{}", help(topic.as_deref()));
                return Ok(true);
            }
            Some(_) => {}
        }
        let (reader, writer) = self.connect()?;
        let reply = request(reader, writer, line).map_err(|e| {
            self.conn = None;
            format!("ERROR: {e}")
        })?;
        let ok = reply.last().is_some_and(|l| l == DONE);
        for l in &reply {
            if l.starts_with("ERROR:") {
                eprintln!("{l}")
            } else {
                println!("{l}")
            }
        }
        Ok(ok)
    }
}

/// Shell completion from the command table.
struct Completion;

impl Helper for Completion {}
impl Highlighter for Completion {}
impl Validator for Completion {}
impl Hinter for Completion {
    type Hint = String;
}

impl Completer for Completion {
    type Candidate = Pair;
    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let head = &line[..pos];
        let start = head.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        let words = complete(head)
            .into_iter()
            .map(|w| Pair {
                display: w.clone(),
                replacement: w,
            })
            .collect();
        Ok((start, words))
    }
}

fn batch(session: &mut Session, file: &Path) -> ExitCode {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("ERROR: {}: {e}", file.display());
            return ExitCode::FAILURE;
        }
    };
    // Consecutive configuration lines go as batches (one generation each, so a file of
    // 100,000 lines does not publish 100,000); queries and help on their own, in order.
    let mut pending: Vec<(usize, &str)> = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let stop = |at: usize, e: &str| {
        eprintln!("{}:{}: {e}", file.display(), at + 1);
        ExitCode::FAILURE
    };
    for (i, line) in lines.iter().enumerate() {
        let config_only = match parse_line(line) {
            Ok(cmds) => !cmds.is_empty() && cmds.iter().all(ctl::Command::changes_config),
            Err(e) => {
                if let Err((at, e)) = session.run_batch(&pending) {
                    return stop(at, &e);
                }
                return stop(i, &e.to_string());
            }
        };
        if config_only {
            pending.push((i, line));
            let bytes: usize = pending.iter().map(|(_, l)| l.len() + 1).sum();
            if pending.len() < MAX_BATCH_LINES && bytes < MAX_BATCH_BYTES / 2 {
                continue;
            }
        }
        if let Err((at, e)) = session.run_batch(&pending) {
            return stop(at, &e);
        }
        pending.clear();
        if !config_only {
            match session.run(line) {
                Ok(true) => {}
                Ok(false) => {
                    eprintln!("{}:{}: stopped at this line", file.display(), i + 1);
                    return ExitCode::FAILURE;
                }
                Err(e) => return stop(i, &e),
            }
        }
    }
    if let Err((at, e)) = session.run_batch(&pending) {
        return stop(at, &e);
    }
    ExitCode::SUCCESS
}

fn shell(session: &mut Session) -> ExitCode {
    if !std::io::stdin().is_terminal() {
        // Piped input: plain lines, same rules as a batch but going on after errors.
        let mut failed = false;
        for line in std::io::stdin().lock().lines().map_while(Result::ok) {
            match session.run(&line) {
                Ok(true) => {}
                Ok(false) => failed = true,
                Err(e) => {
                    eprintln!("{e}");
                    failed = true;
                }
            }
        }
        return if failed {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        };
    }
    let Ok(mut editor) = rustyline::Editor::<Completion, rustyline::history::DefaultHistory>::new()
    else {
        eprintln!("ERROR: cannot open the terminal");
        return ExitCode::FAILURE;
    };
    editor.set_helper(Some(Completion));
    let history = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".fulcrumctl_history"));
    if let Some(h) = &history {
        let _ = editor.load_history(h);
    }
    loop {
        match editor.readline("> ") {
            Ok(line) => {
                let line = line.trim();
                if line == "exit" || line == "quit" {
                    break;
                }
                if !line.is_empty() {
                    let _ = editor.add_history_entry(line);
                }
                if let Err(e) = session.run(line) {
                    eprintln!("{e}");
                }
            }
            Err(ReadlineError::Interrupted) => continue,
            Err(_) => break,
        }
    }
    if let Some(h) = &history {
        let _ = editor.save_history(h);
    }
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(line) = &cli.complete {
        for word in complete(line) {
            println!("{word}");
        }
        return ExitCode::SUCCESS;
    }
    let mut session = Session {
        socket: cli.socket.clone(),
        conn: None,
    };
    if let Some(file) = &cli.file {
        return batch(&mut session, file);
    }
    if cli.command.is_empty() {
        return shell(&mut session);
    }
    let line = cli
        .command
        .iter()
        .map(|w| {
            if w.starts_with('-') {
                return w.clone();
            }
            let mut q = String::new();
            ctl::lex::quote(w, &mut q);
            q
        })
        .collect::<Vec<_>>()
        .join(" ");
    match session.run(&line) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
