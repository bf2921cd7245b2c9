//! `fulcrumd replay`: the worker over frames from a pcap file instead of AF_XDP — the
//! in-memory port. Every frame of the input is received on port 0 at its capture time; every
//! frame the worker sends (rewritten frames, ARP answers, its own ARP requests) is written to
//! the output with the time of the frame that caused it.

use std::fmt;
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use ctl::conf::Config;
use pcap_file::pcap::{PcapPacket, PcapReader, PcapWriter};

use crate::counters::Counters;
use crate::health::ServiceHealth;
use crate::tables::{ServiceIds, Tables};
use crate::verdict::{DropCounters, Verdict};
use crate::wire::Mac;
use crate::worker::{Worker, WorkerSetup, WorkerStats};

/// The MAC address the in-memory port uses unless told otherwise.
pub const DEFAULT_MAC: Mac = [0x02, 0xf1, 0x00, 0x00, 0x00, 0x01];

#[derive(Debug)]
pub struct ReplayReport {
    pub frames_in: u64,
    pub frames_out: u64,
    pub stats: WorkerStats,
    pub drops: DropCounters,
}

impl fmt::Display for ReplayReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "frames in {}, frames out {}, flows created {}, flows expired {}, dropped {}",
            self.frames_in,
            self.frames_out,
            self.stats.flows_created,
            self.stats.flows_expired,
            self.drops.total()
        )?;
        for (reason, n) in self.drops.nonzero() {
            write!(f, "\n  dropped ({reason}): {n}")?;
        }
        Ok(())
    }
}

#[derive(Debug)]
pub struct ReplayError(pub String);

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ReplayError {}

fn err(e: impl fmt::Display) -> ReplayError {
    ReplayError(e.to_string())
}

pub fn replay(
    config: &Config,
    mac: Mac,
    input: impl Read,
    output: impl Write,
) -> Result<ReplayReport, ReplayError> {
    let mut ids = ServiceIds::default();
    let mut tables = Tables::build(config, &mut ids, 1);
    tables.attach_persistence(
        &mut std::collections::HashMap::new(),
        crate::control::PERSIST_SESSIONS,
    );
    let tables = Arc::new(tables);
    let services = tables.services.len().max(1);
    let (counters, mut writers) = Counters::new(1, services);
    let writer = writers.pop().ok_or_else(|| err("no counter writer"))?;
    let mut worker = Worker::new(WorkerSetup {
        id: 0,
        workers: 1,
        macs: vec![mac],
        flow_capacity: 65_536,
        writer,
        counters,
        health: Arc::new(ServiceHealth::new(services)),
        tables,
    });
    let mut reader = PcapReader::new(input).map_err(err)?;
    let mut out = PcapWriter::new(output).map_err(err)?;
    let mut frames_in = 0;
    let mut frames_out = 0;
    let mut buf = Vec::with_capacity(2048);
    while let Some(packet) = reader.next_packet() {
        let packet = packet.map_err(err)?;
        let ts: Duration = packet.timestamp;
        let now_ms = ts.as_millis() as u64;
        frames_in += 1;
        buf.clear();
        buf.extend_from_slice(&packet.data);
        worker.housekeeping(now_ms);
        let mut own = Vec::new();
        worker.drain_outbox(|_, f| own.push(f.to_vec()));
        for f in &own {
            out.write_packet(&PcapPacket::new(ts, f.len() as u32, f))
                .map_err(err)?;
            frames_out += 1;
        }
        if let Verdict::Tx { .. } = worker.process(now_ms, 0, &mut buf) {
            out.write_packet(&PcapPacket::new(ts, buf.len() as u32, &buf))
                .map_err(err)?;
            frames_out += 1;
        }
    }
    let mut own = Vec::new();
    worker.drain_outbox(|_, f| own.push(f.to_vec()));
    frames_out += own.len() as u64;
    for f in &own {
        out.write_packet(&PcapPacket::new(Duration::ZERO, f.len() as u32, f))
            .map_err(err)?;
    }
    Ok(ReplayReport {
        frames_in,
        frames_out,
        stats: worker.stats,
        drops: worker.drops.clone(),
    })
}
