//! Writing realm topics to an MCAP file (`roam record`, the rules' `Log` action), as ROS 2
//! tools write them: one channel per topic with message encoding `cdr`, its schema the type's
//! definition in `ros2msg` form (named `pkg/msg/Type`), so Foxglove, the `mcap` tools and
//! `rosbags` read the file like a rosbag2 MCAP.
//!
//! No sockets here: the caller hands in definitions and messages as they arrive. A topic's
//! messages that come before its definition are held (bounded) until it does, or until
//! [`Recorder::expire`] gives up on it; they are then written without a schema (a reader still
//! gets the bytes) and the caller is told so.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::{Seek, Write};
use std::time::{Duration, Instant};

/// Why a recording failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("writing the MCAP file: {0}")]
    Mcap(#[from] mcap::McapError),
}

/// One message to record.
pub struct Sample<'a> {
    /// When it was received here, in nanoseconds since the Unix epoch.
    pub log_time_ns: u64,
    /// When its publisher sent it (the sender's clock), in nanoseconds since the Unix epoch.
    pub publish_time_ns: u64,
    /// The CDR bytes, with their encapsulation header.
    pub cdr: &'a [u8],
}

/// What a call to [`Recorder::expire`] did for a topic.
#[derive(Debug, PartialEq, Eq)]
pub struct Schemaless {
    pub topic: String,
    pub dds_type: String,
    pub messages: usize,
}

/// Bounds on what waits for a definition, per topic.
#[derive(Debug, Clone, Copy)]
pub struct HoldLimits {
    pub messages: usize,
    pub bytes: usize,
    /// How long a topic waits for its definition before it is written without one.
    pub wait: Duration,
}

impl Default for HoldLimits {
    fn default() -> Self {
        Self {
            messages: 10_000,
            bytes: 64 << 20,
            wait: Duration::from_secs(10),
        }
    }
}

struct Held {
    since: Instant,
    messages: VecDeque<(u64, u64, Vec<u8>)>,
    bytes: usize,
    dropped: u64,
}

enum Topic {
    Waiting { dds_type: String, held: Held },
    Open { channel: u16, sequence: u32 },
}

/// Statistics of a recording.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RecordStats {
    pub messages: u64,
    pub bytes: u64,
    /// Messages dropped while their topic waited for a definition (over the hold bound).
    pub dropped_waiting: u64,
}

/// An MCAP file being written.
pub struct Recorder<W: Write + Seek> {
    writer: mcap::Writer<W>,
    topics: HashMap<String, Topic>,
    limits: HoldLimits,
    stats: RecordStats,
}

/// The `pkg/msg/Type` name of a DDS type name (`pkg::msg::dds_::Type_`).
fn schema_name(dds_type: &str) -> String {
    crate::ros_names::type_from_dds(dds_type)
}

impl<W: Write + Seek> Recorder<W> {
    pub fn new(out: W, limits: HoldLimits) -> Result<Self, RecordError> {
        let writer = mcap::WriteOptions::new()
            .compression(Some(mcap::Compression::Zstd))
            .profile("ros2")
            .library(concat!("roam ", env!("CARGO_PKG_VERSION")))
            .create(out)?;
        Ok(Self {
            writer,
            topics: HashMap::new(),
            limits,
            stats: RecordStats::default(),
        })
    }

    pub fn stats(&self) -> &RecordStats {
        &self.stats
    }

    /// Whether `topic` has its channel (with or without a schema).
    pub fn is_open(&self, topic: &str) -> bool {
        matches!(self.topics.get(topic), Some(Topic::Open { .. }))
    }

    /// The topic's definition (ros2msg text): opens its channel with the schema and writes
    /// what waited for it. A later definition of an open topic changes nothing.
    pub fn definition(
        &mut self,
        topic: &str,
        dds_type: &str,
        ros2msg: &str,
    ) -> Result<(), RecordError> {
        if self.is_open(topic) {
            return Ok(());
        }
        let schema =
            self.writer
                .add_schema(&schema_name(dds_type), "ros2msg", ros2msg.as_bytes())?;
        self.open(topic, schema)
    }

    fn open(&mut self, topic: &str, schema: u16) -> Result<(), RecordError> {
        let channel = self
            .writer
            .add_channel(schema, topic, "cdr", &BTreeMap::new())?;
        let before = self.topics.insert(
            topic.to_string(),
            Topic::Open {
                channel,
                sequence: 0,
            },
        );
        if let Some(Topic::Waiting { held, .. }) = before {
            self.stats.dropped_waiting += held.dropped;
            for (log, publish, cdr) in held.messages {
                self.write(
                    topic,
                    Sample {
                        log_time_ns: log,
                        publish_time_ns: publish,
                        cdr: &cdr,
                    },
                )?;
            }
        }
        Ok(())
    }

    /// A message of `topic` (of `dds_type`): written, or held until its definition comes.
    pub fn message(
        &mut self,
        topic: &str,
        dds_type: &str,
        s: Sample<'_>,
        now: Instant,
    ) -> Result<(), RecordError> {
        if self.is_open(topic) {
            return self.write(topic, s);
        }
        let limits = self.limits;
        let entry = self
            .topics
            .entry(topic.to_string())
            .or_insert_with(|| Topic::Waiting {
                dds_type: dds_type.to_string(),
                held: Held {
                    since: now,
                    messages: VecDeque::new(),
                    bytes: 0,
                    dropped: 0,
                },
            });
        if let Topic::Waiting { held, .. } = entry {
            held.messages
                .push_back((s.log_time_ns, s.publish_time_ns, s.cdr.to_vec()));
            held.bytes += s.cdr.len();
            while held.messages.len() > limits.messages || held.bytes > limits.bytes {
                match held.messages.pop_front() {
                    Some((_, _, old)) => {
                        held.bytes -= old.len();
                        held.dropped += 1;
                    }
                    None => break,
                }
            }
        }
        Ok(())
    }

    fn write(&mut self, topic: &str, s: Sample<'_>) -> Result<(), RecordError> {
        let Some(Topic::Open { channel, sequence }) = self.topics.get_mut(topic) else {
            return Ok(());
        };
        *sequence = sequence.wrapping_add(1);
        let header = mcap::records::MessageHeader {
            channel_id: *channel,
            sequence: *sequence,
            log_time: s.log_time_ns,
            publish_time: s.publish_time_ns,
        };
        self.writer.write_to_known_channel(&header, s.cdr)?;
        self.stats.messages += 1;
        self.stats.bytes += s.cdr.len() as u64;
        Ok(())
    }

    /// Topics that waited longer than the hold limit for a definition get a channel without
    /// a schema, and what they held is written.
    pub fn expire(&mut self, now: Instant) -> Result<Vec<Schemaless>, RecordError> {
        let wait = self.limits.wait;
        let due: Vec<(String, String, usize)> = self
            .topics
            .iter()
            .filter_map(|(topic, t)| match t {
                Topic::Waiting { dds_type, held } if now.duration_since(held.since) >= wait => {
                    Some((topic.clone(), dds_type.clone(), held.messages.len()))
                }
                _ => None,
            })
            .collect();
        let mut out = Vec::new();
        for (topic, dds_type, messages) in due {
            self.open(&topic, 0)?;
            out.push(Schemaless {
                topic,
                dds_type,
                messages,
            });
        }
        Ok(out)
    }

    /// Writes what is held (without schemas) and the file's summary and footer.
    pub fn finish(mut self) -> Result<RecordStats, RecordError> {
        let waiting: Vec<String> = self
            .topics
            .iter()
            .filter(|(_, t)| matches!(t, Topic::Waiting { .. }))
            .map(|(k, _)| k.clone())
            .collect();
        for topic in waiting {
            self.open(&topic, 0)?;
        }
        self.writer.finish()?;
        Ok(self.stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    const STRING: &str = "std_msgs::msg::dds_::String_";

    fn cdr(text: &str) -> Vec<u8> {
        let mut v = vec![0, 1, 0, 0];
        v.extend_from_slice(&(text.len() as u32 + 1).to_le_bytes());
        v.extend_from_slice(text.as_bytes());
        v.push(0);
        v
    }

    fn sample(c: &[u8], t: u64) -> Sample<'_> {
        Sample {
            log_time_ns: t,
            publish_time_ns: t - 1,
            cdr: c,
        }
    }

    #[test]
    fn messages_wait_for_their_definition_then_come_in_order_with_the_schema() {
        let now = Instant::now();
        let mut out = Cursor::new(Vec::new());
        let mut r = Recorder::new(&mut out, HoldLimits::default()).unwrap();
        let (a, b, c) = (cdr("a"), cdr("b"), cdr("c"));
        r.message("/chatter", STRING, sample(&a, 10), now).unwrap();
        r.message("/chatter", STRING, sample(&b, 20), now).unwrap();
        assert!(!r.is_open("/chatter"));
        r.definition("/chatter", STRING, "string data\n").unwrap();
        r.message("/chatter", STRING, sample(&c, 30), now).unwrap();
        assert_eq!(r.stats().messages, 3);
        r.finish().unwrap();
        let bytes = out.into_inner();
        let msgs: Vec<_> = mcap::MessageStream::new(&bytes)
            .unwrap()
            .map(|m| m.unwrap())
            .collect();
        assert_eq!(msgs.len(), 3);
        assert_eq!(msgs[1].data.as_ref(), b.as_slice());
        assert_eq!(msgs[1].log_time, 20);
        assert_eq!(msgs[1].publish_time, 19);
        let schema = msgs[0].channel.schema.as_ref().unwrap();
        assert_eq!(schema.name, "std_msgs/msg/String");
        assert_eq!(schema.encoding, "ros2msg");
        assert_eq!(schema.data.as_ref(), b"string data\n");
        assert_eq!(msgs[0].channel.message_encoding, "cdr");
        assert_eq!(msgs[0].channel.topic, "/chatter");
    }

    #[test]
    fn a_topic_without_a_definition_is_bounded_then_written_schemaless() {
        let now = Instant::now();
        let limits = HoldLimits {
            messages: 2,
            bytes: 1 << 20,
            wait: Duration::from_secs(1),
        };
        let mut out = Cursor::new(Vec::new());
        let mut r = Recorder::new(&mut out, limits).unwrap();
        for (i, t) in ["a", "b", "c"].iter().enumerate() {
            r.message("/x", STRING, sample(&cdr(t), 10 + i as u64), now)
                .unwrap();
        }
        assert!(r.expire(now).unwrap().is_empty());
        let gone = r.expire(now + Duration::from_secs(1)).unwrap();
        assert_eq!(
            gone,
            vec![Schemaless {
                topic: "/x".into(),
                dds_type: STRING.into(),
                messages: 2
            }]
        );
        let stats = r.finish().unwrap();
        assert_eq!((stats.messages, stats.dropped_waiting), (2, 1));
        let bytes = out.into_inner();
        let msgs: Vec<_> = mcap::MessageStream::new(&bytes)
            .unwrap()
            .map(|m| m.unwrap())
            .collect();
        assert_eq!(msgs.len(), 2);
        assert!(msgs[0].channel.schema.is_none());
        assert_eq!(msgs[0].data.as_ref(), cdr("b").as_slice());
    }
}
