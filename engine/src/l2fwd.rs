//! `fulcrumd l2fwd`: the I/O floor of a port. Frames to one address, received on one queue,
//! go back out of the same port with their MACs swapped, through the same AF_XDP layer, XDP
//! program and run-loop shape as the engine, and nothing else. Benchmarks run fulcrumd
//! against it on the same veth in the same run (`scripts/floor-bench.sh`).

use std::collections::HashSet;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::error::EngineError;
use crate::profile::{HwProfile, XdpMode};
use crate::worker::Port;
use crate::xdp::{Attach, Owned, Program};
use crate::xsk::{XskConfig, XskPort};

const BATCH: usize = 64;

/// What a run forwarded.
#[derive(Debug, Default)]
pub struct Forwarded {
    pub frames: u64,
    pub seconds: f64,
}

impl std::fmt::Display for Forwarded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rate = if self.seconds > 0.0 {
            self.frames as f64 / self.seconds
        } else {
            0.0
        };
        write!(
            f,
            "l2fwd: {} frames forwarded in {:.1} s ({:.0} frames/s)",
            self.frames, self.seconds, rate
        )
    }
}

/// Forwards frames to `address` arriving on the profile's first port, queue 0, until `stop`.
pub fn run(
    profile: &HwProfile,
    address: Ipv4Addr,
    stop: &AtomicBool,
) -> Result<Forwarded, EngineError> {
    let port = profile
        .ports
        .first()
        .ok_or_else(|| EngineError::Profile("the profile has no port".into()))?;
    let queue = port.queues.first().copied().unwrap_or(0);
    let attach = match port.xdp_mode {
        XdpMode::Skb => Attach::Generic,
        XdpMode::Native => Attach::Driver,
    };
    let program = Program::attach(&port.ifname, attach).map_err(|e| EngineError::Xsk {
        ifname: port.ifname.clone(),
        queue,
        what: e.what,
        detail: e.detail.to_string(),
    })?;
    program
        .set_owned(&HashSet::from([(address, Owned::Vip)]))
        .map_err(|e| EngineError::Capacity(e.to_string()))?;
    let config = XskConfig {
        ifname: port.ifname.clone(),
        queue,
        zero_copy: port.zero_copy,
        ring_size: port.ring_size,
    };
    let frames = profile.umem.frames;
    let umem =
        crate::xdp::Umem::new(frames, profile.umem.frame_size, port.ring_size).map_err(|e| {
            EngineError::Xsk {
                ifname: port.ifname.clone(),
                queue,
                what: "cannot register the UMEM",
                detail: e.to_string(),
            }
        })?;
    let umem = Arc::new(umem);
    let mut chunks: Vec<u64> = umem.chunks().collect();
    let mut xsk = XskPort::open(&config, &umem, &mut chunks, frames as usize)?;
    program
        .add_socket(queue, xsk.fd())
        .map_err(|e| EngineError::Capacity(e.to_string()))?;
    let core = profile.cores.workers.first().copied().unwrap_or(0);
    core_affinity::set_for_current(core_affinity::CoreId { id: core });
    let start = Instant::now();
    let mut forwarded = 0u64;
    while !stop.load(Ordering::Relaxed) {
        // Errors are retried: the floor is what the port carries, not how it fails.
        let _ = xsk.reclaim(BATCH * 2);
        let _ = xsk.receive(BATCH);
        while let Some(mut frame) = xsk.next_rx() {
            crate::wire::swap_macs(frame.bytes());
            forwarded += u64::from(xsk.queue_tx(frame));
        }
        let _ = xsk.flush(BATCH);
        let _ = xsk.refill(BATCH);
    }
    drop(xsk);
    program.detach().map_err(|e| EngineError::Xsk {
        ifname: port.ifname.clone(),
        queue,
        what: e.what,
        detail: e.detail.to_string(),
    })?;
    Ok(Forwarded {
        frames: forwarded,
        seconds: start.elapsed().as_secs_f64(),
    })
}
