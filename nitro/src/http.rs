//! The listeners: HTTP (`--nitro`) and HTTPS (`--nitro-tls`) on the kernel's stack, served
//! by hyper on one thread of their own; each request is answered by [`Nitro::handle`] on
//! tokio's blocking pool (a password check takes milliseconds and must not hold the others).

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::Semaphore;

use crate::reply::{Reply, reason};
use crate::request::Request;
use crate::{Appliance, MAX_BODY, Nitro, dashboard};

/// Connections served at once per listener; more wait in the kernel's backlog.
pub const MAX_CONNECTIONS: usize = 256;
/// A client that has not sent its request headers by then is dropped.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the certificate and key of `--nitro-tls` come from.
#[derive(Clone, Debug)]
pub enum TlsIdentity {
    Files {
        cert: PathBuf,
        key: PathBuf,
    },
    /// Self-signed, generated at the first start and kept in this directory.
    SelfSigned {
        dir: PathBuf,
    },
}

/// One address to listen on.
#[derive(Clone, Debug)]
pub struct Listen {
    pub addr: SocketAddr,
    pub tls: Option<TlsIdentity>,
}

fn invalid(what: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// The certificate and key files of a self-signed identity, made once.
fn self_signed(dir: &Path) -> io::Result<(PathBuf, PathBuf)> {
    let cert = dir.join("nitro-cert.pem");
    let key = dir.join("nitro-key.pem");
    if cert.exists() && key.exists() {
        return Ok((cert, key));
    }
    let names = vec!["fulcrum".to_owned(), "localhost".to_owned()];
    let made = rcgen::generate_simple_self_signed(names).map_err(invalid)?;
    std::fs::write(&cert, made.cert.pem())?;
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&key)?;
        io::Write::write_all(&mut f, made.signing_key.serialize_pem().as_bytes())?;
    }
    log::info!(target: "nitro", "generated a self-signed certificate: {}", cert.display());
    Ok((cert, key))
}

fn tls_config(identity: &TlsIdentity) -> io::Result<Arc<rustls::ServerConfig>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let (cert, key) = match identity {
        TlsIdentity::Files { cert, key } => (cert.clone(), key.clone()),
        TlsIdentity::SelfSigned { dir } => self_signed(dir)?,
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert)
        .map_err(|e| invalid(format!("{}: {e}", cert.display())))?
        .collect::<Result<_, _>>()
        .map_err(|e| invalid(format!("{}: {e}", cert.display())))?;
    let key = PrivateKeyDer::from_pem_file(&key)
        .map_err(|e| invalid(format!("{}: {e}", key.display())))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(invalid)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(invalid)?;
    Ok(Arc::new(config))
}

fn response(reply: Reply) -> hyper::Response<Full<Bytes>> {
    let body = serde_json::to_vec(&reply.body).unwrap_or_default();
    let mut builder = hyper::Response::builder()
        .status(reply.status)
        .header("Content-Type", "application/json; charset=utf-8")
        .header("Cache-Control", "no-store, no-cache, must-revalidate");
    if let Some(c) = &reply.cookie {
        builder = builder.header("Set-Cookie", c);
    }
    let mut resp = builder
        .body(Full::new(Bytes::from(body)))
        .unwrap_or_else(|_| hyper::Response::new(Full::new(Bytes::new())));
    // The Go SDK compares whole status lines ("599 Netscaler specific error").
    resp.extensions_mut()
        .insert(hyper::ext::ReasonPhrase::from_static(
            reason(reply.status).as_bytes(),
        ));
    resp
}

/// A file of the dashboard, or 404.
fn page(method: &hyper::Method, path: &str) -> hyper::Response<Full<Bytes>> {
    let found = dashboard::lookup(path)
        .filter(|_| method == hyper::Method::GET || method == hyper::Method::HEAD);
    let (status, content_type, body) = match found {
        Some(a) => (200, a.content_type, Bytes::from_static(a.body)),
        None => (
            404,
            "text/plain; charset=utf-8",
            Bytes::from_static(b"Not Found\n"),
        ),
    };
    let body = if method == hyper::Method::HEAD {
        Bytes::new()
    } else {
        body
    };
    hyper::Response::builder()
        .status(status)
        .header("Content-Type", content_type)
        .header(
            "Content-Security-Policy",
            dashboard::CONTENT_SECURITY_POLICY,
        )
        .header("X-Content-Type-Options", "nosniff")
        .header("Cache-Control", "no-cache")
        .body(Full::new(body))
        .unwrap_or_else(|_| hyper::Response::new(Full::new(Bytes::new())))
}

async fn serve_request<A: Appliance + 'static>(
    nitro: Arc<Nitro<A>>,
    peer: SocketAddr,
    req: hyper::Request<Incoming>,
) -> Result<hyper::Response<Full<Bytes>>, std::convert::Infallible> {
    let (parts, body) = req.into_parts();
    if !parts.uri.path().starts_with("/nitro/") {
        return Ok(page(&parts.method, parts.uri.path()));
    }
    let body = match Limited::new(body, MAX_BODY).collect().await {
        Ok(b) => b.to_bytes().to_vec(),
        Err(_) => {
            return Ok(response(Reply::error(
                413,
                1233,
                format!("Invalid JSON input [the body exceeds {MAX_BODY} bytes or was cut]"),
            )));
        }
    };
    let request = Request {
        method: parts.method.as_str().to_owned(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().unwrap_or("").to_owned(),
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_ascii_lowercase(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body,
        peer: Some(peer.ip()),
    };
    let reply = tokio::task::spawn_blocking(move || nitro.handle(&request))
        .await
        .unwrap_or_else(|_| Reply::error(500, 278, "The request could not be answered"));
    Ok(response(reply))
}

async fn accept_loop<A: Appliance + 'static>(
    nitro: Arc<Nitro<A>>,
    listener: tokio::net::TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(permit) = Arc::clone(&slots).acquire_owned().await else {
            return;
        };
        let (stream, peer) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                log::warn!(target: "nitro", "accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let nitro = Arc::clone(&nitro);
        let tls = tls.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let service = service_fn(move |req| serve_request(Arc::clone(&nitro), peer, req));
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT);
            let result = match tls {
                Some(acceptor) => {
                    match tokio::time::timeout(HEADER_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(s)) => builder.serve_connection(TokioIo::new(s), service).await,
                        _ => return,
                    }
                }
                None => {
                    builder
                        .serve_connection(TokioIo::new(stream), service)
                        .await
                }
            };
            if let Err(e) = result {
                log::debug!(target: "nitro", "{peer}: {e}");
            }
        });
    }
}

/// Binds every listener (an error names the address) and serves them on a thread of
/// their own until the process ends.
pub fn spawn<A: Appliance + 'static>(
    nitro: Arc<Nitro<A>>,
    listens: &[Listen],
) -> io::Result<std::thread::JoinHandle<()>> {
    let mut bound = Vec::new();
    for l in listens {
        let socket = std::net::TcpListener::bind(l.addr)
            .map_err(|e| io::Error::new(e.kind(), format!("NITRO on {}: {e}", l.addr)))?;
        socket.set_nonblocking(true)?;
        let tls = l
            .tls
            .as_ref()
            .map(tls_config)
            .transpose()
            .map_err(|e| io::Error::new(e.kind(), format!("NITRO on {}: {e}", l.addr)))?;
        log::info!(target: "nitro", "NITRO listening on {}://{}", if tls.is_some() { "https" } else { "http" }, l.addr);
        bound.push((socket, tls));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(8)
        .build()?;
    std::thread::Builder::new()
        .name("nitro".into())
        .spawn(move || {
            runtime.block_on(async move {
                let mut tasks = Vec::new();
                for (socket, tls) in bound {
                    let listener = match tokio::net::TcpListener::from_std(socket) {
                        Ok(l) => l,
                        Err(e) => {
                            log::error!(target: "nitro", "listener: {e}");
                            continue;
                        }
                    };
                    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
                    tasks.push(tokio::spawn(accept_loop(
                        Arc::clone(&nitro),
                        listener,
                        acceptor,
                    )));
                }
                for t in tasks {
                    let _ = t.await;
                }
            });
        })
}
