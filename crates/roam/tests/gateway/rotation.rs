//! A realm rotated under load, through proxies with real DDS peers: a reliable topic at
//! 1 kHz from a Python cyclonedds talker behind one proxy to a listener behind another, an
//! AddTwoInts service (a DDS server behind the first proxy) called in a loop by roslibpy
//! through a gateway, and a Fibonacci goal in flight, while the operator runs
//! `roam realm rotate`. Nothing is lost or duplicated, every call is answered, the goal
//! succeeds, and every member (both proxies and the gateway) says it switched.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;
use crate::gateway_support::*;

const T: Duration = Duration::from_secs(40);

/// The counters of the listener's "data: count N" lines read until `until`.
fn counts_until(listener: &Proc, until: Instant, into: &mut Vec<u64>) {
    while Instant::now() < until {
        if let Some(l) = listener.line(Duration::from_millis(20)) {
            if let Some(n) = l.strip_prefix("data: count ").and_then(|n| n.parse().ok()) {
                into.push(n);
            }
        }
    }
}

#[test]
fn a_rotation_under_load_loses_no_message_call_or_goal() {
    let net = Net::new("gw-rotation");
    net.members(
        &[
            ("robot", "router"),
            ("base", "router"),
            ("gw", "router"),
            ("ops", "client"),
        ],
        "ops",
    );
    let defs = definitions(&net.dir);
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let robot = net.proxy(
        "robot",
        121,
        &addr,
        "exports:\n  - topic: /count\n    realm: test\n  - service: /add_two_ints\n    realm: test\n  - action: /fibonacci\n    realm: test\n",
    );
    let base = net.proxy(
        "base",
        122,
        &addr,
        "imports:\n  - topic: /count\n    realm: test\n",
    );
    let (gw, port) = gateway(&net, "gw", &addr, Some(&defs), "");
    let _server = python("server", "service.py", &["server", "121", "add_two_ints"]);
    let action_server = python("action", "action.py", &["server", "121", "fibonacci", "50"]);
    let listener = python(
        "listener",
        "listener.py",
        &["122", "rt/count", "--depth", "2000"],
    );
    let logs = || format!("{}\n{}\n{}", robot.logs(), base.logs(), gw.logs());

    // The service called in a loop, through the gateway to the DDS server behind the robot.
    let mut calls = client(
        "calls",
        port,
        &[
            "calls",
            "/add_two_ints",
            "example_interfaces/srv/AddTwoInts",
        ],
    );
    assert!(
        wait_line(&calls, "answered 0 1000", T).is_some(),
        "{}\n{}",
        calls.logs(),
        logs()
    );
    // The 1 kHz talker, kept in full by its writer (depth 2000) so DDS loses nothing either.
    let _talker = python(
        "talker",
        "talker.py",
        &[
            "121", "rt/count", "count", "--period", "0.001", "--depth", "2000",
        ],
    );
    let mut counts = Vec::new();
    let end = Instant::now() + T;
    while counts.len() < 500 {
        assert!(Instant::now() < end, "nothing crossed: {}", logs());
        counts_until(
            &listener,
            Instant::now() + Duration::from_millis(100),
            &mut counts,
        );
    }
    // A goal that is in flight across the switch: 40 steps of 50 ms.
    let goal = client(
        "goal",
        port,
        &[
            "action",
            "/fibonacci",
            "example_interfaces/action/Fibonacci",
            r#"{"order": 40}"#,
        ],
    );
    assert!(
        wait_line(&goal, "feedback ", T).is_some(),
        "{}\n{}",
        goal.logs(),
        logs()
    );

    let started = Instant::now();
    let out = Command::new(ROAM)
        .args([
            "realm",
            "rotate",
            "--realm",
            &net.realm,
            "--connect",
            &addr,
            "--pki",
            &net.pki,
            "--id",
            "ops",
            "--switch-after",
            "1",
            "--retire-after",
            "3",
            "--wait",
            "20",
        ])
        .output()
        .expect("roam realm rotate");
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        logs()
    );
    for m in ["robot", "base", "gw"] {
        assert!(
            stdout.contains(&format!("{m} switched to epoch 1")),
            "{stdout}"
        );
    }
    // Past the retirement of epoch 0: everything after is sealed and opened in epoch 1 only.
    counts_until(
        &listener,
        Instant::now() + Duration::from_secs(4),
        &mut counts,
    );

    let first = counts[0];
    let broken = counts.windows(2).position(|w| w[1] != w[0] + 1);
    assert!(
        broken.is_none(),
        "the listener's counts break at {:?} of {} ({:?}): {}",
        broken,
        counts.len(),
        broken.map(|i| &counts[i.saturating_sub(3)..(i + 4).min(counts.len())]),
        logs()
    );
    assert_eq!(counts[counts.len() - 1], first + counts.len() as u64 - 1);
    assert!(
        counts.len() > 3_000,
        "only {} messages crossed",
        counts.len()
    );
    let result =
        wait_line(&goal, "result ", T).unwrap_or_else(|| panic!("{}\n{}", goal.logs(), logs()));
    assert!(result.starts_with("result 4 "), "{result}");
    assert!(
        wait_line(&action_server, "succeeded ", T).is_some(),
        "{}",
        logs()
    );
    // Every call answered right, none failed, and calls went on after the switch.
    calls.terminate();
    let mut answered = 0u64;
    let mut failed = Vec::new();
    while let Some(l) = calls.line(Duration::from_millis(100)) {
        let mut parts = l.split(' ');
        match (parts.next(), parts.next(), parts.next()) {
            (Some("answered"), Some(i), Some(sum)) => {
                let i: u64 = i.parse().unwrap();
                assert_eq!(sum.parse::<u64>().unwrap(), i + 1000, "{l}");
                answered += 1;
            }
            (Some("error"), _, _) => failed.push(l),
            _ => {}
        }
    }
    assert!(failed.is_empty(), "calls failed: {failed:?}\n{}", logs());
    assert!(answered > 10, "only {answered} calls answered");
    println!(
        "rotation under load: rotate took {took:?}; {} messages in order without a gap, {answered} calls answered, the goal succeeded",
        counts.len()
    );
}
