//! The generated man pages render with man(1) and hold every command of the table and every
//! flag of the binaries; the bash completion completes commands through fulcrumctl.

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::CommandFactory;

/// The generator's output in a directory of this test's own (tests run in parallel).
fn generated(test: &str) -> PathBuf {
    let out = std::env::temp_dir().join(format!("fl-docgen-{}-{test}", std::process::id()));
    let status = Command::new(env!("CARGO_BIN_EXE_fulcrum-docgen"))
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    out
}

/// The page as man(1) renders it, in one long line per paragraph.
fn rendered(page: &Path) -> String {
    let out = Command::new("man")
        .arg("-l")
        .arg(page)
        .env("MANWIDTH", "1000")
        .env("MAN_KEEP_FORMATTING", "0")
        .output()
        .unwrap();
    assert!(out.status.success(), "man -l {}: {out:?}", page.display());
    // Drop the overstrike bold and the hyphenation man may add.
    let text = String::from_utf8_lossy(&out.stdout).replace('\u{2010}', "-");
    let mut plain = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if chars.peek() == Some(&'\u{8}') {
            chars.next();
            continue;
        }
        plain.push(c);
    }
    plain
}

fn flags(cmd: &clap::Command) -> Vec<String> {
    cmd.get_arguments()
        .filter(|a| !a.is_hide_set())
        .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
        .collect()
}

#[test]
fn the_pages_render_and_list_every_command_and_flag() {
    let out = generated("pages");
    let conf = rendered(&out.join("man/fulcrum.conf.5"));
    for spec in ctl::grammar::COMMANDS {
        let head = format!("{} {}", spec.verb, spec.object.words().join(" "));
        assert!(conf.contains(&head), "fulcrum.conf(5) lacks {head:?}");
    }
    let daemon = rendered(&out.join("man/fulcrumd.8"));
    for flag in flags(&engine::cli::Cli::command()) {
        assert!(daemon.contains(&flag), "fulcrumd(8) lacks {flag}");
    }
    assert!(
        daemon.contains(ctl::VERSION),
        "fulcrumd(8) names its version"
    );
    let client = rendered(&out.join("man/fulcrumctl.8"));
    for flag in flags(&ctl::cli::Cli::command()) {
        assert!(client.contains(&flag), "fulcrumctl(8) lacks {flag}");
    }
    std::fs::remove_dir_all(&out).unwrap();
}

/// fulcrumctl of this build (the ctl package's binary), built if missing.
fn fulcrumctl_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(|d| d.parent()).unwrap().to_owned();
    if !dir.join("fulcrumctl").exists() {
        let mut build = Command::new(env!("CARGO"));
        build.args(["build", "-p", "ctl", "--bin", "fulcrumctl"]);
        if dir.ends_with("release") {
            build.arg("--release");
        }
        assert!(build.status().unwrap().success());
    }
    dir
}

#[test]
fn bash_completes_commands_from_the_table() {
    let out = generated("bash");
    let script = out.join("completions/fulcrumctl.bash");
    let complete = |line: &str| -> String {
        let words: Vec<&str> = line.split(' ').collect();
        let program = format!(
            "source {}; COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}; COMP_WORDS=({}); COMP_CWORD={}; _fulcrumctl; echo \"${{COMPREPLY[*]}}\"",
            script.display(),
            words
                .iter()
                .map(|w| format!("'{w}'"))
                .collect::<Vec<_>>()
                .join(" "),
            words.len() - 1
        );
        let path = format!(
            "{}:{}",
            fulcrumctl_dir().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let o = Command::new("bash")
            .args(["-c", &program])
            .env("PATH", path)
            .output()
            .unwrap();
        assert!(o.status.success(), "{o:?}");
        String::from_utf8_lossy(&o.stdout).trim().to_owned()
    };
    assert_eq!(complete("fulcrumctl show lb v"), "vserver");
    assert_eq!(
        complete("fulcrumctl add lb vserver web HTTP 198.18.0.1 80 -lbM"),
        "-lbMethod"
    );
    assert!(complete("fulcrumctl --").contains("--socket"));
    let zsh = std::fs::read_to_string(out.join("completions/_fulcrumctl")).unwrap();
    assert!(zsh.starts_with("#compdef fulcrumctl"));
    let zsh_daemon = std::fs::read_to_string(out.join("completions/_fulcrumd")).unwrap();
    assert!(zsh_daemon.contains("--log-level"));
    std::fs::remove_dir_all(&out).unwrap();
}
