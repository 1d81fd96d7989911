//! `roam gateway`'s gRPC door with a real gRPC client we do not own: Python `grpcio`
//! (tests/py/gateway_grpc_client.py, stubs generated from proto/roam/gateway/v1/gateway.proto at
//! test time by grpcio-tools). Against ROS 2 nodes (Python cyclonedds, on the wire what
//! rmw_cyclonedds nodes are) behind a real `roam proxy`, a roslibpy client on the same
//! gateway's rosbridge door, and a rosbridge client serving a Fibonacci action: topics both
//! ways in JSON and CDR, a service call, goals with feedback and cancellation, the realm's
//! directory, definitions, refusals and a slow subscriber losing the oldest messages.

use std::collections::HashMap;
use std::time::Duration;

use crate::common::*;
use crate::gateway_support::*;
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;

const FULL: &str = "full-access-token-0123456789";
const LIMITED: &str = "limited-token-0123456789abcdef";

/// The first line starting with one of `prefixes`, within [`T`].
fn first_of(p: &Proc, prefixes: &[&str]) -> Option<String> {
    let end = std::time::Instant::now() + T;
    while std::time::Instant::now() < end {
        if let Some(l) = p.line(Duration::from_millis(100)) {
            if prefixes.iter().any(|x| l.starts_with(x)) {
                return Some(l);
            }
        }
    }
    None
}

/// Serves /fibonacci through a rosbridge client (roslibjs' ActionServer ops): one more number
/// per 50 ms step as feedback, the sequence as result; a cancel ends the goal at once.
async fn fibonacci_server(port: u16) {
    let url = format!("ws://127.0.0.1:{port}/?token={FULL}");
    let (mut ws, _) = tokio_tungstenite::connect_async(url)
        .await
        .expect("connect");
    let adv = r#"{"op": "advertise_action", "action": "/fibonacci", "type": "example_interfaces/action/Fibonacci"}"#;
    ws.send(Message::Text(adv.into())).await.unwrap();
    let mut goals: HashMap<String, (usize, Vec<i64>)> = HashMap::new();
    let mut step = tokio::time::interval(Duration::from_millis(50));
    loop {
        tokio::select! {
            m = ws.next() => {
                let Some(Ok(Message::Text(t))) = m else { return };
                let op: serde_json::Value = serde_json::from_str(&t).unwrap();
                let id = op["id"].as_str().unwrap_or_default().to_string();
                match op["op"].as_str() {
                    Some("send_action_goal") => {
                        let order = op["args"]["order"].as_u64().unwrap() as usize;
                        goals.insert(id, (order, vec![0, 1]));
                    }
                    Some("cancel_action_goal") => {
                        if let Some((_, seq)) = goals.remove(&id) {
                            let r = serde_json::json!({"op": "action_result", "action": "/fibonacci", "id": id,
                                "values": {"sequence": seq}, "status": 5, "result": true});
                            ws.send(Message::Text(r.to_string().into())).await.unwrap();
                        }
                    }
                    _ => {}
                }
            }
            _ = step.tick() => {
                let mut done = Vec::new();
                for (id, (order, seq)) in goals.iter_mut() {
                    if seq.len() <= *order {
                        let n = seq[seq.len() - 1] + seq[seq.len() - 2];
                        seq.push(n);
                    }
                    let f = serde_json::json!({"op": "action_feedback", "action": "/fibonacci", "id": id,
                        "values": {"sequence": seq}});
                    ws.send(Message::Text(f.to_string().into())).await.unwrap();
                    if seq.len() > *order {
                        done.push(id.clone());
                    }
                }
                for id in done {
                    let (order, seq) = goals.remove(&id).unwrap();
                    let r = serde_json::json!({"op": "action_result", "action": "/fibonacci", "id": id,
                        "values": {"sequence": &seq[..=order]}, "status": 4, "result": true});
                    ws.send(Message::Text(r.to_string().into())).await.unwrap();
                }
            }
        }
    }
}

#[test]
fn grpc_clients_reach_dds_nodes_rosbridge_clients_services_and_actions() {
    let net = Net::new("gw-grpc");
    let defs = definitions(&net.dir);
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    // Message N carries the source timestamp STAMP + N ns: 1,700,000,000 s and N ns.
    let _talker = python(
        "talker",
        "talker.py",
        &[
            "100",
            "rt/chatter",
            "hello",
            "--stamp",
            "1700000000000000000",
        ],
    );
    let listener = python("listener", "listener.py", &["100", "rt/from_grpc"]);
    let _server = python("server", "service.py", &["server", "100", "add_two_ints"]);
    let _robot = net.proxy(
        "robot",
        100,
        &addr,
        &(format!("msg_paths: [{}]\n", defs.display()) + "exports:\n  - topic: /chatter\n    realm: test\n  - service: /add_two_ints\n    realm: test\nimports:\n  - topic: /from_grpc\n    realm: test\n"),
    );
    let extra = format!(
        "grpc:\n  listen: 127.0.0.1:0\nlimits: {{max_frame_bytes: 1048576}}\nauth:\n  tokens:\n    - identity: full\n      token: {FULL}\n      subscribe: {{allow: ['/**']}}\n      publish: {{allow: ['/**']}}\n      call: {{allow: ['/**']}}\n    - identity: limited\n      token: {LIMITED}\n      subscribe: {{allow: ['/chatter']}}\n"
    );
    let (mut gw, ws_port) = gateway(&net, "gw", &addr, Some(&defs), &extra);
    let g = wait_line(&gw, "grpc listening ", T)
        .unwrap_or_else(|| panic!("no gRPC door: {}", gw.logs()))["grpc listening ".len()..]
        .to_string();
    let g = g.as_str();
    let full = Some(FULL);

    // DDS node -> gRPC, as JSON and as the raw CDR (a std_msgs/String after its 4-byte
    // encapsulation header), each message with its publisher's source timestamp.
    let json = grpc(
        "sub-json",
        g,
        full,
        &[
            "sub",
            "/chatter",
            "--type",
            "std_msgs/msg/String",
            "--count",
            "2",
            "--times",
        ],
    );
    let l = expect(&json, "msg ", &gw);
    let m = json_after(&l, "msg ");
    let n = m["data"].as_str().unwrap().strip_prefix("hello ");
    let n: u64 = n.and_then(|n| n.parse().ok()).expect(&l);
    let t = expect(&json, "source ", &gw);
    assert_eq!(t, format!("source 1700000000 {n}"), "for {l}");
    let cdr = grpc(
        "sub-cdr",
        g,
        full,
        &[
            "sub",
            "/chatter",
            "--type",
            "std_msgs/String",
            "--cdr",
            "--count",
            "2",
        ],
    );
    let l = expect(&cdr, "cdr ", &gw);
    assert!(l.starts_with("cdr 00010000 hello "), "{l}");

    // gRPC -> gRPC on one gateway (JSON in; JSON and CDR out), and gRPC -> DDS node (CDR in).
    let sub = grpc(
        "sub-grpc",
        g,
        full,
        &[
            "sub",
            "/grpc_chat",
            "--type",
            "std_msgs/msg/String",
            "--count",
            "1",
            "--times",
        ],
    );
    expect(&sub, "subscribed", &gw);
    let sub_cdr = grpc(
        "sub-grpc-cdr",
        g,
        full,
        &[
            "sub",
            "/grpc_chat",
            "--type",
            "std_msgs/msg/String",
            "--cdr",
            "--count",
            "1",
        ],
    );
    expect(&sub_cdr, "subscribed", &gw);
    let _pub = grpc(
        "pub-grpc",
        g,
        full,
        &[
            "pub",
            "/grpc_chat",
            "std_msgs/msg/String",
            r#"{"data": "grpc $N"}"#,
        ],
    );
    let l = expect(&sub, "msg ", &gw);
    assert!(
        json_after(&l, "msg ")["data"]
            .as_str()
            .unwrap()
            .starts_with("grpc "),
        "{l}"
    );
    // Published by a gRPC client: no source timestamp to pass on.
    assert_eq!(expect(&sub, "source ", &gw), "source -");
    let l = expect(&sub_cdr, "cdr ", &gw);
    assert!(l.starts_with("cdr 00010000 grpc "), "{l}");
    let _pub_cdr = grpc(
        "pub-cdr",
        g,
        full,
        &[
            "pub",
            "/from_grpc",
            "std_msgs/msg/String",
            "cdr $N",
            "--cdr-string",
        ],
    );
    let l = expect(&listener, "data: cdr ", &gw);
    assert!(l["data: cdr ".len()..].parse::<u64>().is_ok(), "{l}");

    // roslibpy on the rosbridge door -> gRPC, the type taken from the realm's directory.
    let _web = client(
        "pub-web",
        ws_port,
        &[
            "--token",
            FULL,
            "pub",
            "/web_chat",
            "std_msgs/String",
            r#"{"data": "web $N"}"#,
        ],
    );
    let web = {
        let mut tries = 0;
        loop {
            tries += 1;
            let p = grpc(
                &format!("sub-web-{tries}"),
                g,
                full,
                &["sub", "/web_chat", "--count", "1"],
            );
            // Until the roslibpy client has advertised, the topic is not listed: NOT_FOUND.
            match first_of(&p, &["msg ", "error NOT_FOUND "]) {
                Some(l) if l.starts_with("msg ") => break l,
                seen => assert!(tries < 50, "{seen:?}\n{}\ngateway: {}", p.logs(), gw.logs()),
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    assert!(
        json_after(&web, "msg ")["data"]
            .as_str()
            .unwrap()
            .starts_with("web "),
        "{web}"
    );

    // AddTwoInts answered by the DDS server behind the proxy, in JSON and in CDR.
    let call = grpc(
        "call",
        g,
        full,
        &[
            "call",
            "/add_two_ints",
            "example_interfaces/srv/AddTwoInts",
            r#"{"a": 40, "b": 2}"#,
        ],
    );
    let l = expect(&call, "result ", &gw);
    assert_eq!(json_after(&l, "result "), serde_json::json!({"sum": 42}));
    let call = grpc(
        "call-cdr",
        g,
        full,
        &[
            "call",
            "/add_two_ints",
            "example_interfaces/AddTwoInts",
            r#"{"a": 5, "b": 7}"#,
            "--cdr",
        ],
    );
    let l = expect(&call, "result ", &gw);
    assert_eq!(json_after(&l, "result "), serde_json::json!({"sum": 12}));

    // The realm's directory and a definition.
    let list = grpc(
        "list",
        g,
        full,
        &["list", "--want", "/chatter", "/add_two_ints", "/web_chat"],
    );
    let v = json_after(&expect(&list, "list ", &gw), "list ");
    assert_eq!(
        v["topics"]["/chatter"],
        serde_json::json!(["std_msgs/msg/String"]),
        "{v}"
    );
    assert_eq!(
        v["topics"]["/web_chat"],
        serde_json::json!(["std_msgs/msg/String"]),
        "{v}"
    );
    assert_eq!(
        v["services"]["/add_two_ints"],
        serde_json::json!(["example_interfaces/srv/AddTwoInts"]),
        "{v}"
    );
    let def = grpc("def", g, full, &["def", "geometry_msgs/PointStamped"]);
    let v = json_after(&expect(&def, "def ", &gw), "def ");
    assert_eq!(v["type"], "geometry_msgs/msg/PointStamped");
    let text = v["definition"].as_str().unwrap();
    assert!(text.starts_with("std_msgs/Header header\n"), "{text}");
    assert!(text.contains("\nMSG: std_msgs/Header\n"), "{text}");
    assert!(text.contains("\nMSG: geometry_msgs/Point\n"), "{text}");
    assert_eq!(
        v["encodings"],
        serde_json::json!(["ENCODING_JSON", "ENCODING_CDR"])
    );
    let def = grpc("def-unknown", g, full, &["def", "nope_msgs/msg/Nope"]);
    let l = expect(&def, "error ", &gw);
    assert!(
        l.starts_with("error NOT_FOUND no definition of nope_msgs/msg/Nope"),
        "{l}"
    );

    // Fibonacci goals to a rosbridge client serving the action on the same gateway.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = rt.spawn(fibonacci_server(ws_port));
    let fib = "example_interfaces/action/Fibonacci";
    let (goal4, result) = {
        let mut tries = 0;
        loop {
            tries += 1;
            let p = grpc(
                &format!("goal4-{tries}"),
                g,
                full,
                &["goal", "/fibonacci", fib, r#"{"order": 4}"#],
            );
            match line_or_seen(&p, "result ", T) {
                Ok(l) => break (p, l),
                Err(seen) => assert!(tries < 3, "{seen:?}\n{}\ngateway: {}", p.logs(), gw.logs()),
            }
        }
    };
    assert_eq!(
        result,
        r#"result GOAL_STATUS_SUCCEEDED {"sequence": [0, 1, 1, 2, 3]}"#
    );
    drop(goal4);
    let goal4 = grpc(
        "goal4",
        g,
        full,
        &["goal", "/fibonacci", fib, r#"{"order": 4}"#],
    );
    let l = expect(&goal4, "accepted ", &gw);
    assert_eq!(l.len(), "accepted ".len() + 36, "a UUID: {l}");
    let l = expect(&goal4, "feedback ", &gw);
    assert!(l.starts_with(r#"feedback {"sequence": [0, 1"#), "{l}");
    expect(&goal4, "result GOAL_STATUS_SUCCEEDED ", &gw);
    // The same in CDR: the goal, the feedback and the result (an X_Result of its own), and
    // the goal's status as it executes.
    let cdr4 = grpc(
        "goal4-cdr",
        g,
        full,
        &["goal", "/fibonacci", fib, r#"{"order": 4}"#, "--cdr"],
    );
    let mut events = Vec::new();
    while !events
        .last()
        .is_some_and(|l: &String| l.starts_with("result "))
    {
        let l = first_of(&cdr4, &["accepted ", "status ", "feedback ", "result "]);
        events.push(l.unwrap_or_else(|| panic!("{events:?}\n{}", cdr4.logs())));
    }
    assert!(events[0].starts_with("accepted "), "{events:?}");
    assert!(
        events.iter().any(|l| l == "status GOAL_STATUS_EXECUTING"),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|l| l.starts_with(r#"feedback {"sequence": [0, 1, 1"#)),
        "{events:?}"
    );
    assert_eq!(
        events.last().unwrap(),
        r#"result GOAL_STATUS_SUCCEEDED {"sequence": [0, 1, 1, 2, 3]}"#
    );
    let goal10 = grpc(
        "goal10",
        g,
        full,
        &["goal", "/fibonacci", fib, r#"{"order": 10}"#, "--cancel"],
    );
    let l = expect(&goal10, "cancel ", &gw);
    assert!(l.starts_with("cancel CANCEL_CODE_NONE ['"), "{l}");
    let l = expect(&goal10, "result ", &gw);
    let rest = l
        .strip_prefix("result GOAL_STATUS_CANCELED ")
        .unwrap_or_else(|| panic!("{l}"));
    let v: serde_json::Value = serde_json::from_str(rest).unwrap();
    assert!(
        v["sequence"].as_array().unwrap().len() < 11,
        "cancelled before the end: {l}"
    );
    server.abort();

    // Refusals: each a gRPC status with a clear message, counted by the gateway.
    let refusals = [
        (
            None,
            vec!["sub", "/chatter"],
            "error UNAUTHENTICATED not authenticated",
        ),
        (
            Some("wrong-token-0123456789"),
            vec!["list"],
            "error UNAUTHENTICATED unknown token",
        ),
        (
            Some(LIMITED),
            vec!["sub", "/secret", "--type", "std_msgs/String"],
            "error PERMISSION_DENIED limited may not subscribe to /secret",
        ),
        (
            Some(LIMITED),
            vec![
                "call",
                "/add_two_ints",
                "example_interfaces/srv/AddTwoInts",
                "{}",
            ],
            "error PERMISSION_DENIED limited may not call /add_two_ints",
        ),
    ];
    for (i, (token, args, want)) in refusals.iter().enumerate() {
        let p = grpc(&format!("refused-{i}"), g, *token, args);
        let l = expect(&p, "error ", &gw);
        assert!(l.starts_with(want), "{args:?}: {l}");
    }
    // ... and a payload that does not fit its type, with the field's path.
    let p = grpc(
        "bad-json",
        g,
        full,
        &["pub", "/grpc_chat", "std_msgs/msg/String", r#"{"data": 5}"#],
    );
    let l = expect(&p, "error ", &gw);
    assert!(l.starts_with("error INVALID_ARGUMENT message 1 refused (0 published): /grpc_chat: the message does not fit std_msgs/msg/String: data: expected a string, found a number"), "{l}");
    let p = grpc(
        "bad-cdr",
        g,
        full,
        &["pub-bad-cdr", "/grpc_chat", "std_msgs/msg/String"],
    );
    let l = expect(&p, "error ", &gw);
    assert!(
        l.contains("INVALID_ARGUMENT") && l.contains("malformed CDR"),
        "{l}"
    );
    let p = grpc(
        "too-big",
        g,
        full,
        &[
            "pub",
            "/grpc_chat",
            "std_msgs/msg/String",
            "{}",
            "--pad",
            "2000000",
        ],
    );
    let l = expect(&p, "error ", &gw);
    assert!(l.starts_with("error OUT_OF_RANGE "), "{l}");
    let p = grpc(
        "bad-topic",
        g,
        full,
        &["sub", "/no such topic", "--type", "std_msgs/String"],
    );
    let l = expect(&p, "error INVALID_ARGUMENT", &gw);
    assert!(l.contains("topic: "), "{l}");

    // A client reading slower than a topic arrives loses the oldest messages and is told.
    let _big = grpc(
        "pub-big",
        g,
        full,
        &[
            "pub",
            "/big",
            "std_msgs/msg/String",
            r#"{"data": "$N "}"#,
            "--pad",
            "200000",
            "--period",
            "0.01",
            "--count",
            "3000",
        ],
    );
    let slow = grpc(
        "sub-slow",
        g,
        full,
        &[
            "sub",
            "/big",
            "--type",
            "std_msgs/msg/String",
            "--queue-length",
            "2",
            "--slow",
            "0.2",
        ],
    );
    let l = expect(&slow, "dropped ", &gw);
    let n: Vec<u64> = l["dropped ".len()..]
        .split(' ')
        .map(|x| x.parse().unwrap())
        .collect();
    assert!(n[0] > 0 && n[1] >= n[0], "{l}");

    drop(slow);
    gw.terminate();
    let logs = gw.logs();
    let refused: u64 = logs
        .lines()
        .find(|l| l.starts_with("served "))
        .and_then(|l| l.split("; refused ").nth(1))
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no summary: {logs}"));
    assert!(refused >= 4, "the refusals are counted: {logs}");
}
