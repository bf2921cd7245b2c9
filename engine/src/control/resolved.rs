//! Domain-based servers: what the monitor core's resolver found becomes part of the running
//! configuration's run-time state ([`Config::resolutions`]) and, when an address changed, a
//! new generation — the same atomic swap as a command, so established flows stay.

use ctl::conf::{Config, Resolution};
use monitors::resolve::Resolved;

use super::Control;

/// `config` with `results` merged in; a failure keeps the last good addresses (the flows
/// and new connections go on to them) and records why the query failed.
pub(super) fn merged(config: &Config, results: &[Resolved]) -> Config {
    let mut next = config.clone();
    for r in results {
        let Some(server) = config.servers.get(r.server.as_str()) else {
            continue;
        };
        let Some(domain) = server.domain().filter(|d| d.as_str() == r.domain) else {
            continue;
        };
        let earlier = config.resolution(server);
        let resolution = match &r.answer {
            Ok((addrs, ttl_s)) => Resolution {
                domain: domain.clone(),
                addrs: stable_order(earlier.map(|e| e.addrs.as_slice()), addrs),
                ttl_s: *ttl_s,
                error: None,
            },
            Err(why) => Resolution {
                domain: domain.clone(),
                addrs: earlier.map(|e| e.addrs.clone()).unwrap_or_default(),
                ttl_s: earlier.map_or(0, |e| e.ttl_s),
                error: Some(why.clone()),
            },
        };
        next.resolutions.insert(r.server.clone(), resolution);
    }
    next.sync_scaled_groups();
    next
}

/// The addresses of an answer, in the earlier order when they are the same set: name
/// servers rotate their answers (round-robin DNS), and a service using the first address
/// should not move to another backend at every refresh.
fn stable_order(
    earlier: Option<&[std::net::Ipv4Addr]>,
    now: &[std::net::Ipv4Addr],
) -> Vec<std::net::Ipv4Addr> {
    match earlier {
        Some(e) if e.len() == now.len() && now.iter().all(|a| e.contains(a)) => e.to_vec(),
        _ => now.to_vec(),
    }
}

/// One line for the log about a server whose resolution changed.
fn log_line(name: &str, r: &Resolution) -> String {
    let addrs: Vec<String> = r.addrs.iter().map(ToString::to_string).collect();
    match &r.error {
        None => format!(
            "server {name} ({}) resolved to {} (TTL {} s)",
            r.domain,
            addrs.join(", "),
            r.ttl_s
        ),
        Some(e) if addrs.is_empty() => {
            format!("server {name} ({}) not resolved: {e}", r.domain)
        }
        Some(e) => format!(
            "server {name} ({}) keeps {}: {e}",
            r.domain,
            addrs.join(", ")
        ),
    }
}

impl Control {
    /// Takes the resolver's results; publishes a generation when they change anything.
    pub fn apply_resolutions(&self) {
        let results = self.resolutions.take();
        if results.is_empty() {
            return;
        }
        let mut state = self.lock();
        let next = merged(&state.config, &results);
        if next == state.config {
            return;
        }
        for (name, r) in &next.resolutions {
            if state.config.resolutions.get(name) != Some(r) {
                log::info!(target: "resolver", "{}", log_line(name, r));
            }
        }
        let drains = state.drains.clone();
        if let Err(e) = self.publish(&mut state, next, drains) {
            log::error!(target: "resolver", "the resolved addresses cannot be applied: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctl::grammar::parse_line;

    fn config() -> Config {
        let mut c = Config::default();
        for l in [
            "add ns ip 198.18.0.2 255.255.255.0",
            "add server web www.svc.test",
            "add service dsvc web TCP 80",
        ] {
            c.apply_all(&parse_line(l).unwrap()).unwrap();
        }
        c
    }

    fn resolved(domain: &str, answer: Result<(Vec<std::net::Ipv4Addr>, u32), String>) -> Resolved {
        Resolved {
            server: "web".into(),
            domain: domain.into(),
            answer,
        }
    }

    #[test]
    fn a_failure_keeps_the_last_good_addresses() {
        let c = config();
        let ip: std::net::Ipv4Addr = "198.18.0.11".parse().unwrap();
        let c = merged(&c, &[resolved("www.svc.test", Ok((vec![ip], 5)))]);
        assert_eq!(c.service_addr(&c.services["dsvc"]), Some(ip.into()));
        let c = merged(&c, &[resolved("www.svc.test", Err("timeout".into()))]);
        assert_eq!(c.service_addr(&c.services["dsvc"]), Some(ip.into()));
        assert_eq!(c.resolutions["web"].error.as_deref(), Some("timeout"));
        // An answer for a name the server no longer has changes nothing.
        let other = merged(&c, &[resolved("old.svc.test", Ok((vec![], 5)))]);
        assert_eq!(other, c);
    }

    #[test]
    fn an_autoscaled_group_has_a_member_per_address() {
        let mut c = config();
        for l in [
            "add serviceGroup sg TCP -autoScale DNS",
            "bind serviceGroup sg web 443 -weight 3",
            "add serviceGroup plain TCP",
            "bind serviceGroup plain web 443",
        ] {
            c.apply_all(&parse_line(l).unwrap()).unwrap();
        }
        let addrs = |c: &Config, g: &str| -> Vec<String> {
            c.group_members(&c.service_groups[g])
                .iter()
                .map(|(m, s)| format!("{}/{}", c.service_addr(s).unwrap(), m.weight.get()))
                .collect()
        };
        assert!(
            addrs(&c, "sg").is_empty(),
            "no member before the first answer"
        );
        let ips: Vec<std::net::Ipv4Addr> = ["198.18.0.11", "198.18.0.12"]
            .iter()
            .map(|a| a.parse().unwrap())
            .collect();
        let c = merged(&c, &[resolved("www.svc.test", Ok((ips.clone(), 5)))]);
        assert_eq!(addrs(&c, "sg"), ["198.18.0.11/3", "198.18.0.12/3"]);
        assert_eq!(
            addrs(&c, "plain"),
            ["198.18.0.11/1"],
            "without autoscale: the first"
        );
        let rotated: Vec<_> = ips.iter().rev().copied().collect();
        let same = merged(&c, &[resolved("www.svc.test", Ok((rotated, 5)))]);
        assert_eq!(same, c, "a rotated answer changes nothing");
        let c = merged(&c, &[resolved("www.svc.test", Ok((ips[1..].to_vec(), 5)))]);
        assert_eq!(
            addrs(&c, "sg"),
            ["198.18.0.12/3"],
            "an address gone, its member too"
        );
        let saved = ctl::conf::render(&c, "now");
        assert!(
            saved.contains("add serviceGroup sg TCP -autoScale DNS\n"),
            "{saved}"
        );
        assert!(
            saved.contains("bind serviceGroup sg web 443 -weight 3\n"),
            "{saved}"
        );
        assert!(!saved.contains("198.18.0.12"), "{saved}");
    }
}
