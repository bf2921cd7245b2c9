//! Records the build's identity for `--version` and `show ns version`: the git commit of
//! the source (when it is a git checkout) and the build profile.

use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "unknown".to_owned());
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .is_some_and(|o| !o.stdout.is_empty());
    let profile = std::env::var("PROFILE").unwrap_or_else(|_| "unknown".to_owned());
    println!(
        "cargo:rustc-env=FULCRUM_COMMIT={commit}{}",
        if dirty { "-modified" } else { "" }
    );
    println!("cargo:rustc-env=FULCRUM_PROFILE={profile}");
    // A new commit (or a checkout) changes HEAD or the ref it points to.
    for path in ["../.git/HEAD", "../.git/index", "../.git/refs/heads"] {
        println!("cargo:rerun-if-changed={path}");
    }
}
