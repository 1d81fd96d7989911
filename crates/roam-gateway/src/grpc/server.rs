//! The shell: a stream of accepted connections in, tonic's HTTP/2 server over them.
//!
//! Accepting is kept apart from serving: [`tcp_incoming`] turns a `TcpListener` into a
//! stream of connections, and [`serve`] takes any such stream, so TLS (a tokio-rustls
//! acceptor mapping TCP connections to TLS ones) slots in between without touching the door.

use std::io;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tonic::transport::server::Connected;

use super::door::Door;
use super::pb::gateway_server::GatewayServer;
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

/// The name a connection's verified client certificate gives its holder (see
/// [`crate::tls::client_name`]); what tonic hands every call of the connection in its
/// request extensions.
#[derive(Debug, Clone, Default)]
pub struct ClientCert(pub Option<String>);

/// An accepted connection after the door's TLS layer (plain TCP without one).
pub struct DoorConn {
    io: TlsStream,
    cert: ClientCert,
}

/// TLS handshakes under way at once, per door (a client that stalls its handshake holds one
/// until the handshake timeout).
const HANDSHAKES: usize = 64;

/// Connections accepted on `listener` through the door's TLS layer (`tls`; plain TCP without a
/// certificate). A failed handshake is logged and counted as refused; it never ends the
/// stream.
pub fn door_incoming(
    gw: Arc<Gateway>,
    listener: TcpListener,
    tls: DoorTls,
) -> impl Stream<Item = io::Result<DoorConn>> + Send {
    tcp_incoming(listener)
        .map(move |tcp| {
            let (tls, gw) = (tls.clone(), gw.clone());
            async move {
                let peer = tcp.as_ref().ok().and_then(|t| t.peer_addr().ok());
                match tls.accept(tcp.ok()?).await {
                    Ok((io, name)) => Some(Ok(DoorConn {
                        io,
                        cert: ClientCert(name),
                    })),
                    Err(e) => {
                        Stats::count(&gw.stats.refused);
                        tracing::info!("grpc client {peer:?}: TLS handshake failed: {e}");
                        None
                    }
                }
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
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl AsyncWrite for DoorConn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
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
/// Bounds: requests over `limits.max_frame_bytes` are refused (RESOURCE_EXHAUSTED); at most
/// `limits.max_clients` connections of all doors at once (more are closed at once); per
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
    let counted = incoming.filter_map(move |c| {
        let gw = gw.clone();
        async move {
            match c {
                Ok(io) => Counted::admit(gw, io).map(Ok),
                Err(e) => Some(Err(e)),
            }
        }
    });
    tonic::transport::Server::builder()
        .max_concurrent_streams(Some(streams))
        .add_service(service)
        .serve_with_incoming(counted)
        .await
}

/// A connection counted in the gateway's stats while it is open.
pub struct Counted<IO> {
    io: IO,
    gw: Arc<Gateway>,
}

impl<IO> Counted<IO> {
    /// Counts a new connection; None (the connection is closed) when the gateway has
    /// `max_clients` already.
    fn admit(gw: Arc<Gateway>, io: IO) -> Option<Counted<IO>> {
        if gw.stats.clients.load(Ordering::Relaxed) >= gw.limits.max_clients as u64 {
            tracing::warn!(
                "grpc: a connection refused: {} clients already (limits.max_clients)",
                gw.limits.max_clients
            );
            return None;
        }
        gw.stats.clients.fetch_add(1, Ordering::Relaxed);
        Stats::count(&gw.stats.clients_total);
        Some(Counted { io, gw })
    }
}

impl<IO> Drop for Counted<IO> {
    fn drop(&mut self) {
        self.gw.stats.clients.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<IO: Connected> Connected for Counted<IO> {
    type ConnectInfo = IO::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.io.connect_info()
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Counted<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Counted<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}
