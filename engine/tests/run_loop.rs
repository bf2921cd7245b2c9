//! The worker's run loop — the one `fulcrumd` runs over AF_XDP — over the in-memory port:
//! frames injected on the ports come out rewritten, with the worker's own ARP requests and
//! the monitor core's frames, and what cannot be sent is counted.

use std::net::Ipv4Addr;
use std::sync::Arc;

use arc_swap::ArcSwap;
use engine::health::ServiceHealth;
use engine::tables::{ServiceIds, Tables};
use engine::verdict::DropReason;
use engine::worker::{Crew, DeviceDrops, MemPort, MonitorRings, Port, PortError, Runner};
use etherparse::{Ipv4HeaderSlice, TcpHeaderSlice};

mod common;
use common::*;

const CONFIG: &str = "
add ns ip 198.18.0.2 255.255.255.0 -type SNIP
add service s1 198.18.0.11 TCP 80
add service s2 198.18.0.12 TCP 80
add lb vserver vs TCP 198.18.0.100 80 -lbMethod ROUNDROBIN
bind lb vserver vs s1
bind lb vserver vs s2
";

fn tables(config: &str, generation: u64, ids: &mut ServiceIds) -> Arc<Tables> {
    let (cfg, errors) = ctl::conf::replay_text(config);
    assert!(errors.is_empty(), "{errors:?}");
    Arc::new(Tables::build(&cfg, ids, generation))
}

fn runner(ports: usize, monitor: MonitorRings) -> (Runner<MemPort>, Arc<ServiceHealth>) {
    let tables = tables(CONFIG, 1, &mut ServiceIds::default());
    let Crew {
        mut workers,
        health,
        ..
    } = Crew::one(&vec![LB_MAC; ports], 1024, 16, &tables);
    for s in 0..2 {
        health.set_up(s, true);
    }
    let worker = workers.remove(0);
    let ports = (0..ports).map(|_| MemPort::new(8)).collect();
    (Runner::new(worker, ports, monitor), health)
}

fn sent(r: &mut Runner<MemPort>, port: usize) -> Vec<Vec<u8>> {
    r.port_mut(port).unwrap().take_sent()
}

fn inject(r: &mut Runner<MemPort>, port: usize, frame: Vec<u8>) {
    r.port_mut(port).unwrap().inject(frame);
}

/// The ARP requests among `frames`: the addresses asked for.
fn arp_targets(frames: &[Vec<u8>]) -> Vec<Ipv4Addr> {
    frames
        .iter()
        .filter(|f| f.len() >= 42 && f[12..14] == [8, 6] && f[20..22] == [0, 1])
        .map(|f| Ipv4Addr::new(f[38], f[39], f[40], f[41]))
        .collect()
}

fn tcp_dst(f: &[u8]) -> (Ipv4Addr, u16) {
    let ip = Ipv4HeaderSlice::from_slice(&f[14..]).unwrap();
    let t = TcpHeaderSlice::from_slice(&f[34..]).unwrap();
    (ip.destination_addr(), t.destination_port())
}

#[test]
fn frames_in_become_frames_out_through_the_loop() {
    let (mut r, _) = runner(1, MonitorRings::default());
    // The first round asks for both services' MACs.
    assert_eq!(r.poll(1_000), 0);
    let asked = arp_targets(&sent(&mut r, 0));
    assert!(
        asked.contains(&backend(1)) && asked.contains(&backend(2)),
        "{asked:?}"
    );
    for i in 1..=2 {
        inject(
            &mut r,
            0,
            arp(false, backend_mac(i), backend(i), LB_MAC, SNIP),
        );
    }
    // A client's SYN and ARP request arrive in one round.
    inject(&mut r, 0, arp(true, CLIENT_MAC, CLIENT, [0; 6], VIP));
    inject(
        &mut r,
        0,
        tcp(CLIENT_MAC, (CLIENT, 40_000), (VIP, 80), Flags::Syn, b""),
    );
    assert_eq!(r.poll(1_010), 4);
    let out = sent(&mut r, 0);
    assert_eq!(out.len(), 2, "the ARP reply and the SYN toward the service");
    assert_eq!(
        &out[0][20..22],
        &[0, 2],
        "ARP reply first, in arrival order"
    );
    assert_eq!(&out[1][0..6], &backend_mac(1));
    assert_eq!(tcp_dst(&out[1]), (backend(1), 80));
    let nat = u16::from_be_bytes([out[1][34], out[1][35]]);
    // The service answers; the loop sends the answer back to the client as the VIP.
    inject(
        &mut r,
        0,
        tcp(
            backend_mac(1),
            (backend(1), 80),
            (SNIP, nat),
            Flags::SynAck,
            b"",
        ),
    );
    assert_eq!(r.poll(1_020), 1);
    let out = sent(&mut r, 0);
    assert_eq!(out.len(), 1);
    assert_eq!(&out[0][0..6], &CLIENT_MAC);
    assert_eq!(tcp_dst(&out[0]), (CLIENT, 40_000));
    assert_eq!(r.worker().stats.flows_created, 1);
}

#[test]
fn a_new_generation_is_picked_up_between_rounds() {
    let (mut r, _) = runner(1, MonitorRings::default());
    let mut ids = ServiceIds::default();
    let first = tables(CONFIG, 1, &mut ids);
    let published = ArcSwap::new(Arc::clone(&first));
    r.follow(&published);
    let second = tables(&format!("{CONFIG}\ndisable lb vserver vs"), 2, &mut ids);
    published.store(Arc::clone(&second));
    r.follow(&published);
    assert!(Arc::ptr_eq(r.worker().tables(), &second));
    r.poll(1_000);
    inject(
        &mut r,
        0,
        tcp(CLIENT_MAC, (CLIENT, 40_001), (VIP, 80), Flags::Syn, b""),
    );
    r.poll(1_001);
    assert_eq!(r.worker().drops.get(DropReason::VserverDisabled), 1);
}

#[test]
fn frames_for_the_monitor_core_cross_its_ring_and_a_full_ring_is_counted() {
    let (to_monitor, monitor_rx) = crossbeam_channel::bounded(1);
    let (monitor_tx, from_monitor) = crossbeam_channel::bounded(4);
    let rings = MonitorRings {
        to: Some(to_monitor),
        from: Some(from_monitor),
    };
    let (mut r, _) = runner(2, rings);
    r.worker_mut().attach_monitor();
    r.poll(1_000);
    sent(&mut r, 0);
    sent(&mut r, 1);
    // Two probe answers to the SNIP's monitor ports: the ring takes one.
    for port in [2000, 2001] {
        inject(
            &mut r,
            0,
            tcp(
                backend_mac(1),
                (backend(1), 80),
                (SNIP, port),
                Flags::SynAck,
                b"",
            ),
        );
    }
    r.poll(1_001);
    assert_eq!(monitor_rx.try_iter().count(), 1);
    assert_eq!(r.worker().drops.get(DropReason::MonitorRingFull), 1);
    // A broadcast from the monitor core leaves on every port.
    monitor_tx
        .send(arp(true, LB_MAC, SNIP, [0; 6], backend(3)))
        .unwrap();
    r.poll(1_002);
    for port in 0..2 {
        assert_eq!(
            arp_targets(&sent(&mut r, port)),
            [backend(3)],
            "port {port}"
        );
    }
}

#[test]
fn a_full_transmit_queue_is_a_counted_drop() {
    let (mut r, _) = runner(1, MonitorRings::default());
    r.poll(1_000);
    sent(&mut r, 0);
    // Twenty ARP requests for the VIP in one round; the port's queue holds eight.
    for i in 0..20u8 {
        let client = Ipv4Addr::new(198, 18, 0, 100 + i);
        inject(&mut r, 0, arp(true, CLIENT_MAC, client, [0; 6], VIP));
    }
    r.poll(1_001);
    let answered = sent(&mut r, 0).len() as u64;
    assert_eq!(answered, 8);
    assert_eq!(r.worker().drops.get(DropReason::TxFull), 20 - answered);
}

#[test]
fn the_daemons_run_loop_stops_on_its_flag_and_hands_back_what_it_sent() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let (mut r, _) = runner(1, MonitorRings::default());
    inject(&mut r, 0, arp(true, CLIENT_MAC, CLIENT, [0; 6], VIP));
    let published = ArcSwap::new(Arc::clone(r.worker().tables()));
    let stop = AtomicBool::new(false);
    let rounds = AtomicU64::new(0);
    // The clock is read once a round: the third read stops the loop.
    let (worker, mut ports, fault) = r.run(&stop, &published, || {
        let n = rounds.fetch_add(1, Ordering::Relaxed);
        if n >= 2 {
            stop.store(true, Ordering::Relaxed);
        }
        1_000 + n
    });
    assert_eq!(rounds.load(Ordering::Relaxed), 3);
    assert_eq!(fault, None);
    let sent = ports[0].take_sent();
    assert!(
        sent.iter()
            .any(|f| f[20..22] == [0, 2] && f[28..32] == VIP.octets()),
        "the ARP reply for the VIP left: {} frames",
        sent.len()
    );
    assert!(
        !arp_targets(&sent).is_empty(),
        "and the worker's own ARP requests"
    );
    assert_eq!(worker.stats.rx, 1);
}

/// A port whose device misbehaves on cue: busy on some calls, broken from some round on.
struct FaultyPort {
    inner: MemPort,
    flush_busy: u32,
    broken_after: Option<u32>,
    rounds: u32,
    /// What the device says it dropped (totals).
    dropped: DeviceDrops,
}

impl Port for FaultyPort {
    type Frame = Vec<u8>;
    fn reclaim(&mut self, budget: usize) -> Result<(), PortError> {
        self.inner.reclaim(budget)
    }
    fn receive(&mut self, budget: usize) -> Result<usize, PortError> {
        self.rounds += 1;
        if self.broken_after.is_some_and(|r| self.rounds > r) {
            return Err(PortError::Broken(
                "sendto: Network is down (os error 100)".into(),
            ));
        }
        self.inner.receive(budget)
    }
    fn next_rx(&mut self) -> Option<Vec<u8>> {
        self.inner.next_rx()
    }
    fn queue_tx(&mut self, frame: Vec<u8>) -> bool {
        self.inner.queue_tx(frame)
    }
    fn recycle(&mut self, frame: Vec<u8>) {
        self.inner.recycle(frame)
    }
    fn send_copy(&mut self, bytes: &[u8]) -> bool {
        self.inner.send_copy(bytes)
    }
    fn flush(&mut self, budget: usize) -> Result<(), PortError> {
        if self.flush_busy > 0 {
            self.flush_busy -= 1;
            return Err(PortError::Busy);
        }
        self.inner.flush(budget)
    }
    fn refill(&mut self, budget: usize) -> Result<(), PortError> {
        self.inner.refill(budget)
    }
    fn device_drops(&self) -> Option<DeviceDrops> {
        Some(self.dropped)
    }
}

fn faulty_runner(flush_busy: u32, broken_after: Option<u32>) -> Runner<FaultyPort> {
    let (r, _) = runner(1, MonitorRings::default());
    let (worker, mut ports) = r.into_parts();
    let port = FaultyPort {
        inner: ports.remove(0),
        flush_busy,
        broken_after,
        rounds: 0,
        dropped: DeviceDrops::default(),
    };
    Runner::new(worker, vec![port], MonitorRings::default())
}

#[test]
fn a_busy_device_is_counted_and_retried_and_a_broken_one_stops_the_loop_cleanly() {
    use std::sync::atomic::AtomicBool;
    // Busy: the frames wait for the next round and leave then.
    let mut r = faulty_runner(3, None);
    r.port_mut(0)
        .unwrap()
        .inner
        .inject(arp(true, CLIENT_MAC, CLIENT, [0; 6], VIP));
    r.poll(1_000);
    assert!(
        r.port_mut(0).unwrap().inner.take_sent().is_empty(),
        "flush refused"
    );
    r.poll(1_001);
    r.poll(1_002);
    let sent = r.port_mut(0).unwrap().inner.take_sent();
    assert!(
        sent.iter().any(|f| f[20..22] == [0, 2]),
        "the ARP reply left once the device took it"
    );
    assert_eq!(r.worker().stats.port_busy, 3);
    assert_eq!(r.fault(), None);
    // Broken: the loop stops by itself and says why; no panic, the frames are still owned.
    let r = faulty_runner(0, Some(2));
    let published = ArcSwap::new(Arc::clone(r.worker().tables()));
    let stop = AtomicBool::new(false);
    let (_, ports, fault) = r.run(&stop, &published, || 1_000);
    let fault = fault.expect("a fault stops the loop");
    assert!(
        fault.contains("port 0") && fault.contains("Network is down"),
        "{fault}"
    );
    assert_eq!(ports.len(), 1);
}

#[test]
fn what_the_device_drops_is_counted_with_the_engines_drops_once_a_second() {
    let mut r = faulty_runner(0, None);
    r.poll(1_000);
    r.port_mut(0).unwrap().dropped = DeviceDrops {
        no_frame: 7,
        rx_ring_full: 2,
        invalid: 1,
    };
    r.poll(1_500);
    assert_eq!(
        r.worker().drops.get(DropReason::KernelNoFrame),
        0,
        "read once a second"
    );
    r.poll(2_000);
    r.port_mut(0).unwrap().dropped.no_frame = 10;
    r.poll(3_000);
    let d = &r.worker().drops;
    assert_eq!(
        d.get(DropReason::KernelNoFrame),
        10,
        "deltas add up to the total"
    );
    assert_eq!(d.get(DropReason::KernelRxRingFull), 2);
    assert_eq!(d.get(DropReason::KernelInvalidDescriptor), 1);
}
