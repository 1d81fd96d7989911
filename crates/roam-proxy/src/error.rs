//! Why a part of the proxy did not start: each error names what it was starting.

/// A part of the proxy process that could not start (its ROS node entry, its directory
/// entries, its signing key).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{what}: {source}")]
    Dds {
        what: &'static str,
        source: roam_dds::DdsError,
    },
    #[error("realm {realm}: cannot announce the proxy in its directory: {source}")]
    Directory {
        realm: String,
        source: roam_edge::EdgeError,
    },
    #[error(transparent)]
    Identity(#[from] roam_pki::PkiError),
    #[error(transparent)]
    Key(#[from] roam_proto::KeyError),
}

/// Why the MQTT bridge did not start: what its parameter file names and cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error("mqtt: {at}: unknown realm {key:?}")]
    UnknownRealm { at: String, key: String },
    #[error("mqtt: {at}: realm {key:?}: realm topics are bridged by `roam proxy` (its mqtt: section), not standalone")]
    RealmStandalone { at: String, key: String },
    #[error("mqtt: {0}")]
    Client(#[from] roam_mqtt::client::ClientError),
    #[error("mqtt: bridge.mqtt2ros.{topic}: {source}")]
    Entry {
        topic: String,
        source: crate::mqtt::convert::ConvertError,
    },
    #[error("mqtt: DDS discovery: {0}")]
    Discovery(roam_dds::DdsError),
    #[error(
        "mqtt: json: true needs the definition of {ty} (AMENT_PREFIX_PATH or msg_paths): {source}"
    )]
    Definition {
        ty: String,
        source: roam_edge::definitions::DefinitionError,
    },
    #[error("mqtt: looking up a definition: {0}")]
    Lookup(#[from] tokio::task::JoinError),
}
