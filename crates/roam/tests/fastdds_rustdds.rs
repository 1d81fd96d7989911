//! RustDDS readers (ros2-client 0.12, rustdds 0.15) of Fast DDS 2.9 talkers through roam: a
//! late transient-local subscription, a 20 MB message, a late keyed reader. Real Fast DDS nodes
//! (tests/fastdds) and two roam proxies and a router, as in tests/fastdds_suites/topics.rs; the RustDDS
//! participants live in this test process.
//!
//! A process of its own: a RustDDS participant dropped by a test is not gone at once, and with
//! these tests in fastdds_topics' process a Fast DDS listener there was seen to get nothing.
//!
//! Domains 210..215 and router ports 18605..18607: also used by tests/rustdds_vendors/services.rs, a
//! test binary never run at the same time as this one; each test here has its own pair.

#[path = "support/common.rs"]
mod common;
#[path = "support/fastdds_support.rs"]
mod fastdds_support;
#[path = "support/rustdds_support.rs"]
mod rustdds_support;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::*;
use fastdds_support::*;
use rustdds_support::*;

const T: Duration = Duration::from_secs(40);

/// Domain pair `i` (0..3): domains 210 + 2i and 211 + 2i, router port 18605 + i.
struct Pair {
    a: u32,
    b: u32,
    router: String,
}

fn pair(i: u32) -> Pair {
    Pair {
        a: 210 + 2 * i,
        b: 211 + 2 * i,
        router: format!("127.0.0.1:{}", 18605 + i),
    }
}

/// A router, a proxy on domain `a` (`robot`) and one on domain `b` (`base`).
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

fn sorted(set: BTreeSet<String>) -> Vec<String> {
    set.into_iter().collect()
}

/// `data fleet=f<k%2> robot=k update=4` for robots 0..8: what a late transient-local reader of
/// an 8 x 5 keyed talker with depth 1 per instance gets.
fn last_updates() -> BTreeSet<String> {
    (0..8)
        .map(|k| format!("data fleet=f{} robot={k} update=4", k % 2))
        .collect()
}

/// A reliable, transient-local ros2-client QoS keeping `depth` samples.
fn latched_qos(depth: i32) -> ros2_client::QosProfile {
    let depth = depth as _;
    use ros2_client::qos::{Durability, History};
    ros_default_qos()
        .durability(Durability::TransientLocal)
        .history(History::KeepLast { depth })
}

/// Takes what a ros2-client subscription has until `enough` says so or `timeout` passes,
/// then 1 s more (to see anything extra).
fn take_until<M: ros2_client::Message + 'static>(
    sub: &ros2_client::Subscription<M>,
    timeout: Duration,
    enough: impl Fn(&[M]) -> bool,
) -> Vec<M> {
    let mut got = Vec::new();
    let end = Instant::now() + timeout;
    let mut extra: Option<Instant> = None;
    while Instant::now() < extra.unwrap_or(end) {
        match sub.take() {
            Ok(Some((m, _))) => got.push(m),
            _ => std::thread::sleep(Duration::from_millis(5)),
        }
        if extra.is_none() && enough(&got) {
            extra = Some(Instant::now() + Duration::from_secs(1));
        }
    }
    got
}

#[test]
fn a_late_rustdds_subscription_gets_a_finished_fastdds_talkers_transient_local_samples() {
    // A latched Fast DDS talker publishes 5 samples (depth 5) and then nothing; a ros2-client
    // subscription (transient-local, depth 5) made on the far side afterwards gets those 5.
    let p = pair(0);
    let net = Net::new("fastdds-latched-rustdds");
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
    wait_imported(&base, "/latched", 5);
    let why = || format!("robot: {}\nbase: {}", robot.logs(), base.logs());
    let mut node = rustdds_node(p.b, "late_rustdds");
    let topic = node
        .create_topic(
            &ros2_client::Name::new("/", "latched").unwrap(),
            ros2_client::MessageTypeName::new("std_msgs", "String"),
            &latched_qos(5),
        )
        .expect("topic");
    let sub = node
        .create_subscription::<String>(&topic, Some(latched_qos(5)))
        .expect("subscription");
    let mut got = take_until(&sub, T, |g| g.len() >= 5);
    got.sort();
    let expected: Vec<String> = (0..5).map(|i| format!("latched {i}")).collect();
    assert_eq!(got, expected, "late ros2-client subscription.\n{}", why());
    drop(sub);
    drop(node);
    stop(&mut [&mut talker, &mut robot, &mut base, &mut cloud]);
}

/// roam_test/msg/Blob as ros2-client reads it.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Blob {
    seq: u32,
    data: Vec<u8>,
}
impl ros2_client::Message for Blob {}

impl Blob {
    /// Whether every byte is the Fast DDS talker's pattern for its sequence number
    /// (`blob_byte` in tests/fastdds/node.cpp).
    fn intact(&self) -> bool {
        let seq = self.seq as usize;
        self.data
            .iter()
            .enumerate()
            .all(|(i, b)| *b as usize == (seq * 31 + i * 7 + (i >> 16)) % 251)
    }
}

#[test]
fn a_20_mb_fastdds_message_reaches_a_rustdds_subscription_whole() {
    const SIZE: usize = 20 << 20;
    let p = pair(1);
    let net = Net::new("fastdds-large-rustdds");
    let (mut cloud, mut robot, mut base) =
        deployment(&net, &p, &export("topic: /big"), &import("topic: /big"));
    let why = || format!("robot: {}\nbase: {}", robot.logs(), base.logs());
    let mut node = rustdds_node(p.b, "big_rustdds");
    let topic = node
        .create_topic(
            &ros2_client::Name::new("/", "big").unwrap(),
            ros2_client::MessageTypeName::new("roam_test", "Blob"),
            &ros_default_qos(),
        )
        .expect("topic");
    let sub = node
        .create_subscription::<Blob>(&topic, Some(ros_default_qos()))
        .expect("subscription");
    let size = SIZE.to_string();
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
    wait_for(&talker, "writer matched 1", &why);
    go.now();
    // The subscription may match the importing proxy's writer after the first blob went out
    // (a volatile reader gets what is written after it matched): the last must arrive, and
    // every one that does arrive whole and in order.
    let got = take_until(&sub, Duration::from_secs(90), |g| {
        g.last().is_some_and(|b| b.seq == 2)
    });
    let seqs: Vec<u32> = got.iter().map(|b| b.seq).collect();
    assert!(seqs.last() == Some(&2), "blobs {seqs:?}.\n{}", why());
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    for b in &got {
        assert_eq!(b.data.len(), SIZE, "blob {}", b.seq);
        assert!(b.intact(), "blob {} is not what was sent", b.seq);
    }
    drop(sub);
    drop(node);
    stop(&mut [&mut talker, &mut robot, &mut base, &mut cloud]);
}

/// roam_test::RobotState's two @key fields, as RustDDS keys it.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
struct RobotKey {
    fleet: String,
    robot: u32,
}

impl ros2_client::dds::rustdds::cdr_encoding_size::CdrEncodingSize for RobotKey {
    fn cdr_encoding_max_size() -> ros2_client::dds::rustdds::cdr_encoding_size::CdrEncodingMaxSize {
        // A string: unbounded (RustDDS hashes such keys with MD5).
        ros2_client::dds::rustdds::cdr_encoding_size::CdrEncodingMaxSize::Unbounded
    }
}
impl ros2_client::dds::rustdds::Key for RobotKey {}

/// tests/py/keyed.py's roam_test::RobotState as RustDDS reads it.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct RobotState {
    fleet: String,
    robot: u32,
    update: u32,
    note: String,
}

impl ros2_client::dds::rustdds::Keyed for RobotState {
    type K = RobotKey;
    fn key(&self) -> RobotKey {
        RobotKey {
            fleet: self.fleet.clone(),
            robot: self.robot,
        }
    }
}

#[test]
fn a_late_keyed_rustdds_reader_gets_every_instance_of_a_fastdds_talker() {
    // 8 robots x 5 updates from a Fast DDS node, transient-local, keep last 1 per instance;
    // a RustDDS reader of the keyed type made on the far side afterwards gets each robot's
    // last update, filed under its own instance. (RustDDS 0.15 reports no matched
    // publications for CycloneDDS writers even while it reads them, so the test uses the
    // late joiner's history rather than a live reader gated on a match.)
    use ros2_client::dds::rustdds::{
        policy, with_key::Sample, DomainParticipantBuilder, Keyed, QosPolicyBuilder, TopicKind,
    };
    let p = pair(2);
    let net = Net::new("fastdds-keyed-rustdds");
    let (mut cloud, mut robot, mut base) = deployment(
        &net,
        &p,
        &export("dds_topic: fleet_state"),
        &import("dds_topic: fleet_state"),
    );
    let why = || format!("robot: {}\nbase: {}", robot.logs(), base.logs());
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
    assert!(wait_line(&talker, "written", T).is_some());
    wait_imported(&base, "dds:fleet_state", 8);
    let participant = DomainParticipantBuilder::new(p.b as u16)
        .with_only_networks([std::net::Ipv4Addr::LOCALHOST])
        .build()
        .expect("RustDDS participant");
    let qos = QosPolicyBuilder::new()
        .reliability(policy::Reliability::Reliable {
            max_blocking_time: ros2_client::dds::rustdds::Duration::from_millis(100),
        })
        .durability(policy::Durability::TransientLocal)
        .history(policy::History::KeepLast { depth: 1 })
        .build();
    let topic = participant
        .create_topic(
            "fleet_state".into(),
            "roam_test::RobotState".into(),
            &qos,
            TopicKind::WithKey,
        )
        .expect("topic");
    let subscriber = participant.create_subscriber(&qos).expect("subscriber");
    let mut reader = subscriber
        .create_datareader_cdr::<RobotState>(&topic, Some(qos))
        .expect("keyed reader");
    let mut got = Vec::new();
    let end = Instant::now() + T;
    let mut extra: Option<Instant> = None;
    while Instant::now() < extra.unwrap_or(end) {
        match reader.take_next_sample() {
            Ok(Some(s)) => {
                if let Sample::Value(v) = s.value() {
                    // The instance RustDDS filed it under is the one its fields name.
                    assert_eq!(s.key(), Keyed::key(v));
                    got.push(format!(
                        "data fleet={} robot={} update={}",
                        v.fleet, v.robot, v.update
                    ));
                }
            }
            _ => std::thread::sleep(Duration::from_millis(5)),
        }
        if extra.is_none() && got.len() >= 8 {
            extra = Some(Instant::now() + Duration::from_secs(1));
        }
    }
    got.sort();
    assert_eq!(
        got,
        sorted(last_updates()),
        "late RustDDS reader across roam.\n{}",
        why()
    );
    drop(reader);
    drop(subscriber);
    drop(participant);
    stop(&mut [&mut talker, &mut robot, &mut base, &mut cloud]);
}
