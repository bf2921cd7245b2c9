//! `fulcrumctl`'s flags, as clap declares them: the binary parses them, the man page and
//! the shell completions are generated from them (`packaging/docgen`).

use std::path::PathBuf;

use clap::Parser;

use crate::proto::DEFAULT_SOCKET;

#[derive(Parser, Debug)]
#[command(
    name = "fulcrumctl",
    version = crate::VERSION,
    about = "Administer fulcrumd with NetScaler commands"
)]
pub struct Cli {
    /// Control socket of the daemon.
    #[arg(long, default_value = DEFAULT_SOCKET)]
    pub socket: PathBuf,
    /// Run the commands of FILE, stopping at the first error.
    #[arg(short = 'f')]
    pub file: Option<PathBuf>,
    /// One command, e.g. `show lb vserver`.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
    /// Print the completions of a partial command line, one per line (for the shells'
    /// completion scripts).
    #[arg(long, value_name = "LINE", hide = true)]
    pub complete: Option<String>,
}
