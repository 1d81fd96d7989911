//! Vendor independence: a ROS 2 node on RustDDS (the `ros2-client` crate, in this test process)
//! and a ROS 2 node on CycloneDDS (Python cyclonedds) exchange std_msgs/String through two roam
//! proxies and a router, in both directions.
//!
//! Everything stays on loopback. The CycloneDDS peers (proxies, Python) use
//! `roam_dds::loopback_config()`: interface `lo`, no multicast, SPDP by unicast to the
//! participant-index ports on 127.0.0.1. The RustDDS participant is restricted to 127.0.0.1
//! with `with_only_networks`: `lo` has no MULTICAST flag, so it opens no multicast sender,
//! joins no group and advertises only 127.0.0.1 locators; its "same host loopback" discovery
//! sends SPDP by unicast to 127.0.0.1 at the ports of participant ids 0..11, where CycloneDDS
//! listens, and CycloneDDS's unicast SPDP reaches RustDDS the same way.
//!
//! Domains 45..48 and router ports 1915x are this file's alone. Domain 47's well-known RTPS
//! ports are 19150, 19151 and 19160 upwards, so the routers sit on 19152 and 19154 (UDP for
//! QUIC) in between.

use std::time::{Duration, Instant};

use crate::common::*;
use crate::rustdds_support::*;

/// Messages that must arrive consecutively after the first one.
const RUN: u64 = 30;

/// The N of "TEXT N".
fn counter(text: &str, prefix: &str) -> u64 {
    text.strip_prefix(prefix)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected message {text:?}"))
}

#[test]
fn a_rustdds_talker_reaches_a_cyclonedds_listener_through_the_proxies() {
    let net = Net::new("vendor-rustdds-to-cyclone");
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:19152", &[]);
    let robot = net.proxy(
        "robot",
        45,
        &addr,
        "exports:\n  - topic: /chatter\n    realm: test\n",
    );
    let base = net.proxy(
        "base",
        46,
        &addr,
        "imports:\n  - topic: /chatter\n    realm: test\n",
    );
    let talker = RustTalker::start(45, "chatter");
    let listener = python("listener", "listener.py", &["46", "rt/chatter"]);

    let first =
        wait_line(&listener, "data: rustdds ", Duration::from_secs(40)).unwrap_or_else(|| {
            panic!(
                "nothing crossed from RustDDS ({} published).\nrobot: {}\nbase: {}",
                talker.sent(),
                robot.logs(),
                base.logs()
            )
        });
    // The proxy learned the type from RustDDS's discovery data, as ROS 2 names it.
    assert!(
        robot.logs().contains("std_msgs::msg::dds_::String_"),
        "robot: {}",
        robot.logs()
    );
    // Reliable all the way: every following message arrives, once, in order, unchanged.
    let mut last = counter(&first, "data: rustdds ");
    for _ in 0..RUN {
        let l = wait_line(&listener, "data:", Duration::from_secs(5))
            .unwrap_or_else(|| panic!("flow stopped after rustdds {last}: {}", base.logs()));
        let n = counter(&l, "data: rustdds ");
        assert_eq!(n, last + 1, "rustdds {n} arrived after rustdds {last}");
        last = n;
    }
}

#[test]
fn a_cyclonedds_talker_reaches_a_rustdds_subscription_through_the_proxies() {
    let net = Net::new("vendor-cyclone-to-rustdds");
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:19154", &[]);
    let robot = net.proxy(
        "robot",
        48,
        &addr,
        "exports:\n  - topic: /chatter\n    realm: test\n",
    );
    let base = net.proxy(
        "base",
        47,
        &addr,
        "imports:\n  - topic: /chatter\n    realm: test\n",
    );
    let mut node = rustdds_node(47, "rustdds_listener");
    let topic = string_topic(&node, "chatter");
    let subscription = node
        .create_subscription::<String>(&topic, None)
        .expect("subscription");
    let _talker = python("talker", "talker.py", &["48", "rt/chatter", "cyclone"]);

    let mut got: Vec<u64> = Vec::new();
    let mut end = Instant::now() + Duration::from_secs(40);
    while got.len() < RUN as usize + 1 && Instant::now() < end {
        match subscription.take() {
            Ok(Some((text, _info))) => {
                let n = counter(&text, "cyclone ");
                if let Some(&last) = got.last() {
                    assert_eq!(n, last + 1, "cyclone {n} arrived after cyclone {last}");
                } else {
                    // Flowing: from now on a message is due every 50 ms.
                    end = Instant::now() + Duration::from_secs(15);
                }
                got.push(n);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => panic!("take failed: {e:?}"),
        }
    }
    assert_eq!(
        got.len(),
        RUN as usize + 1,
        "only {got:?} crossed to RustDDS.\nrobot: {}\nbase: {}",
        robot.logs(),
        base.logs()
    );
}
