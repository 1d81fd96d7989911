//! The MQTT bridge against a real Mosquitto, real DDS nodes (PyPI cyclonedds) and a paho
//! client that speaks mqtt_client 2.x's wire format through rosbags' CDR (not roam's code).
//!
//! Domains 141..149, 153 and 154 are this file's alone; each test has its own broker on a free port.

use std::time::Duration;

use crate::common::*;
use crate::mqtt_support::*;

/// mqtt_client's parameter file, ROS 2-wrapped, as a user has it.
fn params(port: u16, extra_broker: &str, bridge: &str) -> String {
    format!(
        "/**/*:\n  ros__parameters:\n    broker:\n      host: 127.0.0.1\n      port: {port}\n{extra_broker}    bridge:\n{bridge}"
    )
}

/// Seed 003's Fig. 2: a vehicle node publishes /ping; it crosses Mosquitto into the cloud's
/// DDS domain, is echoed on /pong there and comes back. The vehicle runs `roam mqtt` with an
/// mqtt_client file; the cloud runs the same bridge inside `roam proxy` (`mqtt: {params:}`).
#[test]
fn seed_003_ping_pong_crosses_mosquitto_between_two_domains() {
    let dir = test_dir("pingpong");
    let broker = Broker::started(&dir, None);
    let vehicle = params(
        broker.port,
        "",
        "      ros2mqtt:\n        ros_topics: [/ping]\n        /ping:\n          mqtt_topic: pingpong/ping\n          inject_timestamp: true\n          advanced: {mqtt: {qos: 1}}\n      mqtt2ros:\n        mqtt_topics: [pingpong/pong]\n        pingpong/pong:\n          ros_topic: /pong\n          advanced: {mqtt: {qos: 1}, ros: {queue_size: 10}}\n",
    );
    let cloud = params(
        broker.port,
        "",
        "      ros2mqtt:\n        ros_topics: [/pong]\n        /pong: {mqtt_topic: pingpong/pong, advanced: {mqtt: {qos: 1}}}\n      mqtt2ros:\n        mqtt_topics: [pingpong/ping]\n        pingpong/ping: {ros_topic: /ping, advanced: {mqtt: {qos: 1}, ros: {queue_size: 10}}}\n",
    );
    std::fs::write(dir.join("cloud-mqtt.yaml"), cloud).unwrap();
    let net = Net::new("mqtt-pingpong");
    let (_router, addr) = net.router("hub", "127.0.0.1:0", &[]);
    let mut cloud_proxy = net.proxy(
        "cloud",
        142,
        &addr,
        &format!(
            "mqtt:\n  params: {}\n",
            dir.join("cloud-mqtt.yaml").display()
        ),
    );
    assert!(
        cloud_proxy.wait_log("connected to the MQTT broker", T),
        "{}",
        cloud_proxy.logs()
    );
    let _echo = echo(142, "rt/ping", "rt/pong");
    let mut car = bridge(&dir, "vehicle", 141, &vehicle, &[]);
    assert!(
        car.wait_log("connected to the MQTT broker", T),
        "{}",
        car.logs()
    );
    let pong = python("pong-listener", "listener.py", &["141", "rt/pong"]);
    let _ping = python(
        "ping-talker",
        "talker.py",
        &["141", "rt/ping", "ping", "--period", "0.02"],
    );
    let got = lines(&pong, "data: ping ", 30, T);
    assert_eq!(
        got.len(),
        30,
        "pongs: {got:?}\nvehicle: {}\ncloud: {}",
        car.logs(),
        cloud_proxy.logs()
    );
    // Consecutive numbers: nothing lost or reordered once flowing.
    let nums: Vec<u64> = got
        .iter()
        .map(|l| l.trim_start_matches("data: ping ").parse().unwrap())
        .collect();
    assert!(nums.windows(2).all(|w| w[1] == w[0] + 1), "{nums:?}");
    assert!(
        car.terminate().is_some_and(|s| s.success()),
        "{}",
        car.logs()
    );
    assert!(car.logs().contains("MQTT bridge stopped"));
    assert!(cloud_proxy.terminate().is_some_and(|s| s.success()));
}

/// roam's output read by a paho client with mqtt_client's receiving logic (retained type
/// message first, then CDR with the injected timestamp), and roam's input written by a paho
/// client with mqtt_client's sending logic.
#[test]
fn a_paho_client_speaking_mqtt_clients_wire_format_reads_and_writes_it() {
    let dir = test_dir("wire");
    let broker = Broker::started(&dir, None);
    let port = broker.port.to_string();
    let p = params(
        broker.port,
        "",
        "      ros2mqtt:\n        ros_topics: [/chatter]\n        /chatter: {mqtt_topic: robot/chatter, inject_timestamp: true}\n      mqtt2ros:\n        mqtt_topics: [robot/cmd]\n        robot/cmd: {ros_topic: /cmd}\n",
    );
    let b = bridge(&dir, "bridge", 143, &p, &[]);
    let reader = peer("paho-read", &["read", &port, "robot/chatter"]);
    let _talker = python("talker", "talker.py", &["143", "rt/chatter", "talk"]);
    let t =
        wait_line(&reader, "type ", T).unwrap_or_else(|| panic!("no type message: {}", b.logs()));
    assert_eq!(t, "type std_msgs/msg/String 1");
    let msgs = lines(&reader, "msg ", 5, T);
    assert_eq!(msgs.len(), 5, "{msgs:?}");
    for m in &msgs {
        // "msg std_msgs/msg/String talk N latency_ms=X": a sane clock difference.
        let (body, latency) = m.rsplit_once(" latency_ms=").expect(m);
        assert!(body.starts_with("msg std_msgs/msg/String talk "), "{m}");
        let ms: f64 = latency.parse().unwrap();
        assert!((0.0..5000.0).contains(&ms), "{m}");
    }
    assert!(wait_line(&reader, "msg-before-type", Duration::ZERO).is_none());

    let listener = python("listener", "listener.py", &["143", "rt/cmd"]);
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/float64_listener.py");
    let latencies = Proc::spawn_system(
        "latencies",
        "python3",
        &[
            "-u",
            script.to_str().unwrap(),
            "143",
            "rt/mqtt_client/latencies/cmd",
        ],
    );
    assert!(
        wait_line(&latencies, "ready", T).is_some(),
        "{}",
        latencies.logs()
    );
    let _writer = peer(
        "paho-write",
        &[
            "write",
            &port,
            "robot/cmd",
            "60",
            "--stamped",
            "--period",
            "0.05",
        ],
    );
    let got = lines(&listener, "data: paho ", 10, T);
    assert_eq!(got.len(), 10, "{got:?}: {}", b.logs());
    // A stamped input: its latency in seconds where mqtt_client publishes it.
    let l =
        wait_line(&latencies, "value ", T).unwrap_or_else(|| panic!("no latency: {}", b.logs()));
    let s: f64 = l.trim_start_matches("value ").parse().unwrap();
    assert!((0.0..5.0).contains(&s), "{l}");
}

/// A topic's type message and its first messages in one burst, as mqtt_client sends them when
/// it starts, while a ROS listener already waits: every message arrives, the first too. The
/// bridge makes its ROS publisher when the type arrives, and holds what comes until the
/// listener has matched it (before, the first message went out before discovery and was lost:
/// 2 of 3 arrived).
#[test]
fn the_first_messages_of_a_new_mqtt_topic_reach_a_listener_already_there() {
    let dir = test_dir("first");
    let broker = Broker::started(&dir, None);
    let port = broker.port.to_string();
    let p = params(
        broker.port,
        "",
        "      mqtt2ros:\n        mqtt_topics: [robot/cmd]\n        robot/cmd: {ros_topic: /cmd}\n",
    );
    let b = bridge(&dir, "bridge", 154, &p, &[]);
    // `roam mqtt` has no metrics endpoint or event to wait on: its log line says the
    // subscriptions went out, so the burst below is not lost at the broker instead.
    assert!(
        b.wait_log("connected to the MQTT broker", T),
        "{}",
        b.logs()
    );
    // Its reader exists once it says "ready".
    let listener = python("listener", "listener.py", &["154", "rt/cmd"]);
    let _writer = peer(
        "paho-write",
        &["write", &port, "robot/cmd", "3", "--period", "0"],
    );
    let got = lines(&listener, "data: paho ", 3, T);
    assert_eq!(
        got,
        ["data: paho 0", "data: paho 1", "data: paho 2"],
        "{}",
        b.logs()
    );
}

/// Primitive and JSON modes, as paho sees and sends them; QoS and retained as MQTT says.
#[test]
fn primitive_and_json_payloads_qos_and_retained_messages() {
    let dir = test_dir("modes");
    let defs = dir.join("msgs/std_msgs/msg");
    std::fs::create_dir_all(&defs).unwrap();
    std::fs::write(defs.join("String.msg"), "string data\n").unwrap();
    let broker = Broker::started(&dir, None);
    let port = broker.port.to_string();
    let p = params(
        broker.port,
        "",
        "      ros2mqtt:\n        ros_topics: [/text, /doc]\n        /text:\n          mqtt_topic: out/text\n          primitive: true\n          advanced: {mqtt: {qos: 1, retained: true}}\n        /doc: {mqtt_topic: out/doc, json: true, ros_type: std_msgs/msg/String, advanced: {mqtt: {qos: 2}}}\n      mqtt2ros:\n        mqtt_topics: [in/text, in/doc]\n        in/text: {ros_topic: /from_text, primitive: true}\n        in/doc: {ros_topic: /from_doc, json: true, ros_type: std_msgs/String, advanced: {mqtt: {qos: 2}}}\n",
    );
    let msgs = dir.join("msgs");
    let b = bridge(
        &dir,
        "bridge",
        144,
        &p,
        &["--msg-path", msgs.to_str().unwrap()],
    );
    let text_sub = peer("paho-text", &["sub", &port, "out/text", "--qos", "2"]);
    let doc_sub = peer("paho-doc", &["sub", &port, "out/doc", "--qos", "2"]);
    let _t1 = python("talker-text", "talker.py", &["144", "rt/text", "plain"]);
    let _t2 = python("talker-doc", "talker.py", &["144", "rt/doc", "json"]);
    // Primitive: the string as it is; delivered at min(publish 1, subscribe 2) = QoS 1.
    let l = wait_line(&text_sub, "raw out/text ", T).unwrap_or_else(|| panic!("{}", b.logs()));
    let parts: Vec<&str> = l.splitn(5, ' ').collect();
    assert_eq!(parts[3], "1", "QoS of {l}");
    assert!(parts[4].starts_with("plain "), "{l}");
    // JSON: rosbridge's JSON of the message, at QoS 2.
    let l = wait_line(&doc_sub, "raw out/doc ", T).unwrap();
    let parts: Vec<&str> = l.splitn(5, ' ').collect();
    assert_eq!(parts[3], "2", "QoS of {l}");
    let v: serde_json::Value = serde_json::from_str(parts[4]).expect(&l);
    assert!(v["data"].as_str().unwrap().starts_with("json "), "{l}");
    // Retained: a subscriber arriving later gets the last one at once, flagged retained.
    let late = peer("paho-late", &["sub", &port, "out/text", "--qos", "1"]);
    let l = wait_line(&late, "raw out/text 1 ", T).expect("a retained message");
    assert!(l.contains("plain "), "{l}");

    // In: text probed as String, JSON parsed with the configured type.
    let from_text = python("from-text", "listener.py", &["144", "rt/from_text"]);
    let from_doc = python("from-doc", "listener.py", &["144", "rt/from_doc"]);
    for n in 0..3 {
        peer(
            "pub-text",
            &["pub", &port, "in/text", &format!("hello {n}")],
        );
        peer(
            "pub-doc",
            &[
                "pub",
                &port,
                "in/doc",
                &format!("{{\"data\": \"doc {n}\"}}"),
                "--qos",
                "2",
            ],
        );
    }
    assert_eq!(
        lines(&from_text, "data: hello ", 3, T).len(),
        3,
        "{}",
        b.logs()
    );
    assert_eq!(
        lines(&from_doc, "data: doc ", 3, T).len(),
        3,
        "{}",
        b.logs()
    );
    // Mosquitto's own command-line clients read and write the same payloads.
    let out = std::process::Command::new("mosquitto_sub")
        .args(["-p", &port, "-t", "out/text", "-C", "1", "-W", "10"])
        .output()
        .expect("mosquitto_sub (run scripts/setup.sh)");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("plain "), "mosquitto_sub read {text:?}");
    let st = std::process::Command::new("mosquitto_pub")
        .args([
            "-p",
            &port,
            "-t",
            "in/text",
            "-m",
            "from mosquitto_pub",
            "-q",
            "1",
        ])
        .status()
        .expect("mosquitto_pub");
    assert!(st.success());
    assert!(
        wait_line(&from_text, "data: from mosquitto_pub", T).is_some(),
        "{}",
        b.logs()
    );
    // Bad JSON: said once, counted, nothing published, the bridge goes on.
    peer("pub-bad", &["pub", &port, "in/doc", "{\"data\": 5}"]);
    peer("pub-bad2", &["pub", &port, "in/doc", "{"]);
    peer(
        "pub-doc",
        &["pub", &port, "in/doc", "{\"data\": \"after\"}"],
    );
    assert!(
        wait_line(&from_doc, "data: after", T).is_some(),
        "{}",
        b.logs()
    );
    let said = b.logs().matches("dropping a message from MQTT").count();
    assert_eq!(said, 1, "{}", b.logs());
    assert!(b.logs().contains("data"), "the error names the field");
}

/// Broker down at start, then up; broker killed mid-stream and restarted: the bridge comes
/// back by itself, subscribes again and QoS 1 messages flow again.
#[test]
fn a_broker_down_at_start_or_restarted_mid_stream_is_reconnected() {
    let dir = test_dir("faults");
    let mut broker = Broker::configure(&dir, None);
    let port = broker.port.to_string();
    let p = params(
        broker.port,
        "    client: {id: faulty, buffer: {size: 50}}\n",
        "      ros2mqtt:\n        ros_topics: [/up]\n        /up: {mqtt_topic: t/up, advanced: {mqtt: {qos: 1}}}\n      mqtt2ros:\n        mqtt_topics: [t/down]\n        t/down: {ros_topic: /down, primitive: true, advanced: {mqtt: {qos: 1}}}\n",
    );
    let mut b = bridge(&dir, "bridge", 145, &p, &[]);
    assert!(
        b.wait_log("cannot reach the MQTT broker", T),
        "{}",
        b.logs()
    );
    // Meanwhile the ROS side goes on: 50 messages wait in the buffer, then drops are said.
    let talker = python("talker", "talker.py", &["145", "rt/up", "up"]);
    assert!(b.wait_log("client.buffer is full", T), "{}", b.logs());
    broker.start();
    assert!(
        b.wait_log("connected to the MQTT broker", T),
        "{}",
        b.logs()
    );
    let reader = peer("paho-read", &["read", &port, "t/up", "--qos", "1"]);
    let _talker = talker;
    assert_eq!(lines(&reader, "msg ", 5, T).len(), 5, "{}", b.logs());

    broker.kill();
    assert!(b.wait_log("lost the MQTT broker", T), "{}", b.logs());
    broker.start();
    // The reader (paho) reconnects and subscribes again too; the bridge re-sends its type
    // message in the new session, so the reader knows the type again.
    assert!(
        wait_line(&reader, "type std_msgs/msg/String", T).is_some(),
        "{}",
        b.logs()
    );
    let after = lines(&reader, "msg ", 5, T);
    assert_eq!(after.len(), 5, "{}", b.logs());
    // The bridge subscribed again: MQTT -> ROS works in the new session.
    let down = python("down", "listener.py", &["145", "rt/down"]);
    for n in 0..3 {
        peer(
            "pub",
            &["pub", &port, "t/down", &format!("back {n}"), "--qos", "1"],
        );
    }
    assert_eq!(lines(&down, "data: back ", 3, T).len(), 3, "{}", b.logs());
    let warned = b.logs().matches("cannot reach the MQTT broker").count();
    assert!(
        warned <= 2,
        "retries are not logged one by one: {}",
        b.logs()
    );
    // The drops were counted, and said once.
    assert!(b.terminate().is_some_and(|s| s.success()));
    assert_eq!(
        b.logs().matches("client.buffer is full").count(),
        1,
        "{}",
        b.logs()
    );
    let stopped = b
        .logs()
        .lines()
        .find(|l| l.contains("MQTT bridge stopped"))
        .map(str::to_string)
        .unwrap_or_default();
    let dropped: u64 = stopped
        .split("dropped_offline=")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(dropped > 0, "{stopped}");
}

/// Garbage from MQTT (a broken type message, bytes that are not CDR) is dropped, said once
/// per topic, and never stops the bridge; a type that changes at run time re-types the ROS
/// publisher.
#[test]
fn malformed_payloads_and_a_type_change_at_run_time() {
    let dir = test_dir("garbage");
    let broker = Broker::started(&dir, None);
    let port = broker.port.to_string();
    let p = params(
        broker.port,
        "",
        "      mqtt2ros:\n        mqtt_topics: [g/in]\n        g/in: {ros_topic: /g}\n",
    );
    let b = bridge(&dir, "bridge", 146, &p, &[]);
    assert!(b.wait_log("connected to the MQTT broker", T));
    let listener = python("listener", "listener.py", &["146", "rt/g"]);
    peer("garbage", &["garbage", &port, "g/in"]);
    peer("garbage2", &["garbage", &port, "g/in"]);
    let _w = peer(
        "writer",
        &["write", &port, "g/in", "200", "--period", "0.02"],
    );
    assert_eq!(
        lines(&listener, "data: paho ", 5, T).len(),
        5,
        "{}",
        b.logs()
    );
    assert_eq!(
        b.logs().matches("dropping a message from MQTT").count(),
        1,
        "{}",
        b.logs()
    );
    // Another type announced on the topic: a new ROS publisher of that type.
    peer("retype", &["announce", &port, "g/in", "std_msgs/msg/Int32"]);
    assert!(
        b.wait_log("the MQTT topic's type changed", T),
        "{}",
        b.logs()
    );
    assert!(b.logs().contains("std_msgs/msg/Int32"), "{}", b.logs());
}

/// TLS to the broker with its CA, and a password file: the bridge gets in, paho reads over
/// TLS; a wrong password is a clear, repeated-only-once error.
#[test]
fn tls_and_a_password_file() {
    let dir = test_dir("tls");
    let tls = broker_tls(&dir);
    let broker = Broker::started(&dir, Some(&tls));
    let port = broker.port.to_string();
    let broker_keys = |pass: &str| {
        format!(
            "      user: robot\n      pass: {pass}\n      tls: {{enabled: true, ca_certificate: {}}}\n",
            tls.ca.display()
        )
    };
    let bridge_keys =
        "      ros2mqtt:\n        ros_topics: [/secure]\n        /secure: {mqtt_topic: s/out}\n";
    let good = params(broker.port, &broker_keys("s3cret"), bridge_keys);
    let b = bridge(&dir, "bridge", 147, &good, &[]);
    assert!(
        b.wait_log("connected to the MQTT broker", T),
        "{}",
        b.logs()
    );
    let reader = peer(
        "paho-tls",
        &[
            "read",
            &port,
            "s/out",
            "--ca",
            tls.ca.to_str().unwrap(),
            "--user",
            "robot",
            "--password",
            "s3cret",
        ],
    );
    let _talker = python("talker", "talker.py", &["147", "rt/secure", "secret"]);
    assert_eq!(
        lines(&reader, "msg std_msgs/msg/String secret ", 3, T).len(),
        3
    );

    let bad = params(broker.port, &broker_keys("wrong"), bridge_keys);
    let w = bridge(&dir, "wrong", 148, &bad, &[]);
    assert!(
        w.wait_log("cannot reach the MQTT broker", T),
        "{}",
        w.logs()
    );
    assert!(
        w.logs().contains("refused")
            || w.logs().contains("NotAuthorized")
            || w.logs().contains("BadUserNamePassword"),
        "{}",
        w.logs()
    );
}

/// A cloud box with no ROS nodes bridges a robot's exported topic to MQTT, and MQTT into a
/// topic the robot imports: `realm:` entries in the proxy's inline `mqtt:` section.
#[test]
fn realm_topics_cross_to_mqtt_without_dds_on_the_bridging_box() {
    let dir = test_dir("realm");
    let broker = Broker::started(&dir, None);
    let port = broker.port.to_string();
    let net = Net::new("mqtt-realm");
    let (_router, addr) = net.router("hub", "127.0.0.1:0", &[]);
    let _robot = net.proxy(
        "robot",
        149,
        &addr,
        "exports:\n  - topic: /scan\n    realm: test\nimports:\n  - topic: /cmd\n    realm: test\n",
    );
    let mqtt = format!(
        "mqtt:\n  broker: {{host: 127.0.0.1, port: {port}}}\n  bridge:\n    ros2mqtt:\n      ros_topics: [/scan]\n      /scan: {{mqtt_topic: cloud/scan, realm: test, inject_timestamp: true}}\n    mqtt2ros:\n      mqtt_topics: [cloud/cmd]\n      cloud/cmd: {{ros_topic: /cmd, realm: test, ros_type: std_msgs/msg/String}}\n"
    );
    let cloud = net.proxy("cloud", 150, &addr, &mqtt);
    assert!(
        cloud.wait_log("connected to the MQTT broker", T),
        "{}",
        cloud.logs()
    );
    let reader = peer("paho-read", &["read", &port, "cloud/scan"]);
    let _talker = python("talker", "talker.py", &["149", "rt/scan", "scan"]);
    assert_eq!(
        wait_line(&reader, "type ", T).as_deref(),
        Some("type std_msgs/msg/String 1"),
        "{}",
        cloud.logs()
    );
    assert_eq!(
        lines(&reader, "msg std_msgs/msg/String scan ", 5, T).len(),
        5
    );

    let listener = python("listener", "listener.py", &["149", "rt/cmd"]);
    let _writer = peer(
        "paho-write",
        &["write", &port, "cloud/cmd", "100", "--period", "0.05"],
    );
    assert_eq!(
        lines(&listener, "data: paho ", 5, T).len(),
        5,
        "{}",
        cloud.logs()
    );
}

/// `client.mqtt_version: 5`: the bridge speaks MQTT 5 (Mosquitto says so), both ways, QoS 2.
#[test]
fn mqtt_5_when_asked() {
    let dir = test_dir("v5");
    let broker = Broker::started(&dir, None);
    let port = broker.port.to_string();
    let p = params(
        broker.port,
        "    client: {id: roam-v5, mqtt_version: 5}\n",
        "      ros2mqtt:\n        ros_topics: [/five]\n        /five: {mqtt_topic: v5/out, advanced: {mqtt: {qos: 2}}}\n      mqtt2ros:\n        mqtt_topics: [v5/in]\n        v5/in: {ros_topic: /five_in, primitive: true, advanced: {mqtt: {qos: 2}}}\n",
    );
    let b = bridge(&dir, "bridge", 153, &p, &[]);
    assert!(
        b.wait_log("connected to the MQTT broker", T),
        "{}",
        b.logs()
    );
    let mosquitto = broker.proc.as_ref().unwrap();
    assert!(
        mosquitto.wait_log("as roam-v5 (p5", T),
        "{}",
        mosquitto.logs()
    );
    let reader = peer("paho-read", &["read", &port, "v5/out", "--qos", "2"]);
    let _talker = python("talker", "talker.py", &["153", "rt/five", "five"]);
    assert_eq!(
        lines(&reader, "msg std_msgs/msg/String five ", 3, T).len(),
        3
    );
    let listener = python("listener", "listener.py", &["153", "rt/five_in"]);
    peer("pub", &["pub", &port, "v5/in", "over five", "--qos", "2"]);
    assert!(
        wait_line(&listener, "data: over five", T).is_some(),
        "{}",
        b.logs()
    );
}
