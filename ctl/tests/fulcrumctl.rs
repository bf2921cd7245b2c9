//! `fulcrumctl` checks commands against the grammar before it contacts the daemon.

use std::process::Command;

fn ctl(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_fulcrumctl"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn a_bad_command_is_refused_locally_with_a_netscaler_error() {
    let (code, _, err) = ctl(&[
        "--socket",
        "/nonexistent/ctl.sock",
        "bind",
        "lb",
        "vserver",
        "vs1",
        "svc1",
        "-weight",
        "0",
    ]);
    assert_ne!(code, 0);
    assert_eq!(err.trim(), "ERROR: Argument value out of range [weight, 0]");
}

#[test]
fn a_good_command_needs_the_daemon_and_says_so() {
    let (code, _, err) = ctl(&["--socket", "/nonexistent/ctl.sock", "show", "lb", "vserver"]);
    assert_ne!(code, 0);
    assert!(
        err.starts_with("ERROR: Cannot reach fulcrumd at /nonexistent/ctl.sock"),
        "{err}"
    );
}

#[test]
fn help_is_answered_without_a_daemon() {
    let (code, out, _) = ctl(&[
        "--socket",
        "/nonexistent/ctl.sock",
        "help",
        "add",
        "service",
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("-maxClient"), "{out}");
}

#[test]
fn a_batch_stops_at_its_first_error_and_names_the_line() {
    let dir = std::env::temp_dir().join(format!("fl-ctl-batch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("cmds.conf");
    std::fs::write(&file, "# setup\nhelp\nadd lb vserver\n").unwrap();
    let (code, _, err) = ctl(&[
        "--socket",
        "/nonexistent/ctl.sock",
        "-f",
        file.to_str().unwrap(),
    ]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_ne!(code, 0);
    assert!(
        err.contains("cmds.conf:3: ERROR: Required argument missing [name]"),
        "{err}"
    );
}

#[test]
fn version_names_the_crate_version_commit_and_build() {
    let (code, out, _) = ctl(&["--version"]);
    assert_eq!(code, 0);
    let want = format!("fulcrumctl {} (commit ", env!("CARGO_PKG_VERSION"));
    assert!(out.starts_with(&want), "{out}");
    assert!(out.contains(" build)"), "{out}");
}
