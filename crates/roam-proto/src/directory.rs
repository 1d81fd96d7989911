//! Directory entries: what one realm member tells the realm it offers and imports, so that any
//! member can list the realm (topic names are HMACs: a realm cannot be enumerated by its names).
//!
//! Every member seals its entry on the realm's one directory name (the edge layer derives it
//! and says when entries are sent); an entry replaces the same member's previous one, and an
//! entry with no item says the member has nothing (left) to list.
//!
//! ```text
//! version u8 = 1
//! member        u16 length + UTF-8 (the member's stable name, its identity; <= 255 bytes)
//! field count   u16 (<= 4096 + 16), then that many fields as (tag u8, u32 length, value), in
//!               any order; unknown tags are skipped (later versions may add fields)
//!     1 period  u32            milliseconds between the member's repeats (default 2000)
//!     2 item    record         one thing offered or imported (at most 4096): fields as
//!                              (tag u8, u32 length, value), unknown tags skipped
//!         1 kind  u8           0 topic, 1 service, 2 action (required)
//!         2 role  u8           0 offers, 1 imports (required)
//!         3 name  UTF-8        realm-side name, e.g. /chatter or dds:NAME (required, <= 1024)
//!         4 type  UTF-8        a ROS type name (std_msgs/msg/String); repeated, at most 16
//!         5 qos   u8 + u32     flags (bit 0 reliable, bit 1 transient-local) and history
//!                              depth (0 = keep all); repeated, at most 16; topics only
//! ```
//!
//! An item of a kind or role this version does not know (a later version's) is skipped, so
//! older members still read the rest of a newer member's entry. Every integer is big-endian.
//! Decoding never panics, checks every count and length before allocating, and never
//! allocates more than the input holds.

use crate::codec::{put_str16, CodecError, Reader};
use crate::meta::StreamQos;

const VERSION: u8 = 1;
/// Longest member name.
pub const MAX_MEMBER: usize = 255;
/// Most items one entry may list.
pub const MAX_ITEMS: usize = 4096;
/// Most top-level fields an entry may have (items and the rest).
pub const MAX_FIELDS: usize = MAX_ITEMS + 16;
/// Longest realm-side name.
pub const MAX_NAME: usize = 1024;
/// Longest type name.
pub const MAX_TYPE_NAME: usize = 1024;
/// Most type names per item.
pub const MAX_TYPES: usize = 16;
/// Most QoS summaries per item.
pub const MAX_QOS: usize = 16;
/// The repeat period an entry without one is taken to have, in milliseconds.
pub const DEFAULT_PERIOD_MS: u32 = 2000;

const FIELD_PERIOD: u8 = 1;
const FIELD_ITEM: u8 = 2;

const TAG_KIND: u8 = 1;
const TAG_ROLE: u8 = 2;
const TAG_NAME: u8 = 3;
const TAG_TYPE: u8 = 4;
const TAG_QOS: u8 = 5;

const QOS_RELIABLE: u8 = 0x01;
const QOS_TRANSIENT_LOCAL: u8 = 0x02;

/// Why a directory entry could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DirectoryError {
    #[error("malformed directory entry: {0}")]
    Codec(#[from] CodecError),
    #[error("directory entry version {0} is not supported (this roam reads version 1)")]
    Version(u8),
    #[error("directory entry has {0} fields (at most {MAX_FIELDS})")]
    TooManyFields(usize),
    #[error("directory entry lists more than {MAX_ITEMS} items")]
    TooManyItems,
    #[error("directory entry item {index}: {what}")]
    Item { index: usize, what: &'static str },
    #[error("directory entry field {tag}: {what}")]
    Field { tag: u8, what: &'static str },
}

/// What an item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ItemKind {
    Topic,
    Service,
    Action,
}

impl ItemKind {
    fn code(self) -> u8 {
        match self {
            ItemKind::Topic => 0,
            ItemKind::Service => 1,
            ItemKind::Action => 2,
        }
    }

    fn from_code(c: u8) -> Option<Self> {
        match c {
            0 => Some(ItemKind::Topic),
            1 => Some(ItemKind::Service),
            2 => Some(ItemKind::Action),
            _ => None,
        }
    }
}

/// What the member does with an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// Brings it into the realm: publishes the topic, serves the service or action.
    Offers,
    /// Takes it from the realm: subscribes to the topic, calls the service or action.
    Imports,
}

impl Role {
    fn code(self) -> u8 {
        match self {
            Role::Offers => 0,
            Role::Imports => 1,
        }
    }

    fn from_code(c: u8) -> Option<Self> {
        match c {
            0 => Some(Role::Offers),
            1 => Some(Role::Imports),
            _ => None,
        }
    }
}

/// One topic, service or action a member offers or imports.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DirectoryItem {
    pub kind: ItemKind,
    pub role: Role,
    /// The realm-side name (`/chatter`, `dds:NAME`, `/add_two_ints`).
    pub name: String,
    /// ROS type names (`std_msgs/msg/String`, `example_interfaces/srv/AddTwoInts`; a raw DDS
    /// topic's DDS type name); empty while unknown.
    pub types: Vec<String>,
    /// The QoS of a topic's publishers or writers here, when known.
    pub qos: Vec<StreamQos>,
}

/// Everything one member offers and imports in a realm, now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectoryEntry {
    /// The member's stable name (its identity), so a restarted member replaces its entry.
    pub member: String,
    /// How often the member repeats its entry, in milliseconds: a view forgets a member that
    /// stays silent for a few periods.
    pub period_ms: u32,
    pub items: Vec<DirectoryItem>,
}

impl DirectoryEntry {
    /// Encodes the entry. Fields beyond the limits are the caller's bug: they are encoded, and
    /// refused by every decoder.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![VERSION];
        put_str16(&mut out, &self.member);
        let fields = (1 + self.items.len()).min(u16::MAX as usize);
        out.extend_from_slice(&(fields as u16).to_be_bytes());
        put_field(&mut out, FIELD_PERIOD, &self.period_ms.to_be_bytes());
        for item in self.items.iter().take(fields - 1) {
            let mut rec = Vec::new();
            put_field(&mut rec, TAG_KIND, &[item.kind.code()]);
            put_field(&mut rec, TAG_ROLE, &[item.role.code()]);
            put_field(&mut rec, TAG_NAME, item.name.as_bytes());
            for t in &item.types {
                put_field(&mut rec, TAG_TYPE, t.as_bytes());
            }
            for q in &item.qos {
                let mut v = [0u8; 5];
                v[0] = if q.reliable { QOS_RELIABLE } else { 0 }
                    | if q.transient_local {
                        QOS_TRANSIENT_LOCAL
                    } else {
                        0
                    };
                v[1..].copy_from_slice(&q.depth.to_be_bytes());
                put_field(&mut rec, TAG_QOS, &v);
            }
            put_field(&mut out, FIELD_ITEM, &rec);
        }
        out
    }

    /// Decodes an entry from untrusted bytes.
    pub fn decode(bytes: &[u8]) -> Result<Self, DirectoryError> {
        let mut r = Reader::new(bytes);
        let version = r.u8()?;
        if version != VERSION {
            return Err(DirectoryError::Version(version));
        }
        let member = r.str16(MAX_MEMBER)?.to_string();
        let fields = r.u16()? as usize;
        if fields > MAX_FIELDS {
            return Err(DirectoryError::TooManyFields(fields));
        }
        let mut period_ms = DEFAULT_PERIOD_MS;
        // Grown by what the input holds, never by what its counts claim.
        let mut items = Vec::new();
        let mut index = 0;
        for _ in 0..fields {
            let tag = r.u8()?;
            let len = r.u32()? as usize;
            let value = r.take(len)?;
            match tag {
                FIELD_PERIOD => {
                    let mut v = Reader::new(value);
                    period_ms = v.u32()?;
                    v.finish()?;
                }
                FIELD_ITEM => {
                    if index == MAX_ITEMS {
                        return Err(DirectoryError::TooManyItems);
                    }
                    if let Some(item) = decode_item(value, index)? {
                        items.push(item);
                    }
                    index += 1;
                }
                // A field from a later version: skip it.
                _ => {}
            }
        }
        r.finish()?;
        Ok(Self {
            member,
            period_ms,
            items,
        })
    }
}

fn put_field(out: &mut Vec<u8>, tag: u8, value: &[u8]) {
    out.push(tag);
    out.extend_from_slice(&(value.len() as u32).to_be_bytes());
    out.extend_from_slice(value);
}

/// One item; `None` for a kind or role of a later version.
fn decode_item(rec: &[u8], index: usize) -> Result<Option<DirectoryItem>, DirectoryError> {
    let bad = |what| DirectoryError::Item { index, what };
    let mut r = Reader::new(rec);
    let (mut kind, mut role, mut name) = (None, None, None);
    let (mut types, mut qos) = (Vec::new(), Vec::new());
    while r.remaining() > 0 {
        let tag = r.u8()?;
        let len = r.u32()? as usize;
        let value = r.take(len)?;
        let mut v = Reader::new(value);
        match tag {
            TAG_KIND => kind = Some(v.u8()?),
            TAG_ROLE => role = Some(v.u8()?),
            TAG_NAME => {
                if len > MAX_NAME {
                    return Err(bad("name longer than 1024 bytes"));
                }
                name = Some(utf8(v.take(len)?)?);
            }
            TAG_TYPE => {
                if types.len() == MAX_TYPES {
                    return Err(bad("more than 16 types"));
                }
                if len > MAX_TYPE_NAME {
                    return Err(bad("type name longer than 1024 bytes"));
                }
                if len == 0 {
                    return Err(bad("empty type name"));
                }
                types.push(utf8(v.take(len)?)?);
            }
            TAG_QOS => {
                if qos.len() == MAX_QOS {
                    return Err(bad("more than 16 QoS summaries"));
                }
                let flags = v.u8()?;
                qos.push(StreamQos {
                    reliable: flags & QOS_RELIABLE != 0,
                    transient_local: flags & QOS_TRANSIENT_LOCAL != 0,
                    depth: v.u32()?,
                });
            }
            // A field from a later version: skip it.
            _ => continue,
        }
        v.finish()?;
    }
    let kind = kind.ok_or(bad("no kind"))?;
    let role = role.ok_or(bad("no role"))?;
    let name = name.ok_or(bad("no name"))?;
    if name.is_empty() {
        return Err(bad("empty name"));
    }
    let (Some(kind), Some(role)) = (ItemKind::from_code(kind), Role::from_code(role)) else {
        return Ok(None);
    };
    Ok(Some(DirectoryItem {
        kind,
        role,
        name,
        types,
        qos,
    }))
}

fn utf8(b: &[u8]) -> Result<String, CodecError> {
    std::str::from_utf8(b)
        .map(str::to_string)
        .map_err(|_| CodecError::InvalidUtf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qos(reliable: bool, transient_local: bool, depth: u32) -> StreamQos {
        StreamQos {
            reliable,
            transient_local,
            depth,
        }
    }

    fn sample() -> DirectoryEntry {
        DirectoryEntry {
            member: "robot-7".into(),
            period_ms: 2000,
            items: vec![
                DirectoryItem {
                    kind: ItemKind::Topic,
                    role: Role::Offers,
                    name: "/chatter".into(),
                    types: vec!["std_msgs/msg/String".into()],
                    qos: vec![qos(true, false, 10), qos(false, true, 0)],
                },
                DirectoryItem {
                    kind: ItemKind::Service,
                    role: Role::Imports,
                    name: "/add_two_ints".into(),
                    types: vec![],
                    qos: vec![],
                },
                DirectoryItem {
                    kind: ItemKind::Action,
                    role: Role::Offers,
                    name: "/fibonacci".into(),
                    types: vec!["example_interfaces/action/Fibonacci".into()],
                    qos: vec![],
                },
            ],
        }
    }

    /// An entry with one item record made of `fields`.
    fn with_item(fields: &[(u8, &[u8])]) -> Vec<u8> {
        let mut rec = Vec::new();
        for (tag, v) in fields {
            put_field(&mut rec, *tag, v);
        }
        let mut b = vec![VERSION];
        put_str16(&mut b, "m");
        b.extend_from_slice(&1u16.to_be_bytes());
        put_field(&mut b, FIELD_ITEM, &rec);
        b
    }

    #[test]
    fn entries_round_trip() {
        let e = sample();
        assert_eq!(DirectoryEntry::decode(&e.encode()).unwrap(), e);
        let empty = DirectoryEntry {
            member: String::new(),
            period_ms: 0,
            items: vec![],
        };
        assert_eq!(DirectoryEntry::decode(&empty.encode()).unwrap(), empty);
    }

    #[test]
    fn every_truncation_a_bad_version_and_trailing_bytes_are_refused() {
        let b = sample().encode();
        for n in 0..b.len() {
            assert!(DirectoryEntry::decode(&b[..n]).is_err(), "prefix {n}");
        }
        let mut v = b.clone();
        v[0] = 2;
        assert_eq!(DirectoryEntry::decode(&v), Err(DirectoryError::Version(2)));
        let mut long = b.clone();
        long.push(0);
        assert!(DirectoryEntry::decode(&long).is_err());
    }

    #[test]
    fn later_fields_kinds_and_roles_are_skipped() {
        // A top-level field of a later version.
        let mut b = sample().encode();
        let n = u16::from_be_bytes([b[10], b[11]]);
        assert_eq!(
            &b[1..10],
            b"\x00\x07robot-7",
            "member, then the field count"
        );
        b[10..12].copy_from_slice(&(n + 1).to_be_bytes());
        put_field(&mut b, 77, b"from the future");
        assert_eq!(DirectoryEntry::decode(&b).unwrap(), sample());

        // An item field of a later version.
        let b = with_item(&[
            (TAG_KIND, &[0]),
            (99, b"x"),
            (TAG_ROLE, &[1]),
            (TAG_NAME, b"/a"),
        ]);
        let e = DirectoryEntry::decode(&b).unwrap();
        assert_eq!(e.items[0].name, "/a");
        assert_eq!(e.items[0].role, Role::Imports);
        assert_eq!(e.period_ms, DEFAULT_PERIOD_MS, "the default period");

        // A kind or role of a later version: the item is skipped, the entry still reads.
        for (kind, role) in [(9u8, 0u8), (0, 9)] {
            let b = with_item(&[(TAG_KIND, &[kind]), (TAG_ROLE, &[role]), (TAG_NAME, b"/a")]);
            assert!(DirectoryEntry::decode(&b).unwrap().items.is_empty());
        }
    }

    #[test]
    fn missing_and_malformed_item_fields_are_named() {
        let item = |index, what| Err(DirectoryError::Item { index, what });
        let b = with_item(&[(TAG_ROLE, &[0]), (TAG_NAME, b"/a")]);
        assert_eq!(DirectoryEntry::decode(&b), item(0, "no kind"));
        let b = with_item(&[(TAG_KIND, &[0]), (TAG_NAME, b"/a")]);
        assert_eq!(DirectoryEntry::decode(&b), item(0, "no role"));
        let b = with_item(&[(TAG_KIND, &[0]), (TAG_ROLE, &[0])]);
        assert_eq!(DirectoryEntry::decode(&b), item(0, "no name"));
        let b = with_item(&[(TAG_KIND, &[0]), (TAG_ROLE, &[0]), (TAG_NAME, b"")]);
        assert_eq!(DirectoryEntry::decode(&b), item(0, "empty name"));
        let b = with_item(&[
            (TAG_KIND, &[0]),
            (TAG_ROLE, &[0]),
            (TAG_NAME, b"/a"),
            (TAG_TYPE, b""),
        ]);
        assert_eq!(DirectoryEntry::decode(&b), item(0, "empty type name"));
        // A kind field with a byte too many, a name that is not UTF-8.
        let b = with_item(&[(TAG_KIND, &[0, 0]), (TAG_ROLE, &[0]), (TAG_NAME, b"/a")]);
        assert!(DirectoryEntry::decode(&b).is_err());
        let b = with_item(&[(TAG_KIND, &[0]), (TAG_ROLE, &[0]), (TAG_NAME, b"/\xff")]);
        assert_eq!(
            DirectoryEntry::decode(&b),
            Err(DirectoryError::Codec(CodecError::InvalidUtf8))
        );
    }

    #[test]
    fn limits_are_checked_before_allocating() {
        let mut b = vec![VERSION];
        put_str16(&mut b, "m");
        b.extend_from_slice(&u16::MAX.to_be_bytes());
        assert_eq!(
            DirectoryEntry::decode(&b),
            Err(DirectoryError::TooManyFields(u16::MAX as usize))
        );
        let long_name = vec![b'a'; MAX_NAME + 1];
        let b = with_item(&[(TAG_KIND, &[0]), (TAG_ROLE, &[0]), (TAG_NAME, &long_name)]);
        assert!(matches!(
            DirectoryEntry::decode(&b),
            Err(DirectoryError::Item { .. })
        ));
        let mut fields: Vec<(u8, &[u8])> =
            vec![(TAG_KIND, &[0]), (TAG_ROLE, &[0]), (TAG_NAME, b"/a")];
        fields.extend(std::iter::repeat_n(
            (TAG_TYPE, &b"a/msg/B"[..]),
            MAX_TYPES + 1,
        ));
        assert_eq!(
            DirectoryEntry::decode(&with_item(&fields)),
            Err(DirectoryError::Item {
                index: 0,
                what: "more than 16 types"
            })
        );
        // More items than allowed, each well formed.
        let mut many = sample();
        let item = many.items[0].clone();
        many.items = vec![item; MAX_ITEMS + 1];
        assert_eq!(
            DirectoryEntry::decode(&many.encode()),
            Err(DirectoryError::TooManyItems)
        );
        many.items.pop();
        assert_eq!(DirectoryEntry::decode(&many.encode()).unwrap(), many);
    }

    #[test]
    fn garbage_never_panics() {
        // A deterministic stream of pseudo-random inputs, some starting like an entry.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let valid = sample().encode();
        for i in 0..20_000 {
            let len = (next() % 96) as usize;
            let mut b: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if i % 2 == 0 {
                // Flip bytes of a valid entry instead.
                b = valid.clone();
                for _ in 0..1 + next() % 4 {
                    let at = (next() as usize) % b.len();
                    b[at] = next() as u8;
                }
            }
            if let Ok(e) = DirectoryEntry::decode(&b) {
                assert_eq!(DirectoryEntry::decode(&e.encode()).unwrap(), e);
            }
        }
    }
}
