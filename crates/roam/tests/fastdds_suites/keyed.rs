//! Keyed topics between Fast DDS 2.9 and CycloneDDS through roam (tests/py/keyed.py's
//! roam_test::RobotState, two @key fields): live listeners get every sample, late
//! transient-local listeners every instance's last update. The Fast DDS nodes, the domain pairs
//! and the deployment are those of tests/fastdds_suites/topics.rs (tests/support/fastdds_common.rs).

use std::collections::BTreeSet;
use std::time::Duration;

use crate::common::*;
use crate::fastdds_common::*;
use crate::fastdds_support::*;

// ---------------------------------------------------------------------------------------------
// Keyed

/// `data fleet=f<k%2> robot=k update=4` for robots 0..8: what a late transient-local listener
/// of an 8 x 5 keyed talker with depth 1 per instance gets.
fn last_updates() -> BTreeSet<String> {
    (0..8)
        .map(|k| format!("data fleet=f{} robot={k} update=4", k % 2))
        .collect()
}

/// Every `data fleet=.. robot=k update=u` line of an 8 x 5 keyed talker.
fn all_updates() -> BTreeSet<String> {
    (0..5)
        .flat_map(|u| (0..8).map(move |k| format!("data fleet=f{} robot={k} update={u}", k % 2)))
        .collect()
}

#[test]
fn a_keyed_fastdds_topic_reaches_live_fastdds_and_cyclonedds_listeners() {
    // 8 robots x 5 updates (tests/py/keyed.py's roam_test::RobotState, two @key fields) from a
    // Fast DDS node, once the exporting proxy reads: listeners on the far side, on Fast DDS and
    // on CycloneDDS, each get all 40 samples, every key and field intact.
    let p = pair(4);
    let net = Net::new("fastdds-keyed-live");
    let (mut cloud, mut robot, mut base) = deployment(
        &net,
        &p,
        &export("dds_topic: fleet_state"),
        &import("dds_topic: fleet_state"),
    );
    let why = || format!("robot: {}\nbase: {}", robot.logs(), base.logs());
    let dom_b = p.b.to_string();
    let mut fast = fastdds(
        "fast",
        "listen",
        p.b,
        &["--type", "keyed", "--topic", "fleet_state", "--depth", "10"],
    );
    let mut cyclone = python(
        "cyclone",
        "keyed.py",
        &[
            "listen",
            &dom_b,
            "fleet_state",
            "--volatile",
            "--depth",
            "10",
            "--say-matched",
        ],
    );
    let go = Go::new(&net, "talker");
    let mut talker = fastdds(
        "talker",
        "talk",
        p.a,
        // Depth 10 per instance: with keep-last 1 Fast DDS's asynchronous writer may send only
        // each robot's latest update of a burst, which DDS allows.
        &[
            "--type",
            "keyed",
            "--topic",
            "fleet_state",
            "--depth",
            "10",
            "--wait-match",
            "1",
            "--start-when",
            &go.arg(),
        ],
    );
    wait_for(&talker, "writer matched 1", &why);
    // The listeners are volatile: the importing proxy's writer must exist (and the Fast DDS
    // listener have matched it) before the talker starts, or its first samples go nowhere.
    assert!(base.wait_log("remote topic announced", T), "{}", why());
    wait_for(&fast, "reader matched 1", &why);
    assert!(
        wait_line(&cyclone, "reader matched", T).is_some(),
        "the CycloneDDS listener never matched: {}\n{}",
        cyclone.logs(),
        why()
    );
    // And the importing proxy's writer has matched both (its side of discovery can lag the
    // readers' side: a volatile sample goes only to readers it knows).
    assert!(
        base.wait_log("local readers of an import: 2", T),
        "{}",
        why()
    );
    go.now();
    assert!(wait_line(&talker, "written", T).is_some());
    for l in [&fast, &cyclone] {
        let got = lines(l, "data", 40, T);
        let mut all: Vec<String> = got.clone();
        all.extend(lines(l, "data", 1, Duration::from_secs(1)));
        assert_eq!(all.len(), 40, "{}: {all:?}\n{}", l.name, why());
        let set: BTreeSet<String> = all.into_iter().collect();
        assert_eq!(set, all_updates(), "{}.\n{}", l.name, why());
    }
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
fn a_keyed_fastdds_topic_keeps_every_instance_for_late_listeners() {
    // 8 robots x 5 updates from a Fast DDS node, reliable, transient-local, keep last 1 per
    // instance (the type is tests/py/keyed.py's roam_test::RobotState, two @key fields). Next
    // to the talker, a late listener gets every robot's last update; across roam it must too.
    let p = pair(4);
    let net = Net::new("fastdds-keyed");
    let (mut cloud, mut robot, mut base) = deployment(
        &net,
        &p,
        &export("dds_topic: fleet_state"),
        &import("dds_topic: fleet_state"),
    );
    let mut talker = fastdds(
        "talker",
        "talk",
        p.a,
        &[
            "--type",
            "keyed",
            "--topic",
            "fleet_state",
            "--transient-local",
        ],
    );
    let why = || format!("robot: {}\nbase: {}", robot.logs(), base.logs());
    assert!(wait_line(&talker, "written", T).is_some());
    // Natively, in the talker's own domain, a late Fast DDS listener gets all 8.
    let mut native = fastdds(
        "native",
        "listen",
        p.a,
        &[
            "--type",
            "keyed",
            "--topic",
            "fleet_state",
            "--transient-local",
        ],
    );
    let got = burst(&native, "data", 8);
    assert_eq!(got, sorted(last_updates()), "natively");

    assert!(base.wait_log("remote topic announced", T), "{}", why());
    // A live CycloneDDS listener on the far side.
    let dom_b = p.b.to_string();
    let mut live = python("live", "keyed.py", &["listen", &dom_b, "fleet_state"]);
    let first = burst(&live, "data", 8);
    assert_eq!(
        first,
        sorted(last_updates()),
        "CycloneDDS across roam.\n{}",
        why()
    );
    wait_imported(&base, "dds:fleet_state", 8);
    // A late Fast DDS listener on the far side.
    let mut late = fastdds(
        "late",
        "listen",
        p.b,
        &[
            "--type",
            "keyed",
            "--topic",
            "fleet_state",
            "--transient-local",
        ],
    );
    let got = burst(&late, "data", 8);
    assert_eq!(
        got,
        sorted(last_updates()),
        "late Fast DDS across roam.\n{}",
        why()
    );
    stop(&mut [
        &mut late,
        &mut live,
        &mut native,
        &mut talker,
        &mut robot,
        &mut base,
        &mut cloud,
    ]);
}

#[test]
fn a_keyed_cyclonedds_topic_reaches_a_late_fastdds_listener_with_every_instance() {
    // The other way: tests/py/keyed.py's CycloneDDS talker (8 robots x 5 updates, transient-
    // local, keep last 1 per instance; CycloneDDS announces XTypes type information, so the
    // proxy keeps the instances apart) and a Fast DDS listener that joins late on the far side.
    let p = pair(4);
    let net = Net::new("cyclone-keyed-to-fastdds");
    let (mut cloud, mut robot, mut base) = deployment(
        &net,
        &p,
        &export("dds_topic: fleet_state"),
        &import("dds_topic: fleet_state"),
    );
    let why = || format!("robot: {}\nbase: {}", robot.logs(), base.logs());
    let mut talker = python(
        "talker",
        "keyed.py",
        &["talk", &p.a.to_string(), "fleet_state"],
    );
    assert!(wait_line(&talker, "written", T).is_some());
    wait_imported(&base, "dds:fleet_state", 8);
    let mut late = fastdds(
        "late",
        "listen",
        p.b,
        &[
            "--type",
            "keyed",
            "--topic",
            "fleet_state",
            "--transient-local",
        ],
    );
    let got = burst(&late, "data", 8);
    assert_eq!(
        got,
        sorted(last_updates()),
        "late Fast DDS across roam.\n{}",
        why()
    );
    assert!(robot.logs().contains("keyed type resolved"), "{}", why());
    stop(&mut [&mut late, &mut talker, &mut robot, &mut base, &mut cloud]);
}
