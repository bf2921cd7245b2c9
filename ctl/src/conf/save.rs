//! ns.conf: the configuration written as commands in dependency order, written atomically
//! with rotated backups, and replayed through the same parser as a live session.

use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::Config;
use super::model::*;
use crate::error::CliError;
use crate::grammar::parse_line;
use crate::lex::quote;
use crate::settings::Settings;
use crate::value::ArgValue;

/// How many previous copies `save` keeps (ns.conf.0 is the newest).
pub const BACKUPS: usize = 5;

fn name(out: &mut String, n: &crate::value::Name) {
    out.push(' ');
    quote(n.as_str(), out);
}

fn value<T: ArgValue>(out: &mut String, v: &T) {
    out.push(' ');
    v.render(out);
}

/// The configuration as ns.conf text. `stamp` goes into the header comment.
pub fn render(config: &Config, stamp: &str) -> String {
    let mut out = format!(
        "#Fulcrum {} ns.conf\n# Last modified by `save config`, {stamp}\n",
        env!("CARGO_PKG_VERSION")
    );
    let mut line = |l: String| {
        out.push_str(&l);
        out.push('\n');
    };
    if !config.ns_modes.is_empty() {
        let mut l = "enable ns mode".to_owned();
        for m in &config.ns_modes {
            value(&mut l, m);
        }
        line(l);
    }
    if config.lb_parameter != LbParameterSettings::default() {
        let mut l = "set lb parameter".to_owned();
        config.lb_parameter.render_non_default(&mut l);
        line(l);
    }
    for u in config.system_users.values() {
        let mut l = "add system user".to_owned();
        name(&mut l, &u.name);
        l.push(' ');
        quote(u.password.as_saved(), &mut l);
        l.push_str(" -encrypted");
        u.settings.render_non_default(&mut l);
        line(l);
        for b in &u.policies {
            let mut l = "bind system user".to_owned();
            name(&mut l, &u.name);
            l.push_str(&format!(" {} {}", b.policy, b.priority));
            line(l);
        }
    }
    for ip in config.ns_ips.values() {
        let mut l = "add ns ip".to_owned();
        value(&mut l, &ip.addr);
        value(&mut l, &ip.netmask);
        ip.settings.render_non_default(&mut l);
        line(l);
    }
    for r in &config.routes {
        let mut l = "add route".to_owned();
        value(&mut l, &r.network);
        value(&mut l, &r.netmask);
        value(&mut l, &r.gateway);
        r.settings.render_non_default(&mut l);
        line(l);
    }
    for n in config.name_servers.values() {
        let mut l = "add dns nameServer".to_owned();
        value(&mut l, &n.addr);
        n.settings.render_non_default(&mut l);
        line(l);
    }
    for s in config.servers.values() {
        let mut l = "add server".to_owned();
        name(&mut l, &s.name);
        value(&mut l, &s.addr);
        s.settings.render_non_default(&mut l);
        line(l);
    }
    for t in config.metric_tables.values() {
        let mut l = "add lb metricTable".to_owned();
        name(&mut l, &t.name);
        line(l);
        for (metric, oid) in &t.metrics {
            let mut l = "bind lb metricTable".to_owned();
            name(&mut l, &t.name);
            name(&mut l, metric);
            value(&mut l, oid);
            line(l);
        }
    }
    let builtins = builtin_monitors();
    for m in config.monitors.values() {
        let mut head = String::new();
        name(&mut head, &m.name);
        value(&mut head, &m.monitor_type);
        match builtins.iter().find(|b| m.builtin && b.name == m.name) {
            Some(original) if original.settings == m.settings => {}
            Some(original) => {
                // Built-ins exist already: write only how they were changed.
                let now = m.settings.explicit();
                let cleared: Vec<_> = original
                    .settings
                    .explicit()
                    .into_iter()
                    .filter(|k| !now.contains(k))
                    .collect();
                if !cleared.is_empty() {
                    let mut l = format!("unset lb monitor{head}");
                    for k in cleared {
                        l.push_str(" -");
                        l.push_str(MonitorSettings::key_name(k));
                    }
                    line(l);
                }
                if !now.is_empty() {
                    let mut l = format!("set lb monitor{head}");
                    m.settings.render_non_default(&mut l);
                    line(l);
                }
            }
            None => {
                let mut l = format!("add lb monitor{head}");
                m.settings.render_non_default(&mut l);
                line(l);
            }
        }
        for b in &m.metrics {
            let mut l = "bind lb monitor".to_owned();
            name(&mut l, &m.name);
            l.push_str(" -metric");
            name(&mut l, &b.metric);
            l.push_str(&format!(" -metricThreshold {}", b.threshold));
            if b.weight != 1 {
                l.push_str(&format!(" -metricWeight {}", b.weight));
            }
            line(l);
        }
    }
    // Members of service groups are saved as their group.
    let own_services = || config.services.values().filter(|s| s.group.is_none());
    for s in own_services() {
        let mut l = "add service".to_owned();
        name(&mut l, &s.name);
        name(&mut l, &s.server);
        value(&mut l, &s.service_type);
        value(&mut l, &s.port);
        s.settings.render_non_default(&mut l);
        line(l);
    }
    for g in config.service_groups.values() {
        let mut l = "add serviceGroup".to_owned();
        name(&mut l, &g.name);
        value(&mut l, &g.service_type);
        g.settings.render_non_default(&mut l);
        line(l);
    }
    for v in config.vservers.values() {
        let mut l = "add lb vserver".to_owned();
        name(&mut l, &v.name);
        value(&mut l, &v.service_type);
        if let Some((ip, port)) = &v.vip {
            value(&mut l, ip);
            value(&mut l, port);
        }
        // The backup may be added after this vserver: it is named once all exist.
        VserverSettings {
            backup_vserver: None,
            ..v.settings.clone()
        }
        .render_non_default(&mut l);
        line(l);
    }
    for v in config.vservers.values() {
        if let Some(b) = &v.settings.backup_vserver {
            let mut l = "set lb vserver".to_owned();
            name(&mut l, &v.name);
            l.push_str(" -backupVServer");
            name(&mut l, b);
            line(l);
        }
    }
    for v in config.vservers.values() {
        for b in &v.bindings {
            let mut l = "bind lb vserver".to_owned();
            name(&mut l, &v.name);
            name(&mut l, &b.service);
            b.settings.render_non_default(&mut l);
            line(l);
        }
    }
    for g in config.service_groups.values() {
        for m in &g.members {
            let mut l = "bind serviceGroup".to_owned();
            name(&mut l, &g.name);
            name(&mut l, &m.server);
            value(&mut l, &m.port);
            if m.weight.get() != 1 {
                l.push_str(&format!(" -weight {}", m.weight.get()));
            }
            line(l);
            if !m.state.is_enabled() {
                let mut l = "disable serviceGroup".to_owned();
                name(&mut l, &g.name);
                name(&mut l, &m.server);
                value(&mut l, &m.port);
                line(l);
            }
        }
        for b in &g.monitors {
            let mut l = "bind serviceGroup".to_owned();
            name(&mut l, &g.name);
            l.push_str(" -monitorName");
            name(&mut l, &b.monitor);
            b.settings.render_non_default(&mut l);
            line(l);
        }
    }
    for s in own_services() {
        for b in &s.monitors {
            let mut l = "bind service".to_owned();
            name(&mut l, &s.name);
            l.push_str(" -monitorName");
            name(&mut l, &b.monitor);
            b.settings.render_non_default(&mut l);
            line(l);
        }
    }
    out
}

/// One failing line of a configuration file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    pub line: usize,
    pub error: CliError,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.error)
    }
}

/// Replays ns.conf text line by line. Every failing line is reported (with its 1-based number)
/// and skipped; the configuration holds what the other lines built.
pub fn replay_text(text: &str) -> (Config, Vec<LineError>) {
    let r = replay(text, Unsupported::Fail);
    (r.config, r.errors)
}

/// What a replay does with lines about objects or features Fulcrum does not have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unsupported {
    /// They are errors like any other.
    Fail,
    /// `--skip-unsupported`: they are reported and skipped, and so are the lines that only
    /// failed because they refer to something a skipped line would have created.
    Skip,
}

/// The outcome of [`replay`].
#[derive(Clone, Debug)]
pub struct Replayed {
    pub config: Config,
    pub errors: Vec<LineError>,
    /// Lines skipped as unsupported (only with [`Unsupported::Skip`]).
    pub skipped: Vec<LineError>,
    /// Their text, in file order, for `save ns config` to write back.
    pub skipped_lines: Vec<String>,
}

/// An unknown command (an object Fulcrum does not have) or a refused feature.
fn is_unsupported(e: &CliError) -> bool {
    matches!(
        e.kind,
        crate::error::ErrorKind::NoSuchCommand | crate::error::ErrorKind::NotSupported
    )
}

/// The names a skipped `add` line would have created: the words after the verb, up to the
/// first option (the object words and the name are among them).
fn names_created(line: &str) -> Vec<String> {
    match crate::lex::tokenize(line) {
        Ok(tokens)
            if tokens
                .first()
                .is_some_and(|t| t.text.eq_ignore_ascii_case("add")) =>
        {
            tokens
                .iter()
                .skip(1)
                .take_while(|t| !t.is_option())
                .map(|t| t.text.clone())
                .collect()
        }
        _ => Vec::new(),
    }
}

/// Replays ns.conf text; see [`Unsupported`] for what happens to unsupported lines.
pub fn replay(text: &str, unsupported: Unsupported) -> Replayed {
    let mut config = Config::default();
    let mut errors = Vec::new();
    let mut skipped = Vec::new();
    let mut skipped_lines = Vec::new();
    let mut skipped_names: std::collections::HashSet<String> = Default::default();
    // A byte-order mark, as editors on other systems write one, is not part of the first line.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for (i, line) in text.lines().enumerate() {
        let result = parse_line(line).and_then(|cmds| {
            if cmds.iter().any(|c| !c.changes_config()) {
                return Err(CliError::new(crate::error::ErrorKind::NotSupported)
                    .with_detail("Not a configuration command"));
            }
            config.apply_all(&cmds)
        });
        let Err(error) = result else { continue };
        let depends_on_skipped = error.kind == crate::error::ErrorKind::NoSuchResource
            && error
                .value
                .as_ref()
                .is_some_and(|v| skipped_names.contains(v) || crate::absent::is_internal_name(v));
        if unsupported == Unsupported::Skip && (is_unsupported(&error) || depends_on_skipped) {
            skipped_names.extend(names_created(line));
            skipped.push(LineError { line: i + 1, error });
            skipped_lines.push(line.to_owned());
        } else {
            errors.push(LineError { line: i + 1, error });
        }
    }
    Replayed {
        config,
        errors,
        skipped,
        skipped_lines,
    }
}

/// Why a file could not be loaded or saved.
#[derive(Debug)]
pub enum SaveError {
    Io {
        path: PathBuf,
        error: io::Error,
    },
    Invalid {
        path: PathBuf,
        errors: Vec<LineError>,
    },
}

impl fmt::Display for SaveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { path, error } => write!(f, "{}: {error}", path.display()),
            Self::Invalid { path, errors } => {
                for (i, e) in errors.iter().enumerate() {
                    if i > 0 {
                        writeln!(f)?;
                    }
                    write!(f, "{}:{}: {}", path.display(), e.line, e.error)?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for SaveError {}

/// Loads a configuration file; any failing line refuses the whole file, so nothing starts
/// half-configured.
pub fn load(path: &Path) -> Result<Config, SaveError> {
    load_with(path, Unsupported::Fail).map(|r| r.config)
}

/// Loads a configuration file; any failing line (other than those `unsupported` skips)
/// refuses the whole file.
pub fn load_with(path: &Path, unsupported: Unsupported) -> Result<Replayed, SaveError> {
    let text = fs::read_to_string(path).map_err(|error| SaveError::Io {
        path: path.into(),
        error,
    })?;
    let r = replay(&text, unsupported);
    if r.errors.is_empty() {
        Ok(r)
    } else {
        Err(SaveError::Invalid {
            path: path.into(),
            errors: r.errors,
        })
    }
}

fn backup(path: &Path, n: usize) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".{n}"));
    s.into()
}

/// Writes `text` to `path` atomically: a temporary file in the same directory, fsync, then
/// rename over the target. The previous file becomes `path.0`, older copies shift up to
/// `path.{BACKUPS-1}`.
pub fn save_atomic(path: &Path, text: &str) -> Result<(), SaveError> {
    let io_err = |error| SaveError::Io {
        path: path.into(),
        error,
    };
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(".tmp");
    let tmp = PathBuf::from(tmp_name);
    {
        let mut f = fs::File::create(&tmp).map_err(io_err)?;
        f.write_all(text.as_bytes()).map_err(io_err)?;
        f.sync_all().map_err(io_err)?;
    }
    if path.exists() {
        for n in (0..BACKUPS - 1).rev() {
            let from = backup(path, n);
            if from.exists() {
                fs::rename(&from, backup(path, n + 1)).map_err(io_err)?;
            }
        }
        // A hard link keeps ns.conf in place until the rename below replaces it.
        let first = backup(path, 0);
        if fs::hard_link(path, &first).is_err() {
            fs::copy(path, &first).map_err(io_err)?;
        }
    }
    fs::rename(&tmp, path).map_err(io_err)?;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err)?;
    Ok(())
}
