//! The control socket without a data plane: bad input harms nothing, several clients at once.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use ctl::proto::request;
use engine::control::{Admins, Control, ControlSetup, serve};
use engine::counters::Counters;
use engine::health::ServiceHealth;
use engine::verdict::SharedDrops;

/// A test's directory under the system's temporary one, removed when the test ends.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("fl-ctl-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn daemon(
    tag: &str,
    group: Option<&str>,
) -> (
    Arc<Control>,
    std::path::PathBuf,
    Arc<AtomicBool>,
    std::thread::JoinHandle<()>,
    Scratch,
) {
    let dir = Scratch::new(tag);
    let conf = dir.0.join("ns.conf");
    std::fs::write(&conf, "add service s1 198.18.0.11 HTTP 80\nadd lb vserver web HTTP 198.18.0.100 80\nbind lb vserver web s1\n").unwrap();
    let (counters, _w) = Counters::new(1, 64);
    let control = Arc::new(
        Control::new(ControlSetup {
            config: ctl::conf::load(&conf).unwrap(),
            unsupported: ctl::conf::Unsupported::Fail,
            kept_lines: Vec::new(),
            config_path: conf,
            max_services: 64,
            counters,
            health: Arc::new(ServiceHealth::new(64)),
            drops: Arc::new(SharedDrops::new(1)),
            clock: engine::clock::Clock::monotonic(),
        })
        .unwrap(),
    );
    let sock = dir.0.join("ctl.sock");
    let stop = Arc::new(AtomicBool::new(false));
    let server = serve(
        Arc::clone(&control),
        &sock,
        Admins::new(group).unwrap(),
        Arc::clone(&stop),
    )
    .unwrap();
    (control, sock, stop, server, dir)
}

fn connect(sock: &std::path::Path) -> (BufReader<UnixStream>, UnixStream) {
    let s = UnixStream::connect(sock).unwrap();
    (BufReader::new(s.try_clone().unwrap()), s)
}

#[test]
fn bad_input_gets_an_error_and_changes_nothing() {
    let (control, sock, stop, server, _dir) = daemon("bad", None);
    let before = control.config();
    let (mut r, mut w) = connect(&sock);
    for garbage in [
        "\u{1}\u{2}\u{3}",
        "bind lb vserver web",
        "rm service nosuch",
        "\"unterminated",
    ] {
        let reply = request(&mut r, &mut w, garbage).unwrap();
        assert!(
            reply.last().unwrap().starts_with("ERROR: "),
            "{garbage:?}: {reply:?}"
        );
    }
    assert_eq!(control.config(), before);
    // An over-long line closes that connection and nothing else.
    let (mut r2, mut w2) = connect(&sock);
    w2.write_all(&vec![b'a'; ctl::proto::MAX_LINE + 10])
        .unwrap();
    let mut line = String::new();
    r2.read_line(&mut line).unwrap();
    assert!(
        line.starts_with("ERROR: Command line longer than"),
        "{line}"
    );
    // A client leaving mid-command harms nothing.
    {
        let mut s = UnixStream::connect(&sock).unwrap();
        s.write_all(b"add service half 198.18").unwrap();
    }
    let reply = request(&mut r, &mut w, "show lb vserver web").unwrap();
    assert_eq!(reply.last().unwrap(), " Done");
    assert_eq!(control.config(), before);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    server.join().unwrap();
    assert!(!sock.exists(), "the socket is removed at shutdown");
}

#[test]
fn several_clients_at_once_and_their_changes_are_atomic() {
    let (control, sock, stop, server, _dir) = daemon("many", None);
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let sock = sock.clone();
            std::thread::spawn(move || {
                let (mut r, mut w) = connect(&sock);
                // Each client adds three services as one range, then binds them.
                let reply = request(
                    &mut r,
                    &mut w,
                    &format!("add service c{i}-[1-3] 198.18.{i}.[1-3] UDP 53"),
                )
                .unwrap();
                assert_eq!(reply.last().unwrap(), " Done");
                for k in 1..=3 {
                    let reply =
                        request(&mut r, &mut w, &format!("bind lb vserver web c{i}-{k}")).unwrap();
                    assert!(
                        reply
                            .last()
                            .unwrap()
                            .starts_with("ERROR: Service type UDP cannot be bound"),
                        "{reply:?}"
                    );
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let c = control.config();
    assert_eq!(c.services.len(), 1 + 8 * 3);
    assert_eq!(
        c.vservers["web"].bindings.len(),
        1,
        "every mismatched bind was refused"
    );
    // A range that fails half-way adds nothing.
    let (mut r, mut w) = connect(&sock);
    let reply = request(&mut r, &mut w, "add service c0-[3-4] 198.18.9.[3-4] TCP 80").unwrap();
    assert!(
        reply
            .last()
            .unwrap()
            .starts_with("ERROR: Resource already exists"),
        "{reply:?}"
    );
    assert!(!control.config().services.contains_key("c0-4"));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    server.join().unwrap();
}

#[test]
fn metrics_are_served_as_openmetrics_text() {
    use std::io::Read;
    let (control, _sock, stop, server, _dir) = daemon("metrics", None);
    let addr = engine::metrics::serve(
        Arc::clone(&control),
        "127.0.0.1:0".parse().unwrap(),
        Arc::clone(&stop),
    )
    .unwrap();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    assert!(text.contains("application/openmetrics-text"), "{text}");
    assert!(
        text.contains("fulcrum_service_hits_total{service=\"s1\",state=\"UP\"} 0"),
        "{text}"
    );
    assert!(
        text.contains("fulcrum_vserver_hits_total{vserver=\"web\",method=\"LEASTCONNECTION\"} 0"),
        "{text}"
    );
    assert!(text.trim_end().ends_with("# EOF"), "{text}");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    server.join().unwrap();
}

/// `show lb vserver` sent by a process with these `setpriv` credentials; the reply's last line.
fn as_user(sock: &std::path::Path, creds: &[&str]) -> String {
    let out = std::process::Command::new("setpriv")
        .args(creds)
        .args(["socat", "-t", "0.5", "-"])
        .arg(format!("UNIX-CONNECT:{}", sock.display()))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child
                .stdin
                .take()
                .unwrap()
                .write_all(b"show lb vserver\n")?;
            child.wait_with_output()
        })
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn an_admin_group_opens_the_socket_to_its_members_only() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    // Without a group: mode 0600, other users refused.
    let (_c, sock, stop, server, _dir) = daemon("nogroup", None);
    assert_eq!(
        std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let nobody = ["--reuid=65534", "--regid=65534", "--clear-groups"];
    assert_eq!(as_user(&sock, &nobody), "", "the file mode keeps them out");
    // Past the file mode, the peer credentials still keep them out.
    for (path, mode) in [(sock.parent().unwrap(), 0o755), (sock.as_path(), 0o666)] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    assert!(as_user(&sock, &nobody).starts_with("ERROR: Not authorized"));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    server.join().unwrap();

    // With `--admin-group nogroup`: mode 0660, group nogroup; its members are admitted as
    // their primary group or a supplementary one, others are not.
    let (_c, sock, stop, server, _dir) = daemon("group", Some("nogroup"));
    let meta = std::fs::metadata(&sock).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o660);
    assert_eq!(meta.gid(), 65534);
    // The socket's directory must be reachable for the unprivileged users.
    std::fs::set_permissions(
        sock.parent().unwrap(),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    assert_eq!(as_user(&sock, &nobody), " Done");
    let supplementary = ["--reuid=65534", "--regid=1", "--groups=65534"];
    assert_eq!(as_user(&sock, &supplementary), " Done");
    let outsider = ["--reuid=65534", "--regid=1", "--groups=1"];
    assert_eq!(
        as_user(&sock, &outsider),
        "",
        "the file mode keeps them out"
    );
    std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o666)).unwrap();
    let refused = as_user(&sock, &outsider);
    assert!(refused.contains("group nogroup"), "{refused}");
    assert!(Admins::new(Some("fl-no-such-group")).is_err());
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    server.join().unwrap();
}

#[test]
fn a_drain_counts_down_on_the_daemons_clock() {
    let (config, errors) = ctl::conf::replay_text(
        "add service s1 198.18.0.11 HTTP 80\nadd lb vserver web HTTP 198.18.0.100 80\nbind lb vserver web s1\n",
    );
    assert!(errors.is_empty());
    let clock = engine::clock::Clock::manual();
    clock.advance(5_000);
    let (counters, _w) = Counters::new(1, 8);
    let control = Control::new(ControlSetup {
        config,
        unsupported: ctl::conf::Unsupported::Fail,
        kept_lines: Vec::new(),
        config_path: std::env::temp_dir().join("fl-ctl-drain-unused.conf"),
        max_services: 8,
        counters,
        health: Arc::new(ServiceHealth::new(8)),
        drops: Arc::new(SharedDrops::new(1)),
        clock: clock.clone(),
    })
    .unwrap();
    assert_eq!(
        control.execute("disable service s1 60").last().unwrap(),
        " Done"
    );
    let flush_from = |c: &Control| {
        c.published.load().services[0]
            .as_ref()
            .unwrap()
            .flush_from_ms
    };
    assert_eq!(
        flush_from(&control),
        Some(65_000),
        "flows flushed 60 s after the command"
    );
    let show = |c: &Control| c.execute("show service s1").join("\n");
    assert!(
        show(&control).contains("Out Of Service in 60 seconds"),
        "{}",
        show(&control)
    );
    clock.advance(15_000);
    assert!(
        show(&control).contains("Out Of Service in 45 seconds"),
        "{}",
        show(&control)
    );
}

/// Started with `--skip-unsupported`, `save ns config` writes the skipped lines back, so the
/// operator's SSL or content-switching lines survive a save, and SIGHUP replays the result.
#[test]
fn saving_keeps_the_lines_skipped_as_unsupported() {
    let dir = Scratch::new("keep");
    let conf = dir.0.join("ns.conf");
    let text = "add service s1 198.18.0.11 HTTP 80\nadd cs vserver cs1 HTTP 198.18.0.101 80\nadd lb vserver web HTTP 198.18.0.100 80\nbind lb vserver web s1\nbind cs vserver cs1 -lbvserver web\n";
    std::fs::write(&conf, text).unwrap();
    let loaded = ctl::conf::load_with(&conf, ctl::conf::Unsupported::Skip).unwrap();
    assert_eq!(loaded.skipped.len(), 2);
    let (counters, _w) = Counters::new(1, 64);
    let control = Control::new(ControlSetup {
        config: loaded.config,
        unsupported: ctl::conf::Unsupported::Skip,
        kept_lines: loaded.skipped_lines,
        config_path: conf.clone(),
        max_services: 64,
        counters,
        health: Arc::new(ServiceHealth::new(64)),
        drops: Arc::new(SharedDrops::new(1)),
        clock: engine::clock::Clock::monotonic(),
    })
    .unwrap();
    let before = control.config();
    let reply = control.execute("save ns config");
    assert_eq!(reply.last().map(|l| l.trim()), Some("Done"), "{reply:?}");
    let saved = std::fs::read_to_string(&conf).unwrap();
    assert!(
        saved.contains("add cs vserver cs1 HTTP 198.18.0.101 80\n"),
        "{saved}"
    );
    assert!(
        saved.contains("bind cs vserver cs1 -lbvserver web\n"),
        "{saved}"
    );
    control.reload_file().unwrap();
    assert_eq!(control.config(), before);
    // A second save after the reload still holds them.
    control.execute("save ns config");
    let again = std::fs::read_to_string(&conf).unwrap();
    assert!(
        again.contains("bind cs vserver cs1 -lbvserver web\n"),
        "{again}"
    );
}

/// The process's resident memory, in KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

/// A thousand idle connections, clients that never finish their line, a 10 MB line, bytes
/// that are not UTF-8: each misbehaving client gets its `ERROR:` (or just its slot), the
/// others are served, memory stays bounded and the configuration is untouched.
#[test]
fn abusive_clients_get_errors_and_others_are_still_served() {
    use std::io::Read;
    // The daemon raises its open-files limit so; so does this process, which serves here.
    assert!(
        engine::daemon::raise_fd_limit() > 5000,
        "the hard limit allows the test"
    );
    let (control, sock, stop, server, _dir) = daemon("abuse", None);
    let before = control.config();
    let rss_before = rss_kib();
    let idle: Vec<UnixStream> = (0..1000)
        .map(|_| UnixStream::connect(&sock).unwrap())
        .collect();
    // Every idle one holds a thread; a real client is still answered.
    let (mut r, mut w) = connect(&sock);
    let reply = request(&mut r, &mut w, "show lb vserver web").unwrap();
    assert_eq!(reply.last().unwrap(), " Done");
    let grown_mib = rss_kib().saturating_sub(rss_before) / 1024;
    eprintln!("1000 idle control connections: +{grown_mib} MiB resident");
    assert!(
        grown_mib < 200,
        "+{grown_mib} MiB for 1000 idle connections"
    );
    // Beyond the cap, a connection is told so.
    let more: Vec<UnixStream> = (0..engine::control::MAX_CLIENTS)
        .map(|_| UnixStream::connect(&sock).unwrap())
        .collect();
    let mut last = more.last().unwrap().try_clone().unwrap();
    last.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let mut said = String::new();
    let _ = BufReader::new(&mut last).read_line(&mut said);
    assert!(
        said.starts_with("ERROR: Too many control connections"),
        "{said:?}"
    );
    drop(more);
    drop(idle);
    // Bytes that are not UTF-8: an error, and the connection goes on.
    w.write_all(b"show \xff\xfe vserver\n").unwrap();
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert_eq!(line.trim_end(), "ERROR: Command line is not valid UTF-8");
    let reply = request(&mut r, &mut w, "show lb vserver web").unwrap();
    assert_eq!(reply.last().unwrap(), " Done");
    // A 10 MB line: refused at the limit, without reading it all into memory.
    let (mut r2, mut w2) = connect(&sock);
    let big = std::thread::spawn(move || {
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..10 {
            if w2.write_all(&chunk).is_err() {
                break;
            }
        }
    });
    let mut line = String::new();
    r2.read_line(&mut line).unwrap();
    assert!(
        line.starts_with("ERROR: Command line longer than"),
        "{line}"
    );
    big.join().unwrap();
    // A line that never ends: an error after the line timeout, and the slot is free again.
    let mut slow = UnixStream::connect(&sock).unwrap();
    slow.write_all(b"add service slow 198.18.0.9").unwrap();
    slow.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    let mut text = String::new();
    let _ = slow.read_to_string(&mut text);
    assert!(
        text.starts_with("ERROR: Command line not finished within"),
        "{text:?}"
    );
    assert_eq!(control.config(), before, "nothing was applied");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    server.join().unwrap();
}

/// A 100,000-line script as batches of 10,000 (as `fulcrumctl -f` sends it): every line
/// applied, one generation per batch; a batch failing at its 3rd line keeps the first two
/// and applies nothing after.
#[test]
fn a_hundred_thousand_line_script_applies_in_batches() {
    let (control, sock, stop, server, _dir) = daemon("batch", None);
    let (mut r, mut w) = connect(&sock);
    let lines: Vec<String> = (0..100_000u32)
        .map(|i| {
            format!(
                "add server b{i} 198.{}.{}.{}",
                18 + i / 65536,
                (i / 256) % 256,
                i % 256
            )
        })
        .collect();
    let started = std::time::Instant::now();
    for chunk in lines.chunks(ctl::proto::MAX_BATCH_LINES) {
        let chunk: Vec<&str> = chunk.iter().map(String::as_str).collect();
        let reply = ctl::proto::request_batch(&mut r, &mut w, &chunk).unwrap();
        assert_eq!(reply.last().unwrap(), " Done", "{reply:?}");
    }
    eprintln!("100,000 lines in {:?}", started.elapsed());
    assert_eq!(control.config().servers.len(), 100_000 + 1);
    let reply = ctl::proto::request_batch(
        &mut r,
        &mut w,
        &[
            "add server x1 198.18.250.1",
            "add server x2 198.18.250.2",
            "add server b7 198.18.250.3",
            "add server x4 198.18.250.4",
        ],
    )
    .unwrap();
    assert_eq!(reply[0], "#failed 3", "{reply:?}");
    assert!(
        reply[1].starts_with("ERROR: Resource already exists"),
        "{reply:?}"
    );
    let c = control.config();
    assert!(c.servers.contains_key("x2") && !c.servers.contains_key("x4"));
    // A batch of queries is refused as such; a batch too long is refused before it is read.
    let reply = ctl::proto::request_batch(&mut r, &mut w, &["show lb vserver"]).unwrap();
    assert!(
        reply
            .last()
            .unwrap()
            .contains("configuration commands only"),
        "{reply:?}"
    );
    w.write_all(b"#batch 10000000\n").unwrap();
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    assert!(line.starts_with("ERROR: A batch holds 1 to"), "{line}");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    server.join().unwrap();
}
