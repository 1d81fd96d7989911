use super::*;

fn parse(text: &str) -> Result<Params, ParamsError> {
    Params::parse(text, Path::new("/etc/roam"))
}

const PING_PONG: &str = "\
/**/*:
  ros__parameters:
    broker:
      host: localhost
      port: 1883
    bridge:
      ros2mqtt:
        ros_topics:
          - /ping/ros
        /ping/ros:
          mqtt_topic: pingpong/ros
      mqtt2ros:
        mqtt_topics:
          - pingpong/ros
        pingpong/ros:
          ros_topic: /pong/ros
";

#[test]
fn the_ros2_wrapped_ping_pong_file_reads_with_mqtt_clients_defaults() {
    let p = parse(PING_PONG).unwrap();
    assert_eq!(p.broker.host, "localhost");
    assert_eq!(p.broker.port, 1883);
    assert!(p.broker.tls.is_none());
    assert_eq!(p.client.id, "");
    assert!(p.client.clean_session);
    assert_eq!(p.client.keep_alive, Duration::from_secs(60));
    assert_eq!(p.client.max_inflight, 65535);
    assert_eq!(p.client.mqtt_version, MqttVersion::V311);
    let out = &p.ros2mqtt[0];
    assert_eq!(
        (out.ros_topic.as_str(), out.mqtt_topic.as_str()),
        ("/ping/ros", "pingpong/ros")
    );
    assert!(!out.primitive && !out.json && !out.inject_timestamp && !out.retained);
    assert_eq!(out.queue_size, 1);
    assert_eq!(out.mqtt_qos, MqttQos::AtMostOnce);
    assert_eq!(
        (out.reliability, out.durability),
        (Reliability::Auto, Durability::Auto)
    );
    let inb = &p.mqtt2ros[0];
    assert_eq!(inb.ros_topic, "/pong/ros");
    assert_eq!(
        (inb.reliability, inb.durability),
        (Reliability::SystemDefault, Durability::SystemDefault)
    );
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
}

#[test]
fn a_bare_file_without_the_ros_wrapping_reads_the_same() {
    let bare: String = PING_PONG
        .lines()
        .skip(2)
        .map(|l| format!("{}\n", &l[4..]))
        .collect();
    assert_eq!(parse(&bare).unwrap(), parse(PING_PONG).unwrap());
}

#[test]
fn every_field_is_read() {
    let p = parse(
        "
broker:
  host: mqtt.example
  port: 8883
  user: robot
  pass: secret
  tls: {enabled: true, ca_certificate: certs/ca.pem}
client:
  id: truck-7
  buffer: {size: 100, directory: buf}
  last_will: {topic: status/truck-7, qos: 1, retained: true}
  clean_session: false
  keep_alive_interval: 2.5
  max_inflight: 20
  mqtt_version: 5
  tls: {certificate: /abs/c.pem, key: k.pem, alpn_protos: [x-amzn-mqtt-ca]}
bridge:
  ros2mqtt:
    ros_topics: [/scan, /cmd]
    /scan:
      mqtt_topic: v/scan
      inject_timestamp: true
      ros_type: sensor_msgs/msg/LaserScan
      realm: fleet
      advanced:
        ros: {queue_size: 5, qos: {reliability: best_effort, durability: volatile}}
        mqtt: {qos: 2, retained: true}
    /cmd: {mqtt_topic: v/cmd, json: true, ros_type: geometry_msgs/Twist}
  mqtt2ros:
    mqtt_topics: [v/in]
    v/in:
      ros_topic: /in
      primitive: true
      advanced:
        mqtt: {qos: 1}
        ros: {queue_size: 3, latched: true, qos: {reliability: reliable, durability: transient_local}}
",
    )
    .unwrap();
    assert_eq!(p.broker.user.as_deref(), Some("robot"));
    assert_eq!(p.broker.pass, "secret");
    assert_eq!(
        p.broker.tls.as_ref().unwrap().ca_certificate,
        Path::new("/etc/roam/certs/ca.pem")
    );
    assert_eq!(p.client.buffer_size, 100);
    let will = p.client.last_will.as_ref().unwrap();
    assert_eq!(
        (
            will.topic.as_str(),
            will.message.as_str(),
            will.qos,
            will.retained
        ),
        ("status/truck-7", "offline", MqttQos::AtLeastOnce, true)
    );
    assert!(!p.client.clean_session);
    assert_eq!(p.client.keep_alive, Duration::from_millis(2500));
    assert_eq!(p.client.max_inflight, 20);
    assert_eq!(p.client.mqtt_version, MqttVersion::V5);
    assert_eq!(
        p.client.tls.certificate.as_deref(),
        Some(Path::new("/abs/c.pem"))
    );
    assert_eq!(
        p.client.tls.key.as_deref(),
        Some(Path::new("/etc/roam/k.pem"))
    );
    assert_eq!(p.client.tls.alpn_protos, ["x-amzn-mqtt-ca"]);
    let scan = &p.ros2mqtt[0];
    assert!(scan.inject_timestamp);
    assert_eq!(scan.realm.as_deref(), Some("fleet"));
    assert_eq!(scan.queue_size, 5);
    assert_eq!(
        (scan.reliability, scan.durability),
        (Reliability::BestEffort, Durability::Volatile)
    );
    assert_eq!((scan.mqtt_qos, scan.retained), (MqttQos::ExactlyOnce, true));
    assert!(p.ros2mqtt[1].json);
    let inb = &p.mqtt2ros[0];
    assert!(inb.primitive && inb.latched);
    assert_eq!((inb.mqtt_qos, inb.queue_size), (MqttQos::AtLeastOnce, 3));
    assert_eq!(
        (inb.reliability, inb.durability),
        (Reliability::Reliable, Durability::TransientLocal)
    );
    // buffer.directory: memory, said once.
    assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
}

#[test]
fn mqtt_clients_own_rules_are_kept_and_said() {
    let p = parse(
        "
bridge:
  ros2mqtt:
    ros_topics: [/a, /b]
    /a: {mqtt_topic: a, primitive: true, json: true, inject_timestamp: true}
    /b: {mqtt_topic: b, json: true, ros_type: std_msgs/msg/String, inject_timestamp: true}
client:
  buffer: {size: 10}
",
    )
    .unwrap();
    assert!(p.ros2mqtt[0].primitive && !p.ros2mqtt[0].json);
    assert!(!p.ros2mqtt[0].inject_timestamp && !p.ros2mqtt[1].inject_timestamp);
    assert_eq!(p.client.buffer_size, 0, "no buffer without a client id");
    assert_eq!(p.warnings.len(), 4, "{:?}", p.warnings);
}

#[test]
fn unknown_keys_are_warnings_naming_where_they_are() {
    let p = parse(
        "
broker: {hots: x}
bridge:
  mqtt2ros:
    mqtt_topics: [t]
    t: {ros_topic: /t, advanced: {ros: {depth: 3}}}
client:
  id: c
  buffer: {enabled: true, size: 5}
",
    )
    .unwrap();
    let said = |start: &str| p.warnings.iter().any(|w| w.starts_with(start));
    assert!(said("broker.hots: unknown parameter"), "{:?}", p.warnings);
    assert!(
        said("bridge.mqtt2ros.t.advanced.ros.depth: unknown parameter"),
        "{:?}",
        p.warnings
    );
    assert!(
        said("client.buffer.enabled: unknown parameter"),
        "{:?}",
        p.warnings
    );
}

fn error(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

#[test]
fn broken_files_name_the_field() {
    let cases = [
        ("[1, 2]", "(top level): expected a mapping of parameters"),
        ("bridge: {}", "bridge: nothing to bridge"),
        (
            "bridge: {ros2mqtt: {ros_topics: [/a]}}",
            "bridge.ros2mqtt./a: `/a` is listed in ros_topics but has no settings",
        ),
        (
            "bridge: {ros2mqtt: {ros_topics: [/a], /a: {primitive: true}}}",
            "bridge.ros2mqtt./a.mqtt_topic: required",
        ),
        (
            "bridge: {ros2mqtt: {ros_topics: [/a], /a: {mqtt_topic: a/#}}}",
            "bridge.ros2mqtt./a.mqtt_topic: `a/#`: wildcards",
        ),
        (
            "bridge: {ros2mqtt: {ros_topics: [/a, /a], /a: {mqtt_topic: a}}}",
            "bridge.ros2mqtt.ros_topics[1]: `/a` is listed twice",
        ),
        (
            "bridge: {ros2mqtt: {ros_topics: [/a], /a: {mqtt_topic: a}, /b: {mqtt_topic: b}}}",
            "bridge.ros2mqtt./b: `/b` is configured but not listed in ros_topics",
        ),
        (
            "bridge: {mqtt2ros: {mqtt_topics: [a], a: {ros_topic: /a, json: true}}}",
            "bridge.mqtt2ros.a.ros_type: required with json: true",
        ),
        (
            "bridge: {mqtt2ros: {mqtt_topics: [a], a: {ros_topic: /a, advanced: {mqtt: {qos: 3}}}}}",
            "bridge.mqtt2ros.a.advanced.mqtt.qos: expected a whole number from 0 to 2",
        ),
        (
            "bridge: {mqtt2ros: {mqtt_topics: [a], a: {ros_topic: /a, advanced: {ros: {qos: {durability: auto}}}}}}",
            "bridge.mqtt2ros.a.advanced.ros.qos.durability: `auto` is for ros2mqtt entries only",
        ),
        (
            "broker: {port: 70000}\nbridge: {mqtt2ros: {mqtt_topics: [a], a: {ros_topic: /a}}}",
            "broker.port: expected a whole number from 0 to 65535",
        ),
        (
            "client: {mqtt_version: 4.5}\nbridge: {mqtt2ros: {mqtt_topics: [a], a: {ros_topic: /a}}}",
            "client.mqtt_version: `4.5`: expected 3.1.1 or 5",
        ),
        (
            "client: {keep_alive_interval: 0}\nbridge: {mqtt2ros: {mqtt_topics: [a], a: {ros_topic: /a}}}",
            "client.keep_alive_interval: expected seconds from 1 to 65535",
        ),
        ("bridge: [", "(top level): not YAML"),
    ];
    for (text, want) in cases {
        let got = error(text);
        assert!(got.starts_with(want), "{text}\n got: {got}\nwant: {want}");
    }
}

#[test]
fn an_error_path_leads_into_the_tree() {
    let e = parse("bridge: {mqtt2ros: {mqtt_topics: [a, 7]}}").unwrap_err();
    assert_eq!(
        e.path,
        [
            PathSeg::Key("bridge".into()),
            PathSeg::Key("mqtt2ros".into()),
            PathSeg::Key("mqtt_topics".into()),
            PathSeg::Index(1)
        ]
    );
}
