use super::*;
use roam_mqtt::cdr::Writer;
use roam_mqtt::params::{Durability, MqttQos, Reliability};

fn b(v: impl AsRef<[u8]>) -> Bytes {
    Bytes::copy_from_slice(v.as_ref())
}

fn out_entry() -> Ros2Mqtt {
    Ros2Mqtt {
        ros_topic: "/ping".into(),
        mqtt_topic: "pingpong/ros".into(),
        primitive: false,
        json: false,
        ros_type: None,
        inject_timestamp: false,
        queue_size: 1,
        reliability: Reliability::Auto,
        durability: Durability::Auto,
        mqtt_qos: MqttQos::AtMostOnce,
        retained: false,
        realm: None,
    }
}

fn in_entry() -> Mqtt2Ros {
    Mqtt2Ros {
        mqtt_topic: "pingpong/ros".into(),
        ros_topic: "/pong".into(),
        primitive: false,
        json: false,
        ros_type: None,
        mqtt_qos: MqttQos::AtMostOnce,
        queue_size: 1,
        latched: false,
        reliability: Reliability::SystemDefault,
        durability: Durability::SystemDefault,
        realm: None,
    }
}

fn string_cdr(s: &str) -> Vec<u8> {
    let mut w = Writer::new();
    w.string(s);
    w.finish()
}

fn string_type() -> Arc<MessageType> {
    let mut reg = roam_msg::TypeRegistry::new();
    reg.add_msg("std_msgs/msg/String", "string data\n").unwrap();
    Arc::new(reg.resolve("std_msgs/msg/String").unwrap())
}

const T: &str = "std_msgs/msg/String";

#[test]
fn cdr_mode_sends_the_bytes_and_a_type_message() {
    let e = out_entry();
    let cdr = string_cdr("hi");
    let p = outbound(&e, T, cdr.clone(), None, Duration::ZERO).unwrap();
    assert_eq!(&p[..], &cdr[..]);
    let (topic, msg) = type_message(&e, T).unwrap();
    assert_eq!(topic, "mqtt_client/ros_msg_type/pingpong/ros");
    let t = RosMsgType::decode(&msg).unwrap();
    assert_eq!((t.name.as_str(), t.stamped), (T, false));
}

#[test]
fn a_stamped_message_round_trips_with_its_latency() {
    let mut e = out_entry();
    e.inject_timestamp = true;
    let cdr = string_cdr("hi");
    let sent = Duration::new(100, 0);
    let payload = outbound(&e, T, cdr.clone(), None, sent).unwrap();
    assert_eq!(payload.len(), cdr.len() + wire::STAMP_LEN);
    let (_, tmsg) = type_message(&e, T).unwrap();

    let mut inb = Inbound::new(in_entry(), None).unwrap();
    assert_eq!(
        inb.subscriptions(),
        ["mqtt_client/ros_msg_type/pingpong/ros"]
    );
    // Data before its type: refused, nothing published.
    assert!(matches!(
        inb.on_message("pingpong/ros", &b(&payload), 0),
        Err(ConvertError::NoType(_))
    ));
    let a = inb
        .on_message("mqtt_client/ros_msg_type/pingpong/ros", &b(&tmsg), 0)
        .unwrap();
    assert_eq!(
        a,
        [
            InAction::Retype(T.into()),
            InAction::Subscribe("pingpong/ros".into())
        ]
    );
    let a = inb
        .on_message("pingpong/ros", &b(&payload), 100_250_000_000)
        .unwrap();
    assert_eq!(a, [InAction::Latency(0.25), InAction::Publish(cdr.into())]);
}

#[test]
fn a_type_that_changes_at_run_time_retypes_the_publisher() {
    let mut inb = Inbound::new(in_entry(), None).unwrap();
    let topic = "mqtt_client/ros_msg_type/pingpong/ros";
    let m = |name: &str| {
        RosMsgType {
            name: name.into(),
            ..Default::default()
        }
        .encode()
    };
    inb.on_message(topic, &b(m(T)), 0).unwrap();
    // The same type again (mqtt_client re-sends it with every message): nothing to do.
    assert!(inb.on_message(topic, &b(m(T)), 0).unwrap().is_empty());
    let a = inb.on_message(topic, &b(m("std_msgs/Int32")), 0).unwrap();
    assert_eq!(a, [InAction::Retype("std_msgs/msg/Int32".into())]);
    assert_eq!(inb.ros_type(), Some("std_msgs/msg/Int32"));
    // Garbage on the type topic: an error, the type stays.
    assert!(inb.on_message(topic, &b(b"junk"), 0).is_err());
    assert_eq!(inb.ros_type(), Some("std_msgs/msg/Int32"));
    // Garbage on the data topic: refused before any ROS publisher sees it.
    assert!(inb.on_message("pingpong/ros", &b(b"junk"), 0).is_err());
}

#[test]
fn a_fixed_type_subscribes_the_data_at_once_and_keeps_its_type() {
    let mut e = in_entry();
    e.ros_type = Some("std_msgs/String".into());
    let mut inb = Inbound::new(e, None).unwrap();
    assert_eq!(inb.ros_type(), Some(T));
    assert_eq!(inb.subscriptions().len(), 2);
    let other = RosMsgType {
        name: "std_msgs/msg/Int32".into(),
        ..Default::default()
    }
    .encode();
    assert!(inb
        .on_message("mqtt_client/ros_msg_type/pingpong/ros", &b(other), 0)
        .is_err());
    assert_eq!(inb.ros_type(), Some(T));
}

#[test]
fn primitive_entries_probe_and_retype() {
    let mut e = in_entry();
    e.primitive = true;
    let mut inb = Inbound::new(e, None).unwrap();
    assert_eq!(inb.subscriptions(), ["pingpong/ros"]);
    let a = inb.on_message("pingpong/ros", &b(b"7"), 0).unwrap();
    assert_eq!(a[0], InAction::Retype("std_msgs/msg/Int32".into()));
    assert_eq!(
        inb.on_message("pingpong/ros", &b(b"8"), 0).unwrap().len(),
        1
    );
    let a = inb.on_message("pingpong/ros", &b(b"x"), 0).unwrap();
    assert_eq!(a[0], InAction::Retype(T.into()));
    let mut out = out_entry();
    out.primitive = true;
    let p = outbound(&out, T, string_cdr("hello"), None, Duration::ZERO).unwrap();
    assert_eq!(&p[..], b"hello");
    assert!(type_message(&out, T).is_none());
    assert!(matches!(
        outbound(
            &out,
            "geometry_msgs/msg/Twist",
            vec![0, 1, 0, 0],
            None,
            Duration::ZERO
        ),
        Err(ConvertError::NotPrimitive(_))
    ));
}

#[test]
fn json_entries_convert_both_ways_and_refuse_bad_json() {
    let ty = string_type();
    let mut out = out_entry();
    out.json = true;
    out.ros_type = Some(T.into());
    let p = outbound(&out, T, string_cdr("hi"), Some(&ty), Duration::ZERO).unwrap();
    assert_eq!(&p[..], br#"{"data":"hi"}"#);
    let mut e = in_entry();
    e.json = true;
    e.ros_type = Some(T.into());
    let mut inb = Inbound::new(e, Some(ty)).unwrap();
    assert_eq!(inb.subscriptions(), ["pingpong/ros"]);
    let a = inb
        .on_message("pingpong/ros", &b(br#"{"data":"hi"}"#), 0)
        .unwrap();
    assert_eq!(a, [InAction::Publish(string_cdr("hi").into())]);
    let e = inb
        .on_message("pingpong/ros", &b(br#"{"data":5}"#), 0)
        .unwrap_err();
    assert!(e.to_string().contains("data"), "{e}");
    assert!(inb.on_message("pingpong/ros", &b(b"{"), 0).is_err());
}

/// Whatever a broker delivers, an entry answers with actions or an error, never a panic.
#[test]
fn any_bytes_from_a_broker_are_taken_or_refused() {
    use proptest::prelude::*;
    proptest!(|(bytes in proptest::collection::vec(any::<u8>(), 0..256))| {
        let payload = Bytes::from(bytes);
        for (p, ty) in [(false, None), (false, Some("std_msgs/msg/String")), (true, None), (true, Some("std_msgs/msg/UInt8"))] {
            let mut e = in_entry();
            e.mqtt_topic = "t".into();
            e.primitive = p;
            e.ros_type = ty.map(str::to_string);
            let mut inb = Inbound::new(e, None).unwrap();
            let _ = inb.on_message("mqtt_client/ros_msg_type/t", &payload, 0);
            let _ = inb.on_message("t", &payload, 0);
        }
    });
}
