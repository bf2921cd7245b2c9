//! The configuration model through the command language: validation, atomicity and the
//! ns.conf round trip.

use ctl::Config;
use ctl::conf::{render, replay_text, save_atomic};
use ctl::grammar::parse_line;
use ctl::lex::quote;

/// Runs one line against `config`; returns the printed error, if any.
fn run(config: &mut Config, line: &str) -> Result<(), String> {
    parse_line(line)
        .and_then(|cmds| config.apply_all(&cmds))
        .map_err(|e| e.to_string())
}

fn config_of(lines: &[&str]) -> Config {
    let mut c = Config::default();
    for l in lines {
        run(&mut c, l).unwrap_or_else(|e| panic!("{l}: {e}"));
    }
    c
}

const BASE: &[&str] = &[
    "add ns ip 198.18.0.2 255.255.255.0 -type SNIP",
    "add server web1 198.18.0.11",
    "add service svc1 web1 HTTP 80",
    "add service svc2 198.18.0.12 HTTP 80",
    "add lb vserver vs1 HTTP 198.19.0.10 80 -lbMethod ROUNDROBIN",
    "bind lb vserver vs1 svc1 -weight 3",
    "add lb monitor mon-ecv TCP-ECV -send PING -recv PONG",
];

/// Each bad line gets exactly this error and leaves the configuration unchanged.
#[test]
fn bad_commands_are_rejected_in_netscaler_form_and_change_nothing() {
    let cases: &[(&str, &str)] = &[
        (
            "frobnicate lb vserver x",
            "ERROR: No such command [frobnicate]",
        ),
        ("add lb vserver", "ERROR: Required argument missing [name]"),
        (
            "add lb vserver v6 HTTP 2001:db8::1 80",
            "ERROR: IPv6 addresses are not supported yet [IPAddress, 2001:db8::1]",
        ),
        (
            "add service s6 2001:db8::2 HTTP 80",
            "ERROR: IPv6 addresses are not supported yet [IPAddress, 2001:db8::2]",
        ),
        (
            "add lb monitor m6 TCP -destIP 2001:db8::3",
            "ERROR: IPv6 addresses are not supported yet [destIP, 2001:db8::3]",
        ),
        ("add lb", "ERROR: Incomplete command [add lb]"),
        (
            "add service svc1 web1 HTTP 80",
            "ERROR: Resource already exists [name, svc1]",
        ),
        (
            "add server web1 198.18.0.99",
            "ERROR: Resource already exists [name, web1]",
        ),
        (
            "bind lb vserver nope svc1",
            "ERROR: No such resource [name, nope]",
        ),
        (
            "bind lb vserver vs1 nope",
            "ERROR: No such resource [serviceName, nope]",
        ),
        (
            "bind lb vserver vs1 svc1",
            "ERROR: Resource already bound [serviceName, svc1]",
        ),
        (
            "bind lb vserver vs1 svc2 -weight 101",
            "ERROR: Argument value out of range [weight, 101]",
        ),
        (
            "bind lb vserver vs1 svc2 -weight 0",
            "ERROR: Argument value out of range [weight, 0]",
        ),
        (
            "bind lb vserver vs1 svc2 -weight heavy",
            "ERROR: Invalid argument value [weight, heavy]",
        ),
        (
            "bind lb vserver vs1 svc2 -color red",
            "ERROR: No such argument [-color]",
        ),
        (
            "add service svc3 nosuchserver HTTP 80",
            "ERROR: No such resource [serverName, nosuchserver]",
        ),
        (
            "add service svc3 web1 HTTP",
            "ERROR: Required argument missing [port]",
        ),
        (
            "add service svc3 web1 SSL 443",
            "ERROR: SSL is an L7 service type (it needs a proxy); Fulcrum balances at L4 [serviceType, SSL]",
        ),
        (
            "add lb vserver vs1 HTTP 198.19.0.10 81",
            "ERROR: Resource already exists [name, vs1]",
        ),
        (
            "add lb vserver vs2 TCP 198.19.0.10 80",
            "ERROR: IP address and port combination already in use by vserver vs1 [IPAddress, 198.19.0.10:80]",
        ),
        (
            "set lb vserver vs1 -lbMethod URLHASH",
            "ERROR: URLHASH is an L7 load-balancing method; Fulcrum balances at L4 [lbMethod, URLHASH]",
        ),
        (
            "set lb vserver vs1 -lbMethod LEAST",
            "ERROR: Invalid argument value [lbMethod, LEAST]",
        ),
        (
            "add lb monitor m1 HTTP -interval 2 -resptimeout 2",
            "ERROR: Response timeout must be less than the interval [resptimeout, 2]",
        ),
        (
            "add lb monitor m1 HTTP -interval 1500 MSEC",
            "ERROR: Response timeout must be less than the interval [resptimeout, 2]",
        ),
        (
            "add lb monitor m1 HTTP -retries 128",
            "ERROR: Argument value out of range [retries, 128]",
        ),
        (
            "add lb monitor m1 TCP-ECV -send hello",
            "ERROR: TCP-ECV monitor needs both -send and -recv [recv]",
        ),
        (
            "add lb monitor m1 TCP-ECV",
            "ERROR: TCP-ECV monitor needs both -send and -recv [send]",
        ),
        (
            "add lb monitor m1 UDP-ECV -send hello",
            "ERROR: UDP-ECV monitor needs -recv [recv]",
        ),
        (
            "add lb monitor m1 LOAD",
            "ERROR: LOAD monitor needs -metricTable [metricTable]",
        ),
        (
            "add lb monitor m1 LOAD -metricTable none",
            "ERROR: No such resource [metricTable, none]",
        ),
        (
            "add lb monitor m1 PING -send x",
            "ERROR: Argument not applicable to this type [-send, PING]",
        ),
        (
            "add lb monitor mon-ecv PING",
            "ERROR: Resource already exists [monitorName, mon-ecv]",
        ),
        (
            "set lb monitor mon-ecv HTTP -interval 10",
            "ERROR: Monitor mon-ecv is of type TCP-ECV [type, HTTP]",
        ),
        (
            "unset lb monitor mon-ecv TCP-ECV -recv",
            "ERROR: TCP-ECV monitor needs both -send and -recv [recv]",
        ),
        (
            "bind service svc1 -monitorName nope",
            "ERROR: No such resource [monitorName, nope]",
        ),
        (
            "bind service svc1",
            "ERROR: Required argument missing [monitorName]",
        ),
        (
            "unbind service svc1 -monitorName tcp-default",
            "ERROR: Default monitor cannot be unbound from a service",
        ),
        (
            "unbind service svc1 -monitorName mon-ecv",
            "ERROR: Resource is not bound [monitorName, mon-ecv]",
        ),
        (
            "rm lb monitor tcp-default",
            "ERROR: Built-in monitor cannot be modified or removed [monitorName, tcp-default]",
        ),
        (
            "rm server web1",
            "ERROR: Server is used by service svc1 [name, web1]",
        ),
        (
            "rename service svc1 svc2",
            "ERROR: Resource already exists [newName, svc2]",
        ),
        (
            "add route 198.20.0.1 255.255.0.0 198.18.0.1",
            "ERROR: Network address has host bits set [network, 198.20.0.1]",
        ),
        (
            "add route 198.20.0.0 255.255.0.0 198.19.9.1",
            "ERROR: Gateway is not in the subnet of any SNIP [gateway, 198.19.9.1]",
        ),
        (
            "add ns ip 198.18.0.2 255.255.255.0",
            "ERROR: Resource already exists [IPAddress, 198.18.0.2]",
        ),
        (
            "add ns ip 198.18.0.3 255.0.255.0",
            "ERROR: Invalid argument value [netmask, 255.0.255.0]",
        ),
        ("add lb vserver vs9 UDP 198.19.0.11 53", ""),
        (
            "add lb vserver vs8 HTTP 198.19.0.12 *",
            "ERROR: Port * needs service type ANY, TCP or UDP [port, *]",
        ),
        (
            "add lb monitor m1 HTTP -send \"unterminated",
            "ERROR: Unterminated quoted string",
        ),
        (
            "add server s[1-3] 198.18.0.[1-2]",
            "ERROR: Ranges in one command must have the same length [198.18.0.[1-2]]",
        ),
        (
            "add lb vserver vs1 HTTP -lbMethod ROUNDROBIN -lbMethod LRTM",
            "ERROR: Argument specified more than once [-lbMethod]",
        ),
        (
            "bind lb vserver vs1 svc2 -w",
            "ERROR: Required argument missing [weight]",
        ),
        (
            "set lb vserver vs1 -resp 3",
            "ERROR: No such argument [-resp]",
        ),
        (
            "add lb monitor m1 HTTP -res 3",
            "ERROR: No such argument [-res]",
        ),
        ("save ns config", "ERROR: Not a configuration command"),
    ];
    let base = config_of(BASE);
    for (line, expected) in cases {
        let mut c = base.clone();
        let got = run(&mut c, line);
        if expected.is_empty() {
            got.unwrap_or_else(|e| panic!("{line}: {e}"));
            continue;
        }
        assert_eq!(
            got.as_ref().err().map(String::as_str),
            Some(*expected),
            "{line}"
        );
        assert_eq!(c, base, "{line} changed the configuration");
    }
}

#[test]
fn udp_service_cannot_join_a_tcp_vserver() {
    let mut c = config_of(BASE);
    run(&mut c, "add service dns1 198.18.0.13 DNS 53").unwrap();
    let before = c.clone();
    let e = run(&mut c, "bind lb vserver vs1 dns1").unwrap_err();
    assert_eq!(
        e,
        "ERROR: Service type DNS cannot be bound to a HTTP vserver [serviceName, dns1]"
    );
    assert_eq!(c, before);
}

#[test]
fn keywords_are_case_insensitive_and_abbreviable() {
    let c = config_of(
        &[
            "ADD SERVER web1 198.18.0.11",
            "add SERVICE svc1 web1 http 80 -maxcl 100",
            "add lb vs vs1 tcp 198.19.0.10 80 -lbmeth leastp",
            "bind lb vs vs1 svc1 -weig 7",
            "add mon m1 TCP -LRTM enabled -inter 500 msec -resptimeout 100 ms",
            "sh lb vs",
        ][..5],
    );
    let vs = &c.vservers["vs1"];
    assert_eq!(vs.settings.lb_method, ctl::conf::LbMethod::LeastPackets);
    assert_eq!(vs.bindings[0].settings.weight.get(), 7);
    assert_eq!(c.services["svc1"].settings.max_client.get(), 100);
    assert_eq!(c.monitors["m1"].settings.interval.millis(), 500);
    assert!(parse_line("sh lb vs").is_ok());
    assert!(
        parse_line("add servi x 198.18.0.11 HTTP 80").is_err(),
        "servi is ambiguous between service and serviceGroup"
    );
    assert!(parse_line("sh serviceg").is_ok());
    assert!(
        parse_line("s lb vs").is_err(),
        "s is ambiguous between set, save, show, stat"
    );
}

#[test]
fn ranges_apply_all_or_nothing() {
    let mut c = config_of(&["add server s2 198.18.0.2"]);
    let before = c.clone();
    // The second of three servers already exists: none of the three is added.
    assert!(run(&mut c, "add server s[1-3] 198.18.1.[1-3]").is_err());
    assert_eq!(c, before);
    run(&mut c, "add server t[01-03] 198.18.1.[1-3]").unwrap();
    assert_eq!(c.servers["t02"].addr.to_string(), "198.18.1.2");
}

#[test]
fn rename_and_remove_keep_references_valid() {
    let mut c = config_of(BASE);
    run(&mut c, "bind service svc1 -monitorName mon-ecv").unwrap();
    run(&mut c, "rename service svc1 front").unwrap();
    assert_eq!(c.vservers["vs1"].bindings[0].service.as_str(), "front");
    run(&mut c, "rename lb monitor mon-ecv ecv2").unwrap();
    assert_eq!(c.services["front"].monitors[0].monitor.as_str(), "ecv2");
    assert!(
        run(&mut c, "rm lb monitor ecv2")
            .unwrap_err()
            .contains("bound to service front")
    );
    run(&mut c, "rm service front").unwrap();
    assert!(c.vservers["vs1"].bindings.is_empty());
    run(&mut c, "rm lb monitor ecv2 TCP-ECV").unwrap();
    run(&mut c, "rename server web1 w1").unwrap();
    assert!(c.servers.contains_key("w1"));
}

#[test]
fn load_monitor_metrics_need_their_table() {
    let mut c = config_of(&[
        "add lb metricTable mem",
        "bind lb metricTable mem used 1.3.6.1.4.1.5951.4.1.1.41.1.5",
        "add lb monitor load1 LOAD -metricTable mem -snmpCommunity public",
        "bind lb monitor load1 -metric used -metricThreshold 100 -metricWeight 2",
    ]);
    assert_eq!(
        run(
            &mut c,
            "bind lb monitor load1 -metric free -metricThreshold 5"
        )
        .unwrap_err(),
        "ERROR: No such resource [metric, free]"
    );
    assert_eq!(
        run(&mut c, "bind lb monitor load1 -metric used").unwrap_err(),
        "ERROR: Required argument missing [metricThreshold]"
    );
    assert!(
        run(&mut c, "unbind lb metricTable mem used")
            .unwrap_err()
            .contains("bound to monitor load1")
    );
    assert!(
        run(&mut c, "rm lb metricTable mem")
            .unwrap_err()
            .contains("used by monitor load1")
    );
    let m = &c.monitors["load1"];
    assert_eq!((m.metrics[0].threshold, m.metrics[0].weight), (100, 2));
}

#[test]
fn saved_file_replays_to_the_same_configuration() {
    let mut c = config_of(BASE);
    for l in [
        "set lb parameter -startupRRFactor 5",
        "add route 198.20.0.0 255.255.0.0 198.18.0.1",
        "add lb monitor h1 HTTP -httpRequest \"GET /health \\\"x\\\"\" -respCode 200 301-302 -LRTM ENABLED",
        "bind service svc1 -monitorName h1 -weight 2 -monState DISABLED",
        "set lb monitor https HTTP -interval 10",
        "unset lb monitor https HTTP -secure",
        "disable service svc2",
    ] {
        run(&mut c, l).unwrap_or_else(|e| panic!("{l}: {e}"));
    }
    let text = render(&c, "test");
    let (back, errors) = replay_text(&text);
    assert!(errors.is_empty(), "{errors:?}\n{text}");
    assert_eq!(back, c, "{text}");
    assert_eq!(render(&back, "test"), text);
    assert!(
        text.contains("bind service svc1 -monitorName h1 -monState DISABLED -weight 2"),
        "{text}"
    );
}

#[test]
fn replay_reports_each_bad_line_with_its_number() {
    let text =
        "add server a 198.18.0.1\n\n# comment\nadd server a 198.18.0.2\nbind lb vserver x y\n";
    let (c, errors) = replay_text(text);
    assert_eq!(c.servers.len(), 1);
    let lines: Vec<usize> = errors.iter().map(|e| e.line).collect();
    assert_eq!(lines, [4, 5]);
}

#[test]
fn save_is_atomic_and_rotates_backups() {
    let dir = std::env::temp_dir().join(format!("fl-ctl-save-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ns.conf");
    for i in 0..7 {
        save_atomic(&path, &format!("# version {i}\n")).unwrap();
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "# version 6\n");
    assert_eq!(
        std::fs::read_to_string(dir.join("ns.conf.0")).unwrap(),
        "# version 5\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("ns.conf.4")).unwrap(),
        "# version 1\n"
    );
    assert!(!dir.join("ns.conf.5").exists() && !dir.join("ns.conf.tmp").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

mod round_trip {
    use super::*;
    use proptest::prelude::*;

    fn text() -> impl Strategy<Value = String> {
        "[ -~]{1,12}".prop_map(|s| {
            let mut q = String::new();
            quote(&s, &mut q);
            q
        })
    }

    /// A random command line, valid or not, over small pools of names so that commands
    /// refer to each other.
    fn line() -> impl Strategy<Value = String> {
        let ty = prop_oneof![
            Just("HTTP"),
            Just("TCP"),
            Just("UDP"),
            Just("DNS"),
            Just("ANY"),
            Just("SSL_BRIDGE")
        ];
        let method = prop_oneof![
            Just("ROUNDROBIN"),
            Just("LEASTCONNECTION"),
            Just("LRTM"),
            Just("LEASTPACKETS"),
            Just("LEASTBANDWIDTH"),
            Just("CUSTOMLOAD"),
            Just("SOURCEIPHASH"),
            Just("SRCIPSRCPORTHASH")
        ];
        let port = prop_oneof![
            Just("80".to_owned()),
            Just("*".to_owned()),
            (1u16..).prop_map(|p| p.to_string())
        ];
        prop_oneof![
            (0..4u8, 0..8u8).prop_map(|(i, j)| format!("add server srv{i} 198.18.1.{j}")),
            (0..6u8, 0..4u8, ty.clone(), port.clone(), 0..3u8, any::<u16>())
                .prop_map(|(i, s, t, p, k, n)| {
                    let server = if k == 0 { format!("198.18.2.{s}") } else { format!("srv{s}") };
                    let opts = match k { 0 => format!(" -maxClient {n}"), 1 => " -healthMonitor NO -state DISABLED".into(), _ => format!(" -cltTimeout {n} -hashId {}", n as u32 + 1) };
                    format!("add service svc{i} {server} {t} {p}{opts}")
                }),
            (0..3u8, ty, 0..4u8, port, method).prop_map(|(i, t, j, p, m)| format!("add lb vserver vs{i} {t} 198.19.0.{j} {p} -lbMethod {m}")),
            (0..3u8, 0..6u8, 0..120u8).prop_map(|(i, k, w)| format!("bind lb vserver vs{i} svc{k} -weight {w}")),
            (0..3u8, 0..6u8).prop_map(|(i, k)| format!("unbind lb vserver vs{i} svc{k}")),
            (0..4u8, 1..30u32, 0..3u8, text(), text()).prop_map(|(i, iv, k, a, b)| match k {
                0 => format!("add lb monitor mon{i} TCP-ECV -send {a} -recv {b} -interval {iv} -LRTM ENABLED"),
                1 => format!("add lb monitor mon{i} HTTP -httpRequest {a} -customHeaders {b} -respCode 200-204 -interval {iv} MIN"),
                _ => format!("add lb monitor mon{i} DNS -query {a} -IPAddress 198.18.3.1 198.18.3.2 -resptimeout {iv}"),
            }),
            (0..6u8, 0..4u8, 1..101u8, any::<bool>()).prop_map(|(s, m, w, d)| {
                let state = if d { " -monState DISABLED" } else { "" };
                format!("bind service svc{s} -monitorName mon{m} -weight {w}{state}")
            }),
            (0..2u8).prop_map(|t| format!("add lb metricTable mt{t}")),
            (0..2u8, 0..3u8, 1..99999u32).prop_map(|(t, m, n)| format!("bind lb metricTable mt{t} metric{m} 1.3.6.1.4.1.{n}.0")),
            (0..2u8, 0..2u8, text()).prop_map(|(i, t, c)| format!("add lb monitor load{i} LOAD -metricTable mt{t} -snmpCommunity {c} -snmpVersion V2")),
            (0..2u8, 0..3u8, 0..1000u32, 1..100u8).prop_map(|(i, m, t, w)| format!("bind lb monitor load{i} -metric metric{m} -metricThreshold {t} -metricWeight {w}")),
            (0..6u8, 0..6u8).prop_map(|(a, b)| format!("rename service svc{a} svc{b}")),
            (0..6u8).prop_map(|a| format!("rm service svc{a}")),
            (0..4u8).prop_map(|a| format!("rm lb monitor mon{a}")),
            (0..10u32).prop_map(|n| format!("set lb parameter -startupRRFactor {n} -usePortForHashLb NO")),
            (1..60u32).prop_map(|n| format!("set lb monitor tcp-default TCP -interval {n} -LRTM ENABLED")),
            Just("unset lb monitor https HTTP -secure".to_owned()),
            (0..4u8, any::<bool>()).prop_map(|(i, v)| format!("add ns ip 198.18.{i}.254 255.255.255.0 -type {}", if v { "VIP" } else { "SNIP" })),
            (0..4u8).prop_map(|i| format!("add route 198.20.{i}.0 255.255.255.0 198.18.{i}.1")),
            (0..4u8, 1..255u8, any::<u16>()).prop_map(|(i, d, c)| format!("set route 198.20.{i}.0 255.255.255.0 198.18.{i}.1 -distance {d} -cost {c} -advertise ENABLED")),
            (0..4u8).prop_map(|i| format!("unset route 198.20.{i}.0 255.255.255.0 198.18.{i}.1 -distance -advertise")),
            (0..3u8).prop_map(|i| format!("set lb vserver vs{i} -netmask 255.255.255.0 -cltTimeout 77")),
            (0..3u8).prop_map(|i| format!("disable lb vserver vs{i}")),
            (0..3u8, 1..1440u32).prop_map(|(i, t)| format!("set lb vserver vs{i} -persistenceType SOURCEIP -timeout {t}")),
            (0..6u8, 0..4u8).prop_map(|(s, m)| format!("disable lb monitor svc{s} mon{m}")),
            (0..3u8, any::<bool>()).prop_map(|(g, udp)| format!("add serviceGroup sg{g} {}", if udp { "UDP" } else { "HTTP" })),
            (0..3u8, 11..15u8, 1..100u8).prop_map(|(g, ip, w)| format!("bind serviceGroup sg{g} 198.18.0.{ip} 80 -weight {w}")),
            (0..3u8, 0..3u8).prop_map(|(g, s)| format!("bind serviceGroup sg{g} web{s} 8080")),
            (0..3u8, 15..18u8).prop_map(|(g, ip)| format!("bind serviceGroup sg{g} 198.18.0.{ip} 80 -state DISABLED -weight 4")),
            (0..3u8, 11..15u8).prop_map(|(g, ip)| format!("unbind serviceGroup sg{g} 198.18.0.{ip} 80")),
            (0..3u8, 0..4u8).prop_map(|(g, m)| format!("bind serviceGroup sg{g} -monitorName mon{m} -weight 2")),
            (0..3u8, 0..3u8).prop_map(|(g, v)| format!("bind lb vserver vs{v} sg{g}")),
            (0..3u8, 11..15u8).prop_map(|(g, ip)| format!("disable serviceGroup sg{g} 198.18.0.{ip} 80")),
            (0..3u8).prop_map(|g| format!("set serviceGroup sg{g} -maxClient 9 -downStateFlush DISABLED")),
            (0..3u8, 0..3u8).prop_map(|(a, b)| format!("rename serviceGroup sg{a} sg{b}")),
            // What `save` on a NetScaler writes on every service and group line.
            (0..6u8, any::<bool>(), any::<bool>(), any::<u32>(), text()).prop_map(|(i, on, sg, devno, hdr)| {
                let yn = if on { "YES" } else { "NO" };
                let cip = if on { format!("ENABLED {hdr}") } else { "DISABLED".into() };
                let what = if sg { format!("serviceGroup sg{}", i % 3) } else { format!("service svc{i}") };
                format!("set {what} -gslb NONE -cip {cip} -usip NO -useproxyport {yn} -sp {} -CKA {yn} -TCPB {yn} -CMP {yn} -devno {devno} -tcpProfileName nstcp_default_profile", if on { "ON" } else { "OFF" })
            }),
            (0..4u8, 0..100u32, any::<u32>()).prop_map(|(i, d, n)| format!("set lb monitor mon{i} TCP-ECV -deviation {d} MSEC -devno {n}")),
            (0..4u8, any::<bool>()).prop_map(|(i, v)| {
                let ed = if v { "ENABLED" } else { "DISABLED" };
                format!("add ns ip 198.18.{i}.250 255.255.255.0 -vServer {ed} -mgmtAccess {ed} -snmp {ed} -gui SECUREONLY -hostRoute {ed} -hostRtGw 198.18.{i}.1")
            }),
            (0..3u8, any::<u32>()).prop_map(|(i, n)| format!("set lb vserver vs{i} -RHIstate ACTIVE -backupLBMethod LEASTCONNECTION -devno {n}")),
            (0..3u8).prop_map(|i| format!("add lb vserver nonaddr{i} TCP 0.0.0.0 0")),
            (0..3u8, 0..3u8, 1..1000u32).prop_map(|(i, b, t)| format!("set lb vserver vs{i} -backupVServer nonaddr{b} -soMethod CONNECTION -soThreshold {t} -soBackupAction DROP")),
            (0..3u8, 0..3u8).prop_map(|(i, b)| format!("set lb vserver nonaddr{i} -backupVServer vs{b} -soMethod HEALTH -soThreshold 50")),
            (0..3u8).prop_map(|i| format!("rm lb vserver nonaddr{i}")),
            (0..1_000_000u32, any::<bool>()).prop_map(|(n, v)| format!("set lb parameter -sessionsThreshold {n} -preferDirectRoute {} -retainServiceState ON -dbsTtl {n} -lbHashFingers 100", if v { "YES" } else { "NO" })),
            (0..4u8, any::<u32>()).prop_map(|(i, n)| format!("add server srv{i} 198.18.1.{i} -devno {n}")),
            any::<bool>().prop_map(|on| format!("{} ns mode USIP Edge L3", if on { "enable" } else { "disable" })),
            (0..3u8).prop_map(|g| format!("rm serviceGroup sg{g}")),
            // Domain-based servers and the name servers that resolve them.
            (0..4u8, 5..100u32).prop_map(|(i, r)| format!("add server dom{i} www{i}.svc.test -domainResolveRetry {r} -queryType A -IPv6Address NO")),
            (0..4u8, 0..3u8).prop_map(|(i, g)| format!("bind serviceGroup sg{g} dom{i} 443")),
            (0..4u8).prop_map(|i| format!("add service dsvc{i} dom{i} TCP 443")),
            (0..4u8).prop_map(|i| format!("set server dom{i} -domainResolveRetry 30")),
            (0..4u8, any::<bool>()).prop_map(|(i, on)| format!("add dns nameServer 198.18.2.{i} -state {}", if on { "ENABLED" } else { "DISABLED" })),
            (0..4u8).prop_map(|i| format!("rm dns nameServer 198.18.2.{i}")),
            (0..3u8, any::<bool>()).prop_map(|(g, on)| format!("set serviceGroup sg{g} -autoScale {}", if on { "DNS" } else { "DISABLED" })),
            (0..3u8, any::<bool>(), 0..600u32).prop_map(|(g, on, d)| format!("set serviceGroup sg{g} -autoDisablegraceful {} -autoDisabledelay {d} -appflowLog {}", if on { "YES" } else { "NO" }, if on { "DISABLED" } else { "ENABLED" })),
            (0..4u8, -100..100i32, any::<u32>()).prop_map(|(i, m, t)| format!("set ns ip 198.18.{i}.250 -metric {m} -tag {t}")),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn save_then_replay_gives_the_same_configuration(lines in prop::collection::vec(line(), 0..60)) {
            let mut config = Config::default();
            for l in &lines {
                let before = config.clone();
                if run(&mut config, l).is_err() {
                    prop_assert_eq!(&config, &before, "rejected line changed the configuration: {}", l);
                }
            }
            let text = render(&config, "prop");
            let (back, errors) = replay_text(&text);
            prop_assert!(errors.is_empty(), "{:?}\n{}", errors, text);
            prop_assert_eq!(&back, &config);
            prop_assert_eq!(render(&back, "prop"), text);
        }
    }
}

#[test]
fn clear_ns_config_needs_force_and_keeps_what_its_level_says() {
    let mut base: Vec<&str> = BASE.to_vec();
    base.push("add route 198.20.0.0 255.255.255.0 198.18.0.1");
    base.push("set lb parameter -startupRRFactor 3");
    base.push("add lb monitor m1 TCP");
    base.push("set lb monitor tcp-default TCP -interval 9");
    let c = config_of(&base);
    let mut refused = c.clone();
    let err = run(&mut refused, "clear ns config basic").unwrap_err();
    assert!(err.contains("[force]"), "{err}");
    assert_eq!(refused, c);

    let mut basic = c.clone();
    run(&mut basic, "clear ns config -force basic").unwrap();
    assert!(basic.vservers.is_empty() && basic.services.is_empty() && basic.servers.is_empty());
    assert!(!basic.monitors.contains_key("m1"));
    assert_eq!(
        basic.monitors["tcp-default"].settings.interval.millis(),
        5000,
        "built-ins reset"
    );
    assert_eq!(
        (basic.ns_ips.len(), basic.routes.len()),
        (c.ns_ips.len(), 1)
    );
    assert_eq!(basic.lb_parameter.startup_rr_factor.get(), 3);

    let mut extended = c.clone();
    run(&mut extended, "clear ns config -force extended").unwrap();
    assert_eq!(extended.ns_ips.len(), c.ns_ips.len());
    assert_eq!(extended.lb_parameter.startup_rr_factor.get(), 0);

    let mut full = c;
    run(&mut full, "clear ns config -force full").unwrap();
    assert_eq!(full, Config::default());
}

/// The forms saved configurations and older scripts use for monitor bindings: `bind lb
/// monitor <mon> <service>`, and built-in monitors spelled in capitals.
#[test]
fn older_monitor_binding_forms_bind_the_same_monitor() {
    let mut c = config_of(BASE);
    run(&mut c, "bind lb monitor mon-ecv svc1 -weight 2").unwrap();
    run(&mut c, "bind service svc2 -monitorName HTTP").unwrap();
    assert_eq!(c.services["svc1"].monitors[0].monitor.as_str(), "mon-ecv");
    assert_eq!(c.services["svc1"].monitors[0].settings.weight.get(), 2);
    // Bound (and saved) under the built-in's own name.
    assert_eq!(c.services["svc2"].monitors[0].monitor.as_str(), "http");
    let saved = ctl::conf::render(&c, "now");
    assert!(
        saved.contains("bind service svc2 -monitorName http"),
        "{saved}"
    );
    assert_eq!(
        run(&mut c, "bind service svc2 -monitorName Http"),
        Err("ERROR: Resource already bound [monitorName, http]".into())
    );
    run(&mut c, "unbind lb monitor mon-ecv svc1").unwrap();
    run(&mut c, "unbind service svc2 -monitorName HTTP").unwrap();
    assert!(c.services["svc1"].monitors.is_empty() && c.services["svc2"].monitors.is_empty());
    // A group takes the same form.
    run(&mut c, "add serviceGroup sg1 HTTP").unwrap();
    run(&mut c, "bind lb monitor tcp sg1").unwrap();
    assert_eq!(c.service_groups["sg1"].monitors[0].monitor.as_str(), "tcp");
    let before = c.clone();
    assert_eq!(
        run(&mut c, "bind lb monitor mon-ecv nosuch"),
        Err("ERROR: No such resource [name, nosuch]".into())
    );
    assert_eq!(c, before);
}

/// `disable server <name> [<delay>] [-graceFul YES]`: the server (and so each of its
/// services) is out of service; the delay and graceful forms drive the engine's drains.
#[test]
fn disable_server_takes_its_delay_and_graceful_forms() {
    let mut c = config_of(BASE);
    run(&mut c, "disable server web1 30 -graceFul YES").unwrap();
    assert!(!c.in_service(&c.services["svc1"]));
    assert!(c.in_service(&c.services["svc2"]));
    let saved = ctl::conf::render(&c, "now");
    assert!(
        saved.contains("add server web1 198.18.0.11 -state DISABLED"),
        "{saved}"
    );
    run(&mut c, "enable server web1").unwrap();
    assert!(c.in_service(&c.services["svc1"]));
}

/// `bind serviceGroup … -state DISABLED` binds a member out of service, as saved configs do.
#[test]
fn a_member_bound_disabled_is_out_of_service() {
    let mut c = config_of(BASE);
    run(&mut c, "add serviceGroup sg1 HTTP").unwrap();
    run(
        &mut c,
        "bind serviceGroup sg1 198.18.0.21 80 -state DISABLED",
    )
    .unwrap();
    run(&mut c, "bind serviceGroup sg1 198.18.0.22 80").unwrap();
    let g = &c.service_groups["sg1"];
    let states: Vec<bool> = c
        .group_members(g)
        .iter()
        .map(|(_, s)| c.in_service(s))
        .collect();
    assert_eq!(states, [false, true]);
    assert_eq!(
        run(
            &mut c,
            "bind serviceGroup sg1 -monitorName tcp -state DISABLED"
        ),
        Err("ERROR: -state is a member's option; a monitor binding takes -monState [state]".into())
    );
}

/// The verbs saved configurations and scripts use on servers, services, addresses and
/// vservers beyond `add`.
#[test]
fn set_verbs_on_servers_services_addresses_and_legacy_vserver_words() {
    let mut c = config_of(BASE);
    run(
        &mut c,
        "set server web1 -IPAddress 198.18.0.31 -comment moved",
    )
    .unwrap();
    assert_eq!(
        c.service_addr(&c.services["svc1"]),
        Some("198.18.0.31".parse().unwrap())
    );
    run(&mut c, "unset server web1 -comment").unwrap();
    assert!(c.servers["web1"].settings.comment.is_none());
    // svc2 was made from a bare IP: its server is its own.
    run(
        &mut c,
        "set service svc2 -IPAddress 198.18.0.32 -maxClient 7",
    )
    .unwrap();
    assert_eq!(
        c.service_addr(&c.services["svc2"]),
        Some("198.18.0.32".parse().unwrap())
    );
    assert_eq!(c.services["svc2"].settings.max_client.get(), 7);
    run(&mut c, "add service svc3 web1 TCP 8080").unwrap();
    let before = c.clone();
    let e = run(&mut c, "set service svc1 -IPAddress 198.18.0.33").unwrap_err();
    assert!(e.contains("shared with service svc3"), "{e}");
    assert_eq!(c, before);
    // Addresses: options change, the type does not, and none can be disabled.
    run(
        &mut c,
        "set ns ip 198.18.0.2 -mgmtAccess ENABLED -hostRoute ENABLED",
    )
    .unwrap();
    run(&mut c, "unset ns ip 198.18.0.2 -hostRoute").unwrap();
    run(&mut c, "enable ns ip 198.18.0.2").unwrap();
    let ip = &c.ns_ips[&"198.18.0.2".parse::<std::net::Ipv4Addr>().unwrap()];
    assert!(ip.settings.mgmt_access.is_enabled() && !ip.settings.host_route.is_enabled());
    let before = c.clone();
    assert!(
        run(&mut c, "set ns ip 198.18.0.2 -type VIP")
            .unwrap_err()
            .contains("cannot change")
    );
    assert!(
        run(&mut c, "disable ns ip 198.18.0.2")
            .unwrap_err()
            .contains("Disabled addresses are not implemented")
    );
    assert!(
        run(&mut c, "set ns ip 198.18.9.9 -arp ENABLED")
            .unwrap_err()
            .contains("No such resource")
    );
    assert_eq!(c, before);
    // NetScaler 9's `vserver` spelling.
    run(&mut c, "disable vserver vs1").unwrap();
    assert!(!c.vservers["vs1"].settings.state.is_enabled());
    run(&mut c, "enable vserver vs1").unwrap();
    run(&mut c, "rm vserver vs1").unwrap();
    assert!(c.vservers.is_empty());
}

/// `-backupVServer` names an existing vserver of the same transport; chains never loop; a
/// vserver that is someone's backup is not removed; renames follow.
#[test]
fn backup_vservers_are_checked_and_follow_renames() {
    let mut c = config_of(BASE);
    run(&mut c, "add lb vserver b1 HTTP 0.0.0.0 0").unwrap();
    run(&mut c, "add lb vserver b2 HTTP 0.0.0.0 0 -backupVServer b1").unwrap();
    run(
        &mut c,
        "set lb vserver vs1 -backupVServer b2 -soMethod CONNECTION -soThreshold 10",
    )
    .unwrap();
    let before = c.clone();
    assert_eq!(
        run(&mut c, "set lb vserver b1 -backupVServer vs1"),
        Err(
            "ERROR: The chain of backup vservers comes back to this vserver [backupVServer, vs1]"
                .into()
        )
    );
    assert_eq!(
        run(&mut c, "set lb vserver b1 -backupVServer nosuch"),
        Err("ERROR: No such resource [backupVServer, nosuch]".into())
    );
    assert!(
        run(&mut c, "add lb vserver u1 UDP 0.0.0.0 0 -backupVServer b1")
            .unwrap_err()
            .contains("cannot back up")
    );
    assert_eq!(
        run(&mut c, "rm lb vserver b2"),
        Err("ERROR: Vserver is the backup of vserver vs1 [name, b2]".into())
    );
    assert!(
        run(&mut c, "set lb vserver vs1 -soBackupAction REDIRECT")
            .unwrap_err()
            .contains("L7")
    );
    assert_eq!(c, before);
    run(&mut c, "rename lb vserver b2 b2x").unwrap();
    assert_eq!(
        c.vservers["vs1"]
            .settings
            .backup_vserver
            .as_ref()
            .map(|n| n.as_str()),
        Some("b2x")
    );
    // Saved with the backups named after every vserver exists; replays the same.
    let saved = ctl::conf::render(&c, "now");
    let (again, errors) = ctl::conf::replay_text(&saved);
    assert!(errors.is_empty(), "{errors:?}\n{saved}");
    assert_eq!(again, c);
}

/// `enable ns mode`: saved configurations list the appliance's modes; USIP is the default
/// of services without their own `-usip`; L2 (bridging) is refused.
#[test]
fn ns_modes_are_kept_and_usip_is_the_services_default() {
    let mut c = config_of(BASE);
    run(&mut c, "enable ns mode FR L3 Edge USNIP PMTUD").unwrap();
    assert!(!c.uses_client_ip(&c.services["svc1"]));
    run(&mut c, "enable ns mode USIP").unwrap();
    run(&mut c, "set service svc2 -usip NO").unwrap();
    assert!(c.uses_client_ip(&c.services["svc1"]));
    assert!(
        !c.uses_client_ip(&c.services["svc2"]),
        "the service's own -usip wins"
    );
    let saved = ctl::conf::render(&c, "now");
    assert!(
        saved.contains("enable ns mode FR USIP Edge USNIP L3 PMTUD\n"),
        "{saved}"
    );
    let before = c.clone();
    assert!(
        run(&mut c, "enable ns mode L2")
            .unwrap_err()
            .contains("L2 mode (bridging) is not implemented")
    );
    assert_eq!(c, before);
    run(&mut c, "disable ns mode USIP").unwrap();
    assert!(!c.uses_client_ip(&c.services["svc1"]));
}

/// `-timeout` as NetScaler bounds it per persistence type: SOURCEIP 2-1440 minutes.
#[test]
fn the_persistence_timeout_is_bounded_by_its_type() {
    let mut c = config_of(BASE);
    let before = c.clone();
    assert_eq!(
        run(
            &mut c,
            "set lb vserver vs1 -persistenceType SOURCEIP -timeout 1"
        ),
        Err("ERROR: SOURCEIP persistence lasts 2-1440 minutes [timeout, 1]".into())
    );
    assert_eq!(c, before);
    run(
        &mut c,
        "set lb vserver vs1 -persistenceType SOURCEIP -timeout 2",
    )
    .unwrap();
    // Without persistence the value is only stored (0 is NetScaler's cookie-insert value).
    run(&mut c, "add lb vserver vs2 TCP 198.19.0.11 80 -timeout 0").unwrap();
}

#[test]
fn domain_based_servers_take_their_address_from_the_resolver() {
    let mut c = config_of(&[
        "add dns nameServer 198.18.0.53",
        "add server web www.svc.test -domainResolveRetry 10",
        "add service dsvc web TCP 443",
    ]);
    let server = c.servers["web"].clone();
    assert_eq!(
        c.service_addr(&c.services["dsvc"]),
        None,
        "not resolved yet"
    );
    let show = |c: &Config| {
        ctl::render::show(
            c,
            ctl::grammar::Object::Server,
            None,
            false,
            &ctl::render::NothingRunning,
        )
        .unwrap()
    };
    assert!(show(&c).contains("Not resolved yet"), "{}", show(&c));
    c.resolutions.insert(
        "web".into(),
        ctl::conf::Resolution {
            domain: server.domain().unwrap().clone(),
            addrs: vec![
                "198.18.0.11".parse().unwrap(),
                "198.18.0.12".parse().unwrap(),
            ],
            ttl_s: 5,
            error: None,
        },
    );
    assert_eq!(
        c.service_addr(&c.services["dsvc"]),
        Some("198.18.0.11".parse().unwrap()),
        "the first address of the answer"
    );
    assert!(
        show(&c).contains("Resolved: 198.18.0.11, 198.18.0.12 (TTL 5 s)"),
        "{}",
        show(&c)
    );
    // Saved as given; what DNS said is not configuration.
    let saved = render(&c, "now");
    assert!(
        saved.contains("add dns nameServer 198.18.0.53\n"),
        "{saved}"
    );
    assert!(
        saved.contains("add server web www.svc.test -domainResolveRetry 10\n"),
        "{saved}"
    );
    assert!(!saved.contains("198.18.0.11"), "{saved}");
    // A resolution of another name is not used once the server changes name (re-added).
    run(&mut c, "rm service dsvc").unwrap();
    run(&mut c, "rm server web").unwrap();
    run(&mut c, "add server web other.svc.test").unwrap();
    assert!(c.resolution(&c.servers["web"]).is_none());
    run(&mut c, "set server web -domainResolveNow").unwrap();
    assert_eq!(c.servers["web"].resolve_requests, 1);
}

#[test]
fn what_the_resolver_cannot_do_is_refused_by_name() {
    let cases: &[(&str, &str)] = &[
        ("add server w6 www.svc.test -queryType AAAA", "IPv4"),
        ("add server w6 www.svc.test -IPv6Address YES", "IPv4"),
        ("add dns nameServer 198.18.0.54 -local", "-local"),
        ("add dns nameServer dns_vsvr", "DNS vserver"),
        ("add dns nameServer 198.18.0.54 -type TCP", "UDP only"),
        ("add server bad 198.18.0.999", "Invalid argument value"),
        ("set server web1 -domainResolveNow", "nothing to resolve"),
        ("set server dom -IPAddress 198.18.0.9", "domain-based"),
        ("set service dsvc -IPAddress 198.18.0.9", "domain-based"),
        ("rm dns nameServer 198.18.0.54", "No such resource"),
    ];
    let mut base = config_of(BASE);
    for l in [
        "add server dom www.svc.test",
        "add service dsvc dom TCP 443",
        "add dns nameServer 198.18.0.53",
    ] {
        run(&mut base, l).unwrap();
    }
    for (line, says) in cases {
        let mut c = base.clone();
        let err = run(&mut c, line).expect_err(line);
        assert!(
            err.starts_with("ERROR: ") && err.contains(says),
            "{line}: {err}"
        );
        assert_eq!(c, base, "{line} changed the configuration");
    }
}

/// Found by the `command_apply` fuzz target: monitors are found ignoring case, and a change
/// made through another spelling of the name used to panic where it was stored back.
#[test]
fn a_monitor_named_in_another_case_is_changed_not_a_panic() {
    let mut c = config_of(&[
        "add lb metricTable load-table",
        "bind lb metricTable load-table memory 1.3.6.1.4.1.99999.2.0",
        "add lb monitor Load-Mon LOAD -metricTable load-table",
    ]);
    for line in [
        "bind lb monitor LOAD-MON -metric memory -metricThreshold 100 -metricWeight 1",
        "set lb monitor load-mon LOAD -interval 7",
        "unset lb monitor LOAD-mon LOAD -interval",
        "unbind lb monitor load-MON -metric memory",
        "bind lb monitor load-mon -metric memory -metricThreshold 50",
    ] {
        run(&mut c, line).unwrap_or_else(|e| panic!("{line}: {e}"));
    }
    let m = c.monitor("monitorName", "Load-Mon").unwrap();
    assert_eq!(
        m.name.as_str(),
        "Load-Mon",
        "the configuration's own spelling"
    );
    assert_eq!(m.metrics.len(), 1);
    assert_eq!(m.metrics[0].threshold, 50);
    let spellings = c
        .monitors
        .keys()
        .filter(|k| k.eq_ignore_ascii_case("load-mon"))
        .count();
    assert_eq!(spellings, 1, "no second monitor under another spelling");
}

/// `system user`: the password is kept only as a hash, `save` writes it with `-encrypted`
/// and the saved file gives back the same user (who still logs in with the same password).
#[test]
fn system_users_are_saved_as_hashes_and_come_back_the_same() {
    let mut c = config_of(&[
        "add system user api-admin \"s3cret pass\" -timeout 900",
        "bind system user api-admin superuser 100",
        "add system user watcher look0nly",
        "bind system user watcher read-only 10",
    ]);
    let admin = &c.system_users["api-admin"];
    assert!(admin.password.verify("s3cret pass"));
    assert!(admin.writes());
    let watcher = &c.system_users["watcher"];
    assert!(watcher.reads() && !watcher.writes() && !watcher.operates());
    let text = render(&c, "test");
    assert!(!text.contains("s3cret"), "{text}");
    assert!(!text.contains("look0nly"), "{text}");
    assert!(text.contains("-encrypted"), "{text}");
    let (back, errors) = replay_text(&text);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(back, c);
    assert!(
        back.system_users["api-admin"]
            .password
            .verify("s3cret pass")
    );

    run(&mut c, "set system user watcher -password n3w").unwrap();
    assert!(c.system_users["watcher"].password.verify("n3w"));
    run(&mut c, "set system user watcher n3wer").unwrap();
    assert!(c.system_users["watcher"].password.verify("n3wer"));
    // `clear ns config full` keeps the API's users (it must not lock the operator out).
    run(&mut c, "clear ns config full -force").unwrap();
    assert_eq!(c.system_users.len(), 2);
    run(&mut c, "unbind system user watcher read-only").unwrap();
    assert!(!c.system_users["watcher"].reads());
    run(&mut c, "rm system user watcher").unwrap();
    assert!(!c.system_users.contains_key("watcher"));
}

#[test]
fn bad_system_user_commands_change_nothing() {
    let mut c = config_of(&["add system user u1 pw1", "bind system user u1 operator 5"]);
    let before = c.clone();
    for (line, error) in [
        (
            "add system user u1 pw2",
            "ERROR: Resource already exists [userName, u1]",
        ),
        (
            "bind system user u1 operator 6",
            "ERROR: Resource already exists [policyName, operator]",
        ),
        (
            "bind system user nobody superuser 1",
            "ERROR: No such resource [userName, nobody]",
        ),
        (
            "bind system user u1 root 1",
            "ERROR: Invalid argument value [policyName, root]",
        ),
        (
            "unbind system user u1 superuser",
            "ERROR: Resource is not bound [policyName, superuser]",
        ),
        ("set system user u1", "ERROR: No arguments to set"),
        (
            "set system user u1 a -password b",
            "ERROR: Argument specified more than once [-password]",
        ),
        (
            "add system user u2 \"\"",
            "ERROR: Required argument missing [password]",
        ),
        (
            "add system user u3 \"two words\" -encrypted",
            "ERROR: Invalid argument value [password, (hidden)]",
        ),
        (
            "add system user u4 pw -maxsession 41",
            "ERROR: Argument value out of range [maxsession, 41]",
        ),
    ] {
        assert_eq!(run(&mut c, line), Err(error.to_owned()), "{line}");
        assert_eq!(c, before, "{line}");
    }
}
