//! The WebSocket clients, each on its own thread with its own single-threaded runtime (as
//! separate programs would be: one client's decoding never delays another's reading). The
//! conductor sees their progress through atomics and stops them with a flag.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use super::door::{Door, Read};
use super::messages::{Frames, Kind};

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// How often a client looks at the stop flag while nothing arrives.
const POLL: Duration = Duration::from_millis(50);

/// What a subscriber has done so far.
#[derive(Default)]
pub struct Progress {
    pub subscribed: AtomicBool,
    pub received: AtomicU64,
    /// The highest sequence number received, plus one (0: none yet).
    pub next_seq: AtomicU64,
}

/// What a subscriber received: `(seq, latency ms)` per message, and what else came.
#[derive(Default, Debug)]
pub struct Receipts {
    pub samples: Vec<(u64, f64)>,
    pub statuses: u64,
    pub first_status: Option<String>,
    pub errors: u64,
    pub first_error: Option<String>,
}

pub fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

fn on_thread<T: Send + 'static>(
    name: String,
    f: impl std::future::Future<Output = Result<T, String>> + Send + 'static,
) -> JoinHandle<Result<T, String>> {
    std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("runtime: {e}"))?
                .block_on(f)
        })
        .expect("spawning a client thread")
}

/// Opens a WebSocket with Nagle's algorithm off, as browsers and most WebSocket libraries do
/// (small frames go out at once instead of waiting for the previous one's ACK).
async fn connect(url: &str, subprotocol: Option<&str>) -> Result<Ws, String> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut req = url
        .into_client_request()
        .map_err(|e| format!("{url}: {e}"))?;
    if let Some(p) = subprotocol {
        let v = p.parse().map_err(|_| format!("subprotocol {p:?}"))?;
        req.headers_mut().insert("sec-websocket-protocol", v);
    }
    let (ws, _) = tokio::time::timeout(
        Duration::from_secs(10),
        tokio_tungstenite::connect_async_with_config(req, None, true),
    )
    .await
    .map_err(|_| format!("{url}: no handshake within 10 s"))?
    .map_err(|e| format!("{url}: {e}"))?;
    Ok(ws)
}

/// A client of `door` subscribed to `topic` until `stop`.
pub fn subscriber(
    door: Door,
    kind: Kind,
    port: u16,
    topic: &str,
    stop: Arc<AtomicBool>,
) -> (Arc<Progress>, JoinHandle<Result<Receipts, String>>) {
    let progress = Arc::new(Progress::default());
    let p = progress.clone();
    let topic = topic.to_string();
    let task = async move {
        let mut ws = connect(&door.url(port), door.subprotocol()).await?;
        for op in door.subscribe_ops(&topic, kind) {
            ws.send(op).await.map_err(|e| format!("subscribe: {e}"))?;
        }
        // The Foxglove door advertises the topic's channel once the realm lists it (the
        // publisher's advertise): the subscription is made then; the warm-up waits for it.
        p.subscribed.store(true, Ordering::Release);
        let mut foxglove_subscribed = false;
        let mut r = Receipts::default();
        while !stop.load(Ordering::Acquire) {
            let frame = match tokio::time::timeout(POLL, ws.next()).await {
                Err(_) => continue,
                Ok(None) => return Err("the gateway closed the connection".into()),
                Ok(Some(Err(e))) => return Err(format!("reading: {e}")),
                Ok(Some(Ok(f))) => f,
            };
            if door == Door::Foxglove && !foxglove_subscribed {
                if let Some(op) = Door::foxglove_subscribe(&frame, &topic) {
                    ws.send(op).await.map_err(|e| format!("subscribe: {e}"))?;
                    foxglove_subscribed = true;
                }
                continue;
            }
            match door.read(kind, &frame) {
                Ok(Read::Sample(s)) => {
                    let latency = (now_ns() - s.stamp_ns) as f64 / 1e6;
                    r.samples.push((s.seq, latency));
                    p.received.fetch_add(1, Ordering::Relaxed);
                    p.next_seq.fetch_max(s.seq + 1, Ordering::Release);
                }
                Ok(Read::Status(s)) => {
                    r.statuses += 1;
                    r.first_status.get_or_insert(s);
                }
                Ok(Read::Other) => {}
                Err(e) => {
                    r.errors += 1;
                    r.first_error.get_or_insert(e);
                }
            }
        }
        let _ = ws.close(None).await;
        Ok(r)
    };
    (progress, on_thread(format!("sub-{}", door.label()), task))
}

/// What a publisher did.
#[derive(Debug, Default)]
pub struct Published {
    pub statuses: u64,
    pub first_status: Option<String>,
}

/// A client that advertises `topic` and publishes `rate` messages a second on a fixed
/// schedule (messages late behind it go out at once; a rate of 0: as fast as the gateway takes
/// them) until `stop`. `next` is the sequence number of the next message.
pub fn publisher(
    kind: Kind,
    port: u16,
    topic: &str,
    rate: f64,
    stop: Arc<AtomicBool>,
) -> (Arc<AtomicU64>, JoinHandle<Result<Published, String>>) {
    let next = Arc::new(AtomicU64::new(0));
    let n = next.clone();
    let topic = topic.to_string();
    let task = async move {
        let ws = connect(&Door::RosbridgeJson.url(port), None).await?;
        let (mut sink, mut stream) = ws.split();
        let advertise =
            serde_json::json!({"op": "advertise", "topic": topic, "type": kind.type_name()});
        sink.send(Message::Text(advertise.to_string().into()))
            .await
            .map_err(|e| format!("advertise: {e}"))?;
        // Whatever the gateway says to the publisher (an error status, say) is kept.
        let replies = tokio::spawn(async move {
            let (mut count, mut first) = (0, None);
            while let Some(Ok(m)) = stream.next().await {
                if let Ok(Read::Status(s)) = Door::RosbridgeJson.read(kind, &m) {
                    count += 1;
                    first.get_or_insert(s);
                }
            }
            (count, first)
        });
        let frames = Frames::new(kind, &topic);
        let period = (rate > 0.0).then(|| Duration::from_secs_f64(1.0 / rate));
        let t0 = Instant::now();
        let mut seq = 0u64;
        while !stop.load(Ordering::Acquire) {
            if let Some(p) = period {
                tokio::time::sleep_until((t0 + p.mul_f64(seq as f64)).into()).await;
            }
            let t = now_ns();
            let frame = frames.frame(seq, (t / 1_000_000_000) as i32, (t % 1_000_000_000) as u32);
            sink.send(Message::Binary(frame.into()))
                .await
                .map_err(|e| format!("publishing: {e}"))?;
            seq += 1;
            n.store(seq, Ordering::Release);
        }
        let _ = sink.close().await;
        let (statuses, first_status) = tokio::time::timeout(Duration::from_secs(2), replies)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        Ok(Published {
            statuses,
            first_status,
        })
    };
    (next, on_thread("publisher".into(), task))
}

/// A client that subscribes to `topic` (JSON, rosbridge's default) and then never reads its
/// socket, holding the connection open until `stop`.
pub fn stalled(
    kind: Kind,
    port: u16,
    topic: &str,
    stop: Arc<AtomicBool>,
) -> (Arc<AtomicBool>, JoinHandle<Result<(), String>>) {
    let subscribed = Arc::new(AtomicBool::new(false));
    let s = subscribed.clone();
    let topic = topic.to_string();
    let task = async move {
        let door = Door::RosbridgeJson;
        let mut ws = connect(&door.url(port), door.subprotocol()).await?;
        for op in door.subscribe_ops(&topic, kind) {
            ws.send(op).await.map_err(|e| format!("subscribe: {e}"))?;
        }
        s.store(true, Ordering::Release);
        while !stop.load(Ordering::Acquire) {
            tokio::time::sleep(POLL).await;
        }
        // Dropped unread: the connection closes with data still waiting.
        drop(ws);
        Ok(())
    };
    (subscribed, on_thread("stalled".into(), task))
}
