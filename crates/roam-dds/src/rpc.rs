//! A second DDS stack for what CycloneDDS cannot do: read and write the *sample identity* of
//! service samples.
//!
//! rmw_fastrtps (Fast DDS, the default ROS 2 RMW) and rmw_connextdds carry a service request's
//! identity beside its payload: a request is known by its RTPS sample identity (the writer's
//! GUID and the sample's sequence number), and a reply names the request it answers in the
//! inline QoS parameter `related_sample_identity` (PID 0x800f in Fast DDS 2.x, the standard
//! 0x0083 in newer versions). Upstream CycloneDDS can neither report a received sample's
//! sequence number nor read or write that parameter, so the proxy speaks this convention with
//! RustDDS (pure Rust, no unsafe here): it reads both identities of every received sample and
//! writes `related_sample_identity` under both PIDs.
//!
//! Like the CycloneDDS side, it moves raw CDR: a [`RpcReader`] delivers every sample's bytes
//! (the 4-byte encapsulation header included) with its identities; a [`RpcWriter`] writes such
//! bytes and returns the identity the sample got.

use std::net::IpAddr;

use futures::StreamExt;
use rustdds::no_key::{DataReader, DataReaderStream, DataWriter};
use rustdds::policy::{Durability, History, Reliability};
use rustdds::rpc::SampleIdentity;
use rustdds::{
    DomainParticipant, DomainParticipantBuilder, QosPolicies, QosPolicyBuilder, RTPSEntity,
    RepresentationIdentifier, SequenceNumber, TopicKind, WriteOptionsBuilder, GUID,
};

use crate::{DdsError, Guid};

/// DDS's SEQUENCENUMBER_UNKNOWN (high -1, low 0): "no particular sample" in a
/// `related_sample_identity` that names only a writer or reader.
pub const SEQ_UNKNOWN: i64 = -1 << 32;

/// A sample's identity: the GUID of the writer that wrote it and the sequence number it got.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SampleId {
    /// The writer's GUID (GUID_UNKNOWN: all zeros).
    pub writer: Guid,
    /// The sample's sequence number, from 1 per writer.
    pub seq: i64,
}

impl SampleId {
    /// The identity DDS uses for "none": GUID_UNKNOWN (all zeros) or SEQUENCENUMBER_UNKNOWN.
    pub fn writer_unknown(&self) -> bool {
        self.writer == [0; 16]
    }

    /// Whether the sequence number is DDS's SEQUENCENUMBER_UNKNOWN (high -1, low 0), which
    /// rmw_fastrtps leaves in a request's `related_sample_identity`.
    pub fn seq_unknown(&self) -> bool {
        self.seq == SEQ_UNKNOWN || self.seq <= 0
    }
}

impl From<SampleIdentity> for SampleId {
    fn from(s: SampleIdentity) -> Self {
        SampleId {
            writer: s.writer_guid.to_bytes(),
            seq: i64::from(s.sequence_number),
        }
    }
}

impl From<SampleId> for SampleIdentity {
    fn from(s: SampleId) -> Self {
        SampleIdentity {
            writer_guid: GUID::from_bytes(s.writer),
            sequence_number: SequenceNumber::new(s.seq),
        }
    }
}

/// The QoS of an RPC endpoint: services are reliable and volatile (rmw's services profile);
/// the depth is the history kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RpcQos {
    /// RELIABLE (true) or BEST_EFFORT.
    pub reliable: bool,
    /// Keep-last depth.
    pub depth: i32,
}

impl Default for RpcQos {
    /// ROS 2's services profile: reliable, volatile, keep last 10; roam keeps 100, so a
    /// burst of calls through one proxy is not cut at 10.
    fn default() -> Self {
        RpcQos {
            reliable: true,
            depth: 100,
        }
    }
}

impl RpcQos {
    fn policies(&self) -> QosPolicies {
        let b = QosPolicyBuilder::new()
            .durability(Durability::Volatile)
            .history(History::KeepLast { depth: self.depth });
        let b = match self.reliable {
            true => b.reliability(Reliability::Reliable {
                max_blocking_time: rustdds::Duration::from_millis(100),
            }),
            false => b.reliability(Reliability::BestEffort),
        };
        b.build()
    }
}

fn err(what: &str, e: impl std::fmt::Display) -> DdsError {
    DdsError::Rtps(format!("{what}: {e}"))
}

/// A RustDDS participant. Cheap to clone (one participant).
#[derive(Clone)]
pub struct RpcParticipant {
    dp: DomainParticipant,
}

impl RpcParticipant {
    /// Joins `domain`. With `networks` non-empty, RustDDS uses only those local addresses
    /// (e.g. `[127.0.0.1]` keeps it on loopback: `lo` has no multicast, so it discovers by
    /// unicast to the participant-index ports of 127.0.0.1, where CycloneDDS listens).
    pub fn new(domain: u16, networks: &[IpAddr]) -> Result<Self, DdsError> {
        let mut b = DomainParticipantBuilder::new(domain);
        if !networks.is_empty() {
            b = b.with_only_networks(networks.iter().copied());
        }
        let dp = b.build().map_err(|e| err("RustDDS participant", e))?;
        Ok(RpcParticipant { dp })
    }

    /// The participant's GUID prefix (the first 12 bytes of every GUID it owns).
    pub fn guid_prefix(&self) -> [u8; 12] {
        let mut p = [0; 12];
        p.copy_from_slice(&self.dp.guid().to_bytes()[..12]);
        p
    }

    /// Whether `guid` belongs to this participant.
    pub fn owns(&self, guid: &Guid) -> bool {
        guid[..12] == self.guid_prefix()
    }

    /// A reader of raw samples on the keyless topic `topic` of type `type_name`.
    pub fn reader(&self, topic: &str, type_name: &str, qos: RpcQos) -> Result<RpcReader, DdsError> {
        let q = qos.policies();
        let t = self
            .dp
            .create_topic(topic.into(), type_name.into(), &q, TopicKind::NoKey)
            .map_err(|e| err("RustDDS topic", e))?;
        let sub = self
            .dp
            .create_subscriber(&q)
            .map_err(|e| err("RustDDS subscriber", e))?;
        let r: DataReader<Raw, RawAdapter> = sub
            .create_datareader_no_key(&t, Some(q))
            .map_err(|e| err("RustDDS reader", e))?;
        let guid = r.guid().to_bytes();
        Ok(RpcReader {
            guid,
            stream: r.async_sample_stream(),
        })
    }

    /// A writer of raw samples on the keyless topic `topic` of type `type_name`.
    pub fn writer(&self, topic: &str, type_name: &str, qos: RpcQos) -> Result<RpcWriter, DdsError> {
        let q = qos.policies();
        let t = self
            .dp
            .create_topic(topic.into(), type_name.into(), &q, TopicKind::NoKey)
            .map_err(|e| err("RustDDS topic", e))?;
        let publisher = self
            .dp
            .create_publisher(&q)
            .map_err(|e| err("RustDDS publisher", e))?;
        let w: DataWriter<Raw, RawAdapter> = publisher
            .create_datawriter_no_key(&t, Some(q))
            .map_err(|e| err("RustDDS writer", e))?;
        Ok(RpcWriter {
            w,
            matched: std::sync::Mutex::new(Default::default()),
        })
    }
}

/// A received sample: its bytes (encapsulation header included), its own identity, and the
/// identity it names as related (a reply's request), if it carried one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RpcSample {
    /// The payload, encapsulation header included.
    pub cdr: Vec<u8>,
    /// Its own identity (its writer's GUID and its sequence number).
    pub id: SampleId,
    /// The `related_sample_identity` it carried, if any.
    pub related: Option<SampleId>,
}

/// Reads raw samples with their identities.
pub struct RpcReader {
    guid: Guid,
    stream: DataReaderStream<Raw, RawAdapter>,
}

impl RpcReader {
    /// The next sample; `None` never comes while the participant lives. Read errors (a
    /// sample in an encoding other than plain CDR) are skipped.
    pub async fn recv(&mut self) -> Option<RpcSample> {
        loop {
            match self.stream.next().await? {
                Ok(s) => {
                    let info = s.sample_info();
                    let id = SampleId::from(info.sample_identity());
                    let related = info.related_sample_identity().map(SampleId::from);
                    return Some(RpcSample {
                        cdr: s.into_value().0,
                        id,
                        related,
                    });
                }
                Err(e) => tracing::debug!("RustDDS read: {e}"),
            }
        }
    }

    /// This reader's GUID.
    pub fn guid(&self) -> Guid {
        self.guid
    }
}

/// Writes raw samples, naming a related sample when asked.
pub struct RpcWriter {
    w: DataWriter<Raw, RawAdapter>,
    matched: std::sync::Mutex<std::collections::HashSet<Guid>>,
}

impl RpcWriter {
    /// Writes `cdr` (encapsulation header included; plain CDR, little or big endian) with
    /// `related` as its `related_sample_identity` (both PIDs), and returns the identity the
    /// sample got. A reliable write may block up to 100 ms when readers lag: call it off the
    /// async runtime's workers when that matters.
    pub fn write(&self, cdr: &[u8], related: Option<SampleId>) -> Result<SampleId, DdsError> {
        let raw = Raw::from_cdr(cdr)?;
        let opts = WriteOptionsBuilder::new()
            .related_sample_identity_opt(related.map(SampleIdentity::from))
            .build();
        self.w
            .write_with_options(raw, opts)
            .map(SampleId::from)
            .map_err(|e| err("RustDDS write", e))
    }

    /// This writer's GUID.
    pub fn guid(&self) -> Guid {
        self.w.guid().to_bytes()
    }

    /// How many readers this writer has matched now.
    pub fn matched_readers(&self) -> usize {
        self.matched().len()
    }

    /// Whether this writer has matched a reader of the participant that owns `guid` (a
    /// reader, or another endpoint of the same participant).
    pub fn reaches(&self, guid: &Guid) -> bool {
        self.matched().iter().any(|r| r[..12] == guid[..12])
    }

    /// The readers matched now, from the writer's status events (drained here).
    fn matched(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<Guid>> {
        use rustdds::{DataWriterStatus, StatusEvented};
        let mut m = self.matched.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(ev) = self.w.try_recv_status() {
            if let DataWriterStatus::PublicationMatched {
                current, reader, ..
            } = ev
            {
                match current.count_change() {
                    c if c > 0 => m.insert(reader.to_bytes()),
                    c if c < 0 => m.remove(&reader.to_bytes()),
                    _ => false,
                };
            }
        }
        m
    }
}

/// Plain CDR bytes, encapsulation header included. RustDDS hands a reader the bytes after the
/// header with the representation it named, and a writer adds the header of its adapter's
/// one output encoding: big-endian bodies are therefore written by byte-swapping nothing but
/// refusing them (every ROS 2 host is little endian; none was seen on the wire).
#[derive(Clone, Debug)]
struct Raw(Vec<u8>);

impl Raw {
    fn from_cdr(cdr: &[u8]) -> Result<Raw, DdsError> {
        match cdr {
            [0, 1, _, _, ..] => Ok(Raw(cdr.to_vec())),
            [a, b, _, _, ..] => Err(DdsError::InvalidArgument(format!(
                "encapsulation {a:02x}{b:02x}: only little-endian plain CDR is written"
            ))),
            _ => Err(DdsError::InvalidArgument(format!(
                "{} bytes: no encapsulation header",
                cdr.len()
            ))),
        }
    }
}

struct RawAdapter;

const ENCODINGS: [RepresentationIdentifier; 2] = [
    RepresentationIdentifier::CDR_LE,
    RepresentationIdentifier::CDR_BE,
];

impl rustdds::no_key::DeserializerAdapter<Raw> for RawAdapter {
    type Error = std::io::Error;
    type Decoded = Raw;

    fn supported_encodings() -> &'static [RepresentationIdentifier] {
        &ENCODINGS
    }

    fn transform_decoded(decoded: Raw) -> Raw {
        decoded
    }
}

impl rustdds::no_key::DefaultDecoder<Raw> for RawAdapter {
    type Decoder = RawDecoder;
    const DECODER: RawDecoder = RawDecoder;
}

#[derive(Clone)]
struct RawDecoder;

impl<'de> rustdds::no_key::Decode<'de, Raw> for RawDecoder {
    type Error = std::io::Error;

    fn decode_bytes(
        self,
        input: &'de [u8],
        encoding: RepresentationIdentifier,
    ) -> Result<Raw, std::io::Error> {
        let mut v = Vec::with_capacity(input.len() + 4);
        v.extend_from_slice(&encoding.to_bytes());
        v.extend_from_slice(&[0, 0]);
        v.extend_from_slice(input);
        Ok(Raw(v))
    }
}

impl rustdds::no_key::SerializerAdapter<Raw> for RawAdapter {
    type Error = std::io::Error;

    fn output_encoding() -> RepresentationIdentifier {
        RepresentationIdentifier::CDR_LE
    }

    fn to_bytes(value: &Raw) -> Result<rustdds::bytes::Bytes, std::io::Error> {
        // The header is RustDDS's to write.
        Ok(rustdds::bytes::Bytes::copy_from_slice(
            value.0.get(4..).unwrap_or_default(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_convert_both_ways_and_unknown_is_recognised() {
        let id = SampleId {
            writer: [1; 16],
            seq: (7 << 32) + 3,
        };
        assert_eq!(SampleId::from(SampleIdentity::from(id)), id);
        assert_eq!(SEQ_UNKNOWN, i64::from(SequenceNumber::UNKNOWN));
        let unknown = SampleId {
            writer: [0; 16],
            seq: SEQ_UNKNOWN,
        };
        assert!(unknown.writer_unknown() && unknown.seq_unknown());
        assert!(!id.writer_unknown() && !id.seq_unknown());
    }

    #[test]
    fn only_little_endian_cdr_is_written() {
        assert!(Raw::from_cdr(&[0, 1, 0, 0, 5]).is_ok());
        assert!(Raw::from_cdr(&[0, 0, 0, 0, 5]).is_err());
        assert!(Raw::from_cdr(&[0, 1]).is_err());
        assert!(Raw::from_cdr(&[]).is_err());
    }
}
