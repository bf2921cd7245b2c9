//! Compiles the XDP program (`bpf/steer.c`) with clang for the BPF target; the daemon embeds
//! the object and loads it through libbpf.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let source = "bpf/steer.c";
    println!("cargo:rerun-if-changed={source}");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    // libbpf-sys installs libbpf's headers (bpf_helpers.h) and says where.
    let libbpf = env::var("DEP_LIBBPF_INCLUDE").expect("libbpf-sys exports its include dir");
    // <linux/bpf.h> wants <asm/types.h>, which Debian keeps under the multiarch directory.
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let multiarch = format!("/usr/include/{arch}-linux-gnu");
    let object = out.join("steer.o");
    let status = Command::new(env::var("CLANG").unwrap_or_else(|_| "clang".into()))
        .args(["-O2", "-Wall", "-Werror", "-target", "bpf", "-c", source])
        .arg(format!("-I{libbpf}"))
        .args(["-idirafter", &multiarch])
        .arg("-o")
        .arg(&object)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("clang could not compile {source} ({s})"),
        Err(e) => panic!(
            "cannot run clang to compile {source}: {e} (scripts/install-deps.sh installs it)"
        ),
    }
}
