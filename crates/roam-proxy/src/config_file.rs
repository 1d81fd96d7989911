//! The proxy file's shape as written (`roam proxy -c robot.yaml`), before any check: what
//! serde reads. [`super::config`] checks it and makes the validated configuration.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use super::patterns::Patterns;
use roam_config::gateway::doors::EmbeddedFile;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxyFile {
    pub id: String,
    pub pki: PathBuf,
    #[serde(default)]
    pub upstream: Vec<String>,
    pub listen: Option<String>,
    /// A ROS namespace put in front of every realm-side topic and service name of this
    /// proxy, so one file serves a fleet: `/chatter` here is `/robot7/chatter` in the realm,
    /// and an import of `/cmd_vel` reads the realm's `/robot7/cmd_vel`.
    pub namespace: Option<String>,
    #[serde(default)]
    pub dds: DdsFile,
    pub realms: BTreeMap<String, PathBuf>,
    #[serde(default)]
    pub exports: Vec<ExportFile>,
    #[serde(default)]
    pub imports: Vec<ImportFile>,
    /// false: exported payloads travel in clear text, still authenticated (routers can read
    /// but not forge or replay them). For public data, and to measure what encryption costs.
    #[serde(default = "yes")]
    pub encrypt_payloads: bool,
    /// Seconds an exported reliable KEEP_ALL topic keeps sent messages for subscribers that
    /// missed them (10 if unset); an `exports:` entry may give its own.
    pub resend_window_s: Option<f64>,
    /// Sign every envelope with the identity's Ed25519 key, so receivers know which realm
    /// member sent it (signed mode). Unset: sign when any realm file says `require_signed`.
    pub sign: Option<bool>,
    #[serde(default)]
    pub link: roam_config::link::LinkFile,
    /// Seconds between status lines (per topic: samples, ages at this hop; per link); 0:
    /// only at shutdown.
    pub status_interval_s: Option<u64>,
    /// Where to keep the latest metrics snapshot (JSON, replaced whole each time).
    pub metrics_file: Option<PathBuf>,
    /// Where to serve `GET /metrics` for Prometheus.
    pub metrics_listen: Option<String>,
    /// Async worker threads (`--worker-threads`; read before the runtime starts, by
    /// `roam_config::router::worker_threads_in`).
    pub worker_threads: Option<u16>,
    /// Directories of ROS 2 interface definitions besides AMENT_PREFIX_PATH: a package
    /// (holding msg/, srv/, action/), an install prefix, or a folder of packages.
    #[serde(default)]
    pub msg_paths: Vec<PathBuf>,
    /// A rules file (docs/rules.md), evaluated on every message exported and imported.
    pub rules: Option<PathBuf>,
    /// Gateway doors (rosbridge, gRPC) into one realm, on this proxy's edge.
    pub gateway: Option<EmbeddedFile>,
    /// The live dashboard of one of its realms, served by this proxy.
    pub dashboard: Option<DashboardFile>,
    /// An MQTT bridge (mqtt_client's parameters, or `params: <its file>`): docs/mqtt.md.
    pub mqtt: Option<serde_yaml_ng::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DashboardFile {
    /// Where to serve it (HTTP, no authentication: loopback or a trusted network).
    pub listen: String,
    /// One of `realms:`.
    pub realm: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DdsFile {
    #[serde(default)]
    pub domain: u32,
    #[serde(default)]
    pub interfaces: Vec<String>,
    #[serde(default)]
    pub peers: Vec<String>,
    pub config_xml: Option<String>,
    /// The ROS 2 distribution of this network's nodes, for the GID width in
    /// `ros_discovery_info` (`humble`: 24 bytes; later, `iron`, `jazzy`, ...: 16 bytes) and
    /// whether import writers carry type hashes in USER_DATA (every distribution after Humble).
    pub ros_distro: Option<String>,
    /// The UDP receive buffer the proxy's participant asks for (bytes; the kernel caps it at
    /// net.core.rmem_max). Part of the configuration roam writes from `interfaces`/`peers`.
    pub receive_buffer_bytes: Option<u64>,
    /// ROS message types whose exported topics a second DDS participant of the proxy reads
    /// (its own CycloneDDS domain instance and receive threads), so a heavy stream waiting
    /// for its link never holds the other topics ([`super::intake`]). Unset: images, point
    /// clouds and occupancy grids; `[]`: none.
    pub bulk_types: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportFile {
    pub topic: Option<String>,
    pub service: Option<String>,
    /// A ROS 2 action: its `_action/send_goal`, `cancel_goal` and `get_result` services and
    /// `_action/feedback` and `status` topics, as one entry.
    pub action: Option<String>,
    /// A raw DDS topic (not a ROS 2 one), e.g. `DDSPerfRDataKS`.
    pub dds_topic: Option<String>,
    /// Patterns (docs: [`super::patterns`]): a list, or per kind (`publishers`,
    /// `service_servers`, `action_servers`).
    pub allow: Option<Patterns>,
    pub deny: Option<Patterns>,
    pub realm: String,
    #[serde(rename = "as")]
    pub rename: Option<String>,
    /// A service's (or an action's services') convention here: `auto` (by each endpoint's
    /// DDS vendor), `cyclonedds` or `fastdds` (docs/services.md).
    pub convention: Option<super::convention::Setting>,
    /// This entry's resend window, in seconds (docs: [`super::resend_window`]).
    pub resend_window_s: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportFile {
    pub topic: Option<String>,
    pub service: Option<String>,
    pub action: Option<String>,
    pub dds_topic: Option<String>,
    /// Patterns (docs: [`super::patterns`]): a list, or per kind (`subscribers`,
    /// `service_clients`, `action_clients`).
    pub allow: Option<Patterns>,
    pub deny: Option<Patterns>,
    pub realm: String,
    #[serde(rename = "as")]
    pub rename: Option<String>,
    /// A service's convention here: `auto` (by each endpoint's DDS vendor), `cyclonedds`
    /// or `fastdds` (docs/services.md).
    pub convention: Option<super::convention::Setting>,
}

fn yes() -> bool {
    true
}
