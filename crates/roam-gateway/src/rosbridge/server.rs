//! The WebSocket shell: accepts connections, reads frames into the client's [`Conn`], and
//! writes what its outbox hands out. All decisions are in the pure parts; this file only moves
//! frames.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use super::client::{send_status, Conn, ConnShared, Delivery};
use super::encode::{self, Frame, Level};
use super::ops::Compression;
use crate::admission::Slot;
use crate::outbox::Next;
use crate::session::{Outgoing, Sample};
use crate::tls::{DoorTls, Stream};
use crate::ws::{upgrade_token, Ending};
use crate::{Gateway, Stats};

/// A connection that has not finished its WebSocket handshake by then is closed.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves rosbridge clients on `listener` (`wss://` when `tls` has a certificate) until the
/// task is dropped.
pub async fn serve(gw: Arc<Gateway>, listener: TcpListener, tls: DoorTls) {
    let g = gw.clone();
    crate::ws::accept(
        &gw,
        "rosbridge",
        listener,
        tls,
        move |stream, peer, cert, slot| connection(g.clone(), stream, peer, cert, slot),
    )
    .await
}

async fn connection(
    gw: Arc<Gateway>,
    stream: Stream,
    peer: SocketAddr,
    cert_name: Option<String>,
    slot: Arc<Slot>,
) -> Result<(), WsError> {
    let limit = gw.limits.max_frame_bytes;
    let config = WebSocketConfig::default()
        .max_message_size(Some(limit))
        .max_frame_size(Some(limit));
    let mut token = None;
    // The handshake's callback type is tungstenite's (its error is an HTTP response).
    #[allow(clippy::result_large_err)]
    let callback = |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
        token = upgrade_token(req);
        // Credentials shown now take the client straight to its slot; otherwise it has until
        // the deadline to send an `auth` op.
        if gw.proves_identity(cert_name.as_deref(), token.as_deref()) {
            if let Err(cause) = slot.admit() {
                let mut r = ErrorResponse::new(Some(cause.reason().into()));
                *r.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
                return Err(r);
            }
        }
        Ok(resp)
    };
    let handshake = tokio_tungstenite::accept_hdr_async_with_config(stream, callback, Some(config));
    let ws = match crate::ws::handshake(&slot, HANDSHAKE_TIMEOUT, handshake).await {
        Some(r) => r?,
        None => return Ok(()),
    };
    tracing::info!("rosbridge client {peer} connected");
    let out = Arc::new(Outgoing::new(gw.limits.outbox));
    let shared = Arc::new(ConnShared::new());
    let mut conn = Conn::new(gw.clone(), out.clone(), shared.clone());
    // A verified client certificate authenticates first; a token on the upgrade request
    // (or a later `auth` op) can still name another identity.
    if let Some(name) = &cert_name {
        match conn.session().authenticate_certificate(name) {
            Ok(id) => tracing::info!("rosbridge client {peer}: certificate of {}", id.name),
            Err(e) => send_status(&out, &shared, Level::Error, &e.to_string(), None),
        }
    }
    if let Some(t) = token {
        if let Err(e) = conn.session().authenticate(&t) {
            send_status(&out, &shared, Level::Error, &e.to_string(), None);
        }
    }
    let (sink, mut frames) = ws.split();
    let mut writer = tokio::spawn(write(sink, out.clone(), shared.clone()));
    let mut expires = crate::expiry::expiry(conn.session().identity().map(|i| &**i));
    let end = loop {
        let msg = tokio::select! {
            m = frames.next() => m,
            _ = &mut writer => break Ending::Quiet("the connection closed while sending"),
            cause = slot.closed() => break Ending::Told { code: 1008, why: format!("closing: {}", cause.reason()) },
            _ = crate::expiry::sleep_until(expires) => break Ending::Told { code: 1008, why: crate::expiry::expired(conn.session().identity().map(|i| &**i)) },
        };
        match msg {
            None => break Ending::Quiet("closed"),
            Some(Ok(Message::Text(t))) => conn.frame(true, t.as_bytes()).await,
            Some(Ok(Message::Binary(b))) => conn.frame(false, &b).await,
            Some(Ok(Message::Close(_))) => break Ending::Quiet("closed by the client"),
            Some(Ok(_)) => continue,
            Some(Err(WsError::Capacity(e))) => {
                Stats::count(&gw.stats.bad_frames);
                break Ending::Told {
                    code: 1009,
                    why: format!("refused a frame over the limit of {limit} bytes ({e}); closing"),
                };
            }
            Some(Err(e)) => {
                tracing::debug!("rosbridge client {peer}: {e}");
                break Ending::Quiet("connection error");
            }
        }
        // An `auth` op may have proved (or changed) the identity.
        if conn.session().authenticated() {
            if let Err(cause) = slot.admit() {
                break Ending::Told {
                    code: 1013,
                    why: cause.reason().to_string(),
                };
            }
            expires = crate::expiry::expiry(conn.session().identity().map(|i| &**i));
        }
    };
    // Subscriptions, advertisements, services and actions end with the session, before a
    // close is sent.
    drop(conn);
    let end = match end {
        Ending::Quiet(why) => why.to_string(),
        Ending::Told { code, why } => {
            tracing::info!("rosbridge client {peer}: {why}");
            send_status(&out, &shared, Level::Error, &why, None);
            let reason: String = why.chars().take(100).collect();
            out.control(0, Frame::Close { code, reason });
            let _ = tokio::time::timeout(Duration::from_secs(2), &mut writer).await;
            why
        }
    };
    writer.abort();
    drop(slot);
    tracing::info!("rosbridge client {peer} left ({end})");
    Ok(())
}

type Sink = futures_util::stream::SplitSink<tokio_tungstenite::WebSocketStream<Stream>, Message>;

/// Sends what the outbox hands out until the connection fails or a close is sent.
async fn write(mut sink: Sink, out: Arc<Outgoing<Frame>>, shared: Arc<ConnShared>) {
    // Subscriptions whose messages could not be encoded, told once each.
    let mut warned = std::collections::HashSet::new();
    loop {
        let next = out.outbox().next(Instant::now());
        let frames = match next {
            Next::Control(f) => vec![f],
            Next::Sample(id, s) => {
                let Some(d) = shared.delivery(id) else {
                    continue;
                };
                match encode_sample(&d, s) {
                    Ok(f) => f,
                    Err(why) => {
                        if warned.insert(id) {
                            send_status(&out, &shared, Level::Warning, &why, None);
                        }
                        continue;
                    }
                }
            }
            Next::Dropped {
                key,
                dropped,
                total,
            } => {
                let topic = shared.delivery(key).map(|d| d.topic).unwrap_or_default();
                send_status(
                    &out,
                    &shared,
                    Level::Warning,
                    &format!("dropped {dropped} messages of {topic} ({total} in all): this client reads slower than they arrive (oldest dropped first; see queue_length)"),
                    None,
                );
                continue;
            }
            Next::Wait(at) => {
                match at {
                    Some(at) => {
                        tokio::select! {
                            _ = out.wake.notified() => {}
                            _ = tokio::time::sleep_until(at.into()) => {}
                        }
                    }
                    None => out.wake.notified().await,
                }
                continue;
            }
        };
        for f in frames {
            let (msg, last) = match f {
                Frame::Text(t) => (Message::Text(t.into()), false),
                Frame::Binary(b) => (Message::Binary(b.into()), false),
                Frame::Close { code, reason } => (
                    Message::Close(Some(CloseFrame {
                        code: CloseCode::from(code),
                        reason: reason.into(),
                    })),
                    true,
                ),
            };
            if sink.send(msg).await.is_err() || last {
                let _ = sink.flush().await;
                return;
            }
        }
    }
}

/// A sample as this client asked for it.
fn encode_sample(d: &Delivery, s: Sample) -> Result<Vec<Frame>, String> {
    if d.compression == Compression::CborRaw {
        let t = s
            .received
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        return Ok(vec![Frame::Binary(encode::publish_cbor_raw(
            &d.topic,
            t.as_secs(),
            t.subsec_nanos(),
            &s.cdr,
        ))]);
    }
    let Some(codec) = s.codec else {
        return Err(format!(
            "{}: no definition of its type is known yet (none on the gateway's machine, none announced in the realm): messages are dropped until one is; compression cbor-raw needs none",
            d.topic
        ));
    };
    let bad = |e: roam_msg::DecodeError| {
        format!(
            "{}: a message does not decode as {}: {e} (dropped)",
            d.topic,
            codec.name().full()
        )
    };
    let mut body = Vec::new();
    match d.compression {
        Compression::Cbor => {
            codec.cdr_to_cbor(&s.cdr, &mut body).map_err(bad)?;
            Ok(vec![Frame::Binary(encode::publish_cbor(&d.topic, &body))])
        }
        _ => {
            codec.cdr_to_json(&s.cdr, &mut body).map_err(bad)?;
            let text = encode::publish_json(&d.topic, &body);
            Ok(match d.fragment_size {
                Some(size) => encode::fragments(&format!("publish:{}", d.topic), text, size)
                    .into_iter()
                    .map(Frame::Text)
                    .collect(),
                None => vec![Frame::Text(text)],
            })
        }
    }
}
