//! Frames for the data-plane tests, built with etherparse (independent of the engine).
#![allow(dead_code)]

use std::net::Ipv4Addr;

use etherparse::PacketBuilder;

pub const LB_MAC: [u8; 6] = [0x02, 0xf1, 0, 0, 0, 1];
pub const CLIENT_MAC: [u8; 6] = [0x02, 0xc1, 0, 0, 0, 1];
pub const CLIENT: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 50);
pub const VIP: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 100);
pub const SNIP: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);

pub fn backend_mac(i: u8) -> [u8; 6] {
    [0x02, 0xbe, 0, 0, 0, i]
}
pub fn backend(i: u8) -> Ipv4Addr {
    Ipv4Addr::new(198, 18, 0, 10 + i)
}

pub fn arp(request: bool, smac: [u8; 6], sip: Ipv4Addr, tmac: [u8; 6], tip: Ipv4Addr) -> Vec<u8> {
    let mut f = vec![0u8; 42];
    f[0..6].copy_from_slice(if request { &[0xff; 6] } else { &tmac });
    f[6..12].copy_from_slice(&smac);
    f[12..14].copy_from_slice(&[0x08, 0x06]);
    f[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, if request { 1 } else { 2 }]);
    f[22..28].copy_from_slice(&smac);
    f[28..32].copy_from_slice(&sip.octets());
    f[32..38].copy_from_slice(&tmac);
    f[38..42].copy_from_slice(&tip.octets());
    f
}

#[derive(Clone, Copy)]
pub enum Flags {
    Syn,
    SynAck,
    Ack,
    Fin,
    Rst,
}

pub fn tcp(
    smac: [u8; 6],
    src: (Ipv4Addr, u16),
    dst: (Ipv4Addr, u16),
    flags: Flags,
    payload: &[u8],
) -> Vec<u8> {
    let b = PacketBuilder::ethernet2(smac, LB_MAC)
        .ipv4(src.0.octets(), dst.0.octets(), 64)
        .tcp(src.1, dst.1, 1000, 65535);
    let b = match flags {
        Flags::Syn => b.syn(),
        Flags::SynAck => b.syn().ack(1001),
        Flags::Ack => b.ack(1),
        Flags::Fin => b.fin().ack(1),
        Flags::Rst => b.rst(),
    };
    let mut v = Vec::new();
    b.write(&mut v, payload).unwrap();
    v
}

pub fn udp(smac: [u8; 6], src: (Ipv4Addr, u16), dst: (Ipv4Addr, u16), payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    PacketBuilder::ethernet2(smac, LB_MAC)
        .ipv4(src.0.octets(), dst.0.octets(), 64)
        .udp(src.1, dst.1)
        .write(&mut v, payload)
        .unwrap();
    v
}
pub mod lab;
