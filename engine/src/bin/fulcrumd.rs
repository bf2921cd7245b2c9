//! `fulcrumd`: the Fulcrum daemon.
//!
//! ```text
//! fulcrumd --profile hw-profiles/lab-veth.toml --config ns.conf [--socket PATH]
//! fulcrumd --check-config ns.conf [--skip-unsupported]
//! fulcrumd replay --config ns.conf --pcap in.pcap --out out.pcap
//! fulcrumd --profile hw-profiles/lab-veth.toml l2fwd --address 198.18.0.100
//! ```
//!
//! Running, it stops on SIGINT/SIGTERM (detaching its XDP programs and printing what it
//! carried) and replays its `--config` file on SIGHUP: a file that loads becomes the next
//! configuration generation at once, one that does not is refused and the running one stays.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use ctl::conf::Unsupported;
use engine::cli::{Cli, Mode};
use engine::profile::HwProfile;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `--check-config`: every failing line with its number, or a one-line summary.
fn check_config(path: &PathBuf, unsupported: Unsupported) -> ExitCode {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{}: ERROR: {e}", path.display());
            return ExitCode::FAILURE;
        }
    };
    let replayed = ctl::conf::replay(&text, unsupported);
    let (config, errors) = (replayed.config, replayed.errors);
    for e in &replayed.skipped {
        eprintln!(
            "{}:{}: skipped (unsupported): {}",
            path.display(),
            e.line,
            e.error
        );
    }
    for e in &errors {
        eprintln!("{}:{}: {}", path.display(), e.line, e.error);
    }
    // What the daemon would refuse although the language accepts it.
    let snips = config
        .ns_ips
        .values()
        .filter(|ip| ip.settings.kind == ctl::conf::IpType::Snip)
        .count();
    if snips > monitors::MAX_ADDRESSES {
        eprintln!(
            "{}: ERROR: More SNIPs than the monitor core holds ({}): {snips}",
            path.display(),
            monitors::MAX_ADDRESSES
        );
        return ExitCode::FAILURE;
    }
    if errors.is_empty() {
        println!("{}: OK: {}", path.display(), config.summary());
        ExitCode::SUCCESS
    } else {
        eprintln!("{}: {} error(s)", path.display(), errors.len());
        ExitCode::FAILURE
    }
}

/// `replay`: the worker over a pcap (the in-memory port).
fn replay(config: &Path, pcap: &Path, out: &Path) -> ExitCode {
    let config = match ctl::conf::load(config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let input = match std::fs::File::open(pcap) {
        Ok(f) => std::io::BufReader::new(f),
        Err(e) => {
            eprintln!("fulcrumd: {}: {e}", pcap.display());
            return ExitCode::FAILURE;
        }
    };
    let output = match std::fs::File::create(out) {
        Ok(f) => std::io::BufWriter::new(f),
        Err(e) => {
            eprintln!("fulcrumd: {}: {e}", out.display());
            return ExitCode::FAILURE;
        }
    };
    match engine::replay::replay(&config, engine::replay::DEFAULT_MAC, input, output) {
        Ok(report) => {
            println!("{report}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("fulcrumd: replay: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The hardware profile, or the exit code after saying why it does not load.
fn load_profile(path: &Path) -> Result<HwProfile, ExitCode> {
    HwProfile::load(path).map_err(|e| {
        log::error!(target: "config", "{e}");
        ExitCode::FAILURE
    })
}

/// `l2fwd`: the I/O floor on the profile's first port.
fn l2fwd(profile: Option<&Path>, address: std::net::Ipv4Addr) -> ExitCode {
    let Some(profile) = profile else {
        eprintln!("fulcrumd: l2fwd needs --profile FILE");
        return ExitCode::from(2);
    };
    let profile = match load_profile(profile) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(e) = signal_hook::flag::register(signal, Arc::clone(&stop)) {
            eprintln!("fulcrumd: cannot handle signal {signal}: {e}");
            return ExitCode::FAILURE;
        }
    }
    match engine::l2fwd::run(&profile, address, &stop) {
        Ok(forwarded) => {
            println!("{forwarded}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("fulcrumd: l2fwd: {e}");
            ExitCode::FAILURE
        }
    }
}

fn unsupported(cli: &Cli) -> Unsupported {
    if cli.skip_unsupported {
        Unsupported::Skip
    } else {
        Unsupported::Fail
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    engine::logging::init(cli.log_level);
    if let Some(path) = &cli.check_config {
        return check_config(path, unsupported(&cli));
    }
    if let Some(Mode::Replay { config, pcap, out }) = &cli.command {
        return replay(config, pcap, out);
    }
    if let Some(Mode::L2fwd { address }) = &cli.command {
        return l2fwd(cli.profile.as_deref(), *address);
    }
    let (Some(profile), Some(config)) = (&cli.profile, &cli.config) else {
        eprintln!(
            "fulcrumd: give --profile FILE --config FILE, or --check-config FILE (see --help)"
        );
        return ExitCode::from(2);
    };
    let profile = match load_profile(profile) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let signals = engine::daemon::Signals::default();
    for (signal, flag) in [
        (signal_hook::consts::SIGINT, &signals.stop),
        (signal_hook::consts::SIGTERM, &signals.stop),
        (signal_hook::consts::SIGHUP, &signals.reload),
    ] {
        if let Err(e) = signal_hook::flag::register(signal, Arc::clone(flag)) {
            log::error!(target: "control", "cannot handle signal {signal}: {e}");
            return ExitCode::FAILURE;
        }
    }
    let options = engine::daemon::RunOptions {
        config: config.clone(),
        socket: cli.socket.clone(),
        metrics: cli.metrics,
        admin_group: cli.admin_group.clone(),
        unsupported: unsupported(&cli),
        nitro: nitro_listens(&cli, config),
    };
    match engine::daemon::run(&profile, &options, signals) {
        Ok(summary) => {
            log::info!(target: "summary", "stopped");
            print!("{summary}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            log::error!(target: "control", "{e}");
            ExitCode::FAILURE
        }
    }
}

/// `--nitro` and `--nitro-tls` as the listeners to open.
fn nitro_listens(cli: &engine::cli::Cli, config: &std::path::Path) -> Vec<nitro::http::Listen> {
    let mut out = Vec::new();
    if let Some(addr) = cli.nitro {
        out.push(nitro::http::Listen { addr, tls: None });
    }
    if let Some(addr) = cli.nitro_tls {
        let tls = match (&cli.nitro_cert, &cli.nitro_key) {
            (Some(cert), Some(key)) => nitro::http::TlsIdentity::Files {
                cert: cert.clone(),
                key: key.clone(),
            },
            _ => nitro::http::TlsIdentity::SelfSigned {
                dir: config
                    .parent()
                    .filter(|d| !d.as_os_str().is_empty())
                    .unwrap_or(std::path::Path::new("."))
                    .to_path_buf(),
            },
        };
        out.push(nitro::http::Listen {
            addr,
            tls: Some(tls),
        });
    }
    out
}
