//! Publishers of different QoS on one topic, publishers restarted with other QoS, and keyed
//! topics: across the proxies, a listener sees what it would see next to the publishers.
//! Real Python cyclonedds peers in separate DDS domains, proxies and a router between them.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::common::*;

const T: Duration = Duration::from_secs(30);

/// A router, an exporting proxy on `a` and an importing one on `b` for `entry` (a YAML
/// `exports:`/`imports:` item body such as `topic: /t`), both logging status every second.
fn pair(net: &Net, a: u32, b: u32, entry: &str) -> (Proc, Proc, Proc) {
    let (cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let robot = net.proxy(
        "robot",
        a,
        &addr,
        &format!("status_interval_s: 1\nexports:\n  - {entry}\n    realm: test\n"),
    );
    let base = net.proxy(
        "base",
        b,
        &addr,
        &format!("status_interval_s: 1\nimports:\n  - {entry}\n    realm: test\n"),
    );
    (cloud, robot, base)
}

#[test]
fn a_volatile_talker_after_a_latched_one_on_the_same_topic_keeps_flowing() {
    let net = Net::new("qos-latched-then-volatile");
    let (_cloud, robot, base) = pair(&net, 61, 62, "topic: /t");
    let listener = python("listener", "listener.py", &["62", "rt/t"]);
    let mut latched = python(
        "latched",
        "talker.py",
        &["61", "rt/t", "latched", "--transient-local", "--depth", "1"],
    );
    assert!(
        wait_line(&listener, "data: latched", T).is_some(),
        "the latched talker never crossed: {}\n{}",
        robot.logs(),
        base.logs()
    );
    latched.kill();
    // A node restarted with other QoS: volatile now.
    let _volatile = python("volatile", "talker.py", &["61", "rt/t", "volatile"]);
    let got = lines(&listener, "data: volatile", 20, T);
    assert_eq!(
        got.len(),
        20,
        "the volatile talker's samples did not cross: {got:?}\nrobot: {}\nbase: {}",
        robot.logs(),
        base.logs()
    );
}

#[test]
fn a_latched_talker_after_a_volatile_one_still_reaches_a_late_listener() {
    let net = Net::new("qos-volatile-then-latched");
    let (_cloud, robot, base) = pair(&net, 63, 64, "topic: /t");
    let listener = python("listener", "listener.py", &["64", "rt/t"]);
    let mut volatile = python("volatile", "talker.py", &["63", "rt/t", "volatile"]);
    assert!(
        wait_line(&listener, "data: volatile", T).is_some(),
        "{}\n{}",
        robot.logs(),
        base.logs()
    );
    volatile.kill();
    // Published once, latched (like /map or /robot_description).
    let _latched = python(
        "latched",
        "talker.py",
        &[
            "63",
            "rt/t",
            "latched",
            "--transient-local",
            "--depth",
            "1",
            "--period",
            "3600",
        ],
    );
    assert_eq!(
        wait_line(&listener, "data: latched", T).as_deref(),
        Some("data: latched 0")
    );
    wait_imported(&base, "/t", 1);
    let late = python("late", "listener.py", &["64", "rt/t", "--transient-local"]);
    assert_eq!(
        wait_line(&late, "data:", T).as_deref(),
        Some("data: latched 0"),
        "the latched sample did not reach a late listener: {}",
        base.logs()
    );
}

#[test]
fn two_latched_talkers_and_a_volatile_one_at_once_all_reach_late_listeners() {
    // Two nodes publishing /tf_static-like latched samples once, and one streaming. Next to
    // them, a late transient-local listener gets both latched samples (it does not match the
    // volatile talker: DDS durability is requested-offered), a late volatile one the stream.
    let net = Net::new("qos-mixed");
    let (_cloud, _robot, base) = pair(&net, 65, 66, "topic: /t");
    let once = ["--transient-local", "--depth", "1", "--period", "3600"];
    let _a = python(
        "a",
        "talker.py",
        &[&["65", "rt/t", "first"], &once[..]].concat(),
    );
    let _b = python(
        "b",
        "talker.py",
        &[&["65", "rt/t", "second"], &once[..]].concat(),
    );
    let _live = python(
        "live",
        "talker.py",
        &["65", "rt/t", "live", "--period", "0.1"],
    );
    wait_imported(&base, "/t", 12);
    let late = python("late", "listener.py", &["66", "rt/t", "--transient-local"]);
    let mut got: BTreeSet<String> = lines(&late, "data:", 2, T).into_iter().collect();
    got.extend(lines(&late, "data:", 1, Duration::from_secs(1)));
    let both: BTreeSet<String> = ["data: first 0", "data: second 0"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(got, both, "{}", base.logs());
    let streaming = python("streaming", "listener.py", &["66", "rt/t"]);
    assert!(wait_line(&streaming, "data: live", T).is_some());
}

#[test]
fn a_keyed_latched_topic_keeps_every_instance_and_forwards_dispose_and_unregister() {
    // 8 robots x 5 updates, reliable, transient-local, KEEP_LAST 1 per instance; then robot 3
    // is disposed and robot 5 unregistered (without auto-dispose). Next to the publisher, a
    // live listener sees both changes, and one that joins late gets robots 0,1,2,4,6,7
    // (update 4) and robot 3's disposal (checked natively with the same peers).
    let net = Net::new("qos-keyed");
    let (_cloud, robot, base) = pair(&net, 67, 68, "dds_topic: fleet_state");
    let go = net.dir.join("lifecycle-go");
    let go_arg = go.to_string_lossy().into_owned();
    let talker = python(
        "talker",
        "keyed.py",
        &[
            "talk",
            "67",
            "fleet_state",
            "--dispose",
            "3",
            "--unregister",
            "5",
            "--no-autodispose",
            "--lifecycle-when",
            &go_arg,
        ],
    );
    assert!(wait_line(&talker, "written", T).is_some());
    wait_log_or_panic(&base, "remote topic announced", &robot);
    // A listener on the far side gets all 8 robots' latest state, then sees the lifecycle
    // changes as they happen.
    let live = python("live", "keyed.py", &["listen", "68", "fleet_state"]);
    let first: BTreeSet<String> = lines(&live, "data", 8, T).into_iter().collect();
    assert_eq!(
        first.len(),
        8,
        "{first:?}
robot: {}
base: {}",
        robot.logs(),
        base.logs()
    );
    assert!(first.iter().all(|l| l.ends_with("update=4")), "{first:?}");
    std::fs::write(&go, b"").unwrap();
    assert!(wait_line(&talker, "done", T).is_some());
    let changes: BTreeSet<String> = lines(&live, "", 2, T).into_iter().collect();
    let expected_changes: BTreeSet<String> =
        ["disposed fleet=f1 robot=3", "unregistered fleet=f1 robot=5"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    assert_eq!(
        changes,
        expected_changes,
        "robot: {}
base: {}",
        robot.logs(),
        base.logs()
    );
    wait_imported(&base, "dds:fleet_state", 10);
    let late = python("late", "keyed.py", &["listen", "68", "fleet_state"]);
    let mut got: BTreeSet<String> = lines(&late, "", 7, T).into_iter().collect();
    // Anything more would have come with the history, right behind these.
    got.extend(lines(&late, "", 1, Duration::from_secs(1)));
    let expected: BTreeSet<String> = [
        "data fleet=f0 robot=0 update=4",
        "data fleet=f1 robot=1 update=4",
        "data fleet=f0 robot=2 update=4",
        "data fleet=f0 robot=4 update=4",
        "data fleet=f0 robot=6 update=4",
        "data fleet=f1 robot=7 update=4",
        "disposed fleet=f1 robot=3",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(got, expected, "base: {}", base.logs());
    assert!(
        robot.logs().contains("keyed type resolved"),
        "{}",
        robot.logs()
    );
}

fn wait_log_or_panic(p: &Proc, needle: &str, other: &Proc) {
    assert!(
        p.wait_log(needle, T),
        "{} never logged {needle:?}: {}\n{}: {}",
        p.name,
        p.logs(),
        other.name,
        other.logs()
    );
}

#[test]
fn a_bulk_type_is_read_by_the_proxys_second_participant_and_still_crosses() {
    // `dds.bulk_types` names std_msgs/String here, so the exporting proxy reads /t on its
    // second DDS participant (its own CycloneDDS domain instance); the samples cross as
    // before.
    let net = Net::new("qos-bulk-intake");
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let robot = net.proxy_with(
        "robot",
        69,
        "bulk_types: [std_msgs/msg/String]",
        &addr,
        "status_interval_s: 1\nexports:\n  - topic: /t\n    realm: test\n",
    );
    let base = net.proxy(
        "base",
        70,
        &addr,
        "status_interval_s: 1\nimports:\n  - topic: /t\n    realm: test\n",
    );
    let _talker = python(
        "talker",
        "talker.py",
        &["69", "rt/t", "bulk", "--period", "0.05"],
    );
    let listener = python("listener", "listener.py", &["70", "rt/t"]);
    let got = lines(&listener, "data: bulk", 20, T);
    assert_eq!(got.len(), 20, "{}\n{}", robot.logs(), base.logs());
    wait_log_or_panic(
        &robot,
        "bulk topics are read by a second DDS participant",
        &base,
    );
    let logs = robot.logs();
    assert!(
        !logs.contains("bulk topics share the proxy's DDS participant"),
        "{logs}"
    );
    // ROS 2 tools find a reader's node through its own participant: the second one announces
    // its reader as a node of its own.
    let tools = python("ros2-tools", "discovery_info.py", &["69"]);
    let want = "node / roam_proxy_robot_bulk readers 1 writers 0";
    assert!(
        wait_line(&tools, want, T).is_some(),
        "no announcement of the bulk reader\n{}",
        robot.logs()
    );
}
