//! What a gateway with tokens refuses, and that it keeps serving everyone else: roslibpy
//! clients with no token, an expired token, a token whose allow list leaves a topic out; a
//! raw WebSocket client sending malformed JSON, malformed CBOR, an unknown op and a 100 MB
//! frame. The same raw client reads `compression: cbor` and `cbor-raw` frames. Real processes
//! (router, `roam pub`, gateway, Python roslibpy) on loopback.

use std::time::{Duration, Instant};

use crate::common::*;
use crate::gateway_support::*;
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;

const T: Duration = Duration::from_secs(40);
const DASHBOARD: &str = "dashboard-token-0123456789";
const EXPIRED: &str = "expired-token-0123456789";

const AUTH: &str = "limits:\n  max_frame_bytes: 1048576\nauth:\n  tokens:\n    - identity: dashboard\n      token: dashboard-token-0123456789\n      subscribe: {allow: ['/chatter']}\n    - identity: old\n      token: expired-token-0123456789\n      expires: 2020-01-01T00:00:00Z\n      subscribe: {allow: ['**']}\n";

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(port: u16, token: &str) -> Ws {
    let url = format!("ws://127.0.0.1:{port}/?token={token}");
    tokio_tungstenite::connect_async(url)
        .await
        .expect("connect")
        .0
}

/// The next frame that satisfies `want`, within T.
async fn next(ws: &mut Ws, mut want: impl FnMut(&Message) -> bool) -> Message {
    let end = tokio::time::Instant::now() + T;
    loop {
        let m = tokio::time::timeout_at(end, ws.next())
            .await
            .expect("no such frame in time")
            .expect("connection closed")
            .expect("connection failed");
        if want(&m) {
            return m;
        }
    }
}

/// The next status op's JSON.
async fn status(ws: &mut Ws) -> serde_json::Value {
    let m = next(
        ws,
        |m| matches!(m, Message::Text(t) if t.contains("\"op\":\"status\"")),
    )
    .await;
    serde_json::from_str(m.to_text().unwrap()).unwrap()
}

/// A CBOR map's entries as (key, raw item bytes).
fn cbor_map(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut d = minicbor::Decoder::new(bytes);
    let n = d.map().unwrap().unwrap();
    (0..n)
        .map(|_| {
            let k = d.str().unwrap().to_string();
            let start = d.position();
            d.skip().unwrap();
            (k, bytes[start..d.position()].to_vec())
        })
        .collect()
}

fn field<'a>(m: &'a [(String, Vec<u8>)], k: &str) -> &'a [u8] {
    &m.iter()
        .find(|(key, _)| key == k)
        .unwrap_or_else(|| panic!("no {k}"))
        .1
}

#[test]
fn refusals_are_clear_errors_and_the_gateway_keeps_serving_the_others() {
    let net = Net::new("gw-refusals");
    let defs = definitions(&net.dir);
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let _chatter = string_talker(&net, &defs, &addr, "/chatter", "talker");
    let _secret = string_talker(&net, &defs, &addr, "/secret", "secret-talker");
    let (mut gw, port) = gateway(&net, "gw", &addr, Some(&defs), AUTH);

    // The allowed client first: it must keep receiving through everything below.
    let dash = client(
        "dash",
        port,
        &["--token", DASHBOARD, "sub", "/chatter", "std_msgs/String"],
    );
    assert!(
        wait_line(&dash, "msg ", T).is_some(),
        "the allowed client got nothing: {}",
        gw.logs()
    );

    // No token: refused, nothing received.
    let anon = client("anon", port, &["sub", "/chatter", "std_msgs/String"]);
    let l = wait_line(&anon, "status ", T).expect("no status for a client without a token");
    let s = serde_json::from_str::<serde_json::Value>(&l["status ".len()..]).unwrap();
    assert_eq!(s["level"], "error");
    assert!(
        s["msg"].as_str().unwrap().starts_with("not authenticated"),
        "{s}"
    );
    assert!(
        s["id"].as_str().unwrap().starts_with("subscribe:/chatter"),
        "{s}"
    );

    // An expired token.
    let old = client(
        "old",
        port,
        &["--token", EXPIRED, "sub", "/chatter", "std_msgs/String"],
    );
    let l = wait_line(&old, "status ", T).expect("no status for an expired token");
    assert!(
        l.contains("the token of old expired at 2020-01-01T00:00:00Z"),
        "{l}"
    );

    // A topic outside the allow list (token in the upgrade's Authorization header).
    let nosy = client(
        "nosy",
        port,
        &[
            "--header-token",
            DASHBOARD,
            "sub",
            "/secret",
            "std_msgs/String",
        ],
    );
    let l = wait_line(&nosy, "status ", T).expect("no status for a topic outside the allow list");
    assert!(l.contains("dashboard may not subscribe to /secret"), "{l}");

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut ws = connect(port, DASHBOARD).await;
        ws.send(Message::Text("{\"op\": \"publish\", ".into())).await.unwrap();
        let s = status(&mut ws).await;
        assert!(s["msg"].as_str().unwrap().starts_with("refused a frame: malformed JSON"), "{s}");
        ws.send(Message::Binary(vec![0xa2, 0x62, b'o', b'p'].into())).await.unwrap();
        let s = status(&mut ws).await;
        assert!(s["msg"].as_str().unwrap().starts_with("refused a frame: malformed CBOR"), "{s}");
        ws.send(Message::Text(r#"{"op": "launch_rockets", "id": "x1"}"#.into())).await.unwrap();
        let s = status(&mut ws).await;
        assert_eq!(s["msg"], "refused op launch_rockets: unknown op \"launch_rockets\"");
        assert_eq!((s["level"].as_str(), s["id"].as_str()), (Some("error"), Some("x1")));

        // The same client reads /chatter as cbor-raw (the CDR itself) and as cbor.
        let sub = r#"{"op": "subscribe", "id": "raw", "topic": "/chatter", "type": "std_msgs/msg/String", "compression": "cbor-raw"}"#;
        ws.send(Message::Text(sub.into())).await.unwrap();
        let m = next(&mut ws, |m| matches!(m, Message::Binary(_))).await.into_data();
        let top = cbor_map(&m);
        assert_eq!(minicbor::decode::<&str>(field(&top, "op")).unwrap(), "publish");
        assert_eq!(minicbor::decode::<&str>(field(&top, "topic")).unwrap(), "/chatter");
        let msg = cbor_map(field(&top, "msg"));
        let cdr: &[u8] = minicbor::decode::<&minicbor::bytes::ByteSlice>(field(&msg, "bytes")).unwrap();
        assert_eq!(cdr, [0, 1, 0, 0, 3, 0, 0, 0, b'h', b'i', 0], "CDR of std_msgs/String \"hi\"");
        let secs = minicbor::decode::<u64>(field(&msg, "secs")).unwrap();
        assert!(secs > 1_700_000_000, "receipt time {secs}");
        minicbor::decode::<u32>(field(&msg, "nsecs")).unwrap();
        ws.send(Message::Text(r#"{"op": "unsubscribe", "topic": "/chatter"}"#.into())).await.unwrap();
        let sub = r#"{"op": "subscribe", "topic": "/chatter", "type": "std_msgs/String", "compression": "cbor"}"#;
        ws.send(Message::Text(sub.into())).await.unwrap();
        let m = loop {
            let m = next(&mut ws, |m| matches!(m, Message::Binary(_))).await.into_data();
            let top = cbor_map(&m);
            let msg = cbor_map(field(&top, "msg"));
            // cbor-raw frames sent before the unsubscribe may still be on their way.
            if msg.iter().any(|(k, _)| k == "data") {
                break msg;
            }
        };
        assert_eq!(minicbor::decode::<&str>(field(&m, "data")).unwrap(), "hi");

        // A 100 MB frame: refused from its header, the connection closed.
        let mut big = connect(port, DASHBOARD).await;
        let _ = big.send(Message::Binary(vec![0u8; 100 << 20].into())).await;
        let end = tokio::time::Instant::now() + T;
        let mut told = None;
        while let Ok(Some(Ok(m))) = tokio::time::timeout_at(end, big.next()).await {
            match m {
                Message::Text(t) if t.contains("status") => told = Some(t.to_string()),
                Message::Close(c) => {
                    told.get_or_insert(format!("{c:?}"));
                    break;
                }
                _ => {}
            }
        }
        // The connection ended (close, reset or end of stream) well before the deadline.
        assert!(tokio::time::Instant::now() < end, "the oversized frame's connection stayed open");
        eprintln!("the 100 MB frame's sender was told: {told:?}");
        if let Some(t) = &told {
            assert!(t.contains("over the limit") || t.contains("too big"), "{t}");
        }

        // The first raw client is still served, fragments included: an op cut in two ...
        ws.send(Message::Text(r#"{"op": "unsubscribe", "topic": "/chatter"}"#.into())).await.unwrap();
        for (num, data) in [r#"{"op": "no"#, r#"pe", "id": "after"}"#].iter().enumerate() {
            let frag = serde_json::json!({"op": "fragment", "id": "f1", "data": data, "num": num, "total": 2});
            ws.send(Message::Text(frag.to_string().into())).await.unwrap();
        }
        let s = status(&mut ws).await;
        assert_eq!((s["id"].as_str(), s["msg"].as_str()), (Some("after"), Some("refused op nope: unknown op \"nope\"")));
        // ... and a subscription cut into fragments of at most 10 bytes of data.
        let sub = r#"{"op": "subscribe", "topic": "/chatter", "type": "std_msgs/String", "fragment_size": 10}"#;
        ws.send(Message::Text(sub.into())).await.unwrap();
        let mut whole = String::new();
        let mut started = false;
        loop {
            let m = next(&mut ws, |m| matches!(m, Message::Text(t) if t.contains("\"op\":\"fragment\""))).await;
            let f: serde_json::Value = serde_json::from_str(m.to_text().unwrap()).unwrap();
            if f["num"] == 0 {
                whole.clear();
                started = true;
            }
            if !started {
                continue;
            }
            assert!(f["data"].as_str().unwrap().len() <= 10, "{f}");
            whole += f["data"].as_str().unwrap();
            if f["num"].as_u64().unwrap() + 1 == f["total"].as_u64().unwrap() {
                break;
            }
        }
        let op: serde_json::Value = serde_json::from_str(&whole).unwrap();
        assert_eq!(op, serde_json::json!({"op": "publish", "topic": "/chatter", "msg": {"data": "hi"}}));
    });
    assert!(
        gw.wait_log("refused a frame over the limit of 1048576 bytes", T),
        "{}",
        gw.logs()
    );
    // The allowed roslibpy client kept receiving all along.
    let before = Instant::now();
    assert!(
        wait_line(&dash, "msg ", T).is_some(),
        "the allowed client stopped receiving"
    );
    assert!(before.elapsed() < T);
    assert!(gw.terminate().is_some_and(|s| s.success()), "{}", gw.logs());
    let logs = gw.logs();
    let summary = logs
        .lines()
        .find(|l| l.starts_with("served "))
        .unwrap_or_else(|| panic!("no summary: {logs}"));
    let refused: u64 = summary
        .split("refused ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no summary: {summary}"));
    // no token (subscribe), expired (auth, then subscribe), /secret.
    assert!(refused >= 4, "{summary}");
    assert!(summary.contains("bad frames"), "{summary}");
}
