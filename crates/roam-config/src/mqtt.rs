//! The `mqtt:` section of a proxy's file, and `roam mqtt`'s parameter file: mqtt_client's
//! parameters (inline, or in the user's own file named by `params:`), plus the node name the
//! bridge's latency topics live under.

use std::path::Path;

use roam_mqtt::params::PathSeg;
use roam_mqtt::Params;
use serde_yaml_ng::Value;

use crate::doc::{ConfigError, Doc, FieldPath, LoadError};

/// mqtt_client's default node name: `~/latencies/...` is `/mqtt_client/latencies/...`.
pub const DEFAULT_NODE: &str = "mqtt_client";

/// A bridge's configuration.
#[derive(Debug, Clone)]
pub struct MqttSection {
    pub params: Params,
    /// The ROS node the bridge stands for (`~` of its latency topics): `/` + name.
    pub node: String,
}

impl MqttSection {
    /// The `mqtt:` section of the file `doc` (at `base`'s directory): `params: <file>` or
    /// mqtt_client's keys inline, and optionally `node_name`.
    pub fn from_section(value: &Value, doc: &Doc, base: &Path) -> Result<Self, ConfigError> {
        let at = FieldPath::new("mqtt");
        let Value::Mapping(m) = value else {
            return Err(doc.err(
                &at,
                "expected a mapping: params: <file>, or mqtt_client's broker/client/bridge keys",
            ));
        };
        let node = match m.get("node_name") {
            None => DEFAULT_NODE.to_string(),
            Some(Value::String(s)) if is_node_name(s) => s.clone(),
            Some(_) => {
                return Err(doc.err(
                    &at.clone().key("node_name"),
                    "expected a ROS node name (letters, digits, _)",
                ))
            }
        };
        let mut inline = m.clone();
        inline.remove("node_name");
        let params = match inline.remove("params") {
            Some(Value::String(file)) => {
                if !inline.is_empty() {
                    return Err(doc.err(
                        &at.clone().key("params"),
                        "params: names a file; give the bridge's keys there or here, not both",
                    ));
                }
                read_file(&base.join(file))
                    .map_err(|e| doc.err(&at.clone().key("params"), e.to_string()))?
            }
            Some(_) => return Err(doc.err(&at.clone().key("params"), "expected a file name")),
            None => Params::from_value(&Value::Mapping(inline), base).map_err(|e| {
                let mut field = at.clone();
                for seg in &e.path {
                    field = match seg {
                        PathSeg::Key(k) => field.key(k),
                        PathSeg::Index(i) => field.index(*i),
                    };
                }
                doc.err(&field, e.message)
            })?,
        };
        Ok(Self {
            params,
            node: format!("/{node}"),
        })
    }
}

/// Reads mqtt_client's parameter file (as `roam mqtt --params` and `mqtt: {params: }` do).
pub fn read_file(path: &Path) -> Result<Params, ParamsFileError> {
    let text = LoadError::read(path)?;
    let base = path.parent().unwrap_or(Path::new("."));
    Params::parse(&text, base).map_err(|source| ParamsFileError::Params {
        path: path.to_owned(),
        source,
    })
}

/// Why mqtt_client's parameter file was not taken.
#[derive(Debug, thiserror::Error)]
pub enum ParamsFileError {
    #[error(transparent)]
    Read(#[from] LoadError),
    #[error("{}: {source}", path.display())]
    Params {
        path: std::path::PathBuf,
        source: roam_mqtt::ParamsError,
    },
}

fn is_node_name(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}
