//! Fast DDS 2.9, the default DDS of ROS 2, through roam: real Fast DDS nodes (Debian's
//! libfastrtps, tests/fastdds/node.cpp, built by tests/support/fastdds_support.rs) on one side of two roam
//! proxies and a router, CycloneDDS (Python cyclonedds), RustDDS (ros2-client) or Fast DDS nodes
//! on the other, each network its own DDS domain. Every process is started as a user starts it
//! and stopped by the test.
//!
//! This file: live std_msgs/String topics both ways, between Fast DDS and each other vendor.
//! Keyed topics are in tests/fastdds_suites/keyed.rs, late listeners of transient-local (latched)
//! topics in tests/fastdds_suites/latched.rs, 20 MB messages in tests/fastdds_suites/large.rs, the service
//! nodes in tests/fastdds_suites/services.rs; what they share (the domain pairs, the deployment, how
//! everything stays on loopback) in tests/support/fastdds_common.rs.
//!
//! RustDDS readers of Fast DDS talkers are in tests/fastdds_rustdds.rs, a process of their own:
//! a RustDDS participant dropped by a test is not gone at once, and with RustDDS tests in this
//! process a Fast DDS listener here was seen to get nothing.

use std::time::{Duration, Instant};

use crate::common::*;
use crate::fastdds_common::*;
use crate::fastdds_support::*;
use crate::rustdds_support::*;

/// Samples that must arrive in a run, each once, in order.
const RUN: u64 = 30;

/// The N of "PREFIXN".
fn counter(text: &str, prefix: &str) -> u64 {
    text.strip_prefix(prefix)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected message {text:?} (expected {prefix}N)"))
}

/// Every sample a listener prints starts so.
const DATA: &str = "data: ";

/// Reads "PREFIX n" lines until `last` arrives: the numbers must run without a gap, a
/// duplicate or a reordering, from 0 (the talker waited for the exporting proxy's reader, and
/// the importing proxy's writer has matched the listener by then) to `last`. Returns them.
/// Any other sample fails the test (each test's talker has a text of its own, so a sample of
/// another test's shows as such).
fn run_until(listener: &Proc, prefix: &str, last: u64, why: &dyn Fn() -> String) -> Vec<u64> {
    let first = wait_line(listener, DATA, T)
        .unwrap_or_else(|| panic!("nothing arrived on {}.\n{}", listener.name, why()));
    let mut got = vec![counter(&first, prefix)];
    while *got.last().unwrap() < last {
        let l = wait_line(listener, DATA, Duration::from_secs(10)).unwrap_or_else(|| {
            panic!(
                "the flow stopped after {:?} (of ..={last}).\n{}",
                got.last(),
                why()
            )
        });
        let n = counter(&l, prefix);
        assert_eq!(n, got.last().unwrap() + 1, "after {got:?}.\n{}", why());
        got.push(n);
    }
    assert_eq!(got[0], 0, "the first samples were lost.\n{}", why());
    // Nothing more: no duplicate after the last one.
    assert_eq!(
        lines(listener, DATA, 1, Duration::from_millis(500)),
        Vec::<String>::new()
    );
    got
}

// ---------------------------------------------------------------------------------------------
// std_msgs/String both ways

/// A Fast DDS talker of "TEXT 0" .. "TEXT 59" on `rt/chatter` in `domain` that waits for
/// one matched reader, then for `go` (see [`Go`]) before it publishes.
fn gated_chatter_talker(net: &Net, domain: u32, text: &str) -> (Proc, Go) {
    let go = Go::new(net, "talker");
    let talker = fastdds(
        "talker",
        "talk",
        domain,
        &[
            "--topic",
            "rt/chatter",
            "--text",
            text,
            "--wait-match",
            "1",
            "--start-when",
            &go.arg(),
            "--count",
            "60",
        ],
    );
    (talker, go)
}

/// What a failed assertion shows: how much the talker sent, and both proxies' logs.
fn diagnosis(talker: &Proc, robot: &Proc, base: &Proc) -> String {
    format!(
        "fast sent {}\nrobot: {}\nbase: {}",
        fast_sent(talker),
        robot.logs(),
        base.logs()
    )
}

#[test]
fn a_fastdds_talker_reaches_a_cyclonedds_listener() {
    let p = pair(0);
    let net = Net::new("fastdds-to-cyclone");
    let (mut cloud, mut robot, mut base) = deployment(
        &net,
        &p,
        &export("topic: /chatter"),
        &import("topic: /chatter"),
    );
    let mut listener = python("listener", "listener.py", &[&p.b.to_string(), "rt/chatter"]);
    // Publishes once the exporting proxy's reader matched: the remote listener's demand made it.
    let (mut talker, go) = gated_chatter_talker(&net, p.a, "fast-to-cyclone");
    let why = || diagnosis(&talker, &robot, &base);
    // The talker matched the exporting proxy's reader (the remote listener's demand made it);
    // it publishes once the importing proxy writes locally: that writer is new, and must
    // match the listener before the first sample, or DDS's volatile semantics drop it.
    wait_for(&talker, "writer matched 1", &why);
    wait_for(&base, "remote topic announced", &why);
    go.now();
    let got = run_until(&listener, "data: fast-to-cyclone ", 59, &why);
    assert_eq!(got.len(), 60, "{}", why());
    // The proxy learned the type from Fast DDS's discovery data, as ROS 2 names it.
    assert!(
        robot.logs().contains("std_msgs::msg::dds_::String_"),
        "{}",
        why()
    );
    stop(&mut [
        &mut listener,
        &mut talker,
        &mut robot,
        &mut base,
        &mut cloud,
    ]);
}

#[test]
fn a_cyclonedds_talker_reaches_a_fastdds_listener() {
    let p = pair(1);
    let net = Net::new("cyclone-to-fastdds");
    let (mut cloud, mut robot, mut base) = deployment(
        &net,
        &p,
        &export("topic: /chatter"),
        &import("topic: /chatter"),
    );
    let mut listener = fastdds("listener", "listen", p.b, &["--topic", "rt/chatter"]);
    let mut talker = python(
        "talker",
        "talker.py",
        &[&p.a.to_string(), "rt/chatter", "cyclone-to-fast"],
    );
    let why = || format!("robot: {}\nbase: {}", robot.logs(), base.logs());
    let first = wait_line(&listener, DATA, T)
        .unwrap_or_else(|| panic!("nothing crossed to Fast DDS.\n{}", why()));
    let first = counter(&first, "data: cyclone-to-fast ");
    let got = run_until_from(
        &listener,
        "data: cyclone-to-fast ",
        first,
        first + RUN,
        &why,
    );
    assert_eq!(got.len() as u64, RUN + 1);
    stop(&mut [
        &mut talker,
        &mut listener,
        &mut robot,
        &mut base,
        &mut cloud,
    ]);
}

/// As [`run_until`] for an endless talker whose flow was seen at `first`.
fn run_until_from(
    listener: &Proc,
    prefix: &str,
    first: u64,
    last: u64,
    why: &dyn Fn() -> String,
) -> Vec<u64> {
    let mut got = vec![first];
    while *got.last().unwrap() < last {
        let l = wait_line(listener, DATA, Duration::from_secs(10))
            .unwrap_or_else(|| panic!("the flow stopped after {:?}.\n{}", got.last(), why()));
        let n = counter(&l, prefix);
        assert_eq!(n, got.last().unwrap() + 1, "after {got:?}.\n{}", why());
        got.push(n);
    }
    got
}

#[test]
fn a_fastdds_talker_reaches_a_fastdds_listener() {
    let p = pair(2);
    let net = Net::new("fastdds-to-fastdds");
    let (mut cloud, mut robot, mut base) = deployment(
        &net,
        &p,
        &export("topic: /chatter"),
        &import("topic: /chatter"),
    );
    let mut listener = fastdds("listener", "listen", p.b, &["--topic", "rt/chatter"]);
    let (mut talker, go) = gated_chatter_talker(&net, p.a, "fast-to-fast");
    let why = || diagnosis(&talker, &robot, &base);
    // Both ends matched their proxy: the talker the exporter's reader, the listener the
    // importer's writer, on both sides of each match (on Fast DDS this can take a second:
    // samples before it are lost).
    wait_for(&talker, "writer matched 1", &why);
    wait_for(&listener, "reader matched 1", &why);
    assert!(
        base.wait_log("local readers of an import: 1", T),
        "{}",
        why()
    );
    go.now();
    let got = run_until(&listener, "data: fast-to-fast ", 59, &why);
    assert_eq!(got.len(), 60, "{}", why());
    stop(&mut [
        &mut listener,
        &mut talker,
        &mut robot,
        &mut base,
        &mut cloud,
    ]);
}

// ---------------------------------------------------------------------------------------------
// Fast DDS and RustDDS (ros2-client)

#[test]
fn fastdds_and_rustdds_nodes_talk_both_ways() {
    // /chatter: Fast DDS on the robot -> RustDDS on the base; /back: RustDDS -> Fast DDS.
    let p = pair(3);
    let net = Net::new("fastdds-rustdds");
    let (mut cloud, mut robot, mut base) = deployment(
        &net,
        &p,
        "exports:\n  - topic: /chatter\n    realm: test\nimports:\n  - topic: /back\n    realm: test\n",
        "imports:\n  - topic: /chatter\n    realm: test\nexports:\n  - topic: /back\n    realm: test\n",
    );
    let why = |robot: &Proc, base: &Proc| format!("robot: {}\nbase: {}", robot.logs(), base.logs());

    // Fast DDS -> RustDDS.
    let mut node = rustdds_node(p.b, "rustdds_listener");
    let topic = string_topic(&node, "chatter");
    let subscription = node
        .create_subscription::<String>(&topic, None)
        .expect("subscription");
    let mut talker = fastdds(
        "talker",
        "talk",
        p.a,
        &[
            "--topic",
            "rt/chatter",
            "--text",
            "fast-to-rustdds",
            "--wait-match",
            "1",
            "--count",
            "60",
        ],
    );
    let mut got: Vec<u64> = Vec::new();
    let end = Instant::now() + T;
    while got.last() != Some(&59) && Instant::now() < end {
        match subscription.take() {
            Ok(Some((text, _info))) => {
                let n = counter(&text, "fast-to-rustdds ");
                if let Some(&last) = got.last() {
                    assert_eq!(n, last + 1, "fast {n} arrived after fast {last}");
                }
                got.push(n);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => panic!("take failed: {e:?}"),
        }
    }
    assert!(
        got.last() == Some(&59) && got.len() as u64 > RUN,
        "RustDDS got {got:?} of Fast DDS's 0..=59 (sent {}).\n{}",
        fast_sent(&talker),
        why(&robot, &base)
    );

    // RustDDS -> Fast DDS.
    let mut listener = fastdds("listener", "listen", p.a, &["--topic", "rt/back"]);
    let rust = RustTalker::start(p.b, "back");
    let first = wait_line(&listener, "data: rustdds ", T).unwrap_or_else(|| {
        panic!(
            "nothing crossed from RustDDS ({} published).\n{}",
            rust.sent(),
            why(&robot, &base)
        )
    });
    let first = counter(&first, "data: rustdds ");
    let run = run_until_from(&listener, "data: rustdds ", first, first + RUN, &|| {
        why(&robot, &base)
    });
    assert_eq!(run.len() as u64, RUN + 1);
    drop(rust);
    drop(subscription);
    stop(&mut [
        &mut talker,
        &mut listener,
        &mut robot,
        &mut base,
        &mut cloud,
    ]);
}
