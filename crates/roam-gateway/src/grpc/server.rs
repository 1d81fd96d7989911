//! The shell: a stream of accepted connections in, tonic's HTTP/2 server over them.
//!
//! Accepting is kept apart from serving: [`tcp_incoming`] turns a `TcpListener` into a
//! stream of connections, and [`serve`] takes any such stream, so TLS (a tokio-rustls
//! acceptor mapping TCP connections to TLS ones) slots in between without touching the door.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tonic::transport::server::Connected;

use super::door::Door;
use super::pb::gateway_server::GatewayServer;
use crate::admission::{Cause, Slot};
use crate::tls::{DoorTls, Stream as TlsStream};
use crate::{Gateway, Stats};

/// Connections accepted on `listener`, with Nagle off (small messages are not held back). An
/// accept that fails (out of file descriptors) is logged and retried, never ends the stream.
pub fn tcp_incoming(listener: TcpListener) -> impl Stream<Item = io::Result<TcpStream>> + Send {
    futures_util::stream::unfold(listener, |listener| async move {
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    return Some((Ok(stream), listener));
                }
                Err(e) => {
                    tracing::warn!("grpc: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    })
}

/// What tonic hands every call of a connection in its request extensions: the name its
/// verified client certificate gives its holder (see [`crate::tls::client_name`]) and the
/// connection's slot, admitted by the first call that proves an identity.
#[derive(Clone, Default)]
pub struct ClientCert {
    pub name: Option<String>,
    pub slot: Option<Arc<Slot>>,
}

/// An accepted connection after the door's TLS layer (plain TCP without one). It fails its
/// reads and writes once its slot must close (no call proved an identity in time), which
/// ends the HTTP/2 connection.
pub struct DoorConn {
    io: TlsStream,
    cert: ClientCert,
    closed: Pin<Box<dyn Future<Output = Cause> + Send>>,
}

impl DoorConn {
    /// An error once the slot must close.
    fn check_slot(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        match self.closed.as_mut().poll(cx) {
            Poll::Ready(cause) => Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                cause.reason(),
            )),
            Poll::Pending => Ok(()),
        }
    }
}

/// TLS handshakes under way at once, per door (a client that stalls its handshake holds one
/// until the handshake timeout).
const HANDSHAKES: usize = 64;

/// Connections accepted on `listener` through the gateway's admission (a slot each, see
/// [`crate::admission`]) and the door's TLS layer (`tls`; plain TCP without a certificate).
/// A connection whose client certificate proves an identity (or any, without
/// authentication) is admitted at once; others are by their first authenticated call. A
/// refusal or failed handshake is logged and counted; it never ends the stream.
pub fn door_incoming(
    gw: Arc<Gateway>,
    listener: TcpListener,
    tls: DoorTls,
) -> impl Stream<Item = io::Result<DoorConn>> + Send {
    tcp_incoming(listener)
        .filter_map({
            let gw = gw.clone();
            move |tcp| {
                let gw = gw.clone();
                async move {
                    let tcp = tcp.ok()?;
                    let peer = tcp.peer_addr().ok()?;
                    match gw.arrive(peer) {
                        Ok(slot) => Some((tcp, peer, slot)),
                        Err(cause) => {
                            tracing::info!("grpc client {peer}: refused: {}", cause.reason());
                            None
                        }
                    }
                }
            }
        })
        .map(move |(tcp, peer, slot)| {
            let (tls, gw) = (tls.clone(), gw.clone());
            async move {
                let accepted = tokio::select! {
                    a = tls.accept(tcp) => a,
                    cause = slot.closed() => {
                        tracing::info!("grpc client {peer}: closed during the TLS handshake: {}", cause.reason());
                        return None;
                    }
                };
                let (io, name) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        Stats::count(&gw.stats.refused);
                        tracing::info!("grpc client {peer}: TLS handshake failed: {e}");
                        return None;
                    }
                };
                if gw.proves_identity(name.as_deref(), None) {
                    if let Err(cause) = slot.admit() {
                        tracing::warn!("grpc client {peer}: refused: {}", cause.reason());
                        return None;
                    }
                }
                Some(Ok(DoorConn {
                    io,
                    closed: slot.closed_owned(),
                    cert: ClientCert {
                        name,
                        slot: Some(slot),
                    },
                }))
            }
        })
        .buffer_unordered(HANDSHAKES)
        .filter_map(|c| async move { c })
}

impl Connected for DoorConn {
    type ConnectInfo = ClientCert;

    fn connect_info(&self) -> ClientCert {
        self.cert.clone()
    }
}

impl AsyncRead for DoorConn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        me.check_slot(cx)?;
        Pin::new(&mut me.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for DoorConn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        me.check_slot(cx)?;
        Pin::new(&mut me.io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// Serves the gateway's gRPC door on the connections of `incoming` until the stream ends or
/// the task is dropped.
///
/// Bounds: requests over `limits.max_frame_bytes` are refused (RESOURCE_EXHAUSTED); the
/// connections themselves are bounded by the gateway's admission ([`door_incoming`]); per
/// connection at most `max_topics_per_client + max_calls_per_client` calls at once (HTTP/2
/// concurrent streams).
pub async fn serve<S, IO>(gw: Arc<Gateway>, incoming: S) -> Result<(), tonic::transport::Error>
where
    S: Stream<Item = io::Result<IO>> + Send + 'static,
    IO: AsyncRead + AsyncWrite + Connected + Unpin + Send + 'static,
{
    let limits = &gw.limits;
    let service =
        GatewayServer::new(Door::new(gw.clone())).max_decoding_message_size(limits.max_frame_bytes);
    let streams = u32::try_from(limits.max_topics_per_client + limits.max_calls_per_client)
        .unwrap_or(u32::MAX);
    tonic::transport::Server::builder()
        .max_concurrent_streams(Some(streams))
        .add_service(service)
        .serve_with_incoming(incoming)
        .await
}
