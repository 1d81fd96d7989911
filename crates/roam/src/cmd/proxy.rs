//! `roam proxy`: bridge this machine's ROS 2 network into roam realms.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::CmdResult;
use roam_proxy::config::ProxyConfig;

#[derive(Debug, Args)]
pub struct ProxyArgs {
    /// Proxy configuration file (YAML: DDS domain, upstream routers, realms, exports, imports;
    /// see docs/operations.md).
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub config: PathBuf,
    /// Stop after this many seconds (default: run until Ctrl-C or SIGTERM; SIGHUP too, unless
    /// the file names a `rules:` file: then SIGHUP reloads it).
    #[arg(long, value_name = "SECS")]
    pub duration: Option<u64>,
    /// Log per-topic samples and ages at this hop, and per-link counters, every this many
    /// seconds (0: only at shutdown) [default: status_interval_s in the file, else 30; log
    /// target roam::stats].
    #[arg(long, value_name = "SECS")]
    pub status_interval: Option<u64>,
    /// Serve the metrics to Prometheus on this TCP address, e.g. 127.0.0.1:9464 (GET
    /// /metrics; plain HTTP, keep it on loopback or a trusted network) [metrics_listen in
    /// the file; see docs/operations.md "Prometheus"].
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// Async worker threads [worker_threads in the file, else the TOKIO_WORKER_THREADS
    /// variable if set, else 1]: one keeps a message's hand-offs on one thread (the lowest
    /// latency); more spread the QUIC work of many busy links over cores (docs/operations.md
    /// "Threads").
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub worker_threads: Option<u16>,
}

pub async fn run(a: ProxyArgs) -> CmdResult {
    let mut cfg = ProxyConfig::load(&a.config)?;
    if let Some(s) = a.status_interval {
        cfg.status_interval_s = s;
    }
    if let Some(l) = a.metrics_listen {
        roam_config::addr::check_host_port(&l, roam_config::addr::Use::Listen)
            .map_err(|e| format!("--metrics-listen: {e}"))?;
        cfg.metrics_listen = Some(l);
    }
    // With a rules file SIGHUP reloads it (the proxy handles it) instead of stopping.
    let hup_reloads = cfg.rules.is_some();
    let signal = async move {
        if hup_reloads {
            stop_without_hangup().await
        } else {
            super::router::shutdown_signal().await
        }
    };
    let stop = async move {
        match a.duration {
            Some(s) => tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(s)) => {}
                _ = signal => {}
            },
            None => signal.await,
        }
    };
    crate::proxy_run::run(cfg, stop).await
}

/// Resolves on SIGINT or SIGTERM (if they cannot be handled, never: they keep their default
/// action).
async fn stop_without_hangup() {
    use tokio::signal::unix::{signal, SignalKind};
    match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(mut int), Ok(mut term)) => {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        }
        (Err(e), _) | (_, Err(e)) => {
            tracing::warn!("cannot handle SIGINT/SIGTERM: {e}");
            std::future::pending::<()>().await
        }
    }
}
