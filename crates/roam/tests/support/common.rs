//! End-to-end harness: real `roam` processes on loopback, each stopped by PID when dropped.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const ROAM: &str = env!("CARGO_BIN_EXE_roam");

/// A started process and the lines it printed.
pub struct Proc {
    pub name: String,
    child: Child,
    stdout: mpsc::Receiver<String>,
    /// Every stderr line so far (logs).
    pub stderr: Arc<Mutex<Vec<String>>>,
    /// Set when the stderr pipe reached end of file.
    stderr_closed: Arc<std::sync::atomic::AtomicBool>,
}

impl Proc {
    pub fn spawn(name: &str, args: &[String], stdin: Option<Stdio>) -> Proc {
        Self::spawn_with(name, ROAM, args, stdin)
    }

    /// Starts roam as a machine without a ROS installation runs it (no AMENT_PREFIX_PATH).
    pub fn spawn_without_ament(name: &str, args: &[String]) -> Proc {
        let mut cmd = Command::new(ROAM);
        cmd.env_remove("AMENT_PREFIX_PATH");
        Self::spawn_cmd(name, cmd, args, None)
    }

    /// Starts another program (e.g. `ip netns exec NS roam ...`, which execs roam in place).
    pub fn spawn_program(name: &str, program: &str, args: &[String]) -> Proc {
        Self::spawn_with(name, program, args, None)
    }

    /// Python peers must load the CycloneDDS bundled with their wheel, not the one cargo
    /// points LD_LIBRARY_PATH at for cyclors' build (another build, and they would not
    /// discover roam's participants).
    fn spawn_python(name: &str, args: &[String]) -> Proc {
        let mut cmd = Command::new("python3");
        cmd.env_remove("LD_LIBRARY_PATH");
        Self::spawn_cmd(name, cmd, args, None)
    }

    /// A system program with its own CycloneDDS (e.g. Debian's ddsperf): it must not load the
    /// cyclors build that cargo puts on LD_LIBRARY_PATH.
    pub fn spawn_system(name: &str, program: &str, args: &[&str]) -> Proc {
        let mut cmd = Command::new(program);
        cmd.env_remove("LD_LIBRARY_PATH");
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        Self::spawn_cmd(name, cmd, &args, None)
    }

    fn spawn_with(name: &str, program: &str, args: &[String], stdin: Option<Stdio>) -> Proc {
        Self::spawn_cmd(name, Command::new(program), args, stdin)
    }

    /// `roam` with `CYCLONEDDS_URI` set to `uri` instead of the tests' loopback one.
    pub fn spawn_with_cyclonedds_uri(name: &str, args: &[String], uri: &str) -> Proc {
        let mut cmd = Command::new(ROAM);
        cmd.env("CYCLONEDDS_URI", uri);
        Self::spawn_cmd(name, cmd, args, None)
    }

    fn spawn_cmd(name: &str, mut cmd: Command, args: &[String], stdin: Option<Stdio>) -> Proc {
        // DDS peers (Python cyclonedds, roam proxies) stay on loopback in tests.
        if !cmd.get_envs().any(|(k, _)| k == "CYCLONEDDS_URI") {
            cmd.env(
                "CYCLONEDDS_URI",
                format!(
                    "<CycloneDDS><Domain>{}</Domain></CycloneDDS>",
                    roam_dds::loopback_config()
                ),
            );
        }
        let mut child = cmd
            .args(args)
            .env(
                "RUST_LOG",
                std::env::var("ROAM_TEST_RUST_LOG")
                    .unwrap_or_else(|_| "info,quinn=warn,rustls=warn".into()),
            )
            .stdin(stdin.unwrap_or(Stdio::null()))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn roam");
        let (tx, rx) = mpsc::channel();
        let out = child.stdout.take().expect("stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let err = child.stderr.take().expect("stderr");
        let sink = stderr.clone();
        let tag = name.to_string();
        let stderr_closed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let closed = stderr_closed.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if std::env::var_os("ROAM_TEST_LOG").is_some() {
                    eprintln!("[{tag}] {line}");
                }
                sink.lock().unwrap().push(line);
            }
            closed.store(true, std::sync::atomic::Ordering::Release);
        });
        Proc {
            name: name.into(),
            child,
            stdout: rx,
            stderr,
            stderr_closed,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Next stdout line, or None after `timeout`.
    pub fn line(&self, timeout: Duration) -> Option<String> {
        self.stdout.recv_timeout(timeout).ok()
    }

    /// Waits until a stderr line contains `needle`.
    pub fn wait_log(&self, needle: &str, timeout: Duration) -> bool {
        let end = Instant::now() + timeout;
        while Instant::now() < end {
            if self
                .stderr
                .lock()
                .unwrap()
                .iter()
                .any(|l| l.contains(needle))
            {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    pub fn logs(&self) -> String {
        self.stderr.lock().unwrap().join("\n")
    }

    pub fn stdin(&mut self) -> Option<std::process::ChildStdin> {
        self.child.stdin.take()
    }

    /// Waits for the process to exit by itself.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let end = Instant::now() + timeout;
        while Instant::now() < end {
            if let Ok(Some(s)) = self.child.try_wait() {
                // The exit can be seen before the reader thread has taken the
                // last lines from the pipe: wait for its end of file so that
                // `logs()` holds everything the process wrote.
                while !self
                    .stderr_closed
                    .load(std::sync::atomic::Ordering::Acquire)
                    && Instant::now() < end
                {
                    std::thread::sleep(Duration::from_millis(5));
                }
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Kills the process (SIGKILL, by PID) and reaps it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A deployment: a CA, identities and a realm in a fresh directory.
pub struct Net {
    pub dir: PathBuf,
    pub pki: String,
    pub realm: String,
}

pub fn roam_ok(args: &[&str]) -> String {
    let out = Command::new(ROAM).args(args).output().expect("run roam");
    assert!(
        out.status.success(),
        "roam {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

impl Net {
    pub fn new(test: &str) -> Net {
        let dir = std::env::temp_dir().join(format!("roam-e2e-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let pki = dir.join("pki").to_string_lossy().into_owned();
        roam_ok(&["pki", "init", "--dir", &pki]);
        let realm = dir.join("test.realm").to_string_lossy().into_owned();
        roam_ok(&["realm", "new", "test", "--out", &realm]);
        Net { dir, pki, realm }
    }

    pub fn issue(&self, name: &str, role: &str) {
        if !Path::new(&self.pki).join(format!("{name}.pem")).exists() {
            roam_ok(&["pki", "issue", name, "--dir", &self.pki, "--role", role]);
        }
    }

    /// Issues each `(name, role)` identity and lists it as a member of the realm file;
    /// `admin` may also start the realm's epochs (`roam realm add-member --admin`).
    pub fn members(&self, members: &[(&str, &str)], admin: &str) {
        for (m, role) in members {
            self.issue(m, role);
            let mut args = vec![
                "realm",
                "add-member",
                m,
                "--realm",
                &self.realm,
                "--pki",
                &self.pki,
            ];
            if *m == admin {
                args.push("--admin");
            }
            roam_ok(&args);
        }
    }

    /// Starts a router listening on `listen` (use "127.0.0.1:0" for any port) and returns it
    /// with the QUIC address it bound.
    pub fn router(&self, id: &str, listen: &str, connect: &[String]) -> (Proc, String) {
        self.router_with(id, listen, connect, &[])
    }

    pub fn router_with(
        &self,
        id: &str,
        listen: &str,
        connect: &[String],
        extra: &[&str],
    ) -> (Proc, String) {
        self.issue(id, "router");
        self.router_in(&self.pki, id, listen, connect, extra)
    }

    /// A PKI directory of identity `name`'s own (`ca.pem`, `NAME.pem`, `NAME.key`), as on a
    /// machine of its own: what reaches it comes over links, not through the CA's directory.
    pub fn own_pki(&self, name: &str, role: &str) -> String {
        self.issue(name, role);
        let dir = self.dir.join(format!("pki-{name}"));
        std::fs::create_dir_all(&dir).unwrap();
        for file in [
            "ca.pem".to_string(),
            format!("{name}.pem"),
            format!("{name}.key"),
        ] {
            std::fs::copy(Path::new(&self.pki).join(&file), dir.join(&file)).unwrap();
        }
        dir.to_string_lossy().into_owned()
    }

    /// Starts router `id` with its identity in `pki` (see [`Net::router`]).
    pub fn router_in(
        &self,
        pki: &str,
        id: &str,
        listen: &str,
        connect: &[String],
        extra: &[&str],
    ) -> (Proc, String) {
        let mut args: Vec<String> = [
            "router",
            "--id",
            id,
            "--pki",
            pki,
            "--listen",
            listen,
            "--idle-timeout-ms",
            "3000",
            "--status-interval",
            "0",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for c in connect {
            args.push("--connect".into());
            args.push(c.clone());
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        let p = Proc::spawn(id, &args, None);
        let mut addr = None;
        let end = Instant::now() + Duration::from_secs(10);
        while addr.is_none() && Instant::now() < end {
            if let Some(l) = p.line(Duration::from_millis(200)) {
                addr = l.strip_prefix("listening quic ").map(str::to_string);
            }
        }
        let addr = addr.unwrap_or_else(|| panic!("router {id} did not start: {}", p.logs()));
        (p, addr)
    }

    fn endpoint_args(
        &self,
        cmd: &str,
        topic: &str,
        id: &str,
        router: &str,
        extra: &[&str],
    ) -> Vec<String> {
        self.issue(id, "client");
        self.endpoint_args_in(&self.pki, cmd, topic, id, router, extra)
    }

    /// `roam pub` / `roam sub` arguments for identity `id` in PKI directory `pki`.
    pub fn endpoint_args_in(
        &self,
        pki: &str,
        cmd: &str,
        topic: &str,
        id: &str,
        router: &str,
        extra: &[&str],
    ) -> Vec<String> {
        let mut a: Vec<String> = [
            cmd,
            topic,
            "--type",
            "test_msgs/msg/Blob",
            "--realm",
            &self.realm,
            "--pki",
            pki,
            "--id",
            id,
            "--connect",
            router,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    }

    pub fn sub(&self, topic: &str, id: &str, router: &str, extra: &[&str]) -> Proc {
        Proc::spawn(
            &format!("sub-{id}"),
            &self.endpoint_args("sub", topic, id, router, extra),
            None,
        )
    }

    pub fn publisher(&self, topic: &str, id: &str, router: &str, extra: &[&str]) -> Proc {
        Proc::spawn(
            &format!("pub-{id}"),
            &self.endpoint_args("pub", topic, id, router, extra),
            None,
        )
    }

    pub fn publisher_stdin(&self, topic: &str, id: &str, router: &str, extra: &[&str]) -> Proc {
        Proc::spawn(
            &format!("pub-{id}"),
            &self.endpoint_args("pub", topic, id, router, extra),
            Some(Stdio::piped()),
        )
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A received message line: `seq=.. latency_us=.. size=.. (text=..|sha256=..)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Msg {
    pub seq: u64,
    pub size: usize,
    pub body: String,
}

pub fn parse_line(l: &str) -> Option<Msg> {
    let mut seq = None;
    let mut size = None;
    let mut body = String::new();
    for part in l.split(' ') {
        if let Some(v) = part.strip_prefix("seq=") {
            seq = v.parse().ok();
        } else if let Some(v) = part.strip_prefix("size=") {
            size = v.parse().ok();
        } else if part.starts_with("sha256=") {
            body = part.to_string();
        }
    }
    if let Some(i) = l.find(" text=") {
        body = l[i + 1..].to_string();
    }
    Some(Msg {
        seq: seq?,
        size: size?,
        body,
    })
}

/// Collects `n` messages from a subscriber, or as many as arrive before `timeout`.
pub fn collect(sub: &Proc, n: usize, timeout: Duration) -> Vec<Msg> {
    let end = Instant::now() + timeout;
    let mut out = Vec::new();
    while out.len() < n && Instant::now() < end {
        if let Some(l) = sub.line(Duration::from_millis(100)) {
            if let Some(m) = parse_line(&l) {
                out.push(m);
            }
        }
    }
    out
}

/// The digest `roam sub` prints for the generated payload of message `seq`.
pub fn expected_digest(seq: u64, size: usize) -> String {
    format!(
        "sha256={}",
        roam::payload::sha256_hex(&roam::payload::pattern(seq, size))
    )
}

/// Waits until the subscriber's router has it subscribed (its log says so).
pub fn wait_subscribed(sub: &Proc) {
    assert!(
        sub.wait_log("subscribed through", Duration::from_secs(10)),
        "subscriber never connected: {}",
        sub.logs()
    );
}

impl Proc {
    /// Asks the process to stop (SIGTERM, by PID) and waits for it, so it prints its summary.
    pub fn terminate(&mut self) -> Option<std::process::ExitStatus> {
        let _ = Command::new("kill").arg(self.pid().to_string()).status();
        self.wait_exit(Duration::from_secs(10))
    }
}

/// The Python ROS 2 stand-ins (PyPI cyclonedds): talker.py, listener.py.
pub fn python(name: &str, script: &str, args: &[&str]) -> Proc {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../roam-dds/tests/py");
    let mut a = vec![
        "-u".to_string(),
        dir.join(script).to_string_lossy().into_owned(),
    ];
    a.extend(args.iter().map(|s| s.to_string()));
    let p = Proc::spawn_python(name, &a);
    assert_eq!(
        p.line(Duration::from_secs(20)).as_deref(),
        Some("ready"),
        "{name} did not start (run scripts/setup.sh): {}",
        p.logs()
    );
    p
}

/// A router and two proxies linked to it: the server side's (its domain and YAML body, e.g.
/// `exports:`) and the client side's.
pub struct ProxyPair {
    pub net: Net,
    /// The router's address, for more members.
    pub addr: String,
    _router: Proc,
    pub server_side: Proc,
    pub client_side: Proc,
}

impl ProxyPair {
    pub fn new(test: &str, port: u16, server: (u32, &str), client: (u32, &str)) -> ProxyPair {
        let net = Net::new(test);
        let (router, addr) = net.router("cloud", &format!("127.0.0.1:{port}"), &[]);
        let server_side = net.proxy("server-side", server.0, &addr, server.1);
        let client_side = net.proxy("client-side", client.0, &addr, client.1);
        ProxyPair {
            net,
            addr,
            _router: router,
            server_side,
            client_side,
        }
    }

    /// Both proxies' logs, for a failure's message.
    pub fn logs(&self) -> String {
        format!(
            "\n--- server-side proxy:\n{}\n--- client-side proxy:\n{}",
            self.server_side.logs(),
            self.client_side.logs()
        )
    }
}

impl Net {
    /// Starts `roam proxy` for DDS domain `domain`, linked to `router`, with the given
    /// `exports:`/`imports:` YAML.
    pub fn proxy(&self, id: &str, domain: u32, router: &str, body: &str) -> Proc {
        self.proxy_with(id, domain, "", router, body)
    }

    /// [`Self::proxy`] with more `dds:` settings (`dds`, e.g. `ros_distro: humble`).
    pub fn proxy_with(&self, id: &str, domain: u32, dds: &str, router: &str, body: &str) -> Proc {
        self.issue(id, "router");
        let dds = if dds.is_empty() {
            String::new()
        } else {
            format!(", {dds}")
        };
        let yaml = format!(
            "id: {id}\npki: {}\nupstream: [{router}]\ndds: {{domain: {domain}, interfaces: [lo], peers: [127.0.0.1]{dds}}}\nrealms: {{test: {}}}\nlink: {{idle_timeout_ms: 1500}}\n{body}",
            self.pki, self.realm
        );
        let path = self.dir.join(format!("{id}.yaml"));
        std::fs::write(&path, &yaml).unwrap();
        let _ = std::fs::write("/tmp/last-proxy.yaml", &yaml);
        Proc::spawn(
            id,
            &[
                "proxy".to_string(),
                "-c".to_string(),
                path.to_string_lossy().into_owned(),
            ],
            None,
        )
    }
}

/// What tests/py/read_mcap.py prints for an MCAP file (the `mcap` package and `rosbags`
/// reading it back), all lines up to its "done".
pub fn read_mcap(path: &Path) -> Vec<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/read_mcap.py");
    let reader = Proc::spawn_system(
        "read-mcap",
        "python3",
        &["-u", script.to_str().unwrap(), path.to_str().unwrap()],
    );
    let mut lines = Vec::new();
    let end = std::time::Instant::now() + Duration::from_secs(40);
    while std::time::Instant::now() < end {
        match reader.line(Duration::from_millis(100)) {
            Some(l) if l == "done" => return lines,
            Some(l) => lines.push(l),
            None => {}
        }
    }
    panic!("read_mcap.py did not finish: {lines:?}\n{}", reader.logs());
}

/// (N, publish time) of each message "PREFIX N" on `topic` in read_mcap.py's output, whose
/// "mcap-time TOPIC LOG PUBLISH" line follows each "mcap-msg TOPIC JSON" line.
pub fn publish_times(lines: &[String], topic: &str, prefix: &str) -> Vec<(u64, u64)> {
    let (msg, time) = (format!("mcap-msg {topic} "), format!("mcap-time {topic} "));
    lines
        .windows(2)
        .filter_map(|w| {
            let v: serde_json::Value = serde_json::from_str(w[0].strip_prefix(&msg)?).ok()?;
            let n = v["data"].as_str()?.strip_prefix(prefix)?.parse().ok()?;
            let publish = w[1].strip_prefix(&time)?.split(' ').nth(1)?.parse().ok()?;
            Some((n, publish))
        })
        .collect()
}

/// The next stdout line of `p` starting with `prefix` (others are skipped), within `timeout`.
pub fn wait_line(p: &Proc, prefix: &str, timeout: Duration) -> Option<String> {
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        if let Some(l) = p.line(Duration::from_millis(100)) {
            if l.starts_with(prefix) {
                return Some(l);
            }
        }
    }
    None
}

/// The most samples a proxy's status lines report written (`dir` "import") or sealed
/// ("export") for `topic` so far.
pub fn samples_logged(p: &Proc, dir: &str, topic: &str) -> u64 {
    let needle = format!("topic={topic} ");
    p.stderr
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.contains("roam::stats") && l.contains(dir) && l.contains(&needle))
        .filter_map(|l| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix("samples="))
                .and_then(|v| v.parse().ok())
        })
        .max()
        .unwrap_or(0)
}

/// Waits (up to 40 s) until an importing proxy has written at least `n` samples of `topic`
/// to its domain.
pub fn wait_imported(p: &Proc, topic: &str, n: u64) {
    let end = Instant::now() + Duration::from_secs(40);
    while samples_logged(p, "import", topic) < n {
        assert!(
            Instant::now() < end,
            "{topic}: fewer than {n} samples imported: {}",
            p.logs()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every stdout line of `p` starting with `prefix` within `timeout`, stopping early once `n`
/// arrived (others are skipped).
pub fn lines(p: &Proc, prefix: &str, n: usize, timeout: Duration) -> Vec<String> {
    let end = Instant::now() + timeout;
    let mut out = Vec::new();
    while out.len() < n && Instant::now() < end {
        if let Some(l) = p.line(Duration::from_millis(100)) {
            if l.starts_with(prefix) {
                out.push(l);
            }
        }
    }
    out
}
