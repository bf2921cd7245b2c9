//! A scripted backend for the probe tests: a second smoltcp interface wired to the monitor
//! core by channels, with TCP services (optionally behind rustls) that answer per a script and
//! UDP services that answer per a closure. Everything runs in virtual milliseconds.

#![allow(dead_code)] // each test binary uses part of it

use std::io::{Read, Write};
use std::net::Ipv4Addr;
use std::sync::Arc;

use monitors::publish::ServiceHealth;
use monitors::{ChannelDevice, MonitorCore};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ServerConfig, ServerConnection};
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::socket::{tcp, udp};
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, IpAddress, IpCidr};

pub const CORE_IP: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
pub const BACKEND_IP: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 11);
const CORE_MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];
const BACKEND_MAC: [u8; 6] = [2, 0, 0, 0, 0, 11];
/// Connections a TCP service accepts at once (one listening socket each).
const BACKLOG: usize = 8;

/// What the backend sends, and how many virtual milliseconds after its trigger.
#[derive(Clone, Debug)]
pub struct Reply {
    delay: u64,
    bytes: Vec<u8>,
}

impl Reply {
    pub fn now(text: &str) -> Self {
        Self::after(0, text)
    }

    pub fn after(delay: u64, text: &str) -> Self {
        Self {
            delay,
            bytes: text.as_bytes().to_vec(),
        }
    }
}

/// A TCP service's conversation: an optional banner, then for each step a trigger (bytes the
/// client must have sent) and a reply. Step replies can differ per connection: connection `k`
/// gets reply `min(k, last)` of the step.
#[derive(Clone, Debug, Default)]
pub struct Script {
    banner: Option<Vec<u8>>,
    steps: Vec<(Vec<u8>, Vec<Reply>)>,
    close_after_last: bool,
}

impl Script {
    /// Accepts connections and never says anything (a half-open peer to the prober).
    pub fn silent() -> Self {
        Self::default()
    }

    pub fn banner(text: &str) -> Self {
        Self {
            banner: Some(text.as_bytes().to_vec()),
            ..Self::default()
        }
    }

    pub fn on(trigger: &str, reply: Reply) -> Self {
        Self::default().then(trigger, reply)
    }

    pub fn then(mut self, trigger: &str, reply: Reply) -> Self {
        self.steps.push((trigger.as_bytes().to_vec(), vec![reply]));
        self
    }

    /// An HTTP server: answers `response` `delay` ms after the request's blank line, closes.
    pub fn http(response: &str, delay: u64) -> Self {
        Self::http_sequence(&[response]).delayed(delay)
    }

    /// An HTTP server answering the k-th connection with `responses[k]` (the last one repeats).
    pub fn http_sequence(responses: &[&str]) -> Self {
        Self {
            banner: None,
            steps: vec![(
                b"\r\n\r\n".to_vec(),
                responses.iter().map(|r| Reply::now(r)).collect(),
            )],
            close_after_last: true,
        }
    }

    fn delayed(mut self, delay: u64) -> Self {
        for (_, replies) in &mut self.steps {
            for r in replies {
                r.delay = delay;
            }
        }
        self
    }
}

/// One accepted connection's progress through the script.
struct Conversation {
    number: usize,
    tls: Option<ServerConnection>,
    input: Vec<u8>,
    step: usize,
    banner_sent: bool,
    due: Option<(u64, Vec<u8>)>,
    closing: bool,
}

struct TcpService {
    port: u16,
    script: Script,
    tls: bool,
    sockets: Vec<(SocketHandle, Option<Conversation>)>,
    connections: usize,
}

type UdpAnswer = Box<dyn FnMut(&[u8]) -> Option<Vec<u8>>>;

struct UdpService {
    handle: Option<SocketHandle>,
    port: u16,
    answer: UdpAnswer,
}

/// The backend's services, before and while it runs.
pub struct Backend {
    tcp: Vec<TcpService>,
    udp: Vec<UdpService>,
    tls_config: Arc<ServerConfig>,
}

impl Default for Backend {
    fn default() -> Self {
        Self::new()
    }
}

impl Backend {
    pub fn new() -> Self {
        Self {
            tcp: Vec::new(),
            udp: Vec::new(),
            tls_config: server_config(),
        }
    }

    pub fn tcp(mut self, port: u16, script: Script) -> Self {
        self.tcp.push(TcpService {
            port,
            script,
            tls: false,
            sockets: Vec::new(),
            connections: 0,
        });
        self
    }

    /// A TCP service behind TLS (the script runs on the plaintext).
    pub fn tls(mut self, port: u16, script: Script) -> Self {
        self = self.tcp(port, script);
        self.tcp.last_mut().unwrap().tls = true;
        self
    }

    pub fn udp(
        mut self,
        port: u16,
        answer: impl FnMut(&[u8]) -> Option<Vec<u8>> + 'static,
    ) -> Self {
        self.udp.push(UdpService {
            handle: None,
            port,
            answer: Box::new(answer),
        });
        self
    }
}

fn server_config() -> Arc<ServerConfig> {
    let cert = CertificateDer::from_pem_slice(include_bytes!("../data/cert.pem")).unwrap();
    let key = PrivateKeyDer::from_pem_slice(include_bytes!("../data/key.pem")).unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
    Arc::new(config)
}

/// The monitor core and the backend on one virtual wire.
pub struct Lab {
    pub core: MonitorCore,
    pub health: Arc<ServiceHealth>,
    /// Source and destination of every IPv4 packet the core sent.
    pub sent: Vec<(Ipv4Addr, Ipv4Addr)>,
    core_out: crossbeam_channel::Receiver<Vec<u8>>,
    to_backend: crossbeam_channel::Sender<Vec<u8>>,
    backend: Backend,
    iface: Interface,
    device: ChannelDevice,
    sockets: SocketSet<'static>,
    now: u64,
}

impl Lab {
    pub fn new(backend: Backend, services: usize) -> Self {
        Self::with_subnets(backend, services, 1)
    }

    /// The core holds `subnets` SNIPs, 198.18.k.1/24, and the backend one address in each,
    /// 198.18.k.11/24 (k = 0 is [`CORE_IP`] and [`BACKEND_IP`]).
    pub fn with_subnets(mut backend: Backend, services: usize, subnets: u8) -> Self {
        let (to_backend, backend_rx) = crossbeam_channel::bounded(4096);
        let (core_tx, core_out) = crossbeam_channel::bounded(4096);
        let (to_core, core_rx) = crossbeam_channel::bounded(4096);
        let health = Arc::new(ServiceHealth::new(services));
        let core_device = ChannelDevice::new(core_rx, core_tx);
        let snips: Vec<(Ipv4Addr, u8)> = (0..subnets)
            .map(|k| (Ipv4Addr::new(198, 18, k, 1), 24))
            .collect();
        let core = MonitorCore::new(
            CORE_MAC,
            &snips,
            core_device,
            health.clone(),
            1024..10000,
            0,
        )
        .expect("the SNIPs fit");
        let mut device = ChannelDevice::new(backend_rx, to_core);
        let config = Config::new(EthernetAddress(BACKEND_MAC).into());
        let mut iface = Interface::new(config, &mut device, Instant::from_millis(0));
        iface.update_ip_addrs(|a| {
            for k in 0..subnets {
                a.push(IpCidr::new(IpAddress::v4(198, 18, k, 11), 24))
                    .unwrap();
            }
        });
        let mut sockets = SocketSet::new(Vec::new());
        for svc in &mut backend.tcp {
            for _ in 0..BACKLOG {
                let mut s = tcp::Socket::new(
                    tcp::SocketBuffer::new(vec![0; 16384]),
                    tcp::SocketBuffer::new(vec![0; 16384]),
                );
                s.listen(svc.port).unwrap();
                svc.sockets.push((sockets.add(s), None));
            }
        }
        for svc in &mut backend.udp {
            let mut s = udp::Socket::new(
                udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; 8], vec![0; 8192]),
                udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; 8], vec![0; 8192]),
            );
            s.bind(svc.port).unwrap();
            svc.handle = Some(sockets.add(s));
        }
        Self {
            core,
            health,
            sent: Vec::new(),
            core_out,
            to_backend,
            backend,
            iface,
            device,
            sockets,
            now: 0,
        }
    }

    /// Polls the core and the backend once per virtual millisecond up to `t`.
    pub fn run_until(&mut self, t: u64) {
        while self.now < t {
            self.now += 1;
            self.core.poll(self.now * 1000);
            self.carry_core_frames();
            self.poll_backend();
        }
    }

    /// Virtual milliseconds so far.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// The same in the monitor core's unit (microseconds).
    pub fn now_us(&self) -> u64 {
        self.now * 1000
    }

    /// Hands the core's frames to the backend, noting the addresses of IPv4 packets.
    fn carry_core_frames(&mut self) {
        for frame in self.core_out.try_iter() {
            if frame.len() >= 34 && frame[12..14] == [8, 0] {
                let addr = |at: usize| {
                    Ipv4Addr::new(frame[at], frame[at + 1], frame[at + 2], frame[at + 3])
                };
                self.sent.push((addr(26), addr(30)));
            }
            self.to_backend.send(frame).unwrap();
        }
    }

    fn poll_backend(&mut self) {
        let now = self.now;
        let at = Instant::from_millis(now as i64);
        self.iface.poll(at, &mut self.device, &mut self.sockets);
        for svc in &mut self.backend.udp {
            let s = self.sockets.get_mut::<udp::Socket>(svc.handle.unwrap());
            while let Ok((data, meta)) = s.recv() {
                let data = data.to_vec();
                if let Some(reply) = (svc.answer)(&data) {
                    let _ = s.send_slice(&reply, meta.endpoint);
                }
            }
        }
        for svc in &mut self.backend.tcp {
            for (handle, conv) in &mut svc.sockets {
                let socket = self.sockets.get_mut::<tcp::Socket>(*handle);
                match socket.state() {
                    tcp::State::Closed => {
                        *conv = None;
                        socket.listen(svc.port).unwrap();
                        continue;
                    }
                    tcp::State::Listen | tcp::State::SynReceived => continue,
                    _ => {}
                }
                let conv = conv.get_or_insert_with(|| {
                    svc.connections += 1;
                    Conversation {
                        number: svc.connections - 1,
                        tls: svc.tls.then(|| {
                            ServerConnection::new(self.backend.tls_config.clone()).unwrap()
                        }),
                        input: Vec::new(),
                        step: 0,
                        banner_sent: false,
                        due: None,
                        closing: false,
                    }
                });
                if converse(socket, conv, &svc.script, now).is_err() {
                    socket.abort();
                }
            }
        }
        self.iface.poll(at, &mut self.device, &mut self.sockets);
    }
}

/// Advances one connection through its script.
fn converse(
    socket: &mut tcp::Socket,
    conv: &mut Conversation,
    script: &Script,
    now: u64,
) -> Result<(), ()> {
    let mut buf = [0u8; 4096];
    while socket.can_recv() {
        let n = socket.recv_slice(&mut buf).map_err(|_| ())?;
        if n == 0 {
            break;
        }
        match conv.tls.as_mut() {
            None => conv.input.extend_from_slice(&buf[..n]),
            Some(tls) => {
                let mut rd = &buf[..n];
                while !rd.is_empty() {
                    tls.read_tls(&mut rd).map_err(|_| ())?;
                    tls.process_new_packets().map_err(|_| ())?;
                    let mut plain = [0u8; 4096];
                    while let Ok(m) = tls.reader().read(&mut plain) {
                        if m == 0 {
                            break;
                        }
                        conv.input.extend_from_slice(&plain[..m]);
                    }
                }
            }
        }
    }
    let talking = conv.tls.as_ref().is_none_or(|t| !t.is_handshaking());
    if talking && !conv.banner_sent {
        conv.banner_sent = true;
        if let Some(banner) = &script.banner {
            send(socket, conv, banner)?;
        }
    }
    if conv.due.is_none()
        && let Some((trigger, replies)) = script.steps.get(conv.step)
        && conv.input.windows(trigger.len()).any(|w| w == trigger)
    {
        let reply = &replies[conv.number.min(replies.len() - 1)];
        conv.due = Some((now + reply.delay, reply.bytes.clone()));
        conv.step += 1;
        conv.input.clear();
    }
    if let Some((at, bytes)) = conv.due.take_if(|(at, _)| *at <= now) {
        let _ = at;
        send(socket, conv, &bytes)?;
        conv.closing = script.close_after_last && conv.step == script.steps.len();
    }
    if let Some(tls) = conv.tls.as_mut() {
        let mut out = Vec::new();
        while tls.wants_write() {
            tls.write_tls(&mut out).map_err(|_| ())?;
        }
        if socket.send_slice(&out).map_err(|_| ())? != out.len() {
            return Err(()); // the test's buffers are sized so this never happens
        }
    }
    if conv.closing {
        socket.close();
    }
    Ok(())
}

fn send(socket: &mut tcp::Socket, conv: &mut Conversation, bytes: &[u8]) -> Result<(), ()> {
    match conv.tls.as_mut() {
        Some(tls) => tls.writer().write_all(bytes).map_err(|_| ()),
        None => (socket.send_slice(bytes) == Ok(bytes.len()))
            .then_some(())
            .ok_or(()),
    }
}

/// A DNS server's answer: the query's name with one A record, `addr`.
pub fn dns_answer(query: &[u8], addr: &str) -> Option<Vec<u8>> {
    use simple_dns::rdata::{A, RData};
    use simple_dns::{CLASS, Packet, ResourceRecord};
    let query = Packet::parse(query).ok()?;
    let name = query.questions.first()?.qname.clone();
    let mut reply = query.into_reply();
    let addr: Ipv4Addr = addr.parse().ok()?;
    reply.answers.push(ResourceRecord::new(
        name,
        CLASS::IN,
        5,
        RData::A(A {
            address: addr.into(),
        }),
    ));
    reply.build_bytes_vec().ok()
}

/// An SNMP v2c agent's answer: every requested OID holds the INTEGER `value`.
pub fn snmp_answer(request: &[u8], value: u32) -> Option<Vec<u8>> {
    use rasn_smi::v2::{ObjectSyntax, SimpleSyntax};
    use rasn_snmp::v2::{Pdus, Response, VarBindValue};
    use rasn_snmp::v2c::Message;
    let mut msg: Message<Pdus> = rasn::ber::decode(request).ok()?;
    let Pdus::GetRequest(get) = msg.data else {
        return None;
    };
    let mut pdu = get.0;
    for vb in &mut pdu.variable_bindings {
        vb.value = VarBindValue::Value(ObjectSyntax::Simple(SimpleSyntax::Integer(
            rasn::types::Integer::from(value),
        )));
    }
    msg.data = Pdus::Response(Response(pdu));
    rasn::ber::encode(&msg).ok()
}
