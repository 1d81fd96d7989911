//! rosbridge actions through the realm: a roslibpy (PyPI) `ActionClient` on one gateway sends
//! Fibonacci goals to a rosbridge client serving the action (`advertise_action`, a raw
//! WebSocket client here, as roslibjs' ActionServer speaks it) on another gateway, across a
//! real router: order 4 gives [0, 1, 1, 2, 3] SUCCEEDED with feedback; order 10 cancelled after
//! the first feedback ends CANCELED. Then the same client reaches a DDS action server behind
//! a proxy.

use std::collections::HashMap;
use std::time::Duration;

use crate::common::*;
use crate::gateway_support::*;
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;

const T: Duration = Duration::from_secs(40);

/// Serves /fibonacci over rosbridge: one more number per 50 ms step as feedback, the sequence
/// as result; a cancel ends the goal at once as canceled.
async fn fibonacci_server(port: u16) {
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://127.0.0.1:{port}/"))
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
fn a_roslibpy_action_client_gets_fibonacci_results_feedback_and_cancellation() {
    let net = Net::new("gw-actions");
    let defs = definitions(&net.dir);
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let (gw, port) = gateway(&net, "gw", &addr, Some(&defs), "");
    let (gw_srv, srv_port) = gateway(&net, "gw-srv", &addr, Some(&defs), "");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = rt.spawn(fibonacci_server(srv_port));

    let goal = |name: &str, order: u32, cancel: bool| {
        let g = format!(r#"{{"order": {order}}}"#);
        let mut args = vec![
            "action",
            "/fibonacci",
            "example_interfaces/action/Fibonacci",
            g.as_str(),
        ];
        if cancel {
            args.push("--cancel");
        }
        client(name, port, &args)
    };
    // The server's goal service is found once both gateways' routers have linked: retry
    // until a goal is answered.
    let first = {
        let mut tries = 0;
        loop {
            tries += 1;
            let c = goal(&format!("fib4-{tries}"), 4, false);
            match line_or_seen(&c, "result ", T) {
                Ok(l) => break (c, l),
                Err(seen) => assert!(
                    tries < 3,
                    "no result: {seen:?}\n{}\n{}",
                    gw.logs(),
                    gw_srv.logs()
                ),
            }
        }
    };
    let (c4, l) = first;
    assert_eq!(
        l, r#"result 4 {"sequence": [0, 1, 1, 2, 3]}"#,
        "SUCCEEDED with the sequence"
    );
    drop(c4);
    // Feedback reached the client too, and a cancelled goal ends CANCELED.
    let c4 = goal("fib4-feedback", 4, false);
    let f = wait_line(&c4, "feedback ", T).expect("no feedback");
    assert!(f.contains("\"sequence\": [0, 1"), "{f}");
    let c10 = goal("fib10-cancel", 10, true);
    let l =
        line_or_seen(&c10, "result ", T).unwrap_or_else(|seen| panic!("{seen:?}\n{}", gw.logs()));
    let (status, values) = l["result ".len()..].split_once(' ').unwrap();
    assert_eq!(status, "5", "CANCELED: {l}");
    let v: serde_json::Value = serde_json::from_str(values).unwrap();
    let seq = v["sequence"].as_array().unwrap();
    assert!(seq.len() < 11, "cancelled before the end: {l}");
    server.abort();
}

/// A DDS action server behind a proxy (`action:` entry) serves a roslibpy client on a
/// gateway: the server is the Python cyclonedds Fibonacci node (rmw_cyclonedds's layout,
/// crates/roam-dds/tests/py/action.py) in DDS domain 199, this file's alone.
#[test]
fn a_roslibpy_action_client_reaches_a_dds_action_server_behind_a_proxy() {
    let net = Net::new("gw-actions-dds");
    let defs = definitions(&net.dir);
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let (gw, port) = gateway(&net, "gw", &addr, Some(&defs), "");
    let robot = net.proxy(
        "robot",
        199,
        &addr,
        "exports:\n  - action: /fibonacci\n    realm: test\n",
    );
    let server = python("server", "action.py", &["server", "199", "fibonacci", "50"]);
    let logs = || format!("{}\n{}\n{}", gw.logs(), robot.logs(), server.logs());
    // The goal service is found once the proxy has announced the server: retry until a goal
    // is answered.
    let mut tries = 0;
    let l = loop {
        tries += 1;
        let c = client(
            &format!("fib4-{tries}"),
            port,
            &[
                "action",
                "/fibonacci",
                "example_interfaces/action/Fibonacci",
                r#"{"order": 4}"#,
            ],
        );
        match line_or_seen(&c, "result ", T) {
            Ok(l) => break l,
            Err(seen) => assert!(tries < 3, "no result: {seen:?}\n{}", logs()),
        }
    };
    assert_eq!(l, r#"result 4 {"sequence": [0, 1, 1, 2, 3]}"#, "{}", logs());
    assert!(wait_line(&server, "succeeded ", T).is_some(), "{}", logs());
}
