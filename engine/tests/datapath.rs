//! Packet-in/packet-out fixtures for the worker on the in-memory port: every verdict and every
//! drop reason, with checksums verified by etherparse (an independent implementation).

use std::net::Ipv4Addr;
use std::sync::Arc;

use engine::counters::Counters;
use engine::health::ServiceHealth;
use engine::tables::{ServiceIds, Tables};
use engine::verdict::{DropReason, Verdict};
use engine::worker::{Crew, Worker, WorkerSetup};
use etherparse::{Ipv4HeaderSlice, PacketBuilder, TcpHeaderSlice, UdpHeaderSlice};

mod common;
use common::*;

const CONFIG: &str = "
add ns ip 198.18.0.2 255.255.255.0 -type SNIP
add service s1 198.18.0.11 HTTP 80
add service s2 198.18.0.12 HTTP 80
add service s3 198.18.0.13 HTTP 80
add service d1 198.18.0.11 DNS 53
add lb vserver web HTTP 198.18.0.100 80 -lbMethod ROUNDROBIN
add lb vserver dns DNS 198.18.0.100 53
add lb vserver off TCP 198.18.0.100 8080
bind lb vserver web s1
bind lb vserver web s2
bind lb vserver web s3
bind lb vserver dns d1
disable lb vserver off
";

struct Lab {
    worker: Worker,
    counters: Arc<Counters>,
    health: Arc<ServiceHealth>,
    now: u64,
}

impl Lab {
    fn new(config: &str, flows: usize) -> Self {
        let (cfg, errors) = ctl::conf::replay_text(config);
        assert!(errors.is_empty(), "{errors:?}");
        let mut ids = ServiceIds::default();
        let mut tables = Tables::build(&cfg, &mut ids, 1);
        tables.attach_persistence(&mut std::collections::HashMap::new(), 1024);
        let tables = Arc::new(tables);
        let Crew {
            mut workers,
            counters,
            health,
            ..
        } = Crew::one(&[LB_MAC], flows, 64, &tables);
        let worker = workers.remove(0);
        let mut lab = Self {
            worker,
            counters,
            health,
            now: 1_000,
        };
        // The backends answer the worker's ARP requests.
        lab.worker.housekeeping(lab.now);
        let mut asked = Vec::new();
        lab.worker
            .drain_outbox(|_, f| asked.push(Ipv4Addr::new(f[38], f[39], f[40], f[41])));
        for i in 1..=3 {
            assert!(asked.contains(&backend(i)), "asked {asked:?}");
            let mut reply = arp(false, backend_mac(i), backend(i), LB_MAC, SNIP);
            assert_eq!(lab.run(&mut reply), Verdict::Consumed);
        }
        lab
    }

    fn run(&mut self, frame: &mut [u8]) -> Verdict {
        self.worker.process(self.now, 0, frame)
    }
}

/// Parses a transmitted TCP frame, checking both checksums against etherparse's own.
/// (destination MAC, source, destination, payload) of a transmitted segment.
type Segment = ([u8; 6], (Ipv4Addr, u16), (Ipv4Addr, u16), Vec<u8>);

fn tcp_out(f: &[u8]) -> Segment {
    let ip = Ipv4HeaderSlice::from_slice(&f[14..]).unwrap();
    assert_eq!(
        ip.header_checksum(),
        ip.to_header().calc_header_checksum(),
        "IP checksum"
    );
    let l4 = 14 + usize::from(ip.ihl()) * 4;
    let end = 14 + usize::from(ip.total_len());
    let tcp = TcpHeaderSlice::from_slice(&f[l4..end]).unwrap();
    let payload = &f[l4 + usize::from(tcp.data_offset()) * 4..end];
    assert_eq!(
        tcp.checksum(),
        tcp.calc_checksum_ipv4(&ip, payload).unwrap(),
        "TCP checksum"
    );
    let mut dmac = [0u8; 6];
    dmac.copy_from_slice(&f[0..6]);
    assert_eq!(&f[6..12], &LB_MAC, "sent from our MAC");
    (
        dmac,
        (ip.source_addr(), tcp.source_port()),
        (ip.destination_addr(), tcp.destination_port()),
        payload.to_vec(),
    )
}

#[test]
fn arp_for_vip_and_snip_is_answered_and_others_ignored() {
    let mut lab = Lab::new(CONFIG, 64);
    for ours in [VIP, SNIP] {
        let mut f = arp(true, CLIENT_MAC, CLIENT, [0; 6], ours);
        assert_eq!(lab.run(&mut f), Verdict::Tx { port: 0 });
        assert_eq!(&f[0..6], &CLIENT_MAC);
        assert_eq!(&f[20..22], &[0, 2], "reply");
        assert_eq!(&f[22..28], &LB_MAC);
        assert_eq!(&f[28..32], &ours.octets());
        assert_eq!(&f[38..42], &CLIENT.octets());
    }
    let mut f = arp(
        true,
        CLIENT_MAC,
        CLIENT,
        [0; 6],
        Ipv4Addr::new(198, 18, 0, 77),
    );
    assert_eq!(lab.run(&mut f), Verdict::Drop(DropReason::Ignored));
}

/// A backend replaced behind its address (a failover that moves the IP to another NIC): once
/// its ARP announces the new MAC, an established flow's next frame goes there, not to the MAC
/// the flow resolved when it opened.
#[test]
fn an_established_flow_follows_its_service_to_a_new_mac() {
    let mut lab = Lab::new(CONFIG, 64);
    let client = (CLIENT, 40_000);
    let mut syn = tcp(CLIENT_MAC, client, (VIP, 80), Flags::Syn, b"");
    assert_eq!(lab.run(&mut syn), Verdict::Tx { port: 0 });
    let (dmac, _, dst, _) = tcp_out(&syn);
    assert_eq!((dmac, dst), (backend_mac(1), (backend(1), 80)));
    let moved = [0x02, 0xbe, 0, 0, 0x77, 1];
    let mut gratuitous = arp(true, moved, backend(1), [0; 6], backend(1));
    lab.run(&mut gratuitous);
    let mut data = tcp(CLIENT_MAC, client, (VIP, 80), Flags::Ack, b"x");
    assert_eq!(lab.run(&mut data), Verdict::Tx { port: 0 });
    let (dmac, _, dst, _) = tcp_out(&data);
    assert_eq!((dmac, dst), (moved, (backend(1), 80)));
}

#[test]
fn a_new_flow_after_its_service_moved_goes_to_the_new_mac() {
    let mut lab = Lab::new(CONFIG, 64);
    // Round robin over three services: connections 0 and 3 go to s1.
    let first_mac_of = |lab: &mut Lab, port: u16| {
        let mut syn = tcp(CLIENT_MAC, (CLIENT, port), (VIP, 80), Flags::Syn, b"");
        assert_eq!(lab.run(&mut syn), Verdict::Tx { port: 0 });
        let (dmac, _, dst, _) = tcp_out(&syn);
        (dmac, dst)
    };
    assert_eq!(
        first_mac_of(&mut lab, 41_000),
        (backend_mac(1), (backend(1), 80))
    );
    first_mac_of(&mut lab, 41_001);
    first_mac_of(&mut lab, 41_002);
    let moved = [0x02, 0xbe, 0, 0, 0x77, 1];
    let mut gratuitous = arp(true, moved, backend(1), [0; 6], backend(1));
    lab.run(&mut gratuitous);
    assert_eq!(first_mac_of(&mut lab, 41_003), (moved, (backend(1), 80)));
}

#[test]
fn tcp_connection_through_the_vip_with_full_nat() {
    let mut lab = Lab::new(CONFIG, 64);
    let client = (CLIENT, 40_000);
    let mut syn = tcp(CLIENT_MAC, client, (VIP, 80), Flags::Syn, b"");
    assert_eq!(lab.run(&mut syn), Verdict::Tx { port: 0 });
    let (dmac, src, dst, _) = tcp_out(&syn);
    assert_eq!(
        dst,
        (backend(1), 80),
        "round robin starts at the first service"
    );
    assert_eq!(dmac, backend_mac(1));
    assert_eq!(src.0, SNIP);
    let nat = src.1;
    assert!(nat >= engine::nat::FIRST_WORKER_PORT);

    let mut synack = tcp(
        backend_mac(1),
        (backend(1), 80),
        (SNIP, nat),
        Flags::SynAck,
        b"",
    );
    assert_eq!(lab.run(&mut synack), Verdict::Tx { port: 0 });
    let (dmac, src, dst, _) = tcp_out(&synack);
    assert_eq!((dmac, src, dst), (CLIENT_MAC, (VIP, 80), client));

    let mut data = tcp(
        CLIENT_MAC,
        client,
        (VIP, 80),
        Flags::Ack,
        b"GET / HTTP/1.1\r\n\r\n",
    );
    assert_eq!(lab.run(&mut data), Verdict::Tx { port: 0 });
    let (_, _, dst, payload) = tcp_out(&data);
    assert_eq!(dst, (backend(1), 80));
    assert_eq!(payload, b"GET / HTTP/1.1\r\n\r\n");
    assert_eq!(lab.counters.active(0), 1);
    assert_eq!(lab.counters.totals(0).packets, 3);

    // A second client goes to the next service.
    let mut syn2 = tcp(CLIENT_MAC, (CLIENT, 40_001), (VIP, 80), Flags::Syn, b"");
    lab.run(&mut syn2);
    assert_eq!(tcp_out(&syn2).2, (backend(2), 80));

    // FIN both ways, then the closed timeout removes the flow and frees the service's slot.
    let mut fin = tcp(CLIENT_MAC, client, (VIP, 80), Flags::Fin, b"");
    assert_eq!(lab.run(&mut fin), Verdict::Tx { port: 0 });
    let mut fin2 = tcp(
        backend_mac(1),
        (backend(1), 80),
        (SNIP, nat),
        Flags::Fin,
        b"",
    );
    assert_eq!(lab.run(&mut fin2), Verdict::Tx { port: 0 });
    assert_eq!(
        lab.counters.active(0),
        0,
        "a closed connection is no longer active"
    );
    lab.now += 2_001;
    for _ in 0..4 {
        lab.worker.housekeeping(lab.now);
    }
    assert_eq!(lab.counters.active(0), 0);
    assert_eq!(
        lab.worker.flows().len(),
        1,
        "the second client's embryonic flow is still young"
    );
    let mut late = tcp(CLIENT_MAC, client, (VIP, 80), Flags::Ack, b"x");
    assert_eq!(lab.run(&mut late), Verdict::Drop(DropReason::NoFlow));
}

#[test]
fn rst_closes_and_unanswered_syns_expire() {
    let mut lab = Lab::new(CONFIG, 64);
    let mut syn = tcp(CLIENT_MAC, (CLIENT, 41_000), (VIP, 80), Flags::Syn, b"");
    lab.run(&mut syn);
    let mut rst = tcp(CLIENT_MAC, (CLIENT, 41_000), (VIP, 80), Flags::Rst, b"");
    assert_eq!(lab.run(&mut rst), Verdict::Tx { port: 0 });
    let mut syn2 = tcp(CLIENT_MAC, (CLIENT, 41_001), (VIP, 80), Flags::Syn, b"");
    lab.run(&mut syn2);
    lab.now += 2_001;
    lab.worker.housekeeping(lab.now);
    assert_eq!(lab.worker.flows().len(), 1);
    lab.now += 30_000;
    lab.worker.housekeeping(lab.now);
    assert!(lab.worker.flows().is_empty());
    assert_eq!(lab.worker.stats.flows_expired, 2);
}

/// A table with more flows than one housekeeping call examines is gone over in several
/// calls, and the worker says it is behind until then (a sleeping run loop comes back soon).
#[test]
fn a_sweep_with_more_flows_than_one_call_takes_says_it_is_behind() {
    let mut lab = Lab::new(CONFIG, 16_384);
    for port in 0..6_000u16 {
        let mut q = udp(CLIENT_MAC, (CLIENT, 10_000 + port), (VIP, 53), b"q");
        assert_eq!(lab.run(&mut q), Verdict::Tx { port: 0 });
    }
    assert_eq!(lab.worker.flows().len(), 6_000);
    // Past the UDP timeout: every flow goes, 2,048 a call.
    lab.now += 200_000;
    let mut behind = Vec::new();
    for _ in 0..4 {
        lab.worker.housekeeping(lab.now);
        behind.push((lab.worker.flows().len(), lab.worker.sweep_behind()));
    }
    assert_eq!(
        behind,
        [(3_952, true), (1_904, true), (0, false), (0, false)]
    );
}

#[test]
fn udp_sessions_and_their_replies() {
    let mut lab = Lab::new(CONFIG, 64);
    let mut q = udp(CLIENT_MAC, (CLIENT, 5353), (VIP, 53), b"query");
    assert_eq!(lab.run(&mut q), Verdict::Tx { port: 0 });
    let ip = Ipv4HeaderSlice::from_slice(&q[14..]).unwrap();
    let u = UdpHeaderSlice::from_slice(&q[34..]).unwrap();
    assert_eq!(
        (ip.destination_addr(), u.destination_port()),
        (backend(1), 53)
    );
    assert_eq!(
        u.checksum(),
        u.to_header()
            .calc_checksum_ipv4(&ip.to_header(), b"query")
            .unwrap()
    );
    let nat = u.source_port();
    let mut a = udp(backend_mac(1), (backend(1), 53), (SNIP, nat), b"answer");
    assert_eq!(lab.run(&mut a), Verdict::Tx { port: 0 });
    let ip = Ipv4HeaderSlice::from_slice(&a[14..]).unwrap();
    let u = UdpHeaderSlice::from_slice(&a[34..]).unwrap();
    assert_eq!(
        (
            ip.source_addr(),
            u.source_port(),
            ip.destination_addr(),
            u.destination_port()
        ),
        (VIP, 53, CLIENT, 5353)
    );
    assert_eq!(
        u.checksum(),
        u.to_header()
            .calc_checksum_ipv4(&ip.to_header(), b"answer")
            .unwrap()
    );
}

#[test]
fn icmp_echo_to_the_vip_is_answered() {
    let mut lab = Lab::new(CONFIG, 64);
    let mut v = Vec::new();
    PacketBuilder::ethernet2(CLIENT_MAC, LB_MAC)
        .ipv4(CLIENT.octets(), VIP.octets(), 64)
        .icmpv4_echo_request(7, 1)
        .write(&mut v, b"ping")
        .unwrap();
    assert_eq!(lab.run(&mut v), Verdict::Tx { port: 0 });
    let ip = Ipv4HeaderSlice::from_slice(&v[14..]).unwrap();
    assert_eq!((ip.source_addr(), ip.destination_addr()), (VIP, CLIENT));
    assert_eq!(ip.header_checksum(), ip.to_header().calc_header_checksum());
    assert_eq!(v[34], 0, "echo reply");
    assert_eq!(
        engine::wire::checksum(&v[34..]),
        0,
        "ICMP checksum verifies"
    );
}

#[test]
fn every_drop_reason_is_counted() {
    let mut lab = Lab::new(CONFIG, 1);
    // The table's one flow, established (a half-open one would give way to the next SYN),
    // so that the next new flow finds the table full.
    let mut syn = tcp(CLIENT_MAC, (CLIENT, 2), (VIP, 80), Flags::Syn, b"");
    assert_eq!(lab.run(&mut syn), Verdict::Tx { port: 0 });
    let (_, src, dst, _) = tcp_out(&syn);
    let mac = backend_mac(dst.0.octets()[3] - 10);
    let mut answer = tcp(mac, dst, src, Flags::SynAck, b"");
    assert_eq!(lab.run(&mut answer), Verdict::Tx { port: 0 });
    let mut ack = tcp(CLIENT_MAC, (CLIENT, 2), (VIP, 80), Flags::Ack, b"");
    assert_eq!(lab.run(&mut ack), Verdict::Tx { port: 0 });
    let mut cases: Vec<(Vec<u8>, DropReason)> = vec![
        (vec![0u8; 10], DropReason::Truncated),
        (
            {
                let mut f = tcp(CLIENT_MAC, (CLIENT, 1), (VIP, 80), Flags::Syn, b"");
                f[12..14].copy_from_slice(&[0x86, 0xdd]);
                f
            },
            DropReason::NotIpv4,
        ),
        (
            {
                let mut f = tcp(CLIENT_MAC, (CLIENT, 1), (VIP, 80), Flags::Syn, b"");
                f[14] = 0x44; // IHL 4: shorter than an IPv4 header
                f
            },
            DropReason::Malformed,
        ),
        (
            {
                let mut f = tcp(CLIENT_MAC, (CLIENT, 1), (VIP, 80), Flags::Syn, b"");
                f.truncate(40);
                f
            },
            DropReason::Truncated,
        ),
        (
            {
                let mut f = tcp(CLIENT_MAC, (CLIENT, 1), (VIP, 80), Flags::Syn, b"");
                f[20] = 0x20; // more fragments
                f
            },
            DropReason::Fragment,
        ),
        (
            {
                let mut f = tcp(CLIENT_MAC, (CLIENT, 1), (VIP, 80), Flags::Syn, b"");
                f[23] = 47; // GRE
                f
            },
            DropReason::UnsupportedProtocol,
        ),
        (
            {
                let mut f = tcp(CLIENT_MAC, (CLIENT, 1), (VIP, 80), Flags::Syn, b"");
                f[22] = 1;
                f
            },
            DropReason::TtlExpired,
        ),
        (
            tcp(
                CLIENT_MAC,
                (CLIENT, 1),
                (Ipv4Addr::new(198, 18, 0, 99), 80),
                Flags::Syn,
                b"",
            ),
            DropReason::NotForUs,
        ),
        (
            tcp(CLIENT_MAC, (CLIENT, 1), (VIP, 81), Flags::Syn, b""),
            DropReason::NoVserver,
        ),
        (
            tcp(CLIENT_MAC, (CLIENT, 1), (VIP, 8080), Flags::Syn, b""),
            DropReason::VserverDisabled,
        ),
        (
            tcp(CLIENT_MAC, (CLIENT, 1), (VIP, 80), Flags::Ack, b""),
            DropReason::NoFlow,
        ),
        (
            tcp(CLIENT_MAC, (CLIENT, 3), (VIP, 80), Flags::Syn, b""),
            DropReason::FlowTableFull,
        ),
        (
            tcp(
                backend_mac(1),
                (backend(1), 80),
                (SNIP, 9999),
                Flags::Ack,
                b"",
            ),
            DropReason::NoMonitorCore,
        ),
        (
            arp(
                true,
                CLIENT_MAC,
                CLIENT,
                [0; 6],
                Ipv4Addr::new(198, 18, 0, 99),
            ),
            DropReason::Ignored,
        ),
    ];
    for (i, (frame, reason)) in cases.iter_mut().enumerate() {
        let before = lab.worker.drops.get(*reason);
        assert_eq!(lab.run(frame), Verdict::Drop(*reason), "case {i}");
        assert_eq!(lab.worker.drops.get(*reason), before + 1, "case {i}");
    }
    // A neighbour learned on a port this worker has no MAC for (no way out).
    let mut lab = Lab::new(CONFIG, 64);
    lab.worker.process(
        lab.now,
        5,
        &mut arp(false, backend_mac(1), backend(1), LB_MAC, SNIP),
    );
    let mut f = tcp(CLIENT_MAC, (CLIENT, 1), (VIP, 80), Flags::Syn, b"");
    assert_eq!(lab.run(&mut f), Verdict::Drop(DropReason::NoRoute));
    // No service UP.
    let mut lab = Lab::new(CONFIG, 64);
    for s in 0..3 {
        lab.health.set_up(s, false);
    }
    let mut f = tcp(CLIENT_MAC, (CLIENT, 1), (VIP, 80), Flags::Syn, b"");
    assert_eq!(lab.run(&mut f), Verdict::Drop(DropReason::NoService));
    // A service no SNIP reaches, and one whose MAC is unknown.
    let mut lab = Lab::new(
        &format!(
            "{CONFIG}\nadd service far 203.0.113.9 TCP 80\nadd service near 198.18.0.40 TCP 80\nadd lb vserver v2 TCP 198.18.0.100 81\nbind lb vserver v2 far\nadd lb vserver v3 TCP 198.18.0.100 82 -lbMethod ROUNDROBIN\nbind lb vserver v3 near"
        ),
        64,
    );
    let mut f = tcp(CLIENT_MAC, (CLIENT, 1), (VIP, 81), Flags::Syn, b"");
    assert_eq!(
        lab.run(&mut f),
        Verdict::Drop(DropReason::NoService),
        "an unreachable service is no candidate"
    );
    let mut f = tcp(CLIENT_MAC, (CLIENT, 1), (VIP, 82), Flags::Syn, b"");
    assert_eq!(lab.run(&mut f), Verdict::Drop(DropReason::NoNeighbour));
    let mut asked = 0;
    lab.worker
        .drain_outbox(|_, f| asked += usize::from(f[38..42] == [198, 18, 0, 40]));
    assert_eq!(asked, 1, "an ARP request went out for the unknown next hop");
}

#[test]
fn nat_ports_run_out_cleanly() {
    // One worker among 5460 owns a handful of ports.
    let (cfg, _) = ctl::conf::replay_text(CONFIG);
    let mut ids = ServiceIds::default();
    let tables = Arc::new(Tables::build(&cfg, &mut ids, 1));
    let (counters, mut writers) = Counters::new(1, 8);
    let mut w = Worker::new(WorkerSetup {
        id: 0,
        workers: 5000,
        macs: vec![LB_MAC],
        flow_capacity: 1024,
        writer: writers.remove(0),
        counters,
        health: Arc::new(ServiceHealth::new(8)),
        tables,
    });
    for i in 1..=3 {
        w.process(
            0,
            0,
            &mut arp(false, backend_mac(i), backend(i), LB_MAC, SNIP),
        );
    }
    let ports = engine::nat::Snat::range_of(0, 5000).len();
    for p in 0..=ports as u16 {
        w.process(
            0,
            0,
            &mut tcp(CLIENT_MAC, (CLIENT, 2000 + p), (VIP, 80), Flags::Syn, b""),
        );
    }
    assert_eq!(w.drops.get(DropReason::NatPortsExhausted), 1);
    assert_eq!(w.flows().len(), ports);
}

mod garbage {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Random bytes, and real frames with random bytes flipped, never panic: each gets a
        /// verdict and drops are counted.
        #[test]
        fn random_frames_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200), flips in prop::collection::vec((0usize..80, any::<u8>()), 0..6)) {
            let mut lab = Lab::new(CONFIG, 16);
            let mut f = bytes.clone();
            let before = lab.worker.drops.total();
            if let Verdict::Drop(_) = lab.run(&mut f) {
                prop_assert_eq!(lab.worker.drops.total(), before + 1);
            }
            let mut g = tcp(CLIENT_MAC, (CLIENT, 7), (VIP, 80), Flags::Syn, b"hello");
            for (at, v) in flips {
                if at < g.len() { g[at] ^= v; }
            }
            let _ = lab.run(&mut g);
        }
    }
}

#[test]
fn a_burst_is_processed_in_stages_and_keeps_frame_order() {
    let mut lab = Lab::new(CONFIG, 64);
    // Two datagrams of one new UDP session and a SYN, in one burst: the session's second
    // datagram finds the flow its first one created, in the same burst.
    let mut burst = vec![
        udp(CLIENT_MAC, (CLIENT, 6000), (VIP, 53), b"one"),
        udp(CLIENT_MAC, (CLIENT, 6000), (VIP, 53), b"two"),
        tcp(CLIENT_MAC, (CLIENT, 6001), (VIP, 80), Flags::Syn, b""),
        vec![1, 2, 3],
    ];
    let mut verdicts = [Verdict::Consumed; 4];
    assert_eq!(
        lab.worker
            .process_burst(lab.now, 0, &mut burst, &mut verdicts),
        4
    );
    assert_eq!(verdicts[..3], [Verdict::Tx { port: 0 }; 3]);
    assert_eq!(verdicts[3], Verdict::Drop(DropReason::Truncated));
    assert_eq!(lab.worker.stats.flows_created, 2);
    let port = |f: &[u8]| u16::from_be_bytes([f[34], f[35]]);
    assert_eq!(
        port(&burst[0]),
        port(&burst[1]),
        "both datagrams leave from the same SNIP port"
    );
    assert_eq!(&burst[1][42..45], b"two");
}

#[test]
fn each_frame_of_a_burst_is_judged_by_its_own_destination() {
    let mut lab = Lab::new(CONFIG, 64);
    // The burst remembers the last address it looked up: frames to the VIP, to an address
    // that is not ours and to the SNIP, interleaved, must each get their own answer.
    let elsewhere = Ipv4Addr::new(198, 18, 0, 99);
    let mut burst = vec![
        tcp(CLIENT_MAC, (CLIENT, 6101), (VIP, 80), Flags::Syn, b""),
        tcp(CLIENT_MAC, (CLIENT, 6102), (elsewhere, 80), Flags::Syn, b""),
        tcp(CLIENT_MAC, (CLIENT, 6103), (elsewhere, 80), Flags::Syn, b""),
        tcp(CLIENT_MAC, (CLIENT, 6104), (VIP, 80), Flags::Syn, b""),
        tcp(
            backend_mac(1),
            (backend(1), 80),
            (SNIP, 40000),
            Flags::Ack,
            b"x",
        ),
        tcp(CLIENT_MAC, (CLIENT, 6105), (VIP, 80), Flags::Syn, b""),
    ];
    let mut verdicts = [Verdict::Consumed; 6];
    lab.worker
        .process_burst(lab.now, 0, &mut burst, &mut verdicts);
    let (tx, no_flow) = (Verdict::Tx { port: 0 }, Verdict::Drop(DropReason::NoFlow));
    let not_ours = Verdict::Drop(DropReason::NotForUs);
    assert_eq!(verdicts, [tx, not_ours, not_ours, tx, no_flow, tx]);
    assert_eq!(lab.worker.stats.flows_created, 3);
}

#[test]
fn a_burst_of_syns_spreads_and_a_syn_sent_twice_in_it_opens_one_flow() {
    let mut lab = Lab::new(CONFIG, 64);
    // Nine SYNs of new connections: the third sent twice in a row, the fourth again three
    // frames later, the first again at the end (its flow long in the table by then).
    let ports = [
        7000u16, 7001, 7002, 7002, 7003, 7004, 7005, 7003, 7006, 7007, 7008, 7000,
    ];
    let mut burst: Vec<Vec<u8>> = ports
        .iter()
        .map(|&p| tcp(CLIENT_MAC, (CLIENT, p), (VIP, 80), Flags::Syn, b""))
        .collect();
    let mut verdicts = [Verdict::Consumed; 12];
    lab.worker
        .process_burst(lab.now, 0, &mut burst, &mut verdicts);
    assert_eq!(verdicts, [Verdict::Tx { port: 0 }; 12]);
    assert_eq!(lab.worker.stats.flows_created, 9);
    assert_eq!(lab.worker.flows().len(), 9);
    let outs: Vec<Segment> = burst.iter().map(|f| tcp_out(f)).collect();
    assert_eq!(
        outs[2].1, outs[3].1,
        "the repeated SYN leaves on its flow's SNAT tuple"
    );
    assert_eq!(outs[4].1, outs[7].1);
    assert_eq!(outs[0].1, outs[11].1);
    // ROUNDROBIN over three services: each takes three of the nine connections.
    for (i, service) in [11u8, 12, 13].into_iter().enumerate() {
        let to = outs
            .iter()
            .filter(|o| o.2.0 == Ipv4Addr::new(198, 18, 0, service))
            .map(|o| o.1)
            .collect::<std::collections::HashSet<_>>();
        assert_eq!(to.len(), 3, "service {service}: {outs:?}");
        assert_eq!(lab.counters.active(i as u32), 3);
    }
}

/// The RSTs the worker queued: (destination MAC, source, destination, sequence number).
type Reset = ([u8; 6], (Ipv4Addr, u16), (Ipv4Addr, u16), u32);

fn queued_resets(lab: &mut Lab) -> Vec<Reset> {
    let mut out = Vec::new();
    lab.worker.drain_outbox(|_, f| {
        if f[12..14] == [0x08, 0x00] {
            let (dmac, src, dst, _) = tcp_out(f);
            let tcp = TcpHeaderSlice::from_slice(&f[34..]).unwrap();
            assert!(tcp.rst());
            out.push((dmac, src, dst, tcp.sequence_number()));
        }
    });
    out
}

#[test]
fn a_down_service_has_its_flows_flushed_with_resets_both_ways() {
    let mut lab = Lab::new(CONFIG, 64);
    let client = (CLIENT, 42_000);
    let mut syn = tcp(CLIENT_MAC, client, (VIP, 80), Flags::Syn, b"");
    lab.run(&mut syn);
    let (_, snat, service, _) = tcp_out(&syn);
    assert_eq!(service, (backend(1), 80));
    // The client's 1000 as the service counts it (a client without timestamps is
    // renumbered toward the service).
    let service_seq = numbers_of(&syn).0;
    // Not UP but not decided DOWN either (a monitor just bound): the flow goes on.
    lab.health.set_up(0, false);
    let mut data = tcp(CLIENT_MAC, client, (VIP, 80), Flags::Ack, b"GET /");
    assert_eq!(lab.run(&mut data), Verdict::Tx { port: 0 });
    // The monitors decide DOWN: the next frame of the flow is dropped and both ends reset.
    lab.health.set_down(0, true);
    let mut data = tcp(CLIENT_MAC, client, (VIP, 80), Flags::Ack, b"GET /");
    assert_eq!(lab.run(&mut data), Verdict::Drop(DropReason::Flushed));
    let resets = queued_resets(&mut lab);
    // To the client from the VIP with the sequence number it acknowledged (1), to the service
    // from the SNIP with the client's (1000, as the service counts it).
    assert!(
        resets.contains(&(CLIENT_MAC, (VIP, 80), client, 1)),
        "{resets:?}"
    );
    assert!(
        resets.contains(&(backend_mac(1), snat, service, service_seq)),
        "{resets:?}"
    );
    assert_eq!(lab.worker.stats.flows_flushed, 1);
    assert_eq!(lab.counters.active(0), 0);
    // What the client sends next belongs to no connection: answered with an RST.
    let mut late = tcp(CLIENT_MAC, client, (VIP, 80), Flags::Ack, b"x");
    assert_eq!(lab.run(&mut late), Verdict::Drop(DropReason::NoFlow));
    assert_eq!(
        queued_resets(&mut lab),
        [(CLIENT_MAC, (VIP, 80), client, 1)]
    );
}

#[test]
fn a_syn_reusing_a_closed_flows_ports_opens_a_new_flow() {
    let mut lab = Lab::new(CONFIG, 64);
    let client = (CLIENT, 43_000);
    let mut syn = tcp(CLIENT_MAC, client, (VIP, 80), Flags::Syn, b"");
    lab.run(&mut syn);
    assert_eq!(tcp_out(&syn).2, (backend(1), 80));
    let mut rst = tcp(CLIENT_MAC, client, (VIP, 80), Flags::Rst, b"");
    lab.run(&mut rst);
    // Within the closed flow's linger time the client opens again from the same port: a
    // new connection, balanced afresh (round robin moves on to the next service).
    let mut again = tcp(CLIENT_MAC, client, (VIP, 80), Flags::Syn, b"");
    assert_eq!(lab.run(&mut again), Verdict::Tx { port: 0 });
    assert_eq!(tcp_out(&again).2, (backend(2), 80));
    assert_eq!(lab.worker.stats.flows_created, 2);
    assert_eq!(lab.worker.flows().len(), 1);
}

#[test]
fn a_connection_closing_in_a_burst_counts_before_that_bursts_new_flows() {
    let config = "add ns ip 198.18.0.2 255.255.255.0 -type SNIP
add service s1 198.18.0.11 HTTP 80
add service s2 198.18.0.12 HTTP 80
add service s3 198.18.0.13 HTTP 80
add lb vserver web HTTP 198.18.0.100 80 -lbMethod LEASTCONNECTION
bind lb vserver web s1
bind lb vserver web s2
";
    let mut lab = Lab::new(config, 64);
    let open = |lab: &mut Lab, port: u16| {
        let mut syn = tcp(CLIENT_MAC, (CLIENT, port), (VIP, 80), Flags::Syn, b"");
        lab.run(&mut syn);
        tcp_out(&syn)
    };
    let (_, _, first, _) = open(&mut lab, 44_000);
    let (_, nat, second, _) = open(&mut lab, 44_001);
    assert_eq!((first.0, second.0), (backend(1), backend(2)));
    // s2's connection closes: the client's FIN, then the service's FIN in the same burst as a
    // new SYN. The new flow must see s2 with no active transaction and go there, where a
    // count taken before the FIN would tie and go to s1.
    let mut fin = tcp(CLIENT_MAC, (CLIENT, 44_001), (VIP, 80), Flags::Fin, b"");
    lab.run(&mut fin);
    let mut burst = vec![
        tcp(backend_mac(2), second, (SNIP, nat.1), Flags::Fin, b""),
        tcp(CLIENT_MAC, (CLIENT, 44_002), (VIP, 80), Flags::Syn, b""),
    ];
    let mut verdicts = [Verdict::Consumed; 2];
    lab.worker
        .process_burst(lab.now, 0, &mut burst, &mut verdicts);
    assert_eq!(verdicts, [Verdict::Tx { port: 0 }; 2]);
    assert_eq!(tcp_out(&burst[1]).2, second);
    assert_eq!(lab.counters.active(1), 1);
}

#[test]
fn sourceip_persistence_keeps_a_client_on_its_service() {
    let config = CONFIG.replace(
        "add lb vserver web HTTP 198.18.0.100 80 -lbMethod ROUNDROBIN",
        "add lb vserver web HTTP 198.18.0.100 80 -lbMethod ROUNDROBIN -persistenceType SOURCEIP -timeout 2",
    );
    // Room for its unanswered SYNs below the SYN-cookie threshold (an eighth of the table).
    let mut lab = Lab::new(&config, 1024);
    let service_of = |lab: &mut Lab, client: Ipv4Addr, port: u16| {
        let mut syn = tcp(CLIENT_MAC, (client, port), (VIP, 80), Flags::Syn, b"");
        assert_eq!(lab.run(&mut syn), Verdict::Tx { port: 0 });
        tcp_out(&syn).2.0
    };
    let other = Ipv4Addr::new(198, 18, 0, 51);
    // Round robin would rotate; the client stays on its first service.
    let first = service_of(&mut lab, CLIENT, 45_000);
    for port in 45_001..45_006 {
        assert_eq!(service_of(&mut lab, CLIENT, port), first);
    }
    // Another client is balanced by the method and keeps its own.
    let second = service_of(&mut lab, other, 45_000);
    assert_ne!(second, first);
    assert_eq!(service_of(&mut lab, other, 45_001), second);
    // Its service going DOWN moves the client, which then stays on the new one.
    lab.health.set_up(0, false);
    let moved = service_of(&mut lab, CLIENT, 45_010);
    assert_ne!(moved, first);
    lab.health.set_up(0, true);
    assert_eq!(service_of(&mut lab, CLIENT, 45_011), moved);
    // -timeout 2 is two minutes: 55 s later the session still holds (its expiry is exact in the
    // persistence table's own tests).
    lab.now += 55_000;
    assert_eq!(service_of(&mut lab, CLIENT, 45_020), moved);
}

#[test]
fn idle_flows_of_a_down_service_are_flushed_by_the_sweep() {
    let mut lab = Lab::new(CONFIG, 64);
    let client = (CLIENT, 46_000);
    let mut syn = tcp(CLIENT_MAC, client, (VIP, 80), Flags::Syn, b"");
    lab.run(&mut syn);
    let (_, snat, service, _) = tcp_out(&syn);
    let mut synack = tcp(backend_mac(1), service, snat, Flags::SynAck, b"");
    lab.run(&mut synack);
    lab.worker.drain_outbox(|_, _| {});
    // The connection is idle when its service goes DOWN: the sweep ends it and asks both
    // peers for their numbers with an out-of-window ACK each.
    lab.health.set_up(0, false);
    lab.health.set_down(0, true);
    lab.worker.housekeeping(lab.now);
    assert!(lab.worker.flows().is_empty());
    assert_eq!(lab.worker.stats.flows_flushed, 1);
    assert_eq!(lab.counters.active(0), 0);
    let mut probes = Vec::new();
    lab.worker.drain_outbox(|_, f| {
        let (dmac, src, dst, _) = tcp_out(f);
        let tcp = TcpHeaderSlice::from_slice(&f[34..]).unwrap();
        assert!(tcp.ack() && !tcp.rst() && !tcp.syn());
        probes.push((dmac, src, dst));
    });
    assert_eq!(
        probes,
        [
            (CLIENT_MAC, (VIP, 80), client),
            (backend_mac(1), snat, service)
        ]
    );
    // The service's answer (its numbers) meets no flow: an exact RST goes back.
    let mut answer = tcp(backend_mac(1), service, snat, Flags::Ack, b"");
    assert_eq!(lab.run(&mut answer), Verdict::Drop(DropReason::NoFlow));
    assert_eq!(
        queued_resets(&mut lab),
        [(backend_mac(1), snat, service, 1)]
    );
}

/// What a sender with transmit checksum offload hands a veth: the TCP or UDP checksum field
/// holds only the pseudo-header's folded sum (Linux's `CHECKSUM_PARTIAL`).
fn make_partial(frame: &mut [u8]) {
    let ip = Ipv4HeaderSlice::from_slice(&frame[14..]).unwrap();
    let l4_len = usize::from(ip.total_len()) - usize::from(ip.ihl()) * 4;
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&ip.source());
    pseudo.extend_from_slice(&ip.destination());
    pseudo.extend_from_slice(&[0, ip.protocol().0]);
    pseudo.extend_from_slice(&(l4_len as u16).to_be_bytes());
    let folded = !engine::wire::checksum(&pseudo);
    let at = if ip.protocol().0 == 6 {
        34 + 16
    } else {
        34 + 6
    };
    frame[at..at + 2].copy_from_slice(&folded.to_be_bytes());
}

#[test]
fn partial_checksums_from_offloading_senders_are_completed() {
    let mut lab = Lab::new(CONFIG, 64);
    // TCP both ways: the client's SYN and the service's answer carry partial checksums.
    let client = (CLIENT, 40_100);
    let mut syn = tcp(CLIENT_MAC, client, (VIP, 80), Flags::Syn, b"");
    make_partial(&mut syn);
    assert_eq!(lab.run(&mut syn), Verdict::Tx { port: 0 });
    let (_, src, _, _) = tcp_out(&syn); // asserts a complete TCP checksum
    let mut reply = tcp(backend_mac(1), (backend(1), 80), src, Flags::SynAck, b"");
    make_partial(&mut reply);
    assert_eq!(lab.run(&mut reply), Verdict::Tx { port: 0 });
    tcp_out(&reply);
    let mut data = tcp(
        CLIENT_MAC,
        client,
        (VIP, 80),
        Flags::Ack,
        b"GET / HTTP/1.1\r\n\r\n",
    );
    make_partial(&mut data);
    assert_eq!(lab.run(&mut data), Verdict::Tx { port: 0 });
    let (_, _, _, payload) = tcp_out(&data);
    assert_eq!(payload, b"GET / HTTP/1.1\r\n\r\n");
    // UDP.
    let mut q = udp(CLIENT_MAC, (CLIENT, 5354), (VIP, 53), b"query");
    make_partial(&mut q);
    assert_eq!(lab.run(&mut q), Verdict::Tx { port: 0 });
    let ip = Ipv4HeaderSlice::from_slice(&q[14..]).unwrap();
    let u = UdpHeaderSlice::from_slice(&q[34..]).unwrap();
    assert_eq!(
        u.checksum(),
        u.to_header()
            .calc_checksum_ipv4(&ip.to_header(), b"query")
            .unwrap()
    );
}

#[test]
fn corrupted_checksums_are_dropped_and_counted() {
    let mut lab = Lab::new(CONFIG, 64);
    let mut syn = tcp(CLIENT_MAC, (CLIENT, 40_200), (VIP, 80), Flags::Syn, b"x");
    let last = syn.len() - 1;
    syn[last] ^= 0x5a; // the payload changed after the checksum was computed
    assert_eq!(lab.run(&mut syn), Verdict::Drop(DropReason::BadChecksum));
    assert_eq!(lab.worker.drops.get(DropReason::BadChecksum), 1);
    assert_eq!(
        lab.worker.stats.flows_created, 0,
        "no flow for a corrupted SYN"
    );
}

#[test]
fn monitor_frames_with_partial_checksums_reach_the_monitor_core_complete() {
    let mut lab = Lab::new(CONFIG, 64);
    lab.worker.attach_monitor();
    let mut answer = tcp(
        backend_mac(1),
        (backend(1), 80),
        (SNIP, 2000),
        Flags::SynAck,
        b"",
    );
    make_partial(&mut answer);
    assert_eq!(lab.run(&mut answer), Verdict::ToMonitor);
    tcp_out_checksums_only(&answer);
}

/// Asserts a TCP frame's checksums (whatever its MACs).
fn tcp_out_checksums_only(f: &[u8]) {
    let ip = Ipv4HeaderSlice::from_slice(&f[14..]).unwrap();
    let tcp = TcpHeaderSlice::from_slice(&f[34..]).unwrap();
    assert_eq!(tcp.checksum(), tcp.calc_checksum_ipv4(&ip, &[]).unwrap());
}

/// A segment with the timestamps option (TSval, TSecr).
fn tcp_with_timestamps(
    smac: [u8; 6],
    src: (Ipv4Addr, u16),
    dst: (Ipv4Addr, u16),
    syn_ack: bool,
    ts: (u32, u32),
) -> Vec<u8> {
    use etherparse::TcpOptionElement;
    let b = PacketBuilder::ethernet2(smac, LB_MAC)
        .ipv4(src.0.octets(), dst.0.octets(), 64)
        .tcp(src.1, dst.1, 1000, 65535);
    let b = if syn_ack { b.syn().ack(1001) } else { b.syn() };
    let b = b
        .options(&[TcpOptionElement::Timestamp(ts.0, ts.1)])
        .unwrap();
    let mut v = Vec::new();
    b.write(&mut v, b"").unwrap();
    v
}

fn timestamps_of(f: &[u8]) -> (u32, u32) {
    let t = TcpHeaderSlice::from_slice(&f[34..]).unwrap();
    t.options_iterator()
        .find_map(|o| match o {
            Ok(etherparse::TcpOptionElement::Timestamp(v, e)) => Some((v, e)),
            _ => None,
        })
        .expect("timestamps kept")
}

#[test]
fn timestamps_toward_services_only_grow_and_echoes_come_back_unchanged() {
    let mut lab = Lab::new(CONFIG, 64);
    // A client whose clock reads high, then (another connection, its own random offset) low.
    let mut sent = Vec::new();
    for (port, tsval) in [(41_000, 4_000_000_000u32), (41_001, 17)] {
        lab.now += 1_000;
        let mut syn = tcp_with_timestamps(CLIENT_MAC, (CLIENT, port), (VIP, 80), false, (tsval, 0));
        assert_eq!(lab.run(&mut syn), Verdict::Tx { port: 0 });
        let (_, src, dst, _) = tcp_out(&syn); // checksums verified
        let (forwarded, echo) = timestamps_of(&syn);
        assert_eq!(echo, 0);
        sent.push(forwarded);
        // The service answers, echoing what it got; the client gets its own clock back.
        let mac = if dst.0 == backend(1) {
            backend_mac(1)
        } else {
            backend_mac(2)
        };
        let mut answer = tcp_with_timestamps(mac, dst, src, true, (555, forwarded));
        assert_eq!(lab.run(&mut answer), Verdict::Tx { port: 0 });
        tcp_out(&answer);
        assert_eq!(
            timestamps_of(&answer),
            (555, tsval),
            "the echo translated back"
        );
    }
    assert!(
        sent[1].wrapping_sub(sent[0]) < u32::MAX / 2 && sent[1] != sent[0],
        "a later flow carries a later timestamp whatever the client's clock: {sent:?}"
    );
}

/// A TCP segment's sequence and acknowledgement numbers.
fn numbers_of(f: &[u8]) -> (u32, u32) {
    let t = TcpHeaderSlice::from_slice(&f[34..]).unwrap();
    (t.sequence_number(), t.acknowledgment_number())
}

/// The SACK blocks of a TCP segment.
fn sack_of(f: &[u8]) -> Vec<(u32, u32)> {
    let t = TcpHeaderSlice::from_slice(&f[34..]).unwrap();
    t.options_iterator()
        .find_map(|o| match o {
            Ok(etherparse::TcpOptionElement::SelectiveAcknowledgement(first, rest)) => Some(
                std::iter::once(first)
                    .chain(rest.into_iter().flatten())
                    .collect(),
            ),
            _ => None,
        })
        .unwrap_or_default()
}

#[test]
fn a_client_without_timestamps_is_renumbered_toward_the_service_and_back() {
    let mut lab = Lab::new(CONFIG, 64);
    // The service sees sequence numbers off the SNAT tuple's clock, the client its own
    // numbers back, SACK blocks included.
    let client = (CLIENT, 44_000);
    let mut syn = tcp(CLIENT_MAC, client, (VIP, 80), Flags::Syn, b"");
    assert_eq!(lab.run(&mut syn), Verdict::Tx { port: 0 });
    let (_, snat, service, _) = tcp_out(&syn);
    let (isn, _) = numbers_of(&syn);
    assert_ne!(isn, 1000, "the client's ISN moved onto the tuple's clock");
    // The service answers with its own ISN 5000, acknowledging the renumbered SYN; then an
    // ACK with a SACK block over the client's bytes 1001..1101 as it counts them.
    let mut v = Vec::new();
    PacketBuilder::ethernet2(backend_mac(1), LB_MAC)
        .ipv4(service.0.octets(), snat.0.octets(), 64)
        .tcp(service.1, snat.1, 5000, 65535)
        .syn()
        .ack(isn.wrapping_add(1))
        .write(&mut v, b"")
        .unwrap();
    assert_eq!(lab.run(&mut v), Verdict::Tx { port: 0 });
    tcp_out(&v); // checksums verified
    assert_eq!(
        numbers_of(&v),
        (5000, 1001),
        "the client's own numbers back"
    );
    let answer = PacketBuilder::ethernet2(backend_mac(1), LB_MAC)
        .ipv4(service.0.octets(), snat.0.octets(), 64)
        .tcp(service.1, snat.1, 5001, 65535)
        .ack(isn.wrapping_add(1))
        .options(&[
            etherparse::TcpOptionElement::Noop,
            etherparse::TcpOptionElement::Noop,
            etherparse::TcpOptionElement::SelectiveAcknowledgement(
                (isn.wrapping_add(101), isn.wrapping_add(201)),
                [
                    Some((isn.wrapping_add(301), isn.wrapping_add(401))),
                    None,
                    None,
                ],
            ),
        ])
        .unwrap();
    let mut v = Vec::new();
    answer.write(&mut v, b"").unwrap();
    assert_eq!(lab.run(&mut v), Verdict::Tx { port: 0 });
    tcp_out(&v);
    assert_eq!(numbers_of(&v), (5001, 1001));
    assert_eq!(sack_of(&v), [(1101, 1201), (1301, 1401)]);
    // The client's data goes on renumbered; its acknowledgements of the service's bytes
    // are the service's own numbers.
    let mut data = tcp(CLIENT_MAC, client, (VIP, 80), Flags::Ack, b"GET /");
    assert_eq!(lab.run(&mut data), Verdict::Tx { port: 0 });
    tcp_out(&data);
    assert_eq!(numbers_of(&data), (isn, 1));
}

#[test]
fn connections_on_one_snat_tuple_without_timestamps_start_ever_higher() {
    // One service: once the worker's ports have all been used within the minute, the first
    // comes back to the same service, which may still hold it in TIME_WAIT. Its next
    // connection's sequence numbers start above the last one's, so the service takes it.
    let config =
        format!("{CONFIG}add lb vserver one HTTP 198.18.0.100 81\nbind lb vserver one s1\n");
    let mut lab = Lab::new(&config, 64);
    let mut first = None;
    for n in 0..70_000u32 {
        lab.now += 1;
        let client = (CLIENT, 1024 + (n % 60_000) as u16);
        let mut syn = tcp(CLIENT_MAC, client, (VIP, 81), Flags::Syn, b"");
        assert_eq!(lab.run(&mut syn), Verdict::Tx { port: 0 });
        let (_, snat, _, _) = tcp_out(&syn);
        let (isn, _) = numbers_of(&syn);
        match first {
            None => first = Some((snat, isn)),
            Some((port, old)) if port == snat => {
                let ahead = isn.wrapping_sub(old);
                assert!(
                    ahead > 1 && ahead < 1 << 31,
                    "connection {n} on {snat:?}: {old} then {isn}"
                );
                return;
            }
            Some(_) => {}
        }
        // The connection ends: its port goes back to the pool.
        let mut rst = tcp(CLIENT_MAC, client, (VIP, 81), Flags::Rst, b"");
        lab.run(&mut rst);
    }
    panic!("the first SNAT tuple never came back");
}

/// The services a vserver by `method` gives SYNs from these client addresses and ports.
fn services_by(method: &str, clients: &[(Ipv4Addr, u16)]) -> Vec<Ipv4Addr> {
    let config = CONFIG.replace("-lbMethod ROUNDROBIN", &format!("-lbMethod {method}"));
    let mut lab = Lab::new(&config, 1024);
    clients
        .iter()
        .map(|&client| {
            let mut syn = tcp(CLIENT_MAC, client, (VIP, 80), Flags::Syn, b"");
            assert_eq!(lab.run(&mut syn), Verdict::Tx { port: 0 }, "{client:?}");
            tcp_out(&syn).2.0
        })
        .collect()
}

#[test]
fn hash_methods_in_the_worker_read_the_clients_address_and_port() {
    let distinct = |v: &[Ipv4Addr]| v.iter().collect::<std::collections::HashSet<_>>().len();
    // One client, many ports: one service by its address, several by address and port.
    let ports: Vec<_> = (0..32).map(|p| (CLIENT, 40_000 + p)).collect();
    assert_eq!(distinct(&services_by("SOURCEIPHASH", &ports)), 1);
    assert!(distinct(&services_by("SRCIPSRCPORTHASH", &ports)) > 1);
    // Many clients: several services by their addresses, each the same every time.
    let clients: Vec<_> = (0..32)
        .map(|i| (Ipv4Addr::new(198, 18, 0, 150 + i), 40_000))
        .collect();
    let first = services_by("SOURCEIPHASH", &clients);
    assert!(distinct(&first) > 1, "{first:?}");
    assert_eq!(services_by("SOURCEIPHASH", &clients), first);
}

#[test]
fn new_flows_take_turns_over_the_snips_of_the_subnet() {
    let config = format!("{CONFIG}add ns ip 198.18.0.3 255.255.255.0 -type SNIP\n");
    let mut lab = Lab::new(&config, 64);
    let mut sources = Vec::new();
    for port in 42_000..42_006 {
        let mut syn = tcp(CLIENT_MAC, (CLIENT, port), (VIP, 80), Flags::Syn, b"");
        assert_eq!(lab.run(&mut syn), Verdict::Tx { port: 0 });
        let (_, src, dst, _) = tcp_out(&syn);
        sources.push(src.0);
        // The answer to either SNIP finds its flow.
        let mac = backend_mac(dst.0.octets()[3] - 10);
        let mut answer = tcp(mac, dst, src, Flags::SynAck, b"");
        assert_eq!(lab.run(&mut answer), Verdict::Tx { port: 0 }, "{src:?}");
    }
    let second = Ipv4Addr::new(198, 18, 0, 3);
    assert_eq!(
        sources.iter().filter(|s| **s == SNIP).count(),
        3,
        "{sources:?}"
    );
    assert_eq!(
        sources.iter().filter(|s| **s == second).count(),
        3,
        "{sources:?}"
    );
}

/// A TCP segment with the numbers given (and an MSS option on a SYN).
fn segment(
    smac: [u8; 6],
    (src, dst): ((Ipv4Addr, u16), (Ipv4Addr, u16)),
    (seq, ack): (u32, Option<u32>),
    syn: bool,
    payload: &[u8],
) -> Vec<u8> {
    let b = PacketBuilder::ethernet2(smac, LB_MAC)
        .ipv4(src.0.octets(), dst.0.octets(), 64)
        .tcp(src.1, dst.1, seq, 65535);
    let b = if syn {
        b.syn()
            .options(&[etherparse::TcpOptionElement::MaximumSegmentSize(1460)])
            .unwrap()
    } else {
        b
    };
    let b = match ack {
        Some(n) => b.ack(n),
        None => b,
    };
    let mut v = Vec::new();
    b.write(&mut v, payload).unwrap();
    v
}

/// The client's segment after a cookie's SYN+ACK (its SYN numbered 5000): its handshake's
/// ACK with `payload` empty, else data.
fn cookie_ack(
    client: (Ipv4Addr, u16),
    vip: (Ipv4Addr, u16),
    cookie: u32,
    payload: &[u8],
) -> Vec<u8> {
    segment(
        CLIENT_MAC,
        (client, vip),
        (5001, Some(cookie + 1)),
        false,
        payload,
    )
}

/// The frames the worker built, each checked by [`tcp_out`], with their TCP headers.
fn own_tcp_frames(lab: &mut Lab) -> Vec<(Segment, etherparse::TcpHeader)> {
    let mut out = Vec::new();
    lab.worker.drain_outbox(|_, f| out.push(f.to_vec()));
    out.iter()
        .map(|f| {
            let l4 = 14 + usize::from(f[14] & 0xf) * 4;
            let tcp = TcpHeaderSlice::from_slice(&f[l4..]).unwrap().to_header();
            (tcp_out(f), tcp)
        })
        .collect()
}

/// A worker of a restarted daemon (its clock at zero again, 100 s of wall time later) takes
/// the cookie a worker of the daemon before it gave: cookies count wall-clock time, and an
/// ACK of no flow is checked for one from the start, before this worker sent any.
#[test]
fn a_worker_of_a_restarted_daemon_takes_its_predecessors_cookie() {
    let config = format!("{CONFIG}set lb parameter -synCookie ALWAYS\n");
    let wall_ms_at_start = 1_800_000_000_000u64;
    let mut before = Lab::new(&config, 64);
    before.worker.set_timestamp_origin(wall_ms_at_start);
    before.now += 100_000;
    let (client, vip) = ((CLIENT, 40_000), (VIP, 80));
    let mut syn = segment(CLIENT_MAC, (client, vip), (5000, None), true, b"");
    assert_eq!(before.run(&mut syn), Verdict::Consumed);
    let out = own_tcp_frames(&mut before);
    let cookie = out[0].1.sequence_number;
    let mut after = Lab::new(&config, 64);
    after
        .worker
        .set_timestamp_origin(wall_ms_at_start + 100_000);
    let mut ack = cookie_ack(client, vip, cookie, b"");
    assert_eq!(after.run(&mut ack), Verdict::Consumed);
    assert_eq!(after.worker.stats.syn_cookies_valid, 1);
    assert_eq!(after.worker.flows().len(), 1);
    let out = own_tcp_frames(&mut after);
    assert!(
        out.len() == 1 && out[0].1.syn,
        "the engine's SYN to a service"
    );
}

#[test]
fn the_syn_proxy_answers_syns_itself_and_joins_both_sides_with_shifted_numbers() {
    let config = format!("{CONFIG}set lb parameter -synCookie ALWAYS\n");
    let mut lab = Lab::new(&config, 64);
    let (client, vip) = ((CLIENT, 40_000), (VIP, 80));
    // The SYN is answered with a cookie, and leaves no flow.
    let mut syn = segment(CLIENT_MAC, (client, vip), (5000, None), true, b"");
    assert_eq!(lab.run(&mut syn), Verdict::Consumed);
    assert!(lab.worker.flows().is_empty());
    let out = own_tcp_frames(&mut lab);
    assert_eq!(out.len(), 1);
    let ((dmac, from, to, _), synack) = &out[0];
    assert_eq!((*dmac, *from, *to), (CLIENT_MAC, vip, client));
    assert!(synack.syn && synack.ack && !synack.rst);
    assert_eq!(synack.acknowledgment_number, 5001);
    assert_eq!(
        synack.window_size, 0,
        "no data before the service's side is open"
    );
    let cookie = synack.sequence_number;
    // An ACK that proves no cookie opens nothing (and is reset).
    let stranger = (CLIENT, 40_001);
    let mut forged = cookie_ack(stranger, vip, cookie, b"");
    assert_eq!(lab.run(&mut forged), Verdict::Drop(DropReason::NoFlow));
    assert_eq!(lab.worker.stats.syn_cookies_failed, 1);
    assert!(own_tcp_frames(&mut lab).iter().all(|(_, t)| t.rst));
    // The client's ACK proves its cookie: the engine's SYN goes to a service, with an ISN
    // of the engine's (clock-driven, so a SNAT tuple's SYNs only grow) and the MSS the
    // cookie carried.
    let mut ack = cookie_ack(client, vip, cookie, b"");
    assert_eq!(lab.run(&mut ack), Verdict::Consumed);
    assert_eq!(lab.worker.flows().len(), 1);
    let out = own_tcp_frames(&mut lab);
    assert_eq!(out.len(), 1);
    let ((_, snat, service, _), service_syn) = &out[0];
    assert_eq!(snat.0, SNIP);
    assert!(service_syn.syn && !service_syn.ack);
    let isn = service_syn.sequence_number;
    let mss: Vec<_> = service_syn.options.elements_iter().collect();
    assert!(
        matches!(
            mss[..],
            [Ok(etherparse::TcpOptionElement::MaximumSegmentSize(1460))]
        ),
        "{mss:?}"
    );
    // The client's request before the service answered waits (the client sends it again).
    let mut early = cookie_ack(client, vip, cookie, b"GET");
    assert_eq!(
        lab.run(&mut early),
        Verdict::Drop(DropReason::AwaitingService)
    );
    // ... and the engine asks the service again, in case its SYN was lost.
    let again = own_tcp_frames(&mut lab);
    assert_eq!(again.len(), 1);
    assert_eq!((again[0].0).2, *service);
    assert!(again[0].1.syn && again[0].1.sequence_number == isn);
    // A service still holding the tuple in TIME_WAIT answers with a bare ACK: the engine
    // resets the old connection (numbered by that ACK) and sends its SYN again.
    let mac = backend_mac(service.0.octets()[3] - 10);
    let mut challenge = segment(mac, (*service, *snat), (777, Some(123_456)), false, b"");
    assert_eq!(
        lab.run(&mut challenge),
        Verdict::Drop(DropReason::AwaitingService)
    );
    let out = own_tcp_frames(&mut lab);
    assert_eq!(out.len(), 2, "{out:?}");
    assert!(out[0].1.rst && out[0].1.sequence_number == 123_456);
    assert!(out[1].1.syn && out[1].1.sequence_number == isn);
    // The service's SYN+ACK is answered here and joins the sides.
    let mut answer = segment(
        mac,
        (*service, *snat),
        (90_000, Some(isn.wrapping_add(1))),
        true,
        b"",
    );
    assert_eq!(lab.run(&mut answer), Verdict::Consumed);
    let out = own_tcp_frames(&mut lab);
    let ((_, from, to, _), join) = &out[0];
    assert_eq!((*from, *to), (*snat, *service));
    assert!(join.ack && !join.syn);
    // And the client hears that it may send, as much as the service's window.
    assert_eq!(out.len(), 2);
    let ((_, from, to, _), update) = &out[1];
    assert_eq!((*from, *to), (vip, client));
    assert!(update.ack && !update.syn);
    assert_eq!(
        (update.sequence_number, update.acknowledgment_number),
        (cookie + 1, 5001)
    );
    assert_eq!(update.window_size, 65535);
    assert_eq!(
        (join.sequence_number, join.acknowledgment_number),
        (isn.wrapping_add(1), 90_001)
    );
    // From now on every segment is shifted: acknowledgements toward the service, sequence
    // numbers toward the client (checksums verified by tcp_out).
    let mut request = cookie_ack(client, vip, cookie, b"GET");
    assert_eq!(lab.run(&mut request), Verdict::Tx { port: 0 });
    let tcp = TcpHeaderSlice::from_slice(&request[34..]).unwrap();
    assert_eq!(
        (tcp.sequence_number(), tcp.acknowledgment_number()),
        (isn.wrapping_add(1), 90_001)
    );
    assert_eq!(tcp_out(&request).3, b"GET");
    let mut reply = segment(
        mac,
        (*service, *snat),
        (90_001, Some(isn.wrapping_add(4))),
        false,
        b"200",
    );
    assert_eq!(lab.run(&mut reply), Verdict::Tx { port: 0 });
    let (_, from, to, payload) = tcp_out(&reply);
    assert_eq!((from, to, payload), (vip, client, b"200".to_vec()));
    let tcp = TcpHeaderSlice::from_slice(&reply[34..]).unwrap();
    assert_eq!(
        (tcp.sequence_number(), tcp.acknowledgment_number()),
        (cookie + 1, 5004)
    );
    assert_eq!(
        (
            lab.worker.stats.syn_cookies_sent,
            lab.worker.stats.syn_cookies_valid
        ),
        (1, 1)
    );
}

#[test]
fn syn_cookies_start_when_half_the_embryonic_budget_is_spent_unless_disabled() {
    for (setting, cookies) in [
        ("", true),
        ("set lb parameter -synCookie DISABLED\n", false),
    ] {
        // 8 flows: an embryonic budget of 2, cookies from the first half-open flow on.
        let mut lab = Lab::new(&format!("{CONFIG}{setting}"), 8);
        let mut first = segment(CLIENT_MAC, ((CLIENT, 1), (VIP, 80)), (1, None), true, b"");
        assert_eq!(lab.run(&mut first), Verdict::Tx { port: 0 });
        let mut second = segment(CLIENT_MAC, ((CLIENT, 2), (VIP, 80)), (1, None), true, b"");
        let expected = if cookies {
            Verdict::Consumed
        } else {
            Verdict::Tx { port: 0 }
        };
        assert_eq!(lab.run(&mut second), expected, "{setting:?}");
        assert_eq!(lab.worker.stats.syn_cookies_sent, u64::from(cookies));
    }
}
