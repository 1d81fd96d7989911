//! A gateway's rules file on its clients' traffic (roslibpy programs): a topic bound to the
//! identity that may publish on it (PEER: the client's token identity), and a MESSAGE filter on
//! what clients receive; the gateway keeps serving, counts what the rules dropped, and a
//! SIGHUP reload lifts a rule.

use std::time::{Duration, Instant};

use crate::common::*;
use crate::gateway_support::*;

const OPERATOR: &str = "operator-token-0123456789";
const GUEST: &str = "guest-token-0123456789012";

/// Up to `n` "msg" lines within one deadline.
fn msgs(p: &Proc, n: usize) -> Vec<String> {
    let end = Instant::now() + T;
    let mut out = Vec::new();
    while out.len() < n && Instant::now() < end {
        if let Some(l) = p.line(Duration::from_millis(50)) {
            if l.starts_with("msg ") {
                out.push(l);
            }
        }
    }
    out
}

fn all_lines(p: &Proc, d: Duration) -> Vec<String> {
    let end = Instant::now() + d;
    let mut out = Vec::new();
    while Instant::now() < end {
        if let Some(l) = p.line(Duration::from_millis(50)) {
            out.push(l);
        }
    }
    out
}

#[test]
fn gateway_rules_bind_a_topic_to_an_identity_and_filter_what_clients_receive() {
    let net = Net::new("gw-rules");
    let defs = definitions(&net.dir);
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let rules = net.dir.join("gw.rules");
    std::fs::write(
        &rules,
        "Filter: TOPIC == \"/cmd\" && PEER == \"operator\";\n\
         Filter: TOPIC == \"/chatter\" && MESSAGE CONTAINS \"keep\";\n",
    )
    .unwrap();
    let every = "{allow: ['**']}";
    let extra = format!(
        "rules: {}\nmetrics_listen: 127.0.0.1:0\nauth:\n  tokens:\n    - identity: operator\n      token: {OPERATOR}\n      subscribe: {every}\n      publish: {every}\n    - identity: guest\n      token: {GUEST}\n      subscribe: {every}\n      publish: {every}\n",
        rules.display()
    );
    let (mut gw, port) = gateway(&net, "gw", &addr, Some(&defs), &extra);

    let watcher = client(
        "watch-cmd",
        port,
        &["--token", OPERATOR, "sub", "/cmd", "std_msgs/String"],
    );
    let chatter = client(
        "watch-chatter",
        port,
        &["--token", OPERATOR, "sub", "/chatter", "std_msgs/String"],
    );
    assert!(wait_line(&watcher, "ready", T).is_some() && wait_line(&chatter, "ready", T).is_some());
    let _op = client(
        "op",
        port,
        &[
            "--token",
            OPERATOR,
            "pub",
            "/cmd",
            "std_msgs/String",
            r#"{"data": "op $N"}"#,
        ],
    );
    let guest = client(
        "guest",
        port,
        &[
            "--token",
            GUEST,
            "pub",
            "/cmd",
            "std_msgs/String",
            r#"{"data": "guest $N"}"#,
        ],
    );
    let _keep = client(
        "keep",
        port,
        &[
            "--token",
            GUEST,
            "pub",
            "/chatter",
            "std_msgs/String",
            r#"{"data": "keep $N"}"#,
        ],
    );
    let _toss = client(
        "toss",
        port,
        &[
            "--token",
            GUEST,
            "pub",
            "/chatter",
            "std_msgs/String",
            r#"{"data": "toss $N"}"#,
        ],
    );

    // Only the operator's commands, only the kept chatter.
    let cmds = msgs(&watcher, 10);
    assert_eq!(cmds.len(), 10, "{}", gw.logs());
    assert!(cmds.iter().all(|l| l.contains("\"op ")), "{cmds:?}");
    let said = msgs(&chatter, 10);
    assert_eq!(said.len(), 10, "{}", gw.logs());
    assert!(said.iter().all(|l| l.contains("\"keep ")), "{said:?}");
    // The guest is told, with a status, that its message did not pass.
    let st = wait_line(&guest, "status ", T).unwrap_or_else(|| panic!("{}", guest.logs()));
    assert!(
        st.contains("the gateway's rules do not let this message through"),
        "{st}"
    );

    // The gateway's Prometheus endpoint counts its clients' topics.
    assert!(
        gw.wait_log("serving metrics at /metrics", T),
        "{}",
        gw.logs()
    );
    let at = gw
        .logs()
        .lines()
        .find_map(|l| {
            l.split("addr=")
                .nth(1)
                .map(|a| a.split_whitespace().next().unwrap_or("").to_string())
        })
        .unwrap();
    let text = std::process::Command::new("curl")
        .args(["-sf", &format!("http://{at}/metrics")])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("roam_topic_messages_total{") && l.contains("topic=\"/cmd\"")),
        "{text}"
    );
    assert!(
        text.contains("roam_process_info") || text.contains("kind=\"gateway\""),
        "{text}"
    );

    // SIGHUP with a file that lets the guest command too: its messages arrive.
    std::fs::write(
        &rules,
        "Filter: TOPIC == \"/cmd\" && PEER IN [\"operator\", \"guest\"];\n",
    )
    .unwrap();
    let _ = std::process::Command::new("kill")
        .args(["-HUP", &gw.pid().to_string()])
        .status();
    assert!(gw.wait_log("rules reloaded", T), "{}", gw.logs());
    let seen = all_lines(&watcher, Duration::from_secs(3));
    assert!(
        seen.iter().any(|l| l.contains("\"guest ")),
        "after the reload: {seen:?}"
    );

    assert!(gw.terminate().is_some());
    let end = Instant::now() + Duration::from_secs(5);
    while !gw.logs().contains("by the rules") && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    let summary = gw
        .logs()
        .lines()
        .find(|l| l.contains("by the rules"))
        .unwrap_or_default()
        .to_string();
    let ruled: u64 = summary
        .rsplit(", ")
        .next()
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(ruled >= 10, "{summary}");
}
