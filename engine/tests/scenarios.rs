//! Runs every `tests/scenarios/*.toml` (SPEC §3 format) through the selection core. Each file
//! is one test, named after the file; a new file is picked up with no code change.

use std::path::{Path, PathBuf};

use ctl::conf::LbMethod;
use ctl::value::ArgValue;
use engine::lb::{FlowKey, Member, Method, Pool, RoundRobinReason, ServiceSnapshot, SnapshotView};
use libtest_mimic::{Arguments, Failed, Trial};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    #[allow(dead_code)]
    description: String,
    method: String,
    requests: usize,
    expect: Vec<String>,
    #[serde(default)]
    per_request: PerRequest,
    /// `set lb parameter -startupRRFactor` in effect when the vserver was created.
    #[serde(default)]
    startup_rr_factor: u64,
    service: Vec<ScenarioService>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
struct PerRequest {
    active: u64,
    packets: u64,
    bytes: u64,
    load: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioService {
    name: String,
    #[serde(default = "one")]
    weight: u32,
    #[serde(default = "yes")]
    up: bool,
    #[serde(default)]
    active: u64,
    /// Absent: no LRTM sample yet.
    response: Option<u64>,
    #[serde(default)]
    packets: u64,
    #[serde(default)]
    bytes: u64,
    /// Absent: no LOAD sample yet.
    load: Option<u64>,
}

fn one() -> u32 {
    1
}
fn yes() -> bool {
    true
}

fn run(path: &Path) -> Result<(), Failed> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let sc: Scenario = toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let token = ctl::lex::Token::bare(sc.method.clone());
    let method: Method = engine::tables::method_of(
        LbMethod::parse("method", std::slice::from_ref(&token)).map_err(|e| e.to_string())?,
    );
    if matches!(method, Method::Hash(_)) {
        return Err(
            "hash methods depend on flow keys; scenario files cover the other methods".into(),
        );
    }
    if sc.expect.len() != sc.requests {
        return Err(format!(
            "{} expectations for {} requests",
            sc.expect.len(),
            sc.requests
        )
        .into());
    }
    let members = (0..sc.service.len() as u32)
        .map(|i| Member {
            service: i,
            weight: sc.service[i as usize].weight,
            seed: u64::from(i),
        })
        .collect();
    let pool = Pool::new(method, members);
    let mut state = pool.new_state();
    pool.start_round_robin(
        &mut state,
        sc.startup_rr_factor,
        RoundRobinReason::VserverCreated,
    );
    let mut view = SnapshotView {
        services: sc
            .service
            .iter()
            .map(|s| ServiceSnapshot {
                candidate: s.up,
                active: s.active,
                packets: s.packets,
                bytes: s.bytes,
                response_time: s.response,
                load: s.load,
            })
            .collect(),
    };
    let mut got = Vec::new();
    for (i, expected) in sc.expect.iter().enumerate() {
        let name = pool
            .select(&mut state, &view, &FlowKey::default())
            .map(|c| {
                let s = &mut view.services[c.service as usize];
                s.active += sc.per_request.active;
                s.packets += sc.per_request.packets;
                s.bytes += sc.per_request.bytes;
                s.load = s.load.map(|l| l + sc.per_request.load);
                sc.service[c.service as usize].name.clone()
            })
            .unwrap_or_else(|| "(none)".into());
        got.push(name.clone());
        if name != *expected {
            return Err(format!(
                "{}: request {} went to {name}, expected {expected} (sequence so far: {})",
                path.display(),
                i + 1,
                got.join(" ")
            )
            .into());
        }
    }
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/scenarios exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no scenario files in {}", dir.display());
    let trials = files
        .into_iter()
        .map(|p| {
            let name = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            Trial::test(name, move || run(&p))
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
