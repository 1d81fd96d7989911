//! `roam record` writes what crosses a realm to MCAP: a String talker and a PointStamped
//! talker (Python cyclonedds nodes, as rmw_cyclonedds puts them on the wire) behind a real
//! `roam proxy` that announces their definitions; the recorder runs on a machine with no
//! definitions at all. Two readers we do not own read the file back: the `mcap` package
//! (decoding with mcap-ros2-support from the file's schemas) and `rosbags`.

use std::collections::BTreeSet;

use crate::common::*;
use crate::gateway_support::*;

#[test]
fn record_writes_realm_topics_that_mcap_and_rosbags_read_back_exactly() {
    let net = Net::new("record-mcap");
    let defs = definitions(&net.dir);
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    // The talker stamps "hello N" with source timestamp STAMP + N: the file's publish times
    // must be those (rosbag2's send time), not when a proxy sealed or the recorder got them.
    let stamp: u64 = 1_700_000_000_000_000_001;
    let _talker = python(
        "talker",
        "talker.py",
        &["93", "rt/chatter", "hello", "--stamp", &stamp.to_string()],
    );
    let _points = dds("points", &["talk", "93", "rt/point_out"]);
    let robot = net.proxy(
        "robot",
        93,
        &addr,
        &(format!("msg_paths: [{}]\n", defs.display())
            + "exports:\n  - topic: /chatter\n    realm: test\n  - topic: /point_out\n    realm: test\n"),
    );
    net.issue("recorder", "client");
    let out = net.dir.join("run.mcap");
    let mut rec = Proc::spawn_without_ament(
        "record",
        &[
            "record".into(),
            "/chatter".into(),
            "/point_out".into(),
            "-o".into(),
            out.display().to_string(),
            "--realm".into(),
            net.realm.clone(),
            "--connect".into(),
            addr.clone(),
            "--pki".into(),
            net.pki.clone(),
            "--id".into(),
            "recorder".into(),
            "--count".into(),
            "40".into(),
        ],
    );
    let status = rec.wait_exit(T).unwrap_or_else(|| {
        panic!(
            "roam record did not finish.\nrecord: {}\nproxy: {}",
            rec.logs(),
            robot.logs()
        )
    });
    assert!(status.success(), "record failed: {}", rec.logs());
    assert!(
        rec.logs().contains("recorded 40 messages"),
        "{}",
        rec.logs()
    );

    let lines = read_mcap(&out);
    assert!(
        lines.iter().any(|l| l.starts_with("rosbags ")),
        "rosbags read nothing: {lines:?}"
    );
    let with = |p: &str| -> Vec<&String> { lines.iter().filter(|l| l.starts_with(p)).collect() };
    // Both channels, with ros2msg schemas and cdr messages, 40 messages between them.
    let channels = with("mcap ");
    let chatter = channels.iter().find(|l| l.starts_with("mcap /chatter "));
    let points = channels.iter().find(|l| l.starts_with("mcap /point_out "));
    let (chatter, points) = (
        chatter.unwrap_or_else(|| panic!("{lines:?}")),
        points.unwrap_or_else(|| panic!("{lines:?}")),
    );
    assert!(
        chatter.starts_with("mcap /chatter std_msgs/msg/String ros2msg/cdr "),
        "{chatter}"
    );
    assert!(
        points.starts_with("mcap /point_out geometry_msgs/msg/PointStamped ros2msg/cdr "),
        "{points}"
    );
    let n = |l: &str| l.rsplit(' ').next().unwrap().parse::<usize>().unwrap();
    assert_eq!(n(chatter) + n(points), 40);

    // The exact samples: the talker's "hello N" with N increasing by one, and every point as
    // published.
    for prefix in ["mcap-msg", "rosbags-msg"] {
        let mut hellos = Vec::new();
        for l in with(&format!("{prefix} /chatter ")) {
            let j: serde_json::Value =
                serde_json::from_str(l.splitn(3, ' ').nth(2).unwrap()).unwrap();
            let d = j["data"].as_str().unwrap().to_string();
            hellos.push(d.strip_prefix("hello ").unwrap().parse::<u64>().unwrap());
        }
        assert_eq!(hellos.len(), n(chatter), "{prefix}");
        if prefix == "mcap-msg" {
            let published = publish_times(&lines, "/chatter", "hello ");
            let expected: Vec<(u64, u64)> = hellos.iter().map(|n| (*n, stamp + n)).collect();
            assert_eq!(
                published, expected,
                "publish times are not the source timestamps"
            );
        }
        assert!(
            hellos.windows(2).all(|w| w[1] == w[0] + 1),
            "{prefix}: not consecutive: {hellos:?}"
        );
        let mut zs = BTreeSet::new();
        for l in with(&format!("{prefix} /point_out ")) {
            let j: serde_json::Value =
                serde_json::from_str(l.splitn(3, ' ').nth(2).unwrap()).unwrap();
            assert_eq!(j["header"]["frame_id"], "map", "{l}");
            assert_eq!(j["header"]["stamp"]["sec"], 7, "{l}");
            assert_eq!(j["point"]["x"], 1.5, "{l}");
            assert_eq!(j["point"]["y"], -2.25, "{l}");
            let z = j["point"]["z"].as_f64().unwrap();
            assert_eq!(z, j["header"]["stamp"]["nanosec"].as_f64().unwrap(), "{l}");
            zs.insert(z as u64);
        }
        assert_eq!(zs.len(), n(points), "{prefix}: a point twice");
    }
    let rb = with("rosbags ");
    assert!(
        rb.iter()
            .any(|l| l.starts_with("rosbags /chatter std_msgs/msg/String ")),
        "{rb:?}"
    );
    assert!(
        rb.iter()
            .any(|l| l.starts_with("rosbags /point_out geometry_msgs/msg/PointStamped ")),
        "{rb:?}"
    );
}
