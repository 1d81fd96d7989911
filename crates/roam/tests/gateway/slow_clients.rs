//! Load on the rosbridge door: a 13 MB message reaches a client whole, and a client that
//! reads slower than a topic arrives loses the oldest messages (and is told so) while another
//! client of the same topic keeps receiving. Real router, `roam pub`, gateway; raw WebSocket
//! clients (tokio-tungstenite) reading `cbor-raw`, so the payloads need no type definition.

use std::time::Duration;

use crate::common::*;
use crate::gateway_support::*;
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;

const T: Duration = Duration::from_secs(60);

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn subscribe(port: u16, topic: &str, queue_length: usize) -> Ws {
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://127.0.0.1:{port}/"))
        .await
        .expect("connect");
    let op = format!(
        r#"{{"op": "subscribe", "topic": "{topic}", "type": "test_msgs/msg/Blob", "compression": "cbor-raw", "queue_length": {queue_length}}}"#
    );
    ws.send(Message::Text(op.into())).await.unwrap();
    ws
}

/// The CDR bytes of a cbor-raw publish frame.
fn raw_bytes(frame: &[u8]) -> Vec<u8> {
    let mut d = minicbor::Decoder::new(frame);
    let n = d.map().unwrap().unwrap();
    for _ in 0..n {
        let k = d.str().unwrap();
        if k != "msg" {
            d.skip().unwrap();
            continue;
        }
        let m = d.map().unwrap().unwrap();
        for _ in 0..m {
            if d.str().unwrap() == "bytes" {
                return d.bytes().unwrap().to_vec();
            }
            d.skip().unwrap();
        }
    }
    panic!("no msg.bytes in the frame");
}

fn publisher(net: &Net, topic: &str, id: &str, addr: &str, args: &[&str]) -> Proc {
    net.publisher(topic, id, addr, args)
}

#[test]
fn a_13_mb_message_arrives_whole_and_a_slow_client_loses_the_oldest_not_the_others() {
    let net = Net::new("gw-load");
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let (mut gw, port) = gateway(&net, "gw", &addr, None, "");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    // 13 MB, whole, byte for byte.
    rt.block_on(async {
        let mut ws = subscribe(port, "/big", 0).await;
        let size = 13_000_000;
        let _big = publisher(
            &net,
            "/big",
            "big",
            &addr,
            &["--size", "13000000", "--count", "2"],
        );
        let frame = tokio::time::timeout(T, async {
            loop {
                match ws.next().await {
                    Some(Ok(Message::Binary(b))) => return b,
                    Some(Ok(_)) => {}
                    other => panic!("connection ended: {other:?}"),
                }
            }
        })
        .await
        .expect("no 13 MB message");
        let cdr = raw_bytes(&frame);
        assert_eq!(cdr.len(), size);
        assert_eq!(
            cdr,
            roam::payload::pattern(1, size),
            "the first message, whole"
        );
    });

    // A slow and a fast client on one busy topic (100 KB at 100 Hz).
    rt.block_on(async {
        let mut slow = subscribe(port, "/busy", 5).await;
        let mut fast = subscribe(port, "/busy", 0).await;
        let _busy = publisher(
            &net,
            "/busy",
            "busy",
            &addr,
            &["--size", "100000", "--rate", "100"],
        );
        let end = tokio::time::Instant::now() + T;
        let mut fast_got = 0u64;
        let mut told = None;
        while told.is_none() {
            assert!(
                tokio::time::Instant::now() < end,
                "the slow client was never told it lost messages ({fast_got} to the fast one)"
            );
            // The slow client reads one frame every 20 ms (5 MB/s of a 10 MB/s topic) ...
            if let Ok(Some(Ok(Message::Text(t)))) =
                tokio::time::timeout(Duration::from_millis(20), slow.next()).await
            {
                if t.contains("dropped") {
                    told = Some(t.to_string());
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            // ... while the fast one takes everything that is there.
            while let Ok(Some(Ok(m))) = tokio::time::timeout(Duration::ZERO, fast.next()).await {
                if matches!(m, Message::Binary(_)) {
                    fast_got += 1;
                }
            }
        }
        let t = told.unwrap();
        assert!(
            t.contains("\"level\":\"warning\"") && t.contains("messages of /busy"),
            "{t}"
        );
        // The fast client still receives after the slow one fell behind.
        let before = fast_got;
        while fast_got < before + 20 {
            match tokio::time::timeout_at(end, fast.next()).await {
                Ok(Some(Ok(Message::Binary(_)))) => fast_got += 1,
                Ok(Some(Ok(_))) => {}
                other => panic!("the fast client stopped receiving: {other:?}"),
            }
        }
    });
    assert!(gw.terminate().is_some_and(|s| s.success()), "{}", gw.logs());
    let logs = gw.logs();
    let summary = logs
        .lines()
        .find(|l| l.starts_with("served "))
        .unwrap_or_else(|| panic!("{logs}"));
    let dropped: u64 = summary
        .split("dropped ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(dropped > 0, "{summary}");
}
