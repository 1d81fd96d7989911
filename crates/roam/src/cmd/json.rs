//! JSON at the command line (`roam sub --json`, `roam pub --json`): a topic's type as a codec,
//! from a definition found on this machine (AMENT_PREFIX_PATH, `--msg-path`) or announced in
//! the realm by a member that has it (the lookup itself is `roam_gateway::codec`, shared with
//! the gateway). So a laptop with no ROS install reads and writes any message type some member
//! knows.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use roam_edge::definitions::DefinitionSource;
use roam_edge::{Event, Subscriber};
use roam_msg::MessageType;

/// Where the JSON tools find definitions.
#[derive(Debug, Clone, Args)]
pub struct DefinitionArgs {
    /// A directory of ROS 2 interface definitions, besides AMENT_PREFIX_PATH (a package with
    /// msg/ srv/ action/, an install prefix, or a folder of packages); repeatable. Without
    /// one that has the type, the definition announced in the realm is used.
    #[arg(long = "msg-path", value_name = "DIR")]
    pub msg_paths: Vec<PathBuf>,
    /// How long to wait for the type's definition to be announced in the realm, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    pub definition_wait: f64,
}

impl DefinitionArgs {
    pub fn source(&self) -> Result<Arc<DefinitionSource>, String> {
        DefinitionSource::from_env(&self.msg_paths)
            .map(Arc::new)
            .map_err(|e| format!("--msg-path: {e}"))
    }

    pub fn wait(&self) -> Duration {
        Duration::from_secs_f64(self.definition_wait.clamp(0.0, 3600.0))
    }
}

/// The type on this machine, if a definition of it is here (see [`roam_gateway::codec`]).
pub async fn local_codec(
    source: &Arc<DefinitionSource>,
    dds_type: &str,
) -> Option<(MessageType, String)> {
    roam_gateway::codec::local(source, dds_type).await
}

/// The definition announced for `dds_type` on `sub`'s topic, waiting up to `wait` while
/// reading the subscriber (what other events arrive meanwhile is handed to `other`).
pub async fn announced_codec(
    sub: &mut Subscriber,
    dds_type: &str,
    wait: Duration,
    other: impl FnMut(Event, Vec<u8>),
) -> Result<MessageType, String> {
    roam_gateway::codec::announced(sub, dds_type, wait, other)
        .await
        .map_err(|e| e.to_string())
}
