//! `roam demo` (default): two isolated ROS 2 networks exchange a chosen topic through roam.
//!
//! Network A (DDS domain 41) has a talker on `/chatter` and another on `/private_map`; network
//! B (domain 42) has a listener on each. A's proxy exports only `/chatter`; B's proxy imports
//! both names. Both proxies link to one router. The ROS 2 nodes are Python `cyclonedds`
//! programs that are, on the wire, ROS 2 nodes on rmw_cyclonedds. What crosses is printed; the
//! private topic never does. Every process is stopped by PID on a stop signal or after
//! `--duration`, and dies with the demo whatever ends it.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use super::demo::{child_command, echo, roam, run_ok, run_until_stopped, say, DemoArgs, Procs};
use super::signals::Stop;
use super::CmdResult;

/// The Python ROS 2 stand-ins, shipped inside the binary so the demo needs no checkout.
const SCRIPTS: [(&str, &str); 3] = [
    (
        "common.py",
        include_str!("../../../roam-dds/tests/py/common.py"),
    ),
    (
        "talker.py",
        include_str!("../../../roam-dds/tests/py/talker.py"),
    ),
    (
        "listener.py",
        include_str!("../../../roam-dds/tests/py/listener.py"),
    ),
];

const DOMAIN_A: u32 = 41;
const DOMAIN_B: u32 = 42;

fn loopback_uri() -> String {
    format!(
        "<CycloneDDS><Domain>{}</Domain></CycloneDDS>",
        roam_dds::loopback_config()
    )
}

fn python(exe: &Path, py: &Path, script: &str, args: &[&str]) -> Command {
    let mut c = child_command(exe, OsStr::new("python3"));
    c.arg("-u").arg(py.join(script)).args(args);
    // Errors go to the demo's own stderr, so a node that fails says why.
    c.env("CYCLONEDDS_URI", loopback_uri())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    c
}

/// A ROS 2 stand-in of the demo: its name, script, arguments, and for listeners the tag and
/// counter of what they receive.
type Node<'a> = (
    &'a str,
    &'a str,
    Vec<&'a str>,
    Option<(&'static str, Arc<AtomicU64>)>,
);

/// Echoes a listener's lines with a tag and counts them.
fn count_lines(tag: &'static str, r: tokio::process::ChildStdout, n: Arc<AtomicU64>) {
    tokio::spawn(async move {
        let mut lines = BufReader::new(r).lines();
        while let Ok(Some(l)) = lines.next_line().await {
            if l.starts_with("data:") {
                n.fetch_add(1, Ordering::Relaxed);
                say!("[{tag}] {l}");
            }
        }
    });
}

pub async fn run(a: &DemoArgs, exe: &Path, dir: &Path, stop: &mut Stop) -> CmdResult {
    let check = Command::new("python3")
        .args(["-c", "import cyclonedds"])
        .output()
        .await;
    if !check.is_ok_and(|o| o.status.success()) {
        return Err(
            "the ROS 2 demo needs Python cyclonedds (run scripts/setup.sh, or `make demo`); \
                    `roam demo --routing-only` shows the routing plane without it"
                .into(),
        );
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let py = dir.join("py");
    std::fs::create_dir_all(&py).map_err(|e| e.to_string())?;
    for (name, text) in SCRIPTS {
        std::fs::write(py.join(name), text).map_err(|e| e.to_string())?;
    }
    let pki = dir.join("pki");
    let pki_s = pki.to_string_lossy().to_string();
    let realm = dir.join("demo.realm");
    say!("[demo] a CA, identities and a realm in {}", dir.display());
    if !pki.join("ca.pem").exists() {
        run_ok(exe, &["pki", "init", "--dir", &pki_s]).await?;
        for id in ["cloud", "robot", "base"] {
            run_ok(
                exe,
                &["pki", "issue", id, "--dir", &pki_s, "--role", "router"],
            )
            .await?;
        }
    }
    if !realm.exists() {
        run_ok(
            exe,
            &["realm", "new", "demo", "--out", &realm.to_string_lossy()],
        )
        .await?;
    }
    let router_addr = format!("127.0.0.1:{}", a.port);
    let proxy_yaml = |id: &str, domain: u32, body: &str| {
        format!(
            "id: {id}\npki: {pki_s}\nupstream: [{router_addr}]\ndds: {{domain: {domain}, interfaces: [lo], peers: [127.0.0.1]}}\nrealms: {{demo: {}}}\n{body}",
            realm.display()
        )
    };
    let robot_cfg = dir.join("robot.yaml");
    let base_cfg = dir.join("base.yaml");
    std::fs::write(
        &robot_cfg,
        proxy_yaml(
            "robot",
            DOMAIN_A,
            "exports:\n  - topic: /chatter\n    realm: demo\n",
        ),
    )
    .map_err(|e| e.to_string())?;
    std::fs::write(
        &base_cfg,
        proxy_yaml("base", DOMAIN_B, "imports:\n  - topic: /chatter\n    realm: demo\n  - topic: /private_map\n    realm: demo\n"),
    )
    .map_err(|e| e.to_string())?;

    let mut procs = Procs(Vec::new());
    let log = std::env::var("RUST_LOG")
        .unwrap_or_else(|_| "warn,roam_proxy=info,roam::proxy_run=info".into());
    say!("[demo] router on {router_addr}; proxy A on DDS domain {DOMAIN_A} exports /chatter only; proxy B on domain {DOMAIN_B} imports /chatter and /private_map");
    let mut router = roam(
        exe,
        &[
            "router",
            "--id",
            "cloud",
            "--pki",
            &pki_s,
            "--listen",
            &router_addr,
            "--status-interval",
            "0",
        ],
    )
    .env("RUST_LOG", &log)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .map_err(|e| e.to_string())?;
    echo("router", router.stderr.take().ok_or("no stderr")?);
    // The router prints its address once it listens; without it there is no demo.
    let mut out = BufReader::new(router.stdout.take().ok_or("no stdout")?).lines();
    let listening = tokio::time::timeout(std::time::Duration::from_secs(10), out.next_line()).await;
    procs.0.push(("router".into(), router));
    if !matches!(listening, Ok(Ok(Some(ref l))) if l.starts_with("listening quic")) {
        procs.stop_all().await;
        return Err(format!(
            "the router could not listen on {router_addr} (see its log above); try another --port"
        ));
    }
    for (tag, cfg) in [("proxy A", &robot_cfg), ("proxy B", &base_cfg)] {
        let mut p = roam(exe, &["proxy", "-c", &cfg.to_string_lossy()])
            .env("RUST_LOG", &log)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        echo(tag, p.stderr.take().ok_or("no stderr")?);
        procs.0.push((tag.into(), p));
    }
    let (a_s, b_s) = (DOMAIN_A.to_string(), DOMAIN_B.to_string());
    let period = (1.0 / a.rate.max(0.1)).to_string();
    let crossed = Arc::new(AtomicU64::new(0));
    let leaked = Arc::new(AtomicU64::new(0));
    let nodes: [Node; 4] = [
        (
            "talker@A",
            "talker.py",
            vec![
                &a_s,
                "rt/chatter",
                "hello from network A, message",
                "--period",
                &period,
            ],
            None,
        ),
        (
            "private talker@A",
            "talker.py",
            vec![
                &a_s,
                "rt/private_map",
                "secret map tile",
                "--period",
                &period,
            ],
            None,
        ),
        (
            "listener@B",
            "listener.py",
            vec![&b_s, "rt/chatter"],
            Some(("listener@B", crossed.clone())),
        ),
        (
            "private listener@B",
            "listener.py",
            vec![&b_s, "rt/private_map"],
            Some(("LEAK private listener@B", leaked.clone())),
        ),
    ];
    for (name, script, args, counter) in nodes {
        let mut cmd = python(exe, &py, script, &args);
        if counter.is_none() {
            // Talkers print only "ready"; a closed pipe would kill them.
            cmd.stdout(Stdio::null());
        }
        let mut c = cmd.spawn().map_err(|e| format!("python3: {e}"))?;
        if let Some((tag, n)) = counter {
            count_lines(tag, c.stdout.take().ok_or("no stdout")?, n);
        }
        procs.0.push((name.into(), c));
    }
    say!("[demo] routers see only 256-bit names and ciphertext; Ctrl-C to stop");
    let interrupted = run_until_stopped(stop, a.duration).await;
    procs.stop_all().await;
    let (c, l) = (
        crossed.load(Ordering::Relaxed),
        leaked.load(Ordering::Relaxed),
    );
    say!("[demo] /chatter: {c} messages crossed from network A to network B");
    say!("[demo] /private_map: {l} messages crossed (not exported, so none should)");
    // Stopped by a signal, possibly before anything could cross: only a leak is a failure.
    if l > 0 || (c == 0 && !interrupted) {
        return Err("the demo did not behave as expected".into());
    }
    Ok(())
}
