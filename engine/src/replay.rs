//! `fulcrumd replay`: the worker's run loop over the in-memory port, fed from a pcap file
//! instead of AF_XDP. Every frame of the input is received on port 0 at its capture time;
//! every frame the loop sends (rewritten frames, ARP answers, its own ARP requests and RSTs)
//! is written to the output with the time of the round that sent it.

use std::fmt;
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use ctl::conf::Config;
use pcap_file::pcap::{PcapPacket, PcapReader, PcapWriter};

use crate::counters::Counters;
use crate::error::EngineError;
use crate::health::ServiceHealth;
use crate::persist::SESSIONS_PER_VSERVER;
use crate::tables::{ServiceIds, Tables};
use crate::verdict::DropCounters;
use crate::wire::Mac;
use crate::worker::{MemPort, MonitorRings, Runner, Worker, WorkerSetup, WorkerStats};

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

fn pcap_error(e: impl fmt::Display) -> EngineError {
    EngineError::Pcap(e.to_string())
}

pub fn replay(
    config: &Config,
    mac: Mac,
    input: impl Read,
    output: impl Write,
) -> Result<ReplayReport, EngineError> {
    let mut ids = ServiceIds::default();
    let mut tables = Tables::build(config, &mut ids, 1);
    tables.attach_persistence(&mut std::collections::HashMap::new(), SESSIONS_PER_VSERVER);
    let tables = Arc::new(tables);
    let services = tables.services.len().max(1);
    let (counters, mut writers) = Counters::new(1, services);
    let writer = writers
        .pop()
        .ok_or_else(|| EngineError::Capacity("no counter writer".into()))?;
    let worker = Worker::new(WorkerSetup {
        id: 0,
        workers: 1,
        macs: vec![mac],
        flow_capacity: 65_536,
        writer,
        counters,
        health: Arc::new(ServiceHealth::new(services)),
        tables,
    });
    let mut runner = Runner::new(worker, vec![MemPort::default()], MonitorRings::default());
    let mut reader = PcapReader::new(input).map_err(pcap_error)?;
    let mut out = PcapWriter::new(output).map_err(pcap_error)?;
    let mut frames_in = 0;
    let mut frames_out = 0;
    let mut ts = Duration::ZERO;
    while let Some(packet) = reader.next_packet() {
        let packet = packet.map_err(pcap_error)?;
        ts = packet.timestamp;
        frames_in += 1;
        let port = runner.port_mut(0).ok_or_else(|| pcap_error("no port"))?;
        port.inject(packet.data.into_owned());
        runner.poll(ts.as_millis() as u64);
        frames_out += write_sent(&mut runner, &mut out, ts)?;
    }
    // One more round sends what the last frame left in the outbox.
    runner.poll(ts.as_millis() as u64);
    frames_out += write_sent(&mut runner, &mut out, ts)?;
    let (worker, _) = runner.into_parts();
    Ok(ReplayReport {
        frames_in,
        frames_out,
        stats: worker.stats,
        drops: worker.drops,
    })
}

fn write_sent(
    runner: &mut Runner<MemPort>,
    out: &mut PcapWriter<impl Write>,
    ts: Duration,
) -> Result<u64, EngineError> {
    let sent = runner
        .port_mut(0)
        .map(MemPort::take_sent)
        .unwrap_or_default();
    for f in &sent {
        out.write_packet(&PcapPacket::new(ts, f.len() as u32, f))
            .map_err(pcap_error)?;
    }
    Ok(sent.len() as u64)
}
