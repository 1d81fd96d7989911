//! What the WebSocket doors (rosbridge, Foxglove) share: accepting connections through the
//! gateway's admission and the door's TLS layer, the token a client gives on its upgrade
//! request.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::handshake::server::Request;
use tokio_tungstenite::tungstenite::Error as WsError;

use crate::admission::Slot;
use crate::tls::{DoorTls, Stream};
use crate::{Gateway, Stats};

/// Accepts connections on `listener` until the task is dropped: a slot for each (see
/// [`crate::admission`]; without one the connection is closed at once), Nagle off, the TLS
/// handshake (a failure is counted as refused), then `connection` on its own task, with the
/// slot to admit once its client proves an identity.
pub async fn accept<F, Fut>(
    gw: &Arc<Gateway>,
    door: &'static str,
    listener: TcpListener,
    tls: DoorTls,
    connection: F,
) where
    F: Fn(Stream, SocketAddr, Option<String>, Arc<Slot>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), WsError>> + Send + 'static,
{
    let connection = Arc::new(connection);
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("{door}: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let slot = match gw.arrive(peer) {
            Ok(s) => s,
            Err(cause) => {
                tracing::info!("{door} client {peer}: refused: {}", cause.reason());
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (gw, tls, connection) = (gw.clone(), tls.clone(), connection.clone());
        tokio::spawn(async move {
            let accepted = tokio::select! {
                a = tls.accept(stream) => a,
                cause = slot.closed() => {
                    tracing::info!("{door} client {peer}: closed during the TLS handshake: {}", cause.reason());
                    return;
                }
            };
            let (stream, cert_name) = match accepted {
                Ok(s) => s,
                Err(e) => {
                    Stats::count(&gw.stats.refused);
                    tracing::info!("{door} client {peer}: TLS handshake failed: {e}");
                    return;
                }
            };
            if let Err(e) = connection(stream, peer, cert_name, slot).await {
                tracing::debug!("{door} client {peer}: {e}");
            }
        });
    }
}

/// Why a WebSocket connection ends, besides the client leaving.
pub enum Ending {
    /// Sent to the client as an error status, then a close frame with `code`.
    Told {
        code: u16,
        why: String,
    },
    Quiet(&'static str),
}

/// Runs a WebSocket handshake until it ends or the slot must close (then None).
pub async fn handshake<T>(
    slot: &Slot,
    timeout: Duration,
    handshake: impl Future<Output = Result<T, WsError>>,
) -> Option<Result<T, WsError>> {
    tokio::select! {
        r = tokio::time::timeout(timeout, handshake) => r.ok(),
        _ = slot.closed() => None,
    }
}

/// The token a client gave on the upgrade request: `Authorization: Bearer T` or `?token=T`.
pub fn upgrade_token(req: &Request) -> Option<String> {
    if let Some(v) = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
    {
        if let Some(t) = v
            .strip_prefix("Bearer ")
            .or_else(|| v.strip_prefix("bearer "))
        {
            return Some(t.trim().to_string());
        }
    }
    req.uri().query().and_then(|q| {
        q.split('&')
            .find_map(|kv| kv.strip_prefix("token="))
            .map(percent_decode)
    })
}

/// `%XX` escapes of a query value (tokens are usually plain; a `+` stays a `+`).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_come_from_the_authorization_header_or_the_query() {
        let req = |uri: &str, auth: Option<&str>| {
            let mut b = Request::builder().uri(uri);
            if let Some(a) = auth {
                b = b.header("Authorization", a);
            }
            b.body(()).unwrap()
        };
        assert_eq!(
            upgrade_token(&req("/", Some("Bearer abc"))).as_deref(),
            Some("abc")
        );
        assert_eq!(
            upgrade_token(&req("/?x=1&token=a%2Bb", None)).as_deref(),
            Some("a+b")
        );
        assert_eq!(upgrade_token(&req("/", Some("Basic abc"))), None);
        assert_eq!(upgrade_token(&req("/", None)), None);
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }
}
