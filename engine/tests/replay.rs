//! `fulcrumd replay`: the same worker over a pcap, end to end through the binary.

use std::net::Ipv4Addr;
use std::process::Command;
use std::time::Duration;

use etherparse::{Ipv4HeaderSlice, TcpHeaderSlice};
use pcap_file::pcap::{PcapPacket, PcapReader, PcapWriter};

mod common;
use common::*;

const CONFIG: &str = "add ns ip 198.18.0.2 255.255.255.0 -type SNIP
add service s1 198.18.0.11 TCP 80
add service s2 198.18.0.12 TCP 80
add lb vserver web TCP 198.18.0.100 80 -lbMethod ROUNDROBIN
bind lb vserver web s1
bind lb vserver web s2
";

#[test]
fn replay_forwards_a_capture_through_the_worker() {
    let dir = std::env::temp_dir().join(format!("fl-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (conf, input, output) = (
        dir.join("ns.conf"),
        dir.join("in.pcap"),
        dir.join("out.pcap"),
    );
    std::fs::write(&conf, CONFIG).unwrap();
    let frames = [
        arp(false, backend_mac(1), backend(1), LB_MAC, SNIP),
        arp(false, backend_mac(2), backend(2), LB_MAC, SNIP),
        arp(true, CLIENT_MAC, CLIENT, [0; 6], VIP),
        tcp(CLIENT_MAC, (CLIENT, 40_000), (VIP, 80), Flags::Syn, b""),
        tcp(CLIENT_MAC, (CLIENT, 40_001), (VIP, 80), Flags::Syn, b""),
        vec![0xde, 0xad],
    ];
    {
        let mut w = PcapWriter::new(std::fs::File::create(&input).unwrap()).unwrap();
        for (i, f) in frames.iter().enumerate() {
            w.write_packet(&PcapPacket::new(
                Duration::from_millis(1000 + i as u64),
                f.len() as u32,
                f,
            ))
            .unwrap();
        }
    }
    let out = Command::new(env!("CARGO_BIN_EXE_fulcrumd"))
        .args(["replay", "--config"])
        .arg(&conf)
        .arg("--pcap")
        .arg(&input)
        .arg("--out")
        .arg(&output)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("frames in 6") && stdout.contains("flows created 2"),
        "{stdout}"
    );
    assert!(stdout.contains("dropped (truncated): 1"), "{stdout}");

    let mut r = PcapReader::new(std::fs::File::open(&output).unwrap()).unwrap();
    let mut sent = Vec::new();
    while let Some(p) = r.next_packet() {
        sent.push(p.unwrap().data.to_vec());
    }
    std::fs::remove_dir_all(&dir).unwrap();
    // The worker's own ARP requests, the ARP reply for the VIP, and the two SYNs.
    let syns: Vec<(Ipv4Addr, u16)> = sent
        .iter()
        .filter(|f| f.len() > 34 && f[12..14] == [8, 0])
        .map(|f| {
            let ip = Ipv4HeaderSlice::from_slice(&f[14..]).unwrap();
            let t = TcpHeaderSlice::from_slice(&f[34..]).unwrap();
            assert_eq!(ip.source_addr(), SNIP);
            (ip.destination_addr(), t.destination_port())
        })
        .collect();
    assert_eq!(syns, [(backend(1), 80), (backend(2), 80)]);
    assert!(sent.iter().any(|f| f.len() >= 42
        && f[12..14] == [8, 6]
        && f[20..22] == [0, 2]
        && f[28..32] == VIP.octets()));
}
