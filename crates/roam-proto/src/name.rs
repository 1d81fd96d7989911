//! Topic names: 256-bit, opaque, derived with the realm secret.
//!
//! `name = HMAC-SHA256(key = realm secret, msg = canonical descriptor)` where the canonical
//! descriptor is
//!
//! ```text
//! "roam-name" | version u8 = 1 | kind u8 | len u32 | topic | len u32 | type | len u32 | instance
//! ```
//!
//! Every field is length-prefixed (big-endian u32), so no two different descriptors encode to
//! the same bytes. Without the realm secret nobody can compute or invert a name.

use std::fmt;

use ring::hmac;

use crate::realm::RealmSecret;

const DOMAIN: &[u8] = b"roam-name";
const DESCRIPTOR_VERSION: u8 = 1;

/// What a name stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Topic = 0,
    Service = 1,
}

/// The metadata a name is derived from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TopicDescriptor {
    /// The ROS name as users write it, e.g. `/chatter`.
    pub topic: String,
    /// The ROS type name, e.g. `std_msgs/msg/String`.
    pub type_name: String,
    pub kind: Kind,
    /// Distinguishes deployments of the same topic (e.g. one per robot); empty by default.
    pub instance: String,
}

impl TopicDescriptor {
    pub fn topic(topic: &str, type_name: &str) -> Self {
        Self {
            topic: topic.into(),
            type_name: type_name.into(),
            kind: Kind::Topic,
            instance: String::new(),
        }
    }

    /// The canonical byte encoding that is fed to the MAC.
    pub fn canonical(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            DOMAIN.len() + 2 + 12 + self.topic.len() + self.type_name.len() + self.instance.len(),
        );
        out.extend_from_slice(DOMAIN);
        out.push(DESCRIPTOR_VERSION);
        out.push(self.kind as u8);
        for field in [&self.topic, &self.type_name, &self.instance] {
            out.extend_from_slice(&(field.len() as u32).to_be_bytes());
            out.extend_from_slice(field.as_bytes());
        }
        out
    }

    /// Derives the 256-bit name of this descriptor in a realm.
    pub fn name(&self, realm: &RealmSecret) -> Name {
        let key = hmac::Key::new(hmac::HMAC_SHA256, realm.as_bytes());
        let tag = hmac::sign(&key, &self.canonical());
        let mut n = [0u8; 32];
        n.copy_from_slice(tag.as_ref());
        Name(n)
    }
}

/// An opaque 256-bit name. Routers forward by it and learn nothing else.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Name(pub [u8; 32]);

impl Name {
    pub const LEN: usize = 32;

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    pub fn from_hex(s: &str) -> Option<Self> {
        let v = hex::decode(s.trim()).ok()?;
        Some(Self(v.try_into().ok()?))
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Eight hex digits are enough to tell names apart in logs.
        write!(f, "Name({})", &self.to_hex()[..8])
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn realm() -> RealmSecret {
        RealmSecret::from_bytes([0x42; 32])
    }

    #[test]
    fn test_vectors_match_docs() {
        // The same vectors are published in docs/protocol.md.
        let d = TopicDescriptor::topic("/chatter", "std_msgs/msg/String");
        assert_eq!(
            hex::encode(d.canonical()),
            "726f616d2d6e616d650100000000082f6368617474657200000013\
             7374645f6d7367732f6d73672f537472696e6700000000"
        );
        assert_eq!(
            d.name(&realm()).to_hex(),
            include_str!("../testdata/name_chatter.hex").trim()
        );
        let s = TopicDescriptor {
            topic: "/add_two_ints".into(),
            type_name: "example_interfaces/srv/AddTwoInts".into(),
            kind: Kind::Service,
            instance: "robot-7".into(),
        };
        assert_eq!(
            s.name(&realm()).to_hex(),
            include_str!("../testdata/name_service.hex").trim()
        );
    }

    #[test]
    fn fields_do_not_run_together() {
        let a = TopicDescriptor::topic("/ab", "c");
        let b = TopicDescriptor::topic("/a", "bc");
        assert_ne!(a.name(&realm()), b.name(&realm()));
        let mut c = a.clone();
        c.kind = Kind::Service;
        assert_ne!(a.name(&realm()), c.name(&realm()));
        let mut i = a.clone();
        i.instance = "x".into();
        assert_ne!(a.name(&realm()), i.name(&realm()));
    }

    #[test]
    fn realm_changes_every_name() {
        let d = TopicDescriptor::topic("/chatter", "std_msgs/msg/String");
        assert_ne!(
            d.name(&realm()),
            d.name(&RealmSecret::from_bytes([0x43; 32]))
        );
    }
}
