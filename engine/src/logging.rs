//! The daemon's log: [`log`]'s macros, one line per event on stderr, with a level and a
//! target (`config`, `service`, `resolver`, `vserver`, `persistence`, `drops`, `steering`,
//! `xdp`, `worker`, `monitor`, `control`, `metrics`, `summary`). No line is written per packet.
//!
//! On a terminal or a pipe a line reads `fulcrumd: <message>` (with `<LEVEL> <target>:` for
//! warnings, errors and debug output). Under systemd, where stderr is the journal
//! (`$JOURNAL_STREAM` is set), each line starts with its syslog priority instead (`<3>` error
//! … `<7>` debug, sd-daemon(3)), so `journalctl -p warning -u fulcrumd` filters by level; the
//! unit's `SyslogIdentifier=` names the lines.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::Mutex;

use log::{Level, LevelFilter, Log, Metadata, Record};

/// Events `show ns events` lists: the newest this many.
pub const EVENTS_KEPT: usize = 256;

/// One logged event, as `show ns events` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Seconds since 1970 (UTC).
    pub unix_s: u64,
    pub level: Level,
    pub target: String,
    pub message: String,
}

struct Logger {
    journal: bool,
    recent: Mutex<VecDeque<Event>>,
}

static LOGGER: std::sync::OnceLock<Logger> = std::sync::OnceLock::new();

/// The newest events (info and more severe), oldest first; empty until [`init`].
pub fn recent() -> Vec<Event> {
    LOGGER.get().map_or_else(Vec::new, |l| {
        l.recent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    })
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

impl Logger {
    /// Keeps an event for `show ns events`, dropping the oldest beyond [`EVENTS_KEPT`].
    fn keep(&self, record: &Record<'_>) {
        let mut recent = self
            .recent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if recent.len() == EVENTS_KEPT {
            recent.pop_front();
        }
        recent.push_back(Event {
            unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            level: record.level(),
            target: record.target().to_owned(),
            message: record.args().to_string(),
        });
    }
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
            if record.level() <= Level::Info {
                self.keep(record);
            }
        }
    }

    fn flush(&self) {
        let _ = std::io::stderr().flush();
    }
}

/// Installs the logger at `level` (once; later calls only change the level).
pub fn init(level: LevelFilter) {
    let journal = std::env::var_os("JOURNAL_STREAM").is_some();
    let logger = LOGGER.get_or_init(|| Logger {
        journal,
        recent: Mutex::new(VecDeque::with_capacity(EVENTS_KEPT)),
    });
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

    #[test]
    fn the_newest_events_are_kept_for_show_ns_events() {
        init(LevelFilter::Info);
        for i in 0..EVENTS_KEPT + 3 {
            log::info!(target: "config", "event {i}");
        }
        log::debug!(target: "config", "not an event");
        let kept = recent();
        assert!(kept.len() <= EVENTS_KEPT, "{}", kept.len());
        assert!(kept.iter().all(|e| e.message != "not an event"));
        // The newest of ours, in order, the oldest dropped. (Other tests of this binary log
        // through the same logger at the same time: a few of theirs may sit among ours.)
        let ours: Vec<usize> = kept
            .iter()
            .filter_map(|e| e.message.strip_prefix("event ")?.parse().ok())
            .collect();
        let newest = EVENTS_KEPT + 2;
        let expected: Vec<usize> = (newest + 1 - ours.len()..=newest).collect();
        assert_eq!(ours, expected);
        assert!(ours.len() >= EVENTS_KEPT - 32, "{}", ours.len());
    }
}
