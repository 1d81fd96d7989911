//! Topics describe themselves: a proxy whose machine has the interface definitions (a `share/`
//! tree written from rosbags' typestore, and a custom package) announces them with its
//! topics, and `roam sub --json` / `roam pub --json` on a machine with none (no
//! AMENT_PREFIX_PATH, no --msg-path) read and write those types as JSON. Real Python
//! cyclonedds peers publish and read the messages.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;

const T: Duration = Duration::from_secs(30);

/// A machine's definitions: `share/` trees from rosbags (gen_trees.py) and the test's custom
/// package `roam_test_msgs` (the nested type crates/roam-dds/tests/py/typed.py publishes).
fn definitions(dir: &Path) -> Vec<PathBuf> {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../roam-edge/tests/definitions/gen_trees.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(dir.join("trees"))
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "gen_trees.py failed (run scripts/setup.sh for rosbags): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pkg = dir.join("custom/roam_test_msgs/msg");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("Robot.msg"),
        "uint32 id\nfloat64[] pose\nstring label\n",
    )
    .unwrap();
    std::fs::write(
        pkg.join("Fleet.msg"),
        "# A fleet and its robots.\nstring name\nRobot[] robots\nstring[] tags\n",
    )
    .unwrap();
    vec![
        dir.join("trees/overlay"),
        dir.join("trees/underlay"),
        dir.join("custom/roam_test_msgs"),
    ]
}

fn msg_paths_yaml(paths: &[PathBuf]) -> String {
    let list: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    format!("msg_paths: [{}]\n", list.join(", "))
}

/// `roam sub --json` as a machine without definitions runs it.
fn sub_json(net: &Net, topic: &str, ty: &str, router: &str, id: &str) -> Proc {
    net.issue(id, "client");
    let args: Vec<String> = [
        "sub",
        topic,
        "--type",
        ty,
        "--realm",
        &net.realm,
        "--pki",
        &net.pki,
        "--id",
        id,
        "--connect",
        router,
        "--json",
        "--count",
        "2",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    Proc::spawn_without_ament(&format!("sub-{id}"), &args)
}

fn json_line(p: &Proc) -> serde_json::Value {
    let end = Instant::now() + T;
    while Instant::now() < end {
        if let Some(l) = p.line(Duration::from_millis(200)) {
            return serde_json::from_str(&l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"));
        }
    }
    panic!("{} printed no JSON: {}", p.name, p.logs());
}

#[test]
fn a_member_without_definitions_reads_a_laserscan_and_a_custom_nested_type_as_json() {
    let net = Net::new("json-sub");
    let paths = definitions(&net.dir);
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let robot = net.proxy(
        "robot",
        81,
        &addr,
        &format!(
            "{}exports:\n  - topic: /scan\n    realm: test\n  - topic: /fleet\n    realm: test\n",
            msg_paths_yaml(&paths)
        ),
    );
    let _scan = python("scan", "typed.py", &["talk", "laserscan", "81"]);
    let _fleet = python("fleet", "typed.py", &["talk", "fleet", "81"]);

    let scan = sub_json(&net, "/scan", "sensor_msgs/msg/LaserScan", &addr, "laptop1");
    let v = json_line(&scan);
    assert_eq!(v["header"]["frame_id"], "laser", "{}", robot.logs());
    assert_eq!(v["header"]["stamp"]["sec"], 1_700_000_000);
    assert_eq!(v["header"]["stamp"]["nanosec"], 42);
    let ranges = v["ranges"].as_array().unwrap();
    assert_eq!(ranges.len(), 100_000);
    for i in [0usize, 1, 999, 54_321, 99_999] {
        let want = (((i * 37) % 1000) as f64 / 100.0) as f32;
        assert_eq!(ranges[i].as_f64().unwrap() as f32, want, "ranges[{i}]");
    }
    assert!(v["intensities"]
        .as_array()
        .unwrap()
        .iter()
        .all(|x| x == 1.0));
    assert_eq!(v["range_max"].as_f64().unwrap() as f32, 30.0);

    let fleet = sub_json(&net, "/fleet", "roam_test_msgs/Fleet", &addr, "laptop2");
    let v = json_line(&fleet);
    assert_eq!(v["name"], "warehouse");
    assert_eq!(v["tags"], serde_json::json!(["a", "bb", "ccc"]));
    let robots = v["robots"].as_array().unwrap();
    assert_eq!(robots.len(), 50);
    assert_eq!(robots[3]["id"], 3);
    assert_eq!(robots[3]["label"], "robot-3");
    assert_eq!(
        robots[3]["pose"],
        serde_json::json!([4.5, -0.75, 3.0 / 7.0])
    );
}

#[test]
fn a_member_without_definitions_publishes_json_that_a_dds_listener_reads() {
    let net = Net::new("json-pub");
    let paths = definitions(&net.dir);
    let (cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    // The importing network has the definitions and announces them for what it imports.
    let base = net.proxy(
        "base",
        83,
        &addr,
        &format!(
            "{}imports:\n  - topic: /fleet\n    realm: test\n",
            msg_paths_yaml(&paths)
        ),
    );
    let listener = python("listener", "typed.py", &["listen", "fleet", "83"]);
    net.issue("laptop", "client");
    let message = serde_json::json!({
        "name": "warehouse",
        "robots": (0..50i64).map(|i| serde_json::json!({
            // -0 * 0.25 is 0.0 in Python, as the talker computes it (not -0.0).
            "id": i, "pose": [i as f64 * 1.5, (-i) as f64 * 0.25, i as f64 / 7.0],
            "label": format!("robot-{i}"),
        })).collect::<Vec<_>>(),
        "tags": ["a", "bb", "ccc"],
    })
    .to_string();
    let args: Vec<String> = [
        "pub",
        "/fleet",
        "--type",
        "roam_test_msgs/msg/Fleet",
        "--realm",
        &net.realm,
        "--pki",
        &net.pki,
        "--id",
        "laptop",
        "--connect",
        &addr,
        "--json",
        &message,
        "--count",
        "3",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut publisher = Proc::spawn_without_ament("pub-laptop", &args);
    // typed.py prints the same summary for this message as its own talker does for fleet().
    let end = Instant::now() + T;
    let mut got = None;
    while got.is_none() && Instant::now() < end {
        if let Some(l) = listener.line(Duration::from_millis(200)) {
            if l.starts_with("summary fleet") {
                got = Some(l);
            }
        }
    }
    let got = got.unwrap_or_else(|| {
        panic!(
            "the DDS listener got nothing.\npub: {}\nbase: {}\ncloud: {}",
            publisher.logs(),
            base.logs(),
            cloud.logs()
        )
    });
    assert!(
        got.starts_with("summary fleet name=warehouse robots=50 tags=a,bb,ccc sha256="),
        "{got}"
    );
    let talker_summary = {
        let talker = python("reference", "typed.py", &["talk", "fleet", "84"]);
        talker.line(T).expect("the reference talker's summary")
    };
    assert_eq!(
        got, talker_summary,
        "the same message as the Python talker's own"
    );
    assert_eq!(publisher.wait_exit(T).map(|s| s.success()), Some(true));
}
