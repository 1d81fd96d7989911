//! `roam mqtt`: the MQTT bridge on its own, in place of mqtt_client: the same parameter file,
//! the same topics and payloads on the broker, on one DDS domain. (Inside `roam proxy`, the
//! `mqtt:` section runs the same bridge next to the proxy's realm links.)

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use roam_dds::Participant;
use roam_edge::definitions::DefinitionSource;

use super::CmdResult;
use roam_config::mqtt as config;
use roam_proxy::config::DdsFile;
use roam_proxy::dds_config;
use roam_proxy::mqtt::{Bridge, Context, MqttSection};

#[derive(Debug, Args)]
pub struct MqttArgs {
    /// mqtt_client's parameter file (ROS 2 `ros__parameters` form or bare): broker, client,
    /// bridge.ros2mqtt, bridge.mqtt2ros (docs/mqtt.md).
    #[arg(long, short = 'p', value_name = "FILE")]
    pub params: PathBuf,
    /// The DDS domain (default: ROS_DOMAIN_ID, else 0).
    #[arg(long)]
    pub domain: Option<u32>,
    // clap prints this text in --help as written; rustdoc would read it as markup.
    #[allow(rustdoc::invalid_html_tags)]
    /// The node name the latency topics live under (~/latencies/<topic>).
    #[arg(long, value_name = "NAME", default_value = config::DEFAULT_NODE)]
    pub node_name: String,
    /// A directory of ROS 2 interface definitions for `json: true` entries, besides
    /// AMENT_PREFIX_PATH (a package, an install prefix, or a folder of packages); repeatable.
    #[arg(long = "msg-path", value_name = "DIR")]
    pub msg_paths: Vec<PathBuf>,
    /// At exit, write how long messages spent inside the bridge per entry (mean, median,
    /// min, max, std in microseconds: DDS arrival to MQTT hand-off, MQTT arrival to the DDS
    /// write, and the DDS write call) to this JSON file (what the MQTT benchmark reads).
    #[arg(long, value_name = "FILE")]
    pub hop_stats_file: Option<PathBuf>,
}

pub async fn run(a: MqttArgs) -> CmdResult {
    let mut stop = super::signals::Stop::install()?;
    let params = config::read_file(&a.params).map_err(|e| e.to_string())?;
    if !a
        .node_name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_')
        || a.node_name.is_empty()
    {
        return Err(format!(
            "--node-name {}: letters, digits and _ only",
            a.node_name
        ));
    }
    let domain = match a.domain {
        Some(d) => d,
        None => match std::env::var("ROS_DOMAIN_ID") {
            Ok(v) if !v.is_empty() => v
                .parse()
                .map_err(|_| format!("ROS_DOMAIN_ID={v} is not a domain number"))?,
            _ => 0,
        },
    };
    let definitions =
        Arc::new(DefinitionSource::from_env(&a.msg_paths).map_err(|e| format!("--msg-path: {e}"))?);
    // The proxy's DDS settings (receive buffer, a receive thread for the unicast data socket),
    // with CYCLONEDDS_URI after them as in a proxy without interfaces or peers.
    let xml = dds_config::xml(&DdsFile {
        domain,
        ..DdsFile::default()
    });
    let participant = Participant::new(domain, Some(&xml)).map_err(|e| format!("DDS: {e}"))?;
    let bridge = Bridge::start(
        MqttSection {
            params,
            node: format!("/{}", a.node_name),
        },
        Context {
            participant,
            definitions,
            realms: None,
        },
    )
    .await
    .map_err(|e| e.to_string())?;
    println!("mqtt bridge up on DDS domain {domain}");
    let why = stop.wait().await;
    tracing::info!("{why}: stopping");
    if let Some(f) = &a.hop_stats_file {
        let text = serde_json::to_string_pretty(&bridge.hop_figures()).unwrap_or_default();
        std::fs::write(f, text).map_err(|e| format!("--hop-stats-file {}: {e}", f.display()))?;
    }
    bridge.stop().await;
    Ok(())
}
