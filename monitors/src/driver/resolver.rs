//! The driver's resolver: keeps every domain-based server resolved. Queries go over UDP from
//! a SNIP to the enabled name servers in turn (NetScaler's stub resolver); a name server that
//! does not answer within [`QUERY_TIMEOUT_US`] (or is unreachable) passes the query to the
//! next; when none answers, the failure is published and the name is asked again after its
//! `-domainResolveRetry`. An answer is used for its TTL (or `-dbsTtl`), then asked again.

use std::net::Ipv4Addr;
use std::sync::Arc;

use smoltcp::iface::SocketSet;

use super::io::Io;
use crate::publish::Resolutions;
use crate::resolve::{Lookup, Resolved, answer, query};

/// How long one name server has to answer.
pub const QUERY_TIMEOUT_US: u64 = 2_000_000;
const DNS_PORT: u16 = 53;

#[derive(Debug)]
struct Flight {
    id: u16,
    io: Io,
    deadline: u64,
    server: Ipv4Addr,
    /// Name servers asked so far in this round.
    asked: usize,
}

#[derive(Debug)]
struct Job {
    lookup: Lookup,
    /// When to ask next (ms).
    due_ms: u64,
    flight: Option<Flight>,
}

#[derive(Debug)]
pub struct Resolver {
    jobs: Vec<Job>,
    name_servers: Vec<Ipv4Addr>,
    /// The next name server to ask (round robin over queries).
    turn: usize,
    out: Arc<Resolutions>,
}

impl Resolver {
    pub fn new(out: Arc<Resolutions>) -> Self {
        Self {
            jobs: Vec::new(),
            name_servers: Vec::new(),
            turn: 0,
            out,
        }
    }

    /// New lookups and name servers (a configuration generation). A lookup that stays keeps
    /// its schedule unless it asks for a resolution now; new ones, and all when the name
    /// servers changed, are asked at once.
    pub fn set(
        &mut self,
        lookups: Vec<Lookup>,
        name_servers: Vec<Ipv4Addr>,
        sockets: &mut SocketSet<'static>,
        now_ms: u64,
    ) {
        let servers_changed = name_servers != self.name_servers;
        self.name_servers = name_servers;
        let mut old: Vec<Job> = std::mem::take(&mut self.jobs);
        for lookup in lookups {
            let kept = old
                .iter()
                .position(|j| j.lookup.server == lookup.server && j.lookup.domain == lookup.domain);
            let job = match kept.map(|i| old.swap_remove(i)) {
                Some(mut j) => {
                    if servers_changed || j.lookup.requests != lookup.requests {
                        j.due_ms = now_ms;
                    }
                    j.lookup = lookup;
                    j
                }
                None => Job {
                    lookup,
                    due_ms: now_ms,
                    flight: None,
                },
            };
            self.jobs.push(job);
        }
        for j in old {
            if let Some(f) = j.flight {
                f.io.release(sockets);
            }
        }
    }

    /// Whether a query is waiting for its answer (the core then polls every millisecond).
    pub fn busy(&self) -> bool {
        self.jobs.iter().any(|j| j.flight.is_some())
    }

    /// When the next query is due (ms), if any is.
    pub fn next_due_ms(&self) -> Option<u64> {
        self.jobs
            .iter()
            .filter(|j| j.flight.is_none())
            .map(|j| j.due_ms)
            .min()
    }

    /// Reads the answers that came, moves overdue queries on, starts the due ones.
    pub fn poll(
        &mut self,
        now_us: u64,
        sockets: &mut SocketSet<'static>,
        local_port: &mut dyn FnMut() -> u16,
    ) {
        let now_ms = now_us / 1000;
        for i in 0..self.jobs.len() {
            if let Some(mut f) = self.jobs[i].flight.take() {
                let mut got = None;
                let reachable = f.io.datagrams(sockets, |data| {
                    got = answer(data, f.id);
                    got.is_some()
                });
                match got {
                    Some(result) => {
                        f.io.release(sockets);
                        self.finish(i, now_ms, result);
                    }
                    None if !reachable || now_us >= f.deadline => {
                        let why = if reachable {
                            format!("no answer from {} in 2 s", f.server)
                        } else {
                            format!("name server {} unreachable", f.server)
                        };
                        f.io.release(sockets);
                        if f.asked < self.name_servers.len() {
                            self.ask(i, f.asked, now_us, sockets, local_port);
                        } else {
                            self.finish(i, now_ms, Err(why));
                        }
                    }
                    None => self.jobs[i].flight = Some(f),
                }
            } else if self.jobs[i].due_ms <= now_ms {
                if self.name_servers.is_empty() {
                    let why = "no name server (add dns nameServer <IP>)".to_owned();
                    self.finish(i, now_ms, Err(why));
                } else {
                    self.ask(i, 0, now_us, sockets, local_port);
                }
            }
        }
    }

    /// Sends job `i`'s query to the next name server; `asked` were asked in this round.
    fn ask(
        &mut self,
        i: usize,
        asked: usize,
        now_us: u64,
        sockets: &mut SocketSet<'static>,
        local_port: &mut dyn FnMut() -> u16,
    ) {
        let server = self.name_servers[self.turn % self.name_servers.len()];
        self.turn = self.turn.wrapping_add(1);
        let id = local_port();
        let Some(q) = query(id, &self.jobs[i].lookup.domain) else {
            let why = "the name cannot be asked in DNS".to_owned();
            return self.finish(i, now_us / 1000, Err(why));
        };
        match Io::send_datagram(sockets, (server, DNS_PORT), id, &q) {
            Ok(io) => {
                self.jobs[i].flight = Some(Flight {
                    id,
                    io,
                    deadline: now_us + QUERY_TIMEOUT_US,
                    server,
                    asked: asked + 1,
                })
            }
            Err(_) => {
                let why = format!("the query to {server} could not be sent");
                self.finish(i, now_us / 1000, Err(why));
            }
        }
    }

    fn finish(&mut self, i: usize, now_ms: u64, result: Result<(Vec<Ipv4Addr>, u32), String>) {
        let job = &mut self.jobs[i];
        let lookup = &job.lookup;
        job.due_ms = now_ms
            + match &result {
                Ok((_, ttl)) => {
                    let ttl = match lookup.ttl_override_s {
                        0 => *ttl,
                        s => s,
                    };
                    // A zero TTL would ask without pause.
                    u64::from(ttl.max(1)) * 1000
                }
                Err(_) => lookup.retry_ms,
            };
        let result = result.map(|(addrs, ttl)| match lookup.ttl_override_s {
            0 => (addrs, ttl),
            s => (addrs, s),
        });
        self.out.push(Resolved {
            server: lookup.server.clone(),
            domain: lookup.domain.clone(),
            answer: result,
        });
    }
}
