//! `roam router`: run a router.

use std::path::PathBuf;

use clap::Args;
use roam_edge::metrics::{Metrics, MetricsEndpoint, ProcessKind};
use tracing::info;

use super::CmdResult;
use crate::stats::Status;
use roam_config::addr;
use roam_config::doc::FieldPath;
use roam_config::router::{self as config, RouterFile};

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
    // clap prints this text in --help as written; rustdoc would read it as markup.
    #[allow(rustdoc::broken_intra_doc_links)]
    /// Also be found through an MQTT broker (repeatable): mqtt://[USER:PASS@]HOST:PORT/RENDEZVOUS
    /// or mqtts://... (TLS to the broker); peers dial the same address. The broker sees
    /// hashed topics and TLS records only (docs/operations.md "Links through an MQTT broker").
    #[arg(long, value_name = "URL")]
    pub listen_mqtt: Vec<String>,
    /// Keep a link to this router (repeatable): quic://HOST:PORT, tcp://HOST:PORT, HOST:PORT,
    /// or mqtt://HOST:PORT/RENDEZVOUS (through a broker).
    #[arg(long, value_name = "ADDR")]
    pub connect: Vec<String>,
    /// PKI directory with ca.pem and this router's identity.
    #[arg(long, value_name = "DIR")]
    pub pki: Option<PathBuf>,
    /// This router's identity name (its certificate must have the router role).
    #[arg(long, value_name = "NAME")]
    pub id: Option<String>,
    /// Declare a silent peer dead after this many milliseconds [default: 3000;
    /// link.idle_timeout_ms].
    #[arg(long, value_name = "MS")]
    pub idle_timeout_ms: Option<u64>,
    /// Close connections that have not authenticated (TLS handshake and Hello) within this
    /// many milliseconds [default: 10000; link.handshake_timeout_ms]. How many may be in
    /// their handshake at once is set in the file: link.max_unauthenticated (256) and
    /// link.max_unauthenticated_per_source (16).
    #[arg(long, value_name = "MS")]
    pub handshake_timeout_ms: Option<u64>,
    /// Take a QUIC peer for dead once it has answered nothing for this many milliseconds
    /// after being sent something (or a keepalive plus six round trips, if longer), well
    /// before the idle timeout; 0: only the idle timeout [default: 1000;
    /// link.silence_timeout_ms].
    #[arg(long, value_name = "MS")]
    pub silence_timeout_ms: Option<u64>,
    /// Data messages per second one client identity may bring in over all its links (0: no
    /// limit) [default: 20000; link.client_max_messages_per_s]. Over it, the client's
    /// reliable data waits (QUIC flow control slows the client down) and its best-effort data
    /// is dropped, logged once and counted per link (quota_waits, dropped_quota). Links to
    /// routers (and robots' proxies) have no quota.
    #[arg(long, value_name = "N")]
    pub client_max_messages_per_s: Option<u64>,
    /// Bytes of data per second one client identity may bring in (0: no limit) [default: 1 GiB;
    /// link.client_max_bytes_per_s].
    #[arg(long, value_name = "BYTES")]
    pub client_max_bytes_per_s: Option<u64>,
    /// Names (subscriptions and publications together) one client link may hold (0: no
    /// limit) [default: 20000; link.client_max_names]. Further ones are refused, logged once
    /// per link and counted (names_refused), so one client cannot fill the router's tables.
    #[arg(long, value_name = "N")]
    pub client_max_names: Option<usize>,
    /// Congestion controller of QUIC links: tolerant (default: Cubic that keeps its rate
    /// through random loss on radio links and backs off where a queue builds), cubic,
    /// new_reno, or bbr (quinn's experimental BBR: not fair to other traffic).
    #[arg(long, value_name = "NAME")]
    pub congestion: Option<String>,
    /// Send no repair datagrams on lossy QUIC links (Reed-Solomon shards beside large messages,
    /// copies of small ones; forward error correction is on by default and costs nothing on a
    /// clean path) [link.fec].
    #[arg(long)]
    pub no_fec: bool,
    /// Log the router's counters and, per link, traffic and the age of arriving data every
    /// this many seconds (0: only at shutdown) [default: 30; log target roam::stats].
    #[arg(long, value_name = "SECS")]
    pub status_interval: Option<u64>,
    /// Keep the latest metrics snapshot in this file (JSON, one line: counters, links with
    /// their QUIC path figures and data-age histograms), replaced whole at start, every
    /// status interval and at exit [metrics_file; see docs/operations.md "The metrics file"].
    #[arg(long, value_name = "PATH")]
    pub metrics_file: Option<PathBuf>,
    /// Serve the metrics to Prometheus on this TCP address, e.g. 127.0.0.1:9464: GET
    /// /metrics answers with a fresh snapshot in the OpenMetrics text format (plain HTTP, no
    /// authentication: keep it on loopback or a trusted network) [metrics_listen; see
    /// docs/operations.md "Prometheus"].
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// Async worker threads [worker_threads in the file, else the TOKIO_WORKER_THREADS
    /// variable if set, else 1]: one keeps a message's hand-offs on one thread (the lowest
    /// latency); more spread the QUIC work of many busy links over cores (docs/operations.md
    /// "Threads").
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub worker_threads: Option<u16>,
}

pub async fn run(a: RouterArgs) -> CmdResult {
    let loaded = a.config.as_deref().map(config::load_router).transpose()?;
    let file = loaded.as_ref().map(|l| &l.file);
    let from_file = |f: fn(&RouterFile) -> Option<String>| file.and_then(f);
    let id = match a.id {
        Some(id) => {
            roam_pki::validate_name(&id).map_err(|e| format!("--id: {e}"))?;
            id
        }
        None => from_file(|f| f.id.clone())
            .ok_or("no identity: give --id NAME or `id:` in the config file")?,
    };
    let pki_flag = a.pki.is_some();
    let pki_dir = a
        .pki
        .or_else(|| file.and_then(|f| f.pki.clone()))
        .ok_or("no PKI directory: give --pki DIR or `pki:` in the config file")?;
    if let Err(e) = roam_pki::check_files(&pki_dir, &id) {
        return Err(match &loaded {
            Some(l) if !pki_flag => l.doc().err(&FieldPath::new("pki"), e.to_string()).into(),
            _ => format!("--pki {}: {e}", pki_dir.display()),
        });
    }
    let listen = a
        .listen
        .or_else(|| from_file(|f| f.listen.clone()))
        .map(|s| addr::parse_listen(&s))
        .transpose()
        .map_err(|e| e.to_string())?;
    let listen_tcp = a
        .listen_tcp
        .or_else(|| from_file(|f| f.listen_tcp.clone()))
        .map(|s| addr::parse_listen(&s))
        .transpose()
        .map_err(|e| e.to_string())?;
    let listen_mqtt = if a.listen_mqtt.is_empty() {
        file.map(|f| f.listen_mqtt.clone()).unwrap_or_default()
    } else {
        a.listen_mqtt
    };
    let listen_mqtt = listen_mqtt
        .iter()
        .map(|s| roam_net::mqtt::MqttPeer::parse(s).map_err(|e| format!("listen_mqtt: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let connect = if a.connect.is_empty() {
        file.map(|f| f.connect.clone()).unwrap_or_default()
    } else {
        a.connect
    };
    let connect = connect
        .iter()
        .map(|s| addr::parse_peer(s).map_err(|e| format!("connect {s}: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let file_link = file.map(|f| f.link.clone()).unwrap_or_default();
    let mut link_file = file_link.clone();
    if let Some(ms) = a.idle_timeout_ms {
        link_file.idle_timeout_ms = Some(ms);
        link_file.keepalive_ms.get_or_insert((ms / 4).max(50));
    }
    if let Some(c) = a.congestion {
        link_file.congestion = Some(c);
    }
    if a.no_fec {
        link_file.fec = Some(false);
    }
    if let Some(n) = a.client_max_messages_per_s {
        link_file.client_max_messages_per_s = Some(n);
    }
    if let Some(n) = a.client_max_bytes_per_s {
        link_file.client_max_bytes_per_s = Some(n);
    }
    if let Some(n) = a.client_max_names {
        link_file.client_max_names = Some(n);
    }
    if let Some(ms) = a.handshake_timeout_ms {
        link_file.handshake_timeout_ms = Some(ms);
    }
    if let Some(ms) = a.silence_timeout_ms {
        link_file.silence_timeout_ms = Some(ms);
    }
    link_file.check().map_err(|e| {
        format!("{e} (from --idle-timeout-ms, --handshake-timeout-ms, --silence-timeout-ms or --congestion)")
    })?;
    let (handle, mut task) = crate::boot::start_router(crate::boot::RouterBoot {
        id: &id,
        pki: &pki_dir,
        listen,
        listen_tcp,
        listen_mqtt,
        connect,
        link: &link_file,
        what: "roam router",
    })
    .await?;
    let metrics_file = a
        .metrics_file
        .or_else(|| file.and_then(|f| f.metrics_file.clone()));
    let metrics = Metrics::new(&id, ProcessKind::Router).with_router(handle.clone());
    let status = Status::new(metrics, metrics_file);
    status.start().await.map_err(|e| e.to_string())?;
    let metrics_listen = match a.metrics_listen {
        Some(s) => Some(addr::parse_listen(&s).map_err(|e| format!("--metrics-listen: {e}"))?),
        None => match from_file(|f| f.metrics_listen.clone()) {
            Some(s) => Some(addr::parse_listen(&s).map_err(|e| format!("metrics_listen: {e}"))?),
            None => None,
        },
    };
    let _endpoint = MetricsEndpoint::start(metrics_listen, status.metrics())
        .await
        .map_err(|e| e.to_string())?;
    let interval = a
        .status_interval
        .or(file.and_then(|f| f.status_interval_s))
        .unwrap_or(30);
    let ticker = status.every(interval);
    tokio::select! {
        _ = shutdown_signal() => {
            info!("shutting down");
            ticker.stop().await;
            status.report().await;
            handle.shutdown().await;
            let _ = task.await;
        }
        _ = &mut task => {}
    }
    Ok(())
}

/// Resolves on SIGINT (Ctrl-C), SIGTERM or SIGHUP (see [`super::signals::Stop`]); if the
/// handlers cannot be installed, never (the signals then keep their default action).
pub async fn shutdown_signal() {
    match super::signals::Stop::install() {
        Ok(mut stop) => {
            stop.wait().await;
        }
        Err(e) => {
            tracing::warn!("{e}");
            std::future::pending::<()>().await
        }
    }
}
