//! The network lab from the tests' side: `scripts/lab.sh` builds it, `fulcrumd` runs in its
//! engine namespace, clients run in its client namespace. Dropping a [`Lab`] stops the daemon
//! (by its PID) and tears the lab down. Lab tests run one at a time (they share two cores).

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

pub const VIP: &str = "198.18.0.100";

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/lab.sh")
}

fn profile(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../hw-profiles/{name}.toml"))
}

pub struct Lab {
    pub tag: String,
    pub dir: PathBuf,
    /// Where clients connect: the one-arm VIP, or the two-arm client-side VIP.
    pub vip: &'static str,
    profile: PathBuf,
    /// The fulcrumd binary `start` runs (this build's, unless a test asks for release).
    daemon_bin: PathBuf,
    daemon: Option<Child>,
    /// What the daemon prints, read as it comes (a pipe nobody reads fills up, and a daemon
    /// writing its log to it then waits forever).
    daemon_output: Vec<std::thread::JoinHandle<Vec<u8>>>,
    /// More flags for fulcrumd (`--nitro ADDR:PORT`).
    pub daemon_args: Vec<String>,
    /// Backends restarted by a test: reaped at teardown.
    restarted: std::cell::RefCell<Vec<Child>>,
    _serial: MutexGuard<'static, ()>,
}

/// The fulcrumctl binary of this build (beside this test's own directory), built if missing:
/// it belongs to the ctl package, so cargo does not build it for engine's tests.
pub fn fulcrumctl() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(|d| d.parent()).unwrap().to_owned();
    let bin = dir.join("fulcrumctl");
    if !bin.exists() {
        let release = dir.ends_with("release");
        let mut build = Command::new(env!("CARGO"));
        build
            .args(["build", "-p", "ctl", "--bin", "fulcrumctl"])
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        if release {
            build.arg("--release");
        }
        run(&mut build);
    }
    bin
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

impl Lab {
    /// One-arm: clients, VIP, SNIP and services on one port and one subnet.
    pub fn up(name: &str, backends: u32) -> Self {
        Self::build(name, backends, false, 1)
    }

    /// Two-arm: clients on fl-lb0 (198.19.0.0/24), services on fl-lb1 (198.18.0.0/24).
    pub fn up_two_arm(name: &str, backends: u32) -> Self {
        Self::build(name, backends, true, 1)
    }

    /// One-arm on a two-queue veth, two workers (`hw-profiles/lab-veth-mq.toml`).
    pub fn up_two_queues(name: &str, backends: u32) -> Self {
        Self::build(name, backends, false, 2)
    }

    fn build(name: &str, backends: u32, two_arm: bool, queues: u32) -> Self {
        let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let tag = format!("{name}{}", std::process::id() % 10_000);
        let lab = Self {
            dir: PathBuf::from(format!("/tmp/fl-lab-{tag}")),
            tag,
            vip: if two_arm { "198.19.0.100" } else { VIP },
            profile: profile(match (two_arm, queues) {
                (true, _) => "lab-veth-2arm",
                (false, 1) => "lab-veth",
                (false, _) => "lab-veth-mq",
            }),
            daemon_bin: PathBuf::from(env!("CARGO_BIN_EXE_fulcrumd")),
            daemon: None,
            daemon_output: Vec::new(),
            daemon_args: Vec::new(),
            restarted: std::cell::RefCell::new(Vec::new()),
            _serial: serial,
        };
        let arms = if two_arm { "twoarm" } else { "onearm" };
        run(Command::new("bash").arg(script()).args([
            "up",
            &lab.tag,
            &backends.to_string(),
            arms,
            &queues.to_string(),
        ]));
        lab
    }

    /// Runs the release build of fulcrumd from now on (built here if stale), for a test
    /// whose figure is a rate: a debug build is slower than the clients and servers it
    /// balances, and what it measures would be its own speed.
    pub fn use_release_build(&mut self) {
        let exe = std::env::current_exe().unwrap();
        // <target>/<profile>/deps/<test>: the target directory is three levels up.
        let target = exe.ancestors().nth(3).unwrap().to_owned();
        run(Command::new(env!("CARGO"))
            .args([
                "build",
                "--release",
                "-q",
                "-p",
                "engine",
                "--bin",
                "fulcrumd",
            ])
            .arg("--target-dir")
            .arg(&target)
            .current_dir(env!("CARGO_MANIFEST_DIR")));
        self.daemon_bin = target.join("release/fulcrumd");
    }

    /// Runs fulcrumd with another profile from now on (a variant of the lab's).
    pub fn use_profile(&mut self, profile: &std::path::Path) {
        self.profile = profile.to_owned();
    }

    /// Runs fulcrumd from now on with `hw-profiles/lab-veth.toml` where `from` is replaced
    /// by `to` (written as `name` in the lab's directory).
    pub fn use_lab_profile_with(&mut self, name: &str, from: &str, to: &str) {
        let lab_profile = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../hw-profiles/lab-veth.toml"),
        )
        .unwrap();
        assert!(lab_profile.contains(from), "{from:?} not in lab-veth.toml");
        let profile = self.dir.join(name);
        std::fs::write(&profile, lab_profile.replace(from, to)).unwrap();
        self.use_profile(&profile);
    }

    /// The running fulcrumd's PID (`ip netns exec` execs it in place).
    pub fn daemon_pid(&self) -> Option<u32> {
        self.daemon.as_ref().map(|c| c.id())
    }

    /// CPU time the running fulcrumd has used (user + system, all threads), in USER_HZ ticks
    /// (1/100 s on Linux), from /proc.
    pub fn daemon_cpu_ticks(&self) -> u64 {
        let (user, system) = self.daemon_user_and_system_ticks();
        user + system
    }

    /// fulcrumd's user and system CPU time apart, in USER_HZ ticks. On veth its system time
    /// also holds the kernel work of the namespaces it sends to (without IRQ time accounting
    /// the peers' softirq runs on, and is charged to, the sender), so only its user time is
    /// the engine's own code.
    pub fn daemon_user_and_system_ticks(&self) -> (u64, u64) {
        let pid = self.daemon_pid().expect("fulcrumd runs");
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        // Fields after the command name (which is in parentheses): utime is the 12th, stime
        // the 13th.
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
        let fields: Vec<u64> = rest
            .split_whitespace()
            .skip(1)
            .map(|f| f.parse().unwrap_or(0))
            .collect();
        (fields[10], fields[11])
    }

    /// Ticks the hypervisor has taken from this machine's cores so far (`steal` in
    /// /proc/stat). On a shared virtual machine it varies by the minute, and every rate
    /// measured on the machine with it.
    pub fn stolen_ticks() -> u64 {
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        // cpu  user nice system idle iowait irq softirq steal guest guest_nice
        stat.lines()
            .next()
            .and_then(|cpu| cpu.split_whitespace().nth(8))
            .and_then(|steal| steal.parse().ok())
            .unwrap_or(0)
    }

    /// This lab's control socket.
    pub fn socket(&self) -> PathBuf {
        self.dir.join("ctl.sock")
    }

    /// Runs fulcrumctl against this lab's daemon.
    pub fn ctl(&self, args: &[&str]) -> Output {
        Command::new(fulcrumctl())
            .arg("--socket")
            .arg(self.socket())
            .args(args)
            .output()
            .unwrap()
    }

    pub fn ns(&self, host: &str) -> String {
        format!("fl-{}-{host}", self.tag)
    }

    /// Starts fulcrumd with `config` (and `env` in its environment), without waiting.
    pub fn spawn_daemon(&mut self, config: &str, env: &[(&str, &str)]) {
        let conf = self.dir.join("ns.conf");
        std::fs::write(&conf, config).unwrap();
        let child = Command::new("ip")
            .args(["netns", "exec", &self.ns("lb")])
            .arg(&self.daemon_bin)
            .arg("--profile")
            .arg(&self.profile)
            .arg("--config")
            .arg(&conf)
            .arg("--socket")
            .arg(self.socket())
            .args(&self.daemon_args)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut child = child;
        fn drain(
            mut from: impl std::io::Read + Send + 'static,
        ) -> std::thread::JoinHandle<Vec<u8>> {
            std::thread::spawn(move || {
                let mut all = Vec::new();
                let _ = from.read_to_end(&mut all);
                all
            })
        }
        self.daemon_output = [
            child.stdout.take().map(drain),
            child.stderr.take().map(drain),
        ]
        .into_iter()
        .flatten()
        .collect();
        self.daemon = Some(child);
    }

    /// Starts fulcrumd with `config` and waits until the VIP answers on `probe_port`.
    pub fn start(&mut self, config: &str, probe_port: u16) {
        self.spawn_daemon(config, &[]);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            // Port 443 is the backends' HTTPS (self-signed: -k).
            let scheme = if probe_port == 443 { "https" } else { "http" };
            let out = self.client(&[
                "curl",
                "-sk",
                "-m",
                "1",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                &format!("{scheme}://{}:{probe_port}/", self.vip),
            ]);
            if String::from_utf8_lossy(&out.stdout) == "200" {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let log = self.stop();
        panic!("fulcrumd did not start serving: {log}");
    }

    /// Rewrites the configuration file and signals fulcrumd (SIGHUP) to apply it.
    pub fn reload(&self, config: &str) {
        std::fs::write(self.dir.join("ns.conf"), config).unwrap();
        let pid = self.daemon.as_ref().map(|c| c.id()).expect("fulcrumd runs");
        run(Command::new("kill").args(["-HUP", &pid.to_string()]));
        // The daemon polls its signal flags every 50 ms; workers switch between bursts.
        std::thread::sleep(Duration::from_millis(300));
    }

    /// Stops fulcrumd (SIGTERM to its PID) and returns what it printed.
    pub fn stop(&mut self) -> String {
        let Some(mut child) = self.daemon.take() else {
            return String::new();
        };
        let _ = Command::new("kill").arg(child.id().to_string()).status();
        let _ = child.wait();
        self.daemon_output
            .drain(..)
            .map(|reader| String::from_utf8_lossy(&reader.join().unwrap_or_default()).into_owned())
            .collect()
    }

    /// Runs a command in the client namespace.
    pub fn client(&self, args: &[&str]) -> Output {
        Command::new("ip")
            .args(["netns", "exec", &self.ns("cli")])
            .args(args)
            .output()
            .unwrap()
    }

    /// One datagram to the VIP's `port` from a fresh source port (sent again once after 3 s
    /// without an answer); the first answer, or "" after 6 s. (socat's client gives up 0.5 s after its stdin ends, too soon on a busy
    /// machine where the backend forks a shell per datagram; `head`, not bash's `read`,
    /// because `read` takes one byte per receive and a datagram is gone after one.)
    pub fn udp_ask(&self, port: u16, text: &str) -> String {
        let vip = self.vip;
        // Like any UDP client (a resolver, say), it asks again once on the same socket if no
        // answer came: same flow, same service.
        let script = format!(
            "exec 3<>/dev/udp/{vip}/{port} && echo {text} >&3 && \
             {{ timeout 3 head -n1 <&3 || {{ echo {text} >&3 && timeout 3 head -n1 <&3; }}; }}"
        );
        let out = self.client(&["bash", "-c", &script]);
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// A counter of the client namespace's TCP stack (`/proc/net/netstat` or
    /// `/proc/net/snmp`, as `nstat` names it: `TcpExtTCPSynRetrans`, `TcpRetransSegs`).
    pub fn client_tcp_counter(&self, name: &str) -> u64 {
        let out = self.client(&["cat", "/proc/net/netstat", "/proc/net/snmp"]);
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = text.lines().collect();
        // Each group is a line of names and a line of values, both led by the group's name.
        for pair in lines.windows(2) {
            let (Some((group, names)), Some((_, values))) =
                (pair[0].split_once(": "), pair[1].split_once(": "))
            else {
                continue;
            };
            let found = names
                .split_whitespace()
                .zip(values.split_whitespace())
                .find(|(field, _)| format!("{group}{field}") == name);
            if let Some((_, value)) = found {
                return value.parse().unwrap_or(0);
            }
        }
        panic!("no {name} in the client's /proc/net/netstat or /proc/net/snmp")
    }

    /// Starts a command in the client namespace in the background.
    pub fn client_spawn(&self, args: &[&str]) -> Child {
        Command::new("ip")
            .args(["netns", "exec", &self.ns("cli")])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Starts downloading `/big.bin` through the VIP at `rate` (curl's `--limit-rate`) into
    /// `out`, bounded by `max_secs`; the response headers go to the child's stdout.
    pub fn spawn_download(
        &self,
        port: u16,
        rate: &str,
        out: &std::path::Path,
        max_secs: u32,
    ) -> Child {
        let url = format!("http://{}:{port}/big.bin", self.vip);
        let secs = max_secs.to_string();
        let out = out.to_string_lossy();
        self.client_spawn(&[
            "curl",
            "-s",
            "-m",
            &secs,
            "--limit-rate",
            rate,
            "-D",
            "-",
            "-o",
            &out,
            &url,
        ])
    }

    /// Stops backend `n`'s nginx (by the PID the lab recorded).
    pub fn stop_backend(&self, n: usize) {
        let pids = std::fs::read_to_string(self.dir.join("pids")).unwrap();
        // The lab records, per backend, its nginx, socat, dnsmasq, vsftpd and snmpd.
        let pid = pids
            .lines()
            .nth((n - 1) * 5)
            .expect("backend pid")
            .trim()
            .to_owned();
        run(Command::new("kill").arg(&pid));
        for _ in 0..50 {
            if !Command::new("kill")
                .args(["-0", &pid])
                .status()
                .is_ok_and(|s| s.success())
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Starts backend `n`'s nginx again; its PID joins the lab's list (teardown stops it).
    #[allow(
        clippy::zombie_processes,
        reason = "the child is kept and reaped when the lab drops"
    )]
    pub fn start_backend(&self, n: usize) {
        let d = self.dir.join(format!("b{n}"));
        let child = Command::new("ip")
            .args(["netns", "exec", &self.ns(&format!("b{n}")), "nginx", "-e"])
            .arg(d.join("error.log"))
            .arg("-c")
            .arg(d.join("nginx.conf"))
            .args(["-g", "daemon off;"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut pids = std::fs::OpenOptions::new()
            .append(true)
            .open(self.dir.join("pids"))
            .unwrap();
        use std::io::Write;
        writeln!(pids, "{}", child.id()).unwrap();
    }

    /// Polls `show service NAME` until its state line says `state`; returns how long it took.
    pub fn wait_service_state(&self, name: &str, state: &str, limit: Duration) -> Option<Duration> {
        let start = Instant::now();
        while start.elapsed() < limit {
            let out = self.ctl(&["show", "service", name]);
            if String::from_utf8_lossy(&out.stdout)
                .lines()
                .nth(1)
                .is_some_and(|l| l.trim() == format!("State: {state}"))
            {
                return Some(start.elapsed());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let last = self.ctl(&["show", "service", name]);
        eprintln!(
            "{name} is not {state}:\n{}{}",
            String::from_utf8_lossy(&last.stdout),
            String::from_utf8_lossy(&last.stderr)
        );
        None
    }

    /// A second address for the client namespace (a second client).
    pub fn add_client_address(&self, cidr: &str) {
        run(Command::new("ip").args(["-n", &self.ns("cli"), "addr", "add", cidr, "dev", "eth0"]));
    }

    /// One request to the VIP's `port` on a new connection from the client address
    /// `source`; returns the body (the backend's name for `/`).
    pub fn curl_from(&self, source: &str, port: u16) -> String {
        let url = format!("http://{}:{port}/", self.vip);
        let out = self.client(&[
            "curl",
            "-s",
            "-m",
            "5",
            "--interface",
            source,
            "-H",
            "Connection: close",
            &url,
        ]);
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// `n` requests, each on a new connection; returns the backend names in order.
    pub fn curl_new_connections(&self, port: u16, path: &str, n: usize) -> Vec<String> {
        let url = format!("http://{}:{port}{path}", self.vip);
        let mut args = vec!["curl", "-s", "-m", "20", "-H", "Connection: close"];
        for _ in 0..n {
            args.push(&url);
        }
        let out = self.client(&args);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.stop();
        let _ = Command::new("bash")
            .arg(script())
            .args(["down", &self.tag])
            .status();
    }
}

pub fn sha256(path: &std::path::Path) -> String {
    let out = Command::new("sha256sum").arg(path).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// The backend named in a response's `X-Backend` header (`backend-2`), from curl `-D -` output.
pub fn backend_name(curl_stdout: &[u8]) -> String {
    String::from_utf8_lossy(curl_stdout)
        .to_lowercase()
        .lines()
        .find_map(|l| l.strip_prefix("x-backend: "))
        .map(|v| v.trim().to_owned())
        .unwrap_or_default()
}

/// Only the number of [`backend_name`] (`2`).
pub fn backend_number(curl_stdout: &[u8]) -> String {
    backend_name(curl_stdout)
        .trim_start_matches("backend-")
        .to_owned()
}

impl Lab {
    /// Downloads `/big.bin` (50 MB) through the VIP with curl and asserts it arrived exactly
    /// as its backend serves it.
    pub fn download_big_file_intact(&self) {
        let down = self.dir.join("down.bin");
        let out = self.client(&[
            "curl",
            "-s",
            "-m",
            "60",
            "-D",
            "-",
            "-o",
            down.to_str().unwrap(),
            &format!("http://{}/big.bin", self.vip),
        ]);
        let backend = backend_number(&out.stdout);
        assert!(!backend.is_empty(), "no X-Backend header");
        self.assert_same_as_backend_file(&down, &backend);
    }

    /// Asserts that `file` holds exactly the 50 MB file backend `number` serves.
    pub fn assert_same_as_backend_file(&self, file: &std::path::Path, number: &str) {
        let original = self.dir.join(format!("b{number}/html/big.bin"));
        assert_eq!(
            sha256(file),
            sha256(&original),
            "{} differs from backend {number}'s file",
            file.display()
        );
    }
}

pub fn count(names: &[String], name: &str) -> usize {
    names.iter().filter(|n| *n == name).count()
}
