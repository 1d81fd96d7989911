//! A topic's type as a codec (CDR <-> JSON/CBOR), from a definition found on this machine
//! (AMENT_PREFIX_PATH, `msg_paths`) or announced in the realm by a member that has it. So a
//! gateway (or `roam sub --json`) with no ROS install reads and writes any type some member
//! knows. Shared by every door and by the command-line JSON tools.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lru::LruCache;
use roam_edge::definitions::DefinitionSource;
use roam_edge::{Event, Subscriber};
use roam_msg::{MessageType, NameError, RegistryError, TypeName, TypeRegistry};

/// Why a type has no codec.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("type {dds_type}: {source}")]
    Name { dds_type: String, source: NameError },
    #[error("the announced definition of {root}: {source}")]
    Announced { root: String, source: RegistryError },
    #[error("no definition of {dds_type}: none was announced in the realm within {wait:?}, and none is on this machine (AMENT_PREFIX_PATH, msg_paths)")]
    NotFound { dds_type: String, wait: Duration },
    #[error("the client session ended before a definition of {dds_type} was announced")]
    Closed { dds_type: String },
}

/// The type on this machine with its ros2msg text, if a definition of it is here (file reads:
/// off the runtime).
pub async fn local(
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
pub fn from_text(dds_type: &str, text: &str) -> Result<MessageType, CodecError> {
    let root = TypeName::from_dds(dds_type)
        .or_else(|_| TypeName::parse(dds_type))
        .map_err(|source| CodecError::Name {
            dds_type: dds_type.to_string(),
            source,
        })?
        .full();
    let mut registry = TypeRegistry::with_builtins();
    let announced = |source| CodecError::Announced {
        root: root.clone(),
        source,
    };
    registry.add_ros2msg(&root, text).map_err(announced)?;
    registry.resolve(&root).map_err(announced)
}

/// The definition announced for `dds_type` on `sub`'s topic, waiting up to `wait` while
/// reading the subscriber (what other events arrive meanwhile is handed to `other`).
pub async fn announced(
    sub: &mut Subscriber,
    dds_type: &str,
    wait: Duration,
    mut other: impl FnMut(Event, Vec<u8>),
) -> Result<MessageType, CodecError> {
    let end = tokio::time::Instant::now() + wait;
    loop {
        if let Some(text) = sub.definition(dds_type) {
            return from_text(dds_type, text);
        }
        let mut buf = Vec::new();
        match tokio::time::timeout_at(end, sub.recv(&mut buf)).await {
            Ok(Some(ev)) => other(ev, buf),
            Ok(None) => {
                return Err(CodecError::Closed {
                    dds_type: dds_type.to_string(),
                })
            }
            Err(_) => {
                return Err(CodecError::NotFound {
                    dds_type: dds_type.to_string(),
                    wait,
                })
            }
        }
    }
}

/// A codec and the ros2msg text it was built from; None caches a miss.
type Entry = Option<(MessageType, Arc<str>)>;

/// Codecs already built, by DDS type name, shared by a gateway's clients (30 browsers on one
/// topic build its codec once). Bounded.
pub struct CodecCache {
    source: Arc<DefinitionSource>,
    cache: Mutex<LruCache<String, Entry>>,
}

/// How many types a cache keeps.
const CACHED_TYPES: usize = 512;

impl CodecCache {
    pub fn new(source: Arc<DefinitionSource>) -> Self {
        Self {
            source,
            cache: Mutex::new(LruCache::new(
                NonZeroUsize::new(CACHED_TYPES).unwrap_or(NonZeroUsize::MIN),
            )),
        }
    }

    pub fn source(&self) -> &Arc<DefinitionSource> {
        &self.source
    }

    /// The codec and ros2msg text of `dds_type` from this machine's definitions, cached
    /// (a miss too, until [`Self::learn`] or a restart: file reads are not repeated per
    /// message).
    pub async fn local(&self, dds_type: &str) -> Option<(MessageType, Arc<str>)> {
        if let Some(hit) = self.lock().get(dds_type) {
            return hit.clone();
        }
        let found = local(&self.source, dds_type)
            .await
            .map(|(t, text)| (t, Arc::<str>::from(text)));
        self.lock().put(dds_type.to_string(), found.clone());
        found
    }

    /// Remembers a codec built from an announced definition, for every client.
    pub fn learn(&self, dds_type: &str, ty: MessageType, text: &str) {
        self.lock()
            .put(dds_type.to_string(), Some((ty, Arc::from(text))));
    }

    /// A codec already known (local or learned), without reading files.
    pub fn known(&self, dds_type: &str) -> Option<(MessageType, Arc<str>)> {
        self.lock().get(dds_type).cloned().flatten()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LruCache<String, Entry>> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_announced_definition_becomes_a_codec_and_bad_ones_say_why() {
        let ty = from_text("std_msgs::msg::dds_::String_", "string data\n").unwrap();
        let mut cdr = Vec::new();
        ty.json_to_cdr(br#"{"data":"hi"}"#, &Default::default(), &mut cdr)
            .unwrap();
        let mut json = Vec::new();
        ty.cdr_to_json(&cdr, &mut json).unwrap();
        assert_eq!(json, br#"{"data":"hi"}"#);
        let e = from_text("std_msgs::msg::dds_::String_", "strin data\n").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("the announced definition of std_msgs/msg/String"),
            "{e}"
        );
        let e = from_text("not a type", "string data\n").unwrap_err();
        assert!(matches!(e, CodecError::Name { .. }), "{e}");
    }
}
