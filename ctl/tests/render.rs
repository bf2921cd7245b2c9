//! show/stat layouts over a configuration and a fixed runtime (a stand-in for the engine).

use ctl::conf::replay_text;
use ctl::grammar::Object;
use ctl::render::{GoingOut, Rates, Runtime, ServiceStats, VserverStats, show, stat};

struct Fixed;

impl Runtime for Fixed {
    fn service(&self, name: &str) -> ServiceStats {
        ServiceStats {
            up: name != "s2",
            hits: 7,
            active: 2,
            packets: 30,
            bytes: 4000,
            window_packets: 3,
            window_bytes: 400,
            response_time_us: Some(1500),
            measured_response_time_us: None,
            load: None,
            // s1 is disabled gracefully with a 2000 s cap in the test below.
            going_out: (name == "s1").then_some(GoingOut {
                graceful: true,
                active: 2,
                remaining_s: Some(1998),
            }),
            rates: Rates {
                hits: 3,
                packets: 12,
                bytes: 1600,
            },
        }
    }
    fn vserver(&self, _: &str) -> VserverStats {
        VserverStats {
            round_robin_reason: Some("Response time not yet known for a bound service".into()),
            hits: 11,
            rates: Rates {
                hits: 5,
                packets: 0,
                bytes: 0,
            },
            persistent_sessions: Some(9),
            ..VserverStats::default()
        }
    }
    fn drops(&self) -> Vec<(String, u64)> {
        vec![("no flow".into(), 4)]
    }
    fn workers(&self) -> Vec<ctl::render::WorkerRow> {
        (0..2)
            .map(|w| ctl::render::WorkerRow {
                core: w + 1,
                rx: 100 * (w as u64 + 1),
                tx: 90,
                handoff_in: 7 * w as u64,
                handoff_out: 5,
                drops: 1,
                snat_skipped: 3,
                snat_time_wait: w as u64,
                flows: 40 + w as u64,
                flow_capacity: 1000,
                embryonic: 4,
                flows_given_way: 9 * w as u64,
                syn_cookies_sent: 5,
                syn_cookies_valid: 2,
                syn_cookies_failed: 1,
            })
            .collect()
    }
}

const CONF: &str = "add ns ip 198.18.0.2 255.255.255.0
add service s1 198.18.0.11 HTTP 80
add service s2 198.18.0.12 HTTP 80
add lb vserver web HTTP 198.18.0.100 80 -lbMethod LRTM
bind lb vserver web s1 -weight 3
bind lb vserver web s2
";

#[test]
fn show_lb_vserver_in_netscaler_layout() {
    let (c, e) = replay_text(CONF);
    assert!(e.is_empty());
    let out = show(&c, Object::LbVserver, Some("web"), false, &Fixed).unwrap();
    for want in [
        "\tweb (198.18.0.100:80) - HTTP\tType: ADDRESS",
        "\tState: UP",
        "\tNo. of Bound Services :  2 (Total) \t 1 (Active)",
        "\tConfigured Method: LRTM",
        "\tCurrent Method: Round Robin, Reason: Response time not yet known for a bound service",
        "1) s1 (198.18.0.11: 80) - HTTP State: UP\tWeight: 3",
        "2) s2 (198.18.0.12: 80) - HTTP State: DOWN\tWeight: 1",
    ] {
        assert!(out.lines().any(|l| l == want), "missing {want:?} in\n{out}");
    }
    assert_eq!(
        show(&c, Object::LbVserver, Some("nope"), false, &Fixed)
            .unwrap_err()
            .to_string(),
        "ERROR: No such resource [name, nope]"
    );
}

#[test]
fn stat_and_json_carry_the_counters() {
    let (c, _) = replay_text(CONF);
    let out = stat(&c, Object::Service, Some("s1"), false, &Fixed).unwrap();
    // NetScaler's two columns: the rate per second and the total.
    for want in [
        "\t                                   Rate (/s)               Total",
        "\tHits                                       3                   7",
        "\tBytes                                   1600                4000",
        "\tActive transactions                        -                   2",
    ] {
        assert!(out.lines().any(|l| l == want), "missing {want:?} in\n{out}");
    }
    assert!(out.contains("1.500"), "{out}");
    // The vserver's hits are its own counter, not its services' sum (2 × 7).
    let one = stat(&c, Object::LbVserver, Some("web"), false, &Fixed).unwrap();
    for want in [
        "\tVserver hits                               5                  11",
        "\tPersistent sessions                        -                   9",
    ] {
        assert!(one.lines().any(|l| l == want), "missing {want:?} in\n{one}");
    }
    let summary = stat(&c, Object::LbVserver, None, false, &Fixed).unwrap();
    assert!(
        summary.starts_with("Virtual Server(s) Summary"),
        "{summary}"
    );
    assert!(
        summary.contains("no flow") && summary.contains(" 4"),
        "{summary}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&stat(&c, Object::Service, None, true, &Fixed).unwrap()).unwrap();
    assert_eq!(json[0]["hits"], 7);
    assert_eq!(json[1]["state"], "DOWN");
    let running = show(&c, Object::NsRunningConfig, None, false, &Fixed).unwrap();
    assert!(running.starts_with("add ns ip 198.18.0.2"), "{running}");
}

#[test]
fn a_draining_service_is_going_out_of_service() {
    let (c, e) = replay_text(&format!(
        "{CONF}disable service s1 2000 -graceFul YES\ndisable service s2\n"
    ));
    assert!(e.is_empty(), "{e:?}");
    let out = show(&c, Object::Service, Some("s1"), false, &Fixed).unwrap();
    let want = "\tState: GOING OUT OF SERVICE (Graceful (number of active clients: 2), Out Of Service in 1998 seconds)";
    assert!(out.lines().any(|l| l == want), "missing {want:?} in\n{out}");
    let out = show(&c, Object::Service, Some("s2"), false, &Fixed).unwrap();
    assert!(out.lines().any(|l| l == "\tState: OUT OF SERVICE"), "{out}");
}

struct OneSession;

impl Runtime for OneSession {
    fn service(&self, name: &str) -> ServiceStats {
        Fixed.service(name)
    }
    fn vserver(&self, name: &str) -> VserverStats {
        Fixed.vserver(name)
    }
    fn drops(&self) -> Vec<(String, u64)> {
        Vec::new()
    }
    fn persistent_sessions(&self, _: &str) -> Vec<ctl::render::PersistentSession> {
        vec![ctl::render::PersistentSession {
            client: "198.18.0.50".parse().unwrap(),
            service: "s2".into(),
            remaining_s: 117,
        }]
    }
}

#[test]
fn persistent_sessions_are_listed_per_vserver() {
    let (c, _) = replay_text(CONF);
    let out = show(&c, Object::LbPersistentSessions, None, false, &OneSession).unwrap();
    let row = out.lines().nth(1).unwrap_or_default();
    let fields: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        fields,
        [
            "SOURCEIP",
            "198.18.0.50",
            "198.18.0.100",
            "80",
            "web",
            "s2",
            "117"
        ],
        "{out}"
    );
    assert!(
        show(
            &c,
            Object::LbPersistentSessions,
            Some("nope"),
            false,
            &OneSession
        )
        .is_err()
    );
}

#[test]
fn stat_ns_lists_each_worker_in_text_and_json() {
    let (config, _) = replay_text(CONF);
    let text = stat(&config, Object::Ns, None, false, &Fixed).unwrap();
    let section = |title: &str| -> Vec<&str> {
        let mut lines = text.lines().skip_while(|l| *l != title).skip(2);
        std::iter::from_fn(|| lines.next().filter(|l| l.starts_with('\t'))).collect()
    };
    let (rows, tables) = (section("Workers"), section("Flow tables"));
    assert_eq!(rows.len(), 2, "{text}");
    let table: Vec<&str> = tables[1].split_whitespace().collect();
    assert_eq!(table, ["1", "41", "1000", "4", "9"], "{text}");
    assert!(
        text.contains("6 passed over") && text.contains("1 reused although it may"),
        "{text}"
    );
    let cells: Vec<&str> = rows[1].split_whitespace().collect();
    assert_eq!(cells, ["1", "2", "200", "90", "7", "5", "1"], "{text}");
    let json: serde_json::Value =
        serde_json::from_str(&stat(&config, Object::Ns, None, true, &Fixed).unwrap()).unwrap();
    let w = &json["workers"][1];
    assert_eq!(
        (
            w["core"].as_u64(),
            w["rx"].as_u64(),
            w["handoff_in"].as_u64(),
            w["handoff_out"].as_u64()
        ),
        (Some(2), Some(200), Some(7), Some(5))
    );
    assert_eq!(w["tx"], 90);
    assert_eq!(w["drops"], 1);
    assert_eq!(
        (w["snat_skipped"].as_u64(), w["snat_time_wait"].as_u64()),
        (Some(3), Some(1))
    );
    assert_eq!(
        (&w["flows"], &w["flow_capacity"], &w["embryonic"]),
        (&41.into(), &1000.into(), &4.into())
    );
    assert_eq!(w["flows_given_way"], 9);
    assert_eq!(
        (&w["syn_cookies_sent"], &w["syn_cookies_valid"]),
        (&5.into(), &2.into())
    );
    assert!(
        text.contains("SYN cookies: 10 sent, 4 valid, 2 failed"),
        "{text}"
    );
    let cmds = ctl::grammar::parse_line("stat ns -format json").unwrap();
    assert!(matches!(
        cmds[0],
        ctl::Command::Stat {
            object: Object::Ns,
            ..
        }
    ));
}

/// What an L4 engine stores without applying is shown where it was set, with that note;
/// a vserver shows its backup and spillover.
#[test]
fn stored_only_options_are_shown_with_their_note() {
    let conf = format!(
        "{CONF}set service s1 -CKA YES -devno 7
set ns ip 198.18.0.2 -mgmtAccess ENABLED
set lb parameter -sessionsThreshold 5000 -maxPipelineNat 255
add lb vserver bk HTTP 0.0.0.0 0
set lb vserver web -backupVServer bk -soMethod CONNECTION -soThreshold 9 -RHIstate ACTIVE
add route 198.20.0.0 255.255.0.0 198.18.0.1 -distance 5
"
    );
    let (c, e) = replay_text(&conf);
    assert!(e.is_empty(), "{e:?}");
    let note = "\tStored and saved, no effect in an L4 engine:";
    let cases = [
        (Object::Service, Some("s1"), " -CKA YES -devno 7"),
        (Object::NsIp, None, " -mgmtAccess ENABLED"),
        (Object::LbParameter, None, " -maxPipelineNat 255"),
        (Object::LbVserver, Some("web"), " -RHIstate ACTIVE"),
        (Object::Route, None, " -distance 5"),
    ];
    for (object, name, options) in cases {
        let out = show(&c, object, name, false, &Fixed).unwrap();
        let want = format!("{note}{options}");
        assert!(out.lines().any(|l| l == want), "missing {want:?} in\n{out}");
    }
    // Implemented options are shown as settings, not in the note.
    let out = show(&c, Object::LbParameter, None, false, &Fixed).unwrap();
    assert!(out.contains("\tSessions threshold: 5000"), "{out}");
    let out = show(&c, Object::LbVserver, Some("web"), false, &Fixed).unwrap();
    assert!(out.contains("\tBackup: bk\n"), "{out}");
    assert!(
        out.contains("\tSpillover: CONNECTION threshold 9 backup action ACCEPT\n"),
        "{out}"
    );
    let out = show(&c, Object::Service, Some("s2"), false, &Fixed).unwrap();
    assert!(!out.contains(note), "nothing stored-only set on s2:\n{out}");
}
