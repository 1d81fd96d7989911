//! `roam router`: run a router.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use roam_net::link::LinkConfig;
use roam_net::runtime::{self, PeerAddr, RouterConfig, RoutingTimers};
use tracing::info;

use super::CmdResult;
use crate::config::{self, RouterFile};

#[derive(Debug, Args)]
pub struct RouterArgs {
    /// YAML configuration file (see docs/operations.md); flags below override it.
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Listen for QUIC links on this UDP address, e.g. 0.0.0.0:7447.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// Also listen for TCP+TLS links (for peers whose network blocks UDP).
    #[arg(long, value_name = "ADDR")]
    pub listen_tcp: Option<String>,
    /// Keep a link to this router (repeatable): quic://HOST:PORT, tcp://HOST:PORT or HOST:PORT.
    #[arg(long, value_name = "ADDR")]
    pub connect: Vec<String>,
    /// PKI directory with ca.pem and this router's identity.
    #[arg(long, value_name = "DIR")]
    pub pki: Option<PathBuf>,
    /// This router's identity name (its certificate must have the router role).
    #[arg(long, value_name = "NAME")]
    pub id: Option<String>,
    /// Declare a silent peer dead after this many milliseconds.
    #[arg(long, value_name = "MS")]
    pub idle_timeout_ms: Option<u64>,
    /// Close connections that have not authenticated (TLS handshake and Hello) within this
    /// many milliseconds [default: 10000; link.handshake_timeout_ms]. How many may be in
    /// their handshake at once is set in the file: link.max_unauthenticated (256) and
    /// link.max_unauthenticated_per_source (16).
    #[arg(long, value_name = "MS")]
    pub handshake_timeout_ms: Option<u64>,
    /// Congestion controller of QUIC links: cubic (default), new_reno, or bbr, which keeps
    /// its rate through random loss on long radio or satellite paths.
    #[arg(long, value_name = "NAME")]
    pub congestion: Option<String>,
    /// Log the router's counters and, per link, traffic and the age of arriving data every
    /// this many seconds (0: only at shutdown) [default: 30; log target roam::stats].
    #[arg(long, value_name = "SECS")]
    pub status_interval: Option<u64>,
}

pub async fn run(a: RouterArgs) -> CmdResult {
    let file: RouterFile = match &a.config {
        Some(p) => config::load(p)?,
        None => RouterFile::default(),
    };
    let id =
        a.id.or(file.id)
            .ok_or("no identity: give --id NAME or `id:` in the config file")?;
    let pki_dir = a
        .pki
        .or(file.pki)
        .ok_or("no PKI directory: give --pki DIR or `pki:` in the config file")?;
    let listen = a
        .listen
        .or(file.listen)
        .map(|s| runtime::resolve(&s))
        .transpose()?;
    let listen_tcp = a
        .listen_tcp
        .or(file.listen_tcp)
        .map(|s| runtime::resolve(&s))
        .transpose()?;
    let connect = if a.connect.is_empty() {
        file.connect
    } else {
        a.connect
    };
    let connect = connect
        .iter()
        .map(|s| s.parse::<PeerAddr>())
        .collect::<Result<Vec<_>, _>>()?;
    let mut link_file = file.link.clone();
    if let Some(ms) = a.idle_timeout_ms {
        link_file.idle_timeout_ms = Some(ms);
        link_file.keepalive_ms.get_or_insert((ms / 4).max(50));
    }
    if let Some(c) = a.congestion {
        link_file.congestion = Some(c);
    }
    if let Some(ms) = a.handshake_timeout_ms {
        link_file.handshake_timeout_ms = Some(ms);
    }
    let link = link_file.apply(LinkConfig::default())?;
    let identity = roam_net::pki::load_identity(&pki_dir, &id).map_err(|e| e.to_string())?;
    if identity.role != roam_proto::frame::Role::Router {
        return Err(format!("identity {id} has a client certificate; issue one with `roam pki issue {id} --role router`"));
    }
    let config = RouterConfig {
        identity: Arc::new(identity),
        listen,
        listen_tcp,
        connect,
        link,
        timers: RoutingTimers::default(),
        max_backoff: Duration::from_millis(file.link.max_backoff_ms.unwrap_or(2000)),
        stall_timeout: file.link.stall_timeout(),
    };
    let (handle, mut task) = runtime::start(config).await.map_err(|e| e.to_string())?;
    if let Some(a) = handle.quic_addr {
        // Tests and scripts read this line to learn the bound port.
        println!("listening quic {a}");
    }
    if let Some(a) = handle.tcp_addr {
        println!("listening tcp {a}");
    }
    let interval = a.status_interval.or(file.status_interval_s).unwrap_or(30);
    if interval > 0 {
        let h = handle.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(interval));
            tick.tick().await;
            loop {
                tick.tick().await;
                let Some(r) = h.report().await else { return };
                crate::stats::log_router(&r);
            }
        });
    }
    tokio::select! {
        _ = shutdown_signal() => {
            info!("shutting down");
            if let Some(r) = handle.report().await {
                crate::stats::log_router(&r);
            }
            handle.shutdown().await;
            let _ = task.await;
        }
        _ = &mut task => {}
    }
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
