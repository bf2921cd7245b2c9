//! # ctl — Fulcrum's command language and configuration
//!
//! Layers, each depending only on the ones above it:
//!
//! * [`error`] — NetScaler-style errors (`ERROR: <message> [<argument>, <value>]`).
//! * [`lex`] — tokens, quoting, `[a-b]` range expansion.
//! * [`value`] — typed argument values (ranges, keywords, durations with units, addresses).
//! * [`settings`](mod@settings) — option sets declared once (defaults, names, help, parse, write back).
//! * [`absent`] — the features refused on purpose, and the reason given.
//! * [`grammar`] — the command table; parsing into [`command::Command`], `help`, completion.
//! * [`conf`] — the configuration model, validation on apply, ns.conf save and replay.
//! * [`render`] — `show` and `stat` in NetScaler's layouts, and as JSON.
//! * [`proto`] — the line protocol between `fulcrumctl` and `fulcrumd`; [`cli`] —
//!   `fulcrumctl`'s flags.
#![forbid(unsafe_code)]

pub mod absent;
pub mod cli;
pub mod command;
pub mod conf;
pub mod error;
pub mod grammar;
pub mod lex;
pub mod proto;
pub mod render;
pub mod settings;
pub mod value;

pub use command::Command;

/// What `--version` and `show ns version` print: the crate version, the git commit it was
/// built from (`-modified` when the tree had changes) and the build profile.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("FULCRUM_COMMIT"),
    ", ",
    env!("FULCRUM_PROFILE"),
    " build)"
);
pub use conf::Config;
pub use error::{CliError, ErrorKind};
