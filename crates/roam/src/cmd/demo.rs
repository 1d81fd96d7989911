//! `roam demo`: roam end to end, as real processes on loopback.
//!
//! By default, the ROS 2 demo ([`super::demo_ros`]): two isolated ROS 2 networks joined by
//! proxies and a router. With `--routing-only`, the routing plane alone: a CA, identities and
//! a realm in a fresh directory, three routers in a chain
//! (r1 <- r2 <- r3, each dialing the previous one), a subscriber on r3 and a publisher on r1,
//! prints what the subscriber receives, and stops every process it started (by PID) on
//! SIGINT (Ctrl-C), SIGTERM, SIGHUP (terminal closed), SIGQUIT or after `--duration`. Each
//! child is set to be killed when the demo ends, so none outlives it even if the demo is
//! killed with SIGKILL; the next demo can listen on the same ports.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use clap::Args;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::signals::Stop;
use super::CmdResult;

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Stop after this many seconds (0: run until Ctrl-C, SIGTERM, SIGHUP or SIGQUIT; every
    /// process the demo started stops with it).
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

/// Prints a line of the demo; a closed terminal (SIGHUP) must not stop the clean-up.
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($t)*);
    }};
}
pub(super) use say;

pub(super) struct Procs(pub(super) Vec<(String, Child)>);

impl Procs {
    /// SIGTERM to every process, so each shuts down cleanly, then SIGKILL to any still
    /// running after a few seconds.
    pub(super) async fn stop_all(&mut self) {
        for (_, child) in self.0.iter().rev() {
            if let Some(pid) = child.id() {
                terminate(pid);
            }
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
        for (name, child) in self.0.iter_mut().rev() {
            let Some(pid) = child.id() else { continue };
            if tokio::time::timeout_at(deadline, child.wait())
                .await
                .is_err()
            {
                let _ = child.kill().await;
                say!("[demo] killed {name} (pid {pid})");
            } else {
                say!("[demo] stopped {name} (pid {pid})");
            }
        }
    }
}

fn terminate(pid: u32) {
    #[cfg(unix)]
    if let Ok(pid) = i32::try_from(pid) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
}

/// Returns after `secs` seconds (0: never), `false`, or on a stop signal, `true`.
pub(super) async fn run_until_stopped(stop: &mut Stop, secs: u64) -> bool {
    let elapsed = async {
        if secs == 0 {
            std::future::pending::<()>().await
        } else {
            tokio::time::sleep(Duration::from_secs(secs)).await
        }
    };
    tokio::select! {
        _ = elapsed => { say!("[demo] {secs} s elapsed"); false }
        sig = stop.wait() => { say!("[demo] {sig}: stopping"); true }
    }
}

/// A command that runs `program` as a child that dies with this process, even if this
/// process is killed with SIGKILL (see [`super::child`]).
pub(super) fn child_command(exe: &Path, program: &OsStr) -> Command {
    let mut c = Command::new(exe);
    c.arg("child-of")
        .arg(std::process::id().to_string())
        .arg("--")
        .arg(program)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    c
}

pub(super) fn roam(exe: &Path, args: &[&str]) -> Command {
    let mut c = child_command(exe, exe.as_os_str());
    c.args(args);
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
            say!("[{tag}] {l}");
        }
    });
}

pub async fn run(a: DemoArgs) -> CmdResult {
    // Before any child exists: every way the demo ends must stop them all.
    let mut stop = Stop::install_with_quit()?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let dir = match &a.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("roam-demo-{}", std::process::id())),
    };
    if !a.routing_only {
        return super::demo_ros::run(&a, &exe, &dir, &mut stop).await;
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let pki = dir.join("pki");
    let pki_s = pki.to_string_lossy().to_string();
    let realm = dir.join("demo.realm");
    let realm_s = realm.to_string_lossy().to_string();
    say!(
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
    say!(
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

    say!("[demo] the routers see only 256-bit names and ciphertext; the subscriber prints what it opens");
    run_until_stopped(&mut stop, a.duration).await;
    procs.stop_all().await;
    Ok(())
}
