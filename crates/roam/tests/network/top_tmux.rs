//! `roam top` on real traffic: a DDS talker behind one proxy, a listener behind another, a
//! router between; `roam top` joins the realm as a client and shows both proxies' topics with
//! their rates. Once with `--once` (its table read directly), once live under tmux (the screen
//! read with capture-pane, as a person would see it).

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;

const T: Duration = Duration::from_secs(40);

/// The row of `topic` by `member` in a `roam top` table: its columns.
fn row<'a>(table: &'a str, topic: &str, member: &str) -> Option<Vec<&'a str>> {
    table
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|c| c.len() > 4 && c[0] == topic && c[2] == member)
}

fn wait_for_line(p: &Proc, prefix: &str) -> bool {
    let end = Instant::now() + T;
    while Instant::now() < end {
        if p.line(Duration::from_millis(100))
            .is_some_and(|l| l.starts_with(prefix))
        {
            return true;
        }
    }
    false
}

fn rate(cols: &[&str]) -> f64 {
    cols[3].parse().unwrap()
}

#[test]
fn roam_top_shows_every_proxys_topics_with_their_rates() {
    let net = Net::new("top");
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let _talker = python("talker", "talker.py", &["96", "rt/chatter", "hello"]);
    let listener = python("listener", "listener.py", &["98", "rt/chatter"]);
    let robot = net.proxy(
        "robot",
        96,
        &addr,
        "exports:\n  - topic: /chatter\n    realm: test\n",
    );
    let base = net.proxy(
        "base",
        98,
        &addr,
        "imports:\n  - topic: /chatter\n    realm: test\n",
    );
    assert!(
        wait_for_line(&listener, "data: hello"),
        "nothing crossed: {}\nbase: {}\nrobot: {}",
        listener.logs(),
        base.logs(),
        robot.logs()
    );
    net.issue("watcher", "client");
    let args = [
        "top",
        "--realm",
        &net.realm,
        "--connect",
        &addr,
        "--pki",
        &net.pki,
        "--id",
        "watcher",
        "--interval",
        "1",
    ];

    // --once: one table, rates over one interval.
    let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    a.push("--once".into());
    let mut once = Proc::spawn("top-once", &a, None);
    assert!(
        once.wait_exit(T).is_some_and(|s| s.success()),
        "{}",
        once.logs()
    );
    let mut table = String::new();
    while let Some(l) = once.line(Duration::from_millis(100)) {
        table.push_str(&l);
        table.push('\n');
    }
    let out = row(&table, "/chatter", "robot").unwrap_or_else(|| panic!("no export row:\n{table}"));
    assert_eq!(out[1], "out", "{table}");
    assert!(
        (5.0..=40.0).contains(&rate(&out)),
        "a 20 Hz talker shows {}:\n{table}",
        out[3]
    );
    let inn = row(&table, "/chatter", "base").unwrap_or_else(|| panic!("no import row:\n{table}"));
    assert_eq!(inn[1], "in", "{table}");
    assert!(rate(&inn) > 0.0, "{table}");
    assert!(
        table.contains("robot ") && table.contains("proxy"),
        "{table}"
    );

    // Live under tmux, on a server of this test's own.
    let sock = format!("roam-top-test-{}", std::process::id());
    let tmux = |args: &[&str]| {
        Command::new("tmux")
            .args(["-L", &sock])
            .args(args)
            .output()
            .expect("tmux (scripts/setup.sh installs it)")
    };
    let cmd = std::iter::once(ROAM.to_string())
        .chain(args.iter().map(|s| format!("'{s}'")))
        .collect::<Vec<_>>()
        .join(" ");
    let started = tmux(&[
        "new-session",
        "-d",
        "-s",
        "top",
        "-x",
        "160",
        "-y",
        "40",
        &cmd,
    ]);
    assert!(started.status.success(), "{started:?}");
    let pane_pid = String::from_utf8_lossy(
        &tmux(&["display-message", "-p", "-t", "top", "#{pane_pid}"]).stdout,
    )
    .trim()
    .to_string();
    let end = Instant::now() + T;
    let mut screen = String::new();
    let mut seen = false;
    while Instant::now() < end {
        screen = String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-t", "top"]).stdout)
            .into_owned();
        if let (Some(o), Some(i)) = (
            row(&screen, "/chatter", "robot"),
            row(&screen, "/chatter", "base"),
        ) {
            if rate(&o) > 5.0 && rate(&i) > 5.0 {
                seen = true;
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    if !pane_pid.is_empty() {
        let _ = Command::new("kill").arg(&pane_pid).status();
    }
    let _ = tmux(&["kill-server"]);
    assert!(
        seen,
        "roam top under tmux did not show both rows with rates:\n{screen}"
    );
    assert!(
        screen.starts_with("roam top: realm test, 2 members"),
        "{screen}"
    );
}
