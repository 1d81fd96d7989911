//! ROS 2 nodes on RustDDS (the `ros2-client` crate) inside a test process: a node on
//! loopback, rclcpp's default QoS, std_msgs/String topics, and a talker thread. Shared by the
//! vendor tests (tests/rustdds_vendors/topics.rs, tests/fastdds_suites/topics.rs, tests/fastdds_rustdds.rs).
//!
//! The participant is restricted to 127.0.0.1 with `with_only_networks`: `lo` has no
//! MULTICAST flag, so it opens no multicast sender, joins no group and advertises only
//! 127.0.0.1 locators; its "same host loopback" discovery sends SPDP by unicast to 127.0.0.1
//! at the ports of participant ids 0..11, where CycloneDDS listens, and CycloneDDS's unicast
//! SPDP reaches RustDDS the same way.
#![allow(dead_code)]

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ros2_client::dds::rustdds::DomainParticipantBuilder;
use ros2_client::qos::{Durability, History, WhenFull};
use ros2_client::{Context, MessageTypeName, Name, Node, NodeName, NodeOptions, QosProfile};

/// A ROS 2 node on RustDDS in `domain`, on loopback only.
pub fn rustdds_node(domain: u32, name: &str) -> Node {
    let domain = u16::try_from(domain).expect("a DDS domain id");
    let participant = DomainParticipantBuilder::new(domain)
        .with_only_networks([Ipv4Addr::LOCALHOST])
        .build()
        .expect("RustDDS participant");
    let context = Context::from_domain_participant(participant).expect("ros2-client context");
    context
        .new_node(
            NodeName::new("/", name).unwrap(),
            NodeOptions::new()
                .enable_rosout(false)
                .start_parameter_services(false),
        )
        .expect("ros2-client node")
}

/// The ROS 2 default for a topic (rclcpp's `QoS(10)`): reliable, volatile, keep last 10.
/// ros2-client's own `publisher_default()` keeps only 1.
pub fn ros_default_qos() -> QosProfile {
    QosProfile::publisher_default()
        .reliability_reliable(WhenFull::DEFAULT)
        .durability(Durability::Volatile)
        .history(History::KeepLast { depth: 10 })
}

/// `/name` with std_msgs/msg/String (DDS: `rt/name`, `std_msgs::msg::dds_::String_`).
pub fn string_topic(node: &Node, name: &str) -> ros2_client::dds::rustdds::Topic {
    node.create_topic(
        &Name::new("/", name).unwrap(),
        MessageTypeName::new("std_msgs", "String"),
        &ros_default_qos(),
    )
    .expect("topic")
}

/// A ros2-client publisher thread on `/name`: "rustdds 0", "rustdds 1", ... every 50 ms
/// until dropped.
pub struct RustTalker {
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RustTalker {
    pub fn start(domain: u32, name: &str) -> RustTalker {
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let (stop2, sent2) = (stop.clone(), sent.clone());
        let mut node = rustdds_node(domain, "rustdds_talker");
        let topic = string_topic(&node, name);
        let publisher = node
            .create_publisher::<String>(&topic, None)
            .expect("publisher");
        let thread = std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop2.load(Ordering::Relaxed) {
                if publisher.publish(format!("rustdds {n}")).is_ok() {
                    n += 1;
                    sent2.store(n, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            drop(publisher);
            drop(node);
        });
        RustTalker {
            stop,
            sent,
            thread: Some(thread),
        }
    }

    /// How many it has published so far.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }
}

impl Drop for RustTalker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
