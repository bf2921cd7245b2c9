//! Service groups through the command language: members, weights, monitors, states, the
//! vserver's view of them, errors, and the ns.conf round trip.

use ctl::Config;
use ctl::conf::{render, replay_text};
use ctl::grammar::{Object, parse_line};
use ctl::render::{Runtime, ServiceStats, VserverStats, show};

fn run(config: &mut Config, line: &str) -> Result<(), String> {
    parse_line(line)
        .and_then(|cmds| config.apply_all(&cmds))
        .map_err(|e| e.to_string())
}

fn config_of(lines: &str) -> Config {
    let mut c = Config::default();
    for l in lines.lines() {
        run(&mut c, l).unwrap_or_else(|e| panic!("{l}: {e}"));
    }
    c
}

const BASE: &str = "add ns ip 198.18.0.2 255.255.255.0 -type SNIP
add server web01 198.18.0.11
add lb monitor mon-web HTTP -respCode 200
add serviceGroup sg-web HTTP -maxClient 0
add lb vserver vs-web HTTP 198.18.0.100 80 -lbMethod ROUNDROBIN
bind lb vserver vs-web sg-web
bind serviceGroup sg-web web01 80 -weight 4
bind serviceGroup sg-web 198.18.0.[12-13] 80
bind serviceGroup sg-web -monitorName mon-web";

/// The members a vserver balances over: (service, weight).
fn pool(c: &Config, vs: &str) -> Vec<(String, u32)> {
    c.bound_services(&c.vservers[vs])
        .into_iter()
        .map(|(s, w)| (s.name.0.clone(), w))
        .collect()
}

#[test]
fn a_bound_group_balances_over_its_members_with_their_weights() {
    let c = config_of(BASE);
    assert_eq!(
        pool(&c, "vs-web"),
        [
            ("sg-web?web01?80".to_owned(), 4),
            ("sg-web?198.18.0.12?80".to_owned(), 1),
            ("sg-web?198.18.0.13?80".to_owned(), 1),
        ]
    );
    // Members are services of the group's type with the group's monitors, and a bare IP made
    // a server as for `add service`.
    let m = &c.services["sg-web?198.18.0.12?80"];
    assert_eq!(m.monitors[0].monitor.as_str(), "mon-web");
    assert_eq!(m.group.as_ref().unwrap().as_str(), "sg-web");
    assert!(c.servers.contains_key("198.18.0.12"));
    // Group settings reach every member.
    let mut c = c;
    run(&mut c, "set serviceGroup sg-web -downStateFlush DISABLED").unwrap();
    assert!(
        c.services
            .values()
            .filter(|s| s.group.is_some())
            .all(|s| !s.settings.down_state_flush.is_enabled())
    );
}

#[test]
fn members_and_groups_are_enabled_disabled_unbound_renamed_and_removed() {
    let mut c = config_of(BASE);
    run(
        &mut c,
        "disable serviceGroup sg-web 198.18.0.13 80 -delay 30 -graceFul YES",
    )
    .unwrap();
    assert!(
        !c.services["sg-web?198.18.0.13?80"]
            .settings
            .state
            .is_enabled()
    );
    assert!(c.services["sg-web?web01?80"].settings.state.is_enabled());
    run(&mut c, "disable serviceGroup sg-web").unwrap();
    assert!(
        c.services
            .values()
            .filter(|s| s.group.is_some())
            .all(|s| !s.settings.state.is_enabled())
    );
    run(&mut c, "enable serviceGroup sg-web").unwrap();
    assert!(c.services["sg-web?web01?80"].settings.state.is_enabled());
    assert!(
        !c.services["sg-web?198.18.0.13?80"]
            .settings
            .state
            .is_enabled(),
        "the member stays disabled"
    );
    run(&mut c, "disable lb monitor sg-web mon-web").unwrap();
    assert!(
        !c.services["sg-web?web01?80"].monitors[0]
            .settings
            .mon_state
            .is_enabled()
    );

    run(&mut c, "unbind serviceGroup sg-web 198.18.0.12 80").unwrap();
    assert_eq!(pool(&c, "vs-web").len(), 2);
    assert!(!c.services.contains_key("sg-web?198.18.0.12?80"));

    run(&mut c, "rename serviceGroup sg-web sg-new").unwrap();
    assert_eq!(c.vservers["vs-web"].bindings[0].service.as_str(), "sg-new");
    assert_eq!(pool(&c, "vs-web")[0].0, "sg-new?web01?80");
    run(&mut c, "rename server web01 web-one").unwrap();
    assert_eq!(pool(&c, "vs-web")[0].0, "sg-new?web-one?80");

    run(&mut c, "rm serviceGroup sg-new").unwrap();
    assert!(c.vservers["vs-web"].bindings.is_empty());
    assert!(c.services.values().all(|s| s.group.is_none()));
}

#[test]
fn bad_group_commands_get_netscaler_errors_and_change_nothing() {
    let mut c = config_of(&format!(
        "{BASE}\nadd serviceGroup sg-dns UDP\nbind serviceGroup sg-dns 198.18.0.11 53"
    ));
    let before = c.clone();
    for (line, error) in [
        (
            "bind serviceGroup sg-web web01 80",
            "ERROR: Resource already exists [serverName, web01 80]",
        ),
        (
            "unbind serviceGroup sg-web 198.18.0.99 80",
            "ERROR: Resource is not bound [serverName, 198.18.0.99 80]",
        ),
        (
            "unbind serviceGroup sg-web web01 8080",
            "ERROR: Resource is not bound [serverName, web01 8080]",
        ),
        (
            "bind serviceGroup nosuch web01 80",
            "ERROR: No such resource [serviceGroupName, nosuch]",
        ),
        (
            "bind serviceGroup sg-web web01",
            "ERROR: Required argument missing [port]",
        ),
        (
            "bind lb vserver vs-web sg-dns",
            "ERROR: Service type UDP cannot be bound to a HTTP vserver [serviceName, sg-dns]",
        ),
        (
            "add service sg-web 198.18.0.14 HTTP 80",
            "ERROR: Resource already exists [name, sg-web]",
        ),
        (
            "rm lb monitor mon-web",
            "ERROR: Monitor is bound to service group sg-web [monitorName, mon-web]",
        ),
        (
            "add serviceGroup sg-web TCP",
            "ERROR: Resource already exists [serviceGroupName, sg-web]",
        ),
        (
            "bind serviceGroup sg-web -monitorName nosuch",
            "ERROR: No such resource [monitorName, nosuch]",
        ),
    ] {
        let got = run(&mut c, line).unwrap_err();
        assert!(got.starts_with(error), "{line}: {got}");
        assert_eq!(c, before, "{line} changed the configuration");
    }
    // A weight belongs on the members, not on the vserver binding.
    run(&mut c, "unbind lb vserver vs-web sg-web").unwrap();
    let got = run(&mut c, "bind lb vserver vs-web sg-web -weight 3").unwrap_err();
    assert!(got.contains("[weight, sg-web]"), "{got}");
}

#[test]
fn groups_are_saved_as_groups_and_replay_to_the_same_configuration() {
    let mut c = config_of(BASE);
    run(&mut c, "disable serviceGroup sg-web 198.18.0.13 80").unwrap();
    let text = render(&c, "test");
    for want in [
        "add serviceGroup sg-web HTTP",
        "bind lb vserver vs-web sg-web",
        "bind serviceGroup sg-web web01 80 -weight 4",
        "bind serviceGroup sg-web 198.18.0.12 80",
        "disable serviceGroup sg-web 198.18.0.13 80",
        "bind serviceGroup sg-web -monitorName mon-web",
    ] {
        assert!(
            text.lines().any(|l| l == want),
            "missing {want:?} in\n{text}"
        );
    }
    assert!(
        !text.contains('?'),
        "members are not saved as services:\n{text}"
    );
    let (back, errors) = replay_text(&text);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(back, c);
}

struct AllUp;

impl Runtime for AllUp {
    fn service(&self, _: &str) -> ServiceStats {
        ServiceStats {
            up: true,
            hits: 5,
            ..ServiceStats::default()
        }
    }
    fn vserver(&self, _: &str) -> VserverStats {
        VserverStats::default()
    }
    fn drops(&self) -> Vec<(String, u64)> {
        Vec::new()
    }
}

#[test]
fn show_lists_members_under_their_group() {
    let c = config_of(BASE);
    let vs = show(&c, Object::LbVserver, Some("vs-web"), false, &AllUp).unwrap();
    for want in [
        "\tNo. of Bound Services :  3 (Total) \t 3 (Active)",
        "1) sg-web (198.18.0.11: 80) - HTTP State: UP\tWeight: 4",
        "3) sg-web (198.18.0.13: 80) - HTTP State: UP\tWeight: 1",
    ] {
        assert!(vs.lines().any(|l| l == want), "missing {want:?} in\n{vs}");
    }
    let sg = show(&c, Object::ServiceGroup, Some("sg-web"), false, &AllUp).unwrap();
    assert!(
        sg.contains("State: ENABLED\tEffective State: UP")
            && sg.contains("1)\t198.18.0.11:80\tState: UP\tServer Name: web01")
            && sg.contains("Monitor Name: mon-web"),
        "{sg}"
    );
    // Members are not services of their own in `show service`.
    let services = show(&c, Object::Service, None, false, &AllUp).unwrap();
    assert!(!services.contains("sg-web"), "{services}");
    assert!(show(&c, Object::Service, Some("sg-web?web01?80"), false, &AllUp).is_err());
}
