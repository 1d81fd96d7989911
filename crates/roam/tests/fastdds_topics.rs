//! Fast DDS 2.9, the default DDS of ROS 2, through roam: real Fast DDS nodes (Debian's
//! libfastrtps, tests/fastdds/node.cpp, built by tests/fastdds_support) on one side of two roam
//! proxies and a router, CycloneDDS (Python cyclonedds), RustDDS (ros2-client) or Fast DDS nodes
//! on the other, each network its own DDS domain. Every process is started as a user starts it
//! and stopped by the test.
//!
//! Everything stays on loopback. The Fast DDS nodes use no built-in transport (no shared memory),
//! one UDPv4 transport whitelisted to 127.0.0.1, unicast locators 127.0.0.1 with the well-known
//! ports, no multicast, and initial peers 127.0.0.1 without a port, which Fast DDS expands to the
//! SPDP ports of participant ids 0..31: CycloneDDS peers (`roam_dds::loopback_config()`,
//! `ParticipantIndex auto`) listen at one of those, and send their SPDP to indices 0..50, where
//! Fast DDS listens at its own id's port.
//!
//! Domains 200..209 and router ports 18600..18604 are this file's alone. Tests share five pairs
//! of domains (a lock per pair, so two tests never use one domain at once); each test stops its
//! processes with SIGTERM at the end, so the next test on those domains sees no stale participant.
//! RustDDS readers of Fast DDS talkers are in tests/fastdds_rustdds.rs, a process of their own:
//! a RustDDS participant dropped by a test is not gone at once, and with RustDDS tests in this
//! process a Fast DDS listener here was seen to get nothing.

mod common;
mod fastdds_support;
mod rustdds_support;

use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use common::*;
use fastdds_support::*;
use rustdds_support::*;

const T: Duration = Duration::from_secs(40);

/// Samples that must arrive in a run, each once, in order.
const RUN: u64 = 30;

/// Domain pair `i`: domains 200 + 2i and 201 + 2i, router port 18600 + i, held for the test.
struct Pair {
    _guard: MutexGuard<'static, ()>,
    a: u32,
    b: u32,
    router: String,
}

fn pair(i: usize) -> Pair {
    static LOCKS: [Mutex<()>; 5] = [
        Mutex::new(()),
        Mutex::new(()),
        Mutex::new(()),
        Mutex::new(()),
        Mutex::new(()),
    ];
    // A test that failed on this pair poisoned the lock; its processes are gone all the same.
    let guard = LOCKS[i].lock().unwrap_or_else(|e| e.into_inner());
    Pair {
        _guard: guard,
        a: 200 + 2 * i as u32,
        b: 201 + 2 * i as u32,
        router: format!("127.0.0.1:{}", 18600 + i),
    }
}

/// A router, a proxy on domain `a` and one on domain `b` with the given YAML bodies, both
/// logging their status every second.
fn deployment(net: &Net, p: &Pair, robot: &str, base: &str) -> (Proc, Proc, Proc) {
    let (cloud, addr) = net.router("cloud", &p.router, &[]);
    let robot = net.proxy(
        "robot",
        p.a,
        &addr,
        &format!("status_interval_s: 1\n{robot}"),
    );
    let base = net.proxy("base", p.b, &addr, &format!("status_interval_s: 1\n{base}"));
    (cloud, robot, base)
}

/// The N of "PREFIXN".
fn counter(text: &str, prefix: &str) -> u64 {
    text.strip_prefix(prefix)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected message {text:?} (expected {prefix}N)"))
}

/// Reads "PREFIX n" lines until `last` arrives: the numbers must run without a gap, a
/// duplicate or a reordering, from 0 (the talker waited for the exporting proxy's reader, and
/// the importing proxy's writer has matched the listener by then) to `last`. Returns them.
fn run_until(listener: &Proc, prefix: &str, last: u64, why: &dyn Fn() -> String) -> Vec<u64> {
    let first = wait_line(listener, prefix, T)
        .unwrap_or_else(|| panic!("nothing arrived on {}.\n{}", listener.name, why()));
    let mut got = vec![counter(&first, prefix)];
    while *got.last().unwrap() < last {
        let l = wait_line(listener, prefix, Duration::from_secs(10)).unwrap_or_else(|| {
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
        lines(listener, prefix, 1, Duration::from_millis(500)),
        Vec::<String>::new()
    );
    got
}

/// A late joiner's history: lines starting with `prefix`, the first within `T`, each next
/// within 3 s (history comes in one burst), stopping at `n`; then 1 s more for any extra.
/// Sorted (history arrives in no particular order across instances and writers).
fn burst(p: &Proc, prefix: &str, n: usize) -> Vec<String> {
    let mut out = lines(p, prefix, 1, T);
    while !out.is_empty() && out.len() < n {
        let next = lines(p, prefix, 1, Duration::from_secs(3));
        if next.is_empty() {
            break;
        }
        out.extend(next);
    }
    out.extend(lines(p, prefix, 1, Duration::from_secs(1)));
    out.sort();
    out
}

/// A set's members in order, to compare with [`burst`] (which keeps duplicates).
fn sorted(set: BTreeSet<String>) -> Vec<String> {
    set.into_iter().collect()
}

/// How many samples a talked Fast DDS node says it has written so far ("sent N" on stderr).
fn fast_sent(talker: &Proc) -> usize {
    talker
        .stderr
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.starts_with("sent "))
        .count()
}

// ---------------------------------------------------------------------------------------------
// std_msgs/String both ways

/// A Fast DDS talker of "fast 0" .. "fast 59" on `rt/chatter` in `domain` that waits for
/// one matched reader, then for `go` (see [`Go`]) before it publishes.
fn gated_chatter_talker(net: &Net, domain: u32) -> (Proc, Go) {
    let go = Go::new(net, "talker");
    let talker = fastdds(
        "talker",
        "talk",
        domain,
        &[
            "--topic",
            "rt/chatter",
            "--text",
            "fast",
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
    let (mut talker, go) = gated_chatter_talker(&net, p.a);
    let why = || diagnosis(&talker, &robot, &base);
    // The talker matched the exporting proxy's reader (the remote listener's demand made it);
    // it publishes once the importing proxy writes locally: that writer is new, and must
    // match the listener before the first sample, or DDS's volatile semantics drop it.
    wait_for(&talker, "writer matched 1", &why);
    wait_for(&base, "remote topic announced", &why);
    go.now();
    let got = run_until(&listener, "data: fast ", 59, &why);
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
        &[&p.a.to_string(), "rt/chatter", "cyclone"],
    );
    let why = || format!("robot: {}\nbase: {}", robot.logs(), base.logs());
    let first = wait_line(&listener, "data: cyclone ", T)
        .unwrap_or_else(|| panic!("nothing crossed to Fast DDS.\n{}", why()));
    let first = counter(&first, "data: cyclone ");
    let got = run_until_from(&listener, "data: cyclone ", first, first + RUN, &why);
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
        let l = wait_line(listener, prefix, Duration::from_secs(10))
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
    let (mut talker, go) = gated_chatter_talker(&net, p.a);
    let why = || diagnosis(&talker, &robot, &base);
    // Both ends matched their proxy: the talker the exporter's reader, the listener the
    // importer's writer (on Fast DDS this can take a second: samples before it are lost).
    wait_for(&talker, "writer matched 1", &why);
    wait_for(&listener, "reader matched 1", &why);
    go.now();
    let got = run_until(&listener, "data: fast ", 59, &why);
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
            "fast",
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
                let n = counter(&text, "fast ");
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

// ---------------------------------------------------------------------------------------------
// Keyed, transient-local, large

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

#[test]
fn a_20_mb_fastdds_message_arrives_whole() {
    // /big: roam_test/msg/Blob (a sequence<octet>) from Fast DDS to Fast DDS; /map: a 20 MB
    // std_msgs/String from Fast DDS to CycloneDDS.
    const SIZE: usize = 20 << 20;
    let p = pair(1);
    let net = Net::new("fastdds-large");
    let (mut cloud, mut robot, mut base) = deployment(
        &net,
        &p,
        "exports:\n  - topic: /big\n    realm: test\n  - topic: /map\n    realm: test\n",
        "imports:\n  - topic: /big\n    realm: test\n  - topic: /map\n    realm: test\n",
    );
    let why = |robot: &Proc, base: &Proc| format!("robot: {}\nbase: {}", robot.logs(), base.logs());
    let size = SIZE.to_string();
    let mut listener = fastdds(
        "listener",
        "listen",
        p.b,
        &["--type", "blob", "--topic", "rt/big"],
    );
    let go = Go::new(&net, "talker");
    let mut talker = fastdds(
        "talker",
        "talk",
        p.a,
        &[
            "--type",
            "blob",
            "--topic",
            "rt/big",
            "--size",
            &size,
            "--count",
            "3",
            "--rate",
            "1",
            "--wait-match",
            "1",
            "--start-when",
            &go.arg(),
        ],
    );
    wait_for(&talker, "writer matched 1", &|| why(&robot, &base));
    wait_for(&listener, "reader matched 1", &|| why(&robot, &base));
    go.now();
    let got = lines(&listener, "blob", 3, Duration::from_secs(60));
    let expected: Vec<String> = (0..3)
        .map(|i| format!("blob seq={i} len={SIZE} intact=yes"))
        .collect();
    assert_eq!(
        got,
        expected,
        "(fast sent {}).\n{}",
        fast_sent(&talker),
        why(&robot, &base)
    );
    stop(&mut [&mut talker, &mut listener]);

    let mut cyclone = python(
        "cyclone",
        "listener.py",
        &[&p.b.to_string(), "rt/map", "--summary"],
    );
    let go = Go::new(&net, "map");
    let mut map = fastdds(
        "map",
        "talk",
        p.a,
        &[
            "--topic",
            "rt/map",
            "--text",
            "map",
            "--size",
            &size,
            "--count",
            "2",
            "--rate",
            "1",
            "--wait-match",
            "1",
            "--start-when",
            &go.arg(),
        ],
    );
    wait_for(&map, "writer matched 1", &|| why(&robot, &base));
    wait_for(&base, "writing locally topic=rt/map", &|| {
        why(&robot, &base)
    });
    go.now();
    let got = lines(&cyclone, "len:", 2, Duration::from_secs(60));
    let expected: Vec<String> = (0..2)
        .map(|i| {
            let text = format!("map {i}{}", "x".repeat(SIZE));
            format!(
                "len: {} sha256: {}",
                text.len(),
                roam::payload::sha256_hex(text.as_bytes())
            )
        })
        .collect();
    assert_eq!(got, expected, "{}", why(&robot, &base));
    stop(&mut [&mut map, &mut cyclone, &mut robot, &mut base, &mut cloud]);
}

// ---------------------------------------------------------------------------------------------
// The service nodes, natively (the proxy's service tests are tests/services_vendors.rs)

/// `answer a=A b=B sum=S` lines of a client, checked: each is a + b, for this client's a's.
fn answers(client: &Proc, a0: i64, b: i64, calls: i64) -> Vec<String> {
    let got = lines(client, "answer", calls as usize, T);
    let expected: Vec<String> = (0..calls)
        .map(|i| format!("answer a={} b={b} sum={}", a0 + i, a0 + i + b))
        .collect();
    assert_eq!(got, expected, "{}", client.logs());
    got
}

#[test]
fn fastdds_service_clients_get_their_own_answers_from_a_fastdds_server() {
    // rmw_fastrtps's convention inside one domain: three clients at once, 10 calls each; every
    // client matches exactly its own 10 replies by related sample identity and ignores the
    // others' (they all reach every client's reply reader).
    let p = pair(2);
    let mut server = fastdds("server", "server", p.a, &[]);
    let mut clients: Vec<(Proc, i64)> = [0i64, 100, 200]
        .iter()
        .map(|&a0| {
            let c = fastdds(
                &format!("client{a0}"),
                "client",
                p.a,
                &["--calls", "10", "--a", &a0.to_string(), "--b", "7"],
            );
            (c, a0)
        })
        .collect();
    for (c, a0) in &clients {
        assert_eq!(
            wait_line(c, "service available", T).as_deref(),
            Some("service available"),
            "{}",
            c.logs()
        );
        answers(c, *a0, 7, 10);
        let done = wait_line(c, "done", T).expect("client finished");
        assert!(
            done.starts_with("done answered=10 of 10 "),
            "{done}: {}",
            c.logs()
        );
    }
    let served = lines(&server, "request", 30, T);
    assert_eq!(served.len(), 30, "{served:?}");
    for (c, _) in clients.iter_mut() {
        c.wait_exit(T);
    }
    stop(&mut [&mut server]);
}
