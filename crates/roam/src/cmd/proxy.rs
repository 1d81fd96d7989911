//! `roam proxy`: bridge this machine's ROS 2 network into roam realms.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::CmdResult;
use crate::proxy::config::ProxyConfig;

#[derive(Debug, Args)]
pub struct ProxyArgs {
    /// Proxy configuration file (YAML: DDS domain, upstream routers, realms, exports, imports;
    /// see docs/operations.md).
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub config: PathBuf,
    /// Stop after this many seconds (default: run until Ctrl-C or SIGTERM).
    #[arg(long, value_name = "SECS")]
    pub duration: Option<u64>,
}

pub async fn run(a: ProxyArgs) -> CmdResult {
    let cfg = ProxyConfig::load(&a.config)?;
    let stop = async move {
        match a.duration {
            Some(s) => tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(s)) => {}
                _ = super::router::shutdown_signal() => {}
            },
            None => super::router::shutdown_signal().await,
        }
    };
    crate::proxy::run::run(cfg, stop).await
}
