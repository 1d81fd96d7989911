//! ROS 2 distributions on either side of one realm: the type hash Jazzy and later put in every
//! endpoint's USER_DATA (`typehash=RIHS01_...;`, what `ros2 topic info -v` and rosbag2 read)
//! crosses with the topic, a Humble network's writers get none, and a Humble talker's topic
//! gets the hash of its definition in a Jazzy network. Through real `roam router` and
//! `roam proxy` processes; the talkers and the inspector of what writers carry are Python
//! cyclonedds (crates/roam-dds/tests/py/type_hash.py).
//!
//! A Fast DDS 2.9 talker (Debian's libfastrtps, tests/fastdds: what a Humble node on
//! rmw_fastrtps runs) carries no hash either, and its topic gets its definition's.
//!
//! Everything stays on loopback (see tests/vendor.rs). Domains 180..184, 197 and 198 and
//! router ports 18180, 18181 and 18190 are this file's alone.

mod common;
mod fastdds_support;
mod gateway_support;

use std::time::Duration;

use common::*;

/// std_msgs/msg/String's type hash (what rmw puts in USER_DATA for it since Iron).
const STRING_HASH: &str = "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18";
const T: Duration = Duration::from_secs(30);

fn talker(domain: u32, distro: &str) -> Proc {
    python(
        "talker",
        "type_hash.py",
        &["talk", &domain.to_string(), "chatter", distro],
    )
}

/// What the first writer of `/chatter` that `domain` discovers carries in USER_DATA.
fn writer_user_data(domain: u32, logs: &dyn Fn() -> String) -> String {
    let inspector = python(
        "inspector",
        "type_hash.py",
        &["inspect", &domain.to_string(), "chatter"],
    );
    let line = wait_line(&inspector, "writer ", T);
    line.unwrap_or_else(|| panic!("no writer of /chatter in domain {domain}: {}", logs()))
}

#[test]
fn a_jazzy_talkers_type_hash_crosses_and_a_humble_network_gets_none() {
    let net = Net::new("distros-jazzy");
    let (_router, addr) = net.router("cloud", "127.0.0.1:18180", &[]);
    let topic = "  - topic: /chatter\n    realm: test\n";
    let robot = net.proxy("jazzy-robot", 180, &addr, &format!("exports:\n{topic}"));
    let jazzy = net.proxy("jazzy-base", 181, &addr, &format!("imports:\n{topic}"));
    let humble = net.proxy_with(
        "humble-base",
        182,
        "ros_distro: humble",
        &addr,
        &format!("imports:\n{topic}"),
    );
    let _talker = talker(180, "jazzy");
    let logs = || {
        format!(
            "\n--- robot:\n{}\n--- jazzy-base:\n{}\n--- humble-base:\n{}",
            robot.logs(),
            jazzy.logs(),
            humble.logs()
        )
    };
    assert_eq!(
        writer_user_data(181, &logs),
        format!("writer typehash={STRING_HASH};roam-proxy=1;"),
        "{}",
        logs()
    );
    assert_eq!(
        writer_user_data(182, &logs),
        "writer roam-proxy/1",
        "{}",
        logs()
    );
}

#[test]
fn a_humble_talkers_topic_gets_its_definitions_type_hash_in_a_jazzy_network() {
    let net = Net::new("distros-humble");
    let defs = gateway_support::definitions(&net.dir);
    let (_router, addr) = net.router("cloud", "127.0.0.1:18181", &[]);
    let topic = "  - topic: /chatter\n    realm: test\n";
    let robot = net.proxy_with(
        "humble-robot",
        183,
        "ros_distro: humble",
        &addr,
        &format!("msg_paths: [{}]\nexports:\n{topic}", defs.display()),
    );
    let base = net.proxy("jazzy-base", 184, &addr, &format!("imports:\n{topic}"));
    let _talker = talker(183, "humble");
    let logs = || format!("\n--- robot:\n{}\n--- base:\n{}", robot.logs(), base.logs());
    // Computed by the importer from the definition the robot's proxy announced; the same
    // as rosbags' (and rosidl's) hash of std_msgs/msg/String.
    assert_eq!(
        writer_user_data(184, &logs),
        format!("writer typehash={STRING_HASH};roam-proxy=1;"),
        "{}",
        logs()
    );
}

#[test]
fn a_fastdds_humble_talkers_topic_gets_its_definitions_type_hash_in_a_jazzy_network() {
    let net = Net::new("distros-fastdds");
    let defs = gateway_support::definitions(&net.dir);
    let (_router, addr) = net.router("cloud", "127.0.0.1:18190", &[]);
    let topic = "  - topic: /chatter\n    realm: test\n";
    let robot = net.proxy_with(
        "humble-robot",
        197,
        "ros_distro: humble",
        &addr,
        &format!("msg_paths: [{}]\nexports:\n{topic}", defs.display()),
    );
    let base = net.proxy("jazzy-base", 198, &addr, &format!("imports:\n{topic}"));
    let _talker = fastdds_support::fastdds(
        "fastdds-talker",
        "talk",
        197,
        &["--topic", "rt/chatter", "--text", "fast"],
    );
    let logs = || format!("\n--- robot:\n{}\n--- base:\n{}", robot.logs(), base.logs());
    assert_eq!(
        writer_user_data(198, &logs),
        format!("writer typehash={STRING_HASH};roam-proxy=1;"),
        "{}",
        logs()
    );
}
