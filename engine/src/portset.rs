//! Setting up the profile's ports for AF_XDP: the engine's XDP program on every device
//! (detached again when this is dropped, also when the daemon stops early), the addresses it
//! steers to the engine kept in step with the configuration, and each worker's sockets
//! opened on one UMEM.

use std::collections::HashSet;
use std::sync::Arc;

use crate::control::OwnedAddresses;
use crate::error::EngineError;
use crate::profile::{HwProfile, XdpMode};
use crate::tables::{LocalIp, LocalKind};
use crate::xdp::{Attach, Owned, Program, Umem};
use crate::xsk::{XskConfig, XskPort};

/// The XDP programs of the profile's devices, one each.
#[derive(Debug)]
pub struct Programs(Vec<Arc<Program>>);

impl Programs {
    /// Attaches the program to every device of the profile in its `xdp_mode`.
    pub fn attach(profile: &HwProfile) -> Result<Self, EngineError> {
        let mut programs = Self(Vec::new());
        for p in &profile.ports {
            if programs.get(&p.ifname).is_some() {
                continue;
            }
            let attach = match p.xdp_mode {
                XdpMode::Skb => {
                    log::info!(target: "xdp",
                        "{}: xdp_mode = \"skb\" (generic XDP) runs after GRO and sees a local sender's TSO segments whole; frames longer than a UMEM frame are dropped by the kernel (counted as \"kernel: no frame to receive into, or too long\"). Use \"native\" where the driver has XDP ({} here).",
                        p.ifname,
                        crate::nic::driver_of(&p.ifname)
                    );
                    Attach::Generic
                }
                XdpMode::Native => Attach::Driver,
            };
            let program = Program::attach(&p.ifname, attach)
                .map_err(|e| attach_error(&p.ifname, p.xdp_mode, e))?;
            programs.0.push(Arc::new(program));
        }
        Ok(programs)
    }

    pub fn get(&self, ifname: &str) -> Option<&Arc<Program>> {
        self.0.iter().find(|p| p.ifname() == ifname)
    }

    /// What the control plane tells the owned addresses of each generation.
    pub fn owners(&self) -> Arc<dyn OwnedAddresses> {
        Arc::new(Owners {
            programs: self.0.clone(),
            held: std::sync::Mutex::new(HashSet::new()),
        })
    }

    /// Detaches every program (frames go to the kernel only); returns what failed.
    pub fn detach(&self) -> Vec<String> {
        self.0
            .iter()
            .filter_map(|p| p.detach().err().map(|e| format!("{}: {e}", p.ifname())))
            .collect()
    }
}

impl Drop for Programs {
    fn drop(&mut self) {
        for failed in self.detach() {
            log::error!(target: "xdp", "{failed}");
        }
    }
}

fn attach_error(ifname: &str, mode: XdpMode, e: crate::xdp::ProgramError) -> EngineError {
    let errno = e.detail.raw_os_error();
    if errno == Some(libc::EBUSY) || errno == Some(libc::EEXIST) {
        return EngineError::PortBusy {
            ifname: ifname.to_owned(),
            detail: "has an XDP program attached already (another fulcrumd or AF_XDP program?)"
                .into(),
        };
    }
    let hint = match (mode, errno) {
        (XdpMode::Native, Some(libc::EOPNOTSUPP | libc::EINVAL)) => format!(
            "; the driver ({}) may have no native XDP: set xdp_mode = \"skb\" in the profile",
            crate::nic::driver_of(ifname)
        ),
        _ => String::new(),
    };
    EngineError::Xsk {
        ifname: ifname.to_owned(),
        queue: 0,
        what: e.what,
        detail: format!("{}{hint}", e.detail),
    }
}

/// The XDP programs as the control plane sees them, with the addresses they hold.
struct Owners {
    programs: Vec<Arc<Program>>,
    held: std::sync::Mutex<HashSet<(std::net::Ipv4Addr, Owned)>>,
}

impl OwnedAddresses for Owners {
    /// All programs or none: one that refuses has its old set (see `Program::set_owned`),
    /// and those told before it get theirs back.
    fn publish(
        &self,
        local: &[LocalIp],
        usip_sources: &[std::net::Ipv4Addr],
    ) -> Result<(), String> {
        let wanted: HashSet<_> = local
            .iter()
            .map(|l| {
                let kind = match l.kind {
                    LocalKind::Snip => Owned::Snip,
                    LocalKind::Vip => Owned::Vip,
                };
                (l.addr, kind)
            })
            .chain(usip_sources.iter().map(|&a| (a, Owned::UsipSource)))
            .collect();
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        for (told, program) in self.programs.iter().enumerate() {
            if let Err(e) = program.set_owned(&wanted) {
                for earlier in &self.programs[..told] {
                    // They held `held` a moment ago: it fits.
                    let _ = earlier.set_owned(&held);
                }
                return Err(format!("{}: {e}", program.ifname()));
            }
        }
        *held = wanted;
        Ok(())
    }
}

/// Opens one worker's ports: those alike in copy mode share one UMEM, sized for
/// `frames_per_port` frames each, and each socket joins its device's program.
pub fn open_worker_ports(
    configs: &[XskConfig],
    frames_per_port: usize,
    frame_size: u32,
    programs: &Programs,
) -> Result<Vec<XskPort>, EngineError> {
    let mut ports: Vec<Option<XskPort>> = configs.iter().map(|_| None).collect();
    for zero_copy in [false, true] {
        let group: Vec<usize> = (0..configs.len())
            .filter(|&i| configs[i].zero_copy == zero_copy)
            .collect();
        let Some(&first) = group.first() else {
            continue;
        };
        let ring = group
            .iter()
            .map(|&i| configs[i].ring_size)
            .max()
            .unwrap_or(2048);
        let frames = (frames_per_port * group.len()) as u32;
        let umem = Umem::new(frames, frame_size, ring).map_err(|e| EngineError::Xsk {
            ifname: configs[first].ifname.clone(),
            queue: configs[first].queue,
            what: "cannot register the UMEM",
            detail: e.to_string(),
        })?;
        let umem = Arc::new(umem);
        let mut chunks: Vec<u64> = umem.chunks().collect();
        for &i in &group {
            let c = &configs[i];
            let port = XskPort::open(c, &umem, &mut chunks, frames_per_port)?;
            if let Some(program) = programs.get(&c.ifname) {
                program
                    .add_socket(c.queue, port.fd())
                    .map_err(|e| EngineError::Xsk {
                        ifname: c.ifname.clone(),
                        queue: c.queue,
                        what: e.what,
                        detail: e.detail.to_string(),
                    })?;
            }
            ports[i] = Some(port);
        }
    }
    Ok(ports.into_iter().flatten().collect())
}
