//! Finding definitions on disk, against real `share/` trees written from an independent source:
//! PyPI `rosbags` (its ROS 2 Jazzy typestore), by `tests/definitions/gen_trees.py`.
//!
//! - Two ament prefixes (an overlay with sensor_msgs and geometry_msgs as ROS installs them,
//!   `.msg` and generated `.idl` side by side; an underlay with std_msgs and an older
//!   LaserScan that must lose) and a colcon source package (`msg_paths`) with nested custom
//!   types, a service and an action.
//! - Looked-up types give rosbags' own ros2msg text (standard types, byte for byte) or the same
//!   schema (custom ones), and decode rosbags' CDR to rosbags' values.
//! - The same packages shipping `.idl` only load to the same schemas.
//!
//! The error cases (missing types and dependencies, malformed and oversized files, symlink
//! loops, bad `msg_paths`) are in `definitions/errors.rs`, on small hand-made trees.

#[path = "definitions/errors.rs"]
mod errors;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use roam_edge::definitions::{DefinitionSource, Format, RootLayout, SearchRoot};
use roam_msg::schema::MessageDef;
use roam_msg::{Kind, TypeName, TypeRegistry};
use serde_json::Value;
use tempfile::TempDir;

const SETUP_HINT: &str =
    "this test needs python3 with the `rosbags` package (PyPI): run scripts/setup.sh";

/// The trees and the expectations `gen_trees.py` wrote.
struct Trees {
    dir: TempDir,
    expected: serde_json::Map<String, Value>,
}

impl Trees {
    fn generate() -> Trees {
        let dir = tempfile::tempdir().expect("temp dir");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/definitions/gen_trees.py");
        let out = Command::new("python3")
            .arg(&script)
            .arg(dir.path())
            .output()
            .unwrap_or_else(|e| panic!("cannot run python3 ({e}); {SETUP_HINT}"));
        assert!(
            out.status.success(),
            "gen_trees.py failed; {SETUP_HINT}\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read(dir.path().join("expected.json")).expect("expected.json");
        let expected = match serde_json::from_slice(&text).expect("expected.json is JSON") {
            Value::Object(m) => m,
            other => panic!("expected.json is not an object: {other}"),
        };
        Trees { dir, expected }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// `AMENT_PREFIX_PATH` of the given prefixes, in order.
    fn ament(&self, prefixes: &[&str]) -> OsString {
        std::env::join_paths(prefixes.iter().map(|p| self.path(p))).expect("joinable paths")
    }

    /// What a robot with the custom package in `msg_paths` and two sourced prefixes has.
    fn installed(&self) -> DefinitionSource {
        DefinitionSource::from_config(
            &[self.path("ws/src/my_robot_msgs")],
            Some(&self.ament(&["overlay", "underlay"])),
        )
        .expect("valid msg_paths")
    }
}

fn without_defaults(def: &MessageDef) -> MessageDef {
    let mut def = def.clone();
    for f in &mut def.fields {
        f.default = None;
    }
    def
}

/// Every definition in rosbags' ros2msg text equals the one roam loaded from files; the root is
/// compared without its name (rosbags registers a service's structures as messages). Defaults
/// are compared only when `with_defaults` (rosbags drops them).
fn assert_same_schema(
    label: &str,
    loaded: &TypeRegistry,
    root: &TypeName,
    oracle: &str,
    text: &str,
    with_defaults: bool,
) {
    let mut theirs = TypeRegistry::new();
    theirs
        .add_ros2msg(oracle, text)
        .unwrap_or_else(|e| panic!("{label}: rosbags' text does not parse: {e}"));
    let norm = |d: &MessageDef| {
        if with_defaults {
            d.clone()
        } else {
            without_defaults(d)
        }
    };
    let closure = theirs.closure(oracle).expect("complete");
    for (i, want) in closure.iter().enumerate() {
        let name = if i == 0 {
            root.full()
        } else {
            want.name.full()
        };
        let got = loaded
            .get(&name)
            .unwrap_or_else(|| panic!("{label}: {name} was not loaded"));
        let mut want = norm(want);
        want.name = got.name.clone();
        assert_eq!(norm(got), want, "{label}: {name} differs from rosbags'");
    }
}

/// rosbags' CDR of empty, random and extreme values decodes to rosbags' values.
fn assert_decodes(label: &str, ty: &roam_msg::MessageType, cases: &Value) {
    let cases = cases.as_array().expect("cases");
    assert!(!cases.is_empty());
    for (i, case) in cases.iter().enumerate() {
        let cdr = hex::decode(case["cdr"].as_str().expect("hex")).expect("hex");
        let mut out = Vec::new();
        ty.cdr_to_json(&cdr, &mut out)
            .unwrap_or_else(|e| panic!("{label} case {i}: {e}"));
        let got: Value = serde_json::from_slice(&out).expect("roam writes JSON");
        assert_eq!(got, case["json"], "{label} case {i}");
    }
}

#[test]
fn installed_and_configured_types_are_what_rosbags_defines() {
    let trees = Trees::generate();
    let src = trees.installed();
    assert!(matches!(&src.roots()[0].layout, RootLayout::Package(n) if n == "my_robot_msgs"));
    for (name, entry) in &trees.expected {
        let def = src.lookup(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(def.name().full(), *name);
        let oracle = entry["oracle_type"].as_str().expect("oracle_type");
        if let Some(text) = entry["def"].as_str() {
            if name.starts_with("my_robot_msgs/") {
                assert_same_schema(name, def.registry(), def.name(), oracle, text, false);
                // The text is roam's and parses back to what was loaded.
                let mut back = TypeRegistry::new();
                back.add_ros2msg(name, def.ros2msg())
                    .expect("roam's text parses");
                for d in back.closure(name).expect("complete") {
                    assert_eq!(Some(d), def.registry().get(&d.name.full()), "{name}");
                }
            } else {
                // Standard types: rosbags' text, byte for byte.
                assert_eq!(def.ros2msg(), text, "{name}");
                assert_same_schema(name, def.registry(), def.name(), oracle, text, true);
            }
        }
        assert_decodes(name, def.schema(), &entry["cases"]);
    }

    // Which files: the overlay's LaserScan, .msg over the .idl installed beside it, and its
    // dependencies from the underlay (the overlay's std_msgs holds no interfaces).
    let scan = src.lookup("sensor_msgs/msg/LaserScan").unwrap();
    assert_eq!(
        scan.files(),
        [
            trees.path("overlay/share/sensor_msgs/msg/LaserScan.msg"),
            trees.path("underlay/share/std_msgs/msg/Header.msg"),
        ]
    );
    assert!(!scan.ros2msg().contains("older_laserscan"));
    // builtin_interfaces comes embedded in roam-msg: its files are never read.
    assert!(scan
        .files()
        .iter()
        .all(|f| !f.to_string_lossy().contains("builtin_interfaces")));

    // Every spelling finds the one cached definition.
    for spelling in [
        "sensor_msgs/LaserScan",
        "sensor_msgs::msg::dds_::LaserScan_",
        " sensor_msgs/msg/LaserScan ",
    ] {
        assert!(
            Arc::ptr_eq(&scan, &src.lookup(spelling).unwrap()),
            "{spelling}"
        );
    }
    let res = src
        .lookup("my_robot_msgs::srv::dds_::GetTrack_Response_")
        .unwrap();
    assert_eq!(res.name().full(), "my_robot_msgs/srv/GetTrack_Response");
    assert_eq!(
        res.files()[0],
        trees.path("ws/src/my_robot_msgs/srv/GetTrack.srv")
    );
    for dep in [
        "ws/src/my_robot_msgs/msg/Track.msg",
        "ws/src/my_robot_msgs/msg/Status.msg",
        "overlay/share/geometry_msgs/msg/Pose.msg",
        "overlay/share/sensor_msgs/msg/LaserScan.msg",
    ] {
        assert!(
            res.files().contains(&trees.path(dep)),
            "{dep}: {:?}",
            res.files()
        );
    }
    // A short name finds a service's structure, as ros2msg `MSG:` lines and roslibpy write it.
    let short = src.lookup("my_robot_msgs/GetTrack_Request").unwrap();
    assert_eq!(short.name().full(), "my_robot_msgs/srv/GetTrack_Request");
    assert_eq!(short.ros2msg(), "uint32 id\nbool with_history true\n");
    // The derived types of services and actions.
    for derived in [
        "my_robot_msgs/srv/GetTrack_Event",
        "my_robot_msgs/action/FollowTrack_Feedback",
        "my_robot_msgs/action/FollowTrack_SendGoal_Response",
        "my_robot_msgs/action/FollowTrack_GetResult_Request",
        "my_robot_msgs/action/FollowTrack_GetResult_Response",
    ] {
        let d = src
            .lookup(derived)
            .unwrap_or_else(|e| panic!("{derived}: {e}"));
        assert_eq!(d.name().full(), derived);
    }
    let result = src
        .lookup("my_robot_msgs/action/FollowTrack_GetResult_Response")
        .unwrap();
    assert!(result
        .ros2msg()
        .contains("\nMSG: my_robot_msgs/action/FollowTrack_Result\n"));
    assert!(result.ros2msg().contains("\nMSG: my_robot_msgs/Status\n"));
    // The defaults are the file's (rosbags has none to give).
    let track = src.lookup("my_robot_msgs/msg/Track").unwrap();
    assert!(
        track.ros2msg().contains("int32 confidence 50\n"),
        "{}",
        track.ros2msg()
    );
    assert!(track
        .ros2msg()
        .starts_with("uint8 KIND_PERSON=1\nstring NAME_PREFIX=trk_\n"));
}

#[test]
fn idl_only_packages_load_to_the_same_schemas() {
    let trees = Trees::generate();
    let from_msg = trees.installed();
    let from_idl = DefinitionSource::new(vec![SearchRoot::prefix(trees.path("idl_only"))]);
    for name in [
        "sensor_msgs/msg/LaserScan",
        "sensor_msgs/msg/PointCloud2",
        "geometry_msgs/msg/PoseStamped",
        "my_robot_msgs/msg/Track",
        "my_robot_msgs/srv/GetTrack_Request",
        "my_robot_msgs/srv/GetTrack_Response",
        "my_robot_msgs/action/FollowTrack_SendGoal_Request",
        "my_robot_msgs/action/FollowTrack_FeedbackMessage",
        "my_robot_msgs/action/FollowTrack_GetResult_Response",
    ] {
        let a = from_msg
            .lookup(name)
            .unwrap_or_else(|e| panic!("{name} (.msg): {e}"));
        let b = from_idl
            .lookup(name)
            .unwrap_or_else(|e| panic!("{name} (.idl): {e}"));
        assert!(b
            .files()
            .iter()
            .all(|f| f.extension() == Some("idl".as_ref())));
        assert_eq!(a.name(), b.name());
        for def in a.registry().closure(name).expect("complete") {
            assert_eq!(
                Some(def),
                b.registry().get(&def.name.full()),
                "{name}: {} differs between .msg and .idl",
                def.name
            );
        }
        assert_eq!(a.ros2msg(), b.ros2msg(), "{name}");
        if let Some(entry) = trees.expected.get(name) {
            assert_decodes(name, b.schema(), &entry["cases"]);
        }
    }
}

#[test]
fn listing_names_every_interface_once() {
    let trees = Trees::generate();
    let src = trees.installed();
    let listing = src.list();
    assert!(listing.problems.is_empty(), "{:?}", listing.problems);
    let find = |name: &str| {
        let t = TypeName::parse(name).unwrap();
        let found: Vec<_> = listing.interfaces.iter().filter(|i| i.name == t).collect();
        assert_eq!(found.len(), 1, "{name}: {found:?}");
        found[0].clone()
    };
    let scan = find("sensor_msgs/msg/LaserScan");
    assert_eq!(
        scan.path,
        trees.path("overlay/share/sensor_msgs/msg/LaserScan.msg")
    );
    assert_eq!(scan.format, Format::Msg);
    assert_eq!(
        find("std_msgs/msg/Header").path,
        trees.path("underlay/share/std_msgs/msg/Header.msg")
    );
    assert_eq!(find("my_robot_msgs/srv/GetTrack").format, Format::Srv);
    assert_eq!(
        find("my_robot_msgs/action/FollowTrack").format,
        Format::Action
    );
    // As many as rosbags has, each once (the underlay's sensor_msgs is hidden by the overlay's).
    let count = |pkg: &str, kind: Kind| {
        listing
            .interfaces
            .iter()
            .filter(|i| i.name.package == pkg && i.name.kind == kind)
            .count()
    };
    let ls = |dir: &str| std::fs::read_dir(trees.path(dir)).unwrap().count();
    assert_eq!(
        count("sensor_msgs", Kind::Msg) * 2,
        ls("overlay/share/sensor_msgs/msg")
    );
    assert_eq!(
        count("std_msgs", Kind::Msg),
        ls("underlay/share/std_msgs/msg")
    );
    assert_eq!(count("my_robot_msgs", Kind::Msg), 2);
    let mut names: Vec<_> = listing.interfaces.iter().map(|i| &i.name).collect();
    let n = names.len();
    names.dedup();
    assert_eq!(names.len(), n, "sorted and unique");
    // Everything listed loads (the derived structures of services and actions stand in for
    // them).
    for i in &listing.interfaces {
        let name = match i.name.kind {
            Kind::Msg => i.name.full(),
            Kind::Srv => format!("{}_Request", i.name.full()),
            Kind::Action => format!("{}_SendGoal_Request", i.name.full()),
        };
        src.lookup(&name).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}
