//! `roam gateway`'s Foxglove WebSocket door with a client we do not own: npm
//! `@foxglove/ws-protocol`'s FoxgloveClient over `ws`, reading the advertised `ros2msg`
//! schemas with `@foxglove/rosmsg` and the CDR with `@foxglove/rosmsg2-serialization`
//! (tests/js/foxglove/fox.mjs). Against ROS 2 nodes (Python cyclonedds, on the wire what
//! rmw_cyclonedds nodes are) behind a real `roam proxy`, and a roslibpy client on the same
//! gateway's rosbridge door: a channel decoded with its schema, publishing in CDR (read by a
//! DDS node) and JSON (read by the rosbridge client), AddTwoInts served by a DDS node and by a
//! rosbridge client, called in CDR and JSON; refusals without a token and outside an allow
//! list; a second gateway without definitions offering what the robot announced over wss://,
//! and the same door inside the robot's proxy.

use std::path::Path;
use std::time::Duration;

use crate::common::*;
use crate::gateway_support::*;

const FULL: &str = "full-access-token-0123456789";
const LIMITED: &str = "limited-token-0123456789abcdef";

/// A client program of tests/js/foxglove/fox.mjs.
fn fox(name: &str, url: &str, token: Option<&str>, args: &[&str]) -> Proc {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js/foxglove");
    assert!(
        dir.join("node_modules/@foxglove/ws-protocol").is_dir(),
        "run scripts/setup.sh (npm ci in {})",
        dir.display()
    );
    let script = dir.join("fox.mjs");
    let mut a = vec![script.to_str().unwrap(), url];
    if let Some(t) = token {
        a.extend_from_slice(&["--token", t]);
    }
    a.extend_from_slice(args);
    Proc::spawn_system(name, "node", &a)
}

/// The Foxglove door's port, from the gateway's `foxglove listening ws://ADDR` line
/// (`wss://` with TLS).
fn foxglove_port(gw: &Proc) -> u16 {
    let l = wait_line(gw, "foxglove listening ", T)
        .unwrap_or_else(|| panic!("no Foxglove door: {}", gw.logs()));
    l.rsplit(':').next().unwrap().parse().unwrap()
}

#[test]
fn foxglove_clients_read_publish_and_call_across_the_realm() {
    let net = Net::new("gw-foxglove");
    let defs = definitions(&net.dir);
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let _points = dds("points", &["talk", "96", "rt/point_out"]);
    let listener = python("listener", "listener.py", &["96", "rt/from_fox"]);
    let _server = python("server", "service.py", &["server", "96", "add_two_ints"]);
    // The robot has the definitions and announces them with its topics.
    let robot = net.proxy(
        "robot",
        96,
        &addr,
        &(format!("msg_paths: [{}]\n", defs.display()) + "exports:\n  - topic: /point_out\n    realm: test\n  - service: /add_two_ints\n    realm: test\nimports:\n  - topic: /from_fox\n    realm: test\n"),
    );
    let auth = format!(
        "foxglove:\n  listen: 127.0.0.1:0\nauth:\n  tokens:\n    - identity: full\n      token: {FULL}\n      subscribe: {{allow: ['/**']}}\n      publish: {{allow: ['/**']}}\n      call: {{allow: ['/**']}}\n    - identity: limited\n      token: {LIMITED}\n      subscribe: {{allow: ['/point_out']}}\n"
    );
    let (mut gw, port) = gateway(&net, "gw", &addr, Some(&defs), &auth);
    let fport = foxglove_port(&gw);
    let url = format!("ws://127.0.0.1:{fport}/");

    // DDS -> Foxglove: the PointStamped channel, its ros2msg schema (with its dependencies)
    // parsed by @foxglove/rosmsg, each message's CDR decoded as it came from the DDS node.
    let sub = fox("fox-sub", &url, Some(FULL), &["sub", "/point_out", "3"]);
    assert_eq!(
        expect(&sub, "protocol ", &gw),
        "protocol foxglove.websocket.v1"
    );
    let ch = json_after(&expect(&sub, "channel ", &gw), "channel ");
    assert_eq!(ch["schemaName"], "geometry_msgs/msg/PointStamped", "{ch}");
    assert_eq!(
        (&ch["encoding"], &ch["schemaEncoding"]),
        (&"cdr".into(), &"ros2msg".into())
    );
    let schema = json_after(&expect(&sub, "schema ", &gw), "schema ");
    let schema = schema.as_str().unwrap();
    assert!(schema.contains("\nMSG: std_msgs/Header\n"), "{schema}");
    assert!(
        schema.contains("\nMSG: builtin_interfaces/Time\n"),
        "{schema}"
    );
    for _ in 0..3 {
        let l = expect(&sub, "msg ", &gw);
        assert!(l.ends_with(" stamp-ok"), "{l}");
        let m: serde_json::Value =
            serde_json::from_str(l["msg ".len()..].trim_end_matches(" stamp-ok")).unwrap();
        assert_eq!(m["header"]["frame_id"], "map", "{m}");
        assert_eq!(m["header"]["stamp"]["sec"], 7, "{m}");
        assert_eq!(
            (m["point"]["x"].as_f64(), m["point"]["y"].as_f64()),
            (Some(1.5), Some(-2.25))
        );
        assert_eq!(
            m["point"]["z"].as_f64().unwrap(),
            m["header"]["stamp"]["nanosec"].as_f64().unwrap()
        );
    }

    // Foxglove -> DDS: a channel advertised in CDR (written by @foxglove/rosmsg2-serialization;
    // no channel of the realm has std_msgs/String, so the client brings the schema, as
    // Foxglove's publish panel would from its own definitions), read by the DDS listener.
    let pub_cdr = fox(
        "fox-pub-cdr",
        &url,
        Some(FULL),
        &[
            "pub",
            "/from_fox",
            "std_msgs/msg/String",
            "cdr",
            r#"{"data": "fox $N"}"#,
            "string data",
        ],
    );
    let l = wait_line(&listener, "data: fox ", T).unwrap_or_else(|| {
        let mut said = Vec::new();
        while let Some(l) = pub_cdr.line(Duration::from_millis(100)) {
            said.push(l);
        }
        panic!(
            "the DDS listener got nothing; the client said {said:?}\ngateway: {}\nproxy: {}",
            gw.logs(),
            robot.logs()
        )
    });
    assert!(l["data: fox ".len()..].parse::<u64>().is_ok(), "{l}");

    // Foxglove (JSON, token on the URL) -> a roslibpy client on the rosbridge door.
    let json_url = format!("{url}?token={FULL}");
    let _pub_json = fox(
        "fox-pub-json",
        &json_url,
        None,
        &[
            "pub",
            "/fox_json",
            "std_msgs/msg/String",
            "json",
            r#"{"data": "json $N"}"#,
        ],
    );
    let ros = client(
        "ros-sub",
        port,
        &[
            "--token",
            FULL,
            "sub",
            "/fox_json",
            "std_msgs/String",
            "--count",
            "1",
        ],
    );
    let l = expect(&ros, "msg ", &gw);
    let data = json_after(&l, "msg ")["data"].as_str().unwrap().to_string();
    assert!(data.starts_with("json "), "{l}");

    // AddTwoInts served by the DDS node behind the proxy, called in CDR and in JSON.
    for encoding in ["cdr", "json"] {
        let call = fox(
            &format!("fox-call-{encoding}"),
            &url,
            Some(FULL),
            &["call", "/add_two_ints", encoding, r#"{"a": 40, "b": 2}"#],
        );
        let s = json_after(&expect(&call, "service ", &gw), "service ");
        assert_eq!(s["type"], "example_interfaces/srv/AddTwoInts");
        assert_eq!(s["request"], "example_interfaces/srv/AddTwoInts_Request");
        let l = expect(&call, "result ", &gw);
        assert_eq!(l, format!("result {encoding} {{\"sum\":42}}"));
    }
    // ... and a service served by a rosbridge client of the same gateway.
    let _web = client(
        "ros-serve",
        port,
        &[
            "--token",
            FULL,
            "serve",
            "/web_add",
            "example_interfaces/srv/AddTwoInts",
        ],
    );
    let call = fox(
        "fox-call-web",
        &url,
        Some(FULL),
        &["call", "/web_add", "cdr", r#"{"a": 5, "b": 7}"#],
    );
    assert_eq!(expect(&call, "result ", &gw), "result cdr {\"sum\":12}");

    // No token: the server says why, offers nothing, and refuses what is tried anyway.
    let anon = fox(
        "fox-anon",
        &url,
        None,
        &[
            "watch",
            "--subscribe",
            "1",
            "--advertise",
            "/from_fox",
            "std_msgs/msg/String",
            "json",
        ],
    );
    let l = expect(&anon, "status 2 ", &gw);
    assert!(l.contains("not authenticated"), "{l}");
    assert_eq!(expect(&anon, "advertise ", &gw), "advertise []");
    expect(&anon, "tried advertise", &gw);
    for _ in 0..2 {
        let l = expect(&anon, "status 2 ", &gw);
        assert!(l.contains("not authenticated"), "{l}");
    }
    // A token that may subscribe to /point_out only: it sees that channel and no service,
    // and may not publish.
    let limited = fox(
        "fox-limited",
        &url,
        Some(LIMITED),
        &[
            "watch",
            "--advertise",
            "/from_fox",
            "std_msgs/msg/String",
            "json",
        ],
    );
    assert_eq!(
        expect(&limited, "advertise ", &gw),
        "advertise [\"/point_out\"]"
    );
    let l = expect(&limited, "status 2 ", &gw);
    assert!(l.contains("limited may not publish on /from_fox"), "{l}");
    // A bad token is refused as such.
    let bad = fox("fox-bad", &url, Some("not-a-token-at-all-0000"), &["watch"]);
    let l = expect(&bad, "status 2 ", &gw);
    assert!(l.contains("unknown token"), "{l}");

    // Frames that are not ops, and CDR that does not fit its type, are refused with the
    // reason; the connection stays usable (the last op is still answered).
    let odd = fox(
        "fox-odd",
        &url,
        Some(FULL),
        &[
            "watch",
            "--text",
            "{nope",
            "--text",
            r#"{"op": "launch"}"#,
            "--binary",
            "09",
            "--binary",
            "0201",
            "--text",
            r#"{"op": "getParameters", "parameterNames": []}"#,
            "--advertise",
            "/from_fox",
            "std_msgs/msg/String",
            "cdr",
            "--publish",
            "1",
            "--subscribe",
            "999",
        ],
    );
    for want in [
        "refused a frame: malformed JSON",
        "refused a frame: unknown op \"launch\"",
        "refused a frame: unknown binary opcode 0x09",
        "refused a frame: a binary service call request of 2 bytes is too short",
        "op getParameters is not supported",
        "/from_fox: the message does not fit std_msgs/msg/String: ",
        "subscribe 0 (channel 999): no such channel was advertised to this client",
    ] {
        let l = expect(&odd, "status 2 ", &gw);
        assert!(l.contains(want), "want {want:?}: {l}");
    }

    // The refusals are counted in the gateway's summary.
    drop((anon, limited, bad, odd));
    gw.terminate();
    let summary = gw
        .stderr
        .lock()
        .unwrap()
        .iter()
        .find(|l| l.starts_with("served "))
        .cloned()
        .unwrap_or_else(|| panic!("no summary: {}", gw.logs()));
    // Counted once each: the anonymous client's connection, subscribe and advertise, the
    // limited token's advertise, the unknown token; the four frames that were not ops.
    let count = |after: &str| -> u64 {
        summary
            .split(after)
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{after:?} in {summary}"))
    };
    assert_eq!(count("refused "), 5, "{summary}");
    let bad_frames: u64 = summary
        .split(" bad frames")
        .next()
        .and_then(|r| r.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{summary}"));
    assert_eq!(bad_frames, 4, "{summary}");
}

#[test]
fn a_gateway_without_definitions_offers_what_the_realm_announces() {
    let net = Net::new("gw-foxglove-nodefs");
    let defs = definitions(&net.dir);
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let _points = dds("points", &["talk", "97", "rt/point_out"]);
    // The robot's proxy has a Foxglove door of its own too (the robot's own UI case).
    let robot = net.proxy(
        "robot",
        97,
        &addr,
        &(format!("msg_paths: [{}]\n", defs.display())
            + "exports:\n  - topic: /point_out\n    realm: test\n"
            + "gateway:\n  realm: test\n  foxglove: {listen: 127.0.0.1:0}\n"),
    );
    let on_robot = format!("ws://127.0.0.1:{}/", foxglove_port(&robot));
    let local = fox("fox-robot", &on_robot, None, &["sub", "/point_out", "1"]);
    let l = expect(&local, "msg ", &robot);
    assert!(l.contains(r#""frame_id":"map""#), "{l}");
    // No msg_paths and no ROS install: the schema is the definition the robot announced. Over
    // TLS (wss://, a given certificate the client trusts).
    let (cert, key, _) = web_certificate(&net.dir, "cloud-web");
    let tls = format!(
        "foxglove:\n  listen: 127.0.0.1:0\ntls:\n  cert: {}\n  key: {}\n",
        cert.display(),
        key.display()
    );
    let (gw, _) = gateway(&net, "cloud-gw", &addr, None, &tls);
    let url = format!("wss://127.0.0.1:{}/", foxglove_port(&gw));
    let ca = cert.to_str().unwrap();
    let sub = fox(
        "fox-cloud",
        &url,
        None,
        &["--ca", ca, "sub", "/point_out", "1"],
    );
    let ch = json_after(&expect(&sub, "channel ", &gw), "channel ");
    assert_eq!(ch["schemaName"], "geometry_msgs/msg/PointStamped", "{ch}");
    let l = expect(&sub, "msg ", &gw);
    assert!(l.contains(r#""frame_id":"map""#), "{l}");
    assert!(l.contains(r#""x":1.5"#), "{l}");
    // Asked without the subprotocol, the door refuses the upgrade.
    let plain = std::process::Command::new("node")
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js/foxglove"))
        .env_remove("LD_LIBRARY_PATH")
        .args([
            "-e",
            "const W=require('ws');const w=new W(process.argv[1],{ca:require('fs').readFileSync(process.argv[2])});w.on('open',()=>{console.log('opened');process.exit(0)});w.on('unexpected-response',(_,r)=>{console.log('status',r.statusCode);process.exit(0)});w.on('error',e=>{console.log('error',e.message);process.exit(0)})",
        ])
        .args([&url, ca])
        .output()
        .expect("node");
    let said = String::from_utf8_lossy(&plain.stdout);
    assert_eq!(said.trim(), "status 400", "{said}");
}
