//! `roam dashboard`: the live dashboard of a realm ([`roam_gateway::dashboard`]), served from any
//! machine linked to it (an operator's laptop, a cloud box): open the printed address in a
//! browser.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use super::connect::{client_config, client_edge, ClientEdge};
use super::{CmdResult, ConnectArgs};

#[derive(Debug, Args)]
pub struct DashboardArgs {
    /// Realm file (from `roam realm new`).
    #[arg(long, value_name = "FILE")]
    pub realm: PathBuf,
    #[command(flatten)]
    pub conn: ConnectArgs,
    /// Where to serve the page (HTTP, no authentication: keep it on loopback or a trusted
    /// network); 0 as the port picks a free one. The address bound is printed on stdout as
    /// `dashboard listening http://ADDR`.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Seconds between updates of the page.
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0)]
    pub interval: f64,
}

pub async fn run(a: DashboardArgs) -> CmdResult {
    let mut stop = super::signals::Stop::install()?;
    let interval = Duration::try_from_secs_f64(a.interval)
        .ok()
        .filter(|d| *d >= Duration::from_millis(100))
        .ok_or_else(|| format!("--interval {}: at least 0.1 seconds", a.interval))?;
    let addr = a.listen.parse().map_err(|_| {
        format!(
            "--listen {:?}: an IP address and port, e.g. 127.0.0.1:8080",
            a.listen
        )
    })?;
    let realm = Arc::new(roam_edge::realm::load(&a.realm)?);
    let (listener, bound) = roam_gateway::dashboard::bind(addr)
        .await
        .map_err(|e| e.to_string())?;
    let ClientEdge { edge, .. } = client_edge(
        client_config(&a.conn)?,
        &a.conn.id,
        "watching through",
        None,
    )?;
    let view = edge.realm_metrics(realm.clone()).await;
    let (latest, follow) = roam_gateway::dashboard::follow(realm.label.clone(), view, interval);
    println!("dashboard listening http://{bound}");
    tracing::info!("dashboard of realm {} on http://{bound}", realm.label);
    let server = tokio::spawn(roam_gateway::dashboard::serve(listener, latest));
    let sig = stop.wait().await;
    eprintln!("{sig}: stopping");
    server.abort();
    follow.abort();
    Ok(())
}
