//! The proxy's entry in `ros_discovery_info`, as a ROS 2 node publishes it.
//!
//! ROS 2 tools (`ros2 node list`, `ros2 topic info -v`) and bridges (the Zenoh bridge) learn which
//! node owns which DDS endpoint from this topic: type
//! `rmw_dds_common::msg::dds_::ParticipantEntitiesInfo_`, reliable, transient local, XCDR1
//! little endian:
//!
//! ```text
//! ParticipantEntitiesInfo { Gid gid; sequence<NodeEntitiesInfo> node_entities_info_seq; }
//! NodeEntitiesInfo { string node_namespace; string node_name;
//!                    sequence<Gid> reader_gid_seq; sequence<Gid> writer_gid_seq; }
//! Gid { uint8 data[16] }   (24 bytes in Humble: the 16-byte GUID then 8 zero bytes)
//! ```

//!
//! Both the proxy and the lab's load generator announce themselves this way: the Zenoh ROS 2
//! bridge, for one, routes only endpoints that some node announces here.

use crate::{DdsError, Guid, Participant, Qos, TopicInfo, Writer};

/// The DDS topic name (no `rt/` prefix).
pub const TOPIC: &str = "ros_discovery_info";
/// The DDS type name.
pub const TYPE: &str = "rmw_dds_common::msg::dds_::ParticipantEntitiesInfo_";

/// GID width: 16 bytes from Iron on, 24 in Humble.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GidSize {
    /// Iron, Jazzy and later: the 16-byte GUID.
    Iron,
    /// Humble: the 16-byte GUID and 8 zero bytes.
    Humble,
}

impl GidSize {
    /// The GID size a ROS 2 distribution uses (`humble` -> 24 bytes, anything else 16).
    pub fn for_distro(distro: Option<&str>) -> GidSize {
        match distro {
            Some("humble") => GidSize::Humble,
            _ => GidSize::Iron,
        }
    }
}

impl GidSize {
    fn len(self) -> usize {
        match self {
            GidSize::Iron => 16,
            GidSize::Humble => 24,
        }
    }
}

/// One node: its namespace, name, and the GUIDs of the readers and writers it owns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeInfo {
    /// The node's namespace, e.g. `/`.
    pub namespace: String,
    /// The node's name.
    pub name: String,
    /// GUIDs of the DDS readers the node owns.
    pub readers: Vec<Guid>,
    /// GUIDs of the DDS writers the node owns.
    pub writers: Vec<Guid>,
}

/// A participant's node, announced on `ros_discovery_info` (reliable, transient local, so
/// tools started later see it) and re-announced whenever its endpoints change.
pub struct NodeAnnouncer {
    writer: Writer,
    participant: Guid,
    node: NodeInfo,
    gid: GidSize,
}

impl NodeAnnouncer {
    /// Announces node `namespace`/`name` of `participant`, with no endpoints yet.
    pub fn new(
        participant: &Participant,
        namespace: &str,
        name: &str,
        gid: GidSize,
    ) -> Result<Self, DdsError> {
        let topic = TopicInfo::keyless(TOPIC, TYPE);
        let writer = Writer::new(participant, &topic, &Qos::latched(1))?;
        let me = NodeAnnouncer {
            writer,
            participant: participant.guid(),
            node: NodeInfo {
                namespace: namespace.into(),
                name: name.into(),
                ..Default::default()
            },
            gid,
        };
        me.publish()?;
        Ok(me)
    }

    /// The node as announced now.
    pub fn node(&self) -> &NodeInfo {
        &self.node
    }

    /// Adds (`present`) or removes a reader (`writer == false`) or writer; re-announces when
    /// that changed the node. Returns whether it did.
    pub fn set_endpoint(
        &mut self,
        guid: Guid,
        writer: bool,
        present: bool,
    ) -> Result<bool, DdsError> {
        let list = if writer {
            &mut self.node.writers
        } else {
            &mut self.node.readers
        };
        let had = list.contains(&guid);
        if present == had {
            return Ok(false);
        }
        if present {
            list.push(guid);
        } else {
            list.retain(|g| *g != guid);
        }
        self.publish()?;
        Ok(true)
    }

    /// Writes the announcement (a reliable write: it may wait briefly for local readers).
    pub fn publish(&self) -> Result<(), DdsError> {
        let sample = encode(
            &self.participant,
            std::slice::from_ref(&self.node),
            self.gid,
        );
        self.writer.write_cdr(&sample)
    }
}

struct Cdr {
    out: Vec<u8>,
}

impl Cdr {
    fn align(&mut self, n: usize) {
        // Alignment counts from the end of the 4-byte encapsulation header.
        while !(self.out.len() - 4).is_multiple_of(n) {
            self.out.push(0);
        }
    }
    fn u32(&mut self, v: u32) {
        self.align(4);
        self.out.extend_from_slice(&v.to_le_bytes());
    }
    fn string(&mut self, s: &str) {
        self.u32(s.len() as u32 + 1);
        self.out.extend_from_slice(s.as_bytes());
        self.out.push(0);
    }
    fn gid(&mut self, guid: &[u8; 16], size: GidSize) {
        self.out.extend_from_slice(guid);
        self.out.resize(self.out.len() + size.len() - 16, 0);
    }
}

/// The serialized sample (encapsulation header included) for a participant and its nodes.
pub fn encode(participant: &[u8; 16], nodes: &[NodeInfo], size: GidSize) -> Vec<u8> {
    let mut c = Cdr {
        out: vec![0x00, 0x01, 0x00, 0x00],
    };
    c.gid(participant, size);
    c.u32(nodes.len() as u32);
    for n in nodes {
        c.string(&n.namespace);
        c.string(&n.name);
        c.u32(n.readers.len() as u32);
        for g in &n.readers {
            c.gid(g, size);
        }
        c.u32(n.writers.len() as u32);
        for g in &n.writers {
            c.gid(g, size);
        }
    }
    c.out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_xcdr1() {
        let node = NodeInfo {
            namespace: "/".into(),
            name: "roam".into(),
            readers: vec![[1; 16]],
            writers: vec![],
        };
        let b = encode(&[9; 16], std::slice::from_ref(&node), GidSize::Iron);
        let mut want = vec![0, 1, 0, 0];
        want.extend([9; 16]);
        want.extend(1u32.to_le_bytes());
        want.extend(2u32.to_le_bytes());
        want.extend(b"/\0");
        want.extend([0, 0]); // align to 4
        want.extend(5u32.to_le_bytes());
        want.extend(b"roam\0");
        want.extend([0, 0, 0]);
        want.extend(1u32.to_le_bytes());
        want.extend([1; 16]);
        want.extend(0u32.to_le_bytes());
        assert_eq!(b, want);
        let humble = encode(&[9; 16], &[node], GidSize::Humble);
        assert_eq!(humble.len(), want.len() + 8 + 8);
        assert_eq!(&humble[20..28], &[0; 8]);
    }
}
