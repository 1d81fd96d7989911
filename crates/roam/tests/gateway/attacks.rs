//! What an attacker with partial access, or none, can cost a gateway, and that the operator
//! keeps being served through it: connections that never authenticate (from several source
//! addresses), a burst above `max_clients`, fragments that claim a million parts, and tokens
//! that expire while their subscriptions are open. Real processes on loopback: a router,
//! `roam pub`, `roam gateway`, the attacker on Python `websockets`, the operator on roslibpy
//! and grpcio.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::*;
use crate::gateway_support::*;

const OPERATOR: &str = "operator-token-0123456789";
const READER: &str = "reader-token-0123456789";

/// The attacker (tests/py/gateway_attack.py).
fn attacker(name: &str, port: u16, args: &[&str]) -> Proc {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/gateway_attack.py");
    let port = port.to_string();
    let mut a = vec!["-u", script.to_str().unwrap(), &port];
    a.extend_from_slice(args);
    Proc::spawn_system(name, "python3", &a)
}

/// The resident memory of a process, in bytes.
fn rss(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = s
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    kb * 1024
}

/// The gateway's closing summary: what it served, and the connections it refused.
fn summary(gw: &mut Proc) -> String {
    assert!(gw.terminate().is_some_and(|s| s.success()), "{}", gw.logs());
    let logs = gw.logs();
    let line = |start: &str| {
        logs.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no {start:?} in the summary: {logs}"))
            .to_string()
    };
    format!(
        "{} {}",
        line("served "),
        line("connections refused or closed: ")
    )
}

/// The count before `label` in the summary's "connections refused or closed" list.
fn refusals(summary: &str, label: &str) -> u64 {
    let list = summary
        .split("connections refused or closed: ")
        .nth(1)
        .unwrap_or_else(|| panic!("{summary}"));
    list.split(", ")
        .find_map(|e| e.strip_suffix(&format!(" {label}")))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no {label} in {summary}"))
}

#[test]
fn connections_without_credentials_cannot_lock_out_the_operator_and_fragments_reserve_nothing() {
    let net = Net::new("gw-attacks");
    let defs = definitions(&net.dir);
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let _talker = string_talker(&net, &defs, &addr, "/chatter", "talker");
    let extra = format!(
        "grpc:\n  listen: 127.0.0.1:0\nlimits:\n  max_frame_bytes: 8388608\n  max_clients: 8\n  max_pending_clients: 24\n  max_pending_per_source: 4\n  auth_timeout_s: 8\n  client_queue_bytes: 4194304\nauth:\n  tokens:\n    - identity: operator\n      token: {OPERATOR}\n      subscribe: {{allow: ['/**']}}\n    - identity: reader\n      token: {READER}\n      subscribe: {{allow: ['/diagnostics']}}\n"
    );
    let (mut gw, port) = gateway(&net, "gw", &addr, Some(&defs), &extra);
    let g = wait_line(&gw, "grpc listening ", T).unwrap_or_else(|| panic!("{}", gw.logs()))
        ["grpc listening ".len()..]
        .to_string();

    // Thirty-five connections that never authenticate, from seven addresses, five each: an
    // address's fifth is refused while it has four authenticating, and the seventh address's
    // find the pending pool full (24) and displace the oldest of the others.
    let hold = attacker("hold", port, &["hold", "7", "5"]);
    let opened = expect(&hold, "opened ", &gw);
    assert_eq!(opened, "opened 28 7");

    // The operator gets in beside them, on rosbridge (token on the upgrade and with the
    // `auth` op) and on gRPC.
    let header = client(
        "op-header",
        port,
        &[
            "--header-token",
            OPERATOR,
            "sub",
            "/chatter",
            "std_msgs/String",
        ],
    );
    expect(&header, "msg ", &gw);
    let auth_op = client(
        "op-auth",
        port,
        &["--token", OPERATOR, "sub", "/chatter", "std_msgs/String"],
    );
    expect(&auth_op, "msg ", &gw);
    let rpc = grpc(
        "op-grpc",
        &g,
        Some(OPERATOR),
        &["sub", "/chatter", "--type", "std_msgs/msg/String"],
    );
    expect(&rpc, "msg ", &gw);

    // Every connection without credentials is closed by its deadline (8 s), displaced or
    // not; the operator's stay.
    let started = Instant::now();
    expect(&hold, "all closed", &gw);
    assert!(started.elapsed() < Duration::from_secs(20));
    expect(&header, "msg ", &gw);
    expect(&rpc, "msg ", &gw);

    // A burst above max_clients, from twenty addresses: three connections are admitted
    // already, so five of twenty more are; the rest are told 503.
    let mut burst = attacker("burst", port, &["burst", OPERATOR, "20"]);
    let l = expect(&burst, "admitted ", &gw);
    assert_eq!(l, "admitted 5 refused 15 dropped 0");
    assert!(
        burst.wait_exit(T).is_some_and(|s| s.success()),
        "{}",
        burst.logs()
    );

    // Fragments claiming a million parts each, from a client that may only read
    // /diagnostics: what they cost is what they carry.
    let before = rss(gw.pid());
    let frag = attacker(
        "frag",
        port,
        &["fragments", READER, "16", "1048576", "5000000"],
    );
    expect(&frag, "sent 16", &gw);
    let grown = rss(gw.pid()).saturating_sub(before);
    assert!(
        grown < 32 << 20,
        "16 fragments grew the gateway by {} MB",
        grown >> 20
    );
    // One fragment over the client's budget (client_queue_bytes, 4 MiB): a clear error, and
    // the connection still answers.
    let _ = std::process::Command::new("kill")
        .args(["-USR1", &frag.pid().to_string()])
        .status();
    let s = expect(&frag, "status ", &gw);
    assert!(
        s.contains("pending fragments would exceed 4194304 bytes (client_queue_bytes)"),
        "{s}"
    );
    expect(&frag, "alive", &gw);
    expect(&header, "msg ", &gw);

    let summary = summary(&mut gw);
    assert!(refusals(&summary, "auth_deadline") >= 1, "{summary}");
    // The seventh address's four, and one for each operator connection that came while the
    // pool was full.
    assert!(refusals(&summary, "displaced") >= 4, "{summary}");
    assert_eq!(refusals(&summary, "source_busy"), 7, "{summary}");
    assert!(refusals(&summary, "full") >= 15, "{summary}");
}

#[test]
fn an_expired_token_ends_open_subscriptions_on_every_door() {
    let net = Net::new("gw-expiry");
    let defs = definitions(&net.dir);
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let _talker = string_talker(&net, &defs, &addr, "/chatter", "talker");
    // A token that expires 15 s from now (time enough to start and subscribe on a slow
    // machine); RFC 3339 from the system's clock, as an operator writes it.
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 15;
    let out = std::process::Command::new("date")
        .args(["-u", "-d", &format!("@{at}"), "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .unwrap();
    let expires = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let brief = "brief-token-0123456789";
    let extra = format!(
        "grpc:\n  listen: 127.0.0.1:0\nfoxglove:\n  listen: 127.0.0.1:0\nauth:\n  tokens:\n    - identity: brief\n      token: {brief}\n      expires: {expires}\n      subscribe: {{allow: ['/**']}}\n"
    );
    let (mut gw, port) = gateway(&net, "gw", &addr, Some(&defs), &extra);
    let g = wait_line(&gw, "grpc listening ", T).unwrap_or_else(|| panic!("{}", gw.logs()))
        ["grpc listening ".len()..]
        .to_string();
    let fox: u16 = wait_line(&gw, "foxglove listening ", T)
        .unwrap_or_else(|| panic!("{}", gw.logs()))
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();

    let ros = client(
        "ros",
        port,
        &[
            "--header-token",
            brief,
            "sub",
            "/chatter",
            "std_msgs/String",
        ],
    );
    let rpc = grpc(
        "rpc",
        &g,
        Some(brief),
        &["sub", "/chatter", "--type", "std_msgs/msg/String"],
    );
    let foxglove = attacker("fox", fox, &["foxglove", brief, "/chatter"]);
    for p in [&ros, &rpc, &foxglove] {
        expect(p, "msg", &gw);
    }
    // At the expiry each door ends the subscription and says why.
    let s = expect(&ros, "status ", &gw);
    assert!(s.contains("the token of brief expired"), "{s}");
    let e = expect(&rpc, "error ", &gw);
    assert!(
        e.starts_with("error UNAUTHENTICATED") && e.contains("the token of brief expired"),
        "{e}"
    );
    let s = expect(&foxglove, "status ", &gw);
    assert!(s.contains("the token of brief expired"), "{s}");
    let c = expect(&foxglove, "closed ", &gw);
    assert!(c.starts_with("closed 1008"), "{c}");
    // ... within a second or two of it.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(now >= at && now <= at + 3, "ended at {now}, expiry {at}");
    summary(&mut gw);
}
