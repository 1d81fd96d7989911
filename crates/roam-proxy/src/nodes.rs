//! Which ROS 2 node owns which DDS writer, from `ros_discovery_info` (what `ros2 node list`
//! and `ros2 topic info -v` read): the NODE of the proxy's rules.
//!
//! Every ROS 2 participant publishes one sample there listing its nodes with the GIDs of
//! their readers and writers (see `roam_dds::ros_discovery_info` for the layout). A plain DDS
//! writer that no node announces has no node: a rule that binds a topic to a node drops it.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use roam_dds::ros_discovery_info::{TOPIC, TYPE};
use roam_dds::{DdsError, Guid, History, Participant, Qos, Reader, TopicInfo};

/// Writers remembered at most (a domain with more loses the newest ones' names).
const MAX_WRITERS: usize = 65_536;

/// Writer GUID -> `/namespace/name` of its node, shared with the sample callbacks.
#[derive(Clone, Default)]
pub struct NodeNames {
    inner: Arc<RwLock<Known>>,
}

#[derive(Default)]
struct Known {
    writers: HashMap<Guid, Arc<str>>,
    /// Each participant's writers, to forget them when it announces again.
    by_participant: HashMap<Guid, Vec<Guid>>,
}

impl NodeNames {
    /// The node that owns `writer`, if some participant announced it.
    pub fn node_of(&self, writer: &Guid) -> Option<Arc<str>> {
        let k = self.inner.read().unwrap_or_else(|p| p.into_inner());
        k.writers.get(writer).cloned()
    }

    /// Takes in one `ros_discovery_info` sample (ignored if it does not decode).
    pub fn update(&self, cdr: &[u8]) {
        let Some((participant, nodes)) = decode(cdr) else {
            tracing::debug!("a ros_discovery_info sample that does not decode: ignored");
            return;
        };
        let mut k = self.inner.write().unwrap_or_else(|p| p.into_inner());
        if let Some(old) = k.by_participant.remove(&participant) {
            for w in old {
                k.writers.remove(&w);
            }
        }
        let mut mine = Vec::new();
        for (name, writers) in nodes {
            let name: Arc<str> = Arc::from(name);
            for w in writers {
                if k.writers.len() >= MAX_WRITERS {
                    break;
                }
                k.writers.insert(w, name.clone());
                mine.push(w);
            }
        }
        k.by_participant.insert(participant, mine);
    }

    /// Reads `ros_discovery_info` on the proxy's participant into this map (for as long as
    /// the returned reader lives).
    pub fn follow(&self, participant: &Participant) -> Result<Reader, DdsError> {
        let qos = Qos {
            reliable: true,
            transient_local: true,
            history: History::KeepLast(100),
        };
        let me = self.clone();
        Reader::new(
            participant,
            &TopicInfo::keyless(TOPIC, TYPE),
            &qos,
            move |s| me.update(&s.cdr),
        )
    }
}

/// A participant's GUID and its nodes: `/ns/name` and the GUIDs of the node's writers.
pub type Announced = (Guid, Vec<(String, Vec<Guid>)>);

/// The participant's GUID and its nodes (`/ns/name`, writer GUIDs) from one serialized
/// sample (XCDR1, either byte order, 16- or 24-byte GIDs). `None` if it does not decode.
pub fn decode(cdr: &[u8]) -> Option<Announced> {
    let little = match cdr.get(..2)? {
        [0, 1] => true,
        [0, 0] => false,
        _ => return None,
    };
    let body = cdr.get(4..)?;
    // The GID width is not on the wire: the one that reads the sample to its end wins.
    [16usize, 24]
        .into_iter()
        .find_map(|gid| decode_body(body, little, gid))
}

fn decode_body(b: &[u8], little: bool, gid: usize) -> Option<Announced> {
    let mut r = Cursor { b, pos: 0, little };
    let participant = r.gid(gid)?;
    let n = r.count(8)?;
    let mut nodes = Vec::with_capacity(n);
    for _ in 0..n {
        let ns = r.string()?;
        let name = r.string()?;
        let readers = r.count(gid)?;
        r.skip(readers * gid)?;
        let writers = r.count(gid)?;
        let mut ws = Vec::with_capacity(writers);
        for _ in 0..writers {
            ws.push(r.gid(gid)?);
        }
        let full = if ns.ends_with('/') {
            format!("{ns}{name}")
        } else {
            format!("{ns}/{name}")
        };
        nodes.push((full, ws));
    }
    // Only alignment padding may follow.
    (b.len() - r.pos < 4).then_some((participant, nodes))
}

struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
    little: bool,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.b.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }

    fn skip(&mut self, n: usize) -> Option<()> {
        self.take(n).map(|_| ())
    }

    fn u32(&mut self) -> Option<u32> {
        self.pos = self.pos.checked_add(3)? & !3;
        let s: [u8; 4] = self.take(4)?.try_into().ok()?;
        Some(if self.little {
            u32::from_le_bytes(s)
        } else {
            u32::from_be_bytes(s)
        })
    }

    /// A sequence length, checked against what is left (each element at least `min` bytes).
    fn count(&mut self, min: usize) -> Option<usize> {
        let n = self.u32()? as usize;
        (n.checked_mul(min.max(1))? <= self.b.len().saturating_sub(self.pos)).then_some(n)
    }

    fn string(&mut self) -> Option<String> {
        let n = self.count(1)?;
        let s = self.take(n)?;
        let s = s.strip_suffix(&[0]).unwrap_or(s);
        String::from_utf8(s.to_vec()).ok()
    }

    /// A GID: the 16-byte GUID, and in Humble's 24-byte form 8 zero bytes after it.
    fn gid(&mut self, size: usize) -> Option<Guid> {
        let s = self.take(size)?;
        if s.get(16..)?.iter().any(|&b| b != 0) {
            return None;
        }
        s.get(..16)?.try_into().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use roam_dds::ros_discovery_info::{encode, GidSize, NodeInfo};

    #[test]
    fn nodes_and_writers_come_back_from_both_gid_widths() {
        let nodes = [
            NodeInfo {
                namespace: "/".into(),
                name: "teleop".into(),
                readers: vec![[1; 16]],
                writers: vec![[2; 16], [3; 16]],
            },
            NodeInfo {
                namespace: "/robot7".into(),
                name: "mapper".into(),
                readers: vec![],
                writers: vec![[4; 16]],
            },
        ];
        for size in [GidSize::Iron, GidSize::Humble] {
            let (p, got) = decode(&encode(&[9; 16], &nodes, size)).unwrap();
            assert_eq!(p, [9; 16]);
            assert_eq!(got[0], ("/teleop".to_string(), vec![[2; 16], [3; 16]]));
            assert_eq!(got[1], ("/robot7/mapper".to_string(), vec![[4; 16]]));
        }
    }

    #[test]
    fn a_participant_that_announces_again_replaces_its_writers() {
        let names = NodeNames::default();
        let node = |name: &str, w: u8| NodeInfo {
            namespace: "/".into(),
            name: name.into(),
            readers: vec![],
            writers: vec![[w; 16]],
        };
        names.update(&encode(&[9; 16], &[node("a", 1)], GidSize::Iron));
        assert_eq!(names.node_of(&[1; 16]).as_deref(), Some("/a"));
        names.update(&encode(&[9; 16], &[node("b", 2)], GidSize::Iron));
        assert_eq!(names.node_of(&[1; 16]), None);
        assert_eq!(names.node_of(&[2; 16]).as_deref(), Some("/b"));
    }

    #[test]
    fn truncated_or_lying_samples_are_refused() {
        let b = encode(&[9; 16], &[NodeInfo::default()], GidSize::Iron);
        for n in 0..b.len() {
            assert!(decode(&b[..n]).is_none(), "{n}");
        }
        let mut huge = b.clone();
        huge[20..24].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode(&huge).is_none());
    }
}
