//! Topic metadata an exporting proxy announces inside the realm, so an importing network
//! needs only the topic's name: the DDS type name and the publisher's QoS.
//!
//! It travels sealed like any message, on its own name:
//! `descriptor(topic = realm-side topic, type = "roam/meta/v1", kind = topic)`.
//!
//! ```text
//! version u8 = 1 | reliable u8 | transient_local u8 | keyless u8 | depth u32 (0 = keep all)
//! | type name (u16 length + UTF-8)
//! ```

use roam_dds::{History, Qos};
use roam_proto::codec::{put_str16, Reader};
use roam_proto::{Kind, TopicDescriptor};

const VERSION: u8 = 1;
/// The type field of the metadata name's descriptor.
pub const META_TYPE: &str = "roam/meta/v1";

/// What an importer needs to recreate a topic locally.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMeta {
    /// The DDS type name, e.g. `std_msgs::msg::dds_::String_` (must match exactly).
    pub dds_type: String,
    pub keyless: bool,
    pub qos: Qos,
}

impl TopicMeta {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![
            VERSION,
            self.qos.reliable as u8,
            self.qos.transient_local as u8,
            self.keyless as u8,
        ];
        let depth = match self.qos.history {
            History::KeepLast(n) => n.max(1),
            History::KeepAll => 0,
        };
        out.extend_from_slice(&depth.to_be_bytes());
        put_str16(&mut out, &self.dds_type);
        out
    }

    pub fn decode(b: &[u8]) -> Result<Self, String> {
        let mut r = Reader::new(b);
        let err = |e: roam_proto::codec::CodecError| format!("bad topic metadata: {e}");
        let version = r.u8().map_err(err)?;
        if version != VERSION {
            return Err(format!("topic metadata version {version} is not supported"));
        }
        let reliable = r.u8().map_err(err)? != 0;
        let transient_local = r.u8().map_err(err)? != 0;
        let keyless = r.u8().map_err(err)? != 0;
        let depth = r.u32().map_err(err)?;
        let dds_type = r.str16(1024).map_err(err)?.to_string();
        r.finish().map_err(err)?;
        if dds_type.is_empty() {
            return Err("bad topic metadata: empty type name".into());
        }
        let history = if depth == 0 {
            History::KeepAll
        } else {
            History::KeepLast(depth)
        };
        Ok(Self {
            dds_type,
            keyless,
            qos: Qos {
                reliable,
                transient_local,
                history,
            },
        })
    }
}

/// The descriptor of a realm topic's metadata.
pub fn meta_descriptor(realm_topic: &str) -> TopicDescriptor {
    TopicDescriptor {
        topic: realm_topic.into(),
        type_name: META_TYPE.into(),
        kind: Kind::Topic,
        instance: String::new(),
    }
}

/// The descriptor of a realm topic's data: named by its ROS type, so both ends agree on it.
pub fn data_descriptor(realm_topic: &str, dds_type: &str) -> TopicDescriptor {
    TopicDescriptor::topic(realm_topic, &super::ros_names::type_from_dds(dds_type))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_round_trips_and_rejects_garbage() {
        let m = TopicMeta {
            dds_type: "sensor_msgs::msg::dds_::LaserScan_".into(),
            keyless: true,
            qos: Qos {
                reliable: true,
                transient_local: true,
                history: History::KeepLast(7),
            },
        };
        assert_eq!(TopicMeta::decode(&m.encode()).unwrap(), m);
        let all = TopicMeta {
            qos: Qos {
                history: History::KeepAll,
                ..m.qos
            },
            ..m.clone()
        };
        assert_eq!(TopicMeta::decode(&all.encode()).unwrap(), all);
        let b = m.encode();
        for n in 0..b.len() {
            assert!(TopicMeta::decode(&b[..n]).is_err());
        }
        let mut v = b.clone();
        v[0] = 9;
        assert!(TopicMeta::decode(&v).unwrap_err().contains("version"));
        assert_ne!(
            meta_descriptor("/a").name(&roam_proto::RealmSecret::from_bytes([1; 32])),
            data_descriptor("/a", "x::msg::dds_::Y_")
                .name(&roam_proto::RealmSecret::from_bytes([1; 32]))
        );
    }
}
