//! The realm directory end to end: a router, two proxies in two DDS domains with Python
//! ROS 2 stand-ins (talkers, a service server), exports and imports of topics and a service,
//! and `roam topics` (a real process, with a client identity) listing exactly what is
//! offered and imported, with the right types; a proxy that stops is gone at once, one that
//! is killed is gone after its expiry.

use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::{json, Value};

const T: Duration = Duration::from_secs(60);

/// `roam topics` with a client identity, through `router`, with `extra` flags.
fn topics_args(net: &Net, router: &str, extra: &[&str]) -> Vec<String> {
    let base = [
        "topics",
        "--realm",
        &net.realm,
        "--pki",
        &net.pki,
        "--id",
        "laptop",
        "--connect",
        router,
    ];
    base.iter().chain(extra).map(|s| s.to_string()).collect()
}

/// Runs `roam topics` once with `extra` flags; its stdout lines.
fn topics(net: &Net, router: &str, extra: &[&str]) -> Vec<String> {
    let args = topics_args(net, router, extra);
    let mut p = Proc::spawn("topics", &args, None);
    let status = p.wait_exit(Duration::from_secs(30));
    assert!(
        status.is_some_and(|s| s.success()),
        "roam topics {extra:?}: {status:?}\n{}",
        p.logs()
    );
    std::iter::from_fn(|| p.line(Duration::from_millis(100))).collect()
}

/// The JSON listing, reduced to what the test compares: per topic or service its types and
/// who offers and imports it with which types (and QoS for topics).
fn reduce(doc: &Value) -> Value {
    let side = |parties: &Value| -> Value {
        parties
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let mut q = json!({"member": p["member"], "types": p["types"]});
                if let Some(qos) = p.get("qos") {
                    q["qos"] = qos.clone();
                }
                q
            })
            .collect()
    };
    let list = |key: &str| -> Value {
        doc[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                json!({"name": t["name"], "types": t["types"],
                       "offered_by": side(&t["offered_by"]), "imported_by": side(&t["imported_by"])})
            })
            .collect()
    };
    json!({"members": doc["members"], "topics": list("topics"), "services": list("services"),
           "actions": doc["actions"]})
}

fn parse(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
}

fn qos(reliable: bool, transient_local: bool, depth: u32) -> Value {
    json!({"reliable": reliable, "transient_local": transient_local, "depth": depth})
}

#[test]
fn roam_topics_lists_what_every_proxy_offers_and_imports_and_forgets_those_gone() {
    let net = Net::new("directory");
    net.issue("laptop", "client");
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    // The robot exports two topics and a service, and would export /idle: nobody publishes
    // it, so it is not offered. The base imports them, and /scan, which nobody offers.
    let mut robot = net.proxy(
        "robot",
        101,
        &addr,
        "exports:\n  - topic: /chatter\n    realm: test\n  - topic: /status\n    realm: test\n    as: /robot/status\n  - topic: /idle\n    realm: test\n  - service: /add_two_ints\n    realm: test\n",
    );
    let mut base = net.proxy(
        "base",
        102,
        &addr,
        "imports:\n  - topic: /chatter\n    realm: test\n  - topic: /robot/status\n    realm: test\n  - topic: /scan\n    realm: test\n  - service: /add_two_ints\n    realm: test\n",
    );
    let _talker = python("talker", "talker.py", &["101", "rt/chatter", "hello"]);
    let _latched = python(
        "latched",
        "talker.py",
        &[
            "101",
            "rt/status",
            "ok",
            "--transient-local",
            "--depth",
            "1",
        ],
    );
    let _server = python("server", "service.py", &["server", "101", "add_two_ints"]);

    let string = "std_msgs/msg/String";
    let add = "example_interfaces/srv/AddTwoInts";
    let expected = json!({
        "members": ["base", "robot"],
        "topics": [
            {"name": "/chatter", "types": [string],
             "offered_by": [{"member": "robot", "types": [string], "qos": [qos(true, false, 10)]}],
             "imported_by": [{"member": "base", "types": [string], "qos": [qos(true, false, 10)]}]},
            {"name": "/robot/status", "types": [string],
             "offered_by": [{"member": "robot", "types": [string], "qos": [qos(true, true, 1)]}],
             "imported_by": [{"member": "base", "types": [string], "qos": [qos(true, true, 1)]}]},
            {"name": "/scan", "types": [],
             "offered_by": [],
             "imported_by": [{"member": "base", "types": []}]},
        ],
        "services": [
            {"name": "/add_two_ints", "types": [add],
             "offered_by": [{"member": "robot", "types": [add]}],
             "imported_by": [{"member": "base", "types": [add]}]},
        ],
        "actions": [],
    });

    // Discovery, announcements and the importers' writers take a moment: ask until the
    // listing is complete (each run listens for one announce period after the first entry).
    let end = Instant::now() + T;
    let doc = loop {
        let out = topics(&net, &addr, &["--json", "--wait", "10"]);
        assert_eq!(out.len(), 1, "one JSON document: {out:?}");
        let doc = parse(&out[0]);
        if reduce(&doc) == expected {
            break doc;
        }
        assert!(
            Instant::now() < end,
            "the listing never became {expected:#}\nlast: {:#}\n{}\n{}",
            reduce(&doc),
            robot.logs(),
            base.logs()
        );
    };
    assert_eq!(doc["realm"], "test");

    // The plain form is `ros2 topic list -t`'s; -v adds sections and who does what.
    assert_eq!(
        topics(&net, &addr, &[]),
        [
            "/chatter [std_msgs/msg/String]",
            "/robot/status [std_msgs/msg/String]",
            "/scan []"
        ]
    );
    let verbose = topics(&net, &addr, &["-v"]).join("\n");
    for want in [
        "Topics:",
        " * /robot/status [std_msgs/msg/String]",
        "     offered by robot (reliable, transient-local, depth 1)",
        "Services:",
        " * /add_two_ints [example_interfaces/srv/AddTwoInts]",
        "     imported by base",
        "Members: base, robot",
    ] {
        assert!(verbose.contains(want), "{want:?} not in:\n{verbose}");
    }

    // A watcher follows the directory while the proxies go.
    let watcher = Proc::spawn(
        "watcher",
        &topics_args(&net, &addr, &["--json", "--watch"]),
        None,
    );
    let until = |what: &str, want: &dyn Fn(&Value) -> bool| -> Value {
        let end = Instant::now() + T;
        loop {
            if let Some(l) = watcher.line(Duration::from_millis(200)) {
                let doc = parse(&l);
                if want(&doc) {
                    return doc;
                }
            }
            assert!(
                Instant::now() < end,
                "watcher: {what} not seen\n{}",
                watcher.logs()
            );
        }
    };
    until("both members", &|d| reduce(d) == expected);

    // The base stops cleanly: its last, empty entry removes it at once.
    assert!(
        base.terminate().is_some_and(|s| s.success()),
        "{}",
        base.logs()
    );
    let d = until("the base gone", &|d| d["members"] == json!(["robot"]));
    let names: Vec<&str> = d["topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["/chatter", "/robot/status"],
        "/scan was only imported"
    );
    assert_eq!(d["services"][0]["imported_by"], json!([]));
    // A new listing agrees.
    let fresh = parse(&topics(&net, &addr, &["--json", "--wait", "10"])[0]);
    assert_eq!(fresh["members"], json!(["robot"]));

    // The robot is killed: it says nothing, and is forgotten once silent for four periods.
    robot.kill();
    let d = until("the robot expired", &|d| d["members"] == json!([]));
    assert_eq!(d["topics"], json!([]));
    assert_eq!(d["services"], json!([]));
}
