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
//! Everything stays on loopback (see tests/rustdds_vendors/topics.rs). Domains 180..184, 197 and 198 and
//! router ports 18180, 18181 and 18190 are this file's alone.

use std::time::Duration;

use crate::common::*;

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

/// What the writers of `/chatter` that `domain` discovers carry in USER_DATA, one line
/// each, up to the first that is `expected` (or all seen in `T`), and the inspector's
/// details of each (participant, type, QoS). Not only the first: one `make test` run saw a
/// writer with no USER_DATA in the importing domain before the exporting proxy had announced
/// anything (so not the import's); a failure's message shows whose each writer was.
fn writer_user_data(domain: u32, expected: &str) -> (Vec<String>, Vec<String>) {
    let inspector = python(
        "inspector",
        "type_hash.py",
        &["inspect", &domain.to_string(), "chatter"],
    );
    let end = std::time::Instant::now() + T;
    let (mut seen, mut details) = (Vec::new(), Vec::new());
    while std::time::Instant::now() < end {
        let Some(l) = inspector.line(Duration::from_millis(100)) else {
            continue;
        };
        if l.starts_with("detail ") {
            details.push(l);
        } else if l.starts_with("writer ") {
            let done = l == expected;
            seen.push(l);
            if done {
                break;
            }
        }
    }
    (seen, details)
}

/// Asserts that `domain` has a writer of `/chatter` carrying `expected`.
fn assert_writer(domain: u32, expected: &str, logs: &dyn Fn() -> String) {
    let (seen, details) = writer_user_data(domain, expected);
    assert_eq!(
        seen.last().map(String::as_str),
        Some(expected),
        "writers of /chatter in domain {domain}: {seen:?}\n{details:#?}{}",
        logs()
    );
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
    assert_writer(
        181,
        &format!("writer typehash={STRING_HASH};roam-proxy=1;"),
        &logs,
    );
    assert_writer(182, "writer roam-proxy/1", &logs);
}

#[test]
fn a_humble_talkers_topic_gets_its_definitions_type_hash_in_a_jazzy_network() {
    let net = Net::new("distros-humble");
    let defs = crate::gateway_support::definitions(&net.dir);
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
    assert_writer(
        184,
        &format!("writer typehash={STRING_HASH};roam-proxy=1;"),
        &logs,
    );
}

#[test]
fn a_fastdds_humble_talkers_topic_gets_its_definitions_type_hash_in_a_jazzy_network() {
    let net = Net::new("distros-fastdds");
    let defs = crate::gateway_support::definitions(&net.dir);
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
    let _talker = crate::fastdds_support::fastdds(
        "fastdds-talker",
        "talk",
        197,
        &["--topic", "rt/chatter", "--text", "fast"],
    );
    let logs = || format!("\n--- robot:\n{}\n--- base:\n{}", robot.logs(), base.logs());
    assert_writer(
        198,
        &format!("writer typehash={STRING_HASH};roam-proxy=1;"),
        &logs,
    );
}
