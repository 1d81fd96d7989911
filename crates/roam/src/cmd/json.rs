//! JSON at the command line (`roam sub --json`, `roam pub --json`): a topic's type as a codec,
//! from a definition found on this machine (AMENT_PREFIX_PATH, `--msg-path`) or announced in
//! the realm by a member that has it. So a laptop with no ROS install reads and writes any
//! message type some member knows.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use roam_edge::definitions::DefinitionSource;
use roam_edge::{Event, Subscriber};
use roam_msg::{MessageType, TypeName, TypeRegistry};

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

/// The type on this machine, if a definition of it is here (file reads: off the runtime).
pub async fn local_codec(
    source: &Arc<DefinitionSource>,
    dds_type: &str,
) -> Option<(MessageType, String)> {
    let (source, name) = (source.clone(), dds_type.to_string());
    let found = tokio::task::spawn_blocking(move || source.lookup(&name)).await;
    match found {
        Ok(Ok(d)) => Some((d.schema().clone(), d.ros2msg().to_string())),
        Ok(Err(e)) => {
            tracing::debug!("no local definition of {dds_type}: {e}");
            None
        }
        Err(_) => None,
    }
}

/// The type from a definition's ros2msg text (as announced).
pub fn codec_from_text(dds_type: &str, text: &str) -> Result<MessageType, String> {
    let root = TypeName::from_dds(dds_type)
        .or_else(|_| TypeName::parse(dds_type))
        .map_err(|e| format!("type {dds_type}: {e}"))?
        .full();
    let mut registry = TypeRegistry::with_builtins();
    registry
        .add_ros2msg(&root, text)
        .map_err(|e| format!("the announced definition of {root}: {e}"))?;
    registry
        .resolve(&root)
        .map_err(|e| format!("the announced definition of {root}: {e}"))
}

/// The definition announced for `dds_type` on `sub`'s topic, waiting up to `wait` while
/// reading the subscriber (what other events arrive meanwhile is handed to `other`).
pub async fn announced_codec(
    sub: &mut Subscriber,
    dds_type: &str,
    wait: Duration,
    mut other: impl FnMut(Event, Vec<u8>),
) -> Result<MessageType, String> {
    let end = tokio::time::Instant::now() + wait;
    loop {
        if let Some(text) = sub.definition(dds_type) {
            return codec_from_text(dds_type, text);
        }
        let mut buf = Vec::new();
        match tokio::time::timeout_at(end, sub.recv(&mut buf)).await {
            Ok(Some(ev)) => other(ev, buf),
            Ok(None) => return Err("the client session ended".into()),
            Err(_) => {
                return Err(format!(
                    "no definition of {dds_type}: none was announced in the realm within {wait:?}, and none is on this machine (AMENT_PREFIX_PATH, --msg-path)"
                ))
            }
        }
    }
}
