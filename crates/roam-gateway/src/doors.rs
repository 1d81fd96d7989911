//! Opening a gateway's doors on an edge: what `roam gateway` does with its own edge router and
//! what `roam proxy` does with its own when its file has a `gateway:` section. Each door prints
//! the address it bound on stdout (`rosbridge listening ws://ADDR`, `grpc listening ADDR`,
//! `foxglove listening ws://ADDR`), which scripts and tests wait for.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use roam_edge::definitions::DefinitionSource;
use roam_edge::{Edge, Realm};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::auth::Tokens;
use crate::tls::{DoorTls, TlsError, TlsSettings};
use crate::{Gateway, Limits};

/// Which doors to open, and for whom.
#[derive(Debug)]
pub struct Doors {
    /// The rosbridge WebSocket door's address; None: off.
    pub rosbridge: Option<SocketAddr>,
    /// The gRPC door's address; None: off.
    pub grpc: Option<SocketAddr>,
    /// The Foxglove WebSocket door's address; None: off.
    pub foxglove: Option<SocketAddr>,
    pub limits: Limits,
    /// Who may do what; None: every client may do everything.
    pub tokens: Option<Tokens>,
}

/// Why the doors did not open.
#[derive(Debug, thiserror::Error)]
pub enum DoorError {
    #[error("{door}: cannot listen on {addr}: {source}")]
    Listen {
        door: &'static str,
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("tls: {0}")]
    Tls(#[from] TlsError),
}

/// The open doors of one gateway.
pub struct Running {
    pub gw: Arc<Gateway>,
    tasks: Vec<JoinHandle<()>>,
}

async fn bind(
    door: &'static str,
    addr: SocketAddr,
) -> Result<(TcpListener, SocketAddr), DoorError> {
    let listen = |source| DoorError::Listen { door, addr, source };
    let listener = TcpListener::bind(addr).await.map_err(listen)?;
    let bound = listener.local_addr().map_err(listen)?;
    Ok((listener, bound))
}

/// The door's TLS layer offering `alpn`, or plain TCP without a certificate.
fn door_tls(tls: Option<&TlsSettings>, alpn: &[u8]) -> Result<DoorTls, DoorError> {
    Ok(match tls {
        Some(t) => DoorTls::new(t.server_config(&[alpn])?),
        None => DoorTls::plain(),
    })
}

/// Opens the doors `doors` lists on `edge`, for `realm`.
pub async fn start(
    edge: Edge,
    realm: Arc<Realm>,
    definitions: Arc<DefinitionSource>,
    doors: Doors,
    tls: Option<TlsSettings>,
) -> Result<Running, DoorError> {
    // Bind first: a taken port is a start-up error before anything is announced.
    let ws = match doors.rosbridge {
        Some(a) => Some(bind("rosbridge", a).await?),
        None => None,
    };
    let grpc = match doors.grpc {
        Some(a) => Some(bind("grpc", a).await?),
        None => None,
    };
    let foxglove = match doors.foxglove {
        Some(a) => Some(bind("foxglove", a).await?),
        None => None,
    };
    let who = if doors.tokens.is_some() {
        "clients authenticate with a token or a client certificate"
    } else {
        "no authentication: every client may do everything"
    };
    let gw = Gateway::new(edge, realm.clone(), definitions, doors.tokens, doors.limits).await;
    let mut tasks = Vec::new();
    if let Some((listener, bound)) = ws {
        // WebSocket is HTTP/1.1 until the upgrade.
        let t = door_tls(tls.as_ref(), b"http/1.1")?;
        let scheme = if t.is_tls() { "wss" } else { "ws" };
        println!("rosbridge listening {scheme}://{bound}");
        tracing::info!(
            "rosbridge v2 on {scheme}://{bound} for realm {} ({who})",
            realm.label
        );
        tasks.push(tokio::spawn(crate::rosbridge::serve(
            gw.clone(),
            listener,
            t,
        )));
    }
    if let Some((listener, bound)) = grpc {
        // gRPC is HTTP/2: ALPN `h2`.
        let t = door_tls(tls.as_ref(), b"h2")?;
        let suffix = if t.is_tls() { " (TLS)" } else { "" };
        println!("grpc listening {bound}{suffix}");
        tracing::info!(
            "gRPC (roam.gateway.v1) on {bound}{suffix} for realm {} ({who})",
            realm.label
        );
        let incoming = crate::grpc::door_incoming(gw.clone(), listener, t);
        let g = gw.clone();
        tasks.push(tokio::spawn(async move {
            if let Err(e) = crate::grpc::serve(g, incoming).await {
                tracing::error!("grpc: the server stopped: {e}");
            }
        }));
    }
    if let Some((listener, bound)) = foxglove {
        let t = door_tls(tls.as_ref(), b"http/1.1")?;
        let scheme = if t.is_tls() { "wss" } else { "ws" };
        println!("foxglove listening {scheme}://{bound}");
        tracing::info!(
            "Foxglove WebSocket on {scheme}://{bound} for realm {} ({who})",
            realm.label
        );
        tasks.push(tokio::spawn(crate::foxglove::serve(
            gw.clone(),
            listener,
            t,
        )));
    }
    Ok(Running { gw, tasks })
}

impl Running {
    /// Closes the doors and says what they served.
    pub fn stop(self) {
        for t in self.tasks {
            t.abort();
        }
        let s = &self.gw.stats;
        let connections: Vec<String> = self
            .gw
            .admission
            .refused()
            .into_iter()
            .map(|(cause, n)| format!("{n} {}", cause.label()))
            .collect();
        eprintln!(
            "served {} clients; refused {} ops (authentication, permissions), {} bad frames; dropped {} messages for slow clients, {} by the rules",
            s.clients_total.load(Ordering::Relaxed),
            s.refused.load(Ordering::Relaxed),
            s.bad_frames.load(Ordering::Relaxed),
            s.dropped.load(Ordering::Relaxed),
            s.ruled.load(Ordering::Relaxed),
        );
        eprintln!("connections refused or closed: {}", connections.join(", "));
    }
}
