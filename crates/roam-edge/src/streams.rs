//! What a topic's announcers say, as a subscriber keeps it: every announced stream (with a
//! local id that stays the same while the stream does), which stream each data session belongs
//! to, the types to subscribe to, and the definitions known. Pure: fed announcements and the
//! time, no I/O.
//!
//! An announcer's announcement replaces its previous one: streams it no longer lists are
//! gone (as a publisher that leaves takes its history with it). An announcer silent for
//! [`STALE_AFTER`] (gone, or cut off) is forgotten; when it comes back it announces again.
//!
//! A proxy mirrors every stream with one local DDS writer of the stream's type and QoS, so
//! local listeners see what they would see next to the publishers: a transient-local stream's
//! history for late joiners, a best-effort stream's samples without retransmission, two
//! latched publishers as two histories.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use roam_proto::meta::{StreamAnnouncement, StreamQos, TopicAnnouncement, XTypes};

/// How long an announcer's streams stay without a fresh announcement (it announces every 2 s).
pub const STALE_AFTER: Duration = Duration::from_secs(10);

/// A subscriber's id for an announced stream: the same for as long as the stream is
/// announced with the same type and QoS.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamId(pub u64);

/// An announced stream: everything a local writer for it is made from. A stream whose type
/// or QoS changes is a new stream (DDS cannot change those of a live writer).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamInfo {
    /// Who announced it.
    pub announcer: String,
    /// The announcer's stable id of the stream.
    pub stream: u64,
    pub dds_type: String,
    pub keyed: bool,
    pub qos: StreamQos,
    pub xtypes: Option<XTypes>,
    /// The ROS 2 type hash its publishers carry, if announced.
    pub type_hash: Option<String>,
}

impl StreamInfo {
    fn of(announcer: &str, s: &StreamAnnouncement) -> Self {
        StreamInfo {
            announcer: announcer.to_string(),
            stream: s.id,
            dds_type: s.dds_type.clone(),
            keyed: s.keyed,
            qos: s.qos,
            xtypes: s.xtypes.clone(),
            type_hash: s.type_hash.clone(),
        }
    }
}

#[derive(Debug)]
struct Announcer {
    announcement: TopicAnnouncement,
    last_seen: Instant,
}

/// What an announcement changed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Changed {
    /// The set of streams or the sessions naming them.
    pub streams: bool,
    /// The definitions known.
    pub definitions: bool,
}

/// The announcers of one topic and the streams they list.
#[derive(Debug, Default)]
pub struct AnnouncedStreams {
    announcers: BTreeMap<String, Announcer>,
    ids: HashMap<StreamInfo, StreamId>,
    next_id: u64,
}

impl AnnouncedStreams {
    /// Takes an announcement; says what it changed.
    pub fn handle_announcement(&mut self, now: Instant, a: TopicAnnouncement) -> Changed {
        let changed = match self.announcers.get_mut(&a.exporter) {
            Some(e) if e.announcement == a => {
                e.last_seen = now;
                return Changed::default();
            }
            Some(e) => Changed {
                streams: e.announcement.streams != a.streams,
                definitions: e.announcement.definitions != a.definitions,
            },
            None => Changed {
                streams: !a.streams.is_empty(),
                definitions: !a.definitions.is_empty(),
            },
        };
        self.announcers.insert(
            a.exporter.clone(),
            Announcer {
                announcement: a,
                last_seen: now,
            },
        );
        self.assign_ids();
        changed
    }

    /// Forgets announcers silent for [`STALE_AFTER`]; true if any listed a stream.
    pub fn handle_timeout(&mut self, now: Instant) -> bool {
        let mut streams_gone = false;
        self.announcers.retain(|_, e| {
            let keep = now.saturating_duration_since(e.last_seen) < STALE_AFTER;
            streams_gone |= !keep && !e.announcement.streams.is_empty();
            keep
        });
        self.assign_ids();
        streams_gone
    }

    /// When [`Self::handle_timeout`] has something to do.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.announcers
            .values()
            .map(|e| e.last_seen + STALE_AFTER)
            .min()
    }

    fn infos(&self) -> impl Iterator<Item = (u64, StreamInfo)> + '_ {
        self.announcers.iter().flat_map(|(x, e)| {
            e.announcement
                .streams
                .iter()
                .map(move |s| (s.session, StreamInfo::of(x, s)))
        })
    }

    /// Gives every current stream an id (keeping those it had) and forgets the ids of gone ones.
    fn assign_ids(&mut self) {
        let current: BTreeSet<StreamInfo> = self.infos().map(|(_, i)| i).collect();
        self.ids.retain(|k, _| current.contains(k));
        for info in current {
            if !self.ids.contains_key(&info) {
                self.next_id += 1;
                self.ids.insert(info, StreamId(self.next_id));
            }
        }
    }

    /// Every announced stream now.
    pub fn streams(&self) -> BTreeMap<StreamId, StreamInfo> {
        self.ids.iter().map(|(i, id)| (*id, i.clone())).collect()
    }

    /// Which stream each data session belongs to.
    pub fn sessions(&self) -> HashMap<u64, StreamId> {
        self.infos()
            .filter_map(|(session, info)| self.ids.get(&info).map(|id| (session, *id)))
            .collect()
    }

    /// The DDS types announced: the topic's data travels on one realm name per type.
    pub fn data_types(&self) -> BTreeSet<String> {
        self.announcers
            .values()
            .flat_map(|e| e.announcement.streams.iter().map(|s| s.dds_type.clone()))
            .collect()
    }

    /// A definition of `dds_type` some announcer gave (the first by announcer name).
    pub fn definition(&self, dds_type: &str) -> Option<&str> {
        self.announcers.values().find_map(|e| {
            e.announcement
                .definitions
                .iter()
                .find(|d| d.dds_type == dds_type)
                .map(|d| d.text.as_str())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use roam_proto::meta::TypeDefinition;

    const STRING: &str = "std_msgs::msg::dds_::String_";

    fn stream(id: u64, session: u64, transient_local: bool) -> StreamAnnouncement {
        StreamAnnouncement {
            id,
            session,
            dds_type: STRING.into(),
            keyed: false,
            qos: StreamQos {
                reliable: true,
                transient_local,
                depth: 1,
            },
            xtypes: None,
            type_hash: None,
        }
    }

    fn announce(exporter: &str, streams: Vec<StreamAnnouncement>) -> TopicAnnouncement {
        TopicAnnouncement {
            exporter: exporter.into(),
            streams,
            definitions: vec![],
        }
    }

    #[test]
    fn each_stream_gets_an_id_and_its_sessions_map_to_it() {
        let t0 = Instant::now();
        let mut p = AnnouncedStreams::default();
        let a = announce("a", vec![stream(1, 10, true), stream(2, 20, false)]);
        assert!(p.handle_announcement(t0, a.clone()).streams);
        assert_eq!(p.handle_announcement(t0, a), Changed::default());
        assert!(
            p.handle_announcement(t0, announce("b", vec![stream(1, 30, true)]))
                .streams
        );
        let streams = p.streams();
        assert_eq!(
            streams.len(),
            3,
            "two announcers' latched streams are two histories"
        );
        let s = p.sessions();
        assert!(streams[&s[&10]].qos.transient_local && !streams[&s[&20]].qos.transient_local);
        assert_eq!(streams[&s[&30]].announcer, "b");
        assert_eq!(p.data_types().len(), 1);
    }

    #[test]
    fn a_changed_announcement_replaces_the_announcers_streams_and_ids_stay() {
        let t0 = Instant::now();
        let mut p = AnnouncedStreams::default();
        p.handle_announcement(t0, announce("a", vec![stream(1, 10, true)]));
        // The latched node stopped, a volatile one started.
        assert!(
            p.handle_announcement(t0, announce("a", vec![stream(2, 11, false)]))
                .streams
        );
        let streams = p.streams();
        assert_eq!(streams.len(), 1);
        assert!(!streams.values().next().unwrap().qos.transient_local);
        assert!(!p.sessions().contains_key(&10));
        // A restarted announcer: same stream id, new session: same local id.
        let before = p.streams();
        let c = p.handle_announcement(t0, announce("a", vec![stream(2, 99, false)]));
        assert!(c.streams, "the session changed");
        assert_eq!(p.streams(), before);
        assert!(p.sessions().contains_key(&99));
    }

    #[test]
    fn a_silent_announcer_goes_stale() {
        let t0 = Instant::now();
        let mut p = AnnouncedStreams::default();
        p.handle_announcement(t0, announce("a", vec![stream(1, 10, true)]));
        p.handle_announcement(
            t0 + Duration::from_secs(5),
            announce("b", vec![stream(1, 20, true)]),
        );
        assert_eq!(p.poll_timeout(), Some(t0 + STALE_AFTER));
        assert!(!p.handle_timeout(t0 + STALE_AFTER - Duration::from_millis(1)));
        assert!(p.handle_timeout(t0 + STALE_AFTER));
        assert_eq!(p.streams().len(), 1);
        assert_eq!(p.streams().values().next().unwrap().announcer, "b");
    }

    #[test]
    fn definitions_come_from_any_announcer_even_one_without_streams() {
        let t0 = Instant::now();
        let mut p = AnnouncedStreams::default();
        let mut importer = announce("base", vec![]);
        importer.definitions.push(TypeDefinition {
            dds_type: STRING.into(),
            text: "string data\n".into(),
        });
        let c = p.handle_announcement(t0, importer);
        assert!(c.definitions && !c.streams);
        assert_eq!(p.definition(STRING), Some("string data\n"));
        assert!(p.streams().is_empty());
    }
}
