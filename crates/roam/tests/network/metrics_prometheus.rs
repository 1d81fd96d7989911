//! The Prometheus endpoint end to end: a real Prometheus server (Debian `prometheus`)
//! scrapes a router and two proxies every second while a talker sends a known number of
//! messages from one DDS domain to another through them; its HTTP API then answers with
//! exactly that count for the export and the import, and with rates above zero.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::*;

const T: Duration = Duration::from_secs(60);
/// Messages the counted talker sends.
const SENT: u64 = 200;

/// The address a roam process serves its metrics on (it binds port 0 and logs the port).
fn metrics_addr(p: &Proc) -> String {
    assert!(
        p.wait_log("serving metrics at /metrics", Duration::from_secs(20)),
        "{} does not serve metrics: {}",
        p.name,
        p.logs()
    );
    p.logs()
        .lines()
        .filter(|l| l.contains("serving metrics at /metrics"))
        .find_map(|l| l.split("addr=").nth(1))
        .map(|a| a.split_whitespace().next().unwrap_or(a).to_string())
        .unwrap_or_else(|| panic!("no addr= in {}", p.logs()))
}

/// A GET over HTTP/1.0 (the whole body, once the server closes); None if it cannot connect.
fn http_get(addr: &str, path: &str) -> Option<(u16, String)> {
    let addr: SocketAddr = addr.parse().expect("an address");
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let status = out.split_whitespace().nth(1)?.parse().ok()?;
    let body = out
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    Some((status, body))
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Prometheus's answer to an instant query: the value of its one series, if it has one.
fn query(prom: &str, q: &str) -> Option<f64> {
    let (status, body) = http_get(prom, &format!("/api/v1/query?query={}", percent_encode(q)))?;
    assert_eq!(status, 200, "query {q}: {body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(v["status"], "success", "{body}");
    let result = v["data"]["result"].as_array()?;
    assert!(
        result.len() <= 1,
        "query {q} matched several series: {body}"
    );
    result.first()?["value"][1].as_str()?.parse().ok()
}

/// Polls `q` until `want` holds for its value, with a deadline; returns the value.
fn wait_query(prom: &Proc, addr: &str, q: &str, want: impl Fn(f64) -> bool) -> f64 {
    let end = Instant::now() + T;
    loop {
        let v = query(addr, q);
        if let Some(v) = v.filter(|v| want(*v)) {
            return v;
        }
        assert!(
            Instant::now() < end,
            "Prometheus: {q} = {v:?} after {T:?}\n{}",
            prom.logs()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A free TCP port on loopback (bound and released; Prometheus cannot be told to pick one).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Starts Prometheus scraping `targets` (name, address) every second, its data in `dir`.
/// `setpriv --pdeathsig` kills it should the test's thread die without dropping it.
fn prometheus(dir: &Path, targets: &[(&str, &str)]) -> (Proc, String) {
    let mut yaml = String::from(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: roam\n    static_configs:\n",
    );
    for (name, addr) in targets {
        yaml += &format!("      - targets: ['{addr}']\n        labels: {{node: {name}}}\n");
    }
    let cfg = dir.join("prometheus.yml");
    std::fs::write(&cfg, yaml).unwrap();
    let data = dir.join("prometheus-data");
    let addr = format!("127.0.0.1:{}", free_port());
    let p = Proc::spawn_system(
        "prometheus",
        "setpriv",
        &[
            "--pdeathsig",
            "KILL",
            "prometheus",
            &format!("--config.file={}", cfg.display()),
            &format!("--storage.tsdb.path={}", data.display()),
            &format!("--web.listen-address={addr}"),
        ],
    );
    assert!(
        p.wait_log("Server is ready to receive web requests", T),
        "prometheus did not start (scripts/setup.sh installs it): {}",
        p.logs()
    );
    (p, addr)
}

/// Starts the counted talker and waits for "sent N".
fn counted_talker(domain: &str, topic: &str, count: u64, period: &str) -> Proc {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/counted_talker.py");
    let t = Proc::spawn_system(
        "talker",
        "python3",
        &[
            "-u",
            &script.to_string_lossy(),
            domain,
            topic,
            "hello",
            &count.to_string(),
            "--period",
            period,
        ],
    );
    let end = Instant::now() + T;
    let want = format!("sent {count}");
    while t.line(Duration::from_millis(200)).as_deref() != Some(want.as_str()) {
        assert!(Instant::now() < end, "talker did not send: {}", t.logs());
    }
    t
}

#[test]
fn prometheus_scrapes_a_router_and_two_proxies_and_counts_what_crossed() {
    let net = Net::new("metrics-prometheus");
    let (cloud, addr) = net.router_with(
        "cloud",
        "127.0.0.1:0",
        &[],
        &["--metrics-listen", "127.0.0.1:0"],
    );
    let topics = "metrics_listen: 127.0.0.1:0\n";
    let robot = net.proxy(
        "robot",
        75,
        &addr,
        &format!("{topics}exports:\n  - topic: /chatter\n    realm: test\n  - topic: /warmup\n    realm: test\n"),
    );
    let base = net.proxy(
        "base",
        76,
        &addr,
        &format!("{topics}imports:\n  - topic: /chatter\n    realm: test\n  - topic: /warmup\n    realm: test\n"),
    );
    let targets = [
        ("cloud", metrics_addr(&cloud)),
        ("robot", metrics_addr(&robot)),
        ("base", metrics_addr(&base)),
    ];
    // The endpoint itself: the scrape format, and nothing but /metrics.
    let (status, body) = http_get(&targets[1].1, "/metrics").expect("robot's endpoint");
    assert_eq!(status, 200);
    assert!(
        body.contains(r#"roam_process_info{id="robot",kind="proxy""#),
        "{body}"
    );
    assert_eq!(http_get(&targets[1].1, "/").map(|r| r.0), Some(404));

    let targets: Vec<(&str, &str)> = targets.iter().map(|(n, a)| (*n, a.as_str())).collect();
    let (prom, prom_addr) = prometheus(&net.dir, &targets);
    for (name, _) in &targets {
        wait_query(&prom, &prom_addr, &format!(r#"up{{node="{name}"}}"#), |v| {
            v == 1.0
        });
    }

    // The path is up once a warm-up topic, subscribed with /chatter, crosses end to end.
    let listener = python("listener", "listener.py", &["76", "rt/warmup"]);
    let _warmup = python("warmup", "talker.py", &["75", "rt/warmup", "warm"]);
    let end = Instant::now() + T;
    while listener
        .line(Duration::from_millis(200))
        .is_none_or(|l| !l.starts_with("data: warm"))
    {
        assert!(
            Instant::now() < end,
            "nothing crossed:\n{}\n{}",
            robot.logs(),
            base.logs()
        );
    }

    // The known load: SENT messages on /chatter, each acknowledged by the robot's proxy.
    let _talker = counted_talker("75", "rt/chatter", SENT, "0.01");
    let n = SENT as f64;
    let series = |node: &str, dir: &str| {
        format!(r#"roam_topic_messages_total{{node="{node}",topic="/chatter",direction="{dir}"}}"#)
    };
    wait_query(&prom, &prom_addr, &series("robot", "export"), |v| v == n);
    wait_query(&prom, &prom_addr, &series("base", "import"), |v| v == n);
    for (node, dir) in [("robot", "export"), ("base", "import")] {
        let rate = format!("rate({}[30s])", series(node, dir));
        wait_query(&prom, &prom_addr, &rate, |v| v > 0.0);
    }
    // The router in the middle forwarded them, and its link figures are there.
    wait_query(
        &prom,
        &prom_addr,
        r#"rate(roam_router_data_forwarded_total{node="cloud"}[30s])"#,
        |v| v > 0.0,
    );
    wait_query(
        &prom,
        &prom_addr,
        r#"roam_link_up{node="cloud",peer="robot"}"#,
        |v| v == 1.0,
    );
    wait_query(
        &prom,
        &prom_addr,
        r#"roam_link_rtt_seconds{node="cloud",peer="robot"}"#,
        |v| v > 0.0,
    );
    // Ages arrive as histograms: every imported message counted in the written stage.
    wait_query(
        &prom,
        &prom_addr,
        r#"roam_topic_age_seconds_count{node="base",topic="/chatter",stage="written"}"#,
        |v| v == n,
    );
    wait_query(
        &prom,
        &prom_addr,
        r#"roam_topic_dropped_total{node="base",topic="/chatter",cause="refused"}"#,
        |v| v == 0.0,
    );
    // The router holds no revocation list and closed nothing for one.
    wait_query(
        &prom,
        &prom_addr,
        r#"roam_revocation_list_number{node="cloud"}"#,
        |v| v == 0.0,
    );
    wait_query(
        &prom,
        &prom_addr,
        r#"roam_links_closed_by_trust_total{node="cloud",cause="revoked"}"#,
        |v| v == 0.0,
    );
    // Each process's QUIC sockets: nothing dropped for a full buffer at this load.
    for (name, _) in &targets {
        wait_query(
            &prom,
            &prom_addr,
            &format!(r#"roam_udp_receive_drops_total{{node="{name}"}}"#),
            |v| v == 0.0,
        );
    }
    // Outside Prometheus (curl, promtool: no OpenMetrics in Accept) the classic text format,
    // which promtool's linter accepts as following the naming conventions.
    for (name, addr) in &targets {
        let (status, body) = http_get(addr, "/metrics").expect("an endpoint");
        assert_eq!(status, 200);
        assert!(
            !body.contains("# EOF") && body.contains("roam_link_up"),
            "{body}"
        );
        promtool_check(name, &body);
    }
}

/// `promtool check metrics` (Debian `prometheus`) on an exposition: no parse error, no lint.
fn promtool_check(name: &str, body: &str) {
    let mut p = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool (scripts/setup.sh installs prometheus)");
    p.stdin
        .take()
        .expect("stdin")
        .write_all(body.as_bytes())
        .expect("write");
    let out = p.wait_with_output().expect("promtool");
    assert!(
        out.status.success(),
        "promtool on {name}: {}{}\n{body}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_metrics_address_that_cannot_be_bound_stops_the_router_naming_it() {
    let net = Net::new("metrics-listen-taken");
    net.issue("lonely", "router");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    let mut p = Proc::spawn(
        "lonely",
        &[
            "router".into(),
            "--id".into(),
            "lonely".into(),
            "--pki".into(),
            net.pki.clone(),
            "--listen".into(),
            "127.0.0.1:0".into(),
            "--metrics-listen".into(),
            addr.clone(),
        ],
        None,
    );
    let status = p
        .wait_exit(Duration::from_secs(10))
        .expect("the router kept running");
    assert!(!status.success());
    let logs = p.logs();
    assert!(
        logs.contains(&format!("metrics_listen {addr}: cannot listen")),
        "{logs}"
    );
}
