//! End-to-end recovery through proxies: a ROS 2 topic published with a KEEP_ALL history (a
//! real Python cyclonedds writer) crosses an exporting proxy, a chain of three routers and
//! an importing proxy to a KEEP_ALL listener; the middle router is killed (SIGKILL) and
//! restarted, and the listener still reads every message once, in order.

use std::time::{Duration, Instant};

use crate::common::*;

const T: Duration = Duration::from_secs(40);

/// N of each "data: n N" line the listener printed, until `until` holds or the deadline.
fn read(listener: &Proc, seen: &mut Vec<u64>, until: impl Fn(&[u64]) -> bool) {
    let end = Instant::now() + T;
    while Instant::now() < end && !until(seen) {
        if let Some(l) = listener.line(Duration::from_millis(50)) {
            if let Some(n) = l
                .strip_prefix("data: n ")
                .and_then(|n| n.trim().parse().ok())
            {
                seen.push(n);
            }
        }
    }
}

#[test]
fn a_keep_all_ros_topic_crosses_a_router_killed_on_its_only_path_complete_and_in_order() {
    let net = Net::new("proxy-recovery");
    let (_r1, a1) = net.router("r1", "127.0.0.1:0", &[]);
    let (mut r2, a2) = net.router("r2", "127.0.0.1:0", std::slice::from_ref(&a1));
    let (_r3, a3) = net.router("r3", "127.0.0.1:0", std::slice::from_ref(&a2));
    let robot = net.proxy(
        "robot",
        228,
        &a1,
        "resend_window_s: 20\nexports:\n  - topic: /odom_log\n    realm: test\n",
    );
    let base = net.proxy(
        "base",
        229,
        &a3,
        "status_interval_s: 1\nimports:\n  - topic: /odom_log\n    realm: test\n",
    );
    let listener = python(
        "listener",
        "listener.py",
        &["229", "rt/odom_log", "--depth", "0"],
    );
    let _talker = python(
        "talker",
        "talker.py",
        &[
            "228",
            "rt/odom_log",
            "n",
            "--depth",
            "0",
            "--period",
            "0.01",
        ],
    );
    let mut seen = Vec::new();
    read(&listener, &mut seen, |s| s.len() >= 100);
    assert!(
        seen.len() >= 100,
        "the topic did not cross: {seen:?}\nrobot: {}\nbase: {}",
        robot.logs(),
        base.logs()
    );
    r2.kill();
    // The fault itself: the router stays dead this long (nothing to wait for).
    std::thread::sleep(Duration::from_secs(1));
    let (_r2b, _) = net.router("r2", &a2, std::slice::from_ref(&a1));
    let at_restart = seen.len();
    // Well past the outage: 1 s of the talker is about 100 messages.
    read(&listener, &mut seen, |s| s.len() >= at_restart + 500);
    let first = seen[0];
    let expected: Vec<u64> = (first..first + seen.len() as u64).collect();
    let gaps: Vec<(u64, u64)> = seen
        .windows(2)
        .filter(|w| w[1] != w[0] + 1)
        .map(|w| (w[0], w[1]))
        .collect();
    assert!(
        seen == expected,
        "{} messages, not every one once in order (jumps {gaps:?})\nrobot: {}\nbase: {}",
        seen.len(),
        robot.logs(),
        base.logs()
    );
    assert!(seen.len() >= at_restart + 500, "the topic did not resume");
}
