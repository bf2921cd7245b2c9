//! The driver's side of a running probe: the smoltcp socket (or the script process) it runs
//! on, how it is opened, and how what arrived reaches the probe's state machine.

use std::net::Ipv4Addr;
use std::process::Child;
use std::sync::Arc;

use smoltcp::iface::{Interface, SocketHandle, SocketSet};
use smoltcp::phy::ChecksumCapabilities;
use smoltcp::socket::{icmp, tcp, udp};
use smoltcp::wire::{Icmpv4Packet, Icmpv4Repr, IpAddress, IpListenEndpoint};

use crate::probe::{Connection, Failure, Outcome, REPLY_LIMIT, ping};
use crate::tls::TlsStream;

use super::Machine;

/// What a running probe talks over.
#[derive(Debug)]
pub enum Io {
    /// A TCP connection, with its TLS session once established for secure probes.
    Stream {
        handle: SocketHandle,
        secure: bool,
        tls: Option<Box<TlsStream>>,
        established: bool,
    },
    /// A UDP socket, and an ICMP socket for the errors about its port.
    Datagram {
        handle: SocketHandle,
        errors: SocketHandle,
    },
    /// An ICMP socket bound to the echo identifier.
    Echo { handle: SocketHandle },
    /// A USER monitor's script.
    Process(Child),
}

impl Io {
    /// Connects to `to` from local port `local`.
    pub fn connect(
        iface: &mut Interface,
        sockets: &mut SocketSet<'static>,
        to: (Ipv4Addr, u16),
        local: u16,
        secure: bool,
    ) -> Result<Self, Failure> {
        let mut socket = tcp::Socket::new(
            tcp::SocketBuffer::new(vec![0; 4096]),
            tcp::SocketBuffer::new(vec![0; 4096]),
        );
        socket
            .connect(iface.context(), (IpAddress::Ipv4(to.0), to.1), local)
            .map_err(|_| Failure::NotStarted)?;
        // No error socket for TCP: a closed port answers RST, and every extra socket costs
        // each frame the stack handles (smoltcp walks its sockets).
        Ok(Self::Stream {
            handle: sockets.add(socket),
            secure,
            tls: None,
            established: false,
        })
    }

    /// Sends `datagram` to `to` from local port `local`.
    pub fn send_datagram(
        sockets: &mut SocketSet<'static>,
        to: (Ipv4Addr, u16),
        local: u16,
        datagram: &[u8],
    ) -> Result<Self, Failure> {
        let mut socket = udp::Socket::new(
            udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; 4], vec![0; 2048]),
            udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; 4], vec![0; 2048]),
        );
        socket.bind(local).map_err(|_| Failure::NotStarted)?;
        socket
            .send_slice(datagram, (IpAddress::Ipv4(to.0), to.1))
            .map_err(|_| Failure::NotStarted)?;
        let errors = error_socket(icmp::Endpoint::Udp(IpListenEndpoint::from(local)))?;
        Ok(Self::Datagram {
            handle: sockets.add(socket),
            errors: sockets.add(errors),
        })
    }

    /// Sends an echo request to `to` with identifier `ident`.
    pub fn send_echo(
        sockets: &mut SocketSet<'static>,
        to: Ipv4Addr,
        ident: u16,
    ) -> Result<Self, Failure> {
        let mut socket = icmp::Socket::new(
            icmp::PacketBuffer::new(vec![icmp::PacketMetadata::EMPTY; 2], vec![0; 512]),
            icmp::PacketBuffer::new(vec![icmp::PacketMetadata::EMPTY; 2], vec![0; 512]),
        );
        let repr = Icmpv4Repr::EchoRequest {
            ident,
            seq_no: ping::SEQUENCE,
            data: ping::PAYLOAD,
        };
        socket
            .bind(icmp::Endpoint::Ident(ident))
            .map_err(|_| Failure::NotStarted)?;
        let buf = socket
            .send(repr.buffer_len(), IpAddress::Ipv4(to))
            .map_err(|_| Failure::NotStarted)?;
        repr.emit(
            &mut Icmpv4Packet::new_unchecked(buf),
            &ChecksumCapabilities::default(),
        );
        Ok(Self::Echo {
            handle: sockets.add(socket),
        })
    }

    /// Gives `machine` what arrived; `Some` once the probe has its outcome.
    pub fn step(
        &mut self,
        machine: &mut Machine,
        sockets: &mut SocketSet<'static>,
        tls_config: &Arc<rustls::ClientConfig>,
        addr: Ipv4Addr,
        now: u64,
    ) -> Option<Outcome> {
        match self {
            Self::Stream {
                handle,
                secure,
                tls,
                established,
            } => {
                let socket = sockets.get_mut::<tcp::Socket>(*handle);
                let state = socket.state();
                if matches!(state, tcp::State::Closed | tcp::State::TimeWait) && !*established {
                    // Refused (RST), never reachable, or closed mid-handshake.
                    return Some(Outcome::Failed(Failure::Refused));
                }
                if state == tcp::State::Established && !*established {
                    *established = true;
                    if *secure {
                        match TlsStream::new(tls_config, addr) {
                            Ok(t) => *tls = Some(Box::new(t)),
                            Err(_) => return Some(Outcome::Failed(Failure::Tls)),
                        }
                    }
                }
                if let Some(t) = tls.as_mut()
                    && t.pump(socket).is_err()
                {
                    return Some(Outcome::Failed(Failure::Tls));
                }
                let mut conn = SocketConnection {
                    socket,
                    tls: tls.as_deref_mut(),
                };
                machine.on_connection(now, &mut conn)
            }
            Self::Datagram { handle, errors } => {
                // Port, host or network unreachable: fail now rather than at the timeout.
                if unreachable(sockets.get_mut::<icmp::Socket>(*errors)) {
                    return Some(Outcome::Failed(Failure::Unreachable));
                }
                let socket = sockets.get_mut::<udp::Socket>(*handle);
                while let Ok((data, _)) = socket.recv() {
                    if let Some(outcome) = machine.on_datagram(data, now) {
                        return Some(outcome);
                    }
                }
                None
            }
            Self::Echo { handle } => {
                let socket = sockets.get_mut::<icmp::Socket>(*handle);
                while let Ok((payload, _)) = socket.recv() {
                    let reply = Icmpv4Packet::new_checked(payload)
                        .ok()
                        .and_then(|p| Icmpv4Repr::parse(&p, &ChecksumCapabilities::default()).ok());
                    if let Some(Icmpv4Repr::EchoReply { seq_no, .. }) = reply
                        && let Some(outcome) = machine.on_echo_reply(seq_no, now)
                    {
                        return Some(outcome);
                    }
                }
                None
            }
            Self::Process(child) => match child.try_wait() {
                Ok(Some(status)) => machine.on_exit(status.success(), now),
                Ok(None) => None,
                Err(_) => Some(Outcome::Failed(Failure::ScriptFailed)),
            },
        }
    }

    /// Gives `on` each datagram that arrived on a UDP socket until it takes one (returns
    /// true); false when an ICMP error said the destination is unreachable.
    pub fn datagrams(
        &mut self,
        sockets: &mut SocketSet<'static>,
        mut on: impl FnMut(&[u8]) -> bool,
    ) -> bool {
        let Self::Datagram { handle, errors } = self else {
            return true;
        };
        if unreachable(sockets.get_mut::<icmp::Socket>(*errors)) {
            return false;
        }
        let socket = sockets.get_mut::<udp::Socket>(*handle);
        while let Ok((data, _)) = socket.recv() {
            if on(data) {
                break;
            }
        }
        true
    }

    /// Ends the probe's I/O: a connection is reset (`-monitorConnectionClose RESET`; the
    /// caller polls the interface so the RST leaves), a script still running is killed.
    pub fn abort(&mut self, sockets: &mut SocketSet<'static>) {
        match self {
            Self::Stream { handle, .. } => sockets.get_mut::<tcp::Socket>(*handle).abort(),
            Self::Process(child) => {
                // It may have exited already: then both calls fail harmlessly.
                if child.kill().is_ok() {
                    // Reaped here so no zombie is left; its status no longer matters.
                    drop(child.wait());
                }
            }
            Self::Datagram { .. } | Self::Echo { .. } => {}
        }
    }

    /// Gives the sockets back to the set.
    pub fn release(self, sockets: &mut SocketSet<'static>) {
        match self {
            Self::Stream { handle, .. } | Self::Echo { handle } => {
                sockets.remove(handle);
            }
            Self::Datagram { handle, errors } => {
                sockets.remove(handle);
                sockets.remove(errors);
            }
            Self::Process(_) => {}
        }
    }
}

/// A probe's TCP connection, through its TLS session when it has one.
struct SocketConnection<'a> {
    socket: &'a mut tcp::Socket<'static>,
    tls: Option<&'a mut TlsStream>,
}

impl Connection for SocketConnection<'_> {
    fn ready(&self) -> bool {
        self.socket.state() == tcp::State::Established
            && self.tls.as_ref().is_none_or(|t| !t.handshaking())
    }

    fn may_recv(&self) -> bool {
        self.socket.may_recv()
    }

    fn send(&mut self, bytes: &[u8]) -> bool {
        match self.tls.as_deref_mut() {
            Some(tls) => tls.write(bytes).is_ok() && tls.pump(self.socket).is_ok(),
            None => self.socket.send_slice(bytes) == Ok(bytes.len()),
        }
    }

    fn recv_into(&mut self, buf: &mut Vec<u8>) {
        match self.tls.as_deref_mut() {
            Some(tls) => tls.read_into(buf),
            None => {
                let mut chunk = [0u8; 1024];
                while self.socket.can_recv() && buf.len() < REPLY_LIMIT {
                    match self.socket.recv_slice(&mut chunk) {
                        Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
                        _ => break,
                    }
                }
            }
        }
        buf.truncate(REPLY_LIMIT);
    }
}

/// An ICMP socket that receives the errors about local UDP port `endpoint`.
fn error_socket(endpoint: icmp::Endpoint) -> Result<icmp::Socket<'static>, Failure> {
    let mut socket = icmp::Socket::new(
        icmp::PacketBuffer::new(vec![icmp::PacketMetadata::EMPTY; 2], vec![0; 1024]),
        icmp::PacketBuffer::new(vec![icmp::PacketMetadata::EMPTY; 1], vec![0; 64]),
    );
    socket.bind(endpoint).map_err(|_| Failure::NotStarted)?;
    Ok(socket)
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
