//! Links over TCP + TLS 1.3, for networks that block UDP.
//!
//! One TLS stream carries everything, so unlike QUIC a large message does delay the frames
//! queued behind it (head-of-line blocking); the writer at least sends control frames first
//! and alternates between best-effort and reliable data. Prefer QUIC where UDP passes.

use std::net::SocketAddr;
use std::sync::Arc;

use roam_proto::Frame;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::net::TcpStream;
use tokio_rustls::{TlsAcceptor, TlsConnector};
use tracing::{debug, warn};

use crate::framing::{read_frame, write_data, ReadError};
use crate::inbound::Inbound;
use crate::lane::{Lane, Policy, Pushed};
use crate::link::{
    check_hello, is_best_effort, Established, LinkConfig, LinkError, LinkId, LinkSender, LinkStats,
    LocalInfo, Outgoing, Transport,
};
use crate::tls;
use roam_pki::Identity;

/// Dials a router over TCP+TLS.
pub async fn dial(
    id: &Identity,
    addr: SocketAddr,
    me: &LocalInfo,
    cfg: &LinkConfig,
    link: LinkId,
    inbound: Inbound,
) -> Result<Established, LinkError> {
    let handshake = async {
        let tcp = TcpStream::connect(addr).await?;
        tcp.set_nodelay(true)?;
        dial_stream(id, tcp, me, cfg, link, inbound).await
    };
    // A router out of file descriptors completes the TCP handshake (the kernel does) but
    // never accepts: without a deadline the dialer would wait forever instead of retrying.
    tokio::time::timeout(cfg.handshake_timeout, handshake)
        .await
        .map_err(|_| LinkError::HandshakeTimeout(cfg.handshake_timeout))?
}

pub fn acceptor(id: &Identity) -> Result<TlsAcceptor, LinkError> {
    Ok(TlsAcceptor::from(
        tls::server_config(id).map_err(|e| LinkError::Connect(e.to_string()))?,
    ))
}

/// The TLS server side and the link over an accepted byte stream: a TCP socket (with
/// TCP_NODELAY set) or an MQTT tunnel. Unbounded in time: the caller bounds it (see
/// [`crate::admission`]).
pub(crate) async fn accept_stream<S>(
    acceptor: &TlsAcceptor,
    stream: S,
    me: &LocalInfo,
    cfg: &LinkConfig,
    link: LinkId,
    inbound: Inbound,
) -> Result<Established, LinkError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let stream = acceptor
        .accept(stream)
        .await
        .map_err(|e| LinkError::Connect(e.to_string()))?;
    let certs = stream.get_ref().1.peer_certificates().map(|c| c.to_vec());
    run(stream, certs, me, cfg, link, inbound).await
}

/// The TLS client side and the link over any byte stream, like [`dial`] over TCP.
pub(crate) async fn dial_stream<S>(
    id: &Identity,
    stream: S,
    me: &LocalInfo,
    cfg: &LinkConfig,
    link: LinkId,
    inbound: Inbound,
) -> Result<Established, LinkError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let connector =
        TlsConnector::from(tls::client_config(id).map_err(|e| LinkError::Connect(e.to_string()))?);
    let stream = connector
        .connect(tls::router_server_name(), stream)
        .await
        .map_err(|e| LinkError::Connect(e.to_string()))?;
    let certs = stream.get_ref().1.peer_certificates().map(|c| c.to_vec());
    run(stream, certs, me, cfg, link, inbound).await
}

async fn run<S>(
    stream: S,
    certs: Option<Vec<rustls_pki_types::CertificateDer<'static>>>,
    me: &LocalInfo,
    cfg: &LinkConfig,
    link: LinkId,
    inbound: Inbound,
) -> Result<Established, LinkError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let certs =
        certs.ok_or_else(|| LinkError::Certificate("peer presented no certificate".into()))?;
    let cert = tls::peer_identity(&certs).map_err(|e| LinkError::Certificate(e.to_string()))?;
    let (mut rd, mut wr) = tokio::io::split(stream);
    wr.write_all(&me.hello().encode()).await?;
    wr.flush().await?;
    let hello = tokio::time::timeout(cfg.hello_timeout, read_frame(&mut rd, 4096))
        .await
        .map_err(|_| LinkError::Hello("no Hello within the timeout".into()))?
        .map_err(|e| LinkError::Hello(e.to_string()))?;
    let peer = check_hello(&cert, hello)?;

    let t = Arc::new(TcpTransport {
        writer: std::sync::Mutex::new(None),
        control: Lane::new(Policy::Reliable, cfg.reliable),
        reliable: Lane::new(Policy::Reliable, cfg.reliable),
        best_effort: Lane::new(Policy::BestEffort, cfg.best_effort),
        stats: LinkStats::default(),
        closed: tokio::sync::Notify::new(),
        quota: inbound.quota_for(&peer, cfg.client_quota),
    });
    let w = tokio::spawn(writer(t.clone(), BufWriter::with_capacity(64 << 10, wr)));
    if let Ok(mut slot) = t.writer.lock() {
        *slot = Some(w);
    }
    let max_frame = cfg.max_frame;
    let reader = t.clone();
    let start = Box::new(move || {
        tokio::spawn(async move {
            let reason = loop {
                tokio::select! {
                    r = read_frame(&mut rd, max_frame) => match r {
                        Ok(Some(f)) => {
                            reader.stats.count_frame_in(&f);
                            if !crate::quota::admit(reader.quota.as_deref(), &f, &reader.stats).await {
                                continue;
                            }
                            if !inbound.frame(link, f).await {
                                break "owner gone".to_string();
                            }
                        }
                        Ok(None) => break "peer closed the connection".to_string(),
                        Err(ReadError::Frame(e)) => {
                            warn!("closing link: peer sent a bad frame: {e}");
                            break format!("bad frame: {e}");
                        }
                        Err(e) => break e.to_string(),
                    },
                    _ = reader.closed.notified() => break "closed locally".to_string(),
                }
            };
            reader.close_lanes();
            inbound.closed(link, reason).await;
        });
    });
    Ok(Established::new(peer, LinkSender(t), start))
}

struct TcpTransport {
    writer: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    control: Lane<Outgoing>,
    reliable: Lane<Outgoing>,
    best_effort: Lane<Outgoing>,
    stats: LinkStats,
    closed: tokio::sync::Notify,
    /// What a client peer may bring in ([`crate::quota`]); None for routers.
    quota: Option<Arc<crate::quota::LinkQuota>>,
}

impl TcpTransport {
    fn close_lanes(&self) {
        self.control.close();
        self.reliable.close();
        self.best_effort.close();
    }
}

impl Transport for TcpTransport {
    fn send_reliable(&self, frame: Frame) -> Pushed {
        let p = match &frame {
            Frame::Data { envelope, .. } if is_best_effort(envelope) => {
                self.best_effort.push(Outgoing::from_frame(frame))
            }
            Frame::Data { .. } => self.reliable.push(Outgoing::from_frame(frame)),
            _ => self.control.push(Outgoing::from_frame(frame)),
        };
        if matches!(p, Pushed::DroppedOldest(_)) {
            self.stats.count_push(p);
        }
        p
    }

    fn close(&self, _reason: &str) {
        self.close_lanes();
        self.closed.notify_one();
    }

    fn finish(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            // Closing the lanes lets the writer drain them, then shut the TLS stream down.
            self.close_lanes();
            let w = self.writer.lock().ok().and_then(|mut w| w.take());
            if let Some(w) = w {
                let _ = w.await;
            }
        })
    }

    fn stats(&self) -> &LinkStats {
        &self.stats
    }

    fn wait_space(
        &self,
        _name: roam_proto::Name,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(self.reliable.wait_space())
    }

    fn has_space(&self, _name: roam_proto::Name) -> bool {
        self.reliable.has_space()
    }

    fn kind(&self) -> &'static str {
        "tcp+tls"
    }

    fn depth(&self) -> crate::lane::Depth {
        self.control.depth() + self.reliable.depth() + self.best_effort.depth()
    }
}

async fn writer<W: AsyncWrite + Unpin>(t: Arc<TcpTransport>, mut w: BufWriter<W>) {
    let mut prefer_best_effort = false;
    loop {
        let item = match next_queued(&t, &mut prefer_best_effort) {
            Some(i) => i,
            None => {
                if w.flush().await.is_err() {
                    break;
                }
                let woke = tokio::select! {
                    i = t.control.pop() => i,
                    i = t.reliable.pop() => i,
                    i = t.best_effort.pop() => i,
                };
                match woke.or_else(|| next_queued(&t, &mut prefer_best_effort)) {
                    Some(i) => i,
                    // The lanes are closed (they close together) and drained.
                    None => break,
                }
            }
        };
        let len = crate::lane::Weighted::size(&item);
        let r = match item {
            Outgoing::Control(b) => w.write_all(&b).await,
            Outgoing::Data { origin, envelope } => write_data(&mut w, origin, &envelope).await,
        };
        if let Err(e) = r {
            debug!("tcp link write failed: {e}");
            break;
        }
        t.stats.count_out(len);
    }
    let _ = w.shutdown().await;
    t.close_lanes();
    t.closed.notify_one();
}

/// The next frame to write without waiting: control first, then the data lanes in turn.
fn next_queued(t: &TcpTransport, prefer_best_effort: &mut bool) -> Option<Outgoing> {
    t.control.try_pop().or_else(|| {
        *prefer_best_effort = !*prefer_best_effort;
        if *prefer_best_effort {
            t.best_effort.try_pop().or_else(|| t.reliable.try_pop())
        } else {
            t.reliable.try_pop().or_else(|| t.best_effort.try_pop())
        }
    })
}
