use super::*;
use std::time::Duration;

#[test]
fn ros_msg_type_is_mqtt_clients_cdr() {
    let t = RosMsgType {
        md5: String::new(),
        name: "std_msgs/msg/String".into(),
        definition: String::new(),
        stamped: true,
    };
    let b = t.encode();
    // header; md5 "" (len 1, NUL, pad 3); name (len 20); definition "" (len 1, NUL); bool.
    let mut want = vec![0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0];
    want.extend_from_slice(b"std_msgs/msg/String\0");
    want.extend_from_slice(&[1, 0, 0, 0, 0, 1]);
    assert_eq!(b, want);
    assert_eq!(RosMsgType::decode(&b).unwrap(), t);
}

#[test]
fn a_big_endian_ros_msg_type_reads_too() {
    let mut b = vec![0, 0, 0, 0];
    for s in ["", "a/msg/B", ""] {
        while (b.len() - 4) % 4 != 0 {
            b.push(0);
        }
        b.extend_from_slice(&(s.len() as u32 + 1).to_be_bytes());
        b.extend_from_slice(s.as_bytes());
        b.push(0);
    }
    b.push(0);
    let t = RosMsgType::decode(&b).unwrap();
    assert_eq!((t.name.as_str(), t.stamped), ("a/msg/B", false));
}

#[test]
fn broken_type_messages_are_errors_not_panics() {
    let good = RosMsgType {
        name: "x/msg/Y".into(),
        ..Default::default()
    }
    .encode();
    for cut in 0..good.len() {
        assert!(RosMsgType::decode(&good[..cut]).is_err(), "cut at {cut}");
    }
    let mut bad_bool = good.clone();
    *bad_bool.last_mut().unwrap() = 7;
    assert!(matches!(
        RosMsgType::decode(&bad_bool),
        Err(WireError::BadBool { value: 7, .. })
    ));
    let mut huge = good.clone();
    huge[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(RosMsgType::decode(&huge).is_err());
    assert!(matches!(
        RosMsgType::decode(&[0, 9, 0, 0, 1, 0, 0, 0]),
        Err(WireError::Encapsulation { kind: 9, .. })
    ));
}

#[test]
fn stamps_round_trip_and_split() {
    let t = Duration::new(1_700_000_000, 123_456_789);
    let s = encode_stamp(t);
    assert_eq!(&s[..4], &[0, 1, 0, 0]);
    assert_eq!(decode_stamp(&s).unwrap(), 1_700_000_000_123_456_789);
    let joined = join_stamped(t, b"\0\x01\0\0abc");
    let (ns, rest) = split_stamped(&joined).unwrap();
    assert_eq!(ns, 1_700_000_000_123_456_789);
    assert_eq!(rest, b"\0\x01\0\0abc");
    assert!(split_stamped(&joined[..11]).is_err());
}

#[test]
fn float64_and_latency_topics() {
    assert_eq!(
        encode_float64(0.5),
        [0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0xe0, 0x3f]
    );
    assert_eq!(
        latency_topic("/mqtt_client", "/pong/ros"),
        "/mqtt_client/latencies/pong/ros"
    );
    assert_eq!(
        latency_topic("/ns/bridge/", "pong"),
        "/ns/bridge/latencies/pong"
    );
    assert_eq!(data_topic_of("mqtt_client/ros_msg_type/a/b"), Some("a/b"));
    assert_eq!(data_topic_of("a/b"), None);
}
