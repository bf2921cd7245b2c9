//! Hardware profiles (SPEC §6): which cores do what, which NIC queues to own, ring and UMEM
//! sizes. Deserialized strictly (unknown keys are errors) and validated into a [`HwProfile`].

use crate::error::EngineError;
use std::path::Path;

use serde::Deserialize;

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum XdpMode {
    /// Generic XDP (copy), for drivers without XDP: runs after the kernel built the skb, so
    /// it sees GRO/TSO aggregates larger than a UMEM frame, which the kernel drops (use
    /// `native` where the driver has XDP; veth has).
    Skb,
    /// Driver XDP.
    Native,
}

#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Cores {
    pub workers: Vec<usize>,
    pub monitor: usize,
}

#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PortProfile {
    pub ifname: String,
    pub queues: Vec<u32>,
    pub xdp_mode: XdpMode,
    #[serde(default)]
    pub zero_copy: bool,
    /// Descriptors per AF_XDP ring.
    #[serde(default = "default_ring")]
    pub ring_size: u32,
}

/// How a worker waits for frames (`[io] poll`).
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Poll {
    /// Spin while frames come, then give the core up in `poll(2)` for at most a
    /// millisecond (woken by the first frame): lowest latency.
    #[default]
    Busy,
    /// Sleep in `poll(2)` soon after traffic stops, for up to 50 ms (woken by the first
    /// frame): an idle daemon costs almost nothing.
    Wait,
}

/// How frames reach the worker that owns their flow (`[io] steering`).
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Steering {
    /// RSS-aware where the NIC allows it, handoff otherwise.
    #[default]
    Auto,
    /// The NIC's RSS brings each frame to its owner (SNAT ports chosen by their hash).
    Rss,
    /// Any NIC: a frame that lands on another worker is handed to its owner.
    Handoff,
}

/// The `[io]` table (SPEC §8); a profile without it keeps the defaults.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Io {
    #[serde(default)]
    pub poll: Poll,
    #[serde(default)]
    pub steering: Steering,
}

#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Umem {
    pub frame_size: u32,
    pub frames: u32,
}

#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Flows {
    pub per_worker: u32,
    /// Most half-open TCP flows a worker holds (default: a quarter of `per_worker`): past
    /// it, the oldest half-open flow gives way to a new SYN, so a SYN flood cannot push the
    /// established connections out of the table.
    #[serde(default)]
    pub embryonic: Option<u32>,
}

#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct HwProfile {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub cores: Cores,
    #[serde(rename = "port")]
    pub ports: Vec<PortProfile>,
    pub umem: Umem,
    pub flows: Flows,
    /// Most services the counters are sized for.
    #[serde(default = "default_max_services")]
    pub max_services: u32,
    #[serde(default)]
    pub io: Io,
}

fn default_ring() -> u32 {
    2048
}
fn default_max_services() -> u32 {
    4096
}

impl HwProfile {
    pub fn from_toml(text: &str) -> Result<Self, EngineError> {
        let p: Self = toml::from_str(text).map_err(|e| EngineError::Profile(e.to_string()))?;
        p.validate()?;
        Ok(p)
    }

    pub fn load(path: &Path) -> Result<Self, EngineError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| EngineError::Profile(format!("{}: {e}", path.display())))?;
        Self::from_toml(&text).map_err(|e| EngineError::Profile(format!("{}: {e}", path.display())))
    }

    fn validate(&self) -> Result<(), EngineError> {
        let fail = |m: String| Err(EngineError::Profile(m));
        if self.cores.workers.is_empty() {
            return fail("cores.workers lists no CPU".into());
        }
        let mut seen = self.cores.workers.clone();
        seen.sort_unstable();
        if seen.windows(2).any(|w| w[0] == w[1]) {
            return fail("cores.workers lists a CPU twice".into());
        }
        if self.ports.is_empty() {
            return fail("no [[port]]".into());
        }
        for p in &self.ports {
            if p.ifname.is_empty() || p.ifname.len() > 15 {
                return fail(format!(
                    "port ifname {:?} is not a valid interface name",
                    p.ifname
                ));
            }
            if p.queues.is_empty() {
                return fail(format!("port {} lists no queue", p.ifname));
            }
            if !p.ring_size.is_power_of_two() {
                return fail(format!(
                    "port {}: ring_size {} is not a power of two",
                    p.ifname, p.ring_size
                ));
            }
            if p.zero_copy && p.xdp_mode == XdpMode::Skb {
                return fail(format!(
                    "port {}: zero_copy needs xdp_mode = \"native\"",
                    p.ifname
                ));
            }
        }
        if !self.umem.frame_size.is_power_of_two() || !(2048..=4096).contains(&self.umem.frame_size)
        {
            return fail(format!(
                "umem.frame_size {} must be 2048 or 4096",
                self.umem.frame_size
            ));
        }
        let rings: u32 = self
            .ports
            .iter()
            .map(|p| p.queues.len() as u32 * p.ring_size * 2)
            .sum();
        if self.umem.frames < rings {
            return fail(format!(
                "umem.frames {} cannot fill the rings ({rings} descriptors)",
                self.umem.frames
            ));
        }
        if self.flows.per_worker == 0 {
            return fail("flows.per_worker must be positive".into());
        }
        if self.flows.per_worker as usize > crate::flow::MOST_FLOWS {
            return fail(format!(
                "flows.per_worker {} is more than a worker's flow table holds ({})",
                self.flows.per_worker,
                crate::flow::MOST_FLOWS
            ));
        }
        if let Some(n) = self.flows.embryonic
            && !(1..=self.flows.per_worker).contains(&n)
        {
            return fail(format!(
                "flows.embryonic {n} must be from 1 to flows.per_worker ({})",
                self.flows.per_worker
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
name = "lab-veth"
[cores]
workers = [1]
monitor = 0
[[port]]
ifname = "fl-lb0"
queues = [0]
xdp_mode = "skb"
zero_copy = false
[umem]
frame_size = 2048
frames = 8192
[flows]
per_worker = 1048576
"#;

    #[test]
    fn the_spec_keys_alone_make_a_profile() {
        let p = HwProfile::from_toml(MINIMAL).unwrap();
        assert_eq!(p.ports[0].ring_size, 2048);
        assert_eq!(p.max_services, 4096);
    }

    #[test]
    fn unknown_keys_and_bad_values_are_refused() {
        assert!(HwProfile::from_toml(&MINIMAL.replace("[flows]", "colour = 1\n[flows]")).is_err());
        let e = HwProfile::from_toml(&MINIMAL.replace("zero_copy = false", "zero_copy = true"))
            .unwrap_err();
        assert!(e.to_string().contains("zero_copy"), "{e}");
        assert!(HwProfile::from_toml(&MINIMAL.replace("workers = [1]", "workers = []")).is_err());
        assert!(HwProfile::from_toml(&MINIMAL.replace("frames = 8192", "frames = 100")).is_err());
        let flows = |extra: &str| HwProfile::from_toml(&format!("{MINIMAL}{extra}\n"));
        assert_eq!(
            flows("embryonic = 1000").unwrap().flows.embryonic,
            Some(1000)
        );
        assert!(flows("embryonic = 0").is_err());
        let e = flows("embryonic = 2000000").unwrap_err();
        assert!(e.to_string().contains("flows.embryonic"), "{e}");
        let per_worker = |n: u64| {
            HwProfile::from_toml(
                &MINIMAL.replace("per_worker = 1048576", &format!("per_worker = {n}")),
            )
        };
        assert!(per_worker(crate::flow::MOST_FLOWS as u64).is_ok());
        let e = per_worker(crate::flow::MOST_FLOWS as u64 + 1).unwrap_err();
        assert!(e.to_string().contains("flows.per_worker"), "{e}");
    }

    #[test]
    fn the_io_table_is_optional_and_checked() {
        assert_eq!(HwProfile::from_toml(MINIMAL).unwrap().io, Io::default());
        let wait = format!("{MINIMAL}[io]\npoll = \"wait\"\nsteering = \"handoff\"\n");
        let io = HwProfile::from_toml(&wait).unwrap().io;
        assert_eq!((io.poll, io.steering), (Poll::Wait, Steering::Handoff));
        assert!(HwProfile::from_toml(&format!("{MINIMAL}[io]\npoll = \"sometimes\"\n")).is_err());
        let rss = HwProfile::from_toml(&format!("{MINIMAL}[io]\nsteering = \"rss\"\n"));
        assert_eq!(rss.unwrap().io.steering, Steering::Rss);
    }

    #[test]
    fn every_shipped_profile_loads() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hw-profiles");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_some_and(|x| x == "toml") {
                HwProfile::load(&path).unwrap_or_else(|e| panic!("{e}"));
                n += 1;
            }
        }
        assert!(
            n >= 3,
            "expected the lab profile and two appliance profiles"
        );
    }
}
