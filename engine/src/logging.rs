//! The daemon's log: [`log`]'s macros, one line per event on stderr, with a level and a
//! target (`config`, `service`, `resolver`, `vserver`, `persistence`, `drops`, `steering`,
//! `xdp`, `worker`, `monitor`, `control`, `metrics`, `summary`). No line is written per packet.
//!
//! On a terminal or a pipe a line reads `fulcrumd: <message>` (with `<LEVEL> <target>:` for
//! warnings, errors and debug output). Under systemd, where stderr is the journal
//! (`$JOURNAL_STREAM` is set), each line starts with its syslog priority instead (`<3>` error
//! … `<7>` debug, sd-daemon(3)), so `journalctl -p warning -u fulcrumd` filters by level; the
//! unit's `SyslogIdentifier=` names the lines.

use std::io::Write;

use log::{Level, LevelFilter, Log, Metadata, Record};

struct Logger {
    journal: bool,
}

/// sd-daemon(3)'s priority prefix of a level.
fn priority(level: Level) -> &'static str {
    match level {
        Level::Error => "<3>",
        Level::Warn => "<4>",
        Level::Info => "<6>",
        Level::Debug | Level::Trace => "<7>",
    }
}

/// One record as the lines it is written as (a multi-line message keeps its lines; under
/// the journal each gets the priority, so none is read as a different level).
fn format(record: &Record<'_>, journal: bool) -> String {
    let text = record.args().to_string();
    let mut out = String::with_capacity(text.len() + 32);
    for line in text.lines() {
        if journal {
            out.push_str(priority(record.level()));
        } else {
            out.push_str("fulcrumd: ");
            if record.level() != Level::Info {
                out.push_str(&format!("{} {}: ", record.level(), record.target()));
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

impl Log for Logger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &Record<'_>) {
        if self.enabled(record.metadata()) {
            // One write per record, so lines of two threads do not interleave; a log that
            // cannot be written has nowhere to report it.
            let _ = std::io::stderr()
                .lock()
                .write_all(format(record, self.journal).as_bytes());
        }
    }

    fn flush(&self) {
        let _ = std::io::stderr().flush();
    }
}

/// Installs the logger at `level` (once; later calls only change the level).
pub fn init(level: LevelFilter) {
    let journal = std::env::var_os("JOURNAL_STREAM").is_some();
    static LOGGER: std::sync::OnceLock<Logger> = std::sync::OnceLock::new();
    let logger = LOGGER.get_or_init(|| Logger { journal });
    // Already set (a second init in one process): the level still applies.
    let _ = log::set_logger(logger);
    log::set_max_level(level);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(level: Level, journal: bool, text: &str) -> String {
        format(
            &Record::builder()
                .level(level)
                .target("config")
                .args(format_args!("{text}"))
                .build(),
            journal,
        )
    }

    #[test]
    fn terminal_and_journal_lines() {
        assert_eq!(
            line(Level::Info, false, "generation 2 applied"),
            "fulcrumd: generation 2 applied\n"
        );
        assert_eq!(
            line(Level::Error, false, "reload refused"),
            "fulcrumd: ERROR config: reload refused\n"
        );
        assert_eq!(line(Level::Warn, true, "a\nb"), "<4>a\n<4>b\n");
        assert_eq!(line(Level::Debug, true, "x"), "<7>x\n");
    }
}
