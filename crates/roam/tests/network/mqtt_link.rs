//! roam links through an untrusted MQTT broker: two DDS networks joined only through
//! Mosquitto, a paho client subscribed to `#` capturing everything the broker carries.
//!
//! Domains 151 and 152 are this file's alone.

use crate::common::*;
use crate::mqtt_support::*;

#[test]
fn two_networks_joined_only_through_mosquitto_which_sees_no_name_type_or_payload() {
    let dir = test_dir("link");
    // A broker that refuses packets over 64 KiB, as hosted brokers do: messages larger than
    // that cross as several segments.
    let mut broker = Broker::configure_with(&dir, None, "max_packet_size 65536\n");
    broker.start();
    let port = broker.port.to_string();
    let url = format!("mqtt://127.0.0.1:{port}/warehouse-7");
    let sniffer = peer("sniffer", &["sniff", &port, "#"]);
    let net = Net::new("mqtt-link");
    let (hub, _) = net.router_with("hub", "127.0.0.1:0", &[], &["--listen-mqtt", &url]);
    let robot = net.proxy(
        "robot",
        151,
        &url,
        "exports:\n  - topic: /secret_topic\n    realm: test\n",
    );
    let cloud = net.proxy(
        "cloud",
        152,
        &url,
        "imports:\n  - topic: /secret_topic\n    realm: test\n",
    );
    let listener = python(
        "listener",
        "listener.py",
        &["152", "rt/secret_topic", "--summary"],
    );
    let _talker = python(
        "talker",
        "talker.py",
        &[
            "151",
            "rt/secret_topic",
            "classified",
            "--pad",
            "150000",
            "--period",
            "0.1",
        ],
    );
    let got = lines(&listener, "len: ", 5, T);
    assert_eq!(
        got.len(),
        5,
        "hub: {}\nrobot: {}\ncloud: {}",
        hub.logs(),
        robot.logs(),
        cloud.logs()
    );
    for l in &got {
        assert!(
            l.starts_with("len: 15001"),
            "a 150 kB message arrives whole: {l}"
        );
    }

    // What the broker carried: hashed topics, and nothing readable in any payload.
    let captured = lines(&sniffer, "hex ", 50, T);
    assert!(captured.len() >= 50, "{}", captured.len());
    for l in &captured {
        let (topic, payload) = l["hex ".len()..].split_once(' ').unwrap();
        assert!(topic.starts_with("roam/"), "{topic}");
        for word in ["secret", "warehouse", "test", "std_msgs", "classified"] {
            assert!(!topic.contains(word), "{topic}");
        }
        let bytes = decode_hex(payload);
        for word in [&b"secret_topic"[..], b"std_msgs", b"classified", b"String_"] {
            assert!(
                !bytes.windows(word.len()).any(|w| w == word),
                "{} found on {topic}",
                String::from_utf8_lossy(word)
            );
        }
    }

    // The broker crashes and comes back: the links come back by themselves.
    broker.kill();
    assert!(robot.wait_log("lost; reconnecting", T), "{}", robot.logs());
    assert!(cloud.wait_log("lost; reconnecting", T), "{}", cloud.logs());
    broker.start();
    let before = listener_count(&listener);
    let after = lines(&listener, "len: ", 3, T);
    assert_eq!(
        after.len(),
        3,
        "after the broker restart ({before} drained): robot: {}",
        robot.logs()
    );
    assert!(
        robot.logs().matches(") up").count() >= 2,
        "{}",
        robot.logs()
    );
}

fn listener_count(p: &Proc) -> usize {
    let mut n = 0;
    while p.line(std::time::Duration::from_millis(200)).is_some() {
        n += 1;
    }
    n
}

fn decode_hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}
