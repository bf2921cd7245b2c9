//! `fulcrumd --check-config` as an operator runs it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn check(path: &Path) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_fulcrumd"))
        .arg("--check-config")
        .arg(path)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

#[test]
fn every_shipped_example_is_accepted_with_a_summary() {
    let mut n = 0;
    for e in std::fs::read_dir(examples()).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "conf") {
            let (ok, out, err) = check(&path);
            assert!(ok, "{}: {err}", path.display());
            assert!(
                out.contains(": OK: ") && out.contains("vservers") && out.contains("bindings"),
                "{out}"
            );
            assert_eq!(out.lines().count(), 1);
            n += 1;
        }
    }
    assert!(n >= 3);
    let (_, out, _) = check(&examples().join("customload.conf"));
    assert!(
        out.ends_with("OK: 1 vservers, 3 services, 1 monitors, 6 bindings\n"),
        "{out}"
    );
}

/// One line per kind of bad input; each is reported with its line number, the good lines
/// around them still count, and the exit status says failure.
#[test]
fn each_kind_of_bad_input_is_reported_with_its_line() {
    let lines = [
        "add ns ip 198.18.0.2 255.255.255.0",                // 1 ok
        "add service s1 198.18.0.11 HTTP 80",                // 2 ok
        "add service s1 198.18.0.12 HTTP 80",                // 3 duplicate name
        "bind lb vserver nope s1",                           // 4 unknown name
        "add service s2 no-such-server HTTP 80",             // 5 dangling reference
        "add lb vserver vs1 HTTP 198.19.0.1 eighty",         // 6 type error
        "add lb vserver vs1 HTTP 198.19.0.1 80",             // 7 ok
        "bind lb vserver vs1 s1 -weight 101",                // 8 range
        "add lb monitor m1 HTTP -interval 2 -resptimeout 3", // 9 interval > resptimeout
        "add lb monitor m2 TCP-ECV -send hello",             // 10 TCP-ECV without recv
        "add lb monitor m3 UDP-ECV",                         // 11 UDP-ECV without recv
        "bind lb vserver vs1 s1",                            // 12 ok
        "bind lb vserver vs1 s1",                            // 13 bound twice
        "show lb vserver",                                   // 14 not a config command
    ];
    let dir = std::env::temp_dir().join(format!("fl-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.conf");
    std::fs::write(&path, lines.join("\n")).unwrap();
    let (ok, out, err) = check(&path);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(!ok);
    assert!(out.is_empty());
    let expect = [
        (3, "ERROR: Resource already exists [name, s1]"),
        (4, "ERROR: No such resource [name, nope]"),
        (5, "ERROR: No such resource [serverName, no-such-server]"),
        (6, "ERROR: Invalid argument value [port, eighty]"),
        (8, "ERROR: Argument value out of range [weight, 101]"),
        (
            9,
            "ERROR: Response timeout must be less than the interval [resptimeout, 3]",
        ),
        (
            10,
            "ERROR: TCP-ECV monitor needs both -send and -recv [recv]",
        ),
        (11, "ERROR: UDP-ECV monitor needs -recv [recv]"),
        (13, "ERROR: Resource already bound [serviceName, s1]"),
        (14, "ERROR: Not a configuration command"),
    ];
    for (line, msg) in expect {
        let want = format!("bad.conf:{line}: {msg}");
        assert!(
            err.lines().any(|l| l.ends_with(&want) || l.contains(&want)),
            "missing {want:?} in\n{err}"
        );
    }
    assert!(err.contains("10 error(s)"), "{err}");
}

#[test]
fn a_missing_file_is_an_error() {
    let (ok, _, err) = check(Path::new("/nonexistent/ns.conf"));
    assert!(!ok);
    assert!(err.contains("ERROR"), "{err}");
}

#[test]
fn more_snips_than_the_monitor_core_holds_are_reported() {
    let dir = std::env::temp_dir().join(format!("fl-check-snips-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("ns.conf");
    let lines = |n: usize| -> String {
        (0..n)
            .map(|i| format!("add ns ip 198.18.{i}.2 255.255.255.0 -type SNIP\n"))
            .collect()
    };
    std::fs::write(&conf, lines(monitors::MAX_ADDRESSES)).unwrap();
    let (ok, _, err) = check(&conf);
    assert!(ok, "{err}");
    std::fs::write(&conf, lines(monitors::MAX_ADDRESSES + 1)).unwrap();
    let (ok, _, err) = check(&conf);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(!ok);
    assert!(
        err.contains("ERROR: More SNIPs than the monitor core holds"),
        "{err}"
    );
}

/// A configuration saved by NS13.1 (SSL, content switching, caching, policies around plain
/// LB): refused as it is, loaded with `--skip-unsupported`, every skipped line reported.
#[test]
fn a_saved_netscaler_file_loads_with_its_unsupported_lines_skipped() {
    let saved = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ctl/tests/corpus/flipper-t1-saved-ns13.1.ns.conf");
    let (ok, _, _) = check(&saved);
    assert!(!ok, "the saved file has lines of objects Fulcrum lacks");
    let out = Command::new(env!("CARGO_BIN_EXE_fulcrumd"))
        .arg("--check-config")
        .arg(&saved)
        .arg("--skip-unsupported")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains(": OK: 1 vservers"), "{stdout}");
    let skipped: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("skipped (unsupported)"))
        .collect();
    assert!(skipped.len() > 30, "{stderr}");
    assert!(
        skipped
            .iter()
            .any(|l| l.contains("is an L7 feature; Fulcrum balances at L4")),
        "{stderr}"
    );
    assert!(
        skipped
            .iter()
            .any(|l| l.contains("No such command [add cs]")),
        "{stderr}"
    );
}

#[test]
fn version_names_the_crate_version_commit_and_build() {
    let out = Command::new(env!("CARGO_BIN_EXE_fulcrumd"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let want = format!("fulcrumd {} (commit ", env!("CARGO_PKG_VERSION"));
    assert!(text.starts_with(&want), "{text}");
    // `show ns version` says the same from the daemon's side.
    let shown = ctl::render::show(
        &ctl::Config::default(),
        ctl::grammar::Object::NsVersion,
        None,
        false,
        &ctl::render::NothingRunning,
    )
    .unwrap();
    assert_eq!(shown.trim(), format!("Fulcrum {}", ctl::VERSION));
    assert!(text.contains(ctl::VERSION), "{text}");
}
