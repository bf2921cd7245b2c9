//! Several workers on a simulated multi-queue NIC (the in-memory port): the NIC spreads frames
//! over its queues by a hash that knows nothing of the engine's flows, and every frame is
//! still processed by the worker that owns its flow — client frames by the hash of their
//! 5-tuple, replies by their SNAT port — through the handoff lanes.

use std::net::Ipv4Addr;
use std::sync::Arc;

use engine::flow::FlowKey;
use engine::nat::Snat;
use engine::rss::{MICROSOFT_KEY, Rss};
use engine::tables::{ServiceIds, Tables};
use engine::verdict::DropReason;
use engine::wire::{self, Packet, Proto};
use engine::worker::steer::Steering;
use engine::worker::{Crew, Lanes, MemPort, MonitorRings, Runner};
use etherparse::{Ipv4HeaderSlice, TcpHeaderSlice, UdpHeaderSlice};

mod common;
use common::*;

const CONFIG: &str = "
add ns ip 198.18.0.2 255.255.255.0 -type SNIP
add service s1 198.18.0.11 TCP 80
add service s2 198.18.0.12 TCP 80
add service d1 198.18.0.11 UDP 53
add service d2 198.18.0.12 UDP 53
add lb vserver web TCP 198.18.0.100 80 -lbMethod ROUNDROBIN
add lb vserver dns UDP 198.18.0.100 53 -lbMethod ROUNDROBIN
bind lb vserver web s1
bind lb vserver web s2
bind lb vserver dns d1
bind lb vserver dns d2
";

struct Nic {
    runners: Vec<Runner<MemPort>>,
    /// RSS the engine knows (RSS-aware steering), or `None`: the NIC's own hash.
    rss: Option<Arc<Rss>>,
}

impl Nic {
    fn new(workers: usize, rss: Option<Arc<Rss>>) -> Self {
        let (cfg, errors) = ctl::conf::replay_text(CONFIG);
        assert!(errors.is_empty(), "{errors:?}");
        let tables = Arc::new(Tables::build(&cfg, &mut ServiceIds::default(), 1));
        let mut lanes = Lanes::mesh(workers, 256).into_iter();
        let runners = Crew::new(workers, &[LB_MAC], 4096, 16, &tables)
            .workers
            .into_iter()
            .map(|mut w| {
                if let Some(rss) = &rss {
                    w.steer_by_rss(Arc::clone(rss));
                }
                let lanes = lanes.next().unwrap();
                Runner::new(w, vec![MemPort::new(4096)], MonitorRings::default()).with_lanes(lanes)
            })
            .collect();
        let mut nic = Self { runners, rss };
        // The backends' ARP answers reach one queue only.
        for i in 1..=2 {
            nic.runners[0].port_mut(0).unwrap().inject(arp(
                false,
                backend_mac(i),
                backend(i),
                LB_MAC,
                SNIP,
            ));
        }
        nic.rounds(2);
        nic.take_sent();
        nic
    }

    /// The NIC's queue for a frame: a hash of its addresses and ports that is not the
    /// engine's (as a veth's sender queue or an RSS key the engine did not set).
    fn receive(&mut self, frame: Vec<u8>) {
        let queue = match wire::parse(&frame) {
            Ok(Packet::Ipv4(ip)) if self.rss.is_some() => self
                .rss
                .as_ref()
                .and_then(|r| r.queue_of(ip.src, ip.dst, ip.src_port, ip.dst_port))
                .unwrap_or(0) as usize,
            Ok(Packet::Ipv4(ip)) => {
                let x = u64::from(u32::from(ip.src)) * 31
                    + u64::from(ip.src_port) * 7
                    + u64::from(ip.dst_port) * 13;
                (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40) as usize % self.runners.len()
            }
            _ => 0,
        };
        self.runners[queue].port_mut(0).unwrap().inject(frame);
    }

    fn rounds(&mut self, n: u64) {
        for t in 0..n {
            for r in &mut self.runners {
                r.poll(2_000 + t);
            }
        }
    }

    fn take_sent(&mut self) -> Vec<Vec<u8>> {
        self.runners
            .iter_mut()
            .flat_map(|r| r.port_mut(0).unwrap().take_sent())
            .collect()
    }

    fn drops(&self, reason: DropReason) -> u64 {
        self.runners
            .iter()
            .map(|r| r.worker().drops.get(reason))
            .sum()
    }
}

fn ports_of(f: &[u8]) -> (Ipv4Addr, u16, Ipv4Addr, u16, u8) {
    let ip = Ipv4HeaderSlice::from_slice(&f[14..]).unwrap();
    let (sp, dp) = if ip.protocol().0 == 6 {
        let t = TcpHeaderSlice::from_slice(&f[34..]).unwrap();
        (t.source_port(), t.destination_port())
    } else {
        let u = UdpHeaderSlice::from_slice(&f[34..]).unwrap();
        (u.source_port(), u.destination_port())
    };
    (
        ip.source_addr(),
        sp,
        ip.destination_addr(),
        dp,
        ip.protocol().0,
    )
}

fn client_owner(frame: &[u8], workers: usize, rss: &Option<Arc<Rss>>) -> usize {
    let Ok(Packet::Ipv4(ip)) = wire::parse(frame) else {
        panic!("not IPv4")
    };
    Steering {
        id: 0,
        workers,
        rss: rss.clone(),
    }
    .owner(&ip, false)
}

fn run(workers: usize, rss: Option<Arc<Rss>>) {
    let mut nic = Nic::new(workers, rss.clone());
    let flows = 200u16;
    // Clients open TCP connections and send UDP queries.
    let mut owners = Vec::new();
    for i in 0..flows {
        let client = Ipv4Addr::new(198, 18, 1 + (i % 7) as u8, 50);
        let syn = tcp(CLIENT_MAC, (client, 30_000 + i), (VIP, 80), Flags::Syn, b"");
        let query = udp(CLIENT_MAC, (client, 40_000 + i), (VIP, 53), b"q");
        owners.push((
            client_owner(&syn, workers, &rss),
            client_owner(&query, workers, &rss),
        ));
        nic.receive(syn);
        nic.receive(query);
    }
    nic.rounds(20);
    let toward_services = nic.take_sent();
    assert_eq!(
        toward_services.len(),
        2 * flows as usize,
        "every SYN and query forwarded"
    );
    // The services answer to SNIP:port; the NIC spreads the answers by its own hash.
    for f in &toward_services {
        let (snip, nat, svc, port, proto) = ports_of(f);
        assert_eq!(snip, SNIP);
        let mac = backend_mac(if svc == backend(1) { 1 } else { 2 });
        let answer = match proto {
            6 => tcp(mac, (svc, port), (SNIP, nat), Flags::SynAck, b""),
            _ => udp(mac, (svc, port), (SNIP, nat), b"a"),
        };
        nic.receive(answer);
    }
    nic.rounds(20);
    let toward_clients = nic.take_sent();
    assert_eq!(
        toward_clients.len(),
        2 * flows as usize,
        "every answer reached its client"
    );
    for f in &toward_clients {
        let (vip, _, client, cport, _) = ports_of(f);
        assert_eq!(vip, VIP);
        assert!(client.octets()[2] >= 1 && (30_000..40_000 + flows).contains(&cport));
    }
    // Each flow lives at its owner only, and its SNAT port is in the owner's range.
    for (i, &(tcp_owner, udp_owner)) in owners.iter().enumerate() {
        let client = Ipv4Addr::new(198, 18, 1 + (i as u16 % 7) as u8, 50);
        for (port, vport, proto, owner) in [
            (30_000 + i as u16, 80, Proto::Tcp, tcp_owner),
            (40_000 + i as u16, 53, Proto::Udp, udp_owner),
        ] {
            let key = FlowKey::new(client, port, VIP, vport, proto);
            for (w, r) in nic.runners.iter().enumerate() {
                let found = r.worker().flows().lookup(&key).map(|(slot, _)| slot);
                assert_eq!(found.is_some(), w == owner, "{key:?} at worker {w}");
                if let Some(slot) = found
                    && rss.is_none()
                {
                    let nat = r.worker().flows().get(slot).unwrap().snip.1;
                    assert_eq!(Snat::owner_of(nat, workers), Some(owner));
                }
            }
        }
    }
    assert_eq!(nic.drops(DropReason::NoFlow), 0);
    assert_eq!(
        nic.drops(DropReason::NoNeighbour),
        0,
        "one neighbour table for all"
    );
    assert_eq!(nic.drops(DropReason::HandoffFailed), 0);
    let out: u64 = nic
        .runners
        .iter()
        .map(|r| r.worker().stats.handoff_out)
        .sum();
    let handed_in: u64 = nic
        .runners
        .iter()
        .map(|r| r.worker().stats.handoff_in)
        .sum();
    assert_eq!(out, handed_in);
    match rss {
        // The NIC brought every frame, replies included, to its owner.
        Some(_) => assert_eq!(out, 0, "RSS-aware steering hands nothing over"),
        None => assert!(out > 0, "frames crossed workers"),
    }
}

fn toeplitz(queues: u32) -> Option<Arc<Rss>> {
    Some(Arc::new(Rss::spread(&MICROSOFT_KEY, queues, 128).unwrap()))
}

#[test]
fn two_workers_every_frame_at_its_owner() {
    run(2, None);
}

#[test]
fn three_workers_every_frame_at_its_owner() {
    run(3, None);
}

#[test]
fn eight_workers_every_frame_at_its_owner() {
    run(8, None);
}

#[test]
fn with_rss_aware_steering_frames_arrive_at_their_owner() {
    for workers in [2, 4, 8] {
        run(workers, toeplitz(workers as u32));
    }
}
