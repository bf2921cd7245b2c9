//! The monitor core: one smoltcp interface holding the SNIPs, fed by the workers through a
//! bounded channel (frames for the SNIP's monitor ports, ICMP to it, ARP replies) and sending
//! through a worker; it runs every probe and publishes service state and LRTM response times.
//!
//! Probes: PING (echo request → reply), TCP (SYN → SYN+ACK), HTTP (request on the established
//! connection → status line, checked against `-respCode`), TCP-ECV, HTTP-ECV and UDP-ECV (send
//! string → receive string), DNS (query → answer holding `-IPAddress`), FTP (user name →
//! 230), USER (a script's exit status within the response timeout), LOAD (SNMP GET → load),
//! and with `-secure YES` TCPS (SYN → TLS handshake complete), HTTPS and HTTPS-ECV (the same
//! exchanges inside TLS, see [`crate::tls`]).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::net::Ipv4Addr;
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};
use ctl::value::RespCodes;
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::phy::ChecksumCapabilities;
use smoltcp::phy::{Device, DeviceCapabilities, Medium, RxToken, TxToken};
use smoltcp::socket::{icmp, tcp, udp};
use smoltcp::time::Instant;
use smoltcp::wire::{
    EthernetAddress, Icmpv4Packet, Icmpv4Repr, IpAddress, IpCidr, IpListenEndpoint,
};

use crate::health::{BindingHealth, MonitorState, Timers, service_up};
use crate::publish::{ServiceHealth, ServiceId};
use crate::tls::TlsStream;

/// Frames between the workers and the monitor core.
#[derive(Debug)]
pub struct ChannelDevice {
    pub rx: Receiver<Vec<u8>>,
    pub tx: Sender<Vec<u8>>,
    /// A frame taken while waiting, handed to the stack first.
    pub pending: Option<Vec<u8>>,
    /// Frames lost to a full ring since the last [`ChannelDevice::take_lost`].
    lost: std::cell::Cell<u64>,
}

impl ChannelDevice {
    pub fn new(rx: Receiver<Vec<u8>>, tx: Sender<Vec<u8>>) -> Self {
        Self {
            rx,
            tx,
            pending: None,
            lost: std::cell::Cell::new(0),
        }
    }

    /// Frames lost to a full ring since the last call.
    pub fn take_lost(&self) -> u64 {
        self.lost.take()
    }

    /// Blocks until a frame arrives or `max` passes.
    pub fn wait(&mut self, max: std::time::Duration) {
        if self.pending.is_none() {
            self.pending = self.rx.recv_timeout(max).ok();
        }
    }
}

#[derive(Debug)]
pub struct FrameRx(Vec<u8>);

#[derive(Debug)]
pub struct FrameTx<'a> {
    tx: &'a Sender<Vec<u8>>,
    lost: &'a std::cell::Cell<u64>,
}

impl RxToken for FrameRx {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.0)
    }
}

impl TxToken for FrameTx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut frame = vec![0; len];
        let r = f(&mut frame);
        // A full ring drops the frame (counted): probes time out and retry, nothing blocks.
        if self.tx.try_send(frame).is_err() {
            self.lost.set(self.lost.get() + 1);
        }
        r
    }
}

impl Device for ChannelDevice {
    type RxToken<'a> = FrameRx;
    type TxToken<'a> = FrameTx<'a>;

    fn receive(&mut self, _: Instant) -> Option<(FrameRx, FrameTx<'_>)> {
        self.pending
            .take()
            .or_else(|| self.rx.try_recv().ok())
            .map(|f| {
                let tx = FrameTx {
                    tx: &self.tx,
                    lost: &self.lost,
                };
                (FrameRx(f), tx)
            })
    }

    fn transmit(&mut self, _: Instant) -> Option<FrameTx<'_>> {
        Some(FrameTx {
            tx: &self.tx,
            lost: &self.lost,
        })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut c = DeviceCapabilities::default();
        c.medium = Medium::Ethernet;
        c.max_transmission_unit = 1514;
        c
    }
}

/// What a probe checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProbeKind {
    /// ICMP echo request → echo reply.
    Ping,
    /// Connection established (SYN+ACK received).
    Tcp,
    /// `request` sent on the connection with the `-customHeaders` lines; the status code
    /// must be in `codes`.
    Http {
        request: String,
        codes: RespCodes,
        headers: Vec<u8>,
    },
    /// `send` written on the connection (HTTP-ECV: an HTTP request line, sent with the
    /// `-customHeaders` lines); the answer must contain `recv`.
    Ecv {
        send: Vec<u8>,
        recv: Vec<u8>,
        http: bool,
        headers: Vec<u8>,
    },
    /// `send` in one datagram; a datagram back must contain `recv`.
    UdpEcv { send: Vec<u8>, recv: Vec<u8> },
    /// A DNS query (UDP); the answer must be NOERROR with records, holding every `expect`.
    Dns {
        name: String,
        aaaa: bool,
        expect: Vec<std::net::IpAddr>,
    },
    /// USER: runs `script <service IP> <port> <args…>`; exit status 0 within the response
    /// timeout passes.
    User {
        script: std::path::PathBuf,
        args: Vec<String>,
    },
    /// FTP: log in with `user` and `password`; the response time runs from the user name to
    /// the 230 reply.
    Ftp { user: String, password: String },
    /// LOAD: an SNMP GET of the metric table's OIDs; feeds the service's load, never its state.
    Load {
        v1: bool,
        community: String,
        /// OID, threshold, weight of each bound metric.
        metrics: Vec<(Vec<u32>, u64, u64)>,
        passive: bool,
    },
}

/// The reply code of the first complete line of an FTP reply, and how many bytes it used.
fn ftp_reply(buf: &[u8]) -> Option<(u16, usize)> {
    let end = buf.windows(2).position(|w| w == b"\r\n")?;
    let code = std::str::from_utf8(buf.get(..3)?).ok()?.parse().ok()?;
    Some((code, end + 2))
}

/// The DNS query a DNS probe sends.
fn dns_query(id: u16, name: &str, aaaa: bool) -> Option<Vec<u8>> {
    use simple_dns::{CLASS, Name, Packet, PacketFlag, QCLASS, QTYPE, Question, TYPE};
    let mut packet = Packet::new_query(id);
    packet.set_flags(PacketFlag::RECURSION_DESIRED);
    let qtype = if aaaa { TYPE::AAAA } else { TYPE::A };
    packet.questions.push(Question::new(
        Name::new(name).ok()?,
        QTYPE::TYPE(qtype),
        QCLASS::CLASS(CLASS::IN),
        false,
    ));
    packet.build_bytes_vec().ok()
}

/// Whether a DNS answer to query `id` passes: NOERROR, records, every expected address.
fn dns_answer_ok(data: &[u8], id: u16, expect: &[std::net::IpAddr]) -> bool {
    use simple_dns::rdata::RData;
    use simple_dns::{Packet, RCODE};
    let Ok(packet) = Packet::parse(data) else {
        return false;
    };
    if packet.id() != id || packet.rcode() != RCODE::NoError || packet.answers.is_empty() {
        return false;
    }
    let got: Vec<std::net::IpAddr> = packet
        .answers
        .iter()
        .filter_map(|rr| match &rr.rdata {
            RData::A(a) => Some(std::net::IpAddr::V4(a.address.into())),
            RData::AAAA(a) => Some(std::net::IpAddr::V6(a.address.into())),
            _ => None,
        })
        .collect();
    expect.iter().all(|e| got.contains(e))
}

/// The escapes operators type in send/receive strings (`\r\n`, `\t`, `\\`).
pub fn unescape(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut b = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            continue;
        }
        match chars.next() {
            Some('r') => out.push(b'\r'),
            Some('n') => out.push(b'\n'),
            Some('t') => out.push(b'\t'),
            Some('\\') | None => out.push(b'\\'),
            Some(other) => {
                out.push(b'\\');
                let mut b = [0; 4];
                out.extend_from_slice(other.encode_utf8(&mut b).as_bytes());
            }
        }
    }
    out
}

/// Most of an answer a TCP probe keeps: enough for any status line or receive string.
const REPLY_LIMIT: usize = 64 * 1024;

/// An HTTP/1.1 request for a monitor: the request line (`GET /health`), the operator's
/// `-customHeaders` lines, a `Host` header with the service's address unless those carry one,
/// and `Connection: close`.
fn http_request(line: &[u8], host: Ipv4Addr, custom: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(line.len() + custom.len() + 64);
    out.extend_from_slice(line);
    out.extend_from_slice(b" HTTP/1.1\r\n");
    out.extend_from_slice(custom);
    if !custom.is_empty() && !custom.ends_with(b"\r\n") {
        out.extend_from_slice(b"\r\n");
    }
    let has_host = custom
        .split(|b| *b == b'\n')
        .any(|l| l.len() >= 5 && l[..5].eq_ignore_ascii_case(b"host:"));
    if !has_host {
        out.extend_from_slice(format!("Host: {host}\r\n").as_bytes());
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    out
}

/// Writes `bytes` on a probe's connection, through its TLS session when it has one.
fn send_on(socket: &mut tcp::Socket, tls: Option<&mut TlsStream>, bytes: &[u8]) -> bool {
    match tls {
        Some(tls) => tls.write(bytes).is_ok() && tls.pump(socket).is_ok(),
        None => socket.send_slice(bytes) == Ok(bytes.len()),
    }
}

/// Sends a probe's request; its response time runs from `now`. A request the connection
/// cannot take fails the probe.
fn send_request(
    socket: &mut tcp::Socket,
    probe: &mut Probe,
    text: &[u8],
    now: u64,
) -> Option<(bool, u64)> {
    if !send_on(socket, probe.tls.as_deref_mut(), text) {
        return Some((false, 0));
    }
    probe.phase = Phase::Sent {
        at: now,
        reply: Vec::new(),
    };
    None
}

/// Appends what arrived on a probe's connection (plaintext for TLS) to `reply`, up to
/// [`REPLY_LIMIT`].
fn receive_on(socket: &mut tcp::Socket, tls: Option<&mut TlsStream>, reply: &mut Vec<u8>) {
    match tls {
        Some(tls) => tls.read_into(reply),
        None => {
            let mut buf = [0u8; 1024];
            while socket.can_recv() && reply.len() < REPLY_LIMIT {
                match socket.recv_slice(&mut buf) {
                    Ok(n) if n > 0 => reply.extend_from_slice(&buf[..n]),
                    _ => break,
                }
            }
        }
    }
    reply.truncate(REPLY_LIMIT);
}

/// A monitor bound to a service: where and how to probe, and how results count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub service: ServiceId,
    /// Identifies the binding across configuration generations.
    pub monitor: String,
    pub addr: Ipv4Addr,
    pub port: u16,
    pub kind: ProbeKind,
    pub timers: Timers,
    pub weight: u32,
    pub enabled: bool,
    pub lrtm: bool,
    /// The service's `-monThreshold`.
    pub mon_threshold: u32,
    /// `-secure YES`: TCP, HTTP, TCP-ECV and HTTP-ECV run over TLS (TCPS, HTTPS, HTTPS-ECV).
    pub secure: bool,
}

#[derive(Debug)]
enum Phase {
    Connecting,
    Sent {
        at: u64,
        reply: Vec<u8>,
    },
    /// FTP login: waiting for the 220 banner (0), the 331 after USER (1), the 230 after PASS
    /// (2); `at` is when the user name was sent.
    Ftp {
        stage: u8,
        at: u64,
        reply: Vec<u8>,
    },
}

#[derive(Debug)]
struct Probe {
    handle: SocketHandle,
    started: u64,
    phase: Phase,
    /// The TLS session of a secure probe, from the moment its connection is established.
    tls: Option<Box<TlsStream>>,
    /// Receives the ICMP errors (unreachable) about a UDP probe's port.
    errors: Option<SocketHandle>,
}

impl Probe {
    fn release(self, sockets: &mut SocketSet<'static>) {
        sockets.remove(self.handle);
        if let Some(e) = self.errors {
            sockets.remove(e);
        }
    }
}

/// An ICMP socket that receives the errors about local TCP or UDP port `port`.
fn error_socket(endpoint: icmp::Endpoint) -> icmp::Socket<'static> {
    let mut socket = icmp::Socket::new(
        icmp::PacketBuffer::new(vec![icmp::PacketMetadata::EMPTY; 2], vec![0; 1024]),
        icmp::PacketBuffer::new(vec![icmp::PacketMetadata::EMPTY; 1], vec![0; 64]),
    );
    // Binding a fresh socket to a port endpoint cannot fail.
    let _ = socket.bind(endpoint);
    socket
}

/// Whether a destination-unreachable message arrived on an error socket.
fn unreachable(socket: &mut icmp::Socket<'static>) -> bool {
    while let Ok((payload, _)) = socket.recv() {
        let repr = Icmpv4Packet::new_checked(payload)
            .ok()
            .and_then(|p| Icmpv4Repr::parse(&p, &ChecksumCapabilities::ignored()).ok());
        if let Some(Icmpv4Repr::DstUnreachable { .. }) = repr {
            return true;
        }
    }
    false
}

#[derive(Debug)]
struct Binding {
    target: Target,
    health: BindingHealth,
    /// LOAD: the load computed from the last reply, `None` while the agent does not answer.
    load: Option<crate::load::Load>,
    probe: Option<Probe>,
    /// A running USER monitor script and when it started.
    script: Option<(std::process::Child, u64)>,
    last_response_us: Option<u64>,
}

/// The monitor core's state; [`MonitorCore::poll`] is called in its loop.
pub struct MonitorCore {
    iface: Interface,
    device: ChannelDevice,
    sockets: SocketSet<'static>,
    bindings: Vec<Binding>,
    health: Arc<ServiceHealth>,
    next_port: u16,
    ports: std::ops::Range<u16>,
    tls_config: Arc<rustls::ClientConfig>,
    /// Idle bindings by the millisecond their next probe is due (entries whose binding has
    /// moved on are skipped when popped).
    due: BinaryHeap<Reverse<(u64, usize)>>,
    /// Bindings with a probe or script running.
    running: Vec<usize>,
}

impl std::fmt::Debug for MonitorCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MonitorCore({} bindings)", self.bindings.len())
    }
}

/// smoltcp's time from the core's (microseconds).
fn at(us: u64) -> Instant {
    Instant::from_micros(us as i64)
}

impl MonitorCore {
    /// A monitor core answering for `snips` (address, prefix length), probing from local
    /// ports in `ports`.
    pub fn new(
        mac: [u8; 6],
        snips: &[(Ipv4Addr, u8)],
        mut device: ChannelDevice,
        health: Arc<ServiceHealth>,
        ports: std::ops::Range<u16>,
        now: u64,
    ) -> Self {
        let config = Config::new(EthernetAddress(mac).into());
        let mut iface = Interface::new(config, &mut device, at(now));
        iface.update_ip_addrs(|addrs| {
            for (ip, prefix) in snips {
                let _ = addrs.push(IpCidr::new(IpAddress::Ipv4(*ip), *prefix));
            }
        });
        Self {
            iface,
            device,
            sockets: SocketSet::new(Vec::new()),
            bindings: Vec::new(),
            health,
            next_port: ports.start,
            ports,
            tls_config: crate::tls::client_config(),
            due: BinaryHeap::new(),
            running: Vec::new(),
        }
    }

    /// Replaces the probe targets (a new configuration generation); bindings that stay keep
    /// their state and counts.
    pub fn set_targets(&mut self, targets: Vec<Target>, now: u64) {
        let mut old: HashMap<(ServiceId, String), Binding> = self
            .bindings
            .drain(..)
            .map(|b| ((b.target.service, b.target.monitor.clone()), b))
            .collect();
        for target in targets {
            let binding = match old.remove(&(target.service, target.monitor.clone())) {
                Some(mut b) if b.target.addr == target.addr && b.target.port == target.port => {
                    b.health.set_timers(target.timers, now / 1000);
                    b.target = target;
                    b
                }
                _ => Binding {
                    health: BindingHealth::new(target.timers, now / 1000),
                    target,
                    load: None,
                    probe: None,
                    script: None,
                    last_response_us: None,
                },
            };
            self.bindings.push(binding);
        }
        for (_, b) in old {
            if let Some(p) = b.probe {
                p.release(&mut self.sockets);
            }
            if let Some((mut child, _)) = b.script {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        // Indices changed: schedule every binding afresh.
        self.due.clear();
        self.running.clear();
        for (i, b) in self.bindings.iter().enumerate() {
            if b.probe.is_some() || b.script.is_some() {
                self.running.push(i);
            } else {
                self.due.push(Reverse((b.health.poll_timeout(), i)));
            }
        }
        let services: Vec<ServiceId> = self.bindings.iter().map(|b| b.target.service).collect();
        for s in services {
            self.publish(s);
        }
    }

    pub fn state_of(&self, service: ServiceId, monitor: &str) -> Option<MonitorState> {
        self.bindings
            .iter()
            .find(|b| b.target.service == service && b.target.monitor == monitor)
            .map(|b| b.health.state())
    }

    fn local_port(&mut self) -> u16 {
        let p = self.next_port;
        self.next_port = if p + 1 >= self.ports.end {
            self.ports.start
        } else {
            p + 1
        };
        p
    }

    /// One round at `now` (microseconds): exchange frames, start the probes that are due,
    /// advance the running ones. The work is proportional to the probes due and running, not
    /// to the bindings.
    pub fn poll(&mut self, now: u64) {
        self.iface
            .poll(at(now), &mut self.device, &mut self.sockets);
        let now_ms = now / 1000;
        while let Some(&Reverse((when, i))) = self.due.peek() {
            if when > now_ms {
                break;
            }
            self.due.pop();
            let Some(b) = self.bindings.get(i) else {
                continue;
            };
            let idle = b.probe.is_none() && b.script.is_none();
            // A disabled binding (`-monState DISABLED`) waits for a configuration that
            // enables it, which reschedules everything.
            if !idle || b.health.poll_timeout() != when || !b.target.enabled {
                continue;
            }
            self.start(i, now);
            self.schedule(i);
        }
        let mut k = 0;
        while k < self.running.len() {
            let i = self.running[k];
            let result = if self.bindings[i].script.is_some() {
                self.step_script(i, now)
            } else {
                self.step(i, now)
            };
            match result {
                Some(result) => {
                    self.finish(i, now, result);
                    self.running.swap_remove(k);
                    self.due
                        .push(Reverse((self.bindings[i].health.poll_timeout(), i)));
                }
                None => k += 1,
            }
        }
        self.iface
            .poll(at(now), &mut self.device, &mut self.sockets);
        self.health.count_lost_frames(self.device.take_lost());
    }

    /// After `start`: the binding runs, or (it failed to start) waits for its next time.
    fn schedule(&mut self, i: usize) {
        let b = &self.bindings[i];
        if b.probe.is_some() || b.script.is_some() {
            self.running.push(i);
        } else {
            self.due.push(Reverse((b.health.poll_timeout(), i)));
        }
    }

    /// Waits up to `max` for a frame from the workers, so replies are timed when they
    /// arrive rather than at the next round.
    pub fn wait(&mut self, max: std::time::Duration) {
        self.device.wait(max);
    }

    fn start(&mut self, i: usize, now: u64) {
        if let ProbeKind::User { script, args } = &self.bindings[i].target.kind {
            let spawned = std::process::Command::new(script)
                .arg(self.bindings[i].target.addr.to_string())
                .arg(self.bindings[i].target.port.to_string())
                .args(args)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn();
            match spawned {
                Ok(child) => self.bindings[i].script = Some((child, now)),
                Err(_) => {
                    self.bindings[i].health.record(now / 1000, false);
                }
            }
            return;
        }
        let local = self.local_port();
        if self.bindings[i].target.kind == ProbeKind::Ping {
            self.start_ping(i, now, local);
            return;
        }
        let datagram = match &self.bindings[i].target.kind {
            ProbeKind::UdpEcv { send, .. } => Some(send.clone()),
            ProbeKind::Dns { name, aaaa, .. } => dns_query(local, name, *aaaa),
            ProbeKind::Load {
                v1,
                community,
                metrics,
                ..
            } => {
                let oids: Vec<Vec<u32>> = metrics.iter().map(|(o, _, _)| o.clone()).collect();
                crate::snmp::get_request(*v1, community, i32::from(local), &oids)
            }
            _ => None,
        };
        if let Some(send) = datagram {
            let mut socket = udp::Socket::new(
                udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; 4], vec![0; 2048]),
                udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; 4], vec![0; 2048]),
            );
            let to = (
                IpAddress::Ipv4(self.bindings[i].target.addr),
                self.bindings[i].target.port,
            );
            if socket.bind(local).is_err() || socket.send_slice(&send, to).is_err() {
                self.bindings[i].health.record(now / 1000, false);
                return;
            }
            let errors = icmp::Endpoint::Udp(IpListenEndpoint::from(local));
            self.begin(i, now, socket, Some(errors));
            return;
        }
        let mut socket = tcp::Socket::new(
            tcp::SocketBuffer::new(vec![0; 4096]),
            tcp::SocketBuffer::new(vec![0; 4096]),
        );
        let (addr, port) = (self.bindings[i].target.addr, self.bindings[i].target.port);
        if socket
            .connect(self.iface.context(), (IpAddress::Ipv4(addr), port), local)
            .is_err()
        {
            self.bindings[i].health.record(now / 1000, false);
            return;
        }
        // No error socket for TCP: a closed port answers RST, and every extra socket costs
        // each frame the stack handles (smoltcp walks its sockets).
        self.begin(i, now, socket, None);
    }

    /// Registers a probe's socket (and one for the ICMP errors about its port): the probe
    /// is running from `now`.
    fn begin(
        &mut self,
        i: usize,
        now: u64,
        socket: impl smoltcp::socket::AnySocket<'static>,
        errors: Option<icmp::Endpoint>,
    ) {
        let handle = self.sockets.add(socket);
        let errors = errors.map(|e| self.sockets.add(error_socket(e)));
        self.bindings[i].probe = Some(Probe {
            handle,
            started: now,
            phase: Phase::Connecting,
            tls: None,
            errors,
        });
    }

    /// An echo request whose identifier is the probe's local port number.
    fn start_ping(&mut self, i: usize, now: u64, ident: u16) {
        let mut socket = icmp::Socket::new(
            icmp::PacketBuffer::new(vec![icmp::PacketMetadata::EMPTY; 2], vec![0; 512]),
            icmp::PacketBuffer::new(vec![icmp::PacketMetadata::EMPTY; 2], vec![0; 512]),
        );
        let addr = IpAddress::Ipv4(self.bindings[i].target.addr);
        let repr = Icmpv4Repr::EchoRequest {
            ident,
            seq_no: 1,
            data: b"fulcrum monitor",
        };
        let sent = socket.bind(icmp::Endpoint::Ident(ident)).is_ok()
            && socket
                .send(repr.buffer_len(), addr)
                .map(|buf| {
                    repr.emit(
                        &mut Icmpv4Packet::new_unchecked(buf),
                        &ChecksumCapabilities::default(),
                    )
                })
                .is_ok();
        if !sent {
            self.bindings[i].health.record(now / 1000, false);
            return;
        }
        self.begin(i, now, socket, None);
    }

    /// A USER script's verdict: its exit status, or a failure when it outlives the timeout
    /// (then it is killed and reaped).
    fn step_script(&mut self, i: usize, now: u64) -> Option<(bool, u64)> {
        let b = &mut self.bindings[i];
        let (child, started) = b.script.as_mut()?;
        let started = *started;
        let result = match child.try_wait() {
            Ok(Some(status)) => Some((status.success(), (now - started))),
            Ok(None) if now >= started + b.health.resp_timeout() * 1000 => {
                let _ = child.kill();
                let _ = child.wait();
                Some((false, 0))
            }
            Ok(None) => None,
            Err(_) => Some((false, 0)),
        };
        if result.is_some() {
            b.script = None;
        }
        result
    }

    /// `Some((passed, response time in µs))` once the probe has a result.
    fn step(&mut self, i: usize, now: u64) -> Option<(bool, u64)> {
        let b = &mut self.bindings[i];
        let probe = b.probe.as_mut()?;
        let deadline = probe.started + b.health.resp_timeout() * 1000;
        // Port, host or network unreachable: fail now rather than at the timeout.
        if let Some(h) = probe.errors
            && unreachable(self.sockets.get_mut::<icmp::Socket>(h))
        {
            return Some((false, 0));
        }
        if matches!(
            b.target.kind,
            ProbeKind::UdpEcv { .. } | ProbeKind::Dns { .. } | ProbeKind::Load { .. }
        ) {
            let socket = self.sockets.get_mut::<udp::Socket>(probe.handle);
            let id = socket.endpoint().port;
            while let Ok((data, _)) = socket.recv() {
                if let ProbeKind::Load { v1, metrics, .. } = &b.target.kind {
                    let values = crate::snmp::parse_response(*v1, i32::from(id), data);
                    if values == Err(crate::snmp::SnmpError::OtherRequest) {
                        continue;
                    }
                    let samples: Option<Vec<crate::load::MetricSample>> = values.ok().map(|v| {
                        v.iter()
                            .zip(metrics)
                            .map(
                                |(value, (_, threshold, weight))| crate::load::MetricSample {
                                    value: *value,
                                    threshold: *threshold,
                                    weight: *weight,
                                },
                            )
                            .collect()
                    });
                    b.load = samples.as_deref().and_then(crate::load::load);
                    return Some((b.load.is_some(), (now - probe.started)));
                }
                let passed = match &b.target.kind {
                    ProbeKind::UdpEcv { recv, .. } => {
                        !recv.is_empty() && data.windows(recv.len()).any(|w| w == recv.as_slice())
                    }
                    ProbeKind::Dns { expect, .. } => dns_answer_ok(data, id, expect),
                    _ => false,
                };
                if passed || matches!(b.target.kind, ProbeKind::Dns { .. }) {
                    return Some((passed, (now - probe.started)));
                }
            }
            // No answer: the last load stays until the monitor goes DOWN (see `finish`).
            return (now >= deadline).then_some((false, 0));
        }
        if b.target.kind == ProbeKind::Ping {
            let socket = self.sockets.get_mut::<icmp::Socket>(probe.handle);
            while socket.can_recv() {
                let Ok((payload, _)) = socket.recv() else {
                    break;
                };
                let reply = Icmpv4Packet::new_checked(payload)
                    .ok()
                    .and_then(|p| Icmpv4Repr::parse(&p, &ChecksumCapabilities::default()).ok());
                if let Some(Icmpv4Repr::EchoReply { seq_no: 1, .. }) = reply {
                    return Some((true, (now - probe.started)));
                }
            }
            return (now >= deadline).then_some((false, 0));
        }
        let socket = self.sockets.get_mut::<tcp::Socket>(probe.handle);
        let state = socket.state();
        let connecting = matches!(probe.phase, Phase::Connecting);
        if matches!(state, tcp::State::Closed | tcp::State::TimeWait) && connecting {
            return Some((false, 0)); // refused (RST), never reachable, or closed mid-handshake
        }
        if connecting && state == tcp::State::Established && b.target.secure && probe.tls.is_none()
        {
            match TlsStream::new(&self.tls_config, b.target.addr) {
                Ok(tls) => probe.tls = Some(Box::new(tls)),
                Err(_) => return Some((false, 0)),
            }
        }
        if let Some(tls) = probe.tls.as_mut()
            && tls.pump(socket).is_err()
        {
            return Some((false, 0)); // alert, bad record or bad handshake signature
        }
        // Established, and for a secure probe the handshake complete.
        let ready =
            state == tcp::State::Established && probe.tls.as_ref().is_none_or(|t| !t.handshaking());
        match (&b.target.kind, &mut probe.phase) {
            // TCP: SYN → SYN+ACK; TCPS: SYN → handshake complete.
            (ProbeKind::Tcp, Phase::Connecting) if ready => Some((true, (now - probe.started))),
            (
                ProbeKind::Http {
                    request, headers, ..
                },
                Phase::Connecting,
            ) if ready => {
                let text = http_request(request.as_bytes(), b.target.addr, headers);
                send_request(socket, probe, &text, now)
            }
            (ProbeKind::Ftp { .. }, Phase::Connecting) if ready => {
                probe.phase = Phase::Ftp {
                    stage: 0,
                    at: now,
                    reply: Vec::new(),
                };
                None
            }
            (ProbeKind::Ftp { user, password }, Phase::Ftp { stage, at, reply }) => {
                let mut buf = [0u8; 512];
                while socket.can_recv() && reply.len() < 8192 {
                    match socket.recv_slice(&mut buf) {
                        Ok(n) if n > 0 => reply.extend_from_slice(&buf[..n]),
                        _ => break,
                    }
                }
                while let Some((code, used)) = ftp_reply(reply) {
                    reply.drain(..used);
                    match (*stage, code) {
                        (0, 220) => {
                            *at = now;
                            *stage = 1;
                            let _ = socket.send_slice(format!("USER {user}\r\n").as_bytes());
                        }
                        (1, 331) => {
                            *stage = 2;
                            let _ = socket.send_slice(format!("PASS {password}\r\n").as_bytes());
                        }
                        (1, 230) | (2, 230) => return Some((true, (now - *at))),
                        (_, c) if c >= 400 => return Some((false, 0)),
                        _ => {} // continuation lines, 1xx
                    }
                }
                (now >= deadline || !socket.may_recv()).then_some((false, 0))
            }
            (
                ProbeKind::Ecv {
                    send,
                    http,
                    headers,
                    ..
                },
                Phase::Connecting,
            ) if ready => {
                let text = if *http {
                    http_request(send, b.target.addr, headers)
                } else {
                    send.clone()
                };
                send_request(socket, probe, &text, now)
            }
            (ProbeKind::Ecv { recv, .. }, Phase::Sent { at, reply }) => {
                receive_on(socket, probe.tls.as_deref_mut(), reply);
                if !recv.is_empty() && reply.windows(recv.len()).any(|w| w == recv.as_slice()) {
                    return Some((true, (now - *at)));
                }
                (now >= deadline || !socket.may_recv()).then_some((false, 0))
            }
            (ProbeKind::Http { codes, .. }, Phase::Sent { at, reply }) => {
                receive_on(socket, probe.tls.as_deref_mut(), reply);
                if let Some(end) = reply.windows(2).position(|w| w == b"\r\n") {
                    let line = String::from_utf8_lossy(&reply[..end]);
                    let code = line
                        .split_whitespace()
                        .nth(1)
                        .and_then(|c| c.parse::<u16>().ok());
                    return Some((code.is_some_and(|c| codes.contains(c)), (now - *at)));
                }
                (now >= deadline || !socket.may_recv()).then_some((false, 0))
            }
            _ => (now >= deadline).then_some((false, 0)),
        }
    }

    fn finish(&mut self, i: usize, now: u64, (passed, response_us): (bool, u64)) {
        let b = &mut self.bindings[i];
        if let Some(p) = b.probe.take() {
            if matches!(
                b.target.kind,
                ProbeKind::Tcp
                    | ProbeKind::Http { .. }
                    | ProbeKind::Ecv { .. }
                    | ProbeKind::Ftp { .. }
            ) {
                self.sockets.get_mut::<tcp::Socket>(p.handle).abort();
            }
            // Let the RST leave before the socket goes away.
            self.iface
                .poll(at(now), &mut self.device, &mut self.sockets);
            p.release(&mut self.sockets);
        }
        self.health.count_probe(passed);
        if passed {
            b.last_response_us = Some(response_us.max(1));
        }
        let changed = b.health.record(now / 1000, passed).is_some();
        // A LOAD monitor that went DOWN is not active any more: no load for its service.
        if b.health.state() == MonitorState::Down {
            b.load = None;
        }
        let service = b.target.service;
        if changed || passed {
            self.publish(service);
        }
    }

    /// Publishes a service's state (from all its bindings) and LRTM response time.
    fn publish(&self, service: ServiceId) {
        let mine: Vec<&Binding> = self
            .bindings
            .iter()
            .filter(|b| b.target.service == service)
            .collect();
        let Some(first) = mine.first() else { return };
        // LOAD bindings feed the load only, never the state.
        let states: Vec<(u32, bool, MonitorState)> = mine
            .iter()
            .filter(|b| !matches!(b.target.kind, ProbeKind::Load { .. }))
            .map(|b| (b.target.weight, b.target.enabled, b.health.state()))
            .collect();
        let up = service_up(&states, first.target.mon_threshold);
        self.health.set_up(service, up);
        // DOWN for downStateFlush only once every enabled monitor has decided: a monitor just
        // bound (UNKNOWN) keeps new flows away but does not flush the established ones.
        let decided = states
            .iter()
            .all(|(_, enabled, s)| !enabled || *s != MonitorState::Unknown);
        self.health.set_down(service, !up && decided);
        if let Some(b) = mine
            .iter()
            .find(|b| matches!(b.target.kind, ProbeKind::Load { .. }))
        {
            let passive = matches!(b.target.kind, ProbeKind::Load { passive: true, .. });
            self.health
                .set_load(service, b.load.map(|l| l.milli_percent));
            self.health.set_load_excluded(
                service,
                b.load.is_some_and(|l| !crate::load::eligible(&l, passive)),
            );
        }
        let samples: Vec<Option<u64>> = mine
            .iter()
            .filter(|b| b.target.lrtm)
            .map(|b| b.last_response_us)
            .collect();
        self.health
            .set_response_time(service, crate::load::mean_response(&samples));
    }
}

#[cfg(test)]
mod tests {
    use super::unescape;

    #[test]
    fn dns_queries_and_answers() {
        use super::{dns_answer_ok, dns_query};
        use simple_dns::rdata::{A, RData};
        use simple_dns::{CLASS, Name, Packet, ResourceRecord};
        let q = dns_query(77, "www.svc.test", false).unwrap();
        let mut reply = Packet::parse(&q).unwrap().into_reply();
        let addr: std::net::Ipv4Addr = "198.18.0.10".parse().unwrap();
        reply.answers.push(ResourceRecord::new(
            Name::new_unchecked("www.svc.test"),
            CLASS::IN,
            5,
            RData::A(A {
                address: addr.into(),
            }),
        ));
        let bytes = reply.build_bytes_vec().unwrap();
        assert!(dns_answer_ok(&bytes, 77, &[addr.into()]));
        assert!(dns_answer_ok(&bytes, 77, &[]));
        assert!(!dns_answer_ok(&bytes, 78, &[]), "another query's answer");
        assert!(
            !dns_answer_ok(&bytes, 77, &["198.18.0.11".parse().unwrap()]),
            "a listed address is missing"
        );
        assert!(!dns_answer_ok(b"garbage", 77, &[]));
    }

    #[test]
    fn user_scripts_decide_by_exit_status_and_are_killed_at_the_timeout() {
        use super::{ChannelDevice, MonitorCore, ProbeKind, Target};
        use crate::health::{MonitorState, Timers};
        use crate::publish::ServiceHealth;
        use std::sync::Arc;
        let (_in_tx, rx) = crossbeam_channel::bounded(8);
        let (tx, _out_rx) = crossbeam_channel::bounded(8);
        let health = Arc::new(ServiceHealth::new(4));
        let mut core = MonitorCore::new(
            [2, 0, 0, 0, 0, 1],
            &[],
            ChannelDevice::new(rx, tx),
            Arc::clone(&health),
            1024..2000,
            0,
        );
        let timers = Timers {
            interval: 1000,
            resp_timeout: 300,
            down_time: 1000,
            retries: 1,
            failure_retries: 0,
            success_retries: 1,
            reverse: false,
        };
        let target = |service, script: &str, args: &[&str]| Target {
            service,
            monitor: "user".into(),
            addr: "198.18.0.11".parse().unwrap(),
            port: 80,
            kind: ProbeKind::User {
                script: script.into(),
                args: args.iter().map(|a| a.to_string()).collect(),
            },
            timers,
            weight: 1,
            enabled: true,
            lrtm: false,
            mon_threshold: 0,
            secure: false,
        };
        core.set_targets(
            vec![
                target(0, "/bin/true", &[]),
                target(1, "/bin/false", &[]),
                target(2, "/bin/sleep", &["5"]),
            ],
            0,
        );
        // Real processes, virtual time: poll until the two quick scripts exited.
        let mut now = 0;
        for _ in 0..200 {
            core.poll(now);
            if core.state_of(0, "user") != Some(MonitorState::Unknown)
                && core.state_of(1, "user") != Some(MonitorState::Unknown)
            {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(core.state_of(0, "user"), Some(MonitorState::Up));
        assert_eq!(core.state_of(1, "user"), Some(MonitorState::Down));
        assert!(health.is_up(0) && !health.is_up(1));
        now += 400_000; // past the sleeping script's timeout (µs)
        core.poll(now);
        assert_eq!(
            core.state_of(2, "user"),
            Some(MonitorState::Down),
            "killed at the response timeout"
        );
    }

    #[test]
    fn ftp_replies_are_read_line_by_line() {
        use super::ftp_reply;
        assert_eq!(
            ftp_reply(b"220 (vsFTPd 3.0.3)\r\n331 Please"),
            Some((220, 20))
        );
        assert_eq!(ftp_reply(b"230 Login"), None, "incomplete line");
        assert_eq!(ftp_reply(b"xx\r\n"), None);
    }

    #[test]
    fn http_requests_carry_the_custom_headers() {
        let host = "198.18.0.11".parse().unwrap();
        assert_eq!(
            super::http_request(b"GET /health", host, b""),
            b"GET /health HTTP/1.1\r\nHost: 198.18.0.11\r\nConnection: close\r\n\r\n"
        );
        assert_eq!(
            super::http_request(b"HEAD /", host, b"host: www.svc.test\r\nX-Probe: 1"),
            b"HEAD / HTTP/1.1\r\nhost: www.svc.test\r\nX-Probe: 1\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn operators_escapes_become_bytes() {
        assert_eq!(unescape(r"PING\r\n"), b"PING\r\n");
        assert_eq!(unescape(r"a\tb\\c\q"), b"a\tb\\c\\q");
        assert_eq!(unescape("trailing\\"), b"trailing\\");
    }
}
