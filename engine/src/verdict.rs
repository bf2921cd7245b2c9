//! What happens to each frame, and a counter per drop reason.

use std::fmt;

/// Why a frame was dropped. Every reason has its own counter (`stat` shows them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// Shorter than its headers say.
    Truncated,
    /// A header that does not parse (bad IHL, bad ARP sizes, …).
    Malformed,
    /// Neither IPv4 nor ARP.
    NotIpv4,
    /// IP fragments: no ports to balance on.
    Fragment,
    /// Not TCP, UDP or ICMP.
    UnsupportedProtocol,
    TtlExpired,
    /// Addressed to no VIP or SNIP of ours.
    NotForUs,
    /// To a VIP, but no vserver listens on that protocol and port.
    NoVserver,
    /// The vserver is disabled.
    VserverDisabled,
    /// The vserver has no candidate service (all DOWN, disabled or unbound).
    NoService,
    /// The vserver spills over, no backup takes the connection, and `-soBackupAction DROP`.
    SpilledOver,
    /// TCP segment without SYN that belongs to no flow.
    NoFlow,
    /// The flow table is full: new flows are dropped, existing ones are never evicted.
    FlowTableFull,
    /// No source port left on the SNIP for this worker.
    NatPortsExhausted,
    /// The next hop's MAC address is not known yet (an ARP request was sent).
    NoNeighbour,
    /// No SNIP subnet or route reaches the service.
    NoRoute,
    /// ARP or ICMP that is not for us, or an ICMP type we do not answer.
    Ignored,
    /// A frame for the monitor core while none runs.
    NoMonitorCore,
    /// Of a flow flushed because its service went DOWN or out of service (downStateFlush);
    /// TCP peers were sent RSTs.
    Flushed,
    /// A TCP or UDP checksum that neither verifies nor is a partial (offload) checksum.
    BadChecksum,
    /// For the monitor core, whose ring was full.
    MonitorRingFull,
    /// To send, but the port's transmit queue or its free frames ran out.
    TxFull,
    /// For another worker, whose lane was full (or the frame too long for a lane).
    HandoffFailed,
    /// Dropped by the kernel before the engine saw it (AF_XDP statistics): no free frame to
    /// receive into, or a frame longer than a UMEM frame (GRO aggregates in generic mode).
    KernelNoFrame,
    /// Dropped by the kernel: the socket's RX ring was full (the worker fell behind).
    KernelRxRingFull,
    /// Descriptors the kernel refused as invalid (RX or TX).
    KernelInvalidDescriptor,
    /// From a client the SYN proxy accepted, before the service answered the engine's SYN
    /// (the client sends it again).
    AwaitingService,
}

impl DropReason {
    pub const ALL: [DropReason; 27] = [
        Self::Truncated,
        Self::Malformed,
        Self::NotIpv4,
        Self::Fragment,
        Self::UnsupportedProtocol,
        Self::TtlExpired,
        Self::NotForUs,
        Self::NoVserver,
        Self::VserverDisabled,
        Self::NoService,
        Self::SpilledOver,
        Self::NoFlow,
        Self::FlowTableFull,
        Self::NatPortsExhausted,
        Self::NoNeighbour,
        Self::NoRoute,
        Self::Ignored,
        Self::NoMonitorCore,
        Self::Flushed,
        Self::BadChecksum,
        Self::MonitorRingFull,
        Self::TxFull,
        Self::HandoffFailed,
        Self::KernelNoFrame,
        Self::KernelRxRingFull,
        Self::KernelInvalidDescriptor,
        Self::AwaitingService,
    ];

    pub fn index(self) -> usize {
        Self::ALL.iter().position(|r| *r == self).unwrap_or(0)
    }
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Truncated => "truncated",
            Self::Malformed => "malformed",
            Self::NotIpv4 => "not IPv4",
            Self::Fragment => "fragment",
            Self::UnsupportedProtocol => "unsupported protocol",
            Self::TtlExpired => "TTL expired",
            Self::NotForUs => "not for us",
            Self::NoVserver => "no vserver",
            Self::VserverDisabled => "vserver disabled",
            Self::NoService => "no service UP",
            Self::SpilledOver => "spillover without backup (DROP)",
            Self::NoFlow => "no flow",
            Self::FlowTableFull => "flow table full",
            Self::NatPortsExhausted => "NAT ports exhausted",
            Self::NoNeighbour => "neighbour unresolved",
            Self::NoRoute => "no route",
            Self::Ignored => "ignored",
            Self::NoMonitorCore => "no monitor core",
            Self::Flushed => "flushed (service down)",
            Self::BadChecksum => "bad checksum",
            Self::MonitorRingFull => "monitor ring full",
            Self::TxFull => "transmit queue full",
            Self::HandoffFailed => "handoff failed",
            Self::KernelNoFrame => "kernel: no frame to receive into, or too long",
            Self::KernelRxRingFull => "kernel: RX ring full",
            Self::KernelInvalidDescriptor => "kernel: invalid descriptor",
            Self::AwaitingService => "SYN proxy: awaiting the service",
        })
    }
}

/// The fate of one frame. Eight bytes (port and worker numbers as `u32`), so a verdict
/// travels in one register: a wider one went through memory, and copying it into the burst's
/// verdicts stalled on the store of its parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Rewritten in place; send it on this port.
    Tx {
        port: u32,
    },
    /// Handled without sending it on (an ARP reply learned).
    Consumed,
    /// For the monitor core: replies to its probes, ARP replies it needs too.
    ToMonitor,
    /// For the worker that owns the frame's flow (see [`crate::worker::steer`]).
    Handoff {
        worker: u32,
    },
    Drop(DropReason),
}

impl Verdict {
    /// Send on port `port` (an index into the worker's ports, far below `u32::MAX`).
    #[inline]
    pub fn tx(port: usize) -> Self {
        Self::Tx { port: port as u32 }
    }

    /// For worker `worker` (an index into the crew).
    #[inline]
    pub fn handoff(worker: usize) -> Self {
        Self::Handoff {
            worker: worker as u32,
        }
    }
}

const _: () = assert!(std::mem::size_of::<Verdict>() == 8);

/// Drop counters of one worker.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DropCounters([u64; DropReason::ALL.len()]);

impl DropCounters {
    #[inline]
    pub fn count(&mut self, reason: DropReason) {
        self.0[reason.index()] += 1;
    }

    pub fn add(&mut self, reason: DropReason, n: u64) {
        self.0[reason.index()] += n;
    }

    pub fn get(&self, reason: DropReason) -> u64 {
        self.0[reason.index()]
    }

    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Non-zero counters, for `stat` and logs.
    pub fn nonzero(&self) -> impl Iterator<Item = (DropReason, u64)> + '_ {
        DropReason::ALL
            .iter()
            .map(|r| (*r, self.get(*r)))
            .filter(|(_, n)| *n > 0)
    }
}

/// What one worker did, as `stat ns` lists it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkerFigures {
    pub core: usize,
    pub rx: u64,
    pub tx: u64,
    pub handoff_in: u64,
    pub handoff_out: u64,
    pub drops: u64,
    /// SNAT ports passed over, and reused, for SYNs without timestamps (see `nat`).
    pub snat_skipped: u64,
    pub snat_time_wait: u64,
    /// The flow table: flows held, its size, TCP flows not answered yet, and flows that gave
    /// way to new ones (embryonic budget spent or table full).
    pub flows: u64,
    pub flow_capacity: u64,
    pub embryonic: u64,
    pub flows_given_way: u64,
    /// SYNs answered with a cookie; ACKs whose cookie proved the handshake; ACKs whose
    /// cookie did not.
    pub syn_cookies_sent: u64,
    pub syn_cookies_valid: u64,
    pub syn_cookies_failed: u64,
}

/// The published counts of a worker, one slot each: the only place their order is kept
/// (`core` and `drops` are not published, they come from the worker's position and its
/// drop row).
const FIGURE_FIELDS: [fn(&mut WorkerFigures) -> &mut u64; 13] = [
    |w| &mut w.rx,
    |w| &mut w.tx,
    |w| &mut w.handoff_in,
    |w| &mut w.handoff_out,
    |w| &mut w.snat_skipped,
    |w| &mut w.snat_time_wait,
    |w| &mut w.flows,
    |w| &mut w.flow_capacity,
    |w| &mut w.embryonic,
    |w| &mut w.flows_given_way,
    |w| &mut w.syn_cookies_sent,
    |w| &mut w.syn_cookies_valid,
    |w| &mut w.syn_cookies_failed,
];
const FIGURES: usize = FIGURE_FIELDS.len();

/// Every worker's drop counters and figures, published for `stat` (each worker writes only
/// its own rows).
#[derive(Debug)]
pub struct SharedDrops {
    rows: Box<[std::sync::atomic::AtomicU64]>,
    figures: Box<[std::sync::atomic::AtomicU64]>,
    cores: Box<[usize]>,
}

impl SharedDrops {
    /// For `workers` workers numbered as their cores.
    pub fn new(workers: usize) -> Self {
        Self::with_cores(&(0..workers).collect::<Vec<_>>())
    }

    /// For one worker per entry of `cores` (the CPU each runs on).
    pub fn with_cores(cores: &[usize]) -> Self {
        let atomics = |n: usize| {
            (0..n)
                .map(|_| std::sync::atomic::AtomicU64::new(0))
                .collect()
        };
        Self {
            rows: atomics(cores.len() * DropReason::ALL.len()),
            figures: atomics(cores.len() * FIGURES),
            cores: cores.into(),
        }
    }

    /// Copies a worker's counts into its row.
    pub fn publish_figures(&self, worker: usize, mut figures: WorkerFigures) {
        if let Some(row) = self.figures.get(worker * FIGURES..(worker + 1) * FIGURES) {
            for (slot, field) in row.iter().zip(FIGURE_FIELDS) {
                slot.store(*field(&mut figures), std::sync::atomic::Ordering::Relaxed);
            }
        }
    }

    /// Each worker's figures, in worker order.
    pub fn workers(&self) -> Vec<WorkerFigures> {
        let load = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
        let n = DropReason::ALL.len();
        self.cores
            .iter()
            .enumerate()
            .map(|(w, &core)| {
                let drops = self
                    .rows
                    .get(w * n..(w + 1) * n)
                    .map_or(0, |row| row.iter().map(load).sum());
                let mut figures = WorkerFigures {
                    core,
                    drops,
                    ..WorkerFigures::default()
                };
                for (k, field) in FIGURE_FIELDS.iter().enumerate() {
                    *field(&mut figures) = self.figures.get(w * FIGURES + k).map_or(0, load);
                }
                figures
            })
            .collect()
    }

    /// Copies a worker's counters into its row.
    pub fn publish(&self, worker: usize, drops: &DropCounters) {
        let n = DropReason::ALL.len();
        if let Some(row) = self.rows.get(worker * n..(worker + 1) * n) {
            for (slot, value) in row.iter().zip(drops.0.iter()) {
                slot.store(*value, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }

    /// The sum over the workers.
    pub fn totals(&self) -> DropCounters {
        let mut sum = DropCounters::default();
        for (i, slot) in self.rows.iter().enumerate() {
            sum.0[i % DropReason::ALL.len()] += slot.load(std::sync::atomic::Ordering::Relaxed);
        }
        sum
    }
}
