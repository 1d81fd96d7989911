//! `roam gateway` with real rosbridge clients: roslibpy (PyPI) programs exchange topics and
//! call a service with ROS 2 nodes (Python cyclonedds, on the wire what rmw_cyclonedds nodes
//! are) in a DDS domain behind a real `roam proxy`, through a real router and the gateway,
//! all real processes on loopback.

use std::time::{Duration, Instant};

use crate::common::*;
use crate::gateway_support::*;

#[test]
fn roslibpy_clients_and_dds_nodes_behind_a_proxy_exchange_topics_and_calls() {
    let net = Net::new("gw-rosbridge");
    let defs = definitions(&net.dir);
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let _talker = python("talker", "talker.py", &["95", "rt/chatter", "hello"]);
    let listener = python("listener", "listener.py", &["95", "rt/from_web"]);
    let _server = python("server", "service.py", &["server", "95", "add_two_ints"]);
    let _points = dds("points", &["talk", "95", "rt/point_out"]);
    let point_listener = dds("point-listener", &["listen", "95", "rt/point_in"]);
    // The robot has the definitions and announces them with its topics.
    let robot = net.proxy(
        "robot",
        95,
        &addr,
        &(format!("msg_paths: [{}]\n", defs.display()) + "exports:\n  - topic: /chatter\n    realm: test\n  - topic: /point_out\n    realm: test\n  - service: /add_two_ints\n    realm: test\nimports:\n  - topic: /from_web\n    realm: test\n  - topic: /point_in\n    realm: test\n"),
    );
    let (gw, port) = gateway(&net, "gw", &addr, Some(&defs), "");

    // DDS -> roslibpy: a std_msgs/String and a nested geometry_msgs/PointStamped, as JSON.
    let chatter = client(
        "sub-chatter",
        port,
        &["sub", "/chatter", "std_msgs/String", "--count", "3"],
    );
    let l = wait_line(&chatter, "msg ", T).unwrap_or_else(|| {
        panic!(
            "no /chatter message.\ngateway: {}\nproxy: {}",
            gw.logs(),
            robot.logs()
        )
    });
    let m = json_after(&l, "msg ");
    assert!(m["data"].as_str().unwrap().starts_with("hello "), "{m}");
    let point = client(
        "sub-point",
        port,
        &[
            "sub",
            "/point_out",
            "geometry_msgs/msg/PointStamped",
            "--count",
            "2",
        ],
    );
    let l = wait_line(&point, "msg ", T).unwrap_or_else(|| panic!("no point: {}", gw.logs()));
    let m = json_after(&l, "msg ");
    assert_eq!(m["header"]["frame_id"], "map");
    assert_eq!(m["header"]["stamp"]["sec"], 7);
    assert_eq!(m["point"]["x"], 1.5);
    assert_eq!(m["point"]["y"], -2.25);
    assert_eq!(
        m["point"]["z"].as_f64().unwrap(),
        m["header"]["stamp"]["nanosec"].as_f64().unwrap()
    );

    // roslibpy -> DDS: both types again, read by the DDS listeners.
    let _web = client(
        "pub-web",
        port,
        &[
            "pub",
            "/from_web",
            "std_msgs/String",
            r#"{"data": "web $N"}"#,
        ],
    );
    let l = wait_line(&listener, "data: web ", T).unwrap_or_else(|| {
        panic!(
            "the DDS listener got nothing.\ngateway: {}\nproxy: {}",
            gw.logs(),
            robot.logs()
        )
    });
    assert!(l["data: web ".len()..].parse::<u64>().is_ok(), "{l}");
    // ... and a subscriber on the same gateway hears that publisher in-process.
    let same = client(
        "sub-web",
        port,
        &["sub", "/from_web", "std_msgs/String", "--count", "1"],
    );
    let l = wait_line(&same, "msg ", T)
        .unwrap_or_else(|| panic!("no in-gateway delivery: {}", gw.logs()));
    assert!(
        json_after(&l, "msg ")["data"]
            .as_str()
            .unwrap()
            .starts_with("web "),
        "{l}"
    );
    let _pp = client(
        "pub-point",
        port,
        &[
            "pub",
            "/point_in",
            "geometry_msgs/PointStamped",
            r#"{"header": {"stamp": {"sec": 3, "nanosec": $N}, "frame_id": "odom"}, "point": {"x": 0.5, "y": 0.25, "z": $N}}"#,
        ],
    );
    let l = wait_line(&point_listener, "point ", T)
        .unwrap_or_else(|| panic!("no point at DDS: {}", gw.logs()));
    let f: Vec<&str> = l.split(' ').collect();
    assert_eq!(
        (f[1], f[2], f[4], f[5]),
        ("odom", "3", "0.5", "0.25"),
        "{l}"
    );
    assert_eq!(
        f[3].parse::<f64>().unwrap(),
        f[6].parse::<f64>().unwrap(),
        "{l}"
    );

    // A service call answered by the DDS server behind the proxy.
    let call = client(
        "call",
        port,
        &[
            "call",
            "/add_two_ints",
            "example_interfaces/AddTwoInts",
            r#"{"a": 40, "b": 2}"#,
        ],
    );
    let l = wait_line(&call, "result ", T).unwrap_or_else(|| {
        let mut lines = Vec::new();
        while let Some(l) = call.line(Duration::from_millis(100)) {
            lines.push(l);
        }
        panic!("no reply: {lines:?}\ngateway: {}", gw.logs())
    });
    assert_eq!(json_after(&l, "result "), serde_json::json!({"sum": 42}));

    // /rosapi/topics lists what the realm offers.
    let topics = client("topics", port, &["topics"]);
    let end = Instant::now() + T;
    let mut last = String::new();
    loop {
        assert!(
            Instant::now() < end,
            "/rosapi/topics never listed the realm: {last}"
        );
        let Some(l) = wait_line(&topics, "topics ", Duration::from_secs(5)) else {
            continue;
        };
        let v = json_after(&l, "topics ");
        let names: Vec<&str> = v["topics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        if ["/chatter", "/point_out", "/from_web"]
            .iter()
            .all(|t| names.contains(t))
        {
            let i = names.iter().position(|t| *t == "/chatter").unwrap();
            assert_eq!(v["types"][i], "std_msgs/msg/String");
            break;
        }
        last = l;
    }

    // A service served by a roslibpy client, called by another one through the realm.
    let _web_server = client(
        "serve",
        port,
        &[
            "serve",
            "/web_add",
            "example_interfaces/srv/AddTwoInts",
            "--refuse-over",
            "100",
        ],
    );
    let web_call = client(
        "web-call",
        port,
        &[
            "call",
            "/web_add",
            "example_interfaces/AddTwoInts",
            r#"{"a": 5, "b": 7}"#,
        ],
    );
    let l = wait_line(&web_call, "result ", T).unwrap_or_else(|| {
        let mut lines = Vec::new();
        while let Some(l) = web_call.line(Duration::from_millis(100)) {
            lines.push(l);
        }
        panic!(
            "no reply from the roslibpy server: {lines:?}\n{}",
            gw.logs()
        )
    });
    assert_eq!(json_after(&l, "result "), serde_json::json!({"sum": 12}));
    // The server answers `result: false` (its callback returned False): the caller is told
    // so at once, as rosbridge tells it, instead of waiting out its 3 s timeout.
    let refused = client(
        "web-refused",
        port,
        &[
            "call",
            "/web_add",
            "example_interfaces/AddTwoInts",
            r#"{"a": 500, "b": 7}"#,
            "--once",
        ],
    );
    let l = wait_line(&refused, "error ", T).expect("no answer to the refused call");
    assert!(
        l.contains(
            "/web_add: the server failed the call: the serving client answered result: false"
        ),
        "{l}"
    );

    // A gateway on a machine with no definitions at all reads and writes both types with
    // the definitions the robot announces.
    let (gw2, port2) = gateway(&net, "gw2", &addr, None, "");
    let bare = client(
        "bare-sub",
        port2,
        &[
            "sub",
            "/point_out",
            "geometry_msgs/PointStamped",
            "--count",
            "1",
        ],
    );
    let l = line_or_seen(&bare, "msg ", T)
        .unwrap_or_else(|seen| panic!("no point without definitions: {seen:?}\n{}", gw2.logs()));
    assert_eq!(json_after(&l, "msg ")["header"]["frame_id"], "map");
    let bare_pub = client(
        "bare-pub",
        port2,
        &[
            "pub",
            "/from_web",
            "std_msgs/String",
            r#"{"data": "bare $N"}"#,
        ],
    );
    let l = line_or_seen(&listener, "data: bare ", T).unwrap_or_else(|_| {
        let seen = line_or_seen(&bare_pub, "never", Duration::from_secs(1)).unwrap_err();
        panic!(
            "nothing from the gateway without definitions: {seen:?}\n{}",
            gw2.logs()
        )
    });
    assert!(l["data: bare ".len()..].parse::<u64>().is_ok(), "{l}");
    let _bare_point = client(
        "bare-point",
        port2,
        &[
            "pub",
            "/point_in",
            "geometry_msgs/PointStamped",
            r#"{"header": {"frame_id": "bare"}, "point": {"x": 9.0}}"#,
        ],
    );
    let l = wait_line(&point_listener, "point bare ", T).unwrap_or_else(|| {
        panic!(
            "no PointStamped from the gateway without definitions: {}",
            gw2.logs()
        )
    });
    // point FRAME SEC NANOSEC X Y Z (a stamp left out is filled in by the codec).
    let f: Vec<&str> = l.split(' ').collect();
    assert_eq!(&f[4..], ["9.0", "0.0", "0.0"], "{l}");

    // 30 clients at once, every one receiving.
    let many = client("many", port, &["many", "30", "/chatter", "std_msgs/String"]);
    assert!(
        wait_line(&many, "all 30", Duration::from_secs(90)).is_some(),
        "not all 30 clients got /chatter: {}",
        gw.logs()
    );
}
