//! Drains in progress (`disable service` with a delay or `-graceFul`) across commands: the
//! drains once a batch of validated commands has run.

use std::collections::HashMap;

use ctl::command::{Command, Common, ServerCmd, ServiceCmd, ServiceGroupCmd};
use ctl::conf::Config;

use crate::drain::Drain;

/// The services standing for a group's members, or for one of them.
fn group_services(
    config: &Config,
    group: &ctl::value::Name,
    member: Option<&(ctl::value::Name, ctl::value::Port)>,
) -> Vec<String> {
    let Some(g) = config.service_groups.get(group.as_str()) else {
        return Vec::new();
    };
    // The member's server as the configuration names it (the command may give its IP).
    let member = member.map(|(server, port)| {
        let name = config.server_for(server).map_or(server.clone(), |(n, _)| n);
        (name, *port)
    });
    config
        .group_members(g)
        .into_iter()
        .filter(|(m, _)| {
            member
                .as_ref()
                .is_none_or(|(server, port)| m.server == *server && m.port == *port)
        })
        .map(|(_, s)| s.name.0.clone())
        .collect()
}

/// The services on a server, group members included.
fn server_services(config: &Config, server: &ctl::value::Name) -> Vec<String> {
    config
        .services
        .values()
        .filter(|s| s.server == *server)
        .map(|s| s.name.0.clone())
        .collect()
}

/// The drains once `cmds` (already validated) have run at `now_ms` on `config`.
pub(super) fn drains_after(
    drains: &HashMap<String, Drain>,
    cmds: &[Command],
    config: &Config,
    now_ms: u64,
) -> HashMap<String, Drain> {
    let mut next = drains.clone();
    for cmd in cmds {
        match cmd {
            Command::Service(ServiceCmd::Disable {
                name,
                delay,
                graceful,
            }) => {
                let drain = Drain::new(now_ms, delay.map(|d| d.get()), graceful.is_yes());
                next.insert(name.0.clone(), drain);
            }
            Command::Service(ServiceCmd::Enable { name })
            | Command::Service(ServiceCmd::Common(Common::Rm { name })) => {
                next.remove(name.as_str());
            }
            Command::ServiceGroup(ServiceGroupCmd::Disable {
                name,
                member,
                delay,
                graceful,
            }) => {
                let drain = Drain::new(now_ms, delay.map(|d| d.get()), graceful.is_yes());
                for service in group_services(config, name, member.as_ref()) {
                    next.insert(service, drain);
                }
            }
            Command::ServiceGroup(ServiceGroupCmd::Enable { name, member }) => {
                for service in group_services(config, name, member.as_ref()) {
                    next.remove(&service);
                }
            }
            Command::Server(ServerCmd::Disable {
                name,
                delay,
                graceful,
            }) => {
                let drain = Drain::new(now_ms, delay.map(|d| d.get()), graceful.is_yes());
                for service in server_services(config, name) {
                    // A service already going out on its own keeps its own drain.
                    next.entry(service).or_insert(drain);
                }
            }
            Command::Server(ServerCmd::Enable { name }) => {
                // Services disabled on their own keep going out.
                for service in server_services(config, name) {
                    if config
                        .services
                        .get(&service)
                        .is_some_and(|s| config.in_service(s))
                    {
                        next.remove(&service);
                    }
                }
            }
            Command::Service(ServiceCmd::Common(Common::Rename { name, new_name })) => {
                if let Some(d) = next.remove(name.as_str()) {
                    next.insert(new_name.0.clone(), d);
                }
            }
            _ => {}
        }
    }
    next
}
