//! Public NetScaler configurations (`tests/corpus/`, origins in `SOURCES.md`) replayed the
//! way an operator would bring them: every line about an object Fulcrum has must be taken,
//! or refused naming a feature Fulcrum lacks on purpose; files saved in dependency order load
//! with `--skip-unsupported`.

use std::path::{Path, PathBuf};

use ctl::ErrorKind;
use ctl::conf::{Unsupported, replay};
use ctl::grammar::parse_line;

/// The objects of this engine, as the command language spells them.
const IN_SCOPE: &[&[&str]] = &[
    &["server"],
    &["service"],
    &["serviceGroup"],
    &["lb", "vserver"],
    &["lb", "monitor"],
    &["lb", "parameter"],
    &["ns", "ip"],
    &["route"],
    &["dns", "nameServer"],
];

/// In-scope lines still refused: the next steps of the ns.conf issue. Each must still fail
/// (so this list shrinks as they land) and nothing else may.
const KNOWN_GAPS: &[&str] = &[];

/// Synthetic lines of the corpus that a NetScaler refuses too, and why: they must be
/// refused here as well.
const NOT_NETSCALER: &[(&str, &str)] = &[(
    "set lb vserver lb_web_https -spilloverMethod",
    "no such option: NetScaler's spillover options are -soMethod and -soThreshold",
)];

/// Files written in dependency order (a saved ns.conf, or scripts meant to be pasted).
const ORDERED: &[&str] = &[
    "flipper-t1-saved-ns13.1.ns.conf",
    "flipper-persistence.ns.conf",
    "flipper-spillover.ns.conf",
    "snippets.ns.conf",
];

fn corpus() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".ns.conf"))
        .collect();
    files.sort();
    files
}

fn in_scope(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    let verb_ok = words.first().is_some_and(|v| {
        [
            "add", "rm", "set", "unset", "bind", "unbind", "enable", "disable",
        ]
        .iter()
        .any(|k| k.eq_ignore_ascii_case(v))
    });
    verb_ok
        && IN_SCOPE.iter().any(|obj| {
            obj.len() < words.len()
                && obj
                    .iter()
                    .zip(&words[1..])
                    .all(|(a, b)| a.eq_ignore_ascii_case(b))
                // `ns ip6` is not `ns ip`.
                && !(obj == &["ns", "ip"] && words[2].eq_ignore_ascii_case("ip6"))
        })
}

fn is_gap(line: &str) -> bool {
    KNOWN_GAPS.iter().any(|g| line.starts_with(g))
}

#[test]
fn every_file_has_an_origin() {
    let sources = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/SOURCES.md"),
    )
    .unwrap();
    for f in corpus() {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            sources.contains(&name),
            "{name} has no origin in SOURCES.md"
        );
    }
}

#[test]
fn in_scope_lines_are_taken_or_refused_by_name() {
    let (mut taken, mut refused, mut gaps) = (0, 0, 0);
    for f in corpus() {
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if !in_scope(line) {
                continue;
            }
            let at = format!("{}:{}: {line}", f.display(), i + 1);
            if let Some((_, why)) = NOT_NETSCALER.iter().find(|(l, _)| line.starts_with(l)) {
                assert!(parse_line(line).is_err(), "{at}: taken, though {why}");
                continue;
            }
            match parse_line(line) {
                Ok(_) if is_gap(line) => {
                    panic!("{at}: now parses: take it off KNOWN_GAPS if it also applies")
                }
                Ok(_) => taken += 1,
                Err(e) if e.kind == ErrorKind::NotSupported => {
                    let msg = e.to_string();
                    assert!(
                        msg.contains("Fulcrum") || msg.contains("not implemented"),
                        "{at}: a refusal must say what is missing: {msg}"
                    );
                    refused += 1;
                }
                Err(_) if is_gap(line) => gaps += 1,
                Err(e) => panic!("{at}: refused: {e}"),
            }
        }
    }
    assert!(taken > 100, "only {taken} in-scope lines taken");
    assert!(refused > 0, "refused {refused}");
    // Every listed gap is still met in the corpus (a gap nobody has is not a gap).
    assert!(gaps >= KNOWN_GAPS.len(), "gaps {gaps} of {KNOWN_GAPS:?}");
    println!("in-scope lines: {taken} taken, {refused} refused by name, {gaps} known gaps");
}

#[test]
fn ordered_files_load_with_unsupported_lines_skipped() {
    for name in ORDERED {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/corpus")
            .join(name);
        let text = std::fs::read_to_string(&path).unwrap();
        let strict = replay(&text, Unsupported::Fail);
        let r = replay(&text, Unsupported::Skip);
        let lines: Vec<&str> = text.lines().collect();
        for e in &r.errors {
            let line = lines[e.line - 1];
            assert!(is_gap(line), "{name}:{}: {} — {line}", e.line, e.error);
        }
        if *name == "flipper-t1-saved-ns13.1.ns.conf" {
            assert!(r.errors.is_empty(), "{:?}", r.errors);
            assert!(
                !strict.errors.is_empty(),
                "the saved file has unsupported lines"
            );
            // What it balances survives the skipped SSL, CS, cache and policy lines.
            assert!(r.config.vservers.contains_key("app2_http_vs"));
            assert!(r.config.service_groups["app1_http_sg"].members.len() == 2);
            assert_eq!(r.config.routes.len(), 1);
            assert!(r.skipped.len() > 30, "{}", r.skipped.len());
        }
    }
}

#[test]
fn a_byte_order_mark_on_the_first_line_is_not_part_of_the_command() {
    let r = replay("\u{feff}add server s1 198.18.0.10\n", Unsupported::Fail);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert!(r.config.servers.contains_key("s1"));
}
