//! TLS for the secure monitors (TCPS, HTTPS, HTTPS-ECV): a rustls client session pumped over
//! a smoltcp TCP socket. Like NetScaler's monitors, it does not judge the backend's certificate
//! (self-signed and expired ones pass) but still checks the handshake's signatures, so a peer
//! that cannot prove it holds the certificate's key fails.

use std::io::{Read, Write};
use std::net::Ipv4Addr;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, SignatureScheme};
use smoltcp::socket::tcp;

/// Most plaintext a probe keeps from one answer; the rest is read and dropped.
const PLAINTEXT_LIMIT: usize = 64 * 1024;

/// Accepts any certificate chain; verifies handshake signatures with the provider.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The client configuration every secure probe shares (TLS 1.2 and 1.3, no client certificate).
pub fn client_config() -> Arc<ClientConfig> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("the default provider supports the default protocol versions")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        .with_no_client_auth();
    Arc::new(config)
}

/// One probe's TLS session over its TCP socket.
#[derive(Debug)]
pub struct TlsStream {
    conn: ClientConnection,
    /// Ciphertext the socket's send buffer had no room for yet.
    outgoing: Vec<u8>,
    /// Plaintext received and not yet taken by the probe.
    incoming: Vec<u8>,
}

impl TlsStream {
    /// A session to `addr` (no SNI: the monitor addresses the service by IP).
    pub fn new(config: &Arc<ClientConfig>, addr: Ipv4Addr) -> Result<Self, rustls::Error> {
        let conn = ClientConnection::new(config.clone(), ServerName::IpAddress(addr.into()))?;
        Ok(Self {
            conn,
            outgoing: Vec::new(),
            incoming: Vec::new(),
        })
    }

    /// Moves ciphertext between the session and the socket both ways. An error (bad record,
    /// alert, failed signature) fails the probe.
    pub fn pump(&mut self, socket: &mut tcp::Socket) -> Result<(), rustls::Error> {
        let mut buf = [0u8; 4096];
        while socket.can_recv() {
            let n = match socket.recv_slice(&mut buf) {
                Ok(n) if n > 0 => n,
                _ => break,
            };
            self.receive(&buf[..n])?;
        }
        while self.conn.wants_write() {
            self.conn
                .write_tls(&mut self.outgoing)
                .map_err(|e| rustls::Error::General(e.to_string()))?;
        }
        if !self.outgoing.is_empty() {
            let sent = socket.send_slice(&self.outgoing).unwrap_or(0);
            self.outgoing.drain(..sent);
        }
        Ok(())
    }

    /// Hands the server's `ciphertext` (not empty: an empty read tells rustls the peer
    /// closed) to the session, keeping the plaintext it yields.
    pub fn receive(&mut self, mut ciphertext: &[u8]) -> Result<(), rustls::Error> {
        while !ciphertext.is_empty() {
            self.conn
                .read_tls(&mut ciphertext)
                .map_err(|e| rustls::Error::General(e.to_string()))?;
            self.conn.process_new_packets()?;
            self.take_plaintext();
        }
        Ok(())
    }

    fn take_plaintext(&mut self) {
        let mut buf = [0u8; 4096];
        loop {
            match self.conn.reader().read(&mut buf) {
                Ok(n) if n > 0 => {
                    let room = PLAINTEXT_LIMIT.saturating_sub(self.incoming.len());
                    self.incoming.extend_from_slice(&buf[..n.min(room)]);
                }
                _ => break, // closed, or nothing more for now
            }
        }
    }

    /// Whether the handshake is still running.
    pub fn handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    /// Queues plaintext; the next [`TlsStream::pump`] encrypts and sends it.
    pub fn write(&mut self, plaintext: &[u8]) -> std::io::Result<()> {
        self.conn.writer().write_all(plaintext)
    }

    /// Appends the plaintext received so far to `out`.
    pub fn read_into(&mut self, out: &mut Vec<u8>) {
        out.append(&mut self.incoming);
    }
}
