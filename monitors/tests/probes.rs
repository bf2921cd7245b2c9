//! Every probe type against a scripted backend, in virtual time: the monitor core and a
//! smoltcp "backend" exchange frames over channels and both are polled millisecond by
//! millisecond, so response times and timeouts are exact and nothing sleeps. (The lab tests
//! run the same probes against real nginx, dnsmasq, vsftpd, socat and snmpd.)

mod backend;

use backend::{Backend, Reply, Script};
use monitors::health::{MonitorState, Timers};
use monitors::{Outcome, ProbeKind, StatusCodes, Target};

const TIMERS: Timers = Timers {
    interval: 1000,
    resp_timeout: 500,
    down_time: 1000,
    retries: 1,
    failure_retries: 0,
    success_retries: 1,
    reverse: false,
};

fn target(service: u32, port: u16, kind: ProbeKind) -> Target {
    Target {
        service,
        service_name: format!("s{service}"),
        monitor: format!("m{service}"),
        addr: backend::BACKEND_IP,
        port,
        kind,
        timers: TIMERS,
        weight: 1,
        enabled: true,
        lrtm: true,
        mon_threshold: 0,
        secure: false,
    }
}

fn secure(mut t: Target) -> Target {
    t.secure = true;
    t
}

fn http(request: &str) -> ProbeKind {
    ProbeKind::Http {
        request: request.into(),
        codes: StatusCodes(vec![(200, 200)]),
        headers: Vec::new(),
    }
}

fn ecv(send: &str, recv: &str, http: bool) -> ProbeKind {
    ProbeKind::Ecv {
        send: send.into(),
        recv: recv.into(),
        http,
        headers: Vec::new(),
    }
}

const OK_200: &str = "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nOK-HEALTH";
const ERR_500: &str = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n";

/// Runs one probe round (the first probe of every target, all due at 0) and returns each
/// target's monitor state and the published response time.
fn first_round(backend: Backend, targets: Vec<Target>) -> Vec<(MonitorState, Option<u64>, bool)> {
    let mut lab = backend::Lab::new(backend, targets.len());
    lab.core.set_targets(targets.clone(), 0);
    lab.run_until(900);
    targets
        .iter()
        .map(|t| {
            (
                lab.core.state_of(t.service, &t.monitor).unwrap(),
                lab.health.response_time(t.service),
                lab.health.is_up(t.service),
            )
        })
        .collect()
}

#[test]
fn ping_tcp_and_http_probes_measure_their_exchanges() {
    let backend = Backend::new()
        .tcp(80, Script::http(OK_200, 7))
        .tcp(82, Script::http(ERR_500, 0));
    let r = first_round(
        backend,
        vec![
            target(0, 0, ProbeKind::Ping),
            target(1, 80, ProbeKind::Tcp),
            target(2, 81, ProbeKind::Tcp), // nobody listens: RST
            target(3, 80, http("GET /health")),
            target(4, 82, http("GET /health")),
        ],
    );
    assert_eq!(r[0].0, MonitorState::Up, "ping");
    assert_eq!(r[1].0, MonitorState::Up, "tcp");
    assert_eq!(r[2].0, MonitorState::Down, "tcp refused");
    assert!(!r[2].2, "a DOWN monitor takes its service down");
    assert_eq!(r[3].0, MonitorState::Up, "http 200");
    assert_eq!(r[4].0, MonitorState::Down, "http 500 against -respCode 200");
    // The backend answers the request 7 ms after it arrived: the HTTP response time is the
    // request → response time, not the connection setup.
    let http_us = r[3].1.unwrap();
    assert!(
        (7000..=9000).contains(&http_us),
        "http response {http_us} µs"
    );
    // PING and TCP cost one or two virtual milliseconds (a poll each way).
    assert!(r[0].1.unwrap() <= 3000 && r[1].1.unwrap() <= 3000);
}

#[test]
fn ecv_probes_need_their_receive_string() {
    let backend = Backend::new()
        .tcp(7, Script::on("ping", Reply::now("pong\n")))
        .tcp(8, Script::silent())
        .tcp(9, Script::on("ping", Reply::now("\u{0}\u{1}garbage\u{ff}")))
        .tcp(80, Script::http(OK_200, 3));
    let r = first_round(
        backend,
        vec![
            target(0, 7, ecv("ping", "pong", false)),
            target(1, 7, ecv("ping", "nope", false)),
            target(2, 8, ecv("ping", "pong", false)), // half-open: accepts, never answers
            target(3, 9, ecv("ping", "pong", false)),
            target(4, 80, ecv("GET /health", "OK-HEALTH", true)),
            target(5, 80, ecv("GET /health", "MISSING", true)),
        ],
    );
    let states: Vec<_> = r.iter().map(|x| x.0).collect();
    use MonitorState::{Down, Up};
    assert_eq!(states, [Up, Down, Down, Down, Up, Down]);
    let http_ecv_us = r[4].1.unwrap();
    assert!((3000..=5000).contains(&http_ecv_us), "{http_ecv_us} µs");
}

#[test]
fn udp_ecv_dns_and_load_probes() {
    let backend = Backend::new()
        .udp(17008, |_| Some(b"PONG".to_vec()))
        .udp(17009, |_| None)
        .udp(53, |query| backend::dns_answer(query, "198.18.0.20"))
        .udp(161, |request| backend::snmp_answer(request, 70));
    let dns = |expect: &str| ProbeKind::Dns {
        name: "svc.test".into(),
        aaaa: false,
        expect: vec![expect.parse().unwrap()],
    };
    let load = ProbeKind::Load {
        v1: false,
        community: "public".into(),
        metrics: vec![(vec![1, 3, 6, 1, 4, 1, 99999, 2, 0], 100, 1)],
        passive: false,
    };
    let mut lab = backend::Lab::new(backend, 6);
    let targets = vec![
        target(
            0,
            17008,
            ProbeKind::UdpEcv {
                send: b"PING".to_vec(),
                recv: b"PONG".to_vec(),
            },
        ),
        target(
            1,
            17009,
            ProbeKind::UdpEcv {
                send: b"PING".to_vec(),
                recv: b"PONG".to_vec(),
            },
        ),
        target(2, 53, dns("198.18.0.20")),
        target(3, 53, dns("198.18.0.21")),
        target(4, 161, load),
    ];
    lab.core.set_targets(targets, 0);
    lab.run_until(900);
    let state = |s: u32| lab.core.state_of(s, &format!("m{s}")).unwrap();
    use MonitorState::{Down, Up};
    assert_eq!(
        [state(0), state(1), state(2), state(3), state(4)],
        [Up, Down, Up, Down, Up]
    );
    // 70 of a threshold of 100, weight 1: load 70 %.
    assert_eq!(lab.health.load(4), Some(70_000));
    assert!(lab.health.is_up(4), "LOAD monitors never change state");
}

#[test]
fn ftp_probes_log_in() {
    let ftp = |pass_reply: &'static str| {
        Script::banner("220 welcome\r\n")
            .then("USER", Reply::now("331 password please\r\n"))
            .then("PASS", Reply::after(4, pass_reply))
    };
    let backend = Backend::new()
        .tcp(21, ftp("230 logged in\r\n"))
        .tcp(2121, ftp("530 login incorrect\r\n"));
    let kind = || ProbeKind::Ftp {
        user: "probe".into(),
        password: "secret".into(),
    };
    let r = first_round(
        backend,
        vec![target(0, 21, kind()), target(1, 2121, kind())],
    );
    assert_eq!(r[0].0, MonitorState::Up);
    assert_eq!(r[1].0, MonitorState::Down);
    // user name sent → 230: two round trips plus the 4 ms the backend took for PASS.
    let us = r[0].1.unwrap();
    assert!((4000..=8000).contains(&us), "{us} µs");
}

#[test]
fn secure_probes_run_over_tls() {
    let backend = Backend::new()
        .tls(443, Script::http(OK_200, 5))
        .tls(444, Script::http(ERR_500, 0))
        .tls(8443, Script::on("ping", Reply::now("pong")))
        .tcp(25, Script::banner("220 not TLS\r\n")); // a TLS client gets garbage back
    let r = first_round(
        backend,
        vec![
            secure(target(0, 443, ProbeKind::Tcp)),
            secure(target(1, 443, http("GET /health"))),
            secure(target(2, 444, http("GET /health"))),
            secure(target(3, 8443, ecv("ping", "pong", false))),
            secure(target(4, 443, ecv("GET /", "OK-HEALTH", true))),
            secure(target(5, 25, ProbeKind::Tcp)),
            target(6, 443, ProbeKind::Tcp), // the same port probed without TLS: plain TCP passes
        ],
    );
    let states: Vec<_> = r.iter().map(|x| x.0).collect();
    use MonitorState::{Down, Up};
    assert_eq!(states, [Up, Up, Down, Up, Up, Down, Up]);
    // TCPS: SYN → handshake complete takes more round trips than TCP's SYN → SYN+ACK.
    assert!(r[0].1.unwrap() > r[6].1.unwrap());
    // HTTPS: request → response inside TLS, with the backend's 5 ms.
    let https_us = r[1].1.unwrap();
    assert!((5000..=8000).contains(&https_us), "{https_us} µs");
}

#[test]
fn a_service_recovers_when_its_backend_comes_back() {
    // Port 80 answers 500 for the first two requests, then 200: DOWN, then UP at the next
    // probe (downTime 1 s while DOWN).
    let backend = Backend::new().tcp(
        80,
        Script::http_sequence(&[ERR_500, ERR_500, OK_200, OK_200]),
    );
    let mut lab = backend::Lab::new(backend, 1);
    lab.core.set_targets(vec![target(0, 80, http("GET /"))], 0);
    let mut seen = Vec::new();
    for t in (100..4000).step_by(100) {
        lab.run_until(t);
        let s = lab.core.state_of(0, "m0").unwrap();
        if seen.last() != Some(&s) {
            seen.push(s);
        }
    }
    use MonitorState::{Down, Up};
    assert_eq!(seen, [Down, Up]);
    assert!(lab.health.is_up(0));
}

#[test]
fn a_new_interval_applies_to_running_bindings() {
    let backend = Backend::new().tcp(80, Script::silent());
    let mut lab = backend::Lab::new(backend, 1);
    let mut t = target(0, 80, ProbeKind::Tcp);
    lab.core.set_targets(vec![t.clone()], 0);
    lab.run_until(5000);
    // One probe per second so far.
    let (passed, _) = lab.health.probes();
    assert!((5..=6).contains(&passed), "{passed}");
    // `set lb monitor … -interval 200 MSEC -resptimeout 100 MSEC`: five per second from now.
    t.timers.interval = 200;
    t.timers.resp_timeout = 100;
    lab.core.set_targets(vec![t], lab.now_us());
    lab.run_until(10_000);
    let (now_passed, _) = lab.health.probes();
    assert!((29..=32).contains(&now_passed), "{now_passed}");
}

#[test]
fn http_probes_send_the_custom_headers() {
    // This backend answers only requests carrying its header.
    let backend = Backend::new().tcp(80, Script::on("X-Probe: yes\r\n", Reply::now(OK_200)));
    let with = |headers: &str| ProbeKind::Http {
        request: "GET /".into(),
        codes: StatusCodes(vec![(200, 200)]),
        headers: headers.as_bytes().to_vec(),
    };
    let r = first_round(
        backend,
        vec![
            target(0, 80, with("X-Probe: yes\r\n")),
            target(1, 80, with("")),
            target(
                2,
                80,
                ProbeKind::Ecv {
                    send: b"GET /".to_vec(),
                    recv: b"OK-HEALTH".to_vec(),
                    http: true,
                    headers: b"X-Probe: yes".to_vec(),
                },
            ),
        ],
    );
    let states: Vec<_> = r.iter().map(|x| x.0).collect();
    assert_eq!(
        states,
        [MonitorState::Up, MonitorState::Down, MonitorState::Up]
    );
}

#[test]
fn an_icmp_unreachable_fails_a_udp_probe_at_once() {
    // Nothing listens on UDP 9999: the backend's stack answers "port unreachable".
    let backend = Backend::new();
    let mut lab = backend::Lab::new(backend, 1);
    let kind = ProbeKind::UdpEcv {
        send: b"PING".to_vec(),
        recv: b"PONG".to_vec(),
    };
    lab.core.set_targets(vec![target(0, 9999, kind)], 0);
    lab.run_until(50);
    // Long before the 500 ms response timeout.
    assert_eq!(lab.core.state_of(0, "m0"), Some(MonitorState::Down));
    assert_eq!(lab.health.probes(), (0, 1));
}

#[test]
fn failed_probes_say_why() {
    use monitors::probe::Failure;
    let backend = Backend::new()
        .tcp(82, Script::http(ERR_500, 0))
        .tcp(8, Script::silent());
    let mut lab = backend::Lab::new(backend, 4);
    let udp = ProbeKind::UdpEcv {
        send: b"PING".to_vec(),
        recv: b"PONG".to_vec(),
    };
    lab.core.set_targets(
        vec![
            target(0, 81, ProbeKind::Tcp),
            target(1, 82, http("GET /")),
            target(2, 9999, udp),
            target(3, 8, ecv("ping", "pong", false)),
        ],
        0,
    );
    lab.run_until(900);
    let why = |s: u32| lab.core.last_outcome(s, &format!("m{s}"));
    assert_eq!(why(0), Some(Outcome::Failed(Failure::Refused)));
    assert_eq!(why(1), Some(Outcome::Failed(Failure::Status(500))));
    assert_eq!(why(2), Some(Outcome::Failed(Failure::Unreachable)));
    assert_eq!(
        why(3),
        Some(Outcome::Failed(Failure::Timeout)),
        "a silent peer"
    );
}

#[test]
fn three_snips_on_three_subnets_each_probe_their_own_services() {
    let backend = Backend::new().tcp(80, Script::http(OK_200, 0));
    let mut lab = backend::Lab::with_subnets(backend, 3, 3);
    let targets: Vec<Target> = (0..3u8)
        .map(|k| Target {
            addr: std::net::Ipv4Addr::new(198, 18, k, 11),
            ..target(u32::from(k), 80, http("GET /"))
        })
        .collect();
    lab.core.set_targets(targets, 0);
    // smoltcp asks for one unknown neighbour per second (the workers' ARP traffic teaches
    // the real monitor core the rest sooner): by 4 s every service has been probed.
    lab.run_until(4000);
    for k in 0..3u8 {
        let service = std::net::Ipv4Addr::new(198, 18, k, 11);
        assert_eq!(
            lab.core.state_of(u32::from(k), &format!("m{k}")),
            Some(MonitorState::Up),
            "{k}: {:?} {:?}",
            lab.core.last_outcome(u32::from(k), &format!("m{k}")),
            lab.sent
        );
        let sources: Vec<_> = lab
            .sent
            .iter()
            .filter(|(_, d)| *d == service)
            .map(|(s, _)| *s)
            .collect();
        assert!(!sources.is_empty());
        assert!(
            sources
                .iter()
                .all(|s| *s == std::net::Ipv4Addr::new(198, 18, k, 1)),
            "probes to {service} leave from the SNIP of its subnet: {sources:?}"
        );
    }
}

/// NetScaler's rules, restated independently of `health`: DOWN after `retries` failures in a
/// row (failureRetries 0), UP after `successRetries` successes in a row.
struct Rules {
    retries: u32,
    success_retries: u32,
    failures: u32,
    successes: u32,
    state: MonitorState,
}

impl Rules {
    fn record(&mut self, passed: bool) -> MonitorState {
        if passed {
            self.successes += 1;
            self.failures = 0;
            if self.successes >= self.success_retries {
                self.state = MonitorState::Up;
            }
        } else {
            self.failures += 1;
            self.successes = 0;
            if self.failures >= self.retries {
                self.state = MonitorState::Down;
            }
        }
        self.state
    }
}

/// A backend that answers for 300 ms, then not for 300 ms, for a minute: after every probe
/// the monitor's state is what the rules say for the results so far, DOWN probes wait
/// downTime, nothing panics, and the core holds no more sockets at the end than at the start.
#[test]
fn a_flapping_backend_follows_retries_success_retries_and_down_time_exactly() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    let up = Arc::new(AtomicBool::new(true));
    let answering = Arc::clone(&up);
    let backend = Backend::new().udp(17008, move |_| {
        answering.load(Relaxed).then(|| b"PONG".to_vec())
    });
    let mut lab = backend::Lab::new(backend, 1);
    let timers = Timers {
        interval: 100,
        resp_timeout: 50,
        down_time: 200,
        retries: 2,
        failure_retries: 0,
        success_retries: 2,
        reverse: false,
    };
    let kind = ProbeKind::UdpEcv {
        send: b"PING".to_vec(),
        recv: b"PONG".to_vec(),
    };
    lab.core.set_targets(
        vec![Target {
            timers,
            ..target(0, 17008, kind)
        }],
        0,
    );
    let sockets_at_start = lab.core.sockets_in_use();
    let mut rules = Rules {
        retries: 2,
        success_retries: 2,
        failures: 0,
        successes: 0,
        state: MonitorState::Unknown,
    };
    let (mut probes, mut changes) = (0u64, 0u32);
    let mut last = (0u64, 0u64);
    let mut last_finish_while_down: Option<u64> = None;
    for t in 1..=60_000u64 {
        up.store((t / 300) % 2 == 0, Relaxed);
        lab.run_until(t);
        let now = lab.health.probes();
        if now == last {
            continue;
        }
        // One probe ended in this millisecond (they are 100 ms apart at least).
        assert_eq!(now.0 + now.1, last.0 + last.1 + 1, "at {t} ms");
        let passed = now.0 > last.0;
        last = now;
        probes += 1;
        let before = rules.state;
        let want = rules.record(passed);
        let got = lab.core.state_of(0, "m0").unwrap();
        assert_eq!(got, want, "after probe {probes} at {t} ms");
        changes += u32::from(before != want);
        // While DOWN the next probe starts downTime after the last ended.
        if let Some(prev) = last_finish_while_down {
            assert!(
                t - prev >= timers.down_time,
                "a DOWN probe {} ms after the last",
                t - prev
            );
        }
        last_finish_while_down = (want == MonitorState::Down && !passed).then_some(t);
    }
    eprintln!(
        "60 s of flapping: {probes} probes ({last:?} passed, failed), {changes} state changes"
    );
    assert!(probes > 200, "{probes} probes");
    assert!(
        changes > 40,
        "the state followed the flaps: {changes} changes"
    );
    assert!(
        lab.core.sockets_in_use() <= sockets_at_start + 2,
        "sockets {} at the end, {sockets_at_start} at the start",
        lab.core.sockets_in_use()
    );
}
