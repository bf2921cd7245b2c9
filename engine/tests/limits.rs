//! The control plane's limits: service and vserver ids are reused once free, and never while
//! a flow holds them (a long-running daemon that adds, removes and renames services never
//! runs out of ids); SNIPs beyond what the monitor core holds are refused.

use std::sync::Arc;

use engine::control::{Control, ControlSetup};
use engine::counters::Counters;
use engine::health::ServiceHealth;
use engine::tables::Tables;
use engine::verdict::{SharedDrops, Verdict};
use engine::worker::{Worker, WorkerSetup};

mod common;
use common::*;

const MAX_SERVICES: usize = 8;

struct Daemon {
    control: Control,
    worker: Worker,
    now: u64,
}

impl Daemon {
    fn new() -> Self {
        let (config, errors) = ctl::conf::replay_text(
            "add ns ip 198.18.0.2 255.255.255.0 -type SNIP\nadd lb vserver vs TCP 198.18.0.100 80\n",
        );
        assert!(errors.is_empty());
        let (counters, mut writers) = Counters::new(1, MAX_SERVICES);
        let health = Arc::new(ServiceHealth::new(MAX_SERVICES));
        let control = Control::new(ControlSetup {
            config,
            unsupported: ctl::conf::Unsupported::Fail,
            kept_lines: Vec::new(),
            config_path: std::env::temp_dir().join("fl-ids-unused.conf"),
            max_services: MAX_SERVICES,
            counters: Arc::clone(&counters),
            health: Arc::clone(&health),
            drops: Arc::new(SharedDrops::new(1)),
            clock: engine::clock::Clock::monotonic(),
        })
        .unwrap();
        let worker = Worker::new(WorkerSetup {
            id: 0,
            workers: 1,
            macs: vec![LB_MAC],
            flow_capacity: 64,
            writer: writers.remove(0),
            counters,
            health,
            tables: control.published.load_full(),
        });
        Self {
            control,
            worker,
            now: 1_000,
        }
    }

    /// Runs a command and lets the worker pick up the generation it published.
    fn run(&mut self, line: &str) {
        let reply = self.control.execute(line);
        assert_eq!(
            reply.last().map(String::as_str),
            Some(" Done"),
            "{line}: {reply:?}"
        );
        self.worker.set_tables(self.control.published.load_full());
    }

    fn tables(&self) -> Arc<Tables> {
        self.control.published.load_full()
    }

    fn id_of(&self, name: &str) -> Option<usize> {
        self.tables()
            .services
            .iter()
            .position(|s| s.as_ref().is_some_and(|s| s.name == name))
    }

    /// Time passes: idle flows expire, counter windows empty.
    fn wait(&mut self, ms: u64) {
        self.now += ms;
        self.worker.housekeeping(self.now);
        self.worker.drain_outbox(|_, _| {});
    }
}

#[test]
fn adding_and_removing_services_never_exhausts_the_ids() {
    let mut d = Daemon::new();
    for i in 0..(MAX_SERVICES * 10) {
        d.run(&format!(
            "add service s{i} 198.18.0.{} TCP 80",
            10 + i % 200
        ));
        d.run(&format!("bind lb vserver vs s{i}"));
        d.run(&format!("rename service s{i} t{i}"));
        d.run(&format!("rm service t{i}"));
        d.run("rm lb vserver vs");
        d.run("add lb vserver vs TCP 198.18.0.100 80");
    }
    assert!(d.tables().services.len() <= 2, "{:?}", d.tables().services);
}

#[test]
fn an_id_held_by_a_flow_is_not_reused_until_the_flow_is_gone() {
    let mut d = Daemon::new();
    d.run("add service old 198.18.0.11 TCP 80");
    d.run("bind lb vserver vs old");
    let old_id = d.id_of("old").unwrap();
    // The worker learns the service's MAC and opens a flow to it.
    d.wait(0);
    let mut reply = arp(false, backend_mac(1), backend(1), LB_MAC, SNIP);
    assert_eq!(d.worker.process(d.now, 0, &mut reply), Verdict::Consumed);
    let mut syn = tcp(CLIENT_MAC, (CLIENT, 40_000), (VIP, 80), Flags::Syn, b"");
    assert_eq!(
        d.worker.process(d.now, 0, &mut syn),
        Verdict::Tx { port: 0 }
    );
    d.run("rm service old");
    for i in 0..3 {
        d.run(&format!("add service new{i} 198.18.0.12 TCP 80"));
        assert_ne!(
            d.id_of(&format!("new{i}")),
            Some(old_id),
            "a live flow holds it"
        );
    }
    // The unanswered SYN expires (30 s) and the window empties (14 s): the id is free.
    d.wait(45_000);
    assert!(d.worker.flows().is_empty());
    d.run("add service later 198.18.0.13 TCP 80");
    assert_eq!(d.id_of("later"), Some(old_id));
    let t = d.control.counters.totals(old_id as u32);
    assert_eq!((t.hits, t.packets), (0, 0), "a reused id starts from zero");
}

#[test]
fn snips_beyond_the_monitor_cores_interface_are_refused() {
    let mut d = Daemon::new();
    // Daemon::new has one SNIP; seven more fit.
    for i in 1..monitors::MAX_ADDRESSES {
        d.run(&format!("add ns ip 198.18.{i}.2 255.255.255.0 -type SNIP"));
    }
    let reply = d
        .control
        .execute("add ns ip 198.18.100.2 255.255.255.0 -type SNIP");
    assert!(
        reply
            .last()
            .is_some_and(|l| l.starts_with("ERROR:") && l.contains("SNIPs")),
        "{reply:?}"
    );
    assert_eq!(
        d.tables().snips().count(),
        monitors::MAX_ADDRESSES,
        "nothing changed"
    );
    // A VIP is no SNIP: it still fits.
    d.run("add ns ip 198.18.100.3 255.255.255.255 -type VIP");
}
