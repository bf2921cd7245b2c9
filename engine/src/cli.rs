//! `fulcrumd`'s flags, as clap declares them: the binary parses them, the man page and the
//! shell completions are generated from them (`packaging/docgen`).

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "fulcrumd", version = ctl::VERSION, about = "Fulcrum L4 load-balancing engine")]
pub struct Cli {
    /// Validate a configuration file offline and exit.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["profile", "config"])]
    pub check_config: Option<PathBuf>,
    /// Hardware profile (hw-profiles/*.toml).
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// ns.conf to replay at start; `save ns config` writes back to it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Control socket.
    #[arg(long, default_value = ctl::proto::DEFAULT_SOCKET)]
    pub socket: PathBuf,
    /// Serve the counters for Prometheus (OpenMetrics text) on ADDR:PORT.
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<std::net::SocketAddr>,
    /// Serve NITRO, NetScaler's REST API, over HTTP on ADDR:PORT (the management address,
    /// on the kernel's stack; users come from `add system user`).
    #[arg(long, value_name = "ADDR:PORT")]
    pub nitro: Option<std::net::SocketAddr>,
    /// Serve NITRO over HTTPS on ADDR:PORT; without --nitro-cert/--nitro-key a self-signed
    /// certificate is made at the first start and kept beside the configuration.
    #[arg(long, value_name = "ADDR:PORT")]
    pub nitro_tls: Option<std::net::SocketAddr>,
    /// Certificate chain (PEM) of --nitro-tls.
    #[arg(long, value_name = "FILE", requires = "nitro_key")]
    pub nitro_cert: Option<PathBuf>,
    /// Private key (PEM) of --nitro-tls.
    #[arg(long, value_name = "FILE", requires = "nitro_cert")]
    pub nitro_key: Option<PathBuf>,
    /// Members of this group may use the control socket (mode 0660); by default only root
    /// and the daemon's user may (mode 0600).
    #[arg(long, value_name = "GROUP")]
    pub admin_group: Option<String>,
    /// Report and skip the lines of objects and features Fulcrum does not have (SSL, content
    /// switching, policies, ...) instead of refusing the file; `save ns config` keeps them.
    #[arg(long)]
    pub skip_unsupported: bool,
    /// The least severe events logged (on stderr; under systemd, in the journal with their
    /// priority).
    #[arg(long, value_name = "LEVEL", default_value = "info")]
    pub log_level: log::LevelFilter,
    #[command(subcommand)]
    pub command: Option<Mode>,
}

#[derive(Subcommand, Debug)]
pub enum Mode {
    /// Run the workers over frames from a pcap instead of AF_XDP.
    Replay {
        #[arg(long)]
        config: PathBuf,
        #[arg(long)]
        pcap: PathBuf,
        #[arg(long)]
        out: PathBuf,
    },
    /// The I/O floor: bounce frames to ADDRESS back out of the profile's first port (queue
    /// 0) with their MACs swapped, through the same AF_XDP layer, until SIGINT/SIGTERM.
    L2fwd {
        #[arg(long)]
        address: std::net::Ipv4Addr,
    },
}
