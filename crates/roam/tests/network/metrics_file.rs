//! The metrics file end to end: a router and two proxies (real processes, real DDS peers in
//! two domains) each keep their latest snapshot in a file; the files appear, parse, and show
//! the link and topic counters moving while a talker's messages cross, and the final one is
//! written at a clean exit.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::*;
use roam_edge::metrics::{Direction, Link, MetricsFile, ProcessKind, Snapshot, Topic};

const T: Duration = Duration::from_secs(30);

/// Polls `path` until its snapshot satisfies `want`, with a deadline.
fn wait_snapshot(p: &Proc, path: &Path, what: &str, want: impl Fn(&Snapshot) -> bool) -> Snapshot {
    let end = Instant::now() + T;
    loop {
        let last = match MetricsFile::read(path) {
            Ok(s) if want(&s) => return s,
            Ok(s) => format!("{s:?}"),
            Err(e) => e.to_string(),
        };
        assert!(
            Instant::now() < end,
            "{}: {what} not seen in {} within {T:?}; last: {last}\n{}",
            p.name,
            path.display(),
            p.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn link<'a>(s: &'a Snapshot, peer: &str) -> Option<&'a Link> {
    s.links.iter().find(|l| l.peer == peer && !l.closed)
}

fn topic<'a>(s: &'a Snapshot, name: &str, dir: Direction) -> Option<&'a Topic> {
    s.topics
        .iter()
        .find(|t| t.name == name && t.direction == dir)
}

fn router_with_file(net: &Net, id: &str, metrics: &Path) -> (Proc, String) {
    net.issue(id, "router");
    let yaml = format!(
        "id: {id}\npki: {}\nlisten: 127.0.0.1:0\nstatus_interval_s: 1\nmetrics_file: {}\n",
        net.pki,
        metrics.display()
    );
    let cfg = net.dir.join(format!("{id}.yaml"));
    std::fs::write(&cfg, yaml).unwrap();
    let p = Proc::spawn(
        id,
        &["router".into(), "-c".into(), cfg.display().to_string()],
        None,
    );
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(a) = p
            .line(Duration::from_millis(200))
            .and_then(|l| l.strip_prefix("listening quic ").map(str::to_string))
        {
            return (p, a);
        }
        assert!(Instant::now() < end, "router did not start: {}", p.logs());
    }
}

#[test]
fn routers_and_proxies_keep_a_snapshot_that_moves_with_the_traffic() {
    let net = Net::new("metrics-file");
    let file = |id: &str| -> PathBuf { net.dir.join(format!("{id}.metrics.json")) };
    let (cloud, addr) = router_with_file(&net, "cloud", &file("cloud"));
    let proxy = |id: &str, domain, body: &str| {
        let body = format!(
            "status_interval_s: 1\nmetrics_file: {}\n{body}",
            file(id).display()
        );
        net.proxy(id, domain, &addr, &body)
    };
    let robot = proxy(
        "robot",
        71,
        "exports:\n  - topic: /chatter\n    realm: test\n",
    );
    let mut base = proxy(
        "base",
        72,
        "imports:\n  - topic: /chatter\n    realm: test\n",
    );
    let _talker = python("talker", "talker.py", &["71", "rt/chatter", "hello"]);
    let listener = python("listener", "listener.py", &["72", "rt/chatter"]);

    // The proxies write a first snapshot as they start: they are who they say.
    let s = wait_snapshot(&robot, &file("robot"), "a snapshot", |_| true);
    assert_eq!(s.version, 1);
    assert_eq!(s.process.kind, ProcessKind::Proxy);
    assert_eq!(
        (s.process.id.as_str(), s.process.pid),
        ("robot", robot.pid())
    );
    assert!(s.process.snapshot_time_us >= s.process.start_time_us);
    assert!(s.routing.is_some() && s.admission.is_some());

    let end = Instant::now() + T;
    while listener
        .line(Duration::from_millis(200))
        .is_none_or(|l| !l.starts_with("data: hello"))
    {
        assert!(
            Instant::now() < end,
            "nothing crossed:\n{}\n{}",
            robot.logs(),
            base.logs()
        );
    }

    // Every counter on the path moves: the export, the router's links in and out, the
    // import; and the ages come with histograms that hold every count.
    let exported = |s: &Snapshot| topic(s, "/chatter", Direction::Export).map_or(0, |t| t.samples);
    let imported = |s: &Snapshot| topic(s, "/chatter", Direction::Import).map_or(0, |t| t.samples);
    let from_robot = |s: &Snapshot| link(s, "robot").map_or(0, |l| l.frames_in);
    let to_base = |s: &Snapshot| link(s, "base").map_or(0, |l| l.frames_out);
    let r1 = wait_snapshot(&robot, &file("robot"), "exports", |s| exported(s) > 0);
    let c1 = wait_snapshot(&cloud, &file("cloud"), "data from robot to base", |s| {
        from_robot(s) > 0 && to_base(s) > 0
    });
    let b1 = wait_snapshot(&base, &file("base"), "imports", |s| imported(s) > 0);
    let r2 = wait_snapshot(&robot, &file("robot"), "more exports", |s| {
        exported(s) > exported(&r1)
    });
    let c2 = wait_snapshot(&cloud, &file("cloud"), "more data", |s| {
        from_robot(s) > from_robot(&c1) && to_base(s) > to_base(&c1)
    });
    let b2 = wait_snapshot(&base, &file("base"), "more imports", |s| {
        imported(s) > imported(&b1)
    });

    let t = topic(&r2, "/chatter", Direction::Export).unwrap();
    assert!(t.age_in.count > 0 && t.age_out.is_none(), "{t:?}");
    assert_eq!(t.drops.failed, 0);
    let up = link(&r2, "cloud").expect("the robot's link to the cloud");
    assert!(up.frames_out > 0 && up.bytes_out > 0, "{up:?}");
    let l = link(&c2, "robot").unwrap();
    assert!(
        l.path.as_ref().is_some_and(|p| p.sent_packets > 0),
        "QUIC figures: {l:?}"
    );
    assert!(l.data_age.count > 0);
    assert_eq!(
        l.data_age.buckets.iter().map(|b| b.count).sum::<u64>(),
        l.data_age.count
    );
    assert_eq!(c2.process.kind, ProcessKind::Router);
    assert!(c2.routing.as_ref().unwrap().data_forwarded > 0);
    assert!(c2.topics.is_empty());
    let t = topic(&b2, "/chatter", Direction::Import).unwrap();
    let written = t.age_out.as_ref().expect("an import's written ages");
    assert!(t.age_in.count > 0 && written.count > 0, "{t:?}");
    assert_eq!(
        written.buckets.iter().map(|b| b.count).sum::<u64>(),
        written.count
    );
    assert_eq!(t.drops.refused, 0);
    if cfg!(target_os = "linux") {
        assert!(b2.process.rss_bytes.is_some_and(|b| b > 0));
        assert!(b2.process.cpu_time_us.is_some());
    }

    // A clean exit leaves the final snapshot, at least as far along as any before it, and
    // the status lines are still logged from it.
    let before = MetricsFile::read(&file("base")).unwrap();
    assert!(
        base.terminate().is_some_and(|s| s.success()),
        "{}",
        base.logs()
    );
    let last = MetricsFile::read(&file("base")).unwrap();
    assert!(last.process.snapshot_time_us >= before.process.snapshot_time_us);
    assert!(imported(&last) >= imported(&before));
    assert!(
        base.logs()
            .contains("roam::stats: import topic=/chatter samples="),
        "{}",
        base.logs()
    );
}

#[test]
fn a_metrics_file_that_cannot_be_written_stops_the_router_at_start() {
    let net = Net::new("metrics-file-bad");
    net.issue("lonely", "router");
    let missing = net.dir.join("no-such-dir/lonely.json");
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
            "--metrics-file".into(),
            missing.display().to_string(),
        ],
        None,
    );
    let status = p
        .wait_exit(Duration::from_secs(10))
        .expect("the router kept running");
    assert!(!status.success());
    let logs = p.logs();
    assert!(
        logs.contains("metrics file") && logs.contains("no-such-dir/lonely.json"),
        "{logs}"
    );
}
