//! The WebSocket shell: accepts connections ([`serve`]), and for each one ([`connection`],
//! over any byte stream: TCP, TLS) negotiates the subprotocol, reads frames into the client's
//! [`Conn`], follows the catalog, and writes what its outbox hands out. All decisions are in
//! the pure parts; this file only moves frames.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use futures_util::{Sink, SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::{HeaderValue, StatusCode};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use super::client::{send_status, Conn, ConnShared};
use super::encode::{self, Frame, Level};
use super::watcher::Catalog;
use crate::admission::Slot;
use crate::outbox::Next;
use crate::session::Outgoing;
use crate::tls::DoorTls;
use crate::ws::{upgrade_token, Ending};
use crate::{Gateway, Stats};

/// The subprotocols of the Foxglove WebSocket protocol this door speaks (the same v1
/// messages): the SDK's name and the original one (@foxglove/ws-protocol, Lichtblick).
pub const SUBPROTOCOLS: [&str; 2] = ["foxglove.sdk.v1", "foxglove.websocket.v1"];

/// A connection that has not finished its WebSocket handshake by then is closed.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What every connection of one Foxglove door shares.
pub struct Door {
    gw: Arc<Gateway>,
    catalog: Catalog,
    /// Tells a client whether it reconnected to the same server (the door's start time).
    session_id: String,
}

impl Door {
    /// A door of `gw`; starts following the realm's listing (on the current runtime) until
    /// it is dropped.
    pub fn new(gw: Arc<Gateway>) -> Arc<Door> {
        let started = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis();
        Arc::new(Door {
            catalog: Catalog::start(gw.clone()),
            gw,
            session_id: started.to_string(),
        })
    }

    pub fn gateway(&self) -> &Arc<Gateway> {
        &self.gw
    }
}

/// Serves Foxglove clients on `listener` (`wss://` when `tls` has a certificate) until the
/// task is dropped.
pub async fn serve(gw: Arc<Gateway>, listener: TcpListener, tls: DoorTls) {
    let door = Door::new(gw.clone());
    crate::ws::accept(
        &gw,
        "foxglove",
        listener,
        tls,
        move |stream, peer, cert, slot| connection(door.clone(), stream, peer, cert, slot),
    )
    .await
}

/// The subprotocol to answer with: the first of the client's offers this door speaks.
pub fn choose_subprotocol<'a>(offers: impl IntoIterator<Item = &'a str>) -> Option<&'static str> {
    offers
        .into_iter()
        .flat_map(|h| h.split(','))
        .map(str::trim)
        .find_map(|o| SUBPROTOCOLS.iter().find(|s| **s == o).copied())
}

/// One client, over any stream (plain TCP, TLS): until it leaves, the connection fails, its
/// slot must close (it did not authenticate in time) or its token expires. `cert_name` is the
/// name in a verified client certificate, if any.
pub async fn connection<S>(
    door: Arc<Door>,
    stream: S,
    peer: SocketAddr,
    cert_name: Option<String>,
    slot: Arc<Slot>,
) -> Result<(), WsError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let gw = door.gw.clone();
    let limit = gw.limits.max_frame_bytes;
    let config = WebSocketConfig::default()
        .max_message_size(Some(limit))
        .max_frame_size(Some(limit));
    let mut token = None;
    // The handshake's callback type is tungstenite's (its error is an HTTP response).
    #[allow(clippy::result_large_err)]
    let callback = |req: &Request, mut resp: Response| -> Result<Response, ErrorResponse> {
        token = upgrade_token(req);
        let refuse = |status: StatusCode, why: &str| {
            let mut r = ErrorResponse::new(Some(why.to_string()));
            *r.status_mut() = status;
            r
        };
        // Credentials shown now take the client straight to its slot; without them it is
        // told why and closed at the deadline (this protocol has no later `auth`).
        if gw.proves_identity(cert_name.as_deref(), token.as_deref()) {
            if let Err(cause) = slot.admit() {
                return Err(refuse(StatusCode::SERVICE_UNAVAILABLE, cause.reason()));
            }
        }
        let offers = req
            .headers()
            .get_all("sec-websocket-protocol")
            .iter()
            .filter_map(|v| v.to_str().ok());
        let Some(chosen) = choose_subprotocol(offers) else {
            return Err(refuse(
                StatusCode::BAD_REQUEST,
                "this is a Foxglove WebSocket server: ask for subprotocol foxglove.websocket.v1 or foxglove.sdk.v1",
            ));
        };
        resp.headers_mut()
            .insert("sec-websocket-protocol", HeaderValue::from_static(chosen));
        Ok(resp)
    };
    let handshake = tokio_tungstenite::accept_hdr_async_with_config(stream, callback, Some(config));
    let ws = match crate::ws::handshake(&slot, HANDSHAKE_TIMEOUT, handshake).await {
        Some(r) => r?,
        None => return Ok(()),
    };
    tracing::info!("foxglove client {peer} connected");
    let out = Arc::new(Outgoing::new(gw.limits.outbox));
    let shared = Arc::new(ConnShared::default());
    let mut conn = Conn::new(gw.clone(), out.clone(), shared.clone());
    // A verified client certificate authenticates first; a token on the upgrade request can
    // still name another identity.
    let mut counted = false;
    if let Some(name) = &cert_name {
        match conn.session().authenticate_certificate(name) {
            Ok(id) => tracing::info!("foxglove client {peer}: certificate of {}", id.name),
            Err(e) => {
                counted = true;
                send_status(&out, Level::Error, &e.to_string(), None);
            }
        }
    }
    if let Some(t) = token {
        match conn.session().authenticate(&t) {
            Ok(id) => tracing::info!("foxglove client {peer}: authenticated as {}", id.name),
            Err(e) => {
                counted = true;
                send_status(&out, Level::Error, &e.to_string(), None);
            }
        }
    }
    let mut catalog = door.catalog.watch();
    let info = encode::server_info(
        &format!("roam gateway {}", env!("CARGO_PKG_VERSION")),
        &gw.realm.label,
        &door.session_id,
    );
    let snap = catalog.borrow_and_update().clone();
    conn.greet(info, &snap, counted);
    let (sink, mut frames) = ws.split();
    let mut writer = tokio::spawn(write(sink, out.clone(), shared.clone()));
    let mut following = true;
    let expires = crate::expiry::expiry(conn.session().identity().map(|i| &**i));
    let end = loop {
        let msg = tokio::select! {
            m = frames.next() => m,
            _ = &mut writer => break Ending::Quiet("the connection closed while sending"),
            cause = slot.closed() => break Ending::Told { code: 1008, why: format!("closing: {}", cause.reason()) },
            _ = crate::expiry::sleep_until(expires) => break Ending::Told {
                code: 1008,
                why: crate::expiry::expired(conn.session().identity().map(|i| &**i)),
            },
            changed = catalog.changed(), if following => {
                match changed {
                    Ok(()) => {
                        let snap = catalog.borrow_and_update().clone();
                        conn.catalog(&snap, false);
                    }
                    Err(_) => following = false,
                }
                continue;
            }
        };
        match msg {
            None => break Ending::Quiet("closed"),
            Some(Ok(Message::Text(t))) => conn.frame(true, t.as_bytes()).await,
            Some(Ok(Message::Binary(b))) => conn.frame(false, &b).await,
            Some(Ok(Message::Close(_))) => break Ending::Quiet("closed by the client"),
            Some(Ok(_)) => {}
            Some(Err(WsError::Capacity(e))) => {
                Stats::count(&gw.stats.bad_frames);
                break Ending::Told {
                    code: 1009,
                    why: format!("refused a frame over the limit of {limit} bytes ({e}); closing"),
                };
            }
            Some(Err(e)) => {
                tracing::debug!("foxglove client {peer}: {e}");
                break Ending::Quiet("connection error");
            }
        }
    };
    // Subscriptions and advertisements end with the session, before a close is sent.
    drop(conn);
    let end = match end {
        Ending::Quiet(why) => why.to_string(),
        Ending::Told { code, why } => {
            tracing::info!("foxglove client {peer}: {why}");
            send_status(&out, Level::Error, &why, None);
            let reason: String = why.chars().take(100).collect();
            out.control(0, Frame::Close { code, reason });
            let _ = tokio::time::timeout(Duration::from_secs(2), &mut writer).await;
            why
        }
    };
    writer.abort();
    drop(slot);
    tracing::info!("foxglove client {peer} left ({end})");
    Ok(())
}

/// Nanoseconds since the Unix epoch.
fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos().min(u128::from(u64::MAX)) as u64)
        .unwrap_or(0)
}

/// Sends what the outbox hands out until the connection fails or a close is sent.
async fn write<K>(mut sink: K, out: Arc<Outgoing<Frame>>, shared: Arc<ConnShared>)
where
    K: Sink<Message> + Unpin,
{
    loop {
        let next = out.outbox().next(Instant::now());
        let f = match next {
            Next::Control(f) => f,
            Next::Sample(id, s) => {
                // The CDR as the realm carried it: no conversion for this door.
                let Some((sub, _)) = shared.subscription(id) else {
                    continue;
                };
                encode::message_data(sub, unix_ns(s.received), &s.cdr)
            }
            Next::Dropped {
                key,
                dropped,
                total,
            } => {
                let (sub, topic) = shared.subscription(key).unwrap_or_default();
                send_status(
                    &out,
                    Level::Warning,
                    &format!("dropped {dropped} messages of {topic} ({total} in all): this client reads slower than they arrive (oldest dropped first)"),
                    Some(&format!("dropped:{sub}")),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_subprotocol_is_the_first_offer_this_door_speaks() {
        assert_eq!(
            choose_subprotocol(["foxglove.websocket.v1"]),
            Some("foxglove.websocket.v1")
        );
        assert_eq!(
            choose_subprotocol(["x, foxglove.sdk.v1, foxglove.websocket.v1"]),
            Some("foxglove.sdk.v1")
        );
        assert_eq!(
            choose_subprotocol(["chat", "foxglove.websocket.v1"]),
            Some("foxglove.websocket.v1")
        );
        assert_eq!(choose_subprotocol(["chat"]), None);
        assert_eq!(choose_subprotocol([]), None);
    }
}
