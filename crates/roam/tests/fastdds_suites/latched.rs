//! Transient-local (latched) topics from Fast DDS 2.9 through roam: listeners on Fast DDS and
//! CycloneDDS that start on the far side after the talker finished get its history. The Fast DDS
//! nodes, the domain pairs and the deployment are those of tests/fastdds_suites/topics.rs
//! (tests/support/fastdds_common.rs).

use std::collections::BTreeSet;

use crate::common::*;
use crate::fastdds_common::*;
use crate::fastdds_support::*;

// ---------------------------------------------------------------------------------------------
// Transient-local, late listeners

#[test]
fn a_late_listener_gets_a_finished_fastdds_talkers_latched_sample() {
    // The usual latched topic (/tf_static, /map, /robot_description: transient-local, depth
    // 1): a Fast DDS talker publishes 3 samples and then nothing; a Fast DDS and a CycloneDDS
    // listener that start on the far side afterwards get the last one. Fast DDS does not
    // announce its history depth, so the importer keeps up to the ROS default of 10
    // (docs/compatibility.md): a late listener may see the older ones first, but nothing
    // that was not published, and always the newest.
    let p = pair(3);
    let net = Net::new("fastdds-latched-1");
    let (mut cloud, mut robot, mut base) = deployment(
        &net,
        &p,
        &export("topic: /latched"),
        &import("topic: /latched"),
    );
    let mut talker = fastdds(
        "talker",
        "talk",
        p.a,
        &[
            "--topic",
            "rt/latched",
            "--text",
            "latched",
            "--transient-local",
            "--depth",
            "1",
            "--count",
            "3",
        ],
    );
    assert!(wait_line(&talker, "done", T).is_some());
    let why = || format!("robot: {}\nbase: {}", robot.logs(), base.logs());
    let mut fast = fastdds(
        "late-fast",
        "listen",
        p.b,
        &["--topic", "rt/latched", "--transient-local", "--depth", "1"],
    );
    let published = ["data: latched 0", "data: latched 1", "data: latched 2"];
    let got = burst(&fast, "data:", 3);
    assert!(
        got.contains(&"data: latched 2".to_string())
            && got.len() <= 3
            && got.iter().all(|l| published.contains(&l.as_str())),
        "late Fast DDS listener got {got:?}.\n{}",
        why()
    );
    let mut cyclone = python(
        "late-cyclone",
        "listener.py",
        &[&p.b.to_string(), "rt/latched", "--transient-local"],
    );
    let got = burst(&cyclone, "data:", 3);
    assert!(
        got.contains(&"data: latched 2".to_string())
            && got.len() <= 3
            && got.iter().all(|l| published.contains(&l.as_str())),
        "late CycloneDDS listener got {got:?}.\n{}",
        why()
    );
    stop(&mut [
        &mut fast,
        &mut cyclone,
        &mut talker,
        &mut robot,
        &mut base,
        &mut cloud,
    ]);
}

#[test]
fn a_late_listener_gets_a_finished_fastdds_talkers_transient_local_samples() {
    // A latched Fast DDS talker publishes 5 samples (depth 5) and then nothing; listeners that
    // start on the far side afterwards, on Fast DDS and on CycloneDDS, get exactly those 5.
    let p = pair(0);
    let net = Net::new("fastdds-latched");
    let (mut cloud, mut robot, mut base) = deployment(
        &net,
        &p,
        &export("topic: /latched"),
        &import("topic: /latched"),
    );
    let mut talker = fastdds(
        "talker",
        "talk",
        p.a,
        &[
            "--topic",
            "rt/latched",
            "--text",
            "latched",
            "--transient-local",
            "--depth",
            "5",
            "--count",
            "5",
        ],
    );
    assert!(wait_line(&talker, "done", T).is_some());
    let why = || format!("robot: {}\nbase: {}", robot.logs(), base.logs());
    let expected: BTreeSet<String> = (0..5).map(|i| format!("data: latched {i}")).collect();
    let mut fast = fastdds(
        "late-fast",
        "listen",
        p.b,
        &["--topic", "rt/latched", "--transient-local"],
    );
    let got = burst(&fast, "data:", 5);
    assert_eq!(
        got,
        sorted(expected.clone()),
        "late Fast DDS listener.\n{}",
        why()
    );
    wait_imported(&base, "/latched", 5);
    let mut cyclone = python(
        "late-cyclone",
        "listener.py",
        &[&p.b.to_string(), "rt/latched", "--transient-local"],
    );
    let got = burst(&cyclone, "data:", 5);
    assert_eq!(
        got,
        sorted(expected.clone()),
        "late CycloneDDS listener.\n{}",
        why()
    );
    stop(&mut [
        &mut fast,
        &mut cyclone,
        &mut talker,
        &mut robot,
        &mut base,
        &mut cloud,
    ]);
}
