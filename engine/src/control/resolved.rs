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
                addrs: addrs.clone(),
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
    next
}

/// One line for the log about a server whose resolution changed.
fn log_line(name: &str, r: &Resolution) -> String {
    let addrs: Vec<String> = r.addrs.iter().map(ToString::to_string).collect();
    match &r.error {
        None => format!(
            "fulcrumd: server {name} ({}) resolved to {} (TTL {} s)",
            r.domain,
            addrs.join(", "),
            r.ttl_s
        ),
        Some(e) if addrs.is_empty() => {
            format!("fulcrumd: server {name} ({}) not resolved: {e}", r.domain)
        }
        Some(e) => format!(
            "fulcrumd: server {name} ({}) keeps {}: {e}",
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
                eprintln!("{}", log_line(name, r));
            }
        }
        let drains = state.drains.clone();
        if let Err(e) = self.publish(&mut state, next, drains) {
            eprintln!("fulcrumd: the resolved addresses cannot be applied: {e}");
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
}
