//! `roam demo`: roam end to end, as real processes on loopback.
//!
//! By default, the ROS 2 demo ([`super::demo_ros`]): two isolated ROS 2 networks joined by
//! proxies and a router. With `--routing-only`, the routing plane alone: a CA, identities and
//! a realm in a fresh directory, three routers in a chain
//! (r1 <- r2 <- r3, each dialing the previous one), a subscriber on r3 and a publisher on r1,
//! prints what the subscriber receives, and stops every process it started (by PID) on
//! Ctrl-C or after `--duration`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use clap::Args;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::CmdResult;

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Stop after this many seconds (0: run until Ctrl-C).
    #[arg(long, default_value_t = 15)]
    pub duration: u64,
    /// Working directory for the CA, identities and realm (default: a new temporary one).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// UDP port of the router on 127.0.0.1 (with --routing-only: PORT, PORT+1, PORT+2). Keep it
    /// clear of DDS's ports for domains 41 and 42 (17650-18010).
    #[arg(long, default_value_t = 17447)]
    pub port: u16,
    /// Messages per second from the publisher.
    #[arg(long, default_value_t = 5.0)]
    pub rate: f64,
    /// Show only the routing plane (routers, `roam pub`, `roam sub`), without ROS 2 networks.
    #[arg(long)]
    pub routing_only: bool,
}

pub(super) struct Procs(pub(super) Vec<(String, Child)>);

impl Procs {
    pub(super) async fn stop_all(&mut self) {
        for (name, child) in self.0.iter_mut().rev() {
            if let Some(pid) = child.id() {
                // SIGTERM first so each process shuts down cleanly, then make sure.
                let _ = std::process::Command::new("kill")
                    .arg(pid.to_string())
                    .status();
                if tokio::time::timeout(Duration::from_secs(3), child.wait())
                    .await
                    .is_err()
                {
                    let _ = child.kill().await;
                }
                println!("[demo] stopped {name} (pid {pid})");
            }
        }
    }
}

/// Returns after `secs` seconds (0: never) or on Ctrl-C / SIGTERM, saying which.
pub(super) async fn run_until_stopped(secs: u64) {
    let elapsed = async {
        if secs == 0 {
            std::future::pending::<()>().await
        } else {
            tokio::time::sleep(Duration::from_secs(secs)).await
        }
    };
    tokio::select! {
        _ = elapsed => println!("[demo] {secs} s elapsed"),
        _ = super::router::shutdown_signal() => println!("[demo] interrupted"),
    }
}

pub(super) fn roam(exe: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(exe);
    c.args(args).stdin(Stdio::null()).kill_on_drop(true);
    c
}

pub(super) async fn run_ok(exe: &Path, args: &[&str]) -> CmdResult {
    let out = roam(exe, args).output().await.map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "roam {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

/// Prefixes each line of a child's stream and echoes it.
pub(super) fn echo<R: tokio::io::AsyncRead + Unpin + Send + 'static>(tag: &'static str, r: R) {
    tokio::spawn(async move {
        let mut lines = BufReader::new(r).lines();
        while let Ok(Some(l)) = lines.next_line().await {
            println!("[{tag}] {l}");
        }
    });
}

pub async fn run(a: DemoArgs) -> CmdResult {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let dir = match &a.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("roam-demo-{}", std::process::id())),
    };
    if !a.routing_only {
        return super::demo_ros::run(&a, &exe, &dir).await;
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let pki = dir.join("pki");
    let pki_s = pki.to_string_lossy().to_string();
    let realm = dir.join("demo.realm");
    let realm_s = realm.to_string_lossy().to_string();
    println!(
        "[demo] setting up a CA, identities and a realm in {}",
        dir.display()
    );
    if !pki.join("ca.pem").exists() {
        run_ok(&exe, &["pki", "init", "--dir", &pki_s]).await?;
        for r in ["r1", "r2", "r3"] {
            run_ok(
                &exe,
                &["pki", "issue", r, "--dir", &pki_s, "--role", "router"],
            )
            .await?;
        }
        for c in ["robot", "cloud"] {
            run_ok(
                &exe,
                &["pki", "issue", c, "--dir", &pki_s, "--role", "client"],
            )
            .await?;
        }
    }
    if !realm.exists() {
        run_ok(&exe, &["realm", "new", "demo", "--out", &realm_s]).await?;
    }
    let addr = |i: u16| format!("127.0.0.1:{}", a.port + i);
    let mut procs = Procs(Vec::new());
    println!(
        "[demo] starting routers r1 <- r2 <- r3 on {}, {}, {}",
        addr(0),
        addr(1),
        addr(2)
    );
    for (i, r) in ["r1", "r2", "r3"].iter().enumerate() {
        let listen = addr(i as u16);
        let mut args = vec![
            "router",
            "--id",
            r,
            "--pki",
            &pki_s,
            "--listen",
            &listen,
            "--status-interval",
            "5",
        ];
        let prev;
        if i > 0 {
            prev = addr(i as u16 - 1);
            args.extend(["--connect", &prev]);
        }
        let mut child = roam(&exe, &args)
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "warn,roam::cmd::router=info".into()),
            )
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        if let Some(e) = child.stderr.take() {
            echo(["r1", "r2", "r3"][i], e);
        }
        procs.0.push((r.to_string(), child));
    }
    let topic = [
        "/chatter",
        "--type",
        "std_msgs/msg/String",
        "--realm",
        &realm_s,
        "--pki",
        &pki_s,
    ];
    let r3 = addr(2);
    let mut sub_args = vec!["sub"];
    sub_args.extend(topic);
    sub_args.extend(["--connect", &r3, "--id", "cloud"]);
    let mut sub = roam(&exe, &sub_args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    echo("sub@r3", sub.stdout.take().ok_or("no stdout")?);
    echo("sub@r3", sub.stderr.take().ok_or("no stderr")?);
    procs.0.push(("sub".into(), sub));

    let r1 = addr(0);
    let rate = a.rate.to_string();
    let mut pub_args = vec!["pub"];
    pub_args.extend(topic);
    pub_args.extend(["--connect", &r1, "--id", "robot", "--rate", &rate]);
    let mut publisher = roam(&exe, &pub_args)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    echo("pub@r1", publisher.stderr.take().ok_or("no stderr")?);
    let mut stdin = publisher.stdin.take().ok_or("no stdin")?;
    procs.0.push(("pub".into(), publisher));
    tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        for n in 1u64.. {
            let line = format!("hello from the robot, message {n}\n");
            if stdin.write_all(line.as_bytes()).await.is_err() {
                return;
            }
        }
    });

    println!("[demo] the routers see only 256-bit names and ciphertext; the subscriber prints what it opens");
    run_until_stopped(a.duration).await;
    procs.stop_all().await;
    Ok(())
}
