//! The runtime tables a worker indexes, built by the control plane from the configuration
//! (SPEC §1: the control plane computes, the data plane indexes). A new generation replaces
//! the old one as a whole; services keep their [`ServiceId`] across generations so counters
//! and flows stay attached to them.
//!
//! How subnets map to ports, in NetScaler's spirit: every profile port is in the default
//! VLAN, as a NetScaler's untagged interfaces are. A SNIP or VIP is answered for (ARP) on
//! every port; the engine asks for neighbours on every port and remembers the port the answer
//! came from. One-arm (everything on one port) and two-arm (clients on one port, services on
//! another) need no further configuration.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use ctl::conf::{Config, IpType, LbMethod, Transport};
use ctl::value::Port;

use crate::addr_index::{AddrIndex, KeyIndex};
use crate::flow::Timeouts;
use crate::lb::spill::{Fallback, FallbackState, Spill, SpillAction};
use crate::lb::{HashKey, Member, Method, Pool, ServiceId, member_seed};
use crate::persist::PersistTable;
use crate::wire::Proto;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RtService {
    pub name: String,
    pub addr: Ipv4Addr,
    /// `None` for port `*`: the client's destination port is kept.
    pub port: Option<u16>,
    /// The service and its server are enabled.
    pub enabled: bool,
    /// The SNIP that sources traffic to the service, and the next hop toward it; `None`
    /// when no SNIP subnet or route reaches it.
    pub path: Option<(Ipv4Addr, Ipv4Addr)>,
    /// Every SNIP of the next hop's subnet: new flows are spread over them, as NetScaler
    /// does, so each adds its ports to the tuples toward the service (the first is `path`'s).
    pub sources: Box<[Ipv4Addr]>,
    pub timeouts: Timeouts,
    /// `-maxClient`: at this many open flows the service takes no new one (0 = no limit).
    pub max_client: u64,
    /// `-usip YES`: the client's own address is the source toward the service (which must
    /// route its replies back through the engine); `-useproxyport NO` keeps the client's
    /// port too where this worker owns it.
    pub usip: bool,
    pub proxy_port: bool,
    pub down_state_flush: bool,
    /// Disabled: from this time (the workers' clock, ms) its flows are flushed when
    /// `down_state_flush`; `None` while enabled or draining gracefully (see [`crate::drain`]).
    pub flush_from_ms: Option<u64>,
}

#[derive(Clone, Debug)]
pub struct RtVserver {
    /// Stable across generations, like a service's id (its hit counters are indexed by it).
    pub id: u32,
    pub name: String,
    pub vip: Ipv4Addr,
    pub port: Option<u16>,
    pub enabled: bool,
    pub pool: Pool,
    /// SOURCEIP persistence: how long a session lasts, in seconds (`None`: no persistence).
    pub persist_timeout_s: Option<u64>,
    /// Its sessions, shared by the workers and kept across generations (see
    /// [`Tables::attach_persistence`]).
    pub persist: Option<Arc<PersistTable>>,
    /// Backup vserver and spillover (see [`crate::lb::spill`]).
    pub fallback: Fallback,
    /// Its fallback's run-time state, when `-disablePrimaryOnDown` or `-soPersistence` asks
    /// for one (see [`Tables::attach_fallback_state`]).
    pub fallback_state: Option<Arc<FallbackState>>,
}

/// What an address of ours is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocalKind {
    /// Sources traffic to services and the monitor core's probes.
    Snip,
    /// Clients connect to it.
    Vip,
}

impl From<IpType> for LocalKind {
    fn from(t: IpType) -> Self {
        match t {
            IpType::Snip => Self::Snip,
            IpType::Vip => Self::Vip,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalIp {
    pub addr: Ipv4Addr,
    pub mask: u32,
    pub kind: LocalKind,
}

/// Names → small integer ids, reused once free (katran's manner): an id leaves a name that
/// is gone at some generation, waits while anything may still use it, then goes to the next
/// new name.
#[derive(Clone, Debug, Default)]
struct IdPool {
    ids: HashMap<String, u32>,
    next: u32,
    /// Ids of names gone, with the generation that dropped them.
    retired: Vec<(u32, u64)>,
    free: Vec<u32>,
}

impl IdPool {
    fn get(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.free.pop().unwrap_or_else(|| {
            self.next += 1;
            self.next - 1
        });
        self.ids.insert(name.to_owned(), id);
        id
    }

    /// Retires the ids of names `keep` refuses, as of `generation`.
    fn retire_unless(&mut self, keep: impl Fn(&str) -> bool, generation: u64) {
        let retired = &mut self.retired;
        self.ids.retain(|name, id| {
            let kept = keep(name);
            if !kept {
                retired.push((*id, generation));
            }
            kept
        });
    }

    /// Frees the retired ids `safe` (given the id and the generation that retired it)
    /// allows; returns them.
    fn recycle(&mut self, mut safe: impl FnMut(u32, u64) -> bool) -> Vec<u32> {
        let mut freed = Vec::new();
        self.retired.retain(|&(id, generation)| {
            let free = safe(id, generation);
            if free {
                freed.push(id);
            }
            !free
        });
        self.free.extend(freed.iter().copied());
        // Lowest ids first: tables stay short.
        self.free.sort_unstable_by(|a, b| b.cmp(a));
        freed
    }
}

/// When workers answer SYNs with SYN cookies (`set lb parameter -synCookie`), in the data
/// path's own terms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SynCookies {
    /// Once half the embryonic budget is spent (a SYN flood).
    #[default]
    UnderPressure,
    Always,
    Off,
}

/// Service name → id and vserver name → id, kept by the control plane across generations.
/// An id is never given to another name while a flow, a counter window or a worker's (or the
/// monitor core's) tables may still refer to it; see [`ServiceIds::recycle`].
#[derive(Clone, Debug, Default)]
pub struct ServiceIds {
    services: IdPool,
    vservers: IdPool,
}

/// What the ids freed by one [`ServiceIds::recycle`] were.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recycled {
    pub services: Vec<ServiceId>,
    pub vservers: Vec<u32>,
}

impl ServiceIds {
    pub fn vserver(&mut self, name: &str) -> u32 {
        self.vservers.get(name)
    }

    pub fn id(&mut self, name: &str) -> ServiceId {
        self.services.get(name)
    }

    /// Services with an id now.
    pub fn len(&self) -> usize {
        self.services.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.services.ids.is_empty()
    }

    /// Frees retired service ids that `service_safe` allows and vserver ids that
    /// `vserver_safe` allows (each given the id and the generation that retired it).
    pub fn recycle(
        &mut self,
        service_safe: impl FnMut(ServiceId, u64) -> bool,
        vserver_safe: impl FnMut(u32, u64) -> bool,
    ) -> Recycled {
        Recycled {
            services: self.services.recycle(service_safe),
            vservers: self.vservers.recycle(vserver_safe),
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Tables {
    pub generation: u64,
    /// Indexed by [`ServiceId`]; `None` for ids of removed services.
    pub services: Vec<Option<RtService>>,
    pub vservers: Vec<RtVserver>,
    /// The addresses that are ours (NSIPs, SNIPs, VIPs), and where each is in `local`.
    local: Vec<LocalIp>,
    local_index: AddrIndex,
    /// Addresses of USIP services: their replies, to clients' own addresses, are ours.
    pub usip_sources: Vec<Ipv4Addr>,
    pub startup_rr_factor: u64,
    /// `set lb parameter -synCookie`.
    pub syn_cookies: SynCookies,
    /// `-sessionsThreshold` reached: no new persistence session (shared by every
    /// generation; see the control plane's `watch`).
    pub sessions_full: Arc<std::sync::atomic::AtomicBool>,
    /// The vserver of a new flow: by address, protocol and port ([`listen_key`]), and for
    /// vservers on every port by address and protocol (the port left 0).
    exact: KeyIndex,
    any_port: KeyIndex,
}

/// Where a vserver listens, as one key: address, protocol number and port.
fn listen_key(addr: Ipv4Addr, proto: Proto, port: u16) -> u64 {
    u64::from(u32::from(addr)) << 24 | u64::from(proto.number()) << 16 | u64::from(port)
}

fn contains(net: Ipv4Addr, mask: u32, ip: Ipv4Addr) -> bool {
    u32::from(net) & mask == u32::from(ip) & mask
}

fn protos(t: Transport) -> &'static [Proto] {
    match t {
        Transport::Tcp => &[Proto::Tcp],
        Transport::Udp => &[Proto::Udp],
        Transport::Any => &[Proto::Tcp, Proto::Udp],
    }
}

/// The selection core's method for a configured `-lbMethod`.
pub fn method_of(m: LbMethod) -> Method {
    use LbMethod as L;
    match m {
        L::RoundRobin => Method::RoundRobin,
        L::LeastConnection => Method::LeastConnection,
        L::Lrtm => Method::Lrtm,
        L::LeastResponseTime => Method::LeastResponseTime,
        L::LeastPackets => Method::LeastPackets,
        L::LeastBandwidth => Method::LeastBandwidth,
        L::CustomLoad => Method::CustomLoad,
        L::SourceIpHash => Method::Hash(HashKey::SourceIp),
        L::DestinationIpHash => Method::Hash(HashKey::DestinationIp),
        L::SrcIpDestIpHash => Method::Hash(HashKey::SrcIpDestIp),
        L::SrcIpSrcPortHash => Method::Hash(HashKey::SrcIpSrcPort),
    }
}

impl Tables {
    pub fn build(config: &Config, ids: &mut ServiceIds, generation: u64) -> Self {
        let local: Vec<LocalIp> = config
            .ns_ips
            .values()
            .map(|ip| LocalIp {
                addr: ip.addr,
                mask: ip.netmask.bits(),
                kind: ip.settings.kind.into(),
            })
            .chain(config.vservers.values().filter_map(|v| match v.vip {
                Some((IpAddr::V4(addr), _)) => Some(LocalIp {
                    addr,
                    mask: u32::MAX,
                    kind: LocalKind::Vip,
                }),
                _ => None,
            }))
            .collect();
        let snips: Vec<&LocalIp> = local.iter().filter(|l| l.kind == LocalKind::Snip).collect();
        let snip_for = |hop: Ipv4Addr| {
            snips
                .iter()
                .find(|s| contains(s.addr, s.mask, hop))
                .map(|s| s.addr)
        };
        let path_to = |addr: Ipv4Addr| -> Option<(Ipv4Addr, Ipv4Addr)> {
            if let Some(snip) = snip_for(addr) {
                return Some((snip, addr));
            }
            let route = config
                .routes
                .iter()
                .filter(|r| contains(r.network, r.netmask.bits(), addr))
                .max_by_key(|r| r.netmask.prefix_len())?;
            Some((snip_for(route.gateway)?, route.gateway))
        };

        let mut services: Vec<Option<RtService>> = Vec::new();
        for s in config.services.values() {
            let Some(IpAddr::V4(addr)) = config.service_addr(s) else {
                continue;
            };
            let id = ids.id(s.name.as_str()) as usize;
            if services.len() <= id {
                services.resize(id + 1, None);
            }
            let enabled = config.in_service(s);
            services[id] = Some(RtService {
                name: s.name.0.clone(),
                addr,
                port: match s.port {
                    Port::Any => None,
                    Port::Number(p) => Some(p),
                },
                enabled,
                path: path_to(addr),
                sources: path_to(addr)
                    .map(|(_, hop)| {
                        snips
                            .iter()
                            .filter(|s| contains(s.addr, s.mask, hop))
                            .map(|s| s.addr)
                            .collect()
                    })
                    .unwrap_or_default(),
                timeouts: Timeouts {
                    embryonic_s: 30,
                    idle_s: idle_s(s),
                    half_closed_s: 60,
                    closed_s: 2,
                },
                max_client: s.settings.max_client.get(),
                usip: config.uses_client_ip(s),
                proxy_port: s.settings.use_proxy_port.is_yes(),
                down_state_flush: s.settings.down_state_flush.is_enabled(),
                flush_from_ms: (!enabled).then_some(0),
            });
        }

        let use_port = config.lb_parameter.use_port_for_hash_lb.is_yes();
        let mut vservers = Vec::new();
        // Later vservers on the same address and port replace earlier ones.
        let mut exact = HashMap::new();
        let mut any_port = HashMap::new();
        for v in config.vservers.values() {
            // A vserver without an address serves only as a backup: in the tables, not in
            // the address maps.
            let (vip, port) = match v.vip {
                Some((IpAddr::V4(vip), port)) => (vip, port),
                Some((IpAddr::V6(_), _)) => continue,
                None => (Ipv4Addr::UNSPECIFIED, Port::Any),
            };
            let addressable = v.vip.is_some();
            // Bound services, and bound groups as their members with the members' weights.
            let members = config
                .bound_services(v)
                .into_iter()
                .filter_map(|(svc, weight)| {
                    let id = ids.id(svc.name.as_str());
                    let addr = services.get(id as usize)?.as_ref()?.addr;
                    let hash_port = match svc.port {
                        Port::Number(p) if use_port => Some(p),
                        _ => None,
                    };
                    Some(Member {
                        service: id,
                        weight,
                        seed: member_seed(
                            addr.into(),
                            hash_port,
                            svc.settings.hash_id.map(|h| h.get()),
                        ),
                    })
                })
                .collect();
            let mut pool = Pool::new(method_of(v.settings.lb_method), members);
            if let Some(mask) = v.settings.netmask {
                pool = pool.with_hash_mask(mask.bits());
            }
            let index = vservers.len() as u32;
            let port = match port {
                Port::Any => None,
                Port::Number(p) => Some(p),
            };
            for proto in protos(v.service_type.transport())
                .iter()
                .filter(|_| addressable)
            {
                match port {
                    Some(p) => {
                        exact.insert(listen_key(vip, *proto, p), index as usize);
                    }
                    None => {
                        any_port.insert(listen_key(vip, *proto, 0), index as usize);
                    }
                }
            }
            vservers.push(RtVserver {
                id: ids.vserver(v.name.as_str()),
                name: v.name.0.clone(),
                vip,
                port,
                enabled: v.settings.state.is_enabled(),
                pool,
                persist_timeout_s: (v.settings.persistence_type
                    == ctl::conf::Persistence::SourceIp)
                    .then(|| v.settings.timeout.get() * 60),
                persist: None,
                fallback: Fallback {
                    backup: None,
                    spill: spill_of(&v.settings),
                    action: match v.settings.so_backup_action {
                        Some(ctl::conf::SpilloverAction::Drop) => SpillAction::Drop,
                        _ => SpillAction::Accept,
                    },
                    disable_primary_on_down: v.settings.disable_primary_on_down.is_enabled(),
                    so_persistence_s: v
                        .settings
                        .so_persistence
                        .is_enabled()
                        .then(|| v.settings.so_persistence_timeout.get() * 60),
                },
                fallback_state: None,
            });
        }
        // Backups by index, once every vserver has one.
        let index_of: HashMap<&str, usize> = vservers
            .iter()
            .enumerate()
            .map(|(i, v)| (v.name.as_str(), i))
            .collect();
        let backups: Vec<Option<usize>> = vservers
            .iter()
            .map(|v| {
                let b = config
                    .vservers
                    .get(v.name.as_str())?
                    .settings
                    .backup_vserver
                    .as_ref()?;
                index_of.get(b.as_str()).copied()
            })
            .collect();
        for (v, b) in vservers.iter_mut().zip(backups) {
            v.fallback.backup = b;
        }
        ids.services
            .retire_unless(|name| config.services.contains_key(name), generation);
        ids.vservers
            .retire_unless(|name| config.vservers.contains_key(name), generation);
        let mut usip_sources: Vec<Ipv4Addr> = services
            .iter()
            .flatten()
            .filter(|s| s.usip)
            .map(|s| s.addr)
            .collect();
        usip_sources.sort_unstable();
        usip_sources.dedup();
        Self {
            generation,
            services,
            vservers,
            local_index: AddrIndex::new(local.iter().map(|l| l.addr)),
            local,
            usip_sources,
            startup_rr_factor: config.lb_parameter.startup_rr_factor.get(),
            syn_cookies: match config.lb_parameter.syn_cookie {
                ctl::conf::model::SynCookie::Enabled => SynCookies::UnderPressure,
                ctl::conf::model::SynCookie::Always => SynCookies::Always,
                ctl::conf::model::SynCookie::Disabled => SynCookies::Off,
            },
            sessions_full: Arc::default(),
            exact: KeyIndex::new(exact),
            any_port: KeyIndex::new(any_port),
        }
    }

    /// The vserver listening on `dst`, protocol and port.
    #[inline]
    pub fn vserver_for(&self, dst: Ipv4Addr, proto: Proto, port: u16) -> Option<u32> {
        let at = self
            .exact
            .get(listen_key(dst, proto, port))
            .or_else(|| self.any_port.get(listen_key(dst, proto, 0)))?;
        u32::try_from(at).ok()
    }

    /// Whether `ip` is a USIP service's address (the frame is its reply to a client).
    #[inline]
    pub fn is_usip_source(&self, ip: Ipv4Addr) -> bool {
        self.usip_sources.binary_search(&ip).is_ok()
    }

    #[inline]
    pub fn local(&self, ip: Ipv4Addr) -> Option<&LocalIp> {
        self.local.get(self.local_index.get(ip)?)
    }

    /// Every address that is ours, as configured.
    pub fn locals(&self) -> &[LocalIp] {
        &self.local
    }

    #[inline]
    /// Gives every vserver with persistence its session table from `store` (created with
    /// `capacity` sessions the first time), so sessions outlive configuration generations;
    /// tables of vservers without persistence leave the store.
    pub fn attach_persistence(
        &mut self,
        store: &mut HashMap<String, Arc<PersistTable>>,
        capacity: usize,
    ) {
        store.retain(|name, _| {
            self.vservers
                .iter()
                .any(|v| v.name == *name && v.persist_timeout_s.is_some())
        });
        for v in self
            .vservers
            .iter_mut()
            .filter(|v| v.persist_timeout_s.is_some())
        {
            let table = store
                .entry(v.name.clone())
                .or_insert_with(|| Arc::new(PersistTable::new(capacity)));
            v.persist = Some(Arc::clone(table));
        }
    }

    /// Gives each vserver whose fallback needs run-time state its state from `store` (by
    /// name, so it outlives generations), or a new one; drops the states no vserver needs.
    pub fn attach_fallback_state(
        &mut self,
        store: &mut HashMap<String, Arc<FallbackState>>,
        sessions: usize,
    ) {
        let needs = |v: &RtVserver| {
            v.fallback.disable_primary_on_down || v.fallback.so_persistence_s.is_some()
        };
        store.retain(|name, _| self.vservers.iter().any(|v| v.name == *name && needs(v)));
        for v in self.vservers.iter_mut().filter(|v| needs(v)) {
            let state = store
                .entry(v.name.clone())
                .or_insert_with(|| Arc::new(FallbackState::new(sessions)));
            v.fallback_state = Some(Arc::clone(state));
        }
    }

    /// The index of the vserver with stable id `id`.
    pub fn vserver_index(&self, id: u32) -> Option<usize> {
        self.vservers.iter().position(|v| v.id == id)
    }

    /// Applies the disables in progress: a draining service's flows are flushed from its
    /// drain's time on instead of at once.
    pub fn apply_drains(&mut self, drains: &HashMap<String, crate::drain::Drain>) {
        for svc in self.services.iter_mut().flatten() {
            if let (false, Some(d)) = (svc.enabled, drains.get(&svc.name)) {
                svc.flush_from_ms = d.flush_from();
            }
        }
    }

    pub fn service(&self, id: ServiceId) -> Option<&RtService> {
        self.services.get(id as usize)?.as_ref()
    }

    /// SNIPs (sources of ARP requests and of traffic to services).
    pub fn snips(&self) -> impl Iterator<Item = &LocalIp> {
        self.local.iter().filter(|l| l.kind == LocalKind::Snip)
    }

    /// The SNIP to ask from when looking for `ip` (the one whose subnet holds it).
    pub fn snip_toward(&self, ip: Ipv4Addr) -> Option<Ipv4Addr> {
        self.snips()
            .find(|s| contains(s.addr, s.mask, ip))
            .map(|s| s.addr)
    }
}

/// The spillover rule of a vserver's settings (a method without its threshold has none).
fn spill_of(s: &ctl::conf::VserverSettings) -> Option<Spill> {
    use ctl::conf::SpilloverMethod as M;
    let threshold = s.so_threshold.map(|t| t.get());
    match s.so_method {
        M::None => None,
        M::DynamicConnection => Some(Spill::DynamicConnection),
        M::Connection => threshold.map(Spill::Connection),
        M::Bandwidth => threshold.map(Spill::Bandwidth),
        M::Health => threshold.map(Spill::Health),
    }
}

impl crate::lb::spill::Vservers for Tables {
    fn enabled(&self, vs: usize) -> bool {
        self.vservers.get(vs).is_some_and(|v| v.enabled)
    }
    fn members(&self, vs: usize) -> &[crate::lb::Member] {
        self.vservers.get(vs).map_or(&[], |v| v.pool.members())
    }
    fn fallback(&self, vs: usize) -> Fallback {
        self.vservers
            .get(vs)
            .map(|v| v.fallback)
            .unwrap_or_default()
    }
    fn max_client(&self, service: ServiceId) -> u64 {
        self.service(service).map_or(0, |s| s.max_client)
    }
    fn is_out(&self, vs: usize) -> bool {
        self.vservers.get(vs).is_some_and(|v| {
            v.fallback.disable_primary_on_down
                && v.fallback_state.as_ref().is_some_and(|s| s.is_out())
        })
    }
}

/// A flow's idle timeout: the smaller of the service's client and server idle timeouts. A
/// proxy closes one side when either expires, which ends the connection; this engine has
/// one flow for both sides, so the first to expire ends it too. 0 means no timeout.
fn idle_s(s: &ctl::conf::Service) -> u32 {
    let (clt, svr) = s.service_type.default_timeouts();
    let pick = |t: Option<ctl::value::Bounded<0, 31_536_000>>, default: u64| match t {
        Some(t) if t.get() == 0 => u64::MAX,
        Some(t) => t.get(),
        None => default,
    };
    let secs = pick(s.settings.clt_timeout, clt).min(pick(s.settings.svr_timeout, svr));
    u32::try_from(secs).unwrap_or(u32::MAX)
}

/// The tables of a configuration given as ns.conf text, for the data path's unit tests (which
/// name nothing of ctl themselves).
#[cfg(test)]
pub(crate) fn of_text(text: &str) -> Tables {
    let (cfg, errors) = ctl::conf::replay_text(text);
    assert!(errors.is_empty(), "{errors:?}");
    Tables::build(&cfg, &mut ServiceIds::default(), 1)
}

#[cfg(test)]
mod tests {
    use super::idle_s;

    fn service(line: &str) -> ctl::conf::Service {
        let (c, errors) = ctl::conf::replay_text(line);
        assert!(errors.is_empty(), "{errors:?}");
        c.services["s"].clone()
    }

    #[test]
    fn the_idle_timeout_is_the_smaller_of_client_and_server() {
        assert_eq!(idle_s(&service("add service s 198.18.0.11 HTTP 80")), 180);
        assert_eq!(
            idle_s(&service("add service s 198.18.0.11 TCP 80 -svrTimeout 60")),
            60
        );
        assert_eq!(
            idle_s(&service(
                "add service s 198.18.0.11 TCP 80 -cltTimeout 30 -svrTimeout 60"
            )),
            30
        );
        assert_eq!(
            idle_s(&service(
                "add service s 198.18.0.11 UDP 53 -cltTimeout 0 -svrTimeout 0"
            )),
            u32::MAX,
            "never: 136 years"
        );
    }
}
