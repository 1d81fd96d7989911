//! The live dashboard (`roam dashboard`): a page served by the roam process itself (no CDN,
//! works offline) showing a realm's members with their health, CPU and memory, their links
//! with round-trip times, and every topic with rate, bandwidth, sizes, ages and drops, with a
//! sparkline of its rate. The figures come from the snapshots members seal to the realm
//! ([`roam_edge::metrics::realm`]), turned into rates by [`roam_edge::metrics::rates`], and
//! are pushed to every open page over a WebSocket (`/live`) each interval.
//!
//! HTTP/1.1 with hyper: `GET /` the page, `GET /live` the WebSocket, `GET /rates.json` the
//! latest figures (for scripts). At most [`MAX_CONNECTIONS`] connections at once; a page that
//! reads slowly only ever has the latest figures waiting (a watch channel, not a queue).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONNECTION, CONTENT_TYPE, UPGRADE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde::Serialize;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use roam_edge::metrics::rates::{History, RealmRates};
use roam_edge::metrics::realm::RealmMetrics;

/// The page (HTML, CSS and JavaScript in one file, compiled in).
const PAGE: &str = include_str!("page.html");
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 32;
/// How long a client may take to send its request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// What a page receives each interval.
#[derive(Serialize)]
struct Update<'a> {
    realm: &'a str,
    /// µs since the Unix epoch (members whose latest snapshot is older than a few seconds are
    /// shown stale).
    now_us: u64,
    rates: &'a RealmRates,
}

/// Turns the realm's snapshots into the figures pages get, every `interval`, until dropped.
pub fn follow(
    realm: String,
    view: RealmMetrics,
    interval: Duration,
) -> (watch::Receiver<Arc<str>>, tokio::task::JoinHandle<()>) {
    let (tx, rx) = watch::channel(Arc::<str>::from("{}"));
    let task = tokio::spawn(async move {
        let mut history = History::default();
        let mut tick = tokio::time::interval(interval);
        loop {
            tick.tick().await;
            history.update(view.snapshots());
            let rates = history.rates();
            let update = Update {
                realm: &realm,
                now_us: roam_net::latency::now_us(),
                rates: &rates,
            };
            if let Ok(json) = serde_json::to_string(&update) {
                tx.send_replace(Arc::from(json));
            }
        }
    });
    (rx, task)
}

/// Serves the dashboard on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, latest: watch::Receiver<Arc<str>>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        let (stream, _) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("dashboard: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let latest = latest.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| answer(req, latest.clone()));
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            if let Err(e) = conn.await {
                tracing::debug!("dashboard connection: {e}");
            }
            drop(permit);
        });
    }
}

fn reply(status: StatusCode, content_type: &'static str, body: Bytes) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

async fn answer(
    req: Request<Incoming>,
    latest: watch::Receiver<Arc<str>>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if req.method() != Method::GET {
        return Ok(reply(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            Bytes::from_static(b"GET only\n"),
        ));
    }
    Ok(match req.uri().path() {
        "/" | "/index.html" => reply(
            StatusCode::OK,
            "text/html; charset=utf-8",
            Bytes::from_static(PAGE.as_bytes()),
        ),
        "/rates.json" => {
            let json = latest.borrow().clone();
            reply(
                StatusCode::OK,
                "application/json",
                Bytes::from(json.as_bytes().to_vec()),
            )
        }
        "/live" => upgrade(req, latest),
        _ => reply(
            StatusCode::NOT_FOUND,
            "text/plain",
            Bytes::from_static(b"not found\n"),
        ),
    })
}

/// Answers a WebSocket upgrade and feeds the connection once it is made.
fn upgrade(mut req: Request<Incoming>, latest: watch::Receiver<Arc<str>>) -> Response<Full<Bytes>> {
    let key = req
        .headers()
        .get("sec-websocket-key")
        .map(|k| derive_accept_key(k.as_bytes()));
    let wants = req
        .headers()
        .get(UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    let Some(accept) = key.filter(|_| wants) else {
        return reply(
            StatusCode::BAD_REQUEST,
            "text/plain",
            Bytes::from_static(b"/live is a WebSocket\n"),
        );
    };
    let on_upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        match on_upgrade.await {
            Ok(up) => {
                let ws =
                    WebSocketStream::from_raw_socket(TokioIo::new(up), Role::Server, None).await;
                feed(ws, latest).await;
            }
            Err(e) => tracing::debug!("dashboard: upgrade failed: {e}"),
        }
    });
    let mut r = reply(StatusCode::SWITCHING_PROTOCOLS, "text/plain", Bytes::new());
    let h = r.headers_mut();
    h.insert(UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(v) = HeaderValue::from_str(&accept) {
        h.insert("sec-websocket-accept", v);
    }
    r
}

/// Sends the latest figures at once and each time they change, until the page goes.
async fn feed<S>(ws: WebSocketStream<S>, mut latest: watch::Receiver<Arc<str>>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let (mut sink, mut from_page) = ws.split();
    loop {
        let json = latest.borrow_and_update().clone();
        if sink
            .send(Message::Text(json.as_ref().into()))
            .await
            .is_err()
        {
            return;
        }
        loop {
            tokio::select! {
                changed = latest.changed() => match changed {
                    Ok(()) => break,
                    Err(_) => return,
                },
                m = from_page.next() => match m {
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                    // Pings are answered by the stream; nothing else is expected.
                    Some(Ok(_)) => {}
                },
            }
        }
    }
}

/// The dashboard's address could not be bound.
#[derive(Debug, thiserror::Error)]
#[error("dashboard: cannot listen on {addr}: {source}")]
pub struct BindError {
    addr: SocketAddr,
    source: std::io::Error,
}

/// Binds `addr`; the address bound.
pub async fn bind(addr: SocketAddr) -> Result<(TcpListener, SocketAddr), BindError> {
    let err = |source| BindError { addr, source };
    let l = TcpListener::bind(addr).await.map_err(err)?;
    let bound = l.local_addr().map_err(err)?;
    Ok((l, bound))
}
