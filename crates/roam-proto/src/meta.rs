//! Topic announcements: what an exporter tells its realm about a topic, sealed on the topic's
//! metadata name, so that an importer needs nothing but the topic's name.
//!
//! One announcement comes from one announcer (a proxy, a gateway, `roam pub`) and lists the
//! *streams* it publishes on the topic: one per kind of local publisher (DDS type and QoS
//! class), each sealed under its own sender session; and the interface definitions it knows
//! for the topic's types, so that members without a ROS installation can read the data (an
//! importer with definitions announces them too, with no stream). Data envelopes carry their session in the clear header, so an
//! importer knows from the announcement which stream, and so which QoS, every message belongs
//! to: a transient-local publisher's samples go to a transient-local writer, a best-effort
//! publisher's to a best-effort one, as they would within one DDS domain.
//!
//! ```text
//! version u8 = 2
//! exporter      u16 length + UTF-8 (stable name of the announcing process, <= 255 bytes)
//! stream count  u16 (<= 64)
//! per stream:   u32 length, then fields as (tag u8, u32 length, value), in any order;
//!               unknown tags are skipped (later versions may add fields)
//!     1 session u64            the data sealer's session id (required)
//!     2 type    UTF-8          DDS type name, e.g. std_msgs::msg::dds_::String_ (required)
//!     3 flags   u8             bit 0 keyed, bit 1 reliable, bit 2 transient-local
//!     4 depth   u32            history depth per instance; 0 = keep all
//!     5 XTypes TypeInformation bytes (keyed types whose publisher announced it)
//!     6 XTypes TypeMapping     bytes (with 5)
//!     7 stream id u64          stable across the exporter's restarts (default: the session)
//!     8 type hash UTF-8        the ROS 2 type hash its publishers carry (`RIHS01_` and 64
//!                              hex digits, Jazzy and later), for importers to carry too
//! field count   u16, then that many fields as (tag u8, u32 length, value); unknown tags are
//!               skipped:
//!     1 definition             u16 type length + DDS type name, then the definition: the
//!                              type's ROS 2 interface text with its dependencies, in the
//!                              concatenated "ros2msg" form (UTF-8, <= 1 MiB)
//! ```
//!
//! Every integer is big-endian. Decoding never panics and never allocates more than the input
//! holds.

use crate::codec::{put_str16, CodecError, Reader};

const VERSION: u8 = 2;
/// Most streams one announcement may list.
pub const MAX_STREAMS: usize = 64;
/// Longest exporter name.
pub const MAX_EXPORTER: usize = 255;
/// Longest DDS type name.
pub const MAX_TYPE_NAME: usize = 1024;
/// Largest XTypes blob (type information or type map).
pub const MAX_XTYPES: usize = 1 << 20;
/// Largest interface definition text.
pub const MAX_DEFINITION: usize = 1 << 20;
/// Most definitions one announcement may carry.
pub const MAX_DEFINITIONS: usize = 64;

const TOP_DEFINITION: u8 = 1;

const TAG_SESSION: u8 = 1;
const TAG_TYPE: u8 = 2;
const TAG_FLAGS: u8 = 3;
const TAG_DEPTH: u8 = 4;
const TAG_TYPE_INFORMATION: u8 = 5;
const TAG_TYPE_MAPPING: u8 = 6;
const TAG_STREAM_ID: u8 = 7;
const TAG_TYPE_HASH: u8 = 8;

/// Longest type hash (RIHS01's is 71 bytes; later versions may be longer).
pub const MAX_TYPE_HASH: usize = 256;

const FLAG_KEYED: u8 = 0x01;
const FLAG_RELIABLE: u8 = 0x02;
const FLAG_TRANSIENT_LOCAL: u8 = 0x04;

/// Why an announcement could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetaError {
    #[error("malformed topic announcement: {0}")]
    Codec(#[from] CodecError),
    #[error("topic announcement version {0} is not supported (this roam reads version 2)")]
    Version(u8),
    #[error("topic announcement lists {0} streams (at most {MAX_STREAMS})")]
    TooManyStreams(usize),
    #[error("topic announcement stream {index}: {what}")]
    Stream { index: usize, what: &'static str },
    #[error("topic announcement definition: {0}")]
    Definition(&'static str),
}

/// A type's ROS 2 interface definition, as announced: the DDS type name and the concatenated
/// ros2msg text (the type, then each dependency after a `===` line and `MSG: pkg/Type`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeDefinition {
    pub dds_type: String,
    pub text: String,
}

/// The QoS of one stream: what its publishers offer, and what an importer's writer offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamQos {
    pub reliable: bool,
    pub transient_local: bool,
    /// History depth per instance; 0 means keep all.
    pub depth: u32,
}

/// A keyed type's XTypes description (serialized TypeInformation and TypeMapping), with which
/// an importer's DDS sees the keys.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct XTypes {
    pub type_information: Vec<u8>,
    pub type_mapping: Vec<u8>,
}

/// One stream of a topic: the publishers of one type and QoS class behind one exporter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamAnnouncement {
    /// Names the stream across the exporter's restarts (its session changes, this does not),
    /// so an importer can keep what it made for the stream.
    pub id: u64,
    /// The session id in the header of every data envelope of this stream.
    pub session: u64,
    /// The DDS type name (must match exactly for DDS to match endpoints).
    pub dds_type: String,
    pub keyed: bool,
    pub qos: StreamQos,
    pub xtypes: Option<XTypes>,
    /// The ROS 2 type hash (`RIHS01_...`) the stream's publishers announce, if any.
    pub type_hash: Option<String>,
}

/// Everything one exporter publishes on one topic, now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicAnnouncement {
    /// A stable name for the exporting process (its identity), so a restarted exporter's
    /// announcement replaces its earlier one.
    pub exporter: String,
    pub streams: Vec<StreamAnnouncement>,
    /// Definitions of the topic's types this announcer knows.
    pub definitions: Vec<TypeDefinition>,
}

impl TopicAnnouncement {
    /// Encodes the announcement. Fields beyond the limits are the caller's bug: they are
    /// encoded, and refused by every decoder.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![VERSION];
        put_str16(&mut out, &self.exporter);
        out.extend_from_slice(&(self.streams.len().min(u16::MAX as usize) as u16).to_be_bytes());
        for s in &self.streams {
            let mut rec = Vec::new();
            put_field(&mut rec, TAG_SESSION, &s.session.to_be_bytes());
            put_field(&mut rec, TAG_STREAM_ID, &s.id.to_be_bytes());
            put_field(&mut rec, TAG_TYPE, s.dds_type.as_bytes());
            let mut flags = 0;
            if s.keyed {
                flags |= FLAG_KEYED;
            }
            if s.qos.reliable {
                flags |= FLAG_RELIABLE;
            }
            if s.qos.transient_local {
                flags |= FLAG_TRANSIENT_LOCAL;
            }
            put_field(&mut rec, TAG_FLAGS, &[flags]);
            put_field(&mut rec, TAG_DEPTH, &s.qos.depth.to_be_bytes());
            if let Some(x) = &s.xtypes {
                put_field(&mut rec, TAG_TYPE_INFORMATION, &x.type_information);
                put_field(&mut rec, TAG_TYPE_MAPPING, &x.type_mapping);
            }
            if let Some(h) = &s.type_hash {
                put_field(&mut rec, TAG_TYPE_HASH, h.as_bytes());
            }
            out.extend_from_slice(&(rec.len() as u32).to_be_bytes());
            out.extend_from_slice(&rec);
        }
        let fields = self.definitions.len().min(MAX_DEFINITIONS);
        out.extend_from_slice(&(fields as u16).to_be_bytes());
        for d in self.definitions.iter().take(MAX_DEFINITIONS) {
            let mut v = Vec::with_capacity(2 + d.dds_type.len() + d.text.len());
            put_str16(&mut v, &d.dds_type);
            v.extend_from_slice(d.text.as_bytes());
            put_field(&mut out, TOP_DEFINITION, &v);
        }
        out
    }

    /// Decodes an announcement from untrusted bytes.
    pub fn decode(bytes: &[u8]) -> Result<Self, MetaError> {
        let mut r = Reader::new(bytes);
        let version = r.u8()?;
        if version != VERSION {
            return Err(MetaError::Version(version));
        }
        let exporter = r.str16(MAX_EXPORTER)?.to_string();
        let count = r.u16()? as usize;
        if count > MAX_STREAMS {
            return Err(MetaError::TooManyStreams(count));
        }
        let mut streams = Vec::with_capacity(count);
        for index in 0..count {
            let len = r.u32()? as usize;
            streams.push(decode_stream(r.take(len)?, index)?);
        }
        let mut definitions = Vec::new();
        let fields = r.u16()?;
        for _ in 0..fields {
            let tag = r.u8()?;
            let len = r.u32()? as usize;
            let value = r.take(len)?;
            if tag != TOP_DEFINITION {
                continue;
            }
            if definitions.len() == MAX_DEFINITIONS {
                return Err(MetaError::Definition("more than 64 definitions"));
            }
            let mut v = Reader::new(value);
            let dds_type = v.str16(MAX_TYPE_NAME)?.to_string();
            let text = v.rest();
            if text.len() > MAX_DEFINITION {
                return Err(MetaError::Definition("definition longer than 1 MiB"));
            }
            let text = std::str::from_utf8(text)
                .map_err(|_| MetaError::Definition("definition is not UTF-8"))?
                .to_string();
            if dds_type.is_empty() {
                return Err(MetaError::Definition("empty type name"));
            }
            definitions.push(TypeDefinition { dds_type, text });
        }
        r.finish()?;
        Ok(Self {
            exporter,
            streams,
            definitions,
        })
    }
}

fn put_field(out: &mut Vec<u8>, tag: u8, value: &[u8]) {
    out.push(tag);
    out.extend_from_slice(&(value.len() as u32).to_be_bytes());
    out.extend_from_slice(value);
}

fn decode_stream(rec: &[u8], index: usize) -> Result<StreamAnnouncement, MetaError> {
    let bad = |what| MetaError::Stream { index, what };
    let mut r = Reader::new(rec);
    let (mut session, mut dds_type, mut flags, mut depth) = (None, None, 0u8, 1u32);
    let (mut id, mut type_hash) = (None, None);
    let (mut info, mut map) = (None, None);
    while r.remaining() > 0 {
        let tag = r.u8()?;
        let len = r.u32()? as usize;
        let value = r.take(len)?;
        let mut v = Reader::new(value);
        match tag {
            TAG_SESSION => session = Some(v.u64()?),
            TAG_STREAM_ID => id = Some(v.u64()?),
            TAG_TYPE => {
                if len > MAX_TYPE_NAME {
                    return Err(bad("type name longer than 1024 bytes"));
                }
                let t = std::str::from_utf8(value).map_err(|_| CodecError::InvalidUtf8)?;
                v.take(len)?;
                dds_type = Some(t.to_string());
            }
            TAG_TYPE_HASH => {
                if len > MAX_TYPE_HASH {
                    return Err(bad("type hash longer than 256 bytes"));
                }
                let h = std::str::from_utf8(v.take(len)?).map_err(|_| CodecError::InvalidUtf8)?;
                type_hash = Some(h.to_string());
            }
            TAG_FLAGS => flags = v.u8()?,
            TAG_DEPTH => depth = v.u32()?,
            TAG_TYPE_INFORMATION | TAG_TYPE_MAPPING => {
                if len > MAX_XTYPES {
                    return Err(bad("XTypes description larger than 1 MiB"));
                }
                let blob = v.take(len)?.to_vec();
                if tag == TAG_TYPE_INFORMATION {
                    info = Some(blob);
                } else {
                    map = Some(blob);
                }
            }
            // A field from a later version: skip it.
            _ => continue,
        }
        v.finish()?;
    }
    let session = session.ok_or(bad("no session"))?;
    let dds_type = dds_type.ok_or(bad("no type name"))?;
    if dds_type.is_empty() {
        return Err(bad("empty type name"));
    }
    let xtypes = match (info, map) {
        (Some(type_information), Some(type_mapping)) => Some(XTypes {
            type_information,
            type_mapping,
        }),
        (None, None) => None,
        _ => {
            return Err(bad(
                "XTypes type information without its type map, or the reverse",
            ))
        }
    };
    Ok(StreamAnnouncement {
        id: id.unwrap_or(session),
        session,
        dds_type,
        keyed: flags & FLAG_KEYED != 0,
        qos: StreamQos {
            reliable: flags & FLAG_RELIABLE != 0,
            transient_local: flags & FLAG_TRANSIENT_LOCAL != 0,
            depth,
        },
        xtypes,
        type_hash,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TopicAnnouncement {
        TopicAnnouncement {
            exporter: "robot-7".into(),
            streams: vec![
                StreamAnnouncement {
                    id: 77,
                    session: 0x0102_0304_0506_0708,
                    dds_type: "std_msgs::msg::dds_::String_".into(),
                    keyed: false,
                    qos: StreamQos {
                        reliable: true,
                        transient_local: false,
                        depth: 10,
                    },
                    xtypes: None,
                    type_hash: Some(
                        "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18"
                            .into(),
                    ),
                },
                StreamAnnouncement {
                    id: 78,
                    session: 9,
                    dds_type: "fleet::RobotState".into(),
                    keyed: true,
                    qos: StreamQos {
                        reliable: true,
                        transient_local: true,
                        depth: 0,
                    },
                    xtypes: Some(XTypes {
                        type_information: vec![1, 2, 3],
                        type_mapping: vec![4; 100],
                    }),
                    type_hash: None,
                },
            ],
            definitions: vec![TypeDefinition {
                dds_type: "std_msgs::msg::dds_::String_".into(),
                text: "string data\n".into(),
            }],
        }
    }

    #[test]
    fn announcements_round_trip() {
        let a = sample();
        assert_eq!(TopicAnnouncement::decode(&a.encode()).unwrap(), a);
        let empty = TopicAnnouncement {
            exporter: String::new(),
            streams: vec![],
            definitions: vec![],
        };
        assert_eq!(TopicAnnouncement::decode(&empty.encode()).unwrap(), empty);
    }

    #[test]
    fn every_truncation_and_a_bad_version_are_refused() {
        let b = sample().encode();
        for n in 0..b.len() {
            assert!(TopicAnnouncement::decode(&b[..n]).is_err(), "prefix {n}");
        }
        let mut v = b.clone();
        v[0] = 1;
        assert_eq!(TopicAnnouncement::decode(&v), Err(MetaError::Version(1)));
        let mut long = b.clone();
        long.push(0);
        assert!(TopicAnnouncement::decode(&long).is_err());
        // A field of a later version is skipped.
        let mut later = sample();
        later.definitions.clear();
        let mut bytes = later.encode();
        let n = bytes.len();
        bytes[n - 2..].copy_from_slice(&1u16.to_be_bytes());
        put_field(&mut bytes, 99, b"future");
        assert_eq!(TopicAnnouncement::decode(&bytes).unwrap(), later);
    }

    #[test]
    fn unknown_fields_are_skipped_and_missing_ones_named() {
        let mut rec = Vec::new();
        put_field(&mut rec, TAG_SESSION, &5u64.to_be_bytes());
        put_field(&mut rec, 200, b"a field from the future");
        put_field(&mut rec, TAG_TYPE, b"a::B");
        let mut b = vec![VERSION];
        put_str16(&mut b, "x");
        b.extend_from_slice(&1u16.to_be_bytes());
        b.extend_from_slice(&(rec.len() as u32).to_be_bytes());
        b.extend_from_slice(&rec);
        b.extend_from_slice(&0u16.to_be_bytes());
        let a = TopicAnnouncement::decode(&b).unwrap();
        assert_eq!(a.streams[0].session, 5);
        assert_eq!(a.streams[0].id, 5, "the id defaults to the session");
        assert_eq!(a.streams[0].dds_type, "a::B");
        assert_eq!(a.streams[0].qos.depth, 1);
        assert_eq!(
            a.streams[0].type_hash, None,
            "an older exporter's stream has no hash"
        );

        let mut rec = Vec::new();
        put_field(&mut rec, TAG_TYPE, b"a::B");
        let mut b = vec![VERSION];
        put_str16(&mut b, "x");
        b.extend_from_slice(&1u16.to_be_bytes());
        b.extend_from_slice(&(rec.len() as u32).to_be_bytes());
        b.extend_from_slice(&rec);
        assert_eq!(
            TopicAnnouncement::decode(&b),
            Err(MetaError::Stream {
                index: 0,
                what: "no session"
            })
        );
    }

    #[test]
    fn a_huge_stream_count_is_refused_before_allocating() {
        let mut b = vec![VERSION];
        put_str16(&mut b, "x");
        b.extend_from_slice(&u16::MAX.to_be_bytes());
        assert_eq!(
            TopicAnnouncement::decode(&b),
            Err(MetaError::TooManyStreams(u16::MAX as usize))
        );
    }
}
